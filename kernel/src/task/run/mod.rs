//! Running the payloads of the ramdisk (`payloads/<name>.elf` members, in archive order) as
//! ring-3 tasks after the boot report: one after the other, or with `quantum_us` all at once,
//! round-robin on the APIC timer ([`round_robin`]).
//!
//! For each payload: [`super::elf::plan`] (a rejected ELF gives a `task_error` record and the
//! next payload runs), a fresh address space with the segments (file bytes copied, the rest
//! zero, W^X per segment), a stack below [`STACK_TOP`], and the task's read-only counter page at
//! [`USER_PAGE_ADDR`]; then a `task_start` record and the syscall loop until the task exits
//! (`task_exit`) or faults (a user-mode `fault`).
//!
//! # Watchdog
//!
//! With a [`Budget`] (`task_budget_ms`), a task may run that long by its own virtual TSC: the
//! APIC timer is armed (one shot) for the rest of the budget while it runs (round-robin: the
//! earlier of that and the end of its quantum), and a task past its budget is killed with a
//! `task_killed` record. Without a budget and without a quantum no timer is armed at all, so a
//! task running alone takes no interrupt.
//!
//! # Virtual TSC
//!
//! Each task has [`VirtualCounters`]: the virtual TSC, plus one slot per hardware counter when the
//! task configured events (`counters_configure`, on a PMU; none on the TSC-only backend). A task
//! with slots has its counters restored and started (`hwswitch`, `run::hw`) before the TSC
//! reading that resumes it, and stopped and saved after the one that suspends it (tasks share
//! the counters); its counters are released when it ends. The virtual TSC starts at the exit
//! assembly's last TSC reading before every entry to ring 3 and stops at the entry assembly's
//! first one after every return, whether by SYSCALL, exception or interrupt (`hw::user`, "The
//! virtual TSC's boundary"), so it counts only the time the task ran in ring 3 plus a fixed
//! number of instructions of those paths per kernel entry, never the time spent serving a
//! syscall or an interrupt. Round-robin measures that fixed part for an interrupt round trip
//! (`schedule`'s `calibrate_switch`, once TSC-only and once with every counter of the PMU
//! configured) and takes it off at every interrupt exit, so a preempted task reads the same
//! deltas as an undisturbed one.
//!
//! # Submodules
//!
//! The runner: `load` (a payload found in the ramdisk, planned and mapped), `schedule` (a family
//! one task at a time or round-robin, the preemption's calibration, the watchdog), `step` (one
//! run in ring 3 and what brought the task back), `page` (the counter page's writes),
//! `syscalls` (every way a task enters the kernel on purpose), `records` (the run's summary and
//! records). The counter features: `notify` (overflow thresholds, the ring-3 handler,
//! sampling), `mux` (time-multiplexing), `system` (system mode), `policy` (what run.cfg says
//! about them), `hw` (the counters around each run).
//!
//! # RDPMC
//!
//! CR4.PCE is set for the ring-3 runs of a task whose counters are live in hardware counters
//! (`pce` in `task_exit`; the counter page then has their RDPMC indices) and clear for every
//! other run (the kernel sets it to what the task it enters needs, and writes CR4 only when that
//! changes; RDPMC in ring 0 does not depend on it), so RDPMC in ring 3 of a TSC-only task, or with the virtual TSC's index, raises #GP (hardware) or #UD (QEMU's
//! TCG). The kernel reads the two bytes at the faulting RIP through the address space; if they are
//! `0F 33` it emulates the instruction: EDX:EAX = the task's 64-bit virtual value for index ECX
//! ([`VIRTUAL_TSC_INDEX`] for the virtual TSC, GP n for slot n, as of the trap), RIP += 2. An index
//! the task has no counter for ends the task with a `fault` record (the CPU's vector) whose
//! `detail` says so.

use alloc::format;
use alloc::vec::Vec;

use baremark_hw::cpu as hwcpu;
use baremark_hw::fpu::VectorState;
use baremark_hw::user::{self, AddressSpace, UserContext};

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use alloc::boxed::Box;
use alloc::rc::Rc;
use core::cell::RefCell;

use crate::harness::session::{Bench, RunPlan};

use super::abi::{STACK_TOP, SpawnLimit, USER_PAGE_ADDR};
use super::elf::LoadPlan;
use super::hwslots::HwSlot;
use super::ring3::Task;
use super::user_page::UserPage;
use super::vcounter::VirtualCounters;
use crate::output::console::record;
use crate::platform::cpus;

mod hw;
mod load;
mod mux;
mod notify;
mod page;
mod policy;
mod records;
mod sample;
mod schedule;
mod step;
mod syscalls;
mod system;
mod threads;

use load::load;
use page::PageState;
use records::{BENCHES, HARNESS_ERRORS, RESULTS, UNSUPPORTED, harness_error};
use schedule::{round_robin, run_family};

pub use policy::{Policy, set_policy};

pub use hw::{Diagnostics, set_diagnostics};

pub use records::Summary;

/// The harness plan of each CPU: its events resolved for its own PMU (the boot CPU's plan for
/// every CPU whose PMU is the same; a hybrid part's other core type has its own).
pub struct Plans {
    pub boot: &'static RunPlan,
    /// By CPU index; a CPU past the end uses `boot`.
    pub by_cpu: Vec<&'static RunPlan>,
}

impl Plans {
    pub fn for_cpu(&self, cpu: usize) -> &'static RunPlan {
        self.by_cpu.get(cpu).copied().unwrap_or(self.boot)
    }
}
pub use schedule::{Budget, Quantum};

/// The `task_index` of the next spawned task (after the ramdisk's payloads).
static NEXT_TASK_INDEX: AtomicU64 = AtomicU64::new(0);
/// Spawned tasks that exist (not yet dropped), for [`MAX_SPAWNED`].
static SPAWNED_LIVE: AtomicU32 = AtomicU32::new(0);

/// Runs every `payloads/<name>.elf` member of `ramdisk`: one after the other in archive order,
/// or, with a `quantum`, all at once round-robin on the APIC timer. `tsc_hz` is the TSC
/// frequency the `time` syscall reports (0 when unknown). With a `budget`, the APIC timer (one
/// shot) is also armed for the end of each task's budget (the earlier of that and the end of
/// its quantum), and a task past its budget is killed (`task_killed`); without one and without
/// a quantum, no timer interrupt is armed at all while a task runs.
pub fn run_payloads(
    ramdisk: &'static [u8],
    tsc_hz: Option<u64>,
    quantum: Option<Quantum>,
    budget: Option<Budget>,
    plans: &'static Plans,
) -> Summary {
    let mut summary = Summary::default();
    if ramdisk.is_empty() {
        return summary;
    }
    let mut ready: Vec<Running> = Vec::new();
    let members = crate::devices::ramdisk::entries(ramdisk)
        .map_while(Result::ok)
        .filter(|e| super::abi::payload_name(e.prefix, e.name).is_some())
        .count() as u64;
    NEXT_TASK_INDEX.store(members, Ordering::Relaxed);
    // run.cfg `system`: the whole machine counted over the run, read around every payload.
    let system_start = system::start_run();
    let mut system_last = system_start.clone();
    // run.cfg `background`: those payloads start first, each on its CPU, and run while the
    // others do; they are stopped when the others are done.
    let background = start_background(ramdisk, tsc_hz, plans, &mut summary);
    // run.cfg `cpus`: the foreground payloads once on each CPU listed, one CPU after another.
    let passes = policy::passes();
    for (pass, pass_cpu) in passes.iter().enumerate() {
        for (task, data) in payloads(ramdisk) {
            let name = task.name;
            if policy::background_cpu(name).is_some() {
                continue;
            }
            // A payload with its own pin runs once, on its CPU, whatever `cpus` says.
            let own_pin = pass_cpu.is_some() && policy::pinned_by_name(name);
            if own_pin && pass > 0 {
                continue;
            }
            summary.payloads += 1;
            // run.cfg `pin`: the whole payload (loading, its run, its records) on its CPU.
            let cpu = match pass_cpu {
                Some(c) if !own_pin => *c,
                _ => policy::cpu_of(name),
            };
            // Its events resolved for that CPU's PMU.
            let harness = plans.for_cpu(cpu);
            let mut ran = false;
            let mut payload = |summary: &mut Summary, ready: &mut Vec<Running>| {
                ran = true;
                let loaded = start_payload(task, data, tsc_hz, cpu, ramdisk, harness, summary);
                let Some(mut t) = loaded else {
                    return;
                };
                t.budget = budget;
                if quantum.is_some() {
                    ready.push(t);
                } else {
                    // Between payloads: the screen and the results file catch up.
                    crate::output::sinks::between_payloads(&match pass_cpu {
                        Some(_) => alloc::format!(
                            "payload {} of {members}: {name} on cpu {cpu}",
                            task.index + 1
                        ),
                        None => alloc::format!("payload {} of {members}: {name}", task.index + 1),
                    });
                    run_family(t, budget, summary);
                    if let Some(from) = &system_last {
                        system_last = system::report("payload", Some(task), from);
                    }
                }
            };
            let outcome = if cpu == cpus::current() {
                payload(&mut summary, &mut ready);
                Ok(())
            } else {
                let mut on_cpu = Summary::default();
                let mut queued = Vec::new();
                let r = cpus::run_on(cpu, || payload(&mut on_cpu, &mut queued));
                summary.add(&on_cpu);
                ready.extend(queued);
                r
            };
            if let Err(e) = outcome
                && !ran
            {
                summary.rejected += 1;
                let online = cpus::online_count();
                let why = if pass_cpu.is_some() && !own_pin {
                    "run.cfg `cpus` names CPU"
                } else {
                    "pinned to CPU"
                };
                records::not_run(
                    task,
                    Some(cpu),
                    &alloc::format!("{why} {cpu}, but {e} ({online} online)"),
                );
            }
        }
    }
    if let Some(q) = quantum
        && !ready.is_empty()
    {
        crate::output::sinks::between_payloads(&alloc::format!(
            "{} payloads round-robin, {} us quantum",
            ready.len(),
            q.us
        ));
        // Tasks pinned to the same CPU share it round-robin; one CPU's group after another.
        let mut groups: Vec<(usize, Vec<Running>)> = Vec::new();
        for t in ready {
            match groups.iter_mut().find(|(cpu, _)| *cpu == t.cpu) {
                Some((_, g)) => g.push(t),
                None => groups.push((t.cpu, alloc::vec![t])),
            }
        }
        for (cpu, group) in groups {
            let mut group = Some(group);
            let mut on_cpu = Summary::default();
            // The CPU was online when the group's tasks were loaded on it.
            let _ = cpus::run_on(cpu, || {
                if let Some(g) = group.take() {
                    round_robin(g, q, tsc_hz, &mut on_cpu);
                }
            });
            summary.add(&on_cpu);
        }
    }
    for cpu in background {
        cpus::stop_job(cpu);
    }
    summary.add(&BACKGROUND_SUMMARY.lock());
    if let Some(start) = &system_start {
        system::end_run(start);
    }
    // The last task may have left CR4.PCE set (`enter`): ring 3 runs only through the runner,
    // but the kernel's state after the tasks is the boot state.
    hwcpu::set_user_rdpmc(false);
    summary.benchmarks = BENCHES.load(Ordering::Relaxed);
    summary.results = RESULTS.load(Ordering::Relaxed);
    summary.unsupported = UNSUPPORTED.load(Ordering::Relaxed);
    summary.harness_errors = HARNESS_ERRORS.load(Ordering::Relaxed);
    summary
}

/// The ramdisk's payloads in archive order, each with its `task_index` and ELF. A damaged
/// archive was already reported by the configuration reader: what came before it is used.
fn payloads(ramdisk: &'static [u8]) -> impl Iterator<Item = (Task, &'static [u8])> {
    crate::devices::ramdisk::entries(ramdisk)
        .map_while(Result::ok)
        .filter_map(|e| super::abi::payload_name(e.prefix, e.name).map(|name| (name, e.data)))
        .enumerate()
        .map(|(index, (name, data))| {
            (
                Task {
                    name,
                    index: index as u64,
                },
                data,
            )
        })
}

/// Loads payload `task` from its ELF `data` and makes it a task on `cpu` (its `task_start`
/// record), with the ramdisk and the harness plan; `None` if it cannot be loaded (its
/// `task_error` record, counted as rejected).
fn start_payload(
    task: Task,
    data: &'static [u8],
    tsc_hz: Option<u64>,
    cpu: usize,
    ramdisk: &'static [u8],
    harness: &'static RunPlan,
    summary: &mut Summary,
) -> Option<Running> {
    match load(task, data) {
        Ok((plan, space)) => {
            summary.started += 1;
            let mut t = Running::start(task, &plan, space, tsc_hz, cpu);
            t.ramdisk = ramdisk;
            t.harness = Some(harness);
            t.start_sampling();
            Some(t)
        }
        Err(e) => {
            summary.rejected += 1;
            records::not_run(task, None, &e.message);
            None
        }
    }
}

/// The counts of the background payloads (run.cfg `background`), added by their CPUs.
static BACKGROUND_SUMMARY: spin::Mutex<Summary> = spin::Mutex::new(Summary::new());

/// Starts each run.cfg `background` payload on its CPU (a job that runs while this CPU goes on;
/// no watchdog: it runs until [`cpus::stop_job`]). Returns the CPUs it started jobs on; a
/// payload that cannot start there is reported (`task_error`).
fn start_background(
    ramdisk: &'static [u8],
    tsc_hz: Option<u64>,
    plans: &'static Plans,
    summary: &mut Summary,
) -> Vec<usize> {
    let mut started = Vec::new();
    for (task, data) in payloads(ramdisk) {
        let Some(cpu) = policy::background_cpu(task.name) else {
            continue;
        };
        summary.payloads += 1;
        let harness = plans.for_cpu(cpu);
        let job = move || {
            let mut s = Summary::default();
            if let Some(t) = start_payload(task, data, tsc_hz, cpu, ramdisk, harness, &mut s) {
                run_family(t, None, &mut s);
            }
            BACKGROUND_SUMMARY.lock().add(&s);
        };
        match cpus::start_job(cpu, job) {
            Ok(()) => started.push(cpu),
            Err(e) => {
                summary.rejected += 1;
                records::not_run(
                    task,
                    Some(cpu),
                    &alloc::format!("background on CPU {cpu}, but {e}; not run"),
                );
            }
        }
    }
    started
}

/// How a task ended.
#[derive(Clone, Copy)]
enum Ended {
    Exited(i64),
    Faulted,
    /// Past its budget (the watchdog).
    Killed,
    /// A background payload stopped because the others were done (run.cfg `background`).
    Stopped,
}

/// A task being run: its address space, registers, virtual counters and counter page.
struct Running {
    /// Its threads (`thread_start`), stopped and waited for before anything else of the task
    /// is dropped (first field: fields drop in order).
    threads: threads::Threads,
    task: Task,
    /// Where its counter page is mapped: `USER_PAGE_ADDR`, or a thread's own.
    page_addr: u64,
    /// 0 for a task; `k` for its thread `k` (which starts no threads and spawns no tasks).
    thread_slot: u64,
    /// The CPU it runs on, from start to end (run.cfg `pin`; its spawned tasks inherit it).
    cpu: usize,
    space: AddressSpace,
    ctx: UserContext,
    vc: VirtualCounters,
    page: UserPage,
    tsc_hz: Option<u64>,
    syscalls: u64,
    interrupts: u64,
    rdpmc_emulated: u64,
    /// TSC ticks taken off the virtual TSC for every interrupt exit (round-robin only: the
    /// kernel's measured cost of one preemption, see `calibrate_switch`).
    /// `(TSC only, with hardware counters live)`: a task with live hardware counters sets
    /// CR4.PCE on the way in and out, so its round trip differs.
    preempt_compensation: (u64, u64),
    /// The watchdog's budget for this task, if any.
    budget: Option<Budget>,
    /// Entries into ring 3 with CR4.PCE set (RDPMC in hardware, not emulated).
    pce_entries: u64,
    /// `counters_stop` clears it: the task's virtual counters (events and virtual TSC) stay
    /// frozen until `counters_start`.
    counting: bool,
    /// TSC ticks the task ran in ring 3, counting or not (the watchdog's measure).
    run_tsc: u64,
    /// TSC ticks the kernel spent serving the task's syscalls and exceptions (from the entry
    /// assembly's reading to the end of the service): the watchdog budgets it too, separately.
    service_tsc: u64,
    /// TSC ticks of its last syscall spent waiting for what it asked (`thread_join`), taken
    /// off its service time.
    waited_tsc: u64,
    /// Started by `spawn` (counted in [`SPAWNED_LIVE`] until dropped).
    spawned: bool,
    /// The family it belongs to: the ramdisk payload it descends from and what its tasks share
    /// (a ramdisk payload starts one).
    family: Rc<RefCell<Family>>,
    /// Its generation below its ramdisk payload (0: the payload itself).
    depth: u32,
    /// The ramdisk (`spawn` looks payloads up in it).
    ramdisk: &'static [u8],
    /// The `task_index` of the task that spawned this one (`None`: a ramdisk payload, or an
    /// orphan).
    parent: Option<u64>,
    /// Add this task's counts into its parent's when it ends (`spawn` flag bit 0).
    add_to_parent: bool,
    /// Children not yet waited for.
    children: Vec<Child>,
    /// Waiting (`wait`) for the child with this `task_index`: not scheduled.
    blocked_on: Option<u64>,
    /// The task's hardware counters (`counters_configure` with events, on a PMU), slot i of
    /// `vc` on `hw[i]`; empty: TSC-only.
    hw: Vec<HwSlot>,
    /// RDPMC ECX of each `hw` slot's counter for the counter page (`None`: not readable).
    hw_rdpmc: Vec<Option<u32>>,
    /// Extra MSRs the `hw` events need (offcore response, load latency, frontend), `(msr,
    /// value)`: written with the events whenever they are loaded (`bench_group` of a group
    /// with such events; `counters_configure` sets none).
    hw_msrs: Vec<(u32, u64)>,
    /// Why the task's hardware counts since its last `counters_configure` / `counters_reset`
    /// are lost (a PMU error switching its counters; `hw` module docs): its slots are frozen,
    /// published unreadable, and `counters_read` refuses them. `None`: they are exact.
    hw_lost: Option<alloc::string::String>,
    /// The retry-free virtual TSC reader's window `[lo, hi]` (`read_window`; `user_page` module
    /// docs): resumed with RIP inside it, the task gets RSI = the published `tsc_offset`.
    /// `(u64::MAX, u64::MAX)`: none (no canonical RIP is there).
    read_window: (u64, u64),
    /// The retry-free slot reader's window `[lo, hi]` and abort address (`read_window` kind 1;
    /// `user_page` module docs, "The retry-free slot read"). `(u64::MAX, u64::MAX)`: none.
    slot_window: (u64, u64),
    slot_abort: u64,
    /// The harness region's window `[lo, hi]` and abort address (`read_window` kind 2;
    /// `user_page` module docs, "The harness region's window"). `(u64::MAX, u64::MAX)`: none.
    region_window: (u64, u64),
    region_abort: u64,
    /// The run's harness settings (`None`: the calibration task).
    harness: Option<&'static RunPlan>,
    /// What the counter page published at its last whole write (`None`: it must be written
    /// whole before the next run).
    page_state: Option<PageState>,
    /// The generation of the page's last whole write.
    page_whole: Option<u64>,
    /// Round-robin: its next slice is `2^slice_boost` quanta (its last slices ran less than the
    /// floor in ring 3: the kernel's work used them up).
    slice_boost: u32,
    /// The task's fast hardware-counter switch (`run::hw`; `None`: no hardware counters, or
    /// the general protocol).
    hw_switch: Option<Box<hw::HwSwitch>>,
    /// The counter page, pinned for the writes at every switch (`None`: not mapped).
    page_pin: Option<user::PinnedPage>,
    /// The benchmark between `bench_begin` and `bench_end`.
    bench: Option<Bench>,
    /// Harness calls refused (`Running::refuse`; only the first `REFUSALS_REPORTED` are
    /// records).
    refusals: u64,
    /// Its id (`bench_begin`'s result: the task's benchmarks numbered from 1), which the
    /// other harness calls may name.
    bench_id: u64,
    /// Benchmarks the task has begun (the last one's id).
    benches_begun: u64,
    /// Whether a `counters_configure` or `counters_reset` was refused in the open benchmark
    /// (the first refusal is reported, not every one).
    bench_counters_refused: bool,
    /// Its x87/SSE/AVX registers while another task has the CPU's (`hw::fpu`).
    vector: VectorState,
    /// Its overflow thresholds, handler and samples (`notify`).
    notify: notify::Notify,
    /// Its events in groups taking turns on the counters (`mux`; `None`: not multiplexed).
    mux: Option<Box<super::mux::Mux>>,
    /// It holds counters of its own (system mode is refused meanwhile).
    hold: Option<crate::task::system_mode::CounterHold>,
}

/// A ramdisk payload and the tasks it spawned, and their children, ...: what they share.
struct Family {
    /// Tasks the family started with `spawn` (against `abi::MAX_FAMILY_SPAWNS`).
    spawned: u32,
    /// The limits whose refusal was already reported (one `error` record per family and limit).
    reported: Vec<SpawnLimit>,
}

/// A child of a task, as its parent sees it.
struct Child {
    index: u64,
    state: ChildState,
}

enum ChildState {
    /// Spawned, not started: the scheduler takes it (one at a time: when the parent waits for
    /// it; round-robin: right after the `spawn` syscall).
    Pending(Box<Running>),
    /// In the round-robin queue.
    Live,
    /// Ended: what `wait` returns.
    Ended(i64),
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.spawned {
            SPAWNED_LIVE.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(b) = self.bench.take() {
            let message = format!(
                "benchmark `{}` was not ended (bench_end): the task ended first; nothing of it is reported",
                b.name
            );
            harness_error(self.task, Some(&b.name), &message);
        }
        self.finish_sampling();
        self.report_mux();
        self.release_hw();
        crate::task::system_mode::release_if_held_by(self.task.index);
    }
}

impl Running {
    fn new(task: Task, space: AddressSpace, entry: u64, tsc_hz: Option<u64>) -> Running {
        Running::new_at(task, space, entry, STACK_TOP, USER_PAGE_ADDR, tsc_hz)
    }

    /// A task or thread entering at `entry` with its stack at `stack_top` and its counter page
    /// at `page_addr` (both mapped in `space`).
    fn new_at(
        task: Task,
        space: AddressSpace,
        entry: u64,
        stack_top: u64,
        page_addr: u64,
        tsc_hz: Option<u64>,
    ) -> Running {
        let ctx = UserContext::new(&space, entry, stack_top);
        let page_pin = space.pin(page_addr).ok();
        let mut vc = VirtualCounters::new();
        let _ = vc.configure(&[]);
        Running {
            threads: threads::Threads::default(),
            task,
            page_addr,
            thread_slot: 0,
            cpu: cpus::current(),
            space,
            ctx,
            vc,
            page: UserPage::new(),
            tsc_hz,
            syscalls: 0,
            interrupts: 0,
            rdpmc_emulated: 0,
            preempt_compensation: (0, 0),
            budget: None,
            pce_entries: 0,
            counting: true,
            run_tsc: 0,
            service_tsc: 0,
            waited_tsc: 0,
            ramdisk: &[],
            parent: None,
            add_to_parent: false,
            children: Vec::new(),
            blocked_on: None,
            spawned: false,
            family: Rc::new(RefCell::new(Family {
                spawned: 0,
                reported: Vec::new(),
            })),
            depth: 0,
            hw: Vec::new(),
            hw_rdpmc: Vec::new(),
            hw_msrs: Vec::new(),
            hw_lost: None,
            read_window: (u64::MAX, u64::MAX),
            slot_window: (u64::MAX, u64::MAX),
            region_window: (u64::MAX, u64::MAX),
            region_abort: 0,
            slot_abort: 0,
            harness: None,
            page_state: None,
            page_whole: None,
            slice_boost: 0,
            hw_switch: None,
            page_pin,
            bench: None,
            refusals: 0,
            bench_id: 0,
            benches_begun: 0,
            bench_counters_refused: false,
            vector: VectorState::new(),
            notify: notify::Notify::default(),
            mux: None,
            hold: None,
        }
    }

    /// A loaded payload: its `task_start` record.
    fn start(
        task: Task,
        plan: &LoadPlan,
        space: AddressSpace,
        tsc_hz: Option<u64>,
        cpu: usize,
    ) -> Running {
        record("task_start", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .u64("cpu", cpu as u64)
                .str("core_type", cpus::core_type_name(cpu))
                .hex("entry", plan.entry)
                .u64("segments", plan.segments.len() as u64)
                .u64("mapped_bytes", plan.mapped_bytes())
                .hex("user_page", USER_PAGE_ADDR)
        });
        let mut t = Running::new(task, space, plan.entry, tsc_hz);
        t.cpu = cpu;
        t
    }
}

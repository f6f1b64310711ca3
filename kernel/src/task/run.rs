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
//! ([`calibrate_switch`], once TSC-only and once with every counter of the PMU configured) and
//! takes it off at every interrupt exit, so a preempted task reads the same deltas as an
//! undisturbed one.
//!
//! # Counter features (submodules)
//!
//! `notify` (overflow thresholds, the ring-3 handler, sampling), `mux` (time-multiplexing),
//! `system` (system mode), `policy` (what run.cfg says about them), `hw` (the counters around
//! each run), `syscalls` (every way a task enters the kernel on purpose).
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

use baremark_hw::apic::{self, TimerMode};
use baremark_hw::cpu as hwcpu;
use baremark_hw::fpu::VectorState;
use baremark_hw::user::{self, AddressSpace, Exit, UserContext};

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use alloc::boxed::Box;
use alloc::rc::Rc;
use core::cell::RefCell;

use crate::harness::session::{Bench, RunPlan, Sink};
use crate::output::record::Record;

use super::abi::{ENOENT, STACK_PAGES, STACK_TOP, SpawnLimit, USER_PAGE_ADDR};
use super::elf::{self, Limits, LoadPlan};
use super::hwslots::{self, HwSlot};
use super::ring3::{self, Task, report_fault};
use super::user_page::{self, UserPage};
use super::vcounter::{MAX_SLOTS, VirtualCounters};
use crate::output::console::record;
use crate::pmu::backend::Counter;
use crate::say;

mod hw;
mod mux;
mod notify;
mod policy;
mod syscalls;
mod system;

pub use policy::{Policy, set_policy};

pub use hw::{Diagnostics, set_diagnostics};

/// Vector of #UD (RDPMC under TCG).
const INVALID_OPCODE: u8 = 6;
/// Vector of #GP (RDPMC on hardware with CR4.PCE clear).
const GENERAL_PROTECTION: u8 = 13;
/// The RDPMC instruction.
const RDPMC: [u8; 2] = [0x0f, 0x33];

/// The RDPMC ECX that names `counter` to the emulation: GP n is n, fixed n is `(1 << 30) | n`.
fn rdpmc_ecx(counter: Counter) -> u32 {
    match counter {
        Counter::Gp(n) => u32::from(n),
        Counter::Fixed(n) => (1 << 30) | u32::from(n),
    }
}

/// What happened to the payloads of the ramdisk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    /// Payload members found.
    pub payloads: u64,
    /// Tasks that ran (a `task_start` record).
    pub started: u64,
    /// Tasks that called `exit`.
    pub exited: u64,
    /// Tasks that faulted.
    pub faulted: u64,
    /// Payloads that could not be loaded (`task_error`).
    pub rejected: u64,
    /// Tasks the watchdog killed (`task_killed`).
    pub killed: u64,
    /// Tasks started by `spawn` (also counted in `started` and in how they ended).
    pub spawned: u64,
    /// Harness: benchmarks begun, `result` records, of them not supported, harness errors.
    pub benchmarks: u64,
    pub results: u64,
    pub unsupported: u64,
    pub harness_errors: u64,
}

/// The `task_index` of the next spawned task (after the ramdisk's payloads).
static NEXT_TASK_INDEX: AtomicU64 = AtomicU64::new(0);
/// Spawned tasks that exist (not yet dropped), for [`MAX_SPAWNED`].
static SPAWNED_LIVE: AtomicU32 = AtomicU32::new(0);

/// The harness's counts for the `summary` record: benchmarks begun, `result` records, of
/// them not supported, and harness errors (refused calls, benchmarks never ended, events
/// not measured).
static BENCHES: AtomicU64 = AtomicU64::new(0);
static RESULTS: AtomicU64 = AtomicU64::new(0);
static UNSUPPORTED: AtomicU64 = AtomicU64::new(0);
static HARNESS_ERRORS: AtomicU64 = AtomicU64::new(0);

/// The harness's records and table go to the serial console.
struct Console;

impl Sink for Console {
    fn record(&mut self, kind: &str, build: &mut dyn FnMut(Record<'_>) -> Record<'_>) {
        record(kind, build);
    }
    fn text(&mut self, line: core::fmt::Arguments<'_>) {
        crate::output::console::text(line);
    }
    fn median(&mut self, bench: &str, event: &str, median: Option<f64>) {
        crate::output::screen::median(bench, event, median);
    }
}

/// Refused harness calls of one task that become `harness_error` records (`Running::refuse`).
const REFUSALS_REPORTED: u64 = 64;

/// A `harness_error` record (the task goes on; its call returns an error code).
fn harness_error(task: Task, bench: Option<&str>, message: &str) {
    HARNESS_ERRORS.fetch_add(1, Ordering::Relaxed);
    record("harness_error", |r| {
        r.str("payload", task.name)
            .u64("task_index", task.index)
            .opt_str("bench", bench)
            .str("message", message)
    });
    say!("bench  {}: {message}", task.name);
}

/// An `error` record about one task (`source: tasks`); the task goes on.
fn task_error(task: Task, message: &str) {
    record("error", |r| {
        r.str("source", "tasks")
            .str("task", task.name)
            .u64("task_index", task.index)
            .str("message", message)
    });
}

/// The `payloads/<name>.elf` member called `name` in `ramdisk`: its name (borrowed from the
/// ramdisk) and bytes.
fn find_payload(ramdisk: &'static [u8], name: &str) -> Option<(&'static str, &'static [u8])> {
    crate::devices::ramdisk::entries(ramdisk)
        .map_while(Result::ok)
        .find_map(|e| match super::abi::payload_name(e.prefix, e.name) {
            Some(n) if n == name => Some((n, e.data)),
            _ => None,
        })
}

/// Round-robin scheduling: the APIC timer's one-shot count for a quantum.
#[derive(Clone, Copy, Debug)]
pub struct Quantum {
    /// The quantum asked for (`quantum_us` in run.cfg).
    pub us: u32,
    /// The APIC timer frequency (before its divider).
    pub timer_hz: u64,
    /// The TSC frequency (to keep a quantum above the kernel's own switch cost).
    pub tsc_hz: u64,
}

/// The watchdog: each task may run `ms` milliseconds of its own time (its virtual TSC) before
/// it is killed (`task_budget_ms` in run.cfg).
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// The budget asked for.
    pub ms: u32,
    /// The APIC timer frequency (before its divider).
    pub timer_hz: u64,
    /// The TSC frequency (the budget in TSC ticks).
    pub tsc_hz: u64,
}

impl Budget {
    /// The budget in TSC ticks.
    fn tsc(self) -> u64 {
        let tsc = u128::from(self.ms) * u128::from(self.tsc_hz) / 1000;
        u64::try_from(tsc).unwrap_or(u64::MAX).max(1)
    }
}

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
    harness: &'static RunPlan,
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
    // A damaged archive was already reported by the configuration reader: use what came before.
    for entry in crate::devices::ramdisk::entries(ramdisk).map_while(Result::ok) {
        let Some(name) = super::abi::payload_name(entry.prefix, entry.name) else {
            continue;
        };
        let task = Task {
            name,
            index: summary.payloads,
        };
        summary.payloads += 1;
        match load(task, entry.data) {
            Ok((plan, space)) => {
                summary.started += 1;
                let mut t = Running::start(task, &plan, space, tsc_hz);
                t.budget = budget;
                t.ramdisk = ramdisk;
                t.harness = Some(harness);
                t.start_sampling();
                if quantum.is_some() {
                    ready.push(t);
                } else {
                    // Between payloads: the screen and the results file catch up.
                    crate::output::sinks::between_payloads(&alloc::format!(
                        "payload {} of {members}: {name}",
                        task.index + 1
                    ));
                    run_family(t, budget, &mut summary);
                    if let Some(from) = &system_last {
                        system_last = system::report("payload", Some(task), from);
                    }
                }
            }
            Err(e) => {
                summary.rejected += 1;
                let message = e.message;
                record("task_error", |r| {
                    r.str("task", task.name)
                        .u64("task_index", task.index)
                        .str("message", &message)
                });
                say!("task   {}: not run: {message}", task.name);
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
        round_robin(ready, q, tsc_hz, &mut summary);
    }
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

impl Summary {
    fn count(&mut self, ended: Ended) {
        match ended {
            Ended::Exited(_) => self.exited += 1,
            Ended::Faulted => self.faulted += 1,
            Ended::Killed => self.killed += 1,
        }
    }
}

/// The APIC timer's one-shot count for `tsc` TSC ticks (at least 1; at most `u32::MAX`: a
/// longer wait ends early and the caller re-arms).
fn timer_count(tsc: u64, timer_hz: u64, tsc_hz: u64) -> u32 {
    let divide = u128::from(crate::platform::timer::TIMER_DIVIDE);
    let count = u128::from(tsc) * u128::from(timer_hz) / u128::from(tsc_hz.max(1)) / divide;
    u32::try_from(count).unwrap_or(u32::MAX).max(1)
}

/// Arms the APIC timer (one shot) to interrupt after `count` timer ticks.
fn arm_timer(count: u32) {
    apic::timer_arm(
        TimerMode::OneShot,
        crate::platform::interrupts::TIMER_VECTOR,
        crate::platform::timer::TIMER_DIVIDE,
        count,
        false,
    );
}

/// Runs the tasks round-robin: each runs until the APIC timer (armed for one quantum when it is
/// switched in) interrupts it in ring 3, it yields, or it ends. The kernel keeps interrupts off
/// meanwhile, so the timer is only ever taken in ring 3 (a quantum that runs out while the
/// kernel serves a syscall preempts the task as soon as it re-enters ring 3).
fn round_robin(mut ready: Vec<Running>, q: Quantum, tsc_hz: Option<u64>, summary: &mut Summary) {
    let interrupts_were_on = hwcpu::interrupts_enabled();
    hwcpu::disable_interrupts();
    let overhead = calibrate_switch(tsc_hz, &[]);
    // Tasks with hardware counters switch them at every entry and exit: their round trip is
    // measured too (with every counter of the PMU), for the floor of the quantum.
    let events = calibration_events();
    let hw_overhead = if events.is_empty() {
        None
    } else {
        calibrate_switch(tsc_hz, &events)
    };
    let asked = u64::from(q.us) * q.tsc_hz / 1_000_000;
    // A quantum must leave the task time to run after the kernel's own switch cost (else it
    // would be preempted before its first instruction, forever): at least 1.5 times that.
    let wall = overhead
        .map_or(0, |o| o.wall)
        .max(hw_overhead.map_or(0, |o| o.wall));
    let floor = wall.saturating_add(wall / 2);
    let quantum_tsc = asked.max(floor);
    let count = timer_count(quantum_tsc, q.timer_hz, q.tsc_hz);
    let compensation = (
        overhead.map_or(0, |o| o.counted.0),
        hw_overhead.map_or(0, |o| o.counted.0),
    );
    record("schedule", |r| {
        r.str("policy", "round-robin")
            .u64("tasks", ready.len() as u64)
            .u64("quantum_us", u64::from(q.us))
            .u64("quantum_tsc", quantum_tsc)
            .u64("timer_count", u64::from(count))
            .u64(
                "timer_divide",
                u64::from(crate::platform::timer::TIMER_DIVIDE),
            )
            .opt_u64("switch_tsc_min", overhead.map(|o| o.counted.0))
            .opt_u64("switch_tsc_max", overhead.map(|o| o.counted.1))
            .opt_u64("switch_wall_tsc", overhead.map(|o| o.wall))
            .opt_u64("switch_hw_tsc_min", hw_overhead.map(|o| o.counted.0))
            .opt_u64("switch_hw_wall_tsc", hw_overhead.map(|o| o.wall))
            .opt_u64(
                "switch_hw_loaded_wall_tsc",
                hw_overhead.map(|o| o.wall_loaded),
            )
    });
    say!(
        "sched  round-robin: {} tasks, quantum {} us ({quantum_tsc} TSC ticks, timer count {count}), switch cost {:?} TSC ticks counted, {:?} in all",
        ready.len(),
        q.us,
        overhead.map(|o| o.counted),
        overhead.map(|o| o.wall)
    );
    for t in &mut ready {
        t.preempt_compensation = compensation;
    }
    let mut next = 0usize;
    while !ready.is_empty() {
        // The next task that is not waiting for a child (a waiting task's child is in the queue,
        // so one always exists; if none did, the rest could never run).
        let Some(i) = (0..ready.len())
            .map(|k| (next + k) % ready.len())
            .find(|&k| ready[k].blocked_on.is_none())
        else {
            record("error", |r| {
                r.str("source", "tasks")
                    .str("message", "every remaining task waits for a child: not run")
            });
            break;
        };
        // The earlier of the end of the quantum and the end of the task's budget (never less
        // than the floor, so the task always makes progress).
        let slice = match ready[i].remaining_budget() {
            Some(0) => None,
            Some(left) if left.max(floor) < quantum_tsc => {
                Some(timer_count(left.max(floor), q.timer_hz, q.tsc_hz))
            }
            _ => Some(count),
        };
        // A task whose last slice the kernel's own work used up (a slow path: the whole
        // counter page rewritten, emulated instructions) gets a longer one, doubled each time
        // until it makes progress: a quantum near the floor never starves it.
        let slice = slice.map(|s| s.saturating_mul(1 << ready[i].slice_boost));
        let ran_before = ready[i].run_tsc;
        let outcome = match slice {
            None => {
                ready[i].report_killed();
                Step::Ended(Ended::Killed)
            }
            Some(slice) => {
                arm_timer(slice);
                let outcome = loop {
                    match ready[i].step() {
                        Step::Continue => {}
                        other => break other,
                    }
                };
                apic::timer_stop();
                drain_pending_interrupts();
                outcome
            }
        };
        let ran = ready[i].run_tsc.wrapping_sub(ran_before);
        ready[i].slice_boost = match outcome {
            Step::Preempted if ran < floor => (ready[i].slice_boost + 1).min(MAX_SLICE_BOOST),
            _ => 0,
        };
        // Children it spawned join the queue (they run concurrently with it).
        let children = ready[i].take_all_pending();
        summary.spawned += children.len() as u64;
        summary.started += children.len() as u64;
        let ended = match outcome {
            Step::Ended(ended) => Some(ended),
            _ if ready[i].remaining_budget() == Some(0) => {
                ready[i].report_killed();
                Some(Ended::Killed)
            }
            _ => None,
        };
        for mut child in children {
            child.preempt_compensation = compensation;
            ready.push(child);
        }
        match ended {
            Some(ended) => {
                summary.count(ended);
                let done = ready.remove(i);
                if let Some(parent) = ready.iter_mut().find(|t| Some(t.task.index) == done.parent) {
                    parent.child_ended(&done, ended);
                }
                next = i;
            }
            None => next = i + 1,
        }
    }
    if interrupts_were_on {
        hwcpu::enable_interrupts();
    }
}

/// At most 2^this times the quantum for a task that made no progress in its last slice.
const MAX_SLICE_BOOST: u32 = 16;

/// Takes any interrupt that became pending while the kernel ran with interrupts off (a quantum
/// that ran out while the kernel served a syscall or switched tasks) here, in the kernel, where
/// the handler counts and acknowledges it. Otherwise it would preempt the next task before its
/// first instruction, and if switching costs more than a quantum, every time.
fn drain_pending_interrupts() {
    hwcpu::enable_interrupts();
    // STI delays interrupts by one instruction: give them one.
    core::hint::spin_loop();
    hwcpu::disable_interrupts();
}

/// The kernel's cost of one preemption, in TSC ticks.
#[derive(Clone, Copy, Debug)]
struct Switch {
    /// As the virtual TSC sees it (min, max): what is taken off at every interrupt exit.
    counted: (u64, u64),
    /// Wall time of the whole round trip (max, counters restored or not): a quantum must be
    /// longer than this, or the task never runs.
    wall: u64,
    /// The same when the task's events and values are still in the counters (switched back in
    /// with no other task's counters in between: the switch-in only starts them).
    wall_loaded: u64,
}

/// `counters_configure` entries for every counter of the PMU (instructions in ring 3 on each
/// GP counter, each fixed counter in ring 3), at most [`MAX_SLOTS`]: the calibration of a
/// switch with hardware counters. Empty without counters.
fn calibration_events() -> Vec<u64> {
    let caps = crate::pmu::machine::with_pmu(|pmu, _| *pmu.backend.caps());
    let Some(caps) = caps.filter(|c| c.kind != events::pmu::PmuKind::TscOnly) else {
        return Vec::new();
    };
    let usr = events::event::Modifiers {
        usr: true,
        os: false,
        ..Default::default()
    };
    let gp = (0..caps.gp_counters).map(|_| 0xc0 | (1 << 16));
    let fixed = (0..32u8)
        .filter(|&i| caps.has_fixed(i))
        .map(|i| hwslots::fixed_entry(i, &usr));
    gp.chain(fixed).take(MAX_SLOTS).collect()
}

/// The kernel's cost of one preemption: entering ring 3 with the timer interrupt already
/// pending and coming back, for a task with the hardware counters `events` (none: TSC only).
/// Three samples after a warm-up round; `None` if it cannot be measured. Interrupts must be
/// off.
fn calibrate_switch(tsc_hz: Option<u64>, events: &[u64]) -> Option<Switch> {
    // jmp $ (never executed: the interrupt arrives before the first instruction).
    const SPIN: [u8; 2] = [0xeb, 0xfe];
    const CODE: u64 = 0x40_0000;
    let mut space = AddressSpace::new().ok()?;
    space.map(CODE, false, true).ok()?;
    space.write(CODE, &SPIN).ok()?;
    space.map_stack(STACK_TOP, 1).ok()?;
    space.map(USER_PAGE_ADDR, false, false).ok()?;
    let mut t = Running::new(
        Task {
            name: "calibration",
            index: u64::MAX,
        },
        space,
        CODE,
        tsc_hz,
    );
    if !events.is_empty() && t.configure_events(events, &[]) < 0 {
        return None;
    }
    // Four rounds with the task's counters still loaded after the first, then one as after
    // another task used them (its events and values restored at the switch-in).
    let mut samples = [0u64; 5];
    let mut walls = [0u64; 5];
    for (round, (sample, wall)) in samples.iter_mut().zip(&mut walls).enumerate() {
        if round == 4 {
            hw::forget_programming();
        }
        arm_timer(1);
        let deadline = hwcpu::rdtsc().wrapping_add(1_000_000_000);
        while apic::timer_current() != 0 {
            if hwcpu::rdtsc() > deadline {
                apic::timer_stop();
                return None;
            }
            core::hint::spin_loop();
        }
        let before = t.vc.tsc().sum;
        let wall_before = hwcpu::rdtsc();
        match t.enter() {
            Exit::Trap { vector, .. } if vector == crate::platform::interrupts::TIMER_VECTOR => {
                ring3::forward_interrupt(vector);
            }
            _ => {
                apic::timer_stop();
                drain_pending_interrupts();
                return None;
            }
        }
        *wall = hwcpu::rdtsc().wrapping_sub(wall_before);
        *sample = t.vc.tsc().sum - before;
    }
    apic::timer_stop();
    drain_pending_interrupts();
    // The first round runs cold paths (first use of the SYSCALL setup, cache and TLB misses).
    let lo = samples[1..].iter().copied().min()?;
    let hi = samples[1..].iter().copied().max()?;
    Some(Switch {
        counted: (lo, hi),
        wall: walls[1..].iter().copied().max()?,
        wall_loaded: walls[1..4].iter().copied().max()?,
    })
}

/// Why a payload could not be loaded.
struct LoadError {
    message: alloc::string::String,
    /// The machine ran out of free memory (the ELF itself was fine): `spawn` says `ENOMEM`.
    out_of_memory: bool,
}

impl LoadError {
    fn new(message: alloc::string::String) -> LoadError {
        LoadError {
            message,
            out_of_memory: false,
        }
    }

    /// A mapping failed: out of memory if that is why.
    fn mapping(e: user::MapError, what: core::fmt::Arguments<'_>) -> LoadError {
        let out_of_memory = e == user::MapError::OutOfFrames;
        let message = if out_of_memory {
            let free = baremark_hw::paging::frame_stats().free_frames;
            format!("not enough free memory: {what} ({free} frames of 4 KiB free)")
        } else {
            format!("{what}: {e:?}")
        };
        LoadError {
            message,
            out_of_memory,
        }
    }
}

/// Plans and maps a payload: its segments, its stack, its counter page. `Err` says why not (an
/// address space mapped in part is dropped, so its frames go back).
fn load(task: Task, bytes: &[u8]) -> Result<(LoadPlan, AddressSpace), LoadError> {
    let plan = elf::plan(bytes, &Limits::default()).map_err(|e| LoadError::new(format!("{e}")))?;
    let mut space =
        AddressSpace::new().map_err(|e| LoadError::mapping(e, format_args!("no address space")))?;
    for (i, seg) in plan.segments.iter().enumerate() {
        let mut page = seg.page_start;
        while page < seg.page_end {
            space.map(page, seg.writable, seg.executable).map_err(|e| {
                LoadError::mapping(e, format_args!("mapping segment {i} at {page:#x}"))
            })?;
            page += user::PAGE_SIZE;
        }
        let file = bytes.get(seg.file_range.clone()).ok_or_else(|| {
            LoadError::new(format!("segment {i}: file range outside the payload"))
        })?;
        space
            .write(seg.vaddr, file)
            .map_err(|e| LoadError::new(format!("copying segment {i}: {e:?}")))?;
        // The frames are fresh and zeroed; zero the bss explicitly all the same (the loader's
        // contract, whatever the frame allocator does).
        let bss = seg.mem_size - file.len() as u64;
        space
            .zero(seg.vaddr + file.len() as u64, bss)
            .map_err(|e| LoadError::new(format!("zeroing the bss of segment {i}: {e:?}")))?;
    }
    space
        .map_stack(STACK_TOP, STACK_PAGES)
        .map_err(|e| LoadError::mapping(e, format_args!("mapping the stack")))?;
    space
        .map(USER_PAGE_ADDR, false, false)
        .map_err(|e| LoadError::mapping(e, format_args!("mapping the counter page")))?;
    say!(
        "task   {}: entry {:#x}, {} segments, {} KiB",
        task.name,
        plan.entry,
        plan.segments.len(),
        plan.mapped_bytes() >> 10
    );
    Ok((plan, space))
}

/// Runs a payload and the tasks it spawns, one at a time: a child runs when its parent waits
/// for it (the parent is not scheduled until the child ends), and a child never waited for runs
/// when its parent ends (in spawn order). With a `budget`, the watchdog guards each task.
fn run_family(root: Running, budget: Option<Budget>, summary: &mut Summary) {
    // Interrupts stay off in the kernel: a timer (the watchdog's, a multiplexed group's turn)
    // is only ever taken in ring 3.
    let interrupts_were_on = hwcpu::interrupts_enabled();
    hwcpu::disable_interrupts();
    let mut stack: Vec<Running> = alloc::vec![root];
    while let Some(t) = stack.last_mut() {
        if let Some(id) = t.blocked_on {
            if let Some(child) = t.take_pending(id) {
                summary.spawned += 1;
                summary.started += 1;
                stack.push(*child);
                continue;
            }
            // Not possible (a child that ended answers `wait` at once), but never hang on it.
            t.blocked_on = None;
            t.ctx.rax = ENOENT as u64;
        }
        let ended = t.run_watched(budget);
        let Some(ended) = ended else {
            continue; // waiting for a child: run it next
        };
        summary.count(ended);
        let Some(mut done) = stack.pop() else {
            break;
        };
        if let Some(parent) = stack.last_mut()
            && Some(parent.task.index) == done.parent
        {
            parent.child_ended(&done, ended);
        }
        // Its children it never waited for run now, first spawned first, as orphans.
        for mut orphan in done.take_all_pending().into_iter().rev() {
            orphan.parent = None;
            summary.spawned += 1;
            summary.started += 1;
            stack.push(orphan);
        }
    }
    if interrupts_were_on {
        hwcpu::enable_interrupts();
    }
}

/// How a task ended.
#[derive(Clone, Copy)]
enum Ended {
    Exited(i64),
    Faulted,
    /// Past its budget (the watchdog).
    Killed,
}

/// A task being run: its address space, registers, virtual counters and counter page.
struct Running {
    task: Task,
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

/// What the counter page's slots depend on: when it changes, the page is written whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PageState {
    generation: u64,
    /// `VirtualCounters::slots_version`.
    slots: u64,
    /// The hardware counters run (their slots are readable with RDPMC).
    live: bool,
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

/// What serving a syscall led to.
enum Served {
    Done,
    Yield,
    Wait,
    Exit(i64),
}

/// What one run of a task in ring 3 led to.
enum Step {
    /// Served (a syscall, an interrupt, an emulated instruction): run it again.
    Continue,
    /// The task waits for a child (`wait`): not scheduled until the child ends.
    Blocked,
    /// The timer's quantum ran out in ring 3.
    Preempted,
    /// The task called `yield`.
    Yielded,
    /// The task is over (its records are out).
    Ended(Ended),
}

impl Running {
    fn new(task: Task, space: AddressSpace, entry: u64, tsc_hz: Option<u64>) -> Running {
        let ctx = UserContext::new(&space, entry, STACK_TOP);
        let page_pin = space.pin(USER_PAGE_ADDR).ok();
        let mut vc = VirtualCounters::new();
        let _ = vc.configure(&[]);
        Running {
            task,
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
    fn start(task: Task, plan: &LoadPlan, space: AddressSpace, tsc_hz: Option<u64>) -> Running {
        record("task_start", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .hex("entry", plan.entry)
                .u64("segments", plan.segments.len() as u64)
                .u64("mapped_bytes", plan.mapped_bytes())
                .hex("user_page", USER_PAGE_ADDR)
        });
        Running::new(task, space, plan.entry, tsc_hz)
    }

    /// Runs the task until it ends or the watchdog kills it: the APIC timer (one shot) is armed
    /// for the rest of its budget while it runs (or the end of its multiplexed group's turn, if
    /// earlier), and each time it fires the budget is checked (the timer and TSC frequencies
    /// are estimates: an early interrupt re-arms for the rest). Without a budget and without
    /// multiplexing no timer is armed.
    /// The caller keeps interrupts off in the kernel, so the timer is only taken in ring 3.
    /// Returns `None` when the task waits for a child. Interrupts must be off.
    fn run_watched(&mut self, budget: Option<Budget>) -> Option<Ended> {
        loop {
            let left = self.remaining_budget().unwrap_or(u64::MAX);
            if left == 0 {
                self.report_killed();
                return Some(Ended::Killed);
            }
            // The earlier of the budget's end and the active group's turn (multiplexing).
            let clock = budget
                .map(|b| (b.timer_hz, b.tsc_hz))
                .or_else(|| Some((policy::timer_hz()?, self.tsc_hz?)));
            let until = left.min(self.mux_left().unwrap_or(u64::MAX));
            let timed = match clock {
                Some((timer_hz, tsc_hz)) if until != u64::MAX => {
                    arm_timer(timer_count(until, timer_hz, tsc_hz));
                    true
                }
                _ => false,
            };
            if !timed {
                // Nothing to time: no timer interrupt at all (until the task multiplexes).
                loop {
                    match self.step() {
                        Step::Ended(ended) => return Some(ended),
                        Step::Blocked => return None,
                        _ if self.mux.is_some() => break,
                        _ => {}
                    }
                }
                continue;
            }
            // Armed without a group's turn in view: a task that starts multiplexing meanwhile
            // gets the timer re-armed for it.
            let armed_for_mux = self.mux.is_some();
            let outcome = loop {
                match self.step() {
                    Step::Continue if self.mux.is_some() == armed_for_mux => {}
                    other => break other,
                }
            };
            apic::timer_stop();
            drain_pending_interrupts();
            match outcome {
                Step::Ended(ended) => return Some(ended),
                Step::Blocked => return None,
                _ => {}
            }
        }
    }

    /// TSC ticks of its budget the task has left (`None`: no budget): the less of what is left
    /// of its time in ring 3 and of the kernel's time serving it, each budgeted on its own. A
    /// task that keeps the kernel busy (a flood of syscalls, each cheap in ring 3 and expensive
    /// in the kernel: zoo-syscall-flood) is stopped too, not only one that runs long.
    fn remaining_budget(&self) -> Option<u64> {
        self.budget.map(|b| {
            let tsc = b.tsc();
            tsc.saturating_sub(self.run_tsc)
                .min(tsc.saturating_sub(self.service_tsc))
        })
    }

    /// The watchdog ends the task: its `task_killed` record.
    fn report_killed(&self) {
        let task = self.task;
        let vtsc = self.vc.values().tsc;
        let (ms, tsc) = self.budget.map_or((0, 0), |b| (b.ms, b.tsc()));
        let exceeded = if self.service_tsc >= tsc && self.run_tsc < tsc {
            "service"
        } else {
            "ring3"
        };
        record("task_killed", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .u64("budget_ms", u64::from(ms))
                .u64("budget_tsc", tsc)
                .str("exceeded", exceeded)
                .u64("virtual_tsc", vtsc)
                .u64("service_tsc", self.service_tsc)
                .u64("syscalls", self.syscalls)
                .u64("interrupts", self.interrupts)
        });
        say!(
            "task   {}: killed: past its budget of {ms} ms ({tsc} TSC ticks) of {} | virtual tsc \
             {vtsc} | kernel service {} TSC ticks",
            task.name,
            if exceeded == "service" {
                "the kernel's service"
            } else {
                "its own time"
            },
            self.service_tsc
        );
    }

    /// Runs the task in ring 3 once and serves what brought it back.
    fn step(&mut self) -> Step {
        let task = self.task;
        // A multiplexed configuration's next group, when the active one has had its turn.
        self.rotate_if_due();
        // Thresholds reached in the last run: sampled, or the task goes to its handler.
        self.deliver_due();
        match self.enter() {
            Exit::Syscall => {
                let served = self.syscall();
                self.add_service();
                match served {
                    Served::Exit(code) => {
                        self.report_exit(code);
                        Step::Ended(Ended::Exited(code))
                    }
                    Served::Yield => Step::Yielded,
                    Served::Wait => Step::Blocked,
                    Served::Done => Step::Continue,
                }
            }
            Exit::Trap { vector, .. } if ring3::is_interrupt(vector) => {
                self.interrupts += 1;
                if vector == crate::platform::interrupts::PMI_VECTOR && self.hw_switch.is_some() {
                    // An overflow of the task's counters: the switch-out took the status.
                    crate::pmu::machine::ack_task_pmi();
                } else {
                    ring3::forward_interrupt(vector);
                }
                if vector == crate::platform::interrupts::TIMER_VECTOR {
                    Step::Preempted
                } else {
                    Step::Continue
                }
            }
            Exit::Trap {
                vector,
                error_code,
                cr2,
            } => {
                let detail = if vector == INVALID_OPCODE || vector == GENERAL_PROTECTION {
                    let emulated = self.try_rdpmc();
                    self.add_service();
                    match emulated {
                        Ok(()) => return Step::Continue,
                        Err(detail) => detail,
                    }
                } else {
                    None
                };
                report_fault(task, &self.ctx, vector, error_code, cr2, detail.as_deref());
                Step::Ended(Ended::Faulted)
            }
            Exit::InvalidContext(e) => {
                report_fault(
                    task,
                    &self.ctx,
                    GENERAL_PROTECTION,
                    0,
                    None,
                    Some(ring3::invalid_context_detail(e)),
                );
                Step::Ended(Ended::Faulted)
            }
        }
    }

    /// Counts the kernel's service of the task's last return to the kernel (a syscall, an
    /// emulated instruction), from the entry assembly's TSC reading to now.
    fn add_service(&mut self) {
        let served = hwcpu::rdtsc().wrapping_sub(self.ctx.left_tsc());
        self.service_tsc = self.service_tsc.saturating_add(served);
    }

    fn report_exit(&self, code: i64) {
        let task = self.task;
        let entries = self.ctx.entries();
        let vtsc = self.vc.values().tsc;
        record("task_exit", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .i64("code", code)
                .u64("virtual_tsc", vtsc)
                .u64("syscalls", self.syscalls)
                .u64("service_tsc", self.service_tsc)
                .u64("interrupts", self.interrupts)
                .u64("rdpmc_emulated", self.rdpmc_emulated)
                .bool("pce", self.pce_entries > 0)
                .opt_str("counters_lost", self.hw_lost.as_deref())
                .u64("pce_entries", self.pce_entries)
                .u64("harness_refusals", self.refusals)
                .u64("notifications", self.notify.delivered)
                .u64("notifications_late", self.notify.late)
                .object("entries", |r| {
                    r.u64("iretq", entries.iretq)
                        .u64("sysretq", entries.sysretq)
                })
        });
        say!(
            "task   {}: exit {code} | virtual tsc {vtsc} | {} syscalls | {} interrupts",
            task.name,
            self.syscalls,
            self.interrupts
        );
    }

    /// Copies the counter page into the task (the page is read-only for the task, so the
    /// kernel writes it through its own mapping).
    ///
    /// The whole page after a configuration (the number of slots may have changed); else only
    /// the parts that can change (`UserPage::changing_pieces`), through the pinned page.
    fn publish(&mut self) {
        self.update_page();
        let generation = self.page.generation;
        match self.page_pin {
            Some(pin) if self.page_whole == Some(generation) => {
                let space = &mut self.space;
                self.page.changing_pieces(|at, piece| {
                    let _ = space.write_pinned(&pin, at, piece);
                });
            }
            _ => {
                let _ = self.space.write(USER_PAGE_ADDR, &self.page.to_bytes());
                self.page_whole = Some(generation);
            }
        }
        self.page_state = None;
    }

    /// The kernel's copy of the page from the virtual counters (RDPMC indices of the task's
    /// hardware slots) and the interrupt count.
    fn update_page(&mut self) {
        let (hw, rdpmc, lost) = (&self.hw, &self.hw_rdpmc, self.hw_lost.is_some());
        // Lost counts are never readable (`hw` module docs): index 0 while the task runs sends
        // the reader to `counters_read`, which refuses them.
        self.page.publish(&self.vc, |c| {
            hw.iter()
                .position(|s| s.counter == c && !lost)
                .and_then(|i| rdpmc.get(i).copied().flatten())
        });
        self.page.interrupts = self.interrupts;
    }

    /// Writes the whole page if what it publishes for the slots changed since its last whole
    /// write ([`PageState`]), or the virtual TSC does not run (the exit assembly then publishes
    /// nothing). `live`: the task's hardware counters will run.
    #[inline]
    fn publish_if_changed(&mut self, counting: bool, live: bool) {
        let vtsc_running = counting && self.vc.is_running();
        let state = PageState {
            generation: self.vc.generation(),
            slots: self.vc.slots_version(),
            live,
        };
        if !vtsc_running || self.page_state != Some(state) {
            self.publish_whole(vtsc_running.then_some(state));
        }
    }

    #[inline(never)]
    fn publish_whole(&mut self, state: Option<PageState>) {
        self.publish();
        self.page_state = state;
    }

    /// What the exit assembly publishes at the next entry (`hw::user`, "The virtual TSC's
    /// boundary"): nothing unless the virtual TSC runs.
    #[inline]
    fn set_boundary(&mut self, vtsc_running: bool) {
        let publish = user::VtscPublish {
            page: self.page_pin.as_ref(),
            base: self.vc.tsc().sum,
            window: (self.read_window.0 != u64::MAX).then_some(self.read_window),
            seq: self.page.seq,
            interrupts: self.interrupts,
        };
        self.ctx.set_virtual_tsc(vtsc_running.then_some(publish));
    }

    /// Runs the task in ring 3 once, with its virtual TSC running only meanwhile. After an
    /// interrupt the preemption compensation is taken off (never below the resume's reading).
    ///
    /// The counter page is written whole only when what it publishes for the slots changed
    /// (a configuration, a fold, counting started or stopped: [`PageState`]); at every other
    /// entry the exit assembly writes the few fields a run changes (`seq`, the virtual TSC,
    /// `interrupts`), and the switch-out writes nothing (`hwswitch` folds nothing).
    fn enter(&mut self) -> Exit {
        // Counters with thresholds armed to overflow at the next one (kernel time).
        self.rearm_thresholds();
        // Its vector registers first, before any counter starts (a pointer compare unless
        // another task ran since).
        self.vector.load();
        // CR4.PCE only while a task with live hardware counters runs (a TSC-only task's RDPMC
        // always traps and is emulated); it is clear whenever the kernel runs.
        let counting = self.counting;
        let fast = self.hw_switch.is_some();
        // The task's hardware counters start before the reading that starts its virtual TSC:
        // the kernel's work switching them is never the task's time.
        let hw = counting && self.uses_hardware_counters();
        let resumed = hwcpu::rdtsc();
        // The fast switch writes its MSRs last (below); the general protocol starts the
        // counters here.
        let (fast_in, raw) = if hw && fast {
            (self.prepare_in_hw(resumed), None)
        } else if hw {
            (None, self.start_hw())
        } else {
            (None, None)
        };
        let frozen = self.has_frozen_slots();
        if let Some(raw) = &raw {
            self.resume_hw(raw, resumed);
        } else if counting && frozen {
            self.resume_frozen(resumed);
        } else if counting && fast_in.is_none() {
            let _ = self.vc.resume_held(resumed);
        }
        let mut pce = fast_in.is_some() || raw.is_some();
        self.publish_if_changed(counting, pce);
        let mut vtsc_running = counting && self.vc.is_running();
        // The slot reader's fix-up (kernel time: its values do not depend on the entry's TSC).
        if let Some((base, start, ecx)) = user_page::fix_up_slot_reader(
            self.ctx.rip,
            self.slot_window,
            self.ctx.rdi,
            USER_PAGE_ADDR,
            &self.page,
        ) {
            (self.ctx.rsi, self.ctx.r8, self.ctx.rcx) = (base, start, ecx);
        }
        // The virtual TSC's boundary: the exit assembly reads the TSC last thing before ring 3
        // and publishes the offset from it (and does the retry-free reader's fix-up), the
        // entry assembly reads it first thing back, so the kernel's work around the run is
        // never the task's time (`hw::user` module docs).
        self.page.seq = self.page.seq.wrapping_add(2);
        self.set_boundary(vtsc_running);
        if let Some(restore) = fast_in {
            pce = self.write_in_hw(restore, resumed);
            if !pce {
                // The counts were lost: the page says so before the task runs.
                self.publish_if_changed(counting, false);
                vtsc_running = counting && self.vc.is_running();
                self.set_boundary(vtsc_running);
            }
        }
        // CR4.PCE as this run needs it (left so afterwards: the kernel's RDPMC does not depend
        // on it, and the next run of the same task needs it again).
        hwcpu::set_user_rdpmc(pce);
        self.pce_entries += u64::from(pce);
        let exit = user::run(&mut self.ctx, &self.space);
        // The run started at the exit assembly's reading (with the virtual TSC stopped too, so
        // that the watchdog and the round-robin progress count ring 3 alone).
        let resumed = self.ctx.entered_tsc();
        if vtsc_running {
            let _ = self.vc.restart_tsc(resumed);
        }
        let mut now = self.ctx.left_tsc();
        if let Exit::Trap { vector, .. } = exit
            && ring3::is_interrupt(vector)
        {
            // The compensation applies from the resume reading (or, with counting stopped,
            // from the entry).
            let start = if counting {
                self.vc.tsc().start
            } else {
                resumed
            };
            now = start.wrapping_add(now.wrapping_sub(start).saturating_sub(if pce {
                self.preempt_compensation.1
            } else {
                self.preempt_compensation.0
            }));
        }
        self.run_tsc = self.run_tsc.saturating_add(now.wrapping_sub(resumed));
        if pce && fast {
            self.switch_out_hw_fast(now);
        } else if pce {
            self.switch_out_hw(now);
        } else if counting && frozen {
            self.suspend_frozen(now);
        } else if counting {
            let _ = self.vc.suspend_held(now);
        }
        exit
    }
}

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
//! # Virtual TSC
//!
//! Each task has [`VirtualCounters`] with no hardware slots (the TSC-only model: on every
//! backend for now). The kernel resumes them (RDTSC) right before every entry to ring 3 and
//! suspends them (RDTSC) right after every return from it, whether by SYSCALL, exception or
//! interrupt, and publishes the counter page after each of the two, so the virtual TSC counts
//! only the time the task ran in ring 3 plus the kernel's own entry and exit paths between those
//! two RDTSCs and the privilege switch (a fixed number of instructions per kernel entry), never
//! the time spent serving a syscall or an interrupt. Round-robin measures that fixed part for an
//! interrupt round trip ([`calibrate_switch`]) and takes it off at every interrupt exit, so a
//! preempted task reads the same deltas as an undisturbed one.
//!
//! # RDPMC
//!
//! CR4.PCE is clear, so RDPMC in ring 3 raises #GP (hardware) or #UD (QEMU's TCG). The kernel
//! reads the two bytes at the faulting RIP through the address space; if they are `0F 33` it
//! emulates the instruction: EDX:EAX = the task's 64-bit virtual value for index ECX
//! ([`VIRTUAL_TSC_INDEX`] for the virtual TSC, as of the trap), RIP += 2. An index the task
//! has no counter for ends the task with a `fault` record (the CPU's vector) whose `detail` says
//! so.

use alloc::format;
use alloc::vec::Vec;

use baremark_hw::apic::{self, TimerMode};
use baremark_hw::cpu as hwcpu;
use baremark_hw::user::{self, AddressSpace, Exit, UserContext};

use super::abi::{
    EFAULT, EINVAL, ENOSYS, REPORT_MAX, STACK_PAGES, STACK_TOP, USER_PAGE_ADDR, VIRTUAL_TSC_INDEX,
    nr,
};
use super::elf::{self, Limits, LoadPlan};
use super::ring3::{self, Task, report_fault, sys_write};
use super::user_page::UserPage;
use super::vcounter::VirtualCounters;
use crate::console::record;
use crate::say;
use crate::traps;

/// Vector of #UD (RDPMC under TCG).
const INVALID_OPCODE: u8 = 6;
/// Vector of #GP (RDPMC on hardware with CR4.PCE clear).
const GENERAL_PROTECTION: u8 = 13;
/// The RDPMC instruction.
const RDPMC: [u8; 2] = [0x0f, 0x33];

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

/// Runs every `payloads/<name>.elf` member of `ramdisk`: one after the other in archive order,
/// or, with a `quantum`, all at once round-robin on the APIC timer. `tsc_hz` is the TSC
/// frequency the `time` syscall reports (0 when unknown).
pub fn run_payloads(
    ramdisk: &'static [u8],
    tsc_hz: Option<u64>,
    quantum: Option<Quantum>,
) -> Summary {
    let mut summary = Summary::default();
    if ramdisk.is_empty() {
        return summary;
    }
    let mut ready: Vec<Running> = Vec::new();
    // A damaged archive was already reported by the configuration reader: use what came before.
    for entry in crate::ramdisk::entries(ramdisk).map_while(Result::ok) {
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
                let t = Running::start(task, &plan, space, tsc_hz);
                if quantum.is_some() {
                    ready.push(t);
                } else {
                    summary.count(t.run_alone());
                }
            }
            Err(message) => {
                summary.rejected += 1;
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
        round_robin(ready, q, tsc_hz, &mut summary);
    }
    summary
}

impl Summary {
    fn count(&mut self, ended: Ended) {
        match ended {
            Ended::Exited => self.exited += 1,
            Ended::Faulted => self.faulted += 1,
        }
    }
}

/// The APIC timer's one-shot count for `tsc` TSC ticks (at least 1).
fn timer_count(tsc: u64, q: Quantum) -> u32 {
    let divide = u128::from(crate::timer::TIMER_DIVIDE);
    let count = u128::from(tsc) * u128::from(q.timer_hz) / u128::from(q.tsc_hz.max(1)) / divide;
    u32::try_from(count).unwrap_or(u32::MAX).max(1)
}

/// Runs the tasks round-robin: each runs until the APIC timer (armed for one quantum when it is
/// switched in) interrupts it in ring 3, it yields, or it ends. The kernel keeps interrupts off
/// meanwhile, so the timer is only ever taken in ring 3 (a quantum that runs out while the
/// kernel serves a syscall preempts the task as soon as it re-enters ring 3).
fn round_robin(mut ready: Vec<Running>, q: Quantum, tsc_hz: Option<u64>, summary: &mut Summary) {
    let interrupts_were_on = hwcpu::interrupts_enabled();
    hwcpu::disable_interrupts();
    let overhead = calibrate_switch(tsc_hz);
    let asked = u64::from(q.us) * q.tsc_hz / 1_000_000;
    // A quantum must leave the task time to run after the kernel's own switch cost (else it
    // would be preempted before its first instruction, forever): at least 1.5 times that.
    let floor = overhead.map_or(0, |(lo, _)| lo.saturating_add(lo / 2));
    let quantum_tsc = asked.max(floor);
    let count = timer_count(quantum_tsc, q);
    let compensation = overhead.map_or(0, |(lo, _)| lo);
    record("schedule", |r| {
        r.str("policy", "round-robin")
            .u64("tasks", ready.len() as u64)
            .u64("quantum_us", u64::from(q.us))
            .u64("quantum_tsc", quantum_tsc)
            .u64("timer_count", u64::from(count))
            .u64("timer_divide", u64::from(crate::timer::TIMER_DIVIDE))
            .opt_u64("switch_tsc_min", overhead.map(|(lo, _)| lo))
            .opt_u64("switch_tsc_max", overhead.map(|(_, hi)| hi))
    });
    say!(
        "sched  round-robin: {} tasks, quantum {} us ({quantum_tsc} TSC ticks, timer count {count}), switch cost {:?} TSC ticks",
        ready.len(),
        q.us,
        overhead
    );
    for t in &mut ready {
        t.preempt_compensation = compensation;
    }
    let mut next = 0usize;
    while !ready.is_empty() {
        let i = next % ready.len();
        apic::timer_arm(
            TimerMode::OneShot,
            traps::TIMER_VECTOR,
            crate::timer::TIMER_DIVIDE,
            count,
            false,
        );
        let outcome = loop {
            match ready[i].step() {
                Step::Continue => {}
                other => break other,
            }
        };
        apic::timer_stop();
        drain_pending_interrupts();
        match outcome {
            Step::Ended(ended) => {
                summary.count(ended);
                ready.remove(i);
                next = i;
            }
            _ => next = i + 1,
        }
    }
    if interrupts_were_on {
        hwcpu::enable_interrupts();
    }
}

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

/// The kernel's cost of one preemption, in TSC ticks, as the virtual TSC would see it: entering
/// ring 3 with the timer interrupt already pending and coming back. Three samples after a
/// warm-up round (min, max); `None` if it cannot be measured. Interrupts must be off.
fn calibrate_switch(tsc_hz: Option<u64>) -> Option<(u64, u64)> {
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
    let mut samples = [0u64; 4];
    for sample in &mut samples {
        apic::timer_arm(
            TimerMode::OneShot,
            traps::TIMER_VECTOR,
            crate::timer::TIMER_DIVIDE,
            1,
            false,
        );
        let deadline = hwcpu::rdtsc().wrapping_add(1_000_000_000);
        while apic::timer_current() != 0 {
            if hwcpu::rdtsc() > deadline {
                apic::timer_stop();
                return None;
            }
            core::hint::spin_loop();
        }
        let before = t.vc.values().tsc;
        match t.enter() {
            Exit::Trap { vector, .. } if vector == traps::TIMER_VECTOR => {
                ring3::forward_interrupt(&t.ctx, vector);
            }
            _ => {
                apic::timer_stop();
                drain_pending_interrupts();
                return None;
            }
        }
        *sample = t.vc.values().tsc - before;
    }
    apic::timer_stop();
    drain_pending_interrupts();
    // The first round runs cold paths (first use of the SYSCALL setup, cache and TLB misses).
    let lo = samples[1..].iter().copied().min()?;
    let hi = samples[1..].iter().copied().max()?;
    Some((lo, hi))
}

/// Plans and maps a payload: its segments, its stack, its counter page. `Err` says why not.
fn load(task: Task, bytes: &[u8]) -> Result<(LoadPlan, AddressSpace), alloc::string::String> {
    let plan = elf::plan(bytes, &Limits::default()).map_err(|e| format!("{e}"))?;
    let mut space =
        AddressSpace::new().map_err(|e| format!("no memory for an address space ({e:?})"))?;
    for (i, seg) in plan.segments.iter().enumerate() {
        let mut page = seg.page_start;
        while page < seg.page_end {
            space
                .map(page, seg.writable, seg.executable)
                .map_err(|e| format!("mapping segment {i} at {page:#x}: {e:?}"))?;
            page += user::PAGE_SIZE;
        }
        let file = bytes
            .get(seg.file_range.clone())
            .ok_or_else(|| format!("segment {i}: file range outside the payload"))?;
        space
            .write(seg.vaddr, file)
            .map_err(|e| format!("copying segment {i}: {e:?}"))?;
        // The frames are fresh and zeroed; zero the bss explicitly all the same (the loader's
        // contract, whatever the frame allocator does).
        let bss = seg.mem_size - file.len() as u64;
        space
            .zero(seg.vaddr + file.len() as u64, bss)
            .map_err(|e| format!("zeroing the bss of segment {i}: {e:?}"))?;
    }
    space
        .map_stack(STACK_TOP, STACK_PAGES)
        .map_err(|e| format!("mapping the stack: {e:?}"))?;
    space
        .map(USER_PAGE_ADDR, false, false)
        .map_err(|e| format!("mapping the counter page: {e:?}"))?;
    say!(
        "task   {}: entry {:#x}, {} segments, {} KiB",
        task.name,
        plan.entry,
        plan.segments.len(),
        plan.mapped_bytes() >> 10
    );
    Ok((plan, space))
}

/// How a task ended.
enum Ended {
    Exited,
    Faulted,
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
    preempt_compensation: u64,
    /// Entries into ring 3 for this task, by IRETQ and by SYSRETQ.
    entries: user::EntryCounts,
}

/// What serving a syscall led to.
enum Served {
    Done,
    Yield,
    Exit(i64),
}

/// What one run of a task in ring 3 led to.
enum Step {
    /// Served (a syscall, an interrupt, an emulated instruction): run it again.
    Continue,
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
            preempt_compensation: 0,
            entries: user::EntryCounts::default(),
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

    /// Runs the task until it ends.
    fn run_alone(mut self) -> Ended {
        loop {
            if let Step::Ended(ended) = self.step() {
                return ended;
            }
        }
    }

    /// Runs the task in ring 3 once and serves what brought it back.
    fn step(&mut self) -> Step {
        let task = self.task;
        match self.enter() {
            Exit::Syscall => match self.syscall() {
                Served::Exit(code) => {
                    self.report_exit(code);
                    Step::Ended(Ended::Exited)
                }
                Served::Yield => Step::Yielded,
                Served::Done => Step::Continue,
            },
            Exit::Trap { vector, .. } if ring3::is_interrupt(vector) => {
                self.interrupts += 1;
                ring3::forward_interrupt(&self.ctx, vector);
                if vector == traps::TIMER_VECTOR {
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
                    match self.try_rdpmc() {
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

    fn report_exit(&self, code: i64) {
        let task = self.task;
        let entries = self.entries;
        let vtsc = self.vc.values().tsc;
        record("task_exit", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .i64("code", code)
                .u64("virtual_tsc", vtsc)
                .u64("syscalls", self.syscalls)
                .u64("interrupts", self.interrupts)
                .u64("rdpmc_emulated", self.rdpmc_emulated)
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
    fn publish(&mut self) {
        self.page.publish(&self.vc, |_| None);
        let _ = self.space.write(USER_PAGE_ADDR, &self.page.to_bytes());
    }

    /// Runs the task in ring 3 once, with its virtual TSC running only meanwhile. After an
    /// interrupt the preemption compensation is taken off (never below the resume's reading).
    fn enter(&mut self) -> Exit {
        let _ = self.vc.resume(&[], hwcpu::rdtsc());
        self.publish();
        let before = user::entry_counts();
        let exit = user::run(&mut self.ctx);
        let mut now = hwcpu::rdtsc();
        let after = user::entry_counts();
        self.entries.iretq += after.iretq - before.iretq;
        self.entries.sysretq += after.sysretq - before.sysretq;
        if let Exit::Trap { vector, .. } = exit
            && ring3::is_interrupt(vector)
        {
            let start = self.vc.tsc().start;
            now = start.wrapping_add(
                now.wrapping_sub(start)
                    .saturating_sub(self.preempt_compensation),
            );
        }
        let _ = self.vc.suspend(&[], now);
        self.publish();
        exit
    }

    /// Writes a syscall's result into the task: `EFAULT` unless `[ptr, ptr + len)` is memory
    /// the task itself may write.
    fn copy_out(&mut self, ptr: u64, bytes: &[u8]) -> i64 {
        if self.space.check_writable(ptr, bytes.len() as u64).is_err()
            || self.space.write(ptr, bytes).is_err()
        {
            return EFAULT;
        }
        0
    }

    /// Serves the syscall in the context.
    fn syscall(&mut self) -> Served {
        self.syscalls += 1;
        let (a, b) = (self.ctx.rdi, self.ctx.rsi);
        let mut served = Served::Done;
        let result: i64 = match self.ctx.rax {
            nr::EXIT => return Served::Exit(a as i64),
            nr::WRITE => sys_write(self.task, &self.space, a, b),
            nr::REPORT => self.report(a, b),
            nr::TIME => {
                let buf = super::abi::time_buffer(hwcpu::rdtsc(), self.tsc_hz);
                self.copy_out(a, &buf)
            }
            nr::COUNTERS_READ => match super::abi::counters_read_buffer(&self.vc.values(), b) {
                Ok(buf) => match self.copy_out(a, &buf) {
                    0 => self.vc.len() as i64,
                    e => e,
                },
                Err(e) => e,
            },
            nr::COUNTERS_CONFIGURE => self.configure(a, b),
            nr::COUNTERS_START | nr::COUNTERS_STOP => 0,
            nr::COUNTERS_RESET => match self.vc.reset() {
                Ok(()) => self.vc.generation() as i64,
                Err(_) => EINVAL,
            },
            nr::YIELD => {
                served = Served::Yield;
                0
            }
            nr::USER_PAGE => USER_PAGE_ADDR as i64,
            _ => ENOSYS,
        };
        self.ctx.rax = result as u64;
        served
    }

    /// `counters_configure(ptr, count)`: only the empty configuration exists on the TSC-only
    /// model (it starts a new generation, the virtual TSC from 0); any event is `EINVAL`.
    fn configure(&mut self, ptr: u64, count: u64) -> i64 {
        if count == 0 {
            return match self.vc.configure(&[]) {
                Ok(()) => self.vc.generation() as i64,
                Err(_) => EINVAL,
            };
        }
        let in_memory = count
            .checked_mul(8)
            .is_some_and(|len| self.space.check(ptr, len).is_ok());
        if in_memory { EINVAL } else { EFAULT }
    }

    /// `report(ptr, len)`: a `report` record, with `values` when the text is `key=value` lines,
    /// else the raw `text`.
    fn report(&mut self, ptr: u64, len: u64) -> i64 {
        let task = self.task;
        let result = ring3::with_user_text(&self.space, ptr, len, REPORT_MAX, |text| {
            match super::abi::parse_report(text) {
                Some(pairs) => {
                    record("report", |r| {
                        r.str("task", task.name)
                            .u64("task_index", task.index)
                            .object("values", |mut r| {
                                for (k, v) in &pairs {
                                    r = r.str(k, v);
                                }
                                r
                            })
                    });
                    for (k, v) in &pairs {
                        say!("report {}: {k} = {v}", task.name);
                    }
                }
                None => {
                    record("report", |r| {
                        r.str("task", task.name)
                            .u64("task_index", task.index)
                            .str("text", text)
                    });
                    say!("report {}: {}", task.name, text.trim_end());
                }
            }
        });
        match result {
            Ok(()) => 0,
            Err(e) => e,
        }
    }

    /// A trap that may be RDPMC: emulates it (`Ok`), or says why the task must end (`Err`
    /// with a detail; `None` when it is not RDPMC at all).
    fn try_rdpmc(&mut self) -> Result<(), Option<alloc::string::String>> {
        let mut insn = [0u8; 2];
        if self.space.read(self.ctx.rip, &mut insn).is_err() || insn != RDPMC {
            return Err(None);
        }
        let index = self.ctx.rcx as u32;
        let value = if index == VIRTUAL_TSC_INDEX {
            self.vc.values().tsc
        } else {
            return Err(Some(format!(
                "rdpmc index {index:#x}: the task has no counter with this index (its virtual \
                 TSC is index {VIRTUAL_TSC_INDEX:#x}; no hardware counters are configured)"
            )));
        };
        self.ctx.rax = value & 0xffff_ffff;
        self.ctx.rdx = value >> 32;
        self.ctx.rip += 2;
        self.rdpmc_emulated += 1;
        Ok(())
    }
}

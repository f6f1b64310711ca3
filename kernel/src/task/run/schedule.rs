//! Scheduling the tasks: a payload's family one at a time, or all payloads round-robin on the
//! APIC timer (with the measured cost of a preemption), and the watchdog's budget.

use alloc::vec::Vec;

use baremark_hw::apic::{self, TimerMode};
use baremark_hw::cpu as hwcpu;
use baremark_hw::user::{AddressSpace, Exit};

use super::super::abi::{ENOENT, STACK_TOP, USER_PAGE_ADDR};
use super::super::hwslots;
use super::super::ring3::{self, Task};
use super::super::vcounter::MAX_SLOTS;
use super::records::Summary;
use super::step::Step;
use super::{Ended, Running, hw, policy};
use crate::output::console::record;
use crate::platform::cpus;
use crate::say;

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

/// Runs a payload and the tasks it spawns, one at a time: a child runs when its parent waits
/// for it (the parent is not scheduled until the child ends), and a child never waited for runs
/// when its parent ends (in spawn order). With a `budget`, the watchdog guards each task.
pub(super) fn run_family(root: Running, budget: Option<Budget>, summary: &mut Summary) {
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

/// Runs the tasks round-robin: each runs until the APIC timer (armed for one quantum when it is
/// switched in) interrupts it in ring 3, it yields, or it ends. The kernel keeps interrupts off
/// meanwhile, so the timer is only ever taken in ring 3 (a quantum that runs out while the
/// kernel serves a syscall preempts the task as soon as it re-enters ring 3).
pub(super) fn round_robin(
    mut ready: Vec<Running>,
    q: Quantum,
    tsc_hz: Option<u64>,
    summary: &mut Summary,
) {
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

impl Running {
    /// Runs the task until it ends or the watchdog kills it: the APIC timer (one shot) is armed
    /// for the rest of its budget while it runs (or the end of its multiplexed group's turn, if
    /// earlier), and each time it fires the budget is checked (the timer and TSC frequencies
    /// are estimates: an early interrupt re-arms for the rest). Without a budget and without
    /// multiplexing no timer is armed.
    /// The caller keeps interrupts off in the kernel, so the timer is only taken in ring 3.
    /// Returns `None` when the task waits for a child. Interrupts must be off.
    pub(super) fn run_watched(&mut self, budget: Option<Budget>) -> Option<Ended> {
        loop {
            if cpus::stop_requested() {
                self.report_stopped();
                return Some(Ended::Stopped);
            }
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
                        _ if self.mux.is_some() || cpus::stop_requested() => break,
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
                    Step::Continue
                        if self.mux.is_some() == armed_for_mux && !cpus::stop_requested() => {}
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
    pub(super) fn remaining_budget(&self) -> Option<u64> {
        self.budget.map(|b| {
            let tsc = b.tsc();
            tsc.saturating_sub(self.run_tsc)
                .min(tsc.saturating_sub(self.service_tsc))
        })
    }

    /// A background task stops (run.cfg `background`: the other payloads are done): its
    /// `task_stopped` record.
    fn report_stopped(&self) {
        let task = self.task;
        let vtsc = self.vc.values().tsc;
        let reason = if self.thread_slot != 0 {
            "thread: its task ended without joining it, or its join ran out of the task's budget"
        } else {
            "background payload: the other payloads are done"
        };
        record("task_stopped", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .u64("cpu", cpus::current() as u64)
                .str("reason", reason)
                .u64("virtual_tsc", vtsc)
                .u64("syscalls", self.syscalls)
                .u64("interrupts", self.interrupts)
        });
        say!(
            "task   {}: stopped on cpu {} ({reason}) | virtual tsc {vtsc}",
            task.name,
            cpus::current()
        );
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
                .u64("cpu", crate::platform::cpus::current() as u64)
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
}

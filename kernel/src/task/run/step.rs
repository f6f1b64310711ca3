//! One run of a task in ring 3 (`Running::enter`: its counters and virtual TSC around it) and
//! what brought it back (`Running::step`): a syscall, an interrupt, a fault or RDPMC to emulate.

use baremark_hw::cpu as hwcpu;
use baremark_hw::user::{self, Exit};

use super::super::abi::{ENOSYS, nr};
use super::super::ring3::{self, report_fault};
use super::super::user_page;
use super::syscalls::Served;
use super::{Ended, Running};

/// Vector of #UD (RDPMC under TCG).
const INVALID_OPCODE: u8 = 6;

/// Vector of #GP (RDPMC on hardware with CR4.PCE clear).
const GENERAL_PROTECTION: u8 = 13;

/// What one run of a task in ring 3 led to.
pub(super) enum Step {
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
    /// Runs the task in ring 3 once and serves what brought it back.
    pub(super) fn step(&mut self) -> Step {
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

    /// The fix-ups of a task resumed inside a reader's window, from the page as just published:
    /// the slot reader gets its registers refreshed, the harness region goes to its abort path
    /// (`user_page` module docs, "The retry-free slot read", "The harness region's window").
    // Inlined into both callers as it was written there: the paths keep their exact counts.
    #[inline(always)]
    pub(super) fn fix_up_readers(&mut self) {
        if let Some((base, start, ecx)) = user_page::fix_up_slot_reader(
            self.ctx.rip,
            self.slot_window,
            self.ctx.rdi,
            self.page_addr,
            &self.page,
        ) {
            (self.ctx.rsi, self.ctx.r8, self.ctx.rcx) = (base, start, ecx);
        }
        if let Some(abort) =
            user_page::fix_up_region(self.ctx.rip, self.region_window, self.region_abort)
        {
            self.ctx.rip = abort;
        }
    }

    /// Whether the SYSCALL entry may answer unknown numbers itself during the next run
    /// (`hw::user`, "Light syscalls"): only when nothing the kernel keeps for the task would
    /// change on the general path. Its counters are stopped (nothing moves), or all in hardware
    /// and live in ring 3 (`:u` events do not count the light path; `:k` events count it, as
    /// they count the kernel's general path), or it has none and only its virtual TSC runs,
    /// which the entry moves on itself. Frozen slots (lost counts) take the general path.
    fn light_syscalls(&self, counting: bool, pce: bool, frozen: bool) -> bool {
        !counting || (pce && !frozen) || (self.hw.is_empty() && self.vc.is_empty())
    }

    /// Counts the kernel's service of the task's last return to the kernel (a syscall, an
    /// emulated instruction), from the entry assembly's TSC reading to now.
    fn add_service(&mut self) {
        let served = hwcpu::rdtsc().wrapping_sub(self.ctx.left_tsc());
        // Time the task waited for its own request (a join) is not the kernel serving it.
        let served = served.saturating_sub(core::mem::take(&mut self.waited_tsc));
        self.service_tsc = self.service_tsc.saturating_add(served);
    }

    /// Runs the task in ring 3 once, with its virtual TSC running only meanwhile. After an
    /// interrupt the preemption compensation is taken off (never below the resume's reading).
    ///
    /// The counter page is written whole only when what it publishes for the slots changed
    /// (a configuration, a fold, counting started or stopped:
    /// [`PageState`](super::page::PageState)); at every other entry the exit assembly writes the
    /// few fields a run changes (`seq`, the virtual TSC, `interrupts`), and the switch-out writes
    /// nothing (`hwswitch` folds nothing).
    pub(super) fn enter(&mut self) -> Exit {
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
        // Kernel time: the readers' values do not depend on the entry's TSC.
        self.fix_up_readers();
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
        let light = self.light_syscalls(counting, pce, frozen);
        self.ctx
            .set_light_syscalls(light.then_some(user::LightSyscalls {
                from: nr::COUNT,
                result: ENOSYS as u64,
            }));
        let (exit, now) = loop {
            let exit = user::run(&mut self.ctx, &self.space);
            // Light syscalls answered during the run: the task's syscalls and the kernel's
            // service, not its time.
            let light = self.ctx.take_light();
            self.syscalls += light.calls;
            self.service_tsc = self.service_tsc.saturating_add(light.ticks);
            // The run started at the exit assembly's reading (with the virtual TSC stopped too,
            // so that the watchdog and the round-robin progress count ring 3 alone); the light
            // syscalls' ticks count as if the run had started that much later.
            let resumed = self.ctx.entered_tsc().wrapping_add(light.ticks);
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
            // A sampled task's overflow, served with its counters running (`sample`): straight
            // back to ring 3.
            if pce && fast && vtsc_running && self.serve_overflow_in_place(&exit, now) {
                self.pce_entries += 1;
                continue;
            }
            break (exit, now);
        };
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

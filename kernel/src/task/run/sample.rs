//! Sampling in place: the overflow interrupt of a sampled task (run.cfg `sample`,
//! docs/syscall-abi.md "Sampling") served without leaving [`Running::enter`]: no switch-out, no
//! trip through the scheduler, no switch-in, no page rewrite. The sampled counters count ring 3
//! only, so they run on while the kernel records the RIP, folds the counter that wrapped and
//! rearms it for the next period (`hwswitch`, "Overflow in place"); the page gets the rebased
//! slots' `base` and `start`, and the task goes back to ring 3 at once. Anything this path does
//! not cover takes the general path, which does the same by value at the next run
//! (`notify::deliver_due`): another overflow than the task's, a PMU without an overflow status
//! register or with legacy 32-bit counter writes, kernel-mode (`:k`) slots, multiplexing, lost
//! counts.

use baremark_hw::user::Exit;

use super::super::hwslots::HwError;
use super::Running;
use super::hw::{faults_injected, forget_programming};
use crate::pmu::machine::HwMsr;

impl Running {
    /// The run ended with an overflow interrupt that can be served in place ([module
    /// docs](self)); `now` is where the task's virtual TSC stops (the compensated exit
    /// reading). Whether it was served: the task's counters then still run, its virtual
    /// counters run again, and it may re-enter ring 3 directly.
    pub(super) fn serve_overflow_in_place(&mut self, exit: &Exit, now: u64) -> bool {
        let pmi = matches!(exit, Exit::Trap { vector, .. }
            if *vector == crate::platform::interrupts::PMI_VECTOR);
        if !pmi || !self.notify.sampling || self.mux.is_some() || self.hw_lost.is_some() {
            return false;
        }
        let Some(hs) = self.hw_switch.as_deref().filter(|hs| hs.in_place) else {
            return false;
        };
        if faults_injected() || !self.vc.is_running() {
            return false;
        }
        let unmask_lvtpc = hs.unmask_lvtpc;
        let version = self.vc.slots_version();
        let rip = self.ctx.rip;
        let notify = &mut self.notify;
        let mut full = 0u64;
        let wrapped = hs
            .switch
            .overflow_in_place(&mut HwMsr, &mut self.vc, |i, value, width| {
                notify.sample_due(i, value, width, rip, &mut full)
            });
        let wrapped = match wrapped {
            // Not the task's overflow: the general path sees it.
            Ok(0) => return false,
            Ok(slots) => slots,
            Err(e) => {
                // As a failed switch-out: the counts are lost, and the general path stops the
                // virtual counters.
                forget_programming();
                self.lose_counts(HwError::Switch(e));
                return false;
            }
        };
        while full != 0 {
            let i = full.trailing_zeros() as usize;
            full &= full - 1;
            self.flush_samples(i);
        }
        self.interrupts += 1;
        crate::pmu::machine::ack_task_pmi_in_place(unmask_lvtpc);
        // The virtual TSC up to the (compensated) exit; the exit assembly's reading restarts it.
        let _ = self.vc.fold_tsc(now);
        self.publish_rebased_slots(wrapped, version);
        // A reader interrupted inside its window, as after any interrupt.
        self.fix_up_readers();
        self.page.seq = self.page.seq.wrapping_add(2);
        // The boundary as the last run had it (the page and the reader's window are the same):
        // the virtual TSC to resume from, `seq` and `interrupts`.
        let base = self.vc.tsc().sum;
        self.ctx
            .update_virtual_tsc(base, self.page.seq, self.interrupts);
        true
    }
}

//! The task's counter page as the kernel writes it: whole when what it publishes for the slots
//! changed ([`PageState`]), else only the changing parts, and the virtual TSC's boundary.

use baremark_hw::user;

use super::super::user_page;
use super::Running;

/// What the counter page's slots depend on: when it changes, the page is written whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PageState {
    generation: u64,
    /// `VirtualCounters::slots_version`.
    slots: u64,
    /// The hardware counters run (their slots are readable with RDPMC).
    live: bool,
}

impl Running {
    /// Copies the counter page into the task (the page is read-only for the task, so the
    /// kernel writes it through its own mapping).
    ///
    /// The whole page after a configuration (the number of slots may have changed); else only
    /// the parts that can change (`UserPage::changing_words`), through the pinned page.
    fn publish(&mut self) {
        self.update_page();
        let generation = self.page.generation;
        match self.page_pin {
            Some(pin) if self.page_whole == Some(generation) => {
                let space = &mut self.space;
                self.page.changing_words(|at, words| {
                    let _ = space.write_pinned_words(&pin, at, words);
                });
            }
            _ => {
                let _ = self.space.write(self.page_addr, &self.page.to_bytes());
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

    /// After an overflow served in place (`sample`): the `base` and `start` of the slots in
    /// `slots` (bit `i`: slot `i`) as the running virtual counters now hold them, in the
    /// kernel's copy and through the pinned page (16 bytes per slot, not the whole page); the
    /// page stays current for the new slots version if it was for `version`, the one before.
    pub(super) fn publish_rebased_slots(&mut self, mut slots: u64, version: u64) {
        while slots != 0 {
            let i = slots.trailing_zeros() as usize;
            slots &= slots - 1;
            let (Some(s), Some(slot)) = (self.vc.slots().get(i), self.page.slots.get_mut(i)) else {
                continue;
            };
            (slot.base, slot.start) = (s.sum, s.start);
            if let Some(pin) = self.page_pin.as_ref() {
                let at = user_page::SLOTS_AT + 32 * i + 8;
                let _ = self.space.write_pinned_words(pin, at, &[s.sum, s.start]);
            }
        }
        if let Some(state) = self.page_state.as_mut()
            && state.slots == version
        {
            state.slots = self.vc.slots_version();
        }
    }

    /// Writes the whole page if what it publishes for the slots changed since its last whole
    /// write ([`PageState`]), or the virtual TSC does not run (the exit assembly then publishes
    /// nothing). `live`: the task's hardware counters will run.
    #[inline]
    pub(super) fn publish_if_changed(&mut self, counting: bool, live: bool) {
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
    pub(super) fn set_boundary(&mut self, vtsc_running: bool) {
        let publish = user::VtscPublish {
            page: self.page_pin.as_ref(),
            base: self.vc.tsc().sum,
            window: (self.read_window.0 != u64::MAX).then_some(self.read_window),
            seq: self.page.seq,
            interrupts: self.interrupts,
        };
        self.ctx.set_virtual_tsc(vtsc_running.then_some(publish));
    }
}

//! Overflow notification and sampling of a task's counter slots (docs/syscall-abi.md,
//! "Overflow notification" and "Sampling"): the IRIX `r10k_evcntrs` threshold with a signal,
//! and `perf record`'s RIP per period.
//!
//! A slot with a threshold ([`Threshold`]) has INT set in its event select and its counter
//! armed to overflow on the event that reaches the threshold (`rearm_thresholds`, before the
//! switch-in). The PMI ends the task's run in ring 3 like any interrupt; the switch-out folds
//! the counter exactly as always (the 64-bit value never depends on the arming) and
//! `pmu::machine::ack_task_pmi` does the local APIC's part. Before the task's next run,
//! `deliver_due` looks at every slot's value: a slot due is either *sampled* (the interrupted
//! RIP goes into its [`SampleBuffer`], flushed as `profile_samples` records) or *notified*: the task's
//! registers are saved in the kernel, its counters and virtual TSC stop, and it resumes at its
//! handler with `(slot, count, rip, periods, arg)` in RDI, RSI, RDX, RCX, R8, on its own stack
//! 128 bytes (the red zone) below the interrupted RSP, with fresh vector registers. The
//! handler's `notify_return` puts every register back (RAX, RCX and R11 included: the return
//! is an IRETQ), and the task's vector registers, and counting goes on as before. The check is
//! by value, not by PMI, so a PMI late by some events (skid) or a threshold crossed just
//! before a syscall is handled the same way; the periods passed meanwhile are in `periods`.
//!
//! Nothing of the handler is counted (its counters are stopped: the interrupted code's counts
//! are exactly what they would be without notifications). A handler that faults ends its task
//! like any fault, one that never returns meets the watchdog, and no notification is delivered
//! while one runs (a threshold reached meanwhile is delivered after `notify_return`).

use alloc::format;
use alloc::vec::Vec;

use baremark_hw::fpu::VectorState;
use baremark_hw::user::UserContext;

use super::super::abi::{EBUSY, ECOUNTERS, EFAULT, EINVAL, ENODEV, EPERM};
use super::super::threshold::{Action, SAMPLES_PER_RECORD, SampleBuffer, Threshold};
use super::Running;
use super::policy::{POLICY, sampled_events};
use crate::output::console::record;
use crate::say;

/// The registers of the interrupted code while its handler runs.
struct Saved {
    regs: [u64; 18],
    counting: bool,
    vector: VectorState,
}

fn save_regs(c: &UserContext) -> [u64; 18] {
    [
        c.rax, c.rbx, c.rcx, c.rdx, c.rsi, c.rdi, c.rbp, c.r8, c.r9, c.r10, c.r11, c.r12, c.r13,
        c.r14, c.r15, c.rip, c.rsp, c.rflags,
    ]
}

fn restore_regs(c: &mut UserContext, r: &[u64; 18]) {
    [
        c.rax, c.rbx, c.rcx, c.rdx, c.rsi, c.rdi, c.rbp, c.r8, c.r9, c.r10, c.r11, c.r12, c.r13,
        c.r14, c.r15, c.rip, c.rsp, c.rflags,
    ] = *r;
}

/// A task's thresholds, handler and samples.
#[derive(Default)]
pub(super) struct Notify {
    /// The handler's entry and its `arg` (`counters_notify`).
    handler: Option<(u64, u64)>,
    /// Per slot of the task's configuration.
    thresholds: Vec<Option<Threshold>>,
    /// The counters must be armed again before the next run (a threshold was set, reached or
    /// restarted).
    rearm: bool,
    /// The interrupted code while its handler runs (not boxed: no allocation per call).
    saved: Option<Saved>,
    /// The handler's vector registers' area, kept between calls (reset, not reallocated, at
    /// each: docs/benchmarks.md, the notification row).
    handler_vector: Option<VectorState>,
    /// Notifications delivered.
    pub(super) delivered: u64,
    /// Periods that passed without a notification of their own (several at one look).
    pub(super) late: u64,
    /// The slots are run.cfg `sample`'s (the task cannot configure its own counters).
    pub(super) sampling: bool,
    samples: Vec<SampleBuffer>,
    /// The `sample` entries (the records name them).
    sample_words: Vec<u64>,
}

impl Notify {
    /// Slot `i` at `value` (a `width`-bit counter), for an overflow served in place
    /// (`run::sample`): if it samples and its period's end is reached, the RIP is recorded
    /// (bit `i` of `full` set when its buffer must go out) and the counter's next arming value
    /// returned, as `deliver_due` and `rearm_thresholds` would do at the next run.
    pub(super) fn sample_due(
        &mut self,
        i: usize,
        value: u64,
        width: u8,
        rip: u64,
        full: &mut u64,
    ) -> Option<u64> {
        let t = self.thresholds.get_mut(i)?.as_mut()?;
        if t.action != Action::Sample || !t.due(value) {
            return None;
        }
        let periods = t.cross(value);
        if let Some(b) = self.samples.get_mut(i) {
            b.in_place += 1;
            if b.push(rip, periods) && i < 64 {
                *full |= 1 << i;
            }
        }
        Some(t.arm_raw(value, width))
    }
}

impl Running {
    /// Whether the run configuration lets this task program counters (`counters`).
    pub(super) fn counters_permitted(&self) -> bool {
        POLICY
            .read()
            .as_ref()
            .is_none_or(|p| p.counters.allows(self.task.name))
    }

    /// Its overflow handler runs.
    pub(super) fn in_notify_handler(&self) -> bool {
        self.notify.saved.is_some()
    }

    /// Why the task may not configure its own counters now (`EPERM`, `EBUSY`), if so.
    pub(super) fn counters_refusal(&self) -> Option<i64> {
        if !self.counters_permitted() {
            Some(EPERM)
        } else if self.notify.sampling
            || self.notify.saved.is_some()
            || crate::task::system_mode::active()
        {
            Some(EBUSY)
        } else {
            None
        }
    }

    /// The task's counters changed configuration (`counters_configure`): no thresholds.
    pub(super) fn thresholds_cleared(&mut self) {
        self.notify.thresholds.clear();
        self.notify.rearm = false;
    }

    /// The counts restarted from 0 (`counters_reset`): every threshold is one period away.
    pub(super) fn thresholds_restarted(&mut self) {
        for t in self.notify.thresholds.iter_mut().flatten() {
            t.restart();
        }
        self.notify.rearm = self.notify.thresholds.iter().any(Option::is_some);
    }

    /// A spawned child gets its parent's events without its thresholds (INT off again).
    pub(super) fn drop_inherited_thresholds(&mut self) {
        let mut changed = false;
        for s in &mut self.hw {
            changed |= core::mem::take(&mut s.modifiers.int);
        }
        if changed {
            super::hw::forget_programming();
            self.make_switch();
        }
    }

    /// run.cfg `sample`: the task counts the sampled events, each with a threshold of its
    /// period that records the RIP. If they cannot be configured, an `error` record says why
    /// and the task runs unsampled.
    pub(super) fn start_sampling(&mut self) {
        let specs = sampled_events();
        if specs.is_empty() {
            return;
        }
        let words: Vec<u64> = specs.iter().map(|s| s.word).collect();
        let code = self.configure_events(&words, &[]);
        let armed = code >= 0 && self.hw_switch.is_some() && self.hw_lost.is_none();
        if !armed {
            let why = if code < 0 {
                format!("its events could not be configured ({})", errno_name(code))
            } else {
                alloc::string::String::from("the PMU gives no switch plan for them")
            };
            record("error", |r| {
                r.str("source", "sampling")
                    .str("task", self.task.name)
                    .u64("task_index", self.task.index)
                    .str(
                        "message",
                        &format!("run.cfg sample: the task runs unsampled: {why}"),
                    )
            });
            say!("sample {}: not sampled: {why}", self.task.name);
            if code >= 0 {
                let _ = self.configure(0, 0, 0);
            }
            return;
        }
        for (i, s) in specs.iter().enumerate() {
            let _ = self.set_threshold(i, s.period, Action::Sample);
        }
        self.notify.sampling = true;
        self.notify.sample_words = words;
        self.notify.samples = alloc::vec![SampleBuffer::default(); specs.len()];
    }

    /// Slot `slot` gets a threshold of `period` from its value now (INT set in its event select,
    /// the counter armed before the next run); period 0 removes it.
    fn set_threshold(&mut self, slot: usize, period: u64, action: Action) -> i64 {
        let value = self.vc.values().get(slot).unwrap_or(0);
        let threshold = if period == 0 {
            None
        } else {
            match Threshold::new(period, value, action) {
                Ok(t) => Some(t),
                Err(_) => return EINVAL,
            }
        };
        if self.notify.thresholds.len() < self.hw.len() {
            self.notify.thresholds.resize(self.hw.len(), None);
        }
        self.notify.thresholds[slot] = threshold;
        let int = threshold.is_some();
        if self.hw[slot].modifiers.int != int {
            self.hw[slot].modifiers.int = int;
            super::hw::forget_programming();
            self.make_switch();
        }
        self.notify.rearm = true;
        0
    }

    /// `counters_notify(entry, arg)`: the handler (entry 0: none; thresholds that notify are
    /// removed with it).
    pub(super) fn counters_notify(&mut self, entry: u64, arg: u64) -> i64 {
        if self.notify.saved.is_some() {
            return EBUSY;
        }
        if entry == 0 {
            self.notify.handler = None;
            for slot in 0..self.notify.thresholds.len() {
                if matches!(self.notify.thresholds[slot], Some(t) if t.action == Action::Notify) {
                    let _ = self.set_threshold(slot, 0, Action::Notify);
                }
            }
            return 0;
        }
        if self.space.check(entry, 1).is_err() {
            return EFAULT;
        }
        self.notify.handler = Some((entry, arg));
        0
    }

    /// `counters_threshold(slot, period)` (docs/syscall-abi.md).
    pub(super) fn counters_threshold(&mut self, slot: u64, period: u64) -> i64 {
        if let Some(code) = self.counters_refusal() {
            return code;
        }
        if self.bench.is_some() {
            return EBUSY;
        }
        if !crate::pmu::machine::with_pmu(|pmu, _| pmu.backend.caps().kind)
            .is_some_and(|k| k != events::pmu::PmuKind::TscOnly)
        {
            return ENODEV;
        }
        if self.hw_lost.is_some() {
            return ECOUNTERS;
        }
        // A group's counter is not the event's count: no thresholds while multiplexed.
        if self.mux.is_some() {
            return EINVAL;
        }
        let slot = slot as usize;
        if slot >= self.hw.len() || self.hw_switch.is_none() {
            return EINVAL;
        }
        if period != 0 && self.notify.handler.is_none() {
            return EINVAL;
        }
        self.set_threshold(slot, period, Action::Notify)
    }

    /// `notify_return()`: back to the interrupted code, as it was. `false` outside a handler
    /// (the syscall then fails with `EINVAL`).
    pub(super) fn notify_return(&mut self) -> bool {
        let Some(saved) = self.notify.saved.take() else {
            return false;
        };
        restore_regs(&mut self.ctx, &saved.regs);
        self.counting = saved.counting;
        // The handler's vector registers go (no one's: nothing saves them at the next
        // switch); the task's come back at the next run.
        let mut handler = core::mem::replace(&mut self.vector, saved.vector);
        handler.reset();
        self.notify.handler_vector = Some(handler);
        true
    }

    /// The counters of the slots with thresholds are set to overflow at their next
    /// threshold (before the switch-in; the task is switched out).
    pub(super) fn rearm_thresholds(&mut self) {
        if !self.notify.rearm || !self.uses_hardware_counters() {
            return;
        }
        self.notify.rearm = false;
        let values = self.vc.values();
        for (i, t) in self.notify.thresholds.iter().enumerate() {
            let (Some(t), Some(value)) = (t, values.get(i)) else {
                continue;
            };
            let width = self.vc.slots()[i].width;
            if self.vc.rebase(i, t.arm_raw(value, width)).is_err() {
                continue;
            }
        }
        // The counters must be written (`hwswitch::prepare_in` restores when not loaded).
        super::hw::forget_programming();
    }

    /// Before the task's next run: every slot whose threshold was reached is sampled or
    /// notified (one notification at a time; none while a handler runs).
    pub(super) fn deliver_due(&mut self) {
        if self.notify.thresholds.is_empty() || self.notify.saved.is_some() {
            return;
        }
        let values = self.vc.values();
        let rip = self.ctx.rip;
        for i in 0..self.notify.thresholds.len() {
            let Some(t) = self.notify.thresholds[i].as_mut() else {
                continue;
            };
            let Some(value) = values.get(i) else {
                continue;
            };
            if !t.due(value) {
                continue;
            }
            let action = t.action;
            if action == Action::Notify && self.notify.handler.is_none() {
                continue;
            }
            let periods = t.cross(value);
            self.notify.rearm = true;
            match action {
                Action::Sample => {
                    let full = self
                        .notify
                        .samples
                        .get_mut(i)
                        .is_some_and(|b| b.push(rip, periods));
                    if full {
                        self.flush_samples(i);
                    }
                }
                Action::Notify => {
                    self.enter_handler(i, value, periods);
                    return;
                }
            }
        }
    }

    /// The task resumes at its handler (module docs).
    fn enter_handler(&mut self, slot: usize, value: u64, periods: u64) {
        let Some((entry, arg)) = self.notify.handler else {
            return;
        };
        let regs = save_regs(&self.ctx);
        let mut fresh = self.notify.handler_vector.take().unwrap_or_default();
        fresh.reset();
        let vector = core::mem::replace(&mut self.vector, fresh);
        self.notify.saved = Some(Saved {
            regs,
            counting: self.counting,
            vector,
        });
        self.counting = false;
        self.notify.delivered += 1;
        self.notify.late += periods - 1;
        let c = &mut self.ctx;
        let interrupted = c.rip;
        c.rsp = c.rsp.wrapping_sub(128) & !15;
        c.rip = entry;
        c.rdi = slot as u64;
        c.rsi = value;
        c.rdx = interrupted;
        c.rcx = periods;
        c.r8 = arg;
        c.rflags = 0x202;
    }

    /// The fields every profile record of sampled slot `i` starts with.
    fn profile_fields<'r>(
        &self,
        r: crate::output::record::Record<'r>,
        i: usize,
    ) -> crate::output::record::Record<'r> {
        r.str("task", self.task.name)
            .u64("task_index", self.task.index)
            .u64("slot", i as u64)
            .hex("event", self.notify.sample_words[i])
            .u64("period", self.notify.thresholds[i].map_or(0, |t| t.period))
    }

    /// Slot `i`'s buffered RIPs as `profile_samples` records of up to `SAMPLES_PER_RECORD`.
    pub(super) fn flush_samples(&mut self, i: usize) {
        let Some(b) = self.notify.samples.get_mut(i) else {
            return;
        };
        if b.rips.is_empty() {
            return;
        }
        let mut rips = core::mem::take(&mut b.rips);
        // The index of the first RIP: a reader tells a duplicated line from a repeated loop.
        let first = b.samples - rips.len() as u64;
        for (k, chunk) in rips.chunks(SAMPLES_PER_RECORD).enumerate() {
            let first = first + (k * SAMPLES_PER_RECORD) as u64;
            record("profile_samples", |r| {
                self.profile_fields(r, i)
                    .u64("first", first)
                    .u64_array("rips", chunk)
            });
        }
        // The buffer again (its capacity kept: a long profile does not allocate per sample).
        rips.clear();
        if let Some(b) = self.notify.samples.get_mut(i) {
            b.rips = rips;
        }
    }

    /// The task ended: the samples still buffered, and a `profile_summary` per sampled slot.
    pub(super) fn finish_sampling(&mut self) {
        if !self.notify.sampling {
            return;
        }
        for i in 0..self.notify.samples.len() {
            self.flush_samples(i);
            let b = &self.notify.samples[i];
            let (task, word) = (self.task, self.notify.sample_words[i]);
            let period = self.notify.thresholds[i].map_or(0, |t| t.period);
            let lost = self.hw_lost.as_deref();
            record("profile_summary", |r| {
                self.profile_fields(r, i)
                    .u64("samples", b.samples)
                    .u64("in_place", b.in_place)
                    .u64("lost", b.lost)
                    .opt_str("counters_lost", lost)
            });
            say!(
                "sample {}: event {word:#x} every {period}: {} samples, {} lost{}",
                task.name,
                b.samples,
                b.lost,
                lost.map_or(alloc::string::String::new(), |l| format!(
                    " (counts lost: {l})"
                ))
            );
        }
        self.notify.sampling = false;
    }
}

/// The name of an error code, for messages.
fn errno_name(code: i64) -> &'static str {
    match code {
        EINVAL => "EINVAL",
        ENODEV => "ENODEV",
        EPERM => "EPERM",
        EBUSY => "EBUSY",
        _ => "error",
    }
}

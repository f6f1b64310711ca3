//! Overflow thresholds of a task's counter slots (docs/syscall-abi.md, "Overflow
//! notification"), the arithmetic only: when the next notification or sample is due, which
//! raw value makes the hardware counter overflow exactly there, and the per-slot sample
//! buffer. Host-tested; the runner's use is `task::run::notify`.
//!
//! A slot with a threshold of period `P` is due whenever its 64-bit virtual value reaches
//! `next`; `next` starts `P` events after the value when the threshold is set (or after 0 when
//! the counts restart) and moves on by whole periods. The counter itself is loaded with
//! `2^width - (next - value)`, so it overflows (and raises the PMI) on the event that makes the
//! value reach `next`: the kernel's check is by value, so a late PMI (skid) or a crossing seen
//! at a syscall exit is handled the same way, and periods passed in one go are counted.

use alloc::vec::Vec;

/// The largest period: a counter written through Intel's legacy alias (no full-width writes)
/// takes only sign-extended 32-bit values, so `2^width - P` must have bit 31 set (Linux's
/// `max_period` for it).
pub const PERIOD_MAX: u64 = (1 << 31) - 1;

/// The smallest period: every period costs a PMI, a kernel round trip and (notifying) a run of
/// the handler, so a period of a few events would leave the task crawling, one period per
/// round trip (perf throttles for the same reason). 1000 keeps that cost under a few percent.
pub const PERIOD_MIN: u64 = 1000;

/// RIPs per `profile_samples` record (a record line stays far below 4096 bytes).
pub const SAMPLES_PER_RECORD: usize = 64;

/// RIPs a slot keeps in memory before they must go out as records while the task runs
/// (256 KiB): records are serial output with interrupts off, which a profiled task should not
/// wait for at every 64th sample, so they are written when the task ends unless this fills.
pub const SAMPLES_BUFFERED: usize = 32_768;

/// What the kernel does when a slot's threshold is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run the task's registered handler (`counters_threshold`).
    Notify,
    /// Record the interrupted RIP (run.cfg `sample`).
    Sample,
}

/// One slot's threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    pub period: u64,
    /// The value at which the slot is next due.
    pub next: u64,
    pub action: Action,
}

/// Why a threshold cannot be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeriodError {
    /// Below [`PERIOD_MIN`] or above [`PERIOD_MAX`].
    OutOfRange,
}

impl Threshold {
    /// A threshold of `period` events counted from `value` (the slot's value now).
    pub fn new(period: u64, value: u64, action: Action) -> Result<Threshold, PeriodError> {
        if !(PERIOD_MIN..=PERIOD_MAX).contains(&period) {
            return Err(PeriodError::OutOfRange);
        }
        Ok(Threshold {
            period,
            next: value.wrapping_add(period),
            action,
        })
    }

    /// The counts restarted from 0 (`counters_reset`): due after one period again.
    pub fn restart(&mut self) {
        self.next = self.period;
    }

    /// The periods whose end `value` has reached (0: not due), and `next` moved past `value`.
    /// More than 1 means a late look (skid, or a crossing noticed only at the next kernel
    /// entry): one notification or sample stands for them all.
    pub fn cross(&mut self, value: u64) -> u64 {
        if value < self.next {
            return 0;
        }
        let periods = (value - self.next) / self.period + 1;
        self.next = self.next.wrapping_add(periods * self.period);
        periods
    }

    /// Whether `value` has reached the threshold (without moving it).
    pub fn due(&self, value: u64) -> bool {
        value >= self.next
    }

    /// The raw value that makes a `width`-bit counter overflow on the event that brings the
    /// slot from `value` to `next`: `2^width - (next - value)`. `value` must be below `next`
    /// (after [`cross`](Self::cross)); the distance is at most one period, so it fits.
    pub fn arm_raw(&self, value: u64, width: u8) -> u64 {
        let left = self.next.saturating_sub(value).clamp(1, self.period);
        let wrap = if width >= 64 { 0 } else { 1u64 << width };
        wrap.wrapping_sub(left) & mask(width)
    }
}

fn mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The RIPs sampled on one slot since its last `samples` record, and the totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleBuffer {
    pub rips: Vec<u64>,
    /// RIPs recorded in all (in records, or still in `rips`).
    pub samples: u64,
    /// Periods that passed without a RIP of their own (several periods reached at one look:
    /// one RIP stands for the first).
    pub lost: u64,
    /// RIPs recorded by an overflow served in place (`task::run::sample`), of `samples`.
    pub in_place: u64,
}

impl SampleBuffer {
    /// One look that found `periods` periods reached at `rip`: whether the buffer is full (its
    /// records are due now, [`SAMPLES_BUFFERED`]).
    pub fn push(&mut self, rip: u64, periods: u64) -> bool {
        if periods == 0 {
            return false;
        }
        self.rips.push(rip);
        self.samples += 1;
        self.lost += periods - 1;
        self.rips.len() >= SAMPLES_BUFFERED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_bounds() {
        assert_eq!(
            Threshold::new(0, 0, Action::Notify),
            Err(PeriodError::OutOfRange)
        );
        assert_eq!(
            Threshold::new(PERIOD_MIN - 1, 0, Action::Notify),
            Err(PeriodError::OutOfRange)
        );
        assert!(Threshold::new(PERIOD_MIN, 0, Action::Notify).is_ok());
        assert_eq!(
            Threshold::new(PERIOD_MAX + 1, 0, Action::Notify),
            Err(PeriodError::OutOfRange)
        );
        let t = Threshold::new(PERIOD_MAX, 5, Action::Sample).unwrap();
        assert_eq!(t.next, PERIOD_MAX + 5);
    }

    #[test]
    fn crossings_move_by_whole_periods() {
        let mut t = Threshold::new(1000, 30, Action::Notify).unwrap();
        assert_eq!(t.next, 1030);
        assert_eq!(t.cross(1029), 0);
        assert!(!t.due(1029));
        assert!(t.due(1030));
        assert_eq!(t.cross(1030), 1);
        assert_eq!(t.next, 2030);
        // a late look past two more ends
        assert_eq!(t.cross(4031), 3);
        assert_eq!(t.next, 5030);
        t.restart();
        assert_eq!(t.next, 1000);
    }

    #[test]
    fn armed_counter_overflows_exactly_at_next() {
        let t = Threshold::new(10_007, 1_000, Action::Sample).unwrap();
        for width in [32u8, 40, 48, 64] {
            let raw = t.arm_raw(1_000, width);
            // events until the counter passes 2^width - 1 -> 0
            let wrap = if width >= 64 {
                0u64.wrapping_sub(raw)
            } else {
                (1u64 << width) - raw
            };
            assert_eq!(wrap, 10_007, "width {width}");
        }
        // halfway through the period
        assert_eq!((1u64 << 48) - t.arm_raw(6_000, 48), 5_007);
        // legacy Intel writes: bit 31 set, so the sign extension reproduces the value
        let legacy = Threshold::new(PERIOD_MAX, 0, Action::Notify).unwrap();
        let raw = legacy.arm_raw(0, 48);
        assert_eq!((raw as u32 as i32 as i64 as u64) & ((1 << 48) - 1), raw);
    }

    #[test]
    fn sample_buffer_counts_lost_periods_and_fills() {
        let mut b = SampleBuffer::default();
        assert!(!b.push(0x401000, 0));
        assert_eq!(b.samples, 0);
        assert!(!b.push(0x401000, 1));
        assert!(!b.push(0x401004, 3));
        assert_eq!((b.samples, b.lost), (2, 2));
        for i in 2..SAMPLES_BUFFERED - 1 {
            assert!(!b.push(i as u64, 1));
        }
        assert!(b.push(0x401008, 1));
        assert_eq!(b.rips.len(), SAMPLES_BUFFERED);
    }
}

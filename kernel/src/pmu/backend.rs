//! The interface every PMU backend implements.
//!
//! Counting model (the same for every backend, so the virtualisation code above it is
//! backend-independent):
//! - [`PmuBackend::program`] loads an event into a counter, which stays stopped;
//! - [`PmuBackend::enable`] / [`PmuBackend::disable`] start and stop a set of counters at once
//!   (through the global control register where the PMU has one);
//! - [`PmuBackend::read`] returns the raw counter value (at most the counter's width);
//! - [`PmuBackend::write`] sets a counter, stopping it around the write if it was running;
//! - [`PmuBackend::arm_period`] presets a counter to overflow after `period` events;
//! - [`PmuBackend::overflow_status`] / [`PmuBackend::ack_overflow`] see and clear overflows;
//! - [`PmuBackend::handle_pmi`] is the interrupt-time sequence for this PMU (without the local
//!   APIC part: the kernel unmasks LVTPC when [`PmuBackend::pmi_unmasks_lvtpc`] says so, and
//!   signals EOI).

use core::fmt;

pub use events::assign::Counter;
use events::encode::EncodeError;
use events::event::{EventSelect, Modifiers};
use events::pmu::PmuCaps;

use super::msr::{Msr, MsrFault};

/// A set of counters, as bit masks (bit i = GP counter i / fixed counter i).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CounterSet {
    pub gp: u32,
    pub fixed: u32,
}

impl CounterSet {
    pub const EMPTY: CounterSet = CounterSet { gp: 0, fixed: 0 };

    /// The set with one counter.
    pub fn one(counter: Counter) -> CounterSet {
        match counter {
            Counter::Gp(i) => CounterSet {
                gp: 1u32.checked_shl(u32::from(i)).unwrap_or(0),
                fixed: 0,
            },
            Counter::Fixed(i) => CounterSet {
                gp: 0,
                fixed: 1u32.checked_shl(u32::from(i)).unwrap_or(0),
            },
        }
    }

    pub fn is_empty(&self) -> bool {
        self.gp == 0 && self.fixed == 0
    }

    pub fn contains(&self, counter: Counter) -> bool {
        let one = CounterSet::one(counter);
        (self.gp & one.gp) | (self.fixed & one.fixed) != 0
    }

    pub fn union(self, other: CounterSet) -> CounterSet {
        CounterSet {
            gp: self.gp | other.gp,
            fixed: self.fixed | other.fixed,
        }
    }

    /// The counters in the set, GP first, in index order.
    pub fn iter(self) -> impl Iterator<Item = Counter> {
        let gp = (0..32u8)
            .filter(move |i| self.gp & (1 << i) != 0)
            .map(Counter::Gp);
        let fixed = (0..32u8)
            .filter(move |i| self.fixed & (1 << i) != 0)
            .map(Counter::Fixed);
        gp.chain(fixed)
    }

    /// Intel GLOBAL_CTRL / GLOBAL_STATUS layout: GP bits 0.., fixed bits 32...
    pub fn to_intel_global(self) -> u64 {
        u64::from(self.gp) | (u64::from(self.fixed) << 32)
    }

    pub fn from_intel_global(bits: u64) -> CounterSet {
        CounterSet {
            gp: bits as u32,
            fixed: (bits >> 32) as u32,
        }
    }
}

/// Why a PMU operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmuError {
    /// The PMU has no such counter.
    NoSuchCounter(Counter),
    /// The event cannot be encoded for this PMU.
    Encode(EncodeError),
    /// The event cannot run on this counter (e.g. a filter a fixed counter cannot apply, or a
    /// fixed counter that counts another event).
    WrongCounter(Counter),
    /// An MSR access faulted.
    Msr { msr: u32, fault: MsrFault },
    /// A value wider than the counter (or, for legacy Intel writes, not representable as a
    /// sign-extended 32-bit value).
    ValueTooWide { value: u64, max_bits: u8 },
    /// A sample period at or beyond the limit (2^(width-1), or 2^31 for legacy Intel writes).
    PeriodOutOfRange { period: u64, max: u64 },
    /// This PMU cannot do it at all (e.g. anything on the TSC-only backend).
    NotSupported(&'static str),
}

impl fmt::Display for PmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PmuError::NoSuchCounter(c) => write!(f, "no counter {c} on this PMU"),
            PmuError::Encode(e) => write!(f, "cannot encode the event: {e}"),
            PmuError::WrongCounter(c) => write!(f, "the event cannot be counted on {c}"),
            PmuError::Msr { msr, fault } => write!(f, "MSR {msr:#x}: {fault:?}"),
            PmuError::ValueTooWide { value, max_bits } => {
                write!(
                    f,
                    "value {value:#x} does not fit a {max_bits}-bit counter write"
                )
            }
            PmuError::PeriodOutOfRange { period, max } => {
                write!(f, "period {period} is out of range (at most {max})")
            }
            PmuError::NotSupported(what) => write!(f, "not supported: {what}"),
        }
    }
}

/// Helper for backends: reads an MSR, naming it in the error.
pub fn rd(msr: &mut dyn Msr, addr: u32) -> Result<u64, PmuError> {
    msr.read(addr)
        .map_err(|fault| PmuError::Msr { msr: addr, fault })
}

/// Helper for backends: writes an MSR, naming it in the error.
pub fn wr(msr: &mut dyn Msr, addr: u32, value: u64) -> Result<(), PmuError> {
    msr.write(addr, value)
        .map_err(|fault| PmuError::Msr { msr: addr, fault })
}

/// What a PMI found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmiEvent {
    /// Counters that overflowed (and were acknowledged).
    pub overflowed: CounterSet,
    /// Status bits other than counter overflows that were set (Intel: CondChgd, buffers...).
    pub other_status: u64,
}

impl PmiEvent {
    /// No counter overflowed: the PMI was spurious (or late, after an earlier acknowledge).
    pub fn is_spurious(&self) -> bool {
        self.overflowed.is_empty()
    }
}

/// One PMU backend.
pub trait PmuBackend {
    /// Short name for records: `intel-arch-v4`, `amd-perfmon-v2`, `tsc-only`, ...
    fn name(&self) -> &'static str;

    fn caps(&self) -> &PmuCaps;

    /// Bit width of a counter (0 if it does not exist).
    fn width(&self, counter: Counter) -> u8;

    /// Every counter this PMU has.
    fn all_counters(&self) -> CounterSet;

    /// Puts the PMU in a known state: every counter stopped, unprogrammed and zero, overflow
    /// status cleared. The kernel calls it once at boot, before anything counts.
    fn reset(&mut self, msr: &mut dyn Msr) -> Result<(), PmuError>;

    /// Loads an event into `counter`, stopped. For a fixed counter, `select` must be the event
    /// that fixed counter counts (or its pseudo encoding) and plain (no cmask/inv/edge).
    fn program(
        &mut self,
        msr: &mut dyn Msr,
        counter: Counter,
        select: &EventSelect,
        modifiers: &Modifiers,
    ) -> Result<(), PmuError>;

    /// Stops `counter` and clears its configuration.
    fn release(&mut self, msr: &mut dyn Msr, counter: Counter) -> Result<(), PmuError>;

    /// Starts the counters in `set` (all at once where the PMU has a global control).
    fn enable(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError>;

    /// Stops the counters in `set`.
    fn disable(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError>;

    /// The raw value of a counter (below 2^width).
    fn read(&mut self, msr: &mut dyn Msr, counter: Counter) -> Result<u64, PmuError>;

    /// Sets a counter (stopping it around the write if it runs). Without full-width writes an
    /// Intel GP counter takes only values that are sign-extended 32-bit values masked to its width.
    fn write(&mut self, msr: &mut dyn Msr, counter: Counter, value: u64) -> Result<(), PmuError>;

    /// Presets `counter` to overflow after `period` events (writes `-period` masked to the width).
    /// `period` must be at least 1 and below 2^(width-1) (below 2^31 for legacy Intel writes).
    fn arm_period(
        &mut self,
        msr: &mut dyn Msr,
        counter: Counter,
        period: u64,
    ) -> Result<(), PmuError>;

    /// Counters whose overflow is pending.
    fn overflow_status(&mut self, msr: &mut dyn Msr) -> Result<CounterSet, PmuError>;

    /// Clears the overflow indication of the counters in `set`.
    fn ack_overflow(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError>;

    /// The interrupt-time sequence: find and acknowledge the overflowed counters, leaving the
    /// counters as they were running.
    fn handle_pmi(&mut self, msr: &mut dyn Msr) -> Result<PmiEvent, PmuError>;

    /// Whether the CPU masks LVTPC when it delivers a PMI, so the kernel must unmask it after
    /// handling (Intel: yes).
    fn pmi_unmasks_lvtpc(&self) -> bool;

    /// ECX for RDPMC of `counter`, if RDPMC can read it.
    fn rdpmc_index(&self, counter: Counter) -> Option<u32>;

    /// The task switch's MSR lists for one task's counters: slot i counts `slots[i]`'s event on
    /// its counter (the same checks and encodings as [`program`](Self::program), nothing
    /// written). See [`super::switch`]. Backends without counters refuse.
    fn switch_plan(
        &self,
        slots: &[(Counter, EventSelect, Modifiers)],
    ) -> Result<super::switch::SwitchPlan, PmuError> {
        let _ = slots;
        Err(PmuError::NotSupported("no task switch plan on this PMU"))
    }
}

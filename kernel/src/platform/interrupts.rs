//! The interrupt vectors the kernel uses, and what the trap handler (`traps`) counts: here, below
//! the handler, so that the readers (the fault report in `traps::fatal`, the timer's
//! calibration, the boot checks) do not depend on the handler, which depends on them.

use core::sync::atomic::AtomicU64;

/// Vector of the local APIC timer.
pub const TIMER_VECTOR: u8 = 0x40;
/// Vector of the performance-counter interrupt (the LVTPC entry; `pmu::machine` says why it is
/// a vector and not an NMI).
pub const PMI_VECTOR: u8 = 0xfe;
/// Vector of the IPIs that wake a CPU for a job and its waiter when the job is done
/// (`platform::cpus`).
pub const WAKE_VECTOR: u8 = 0xf0;
/// Vector of the local APIC's spurious interrupt.
pub const SPURIOUS_VECTOR: u8 = 0xff;

/// Interrupt and trap counts, reported in the `end` record.
pub struct Counts {
    pub timer_ticks: AtomicU64,
    pub last_tick_tsc: AtomicU64,
    pub breakpoints: AtomicU64,
    pub nmis: AtomicU64,
    pub spurious_apic: AtomicU64,
    pub spurious_pic: AtomicU64,
    /// Wake IPIs (jobs handed to other CPUs, and their completions).
    pub wakes: AtomicU64,
    pub unexpected: AtomicU64,
    pub last_unexpected_vector: AtomicU64,
}

pub static COUNTS: Counts = Counts {
    timer_ticks: AtomicU64::new(0),
    last_tick_tsc: AtomicU64::new(0),
    breakpoints: AtomicU64::new(0),
    nmis: AtomicU64::new(0),
    spurious_apic: AtomicU64::new(0),
    spurious_pic: AtomicU64::new(0),
    wakes: AtomicU64::new(0),
    unexpected: AtomicU64::new(0),
    last_unexpected_vector: AtomicU64::new(0),
};

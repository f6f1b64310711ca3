//! Time for the device drivers (USB, the IOMMU): every wait has a deadline on the TSC, so a device that never answers
//! ends in a note, not a hung machine.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use baremark_hw::cpu;

/// Assumed when the boot could not measure the TSC: faster than any CPU's TSC, so timeouts
/// and delays only get longer in real time, never shorter.
const FALLBACK_HZ: u64 = 6_000_000_000;

static TSC_HZ: AtomicU64 = AtomicU64::new(FALLBACK_HZ);

/// Tells the driver the TSC frequency (from the boot's calibration).
pub fn set_tsc_hz(hz: Option<u64>) {
    if let Some(hz) = hz.filter(|&hz| hz > 1_000_000) {
        TSC_HZ.store(hz, Relaxed);
    }
}

/// A point in time some milliseconds from now.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(u64);

impl Deadline {
    pub fn after_ms(ms: u64) -> Deadline {
        let ticks = ms.saturating_mul(TSC_HZ.load(Relaxed) / 1000);
        Deadline(cpu::rdtsc().saturating_add(ticks))
    }

    pub fn passed(&self) -> bool {
        cpu::rdtsc() >= self.0
    }

    /// The TSC value at which it passes.
    pub fn tsc(&self) -> u64 {
        self.0
    }
}

/// Waits `ms` milliseconds (port reset recovery and the like).
pub fn sleep_ms(ms: u64) {
    let d = Deadline::after_ms(ms);
    while !d.passed() {
        core::hint::spin_loop();
    }
}

/// Polls `done` until it returns true or `ms` milliseconds pass; returns whether it did.
pub fn wait_until(ms: u64, mut done: impl FnMut() -> bool) -> bool {
    let d = Deadline::after_ms(ms);
    loop {
        if done() {
            return true;
        }
        if d.passed() {
            return done();
        }
        core::hint::spin_loop();
    }
}

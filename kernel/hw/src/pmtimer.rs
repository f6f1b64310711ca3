//! The ACPI power-management timer: a free-running 24- or 32-bit counter at 3.579545 MHz in an
//! I/O port the FADT names (`PM_TMR_BLK`), a reference clock for calibrating the TSC on
//! machines without a PIT. Reading it has no side effect.

/// The PM timer's frequency, in Hz (ACPI 6.5, 4.8.3.3).
pub const PM_TIMER_HZ: u64 = 3_579_545;

/// The PM timer at one I/O port.
#[derive(Clone, Copy, Debug)]
pub struct PmTimer {
    port: u16,
    /// 32 bits wide (FADT flag TMR_VAL_EXT), else 24.
    pub wide: bool,
}

impl PmTimer {
    /// The timer the FADT describes at `port`. Only ports above the legacy ISA devices' range
    /// (0x100 and up) are taken: a PM timer block is always in the chipset's ACPI I/O space, and
    /// a port below that would be a legacy device that reads may disturb.
    pub fn new(port: u16, wide: bool) -> Option<PmTimer> {
        (0x100..=0xfffc)
            .contains(&port)
            .then_some(PmTimer { port, wide })
    }

    /// The counter's value (the low 24 bits only, for a 24-bit timer).
    pub fn read(&self) -> u32 {
        // SAFETY: the port is the PM timer block the firmware's FADT names, checked to be in
        // the chipset's I/O range; reading the PM timer register has no side effect.
        let v = unsafe { crate::port::inl(self.port) };
        if self.wide { v } else { v & 0x00ff_ffff }
    }

    /// The counter's mask (2^24 - 1 or 2^32 - 1).
    pub fn mask(&self) -> u32 {
        if self.wide { u32::MAX } else { 0x00ff_ffff }
    }
}

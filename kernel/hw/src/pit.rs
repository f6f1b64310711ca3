//! The 8254 programmable interval timer, channel 2: the reference clock for calibrating the TSC
//! when no CPUID or hypervisor leaf gives its frequency.
//!
//! Channel 2 is gated by bit 0 of port 0x61 and its output can be read back in bit 5 of the
//! same port, so the kernel can time a countdown by polling, without interrupts. The method is
//! the classic one (Linux `pit_calibrate_tsc`): load a count in mode 0 (interrupt on terminal
//! count), read the TSC, poll until the output goes high, read the TSC again.

use crate::cpu::rdtsc;
use crate::port::{inb, outb};

/// The PIT input clock, in Hz.
pub const PIT_HZ: u64 = 1_193_182;

const CHANNEL2_DATA: u16 = 0x42;
const COMMAND: u16 = 0x43;
const GATE_PORT: u16 = 0x61;

/// One timed countdown.
#[derive(Clone, Copy, Debug)]
pub struct PitSample {
    /// PIT ticks counted down.
    pub ticks: u16,
    /// TSC just after the count was loaded.
    pub tsc_start: u64,
    /// TSC at the poll that saw the output high.
    pub tsc_end: u64,
    /// TSC at the last poll that still saw it low: the end lies in `tsc_last_low..tsc_end`.
    pub tsc_last_low: u64,
    /// Number of polls.
    pub polls: u64,
}

/// Counts down `ticks` PIT periods on channel 2 and times them with the TSC. Returns `None` if
/// the output did not go high within `max_tsc` TSC ticks (no working PIT; some recent PCs gate
/// it off). The limit is in TSC ticks, not polls, because a poll costs anything from tens of
/// nanoseconds (emulation) to microseconds (a real ISA bus).
pub fn measure(ticks: u16, max_tsc: u64) -> Option<PitSample> {
    // SAFETY: ports 0x42/0x43/0x61 are the PIT channel 2 and its gate on every PC; channel 2
    // drives only the PC speaker, which is kept off (bit 1 of 0x61 cleared); this module is
    // the only user of those ports.
    unsafe {
        let gate = inb(GATE_PORT);
        // Gate low while programming, speaker off.
        outb(GATE_PORT, gate & !0x03);
        // Channel 2, lobyte/hibyte, mode 0 (interrupt on terminal count), binary.
        outb(COMMAND, 0b1011_0000);
        outb(CHANNEL2_DATA, ticks as u8);
        outb(CHANNEL2_DATA, (ticks >> 8) as u8);
        // Raise the gate: counting starts on the next input clock.
        outb(GATE_PORT, (gate & !0x02) | 0x01);
        let tsc_start = rdtsc();
        let mut tsc_last_low = tsc_start;
        let mut polls = 0;
        loop {
            let before = rdtsc();
            if before - tsc_start > max_tsc {
                break;
            }
            let high = inb(GATE_PORT) & 0x20 != 0;
            polls += 1;
            if high {
                let tsc_end = rdtsc();
                outb(GATE_PORT, gate & !0x03);
                return Some(PitSample {
                    ticks,
                    tsc_start,
                    tsc_end,
                    tsc_last_low,
                    polls,
                });
            }
            tsc_last_low = before;
        }
        outb(GATE_PORT, gate & !0x03);
        None
    }
}

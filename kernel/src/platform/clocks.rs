//! The reference clocks the TSC is calibrated against, each measured the same way: intervals
//! of about 10 ms timed with the TSC, every wait bounded in TSC ticks, so a clock that is
//! missing or stuck ends in an error, never a hang.
//!
//! - the HPET (ACPI HPET table): a memory-mapped counter of at least 10 MHz whose period the
//!   hardware states (femtoseconds, in its capability register);
//! - the ACPI PM timer (FADT): 3.579545 MHz in an I/O port, 24 or 32 bits;
//! - the 8254 PIT channel 2: 1.193182 MHz, a countdown polled through port 0x61 (gated off on
//!   some recent PCs).

use alloc::format;
use alloc::string::String;

use baremark_hw::mmio::Mmio;
use baremark_hw::pmtimer::{PM_TIMER_HZ, PmTimer};
use baremark_hw::{cpu, pit};

use super::acpi::{Hpet, PmTimerBlock};
use super::tsc::{self, RefMeasurement, TscFrequency, TscMethod};

/// Intervals measured per clock (every clock present is measured: the chosen one, and the
/// others as cross-checks).
pub const SAMPLES: usize = 3;
/// 2^30 TSC ticks: 10 ms for a 100 GHz TSC and 2 s for a 500 MHz one. Far beyond an interval
/// on any real clock, short enough when the clock is missing.
const TIMEOUT_TSC: u64 = 1 << 30;
/// An interval not measured yet.
const NONE: RefMeasurement = RefMeasurement {
    ref_ticks: 0,
    tsc_min: 0,
    tsc_max: 0,
};
/// PIT ticks per interval (10 ms).
const PIT_TICKS: u16 = 11_932;

/// Times `SAMPLES` intervals of `window` ticks of a free-running counter (`read`, `mask` wide)
/// with the TSC.
fn measure_counter(
    read: &mut dyn FnMut() -> u64,
    mask: u64,
    window: u64,
) -> Result<[RefMeasurement; SAMPLES], String> {
    let mut out = [NONE; SAMPLES];
    for slot in &mut out {
        let t0a = cpu::rdtsc();
        let r0 = read();
        let t0b = cpu::rdtsc();
        loop {
            let t1a = cpu::rdtsc();
            let r1 = read();
            let t1b = cpu::rdtsc();
            let ticks = r1.wrapping_sub(r0) & mask;
            if ticks >= window {
                *slot = RefMeasurement {
                    ref_ticks: ticks,
                    tsc_min: t1a.saturating_sub(t0b),
                    tsc_max: t1b - t0a,
                };
                break;
            }
            if t1b - t0a > TIMEOUT_TSC {
                return Err(format!(
                    "it advanced {ticks} of {window} ticks in {TIMEOUT_TSC} TSC ticks: stopped or absent"
                ));
            }
        }
    }
    Ok(out)
}

/// Checks a calibration's result: plausible, or why not.
fn checked(f: Option<TscFrequency>) -> Result<TscFrequency, String> {
    let f = f.ok_or_else(|| String::from("no usable interval"))?;
    tsc::plausible(&f)?;
    Ok(f)
}

/// Calibrates against the HPET: mapped, its period read and checked, the counter started if the
/// firmware left it stopped (and stopped again after), then timed.
pub fn hpet(table: &Hpet) -> Result<TscFrequency, String> {
    let mut regs = Mmio::map_firmware_device(table.base, 1024)
        .map_err(|e| format!("its registers at {:#x} cannot be mapped: {e:?}", table.base))?;
    let caps = regs.read64(0);
    let period_fs = caps >> 32;
    // The specification: at most 100 ns (10 MHz at least), and not 0.
    if period_fs == 0 || period_fs > 100_000_000 {
        return Err(format!(
            "its capability register says a period of {period_fs} fs (0x{caps:x}): not an HPET"
        ));
    }
    let hz = 1_000_000_000_000_000 / period_fs;
    let config = regs.read64(0x10);
    let started = config & 1 == 0;
    if started {
        regs.write64(0x10, config | 1);
    }
    // The low 32 bits only: a 64-bit read as two halves could tear, and 10 ms is far shorter
    // than their wrap (7 minutes at 10 MHz).
    let mut read = || u64::from(regs.read32(0xf0));
    let result = measure_counter(&mut read, u64::from(u32::MAX), hz / 100);
    if started {
        regs.write64(0x10, config);
    }
    checked(tsc::from_reference(
        TscMethod::HpetCalibration,
        hz,
        &result?,
    ))
}

/// Calibrates against the ACPI PM timer.
pub fn pm_timer(block: &PmTimerBlock) -> Result<TscFrequency, String> {
    let timer = PmTimer::new(block.port, block.wide)
        .ok_or_else(|| format!("port {:#x} is not in the chipset's I/O range", block.port))?;
    let mut read = || u64::from(timer.read());
    let result = measure_counter(&mut read, u64::from(timer.mask()), PM_TIMER_HZ / 100)?;
    checked(tsc::from_reference(
        TscMethod::PmTimerCalibration,
        PM_TIMER_HZ,
        &result,
    ))
}

/// Calibrates against the PIT: `Err` with the reason when it never answers or its result is
/// implausible (gated off).
pub fn pit() -> Result<TscFrequency, String> {
    let mut out = [NONE; SAMPLES];
    for slot in &mut out {
        let s = pit::measure(PIT_TICKS, TIMEOUT_TSC)
            .ok_or_else(|| String::from("its output never went high: absent or gated off"))?;
        *slot = RefMeasurement {
            ref_ticks: u64::from(s.ticks),
            tsc_min: s.tsc_last_low - s.tsc_start,
            tsc_max: s.tsc_end - s.tsc_start,
        };
    }
    checked(tsc::from_pit(&out))
}

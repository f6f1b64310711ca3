//! Time: the TSC frequency (CPUID, hypervisor leaf, or PIT calibration), and the local APIC
//! timer (bring-up, calibration against the TSC, and a check of each mode).
//!
//! Waits poll the TSC with interrupts enabled rather than halting, so a timer that never fires
//! ends in a timeout and a "failed" check instead of a hung machine.

use core::sync::atomic::Ordering::Relaxed;

use baremark_hw::apic::{self, ApicError, ApicInfo, TimerMode};
use baremark_hw::{cpu, pit};
use raw_cpuid::CpuIdReaderNative;

use crate::platform::cpu::{CpuInfo, raw_cpuid_leaf};
use crate::platform::interrupts::COUNTS;
use crate::platform::interrupts::{SPURIOUS_VECTOR, TIMER_VECTOR};
use crate::platform::tsc::{self, PitMeasurement, TscFrequency};

/// Everything learnt about the TSC.
#[derive(Clone, Copy, Debug)]
pub struct TscReport {
    /// The frequency the kernel uses, if any method worked.
    pub chosen: Option<TscFrequency>,
    /// The PIT calibration, also when another method was chosen (a cross-check).
    pub pit: Option<TscFrequency>,
    /// CPUID 0x16 EAX: processor base frequency in MHz (a hint, not the TSC rate).
    pub base_mhz: Option<u32>,
    /// The PIT did not answer.
    pub pit_absent: bool,
}

/// PIT countdowns for calibration: 5 x 10 ms.
const PIT_SAMPLES: usize = 5;
const PIT_TICKS: u16 = 11_932;

/// Finds the TSC frequency: hypervisor leaf, then CPUID 0x15/0x16, then PIT calibration.
/// The PIT is measured in every case and reported beside the chosen value.
pub fn tsc_frequency(cpu: &CpuInfo) -> TscReport {
    let reader = CpuIdReaderNative;
    let hypervisor = if cpu.features.hypervisor {
        let max = raw_cpuid_leaf(&reader, 0x4000_0000)[0];
        // Only read 0x40000010 when the hypervisor says it exists.
        if max >= 0x4000_0010 {
            tsc::from_hypervisor_leaf(max, raw_cpuid_leaf(&reader, 0x4000_0010)[0])
        } else {
            None
        }
    } else {
        None
    };
    let base_mhz = (cpu.max_leaf >= 0x16)
        .then(|| raw_cpuid_leaf(&reader, 0x16)[0] & 0xffff)
        .filter(|&m| m != 0);
    let from_cpuid = if cpu.max_leaf >= 0x15 {
        tsc::from_cpuid(raw_cpuid_leaf(&reader, 0x15), base_mhz.unwrap_or(0))
    } else {
        None
    };

    let mut measurements = [PitMeasurement {
        pit_ticks: 0,
        tsc_min: 0,
        tsc_max: 0,
    }; PIT_SAMPLES];
    let mut taken = 0;
    let mut pit_absent = false;
    for slot in measurements.iter_mut() {
        // 2^30 TSC ticks is 10 ms for a 100 GHz TSC and 2 s for a 500 MHz one: far beyond the
        // countdown on any real clock, short enough when the PIT is missing.
        match pit::measure(PIT_TICKS, 1 << 30) {
            Some(s) => {
                *slot = PitMeasurement {
                    pit_ticks: u64::from(s.ticks),
                    tsc_min: s.tsc_last_low - s.tsc_start,
                    tsc_max: s.tsc_end - s.tsc_start,
                };
                taken += 1;
            }
            None => {
                pit_absent = true;
                break;
            }
        }
    }
    let pit = tsc::from_pit(&measurements[..taken]);
    TscReport {
        chosen: hypervisor.or(from_cpuid).or(pit),
        pit,
        base_mhz,
        pit_absent,
    }
}

/// Result of one timer check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Ok,
    Failed(&'static str),
    Unsupported,
    Skipped(&'static str),
}

impl Check {
    pub fn as_str(&self) -> &'static str {
        match self {
            Check::Ok => "ok",
            Check::Failed(_) => "failed",
            Check::Unsupported => "unsupported",
            Check::Skipped(_) => "skipped",
        }
    }
    pub fn detail(&self) -> Option<&'static str> {
        match self {
            Check::Failed(d) | Check::Skipped(d) => Some(d),
            _ => None,
        }
    }
}

/// What the APIC bring-up found and how the timer modes behaved.
#[derive(Clone, Copy, Debug)]
pub struct ApicReport {
    pub info: Result<ApicInfo, ApicError>,
    /// Timer input clock (before the divider), measured against the TSC.
    pub timer_hz: Option<u64>,
    pub one_shot: Check,
    pub periodic: Check,
    /// Measured periodic interval, in TSC ticks (average of 4 periods).
    pub periodic_interval_tsc: Option<u64>,
    pub tsc_deadline: Check,
    /// TSC ticks from the deadline to the handler's TSC read.
    pub deadline_latency_tsc: Option<u64>,
}

/// Divider used for the one-shot and periodic timer.
pub const TIMER_DIVIDE: u32 = 16;

/// Brings up the local APIC and, when `checks`, exercises each timer mode once.
pub fn bring_up_apic(cpu: &CpuInfo, tsc_hz: Option<u64>, checks: bool) -> ApicReport {
    let info = apic::init(cpu.features.x2apic, SPURIOUS_VECTOR);
    let mut report = ApicReport {
        info,
        timer_hz: None,
        one_shot: Check::Skipped("not run"),
        periodic: Check::Skipped("not run"),
        periodic_interval_tsc: None,
        tsc_deadline: Check::Skipped("not run"),
        deadline_latency_tsc: None,
    };
    if info.is_err() {
        let why = Check::Skipped("APIC not available");
        (report.one_shot, report.periodic, report.tsc_deadline) = (why, why, why);
        return report;
    }
    let Some(tsc_hz) = tsc_hz.filter(|&hz| hz > 0) else {
        let why = Check::Skipped("TSC frequency unknown");
        (report.one_shot, report.periodic, report.tsc_deadline) = (why, why, why);
        return report;
    };
    report.timer_hz = calibrate_timer(tsc_hz);
    if !checks {
        let why = Check::Skipped("timer_checks = off");
        (report.one_shot, report.periodic, report.tsc_deadline) = (why, why, why);
        return report;
    }
    match report.timer_hz {
        Some(timer_hz) => {
            let one_ms = u32::try_from(timer_hz / u64::from(TIMER_DIVIDE) / 1000)
                .unwrap_or(u32::MAX)
                .max(1);
            report.one_shot = check_one_shot(one_ms, tsc_hz);
            (report.periodic, report.periodic_interval_tsc) = check_periodic(one_ms, tsc_hz);
        }
        None => {
            report.one_shot = Check::Failed("timer does not count");
            report.periodic = Check::Failed("timer does not count");
        }
    }
    (report.tsc_deadline, report.deadline_latency_tsc) = if cpu.features.tsc_deadline {
        check_tsc_deadline(tsc_hz)
    } else {
        (Check::Unsupported, None)
    };
    apic::timer_stop();
    report
}

/// Measures the timer's input clock: count down (masked, no interrupt) for 10 ms of TSC time.
fn calibrate_timer(tsc_hz: u64) -> Option<u64> {
    apic::timer_arm(
        TimerMode::OneShot,
        TIMER_VECTOR,
        TIMER_DIVIDE,
        u32::MAX,
        true,
    );
    let start = cpu::rdtsc();
    let window = tsc_hz / 100;
    let mut now = start;
    while now - start < window {
        core::hint::spin_loop();
        now = cpu::rdtsc();
    }
    let counted = u64::from(u32::MAX - apic::timer_current());
    apic::timer_stop();
    if counted == 0 {
        return None;
    }
    Some(
        (u128::from(counted) * u128::from(TIMER_DIVIDE) * u128::from(tsc_hz)
            / u128::from(now - start)) as u64,
    )
}

/// Spins with interrupts on until `ticks` timer interrupts have arrived or `timeout_tsc` TSC
/// ticks passed. Returns whether the ticks arrived.
fn wait_for_ticks(ticks: u64, timeout_tsc: u64) -> bool {
    let start = cpu::rdtsc();
    cpu::enable_interrupts();
    let arrived = loop {
        if COUNTS.timer_ticks.load(Relaxed) >= ticks {
            break true;
        }
        if cpu::rdtsc() - start > timeout_tsc {
            break false;
        }
        core::hint::spin_loop();
    };
    cpu::disable_interrupts();
    arrived
}

/// Arms the timer in `mode` with a count of `initial` and waits up to 100 ms for its first
/// interrupt. Returns the tick count from before arming.
fn arm_and_await_first_tick(mode: TimerMode, initial: u32, tsc_hz: u64) -> Result<u64, Check> {
    let base = COUNTS.timer_ticks.load(Relaxed);
    apic::timer_arm(mode, TIMER_VECTOR, TIMER_DIVIDE, initial, false);
    if wait_for_ticks(base + 1, tsc_hz / 10) {
        Ok(base)
    } else {
        apic::timer_stop();
        Err(Check::Failed("no interrupt within 100 ms"))
    }
}

fn check_one_shot(one_ms: u32, tsc_hz: u64) -> Check {
    let base = match arm_and_await_first_tick(TimerMode::OneShot, one_ms, tsc_hz) {
        Ok(base) => base,
        Err(check) => return check,
    };
    // A one-shot timer must not fire again: wait 3 more periods.
    wait_for_ticks(base + 2, tsc_hz * 3 / 1000);
    apic::timer_stop();
    if COUNTS.timer_ticks.load(Relaxed) == base + 1 {
        Check::Ok
    } else {
        Check::Failed("fired more than once")
    }
}

fn check_periodic(one_ms: u32, tsc_hz: u64) -> (Check, Option<u64>) {
    let base = match arm_and_await_first_tick(TimerMode::Periodic, one_ms, tsc_hz) {
        Ok(base) => base,
        Err(check) => return (check, None),
    };
    let first = COUNTS.last_tick_tsc.load(Relaxed);
    let arrived = wait_for_ticks(base + 5, tsc_hz / 5);
    apic::timer_stop();
    if !arrived {
        return (Check::Failed("stopped after the first interrupt"), None);
    }
    let interval = (COUNTS.last_tick_tsc.load(Relaxed) - first) / 4;
    (Check::Ok, Some(interval))
}

fn check_tsc_deadline(tsc_hz: u64) -> (Check, Option<u64>) {
    let base = COUNTS.timer_ticks.load(Relaxed);
    apic::timer_arm(TimerMode::TscDeadline, TIMER_VECTOR, TIMER_DIVIDE, 0, false);
    let deadline = cpu::rdtsc() + tsc_hz / 1000;
    if apic::set_tsc_deadline(deadline).is_err() {
        apic::timer_stop();
        return (Check::Failed("IA32_TSC_DEADLINE refused the write"), None);
    }
    let arrived = wait_for_ticks(base + 1, tsc_hz / 10);
    apic::timer_stop();
    if !arrived {
        return (Check::Failed("no interrupt within 100 ms"), None);
    }
    let fired = COUNTS.last_tick_tsc.load(Relaxed);
    if fired < deadline {
        return (Check::Failed("fired before the deadline"), None);
    }
    (Check::Ok, Some(fired - deadline))
}

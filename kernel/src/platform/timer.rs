//! Time: the TSC frequency (CPUID, hypervisor leaf, or calibration against the HPET, the ACPI
//! PM timer or the PIT: `clocks`), and the local APIC
//! timer (bring-up, calibration against the TSC, and a check of each mode).
//!
//! Waits poll the TSC with interrupts enabled rather than halting, so a timer that never fires
//! ends in a timeout and a "failed" check instead of a hung machine.

use alloc::string::String;
use core::sync::atomic::Ordering::Relaxed;

use baremark_hw::apic::{self, ApicError, ApicInfo, TimerMode};
use baremark_hw::cpu;
use raw_cpuid::CpuIdReaderNative;

use crate::platform::acpi::Acpi;
use crate::platform::clocks;
use crate::platform::cpu::{CpuInfo, raw_cpuid_leaf};
use crate::platform::interrupts::COUNTS;
use crate::platform::interrupts::{SPURIOUS_VECTOR, TIMER_VECTOR};
use crate::platform::tsc::{self, TscFrequency};

/// Everything learnt about the TSC.
#[derive(Clone, Debug)]
pub struct TscReport {
    /// The frequency the kernel uses, if any method worked.
    pub chosen: Option<TscFrequency>,
    /// Each reference clock's calibration, also those not chosen (cross-checks): `None` where
    /// the ACPI tables name no such clock, `Err` with why it gave no usable rate.
    pub hpet: Option<Result<TscFrequency, String>>,
    pub pm_timer: Option<Result<TscFrequency, String>>,
    pub pit: Result<TscFrequency, String>,
    /// The first other source that gave a rate, and whether it agrees with the chosen one
    /// within both uncertainties.
    pub cross_check: Option<(TscFrequency, bool)>,
    /// CPUID 0x16 EAX: processor base frequency in MHz (a hint, not the TSC rate).
    pub base_mhz: Option<u32>,
}

/// Finds the TSC frequency. In order of trust: the hypervisor leaf, CPUID 0x15 (with 0x16),
/// then calibration against the HPET, the ACPI PM timer, the PIT (each checked for a plausible
/// rate). Every reference clock present is measured, so the chosen value is cross-checked
/// against a second source where there is one.
pub fn tsc_frequency(cpu: &CpuInfo, acpi: Option<&Acpi>) -> TscReport {
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
    let hpet = acpi.and_then(|a| a.hpet.as_ref()).map(clocks::hpet);
    let pm_timer = acpi
        .and_then(|a| a.fadt.as_ref())
        .and_then(|f| f.pm_timer.as_ref())
        .map(clocks::pm_timer);
    let pit = clocks::pit();
    let measured: [Option<TscFrequency>; 3] = [
        hpet.as_ref().and_then(|r| r.as_ref().ok().copied()),
        pm_timer.as_ref().and_then(|r| r.as_ref().ok().copied()),
        pit.as_ref().ok().copied(),
    ];
    let mut candidates = [hypervisor, from_cpuid]
        .into_iter()
        .chain(measured)
        .flatten();
    let chosen = candidates.next();
    let cross_check = chosen.and_then(|c| candidates.next().map(|o| (o, tsc::agree(&c, &o))));
    TscReport {
        chosen,
        hpet,
        pm_timer,
        pit,
        cross_check,
        base_mhz,
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
pub fn calibrate_timer(tsc_hz: u64) -> Option<u64> {
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

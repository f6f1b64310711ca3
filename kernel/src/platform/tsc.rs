//! TSC frequency: from CPUID leaf 0x15 (with 0x16), from a hypervisor timing leaf, or measured
//! against a reference clock: the HPET, the ACPI PM timer or the 8254 PIT. Pure arithmetic,
//! tested on the host; the kernel supplies the CPUID values and the measurements.
//!
//! A calibration reports its uncertainty as a bound, not a standard deviation: the half-width
//! of the window in which the reference's reading changed, plus one reference period for the
//! start, or the spread between repeated measurements if that is larger. A result outside
//! [`PLAUSIBLE_HZ`] is refused (a PIT that is gated off answers at once, and once gave
//! 0.012 MHz): the next source is used.

/// The PIT input clock, in Hz.
pub const PIT_HZ: u64 = 1_193_182;

/// How the frequency was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscMethod {
    /// CPUID 0x40000010 EAX (TSC kHz), from the hypervisor.
    HypervisorLeaf,
    /// CPUID 0x15: crystal Hz (ECX) x EBX / EAX.
    Cpuid15h,
    /// CPUID 0x15 ratio without a crystal frequency; the base frequency of CPUID 0x16 is the
    /// TSC frequency (as Linux derives it).
    Cpuid15hWith16h,
    /// Counted against the HPET's main counter (ACPI HPET table).
    HpetCalibration,
    /// Counted against the ACPI PM timer (FADT `PM_TMR_BLK`).
    PmTimerCalibration,
    /// Counted against the PIT.
    PitCalibration,
}

impl TscMethod {
    pub fn name(self) -> &'static str {
        match self {
            TscMethod::HypervisorLeaf => "hypervisor-leaf",
            TscMethod::Cpuid15h => "cpuid-15h",
            TscMethod::Cpuid15hWith16h => "cpuid-15h+16h",
            TscMethod::HpetCalibration => "hpet-calibration",
            TscMethod::PmTimerCalibration => "pm-timer-calibration",
            TscMethod::PitCalibration => "pit-calibration",
        }
    }
}

/// A TSC frequency and how it was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TscFrequency {
    pub hz: u64,
    pub method: TscMethod,
    /// Bound on the error (calibration only; CPUID values are exact by definition).
    pub uncertainty_hz: Option<u64>,
    /// Measurements behind a calibration.
    pub samples: u32,
}

impl TscFrequency {
    /// Uncertainty in parts per million, when there is one.
    pub fn uncertainty_ppm(&self) -> Option<u64> {
        self.uncertainty_hz
            .map(|u| (u128::from(u) * 1_000_000 / u128::from(self.hz.max(1))) as u64)
    }
}

/// From CPUID 0x15 (`[eax, ebx, ecx, edx]`) and the base MHz of CPUID 0x16 EAX (0 if absent).
pub fn from_cpuid(leaf15: [u32; 4], base_mhz: u32) -> Option<TscFrequency> {
    let [denominator, numerator, crystal_hz, _] = leaf15;
    if denominator == 0 || numerator == 0 {
        return None;
    }
    let exact = |hz, method| {
        Some(TscFrequency {
            hz,
            method,
            uncertainty_hz: None,
            samples: 0,
        })
    };
    if crystal_hz != 0 {
        let hz = u64::from(crystal_hz) * u64::from(numerator) / u64::from(denominator);
        return exact(hz, TscMethod::Cpuid15h);
    }
    if base_mhz != 0 {
        return exact(u64::from(base_mhz) * 1_000_000, TscMethod::Cpuid15hWith16h);
    }
    None
}

/// From the hypervisor timing leaf: `max_leaf` is CPUID 0x40000000 EAX, `tsc_khz` is CPUID
/// 0x40000010 EAX.
pub fn from_hypervisor_leaf(max_leaf: u32, tsc_khz: u32) -> Option<TscFrequency> {
    if max_leaf < 0x4000_0010 || tsc_khz == 0 {
        return None;
    }
    Some(TscFrequency {
        hz: u64::from(tsc_khz) * 1000,
        method: TscMethod::HypervisorLeaf,
        uncertainty_hz: Some(500), // the leaf is rounded to a kHz
        samples: 0,
    })
}

/// TSC rates a calibration may give: a TSC outside them (a reference clock that is absent,
/// gated off, or counts at another rate than it should) gives a result that is refused.
pub const PLAUSIBLE_HZ: core::ops::RangeInclusive<u64> = 50_000_000..=20_000_000_000;

/// One interval of a reference clock timed with the TSC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefMeasurement {
    /// Reference periods counted.
    pub ref_ticks: u64,
    /// TSC ticks that surely passed (lower bound).
    pub tsc_min: u64,
    /// TSC ticks that at most passed (upper bound).
    pub tsc_max: u64,
}

/// Combines PIT measurements (see [`from_reference`]).
pub fn from_pit(measurements: &[RefMeasurement]) -> Option<TscFrequency> {
    from_reference(TscMethod::PitCalibration, PIT_HZ, measurements)
}

/// Combines measurements against a reference clock of `ref_hz`: the median frequency, with
/// the larger of the per-measurement error bound and the spread between measurements as the
/// uncertainty. `None` without a usable measurement.
pub fn from_reference(
    method: TscMethod,
    ref_hz: u64,
    measurements: &[RefMeasurement],
) -> Option<TscFrequency> {
    const MAX: usize = 16;
    let mut freqs = [0u64; MAX];
    let mut n = 0;
    let mut worst_error = 0u64;
    for m in measurements.iter().take(MAX) {
        if m.ref_ticks == 0 || m.tsc_max == 0 || m.tsc_min > m.tsc_max || ref_hz == 0 {
            continue;
        }
        let scale =
            |tsc: u64| (u128::from(tsc) * u128::from(ref_hz) / u128::from(m.ref_ticks)) as u64;
        let mid = m.tsc_min / 2 + m.tsc_max / 2;
        let tsc_per_ref_tick = m.tsc_max / m.ref_ticks;
        freqs[n] = scale(mid);
        n += 1;
        worst_error = worst_error.max(scale((m.tsc_max - m.tsc_min) / 2 + tsc_per_ref_tick));
    }
    if n == 0 {
        return None;
    }
    let freqs = &mut freqs[..n];
    freqs.sort_unstable();
    let median = if n % 2 == 1 {
        freqs[n / 2]
    } else {
        freqs[n / 2 - 1] / 2 + freqs[n / 2] / 2
    };
    let spread = freqs.iter().map(|&f| f.abs_diff(median)).max().unwrap_or(0);
    Some(TscFrequency {
        hz: median,
        method,
        uncertainty_hz: Some(worst_error.max(spread)),
        samples: n as u32,
    })
}

/// Refuses a calibration outside [`PLAUSIBLE_HZ`], or one whose uncertainty is larger than the
/// rate itself (it says nothing), saying why. A large uncertainty alone is kept and reported:
/// under emulation without `-icount` every reference clock is that noisy.
pub fn plausible(f: &TscFrequency) -> Result<(), alloc::string::String> {
    if !PLAUSIBLE_HZ.contains(&f.hz) {
        return Err(alloc::format!(
            "{} is not a plausible TSC rate ({} to {})",
            Mhz(f.hz),
            Mhz(*PLAUSIBLE_HZ.start()),
            Mhz(*PLAUSIBLE_HZ.end())
        ));
    }
    if f.uncertainty_hz.is_some_and(|u| u > f.hz) {
        return Err(alloc::format!(
            "{} +/- {} ppm: the measurements disagree too much",
            Mhz(f.hz),
            f.uncertainty_ppm().unwrap_or(0)
        ));
    }
    Ok(())
}

/// Whether two results agree within their uncertainties (an exact value has none; 0.1% is
/// allowed on top for a CPUID value rounded to MHz).
pub fn agree(a: &TscFrequency, b: &TscFrequency) -> bool {
    let slack = a.hz.max(b.hz) / 1000;
    a.hz.abs_diff(b.hz) <= a.uncertainty_hz.unwrap_or(0) + b.uncertainty_hz.unwrap_or(0) + slack
}

/// Formats Hz as MHz with three decimals, e.g. `2994.123 MHz`.
pub struct Mhz(pub u64);

impl core::fmt::Display for Mhz {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let khz = (self.0 + 500) / 1000;
        write!(f, "{}.{:03} MHz", khz / 1000, khz % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuid_15h_with_crystal() {
        // Skylake client: 24 MHz crystal, ratio 250/2 -> 3.0 GHz... (ECX is 0 on Skylake
        // client; Ice Lake and later report 38.4 MHz). Ice Lake-like: 38.4 MHz x 78 / 2.
        let f = from_cpuid([2, 78, 38_400_000, 0], 0).unwrap();
        assert_eq!(f.hz, 1_497_600_000);
        assert_eq!(f.method, TscMethod::Cpuid15h);
        assert_eq!(f.uncertainty_hz, None);
    }

    #[test]
    fn cpuid_15h_without_crystal_uses_16h() {
        let f = from_cpuid([2, 250, 0, 0], 3000).unwrap();
        assert_eq!(f.hz, 3_000_000_000);
        assert_eq!(f.method, TscMethod::Cpuid15hWith16h);
        assert_eq!(from_cpuid([2, 250, 0, 0], 0), None);
        assert_eq!(from_cpuid([0, 0, 0, 0], 3000), None);
    }

    #[test]
    fn hypervisor_leaf_needs_the_leaf_to_exist() {
        assert_eq!(from_hypervisor_leaf(0x4000_0001, 2_000_000), None);
        assert_eq!(from_hypervisor_leaf(0x4000_0010, 0), None);
        assert_eq!(
            from_hypervisor_leaf(0x4000_0010, 2_100_000).unwrap().hz,
            2_100_000_000
        );
    }

    #[test]
    fn pit_calibration_median_and_uncertainty() {
        // A 3 GHz TSC, 11932 PIT ticks (10 ms): 30_000_000 TSC ticks, polls every 3000 ticks.
        let exact = 3_000_000_000u64;
        let ticks = 11_932u64;
        let tsc = (u128::from(exact) * u128::from(ticks) / u128::from(PIT_HZ)) as u64;
        let m = |jitter: u64| RefMeasurement {
            ref_ticks: ticks,
            tsc_min: tsc - 3000 + jitter,
            tsc_max: tsc + jitter,
        };
        let f = from_pit(&[m(0), m(1000), m(400), m(200), m(600)]).unwrap();
        assert_eq!(f.samples, 5);
        assert_eq!(f.method, TscMethod::PitCalibration);
        let err = f.hz.abs_diff(exact);
        let bound = f.uncertainty_hz.unwrap();
        assert!(err <= bound, "error {err} exceeds reported bound {bound}");
        // The bound is tight: about one PIT period (84 ppm at 10 ms) plus the poll window.
        assert!(
            f.uncertainty_ppm().unwrap() < 200,
            "{:?}",
            f.uncertainty_ppm()
        );
    }

    #[test]
    fn pit_spread_dominates_when_measurements_disagree() {
        let m = |tsc: u64| RefMeasurement {
            ref_ticks: 11_932,
            tsc_min: tsc - 10,
            tsc_max: tsc,
        };
        let f = from_pit(&[m(30_000_000), m(30_300_000), m(29_700_000)]).unwrap();
        // 1% apart: the uncertainty covers the spread.
        assert!(f.uncertainty_ppm().unwrap() >= 9_000);
    }

    #[test]
    fn pit_rejects_nonsense() {
        assert_eq!(from_pit(&[]), None);
        assert_eq!(
            from_pit(&[RefMeasurement {
                ref_ticks: 0,
                tsc_min: 1,
                tsc_max: 2
            }]),
            None
        );
        assert_eq!(
            from_pit(&[RefMeasurement {
                ref_ticks: 10,
                tsc_min: 5,
                tsc_max: 2
            }]),
            None
        );
    }

    #[test]
    fn implausible_rates_are_refused_and_sources_compared() {
        // pit=off under QEMU: the PIT "answers" at once, and the rate is absurd.
        let m = RefMeasurement {
            ref_ticks: 11_932,
            tsc_min: 90,
            tsc_max: 110,
        };
        let gated = from_pit(&[m]).unwrap();
        assert!(
            plausible(&gated)
                .unwrap_err()
                .contains("not a plausible TSC rate")
        );
        // The PM timer: 35795 ticks (10 ms) of a 1 GHz TSC, as under -icount shift=0.
        let pm = RefMeasurement {
            ref_ticks: 35_795,
            tsc_min: 9_999_900,
            tsc_max: 10_000_200,
        };
        let f = from_reference(TscMethod::PmTimerCalibration, 3_579_545, &[pm]).unwrap();
        assert!(plausible(&f).is_ok());
        assert_eq!(f.method.name(), "pm-timer-calibration");
        assert!(f.hz.abs_diff(1_000_000_000) < 1_000_000, "{}", f.hz);
        let exact = TscFrequency {
            hz: 1_000_000_000,
            method: TscMethod::Cpuid15h,
            uncertainty_hz: None,
            samples: 0,
        };
        assert!(agree(&f, &exact));
        let off = TscFrequency {
            hz: 1_100_000_000,
            ..exact
        };
        assert!(!agree(&f, &off));
        let noisy = TscFrequency {
            uncertainty_hz: Some(1_000_000_001),
            ..exact
        };
        assert!(plausible(&noisy).unwrap_err().contains("disagree too much"));
    }

    #[test]
    fn mhz_formatting() {
        extern crate std;
        assert_eq!(std::format!("{}", Mhz(2_994_123_456)), "2994.123 MHz");
        assert_eq!(std::format!("{}", Mhz(1_000_000_000)), "1000.000 MHz");
    }
}

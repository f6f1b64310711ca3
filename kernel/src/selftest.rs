//! The `selftest` boot mode: certifies a real PMU on the user's hardware or KVM, the way
//! kvm-unit-tests' `x86/pmu.c` certifies a hypervisor's virtual PMU.
//!
//! Each check produces one `selftest` record with `pass`, `fail` or `skip` and a detail; a
//! `selftest_summary` record closes the list. Without counters (QEMU's TCG) every check is a
//! skip with its reason, and the run succeeds: nothing was tested, nothing failed.
//!
//! The plan (which checks apply to which PMU) is pure and host-tested; running the checks needs
//! the machine (`run`, bare metal only).

use alloc::string::String;
use alloc::vec::Vec;

use events::pmu::{PmuCaps, PmuKind};

/// The checks, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Every GP counter counts the instructions of a known loop within [10N, 10.2N].
    GpInstructions,
    /// Every GP counter counts the loop's branches within [N, 1.02N].
    GpBranches,
    /// Fixed counters: instructions (FC0) in range, core cycles (FC1) nonzero.
    FixedCounters,
    /// RDPMC of a GP counter agrees with the MSR read.
    RdpmcGp,
    /// RDPMC of a fixed counter (ECX bit 30) agrees with the MSR read.
    RdpmcFixed,
    /// The "fast" RDPMC (ECX bit 31) returns the low 32 bits (Intel; may #GP on newer parts).
    RdpmcFast,
    /// A legacy write (IA32_PMCx) keeps 32 bits sign-extended.
    LegacyWrite,
    /// A full-width write (IA32_A_PMCx) keeps the value to the counter width.
    FullWidthWrite,
    /// Overflow sets the status bit and raises no PMI without INT.
    OverflowStatus,
    /// Overflow with INT raises a PMI, which the kernel acknowledges.
    OverflowPmi,
    /// cmask = 2 on instructions counts fewer than without it.
    CounterMask,
    /// RDPMC from ring 3 with CR4.PCE set and clear (needs ring-3 tasks).
    RdpmcRing3,
}

impl Check {
    pub const ALL: [Check; 12] = [
        Check::GpInstructions,
        Check::GpBranches,
        Check::FixedCounters,
        Check::RdpmcGp,
        Check::RdpmcFixed,
        Check::RdpmcFast,
        Check::LegacyWrite,
        Check::FullWidthWrite,
        Check::OverflowStatus,
        Check::OverflowPmi,
        Check::CounterMask,
        Check::RdpmcRing3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::GpInstructions => "gp-instructions",
            Check::GpBranches => "gp-branches",
            Check::FixedCounters => "fixed-counters",
            Check::RdpmcGp => "rdpmc-gp",
            Check::RdpmcFixed => "rdpmc-fixed",
            Check::RdpmcFast => "rdpmc-fast",
            Check::LegacyWrite => "legacy-write",
            Check::FullWidthWrite => "full-width-write",
            Check::OverflowStatus => "overflow-status",
            Check::OverflowPmi => "overflow-pmi",
            Check::CounterMask => "cmask",
            Check::RdpmcRing3 => "rdpmc-ring3",
        }
    }
}

/// Outcome of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass(String),
    Fail(String),
    Skip(String),
}

impl Outcome {
    pub fn result(&self) -> &'static str {
        match self {
            Outcome::Pass(_) => "pass",
            Outcome::Fail(_) => "fail",
            Outcome::Skip(_) => "skip",
        }
    }
    pub fn detail(&self) -> &str {
        match self {
            Outcome::Pass(d) | Outcome::Fail(d) | Outcome::Skip(d) => d,
        }
    }
}

/// Why `check` cannot run on this PMU, or `None` if it applies. `backend_reason` is discovery's
/// sentence, quoted when there are no counters.
pub fn skip_reason(check: Check, caps: &PmuCaps, backend_reason: &str) -> Option<String> {
    use alloc::format;
    if caps.kind == PmuKind::TscOnly {
        return Some(format!("no programmable counters: {backend_reason}"));
    }
    let intel = caps.intel_version().is_some();
    match check {
        Check::RdpmcRing3 => Some("needs ring-3 tasks, which this kernel does not run yet".into()),
        Check::FixedCounters | Check::RdpmcFixed if caps.fixed_mask == 0 => {
            Some("this PMU has no fixed counters".into())
        }
        Check::RdpmcFast | Check::LegacyWrite if !intel => {
            Some("an Intel-only behaviour; this is an AMD PMU".into())
        }
        Check::FullWidthWrite if intel && !caps.full_width_write => {
            Some("PERF_CAPABILITIES.FW_WRITE is clear: no full-width counter writes".into())
        }
        Check::OverflowStatus
            if caps.kind == PmuKind::AmdLegacy || caps.kind == PmuKind::AmdExtCore =>
        {
            Some("no overflow status register before AMD PerfMonV2".into())
        }
        Check::OverflowStatus if caps.intel_version() == Some(1) => {
            Some("architectural PMU v1 has no global status register".into())
        }
        _ => None,
    }
}

/// The skip reasons for every check on this PMU (`None`: the check runs).
pub fn plan(caps: &PmuCaps, backend_reason: &str) -> Vec<(Check, Option<String>)> {
    Check::ALL
        .iter()
        .map(|&c| (c, skip_reason(c, caps, backend_reason)))
        .collect()
}

/// Totals for the summary record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Summary {
    pub fn add(&mut self, o: &Outcome) {
        match o {
            Outcome::Pass(_) => self.passed += 1,
            Outcome::Fail(_) => self.failed += 1,
            Outcome::Skip(_) => self.skipped += 1,
        }
    }
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.skipped
    }
}

/// Whether `count` lies in [lo, hi] (the ranges kvm-unit-tests uses: 10N..10.2N etc.).
pub fn in_range(count: u64, lo: u64, hi: u64) -> bool {
    (lo..=hi).contains(&count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::cpu::{CpuModel, Vendor};

    #[test]
    fn without_counters_every_check_skips_with_the_reason() {
        let caps = PmuCaps::tsc_only(Vendor::Intel, None);
        let plan = plan(&caps, "CPUID.0AH reports version 0");
        assert_eq!(plan.len(), Check::ALL.len());
        for (check, skip) in plan {
            let reason = skip.unwrap_or_else(|| panic!("{} should skip", check.name()));
            assert!(reason.contains("CPUID.0AH reports version 0"), "{reason}");
        }
    }

    #[test]
    fn a_full_intel_pmu_runs_everything_but_ring3() {
        let caps = PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-55").unwrap());
        let running: Vec<_> = plan(&caps, "")
            .into_iter()
            .filter(|(_, s)| s.is_none())
            .map(|(c, _)| c)
            .collect();
        assert_eq!(running.len(), Check::ALL.len() - 1);
        assert!(!running.contains(&Check::RdpmcRing3));
    }

    #[test]
    fn amd_and_old_intel_skip_what_they_lack() {
        let zen3 = PmuCaps::nominal(CpuModel::parse("AuthenticAMD-25-21").unwrap());
        let skipped: Vec<_> = plan(&zen3, "")
            .into_iter()
            .filter(|(_, s)| s.is_some())
            .map(|(c, _)| c)
            .collect();
        for c in [
            Check::FixedCounters,
            Check::RdpmcFixed,
            Check::RdpmcFast,
            Check::LegacyWrite,
            Check::OverflowStatus,
        ] {
            assert!(skipped.contains(&c), "{} should skip on Zen 3", c.name());
        }
        assert!(
            !skipped.contains(&Check::FullWidthWrite),
            "AMD writes are full width"
        );
        let v1 = PmuCaps::from_intel_cpuid([0x0728_0201, 0, 0, 0], false, None);
        let skipped: Vec<_> = plan(&v1, "")
            .into_iter()
            .filter(|(_, s)| s.is_some())
            .map(|(c, _)| c)
            .collect();
        assert!(
            skipped.contains(&Check::OverflowStatus) && skipped.contains(&Check::FullWidthWrite)
        );
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Check::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Check::ALL.len());
    }
}

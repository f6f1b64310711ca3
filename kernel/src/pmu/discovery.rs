//! PMU discovery: what CPUID advertises, what the MSRs confirm, and which backend to use.
//!
//! Intel: CPUID 0x0A (version, GP count and width, event-availability mask, fixed count and width,
//! the v5 fixed-counter bitmask), leaf 0x23 where present (GP and fixed counter bitmaps), PDCM
//! (CPUID.1:ECX[15]) -> IA32_PERF_CAPABILITIES (FW_WRITE), the hybrid core type (CPUID 0x1A).
//! AMD: CPUID 0x80000001 ECX[23] (PerfCtrExtCore), 0x80000022 (PerfMonV2 and its counter count).
//!
//! Then the MSRs a backend needs are probed with #GP-safe reads: a hypervisor may advertise
//! counters it does not emulate. If a probe faults, discovery falls back to the TSC-only backend
//! and says which register faulted.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use events::cpu::{CpuModel, Vendor};
use events::pmu::{CoreType, PmuCaps, PmuKind};

use super::msr::{Msr, MsrFault};
use super::regs;

/// CPUID as a function of (leaf, subleaf) -> [eax, ebx, ecx, edx], so tests can feed recorded
/// leaves.
pub type Cpuid<'a> = &'a dyn Fn(u32, u32) -> [u32; 4];

/// The backend discovery chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    IntelArch,
    Amd,
    TscOnly,
}

/// One MSR probe and its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    pub msr: u32,
    pub result: Result<u64, MsrFault>,
}

/// Everything discovery found.
#[derive(Clone, Debug)]
pub struct Discovery {
    pub caps: PmuCaps,
    pub choice: BackendChoice,
    /// Why this backend (one sentence).
    pub reason: String,
    /// Raw CPUID 0x0A (Intel) or zeros.
    pub leaf_0a: [u32; 4],
    /// IA32_PERF_CAPABILITIES, when PDCM says it exists and it could be read.
    pub perf_capabilities: Option<u64>,
    /// CPUID 0x23 was used for the counter bitmaps.
    pub used_leaf_23: bool,
    /// AMD CPUID 0x80000001 ECX[23].
    pub amd_perfctr_core: bool,
    /// AMD PerfMonV2 core counters, when present.
    pub amd_perfmon_v2: Option<u8>,
    /// The MSR probes, in order.
    pub probes: Vec<Probe>,
    /// CPUID reported more counters than the kernel drives: what it reported and what is used.
    pub limited: Option<String>,
}

/// The CPU model event tables are keyed by, from CPUID 1: with the stepping, so Intel's tables
/// split by stepping (`GenuineIntel-6-55-[01234]` Skylake-SP, `-[5-F]` Cascade Lake and Cooper
/// Lake) match; a table without one matches every stepping.
pub fn cpu_model(vendor: Vendor, family: u8, model: u8, stepping: u8) -> CpuModel {
    CpuModel {
        stepping: Some(u32::from(stepping)),
        ..CpuModel::new(vendor, u32::from(family), u32::from(model))
    }
}

/// Runs discovery. `cpu` is the CPU model (from CPUID 1), `max_leaf` / `max_ext_leaf` the
/// highest CPUID leaves.
pub fn discover(cpuid: Cpuid<'_>, msr: &mut dyn Msr, cpu: Option<CpuModel>) -> Discovery {
    let max_leaf = cpuid(0, 0)[0];
    let max_ext = cpuid(0x8000_0000, 0)[0];
    let vendor = cpu.map(|c| c.vendor);
    match vendor {
        Some(Vendor::Intel) => discover_intel(cpuid, msr, cpu, max_leaf),
        Some(Vendor::Amd) => discover_amd(cpuid, msr, cpu, max_ext),
        None => tsc_only(
            Vendor::Intel,
            cpu,
            "the CPU vendor is neither Intel nor AMD".into(),
            [0; 4],
            Vec::new(),
        ),
    }
}

fn tsc_only(
    vendor: Vendor,
    cpu: Option<CpuModel>,
    reason: String,
    leaf_0a: [u32; 4],
    probes: Vec<Probe>,
) -> Discovery {
    Discovery {
        caps: PmuCaps::tsc_only(vendor, cpu),
        choice: BackendChoice::TscOnly,
        reason,
        leaf_0a,
        perf_capabilities: None,
        used_leaf_23: false,
        amd_perfctr_core: false,
        amd_perfmon_v2: None,
        probes,
        limited: None,
    }
}

/// Reads each MSR; returns the probes and the first that faulted.
fn probe_all(msr: &mut dyn Msr, addrs: &[u32]) -> (Vec<Probe>, Option<Probe>) {
    let probes: Vec<Probe> = addrs
        .iter()
        .map(|&a| Probe {
            msr: a,
            result: msr.read(a),
        })
        .collect();
    let failed = probes.iter().find(|p| p.result.is_err()).copied();
    (probes, failed)
}

fn discover_intel(
    cpuid: Cpuid<'_>,
    msr: &mut dyn Msr,
    cpu: Option<CpuModel>,
    max_leaf: u32,
) -> Discovery {
    let leaf_0a = if max_leaf >= 0x0a {
        cpuid(0x0a, 0)
    } else {
        [0; 4]
    };
    if leaf_0a[0] & 0xff == 0 {
        return tsc_only(
            Vendor::Intel,
            cpu,
            "CPUID.0AH reports architectural performance monitoring version 0 (no counters)".into(),
            leaf_0a,
            Vec::new(),
        );
    }
    let pdcm = cpuid(1, 0)[2] & (1 << 15) != 0;
    let mut probes = Vec::new();
    let perf_capabilities = if pdcm {
        let result = msr.read(regs::intel::PERF_CAPABILITIES);
        probes.push(Probe {
            msr: regs::intel::PERF_CAPABILITIES,
            result,
        });
        result.ok()
    } else {
        None
    };
    let fw_write = perf_capabilities.is_some_and(|c| c & regs::intel::CAP_FW_WRITE != 0);
    let mut caps = PmuCaps::from_intel_cpuid(leaf_0a, fw_write, cpu);

    // Leaf 0x23 (newest parts) gives exact counter bitmaps.
    let mut used_leaf_23 = false;
    if max_leaf >= 0x23 && cpuid(0x23, 0)[0] & 0b10 != 0 {
        let [gp_bitmap, fixed_bitmap, _, _] = cpuid(0x23, 1);
        if gp_bitmap != 0 {
            // The backends use counters 0..n; a hole in the bitmap limits n to the first hole.
            caps.gp_counters = gp_bitmap.trailing_ones() as u8;
            caps.fixed_mask = fixed_bitmap;
            used_leaf_23 = true;
        }
    }
    // More counters than the kernel drives: the ones it knows are used, the rest left alone.
    let reported = (caps.gp_counters, caps.fixed_mask);
    caps.gp_counters = caps.gp_counters.min(regs::intel::GP_MAX);
    caps.fixed_mask &= regs::intel::FIXED_SUPPORTED;
    let limited = (reported != (caps.gp_counters, caps.fixed_mask)).then(|| {
        format!(
            "CPUID reports {} GP counters and fixed mask {:#x}; the kernel drives {} GP and fixed mask {:#x} (the rest are not used)",
            reported.0, reported.1, caps.gp_counters, caps.fixed_mask
        )
    });
    // Hybrid parts: CPUID.7.0:EDX[15], core type in CPUID 0x1A EAX[31:24].
    if max_leaf >= 0x1a && cpuid(7, 0)[3] & (1 << 15) != 0 {
        caps.core_type = CoreType::from_cpuid((cpuid(0x1a, 0)[0] >> 24) as u8);
    }

    let mut addrs = Vec::new();
    if caps.gp_counters > 0 {
        addrs.push(regs::intel::PERFEVTSEL0);
        addrs.push(regs::intel::PMC0);
        if fw_write {
            addrs.push(regs::intel::A_PMC0);
        }
    }
    if caps.intel_version().is_some_and(|v| v >= 2) {
        addrs.extend([
            regs::intel::PERF_GLOBAL_CTRL,
            regs::intel::PERF_GLOBAL_STATUS,
        ]);
        if caps.fixed_mask != 0 {
            addrs.extend([
                regs::intel::FIXED_CTR_CTRL,
                regs::intel::FIXED_CTR0 + caps.fixed_mask.trailing_zeros(),
            ]);
        }
    }
    let (more, failed) = probe_all(msr, &addrs);
    probes.extend(more);
    if let Some(p) = failed {
        return Discovery {
            perf_capabilities,
            ..tsc_only(
                Vendor::Intel,
                cpu,
                format!(
                    "CPUID advertises architectural PMU v{} but MSR {:#x} faults ({:?}): falling back to the TSC",
                    leaf_0a[0] & 0xff,
                    p.msr,
                    p.result.err().unwrap_or(MsrFault::GeneralProtection)
                ),
                leaf_0a,
                probes,
            )
        };
    }
    if caps.gp_counters == 0 && caps.fixed_mask == 0 {
        return tsc_only(
            Vendor::Intel,
            cpu,
            "CPUID.0AH reports no counters".into(),
            leaf_0a,
            probes,
        );
    }
    let reason = format!(
        "CPUID.0AH: architectural PMU v{}, {} GP x {} bits, fixed mask {:#x} x {} bits{}; full-width writes {}{}",
        leaf_0a[0] & 0xff,
        caps.gp_counters,
        caps.gp_width,
        caps.fixed_mask,
        caps.fixed_width,
        if used_leaf_23 {
            " (counter bitmaps from CPUID.23H)"
        } else {
            ""
        },
        if fw_write {
            "yes"
        } else {
            "no (PERF_CAPABILITIES.FW_WRITE clear or absent)"
        },
        limited
            .as_ref()
            .map(|l| format!("; {l}"))
            .unwrap_or_default()
    );
    Discovery {
        caps,
        choice: BackendChoice::IntelArch,
        reason,
        leaf_0a,
        perf_capabilities,
        used_leaf_23,
        amd_perfctr_core: false,
        amd_perfmon_v2: None,
        probes,
        limited,
    }
}

fn discover_amd(
    cpuid: Cpuid<'_>,
    msr: &mut dyn Msr,
    cpu: Option<CpuModel>,
    max_ext: u32,
) -> Discovery {
    let perfctr_core = max_ext >= 0x8000_0001 && cpuid(0x8000_0001, 0)[2] & (1 << 23) != 0;
    let perfmon_v2 = if max_ext >= 0x8000_0022 {
        let [eax, ebx, _, _] = cpuid(0x8000_0022, 0);
        (eax & 1 != 0).then_some((ebx & 0xf) as u8)
    } else {
        None
    };
    let mut caps = PmuCaps::amd(perfctr_core, perfmon_v2, cpu);
    let reported = caps.gp_counters;
    caps.gp_counters = caps.gp_counters.min(regs::amd::CORE_MAX);
    let limited = (reported != caps.gp_counters).then(|| {
        format!(
            "CPUID reports {reported} core counters; the kernel drives {} (the rest are not used)",
            caps.gp_counters
        )
    });
    let (ctl0, ctr0) = if caps.kind == PmuKind::AmdLegacy {
        (regs::amd::PERF_CTL0, regs::amd::PERF_CTR0)
    } else {
        (regs::amd::EXT_CTL0, regs::amd::EXT_CTR0)
    };
    let mut addrs = alloc::vec![ctl0, ctr0];
    if perfmon_v2.is_some() {
        addrs.extend([regs::amd::GLOBAL_CTL, regs::amd::GLOBAL_STATUS]);
    }
    let (probes, failed) = probe_all(msr, &addrs);
    let mut d = Discovery {
        caps,
        choice: BackendChoice::Amd,
        reason: format!(
            "{}: {} counters x 48 bits{}",
            caps.kind,
            caps.gp_counters,
            limited
                .as_ref()
                .map(|l| format!("; {l}"))
                .unwrap_or_default()
        ),
        leaf_0a: [0; 4],
        perf_capabilities: None,
        used_leaf_23: false,
        amd_perfctr_core: perfctr_core,
        amd_perfmon_v2: perfmon_v2,
        probes,
        limited,
    };
    // AMD's legacy counters have no CPUID bit at all, and an emulator without a PMU (QEMU's TCG)
    // reads unknown MSRs as 0 and drops writes instead of faulting. So the counter must hold a
    // written value before it is believed.
    if failed.is_none() && !holds_a_written_value(msr, ctr0) {
        let probes = core::mem::take(&mut d.probes);
        let reason = format!(
            "{} counters expected but PERF_CTR {ctr0:#x} does not keep a written value (an emulator without a PMU?): falling back to the TSC",
            caps.kind
        );
        return Discovery {
            amd_perfctr_core: perfctr_core,
            amd_perfmon_v2: perfmon_v2,
            ..tsc_only(Vendor::Amd, cpu, reason, [0; 4], probes)
        };
    }
    if let Some(p) = failed {
        let reason = format!(
            "{} counters expected but MSR {:#x} faults ({:?}): falling back to the TSC",
            caps.kind,
            p.msr,
            p.result.err().unwrap_or(MsrFault::GeneralProtection)
        );
        let probes = core::mem::take(&mut d.probes);
        d = Discovery {
            amd_perfctr_core: perfctr_core,
            amd_perfmon_v2: perfmon_v2,
            ..tsc_only(Vendor::Amd, cpu, reason, [0; 4], probes)
        };
    }
    d
}

/// Writes a pattern to a counter, reads it back, and zeroes the counter again.
fn holds_a_written_value(msr: &mut dyn Msr, counter: u32) -> bool {
    const PATTERN: u64 = 0x5a5a_1234;
    let kept = msr.write(counter, PATTERN).is_ok() && msr.read(counter) == Ok(PATTERN);
    let _ = msr.write(counter, 0);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::msr::{Access, RecordingMsr};
    use alloc::collections::BTreeMap;

    /// MSRs that exist (with values); everything else faults.
    struct Msrs(BTreeMap<u32, u64>);
    impl Msr for Msrs {
        fn read(&mut self, msr: u32) -> Result<u64, MsrFault> {
            self.0.get(&msr).copied().ok_or(MsrFault::GeneralProtection)
        }
        fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
            self.0.insert(msr, value);
            Ok(())
        }
        fn rdpmc(&mut self, _: u32) -> Result<u64, MsrFault> {
            Err(MsrFault::InvalidOpcode)
        }
    }

    fn msrs(list: &[u32]) -> Msrs {
        Msrs(list.iter().map(|&m| (m, 0)).collect())
    }

    fn skl() -> Option<CpuModel> {
        Some(CpuModel::new(Vendor::Intel, 6, 0x5e))
    }

    /// Skylake-like CPUID: max leaf 0x16, PDCM, leaf 0x0A v4 4x48 GP, 3x48 fixed.
    fn skylake_cpuid(leaf: u32, _sub: u32) -> [u32; 4] {
        match leaf {
            0 => [0x16, 0, 0, 0],
            1 => [0x506e3, 0, 1 << 15, 0],
            0x0a => [0x0730_0404, 0, 0, 0x0000_0603],
            0x8000_0000 => [0x8000_0008, 0, 0, 0],
            _ => [0; 4],
        }
    }

    const INTEL_MSRS: [u32; 9] = [0x345, 0x186, 0xc1, 0x4c1, 0x38f, 0x38e, 0x38d, 0x309, 0x390];

    #[test]
    fn intel_v4_with_full_width_writes() {
        let mut m = msrs(&INTEL_MSRS);
        m.0.insert(0x345, regs::intel::CAP_FW_WRITE | 0x4);
        let mut rec = RecordingMsr::new(m);
        let d = discover(&skylake_cpuid, &mut rec, skl());
        assert_eq!(d.choice, BackendChoice::IntelArch, "{}", d.reason);
        assert_eq!(d.caps.kind, PmuKind::IntelArch { version: 4 });
        assert!(d.caps.full_width_write);
        assert_eq!((d.caps.gp_counters, d.caps.fixed_mask), (4, 0b111));
        assert!(rec.writes().is_empty(), "discovery only reads");
        assert!(
            rec.log.contains(&Access::Read(0x4c1)),
            "full-width alias probed"
        );
    }

    #[test]
    fn more_counters_than_the_kernel_drives_are_used_as_far_as_it_does_never_refused_whole() {
        // A CPU whose CPUID reports 10 GP counters and fixed counters 0-6 (v5, ECX bitmap).
        let big = |leaf: u32, sub: u32| match leaf {
            0x0a => [0x0830_0a05, 0, 0x7f, 0x0000_0607],
            _ => skylake_cpuid(leaf, sub),
        };
        let mut m = msrs(&INTEL_MSRS);
        m.0.insert(0x345, regs::intel::CAP_FW_WRITE);
        let d = discover(&big, &mut m, skl());
        assert_eq!(d.choice, BackendChoice::IntelArch, "{}", d.reason);
        assert_eq!((d.caps.gp_counters, d.caps.fixed_mask), (8, 0b1111));
        let limited = d.limited.as_deref().unwrap();
        assert!(
            limited.contains("10 GP counters and fixed mask 0x7f")
                && limited.contains("drives 8 GP and fixed mask 0xf"),
            "{limited}"
        );
        assert!(d.reason.contains(limited));
        // The backend resets exactly the counters the kernel drives: every MSR it writes is one
        // of the architectural ranges (which the MSR door allows), none past them.
        let mut rec = RecordingMsr::new(m);
        let mut pmu = crate::pmu::intel::IntelArchPmu::new(d.caps);
        crate::pmu::backend::PmuBackend::reset(&mut pmu, &mut rec).unwrap();
        for w in rec.writes() {
            assert!(
                (0xc1..=0xc8).contains(&w.0)
                    || (0x186..=0x18d).contains(&w.0)
                    || (0x4c1..=0x4c8).contains(&w.0)
                    || (0x309..=0x30c).contains(&w.0)
                    || (0x38d..=0x392).contains(&w.0),
                "{:#x}",
                w.0
            );
        }
        // An AMD PerfMonV2 part reporting 15 core counters gets the six the kernel drives.
        let amd = |leaf: u32, _: u32| match leaf {
            0 => [0x10, 0, 0, 0],
            0x8000_0000 => [0x8000_0022, 0, 0, 0],
            0x8000_0001 => [0, 0, 1 << 23, 0],
            0x8000_0022 => [1, 15, 0, 0],
            _ => [0; 4],
        };
        let mut a = msrs(&[0xc001_0200, 0xc001_0201, 0xc000_0301, 0xc000_0300]);
        let d = discover(&amd, &mut a, Some(CpuModel::new(Vendor::Amd, 0x19, 0x11)));
        assert_eq!(d.choice, BackendChoice::Amd, "{}", d.reason);
        assert_eq!(d.caps.gp_counters, 6);
        assert!(
            d.reason
                .contains("CPUID reports 15 core counters; the kernel drives 6"),
            "{}",
            d.reason
        );
    }

    #[test]
    fn version_0_is_tsc_only() {
        let tcg = |leaf: u32, _: u32| match leaf {
            0 => [0xd, 0, 0, 0],
            _ => [0; 4],
        };
        let mut rec = RecordingMsr::new(msrs(&[]));
        let d = discover(&tcg, &mut rec, skl());
        assert_eq!(d.choice, BackendChoice::TscOnly);
        assert_eq!(d.caps.kind, PmuKind::TscOnly);
        assert!(d.reason.contains("version 0"), "{}", d.reason);
        assert!(rec.log.is_empty(), "no MSR touched");
    }

    #[test]
    fn a_faulting_msr_falls_back_to_tsc_only_and_says_which() {
        // The hypervisor advertises v4 but GLOBAL_CTRL faults.
        let present: Vec<u32> = INTEL_MSRS.iter().copied().filter(|&m| m != 0x38f).collect();
        let mut m = msrs(&present);
        let d = discover(&skylake_cpuid, &mut m, skl());
        assert_eq!(d.choice, BackendChoice::TscOnly);
        assert!(d.reason.contains("0x38f"), "{}", d.reason);
        assert!(d.probes.iter().any(|p| p.msr == 0x38f && p.result.is_err()));
    }

    #[test]
    fn pdcm_without_readable_capabilities_means_legacy_writes() {
        let present: Vec<u32> = INTEL_MSRS.iter().copied().filter(|&m| m != 0x345).collect();
        let d = discover(&skylake_cpuid, &mut msrs(&present), skl());
        assert_eq!(d.choice, BackendChoice::IntelArch);
        assert!(!d.caps.full_width_write);
        assert_eq!(d.perf_capabilities, None);
    }

    #[test]
    fn leaf_23_bitmaps_and_hybrid_core_type() {
        let cpuid = |leaf: u32, sub: u32| match (leaf, sub) {
            (0, _) => [0x23, 0, 0, 0],
            (1, _) => [0x906a3, 0, 1 << 15, 0],
            (7, 0) => [0, 0, 0, 1 << 15],
            (0x0a, _) => [0x0930_0805, 0, 0b1000, 0x0000_0603],
            (0x1a, _) => [0x4000_0001, 0, 0, 0],
            (0x23, 0) => [0b10, 0, 0, 0],
            (0x23, 1) => [0xff, 0b1111, 0, 0],
            _ => [0; 4],
        };
        let d = discover(
            &cpuid,
            &mut msrs(&INTEL_MSRS),
            Some(CpuModel::new(Vendor::Intel, 6, 0x9a)),
        );
        assert!(d.used_leaf_23);
        assert_eq!((d.caps.gp_counters, d.caps.fixed_mask), (8, 0b1111));
        assert_eq!(d.caps.core_type, Some(CoreType::Core));
    }

    fn zen4_cpuid(leaf: u32, _: u32) -> [u32; 4] {
        match leaf {
            0 => [0x10, 0, 0, 0],
            0x8000_0000 => [0x8000_0028, 0, 0, 0],
            0x8000_0001 => [0, 0, 1 << 23, 0],
            0x8000_0022 => [0b111, 6, 0, 0],
            _ => [0; 4],
        }
    }

    #[test]
    fn amd_perfmon_v2_and_fallbacks() {
        let zen4 = Some(CpuModel::new(Vendor::Amd, 0x19, 0x11));
        let all = [0xc001_0200, 0xc001_0201, 0xc000_0300, 0xc000_0301];
        let d = discover(&zen4_cpuid, &mut msrs(&all), zen4);
        assert_eq!(d.choice, BackendChoice::Amd);
        assert_eq!(
            (d.caps.kind, d.caps.gp_counters),
            (PmuKind::AmdPerfMonV2, 6)
        );
        let d = discover(&zen4_cpuid, &mut msrs(&all[..2]), zen4);
        assert_eq!(d.choice, BackendChoice::TscOnly);
        assert!(d.reason.contains("0xc0000301"), "{}", d.reason);
        assert_eq!(
            d.amd_perfmon_v2,
            Some(6),
            "what CPUID said is still reported"
        );
        // Legacy: no extension bits, the legacy MSRs are probed.
        let legacy = |leaf: u32, _: u32| match leaf {
            0x8000_0000 => [0x8000_0001, 0, 0, 0],
            _ => [0; 4],
        };
        let d = discover(
            &legacy,
            &mut msrs(&[0xc001_0000, 0xc001_0004]),
            Some(CpuModel::new(Vendor::Amd, 0x10, 2)),
        );
        assert_eq!(
            (d.choice, d.caps.kind, d.caps.gp_counters),
            (BackendChoice::Amd, PmuKind::AmdLegacy, 4)
        );
    }

    /// QEMU's TCG: every MSR reads 0 and writes are dropped, no #GP anywhere.
    struct Emulator;
    impl Msr for Emulator {
        fn read(&mut self, _: u32) -> Result<u64, MsrFault> {
            Ok(0)
        }
        fn write(&mut self, _: u32, _: u64) -> Result<(), MsrFault> {
            Ok(())
        }
        fn rdpmc(&mut self, _: u32) -> Result<u64, MsrFault> {
            Err(MsrFault::InvalidOpcode)
        }
    }

    #[test]
    fn amd_counters_that_do_not_hold_values_are_not_believed() {
        // QEMU's `max` CPU under TCG: AuthenticAMD, no extension bits, MSRs that ignore writes.
        let tcg = |leaf: u32, _: u32| match leaf {
            0x8000_0000 => [0x8000_000a, 0, 0, 0],
            _ => [0; 4],
        };
        let mut rec = RecordingMsr::new(Emulator);
        let d = discover(&tcg, &mut rec, Some(CpuModel::new(Vendor::Amd, 0xf, 0x6b)));
        assert_eq!(d.choice, BackendChoice::TscOnly);
        assert!(
            d.reason.contains("does not keep a written value"),
            "{}",
            d.reason
        );
        // The probe leaves the counter at zero.
        assert_eq!(rec.writes().last(), Some(&(0xc001_0004, 0)));
    }
}

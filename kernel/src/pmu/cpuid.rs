//! What CPUID says about performance counters, for the boot report. This is a decode only:
//! choosing and driving a PMU backend is the PMU drivers' job.
//!
//! Intel: CPUID 0x0A (architectural performance monitoring). AMD: CPUID 0x80000001 ECX[23]
//! (PerfCtrExtCore: six core counters) and 0x80000022 (PerfMonV2: global control registers,
//! EBX[3:0] core counters). See ../shared/reference/pmu-facts.md, sections 1 and 2.

/// Decoded CPUID 0x0A.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntelArchPerfmon {
    pub raw: [u32; 4],
    /// 0 means no architectural PMU.
    pub version: u8,
    pub gp_counters: u8,
    pub gp_width: u8,
    /// Length of the EBX event-availability vector.
    pub events_len: u8,
    /// EBX: bit i set = architectural event i NOT available.
    pub events_unavailable: u32,
    /// Contiguous fixed counters (v2+).
    pub fixed_counters: u8,
    pub fixed_width: u8,
    /// v5+: bitmask of supported fixed counters.
    pub fixed_mask: u32,
}

impl IntelArchPerfmon {
    pub fn decode(raw: [u32; 4]) -> Self {
        let [eax, ebx, ecx, edx] = raw;
        let version = eax as u8;
        Self {
            raw,
            version,
            gp_counters: (eax >> 8) as u8,
            gp_width: (eax >> 16) as u8,
            events_len: (eax >> 24) as u8,
            events_unavailable: ebx,
            fixed_counters: if version >= 2 { (edx & 0x1f) as u8 } else { 0 },
            fixed_width: if version >= 2 {
                ((edx >> 5) & 0xff) as u8
            } else {
                0
            },
            fixed_mask: if version >= 5 { ecx } else { 0 },
        }
    }
}

/// AMD's performance-counter leaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AmdPerfmon {
    /// CPUID 0x80000001 ECX[23].
    pub perfctr_core: bool,
    /// CPUID 0x80000022 EAX[0].
    pub perfmon_v2: bool,
    /// CPUID 0x80000022 EBX[3:0], when PerfMonV2 is present.
    pub v2_core_counters: Option<u8>,
}

impl AmdPerfmon {
    /// From CPUID 0x80000001 ECX and CPUID 0x80000022 (`None` if beyond the max extended leaf).
    pub fn decode(ext1_ecx: u32, leaf_80000022: Option<[u32; 4]>) -> Self {
        let perfctr_core = ext1_ecx & (1 << 23) != 0;
        let perfmon_v2 = leaf_80000022.is_some_and(|r| r[0] & 1 != 0);
        Self {
            perfctr_core,
            perfmon_v2,
            v2_core_counters: leaf_80000022
                .filter(|_| perfmon_v2)
                .map(|r| (r[1] & 0xf) as u8),
        }
    }
}

/// A one-line description of what was found.
pub fn summary(intel: &IntelArchPerfmon, amd: &AmdPerfmon, vendor: &str) -> &'static str {
    if vendor == "AuthenticAMD" || vendor == "HygonGenuine" {
        match (amd.perfmon_v2, amd.perfctr_core) {
            (true, _) => "AMD PerfMonV2 counters advertised",
            (false, true) => "AMD extended core counters advertised",
            // Every AMD64 CPU has the four legacy counters, but a hypervisor may not emulate
            // them; the PMU drivers probe before use.
            (false, false) => "AMD legacy counters (not advertised by CPUID; to be probed)",
        }
    } else if intel.version == 0 {
        "no architectural PMU (CPUID.0AH version 0)"
    } else {
        "Intel architectural PMU advertised"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_skylake_leaf_0a() {
        // Skylake: v4, 4 GP x 48 bits, 7 events, 3 fixed x 48 bits.
        let p = IntelArchPerfmon::decode([0x0730_0404, 0, 0, 0x0000_0603]);
        assert_eq!(
            (p.version, p.gp_counters, p.gp_width, p.events_len),
            (4, 4, 48, 7)
        );
        assert_eq!((p.fixed_counters, p.fixed_width, p.fixed_mask), (3, 48, 0));
    }

    #[test]
    fn version_1_has_no_fixed_counters_and_tcg_has_nothing() {
        let p = IntelArchPerfmon::decode([0x0728_0201, 0, 0, 0x0000_0603]);
        assert_eq!((p.version, p.fixed_counters), (1, 0));
        let none = IntelArchPerfmon::decode([0; 4]);
        assert_eq!(none.version, 0);
        assert_eq!(
            summary(&none, &AmdPerfmon::default(), "GenuineIntel"),
            "no architectural PMU (CPUID.0AH version 0)"
        );
    }

    #[test]
    fn decodes_amd_leaves() {
        let a = AmdPerfmon::decode(1 << 23, Some([1, 6, 0, 0]));
        assert!(a.perfctr_core && a.perfmon_v2);
        assert_eq!(a.v2_core_counters, Some(6));
        let legacy = AmdPerfmon::decode(0, None);
        assert_eq!(legacy, AmdPerfmon::default());
    }
}

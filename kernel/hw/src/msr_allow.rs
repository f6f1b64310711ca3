//! The MSR door's allow-list (`msr::write`): which MSRs the kernel crate may write. Pure, so it
//! is host-tested; `msr` keeps the limits in force.
//!
//! Until the PMU is discovered every architectural counter MSR the kernel knows is allowed
//! (discovery only reads, but a backend's reset writes). Discovery then sets [`PmuLimits`] to
//! the counters CPUID reports, as far as the kernel drives them: from then on exactly those
//! counters and their controls are writable. A CPU with more counters than that is driven on
//! the ones the kernel knows (`pmu` record says so), never refused whole.

/// The counters writes may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmuLimits {
    /// Intel GP counters 0..n: IA32_PMCn (0xC1), IA32_PERFEVTSELn (0x186), IA32_A_PMCn (0x4C1).
    pub intel_gp: u8,
    /// Intel fixed counters, bit i: IA32_FIXED_CTRi (0x309 + i).
    pub intel_fixed: u32,
    /// Intel v2+: fixed control and the global control/status/overflow/set/in-use MSRs
    /// (0x38D-0x392).
    pub intel_global: bool,
    /// AMD legacy counter/control pairs 0..n (0xC0010000-0xC0010007, at most 4).
    pub amd_legacy: u8,
    /// AMD PerfCtrExtCore pairs 0..n (0xC0010200 + 2n control, + 2n + 1 counter).
    pub amd_core: u8,
    /// AMD PerfMonV2 global control/status/clear/set (0xC0000300-0xC0000303).
    pub amd_global: bool,
}

/// The most Intel GP counters the kernel drives: the architectural IA32_PMC0-7 and
/// IA32_PERFEVTSEL0-7. More (architectural PMU v6 moves every counter to 0x1900 + 4n) are
/// reported and left alone.
pub const INTEL_GP_MAX: u8 = 8;
/// The Intel fixed counters the kernel drives: 0-3 (IA32_FIXED_CTR0-3, 0x309-0x30C).
pub const INTEL_FIXED_MAX: u32 = 0b1111;
/// The AMD core counter pairs the kernel drives: PerfCtrExtCore's six.
pub const AMD_CORE_MAX: u8 = 6;

impl PmuLimits {
    /// Before discovery: every counter MSR the kernel knows.
    pub const ALL_KNOWN: PmuLimits = PmuLimits {
        intel_gp: INTEL_GP_MAX,
        intel_fixed: INTEL_FIXED_MAX,
        intel_global: true,
        amd_legacy: 4,
        amd_core: AMD_CORE_MAX,
        amd_global: true,
    };
    /// No counters (the TSC-only backend): only the TSC and the TSC deadline.
    pub const NONE: PmuLimits = PmuLimits {
        intel_gp: 0,
        intel_fixed: 0,
        intel_global: false,
        amd_legacy: 0,
        amd_core: 0,
        amd_global: false,
    };
}

/// IA32_TSC and IA32_TSC_DEADLINE.
const TSC: u32 = 0x10;
const TSC_DEADLINE: u32 = 0x6e0;

/// Whether the kernel crate may write `msr` under `limits`: the TSC, the TSC deadline, the
/// counters and controls of `limits`, and (with Intel counters) the offcore-response,
/// load-latency and frontend companions of events (0x1A6, 0x1A7, 0x3F6, 0x3F7: filters of what
/// an event counts; without PEBS and a DS area they make the CPU write nothing). Never
/// anything that makes the CPU write memory (DS area, PEBS, BTS via DEBUGCTL), EFER, the APIC
/// base, the syscall MSRs, segment bases.
pub fn writable(msr: u32, limits: &PmuLimits) -> bool {
    let below = |base: u32, n: u8| (base..base + u32::from(n)).contains(&msr);
    let intel_any = limits.intel_gp > 0 || limits.intel_fixed != 0;
    match msr {
        TSC | TSC_DEADLINE => true,
        0xc1..=0xc8 => below(0xc1, limits.intel_gp.min(INTEL_GP_MAX)),
        0x186..=0x18d => below(0x186, limits.intel_gp.min(INTEL_GP_MAX)),
        0x4c1..=0x4c8 => below(0x4c1, limits.intel_gp.min(INTEL_GP_MAX)),
        0x309..=0x30c => limits.intel_fixed & INTEL_FIXED_MAX & (1 << (msr - 0x309)) != 0,
        0x38d..=0x392 => limits.intel_global,
        0x1a6..=0x1a7 | 0x3f6..=0x3f7 => intel_any,
        0xc001_0000..=0xc001_0007 => {
            // Controls 0xC0010000-3, counters 0xC0010004-7.
            below(0xc001_0000, limits.amd_legacy.min(4))
                || below(0xc001_0004, limits.amd_legacy.min(4))
        }
        0xc001_0200..=0xc001_020b => {
            (msr - 0xc001_0200) / 2 < u32::from(limits.amd_core.min(AMD_CORE_MAX))
        }
        0xc000_0300..=0xc000_0303 => limits.amd_global,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_discovery_every_known_counter_msr_is_writable_and_nothing_else() {
        let all = PmuLimits::ALL_KNOWN;
        for m in [
            0x10, 0x6e0, 0xc1, 0xc8, 0x186, 0x18d, 0x4c8, 0x309, 0x30c, 0x38f, 0x392,
        ]
        .into_iter()
        .chain([
            0x1a6,
            0x3f7,
            0xc001_0000,
            0xc001_0007,
            0xc001_020b,
            0xc000_0303,
        ]) {
            assert!(writable(m, &all), "{m:#x}");
        }
        for m in [
            0xc0,
            0xc9,
            0x18e,
            0x30d,
            0x1d9,
            0x600,
            0xc000_0080,
            0x1b,
            0x1900,
            0xc001_020c,
        ] {
            assert!(!writable(m, &all), "{m:#x}");
        }
    }

    #[test]
    fn a_cpu_with_ten_gp_and_seven_fixed_counters_gets_the_eight_and_four_the_kernel_drives() {
        // CPUID says 10 GP counters and fixed counters 0-6: the limits are clamped by the
        // kernel's discovery, and whatever they say, no MSR past the architectural ranges opens.
        let l = PmuLimits {
            intel_gp: 10,
            intel_fixed: 0x7f,
            intel_global: true,
            ..PmuLimits::NONE
        };
        assert!(writable(0xc8, &l) && writable(0x18d, &l) && writable(0x30c, &l));
        assert!(!writable(0xc9, &l) && !writable(0x18e, &l) && !writable(0x30d, &l));
        assert!(!writable(0xc001_0200, &l), "no AMD counters on this CPU");
    }

    #[test]
    fn after_discovery_only_the_counters_found_are_writable() {
        let four = PmuLimits {
            intel_gp: 4,
            intel_fixed: 0b101,
            intel_global: true,
            ..PmuLimits::NONE
        };
        assert!(writable(0xc4, &four) && !writable(0xc5, &four));
        assert!(writable(0x309, &four) && !writable(0x30a, &four) && writable(0x30b, &four));
        let amd = PmuLimits {
            amd_core: 6,
            amd_global: true,
            ..PmuLimits::NONE
        };
        assert!(writable(0xc001_020b, &amd) && !writable(0xc1, &amd) && !writable(0x1a6, &amd));
        let legacy = PmuLimits {
            amd_legacy: 4,
            ..PmuLimits::NONE
        };
        assert!(writable(0xc001_0003, &legacy) && writable(0xc001_0007, &legacy));
        assert!(!writable(0xc000_0300, &legacy));
        let none = PmuLimits::NONE;
        assert!(writable(0x10, &none) && !writable(0xc1, &none) && !writable(0x38f, &none));
    }
}

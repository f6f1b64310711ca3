//! What a PMU offers: its kind, general-purpose (GP) and fixed counters, widths, and which
//! architectural events it lacks.
//!
//! Intel architectural performance monitoring versions (CPUID 0x0A EAX[7:0]):
//! - v1: GP counters only, each enabled by its own PERFEVTSEL.EN.
//! - v2: fixed counters (IA32_FIXED_CTR_CTRL) and the global registers (GLOBAL_CTRL,
//!   GLOBAL_STATUS, GLOBAL_OVF_CTRL).
//! - v3: AnyThread bit; more fixed counters on some parts.
//! - v4: GLOBAL_STATUS_RESET/SET/INUSE semantics.
//! - v5: a bitmask of fixed counters (CPUID 0x0A ECX), AnyThread deprecated.
//!
//! AMD: four legacy counters (PERF_CTL0-3), six "extended core" counters when CPUID
//! 0x80000001 ECX[23] (PerfCtrExtCore), and with PerfMonV2 (CPUID 0x80000022 EAX[0]) global
//! control/status registers and a counter count in EBX[3:0]. AMD counters are 48 bits wide and
//! there are no architectural fixed counters.
//!
//! TSC-only: no programmable counters (QEMU's TCG, CPUs without a PMU); only the TSC counts.

use core::fmt;

use crate::cpu::{CpuModel, Vendor};

/// The family of PMU, which decides the encodings and the registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmuKind {
    /// Intel architectural performance monitoring, version 1-5 (or later).
    IntelArch { version: u8 },
    /// AMD's four legacy counters.
    AmdLegacy,
    /// AMD PerfCtrExtCore: six interleaved core counters.
    AmdExtCore,
    /// AMD PerfMonV2: global control and status.
    AmdPerfMonV2,
    /// No programmable counters: the TSC is the only counter.
    TscOnly,
}

impl fmt::Display for PmuKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmuKind::IntelArch { version } => write!(f, "Intel architectural v{version}"),
            PmuKind::AmdLegacy => f.write_str("AMD legacy"),
            PmuKind::AmdExtCore => f.write_str("AMD PerfCtrExtCore"),
            PmuKind::AmdPerfMonV2 => f.write_str("AMD PerfMonV2"),
            PmuKind::TscOnly => f.write_str("TSC only"),
        }
    }
}

/// Core type of a hybrid Intel part (CPUID 0x1A EAX[31:24]); counters and events differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreType {
    /// 0x20: Atom / E-core.
    Atom,
    /// 0x40: Core / P-core.
    Core,
}

impl CoreType {
    /// From CPUID 0x1A EAX[31:24].
    pub fn from_cpuid(code: u8) -> Option<CoreType> {
        match code {
            0x20 => Some(CoreType::Atom),
            0x40 => Some(CoreType::Core),
            _ => None,
        }
    }

    /// The name perfmon's mapfile.csv uses in its "Core Type" column.
    pub fn perfmon_name(self) -> &'static str {
        match self {
            CoreType::Atom => "Atom",
            CoreType::Core => "Core",
        }
    }
}

/// Everything the encoders, the catalogue and counter assignment need to know about a PMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmuCaps {
    pub vendor: Vendor,
    pub kind: PmuKind,
    /// Number of general-purpose counters.
    pub gp_counters: u8,
    /// Bit width of the GP counters.
    pub gp_width: u8,
    /// Bit i set: fixed counter i exists.
    pub fixed_mask: u32,
    /// Bit width of the fixed counters.
    pub fixed_width: u8,
    /// Number of architectural events CPUID describes (CPUID 0x0A EAX[31:24]); events at or
    /// past this index are unavailable.
    pub arch_events_len: u8,
    /// CPUID 0x0A EBX: bit i set = architectural event i NOT available.
    pub arch_events_unavailable: u32,
    /// IA32_PERF_CAPABILITIES.FW_WRITE: counters writable at full width through IA32_A_PMCx.
    pub full_width_write: bool,
    /// The AnyThread bit may be set (Intel v3/v4 without the CPUID 0x0A EDX[15] deprecation).
    pub any_thread: bool,
    /// Hybrid parts: which core type this describes.
    pub core_type: Option<CoreType>,
    /// The CPU, when known.
    pub cpu: Option<CpuModel>,
    /// True when these capabilities are nominal for a CPU model (the CLI's `--cpu`), not read
    /// from CPUID of a running machine.
    pub nominal: bool,
}

impl PmuCaps {
    /// Decodes Intel CPUID 0x0A (`[eax, ebx, ecx, edx]`), as the kernel reads it.
    pub fn from_intel_cpuid(
        leaf_0a: [u32; 4],
        full_width_write: bool,
        cpu: Option<CpuModel>,
    ) -> PmuCaps {
        let [eax, ebx, ecx, edx] = leaf_0a;
        let version = eax as u8;
        if version == 0 {
            return PmuCaps::tsc_only(Vendor::Intel, cpu);
        }
        let fixed_count = if version >= 2 { edx & 0x1f } else { 0 };
        let mut fixed_mask = if fixed_count >= 32 {
            u32::MAX
        } else {
            (1u32 << fixed_count) - 1
        };
        if version >= 5 {
            fixed_mask |= ecx;
        }
        PmuCaps {
            vendor: Vendor::Intel,
            kind: PmuKind::IntelArch { version },
            gp_counters: (eax >> 8) as u8,
            gp_width: (eax >> 16) as u8,
            fixed_mask,
            fixed_width: if version >= 2 {
                ((edx >> 5) & 0xff) as u8
            } else {
                0
            },
            arch_events_len: (eax >> 24) as u8,
            arch_events_unavailable: ebx,
            full_width_write,
            any_thread: (version == 3 || version == 4) && edx & (1 << 15) == 0,
            core_type: None,
            cpu,
            nominal: false,
        }
    }

    /// AMD capabilities from CPUID 0x80000001 ECX[23] (`ext_core`) and PerfMonV2
    /// (`perfmon_v2`: `Some(number of core counters)`).
    pub fn amd(ext_core: bool, perfmon_v2: Option<u8>, cpu: Option<CpuModel>) -> PmuCaps {
        let (kind, gp) = match perfmon_v2 {
            Some(n) => (PmuKind::AmdPerfMonV2, n),
            None if ext_core => (PmuKind::AmdExtCore, 6),
            None => (PmuKind::AmdLegacy, 4),
        };
        PmuCaps {
            vendor: Vendor::Amd,
            kind,
            gp_counters: gp,
            gp_width: 48,
            fixed_mask: 0,
            fixed_width: 0,
            arch_events_len: 0,
            arch_events_unavailable: 0,
            full_width_write: true, // AMD counters are written at their full 48 bits
            any_thread: false,
            core_type: None,
            cpu,
            nominal: false,
        }
    }

    /// No programmable counters.
    pub fn tsc_only(vendor: Vendor, cpu: Option<CpuModel>) -> PmuCaps {
        PmuCaps {
            vendor,
            kind: PmuKind::TscOnly,
            gp_counters: 0,
            gp_width: 0,
            fixed_mask: 0,
            fixed_width: 0,
            arch_events_len: 0,
            arch_events_unavailable: u32::MAX,
            full_width_write: false,
            any_thread: false,
            core_type: None,
            cpu,
            nominal: false,
        }
    }

    /// Nominal capabilities of a CPU model, for encoding events for a machine that is not
    /// here (the CLI's `--cpu`). Intel: v4 with 4 GP and 3 fixed counters, 48 bits wide, every
    /// architectural event present; parts from Ice Lake on: v5 with 8 GP and 4 fixed counters.
    /// AMD: by Zen generation (PerfMonV2 from Zen 4; six extended counters from family 0x15).
    /// The boot-time PMU discovery replaces these with what CPUID reports.
    pub fn nominal(cpu: CpuModel) -> PmuCaps {
        let caps = match cpu.vendor {
            Vendor::Intel => {
                let v5 = cpu.family == 6 && is_icelake_or_later(cpu.model);
                let (version, gp, fixed) = if v5 { (5, 8, 4) } else { (4, 4, 3) };
                let eax = version | (gp << 8) | (48 << 16) | (if v5 { 8 } else { 7 } << 24);
                let edx = fixed | (48 << 5);
                PmuCaps::from_intel_cpuid([eax, 0, 0, edx], true, Some(cpu))
            }
            Vendor::Amd => {
                let zen = cpu.zen_generation();
                let v2 = zen.is_some_and(|z| z >= 4).then_some(6);
                PmuCaps::amd(cpu.family >= 0x15, v2, Some(cpu))
            }
        };
        PmuCaps {
            nominal: true,
            ..caps
        }
    }

    /// Intel architectural version, if this is an Intel architectural PMU.
    pub fn intel_version(&self) -> Option<u8> {
        match self.kind {
            PmuKind::IntelArch { version } => Some(version),
            _ => None,
        }
    }

    /// Whether architectural event `bit` (the CPUID 0x0A EBX index) is available.
    pub fn arch_event_available(&self, bit: u8) -> bool {
        self.intel_version().is_some()
            && bit < self.arch_events_len
            && bit < 32
            && self.arch_events_unavailable & (1 << bit) == 0
    }

    /// Whether fixed counter `index` exists.
    pub fn has_fixed(&self, index: u8) -> bool {
        index < 32 && self.fixed_mask & (1 << index) != 0
    }

    /// Mask of all GP counters.
    pub fn gp_mask(&self) -> u32 {
        if self.gp_counters >= 32 {
            u32::MAX
        } else {
            (1u32 << self.gp_counters) - 1
        }
    }
}

/// Intel family-6 models from Ice Lake on (architectural PMU v5 with fixed counter 3).
fn is_icelake_or_later(model: u32) -> bool {
    matches!(
        model,
        0x6a | 0x6c
            | 0x7d
            | 0x7e
            | 0x8c
            | 0x8d
            | 0x8f
            | 0x97
            | 0x9a
            | 0xa7
            | 0xaa
            | 0xac
            | 0xad
            | 0xae
            | 0xb7
            | 0xba
            | 0xbd
            | 0xbe
            | 0xbf
            | 0xc5
            | 0xc6
            | 0xcf
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skylake_cpuid() {
        // Skylake client: v4, 4 GP x 48 bits, 7 events, 3 fixed x 48 bits.
        let caps = PmuCaps::from_intel_cpuid([0x0730_0404, 0, 0, 0x0000_0603], true, None);
        assert_eq!(caps.kind, PmuKind::IntelArch { version: 4 });
        assert_eq!((caps.gp_counters, caps.gp_width), (4, 48));
        assert_eq!((caps.fixed_mask, caps.fixed_width), (0b111, 48));
        assert!(caps.any_thread);
        assert!((0..7).all(|b| caps.arch_event_available(b)));
        assert!(!caps.arch_event_available(7), "beyond the vector length");
        assert_eq!(caps.gp_mask(), 0b1111);
    }

    #[test]
    fn unavailable_events_and_v5_fixed_mask() {
        // v5 with EBX bit 4 (LLC misses) set, fixed counters 0-1 contiguous plus bit 3 in ECX.
        let caps =
            PmuCaps::from_intel_cpuid([0x0830_0805, 1 << 4, 0b1000, 0x0000_0602], false, None);
        assert!(!caps.arch_event_available(4));
        assert!(caps.arch_event_available(5));
        assert_eq!(caps.fixed_mask, 0b1011);
        assert!(caps.has_fixed(3) && !caps.has_fixed(2));
        assert!(!caps.any_thread, "v5 deprecates AnyThread");
    }

    #[test]
    fn version_1_has_no_fixed_counters_and_0_means_tsc_only() {
        let v1 = PmuCaps::from_intel_cpuid([0x0728_0201, 0, 0, 0x0000_0603], false, None);
        assert_eq!(v1.fixed_mask, 0);
        let none = PmuCaps::from_intel_cpuid([0; 4], false, None);
        assert_eq!(none.kind, PmuKind::TscOnly);
        assert!(!none.arch_event_available(0));
    }

    #[test]
    fn amd_kinds() {
        assert_eq!(PmuCaps::amd(false, None, None).gp_counters, 4);
        assert_eq!(PmuCaps::amd(true, None, None).kind, PmuKind::AmdExtCore);
        let v2 = PmuCaps::amd(true, Some(6), None);
        assert_eq!(
            (v2.kind, v2.gp_counters, v2.gp_width),
            (PmuKind::AmdPerfMonV2, 6, 48)
        );
    }

    #[test]
    fn nominal_caps() {
        let skx = PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-55").unwrap());
        assert_eq!(
            (skx.intel_version(), skx.gp_counters, skx.fixed_mask),
            (Some(4), 4, 0b111)
        );
        assert!(skx.nominal);
        let spr = PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-8F").unwrap());
        assert_eq!(
            (spr.intel_version(), spr.gp_counters, spr.fixed_mask),
            (Some(5), 8, 0b1111)
        );
        let zen3 = PmuCaps::nominal(CpuModel::parse("AuthenticAMD-25-21").unwrap());
        assert_eq!(zen3.kind, PmuKind::AmdExtCore);
        let zen4 = PmuCaps::nominal(CpuModel::parse("AuthenticAMD-25-11").unwrap());
        assert_eq!(zen4.kind, PmuKind::AmdPerfMonV2);
    }
}

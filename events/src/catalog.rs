//! Built-in events: perf's generic events mapped per vendor and family exactly as Linux maps
//! them, Intel's 13 architectural events, the fixed-counter events, and common AMD Zen events.
//!
//! An event the PMU lacks is [`Unsupported`] with the reason; it is never mapped to something
//! else.
//!
//! Sources: Linux `arch/x86/events/intel/core.c` (`intel_perfmon_event_map`),
//! `arch/x86/events/amd/core.c` (`amd_perfmon_event_map`, `amd_f17h_perfmon_event_map`,
//! `amd_zen2_perfmon_event_map`, `amd_zen4_perfmon_event_map`), Intel SDM vol. 3B table
//! "UMask and Event Select Encodings for Pre-Defined Architectural Performance Events", Linux
//! `tools/perf/pmu-events/arch/x86/amdzen*/core.json`. See ../shared/reference/pmu-facts.md.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::cpu::Vendor;
use crate::event::{EventDesc, EventSelect, Source};
use crate::pmu::{PmuCaps, PmuKind};

/// Why an event cannot be counted on this PMU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub event: String,
    pub reason: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not supported: {}", self.event, self.reason)
    }
}

fn unsupported(event: &str, reason: impl Into<String>) -> Unsupported {
    Unsupported {
        event: String::from(event),
        reason: reason.into(),
    }
}

/// One of Intel's architectural performance events (CPUID 0x0A EBX bit = `bit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchEvent {
    pub bit: u8,
    /// baremark's name (the SDM's name in kebab case).
    pub name: &'static str,
    /// The name in Intel's perfmon tables, where there is a stable one.
    pub perfmon: Option<&'static str>,
    pub code: u8,
    pub umask: u8,
    /// Fixed counter that counts the same thing.
    pub fixed: Option<u8>,
    pub description: &'static str,
}

/// The 13 architectural events, indexed by their CPUID 0x0A EBX bit.
pub const ARCH_EVENTS: [ArchEvent; 13] = [
    ArchEvent {
        bit: 0,
        name: "unhalted-core-cycles",
        perfmon: Some("CPU_CLK_UNHALTED.THREAD_P"),
        code: 0x3c,
        umask: 0x00,
        fixed: Some(1),
        description: "Core cycles while the thread is not halted",
    },
    ArchEvent {
        bit: 1,
        name: "instructions-retired",
        perfmon: Some("INST_RETIRED.ANY_P"),
        code: 0xc0,
        umask: 0x00,
        fixed: Some(0),
        description: "Instructions retired",
    },
    ArchEvent {
        bit: 2,
        name: "unhalted-reference-cycles",
        perfmon: Some("CPU_CLK_UNHALTED.REF_XCLK"),
        code: 0x3c,
        umask: 0x01,
        fixed: None,
        description: "Reference cycles (bus clock) while not halted",
    },
    ArchEvent {
        bit: 3,
        name: "llc-references",
        perfmon: Some("LONGEST_LAT_CACHE.REFERENCE"),
        code: 0x2e,
        umask: 0x4f,
        fixed: None,
        description: "Requests to the last-level cache",
    },
    ArchEvent {
        bit: 4,
        name: "llc-misses",
        perfmon: Some("LONGEST_LAT_CACHE.MISS"),
        code: 0x2e,
        umask: 0x41,
        fixed: None,
        description: "Last-level cache misses",
    },
    ArchEvent {
        bit: 5,
        name: "branch-instructions-retired",
        perfmon: Some("BR_INST_RETIRED.ALL_BRANCHES"),
        code: 0xc4,
        umask: 0x00,
        fixed: None,
        description: "Branch instructions retired",
    },
    ArchEvent {
        bit: 6,
        name: "branch-misses-retired",
        perfmon: Some("BR_MISP_RETIRED.ALL_BRANCHES"),
        code: 0xc5,
        umask: 0x00,
        fixed: None,
        description: "Mispredicted branch instructions retired",
    },
    ArchEvent {
        bit: 7,
        name: "topdown-slots",
        perfmon: Some("TOPDOWN.SLOTS_P"),
        code: 0xa4,
        umask: 0x01,
        fixed: Some(3),
        description: "Pipeline issue slots (top-down analysis)",
    },
    ArchEvent {
        bit: 8,
        name: "topdown-backend-bound",
        perfmon: None,
        code: 0xa4,
        umask: 0x02,
        fixed: None,
        description: "Slots stalled by the back end",
    },
    ArchEvent {
        bit: 9,
        name: "topdown-bad-speculation",
        perfmon: None,
        code: 0x73,
        umask: 0x00,
        fixed: None,
        description: "Slots wasted by bad speculation",
    },
    ArchEvent {
        bit: 10,
        name: "topdown-frontend-bound",
        perfmon: None,
        code: 0x9c,
        umask: 0x01,
        fixed: None,
        description: "Slots the front end did not fill",
    },
    ArchEvent {
        bit: 11,
        name: "topdown-retiring",
        perfmon: None,
        code: 0xc2,
        umask: 0x02,
        fixed: None,
        description: "Slots that retired operations",
    },
    ArchEvent {
        bit: 12,
        name: "lbr-inserts",
        perfmon: None,
        code: 0xe4,
        umask: 0x01,
        fixed: None,
        description: "Branches recorded in the LBR",
    },
];

/// An Intel fixed-counter event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedEvent {
    pub index: u8,
    /// Name in Intel's perfmon tables.
    pub name: &'static str,
    /// Linux's pseudo encoding for the fixed counter (`config` in perf).
    pub linux_config: u16,
    /// The architectural event with the same meaning, whose GP encoding can stand in for it.
    pub arch_bit: Option<u8>,
    pub description: &'static str,
}

/// Intel's fixed counters 0-3.
pub const FIXED_EVENTS: [FixedEvent; 4] = [
    FixedEvent {
        index: 0,
        name: "INST_RETIRED.ANY",
        linux_config: 0x00c0,
        arch_bit: Some(1),
        description: "Instructions retired (fixed counter 0)",
    },
    FixedEvent {
        index: 1,
        name: "CPU_CLK_UNHALTED.THREAD",
        linux_config: 0x003c,
        arch_bit: Some(0),
        description: "Core cycles when not halted (fixed counter 1)",
    },
    FixedEvent {
        index: 2,
        name: "CPU_CLK_UNHALTED.REF_TSC",
        linux_config: 0x0300,
        arch_bit: None,
        description: "Reference cycles at the TSC rate when not halted (fixed counter 2)",
    },
    FixedEvent {
        index: 3,
        name: "TOPDOWN.SLOTS",
        linux_config: 0x0400,
        arch_bit: Some(7),
        description: "Pipeline issue slots (fixed counter 3)",
    },
];

/// perf's generic hardware events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generic {
    Cycles,
    Instructions,
    CacheReferences,
    CacheMisses,
    BranchInstructions,
    BranchMisses,
    BusCycles,
    RefCycles,
    StalledCyclesFrontend,
    StalledCyclesBackend,
}

impl Generic {
    pub const ALL: [Generic; 10] = [
        Generic::Cycles,
        Generic::Instructions,
        Generic::CacheReferences,
        Generic::CacheMisses,
        Generic::BranchInstructions,
        Generic::BranchMisses,
        Generic::BusCycles,
        Generic::RefCycles,
        Generic::StalledCyclesFrontend,
        Generic::StalledCyclesBackend,
    ];

    /// The canonical name (as `perf list` prints it).
    pub fn name(self) -> &'static str {
        self.names()[0]
    }

    /// All names perf accepts for it.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Generic::Cycles => &["cycles", "cpu-cycles"],
            Generic::Instructions => &["instructions"],
            Generic::CacheReferences => &["cache-references"],
            Generic::CacheMisses => &["cache-misses"],
            Generic::BranchInstructions => &["branches", "branch-instructions"],
            Generic::BranchMisses => &["branch-misses"],
            Generic::BusCycles => &["bus-cycles"],
            Generic::RefCycles => &["ref-cycles"],
            Generic::StalledCyclesFrontend => &["stalled-cycles-frontend", "idle-cycles-frontend"],
            Generic::StalledCyclesBackend => &["stalled-cycles-backend", "idle-cycles-backend"],
        }
    }

    pub fn from_name(name: &str) -> Option<Generic> {
        Generic::ALL.into_iter().find(|g| g.names().contains(&name))
    }

    fn description(self) -> &'static str {
        match self {
            Generic::Cycles => "CPU cycles (unhalted)",
            Generic::Instructions => "Instructions retired",
            Generic::CacheReferences => "Cache references (last-level cache on Intel)",
            Generic::CacheMisses => "Cache misses (last-level cache on Intel)",
            Generic::BranchInstructions => "Branch instructions retired",
            Generic::BranchMisses => "Mispredicted branches retired",
            Generic::BusCycles => "Bus cycles",
            Generic::RefCycles => "Reference cycles (constant rate, unhalted)",
            Generic::StalledCyclesFrontend => "Cycles the front end delivered nothing",
            Generic::StalledCyclesBackend => "Cycles the back end accepted nothing",
        }
    }
}

/// AMD's generic-event map generation, as Linux picks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmdMap {
    /// K8 to family 0x16 (`amd_perfmon_event_map`).
    Legacy,
    /// Family 0x17 Zen 1 (`amd_f17h_perfmon_event_map`).
    Zen1,
    /// Zen 2 and Zen 3 (`amd_zen2_perfmon_event_map`).
    Zen2,
    /// Zen 4 and later (`amd_zen4_perfmon_event_map`).
    Zen4,
}

impl AmdMap {
    /// Linux's choice: Zen 4 map for Zen 4+, Zen 2 map for Zen 2/3, the family 17h map for Zen 1,
    /// the legacy map before. `None` when the CPU model is unknown.
    pub fn for_caps(caps: &PmuCaps) -> Option<AmdMap> {
        let cpu = caps.cpu?;
        Some(match cpu.zen_generation() {
            Some(z) if z >= 4 => AmdMap::Zen4,
            Some(z) if z >= 2 => AmdMap::Zen2,
            Some(_) => AmdMap::Zen1,
            None => AmdMap::Legacy,
        })
    }
}

/// Linux's Intel generic map: `(umask << 8) | event`, and the architectural event bit whose
/// availability it needs. `None`: not in the map.
pub fn intel_generic_config(g: Generic) -> Option<(u16, u8)> {
    Some(match g {
        Generic::Cycles => (0x003c, 0),
        Generic::Instructions => (0x00c0, 1),
        Generic::CacheReferences => (0x4f2e, 3),
        Generic::CacheMisses => (0x412e, 4),
        Generic::BranchInstructions => (0x00c4, 5),
        Generic::BranchMisses => (0x00c5, 6),
        Generic::BusCycles => (0x013c, 2),
        // ref-cycles is fixed counter 2 only; the stalled-cycles events are model specific.
        Generic::RefCycles | Generic::StalledCyclesFrontend | Generic::StalledCyclesBackend => {
            return None;
        }
    })
}

/// Linux's AMD generic map for a generation: the config `(umask << 8) | event` (AMD's event
/// bits 11:8 at config bits 35:32, so 0x1_0000_0120 is event 0x120), or `None` where Linux maps
/// nothing.
pub fn amd_generic_config(g: Generic, map: AmdMap) -> Option<u64> {
    use AmdMap::*;
    use Generic::*;
    Some(match (g, map) {
        (Cycles, _) => 0x0076,
        (Instructions, _) => 0x00c0,
        (BranchInstructions, _) => 0x00c2,
        (BranchMisses, _) => 0x00c3,
        (CacheReferences, Legacy) => 0x077d,
        (CacheMisses, Legacy) => 0x077e,
        (CacheReferences, _) => 0xff60,
        (CacheMisses, _) => 0x0964,
        (StalledCyclesFrontend, Legacy) => 0x00d0,
        (StalledCyclesBackend, Legacy) => 0x00d1,
        (StalledCyclesFrontend, Zen1) => 0x0287,
        (StalledCyclesBackend, Zen1) => 0x0187,
        (StalledCyclesFrontend, Zen2 | Zen4) => 0x00a9,
        (RefCycles, Zen4) => 0x1_0000_0120,
        _ => return None,
    })
}

fn select_from_config(config: u64) -> EventSelect {
    EventSelect::new(
        ((config & 0xff) | ((config >> 24) & 0xf00)) as u16,
        (config >> 8) as u8,
    )
}

/// Resolves a generic event for a PMU.
pub fn generic(g: Generic, caps: &PmuCaps) -> Result<EventDesc, Unsupported> {
    let name = g.name();
    let describe = |e: EventDesc| e.describe(g.description());
    match caps.kind {
        PmuKind::TscOnly => Err(unsupported(
            name,
            "this machine has no programmable counters (TSC only)",
        )),
        PmuKind::IntelArch { .. } => {
            if g == Generic::RefCycles {
                return match caps.has_fixed(2) {
                    true => Ok(describe(EventDesc {
                        gp_counters: None,
                        ..EventDesc::gp(name, EventSelect::new(0x00, 0x03), Source::Generic)
                            .with_fixed(2)
                    })),
                    false => Err(unsupported(
                        name,
                        "Intel counts reference cycles on fixed counter 2, which this PMU lacks",
                    )),
                };
            }
            let Some((config, bit)) = intel_generic_config(g) else {
                return Err(unsupported(
                    name,
                    "model specific on Intel (Linux maps it for a few models only); name the event from a perfmon table instead",
                ));
            };
            if !caps.arch_event_available(bit) {
                return Err(unsupported(name, arch_unavailable_reason(caps, bit)));
            }
            let mut e = EventDesc::gp(name, select_from_config(u64::from(config)), Source::Generic);
            e.arch_bit = Some(bit);
            e.fixed = ARCH_EVENTS[usize::from(bit)]
                .fixed
                .filter(|&i| caps.has_fixed(i));
            Ok(describe(e))
        }
        PmuKind::AmdLegacy | PmuKind::AmdExtCore | PmuKind::AmdPerfMonV2 => {
            let map = match AmdMap::for_caps(caps) {
                Some(map) => map,
                // The CPU model decides the map only for these; the rest are the same everywhere.
                None if matches!(
                    g,
                    Generic::Cycles
                        | Generic::Instructions
                        | Generic::BranchInstructions
                        | Generic::BranchMisses
                ) =>
                {
                    AmdMap::Legacy
                }
                None => {
                    return Err(unsupported(
                        name,
                        "the AMD mapping depends on the CPU family and model, which are unknown",
                    ));
                }
            };
            match amd_generic_config(g, map) {
                Some(config) => Ok(describe(EventDesc::gp(
                    name,
                    select_from_config(config),
                    Source::Generic,
                ))),
                None => Err(unsupported(
                    name,
                    format!("Linux maps no event for it on this AMD generation ({map:?})"),
                )),
            }
        }
    }
}

fn arch_unavailable_reason(caps: &PmuCaps, bit: u8) -> String {
    if bit >= caps.arch_events_len {
        format!(
            "the PMU describes only {} architectural events and this is event {bit} (CPUID.0AH:EAX[31:24])",
            caps.arch_events_len
        )
    } else {
        format!("CPUID.0AH:EBX bit {bit} says the architectural event is not available")
    }
}

/// Resolves architectural event `bit` for an Intel PMU.
pub fn architectural(bit: u8, caps: &PmuCaps) -> Result<EventDesc, Unsupported> {
    let a = ARCH_EVENTS
        .get(usize::from(bit))
        .ok_or_else(|| unsupported("?", "no such architectural event"))?;
    if caps.intel_version().is_none() {
        return Err(unsupported(
            a.name,
            "architectural events are Intel's; this PMU is not an Intel architectural PMU",
        ));
    }
    if !caps.arch_event_available(bit) {
        return Err(unsupported(a.name, arch_unavailable_reason(caps, bit)));
    }
    let mut e = EventDesc::gp(
        a.name,
        EventSelect::new(u16::from(a.code), a.umask),
        Source::Architectural,
    )
    .describe(a.description);
    e.arch_bit = Some(bit);
    e.fixed = a.fixed.filter(|&i| caps.has_fixed(i));
    Ok(e)
}

/// Resolves fixed-counter event `index` for an Intel PMU. Where an architectural event counts
/// the same, it also gets that GP encoding, so it can fall back to a GP counter.
pub fn fixed(index: u8, caps: &PmuCaps) -> Result<EventDesc, Unsupported> {
    let f = FIXED_EVENTS
        .get(usize::from(index))
        .ok_or_else(|| unsupported("?", "no such fixed counter event"))?;
    if !caps.has_fixed(index) {
        return Err(unsupported(
            f.name,
            format!("this PMU has no fixed counter {index}"),
        ));
    }
    let gp_equivalent = f
        .arch_bit
        .filter(|&b| caps.arch_event_available(b))
        .map(|b| &ARCH_EVENTS[usize::from(b)]);
    let select = match gp_equivalent {
        Some(a) => EventSelect::new(u16::from(a.code), a.umask),
        // Perfmon's pseudo encoding for fixed-only events: event 0, umask index + 1.
        None => EventSelect::new(0, index + 1),
    };
    let mut e = EventDesc::gp(f.name, select, Source::BuiltIn)
        .with_fixed(index)
        .describe(f.description);
    if gp_equivalent.is_none() {
        e.gp_counters = None;
    }
    e.arch_bit = f.arch_bit;
    Ok(e)
}

/// A built-in AMD Zen core event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZenEvent {
    pub name: &'static str,
    pub code: u16,
    pub umask: u8,
    /// First Zen generation that has it.
    pub since: u8,
    pub description: &'static str,
}

/// Core events common to the Zen generations (Linux `pmu-events/arch/x86/amdzen*/core.json`
/// and the AMD PPRs).
pub const ZEN_EVENTS: [ZenEvent; 17] = [
    ZenEvent {
        name: "ls_not_halted_cyc",
        code: 0x76,
        umask: 0,
        since: 1,
        description: "Core cycles not halted",
    },
    ZenEvent {
        name: "ex_ret_instr",
        code: 0xc0,
        umask: 0,
        since: 1,
        description: "Retired instructions",
    },
    ZenEvent {
        name: "ex_ret_ops",
        code: 0xc1,
        umask: 0,
        since: 1,
        description: "Retired macro-ops",
    },
    ZenEvent {
        name: "ex_ret_brn",
        code: 0xc2,
        umask: 0,
        since: 1,
        description: "Retired branch instructions",
    },
    ZenEvent {
        name: "ex_ret_brn_misp",
        code: 0xc3,
        umask: 0,
        since: 1,
        description: "Retired mispredicted branch instructions",
    },
    ZenEvent {
        name: "ex_ret_brn_tkn",
        code: 0xc4,
        umask: 0,
        since: 1,
        description: "Retired taken branch instructions",
    },
    ZenEvent {
        name: "ex_ret_brn_tkn_misp",
        code: 0xc5,
        umask: 0,
        since: 1,
        description: "Retired taken branches mispredicted",
    },
    ZenEvent {
        name: "ex_ret_brn_far",
        code: 0xc6,
        umask: 0,
        since: 1,
        description: "Retired far control transfers",
    },
    ZenEvent {
        name: "ex_ret_near_ret",
        code: 0xc8,
        umask: 0,
        since: 1,
        description: "Retired near returns",
    },
    ZenEvent {
        name: "ex_ret_near_ret_mispred",
        code: 0xc9,
        umask: 0,
        since: 1,
        description: "Retired near returns mispredicted",
    },
    ZenEvent {
        name: "ex_ret_brn_ind_misp",
        code: 0xca,
        umask: 0,
        since: 1,
        description: "Retired indirect branches mispredicted",
    },
    ZenEvent {
        name: "ex_ret_ind_brch_instr",
        code: 0xcc,
        umask: 0,
        since: 2,
        description: "Retired indirect branch instructions",
    },
    ZenEvent {
        name: "ex_ret_cond",
        code: 0xd1,
        umask: 0,
        since: 1,
        description: "Retired conditional branch instructions",
    },
    ZenEvent {
        name: "ex_div_busy",
        code: 0xd3,
        umask: 0,
        since: 1,
        description: "Cycles the divider is busy",
    },
    ZenEvent {
        name: "ex_div_count",
        code: 0xd4,
        umask: 0,
        since: 1,
        description: "Divide operations",
    },
    ZenEvent {
        name: "ex_ret_fused_instr",
        code: 0x1d0,
        umask: 0,
        since: 3,
        description: "Retired fused instructions",
    },
    ZenEvent {
        name: "ls_not_halted_p0_cyc.p0_freq_cyc",
        code: 0x120,
        umask: 0x01,
        since: 4,
        description: "Reference cycles at the P0 frequency when not halted",
    },
];

/// Resolves a built-in AMD Zen event.
pub fn zen(e: &ZenEvent, caps: &PmuCaps) -> Result<EventDesc, Unsupported> {
    if caps.vendor != Vendor::Amd || caps.kind == PmuKind::TscOnly {
        return Err(unsupported(
            e.name,
            "AMD Zen event; this PMU is not an AMD core PMU",
        ));
    }
    match caps.cpu.and_then(|c| c.zen_generation()) {
        Some(z) if z >= e.since => {
            Ok(
                EventDesc::gp(e.name, EventSelect::new(e.code, e.umask), Source::BuiltIn)
                    .describe(e.description),
            )
        }
        Some(z) => Err(unsupported(
            e.name,
            format!("needs Zen {} or later; this is Zen {z}", e.since),
        )),
        None => Err(unsupported(e.name, "the CPU is not a known Zen model")),
    }
}

/// Looks a built-in name up: generic events, architectural events (baremark and perfmon names),
/// fixed-counter events, AMD Zen events. `None` when no built-in event has the name; otherwise
/// the event or why this PMU cannot count it.
pub fn by_name(name: &str, caps: &PmuCaps) -> Option<Result<EventDesc, Unsupported>> {
    if let Some(g) = Generic::from_name(name) {
        return Some(generic(g, caps));
    }
    if let Some(f) = FIXED_EVENTS
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name))
    {
        return Some(fixed(f.index, caps));
    }
    if let Some(a) = ARCH_EVENTS
        .iter()
        .find(|a| a.name == name || a.perfmon.is_some_and(|p| p.eq_ignore_ascii_case(name)))
    {
        return Some(architectural(a.bit, caps));
    }
    if let Some(z) = ZEN_EVENTS.iter().find(|z| z.name == name) {
        return Some(zen(z, caps));
    }
    None
}

/// Every built-in event with its resolution on `caps`, in catalogue order (for `events list`).
pub fn list(caps: &PmuCaps) -> Vec<(&'static str, Result<EventDesc, Unsupported>)> {
    let mut out = Vec::new();
    for g in Generic::ALL {
        out.push((g.name(), generic(g, caps)));
    }
    if caps.vendor == Vendor::Intel {
        for a in &ARCH_EVENTS {
            out.push((a.name, architectural(a.bit, caps)));
        }
        for f in &FIXED_EVENTS {
            out.push((f.name, fixed(f.index, caps)));
        }
    } else {
        for z in &ZEN_EVENTS {
            out.push((z.name, zen(z, caps)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuModel;
    use crate::encode::gp_event_select;
    use crate::event::Modifiers;

    fn caps(s: &str) -> PmuCaps {
        PmuCaps::nominal(CpuModel::parse(s).unwrap())
    }

    fn config(e: &EventDesc) -> u64 {
        e.select.linux_config()
    }

    /// Every row of the generic-event table in pmu-facts.md §3, for every column.
    #[test]
    fn generic_table_matches_linux() {
        type Row = (
            Generic,
            Option<u64>,
            Option<u64>,
            Option<u64>,
            Option<u64>,
            Option<u64>,
        );
        // (generic, Intel, AMD legacy, Zen1, Zen2/3, Zen4+); None = not mapped.
        #[rustfmt::skip]
        let table: [Row; 10] = [
            (Generic::Cycles, Some(0x003c), Some(0x0076), Some(0x0076), Some(0x0076), Some(0x0076)),
            (Generic::Instructions, Some(0x00c0), Some(0x00c0), Some(0x00c0), Some(0x00c0), Some(0x00c0)),
            (Generic::CacheReferences, Some(0x4f2e), Some(0x077d), Some(0xff60), Some(0xff60), Some(0xff60)),
            (Generic::CacheMisses, Some(0x412e), Some(0x077e), Some(0x0964), Some(0x0964), Some(0x0964)),
            (Generic::BranchInstructions, Some(0x00c4), Some(0x00c2), Some(0x00c2), Some(0x00c2), Some(0x00c2)),
            (Generic::BranchMisses, Some(0x00c5), Some(0x00c3), Some(0x00c3), Some(0x00c3), Some(0x00c3)),
            (Generic::BusCycles, Some(0x013c), None, None, None, None),
            (Generic::RefCycles, None /* fixed counter 2 */, None, None, None, Some(0x1_0000_0120)),
            (Generic::StalledCyclesFrontend, None, Some(0x00d0), Some(0x0287), Some(0x00a9), Some(0x00a9)),
            (Generic::StalledCyclesBackend, None, Some(0x00d1), Some(0x0187), None, None),
        ];
        let columns = [
            caps("GenuineIntel-6-55"),
            caps("AuthenticAMD-16-2"),  // family 0x10: legacy map
            caps("AuthenticAMD-23-1"),  // Zen 1
            caps("AuthenticAMD-25-21"), // Zen 3 (Zen 2 map)
            caps("AuthenticAMD-25-11"), // Zen 4
        ];
        for (g, intel, legacy, zen1, zen2, zen4) in table {
            for (caps, want) in columns.iter().zip([intel, legacy, zen1, zen2, zen4]) {
                let got = generic(g, caps);
                match want {
                    Some(c) => assert_eq!(
                        got.as_ref().map(config),
                        Ok(c),
                        "{} on {:?}",
                        g.name(),
                        caps.cpu
                    ),
                    None if g == Generic::RefCycles && caps.vendor == Vendor::Intel => {
                        let e = got.unwrap();
                        assert_eq!(
                            (e.fixed, e.gp_counters),
                            (Some(2), None),
                            "ref-cycles is fixed counter 2 only"
                        );
                    }
                    None => assert!(
                        got.is_err(),
                        "{} should be unsupported on {:?}, got {got:?}",
                        g.name(),
                        caps.cpu
                    ),
                }
            }
        }
        // The Zen 2 map also applies to Zen 2 itself.
        assert_eq!(
            generic(Generic::StalledCyclesFrontend, &caps("AuthenticAMD-23-31"))
                .map(|e| config(&e)),
            Ok(0x00a9)
        );
    }

    #[test]
    fn aliases() {
        assert_eq!(
            Generic::from_name("branch-instructions"),
            Some(Generic::BranchInstructions)
        );
        assert_eq!(
            Generic::from_name("branches"),
            Some(Generic::BranchInstructions)
        );
        assert_eq!(Generic::from_name("cpu-cycles"), Some(Generic::Cycles));
        assert_eq!(Generic::from_name("cycle"), None);
    }

    #[test]
    fn intel_generic_events_use_fixed_counters_where_present() {
        let skx = caps("GenuineIntel-6-55");
        assert_eq!(generic(Generic::Instructions, &skx).unwrap().fixed, Some(0));
        assert_eq!(generic(Generic::Cycles, &skx).unwrap().fixed, Some(1));
        assert_eq!(generic(Generic::BranchMisses, &skx).unwrap().fixed, None);
        // v1 has no fixed counters: instructions stays on GP counters, ref-cycles is unsupported.
        let v1 = PmuCaps::from_intel_cpuid([0x0728_0201, 0, 0, 0], false, None);
        assert_eq!(generic(Generic::Instructions, &v1).unwrap().fixed, None);
        assert!(
            generic(Generic::RefCycles, &v1)
                .unwrap_err()
                .reason
                .contains("fixed counter 2")
        );
    }

    #[test]
    fn unavailable_architectural_events_are_not_supported_never_remapped() {
        // EBX bit 6 set: branch misses not available.
        let caps = PmuCaps::from_intel_cpuid([0x0730_0404, 1 << 6, 0, 0x603], true, None);
        let err = generic(Generic::BranchMisses, &caps).unwrap_err();
        assert!(err.reason.contains("EBX bit 6"), "{err}");
        assert!(architectural(6, &caps).is_err());
        // Only 5 events described: LLC misses (4) is fine, branches (5) is not.
        let short = PmuCaps::from_intel_cpuid([0x0530_0404, 0, 0, 0x603], true, None);
        assert!(generic(Generic::CacheMisses, &short).is_ok());
        assert!(
            generic(Generic::BranchInstructions, &short)
                .unwrap_err()
                .reason
                .contains("only 5")
        );
        // Nothing is supported without counters.
        let tcg = PmuCaps::tsc_only(Vendor::Intel, None);
        for g in Generic::ALL {
            assert!(generic(g, &tcg).is_err());
        }
    }

    #[test]
    fn every_architectural_event() {
        let mut all = PmuCaps::from_intel_cpuid([0x0d30_0805, 0, 0, 0x604], true, None);
        all.fixed_mask = 0b1111;
        for a in ARCH_EVENTS {
            let e = architectural(a.bit, &all).unwrap();
            assert_eq!(
                (e.select.code, e.select.umask),
                (u16::from(a.code), a.umask),
                "{}",
                a.name
            );
            assert_eq!(e.arch_bit, Some(a.bit));
            assert_eq!(
                ARCH_EVENTS[usize::from(a.bit)].bit,
                a.bit,
                "table is indexed by bit"
            );
            // The encoding with EN and USR|OS matches the SDM layout.
            let raw =
                gp_event_select(Vendor::Intel, &e.select, &Modifiers::default(), true).unwrap();
            assert_eq!(
                raw,
                0x0043_0000 | u64::from(a.umask) << 8 | u64::from(a.code)
            );
            // Each unavailable bit makes exactly that event unsupported.
            let mut without = all;
            without.arch_events_unavailable = 1 << a.bit;
            assert!(architectural(a.bit, &without).is_err());
            assert!(
                ARCH_EVENTS
                    .iter()
                    .filter(|b| b.bit != a.bit)
                    .all(|b| architectural(b.bit, &without).is_ok())
            );
        }
        assert!(architectural(13, &all).is_err());
    }

    #[test]
    fn fixed_events() {
        let spr = caps("GenuineIntel-6-8F");
        let slots = fixed(3, &spr).unwrap();
        assert_eq!(slots.fixed, Some(3));
        let ref_tsc = fixed(2, &spr).unwrap();
        assert_eq!((ref_tsc.fixed, ref_tsc.gp_counters), (Some(2), None));
        assert_eq!(
            (ref_tsc.select.code, ref_tsc.select.umask),
            (0, 3),
            "perfmon pseudo encoding"
        );
        let inst = fixed(0, &spr).unwrap();
        assert_eq!(
            (inst.select.code, inst.gp_counters),
            (0xc0, Some(u32::MAX)),
            "falls back to INST_RETIRED.ANY_P"
        );
        assert!(
            fixed(3, &caps("GenuineIntel-6-55")).is_err(),
            "Skylake has 3 fixed counters"
        );
        assert!(
            by_name("inst_retired.any", &spr).is_some(),
            "perfmon names are case-insensitive"
        );
    }

    #[test]
    fn zen_events_by_generation() {
        let zen3 = caps("AuthenticAMD-25-21");
        let e = by_name("ex_ret_brn_misp", &zen3).unwrap().unwrap();
        assert_eq!(e.select.code, 0xc3);
        assert!(by_name("ex_ret_fused_instr", &zen3).unwrap().is_ok());
        assert!(
            by_name("ex_ret_fused_instr", &caps("AuthenticAMD-23-1"))
                .unwrap()
                .is_err()
        );
        let p0 = by_name(
            "ls_not_halted_p0_cyc.p0_freq_cyc",
            &caps("AuthenticAMD-25-11"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            gp_event_select(Vendor::Amd, &p0.select, &Modifiers::default(), true),
            Ok(0x1_0043_0120)
        );
        assert!(
            by_name("ex_ret_instr", &caps("GenuineIntel-6-55"))
                .unwrap()
                .is_err()
        );
        assert!(by_name("no-such-event", &zen3).is_none());
    }

    #[test]
    fn listing_covers_the_catalogue() {
        let intel = list(&caps("GenuineIntel-6-55"));
        assert_eq!(intel.len(), 10 + 13 + 4);
        let amd = list(&caps("AuthenticAMD-25-11"));
        assert_eq!(amd.len(), 10 + ZEN_EVENTS.len());
        assert!(amd.iter().all(|(name, r)| !name.is_empty()
            && (r.is_ok() || !r.as_ref().unwrap_err().reason.is_empty())));
    }
}

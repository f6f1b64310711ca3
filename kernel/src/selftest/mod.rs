//! The `selftest` boot mode: checks a real PMU on the user's hardware or KVM, the way
//! kvm-unit-tests' `x86/pmu.c` checks a hypervisor's virtual PMU, with its coverage of what
//! applies to bare metal (docs/pmu.md has the table of checks).
//!
//! Each check produces one `selftest` record with `pass`, `fail` or `skip` and a detail; a
//! `selftest_summary` record closes the list. Without counters (QEMU's TCG) every check is a
//! skip with its reason, and the run succeeds: nothing was tested, nothing failed.
//!
//! This module is the pure part, host-tested: which checks apply to which PMU, the events and
//! the ranges they must count in, the MSRs a check writes and what a write must leave, and the
//! verdicts on overflow counts. Running the checks needs the machine (`live`).

#[cfg(target_os = "none")]
pub mod live;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use events::catalog::ARCH_EVENTS;
use events::event::EventSelect;
use events::pmu::{PmuCaps, PmuKind};

use crate::pmu::backend::Counter;
use crate::pmu::intel::{legacy_write_result, width_mask};
use crate::pmu::regs;

/// The checks, in the order they run (kvm-unit-tests' order where it has them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// RDPMC of a counter that does not exist (ECX = 64) faults, while RDPMC(0) reads.
    RdpmcInvalid,
    /// Core cycles on every GP counter: [N, 50N] for the known loop.
    GpCycles,
    /// Instructions on every GP counter: [10N, 10.2N].
    GpInstructions,
    /// Intel reference cycles (0x013C) on every GP counter: at most the TSC's ticks, at least
    /// a thousandth of them.
    GpRefCycles,
    /// Intel LLC references on every GP counter, over a walk of a buffer larger than L2.
    GpLlcReferences,
    /// Intel LLC misses on every GP counter, over the same walk.
    GpLlcMisses,
    /// Branch instructions on every GP counter: [N, 1.1N].
    GpBranches,
    /// Branch misses on every GP counter: [0, 0.1N] (no IBPB to force one).
    GpBranchMisses,
    /// Fixed counters 0-2: instructions [10N, 10.2N], cycles [N, 30N], ref cycles [0.1N, 30N].
    FixedCounters,
    /// v5: the counters CPUID.0AH:ECX (with EDX[4:0]) lists are readable and count; the first
    /// one it does not list faults.
    FixedBitmap,
    /// RDPMC of every GP counter returns what was written.
    RdpmcGp,
    /// RDPMC of every fixed counter (ECX bit 30) returns what was written.
    RdpmcFixed,
    /// The "fast" RDPMC (ECX bit 31) returns the low 32 bits or raises #GP; never a wrong value.
    RdpmcFast,
    /// Every GP and fixed counter enabled at once, each counting its event in range.
    AllCounters,
    /// Every GP and fixed counter overflows: preset 1 - N, count exactly 1 after N events
    /// (Intel), status bit set and cleared through the clear MSR, a PMI exactly when INT is set.
    Overflow,
    /// cmask = 2 on instructions counts fewer than 10N.
    CounterMask,
    /// A WRMSR to a running counter takes, and counting goes on from the value written.
    RunningWrite,
    /// Legacy writes (IA32_PMCx) keep 32 bits sign-extended.
    LegacyWrite,
    /// Full-width writes (IA32_A_PMCx; AMD's counters) keep the value to the width; a wider one
    /// raises #GP (Intel), caught by the MSR door.
    FullWidthWrite,
    /// Writes to the global control and status registers: AMD PerfMonV2 drops reserved bits
    /// and ignores writes to the read-only GlobalStatus (Linux's driver relies on it); Intel
    /// raises #GP for both.
    GlobalWrites,
    /// The PMI arrives while the measured loop runs with interrupts on and the PMU free, and
    /// the kernel's handler takes it: handled, acknowledged, LVTPC unmasked, exact count.
    PmiHandler,
    /// RDPMC from ring 3: returns the counter with CR4.PCE set, faults with it clear.
    RdpmcRing3,
}

impl Check {
    pub const ALL: [Check; 22] = [
        Check::RdpmcInvalid,
        Check::GpCycles,
        Check::GpInstructions,
        Check::GpRefCycles,
        Check::GpLlcReferences,
        Check::GpLlcMisses,
        Check::GpBranches,
        Check::GpBranchMisses,
        Check::FixedCounters,
        Check::FixedBitmap,
        Check::RdpmcGp,
        Check::RdpmcFixed,
        Check::RdpmcFast,
        Check::AllCounters,
        Check::Overflow,
        Check::CounterMask,
        Check::RunningWrite,
        Check::LegacyWrite,
        Check::FullWidthWrite,
        Check::GlobalWrites,
        Check::PmiHandler,
        Check::RdpmcRing3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::RdpmcInvalid => "rdpmc-invalid",
            Check::GpCycles => "gp-cycles",
            Check::GpInstructions => "gp-instructions",
            Check::GpRefCycles => "gp-ref-cycles",
            Check::GpLlcReferences => "gp-llc-references",
            Check::GpLlcMisses => "gp-llc-misses",
            Check::GpBranches => "gp-branches",
            Check::GpBranchMisses => "gp-branch-misses",
            Check::FixedCounters => "fixed-counters",
            Check::FixedBitmap => "fixed-bitmap",
            Check::RdpmcGp => "rdpmc-gp",
            Check::RdpmcFixed => "rdpmc-fixed",
            Check::RdpmcFast => "rdpmc-fast",
            Check::AllCounters => "all-counters",
            Check::Overflow => "overflow",
            Check::CounterMask => "cmask",
            Check::RunningWrite => "running-write",
            Check::LegacyWrite => "legacy-write",
            Check::FullWidthWrite => "full-width-write",
            Check::GlobalWrites => "global-writes",
            Check::PmiHandler => "pmi-handler",
            Check::RdpmcRing3 => "rdpmc-ring3",
        }
    }

    /// The GP-event checks, in order.
    pub const GP_EVENTS: [Check; 7] = [
        Check::GpCycles,
        Check::GpInstructions,
        Check::GpRefCycles,
        Check::GpLlcReferences,
        Check::GpLlcMisses,
        Check::GpBranches,
        Check::GpBranchMisses,
    ];
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
    /// `Pass(detail)` when `ok`, else `Fail(detail)`.
    pub fn verdict(ok: bool, detail: String) -> Outcome {
        if ok {
            Outcome::Pass(detail)
        } else {
            Outcome::Fail(detail)
        }
    }
}

/// How a GP event's count is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Over the known loop of N iterations: [lo, hi] tenths of N (kvm-unit-tests' ranges).
    Loop { lo_tenths: u64, hi_tenths: u64 },
    /// Reference cycles: at most the TSC ticks around the measurement (they never tick faster
    /// than the TSC), at least a thousandth of them (the bus or crystal clock is slower, by
    /// about 100 on current parts; kvm-unit-tests calibrates against the TSC likewise).
    RefCycles,
    /// Over the memory walk of `lines` cache lines: at least `min`, at most `hi_tenths` tenths
    /// of `lines`.
    Walk { min: u64, hi_tenths: u64 },
}

/// One GP event check: the event and its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// kvm-unit-tests' name for it.
    pub name: &'static str,
    pub select: EventSelect,
    /// Intel: the CPUID.0AH:EBX bit that says whether it is available.
    pub arch_bit: Option<u8>,
    pub expect: Expect,
}

const fn loop_range(lo_tenths: u64, hi_tenths: u64) -> Expect {
    Expect::Loop {
        lo_tenths,
        hi_tenths,
    }
}

/// The event a GP-event check counts on this PMU (`None`: it is not one, or the vendor has no
/// such event). Intel's come from the architectural table, AMD's are kvm-unit-tests'
/// `amd_gp_events`.
pub fn gp_event(check: Check, caps: &PmuCaps) -> Option<EventSpec> {
    let intel = |bit: u8, name: &'static str, expect: Expect| {
        let a = &ARCH_EVENTS[usize::from(bit)];
        EventSpec {
            name,
            select: EventSelect::new(u16::from(a.code), a.umask),
            arch_bit: Some(bit),
            expect,
        }
    };
    let amd = |code: u16, name: &'static str, expect: Expect| EventSpec {
        name,
        select: EventSelect::new(code, 0),
        arch_bit: None,
        expect,
    };
    match caps.kind {
        PmuKind::IntelArch { .. } => Some(match check {
            Check::GpCycles => intel(0, "core cycles", loop_range(10, 500)),
            Check::GpInstructions => intel(1, "instructions", loop_range(100, 102)),
            Check::GpRefCycles => intel(2, "ref cycles", Expect::RefCycles),
            Check::GpLlcReferences => intel(
                3,
                "llc references",
                Expect::Walk {
                    min: 1,
                    hi_tenths: 25,
                },
            ),
            // Without CLFLUSH (a kernel/hw instruction) nothing forces a miss: at least 0, as
            // kvm-unit-tests accepts on CPUs without it.
            Check::GpLlcMisses => intel(
                4,
                "llc misses",
                Expect::Walk {
                    min: 0,
                    hi_tenths: 10,
                },
            ),
            Check::GpBranches => intel(5, "branches", loop_range(10, 11)),
            // Without IBPB nothing forces a misprediction: at least 0 (kvm-unit-tests likewise).
            Check::GpBranchMisses => intel(6, "branch misses", loop_range(0, 1)),
            _ => return None,
        }),
        PmuKind::AmdLegacy | PmuKind::AmdExtCore | PmuKind::AmdPerfMonV2 => Some(match check {
            Check::GpCycles => amd(0x76, "core cycles", loop_range(10, 500)),
            Check::GpInstructions => amd(0xc0, "instructions", loop_range(100, 102)),
            Check::GpBranches => amd(0xc2, "branches", loop_range(10, 11)),
            Check::GpBranchMisses => amd(0xc3, "branch misses", loop_range(0, 1)),
            _ => return None,
        }),
        PmuKind::TscOnly => None,
    }
}

/// The instructions event of this PMU (the overflow, cmask and write checks count it).
pub fn instructions(caps: &PmuCaps) -> Option<EventSelect> {
    gp_event(Check::GpInstructions, caps).map(|e| e.select)
}

/// The range `expect` accepts: `n` loop iterations, `tsc` ticks around the measurement,
/// `lines` cache lines walked.
pub fn expected_range(expect: Expect, n: u64, tsc: u64, lines: u64) -> (u64, u64) {
    match expect {
        Expect::Loop {
            lo_tenths,
            hi_tenths,
        } => (n * lo_tenths / 10, n * hi_tenths / 10),
        Expect::RefCycles => ((tsc / 1000).max(1), tsc),
        Expect::Walk { min, hi_tenths } => (min, lines * hi_tenths / 10),
    }
}

/// The fixed counters the selftest judges (kvm-unit-tests' `fixed_events`), with their
/// ranges in tenths of N: instructions, core cycles, reference cycles (counted at the TSC's
/// rate, so unscaled).
pub const FIXED_RANGES: [(&str, u64, u64); 3] = [
    ("instructions", 100, 102),
    ("core cycles", 10, 300),
    ("ref cycles", 1, 300),
];

/// The range fixed counter `index` must count in over the known loop (`None` past FC2).
pub fn fixed_range(index: u8, n: u64) -> Option<(&'static str, u64, u64)> {
    FIXED_RANGES
        .get(usize::from(index))
        .map(|&(name, lo, hi)| (name, n * lo / 10, n * hi / 10))
}

/// The event select that programs fixed counter `index`: the perfmon pseudo encoding (code 0,
/// umask index + 1), which the Intel backend accepts for any fixed counter.
pub fn fixed_select(index: u8) -> EventSelect {
    EventSelect::new(0, index.saturating_add(1))
}

/// What CPUID.0AH says about the fixed counters from v5 on: counter i exists when ECX bit i is
/// set or i < EDX[4:0] (SDM vol. 3B, "Architectural Performance Monitoring Version 5").
pub fn fixed_bitmap(leaf_0a: [u32; 4]) -> u32 {
    let [_, _, ecx, edx] = leaf_0a;
    let count = edx & 0x1f;
    let below = if count >= 32 {
        u32::MAX
    } else {
        (1u32 << count) - 1
    };
    ecx | below
}

/// The lowest fixed index below 16 (the fields of FIXED_CTR_CTRL) that `mask` does not list.
pub fn first_missing_fixed(mask: u32) -> Option<u8> {
    (0..16u8).find(|&i| mask & (1 << i) == 0)
}

/// Why `check` cannot run on this PMU, or `None` if it applies. `backend_reason` is discovery's
/// sentence, quoted when there are no counters.
pub fn skip_reason(check: Check, caps: &PmuCaps, backend_reason: &str) -> Option<String> {
    if caps.kind == PmuKind::TscOnly {
        return Some(format!("no programmable counters: {backend_reason}"));
    }
    let intel = caps.intel_version();
    let amd_only = "an Intel-only behaviour; this is an AMD PMU";
    if Check::GP_EVENTS.contains(&check) {
        return match gp_event(check, caps) {
            None => Some(
                "not an AMD event (kvm-unit-tests' AMD list: core cycles, instructions, branches, branch misses)"
                    .into(),
            ),
            Some(EventSpec {
                arch_bit: Some(bit),
                name,
                ..
            }) if !caps.arch_event_available(bit) => Some(if bit >= caps.arch_events_len {
                format!(
                    "{name}: the PMU describes only {} architectural events and this is event {bit} (CPUID.0AH:EAX[31:24])",
                    caps.arch_events_len
                )
            } else {
                format!(
                    "{name}: CPUID.0AH:EBX bit {bit} says the architectural event is not available"
                )
            }),
            Some(_) => None,
        };
    }
    match check {
        Check::FixedCounters | Check::RdpmcFixed if caps.fixed_mask == 0 => {
            Some("this PMU has no fixed counters".into())
        }
        Check::FixedBitmap => match intel {
            None => Some(amd_only.into()),
            Some(v) if v < 5 => Some(format!(
                "the fixed-counter bitmap (CPUID.0AH:ECX) exists from architectural PMU v5; this is v{v}"
            )),
            _ => None,
        },
        Check::RdpmcFast | Check::LegacyWrite if intel.is_none() => Some(amd_only.into()),
        Check::FullWidthWrite if intel.is_some() && !caps.full_width_write => {
            Some("PERF_CAPABILITIES.FW_WRITE is clear: no full-width counter writes".into())
        }
        Check::GlobalWrites if !has_status(caps) => Some(
            "no global control and status registers (Intel before v2, AMD before PerfMonV2)".into(),
        ),
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

/// Whether the PMU has an overflow status register (Intel v2+, AMD PerfMonV2). Without one an
/// overflow shows only in the counter's value and the PMI.
pub fn has_status(caps: &PmuCaps) -> bool {
    match caps.kind {
        PmuKind::IntelArch { version } => version >= 2,
        PmuKind::AmdPerfMonV2 => true,
        _ => false,
    }
}

/// The MSR a counter is written through by a plain write: Intel GP counters through IA32_A_PMCx
/// with FW_WRITE, else IA32_PMCx; AMD's counter register; Intel fixed counters directly.
pub fn write_msr(caps: &PmuCaps, counter: Counter) -> u32 {
    match (caps.kind, counter) {
        (PmuKind::IntelArch { .. }, Counter::Gp(n)) if caps.full_width_write => {
            regs::intel::A_PMC0 + u32::from(n)
        }
        (PmuKind::IntelArch { .. }, Counter::Gp(n)) => regs::intel::PMC0 + u32::from(n),
        (_, Counter::Fixed(i)) => regs::intel::FIXED_CTR0 + u32::from(i),
        (PmuKind::AmdLegacy, Counter::Gp(n)) => regs::amd::PERF_CTR0 + u32::from(n),
        (_, Counter::Gp(n)) => regs::amd::EXT_CTR0 + 2 * u32::from(n),
    }
}

/// One WRMSR of the `global-writes` check and what the PMU must make of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalWrite {
    pub msr: u32,
    pub value: u64,
    /// Whether the write must raise #GP (Intel: a read-only MSR or a reserved bit); on AMD
    /// none may.
    pub faults: bool,
    /// After it, `read` masked with `mask` must equal `expect`.
    pub read: u32,
    pub mask: u64,
    pub expect: u64,
}

/// A bit no PMU defines in GLOBAL_CTRL (Intel: between the GP counters and the fixed ones at
/// 32) or in AMD's GlobalCtl and GlobalStatus (counters in 5:0, LBR and freeze flags from 58).
const RESERVED_GLOBAL_BIT: u64 = 1 << 31;
const AMD_RESERVED_GLOBAL_BIT: u64 = 1 << 40;
/// GlobalStatus bit 58, LbrFreeze: what Linux's PerfMonV2 driver writes to StatusClr (with the
/// counters' bits) at CPU start-up, defined or not.
const AMD_LBR_FREEZE: u64 = 1 << 58;

/// The writes of the `global-writes` check, in order, on a PMU whose global control reads
/// `ctl` (the last write puts it back). Empty without global registers.
///
/// AMD ignores writes to reserved bits and to read-only PMU MSRs (the PPR: "RO: writes are
/// ignored"; KVM's `kvm_pmu_set_msr` likewise): each write must act on the counters' bits and
/// raise nothing. Intel raises #GP for a write to GLOBAL_STATUS and for a reserved bit of
/// GLOBAL_CTRL, which then stays as it was.
pub fn global_writes(caps: &PmuCaps, ctl: u64) -> Vec<GlobalWrite> {
    let counters = u64::from(caps.gp_mask());
    match caps.kind {
        PmuKind::IntelArch { version } if version >= 2 => {
            use regs::intel as r;
            let mut writes = alloc::vec![GlobalWrite {
                msr: r::PERF_GLOBAL_STATUS,
                value: 0,
                faults: true,
                read: r::PERF_GLOBAL_CTRL,
                mask: u64::MAX,
                expect: ctl,
            }];
            if counters & RESERVED_GLOBAL_BIT == 0 {
                writes.push(GlobalWrite {
                    msr: r::PERF_GLOBAL_CTRL,
                    value: ctl | RESERVED_GLOBAL_BIT,
                    faults: true,
                    read: r::PERF_GLOBAL_CTRL,
                    mask: u64::MAX,
                    expect: ctl,
                });
            }
            writes
        }
        PmuKind::AmdPerfMonV2 => {
            use regs::amd as r;
            let write = |msr, value, read, expect| GlobalWrite {
                msr,
                value,
                faults: false,
                read,
                mask: counters,
                expect,
            };
            alloc::vec![
                // StatusSet with a reserved bit: the counters' bits are set.
                write(
                    r::GLOBAL_STATUS_SET,
                    counters | AMD_RESERVED_GLOBAL_BIT,
                    r::GLOBAL_STATUS,
                    counters
                ),
                // GlobalStatus is read-only: neither 0 nor all ones changes it.
                write(r::GLOBAL_STATUS, 0, r::GLOBAL_STATUS, counters),
                // Linux's start-up write: the counters' bits and LbrFreeze.
                write(
                    r::GLOBAL_STATUS_CLR,
                    counters | AMD_LBR_FREEZE,
                    r::GLOBAL_STATUS,
                    0
                ),
                write(r::GLOBAL_STATUS, counters, r::GLOBAL_STATUS, 0),
                // GlobalCtl with a reserved bit: the counters' enables take (their event
                // selects are off between checks, so nothing counts).
                write(
                    r::GLOBAL_CTL,
                    counters | AMD_RESERVED_GLOBAL_BIT,
                    r::GLOBAL_CTL,
                    counters
                ),
                write(r::GLOBAL_CTL, ctl, r::GLOBAL_CTL, ctl & counters),
            ]
        }
        _ => Vec::new(),
    }
}

/// What a plain write of `value` leaves in a counter of `width` bits: the value masked to the
/// width, or, through Intel's legacy alias, its low 32 bits sign-extended.
pub fn written_value(caps: &PmuCaps, counter: Counter, value: u64, width: u8) -> u64 {
    match (caps.kind, counter) {
        (PmuKind::IntelArch { .. }, Counter::Gp(_)) if !caps.full_width_write => {
            legacy_write_result(value, width)
        }
        _ => value & width_mask(width),
    }
}

/// The preset that makes a counter of `width` bits overflow after `events` events, one past
/// the wrap so the overflow is certain (kvm-unit-tests: `1 - count`, as the SDM advises).
pub fn overflow_preset(events: u64, width: u8) -> u64 {
    1u64.wrapping_sub(events) & width_mask(width)
}

/// Whether an instruction counter preset with [`overflow_preset`] of the count it measured
/// before counted right after the same code again: Intel exactly 1 (the same instructions
/// retire); AMD, whose counts may differ by a few, all ones (not yet wrapped) or below 7
/// (kvm-unit-tests' rule).
pub fn overflow_count_ok(caps: &PmuCaps, value: u64, width: u8) -> bool {
    if caps.intel_version().is_some() {
        value == 1
    } else {
        value == width_mask(width) || value < 7
    }
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

/// Whether `count` lies in [lo, hi].
pub fn in_range(count: u64, lo: u64, hi: u64) -> bool {
    (lo..=hi).contains(&count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::cpu::{CpuModel, Vendor};

    fn skipped(caps: &PmuCaps) -> Vec<&'static str> {
        plan(caps, "")
            .into_iter()
            .filter(|(_, s)| s.is_some())
            .map(|(c, _)| c.name())
            .collect()
    }

    /// CPUID 0x0A of the emulated PMU's Intel models (emulator/patches, `x86_pmu_cpuid`).
    fn emulated_intel(version: u32) -> PmuCaps {
        let eax = version | (4 << 8) | (48 << 16) | (if version >= 5 { 8 } else { 7 } << 24);
        let ebx = (1 << 3) | (1 << 4) | (1 << 6) | if version >= 5 { 1 << 7 } else { 0 };
        let ecx = if version >= 5 { 0x7 } else { 0 };
        let edx = 3 | (48 << 5);
        PmuCaps::from_intel_cpuid([eax, ebx, ecx, edx], version >= 4, None)
    }

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
    fn a_full_intel_v5_pmu_runs_every_check() {
        let caps = PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-6A").unwrap());
        assert_eq!(caps.intel_version(), Some(5));
        assert!(skipped(&caps).is_empty(), "{:?}", skipped(&caps));
        // A v4 part lacks only the bitmap.
        let skylake = PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-55").unwrap());
        assert_eq!(skipped(&skylake), ["fixed-bitmap"]);
    }

    /// The checks each emulated model skips: events its CPUID marks unavailable, and what the
    /// model genuinely lacks. tests/tests/selftest_emulated.rs expects the same sets.
    #[test]
    fn the_emulated_models_skip_exactly_what_they_lack() {
        let masked = ["gp-llc-references", "gp-llc-misses", "gp-branch-misses"];
        let mut v2 = masked.to_vec();
        v2.extend(["fixed-bitmap", "full-width-write"]);
        v2.sort_unstable();
        let mut got = skipped(&emulated_intel(2));
        got.sort_unstable();
        assert_eq!(got, v2);
        let mut v4 = masked.to_vec();
        v4.push("fixed-bitmap");
        v4.sort_unstable();
        let mut got = skipped(&emulated_intel(4));
        got.sort_unstable();
        assert_eq!(got, v4);
        let mut got = skipped(&emulated_intel(5));
        got.sort_unstable();
        let mut v5 = masked.to_vec();
        v5.sort_unstable();
        assert_eq!(got, v5);
        let amd_skips = [
            "gp-ref-cycles",
            "gp-llc-references",
            "gp-llc-misses",
            "fixed-counters",
            "fixed-bitmap",
            "rdpmc-fixed",
            "rdpmc-fast",
            "legacy-write",
        ];
        assert_eq!(skipped(&PmuCaps::amd(true, Some(6), None)), amd_skips);
        // Without PerfMonV2 there are no global registers to write.
        let mut without_global = amd_skips.to_vec();
        without_global.insert(8, "global-writes");
        for caps in [
            PmuCaps::amd(false, None, None),
            PmuCaps::amd(true, None, None),
        ] {
            assert_eq!(skipped(&caps), without_global, "{:?}", caps.kind);
        }
    }

    #[test]
    fn masked_events_skip_with_the_cpuid_bit() {
        let caps = emulated_intel(4);
        let reason = skip_reason(Check::GpBranchMisses, &caps, "").unwrap();
        assert!(reason.contains("CPUID.0AH:EBX bit 6"), "{reason}");
        let short = PmuCaps::from_intel_cpuid(
            [2 | (4 << 8) | (48 << 16) | (2 << 24), 0, 0, 3 | (48 << 5)],
            false,
            None,
        );
        let reason = skip_reason(Check::GpRefCycles, &short, "").unwrap();
        assert!(reason.contains("only 2 architectural events"), "{reason}");
        assert!(skip_reason(Check::GpInstructions, &short, "").is_none());
    }

    #[test]
    fn old_intel_skips_what_it_lacks() {
        let v1 = PmuCaps::from_intel_cpuid([0x0728_0201, 0, 0, 0], false, None);
        let s = skipped(&v1);
        for name in [
            "fixed-counters",
            "rdpmc-fixed",
            "fixed-bitmap",
            "full-width-write",
            "global-writes",
        ] {
            assert!(s.contains(&name), "{name} in {s:?}");
        }
        assert!(!s.contains(&"overflow") && !s.contains(&"legacy-write"));
        assert!(!has_status(&v1));
        assert!(has_status(&emulated_intel(2)));
        assert!(has_status(&PmuCaps::amd(true, Some(6), None)));
        assert!(!has_status(&PmuCaps::amd(true, None, None)));
    }

    /// AMD PerfMonV2: every write acts on the counters' bits and none faults, Linux's
    /// start-up write to StatusClr (LbrFreeze, bit 58) and writes to GlobalStatus included.
    #[test]
    fn amd_global_writes_must_not_fault_and_act_on_the_counters() {
        use regs::amd as r;
        let caps = PmuCaps::amd(true, Some(6), None);
        let w = global_writes(&caps, 0x5);
        assert!(w.iter().all(|w| !w.faults && w.mask == 0x3f));
        assert!(
            w.iter()
                .any(|w| w.msr == r::GLOBAL_STATUS_CLR && w.value == 0x3f | 1 << 58)
        );
        let to_status: Vec<_> = w.iter().filter(|w| w.msr == r::GLOBAL_STATUS).collect();
        assert_eq!(to_status.len(), 2);
        // Status set before the first, cleared before the second: each must leave it alone.
        assert_eq!((to_status[0].expect, to_status[1].expect), (0x3f, 0));
        assert!(
            w.iter()
                .any(|w| w.msr == r::GLOBAL_STATUS_SET && w.value & !0x3f != 0)
        );
        assert!(
            w.iter()
                .any(|w| w.msr == r::GLOBAL_CTL && w.value == 0x3f | 1 << 40 && w.expect == 0x3f)
        );
        // The last write restores GlobalCtl.
        let last = w.last().unwrap();
        assert_eq!(
            (last.msr, last.value, last.expect),
            (r::GLOBAL_CTL, 0x5, 0x5)
        );
        assert!(global_writes(&PmuCaps::amd(true, None, None), 0).is_empty());
    }

    /// Intel: GLOBAL_STATUS is read-only and GLOBAL_CTRL's reserved bits raise #GP, which
    /// leaves GLOBAL_CTRL as it was.
    #[test]
    fn intel_global_writes_must_fault_and_change_nothing() {
        use regs::intel as r;
        let caps = emulated_intel(4);
        let w = global_writes(&caps, 0x7_0000_000f);
        assert_eq!(w.len(), 2);
        assert!(w.iter().all(|w| w.faults && w.read == r::PERF_GLOBAL_CTRL));
        assert!(w.iter().all(|w| w.expect == 0x7_0000_000f));
        assert_eq!(w[0].msr, r::PERF_GLOBAL_STATUS);
        assert_eq!((w[1].msr, w[1].value), (r::PERF_GLOBAL_CTRL, 0x7_8000_000f));
        let v1 = PmuCaps::from_intel_cpuid([0x0728_0201, 0, 0, 0], false, None);
        assert!(global_writes(&v1, 0).is_empty());
    }

    #[test]
    fn events_are_the_architectural_and_amd_encodings() {
        let intel = emulated_intel(4);
        let e = gp_event(Check::GpRefCycles, &intel).unwrap();
        assert_eq!((e.select.code, e.select.umask), (0x3c, 0x01));
        let e = gp_event(Check::GpLlcReferences, &intel).unwrap();
        assert_eq!((e.select.code, e.select.umask), (0x2e, 0x4f));
        assert_eq!(
            instructions(&intel).map(|s| (s.code, s.umask)),
            Some((0xc0, 0))
        );
        let amd = PmuCaps::amd(true, Some(6), None);
        assert_eq!(gp_event(Check::GpCycles, &amd).unwrap().select.code, 0x76);
        assert_eq!(gp_event(Check::GpBranches, &amd).unwrap().select.code, 0xc2);
        assert!(gp_event(Check::GpRefCycles, &amd).is_none());
        assert!(gp_event(Check::Overflow, &amd).is_none());
    }

    #[test]
    fn ranges_are_kvm_unit_tests() {
        let n = 100_000;
        let r = |c| expected_range(gp_event(c, &emulated_intel(4)).unwrap().expect, n, 0, 0);
        assert_eq!(r(Check::GpInstructions), (1_000_000, 1_020_000));
        assert_eq!(r(Check::GpCycles), (100_000, 5_000_000));
        assert_eq!(r(Check::GpBranches), (100_000, 110_000));
        assert_eq!(r(Check::GpBranchMisses), (0, 10_000));
        assert_eq!(
            expected_range(Expect::RefCycles, n, 5_000_000, 0),
            (5_000, 5_000_000)
        );
        assert_eq!(
            expected_range(
                Expect::Walk {
                    min: 1,
                    hi_tenths: 25
                },
                n,
                0,
                32_768
            ),
            (1, 81_920)
        );
        assert_eq!(
            fixed_range(0, n),
            Some(("instructions", 1_000_000, 1_020_000))
        );
        assert_eq!(fixed_range(2, n), Some(("ref cycles", 10_000, 3_000_000)));
        assert_eq!(fixed_range(3, n), None);
        assert!(in_range(5, 5, 5) && !in_range(6, 5, 5));
    }

    #[test]
    fn the_fixed_bitmap_is_ecx_or_the_count() {
        assert_eq!(fixed_bitmap([0, 0, 0x7, 3 | (48 << 5)]), 0x7);
        assert_eq!(fixed_bitmap([0, 0, 0b1001, 0]), 0b1001);
        assert_eq!(fixed_bitmap([0, 0, 0, 4]), 0xf);
        assert_eq!(first_missing_fixed(0x7), Some(3));
        assert_eq!(first_missing_fixed(0b1001), Some(1));
        assert_eq!(first_missing_fixed(0xffff), None);
        assert_eq!(fixed_select(2), EventSelect::new(0, 3));
    }

    #[test]
    fn writes_go_through_the_alias_the_pmu_has() {
        let v4 = emulated_intel(4);
        let v2 = emulated_intel(2);
        assert_eq!(write_msr(&v4, Counter::Gp(1)), 0x4c2);
        assert_eq!(write_msr(&v2, Counter::Gp(1)), 0xc2);
        assert_eq!(write_msr(&v2, Counter::Fixed(2)), 0x30b);
        assert_eq!(
            write_msr(&PmuCaps::amd(false, None, None), Counter::Gp(3)),
            0xc001_0007
        );
        assert_eq!(
            write_msr(&PmuCaps::amd(true, Some(6), None), Counter::Gp(5)),
            0xc001_020b
        );
        let wide = 0xff01_2345_6789;
        assert_eq!(written_value(&v4, Counter::Gp(0), wide, 48), wide);
        assert_eq!(written_value(&v2, Counter::Gp(0), wide, 48), 0x2345_6789);
        assert_eq!(
            written_value(&v2, Counter::Gp(0), 0x8000_0000, 48),
            0xffff_8000_0000
        );
        assert_eq!(written_value(&v2, Counter::Fixed(0), wide, 48), wide);
    }

    #[test]
    fn overflow_presets_and_verdicts() {
        assert_eq!(overflow_preset(1000, 48), 0xffff_ffff_fc19);
        assert_eq!(
            overflow_preset(1000, 48).wrapping_add(1000) & width_mask(48),
            1
        );
        let intel = emulated_intel(4);
        assert!(overflow_count_ok(&intel, 1, 48));
        assert!(!overflow_count_ok(&intel, 0, 48) && !overflow_count_ok(&intel, 2, 48));
        let amd = PmuCaps::amd(true, None, None);
        assert!(overflow_count_ok(&amd, 1, 48));
        assert!(overflow_count_ok(&amd, 6, 48));
        assert!(overflow_count_ok(&amd, width_mask(48), 48));
        assert!(!overflow_count_ok(&amd, 7, 48));
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Check::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Check::ALL.len());
    }
}

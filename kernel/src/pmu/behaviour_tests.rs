//! Behaviour of every backend against the simulated PMU: the kvm-unit-tests `x86/pmu.c` cases
//! (../shared/reference/platform-facts.md, "Verifying a PMU driver when no PMU is present")
//! adapted to the model, plus the driver's own promises (refusals before any MSR access, writes
//! with the counter stopped, PMI handling that keeps the running set) and property tests.
//!
//! Configurations: Intel v1 (2 x 40 bits), v2 (Core 2, no FW_WRITE, 3 fixed x 40), v3 (no
//! FW_WRITE, 4 x 48), v4 (Skylake, FW_WRITE), v5 (8 GP, 4 fixed), AMD legacy, PerfCtrExtCore and
//! PerfMonV2 with 6 counters.

use alloc::vec::Vec;

use events::encode::{EncodeError, Field};
use events::event::{EventSelect, Modifiers};
use events::pmu::{PmuCaps, PmuKind};
use proptest::prelude::*;

use super::amd::AmdPmu;
use super::backend::{Counter, CounterSet, PmuBackend, PmuError};
use super::intel::IntelArchPmu;
use super::msr::{Msr, MsrFault, RecordingMsr};
use super::sim::{AmdFlavour, IntelConfig, SimPmu};

const GPF: MsrFault = MsrFault::GeneralProtection;
/// kvm-unit-tests' test value for counter writes.
const VAL: u64 = 0xff01_2345_6789;

fn mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn sext32(v: u64) -> u64 {
    v as u32 as i32 as i64 as u64
}

/// Either backend, with the inherent methods the trait lacks.
enum Backend {
    Intel(IntelArchPmu),
    Amd(AmdPmu),
}

impl Backend {
    fn for_caps(caps: PmuCaps) -> Backend {
        match caps.kind {
            PmuKind::IntelArch { .. } => Backend::Intel(IntelArchPmu::new(caps)),
            _ => Backend::Amd(AmdPmu::new(caps)),
        }
    }

    fn dyn_mut(&mut self) -> &mut dyn PmuBackend {
        match self {
            Backend::Intel(p) => p,
            Backend::Amd(p) => p,
        }
    }

    fn reset(&mut self, msr: &mut dyn Msr) -> Result<(), PmuError> {
        match self {
            Backend::Intel(p) => p.reset(msr),
            Backend::Amd(p) => p.reset(msr),
        }
    }

    fn enabled(&self) -> CounterSet {
        match self {
            Backend::Intel(p) => p.enabled(),
            Backend::Amd(p) => p.enabled(),
        }
    }

    fn has_global(&self) -> bool {
        match self {
            Backend::Intel(p) => p.has_global(),
            Backend::Amd(p) => p.has_global(),
        }
    }
}

/// A backend, reset, over a recorded simulated PMU.
struct Rig {
    pmu: Backend,
    msr: RecordingMsr<SimPmu>,
}

/// The event used on a counter: instructions on GP counters (0xc0 on both vendors), the perfmon
/// pseudo encoding on fixed counters.
fn event_for(c: Counter) -> EventSelect {
    match c {
        Counter::Gp(_) => EventSelect::new(0xc0, 0),
        Counter::Fixed(i) => EventSelect::new(0, i.saturating_add(1)),
    }
}

fn with_int(int: bool) -> Modifiers {
    Modifiers {
        int,
        ..Modifiers::default()
    }
}

impl Rig {
    fn new(sim: SimPmu) -> Rig {
        let mut msr = RecordingMsr::new(sim);
        let mut pmu = Backend::for_caps(msr.inner.caps());
        pmu.reset(&mut msr).unwrap();
        msr.clear();
        Rig { pmu, msr }
    }

    fn p(&mut self) -> &mut dyn PmuBackend {
        self.pmu.dyn_mut()
    }

    fn sim(&mut self) -> &mut SimPmu {
        &mut self.msr.inner
    }

    fn name(&mut self) -> &'static str {
        self.p().name()
    }

    fn counters(&mut self) -> Vec<Counter> {
        self.p().all_counters().iter().collect()
    }

    fn mask(&mut self, c: Counter) -> u64 {
        mask(self.p().width(c))
    }

    fn program_with(
        &mut self,
        c: Counter,
        sel: &EventSelect,
        m: &Modifiers,
    ) -> Result<(), PmuError> {
        self.pmu.dyn_mut().program(&mut self.msr, c, sel, m)
    }

    fn program(&mut self, c: Counter, int: bool) -> Result<(), PmuError> {
        self.program_with(c, &event_for(c), &with_int(int))
    }

    fn enable(&mut self, set: CounterSet) -> Result<(), PmuError> {
        self.pmu.dyn_mut().enable(&mut self.msr, set)
    }

    fn disable(&mut self, set: CounterSet) -> Result<(), PmuError> {
        self.pmu.dyn_mut().disable(&mut self.msr, set)
    }

    fn read(&mut self, c: Counter) -> u64 {
        self.pmu.dyn_mut().read(&mut self.msr, c).unwrap()
    }

    fn write(&mut self, c: Counter, value: u64) -> Result<(), PmuError> {
        self.pmu.dyn_mut().write(&mut self.msr, c, value)
    }

    fn arm(&mut self, c: Counter, period: u64) -> Result<(), PmuError> {
        self.pmu.dyn_mut().arm_period(&mut self.msr, c, period)
    }

    fn status(&mut self) -> CounterSet {
        self.pmu.dyn_mut().overflow_status(&mut self.msr).unwrap()
    }

    fn count(&mut self, c: Counter, k: u64) {
        self.msr.inner.count(c, k);
    }

    fn rdpmc(&mut self, c: Counter) -> Result<u64, MsrFault> {
        let idx = self.p().rdpmc_index(c).unwrap();
        self.msr.inner.rdpmc(idx)
    }
}

fn intel_configs() -> Vec<IntelConfig> {
    alloc::vec![
        IntelConfig::V1,
        IntelConfig::V2,
        IntelConfig::V3,
        IntelConfig::V4_SKYLAKE,
        IntelConfig::V5,
    ]
}

fn amd_flavours() -> Vec<AmdFlavour> {
    alloc::vec![
        AmdFlavour::Legacy,
        AmdFlavour::ExtCore,
        AmdFlavour::PerfMonV2(6)
    ]
}

fn all_sims() -> Vec<SimPmu> {
    let mut v: Vec<SimPmu> = intel_configs().into_iter().map(SimPmu::intel).collect();
    v.extend(amd_flavours().into_iter().map(SimPmu::amd));
    v
}

fn rigs() -> Vec<Rig> {
    all_sims().into_iter().map(Rig::new).collect()
}

/// Names, counters, widths, RDPMC indices, LVTPC behaviour of every configuration.
#[test]
fn every_backend_has_its_name_counters_and_widths() {
    // (name, gp mask, fixed mask, gp width, fixed width, unmasks LVTPC)
    let expected = [
        ("intel-arch-v1", 0b11, 0, 40, 0, true),
        ("intel-arch-v2", 0b11, 0b111, 40, 40, true),
        ("intel-arch-v3", 0b1111, 0b111, 48, 48, true),
        ("intel-arch-v4", 0b1111, 0b111, 48, 48, true),
        ("intel-arch-v5", 0xff, 0b1111, 48, 48, true),
        ("amd-legacy", 0b1111, 0, 48, 0, false),
        ("amd-perfctr-core", 0x3f, 0, 48, 0, false),
        ("amd-perfmon-v2", 0x3f, 0, 48, 0, false),
    ];
    for (mut rig, (name, gp, fixed, gw, fw, unmask)) in rigs().into_iter().zip(expected) {
        let p = rig.p();
        assert_eq!(p.name(), name);
        assert_eq!(p.all_counters(), CounterSet { gp, fixed }, "{name}");
        assert_eq!(p.width(Counter::Gp(0)), gw, "{name}");
        assert_eq!(p.width(Counter::Fixed(0)), fw, "{name}");
        assert_eq!(p.pmi_unmasks_lvtpc(), unmask, "{name}");
        for c in p.all_counters().iter() {
            let idx = match c {
                Counter::Gp(n) => u32::from(n),
                Counter::Fixed(i) => (1 << 30) | u32::from(i),
            };
            assert_eq!(p.rdpmc_index(c), Some(idx), "{name} {c}");
        }
    }
}

/// Raw addresses of GP counter n's control and count registers.
fn raw_gp_msrs(kind: PmuKind, n: u32) -> (u32, u32) {
    match kind {
        PmuKind::IntelArch { .. } => (0x186 + n, 0xc1 + n),
        PmuKind::AmdLegacy => (0xc001_0000 + n, 0xc001_0004 + n),
        _ => (0xc001_0200 + 2 * n, 0xc001_0201 + 2 * n),
    }
}

/// `reset` brings a PMU left running, overflowed and dirty by someone else to a known state.
#[test]
fn reset_puts_a_dirty_pmu_in_a_known_state() {
    for mut sim in all_sims() {
        let caps = sim.caps();
        let intel = caps.intel_version();
        let v2 = intel.is_some_and(|v| v >= 2) || caps.kind == PmuKind::AmdPerfMonV2;
        // Dirty it: every counter counting with INT at its maximum, then one event.
        for n in 0..u32::from(caps.gp_counters) {
            let (ctl, ctr) = raw_gp_msrs(caps.kind, n);
            sim.write(ctl, 0x0053_00c0).unwrap();
            // Legacy Intel writes sign-extend 0xffff_ffff to all ones; others take the mask.
            let value = if caps.full_width_write || intel.is_some() {
                sext32(0xffff_ffff) & mask(caps.gp_width)
            } else {
                mask(caps.gp_width)
            };
            sim.write(ctr, value).unwrap();
        }
        let fixed: Vec<u8> = (0..32).filter(|&i| caps.has_fixed(i)).collect();
        if intel.is_some_and(|v| v >= 2) {
            let fields = fixed.iter().fold(0u64, |a, &i| a | (0xb << (4 * i)));
            sim.write(0x38d, fields).unwrap();
            for &i in &fixed {
                sim.write(0x309 + u32::from(i), mask(caps.fixed_width))
                    .unwrap();
            }
        }
        for n in 0..caps.gp_counters {
            sim.count(Counter::Gp(n), 1);
        }
        for &i in &fixed {
            sim.count(Counter::Fixed(i), 1);
        }
        if v2 {
            assert_ne!(sim.global_status(), 0);
        }
        assert!(sim.take_pmi());

        let mut pmu = Backend::for_caps(caps);
        pmu.reset(&mut sim).unwrap();
        let name = pmu.dyn_mut().name();
        assert_eq!(sim.global_status(), 0, "{name}");
        if v2 {
            assert_eq!(sim.global_ctrl(), 0, "{name}");
        }
        assert_eq!(sim.fixed_ctrl(), 0, "{name}");
        for c in pmu.dyn_mut().all_counters().iter() {
            assert_eq!(sim.value(c), 0, "{name} {c}");
            sim.count(c, 5);
            assert_eq!(sim.value(c), 0, "{name} {c} counts after reset");
            if let Counter::Gp(n) = c {
                assert_eq!(sim.event_select(n), 0, "{name} {c}");
            }
        }
    }
}

/// kvm-unit-tests 1: RDPMC beyond the counters raises #GP; the backend has no index for them.
#[test]
fn rdpmc_beyond_the_counters_faults() {
    for mut rig in rigs() {
        let all = rig.p().all_counters();
        let n = all.gp.count_ones() as u8;
        let f = all.fixed.count_ones();
        assert_eq!(rig.sim().rdpmc(u32::from(n)), Err(GPF), "{}", rig.name());
        assert_eq!(rig.sim().rdpmc((1 << 30) | f), Err(GPF), "{}", rig.name());
        assert_eq!(rig.p().rdpmc_index(Counter::Gp(n)), None);
        assert_eq!(rig.p().rdpmc_index(Counter::Fixed(f as u8)), None);
    }
}

/// kvm-unit-tests 4 and 9: 0xff0123456789 through the legacy alias keeps 32 bits sign-extended,
/// through the full-width alias the value masked to the width; RDPMC returns it, the fast read
/// the low 32 bits. The backend refuses what the legacy alias would truncate.
#[test]
fn legacy_and_full_width_writes_and_what_rdpmc_returns() {
    for config in intel_configs() {
        let mut rig = Rig::new(SimPmu::intel(config));
        let name = rig.name();
        let gp_mask = mask(config.gp_width);
        for n in 0..config.gp {
            let c = Counter::Gp(n);
            let n32 = u32::from(n);
            // The hardware, raw.
            rig.sim().write(0xc1 + n32, VAL).unwrap();
            let legacy = sext32(VAL) & gp_mask;
            assert_eq!(legacy, 0x2345_6789);
            assert_eq!(rig.sim().rdpmc(n32), Ok(legacy), "{name} {c}");
            assert_eq!(rig.sim().rdpmc((1 << 31) | n32), Ok(0x2345_6789));
            if config.fw_write {
                rig.sim().write(0x4c1 + n32, VAL & gp_mask).unwrap();
                assert_eq!(rig.sim().rdpmc(n32), Ok(VAL & gp_mask), "{name} {c}");
                assert_eq!(rig.sim().rdpmc((1 << 31) | n32), Ok(0x2345_6789));
                assert_eq!(rig.sim().write(0x4c1 + n32, 1 << 48), Err(GPF));
            } else {
                assert_eq!(rig.sim().write(0x4c1 + n32, VAL), Err(GPF), "{name}");
            }

            // The backend.
            rig.msr.clear();
            if config.fw_write {
                rig.write(c, VAL).unwrap();
                assert_eq!(rig.rdpmc(c), Ok(VAL));
                assert_eq!(rig.read(c), VAL);
            } else {
                assert_eq!(
                    rig.write(c, VAL & gp_mask),
                    Err(PmuError::ValueTooWide {
                        value: VAL & gp_mask,
                        max_bits: 32
                    }),
                    "{name}"
                );
                assert!(rig.msr.log.is_empty(), "{name}: refused before any access");
                // A value the sign extension reproduces is written.
                let ok = 0xffff_ffff_8765_4321 & gp_mask;
                rig.write(c, ok).unwrap();
                assert_eq!(rig.rdpmc(c), Ok(ok), "{name}");
                assert_eq!(rig.sim().rdpmc((1 << 31) | n32), Ok(0x8765_4321));
            }
        }
        for i in 0..config.fixed {
            let c = Counter::Fixed(i);
            let x = VAL & mask(config.fixed_width);
            rig.write(c, x).unwrap();
            assert_eq!(rig.rdpmc(c), Ok(x), "{name} {c}");
            let fast = (1 << 31) | (1 << 30) | u32::from(i);
            assert_eq!(rig.sim().rdpmc(fast), Ok(x & 0xffff_ffff), "{name} {c}");
        }
    }
}

/// kvm-unit-tests 3: fixed counters count and read through RDPMC with bit 30; the fixed control
/// uses 4 bits per counter.
#[test]
fn fixed_counters_count_and_read_through_rdpmc_bit_30() {
    for config in intel_configs().into_iter().filter(|c| c.version >= 2) {
        let mut rig = Rig::new(SimPmu::intel(config));
        let fixed: Vec<Counter> = (0..config.fixed).map(Counter::Fixed).collect();
        for &c in &fixed {
            rig.program(c, false).unwrap();
        }
        // Every field OS|USR = 0b0011.
        let fields = (0..config.fixed).fold(0u64, |a, i| a | (0x3 << (4 * i)));
        assert_eq!(rig.sim().fixed_ctrl(), fields);
        rig.enable(CounterSet {
            gp: 0,
            fixed: (1 << config.fixed) - 1,
        })
        .unwrap();
        for (k, &c) in fixed.iter().enumerate() {
            rig.count(c, 100 * (k as u64 + 1));
        }
        for (k, &c) in fixed.iter().enumerate() {
            assert_eq!(rig.rdpmc(c), Ok(100 * (k as u64 + 1)), "{c}");
        }
        // User-only with PMI on fixed counter 1: 0b1010 in bits 7:4.
        rig.program_with(
            Counter::Fixed(1),
            &EventSelect::new(0x3c, 0),
            &Modifiers {
                int: true,
                ..Modifiers::USER
            },
        )
        .unwrap();
        assert_eq!((rig.sim().fixed_ctrl() >> 4) & 0xf, 0b1010);
    }
}

/// Counting happens only while enabled: global and local enables.
#[test]
fn counters_count_only_while_enabled() {
    for mut rig in rigs() {
        let name = rig.name();
        for c in rig.counters() {
            let one = CounterSet::one(c);
            rig.program(c, false).unwrap();
            rig.count(c, 10);
            assert_eq!(rig.read(c), 0, "{name} {c}: programmed, not enabled");
            rig.enable(one).unwrap();
            rig.count(c, 10);
            assert_eq!(rig.read(c), 10, "{name} {c}");
            rig.disable(one).unwrap();
            rig.count(c, 10);
            assert_eq!(rig.read(c), 10, "{name} {c}: disabled");
            rig.enable(one).unwrap();
            rig.count(c, 5);
            assert_eq!(rig.read(c), 15, "{name} {c}");
        }
        // Both enables are needed where there is a global control: the model agrees.
        if rig.pmu.has_global() {
            let kind = rig.sim().caps().kind;
            let (ctl, _) = raw_gp_msrs(kind, 0);
            let sel = rig.sim().event_select(0);
            rig.sim().write(ctl, sel & !(1 << 22)).unwrap();
            rig.count(Counter::Gp(0), 1);
            assert_eq!(rig.read(Counter::Gp(0)), 15, "{name}: EN clear, global set");
            rig.sim().write(ctl, sel).unwrap();
            rig.disable(CounterSet::one(Counter::Gp(0))).unwrap();
            assert!(rig.sim().event_select(0) & (1 << 22) != 0);
            rig.count(Counter::Gp(0), 1);
            assert_eq!(rig.read(Counter::Gp(0)), 15, "{name}: EN set, global clear");
        }
    }
}

/// kvm-unit-tests 5: all GP and fixed counters counting at once, started by one call.
#[test]
fn all_counters_count_at_once() {
    for mut rig in rigs() {
        let name = rig.name();
        let counters = rig.counters();
        for &c in &counters {
            rig.program(c, false).unwrap();
        }
        rig.msr.clear();
        let all = rig.p().all_counters();
        rig.enable(all).unwrap();
        let writes = rig.msr.writes().len();
        if rig.pmu.has_global() {
            assert_eq!(writes, 1, "{name}: one global-control write");
        } else {
            assert_eq!(writes, counters.len(), "{name}: one write per counter");
        }
        for (k, &c) in counters.iter().enumerate() {
            rig.count(c, 1000 + k as u64);
        }
        for (k, &c) in counters.iter().enumerate() {
            assert_eq!(rig.read(c), 1000 + k as u64, "{name} {c}");
        }
        assert_eq!(rig.pmu.enabled(), all);
    }
}

/// kvm-unit-tests 6: preset 1 - N, count N: the count is 1, the overflow is seen, a PMI arrives
/// exactly when INT was set, acknowledging clears the overflow, LVTPC is masked after delivery on
/// Intel (not on AMD).
#[test]
fn overflow_sets_status_and_raises_a_pmi_only_with_int() {
    const N: u64 = 1_000_000;
    for sim in all_sims() {
        for int in [false, true] {
            let mut probe = Rig::new(sim.clone());
            let all = probe.counters();
            let mut picks = alloc::vec![
                all[0],
                Counter::Gp(probe.p().all_counters().gp.count_ones() as u8 - 1)
            ];
            if all.contains(&Counter::Fixed(0)) {
                picks.push(Counter::Fixed(0));
            }
            for c in picks {
                let mut rig = Rig::new(sim.clone());
                let name = rig.name();
                rig.program(c, int).unwrap();
                rig.arm(c, N - 1).unwrap();
                rig.enable(CounterSet::one(c)).unwrap();
                assert!(rig.status().is_empty(), "{name} {c}");
                rig.count(c, N);
                assert_eq!(rig.read(c), 1, "{name} {c}");
                assert_eq!(rig.status(), CounterSet::one(c), "{name} {c} int={int}");
                assert_eq!(rig.sim().pmi_pending(), int, "{name} {c} int={int}");
                if int {
                    assert!(rig.sim().take_pmi());
                    let unmask = rig.p().pmi_unmasks_lvtpc();
                    assert_eq!(rig.sim().lvtpc_masked(), unmask, "{name}");
                }
                rig.pmu
                    .dyn_mut()
                    .ack_overflow(&mut rig.msr, CounterSet::one(c))
                    .unwrap();
                assert!(rig.status().is_empty(), "{name} {c}: acknowledged");
                assert_eq!(rig.sim().global_status(), 0, "{name} {c}");
            }
        }
    }
}

/// An `Msr` that notes every write to a counter register made while that counter counts.
struct StopCheck<'a> {
    sim: &'a mut SimPmu,
    violations: Vec<(u32, u64)>,
}

impl Msr for StopCheck<'_> {
    fn read(&mut self, msr: u32) -> Result<u64, MsrFault> {
        self.sim.read(msr)
    }
    fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        if let Some(c) = self.sim.counter_at(msr)
            && self.sim.is_counting(c)
        {
            self.violations.push((msr, value));
        }
        self.sim.write(msr, value)
    }
    fn rdpmc(&mut self, ecx: u32) -> Result<u64, MsrFault> {
        self.sim.rdpmc(ecx)
    }
}

/// kvm-unit-tests 8: writing a running counter (the driver stops it around the write, and it
/// runs again afterwards); writing 0 lowers the count.
#[test]
fn a_running_counter_is_written_stopped_and_keeps_running() {
    for mut rig in rigs() {
        let name = rig.name();
        for c in rig.counters() {
            rig.program(c, false).unwrap();
            rig.enable(CounterSet::one(c)).unwrap();
            rig.count(c, 100);
            let mut check = StopCheck {
                sim: &mut rig.msr.inner,
                violations: Vec::new(),
            };
            rig.pmu.dyn_mut().write(&mut check, c, 0).unwrap();
            rig.pmu.dyn_mut().arm_period(&mut check, c, 50).unwrap();
            rig.pmu.dyn_mut().write(&mut check, c, 7).unwrap();
            assert!(
                check.violations.is_empty(),
                "{name} {c}: {:?}",
                check.violations
            );
            assert!(rig.sim().is_counting(c), "{name} {c} restarted");
            assert!(rig.pmu.enabled().contains(c));
            assert_eq!(rig.read(c), 7, "{name} {c}: lowered");
            rig.count(c, 3);
            assert_eq!(rig.read(c), 10, "{name} {c}");
        }
    }
}

/// kvm-unit-tests 8: writing -1 (masked to the width) and counting one event overflows.
#[test]
fn writing_minus_one_then_counting_overflows() {
    for mut rig in rigs() {
        let name = rig.name();
        for c in rig.counters() {
            rig.program(c, false).unwrap();
            rig.enable(CounterSet::one(c)).unwrap();
            let all_ones = rig.mask(c);
            rig.write(c, all_ones).unwrap();
            assert!(!rig.status().contains(c), "{name} {c}");
            rig.count(c, 1);
            assert_eq!(rig.read(c), 0, "{name} {c}");
            assert!(rig.status().contains(c), "{name} {c}");
            rig.pmu
                .dyn_mut()
                .ack_overflow(&mut rig.msr, CounterSet::one(c))
                .unwrap();
        }
    }
}

/// Periods: 2^(w-1) - 1 accepted, 2^(w-1) refused; with the legacy alias 2^31 - 1 accepted and
/// 2^31 refused; 0 refused. Refusals touch no MSR.
#[test]
fn periods_near_the_width_limit() {
    for mut rig in rigs() {
        let name = rig.name();
        let legacy = rig.sim().caps().vendor == events::cpu::Vendor::Intel
            && !rig.sim().caps().full_width_write;
        for c in rig.counters() {
            let w = rig.p().width(c);
            let max = match c {
                Counter::Gp(_) if legacy => (1 << 31) - 1,
                _ => (1u64 << (w - 1)) - 1,
            };
            rig.program(c, false).unwrap();
            rig.msr.clear();
            for bad in [0, max + 1, u64::MAX] {
                assert_eq!(
                    rig.arm(c, bad),
                    Err(PmuError::PeriodOutOfRange { period: bad, max }),
                    "{name} {c}"
                );
            }
            assert!(rig.msr.log.is_empty(), "{name} {c}");
            rig.arm(c, max).unwrap();
            let expected = max.wrapping_neg() & mask(w);
            assert_eq!(rig.sim().value(c), expected, "{name} {c}");
            assert!(expected & (1 << (w - 1)) != 0, "top bit set when armed");
            rig.enable(CounterSet::one(c)).unwrap();
            rig.count(c, max - 1);
            assert!(rig.status().is_empty(), "{name} {c}: one short");
            rig.count(c, 1);
            assert_eq!(rig.status(), CounterSet::one(c), "{name} {c}");
            rig.pmu
                .dyn_mut()
                .ack_overflow(&mut rig.msr, CounterSet::one(c))
                .unwrap();
            rig.release(c);
        }
    }
    // The named cases.
    let mut v4 = Rig::new(SimPmu::intel(IntelConfig::V4_SKYLAKE));
    v4.arm(Counter::Gp(0), (1 << 47) - 1).unwrap();
    assert_eq!(v4.sim().value(Counter::Gp(0)), (1 << 47) + 1);
    let mut v2 = Rig::new(SimPmu::intel(IntelConfig::V2));
    assert!(v2.arm(Counter::Gp(0), 1 << 31).is_err());
    v2.arm(Counter::Fixed(0), (1 << 39) - 1).unwrap();
    assert_eq!(v2.sim().value(Counter::Fixed(0)), (1 << 39) + 1);
}

impl Rig {
    fn release(&mut self, c: Counter) {
        self.pmu.dyn_mut().release(&mut self.msr, c).unwrap();
    }
}

/// A value wider than the counter is refused before any MSR write.
#[test]
fn values_wider_than_the_counter_are_refused_before_any_access() {
    for mut rig in rigs() {
        let name = rig.name();
        let legacy = rig.sim().caps().vendor == events::cpu::Vendor::Intel
            && !rig.sim().caps().full_width_write;
        for c in rig.counters() {
            let w = rig.p().width(c);
            let max_bits = match c {
                Counter::Gp(_) if legacy => 32,
                _ => w,
            };
            rig.msr.clear();
            for value in [1u64 << w, u64::MAX - 1, 1 << 63] {
                assert_eq!(
                    rig.write(c, value),
                    Err(PmuError::ValueTooWide { value, max_bits }),
                    "{name} {c}"
                );
            }
            assert!(rig.msr.log.is_empty(), "{name} {c}");
            rig.write(c, mask(w)).unwrap();
            assert_eq!(rig.read(c), mask(w));
        }
    }
}

/// A counter beyond the PMU (or a fixed counter on AMD / Intel v1) is NoSuchCounter, with no MSR
/// access at all.
#[test]
fn counters_beyond_the_pmu_are_refused_without_touching_msrs() {
    for mut rig in rigs() {
        let name = rig.name();
        let all = rig.p().all_counters();
        let n = all.gp.count_ones() as u8;
        let f = all.fixed.count_ones() as u8;
        let missing = [
            Counter::Gp(n),
            Counter::Gp(31),
            Counter::Gp(32),
            Counter::Gp(255),
            Counter::Fixed(f),
            Counter::Fixed(15),
            Counter::Fixed(16),
            Counter::Fixed(255),
        ];
        for c in missing {
            let e = Err(PmuError::NoSuchCounter(c));
            let sel = event_for(c);
            let m = Modifiers::default();
            let p = rig.pmu.dyn_mut();
            let msr = &mut rig.msr;
            assert_eq!(p.program(msr, c, &sel, &m), e, "{name} {c}");
            assert_eq!(p.release(msr, c), e);
            assert_eq!(p.read(msr, c).map(|_| ()), e);
            assert_eq!(p.write(msr, c, 0), e);
            assert_eq!(p.arm_period(msr, c, 1), e);
            assert_eq!(p.width(c), 0);
            assert_eq!(p.rdpmc_index(c), None);
            let set = CounterSet::one(c).union(CounterSet::one(Counter::Gp(0)));
            if !set.is_empty() && set != CounterSet::one(Counter::Gp(0)) {
                assert_eq!(p.enable(msr, set), e, "{name} {c}");
                assert_eq!(p.disable(msr, set), e);
                assert_eq!(p.ack_overflow(msr, set), e);
            }
            assert!(rig.msr.log.is_empty(), "{name} {c}: {:?}", rig.msr.log);
        }
    }
}

/// kvm-unit-tests 10: AMD counters are 48 bits, written and read at full width.
#[test]
fn amd_counters_are_48_bits_wide() {
    for flavour in amd_flavours() {
        let mut rig = Rig::new(SimPmu::amd(flavour));
        let name = rig.name();
        for c in rig.counters() {
            assert_eq!(rig.p().width(c), 48);
            rig.write(c, VAL).unwrap();
            assert_eq!(rig.read(c), VAL, "{name}");
            assert_eq!(rig.rdpmc(c), Ok(VAL), "{name}");
            assert_eq!(
                rig.write(c, 1 << 48),
                Err(PmuError::ValueTooWide {
                    value: 1 << 48,
                    max_bits: 48
                })
            );
            rig.program(c, true).unwrap();
            rig.arm(c, (1 << 47) - 1).unwrap();
            assert_eq!(rig.sim().value(c), (1 << 47) + 1);
            rig.enable(CounterSet::one(c)).unwrap();
            rig.count(c, (1 << 47) - 1);
            assert_eq!(rig.read(c), 0, "{name}: wrapped at 2^48");
            assert_eq!(rig.status(), CounterSet::one(c), "{name}");
            assert!(rig.sim().take_pmi());
            let pmi = rig.pmu.dyn_mut().handle_pmi(&mut rig.msr).unwrap();
            assert_eq!(pmi.overflowed, CounterSet::one(c), "{name}");
            rig.release(c);
        }
        // No fixed counters at all.
        assert_eq!(
            rig.program(Counter::Fixed(0), false),
            Err(PmuError::NoSuchCounter(Counter::Fixed(0)))
        );
    }
}

/// A fixed counter takes only the event it counts, plain.
#[test]
fn wrong_event_on_a_fixed_counter_is_refused() {
    let plain = |code, umask| EventSelect::new(code, umask);
    for config in [IntelConfig::V2, IntelConfig::V4_SKYLAKE, IntelConfig::V5] {
        let mut rig = Rig::new(SimPmu::intel(config));
        let m = Modifiers::default();
        let mut cases = alloc::vec![
            (0, plain(0xc0, 0), true),
            (0, plain(0, 1), true),
            (0, plain(0x3c, 0), false),
            (0, plain(0, 2), false),
            (0, plain(0xc0, 1), false),
            (
                0,
                EventSelect {
                    cmask: 1,
                    ..plain(0xc0, 0)
                },
                false
            ),
            (
                0,
                EventSelect {
                    inv: true,
                    ..plain(0xc0, 0)
                },
                false
            ),
            (
                0,
                EventSelect {
                    edge: true,
                    ..plain(0xc0, 0)
                },
                false
            ),
            (
                0,
                EventSelect {
                    umask2: 1,
                    ..plain(0xc0, 0)
                },
                false
            ),
            (
                0,
                EventSelect {
                    in_tx: true,
                    ..plain(0xc0, 0)
                },
                false
            ),
            (1, plain(0x3c, 0), true),
            (1, plain(0, 2), true),
            (1, plain(0x3c, 1), false),
            (2, plain(0, 3), true),
            (2, plain(0x3c, 1), false),
            (2, plain(0xc0, 0), false),
        ];
        if config.fixed > 3 {
            cases.extend([
                (3, plain(0xa4, 1), true),
                (3, plain(0, 4), true),
                (3, plain(0xa4, 2), false),
            ]);
        }
        for (i, sel, ok) in cases {
            let c = Counter::Fixed(i);
            rig.msr.clear();
            let got = rig.program_with(c, &sel, &m);
            if ok {
                assert_eq!(got, Ok(()), "{sel:?} on {c}");
            } else {
                assert_eq!(got, Err(PmuError::WrongCounter(c)), "{sel:?} on {c}");
                assert!(rig.msr.log.is_empty());
            }
        }
        // AMD-only filters cannot be encoded for Intel.
        let host = Modifiers {
            host_only: true,
            ..m
        };
        assert!(matches!(
            rig.program_with(Counter::Fixed(0), &plain(0xc0, 0), &host),
            Err(PmuError::Encode(EncodeError::NotOnVendor {
                field: Field::HostOnly,
                ..
            }))
        ));
        assert!(matches!(
            rig.program_with(Counter::Gp(0), &plain(0xc0, 0), &host),
            Err(PmuError::Encode(_))
        ));
    }
}

/// handle_pmi reports exactly the counters that overflowed, acknowledges them, and leaves the
/// running set as it was (counting goes on).
#[test]
fn handle_pmi_reports_exactly_the_overflowed_counters_and_keeps_the_running_set() {
    for mut rig in rigs() {
        let name = rig.name();
        let gp_count = rig.p().all_counters().gp.count_ones().min(3) as u8;
        let mut used: Vec<Counter> = (0..gp_count).map(Counter::Gp).collect();
        let has_fixed = rig.p().all_counters().fixed & 1 != 0;
        if has_fixed {
            used.push(Counter::Fixed(0));
        }
        let set = used
            .iter()
            .fold(CounterSet::EMPTY, |s, &c| s.union(CounterSet::one(c)));
        for &c in &used {
            rig.program(c, true).unwrap();
        }
        // Gp(1) is armed far away; the others overflow.
        for (k, &c) in used.iter().enumerate() {
            let period = if c == Counter::Gp(1) {
                1000
            } else {
                10 * (k as u64 + 1)
            };
            rig.arm(c, period).unwrap();
        }
        rig.enable(set).unwrap();
        let global_before = rig.sim().global_ctrl();
        let selects_before: Vec<u64> = (0..gp_count).map(|n| rig.sim().event_select(n)).collect();
        for &c in &used {
            rig.count(c, 50);
        }
        let mut expect = set;
        expect.gp &= !0b10;
        assert!(rig.sim().take_pmi());
        let pmi = rig.pmu.dyn_mut().handle_pmi(&mut rig.msr).unwrap();
        assert_eq!(pmi.overflowed, expect, "{name}");
        assert_eq!(pmi.other_status, 0, "{name}");
        assert_eq!(rig.pmu.enabled(), set, "{name}");
        assert_eq!(rig.sim().global_ctrl(), global_before, "{name}");
        let selects_after: Vec<u64> = (0..gp_count).map(|n| rig.sim().event_select(n)).collect();
        assert_eq!(selects_after, selects_before, "{name}");
        for &c in &used {
            let before = rig.read(c);
            rig.count(c, 1);
            assert_eq!(rig.read(c), before + 1, "{name} {c} still counts");
        }
        assert!(rig.status().is_empty(), "{name}: acknowledged");
        // A second (late) PMI finds nothing.
        let late = rig.pmu.dyn_mut().handle_pmi(&mut rig.msr).unwrap();
        assert!(late.is_spurious(), "{name}");
    }
}

/// An `Msr` that faults on reads or writes of one register.
struct FaultOn<'a> {
    sim: &'a mut SimPmu,
    read: Option<u32>,
    write: Option<u32>,
}

impl Msr for FaultOn<'_> {
    fn read(&mut self, msr: u32) -> Result<u64, MsrFault> {
        if self.read == Some(msr) {
            return Err(GPF);
        }
        self.sim.read(msr)
    }
    fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        if self.write == Some(msr) {
            return Err(GPF);
        }
        self.sim.write(msr, value)
    }
    fn rdpmc(&mut self, ecx: u32) -> Result<u64, MsrFault> {
        self.sim.rdpmc(ecx)
    }
}

/// A faulting MSR (a hypervisor that advertises more than it emulates) gives an error naming the
/// register, never a panic, and the running set is restored.
#[test]
fn msr_faults_are_errors_and_the_running_set_is_restored() {
    for (sim, status_msr, counter_msr) in [
        (SimPmu::intel(IntelConfig::V4_SKYLAKE), 0x38e, 0x4c1),
        (SimPmu::intel(IntelConfig::V2), 0x38e, 0xc1),
        (
            SimPmu::amd(AmdFlavour::PerfMonV2(6)),
            0xc000_0300,
            0xc001_0201,
        ),
        (SimPmu::amd(AmdFlavour::Legacy), 0xc001_0004, 0xc001_0004),
    ] {
        let mut rig = Rig::new(sim);
        let name = rig.name();
        rig.program(Counter::Gp(0), true).unwrap();
        rig.arm(Counter::Gp(0), 5).unwrap();
        rig.enable(CounterSet::one(Counter::Gp(0))).unwrap();
        let mut faulty = FaultOn {
            sim: &mut rig.msr.inner,
            read: Some(status_msr),
            write: Some(counter_msr),
        };
        assert_eq!(
            rig.pmu.dyn_mut().handle_pmi(&mut faulty),
            Err(PmuError::Msr {
                msr: status_msr,
                fault: GPF
            }),
            "{name}"
        );
        assert_eq!(
            rig.pmu.dyn_mut().write(&mut faulty, Counter::Gp(0), 1),
            Err(PmuError::Msr {
                msr: counter_msr,
                fault: GPF
            }),
            "{name}"
        );
        assert!(rig.sim().is_counting(Counter::Gp(0)), "{name}: restarted");
        assert_eq!(rig.pmu.enabled(), CounterSet::one(Counter::Gp(0)));
    }
}

/// USR/OS filters: `:u` counts only at CPL > 0, `:k` only at CPL 0 (GP and fixed counters).
#[test]
fn privilege_filters_select_what_counts() {
    for mut rig in rigs() {
        let name = rig.name();
        let user = Counter::Gp(0);
        let kernel = if rig.p().all_counters().fixed & 1 != 0 {
            Counter::Fixed(0)
        } else {
            Counter::Gp(1)
        };
        rig.program_with(user, &event_for(user), &Modifiers::USER)
            .unwrap();
        rig.program_with(kernel, &event_for(kernel), &Modifiers::KERNEL)
            .unwrap();
        rig.enable(CounterSet::one(user).union(CounterSet::one(kernel)))
            .unwrap();
        rig.sim().set_cpl(3);
        rig.count(user, 5);
        rig.count(kernel, 5);
        rig.sim().set_cpl(0);
        rig.count(user, 7);
        rig.count(kernel, 7);
        assert_eq!(rig.read(user), 5, "{name}");
        assert_eq!(rig.read(kernel), 7, "{name}");
    }
}

/// Intel masks LVTPC on delivery: a PMI raised before the kernel unmasks it is lost. AMD does not
/// mask it.
#[test]
fn lvtpc_is_masked_after_an_intel_pmi_until_unmasked() {
    for mut rig in [
        Rig::new(SimPmu::intel(IntelConfig::V4_SKYLAKE)),
        Rig::new(SimPmu::amd(AmdFlavour::PerfMonV2(6))),
        Rig::new(SimPmu::amd(AmdFlavour::Legacy)),
    ] {
        let name = rig.name();
        let c = Counter::Gp(0);
        rig.program(c, true).unwrap();
        rig.enable(CounterSet::one(c)).unwrap();
        let overflow = |rig: &mut Rig| {
            rig.arm(c, 1).unwrap();
            rig.count(c, 1);
            let delivered = rig.sim().take_pmi();
            let pmi = rig.pmu.dyn_mut().handle_pmi(&mut rig.msr).unwrap();
            assert_eq!(pmi.overflowed, CounterSet::one(c));
            delivered
        };
        assert!(overflow(&mut rig), "{name}");
        let intel = rig.p().pmi_unmasks_lvtpc();
        assert_eq!(rig.sim().lvtpc_masked(), intel, "{name}");
        // Without the unmask, the next PMI is lost on Intel, delivered on AMD.
        assert_eq!(overflow(&mut rig), !intel, "{name}");
        assert_eq!(rig.sim().pmis_lost(), u32::from(intel));
        // The kernel unmasks when the backend says so.
        if intel {
            rig.sim().unmask_lvtpc();
        }
        assert!(overflow(&mut rig), "{name}");
    }
}

/// `release` stops the counter and clears its configuration; enabling it afterwards does nothing.
#[test]
fn release_stops_and_clears() {
    for mut rig in rigs() {
        let name = rig.name();
        for c in rig.counters() {
            rig.program(c, true).unwrap();
            rig.enable(CounterSet::one(c)).unwrap();
            rig.release(c);
            assert!(!rig.sim().is_counting(c), "{name} {c}");
            assert!(!rig.pmu.enabled().contains(c));
            match c {
                Counter::Gp(n) => assert_eq!(rig.sim().event_select(n), 0),
                Counter::Fixed(i) => assert_eq!((rig.sim().fixed_ctrl() >> (4 * i)) & 0xf, 0),
            }
            rig.msr.clear();
            rig.enable(CounterSet::one(c)).unwrap();
            assert!(rig.msr.log.is_empty(), "{name} {c}: nothing to start");
            // Loading an event again leaves it stopped (no stale global-control bit).
            rig.program(c, false).unwrap();
            assert!(!rig.sim().is_counting(c), "{name} {c}: reprogrammed");
        }
        if rig.pmu.has_global() {
            assert_eq!(rig.sim().global_ctrl(), 0, "{name}");
        }
    }
}

/// Programming a running counter leaves it stopped (the model's "program loads it stopped").
#[test]
fn reprogramming_a_running_counter_leaves_it_stopped() {
    for mut rig in rigs() {
        let name = rig.name();
        for c in rig.counters() {
            rig.program(c, false).unwrap();
            rig.enable(CounterSet::one(c)).unwrap();
            rig.program(c, true).unwrap();
            assert!(!rig.sim().is_counting(c), "{name} {c}");
            assert!(!rig.pmu.enabled().contains(c), "{name} {c}");
            rig.enable(CounterSet::one(c)).unwrap();
            assert!(rig.sim().is_counting(c), "{name} {c}");
        }
    }
}

/// kvm-unit-tests 7 (adapted: the model does not compute CMASK effects): CMASK and INV reach the
/// event select.
#[test]
fn cmask_and_inv_reach_the_event_select() {
    let sel = EventSelect {
        cmask: 2,
        inv: true,
        ..EventSelect::new(0xc0, 0)
    };
    for mut rig in rigs() {
        rig.program_with(Counter::Gp(0), &sel, &Modifiers::default())
            .unwrap();
        let raw = rig.sim().event_select(0);
        assert_eq!((raw >> 24) & 0xff, 2, "{}", rig.name());
        assert!(raw & (1 << 23) != 0);
    }
}

/// AnyThread only where the PMU has it (v3/v4 without the deprecation).
#[test]
fn any_thread_only_where_available() {
    let sel = EventSelect {
        any_thread: true,
        ..EventSelect::new(0xc0, 0)
    };
    let m = Modifiers::default();
    let mut v3 = Rig::new(SimPmu::intel(IntelConfig::V3));
    v3.program_with(Counter::Gp(0), &sel, &m).unwrap();
    assert!(v3.sim().event_select(0) & (1 << 21) != 0);
    v3.program_with(Counter::Fixed(0), &sel, &m).unwrap();
    assert_eq!(v3.sim().fixed_ctrl() & 0xf, 0b0111);
    for config in [IntelConfig::V2, IntelConfig::V5] {
        let mut rig = Rig::new(SimPmu::intel(config));
        for c in [Counter::Gp(0), Counter::Fixed(0)] {
            rig.msr.clear();
            assert_eq!(
                rig.program_with(c, &sel, &m),
                Err(PmuError::Encode(EncodeError::NotOnVendor {
                    field: Field::AnyThread,
                    vendor: events::cpu::Vendor::Intel
                }))
            );
            assert!(rig.msr.log.is_empty());
        }
    }
}

/// Capabilities of the wrong kind give a backend without counters, never a panic.
#[test]
fn mismatched_capabilities_give_no_counters() {
    let amd_caps = PmuCaps::amd(true, Some(6), None);
    let intel_caps = SimPmu::intel(IntelConfig::V4_SKYLAKE).caps();
    let tsc = PmuCaps::tsc_only(events::cpu::Vendor::Intel, None);
    let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
    for mut b in [
        Backend::Intel(IntelArchPmu::new(amd_caps)),
        Backend::Intel(IntelArchPmu::new(tsc)),
        Backend::Amd(AmdPmu::new(intel_caps)),
        Backend::Amd(AmdPmu::new(tsc)),
    ] {
        let p = b.dyn_mut();
        assert!(p.all_counters().is_empty());
        assert!(p.name().ends_with("-none"));
        assert_eq!(
            p.read(&mut sim, Counter::Gp(0)),
            Err(PmuError::NoSuchCounter(Counter::Gp(0)))
        );
        assert!(p.handle_pmi(&mut sim).is_ok_and(|e| e.is_spurious()));
    }
}

// ---- Properties ----

#[derive(Clone, Debug)]
enum Op {
    Program(u8, bool),
    Release(u8),
    Enable(u64),
    Disable(u64),
    Write(u8, u64),
    Arm(u8, u64),
    Count(u8, u64),
    Status,
    Ack(u64),
    Pmi,
}

fn any_op() -> impl Strategy<Value = Op> {
    let value = prop_oneof![
        any::<u64>(),
        0u64..1000,
        (0u32..64).prop_map(|b| 1u64 << b),
        (0u32..64).prop_map(|b| (1u64 << b).wrapping_sub(1)),
        (0u64..1000).prop_map(|v| v.wrapping_neg()),
    ];
    prop_oneof![
        3 => (any::<u8>(), any::<bool>()).prop_map(|(c, i)| Op::Program(c, i)),
        1 => any::<u8>().prop_map(Op::Release),
        3 => any::<u64>().prop_map(Op::Enable),
        2 => any::<u64>().prop_map(Op::Disable),
        2 => (any::<u8>(), value.clone()).prop_map(|(c, v)| Op::Write(c, v)),
        2 => (any::<u8>(), value).prop_map(|(c, v)| Op::Arm(c, v)),
        3 => (any::<u8>(), 0u64..1 << 20).prop_map(|(c, k)| Op::Count(c, k)),
        1 => Just(Op::Status),
        1 => any::<u64>().prop_map(Op::Ack),
        1 => Just(Op::Pmi),
    ]
}

/// A counter from a byte: bit 0 picks GP or fixed; with bit 7 clear the index is small (mostly
/// counters that exist), with it set anything up to 63.
fn pick(c: u8) -> Counter {
    let raw = (c >> 1) & 0x3f;
    let (gp, fixed) = if c & 0x80 == 0 {
        (raw % 8, raw % 4)
    } else {
        (raw, raw)
    };
    if c & 1 == 0 {
        Counter::Gp(gp)
    } else {
        Counter::Fixed(fixed)
    }
}

/// A counter set from random bits: when bit 0 is clear, limited to the counters the PMU has (so
/// most sets are accepted), else taken as is (often refused).
fn set_of(p: &dyn PmuBackend, bits: u64) -> CounterSet {
    let set = CounterSet::from_intel_global(bits);
    if bits & 1 == 0 {
        let all = p.all_counters();
        CounterSet {
            gp: set.gp & all.gp,
            fixed: set.fixed & all.fixed,
        }
    } else {
        set
    }
}

/// Applies one op through a [`StopCheck`]; returns the error, if any, and the counter writes made
/// while the counter was counting.
fn apply(p: &mut dyn PmuBackend, sim: &mut SimPmu, op: &Op) -> (Option<PmuError>, Vec<(u32, u64)>) {
    let mut msr = StopCheck {
        sim,
        violations: Vec::new(),
    };
    let msr = &mut msr;
    let err = match *op {
        Op::Program(c, int) => {
            let c = pick(c);
            p.program(msr, c, &event_for(c), &with_int(int)).err()
        }
        Op::Release(c) => p.release(msr, pick(c)).err(),
        Op::Enable(s) => {
            let set = set_of(p, s);
            p.enable(msr, set).err()
        }
        Op::Disable(s) => {
            let set = set_of(p, s);
            p.disable(msr, set).err()
        }
        Op::Write(c, v) => p.write(msr, pick(c), v).err(),
        Op::Arm(c, v) => p.arm_period(msr, pick(c), v).err(),
        Op::Count(c, k) => {
            msr.sim.count(pick(c), k);
            None
        }
        Op::Status => p.overflow_status(msr).err(),
        Op::Ack(s) => {
            let set = set_of(p, s);
            p.ack_overflow(msr, set).err()
        }
        Op::Pmi => {
            msr.sim.take_pmi();
            msr.sim.unmask_lvtpc();
            p.handle_pmi(msr).err()
        }
    };
    (err, core::mem::take(&mut msr.violations))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// On every configuration, any sequence of operations: the backend never makes the model
    /// fault (every refusal is its own, before the MSR), what it believes runs is exactly what the
    /// model counts, reads agree with the model, and a PMI keeps the running set.
    #[test]
    fn backends_and_model_agree(ops in proptest::collection::vec(any_op(), 1..40)) {
        for sim in all_sims() {
            let mut rig = Rig::new(sim);
            let name = rig.name();
            for op in &ops {
                let before = rig.pmu.enabled();
                let (err, violations) = apply(rig.pmu.dyn_mut(), &mut rig.msr.inner, op);
                if let Some(e) = err {
                    prop_assert!(!matches!(e, PmuError::Msr { .. }), "{name} {op:?}: {e:?}");
                }
                prop_assert!(
                    violations.is_empty(),
                    "{name} {op:?} wrote a running counter: {violations:x?}"
                );
                if matches!(op, Op::Pmi) {
                    prop_assert_eq!(rig.pmu.enabled(), before);
                }
                for c in rig.counters() {
                    prop_assert_eq!(
                        rig.sim().is_counting(c),
                        rig.pmu.enabled().contains(c),
                        "{} {} after {:?}", name, c, op
                    );
                    let v = rig.sim().value(c);
                    prop_assert_eq!(rig.read(c), v);
                }
            }
        }
    }

    /// No input panics a backend, whatever the capabilities say and whatever PMU is really there
    /// (MSR faults come back as errors).
    #[test]
    fn nothing_panics(
        eax: u32, edx: u32, ecx: u32, fw: bool,
        amd: bool, ext: bool, v2: Option<u8>,
        gp_width: Option<u8>, gp_counters: Option<u8>,
        which in 0usize..8,
        ops in proptest::collection::vec(any_op(), 1..30),
    ) {
        let mut caps = if amd {
            PmuCaps::amd(ext, v2, None)
        } else {
            PmuCaps::from_intel_cpuid([eax, 0, ecx, edx], fw, None)
        };
        if let Some(w) = gp_width {
            caps.gp_width = w;
        }
        if let Some(n) = gp_counters {
            caps.gp_counters = n;
        }
        let mut sim = all_sims().swap_remove(which);
        let mut b = Backend::for_caps(caps);
        let _ = b.reset(&mut sim);
        for op in &ops {
            let _ = apply(b.dyn_mut(), &mut sim, op);
        }
        let p = b.dyn_mut();
        for i in 0..=255u8 {
            let _ = (p.width(Counter::Gp(i)), p.width(Counter::Fixed(i)));
            let _ = (p.rdpmc_index(Counter::Gp(i)), p.rdpmc_index(Counter::Fixed(i)));
        }
    }

    /// Odd simulated PMUs (any width and counter count) do not panic the model either.
    #[test]
    fn odd_models_do_not_panic(version in 0u8..7, gp in 0u8..40, gp_width: u8, fixed in 0u8..20, fixed_width: u8, fw: bool,
                               ops in proptest::collection::vec(any_op(), 1..30)) {
        let sim = SimPmu::intel(IntelConfig { version, gp, gp_width, fixed, fixed_width, fw_write: fw });
        let mut sim = sim;
        let mut b = Backend::for_caps(sim.caps());
        let _ = b.reset(&mut sim);
        for op in &ops {
            let _ = apply(b.dyn_mut(), &mut sim, op);
        }
        for ecx in [0, 1, 39, 1 << 30, (1 << 30) | 19, 1 << 31, u32::MAX] {
            let _ = sim.rdpmc(ecx);
        }
    }
}

//! Golden MSR sequences: every access a backend makes for a scenario, recorded with
//! [`RecordingMsr`] over the simulated PMU and compared with a sequence derived by hand from the
//! manuals (Intel SDM vol. 3B ch. 20 and vol. 4; AMD APM vol. 2 ch. 13; the register tables in
//! ../shared/reference/pmu-facts.md). The derivation of each value is written beside it.
//!
//! Bits used below (PERFEVTSEL and AMD PERF_CTL share them): USR = bit 16 = 0x1_0000,
//! OS = bit 17 = 0x2_0000, INT = bit 20 = 0x10_0000, EN = bit 22 = 0x40_0000. So
//! USR|OS = 0x03_0000, USR|OS|EN = 0x43_0000, USR|OS|INT|EN = 0x53_0000.

use alloc::vec::Vec;

use events::event::{EventSelect, Modifiers};

use super::amd::AmdPmu;
use super::backend::{Counter, CounterSet, PmuBackend, PmuError};
use super::intel::IntelArchPmu;
use super::msr::Access::{self, Read as R, Write as W};
use super::msr::{Msr as _, RecordingMsr};
use super::sim::{AmdFlavour, IntelConfig, SimPmu};

const CYCLES: EventSelect = EventSelect::new(0x3c, 0x00);
const INSTRUCTIONS: EventSelect = EventSelect::new(0xc0, 0x00);
const BRANCH_MISSES: EventSelect = EventSelect::new(0xc5, 0x00);
const AMD_CYCLES: EventSelect = EventSelect::new(0x76, 0x00);
const DEFAULT: Modifiers = Modifiers {
    usr: true,
    os: true,
    int: false,
    host_only: false,
    guest_only: false,
};
const DEFAULT_INT: Modifiers = Modifiers {
    int: true,
    ..DEFAULT
};
const USER_INT: Modifiers = Modifiers {
    int: true,
    ..Modifiers::USER
};

fn gp(bits: u32) -> CounterSet {
    CounterSet { gp: bits, fixed: 0 }
}

/// Takes the log so far, leaving it empty.
fn take(msr: &mut RecordingMsr<SimPmu>) -> Vec<Access> {
    core::mem::take(&mut msr.log)
}

/// (1) Intel v4 with FW_WRITE (Skylake: 4 GP x 48 bits, 3 fixed x 48 bits): cycles,
/// instructions:u and branch-misses on GP 0-2, instructions on fixed counter 0.
#[test]
fn intel_v4_full_width_counting() {
    let mut msr = RecordingMsr::new(SimPmu::intel(IntelConfig::V4_SKYLAKE));
    let mut pmu = IntelArchPmu::new(msr.inner.caps());
    assert_eq!(pmu.name(), "intel-arch-v4");

    pmu.reset(&mut msr).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            W(0x38f, 0), // IA32_PERF_GLOBAL_CTRL = 0 first: GP enable bits may be 1 after reset
            W(0x38d, 0), // IA32_FIXED_CTR_CTRL: every 4-bit field 0 (fixed counters off)
            W(0x186, 0), // PERFEVTSEL0 = 0
            W(0x4c1, 0), // IA32_A_PMC0 = 0 (FW_WRITE: the full-width alias)
            W(0x187, 0), // PERFEVTSEL1, A_PMC1
            W(0x4c2, 0),
            W(0x188, 0), // PERFEVTSEL2, A_PMC2
            W(0x4c3, 0),
            W(0x189, 0), // PERFEVTSEL3, A_PMC3
            W(0x4c4, 0),
            W(0x309, 0), // IA32_FIXED_CTR0..2 = 0
            W(0x30a, 0),
            W(0x30b, 0),
            R(0x38e), // GLOBAL_STATUS reads 0: nothing to clear through 0x390
        ]
    );

    pmu.program(&mut msr, Counter::Gp(0), &CYCLES, &DEFAULT)
        .unwrap();
    pmu.program(&mut msr, Counter::Gp(1), &INSTRUCTIONS, &Modifiers::USER)
        .unwrap();
    pmu.program(&mut msr, Counter::Gp(2), &BRANCH_MISSES, &DEFAULT)
        .unwrap();
    pmu.program(&mut msr, Counter::Fixed(0), &INSTRUCTIONS, &DEFAULT)
        .unwrap();
    pmu.write(&mut msr, Counter::Gp(0), 0).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            // v2+: EN is set at program time, GLOBAL_CTRL gates.
            // cycles 0x3c, umask 0, USR|OS|EN = 0x43_0000.
            W(0x186, 0x0043_003c),
            // instructions 0xc0, :u = USR|EN = 0x41_0000 (pmu-facts: 0x004100C0).
            W(0x187, 0x0041_00c0),
            // branch misses 0xc5, USR|OS|EN.
            W(0x188, 0x0043_00c5),
            // FIXED_CTR_CTRL field 0 (bits 3:0): OS (bit 0) | USR (bit 1) = 0b0011, no PMI.
            W(0x38d, 0x3),
            // A stopped counter is written directly, at full width through IA32_A_PMC0.
            W(0x4c1, 0),
        ]
    );

    // GP 0-2 = bits 2:0, fixed 0 = bit 32: 0x1_0000_0007, one WRMSR starts all four.
    pmu.enable(
        &mut msr,
        CounterSet {
            gp: 0b111,
            fixed: 0b1,
        },
    )
    .unwrap();
    assert_eq!(take(&mut msr), [W(0x38f, 0x1_0000_0007)]);

    msr.inner.count(Counter::Gp(0), 1000);
    msr.inner.count(Counter::Gp(1), 500);
    msr.inner.count(Counter::Gp(2), 7);
    msr.inner.count(Counter::Fixed(0), 500);
    let values = [
        pmu.read(&mut msr, Counter::Gp(0)).unwrap(),
        pmu.read(&mut msr, Counter::Gp(1)).unwrap(),
        pmu.read(&mut msr, Counter::Gp(2)).unwrap(),
        pmu.read(&mut msr, Counter::Fixed(0)).unwrap(),
    ];
    assert_eq!(values, [1000, 500, 7, 500]);
    // Reads go through IA32_PMCx (RDMSR of the legacy alias returns the full width) and
    // IA32_FIXED_CTR0.
    assert_eq!(take(&mut msr), [R(0xc1), R(0xc2), R(0xc3), R(0x309)]);

    // Writing a running counter: stop it (clear GLOBAL_CTRL bit 1 -> 0x1_0000_0005), write,
    // restart (0x1_0000_0007).
    pmu.write(&mut msr, Counter::Gp(1), 0x1234).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            W(0x38f, 0x1_0000_0005),
            W(0x4c2, 0x1234),
            W(0x38f, 0x1_0000_0007),
        ]
    );

    pmu.disable(&mut msr, pmu.all_counters()).unwrap();
    assert_eq!(take(&mut msr), [W(0x38f, 0)]);

    // PMI on fixed counter 0: reprogram it with PMI (field 0b1011 = 0xb), arm 100 events
    // ((-100) & (2^48 - 1) = 0xffff_ffff_ff9c, written directly to IA32_FIXED_CTR0), enable it
    // with GP 0 (bits 32 and 0).
    pmu.program(&mut msr, Counter::Fixed(0), &INSTRUCTIONS, &DEFAULT_INT)
        .unwrap();
    pmu.arm_period(&mut msr, Counter::Fixed(0), 100).unwrap();
    pmu.enable(
        &mut msr,
        CounterSet {
            gp: 0b1,
            fixed: 0b1,
        },
    )
    .unwrap();
    assert_eq!(
        take(&mut msr),
        [
            W(0x38d, 0xb),
            W(0x309, 0xffff_ffff_ff9c),
            W(0x38f, 0x1_0000_0001)
        ]
    );
    msr.inner.count(Counter::Fixed(0), 100);
    assert!(msr.inner.take_pmi());
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, CounterSet { gp: 0, fixed: 0b1 });
    assert_eq!(
        take(&mut msr),
        [
            W(0x38f, 0),             // stop everything
            R(0x38e),                // GLOBAL_STATUS = bit 32 (fixed counter 0 overflowed)
            W(0x390, 1 << 32),       // STATUS_RESET: write the bits read
            R(0x38e),                // re-read: 0, done
            W(0x38f, 0x1_0000_0001), // restore the running set
        ]
    );
}

/// (2) Intel v1 (Core Duo: 2 GP x 40 bits, no global registers, no fixed counters): counting
/// gated by PERFEVTSEL.EN, overflow seen as the top bit of an armed counter clearing.
#[test]
fn intel_v1_per_counter_enable() {
    let mut msr = RecordingMsr::new(SimPmu::intel(IntelConfig::V1));
    let mut pmu = IntelArchPmu::new(msr.inner.caps());
    assert_eq!(pmu.name(), "intel-arch-v1");

    pmu.reset(&mut msr).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            // No GLOBAL_CTRL / FIXED_CTR_CTRL / GLOBAL_STATUS on v1; counters written through
            // IA32_PMCx (no FW_WRITE).
            W(0x186, 0),
            W(0xc1, 0),
            W(0x187, 0),
            W(0xc2, 0),
        ]
    );

    pmu.program(&mut msr, Counter::Gp(0), &CYCLES, &DEFAULT)
        .unwrap();
    pmu.program(&mut msr, Counter::Gp(1), &INSTRUCTIONS, &DEFAULT_INT)
        .unwrap();
    pmu.arm_period(&mut msr, Counter::Gp(1), 1000).unwrap();
    pmu.enable(&mut msr, gp(0b11)).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            // program: EN = 0. cycles: 0x3c | USR|OS (0x3_0000).
            W(0x186, 0x0003_003c),
            // instructions with INT: 0xc0 | USR|OS|INT (0x13_0000).
            W(0x187, 0x0013_00c0),
            // -1000 & (2^40 - 1) = 0x100_0000_0000 - 0x3e8 = 0xff_ffff_fc18, through the legacy
            // alias: bits 31:0 = 0xffff_fc18 have bit 31 set, so the sign extension restores
            // bits 39:32 = 0xff exactly.
            W(0xc2, 0xff_ffff_fc18),
            // enable: PERFEVTSEL rewritten from the shadow with EN (0x40_0000).
            W(0x186, 0x0043_003c),
            W(0x187, 0x0053_00c0),
        ]
    );

    msr.inner.count(Counter::Gp(0), 10);
    assert_eq!(pmu.read(&mut msr, Counter::Gp(0)), Ok(10));
    assert_eq!(take(&mut msr), [R(0xc1)]);

    // 1000 events wrap GP1 to 0 and raise a PMI (INT).
    msr.inner.count(Counter::Gp(1), 1000);
    assert!(msr.inner.take_pmi());
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(0b10));
    // Only the armed counter is read; bit 39 is 0: it overflowed. No write acknowledges it (v1
    // has no status): the backend disarms it.
    assert_eq!(take(&mut msr), [R(0xc2)]);
    // A late PMI finds nothing armed: spurious, no access at all.
    assert!(pmu.handle_pmi(&mut msr).unwrap().is_spurious());
    assert_eq!(take(&mut msr), []);

    pmu.disable(&mut msr, gp(0b11)).unwrap();
    // disable: PERFEVTSEL rewritten without EN.
    assert_eq!(
        take(&mut msr),
        [W(0x186, 0x0003_003c), W(0x187, 0x0013_00c0)]
    );
}

/// (3) Intel v2 without FW_WRITE (Core 2: 2 GP x 40, 3 fixed x 40): a sample period on a GP
/// counter through the legacy alias, with INT, then the PMI acknowledge sequence.
#[test]
fn intel_v2_legacy_period_and_pmi() {
    let mut msr = RecordingMsr::new(SimPmu::intel(IntelConfig::V2));
    let mut pmu = IntelArchPmu::new(msr.inner.caps());
    assert_eq!(pmu.name(), "intel-arch-v2");
    pmu.reset(&mut msr).unwrap();
    msr.clear();

    pmu.program(&mut msr, Counter::Gp(0), &INSTRUCTIONS, &DEFAULT_INT)
        .unwrap();
    pmu.arm_period(&mut msr, Counter::Gp(0), 100_000).unwrap();
    pmu.enable(&mut msr, gp(0b1)).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            // 0xc0 | USR|OS|INT|EN (0x53_0000).
            W(0x186, 0x0053_00c0),
            // -100000 & (2^40 - 1) = 0x100_0000_0000 - 0x1_86a0 = 0xff_fffe_7960 to IA32_PMC0:
            // the CPU keeps 0xfffe_7960 (bit 31 set) and sign-extends: 0xff_fffe_7960 again.
            W(0xc1, 0xff_fffe_7960),
            // GLOBAL_CTRL bit 0.
            W(0x38f, 0x1),
        ]
    );
    assert_eq!(msr.inner.value(Counter::Gp(0)), 0xff_fffe_7960);

    msr.inner.count(Counter::Gp(0), 100_000);
    assert_eq!(msr.inner.global_status(), 1);
    assert!(msr.inner.take_pmi());
    assert!(msr.inner.lvtpc_masked(), "Intel masks LVTPC on delivery");
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(0b1));
    assert_eq!(pmi.other_status, 0);
    assert!(pmu.pmi_unmasks_lvtpc());
    assert_eq!(
        take(&mut msr),
        [
            W(0x38f, 0), // GLOBAL_CTRL = 0 (saved: 0x1)
            R(0x38e),    // GLOBAL_STATUS = 0x1
            W(0x390, 1), // GLOBAL_OVF_CTRL: clear bit 0
            R(0x38e),    // 0: done
            W(0x38f, 1), // restore
        ]
    );

    // The legacy limit: 2^31 is refused before any access; 2^31 - 1 is written while the
    // counter runs: stop, -(2^31 - 1) & (2^40 - 1) = 0x100_0000_0000 - 0x7fff_ffff =
    // 0xff_8000_0001 (bit 31 set: the sign extension reproduces it), restart.
    assert_eq!(
        pmu.arm_period(&mut msr, Counter::Gp(0), 1 << 31),
        Err(PmuError::PeriodOutOfRange {
            period: 1 << 31,
            max: (1 << 31) - 1
        })
    );
    assert_eq!(take(&mut msr), []);
    pmu.arm_period(&mut msr, Counter::Gp(0), (1 << 31) - 1)
        .unwrap();
    assert_eq!(
        take(&mut msr),
        [W(0x38f, 0), W(0xc1, 0xff_8000_0001), W(0x38f, 1)]
    );
    assert_eq!(msr.inner.value(Counter::Gp(0)), 0xff_8000_0001);
}

/// (4) AMD Zen 4 with PerfMonV2 (6 counters, interleaved MSRs, global control/status).
#[test]
fn amd_perfmon_v2() {
    let mut msr = RecordingMsr::new(SimPmu::amd(AmdFlavour::PerfMonV2(6)));
    let mut pmu = AmdPmu::new(msr.inner.caps());
    assert_eq!(pmu.name(), "amd-perfmon-v2");

    pmu.reset(&mut msr).unwrap();
    let mut expected = alloc::vec![W(0xc000_0301, 0)]; // PerfCntrGlobalCtl = 0
    for n in 0..6u32 {
        // CTLn = 0xC0010200 + 2n, CTRn = 0xC0010201 + 2n.
        expected.push(W(0xc001_0200 + 2 * n, 0));
        expected.push(W(0xc001_0201 + 2 * n, 0));
    }
    expected.push(R(0xc000_0300)); // GlobalStatus: 0, nothing to clear
    assert_eq!(take(&mut msr), expected);

    pmu.program(&mut msr, Counter::Gp(0), &AMD_CYCLES, &DEFAULT)
        .unwrap();
    pmu.program(&mut msr, Counter::Gp(1), &INSTRUCTIONS, &DEFAULT_INT)
        .unwrap();
    pmu.program(
        &mut msr,
        Counter::Gp(2),
        &EventSelect::new(0x120, 0x01),
        &DEFAULT,
    )
    .unwrap();
    pmu.arm_period(&mut msr, Counter::Gp(1), 1000).unwrap();
    pmu.enable(&mut msr, gp(0b111)).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            // PerfMonV2: En set at program time. cycles 0x76 | USR|OS|EN.
            W(0xc001_0200, 0x0043_0076),
            // retired instructions 0xc0 | USR|OS|INT|EN, CTL1 = 0xC0010202.
            W(0xc001_0202, 0x0053_00c0),
            // Zen 4 ref cycles: event 0x120 -> bits 7:0 = 0x20, bits 11:8 = 1 at register bits
            // 35:32; umask 1 at 15:8: 0x1_0043_0120. CTL2 = 0xC0010204.
            W(0xc001_0204, 0x1_0043_0120),
            // -1000 & (2^48 - 1) = 0xffff_ffff_fc18 to CTR1 = 0xC0010203.
            W(0xc001_0203, 0xffff_ffff_fc18),
            // GlobalCtl bits 2:0.
            W(0xc000_0301, 0x7),
        ]
    );

    msr.inner.count(Counter::Gp(0), 42);
    assert_eq!(pmu.read(&mut msr, Counter::Gp(0)), Ok(42));
    assert_eq!(take(&mut msr), [R(0xc001_0201)]);

    // Overflow seen by polling, acknowledged through PerfCntrGlobalStatusClr.
    msr.inner.count(Counter::Gp(1), 1000);
    assert!(msr.inner.take_pmi());
    assert!(!msr.inner.lvtpc_masked(), "AMD does not mask LVTPC");
    assert!(!pmu.pmi_unmasks_lvtpc());
    let status = pmu.overflow_status(&mut msr).unwrap();
    assert_eq!(status, gp(0b10));
    pmu.ack_overflow(&mut msr, status).unwrap();
    assert_eq!(
        take(&mut msr),
        [R(0xc000_0300), W(0xc000_0302, 0b10)] // GlobalStatus bit 1; StatusClr bit 1
    );

    // Re-arm while running (stop through GlobalCtl, write, restart), overflow, PMI.
    pmu.arm_period(&mut msr, Counter::Gp(1), 1000).unwrap();
    msr.inner.count(Counter::Gp(1), 1000);
    assert!(msr.inner.take_pmi());
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(0b10));
    assert_eq!(
        take(&mut msr),
        [
            W(0xc000_0301, 0b101), // GlobalCtl without bit 1
            W(0xc001_0203, 0xffff_ffff_fc18),
            W(0xc000_0301, 0b111), // restart
            // PMI:
            W(0xc000_0301, 0),     // GlobalCtl = 0
            R(0xc000_0300),        // GlobalStatus = bit 1
            W(0xc000_0302, 0b10),  // StatusClr: the bits read
            W(0xc000_0301, 0b111), // restore GlobalCtl
        ]
    );
    assert_eq!(msr.inner.global_status(), 0);
}

/// (5) AMD legacy (4 counters at 0xC0010000-7, En per counter, no status register).
#[test]
fn amd_legacy() {
    let mut msr = RecordingMsr::new(SimPmu::amd(AmdFlavour::Legacy));
    let mut pmu = AmdPmu::new(msr.inner.caps());
    assert_eq!(pmu.name(), "amd-legacy");

    pmu.reset(&mut msr).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            // PERF_CTLn = 0xC0010000 + n, PERF_CTRn = 0xC0010004 + n; no global registers.
            W(0xc001_0000, 0),
            W(0xc001_0004, 0),
            W(0xc001_0001, 0),
            W(0xc001_0005, 0),
            W(0xc001_0002, 0),
            W(0xc001_0006, 0),
            W(0xc001_0003, 0),
            W(0xc001_0007, 0),
        ]
    );

    pmu.program(&mut msr, Counter::Gp(0), &AMD_CYCLES, &DEFAULT)
        .unwrap();
    pmu.program(&mut msr, Counter::Gp(3), &INSTRUCTIONS, &USER_INT)
        .unwrap();
    pmu.arm_period(&mut msr, Counter::Gp(3), 500).unwrap();
    pmu.enable(&mut msr, gp(0b1001)).unwrap();
    assert_eq!(
        take(&mut msr),
        [
            // program: En = 0. cycles 0x76 | USR|OS.
            W(0xc001_0000, 0x0003_0076),
            // instructions:u with INT: 0xc0 | USR|INT (0x11_0000).
            W(0xc001_0003, 0x0011_00c0),
            // -500 & (2^48 - 1) = 0x1_0000_0000_0000 - 0x1f4 = 0xffff_ffff_fe0c, to PERF_CTR3.
            W(0xc001_0007, 0xffff_ffff_fe0c),
            // enable: the controls again with En (0x40_0000).
            W(0xc001_0000, 0x0043_0076),
            W(0xc001_0003, 0x0051_00c0),
        ]
    );

    msr.inner.count(Counter::Gp(3), 500);
    assert!(msr.inner.take_pmi());
    assert!(!msr.inner.lvtpc_masked());
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(0b1000));
    // Only the armed counter is read: bit 47 is 0, it wrapped. Nothing to write.
    assert_eq!(take(&mut msr), [R(0xc001_0007)]);
    // A late NMI: nothing armed, spurious.
    assert!(pmu.handle_pmi(&mut msr).unwrap().is_spurious());
    assert_eq!(take(&mut msr), []);

    pmu.disable(&mut msr, gp(0b1001)).unwrap();
    assert_eq!(
        take(&mut msr),
        [W(0xc001_0000, 0x0003_0076), W(0xc001_0003, 0x0011_00c0)]
    );
    pmu.release(&mut msr, Counter::Gp(3)).unwrap();
    assert_eq!(take(&mut msr), [W(0xc001_0003, 0)]);
}

/// (6) AMD PerfCtrExtCore (6 interleaved counters, no global registers): the last counter.
#[test]
fn amd_perfctr_core() {
    let mut msr = RecordingMsr::new(SimPmu::amd(AmdFlavour::ExtCore));
    let mut pmu = AmdPmu::new(msr.inner.caps());
    assert_eq!(pmu.name(), "amd-perfctr-core");
    pmu.reset(&mut msr).unwrap();
    msr.clear();

    pmu.program(&mut msr, Counter::Gp(5), &AMD_CYCLES, &DEFAULT_INT)
        .unwrap();
    pmu.arm_period(&mut msr, Counter::Gp(5), 1).unwrap();
    pmu.enable(&mut msr, gp(1 << 5)).unwrap();
    msr.inner.count(Counter::Gp(5), 1);
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(1 << 5));
    assert_eq!(
        take(&mut msr),
        [
            // CTL5 = 0xC0010200 + 10 = 0xC001020A: 0x76 | USR|OS|INT.
            W(0xc001_020a, 0x0013_0076),
            // CTR5 = 0xC001020B: -1 & (2^48 - 1).
            W(0xc001_020b, 0xffff_ffff_ffff),
            // En.
            W(0xc001_020a, 0x0053_0076),
            // PMI: read the armed counter; bit 47 clear.
            R(0xc001_020b),
        ]
    );
}

/// Intel v4: a PMI that also finds CondChgd (bit 63) clears and reports it.
#[test]
fn intel_pmi_with_other_status_bits() {
    let mut msr = RecordingMsr::new(SimPmu::intel(IntelConfig::V4_SKYLAKE));
    let mut pmu = IntelArchPmu::new(msr.inner.caps());
    pmu.reset(&mut msr).unwrap();
    pmu.program(&mut msr, Counter::Gp(3), &CYCLES, &DEFAULT_INT)
        .unwrap();
    pmu.arm_period(&mut msr, Counter::Gp(3), 10).unwrap();
    pmu.enable(&mut msr, gp(0b1000)).unwrap();
    msr.inner.count(Counter::Gp(3), 10);
    // v4: IA32_PERF_GLOBAL_STATUS_SET (0x391) sets CondChgd, as a hypervisor might.
    msr.inner.write(0x391, 1 << 63).unwrap();
    msr.clear();
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(0b1000));
    assert_eq!(pmi.other_status, 1 << 63);
    assert_eq!(
        take(&mut msr),
        [
            W(0x38f, 0),
            R(0x38e), // bit 63 | bit 3
            W(0x390, (1 << 63) | 0b1000),
            R(0x38e), // 0
            W(0x38f, 0b1000),
        ]
    );
}

/// The Intel PMI acknowledge sequence is the same on every version with global registers
/// (v2-v5), for GP and fixed counters together: GLOBAL_CTRL = 0, read GLOBAL_STATUS, write the
/// bits read to 0x390, re-read until 0, restore GLOBAL_CTRL.
#[test]
fn intel_pmi_sequence_on_every_version() {
    for config in [
        IntelConfig::V2,
        IntelConfig::V3,
        IntelConfig::V4_SKYLAKE,
        IntelConfig::V5,
    ] {
        let mut msr = RecordingMsr::new(SimPmu::intel(config));
        let mut pmu = IntelArchPmu::new(msr.inner.caps());
        pmu.reset(&mut msr).unwrap();
        let last = Counter::Gp(config.gp - 1);
        let fc1 = Counter::Fixed(1);
        pmu.program(&mut msr, last, &INSTRUCTIONS, &DEFAULT_INT)
            .unwrap();
        pmu.program(&mut msr, fc1, &CYCLES, &DEFAULT_INT).unwrap();
        pmu.arm_period(&mut msr, last, 3).unwrap();
        pmu.arm_period(&mut msr, fc1, 3).unwrap();
        let running = CounterSet::one(last).union(CounterSet::one(fc1));
        pmu.enable(&mut msr, running).unwrap();
        msr.inner.count(last, 3);
        msr.inner.count(fc1, 3);
        assert!(msr.inner.take_pmi());
        msr.clear();
        let pmi = pmu.handle_pmi(&mut msr).unwrap();
        assert_eq!(pmi.overflowed, running, "v{}", config.version);
        // GP counter n is bit n, fixed counter 1 is bit 33.
        let bits = (1u64 << (config.gp - 1)) | (1 << 33);
        assert_eq!(
            take(&mut msr),
            [
                W(0x38f, 0),
                R(0x38e),
                W(0x390, bits),
                R(0x38e),
                W(0x38f, bits)
            ],
            "v{}",
            config.version
        );
    }
}

/// An `Msr` over the model that, after each write to 0x390, sets more status bits through
/// GLOBAL_STATUS_SET (v4), as overflows arriving during the handler would.
struct Injecting {
    sim: SimPmu,
    /// Bits set after the first, second, ... acknowledge.
    after_ack: Vec<u64>,
    log: Vec<Access>,
}

impl super::msr::Msr for Injecting {
    fn read(&mut self, msr: u32) -> Result<u64, super::msr::MsrFault> {
        self.log.push(R(msr));
        self.sim.read(msr)
    }
    fn write(&mut self, msr: u32, value: u64) -> Result<(), super::msr::MsrFault> {
        self.log.push(W(msr, value));
        self.sim.write(msr, value)?;
        if msr == 0x390 && !self.after_ack.is_empty() {
            let bits = self.after_ack.remove(0);
            self.sim.write(0x391, bits)?;
        }
        Ok(())
    }
    fn rdpmc(&mut self, ecx: u32) -> Result<u64, super::msr::MsrFault> {
        self.sim.rdpmc(ecx)
    }
}

/// Intel v4: the PMI loop repeats while counter bits reappear, clears a non-counter bit that
/// appears meanwhile without another round, and gives up after 4 rounds.
#[test]
fn intel_pmi_loop_rounds() {
    let setup = |after_ack: Vec<u64>| {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        pmu.reset(&mut sim).unwrap();
        pmu.program(&mut sim, Counter::Gp(0), &CYCLES, &DEFAULT_INT)
            .unwrap();
        pmu.arm_period(&mut sim, Counter::Gp(0), 1).unwrap();
        pmu.enable(&mut sim, gp(1)).unwrap();
        sim.count(Counter::Gp(0), 1);
        let msr = Injecting {
            sim,
            after_ack,
            log: Vec::new(),
        };
        (pmu, msr)
    };

    // GP 1 overflows during the first acknowledge: a second round.
    let (mut pmu, mut msr) = setup(alloc::vec![0b10]);
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(0b11));
    assert_eq!(
        msr.log,
        [
            W(0x38f, 0),
            R(0x38e),    // bit 0
            W(0x390, 1), // ack bit 0; bit 1 appears
            R(0x38e),    // bit 1: a counter bit, another round
            W(0x390, 2), // ack bit 1
            R(0x38e),    // 0
            W(0x38f, 1), // restore
        ]
    );

    // CondChgd appears during the acknowledge: cleared once, no further round.
    let (mut pmu, mut msr) = setup(alloc::vec![1 << 63]);
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!((pmi.overflowed, pmi.other_status), (gp(1), 1 << 63));
    assert_eq!(
        msr.log,
        [
            W(0x38f, 0),
            R(0x38e),
            W(0x390, 1),
            R(0x38e),          // bit 63 only: no counter bit
            W(0x390, 1 << 63), // cleared, done
            W(0x38f, 1),
        ]
    );
    assert_eq!(msr.sim.global_status(), 0);

    // A counter that overflows again on every acknowledge: 4 rounds, then restore and return.
    let (mut pmu, mut msr) = setup(alloc::vec![1; 10]);
    let pmi = pmu.handle_pmi(&mut msr).unwrap();
    assert_eq!(pmi.overflowed, gp(1));
    let acks = msr.log.iter().filter(|a| matches!(a, W(0x390, _))).count();
    assert_eq!(acks, super::intel::PMI_MAX_ROUNDS);
    assert_eq!(msr.log.last(), Some(&W(0x38f, 1)));
}

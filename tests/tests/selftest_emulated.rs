//! `--selftest` on the emulated PMU (emulator/: a PMU model in QEMU's TCG): on every model
//! every check PASSes, except exactly the ones that do not apply to it (events its CPUID marks
//! unavailable, what the model's kind lacks), which SKIP with their reason; the PMIs are taken
//! by the kernel's handler (`handled`, never `busy`) and the end record counts each. On the
//! emulator's deliberately broken PMU (`x-pmu-defect`), the checks that see the defect FAIL
//! and the run fails. The same list is in docs/pmu.md.

use std::collections::BTreeSet;
use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::PmuModel;
use baremark::session::{RunOutcome, Verdict};
use baremark_tests::{
    boot_emulated_cpu_props, boot_emulated_ok, boot_emulated_uarch, expect_record,
};

/// Every check the selftest runs (kernel/src/selftest/mod.rs `Check::ALL`).
const ALL: [&str; 22] = [
    "rdpmc-invalid",
    "gp-cycles",
    "gp-instructions",
    "gp-ref-cycles",
    "gp-llc-references",
    "gp-llc-misses",
    "gp-branches",
    "gp-branch-misses",
    "fixed-counters",
    "fixed-bitmap",
    "rdpmc-gp",
    "rdpmc-fixed",
    "rdpmc-fast",
    "all-counters",
    "overflow",
    "cmask",
    "running-write",
    "legacy-write",
    "full-width-write",
    "global-writes",
    "pmi-handler",
    "rdpmc-ring3",
];

/// What each model skips, and why it genuinely does not apply.
fn expected_skips(model: PmuModel) -> Vec<&'static str> {
    // The Intel models' CPUID.0AH:EBX marks the events they do not count unavailable.
    let masked = ["gp-llc-references", "gp-llc-misses", "gp-branch-misses"];
    let amd = [
        "gp-ref-cycles",
        "gp-llc-references",
        "gp-llc-misses",
        "fixed-counters",
        "fixed-bitmap",
        "rdpmc-fixed",
        "rdpmc-fast",
        "legacy-write",
    ];
    match model {
        // v2: no fixed-counter bitmap (v5), no PERF_CAPABILITIES.FW_WRITE (v4 here).
        PmuModel::IntelV2 => [&masked[..], &["fixed-bitmap", "full-width-write"]].concat(),
        PmuModel::IntelV4 => [&masked[..], &["fixed-bitmap"]].concat(),
        PmuModel::IntelV5 => masked.to_vec(),
        // Only PerfMonV2 has global registers to write.
        PmuModel::AmdLegacy | PmuModel::AmdCore => [&amd[..], &["global-writes"]].concat(),
        PmuModel::AmdV2 => amd.to_vec(),
    }
}

/// PMIs the selftest raises: one per counter in `overflow` (its INT run), two in `pmi-handler`.
fn expected_pmis(model: PmuModel) -> u64 {
    let counters = match model {
        PmuModel::IntelV2 | PmuModel::IntelV4 | PmuModel::IntelV5 => 4 + 3,
        PmuModel::AmdLegacy => 4,
        PmuModel::AmdCore | PmuModel::AmdV2 => 6,
    };
    counters + 2
}

fn config() -> RunConfig {
    RunConfig {
        selftest: true,
        timer_checks: false,
        ..RunConfig::default()
    }
}

/// check -> (result, detail)
fn results(outcome: &RunOutcome) -> Vec<(String, String, String)> {
    outcome
        .records_of("selftest")
        .map(|r| {
            (
                r.str("check").unwrap_or_default().to_string(),
                r.str("result").unwrap_or_default().to_string(),
                r.str("detail").unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn with_result<'a>(results: &'a [(String, String, String)], result: &str) -> BTreeSet<&'a str> {
    results
        .iter()
        .filter(|(_, r, _)| r == result)
        .map(|(c, _, _)| c.as_str())
        .collect()
}

fn listing(results: &[(String, String, String)]) -> String {
    results
        .iter()
        .map(|(c, r, d)| format!("  {c} {r} {d}\n"))
        .collect()
}

fn every_check_passes(model: PmuModel) {
    let outcome = boot_emulated_ok(config(), Duration::from_secs(120), model);
    check_outcome(model, &outcome, &expected_skips(model));
}

fn check_outcome(model: PmuModel, outcome: &RunOutcome, expected_skips: &[&'static str]) {
    let results = results(outcome);
    let names: Vec<&str> = results.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(names, ALL, "{model:?}: every check reported, in order");
    let listing = listing(&results);
    assert!(
        with_result(&results, "fail").is_empty(),
        "{model:?}:\n{listing}"
    );
    let skipped = with_result(&results, "skip");
    let expected: BTreeSet<&str> = expected_skips.iter().copied().collect();
    assert_eq!(skipped, expected, "{model:?}:\n{listing}");
    for (check, result, detail) in &results {
        assert!(!detail.is_empty(), "{model:?} {check}: no detail");
        if result == "skip" && check.starts_with("gp-") && model.name().starts_with("intel") {
            assert!(
                detail.contains("CPUID.0AH:EBX"),
                "{model:?} {check}: skipped through the availability mask: {detail}"
            );
        }
    }
    let summary = expect_record(outcome, "selftest_summary");
    assert_eq!(summary.u64("checks"), Some(ALL.len() as u64));
    assert_eq!(summary.u64("failed"), Some(0));
    assert_eq!(summary.u64("skipped"), Some(expected.len() as u64));
    assert_eq!(
        summary.u64("passed"),
        Some((ALL.len() - expected.len()) as u64)
    );

    // Every PMI went through the kernel's handler with the PMU free.
    let end = expect_record(outcome, "end");
    let irq = end.get("interrupts");
    assert_eq!(
        irq["pmi"].as_u64(),
        Some(expected_pmis(model)),
        "{model:?}: {irq}\n{listing}"
    );
    assert_eq!(irq["pmi_busy"].as_u64(), Some(0), "{model:?}: {irq}");
    assert_eq!(irq["pmi_spurious"].as_u64(), Some(0), "{model:?}: {irq}");
}

#[test]
fn every_check_passes_on_intel_v2() {
    every_check_passes(PmuModel::IntelV2);
}

#[test]
fn every_check_passes_on_intel_v5() {
    every_check_passes(PmuModel::IntelV5);
}

#[test]
fn every_check_passes_on_amd_legacy() {
    every_check_passes(PmuModel::AmdLegacy);
}

#[test]
fn every_check_passes_on_amd_core() {
    every_check_passes(PmuModel::AmdCore);
}

/// Includes `global-writes`: PerfMonV2 ignores reserved bits of its global registers and writes
/// to GlobalStatus. Before emulator patch 0011 the model raised #GP there and the check failed
/// ("WRMSR 0xc0000303 0x1000000003f: #GP (expected none)").
#[test]
fn every_check_passes_on_amd_v2() {
    every_check_passes(PmuModel::AmdV2);
}

/// The `end` record accounts for every PMI: the selftest on `intel-v4` raises exactly 9 (one
/// per counter in `overflow`, two in `pmi-handler`), all taken by the kernel's handler with
/// the PMU free: `handled`, none `busy` or spurious. (Also every check of `intel-v4`.)
#[test]
fn the_end_record_counts_every_pmi() {
    every_check_passes(PmuModel::IntelV4);
}

/// With the micro-architecture model (`--uarch`) the Intel model counts LLC references and
/// misses and branch misses, and CPUID.0AH:EBX says so: the three checks that skip through the
/// availability mask without it run and PASS (the memory walk's LLC references and misses, the
/// known loop's branch misses); only what intel-v4 lacks (the v5 bitmap) still skips.
#[test]
fn the_llc_and_branch_miss_checks_pass_with_the_uarch_model() {
    let model = PmuModel::IntelV4;
    let outcome = boot_emulated_uarch(config(), Duration::from_secs(240), model, None);
    check_outcome(model, &outcome, &["fixed-bitmap"]);
    let results = results(&outcome);
    for check in ["gp-llc-references", "gp-llc-misses", "gp-branch-misses"] {
        let (_, result, detail) = results.iter().find(|(c, _, _)| c == check).unwrap();
        assert_eq!(result, "pass", "{check}: {detail}");
        eprintln!("{check}: {detail}");
    }
}

/// Boots the selftest on a deliberately broken model and returns the checks that failed.
fn failing_checks(model: PmuModel, defect: &str) -> (BTreeSet<String>, String) {
    let outcome = boot_emulated_cpu_props(
        Firmware::Bios,
        config(),
        Duration::from_secs(120),
        model,
        &format!("x-pmu-defect={defect}"),
    );
    let results = results(&outcome);
    let listing = listing(&results);
    assert_eq!(
        results.len(),
        ALL.len(),
        "{defect}: {}",
        outcome.tail_text()
    );
    match outcome.verdict() {
        Verdict::KernelFailure(reason) => {
            assert!(reason.contains("selftest"), "{defect}: {reason}\n{listing}")
        }
        v => panic!("{defect}: the run must fail, got {v:?}\n{listing}"),
    }
    let failed = with_result(&results, "fail")
        .into_iter()
        .map(str::to_string)
        .collect();
    (failed, listing)
}

/// A counter that drops writes (`x-pmu-defect=drop-writes`: event selects and controls work,
/// counter values do not change when written) fails every check that writes a counter and
/// reads what it wrote or counts from it. `gp-cycles` and `fixed-counters` pass: they are the
/// first to use their counters, which still hold 0 from reset, so zeroing them changes nothing.
#[test]
fn a_pmu_that_drops_counter_writes_fails_the_named_checks() {
    let (failed, listing) = failing_checks(PmuModel::IntelV4, "drop-writes");
    let expected: BTreeSet<String> = [
        "gp-instructions",
        "gp-ref-cycles",
        "gp-branches",
        "rdpmc-gp",
        "rdpmc-fixed",
        "all-counters",
        "overflow",
        "cmask",
        "running-write",
        "legacy-write",
        "full-width-write",
        "pmi-handler",
        "rdpmc-ring3",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(failed, expected, "\n{listing}");
}

/// A PMU that never sends its PMI (`x-pmu-defect=no-pmi`: overflows set the status bit, no
/// interrupt) fails exactly the two checks that expect PMIs, on Intel and on AMD.
#[test]
fn a_pmu_without_pmis_fails_the_named_checks() {
    for model in [PmuModel::IntelV4, PmuModel::AmdLegacy] {
        let (failed, listing) = failing_checks(model, "no-pmi");
        let expected: BTreeSet<String> = ["overflow", "pmi-handler"]
            .into_iter()
            .map(str::to_string)
            .collect();
        assert_eq!(failed, expected, "{model:?}\n{listing}");
    }
}

//! The PMU selftest boot mode under TCG: no counters, so every check must SKIP with a reason,
//! and the run must succeed.

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark_tests::{boot, expect_record, expect_success};

#[test]
fn selftest_skips_every_check_without_a_pmu_and_succeeds() {
    let config = RunConfig {
        selftest: true,
        ..RunConfig::default()
    };
    let outcome = boot(Firmware::Bios, config, Duration::from_secs(60), None);
    expect_success(&outcome);

    let pmu = expect_record(&outcome, "pmu");
    assert_eq!(pmu.str("backend"), Some("tsc-only"));
    assert_eq!(pmu.get("intel")["version"], 0);
    // No architectural PMU: no availability vector, so nothing may read as "all available".
    assert!(
        pmu.get("intel")["events_unavailable"].is_null(),
        "{}",
        pmu.value
    );
    let reason = pmu.str("reason").unwrap();
    assert!(
        reason.contains("version 0") || reason.contains("does not keep a written value"),
        "{reason}"
    );

    let checks: Vec<_> = outcome.records_of("selftest").collect();
    assert_eq!(checks.len(), 22, "every check reported");
    for c in &checks {
        assert_eq!(c.str("result"), Some("skip"), "{}", c.value);
        let detail = c.str("detail").unwrap();
        assert!(detail.starts_with("no programmable counters:"), "{detail}");
    }
    let names: Vec<&str> = checks.iter().filter_map(|c| c.str("check")).collect();
    for name in [
        "rdpmc-invalid",
        "gp-instructions",
        "fixed-bitmap",
        "rdpmc-fixed",
        "legacy-write",
        "overflow",
        "pmi-handler",
        "cmask",
        "global-writes",
        "rdpmc-ring3",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let summary = expect_record(&outcome, "selftest_summary");
    assert_eq!(summary.u64("checks"), Some(22));
    assert_eq!(summary.u64("skipped"), Some(22));
    assert_eq!(summary.u64("failed"), Some(0));
    assert_eq!(summary.u64("passed"), Some(0));
    // The selftest comes after the boot report and before the end record.
    let kinds: Vec<&str> = outcome.records.iter().map(|r| r.kind.as_str()).collect();
    let pmu_at = kinds.iter().position(|k| *k == "pmu").unwrap();
    let first_check = kinds.iter().position(|k| *k == "selftest").unwrap();
    assert!(pmu_at < first_check);
    assert_eq!(kinds.last(), Some(&"end"));
}

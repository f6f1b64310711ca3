//! Time-multiplexing end to end on the emulated PMU (exact under `-icount shift=0`): the `mux`
//! payload (payloads/rdpmc/src/mux.rs) counts 8 events on a PMU with fewer GP counters
//! (`CONFIGURE_MULTIPLEX`) over a uniform loop, then each alone. Every scaled estimate must be
//! within 1% of the exact count, the groups' running times must add up to the enabled time
//! exactly, and the kernel's `multiplexed_counts` record must say the same.

use std::collections::BTreeMap;

use baremark::qemu::PmuModel;
use baremark::session::RunOutcome;
use baremark_tests::boot_payloads_emulated;

fn boot(model: PmuModel) -> RunOutcome {
    boot_payloads_emulated(model, &[("mux", "mux")], &["mux_interval_us = 200"], None)
}

fn reported(outcome: &RunOutcome) -> BTreeMap<String, u64> {
    let mut values = BTreeMap::new();
    for r in outcome.records_of("report") {
        for (k, v) in r.get("values").as_object().expect("key=value report") {
            if let Some(n) = v.as_str().and_then(|s| s.parse().ok()) {
                values.insert(k.clone(), n);
            } else {
                assert_eq!(k, "configure", "{}", r.value);
            }
        }
    }
    values
}

/// `second`: the first event of the second group (the PMU's GP counter count).
fn check(model: PmuModel, second: usize) {
    let outcome = boot(model);
    let v = reported(&outcome);
    let ctx = format!("{model:?}: {v:?}");
    assert_eq!(v.get("n"), Some(&8), "{ctx}");
    let enabled = v["enabled"];
    for i in 0..8 {
        let (raw, running, scaled, exact) = (
            v[&format!("raw_{i}")],
            v[&format!("running_{i}")],
            v[&format!("scaled_{i}")],
            v[&format!("exact_{i}")],
        );
        // Multiplexed: counted part of the time, and the estimate within 1% of exact.
        assert!(0 < running && running < enabled, "{i}: {ctx}");
        assert!(raw < exact, "{i}: {ctx}");
        assert!(
            scaled.abs_diff(exact) * 100 <= exact,
            "event {i}: scaled {scaled} vs exact {exact}: {ctx}"
        );
    }
    // The two groups' turns partition the enabled time exactly.
    assert_eq!(
        v["running_0"] + v[&format!("running_{second}")],
        enabled,
        "{ctx}"
    );
    let r = outcome
        .records_of("multiplexed_counts")
        .next()
        .unwrap_or_else(|| panic!("no multiplexed_counts: {}", outcome.tail_text()));
    assert_eq!(r.u64("groups"), Some(2), "{}", r.value);
    // 8M instructions in turns of 200k: about 40 rotations.
    assert!(r.u64("rotations").unwrap() >= 20, "{}", r.value);
    // Sent when the configuration ended (the payload reconfigured): a little after the read.
    assert!(r.u64("enabled").unwrap() >= enabled, "{}", r.value);
    let scaled = r.get("scaled").as_array().expect("scaled");
    assert_eq!(scaled.len(), 8);
    for (i, s) in scaled.iter().enumerate() {
        let exact = v[&format!("exact_{i}")];
        assert!(
            s.as_u64().unwrap().abs_diff(exact) * 100 <= exact,
            "{i}: {}",
            r.value
        );
    }
}

#[test]
fn intel_v5_eight_events_on_four_counters_scale_within_one_percent() {
    check(PmuModel::IntelV5, 4);
}

#[test]
fn amd_eight_events_on_six_counters_scale_within_one_percent() {
    check(PmuModel::AmdV2, 6);
}

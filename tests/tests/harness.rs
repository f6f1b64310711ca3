//! The measurement harness end to end (docs/harness.md), under TCG with `-icount shift=0`, where
//! the TSC advances exactly once per instruction and the TSC-only backend is all there is: the
//! suite's `empty` and `add-latency` payloads through the SDK's loop, the kernel's statistics and
//! records, with both overhead modes, and hardware events reported as not supported.

use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Firmware, Overhead, RunConfig};
use baremark::session::RunOutcome;
use baremark_tests::{
    bench_result, boot, builtin_payloads, expect_exact_per_iteration, expect_record,
    expect_success, instructions_per_iteration, stat,
};

const REPS: u32 = 12;
const WARMUP: u32 = 3;
const EVENTS: &str = "cycles,instructions:u,branch-misses";

fn config(overhead: Overhead) -> RunConfig {
    RunConfig {
        timer_checks: false,
        payloads: builtin_payloads(&["empty", "add-latency"]),
        events: Some(EVENTS.to_string()),
        reps: Some(REPS),
        warmup: Some(WARMUP),
        overhead: Some(overhead),
        ..RunConfig::default()
    }
}

fn run(overhead: Overhead) -> &'static RunOutcome {
    static RUNS: [OnceLock<RunOutcome>; 2] = [OnceLock::new(), OnceLock::new()];
    let i = usize::from(overhead == Overhead::Diff);
    RUNS[i].get_or_init(|| {
        let outcome = boot(
            Firmware::Bios,
            config(overhead),
            Duration::from_secs(120),
            Some(0),
        );
        expect_success(&outcome);
        outcome
    })
}

#[test]
fn the_empty_region_is_the_same_every_repetition_and_is_reported() {
    let outcome = run(Overhead::Empty);
    let r = bench_result(outcome, "empty", "tsc");
    assert_eq!(r.get("supported"), true);
    assert_eq!(r.str("counter"), Some("tsc"));
    assert_eq!(r.u64("reps"), Some(u64::from(REPS)));
    let overhead = stat(r, "raw", "median");
    assert!(overhead > 0.0, "the measurement costs something");
    assert_eq!(stat(r, "raw", "min"), stat(r, "raw", "max"), "{}", r.value);
    assert_eq!(stat(r, "raw", "stddev"), 0.0);
    // The empty region measured as the body and as the overhead: the same path, the same count.
    assert_eq!(stat(r, "overhead_stats", "median"), overhead);
    assert_eq!(stat(r, "value", "median"), 0.0);
    assert_eq!(r.u64("interrupts"), Some(0));
    // The repetitions themselves, as the kernel got them.
    let values: Vec<u64> = outcome
        .records_of("samples")
        .filter(|s| s.str("bench") == Some("empty") && s.str("kind") == Some("region"))
        .flat_map(|s| {
            s.get("values")
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(values, vec![overhead as u64; REPS as usize]);
}

#[test]
fn add_latency_is_exactly_its_instruction_count_per_iteration_after_overhead_removal() {
    for overhead in [Overhead::Empty, Overhead::Diff] {
        let outcome = run(overhead);
        let expected = instructions_per_iteration(outcome, "add-latency");
        let r = bench_result(outcome, "add-latency", "tsc");
        expect_exact_per_iteration(r, expected, overhead);
        match overhead {
            Overhead::Diff => assert!(!r.get("raw2x").is_null()),
            _ => assert!(!r.get("overhead_stats").is_null()),
        }
    }
}

#[test]
fn events_without_counters_are_not_supported_with_a_reason() {
    let outcome = run(Overhead::Empty);
    let start = outcome
        .records_of("bench_start")
        .find(|r| r.str("bench") == Some("add-latency"))
        .expect("bench_start");
    assert_eq!(start.u64("groups"), Some(1));
    for event in ["cycles", "instructions:u", "branch-misses"] {
        let r = bench_result(outcome, "add-latency", event);
        assert_eq!(r.get("supported"), false, "{}", r.value);
        let reason = r.str("reason").unwrap_or_default();
        assert!(reason.contains("TSC"), "{event}: {reason}");
        assert!(r.get("value").is_null() && r.get("raw").is_null());
    }
    let summary = expect_record(outcome, "summary");
    assert_eq!(summary.u64("benchmarks"), Some(2));
    assert_eq!(summary.u64("results"), Some(8));
    assert_eq!(summary.u64("unsupported"), Some(6));
    assert_eq!(summary.u64("errors"), Some(0));
    assert!(summary.u64("tsc_hz").is_some());
    // The TSC-derived time per iteration.
    assert!(
        outcome
            .records_of("metric")
            .any(|m| m.str("bench") == Some("add-latency")
                && m.str("name") == Some("ns-per-iteration")
                && m.get("value").as_f64().is_some())
    );
}

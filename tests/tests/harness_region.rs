//! The harness region with hardware slots (docs/harness.md, "The region") on the emulated PMU
//! (intel-v4, `-icount shift=0`, where cycles and the TSC advance once per instruction): every
//! counter's window is the same `4k + 3` instructions with `k` slots (the other slots' reads,
//! the call of the body and its `ret`, one jump, and the RDPMC itself), at most 30 with 1 and
//! with 4 counters; and a task preempted all the time (round-robin with the smallest quantum)
//! measures every repetition exactly as it does alone: the kernel sends a region interrupted
//! inside its window to the abort path (`read_window` kind 2) and the SDK measures it again,
//! and a preempted body costs nothing.

use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Overhead, RunConfig};
use baremark::qemu::PmuModel;
use baremark::session::RunOutcome;
use baremark_tests::{bench_result, boot_emulated_ok, builtin_payloads, stat, task_record};

const REPS: u32 = 20;
/// Repetitions of the preemption runs: enough for hundreds of timer interrupts.
const RR_REPS: u32 = 300;
const WARMUP: u32 = 3;
const FOUR: &str = "instructions:u,branches:u,cycles:u,ref-cycles:u";

fn config(payloads: &[&str], events: &str, quantum_us: u32, reps: u32) -> RunConfig {
    RunConfig {
        timer_checks: false,
        task_budget_ms: Some(0),
        quantum_us,
        payloads: builtin_payloads(payloads),
        events: Some(events.to_string()),
        reps: Some(reps),
        warmup: Some(WARMUP),
        overhead: Some(Overhead::Empty),
        ..RunConfig::default()
    }
}

/// `empty` and `add-latency` with four counters: `REPS` alone, or `RR_REPS` alone (0) and
/// round-robin (1).
fn four(quantum_us: Option<u32>) -> &'static RunOutcome {
    static RUNS: [OnceLock<RunOutcome>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let (i, reps) = match quantum_us {
        None => (0, REPS),
        Some(q) => (1 + usize::from(q != 0), RR_REPS),
    };
    RUNS[i].get_or_init(|| {
        boot_emulated_ok(
            config(
                &["empty", "add-latency"],
                FOUR,
                quantum_us.unwrap_or(0),
                reps,
            ),
            Duration::from_secs(240),
            PmuModel::IntelV4,
        )
    })
}

/// Every repetition's value of `bench`'s `kind` for `event`, in order.
fn samples(outcome: &RunOutcome, bench: &str, event: &str, kind: &str, reps: u32) -> Vec<u64> {
    let values: Vec<u64> = outcome
        .records_of("samples")
        .filter(|s| {
            s.str("bench") == Some(bench)
                && s.str("event") == Some(event)
                && s.str("kind") == Some(kind)
        })
        .flat_map(|s| {
            s.get("values")
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(values.len(), reps as usize, "{bench} {event} {kind}");
    values
}

#[test]
fn every_counter_window_is_4k_plus_3_instructions_at_most_30_with_1_and_4_counters() {
    let one = boot_emulated_ok(
        config(&["empty"], "instructions:u", 0, REPS),
        Duration::from_secs(180),
        PmuModel::IntelV4,
    );
    for (outcome, events, k) in [
        (&one, &["instructions:u"][..], 1u64),
        (four(None), &FOUR.split(',').collect::<Vec<_>>()[..], 4),
    ] {
        for &event in events {
            let window = samples(outcome, "empty", event, "region", REPS);
            // Counted by hand in payloads/sdk/src/bench.rs: 4 instructions per other slot on
            // each side (k - 1 of them), the 2 stores after the RDPMC, call, ret, jmp, the `mov
            // ecx` before the second RDPMC and the RDPMC itself; one branch each for call, ret
            // and jmp.
            let expected = if event == "branches:u" { 3 } else { 4 * k + 3 };
            assert_eq!(
                window,
                vec![expected; REPS as usize],
                "{k} counters: {event}"
            );
            assert!(expected <= 30, "{k} counters: {event}: {expected}");
            let r = bench_result(outcome, "empty", event);
            assert_eq!(stat(r, "raw", "median"), expected as f64, "{}", r.value);
            assert_eq!(r.u64("interrupts"), Some(0), "{}", r.value);
        }
        // The virtual TSC's window holds every RDPMC of both sides: 8k + 7.
        assert_eq!(
            samples(outcome, "empty", "tsc", "region", REPS),
            vec![8 * k + 7; REPS as usize],
            "{k} counters"
        );
    }
}

#[test]
fn preempted_regions_measure_exactly_what_they_measure_alone() {
    let (alone, rr) = (four(Some(0)), four(Some(1)));
    for task in ["empty", "add-latency"] {
        let exit = task_record(rr, "task_exit", task);
        assert!(
            exit.u64("interrupts").unwrap() >= 100,
            "{task} was preempted: {}",
            exit.value
        );
        assert_eq!(
            task_record(alone, "task_exit", task).u64("interrupts"),
            Some(0)
        );
    }
    // Bodies were preempted too (their repetitions' `interrupts`), not only the regions.
    let preempted_bodies: u64 = ["empty", "add-latency"]
        .iter()
        .map(|b| {
            bench_result(rr, b, "instructions:u")
                .u64("interrupts")
                .unwrap()
        })
        .sum();
    assert!(preempted_bodies > 0, "no body was preempted");
    for bench in ["empty", "add-latency"] {
        for event in FOUR.split(',').chain(["tsc"]) {
            for kind in ["region", "empty"] {
                assert_eq!(
                    samples(rr, bench, event, kind, RR_REPS),
                    samples(alone, bench, event, kind, RR_REPS),
                    "{bench} {event} {kind}: preempted (left) and alone"
                );
            }
        }
    }
}

//! The syscall fuzzer in the test command (docs/reliability.md, "Random syscalls"): 20,000
//! seeded random syscalls from `fuzz-syscalls` with the kernel's canary planted. Every call
//! returns a value or an ABI error code, the kernel writes nothing outside what each call may
//! write, nothing it writes and no record holds the canary, and the kernel ends with status ok.
//! The benchmark command (`cargo run -p baremark-tests --bin fuzz-syscalls`) runs a million.

use std::time::Duration;

use baremark::qemu::PmuModel;
use baremark_tests::{
    FUZZ_RESULTS, FuzzRun, expect_record, expect_success, find_canary, fuzz_syscalls,
};

const CALLS: u64 = 20_000;

#[test]
fn twenty_thousand_random_syscalls_leave_the_kernel_whole_and_leak_nothing() {
    let run = fuzz_syscalls(0x5eed, CALLS, Duration::from_secs(180), None);
    check(&run, CALLS);
    // ... and the scan finds the pattern where it is.
    let mut planted = run.serial.clone();
    planted.extend_from_slice(b"xxRK-CANARY!BAREMARKxx");
    assert!(find_canary(&planted).is_some());
}

#[test]
fn random_syscalls_on_the_emulated_pmu_program_counters_and_leak_nothing() {
    // The same on a PMU: the fuzzer's valid counter entries get the task's hardware counters
    // programmed, switched, read and released between the random calls.
    let calls = 10_000;
    let run = fuzz_syscalls(7, calls, Duration::from_secs(180), Some(PmuModel::IntelV4));
    check(&run, calls);
    let exit = expect_record(&run.outcome, "task_exit");
    assert!(
        exit.get("pce").as_bool() == Some(true),
        "hardware counters were live at some point: {}",
        exit.value
    );
}

/// Everything a clean fuzzing run shows.
fn check(run: &FuzzRun, calls: u64) {
    let out = &run.outcome;
    expect_success(out);
    assert!(
        out.records_of("fault")
            .all(|r| r.str("mode") == Some("user")),
        "no kernel fault"
    );
    assert_eq!(out.records_of("panic").count(), 0);

    // The canary was planted (most of the heap, a good part of the stack).
    let canary = expect_record(out, "canary");
    assert!(
        canary.u64("heap_bytes").unwrap() > 4 << 20,
        "{}",
        canary.value
    );
    assert!(canary.u64("stack_bytes").unwrap() > 64 << 10);

    // The fuzzer ran every call and found nothing.
    let r = &run.report;
    assert_eq!(r.get("calls"), Some(&calls.to_string()), "{r:?}");
    assert_eq!(r.get("failures").map(String::as_str), Some("0"), "{r:?}");
    assert_eq!(
        r.get("counter_page_canary").map(String::as_str),
        Some("none")
    );
    let n = |k: &str| r.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap();
    assert_eq!(FUZZ_RESULTS.iter().map(|k| n(k)).sum::<u64>(), calls);
    // The calls reached the kernel's paths, not one error: successes and the main refusals.
    for k in ["ok", "einval", "efault", "enosys", "enoent", "enospc"] {
        assert!(n(k) > 100, "{k}: {r:?}");
    }
    let exit = expect_record(out, "task_exit");
    assert_eq!(exit.get("code").as_i64(), Some(0), "{}", exit.value);
    assert!(exit.u64("syscalls").unwrap() >= calls);

    // No kernel byte in any record (or anywhere else on the serial line).
    assert_eq!(
        find_canary(&run.serial),
        None,
        "the canary on the serial line"
    );
    // ... and the scan finds the pattern where it is.
    let mut planted = run.serial.clone();
    planted.extend_from_slice(b"xxRK-CANARY!BAREMARKxx");
    assert!(find_canary(&planted).is_some());
}

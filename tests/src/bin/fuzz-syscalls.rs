//! The syscall-fuzzing benchmark (docs/reliability.md, "Random syscalls"): `fuzz-syscalls`
//! with the kernel's canary planted, CALLS seeded random syscalls (default 1,000,000), under
//! TCG. It prints the figures: calls, seconds, calls per second, the results by code, failures,
//! and whether the canary appeared anywhere on the serial line; it exits 1 if the kernel did
//! not end cleanly, the fuzzer found a failure, or the canary leaked.
//!
//! `cargo run -p baremark-tests --bin fuzz-syscalls -- [CALLS] [SEED] [emulated]` (CI runs
//! 200,000): `emulated` runs on the emulated PMU (intel-v4, `-icount shift=0`), where the
//! fuzzer's valid counter entries program the task's hardware counters.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use baremark::session::Verdict;
use baremark_tests::{FUZZ_RESULTS, find_canary, fuzz_syscalls};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let calls: u64 = args.next().map_or(1_000_000, |a| a.parse().expect("CALLS"));
    let seed: u64 = args.next().map_or(1, |a| a.parse().expect("SEED"));
    let pmu = match args.next().as_deref() {
        None => None,
        Some("emulated") => Some(baremark::qemu::PmuModel::IntelV4),
        Some(other) => panic!("`{other}`: the third argument is `emulated` or nothing"),
    };
    let started = Instant::now();
    // About 30 s per million calls here; a generous bound.
    let timeout = Duration::from_secs(120 + calls / 5_000);
    let run = fuzz_syscalls(seed, calls, timeout, pmu);
    let secs = started.elapsed().as_secs_f64();
    let out = &run.outcome;
    let verdict = out.verdict();
    let leak = find_canary(&run.serial);
    let get = |k: &str| run.report.get(k).cloned().unwrap_or_else(|| "-".into());
    let on = if pmu.is_some() {
        "the emulated PMU intel-v4"
    } else {
        "TCG"
    };
    println!("syscall fuzzing (fuzz-syscalls, canary planted, {on}, seed {seed})");
    println!("calls                {}", get("calls"));
    println!("seconds              {secs:.1}");
    println!("calls per second     {:.0}", calls as f64 / secs);
    for k in FUZZ_RESULTS {
        println!("  {k:<18} {}", get(k));
    }
    println!("failures             {}", get("failures"));
    println!("first failure        {}", get("first_failure"));
    println!(
        "canary on serial     {}",
        leak.map_or("none".to_string(), |at| format!("at byte {at}"))
    );
    println!("kernel end           {verdict:?}");
    let clean = verdict == Verdict::Success
        && get("failures") == "0"
        && get("calls") == calls.to_string()
        && leak.is_none();
    if clean {
        ExitCode::SUCCESS
    } else {
        eprintln!("serial tail:\n{}", out.tail_text());
        ExitCode::FAILURE
    }
}

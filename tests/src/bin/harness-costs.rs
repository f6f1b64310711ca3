//! The cost of measuring, measured: boots the suite's `empty`, `read-fast` and `read-rdpmc`
//! payloads under TCG with `-icount shift=0` (one TSC tick per instruction) and prints, in
//! instructions as the task's virtual TSC sees them:
//! - the empty region (the harness's fixed cost around every repetition: two snapshots of the
//!   counter page and a call);
//! - one fast-path read of the virtual TSC (counter page + RDTSC);
//! - one emulated RDPMC of the virtual TSC (the trap and the kernel's entry and exit paths as far
//!   as the virtual TSC counts them: the kernel's own work in between is not the task's).
//!
//! `cargo run -p baremark-tests --bin harness-costs` (CI runs it; docs/benchmarks.md). Prints
//! figures; judges nothing.

use std::time::Duration;

use baremark::image::{Firmware, Overhead, RunConfig};
use baremark::payloads::builtin;
use baremark::session::Verdict;
use baremark_tests::boot;

fn main() {
    let names = ["empty", "read-fast", "read-rdpmc"];
    let config = RunConfig {
        timer_checks: false,
        payloads: names
            .iter()
            .map(|&n| {
                let p = builtin(n).unwrap_or_else(|| panic!("no built-in payload `{n}`"));
                (n.to_string(), p.elf.to_vec())
            })
            .collect(),
        reps: Some(20),
        warmup: Some(3),
        overhead: Some(Overhead::Empty),
        ..RunConfig::default()
    };
    let outcome = boot(Firmware::Bios, config, Duration::from_secs(120), Some(0));
    if outcome.verdict() != Verdict::Success {
        eprintln!("the run failed; serial tail:\n{}", outcome.tail_text());
        std::process::exit(1);
    }
    println!("harness costs under TCG, -icount shift=0 (virtual TSC ticks = instructions)");
    println!(
        "{:<34} {:>10} {:>10} {:>10}",
        "what", "min", "median", "max"
    );
    let row = |what: &str, bench: &str, object: &str| {
        let Some(r) = outcome
            .records_of("result")
            .find(|r| r.str("bench") == Some(bench) && r.str("event") == Some("tsc"))
        else {
            println!("{what:<34} (no result)");
            return;
        };
        let s = |k: &str| r.get(object)[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{what:<34} {:>10.2} {:>10.2} {:>10.2}",
            s("min"),
            s("median"),
            s("max")
        );
    };
    row("empty region (harness overhead)", "empty", "raw");
    row(
        "fast-path read of the virtual TSC",
        "read-fast",
        "per_iteration",
    );
    row(
        "emulated RDPMC of the virtual TSC",
        "read-rdpmc",
        "per_iteration",
    );
}

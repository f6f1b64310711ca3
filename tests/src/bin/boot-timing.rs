//! Boot-time benchmark: boots the BIOS and UEFI images under TCG several times and prints how
//! long QEMU takes to the kernel's first record and to its end record (min / median / max).
//!
//! `cargo run -p baremark-tests --bin boot-timing -- [RUNS]` (default 5). The target for BIOS
//! under TCG is a first record within 1.5 s; this prints the figures, it does not judge them.

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::session::Verdict;
use baremark_tests::boot;

fn stats(mut v: Vec<Duration>) -> String {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "{:7.0} {:7.0} {:7.0}",
        ms(v[0]),
        ms(v[v.len() / 2]),
        ms(v[v.len() - 1])
    )
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5)
        .max(1);
    println!("boot timing under TCG, {runs} runs each (milliseconds from QEMU start)");
    println!(
        "{:<10} {:<14} {:>7} {:>7} {:>7}",
        "firmware", "event", "min", "median", "max"
    );
    for firmware in [Firmware::Bios, Firmware::Uefi] {
        let (mut first, mut end) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let outcome = boot(
                firmware,
                RunConfig::default(),
                Duration::from_secs(120),
                None,
            );
            if outcome.verdict() != Verdict::Success {
                eprintln!(
                    "boot-timing: a {} boot failed: {:?}\n{}",
                    firmware.name(),
                    outcome.verdict(),
                    outcome.tail_text()
                );
                std::process::exit(1);
            }
            first.push(outcome.first_record_after.expect("first record"));
            end.push(outcome.end_record_after.expect("end record"));
        }
        println!(
            "{:<10} {:<14} {}",
            firmware.name(),
            "first record",
            stats(first)
        );
        println!(
            "{:<10} {:<14} {}",
            firmware.name(),
            "end record",
            stats(end)
        );
    }
}

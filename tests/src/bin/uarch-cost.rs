//! What the emulated PMU's micro-architecture model (`--uarch`, QEMU's `pmu-uarch=on`) costs:
//! host seconds of the default suite on `intel-v4` with the model off and on (QEMU's start to
//! its exit, interleaved so that the machine's load falls on both alike), and whether the
//! model left every instruction and branch count as it was (it must: it changes no generated
//! code that counts; docs/emulated-pmu.md "Cost and checks").
//!
//! `cargo run -p baremark-tests --bin uarch-cost -- [RUNS]` (default 3). It prints figures; it
//! judges only the counts (exit 1 if the model changed one).

use std::time::{Duration, Instant};

use baremark::image::Overhead;
use baremark::qemu::PmuModel;
use baremark::session::RunOutcome;
use baremark_tests::{boot_emulated_ok, boot_emulated_uarch, median_duration, suite_config};

const TIMEOUT: Duration = Duration::from_secs(600);
const EVENTS: &str = "cycles,instructions,branches";

/// Every counted result's median per iteration, by benchmark and event.
fn counts(o: &RunOutcome, event: &str) -> Vec<(String, f64)> {
    o.records_of("result")
        .filter(|r| r.str("event") == Some(event) && r.get("supported").as_bool() == Some(true))
        .map(|r| {
            (
                r.str("bench").unwrap_or_default().to_string(),
                r.get("per_iteration")["median"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
            )
        })
        .collect()
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3)
        .max(1);
    let model = PmuModel::IntelV4;
    let config = || suite_config(Overhead::Empty, Some(EVENTS));
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let (mut last_off, mut last_on) = (None, None);
    for _ in 0..runs {
        let t = Instant::now();
        let o = boot_emulated_ok(config(), TIMEOUT, model);
        off.push(t.elapsed());
        last_off = Some(o);
        let t = Instant::now();
        let o = boot_emulated_uarch(config(), TIMEOUT, model, None);
        on.push(t.elapsed());
        last_on = Some(o);
    }
    let (last_off, last_on) = (last_off.unwrap(), last_on.unwrap());
    let s = |d: Duration| d.as_secs_f64();
    println!(
        "uarch-cost: the default suite on the emulated PMU ({}, {EVENTS}, 5 repetitions), host seconds from QEMU's start to its exit, {runs} runs each (emulated)",
        model.name()
    );
    println!("model        min  median     max");
    for (name, v) in [("off", &off), ("--uarch", &on)] {
        println!(
            "{name:<8} {:>7.2} {:>7.2} {:>7.2}",
            s(*v.iter().min().unwrap()),
            s(median_duration(v)),
            s(*v.iter().max().unwrap())
        );
    }
    println!(
        "slowdown: {:.2}x (median on / median off)",
        s(median_duration(&on)) / s(median_duration(&off))
    );
    let mut same = true;
    for event in ["instructions", "branches"] {
        let (a, b) = (counts(&last_off, event), counts(&last_on, event));
        let equal = !a.is_empty() && a == b;
        println!(
            "{event}: {} results, {}",
            a.len(),
            if equal {
                "identical with the model on and off"
            } else {
                "DIFFERENT with the model on"
            }
        );
        same &= equal;
    }
    let cycles = counts(&last_on, "cycles");
    let instructions = counts(&last_on, "instructions");
    let stalled = cycles
        .iter()
        .zip(&instructions)
        .filter(|((_, c), (_, i))| c > i)
        .count();
    println!(
        "cycles with the model: above the instructions in {stalled} of {} results (the model's stalls)",
        cycles.len()
    );
    if !same {
        std::process::exit(1);
    }
}

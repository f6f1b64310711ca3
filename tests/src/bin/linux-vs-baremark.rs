//! Linux perf and baremark on the same machine (issue 30; docs/benchmarks.md, "Linux perf and
//! baremark on the same machine"): one run boots the Linux guest (docs/linux-guest.md) and
//! baremark on the same emulated PMU model under `-icount shift=0` (one TSC tick per
//! instruction, so every figure is an instruction count) and prints one table: the figure,
//! Linux's user-mode instructions and wall (TSC) cost, baremark's task-seen and wall cost, their
//! ratio, and issue 30's target for baremark with whether it is met.
//!
//! It judges nothing: an unmet target is printed, not failed. The exit status is 1 only when a
//! run itself failed (a boot that did not complete, a program's `error` line).
//!
//! `cargo run -p baremark-tests --bin linux-vs-baremark [-- --model M]` (default intel-v4).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use baremark::image::{Firmware, Overhead, RunConfig};
use baremark::qemu::PmuModel;
use baremark::session::{RunOutcome, Verdict};
use baremark_tests::linux::{LinuxRun, boot_linux};
use baremark_tests::{boot_emulated, boot_floor, builtin_payloads, figure, per_op};

const MODELS: [PmuModel; 6] = [
    PmuModel::IntelV2,
    PmuModel::IntelV4,
    PmuModel::IntelV5,
    PmuModel::AmdLegacy,
    PmuModel::AmdCore,
    PmuModel::AmdV2,
];

fn fail(what: &str, detail: &str) -> ! {
    eprintln!("linux-vs-baremark: {what}\n{detail}");
    std::process::exit(1);
}

fn config(names: &[&str], events: &str) -> RunConfig {
    RunConfig {
        timer_checks: false,
        payloads: builtin_payloads(names),
        reps: Some(20),
        warmup: Some(3),
        overhead: Some(Overhead::Empty),
        events: Some(events.to_string()),
        ..RunConfig::default()
    }
}

/// The `wallcost` payload (payloads/rdpmc/src/wallcost.rs) with argument `arg`, sampled with
/// `sample` (run.cfg `WORD@PERIOD`) when given: its report's values.
fn wallcost(
    model: PmuModel,
    arg: &str,
    sample: Option<&str>,
) -> (BTreeMap<String, String>, RunOutcome) {
    let config = RunConfig {
        timer_checks: false,
        payloads: builtin_payloads(&["wallcost"]),
        extra_members: vec![("args/wallcost".into(), arg.as_bytes().to_vec())],
        sample: sample.map(str::to_string),
        ..RunConfig::default()
    };
    let o = baremark_run(&format!("wallcost {arg}"), model, config);
    (baremark_tests::reported_values(&o, 0), o)
}

fn value(v: &BTreeMap<String, String>, key: &str) -> Option<f64> {
    v.get(key).and_then(|s| s.parse::<f64>().ok())
}

fn baremark_run(what: &str, model: PmuModel, config: RunConfig) -> RunOutcome {
    let o = boot_emulated(Firmware::Bios, config, Duration::from_secs(180), model);
    if o.verdict() != Verdict::Success {
        fail(
            &format!(
                "the baremark {what} run failed ({:?}); serial tail:",
                o.verdict()
            ),
            &o.tail_text(),
        );
    }
    o
}

/// A Linux program's value (`result program=P [method=M]`), by key, as a number.
struct Linux<'a>(&'a LinuxRun);
impl Linux<'_> {
    fn line(&self, program: &str, filter: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        self.0.results().into_iter().find(|r| {
            r.get("program").map(String::as_str) == Some(program)
                && filter
                    .iter()
                    .all(|(k, v)| r.get(*k).map(String::as_str) == Some(*v))
        })
    }
    fn num(&self, program: &str, filter: &[(&str, &str)], key: &str) -> Option<f64> {
        self.line(program, filter)?.get(key)?.parse().ok()
    }
}

fn n(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    })
}

fn list(values: &[Option<f64>]) -> String {
    if values.iter().all(Option::is_none) {
        return "-".into();
    }
    values.iter().map(|v| n(*v)).collect::<Vec<_>>().join("/")
}

struct Row {
    figure: String,
    linux_user: String,
    linux_wall: String,
    bm_seen: String,
    bm_wall: String,
    /// Linux's figure over baremark's on the row's compared quantity.
    ratio: Option<f64>,
    target: String,
    /// "met", "not met", "not measured", or empty for a row without a target.
    met: &'static str,
}

fn ratio(linux: Option<f64>, baremark: Option<f64>) -> Option<f64> {
    match (linux, baremark) {
        (Some(l), Some(b)) if b > 0.0 => Some(l / b),
        _ => None,
    }
}

fn met(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "met",
        Some(false) => "not met",
        None => "not measured",
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut model = PmuModel::IntelV4;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--model" => {
                let name = args.next().unwrap_or_default();
                model = MODELS
                    .into_iter()
                    .find(|m| m.name() == name)
                    .unwrap_or_else(|| {
                        eprintln!(
                            "linux-vs-baremark: unknown model `{name}` (one of: {})",
                            MODELS.map(PmuModel::name).join(", ")
                        );
                        std::process::exit(2);
                    });
            }
            other => {
                eprintln!(
                    "linux-vs-baremark: unknown argument `{other}` (the option is --model M)"
                );
                std::process::exit(2);
            }
        }
    }
    let start = Instant::now();
    // Linux boots in its own QEMU beside baremark's runs.
    let linux = std::thread::spawn(move || boot_linux(model, Duration::from_secs(150)));

    let amd = model.name().starts_with("amd");
    // Four counters: the emulated AMD models have no ref-cycles.
    let four = if amd {
        "instructions:u,branches:u,cycles:u,branch-misses:u"
    } else {
        "instructions:u,branches:u,cycles:u,ref-cycles:u"
    };
    let one = baremark_run(
        "one-counter",
        model,
        config(&["empty", "read-slot"], "instructions:u"),
    );
    let four_run = baremark_run(
        "four-counter",
        model,
        config(&["empty", "syscall", "add-throughput"], four),
    );
    let notify =
        baremark_tests::boot_payloads_emulated(model, &[("notify", "notify")], &[], Some(500));

    let linux = match linux.join() {
        Ok(Ok(run)) => run,
        Ok(Err(e)) => fail("the Linux guest could not boot:", &e),
        Err(_) => fail("the Linux guest's thread panicked", ""),
    };
    if !linux.completed() {
        fail("the Linux guest did not complete; its tail:", &linux.tail());
    }
    if !linux.errors().is_empty() {
        fail(
            "the Linux guest's programs failed:",
            &linux.errors().join("\n"),
        );
    }
    let l = Linux(&linux);

    // Boot: QEMU + SeaBIOS booting a one-sector image (the floor) and baremark's BIOS image to
    // its first record, plain TCG as `boot-timing` measures them (host milliseconds; medians of
    // three, interleaved). Not under -icount: the floor has no counters to be exact about.
    let (mut floors, mut firsts) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        if let Ok(f) = boot_floor(Duration::from_secs(60)) {
            floors.push(f.line_after.as_secs_f64() * 1000.0);
        }
        let o = baremark_tests::boot(
            Firmware::Bios,
            RunConfig::default(),
            Duration::from_secs(120),
            None,
        );
        if let Some(t) = o.first_record_after {
            firsts.push(t.as_secs_f64() * 1000.0);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let (floor_ms, first_ms) = (median(&mut floors), median(&mut firsts));
    let boot_x = match (first_ms, floor_ms) {
        (Some(b), Some(f)) if f > 0.0 => Some(b / f),
        _ => None,
    };

    // baremark's figures.
    let bm_read = per_op(&one, "read-slot", "instructions:u");
    let bm_empty1 = figure(&one, "empty", "instructions:u", "raw");
    let four_events: Vec<&str> = four.split(',').collect();
    let bm_empty4: Vec<Option<f64>> = four_events
        .iter()
        .map(|e| figure(&four_run, "empty", e, "raw"))
        .collect();
    let bm_syscall = per_op(&four_run, "syscall", "tsc");
    // Wall costs by RDTSC: null syscalls with 4 counters configured; a 10M-instruction loop,
    // plain and sampled every 10007 instructions:u (the difference over the samples).
    let (sys, _) = wallcost(model, "syscall", None);
    let bm_syscall_wall = match (value(&sys, "wall_ticks"), value(&sys, "calls")) {
        // The loop's own 4 user instructions per call are in it, as getppid's loop's are in
        // Linux's figure.
        (Some(w), Some(c)) if c > 0.0 && sys.get("counters").map(String::as_str) == Some("4") => {
            Some(w / c)
        }
        _ => None,
    };
    let (plain, _) = wallcost(model, "loop", None);
    let (sampled, sampled_run) = wallcost(model, "loop", Some("0x100c0@10007"));
    let samples = sampled_run
        .records_of("profile_summary")
        .filter_map(|r| r.u64("samples"))
        .sum::<u64>() as f64;
    // Sample attribution: the sampled run's RIPs in the loop (`wallcost_loop`, a sized symbol
    // of the payload's ELF) over all of them.
    let bm_attribution = {
        let elf = baremark::payloads::builtin("wallcost").map(|p| p.elf.to_vec());
        let sym = elf.and_then(|e| baremark::profile::Symbolizer::new(&e, "wallcost").ok());
        let f = sym
            .as_ref()
            .and_then(|s| s.function_named("wallcost_loop").cloned());
        let rips: Vec<u64> = sampled_run
            .records_of("profile_samples")
            .flat_map(|r| {
                r.get("rips")
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_u64()).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect();
        f.filter(|f| f.size > 0 && !rips.is_empty())
            .map(|f| (rips.iter().filter(|&&r| f.contains(r)).count(), rips.len()))
    };
    let bm_sample_wall = match (value(&plain, "wall_ticks"), value(&sampled, "wall_ticks")) {
        (Some(p), Some(q)) if samples > 0.0 => Some((q - p) / samples),
        _ => None,
    };
    let bm_notify = {
        let v = baremark_tests::reported_values(&notify, 0);
        let f = |k: &str| v.get(k).and_then(|s| s.parse::<f64>().ok());
        match (
            f("regs_plain_wall"),
            f("regs_notified_wall"),
            f("regs_notifications"),
        ) {
            (Some(p), Some(q), Some(c)) if c > 0.0 => Some((q - p) / c),
            _ => None,
        }
    };
    let bm_add_ins = figure(
        &four_run,
        "add-throughput",
        "instructions:u",
        "per_iteration",
    );
    let bm_add_br = figure(&four_run, "add-throughput", "branches:u", "per_iteration");
    let bm_interrupts: Option<f64> = {
        let per_region: Vec<f64> = four_run
            .records_of("result")
            .filter_map(|r| r.get("interrupts").as_f64())
            .collect();
        (!per_region.is_empty()).then(|| per_region.iter().sum())
    };

    // Linux's figures.
    let sel = |m: &str, k: &str| l.num("selfmon", &[("method", m)], k);
    let reg = |m: &str, c: &str, k: &str| l.num("region", &[("method", m), ("counters", c)], k);
    let ovf = |m: &str, k: &str| l.num("overflow", &[("method", m)], k);
    let seqlock_user = sel("mmap", "read_instructions_median");
    let linux_syscall_wall = l.num("nullsys", &[], "tsc_per_call");
    let ioctl4: Vec<Option<f64>> = (0..4)
        .map(|k| reg("ioctl", "4", &format!("count_{k}")))
        .collect();
    let mmap4: Vec<Option<f64>> = (0..4)
        .map(|k| reg("mmap", "4", &format!("count_{k}")))
        .collect();
    let bm_empty4_max = bm_empty4.iter().flatten().copied().reduce(f64::max);
    let sample_tsc = l.num("sample", &[], "sample_tsc");
    let sigtrap_wall = ovf("sigtrap", "signal_tsc");
    let none = || "-".to_string();

    let rows = vec![
        Row {
            figure: "safe counter read: mmap seqlock (Linux) / SDK fast read (baremark)".into(),
            linux_user: n(seqlock_user),
            linux_wall: n(sel("mmap", "read_tsc_median")),
            bm_seen: n(bm_read),
            bm_wall: n(bm_read),
            ratio: ratio(seqlock_user, bm_read),
            target: "<= 12".into(),
            met: met(bm_read.map(|v| v <= 12.0)),
        },
        Row {
            figure: "  the same, Linux minimal RDPMC (no seqlock)".into(),
            linux_user: n(sel("rdpmc", "read_instructions_median")),
            linux_wall: n(sel("rdpmc", "read_tsc_median")),
            bm_seen: none(),
            bm_wall: none(),
            ratio: ratio(sel("rdpmc", "read_instructions_median"), bm_read),
            target: none(),
            met: "",
        },
        Row {
            figure: "  the same, Linux read(2)".into(),
            linux_user: n(sel("read", "read_instructions_median")),
            linux_wall: n(sel("read", "read_tsc_median")),
            bm_seen: none(),
            bm_wall: none(),
            ratio: ratio(sel("read", "read_tsc_median"), bm_read),
            target: none(),
            met: "",
        },
        Row {
            figure: "empty region, 1 counter: ioctl enable/disable (Linux)".into(),
            linux_user: n(reg("ioctl", "1", "count_0")),
            linux_wall: n(reg("ioctl", "1", "tsc")),
            bm_seen: n(bm_empty1),
            bm_wall: none(),
            ratio: ratio(reg("ioctl", "1", "count_0"), bm_empty1),
            target: "<= 30".into(),
            met: met(bm_empty1.map(|v| v <= 30.0)),
        },
        Row {
            figure: "  the same, Linux mmap seqlock reads around nothing".into(),
            linux_user: n(reg("mmap", "1", "count_0")),
            linux_wall: n(reg("mmap", "1", "tsc")),
            bm_seen: none(),
            bm_wall: none(),
            ratio: ratio(reg("mmap", "1", "count_0"), bm_empty1),
            target: none(),
            met: "",
        },
        Row {
            figure: "empty region, 4 counters, per counter: ioctl (Linux)".into(),
            linux_user: list(&ioctl4),
            linux_wall: n(reg("ioctl", "4", "tsc")),
            bm_seen: list(&bm_empty4),
            bm_wall: none(),
            ratio: ratio(
                ioctl4.iter().flatten().copied().reduce(f64::max),
                bm_empty4_max,
            ),
            target: "<= 30 each".into(),
            met: met(bm_empty4_max.map(|v| v <= 30.0)),
        },
        Row {
            figure: "  the same, Linux mmap seqlock reads around nothing".into(),
            linux_user: list(&mmap4),
            linux_wall: n(reg("mmap", "4", "tsc")),
            bm_seen: none(),
            bm_wall: none(),
            ratio: ratio(
                mmap4.iter().flatten().copied().reduce(f64::max),
                bm_empty4_max,
            ),
            target: none(),
            met: "",
        },
        Row {
            figure: "null syscall, 4 counters (Linux getppid)".into(),
            linux_user: n(l.num("nullsys", &[], "user_per_call")),
            linux_wall: n(linux_syscall_wall),
            bm_seen: n(bm_syscall),
            bm_wall: n(bm_syscall_wall.map(f64::round)),
            ratio: ratio(linux_syscall_wall, bm_syscall_wall),
            target: format!(
                "wall <= {}",
                n(linux_syscall_wall.map(|w| (w / 3.0).floor()))
            ),
            met: met(match (bm_syscall_wall, linux_syscall_wall) {
                (Some(b), Some(l)) => Some(b <= (l / 3.0).floor()),
                _ => None,
            }),
        },
        Row {
            figure: "overflow notification to a user handler (Linux SIGTRAP)".into(),
            linux_user: n(ovf("sigtrap", "handler_instructions")),
            linux_wall: n(sigtrap_wall),
            bm_seen: "0".into(),
            bm_wall: n(bm_notify.map(f64::round)),
            ratio: ratio(sigtrap_wall, bm_notify),
            target: "wall <= 1000".into(),
            met: met(bm_notify.map(|v| v <= 1000.0)),
        },
        Row {
            figure: "  the same, Linux SIGIO".into(),
            linux_user: n(ovf("sigio", "handler_instructions")),
            linux_wall: n(ovf("sigio", "signal_tsc")),
            bm_seen: none(),
            bm_wall: none(),
            ratio: ratio(ovf("sigio", "signal_tsc"), bm_notify),
            target: none(),
            met: "",
        },
        Row {
            figure: "one sample, period 10007 (Linux: perf record's kernel path)".into(),
            linux_user: "0".into(),
            linux_wall: n(sample_tsc),
            bm_seen: "0".into(),
            bm_wall: n(bm_sample_wall.map(f64::round)),
            ratio: ratio(sample_tsc, bm_sample_wall),
            target: "wall <= 700".into(),
            met: met(bm_sample_wall.map(|v| v <= 700.0)),
        },
        Row {
            figure: "boot to the first record, plain TCG, ms (floor: QEMU + SeaBIOS)".into(),
            linux_user: none(),
            linux_wall: none(),
            bm_seen: floor_ms.map_or("-".into(), |f| format!("floor {f:.0}")),
            bm_wall: first_ms.map_or("-".into(), |b| format!("{b:.0}")),
            ratio: None,
            target: boot_x.map_or("<= 1.5x floor".into(), |x| format!("{x:.1}x <= 1.5x")),
            met: met(boot_x.map(|x| x <= 1.5)),
        },
        Row {
            figure: "10M-instruction region: interrupts".into(),
            linux_user: none(),
            linux_wall: n(l.num("intrude", &[], "interrupts")),
            bm_seen: none(),
            bm_wall: n(bm_interrupts),
            ratio: None,
            target: "0".into(),
            met: met(bm_interrupts.map(|v| v == 0.0)),
        },
        Row {
            figure: "  kernel instructions / context switches (Linux)".into(),
            linux_user: none(),
            linux_wall: format!(
                "{} / {}",
                n(l.num("intrude", &[], "kernel_instructions")),
                n(l.num("intrude", &[], "context_switches"))
            ),
            bm_seen: none(),
            bm_wall: "0 / 0".into(),
            ratio: None,
            target: none(),
            met: "",
        },
        Row {
            figure: "  wall time added to the region, parts per million".into(),
            linux_user: none(),
            linux_wall: n(l.num("intrude", &[], "added_ppm")),
            bm_seen: none(),
            bm_wall: "0".into(),
            ratio: None,
            target: none(),
            met: "",
        },
        Row {
            figure: "known loop exact: Linux perf stat (10000004, 1000001)".into(),
            linux_user: format!(
                "{}, {}",
                linux.perf_stat("instructions:u").unwrap_or_else(none),
                linux.perf_stat("branches:u").unwrap_or_else(none)
            ),
            linux_wall: none(),
            bm_seen: format!("{}, {} /iter", n(bm_add_ins), n(bm_add_br)),
            bm_wall: none(),
            ratio: None,
            target: "exact".into(),
            met: met(match (bm_add_ins, bm_add_br) {
                (Some(i), Some(b)) => Some(i == 10.0 && b == 1.0),
                _ => None,
            }),
        },
        Row {
            figure: "  sample attribution: samples in the loop / samples".into(),
            linux_user: format!(
                "{} / {}",
                n(l.num("sample", &[], "in_loop")),
                n(l.num("sample", &[], "samples"))
            ),
            linux_wall: none(),
            bm_seen: bm_attribution.map_or("not measured".into(), |(i, n)| format!("{i} / {n}")),
            bm_wall: none(),
            ratio: None,
            target: none(),
            met: "",
        },
    ];

    println!(
        "Linux 6.1 + perf and baremark on the same machine: QEMU TCG, -icount shift=0, emulated PMU {} (instructions; wall = TSC ticks = instructions, kernel included)",
        model.name()
    );
    println!(
        "{:<66} {:>14} {:>9} {:>15} {:>12} {:>7} {:>13}  met",
        "figure", "Linux user", "Linux wall", "baremark seen", "bm wall", "ratio", "target"
    );
    for r in &rows {
        println!(
            "{:<66} {:>14} {:>9} {:>15} {:>12} {:>7} {:>13}  {}",
            r.figure,
            r.linux_user,
            r.linux_wall,
            r.bm_seen,
            r.bm_wall,
            r.ratio.map_or("-".into(), |v| format!("{v:.1}x")),
            r.target,
            r.met
        );
    }
    println!(
        "Linux: {} (driver: {}); boot to the end of its init {:.1} s (under -icount, its programs included). Total {:.1} s.",
        linux
            .section()
            .and_then(|s| s.lines().find(|l| l.trim_start().starts_with("guest ")))
            .unwrap_or("?")
            .trim(),
        linux.performance_events().unwrap_or("?"),
        linux.elapsed.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
}

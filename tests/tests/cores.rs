//! Measuring across cores (issue 29, docs/cores.md), as users run it: `baremark c2c` with four
//! CPUs on the emulated PMU (exact counts) and on plain TCG (no counters: `<not supported>`),
//! its heatmap, JSON and CSV read back, a saved log rendered again, and mistakes refused before
//! anything boots. Every command runs in a temporary folder.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn text(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn baremark(dir: &Path, args: &[&str]) -> Output {
    baremark_tests::baremark_cli()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("baremark runs")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The pairs of a `baremark-c2c/1` document with `variant`.
fn pairs<'a>(doc: &'a Value, variant: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    doc["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(move |p| p["variant"] == variant)
}

fn median(p: &Value, side: &str, event: &str) -> u64 {
    let c = &p[side][event];
    assert_eq!(
        c["min"], c["max"],
        "{side} {event} varies over the repetitions: {p}"
    );
    c["median"]
        .as_u64()
        .unwrap_or_else(|| panic!("{side} {event}: {p}"))
}

/// Instructions per round trip of each side, checked by hand once against the payload's
/// disassembly (`objdump -d` of payloads/cores' c2c, the PAUSE variants of `side_with`): each
/// side's wait fails exactly once per round trip under QEMU's round-robin, where a PAUSE hands
/// the turn on. cas: a failed attempt (mov, lock cmpxchg, jne, pause) and a successful one with
/// the loop's step (mov, lock cmpxchg, jne, inc, cmp, jne): 10 on each side. rw, `from`: store,
/// nop, a failed poll (mov, cmp, je, pause, jmp), a successful one (mov, cmp, je), the step
/// (inc, cmp, je): 13; `to`: a failed poll (mov, cmp, jne), pause, a successful one, store and
/// the step (mov, inc, cmp, jne): 11.
const PER_ROUND_TRIP: [(&str, u64, u64); 2] = [("cas", 10, 10), ("rw", 13, 11)];

#[test]
fn c2c_on_the_emulated_pmu_measures_every_pair_with_exact_equal_counts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut docs = Vec::new();
    for rounds in ["200", "300"] {
        let out = baremark(
            d,
            &[
                "c2c",
                "--smp",
                "4",
                "--pmu",
                "emulated",
                "--rounds",
                rounds,
                "--reps",
                "3",
                "--svg",
                &format!("heat{rounds}.svg"),
                "--json",
                &format!("c2c{rounds}.json"),
                "--csv",
                &format!("c2c{rounds}.csv"),
                "--log",
                &format!("serial{rounds}.log"),
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("Core-to-core latency on"), "{}", text(&out));
        assert!(stdout.contains("[emulated:"), "{}", text(&out));
        assert!(!stdout.contains("MISSING"), "{}", text(&out));
        docs.push(read_json(&d.join(format!("c2c{rounds}.json"))));
    }
    let (a, b) = (&docs[0], &docs[1]);
    assert_eq!(a["schema"], "baremark-c2c/1");
    assert_eq!(a["emulated"], true);
    assert_eq!(a["complete"], true);
    assert_eq!(a["cpus"], serde_json::json!([0, 1, 2, 3]));
    for (variant, from_rt, to_rt) in PER_ROUND_TRIP {
        let pa: Vec<&Value> = pairs(a, variant).collect();
        let pb: Vec<&Value> = pairs(b, variant).collect();
        // Every ordered pair of the four CPUs, once.
        let mut seen: Vec<(u64, u64)> = pa
            .iter()
            .map(|p| (p["from"].as_u64().unwrap(), p["to"].as_u64().unwrap()))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 12, "{variant}: {seen:?}");
        assert!(seen.iter().all(|(f, t)| f != t && *f < 4 && *t < 4));
        // Each side's instructions: the same for every pair, exact, and per round trip what
        // the code executes (300 round trips minus 200).
        for side in ["from_counts", "to_counts"] {
            let first = median(pa[0], side, "instructions:u");
            for (p, q) in pa.iter().zip(&pb) {
                assert_eq!(
                    median(p, side, "instructions:u"),
                    first,
                    "{variant} {side}: {p}"
                );
                assert_eq!(
                    median(p, side, "cycles:u"),
                    first,
                    "the model: a cycle per instruction"
                );
                let per = (median(q, side, "instructions:u") - first) as f64 / 100.0;
                let want = if side == "from_counts" {
                    from_rt
                } else {
                    to_rt
                };
                assert_eq!(per, want as f64, "{variant} {side} per round trip: {p} {q}");
            }
        }
        for p in &pa {
            let ow = &p["one_way"];
            assert!(ow["median"].as_f64().unwrap() > 0.0, "{p}");
            assert_eq!(ow["min"], ow["max"], "exact under -icount: {p}");
        }
        // The heatmap: a cell per pair, its value the JSON's, every CPU labelled on both axes,
        // the diagonal empty.
        let svg = std::fs::read_to_string(d.join(format!("heat200-{variant}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains(&format!("Core-to-core latency ({variant})")),
            "{svg}"
        );
        assert!(svg.contains("[emulated]"), "{svg}");
        assert_eq!(svg.matches("class=\"cell\"").count(), 12, "{svg}");
        assert_eq!(svg.matches("class=\"empty\"").count(), 4, "{svg}");
        for c in 0..4 {
            assert!(svg.contains(&format!("class=\"col-label\" x=\"{}\"", 118 + 56 * c)));
            assert!(svg.contains(&format!(">{c}</text>")), "{svg}");
        }
        for p in &pa {
            let cell = format!(
                "data-row=\"{}\" data-col=\"{}\" data-value=\"{}\"",
                p["from"],
                p["to"],
                p["one_way"]["median"].as_f64().unwrap()
            );
            assert!(svg.contains(&cell), "{cell} not in\n{svg}");
            let shown = baremark::numbers::num(p["one_way"]["median"].as_f64().unwrap());
            assert!(
                svg.contains(&format!(">{shown}</text>")),
                "{shown} not in\n{svg}"
            );
        }
    }
    // CSV: the header and a row per pair and variant.
    let csv = std::fs::read_to_string(d.join("c2c200.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with(
        "variant,from,to,one_way_TSC_ticks_median,one_way_TSC_ticks_min,one_way_TSC_ticks_max,from instructions:u per round trip"
    ));
    assert_eq!(lines.count(), 24, "{csv}");
    // The saved log, rendered again without booting, gives the same files.
    let out = baremark(
        d,
        &[
            "c2c",
            "--from-log",
            "serial200.log",
            "--csv",
            "again.csv",
            "--json",
            "again.json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(d.join("again.csv")).unwrap(), csv);
    assert_eq!(read_json(&d.join("again.json")), docs[0]);
    // `report` on the log shows the matrix after the boot report.
    let out = baremark(d, &["report", "serial200.log"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Core-to-core latency on"), "{}", text(&out));
    assert!(stdout.contains(" 3->2   rw "), "{}", text(&out));
}

#[test]
fn c2c_on_tcg_with_four_cpus_measures_every_pair_and_says_the_counters_are_not_supported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = baremark(
        d,
        &[
            "c2c",
            "--smp",
            "4",
            "--accel",
            "tcg",
            "--rounds",
            "100",
            "--reps",
            "3",
            "--json",
            "c2c.json",
            "--variants",
            "cas",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // No counters under plain TCG: each side's counts are "not supported", with the reason.
    assert!(stdout.contains("<not supported>"), "{}", text(&out));
    assert!(stdout.contains("ENODEV"), "{}", text(&out));
    let doc = read_json(&d.join("c2c.json"));
    assert_eq!(doc["emulated"], false);
    assert_eq!(doc["unit"], "ns");
    let all: Vec<&Value> = pairs(&doc, "cas").collect();
    assert_eq!(all.len(), 12, "{doc}");
    for p in all {
        assert!(p["one_way"]["median"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["from_counts"]["instructions:u"], "not supported", "{p}");
        assert_eq!(p["to_counts"]["cycles:u"], "not supported", "{p}");
    }
}

#[test]
fn c2c_mistakes_are_refused_before_booting() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["c2c"][..], "give QEMU at least two with --smp N"),
        (
            &["c2c", "--smp", "4", "--cpus", "0-4"][..],
            "CPU 4 is not there: QEMU gets 4 CPUs",
        ),
        (
            &["c2c", "--smp", "4", "--cpus", "2"][..],
            "name at least two CPUs",
        ),
        (
            &["c2c", "--smp", "2", "--event", "hitm"][..],
            "give NAME=0xHEX",
        ),
        (&["c2c", "--smp", "2", "--reps", "40"][..], "40"),
        (
            &["c2c", "--smp", "2", "--variants", "x"][..],
            "invalid value 'x'",
        ),
    ] {
        let out = baremark(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: expected `{says}` in\n{err}");
        assert!(!err.contains("booting"), "{args:?} booted: {err}");
    }
}

/// Instructions per 64-byte line of each kernel (8-byte scalar moves, one line per iteration;
/// the payload's asm): read and write 8 moves and add, dec, jnz; copy 16 moves, 2 adds, dec,
/// jnz per line copied, which is 128 bytes moved.
const PER_LINE: [(&str, u64, u64); 3] = [("read", 11, 64), ("write", 11, 64), ("copy", 20, 128)];

#[test]
fn bandwidth_on_the_emulated_pmu_moves_exactly_the_bytes_it_says_on_1_to_4_cores() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = baremark(
        d,
        &[
            "bandwidth",
            "--smp",
            "4",
            "--pmu",
            "emulated",
            "--bytes",
            "256K",
            "--reps",
            "3",
            "--loads",
            "20000",
            "--svg",
            "bw.svg",
            "--json",
            "bw.json",
            "--csv",
            "bw.csv",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Bandwidth as cores are added on"),
        "{}",
        text(&out)
    );
    assert!(stdout.contains("Loaded latency"), "{}", text(&out));
    assert!(!stdout.contains("PROBLEM"), "{}", text(&out));
    let doc = read_json(&d.join("bw.json"));
    assert_eq!(doc["schema"], "baremark-bandwidth/1");
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["rate_unit"], "bytes per TSC tick");
    let steps = doc["bandwidth"].as_array().unwrap();
    let svg = std::fs::read_to_string(d.join("bw.svg")).unwrap();
    for (kernel, per_line, bytes_per_line) in PER_LINE {
        let mut fixed = None;
        for k in 1..=4u64 {
            let st = steps
                .iter()
                .find(|s| s["kernel"] == kernel && s["cores"] == k)
                .unwrap_or_else(|| panic!("{kernel} on {k} cores: {doc}"));
            assert_eq!(st["bytes_per_core"], 262_144, "{st}");
            let windows = st["windows"].as_array().unwrap();
            let mut cpus: Vec<u64> = windows.iter().map(|w| w["cpu"].as_u64().unwrap()).collect();
            cpus.sort_unstable();
            assert_eq!(cpus, (0..k).collect::<Vec<_>>(), "{kernel} on {k} cores");
            let mut sum = 0.0;
            for w in windows {
                assert_eq!(w["checked"], true, "the data checks out: {w}");
                // Exactly the loop over every line of the core's buffer, plus the same few
                // instructions of entry on every core and at every core count.
                let insns = median(w, "counts", "instructions:u");
                let lines = 262_144 / bytes_per_line;
                let extra = insns - lines * per_line;
                assert!(
                    extra < 40,
                    "{kernel}: {insns} = {lines} x {per_line} + {extra}"
                );
                assert_eq!(
                    *fixed.get_or_insert(extra),
                    extra,
                    "{kernel} on {k} cores: {w}"
                );
                let ticks = w["ticks"]["median"].as_f64().unwrap();
                let rate = w["rate"].as_f64().unwrap();
                assert!((rate - 262_144.0 / ticks).abs() < 1e-9, "{w}");
                sum += rate;
            }
            let total = st["rate"].as_f64().unwrap();
            assert!((total - sum).abs() < 1e-9, "{st}");
            // The chart has the point, at the JSON's value.
            let point = format!("data-series=\"{kernel}\" data-x=\"{k}\" data-y=\"{total}\"");
            assert!(svg.contains(&point), "{point} not in\n{svg}");
        }
        assert!(svg.contains(&format!("data-name=\"{kernel}\"")), "{svg}");
        assert!(svg.contains(&format!(">{kernel}</text>")), "legend: {svg}");
    }
    assert!(svg.contains(">cores streaming together</text>"), "{svg}");
    assert!(svg.contains("[emulated]"), "{svg}");
    // Loaded latency: the chase with 0 to 3 streamers, 3 instructions per load.
    let loaded = doc["loaded_latency"].as_array().unwrap();
    assert_eq!(loaded.len(), 4, "{doc}");
    let lsvg = std::fs::read_to_string(d.join("bw-loaded.svg")).unwrap();
    for (k, l) in loaded.iter().enumerate() {
        assert_eq!(l["streamers"], k as u64);
        assert_eq!(l["streams"].as_array().unwrap().len(), k, "{l}");
        let insns = median(&l["chase"], "counts", "instructions:u");
        assert!((3 * 20_000..3 * 20_000 + 40).contains(&insns), "{l}");
        for s in l["streams"].as_array().unwrap() {
            assert_eq!(s["checked"], true, "{s}");
        }
        let point = format!(
            "data-x=\"{k}\" data-y=\"{}\"",
            l["latency"].as_f64().unwrap()
        );
        assert!(lsvg.contains(&point), "{point} not in\n{lsvg}");
    }
    let csv = std::fs::read_to_string(d.join("bw.csv")).unwrap();
    // A row per core window: 3 kernels x (1+2+3+4), and the chase and streams: 4 + (1+2+3).
    assert_eq!(csv.lines().count(), 1 + 30 + 10, "{csv}");
}

#[test]
fn bandwidth_on_tcg_with_four_cpus_runs_every_step_and_checks_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = baremark(
        d,
        &[
            "bandwidth",
            "--smp",
            "4",
            "--accel",
            "tcg",
            "--bytes",
            "64K",
            "--reps",
            "1",
            "--kernels",
            "read,copy",
            "--loads",
            "10000",
            "--json",
            "bw.json",
            "--no-counters",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let doc = read_json(&d.join("bw.json"));
    assert_eq!(doc["complete"], true, "{doc}");
    assert_eq!(doc["rate_unit"], "GB/s");
    assert_eq!(doc["bandwidth"].as_array().unwrap().len(), 8, "{doc}");
    for st in doc["bandwidth"].as_array().unwrap() {
        assert!(st["rate"].as_f64().unwrap() > 0.0, "{st}");
    }
}

#[test]
fn bandwidth_mistakes_are_refused_before_booting() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["bandwidth", "--smp", "4", "--bytes", "1000"][..],
            "multiple of 4096",
        ),
        (
            &["bandwidth", "--smp", "4", "--bytes", "16M"][..],
            "more than the payload's 48 MiB",
        ),
        (
            &["bandwidth", "--smp", "2", "--cpus", "0-2"][..],
            "CPU 2 is not there",
        ),
        (
            &["bandwidth", "--kernels", "triad"][..],
            "give read, write, copy",
        ),
    ] {
        let out = baremark(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: expected `{says}` in\n{err}");
        assert!(!err.contains("booting"), "{args:?} booted: {err}");
    }
}

/// On the emulated hybrid part (CPUs 2 and 3 Atom), the matrix names each CPU's core type: in
/// the table, the heatmap's labels and the JSON.
#[test]
fn c2c_on_a_hybrid_part_names_the_core_types() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cpu = format!(
        "{},pmu-hybrid-from=2",
        baremark::qemu::PmuModel::IntelV5.default_cpu()
    );
    let out = baremark(
        d,
        &[
            "c2c",
            "--smp",
            "4",
            "--pmu",
            "emulated",
            "--pmu-model",
            "intel-v5",
            "--cpu",
            &cpu,
            "--variants",
            "cas",
            "--rounds",
            "100",
            "--reps",
            "1",
            "--svg",
            "h.svg",
            "--json",
            "c.json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("core types: 0 core, 1 core, 2 atom, 3 atom"),
        "{}",
        text(&out)
    );
    let doc = read_json(&d.join("c.json"));
    assert_eq!(
        doc["core_types"],
        serde_json::json!(["core", "core", "atom", "atom"])
    );
    // Both core types count the default events on their own counters, the same on every pair.
    let all: Vec<&Value> = pairs(&doc, "cas").collect();
    assert_eq!(all.len(), 12);
    for side in ["from_counts", "to_counts"] {
        let first = median(all[0], side, "instructions:u");
        for p in &all {
            assert_eq!(median(p, side, "instructions:u"), first, "{side}: {p}");
        }
    }
    let svg = std::fs::read_to_string(d.join("h.svg")).unwrap();
    assert!(
        svg.contains(">2 atom</text>") && svg.contains(">0 core</text>"),
        "{svg}"
    );
}

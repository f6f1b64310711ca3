//! The perf-compatible output (`-x SEP`, `-j`) of `report`, `run` and `count`, checked against
//! perf's documented shape: the field order of `perf stat -x` (Linux
//! tools/perf/Documentation/perf-stat.txt, "CSV FORMAT"; tools/perf/util/stat-display.c prints
//! the variance before the run time and the cgroup after the event name) and the keys of
//! `perf stat -j` (stat-display.c). The expected values come from the fixtures' records, read
//! here on their own, not from the code under test.

mod common;

use common::{baremark, fake_qemu, fixture};

use std::process::Output;

use serde_json::Value;

/// `perf stat -x` with `--for-each-cgroup` and `-r`: the fields in order, named by the keys
/// `perf stat -j` gives them. baremark's benchmark is the cgroup.
const FIELDS: [&str; 9] = [
    "counter-value",
    "unit",
    "event",
    "cgroup",
    "variance",
    "event-runtime",
    "pcnt-running",
    "metric-value",
    "metric-unit",
];

/// The keys of a counter line of `perf stat -j`, in the order perf prints them.
const COUNTER_KEYS: [&str; 7] = [
    "counter-value",
    "unit",
    "event",
    "cgroup",
    "variance",
    "event-runtime",
    "pcnt-running",
];

/// The keys of a line with a metric of its own.
const METRIC_KEYS: [&str; 3] = ["cgroup", "metric-value", "metric-unit"];

fn field(name: &str) -> usize {
    FIELDS
        .iter()
        .position(|f| *f == name)
        .expect("a perf field")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn report(log: &str, args: &[&str]) -> Output {
    baremark()
        .arg("report")
        .arg(fixture(log))
        .args(args)
        .output()
        .unwrap()
}

/// What one output line must say, from the fixture's records.
#[derive(Debug)]
enum Expect {
    Counter {
        bench: String,
        event: String,
        unit: String,
        /// `value` (per region, after overhead removal) of a counted event.
        value: Option<Value>,
        multiplexed_groups: Option<u64>,
        runtime_ns: Option<f64>,
    },
    Metric {
        bench: String,
        name: String,
        value: f64,
    },
}

fn records(log: &str) -> Vec<Value> {
    std::fs::read_to_string(fixture(log))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn title(r: &Value) -> String {
    let (p, b) = (r["payload"].as_str().unwrap(), r["bench"].as_str().unwrap());
    if p == b {
        p.to_string()
    } else {
        format!("{p}/{b}")
    }
}

fn mean(stats: &Value) -> f64 {
    stats["mean"].as_f64().unwrap_or(0.0)
}

/// The lines the records call for, in order: a counter line per `result`, a line per `metric`
/// with a value. The run time of a counted event: its repetitions of the benchmark's measured
/// region and of the region its overhead removal used, by the TSC (docs/output-formats.md).
fn expected(log: &str) -> Vec<Expect> {
    let recs = records(log);
    let hz = recs
        .iter()
        .find(|r| r["type"] == "tsc")
        .and_then(|r| r["hz"].as_f64());
    let mut out = Vec::new();
    for r in &recs {
        match r["type"].as_str() {
            Some("result") => {
                let tsc = recs
                    .iter()
                    .find(|t| t["type"] == "result" && t["event"] == "tsc" && title(t) == title(r));
                let counted = r["supported"] == true && !r["value"].is_null();
                let runtime_ns = match (counted, tsc, hz) {
                    (true, Some(t), Some(hz)) => Some(
                        r["value"]["n"].as_f64().unwrap()
                            * (mean(&t["raw"]) + mean(&t["overhead_stats"]) + mean(&t["raw2x"]))
                            * 1e9
                            / hz,
                    ),
                    _ => None,
                };
                out.push(Expect::Counter {
                    bench: title(r),
                    event: r["event"].as_str().unwrap().into(),
                    unit: match r["unit"].as_str().unwrap() {
                        "events" => String::new(),
                        u => u.into(),
                    },
                    value: counted.then(|| r["value"].clone()),
                    multiplexed_groups: (r["multiplexed"] == true)
                        .then(|| r["groups"].as_u64().unwrap()),
                    runtime_ns,
                });
            }
            Some("metric") if r["value"].is_number() => out.push(Expect::Metric {
                bench: title(r),
                name: r["name"].as_str().unwrap().into(),
                value: r["value"].as_f64().unwrap(),
            }),
            _ => {}
        }
    }
    out
}

fn num(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|_| panic!("`{s}` is not a number"))
}

/// perf's `-r` variance, which the variance field holds: the standard error of the mean in
/// percent of the mean (the records' stddev is the population one: SEM = sd / sqrt(n - 1)).
fn variance(stats: &Value) -> f64 {
    let (sd, m) = (stats["stddev"].as_f64().unwrap(), mean(stats));
    let n = stats["n"].as_f64().unwrap();
    if m == 0.0 || n < 2.0 {
        0.0
    } else {
        100.0 * sd / (n - 1.0).sqrt() / m.abs()
    }
}

/// Checks one line's fields (CSV fields, or the JSON values as text) against the records.
fn check(get: &dyn Fn(&str) -> Option<String>, want: &Expect, line: &str) {
    let text = |name: &str| get(name).unwrap_or_else(|| panic!("no {name} in {line}"));
    match want {
        Expect::Counter {
            bench,
            event,
            unit,
            value,
            multiplexed_groups,
            runtime_ns,
        } => {
            assert_eq!(&text("event"), event, "{line}");
            assert_eq!(&text("cgroup"), bench, "{line}");
            assert_eq!(&text("unit"), unit, "{line}");
            let pcnt = num(&text("pcnt-running"));
            let runtime = num(&text("event-runtime"));
            let var = num(text("variance").trim_end_matches('%'));
            match value {
                Some(stats) => {
                    let median = stats["median"].as_f64().unwrap();
                    assert_eq!(num(&text("counter-value")), median, "{line}");
                    assert!((var - variance(stats)).abs() <= 0.005, "{line}");
                    let share = 100.0 / multiplexed_groups.unwrap_or(1) as f64;
                    assert!((pcnt - share).abs() <= 0.005, "{line}");
                    let want_ns = runtime_ns.expect("the TSC and its frequency");
                    assert!(want_ns > 0.0 && (runtime - want_ns).abs() <= 1.0, "{line}");
                }
                None => {
                    // perf's line for a counter never enabled: run == enabled == 0.
                    assert_eq!(text("counter-value"), "<not supported>", "{line}");
                    assert_eq!((runtime, pcnt, var), (0.0, 100.0, 0.0), "{line}");
                }
            }
            for f in ["metric-value", "metric-unit"] {
                assert!(get(f).unwrap_or_default().is_empty(), "{line}");
            }
        }
        Expect::Metric { bench, name, value } => {
            assert_eq!(&text("cgroup"), bench, "{line}");
            assert_eq!(&text("metric-unit"), name, "{line}");
            assert!((num(&text("metric-value")) - value).abs() <= 1e-6, "{line}");
            for f in FIELDS.iter().filter(|f| !METRIC_KEYS.contains(f)) {
                assert!(get(f).unwrap_or_default().is_empty(), "{f} in {line}");
            }
        }
    }
}

fn check_csv(log: &str, sep: &str) {
    let out = report(log, &["-x", sep]);
    let stdout = ok(&out);
    let want = expected(log);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), want.len(), "{stdout}");
    for (line, want) in lines.iter().zip(&want) {
        let fields: Vec<&str> = line.split(sep).collect();
        assert_eq!(fields.len(), FIELDS.len(), "{line:?} split at {sep:?}");
        check(&|name| Some(fields[field(name)].to_string()), want, line);
    }
    // Everything for people went to stderr: the table, the report.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("benchmark"), "{stderr}");
}

#[test]
fn csv_follows_perfs_field_order() {
    // A TSC-only TCG suite of 16 benchmarks with unsupported events; two benchmarks in two
    // multiplexed groups on a KVM guest; a `diff`-mode run. Separators of one and several
    // characters, a tab.
    check_csv("suite-tcg.log", ",");
    check_csv("bench-empty.log", ";");
    check_csv("bench-diff.log", "\t");
    check_csv("bench-empty.log", "::");
}

#[test]
fn csv_counts_are_whole_numbers_unless_the_median_is_not() {
    // perf prints counts with `%.0f`; a median of an even number of repetitions can be x.5
    // (bench-empty.log's chase-l1 tsc), which is kept rather than rounded.
    let mut fractional = 0;
    for log in ["suite-tcg.log", "bench-empty.log"] {
        let out = report(log, &["-x", ","]);
        let stdout = ok(&out);
        for (line, want) in stdout.lines().zip(expected(log)) {
            let Expect::Counter { value: Some(v), .. } = want else {
                continue;
            };
            let median = v["median"].as_f64().unwrap();
            let count = line.split(',').next().unwrap();
            assert_eq!(count.contains('.'), median.fract() != 0.0, "{line}");
            fractional += usize::from(median.fract() != 0.0);
        }
        // The table and the report went to stderr, not into the CSV.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Summary of"), "{stderr}");
        assert!(!stdout.contains("Summary"));
    }
    assert!(
        fractional > 0,
        "the fixtures should hold a median ending in .5"
    );
}

#[test]
fn json_lines_have_perfs_keys_in_perfs_order() {
    for log in ["suite-tcg.log", "bench-empty.log", "bench-diff.log"] {
        let stdout = ok(&report(log, &["-j"]));
        let want = expected(log);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), want.len(), "{stdout}");
        for (line, want) in lines.iter().zip(&want) {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            let obj = v.as_object().unwrap();
            let keys: &[&str] = match want {
                Expect::Counter { .. } => &COUNTER_KEYS,
                Expect::Metric { .. } => &METRIC_KEYS,
            };
            let mut got: Vec<&str> = obj.keys().map(String::as_str).collect();
            got.sort_unstable();
            let mut sorted = keys.to_vec();
            sorted.sort_unstable();
            assert_eq!(got, sorted, "{line}");
            // In perf's order on the line.
            let at: Vec<usize> = keys
                .iter()
                .map(|k| line.find(&format!("\"{k}\"")).unwrap())
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{line}");
            // Types as perf prints them: values as strings, the rest numbers.
            for (k, val) in obj {
                let string = matches!(
                    k.as_str(),
                    "counter-value" | "unit" | "event" | "cgroup" | "metric-value" | "metric-unit"
                );
                assert_eq!(val.is_string(), string, "{k} in {line}");
                assert!(string || val.is_number(), "{k} in {line}");
            }
            if let Some(rt) = obj.get("event-runtime") {
                assert!(rt.is_u64(), "{line}");
            }
            check(
                &|name| {
                    obj.get(name).map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                },
                want,
                line,
            );
        }
    }
}

#[test]
fn several_benchmarks_come_in_run_order_each_in_one_block() {
    let starts: Vec<String> = records("suite-tcg.log")
        .iter()
        .filter(|r| r["type"] == "bench_start")
        .map(title)
        .collect();
    assert_eq!(starts.len(), 16);
    let csv = ok(&report("suite-tcg.log", &["-x", ","]));
    let json = ok(&report("suite-tcg.log", &["-j"]));
    let csv_benches: Vec<String> = csv
        .lines()
        .map(|l| l.split(',').nth(field("cgroup")).unwrap().to_string())
        .collect();
    let json_benches: Vec<String> = json
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["cgroup"].as_str().unwrap().to_string()
        })
        .collect();
    for benches in [csv_benches, json_benches] {
        let mut blocks: Vec<String> = benches.clone();
        blocks.dedup();
        assert_eq!(blocks, starts);
    }
}

#[test]
fn an_output_file_takes_the_lines_and_stdout_keeps_the_table() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, name) in [(vec!["-x", ","], "perf.csv"), (vec!["-j"], "perf.jsonl")] {
        let path = dir.path().join(name);
        let mut args = flags.clone();
        args.extend(["-o", path.to_str().unwrap()]);
        let out = report("bench-empty.log", &args);
        let stdout = ok(&out);
        assert!(stdout.contains("Summary of 2 benchmarks"), "{stdout}");
        let alone = ok(&report("bench-empty.log", &flags));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), alone);
        assert!(String::from_utf8_lossy(&out.stderr).contains("written to"));
    }
}

#[test]
fn run_and_count_print_on_stdout_only_what_report_prints() {
    let dir = tempfile::tempdir().unwrap();
    let log = fixture("bench-empty.log");
    let qemu = fake_qemu(dir.path(), &log);
    let run = baremark()
        .env("BAREMARK_QEMU", &qemu)
        .args([
            "run",
            "--accel",
            "tcg",
            "--timeout",
            "30",
            "--suite",
            "none",
        ])
        .args(["-x", ","])
        .output()
        .unwrap();
    assert_eq!(ok(&run), ok(&report("bench-empty.log", &["-x", ","])));
    // The report lines and how QEMU ran went to stderr.
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.lines().any(|l| l.starts_with("qemu ")), "{stderr}");

    let count = baremark()
        .env("BAREMARK_QEMU", &qemu)
        .args(["count", "--accel", "tcg", "--timeout", "30", "hello", "-j"])
        .output()
        .unwrap();
    assert_eq!(ok(&count), ok(&report("bench-empty.log", &["-j"])));
    assert!(String::from_utf8_lossy(&count.stderr).contains("Performance counter stats for"));
}

#[test]
fn bad_perf_flags_are_refused_with_a_reason() {
    for (args, says) in [
        (vec!["-x", ""], "the field separator is empty"),
        (vec!["-x", "\""], "holds a quote or a line break"),
        (vec!["-x", ",", "-j"], "cannot be used with"),
        (vec!["-o", "out.csv"], "add -x SEP or -j"),
    ] {
        let out = report("bench-empty.log", &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

//! CI gates (issue 31, docs/expectations.md), as users run them: `run --expect` on the emulated
//! PMU with passing and failing entries (exit 6, the messages, JUnit XML valid against the
//! schema, Markdown with every check, `$GITHUB_STEP_SUMMARY`), `report --expect` and `check` on
//! a saved real TCG serial log and on a results JSON file, a baseline saved and compared (and
//! a changed run caught), and mistakes in the file refused before anything boots. Every command
//! runs in a temporary folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("baremark runs")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../boot/tests/fixtures")
        .join(name)
}

/// Validates a JUnit file against tests/fixtures/junit.xsd with xmllint (provisioned by
/// scripts/provision.sh; its absence fails the test with the reason).
fn xmllint(file: &Path) -> Output {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/junit.xsd");
    Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(file)
        .output()
        .expect("xmllint is missing: scripts/provision.sh installs it (libxml2-utils)")
}

const EXPECT: &str = r#"
[run]
errors = 0
interrupts = "none"
pmu = "found"
emulated = true
end = "ok"

[[expect]]
benchmark = "add-latency"
event = "instructions"
equals = 10

[[expect]]
benchmark = "add-latency"
event = "tsc"
at_most = 10
at_least = 10

[[expect]]
benchmark = "add-latency"
event = "instructions"
equals = 11

[[expect]]
benchmark = "int-divide"
event = "instructions"
at_most = 4
"#;

#[test]
fn run_expect_passes_and_fails_with_its_own_status_junit_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ci.toml"), EXPECT).unwrap();
    let summary = d.join("step-summary.md");
    let out = baremark_tests::baremark_cli()
        .current_dir(d)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args([
            "run",
            "--pmu",
            "emulated",
            "--builtin",
            "add-latency",
            "--builtin",
            "int-divide",
            "--events",
            "instructions",
            "--reps",
            "5",
            "--expect",
            "ci.toml",
            "--log",
            "serial.log",
            "--junit",
            "junit.xml",
            "--markdown",
            "checks.md",
        ])
        .output()
        .unwrap();
    // The run went well; two expectations did not: exit 6.
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("expect   9 checks from ci.toml: 7 passed, 2 FAILED"),
        "{}",
        text(&out)
    );
    // Benchmark, event, expected, got and where in the log.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("FAILED   add-latency instructions"))
        .unwrap_or_else(|| panic!("{}", text(&out)));
    assert!(
        line.contains("expected = 11, got 10 (not = 11) [line "),
        "{line}"
    );
    assert!(line.ends_with(" of serial.log]"), "{line}");
    let n: usize = line
        .rsplit("[line ")
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let log = std::fs::read_to_string(d.join("serial.log")).unwrap();
    let at = log.lines().nth(n - 1).unwrap();
    assert!(
        at.contains(r#""type":"result""#)
            && at.contains(r#""event":"instructions""#)
            && at.contains("add-latency"),
        "line {n}: {at}"
    );
    assert!(
        stdout.contains("FAILED   int-divide instructions: expected <= 4, got 5 (above 4)"),
        "{}",
        text(&out)
    );
    // JUnit: valid against the schema, a test case per check, the failures with their messages.
    let v = xmllint(&d.join("junit.xml"));
    assert!(v.status.success(), "{}", text(&v));
    let x = std::fs::read_to_string(d.join("junit.xml")).unwrap();
    assert_eq!(x.matches("<testcase ").count(), 9, "{x}");
    assert_eq!(x.matches("<failure ").count(), 2, "{x}");
    assert!(
        x.contains(r#"<testsuites name="baremark" tests="9" failures="2""#),
        "{x}"
    );
    // Markdown: every check, in the file and in the step summary.
    for md in [d.join("checks.md"), summary] {
        let m = std::fs::read_to_string(&md).unwrap();
        assert!(
            m.starts_with("### baremark: 7 of 9 checks passed, **2 failed**"),
            "{m}"
        );
        assert_eq!(
            m.lines().filter(|l| l.starts_with("| ✅ |")).count(),
            7,
            "{m}"
        );
        assert_eq!(
            m.lines().filter(|l| l.starts_with("| ❌ |")).count(),
            2,
            "{m}"
        );
        assert!(
            m.contains("| ❌ | expect add-latency instructions | = 11 | 10 | not = 11 | line "),
            "{m}"
        );
    }
}

#[test]
fn the_schema_check_can_fail() {
    // The schema is no rubber stamp: a test case without a name, counts that are not numbers.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.xml");
    std::fs::write(
        &bad,
        "<?xml version=\"1.0\"?><testsuites><testsuite name=\"x\" tests=\"many\"><testcase classname=\"c\"/></testsuite></testsuites>",
    )
    .unwrap();
    let v = xmllint(&bad);
    assert!(!v.status.success(), "{}", text(&v));
}

#[test]
fn a_saved_tcg_log_and_a_results_file_are_checked_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = fixture("suite-tcg.log");
    let log = log.to_str().unwrap();
    std::fs::write(
        d.join("tcg.toml"),
        r#"
[run]
errors = 0
end = "ok"
interrupts = "none"
pmu = "tsc-only"

[[expect]]
benchmark = "add-latency"
event = "tsc"
at_most = 50

[[expect]]
benchmark = "chase-dram"
event = "tsc"
at_least = 100

[[expect]]
benchmark = "add-latency"
event = "instructions"
equals = 10
"#,
    )
    .unwrap();
    // report LOG --expect: the report, then the checks; the one that cannot hold (no counters
    // under TCG) fails with the reason.
    let out = baremark(
        d,
        &["report", log, "--expect", "tcg.toml", "--junit", "r.xml"],
    );
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Summary of 16 benchmarks"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("expect   7 checks from tcg.toml: 6 passed, 1 FAILED"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("FAILED   add-latency instructions: expected = 10, got - (not supported: "),
        "{}",
        text(&out)
    );
    assert!(xmllint(&d.join("r.xml")).status.success());
    // check: the same log without the report.
    let out = baremark(d, &["check", log, "--expect", "tcg.toml"]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("Summary of"),
        "{}",
        text(&out)
    );
    // A results JSON file: the benchmarks check as from the log; what a results file does not
    // carry (the end record) fails with the reason.
    let out = baremark(d, &["report", log, "--json", "results.json"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = baremark(d, &["check", "results.json", "--expect", "tcg.toml"]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("expect   7 checks from tcg.toml: 5 passed, 2 FAILED"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains(
            "FAILED   end: expected ok, got - (results.json is a results file, which does not carry the end record"
        ),
        "{}",
        text(&out)
    );
}

#[test]
fn a_baseline_is_saved_compared_and_a_change_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--pmu",
            "emulated",
            "--builtin",
            "add-latency",
            "--events",
            "instructions",
            "--reps",
            "5",
        ];
        args.extend_from_slice(extra);
        baremark(d, &args)
    };
    let out = run(&["--save-baseline", "main", "--log", "a.log"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(d.join("baremark-baselines/main.json").is_file());
    // The same run again: exact on the emulated PMU, so every median equals the baseline's.
    let out = run(&["--baseline", "main"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("checks from baseline main: 2 passed, none failed"),
        "{}",
        text(&out)
    );
    // A run that changed by one instruction per iteration fails the comparison and a `within`
    // expectation, naming the benchmark and both values.
    std::fs::write(
        d.join("e.toml"),
        "[[expect]]\nbenchmark = \"add-latency\"\nevent = \"instructions\"\nwithin = 0\n",
    )
    .unwrap();
    // One instruction per iteration lower: its median and its samples (1000 iterations a
    // region).
    let text0 = std::fs::read_to_string(d.join("baremark-baselines/main.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text0).unwrap();
    let bench = &mut doc["benchmarks"][0];
    for r in bench["results"].as_array_mut().unwrap() {
        if r["event"] == "instructions" {
            r["per_iteration"]["median"] = serde_json::json!(9.0);
        }
    }
    for v in bench["samples"]["instructions"]["region"]
        .as_array_mut()
        .unwrap()
    {
        *v = serde_json::json!(v.as_f64().unwrap() - 1000.0);
    }
    std::fs::write(d.join("baremark-baselines/old.json"), doc.to_string()).unwrap();
    let out = baremark(
        d,
        &["check", "a.log", "--baseline", "old", "--expect", "e.toml"],
    );
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "FAILED   add-latency instructions: expected within 0% of the baseline's 9, got 10"
        ),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains(
            "FAILED   add-latency instructions: expected = 9 (baseline old, exact), got 10 (changed by 1 (+11.111%) on the emulated PMU, where counts are exact)"
        ),
        "{}",
        text(&out)
    );
    // A baseline that is not there is refused before booting.
    let out = run(&["--baseline", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("save one with --save-baseline nope"));
}

#[test]
fn mistakes_in_the_expectations_are_refused_before_booting() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("bad.toml"),
        "[[expect]]\nbenchmark = \"a\"\nequals = 1\n",
    )
    .unwrap();
    let out = baremark(d, &["run", "--expect", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("[[expect]] number 1"),
        "{err}"
    );
    assert!(!err.contains("booting"), "{err}");
    let out = baremark(d, &["run", "--expect", "missing.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("reading the expectations file missing.toml")
    );
}

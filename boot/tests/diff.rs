//! `baremark diff` on the fixtures in tests/fixtures/diff/ (written by gen.py there): a
//! baseline, a rerun of the same benchmarks (other noise, no change) and a run with a planted 5%
//! regression in seq-read's tsc; and the serial-log fixtures of tests/cli.rs.

mod common;

use common::fixture;

use std::path::Path;
use std::process::{Command, Output};

use baremark::diff::{self, Diff, Row, Status};

fn compare(a: &str, b: &str) -> Diff {
    let ia = diff::load(&fixture(a)).unwrap();
    let ib = diff::load(&fixture(b)).unwrap();
    diff::compare(&ia, &ib, (a, b), diff::DEFAULT_ALPHA)
}

fn row<'a>(d: &'a Diff, payload: &str, event: &str) -> &'a Row {
    d.rows
        .iter()
        .find(|r| r.payload == payload && r.event == event)
        .unwrap_or_else(|| panic!("no row {payload} {event}"))
}

fn baremark(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baremark"))
        .arg("diff")
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn planted_regression_is_significant() {
    let d = compare("diff/baseline.json", "diff/regressed.json");
    let r = row(&d, "seq-read", "tsc");
    assert!(r.significant, "{r:?}");
    assert_eq!(r.status, Status::Slower);
    assert_eq!((r.n_a, r.n_b), (30, 30));
    let change = r.change_pct.unwrap();
    assert!((change - 5.0).abs() < 0.5, "{change}");
    assert!(r.p.unwrap() < 1e-6, "{r:?}");
    // Nothing else changed: the other benchmarks and the exact instruction counts.
    for other in d.rows.iter().filter(|o| !std::ptr::eq(*o, r)) {
        assert!(!other.significant, "{other:?}");
        assert_eq!(other.status, Status::Same, "{other:?}");
    }
    // Instructions: constant and equal on both sides: p = 1, not exact.
    let i = row(&d, "seq-read", "instructions");
    assert_eq!((i.p, i.exact), (Some(1.0), false));
    // The gate: over 3% it fires, over 6% it does not.
    assert_eq!(d.over_gate(3.0).len(), 1);
    assert!(d.over_gate(6.0).is_empty());
    // Seen from the regressed run, the baseline is faster, and that is no regression.
    let back = compare("diff/regressed.json", "diff/baseline.json");
    assert_eq!(row(&back, "seq-read", "tsc").status, Status::Faster);
    assert!(back.over_gate(0.0).is_empty());
}

#[test]
fn same_run_pairs_are_not_significant() {
    let d = compare("diff/baseline.json", "diff/rerun.json");
    assert_eq!(d.rows.len(), 6);
    for r in &d.rows {
        assert!(!r.significant, "{r:?}");
        assert_eq!(r.status, Status::Same, "{r:?}");
    }
    assert!(d.over_gate(0.0).is_empty());
    // The very same file: every p is 1.
    let same = compare("diff/baseline.json", "diff/baseline.json");
    for r in &same.rows {
        assert_eq!((r.p, r.change_pct), (Some(1.0), Some(0.0)), "{r:?}");
    }
}

#[test]
fn samples_are_on_the_tables_scale() {
    // The median of the comparable samples is the kernel's median per iteration (or per
    // region), for every overhead mode in the fixtures: empty, diff.
    for name in ["diff/baseline.json", "bench-empty.log", "bench-diff.log"] {
        let input = diff::load(&fixture(name)).unwrap();
        let mut checked = 0;
        for b in &input.benchmarks {
            for r in b.typed.iter().filter(|r| r.supported) {
                let Ok(values) = diff::comparable_samples(b, r) else {
                    continue;
                };
                let (stats, _) = r.chosen().unwrap();
                let m = diff::median(&values).unwrap();
                assert!(
                    (m - stats.median).abs() <= 1e-6 * stats.median.abs().max(1.0),
                    "{name} {} {}: {m} vs {}",
                    b.title(),
                    r.event,
                    stats.median
                );
                checked += 1;
            }
        }
        assert!(checked > 0, "{name}: nothing checked");
    }
}

#[test]
fn serial_logs_are_read_too() {
    let d = compare("bench-diff.log", "bench-diff.log");
    assert!(!d.rows.is_empty());
    for r in &d.rows {
        assert!(!r.significant, "{r:?}");
    }
    // A log against a results file with other benchmarks: each listed as only in one.
    let d = compare("bench-diff.log", "diff/baseline.json");
    assert_eq!(row(&d, "seq-read", "tsc").status, Status::Same);
    assert_eq!(
        row(&d, "seq-read", "instructions").status,
        Status::NotMeasured
    );
    assert_eq!(row(&d, "rand-read", "tsc").status, Status::OnlyInB);
    let d = compare("diff/baseline.json", "bench-diff.log");
    assert_eq!(row(&d, "branchy", "tsc").status, Status::OnlyInA);
}

#[test]
fn too_few_samples_give_no_verdict() {
    let text = std::fs::read_to_string(fixture("diff/baseline.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let samples = &mut doc["benchmarks"][0]["samples"]["tsc"]["region"];
    samples.as_array_mut().unwrap().truncate(4);
    // And rand-read's samples gone entirely.
    doc["benchmarks"][1]["samples"] = serde_json::Value::Null;
    // And branchy missing from B.
    let mut b = doc.clone();
    b["benchmarks"].as_array_mut().unwrap().truncate(2);
    let ia = diff::load_str(&text).unwrap();
    let ib = diff::load_str(&b.to_string()).unwrap();
    let d = diff::compare(&ia, &ib, ("a", "b"), diff::DEFAULT_ALPHA);
    let r = row(&d, "seq-read", "tsc");
    assert_eq!(r.status, Status::NotEnoughSamples, "{r:?}");
    assert!(
        r.note.as_deref().unwrap().contains("30 and 4 repetitions"),
        "{r:?}"
    );
    assert_eq!(row(&d, "rand-read", "tsc").status, Status::NotEnoughSamples);
    assert_eq!(row(&d, "branchy", "tsc").status, Status::OnlyInA);
}

#[test]
fn cli_gate_and_exit_statuses() {
    let (base, reg, rerun) = (
        fixture("diff/baseline.json"),
        fixture("diff/regressed.json"),
        fixture("diff/rerun.json"),
    );
    let gate = |b: &Path, pct: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_baremark"))
            .args(["diff", "--fail-above", pct])
            .arg(&base)
            .arg(b)
            .output()
            .unwrap();
        (out.status.code(), text(&out))
    };
    let (code, (stdout, stderr)) = gate(&reg, "3");
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("slower"), "{stdout}");
    assert!(
        stderr.contains("regression over 3%: seq-read/seq-read tsc +4.9"),
        "{stderr}"
    );
    assert_eq!(gate(&reg, "10").0, Some(0));
    assert_eq!(gate(&rerun, "0").0, Some(0));
    // Without a gate: 0 whatever changed.
    assert_eq!(baremark(&[&base, &reg]).status.code(), Some(0));

    // JSON on stdout.
    let out = Command::new(env!("CARGO_BIN_EXE_baremark"))
        .args(["diff", "--json", "-"])
        .arg(&base)
        .arg(&reg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "baremark-diff/1");
    assert_eq!(doc["alpha"], 0.01);
    assert_eq!(doc["rows"][0]["status"], "slower");
    assert_eq!(doc["rows"][0]["significant"], true);

    // JSON to a file: the same document, and the table still on stdout.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("diff.json");
    let out = Command::new(env!("CARGO_BIN_EXE_baremark"))
        .args(["diff", "--json"])
        .arg(&file)
        .arg(&base)
        .arg(&reg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("diff.json written")).unwrap();
    assert_eq!(written, doc);
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("seq-read"), "the table: {stdout}");
    assert!(
        stderr.contains(&format!("wrote {}", file.display())),
        "{stderr}"
    );

    // Bad input: exit 2 and a clear message.
    let missing = fixture("diff/no-such.json");
    let out = baremark(&[&base, &missing]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("reading"), "{}", text(&out).1);
    let script = fixture("diff/gen.py");
    let out = baremark(&[&script, &base]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("neither a results JSON"),
        "{}",
        text(&out).1
    );
    let out = Command::new(env!("CARGO_BIN_EXE_baremark"))
        .args(["diff", "--alpha", "2"])
        .arg(&base)
        .arg(&base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("not a significance level"),
        "{}",
        text(&out).1
    );
}

#[test]
fn exact_counts_that_differ_are_significant() {
    // Instructions are constant per side (as under icount); one more per iteration in B.
    let text = std::fs::read_to_string(fixture("diff/baseline.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let b0 = &mut doc["benchmarks"][0];
    for v in b0["samples"]["instructions"]["region"]
        .as_array_mut()
        .unwrap()
    {
        *v = serde_json::json!(5003);
    }
    b0["results"][1]["per_iteration"]["median"] = serde_json::json!(5.0);
    let ia = diff::load_str(&text).unwrap();
    let ib = diff::load_str(&doc.to_string()).unwrap();
    let d = diff::compare(&ia, &ib, ("a", "b"), diff::DEFAULT_ALPHA);
    let r = row(&d, "seq-read", "instructions");
    assert!(r.exact && r.significant, "{r:?}");
    assert_eq!((r.p, r.status), (Some(0.0), Status::Slower));
    assert_eq!(r.change_pct, Some(25.0));
    assert_eq!(d.over_gate(20.0).len(), 1);
    assert!(d.render().contains("exact"));
}

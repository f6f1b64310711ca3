use super::*;
use crate::records::records_of_log;

/// A run's records: a machine on the emulated PMU and one benchmark with instructions (10 per
/// iteration) and tsc, a payload report, an end record.
fn log() -> String {
    [
        r#"{"type":"boot","v":1,"version":"0.1.0"}"#,
        r#"{"type":"pmu","v":1,"backend":"intel-arch-v4","emulated":true}"#,
        r#"{"type":"bench_start","v":1,"payload":"add-latency","bench":"add-latency","iterations":1000,"reps":5,"warmup":1,"overhead":"empty","events":["tsc","instructions"],"cpu":0}"#,
        r#"{"type":"result","v":1,"payload":"add-latency","bench":"add-latency","event":"tsc","unit":"ticks","supported":true,"emulated":false,"reps":5,"iterations":1000,"overhead":"empty","per_iteration":{"n":5,"min":10.0,"median":10.0,"mean":10.0,"stddev":0.0,"max":10.0,"mean_20_80":10.0},"interrupts":0,"cpu":0}"#,
        r#"{"type":"result","v":1,"payload":"add-latency","bench":"add-latency","event":"instructions","unit":null,"supported":true,"emulated":true,"reps":5,"iterations":1000,"overhead":"empty","per_iteration":{"n":5,"min":10.0,"median":10.0,"mean":10.0,"stddev":0.0,"max":10.0,"mean_20_80":10.0},"interrupts":0,"cpu":0}"#,
        r#"{"type":"result","v":1,"payload":"add-latency","bench":"add-latency","event":"branch-misses","unit":null,"supported":false,"reason":"not available on this PMU","cpu":0}"#,
        r#"{"type":"report","v":1,"task":"loop1000","task_index":1,"cpu":0,"values":{"delta":"4103","k":"4"}}"#,
        r#"{"type":"end","v":1,"status":"ok"}"#,
    ]
    .join("\n")
}

fn check(spec: &str) -> Vec<Case> {
    let text = log();
    let records = records_of_log(&text);
    let res = Results::from_records(&records);
    let lines: Vec<usize> = (1..=records.len()).collect();
    let ev = Evidence {
        results: &res,
        records: Some(&records),
        lines: Some(&lines),
        source: "serial.log".into(),
        json: None,
    };
    evaluate(&Spec::parse(spec).unwrap(), &ev, None)
}

#[test]
fn passing_and_failing_entries_name_benchmark_event_expected_got_and_where() {
    let cases = check(
        r#"
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
        event = "instructions"
        equals = 11

        [[expect]]
        benchmark = "add-latency"
        event = "tsc"
        at_most = 9.5

        [[expect]]
        payload = "loop1000"
        report = "delta"
        equals = 4103
        "#,
    );
    let failed: Vec<&Case> = cases.iter().filter(|c| !c.passed).collect();
    assert_eq!(cases.len(), 9, "{cases:#?}");
    assert_eq!(failed.len(), 2, "{cases:#?}");
    let f = failed[0];
    assert_eq!(f.name, "add-latency instructions");
    assert_eq!(f.expected, "= 11");
    assert_eq!(f.got, "10");
    assert_eq!(f.location.as_deref(), Some("line 5 of serial.log"));
    let text = report::text(&cases, "ci.toml", false);
    assert!(
        text.contains("9 checks from ci.toml: 7 passed, 2 FAILED"),
        "{text}"
    );
    assert!(
        text.contains("FAILED   add-latency instructions: expected = 11, got 10 (not = 11) [line 5 of serial.log]"),
        "{text}"
    );
    assert!(
        text.contains("add-latency tsc: expected <= 9.500, got 10"),
        "{text}"
    );
}

#[test]
fn what_cannot_be_checked_fails_with_the_reason() {
    let cases = check(
        r#"
        [run]
        selftest = "pass"
        [[expect]]
        benchmark = "nope"
        event = "instructions"
        equals = 1
        [[expect]]
        benchmark = "add-latency"
        event = "branch-misses"
        at_most = 0
        [[expect]]
        benchmark = "add-latency"
        event = "instructions"
        within = 1
        [[expect]]
        payload = "loop1000"
        report = "nokey"
        equals = 1
        "#,
    );
    assert!(cases.iter().all(|c| !c.passed), "{cases:#?}");
    let why: Vec<&str> = cases.iter().filter_map(|c| c.why.as_deref()).collect();
    assert!(why[0].contains("no selftest in serial.log"), "{why:?}");
    assert!(
        why[1].contains("no benchmark `nope` in serial.log (there are: add-latency)"),
        "{why:?}"
    );
    assert!(
        why[2].contains("not supported: not available on this PMU"),
        "{why:?}"
    );
    assert!(why[3].contains("no baseline"), "{why:?}");
    assert!(why[4].contains("reported no `nokey`"), "{why:?}");
}

#[test]
fn bad_expectation_files_are_refused_with_the_reason() {
    for (text, says) in [
        (
            "[[expect]]\nbenchmark = \"a\"\nequals = 1",
            "name either `benchmark` and `event`",
        ),
        (
            "[[expect]]\nbenchmark = \"a\"\nevent = \"b\"",
            "give what the value must be",
        ),
        (
            "[[expect]]\nbenchmark = \"a\"\nevent = \"b\"\nequal = 1",
            "unknown field `equal`",
        ),
        ("[run]\ninterrupts = \"few\"", "the one value is \"none\""),
        (
            "[[expect]]\nbenchmark = \"a\"\nevent = \"b\"\nequals = 1\nstat = \"p99\"",
            "give median, min, max, mean, raw or overhead",
        ),
        ("[[expect]\n", "TOML parse error at line 1"),
    ] {
        let e = format!("{:#}", Spec::parse(text).unwrap_err());
        assert!(
            e.to_lowercase().contains(&says.to_lowercase()),
            "{text}: {e}"
        );
    }
}

#[test]
fn junit_and_markdown_hold_every_check() {
    let cases = check(
        "[run]\nend = \"ok\"\n[[expect]]\nbenchmark = \"add-latency\"\nevent = \"instructions\"\nequals = 11\n",
    );
    let x = report::junit(&cases, "serial.log <1>", "2026-11-28T00:00:00");
    assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"baremark\" tests=\"2\" failures=\"1\""), "{x}");
    assert!(
        x.contains("<testsuite name=\"baremark.run\" tests=\"1\" failures=\"0\""),
        "{x}"
    );
    assert!(x.contains("<testcase classname=\"baremark.expect\" name=\"add-latency instructions: expected = 11\""), "{x}");
    assert!(
        x.contains("<failure message=\"expected = 11, got 10 (not = 11)\" type=\"expectation\">"),
        "{x}"
    );
    assert!(x.contains("serial.log &lt;1&gt;"), "escaped: {x}");
    let m = report::markdown(&cases, "serial.log");
    assert!(
        m.starts_with("### baremark: 1 of 2 checks passed, **1 failed**"),
        "{m}"
    );
    assert!(m.contains("| ✅ | run end | ok | ok |"), "{m}");
    assert!(
        m.contains(
            "| ❌ | expect add-latency instructions | = 11 | 10 | not = 11 | line 5 of serial.log |"
        ),
        "{m}"
    );
}

#[test]
fn the_uarch_model_is_checked_and_written_only_when_on() {
    // The log's PMU has no `uarch_model`: a run without --uarch.
    let cases = check("[run]\nuarch_model = true\n");
    assert_eq!(cases.len(), 1);
    assert!(!cases[0].passed);
    assert!(
        cases[0].why.as_deref().unwrap().contains("--uarch"),
        "{cases:?}"
    );
    assert!(check("[run]\nuarch_model = false\n")[0].passed);
    let text = log();
    let mut res = Results::from_records(&records_of_log(&text));
    assert!(!expectations_of(&res, "serial.log").contains("uarch_model"));
    res.machine.pmu_uarch_model = true;
    let written = expectations_of(&res, "serial.log");
    assert!(written.contains("\nuarch_model = true\n"), "{written}");
    assert!(Spec::parse(&written).unwrap().run.uarch_model == Some(true));
}

//! CI gates (docs/expectations.md): an expectations file (TOML) of assertions on a run,
//! checked against the run's records (a live run, a saved serial log, a stick's results file)
//! or a results JSON file; baselines saved in the user's repository and compared with; the
//! outcome as text, JUnit XML and Markdown.
//!
//! Every check is a [`Case`]: what was asked, what was found, and where in the log. A check
//! that cannot be made (a benchmark not in the run, an event not supported, a report key
//! missing, a run check on a results file that does not carry it) fails with the reason:
//! nothing passes by being absent.

pub mod baseline;
pub mod report;

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::numbers;
use crate::records::Record;
use crate::results::{Benchmark, Results};

/// The expectations file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Checks on the run as a whole.
    #[serde(default)]
    pub run: RunChecks,
    /// Checks on benchmarks' results and payloads' reports.
    #[serde(default)]
    pub expect: Vec<Expectation>,
}

/// `[run]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunChecks {
    /// At most this many errors (harness errors, task errors, faults, killed tasks, ...).
    pub errors: Option<u64>,
    /// `"none"`: no interrupt and no SMI fell into any measured region.
    pub interrupts: Option<String>,
    /// `"found"`: a PMU with counters (not the TSC alone); or the backend's name
    /// (`intel-arch-v4`, `amd-perfmon-v2`, ...).
    pub pmu: Option<String>,
    /// The counters were (true) or were not (false) the emulated PMU.
    pub emulated: Option<bool>,
    /// The emulated PMU did (true) or did not (false) model caches and branch prediction
    /// (`--uarch`): its cycles and cache events differ between the two.
    pub uarch_model: Option<bool>,
    /// `"pass"`: every selftest check passed; `"pass-or-skip"`: none failed.
    pub selftest: Option<String>,
    /// `"ok"`: the kernel's `end` record says ok.
    pub end: Option<String>,
}

/// `[[expect]]`: one value of the run and what it must be.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// A benchmark: its name, `payload/bench`, or the payload's name.
    pub benchmark: Option<String>,
    /// With `benchmark`: an event as the results name it (`instructions`, `tsc`, ...) or a
    /// derived metric (`IPC`, ...).
    pub event: Option<String>,
    /// Or a payload's `report` value: the payload's name and the key.
    pub payload: Option<String>,
    pub report: Option<String>,
    /// Only the benchmark's run on this CPU (default: every CPU it ran on).
    pub cpu: Option<u64>,
    /// Which statistic of the benchmark's event: `median` (default), `min`, `max`, `mean` (per
    /// iteration, after the overhead was taken off), `raw` (the region's median before) or
    /// `overhead` (the empty region's median: the harness's own cost).
    pub stat: Option<String>,
    /// Exactly this (for emulated or `-icount` runs, whose counts are the same every time).
    pub equals: Option<f64>,
    pub at_most: Option<f64>,
    pub at_least: Option<f64>,
    /// Within this many percent of the baseline's value (`--baseline NAME`).
    pub within: Option<f64>,
}

impl Spec {
    /// Reads and checks an expectations file.
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the expectations file {}", path.display()))?;
        Spec::parse(&text).with_context(|| format!("{}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Spec> {
        let spec: Spec = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        for (i, e) in spec.expect.iter().enumerate() {
            e.check()
                .with_context(|| format!("[[expect]] number {}", i + 1))?;
        }
        let r = &spec.run;
        if let Some(v) = &r.interrupts
            && v != "none"
        {
            bail!("[run] interrupts = \"{v}\": the one value is \"none\"");
        }
        if let Some(v) = &r.selftest
            && v != "pass"
            && v != "pass-or-skip"
        {
            bail!("[run] selftest = \"{v}\": give \"pass\" or \"pass-or-skip\"");
        }
        if let Some(v) = &r.end
            && v != "ok"
        {
            bail!("[run] end = \"{v}\": the one value is \"ok\"");
        }
        Ok(spec)
    }
}

impl Expectation {
    fn check(&self) -> Result<()> {
        match (&self.benchmark, &self.event, &self.payload, &self.report) {
            (Some(_), Some(_), None, None) | (None, None, Some(_), Some(_)) => {}
            _ => bail!(
                "name either `benchmark` and `event`, or `payload` and `report` (a key of its \
                 report)"
            ),
        }
        if self.equals.is_none()
            && self.at_most.is_none()
            && self.at_least.is_none()
            && self.within.is_none()
        {
            bail!("give what the value must be: `equals`, `at_most`, `at_least` or `within`");
        }
        if let Some(s) = &self.stat
            && !matches!(
                s.as_str(),
                "median" | "min" | "max" | "mean" | "raw" | "overhead"
            )
        {
            bail!("stat = \"{s}\": give median, min, max, mean, raw or overhead");
        }
        if self.stat.is_some() && self.report.is_some() {
            bail!("`stat` is for benchmarks; a report value is one number");
        }
        if self.within.is_some_and(|w| !(w >= 0.0 && w.is_finite())) {
            bail!("`within` is a percentage of 0 or more");
        }
        Ok(())
    }

    /// `add-latency instructions` or `loop1000 report delta`.
    fn subject(&self) -> String {
        match (&self.benchmark, &self.event, &self.payload, &self.report) {
            (Some(b), Some(e), ..) => format!("{b} {e}"),
            (.., Some(p), Some(k)) => format!("{p} report {k}"),
            _ => "?".into(),
        }
    }

    /// `equals 10`, `at_most 12, at_least 8`.
    fn wanted(&self, base: Option<f64>) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.equals {
            parts.push(format!("= {}", fmt(v)));
        }
        if let Some(v) = self.at_most {
            parts.push(format!("<= {}", fmt(v)));
        }
        if let Some(v) = self.at_least {
            parts.push(format!(">= {}", fmt(v)));
        }
        if let Some(w) = self.within {
            match base {
                Some(b) => parts.push(format!("within {w}% of the baseline's {}", fmt(b))),
                None => parts.push(format!("within {w}% of the baseline")),
            }
        }
        parts.join(", ")
    }

    /// Whether `got` meets every bound; the first one it misses.
    fn judge(&self, got: f64, base: Option<f64>) -> Result<(), String> {
        // Exact means exact up to the last bits a float median of integers can lose.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        if let Some(v) = self.equals
            && !close(got, v)
        {
            return Err(format!("not = {}", fmt(v)));
        }
        if let Some(v) = self.at_most
            && got > v
            && !close(got, v)
        {
            return Err(format!("above {}", fmt(v)));
        }
        if let Some(v) = self.at_least
            && got < v
            && !close(got, v)
        {
            return Err(format!("below {}", fmt(v)));
        }
        if let Some(w) = self.within {
            let Some(b) = base else {
                return Err("no baseline to compare with (give --baseline NAME)".into());
            };
            let pct = if b == 0.0 {
                if got == 0.0 { 0.0 } else { f64::INFINITY }
            } else {
                (got - b).abs() / b.abs() * 100.0
            };
            if pct > w && !close(pct, w) {
                return Err(format!("{pct:.3}% from the baseline's {}", fmt(b)));
            }
        }
        Ok(())
    }
}

/// A value as the checks print it: whole numbers exactly (counts on the emulated PMU are
/// whole), others as the report prints measurements.
pub fn fmt(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        numbers::num(v)
    }
}

/// What the checks read: the results, and (from a log or a live run) the records and the line
/// of each in the log.
pub struct Evidence<'a> {
    pub results: &'a Results,
    pub records: Option<&'a [Record]>,
    /// The line of each record in `source` (a log), when known.
    pub lines: Option<&'a [usize]>,
    /// What the evidence is: `serial.log`, `results.json`, `this run`.
    pub source: String,
    /// From a results JSON file: its document (the run checks read `machine` and `errors`).
    pub json: Option<&'a Value>,
}

/// One check and its outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// `run`, `expect` or `baseline`.
    pub group: &'static str,
    /// What was checked: `add-latency instructions (cpu 0)`.
    pub name: String,
    /// What it had to be.
    pub expected: String,
    /// What it was (`-` when there was nothing to read).
    pub got: String,
    pub passed: bool,
    /// Why it failed.
    pub why: Option<String>,
    /// Where: `line 57 of serial.log`.
    pub location: Option<String>,
}

impl Evidence<'_> {
    fn where_record(&self, pred: impl Fn(&Record) -> bool) -> Option<String> {
        let records = self.records?;
        let i = records.iter().position(pred)?;
        Some(match self.lines.and_then(|l| l.get(i)) {
            Some(line) => format!("line {line} of {}", self.source),
            None => format!("record {} of {}", i + 1, self.source),
        })
    }
}

/// Checks `spec` against the evidence; `baseline`: the baseline's results, for `within`.
pub fn evaluate(spec: &Spec, ev: &Evidence<'_>, baseline: Option<&Results>) -> Vec<Case> {
    let mut out = run_cases(&spec.run, ev);
    for e in &spec.expect {
        if e.benchmark.is_some() {
            out.extend(benchmark_cases(e, ev, baseline));
        } else {
            out.push(report_case(e, ev, baseline));
        }
    }
    out
}

fn case(group: &'static str, name: String, expected: String) -> Case {
    Case {
        group,
        name,
        expected,
        got: "-".into(),
        passed: false,
        why: None,
        location: None,
    }
}

/// The benchmarks an expectation names.
fn matching<'a>(res: &'a Results, name: &str, cpu: Option<u64>) -> Vec<&'a Benchmark> {
    res.benchmarks
        .iter()
        .filter(|b| b.title() == name || b.bench == name || b.payload == name)
        .filter(|b| cpu.is_none() || b.cpu.unwrap_or(0) == cpu.unwrap_or(0))
        .collect()
}

/// A benchmark's value for `event`: a result's statistic, or a metric's value.
fn value_of(b: &Benchmark, event: &str, stat: &str) -> Result<f64, String> {
    if let Some(r) = b.result(event) {
        let Some((s, _)) = r.chosen() else {
            return Err(match &r.reason {
                Some(why) => format!("not supported: {why}"),
                None => "no statistics in its result".into(),
            });
        };
        let region = |st: Option<&crate::results::Stats>, what: &str| {
            st.map(|x| x.median)
                .ok_or_else(|| format!("its result has no {what} statistics"))
        };
        return match stat {
            "min" => Ok(s.min),
            "max" => Ok(s.max),
            "mean" => Ok(s.mean),
            // Per region, before the overhead was taken off.
            "raw" => region(r.raw.as_ref(), "raw"),
            // The empty region's own cost (the harness's overhead, per region).
            "overhead" => region(r.overhead_stats.as_ref(), "overhead"),
            _ => Ok(s.median),
        };
    }
    if let Some(m) = b.typed_metrics.iter().find(|m| m.name == event) {
        return m.value.ok_or_else(|| {
            format!(
                "the metric has no value: {}",
                m.reason.as_deref().unwrap_or("not computed")
            )
        });
    }
    let mut known: Vec<String> = b.typed.iter().map(|r| r.event.clone()).collect();
    known.extend(b.typed_metrics.iter().map(|m| m.name.clone()));
    Err(format!(
        "no event or metric `{event}` (it has: {})",
        known.join(", ")
    ))
}

fn benchmark_cases(e: &Expectation, ev: &Evidence<'_>, base: Option<&Results>) -> Vec<Case> {
    let (name, event) = (
        e.benchmark.as_deref().unwrap_or(""),
        e.event.as_deref().unwrap_or(""),
    );
    let stat = e.stat.as_deref().unwrap_or("median");
    let found = matching(ev.results, name, e.cpu);
    if found.is_empty() {
        let mut c = case("expect", e.subject(), e.wanted(None));
        let names: Vec<String> = ev.results.benchmarks.iter().map(Benchmark::title).collect();
        c.why = Some(format!(
            "no benchmark `{name}`{} in {} (there are: {})",
            e.cpu.map(|c| format!(" on cpu {c}")).unwrap_or_default(),
            ev.source,
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        ));
        return vec![c];
    }
    let several = found.len() > 1;
    found
        .into_iter()
        .map(|b| {
            let cpu = b.cpu.unwrap_or(0);
            let base_value = base.and_then(|r| {
                matching(r, name, Some(cpu))
                    .first()
                    .and_then(|bb| value_of(bb, event, stat).ok())
            });
            let mut label = e.subject();
            if several || e.cpu.is_some() {
                label.push_str(&format!(" (cpu {cpu})"));
            }
            if stat != "median" {
                label.push_str(&format!(" [{stat}]"));
            }
            let mut c = case("expect", label, e.wanted(base_value));
            c.location = ev.where_record(|r| {
                r.kind == "result"
                    && r.str("event") == Some(event)
                    && (r.str("bench") == Some(&b.bench))
                    && r.str("payload") == Some(&b.payload)
                    && r.u64("cpu").unwrap_or(0) == cpu
            });
            match value_of(b, event, stat) {
                Ok(got) => {
                    c.got = fmt(got);
                    match e.judge(got, base_value) {
                        Ok(()) => c.passed = true,
                        Err(why) => c.why = Some(why),
                    }
                }
                Err(why) => c.why = Some(why),
            }
            c
        })
        .collect()
}

fn report_case(e: &Expectation, ev: &Evidence<'_>, base: Option<&Results>) -> Case {
    let (payload, key) = (
        e.payload.as_deref().unwrap_or(""),
        e.report.as_deref().unwrap_or(""),
    );
    let _ = base;
    let mut c = case("expect", e.subject(), e.wanted(None));
    let Some(records) = ev.records else {
        c.why = Some(format!(
            "{} is a results file, which does not carry payload reports: check the serial log",
            ev.source
        ));
        return c;
    };
    let is_it = |r: &Record| {
        r.kind == "report"
            && r.str("task") == Some(payload)
            && r.get("values").get(key).is_some_and(|v| !v.is_null())
    };
    let Some(r) = records.iter().find(|r| is_it(r)) else {
        let any = records
            .iter()
            .any(|r| r.kind == "report" && r.str("task") == Some(payload));
        c.why = Some(if any {
            format!("payload `{payload}` reported no `{key}`")
        } else {
            format!("payload `{payload}` made no report in {}", ev.source)
        });
        return c;
    };
    c.location = ev.where_record(is_it);
    let text = r
        .get("values")
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    c.got = text.clone();
    match text.trim().parse::<f64>() {
        Ok(got) => match e.judge(got, None) {
            Ok(()) => c.passed = true,
            Err(why) => c.why = Some(why),
        },
        Err(_) => c.why = Some(format!("`{text}` is not a number")),
    }
    c
}

fn run_cases(r: &RunChecks, ev: &Evidence<'_>) -> Vec<Case> {
    let mut out = Vec::new();
    let res = ev.results;
    if let Some(max) = r.errors {
        let mut c = case("run", "errors".into(), format!("<= {max}"));
        let n = res.errors.len() as u64;
        c.got = n.to_string();
        c.passed = n <= max;
        if !c.passed {
            c.why = Some(
                res.errors
                    .iter()
                    .take(3)
                    .map(|e| format!("{}: {}", e.kind, e.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            );
            c.location = ev.where_record(|r| {
                matches!(
                    r.kind.as_str(),
                    "harness_error" | "task_error" | "fault" | "task_killed" | "error"
                )
            });
        }
        out.push(c);
    }
    if r.interrupts.is_some() {
        let mut c = case(
            "run",
            "interrupts in measured regions".into(),
            "none (no interrupt, no SMI)".into(),
        );
        let mut hits = Vec::new();
        for b in &res.benchmarks {
            for rr in &b.typed {
                let n = rr.interrupts.unwrap_or(0) + rr.smis.unwrap_or(0);
                if n > 0 {
                    hits.push(format!("{} {}: {n}", b.title(), rr.event));
                }
            }
        }
        c.got = if hits.is_empty() {
            "none".into()
        } else {
            hits.len().to_string()
        };
        c.passed = hits.is_empty() && !res.benchmarks.is_empty();
        if res.benchmarks.is_empty() {
            c.why = Some(format!("no benchmark results in {}", ev.source));
        } else if !hits.is_empty() {
            c.why = Some(hits.into_iter().take(5).collect::<Vec<_>>().join("; "));
        }
        out.push(c);
    }
    if let Some(want) = &r.pmu {
        let backend = res.machine.pmu_backend.clone();
        let mut c = case("run", "pmu".into(), want.clone());
        c.got = backend.clone().unwrap_or_else(|| "not reported".into());
        c.passed = match (want.as_str(), backend.as_deref()) {
            (_, None) => false,
            ("found", Some(b)) => b != "tsc-only",
            (w, Some(b)) => w == b,
        };
        if !c.passed {
            c.why = Some(match backend {
                None => format!("{} does not say which PMU counted", ev.source),
                Some(b) if b == "tsc-only" => "no PMU: only the TSC was measured".into(),
                Some(b) => format!("the backend is {b}"),
            });
        }
        c.location = ev.where_record(|r| r.kind == "pmu");
        out.push(c);
    }
    if let Some(want) = r.emulated {
        let mut c = case("run", "emulated PMU".into(), want.to_string());
        c.got = res.machine.pmu_emulated.to_string();
        c.passed = res.machine.pmu_emulated == want;
        if !c.passed {
            c.why = Some(if want {
                "the counts are not the emulated PMU's".into()
            } else {
                "the counts are the emulated PMU's, not hardware".into()
            });
        }
        out.push(c);
    }
    if let Some(want) = r.uarch_model {
        let mut c = case("run", "uarch model".into(), want.to_string());
        c.got = res.machine.pmu_uarch_model.to_string();
        c.passed = res.machine.pmu_uarch_model == want;
        if !c.passed {
            c.why = Some(if want {
                "the emulated PMU did not model caches and branch prediction (run with --uarch)"
                    .into()
            } else {
                "the emulated PMU modelled caches and branch prediction (--uarch): its cycles and cache events are another model's".into()
            });
        }
        out.push(c);
    }
    if let Some(want) = &r.selftest {
        let mut c = case("run", "selftest".into(), want.clone());
        match ev.records {
            None => {
                c.why = Some(format!(
                    "{} is a results file, which does not carry the selftest: check the serial log",
                    ev.source
                ));
            }
            Some(records) => {
                let checks: Vec<&Record> =
                    records.iter().filter(|r| r.kind == "selftest").collect();
                let failed: Vec<&str> = checks
                    .iter()
                    .filter(|r| r.str("result") == Some("fail"))
                    .filter_map(|r| r.str("check"))
                    .collect();
                let skipped: Vec<&str> = checks
                    .iter()
                    .filter(|r| r.str("result") == Some("skip"))
                    .filter_map(|r| r.str("check"))
                    .collect();
                c.got = format!(
                    "{} checks: {} failed, {} skipped",
                    checks.len(),
                    failed.len(),
                    skipped.len()
                );
                c.passed = !checks.is_empty()
                    && failed.is_empty()
                    && (want == "pass-or-skip" || skipped.is_empty());
                if checks.is_empty() {
                    c.why = Some(format!("no selftest in {} (run --selftest)", ev.source));
                } else if !failed.is_empty() {
                    c.why = Some(format!("failed: {}", failed.join(", ")));
                    c.location = ev
                        .where_record(|r| r.kind == "selftest" && r.str("result") == Some("fail"));
                } else if !c.passed {
                    c.why = Some(format!("skipped: {}", skipped.join(", ")));
                }
            }
        }
        out.push(c);
    }
    if r.end.is_some() {
        let mut c = case("run", "end".into(), "ok".into());
        match ev.records {
            None => {
                c.why = Some(format!(
                    "{} is a results file, which does not carry the end record: check the serial log",
                    ev.source
                ));
            }
            Some(records) => match records.iter().find(|r| r.kind == "end") {
                Some(end) => {
                    let s = end.str("status").unwrap_or("?").to_string();
                    c.passed = s == "ok";
                    c.got = s.clone();
                    if !c.passed {
                        c.why = Some(format!("the kernel ended with `{s}`"));
                    }
                    c.location = ev.where_record(|r| r.kind == "end");
                }
                None => c.why = Some("no end record: the run did not finish".into()),
            },
        }
        out.push(c);
    }
    out
}

/// An expectations file that holds this run as it is: the run checks it passes, and `equals`
/// for every counted event of every benchmark (the median per iteration; for the suite's
/// `empty` benchmark, the overhead itself). For exact runs (the emulated PMU, `-icount`),
/// whose counts are the same every time: review it, commit it, gate with it.
pub fn expectations_of(res: &Results, source: &str) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "# Expectations written by `baremark ... --write-expect` from {source}: every counted\n\
         # event of every benchmark, exactly (docs/expectations.md). Review before committing.\n\n\
         [run]\nerrors = 0\ninterrupts = \"none\"\nend = \"ok\"\n"
    );
    if let Some(b) = &res.machine.pmu_backend {
        let _ = writeln!(out, "pmu = \"{b}\"");
    }
    let _ = writeln!(out, "emulated = {}", res.machine.pmu_emulated);
    // Only when on, so that files written without it stay as they were.
    if res.machine.pmu_uarch_model {
        let _ = writeln!(out, "uarch_model = true");
    }
    for b in &res.benchmarks {
        let several = res
            .benchmarks
            .iter()
            .filter(|o| o.title() == b.title())
            .count()
            > 1;
        for r in b.typed.iter().filter(|r| r.supported) {
            let overhead = b.bench == "empty" && r.overhead.as_deref() == Some("empty");
            let value = if overhead {
                r.overhead_stats.as_ref().map(|s| s.median)
            } else {
                r.chosen().map(|(s, _)| s.median)
            };
            let Some(v) = value else { continue };
            let _ = write!(
                out,
                "\n[[expect]]\nbenchmark = \"{}\"\nevent = \"{}\"\n",
                b.title(),
                r.event
            );
            if several && let Some(c) = b.cpu {
                let _ = writeln!(out, "cpu = {c}");
            }
            if overhead {
                out.push_str("stat = \"overhead\"\n");
            }
            let _ = writeln!(out, "equals = {v:?}");
        }
    }
    out
}

#[cfg(test)]
mod tests;

//! The measurement results of a run, assembled from the kernel's records (`bench_start`,
//! `result`, `samples`, `metric`, `harness_error`, `summary`; docs/harness.md): the one model
//! behind the table, the JSON and CSV files and the plots, for `run` and `report` alike.
//! The file formats are in docs/output-formats.md.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::records::{Record, SCHEMA_VERSION};

/// The `schema` of the JSON document.
pub const SCHEMA: &str = "baremark-results/1";

/// Record types that carry results (the others describe the machine or the tasks).
pub const RESULT_RECORDS: &[&str] = &[
    "bench_start",
    "result",
    "samples",
    "metric",
    "bench_summary",
    "summary",
];

/// The most repetitions a `samples` record may reach (`first` plus its values): ten times the
/// kernel's cap (`REPS_MAX`, 1000 in kernel/src/config/mod.rs).
pub const SAMPLES_MAX: usize = 10_000;

/// Statistics over the repetitions of one kind and event.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub n: u64,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    pub max: f64,
    pub mean_20_80: f64,
}

/// A `result` record, typed (the JSON output keeps the record as it came).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ResultRec {
    pub event: String,
    pub unit: Option<String>,
    pub supported: bool,
    pub reason: Option<String>,
    pub counter: Option<String>,
    /// Counted by QEMU's emulated PMU, not hardware.
    #[serde(default)]
    pub emulated: bool,
    pub group: Option<u64>,
    pub groups: Option<u64>,
    #[serde(default)]
    pub multiplexed: bool,
    pub scaling: Option<f64>,
    pub reps: Option<u64>,
    pub warmup: Option<u64>,
    pub iterations: Option<u64>,
    pub overhead: Option<String>,
    pub raw: Option<Stats>,
    pub raw2x: Option<Stats>,
    pub overhead_stats: Option<Stats>,
    pub value: Option<Stats>,
    pub per_iteration: Option<Stats>,
    pub outliers: Option<u64>,
    pub interrupts: Option<u64>,
    pub interrupts_max: Option<u64>,
    /// SMIs during the benchmark (MSR_SMI_COUNT around it); `None`: not counted.
    #[serde(default)]
    pub smis: Option<u64>,
}

impl ResultRec {
    /// The statistics people read: per iteration when the benchmark declared iterations, else
    /// per region; and which it is.
    pub fn chosen(&self) -> Option<(&Stats, bool)> {
        match (&self.per_iteration, &self.value) {
            (Some(p), _) => Some((p, true)),
            (None, Some(v)) => Some((v, false)),
            (None, None) => None,
        }
    }

    /// Whether an event without statistics failed to be counted rather than being unsupported:
    /// the kernel marks events it could not measure for a harness failure "not measured: ...";
    /// those are not a limit of the machine.
    pub fn not_counted(&self) -> bool {
        self.supported
            || self
                .reason
                .as_deref()
                .is_some_and(|why| why.starts_with("not measured"))
    }
}

/// A `metric` record, typed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct MetricRec {
    pub name: String,
    pub value: Option<f64>,
    pub unit: Option<String>,
    pub reason: Option<String>,
}

/// What the results were measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Machine {
    /// perfmon-style `GenuineIntel-6-55-4` (vendor, family, model in hex, stepping in hex).
    pub cpu: Option<String>,
    pub cpu_brand: Option<String>,
    pub hypervisor: Option<String>,
    pub pmu_backend: Option<String>,
    /// The counters were QEMU's emulated PMU (the `pmu` record's `emulated`).
    pub pmu_emulated: bool,
    /// The emulated PMU models caches, branch prediction and their cycles (`--uarch`).
    pub pmu_uarch_model: bool,
    /// Its cycle model's stall cycles: an L2, a last-level and a memory load line, a
    /// misprediction (the `pmu` record's `uarch_latencies`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmu_uarch_latencies: Option<[u64; 4]>,
    pub tsc_hz: Option<u64>,
    pub tsc_method: Option<String>,
    /// CPUs online (the `cpus` record); `None`: a kernel that did not say (one CPU).
    pub cpus_online: Option<u64>,
    /// More than one kind of core (the `cpus` record's `hybrid`).
    pub hybrid: bool,
}

/// The harness settings the kernel used (from the first `bench_start`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Config {
    pub events: Vec<String>,
    /// How many events there are (`events` lists only as many as fit the record; null from a
    /// kernel that did not say).
    pub events_total: Option<u64>,
    pub reps: Option<u64>,
    pub warmup: Option<u64>,
    pub overhead: Option<String>,
    pub groups: Option<u64>,
}

/// One benchmark of one payload.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Benchmark {
    pub payload: String,
    pub bench: String,
    /// The CPU it ran on (an index, 0 the boot CPU; `bench_start`'s or its results' `cpu`);
    /// left out of the JSON when not known (a kernel before issue 28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u64>,
    /// That CPU's core type (`uniform`, `core`, `atom`, `other`; `bench_start`'s `core_type`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core_type: Option<String>,
    pub iterations: Option<u64>,
    /// The `result` records, without `type` and `v`.
    pub results: Vec<Value>,
    /// event -> kind (`region`, `empty`, `region2x`) -> per-repetition values (null where a
    /// `samples` record is missing).
    pub samples: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
    /// The `metric` records, without `type` and `v`.
    pub metrics: Vec<Value>,
    #[serde(skip)]
    pub typed: Vec<ResultRec>,
    #[serde(skip)]
    pub typed_metrics: Vec<MetricRec>,
    /// Why its records are not all there (lost in a damaged log, repetitions missing): the
    /// figures that survived are shown, marked incomplete. Left out of the JSON when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
}

impl Benchmark {
    /// `payload/bench`, or just one when they are the same.
    pub fn title(&self) -> String {
        if self.payload == self.bench {
            self.payload.clone()
        } else {
            format!("{}/{}", self.payload, self.bench)
        }
    }

    /// Where it ran, when that is worth saying: `cpu 3`, `cpu 3 (atom)` (on a hybrid part,
    /// any CPU); `None` on the boot CPU of a part with one kind of core.
    pub fn placement(&self) -> Option<String> {
        let core_type = self.core_type.as_deref().filter(|t| *t != "uniform");
        match (self.cpu, core_type) {
            (Some(c), Some(t)) => Some(format!("cpu {c} ({t})")),
            (Some(c), None) if c != 0 => Some(format!("cpu {c}")),
            (None, Some(t)) => Some(format!("an {t} cpu")),
            _ => None,
        }
    }

    /// The result for `event`.
    pub fn result(&self, event: &str) -> Option<&ResultRec> {
        self.typed.iter().find(|r| r.event == event)
    }

    /// The per-repetition values of `event` and `kind` (missing ones left out).
    pub fn sample_values(&self, event: &str, kind: &str) -> Vec<f64> {
        self.samples
            .get(event)
            .and_then(|k| k.get(kind))
            .map(|v| v.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    }
}

/// Something that went wrong with a benchmark or a payload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorEntry {
    /// `harness_error`, `task_error`, `fault`, `task_killed`, `end`, `incomplete`, `record`,
    /// `lost`.
    pub kind: String,
    pub payload: Option<String>,
    pub bench: Option<String>,
    pub message: String,
}

/// Everything measured in one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Results {
    pub schema: &'static str,
    pub machine: Machine,
    pub config: Config,
    pub benchmarks: Vec<Benchmark>,
    pub errors: Vec<ErrorEntry>,
    /// The kernel's `summary` record (without `type` and `v`), if it came.
    pub summary: Option<Value>,
    /// System mode's windows with their per-CPU rows (for `perf stat -a -A` lines).
    #[serde(skip)]
    pub system: Vec<crate::system_table::Window>,
}

fn without_header(record: &Record) -> Value {
    let mut map: Map<String, Value> = record.value.as_object().cloned().unwrap_or_default();
    map.remove("type");
    map.remove("v");
    Value::Object(map)
}

fn str_field(r: &Record, key: &str) -> Option<String> {
    r.str(key).map(str::to_string)
}

impl Results {
    /// Assembles the results from the records of a run, in order.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> Results {
        let records: Vec<&Record> = records.into_iter().collect();
        let mut res = Results {
            system: crate::system_table::windows(records.iter().copied()),
            schema: SCHEMA,
            machine: Machine::default(),
            config: Config::default(),
            benchmarks: Vec::new(),
            errors: Vec::new(),
            summary: None,
        };
        let mut saw_end = false;
        let mut config_seen = false;
        for r in records {
            let bench_record =
                RESULT_RECORDS.contains(&r.kind.as_str()) || r.kind == "harness_error";
            if bench_record && r.version() != Some(SCHEMA_VERSION) {
                res.error(
                    "record",
                    r.str("payload"),
                    r.str("bench"),
                    format!(
                        "a `{}` record of schema v{} was left out (this tool reads v{SCHEMA_VERSION})",
                        r.kind,
                        r.version().map_or("?".to_string(), |v| v.to_string())
                    ),
                );
                continue;
            }
            match r.kind.as_str() {
                "cpu" => {
                    let m = &mut res.machine;
                    m.cpu = r.str("vendor").map(|v| {
                        let mut s = format!(
                            "{v}-{}-{:X}",
                            r.u64("family").unwrap_or(0),
                            r.u64("model").unwrap_or(0)
                        );
                        if let Some(st) = r.u64("stepping") {
                            s.push_str(&format!("-{st:X}"));
                        }
                        s
                    });
                    m.cpu_brand = str_field(r, "brand").map(|b| b.trim().to_string());
                    m.hypervisor = str_field(r, "hypervisor");
                }
                "tsc" => {
                    res.machine.tsc_hz = r.u64("hz");
                    res.machine.tsc_method = str_field(r, "method");
                }
                "cpus" => {
                    res.machine.cpus_online = r.u64("online");
                    res.machine.hybrid = r.get("hybrid").as_bool().unwrap_or(false);
                }
                "pmu" => {
                    res.machine.pmu_backend = str_field(r, "backend");
                    res.machine.pmu_emulated = r.get("emulated").as_bool().unwrap_or(false);
                    res.machine.pmu_uarch_model = r.get("uarch_model").as_bool().unwrap_or(false);
                    let lat = r.get("uarch_latencies");
                    res.machine.pmu_uarch_latencies = ["l2", "llc", "mem", "mispredict"]
                        .iter()
                        .map(|k| lat[*k].as_u64())
                        .collect::<Option<Vec<u64>>>()
                        .and_then(|v| v.try_into().ok());
                }
                "bench_start" => {
                    if !config_seen {
                        config_seen = true;
                        res.config = Config {
                            events: r
                                .get("events")
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect(),
                            events_total: r.u64("events_total"),
                            reps: r.u64("reps"),
                            warmup: r.u64("warmup"),
                            overhead: str_field(r, "overhead"),
                            groups: r.u64("groups"),
                        };
                    }
                    res.benchmarks.push(Benchmark {
                        payload: r.str("payload").unwrap_or("?").to_string(),
                        bench: r.str("bench").unwrap_or("?").to_string(),
                        cpu: r.u64("cpu"),
                        core_type: str_field(r, "core_type"),
                        iterations: r.u64("iterations"),
                        ..Benchmark::default()
                    });
                }
                "result" => match serde_json::from_value::<ResultRec>(r.value.clone()) {
                    Ok(typed) => {
                        let b = res.bench(r);
                        if b.iterations.is_none() {
                            b.iterations = typed.iterations;
                        }
                        if b.cpu.is_none() {
                            b.cpu = r.u64("cpu");
                        }
                        b.results.push(without_header(r));
                        b.typed.push(typed);
                    }
                    Err(e) => res.error(
                        "record",
                        r.str("payload"),
                        r.str("bench"),
                        format!("a `result` record was not understood: {e}"),
                    ),
                },
                "samples" => {
                    if let Err(msg) = res.add_samples(r) {
                        res.error("record", r.str("payload"), r.str("bench"), msg);
                    }
                }
                "metric" => match serde_json::from_value::<MetricRec>(r.value.clone()) {
                    Ok(typed) => {
                        let b = res.bench(r);
                        b.metrics.push(without_header(r));
                        b.typed_metrics.push(typed);
                    }
                    Err(e) => res.error(
                        "record",
                        r.str("payload"),
                        r.str("bench"),
                        format!("a `metric` record was not understood: {e}"),
                    ),
                },
                "harness_error" => res.error(
                    "harness_error",
                    r.str("payload"),
                    r.str("bench"),
                    r.str("message").unwrap_or("no message").to_string(),
                ),
                "summary" => res.summary = Some(without_header(r)),
                "task_error" => res.error(
                    "task_error",
                    r.str("task"),
                    None,
                    format!("not run: {}", r.str("message").unwrap_or("no reason")),
                ),
                "task_killed" => res.error(
                    "task_killed",
                    r.str("task"),
                    None,
                    format!(
                        "killed by the watchdog past its budget of {} ms{}",
                        r.u64("budget_ms").unwrap_or(0),
                        if r.str("exceeded") == Some("service") {
                            " of the kernel's time serving its syscalls"
                        } else {
                            ""
                        }
                    ),
                ),
                // A background payload (run.cfg `background`) stopped when the others were
                // done: the end it is meant to have, not an error.
                "task_stopped" => {}
                "fault" if r.str("mode") == Some("user") => res.error(
                    "fault",
                    r.str("task"),
                    None,
                    format!(
                        "{} {} at rip {}{}",
                        r.str("mnemonic").unwrap_or("?"),
                        r.str("name").unwrap_or("?"),
                        r.str("rip").unwrap_or("?"),
                        r.str("detail")
                            .map(|d| format!(" ({d})"))
                            .unwrap_or_default()
                    ),
                ),
                "end" => {
                    saw_end = true;
                    if r.str("status") != Some("ok") {
                        res.error(
                            "end",
                            None,
                            None,
                            format!(
                                "the kernel reported failure: {}",
                                r.str("reason").unwrap_or("no reason given")
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
        if !saw_end {
            res.error(
                "incomplete",
                None,
                None,
                "no end record: the run did not finish (or the capture stopped early)".into(),
            );
        }
        for b in &mut res.benchmarks {
            let gaps = check_samples(b);
            b.incomplete.extend(gaps.iter().map(|e| e.message.clone()));
            res.errors.extend(gaps);
        }
        res
    }

    /// Marks the benchmark `payload/bench` incomplete (its records were lost or doubtful in a
    /// damaged log, docs/reliability.md). A benchmark none of whose records survived gets an
    /// error instead.
    pub fn mark_incomplete(&mut self, payload: &str, bench: &str, why: &str) {
        let mut found = false;
        for b in self
            .benchmarks
            .iter_mut()
            .filter(|b| b.payload == payload && b.bench == bench)
        {
            found = true;
            if !b.incomplete.iter().any(|w| w == why) {
                b.incomplete.push(why.to_string());
            }
        }
        if !found {
            self.error(
                "lost",
                Some(payload),
                Some(bench),
                format!("no record of this benchmark survived: {why}"),
            );
        }
    }

    /// Whether a benchmark is marked incomplete.
    pub fn any_incomplete(&self) -> bool {
        self.benchmarks.iter().any(|b| !b.incomplete.is_empty())
    }

    fn error(&mut self, kind: &str, payload: Option<&str>, bench: Option<&str>, message: String) {
        self.errors.push(ErrorEntry {
            kind: kind.to_string(),
            payload: payload.map(str::to_string),
            bench: bench.map(str::to_string),
            message,
        });
    }

    /// The benchmark a record belongs to: the latest with its payload and bench, or a new one
    /// (a `result` without `bench_start`, e.g. from a cut capture).
    fn bench(&mut self, r: &Record) -> &mut Benchmark {
        let payload = r.str("payload").unwrap_or("?");
        let bench = r.str("bench").unwrap_or("?");
        // The same benchmark run on several CPUs (`--cpus`) is one benchmark per CPU.
        let cpu = r.u64("cpu");
        let pos = self.benchmarks.iter().rposition(|b| {
            b.payload == payload
                && b.bench == bench
                && (cpu.is_none() || b.cpu.is_none() || b.cpu == cpu)
        });
        let pos = match pos {
            Some(p) => p,
            None => {
                self.benchmarks.push(Benchmark {
                    payload: payload.to_string(),
                    bench: bench.to_string(),
                    cpu,
                    ..Benchmark::default()
                });
                self.benchmarks.len() - 1
            }
        };
        &mut self.benchmarks[pos]
    }

    fn add_samples(&mut self, r: &Record) -> Result<(), String> {
        let event = r.str("event").ok_or("a `samples` record without `event`")?;
        let kind = r.str("kind").ok_or("a `samples` record without `kind`")?;
        let first = r.u64("first").ok_or("a `samples` record without `first`")?;
        let values = r
            .get("values")
            .as_array()
            .ok_or("a `samples` record without `values`")?;
        if values.iter().any(|v| !v.is_i64() && !v.is_u64()) {
            return Err(format!(
                "samples of {event}/{kind}: a value is not an integer"
            ));
        }
        let first = usize::try_from(first).map_err(|_| "samples: `first` too large")?;
        // The kernel caps repetitions at 1000; anything far beyond is a corrupt record. The
        // bound is on the end, not the start: the slot is filled with nulls up to it, so a
        // 100-byte record must not make the tool allocate (and write out) millions of them.
        if first.saturating_add(values.len()) > SAMPLES_MAX {
            return Err(format!(
                "samples of {event}/{kind}: `first` {first} with {} values is implausible (at most {SAMPLES_MAX} repetitions)",
                values.len()
            ));
        }
        let b = self.bench(r);
        let slot = b
            .samples
            .entry(event.to_string())
            .or_default()
            .entry(kind.to_string())
            .or_default();
        if slot.len() < first + values.len() {
            slot.resize(first + values.len(), Value::Null);
        }
        for (i, v) in values.iter().enumerate() {
            slot[first + i] = v.clone();
        }
        Ok(())
    }

    /// Number of results, and of those not supported.
    pub fn counts(&self) -> (usize, usize) {
        let all = self.benchmarks.iter().map(|b| b.typed.len()).sum();
        let unsupported = self
            .benchmarks
            .iter()
            .flat_map(|b| &b.typed)
            .filter(|r| !r.supported)
            .count();
        (all, unsupported)
    }

    /// The JSON document (docs/output-formats.md).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("results serialize");
        s.push('\n');
        s
    }

    /// The CSV file: one row per result (docs/output-formats.md).
    pub fn to_csv(&self) -> anyhow::Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let stat_cols = ["median", "mean", "stddev", "min", "max", "mean_20_80"];
        let mut header: Vec<String> = [
            "payload",
            "bench",
            "event",
            "unit",
            "supported",
            "reason",
            "counter",
            "group",
            "reps",
            "warmup",
            "iterations",
            "overhead",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for prefix in ["value", "per_iteration"] {
            header.extend(stat_cols.iter().map(|c| format!("{prefix}_{c}")));
        }
        header.extend(["outliers", "interrupts", "emulated"].map(String::from));
        // Where each ran: from kernels that say (issue 28 on); a log of an older one keeps the
        // columns it always had.
        let placed = self.benchmarks.iter().any(|b| b.cpu.is_some());
        if placed {
            header.extend(["cpu", "core_type"].map(String::from));
        }
        w.write_record(&header)?;
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        for b in &self.benchmarks {
            for r in &b.typed {
                let mut row = vec![
                    b.payload.clone(),
                    b.bench.clone(),
                    r.event.clone(),
                    text(&r.unit),
                    r.supported.to_string(),
                    text(&r.reason),
                    text(&r.counter),
                    opt(r.group),
                    opt(r.reps),
                    opt(r.warmup),
                    opt(r.iterations),
                    text(&r.overhead),
                ];
                for stats in [&r.value, &r.per_iteration] {
                    match stats {
                        Some(s) => row.extend(
                            [s.median, s.mean, s.stddev, s.min, s.max, s.mean_20_80]
                                .iter()
                                .map(|x| x.to_string()),
                        ),
                        None => row.extend(std::iter::repeat_n(String::new(), 6)),
                    }
                }
                row.push(opt(r.outliers));
                row.push(opt(r.interrupts));
                row.push(r.emulated.to_string());
                if placed {
                    row.push(opt(b.cpu));
                    row.push(text(&b.core_type));
                }
                w.write_record(&row)?;
            }
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }
}

/// Gaps in the per-repetition samples, and counts that disagree with `reps`.
fn check_samples(b: &Benchmark) -> Vec<ErrorEntry> {
    let mut errors = Vec::new();
    for (event, kinds) in &b.samples {
        for (kind, values) in kinds {
            let missing = values.iter().filter(|v| v.is_null()).count();
            let reps = b.result(event).and_then(|r| r.reps);
            let short = reps.map_or(0, |n| (n as usize).saturating_sub(values.len()));
            if missing + short > 0 {
                errors.push(ErrorEntry {
                    kind: "record".into(),
                    payload: Some(b.payload.clone()),
                    bench: Some(b.bench.clone()),
                    message: format!(
                        "samples of {event}/{kind}: {} of {} repetitions missing (a samples record was lost?)",
                        missing + short,
                        values.len() + short
                    ),
                });
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Line, parse_line};

    fn records(lines: &[&str]) -> Vec<Record> {
        lines
            .iter()
            .filter_map(|l| match parse_line(l) {
                Line::Record(r) => Some(r),
                Line::Text(_) => None,
            })
            .collect()
    }

    const STATS: &str =
        r#"{"n":3,"min":1,"median":2,"mean":2,"stddev":0.5,"max":3,"mean_20_80":2}"#;

    fn result(event: &str, supported: bool) -> String {
        let s = if supported { STATS } else { "null" };
        format!(
            r#"{{"type":"result","v":1,"payload":"p","bench":"b","event":"{event}","unit":"events","supported":{supported},"reason":{},"counter":null,"group":null,"groups":1,"multiplexed":false,"scaling":null,"reps":3,"warmup":1,"iterations":10,"overhead":"none","raw":{s},"raw2x":null,"overhead_stats":null,"value":{s},"per_iteration":{s},"outliers":0,"interrupts":0,"interrupts_max":0}}"#,
            if supported { "null" } else { "\"no counter\"" }
        )
    }

    #[test]
    fn samples_reassemble_across_records_and_gaps_are_errors() {
        let lines = [
            r#"{"type":"bench_start","v":1,"payload":"p","bench":"b","iterations":10,"reps":3,"warmup":1,"overhead":"none","groups":1,"events":[]}"#.to_string(),
            result("tsc", true),
            r#"{"type":"samples","v":1,"payload":"p","bench":"b","event":"tsc","kind":"region","first":2,"values":[30]}"#.into(),
            r#"{"type":"samples","v":1,"payload":"p","bench":"b","event":"tsc","kind":"region","first":0,"values":[10,20]}"#.into(),
            r#"{"type":"samples","v":1,"payload":"p","bench":"b","event":"tsc","kind":"empty","first":1,"values":[5,5]}"#.into(),
            r#"{"type":"end","v":1,"status":"ok"}"#.into(),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let res = Results::from_records(&records(&refs));
        let b = &res.benchmarks[0];
        assert_eq!(b.sample_values("tsc", "region"), [10.0, 20.0, 30.0]);
        assert_eq!(b.samples["tsc"]["empty"][0], Value::Null);
        assert_eq!(res.errors.len(), 1, "{:?}", res.errors);
        assert!(res.errors[0].message.contains("tsc/empty: 1 of 3"));
    }

    /// Fuzzing regression (results target): a 3 KiB log of 40 `samples` records with `first`
    /// 999999 made the tool fill 40 million null slots and write them out, past 2 GB.
    #[test]
    fn samples_far_past_the_repetitions_are_refused_without_allocating() {
        let mut lines: Vec<String> = (0..40)
            .map(|k| format!(r#"{{"type":"samples","v":1,"event":"e{k}","kind":"r","first":999999,"values":[1]}}"#))
            .collect();
        let last = SAMPLES_MAX - 1;
        lines.push(format!(
            r#"{{"type":"samples","v":1,"event":"edge","kind":"r","first":{last},"values":[7]}}"#
        ));
        lines.push(format!(
            r#"{{"type":"samples","v":1,"event":"past","kind":"r","first":{last},"values":[7,8]}}"#
        ));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let res = Results::from_records(&records(&refs));
        let implausible = res
            .errors
            .iter()
            .filter(|e| e.message.contains("implausible"))
            .count();
        assert_eq!(implausible, 41, "{:?}", res.errors);
        let b = &res.benchmarks[0];
        assert_eq!(b.samples.keys().collect::<Vec<_>>(), ["edge"]);
        assert_eq!(b.samples["edge"]["r"].len(), SAMPLES_MAX);
        assert_eq!(b.samples["edge"]["r"][last], 7);
    }

    #[test]
    fn a_stopped_background_task_is_not_an_error() {
        let lines = [
            r#"{"type":"task_stopped","v":1,"task":"spin","task_index":1,"cpu":2,"reason":"background payload: the other payloads are done","virtual_tsc":9,"syscalls":0,"interrupts":3}"#,
            r#"{"type":"summary","v":1,"payloads":2,"benchmarks":0,"stopped":1,"results":0,"unsupported":0,"errors":0}"#,
            r#"{"type":"end","v":1,"status":"ok"}"#,
        ];
        let res = Results::from_records(&records(&lines));
        assert!(res.errors.is_empty(), "{:?}", res.errors);
        assert_eq!(res.summary.unwrap()["stopped"], 1);
    }

    #[test]
    fn unsupported_and_unknown_versions() {
        let lines = [
            result("tsc", true),
            result("branch-misses", false),
            r#"{"type":"result","v":2,"payload":"p","bench":"b"}"#.into(),
            r#"{"type":"result","v":1,"payload":"p","bench":"b","event":"x"}"#.into(),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let res = Results::from_records(&records(&refs));
        assert_eq!(
            res.benchmarks.len(),
            1,
            "results without bench_start still group"
        );
        assert_eq!(res.counts(), (2, 1));
        let kinds: Vec<&str> = res.errors.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["record", "record", "incomplete"]);
        assert!(res.errors[0].message.contains("schema v2"));
        let csv = res.to_csv().unwrap();
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 3);
        assert!(rows[0].starts_with("payload,bench,event,unit,supported,reason,counter,group,"));
        assert!(rows[2].starts_with("p,b,branch-misses,events,false,no counter,,,3,1,10,none,,,,"));
    }
}

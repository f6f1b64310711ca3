//! One benchmark of one task, from `bench_begin` to `bench_end` (docs/harness.md): the checks
//! on what the task hands in, the samples it submits, and at the end the statistics, the
//! records and the console table. Pure logic, host-tested; `task::run` calls it from the
//! `bench_*` syscalls and gives it a [`Sink`] that writes to the serial console.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use events::metrics::{self, Inputs, MetricValue};

use super::plan::{Plan, Status, UNIT_TSC};
use super::stats::{self, Overhead, Samples, Stats, Summary};
use crate::output::record::Record;

/// The plan's layout version (`bench_plan`).
pub const PLAN_VERSION: u64 = 1;
/// u64 words `bench_plan` writes: version, warmup, reps, overhead, groups.
pub const PLAN_WORDS: usize = 5;
/// Words of a sample before the counter slots: the virtual TSC and the interrupt count.
pub const SAMPLE_HEAD: usize = 2;
/// Values per `samples` record (a record line must stay under 4096 bytes).
pub const SAMPLES_PER_RECORD: usize = 128;
/// Longest benchmark name.
pub const NAME_MAX: usize = 64;

/// The run's harness settings: the same for every benchmark.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub reps: u32,
    pub warmup: u32,
    pub overhead: Overhead,
    pub events: Plan,
    /// The TSC frequency (for times), if known.
    pub tsc_hz: Option<u64>,
    /// The counters are QEMU's emulated PMU: counted results say `emulated`.
    pub emulated: bool,
}

impl RunPlan {
    /// Groups the SDK measures in turn: at least one (the virtual TSC alone when no event is
    /// counted).
    pub fn groups(&self) -> usize {
        self.events.groups.len().max(1)
    }

    /// Group `g`'s `counters_configure` request (empty: TSC only).
    pub fn group_config(&self, g: usize) -> &[u64] {
        self.events.groups.get(g).map_or(&[], |c| c.as_slice())
    }

    /// The extra MSRs group `g`'s events need, `(msr, value)`: written with its events.
    pub fn group_msrs(&self, g: usize) -> &[(u32, u64)] {
        self.events.group_msrs.get(g).map_or(&[], |m| m.as_slice())
    }

    /// What `bench_plan` writes.
    pub fn words(&self) -> [u64; PLAN_WORDS] {
        let overhead = match self.overhead {
            Overhead::None => 0,
            Overhead::Empty => 1,
            Overhead::Diff => 2,
        };
        [
            PLAN_VERSION,
            u64::from(self.warmup),
            u64::from(self.reps),
            overhead,
            self.groups() as u64,
        ]
    }

    /// The kinds of run the overhead mode needs, in the order the SDK measures them.
    pub fn kinds(&self) -> &'static [Kind] {
        match self.overhead {
            Overhead::None => &[Kind::Region],
            Overhead::Empty => &[Kind::Region, Kind::Empty],
            Overhead::Diff => &[Kind::Region, Kind::Region2x],
        }
    }
}

/// What a batch of samples measured (`bench_samples`' third argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Region = 0,
    Empty = 1,
    Region2x = 2,
}

impl Kind {
    pub fn from_u64(v: u64) -> Option<Kind> {
        [Kind::Region, Kind::Empty, Kind::Region2x]
            .into_iter()
            .find(|k| *k as u64 == v)
    }

    /// The name in `samples` records.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Region => "region",
            Kind::Empty => "empty",
            Kind::Region2x => "region2x",
        }
    }
}

/// The samples of one group: per kind, `reps` rows of `stride` words.
#[derive(Clone, Debug, Default)]
struct GroupSamples {
    stride: usize,
    kinds: [Option<Vec<u64>>; 3],
    /// Why the group's hardware counts were lost while it was measured (its counted events
    /// are then "not measured"; the virtual TSC is unaffected).
    lost: Option<String>,
}

/// A benchmark in progress.
#[derive(Clone, Debug)]
pub struct Bench {
    pub name: String,
    pub iterations: u64,
    /// Bytes the body moves per iteration, if declared (the bandwidth metric).
    pub bytes_per_iteration: Option<u64>,
    /// The group the task is measuring (`bench_group`).
    current: Option<usize>,
    groups: Vec<GroupSamples>,
    /// MSR_SMI_COUNT when the benchmark began (`None`: no such MSR).
    pub smi_start: Option<u64>,
    /// SMIs between `bench_begin` and `bench_end` (`None`: not counted: no MSR_SMI_COUNT).
    /// Regions run in ring 3, where the MSR cannot be read, so an SMI marks the benchmark.
    pub smis: Option<u64>,
}

/// Whether a harness call that names benchmark `asked` (0: whichever is open) may go on, given
/// the `open` benchmark (its id and name): `Err` says why not (the call is refused).
pub fn addressed_bench(open: Option<(u64, &str)>, asked: u64) -> Result<(), String> {
    match open {
        _ if asked == 0 => Ok(()),
        Some((id, _)) if id == asked => Ok(()),
        Some((id, name)) => Err(format!(
            "it names benchmark {asked}, which is not open: benchmark {id} (`{name}`) is (was \
            benchmark {asked} ended, and this one begun, in its measured code?)"
        )),
        None => Err(format!(
            "it names benchmark {asked}, and no benchmark is open"
        )),
    }
}

/// Whether `name` is a benchmark name: 1-64 bytes of `[A-Za-z0-9_.-]`.
pub fn valid_name(name: &str) -> bool {
    (1..=NAME_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl Bench {
    /// `bench_begin`: a new benchmark. `Err` says why not.
    pub fn begin(name: &str, iterations: u64, plan: &RunPlan) -> Result<Bench, String> {
        if !valid_name(name) {
            return Err(format!(
                "benchmark name `{name}`: expected 1-64 characters of A-Z a-z 0-9 _ - ."
            ));
        }
        if iterations == 0 {
            return Err(String::from("iterations must be at least 1"));
        }
        Ok(Bench {
            name: String::from(name),
            iterations,
            bytes_per_iteration: None,
            current: None,
            groups: alloc::vec![GroupSamples::default(); plan.groups()],
            smi_start: None,
            smis: None,
        })
    }

    /// Declares the bytes per iteration (0: none).
    pub fn with_bytes(mut self, bytes: u64) -> Bench {
        self.bytes_per_iteration = (bytes > 0).then_some(bytes);
        self
    }

    /// The task's hardware counts were lost while the current group was measured (a PMU error
    /// switching its counters): the group's counted events are reported not measured, with
    /// `reason`.
    pub fn lose_counts(&mut self, reason: &str) {
        if let Some(group) = self.current.and_then(|g| self.groups.get_mut(g))
            && group.lost.is_none()
        {
            group.lost = Some(String::from(reason));
        }
    }

    /// As [`lose_counts`](Self::lose_counts) at `bench_end`: only if the current group still
    /// lacks samples of a kind the plan measures (samples handed before the loss are exact).
    pub fn lose_counts_if_incomplete(&mut self, reason: &str, plan: &RunPlan) {
        let complete = self
            .current
            .and_then(|g| self.groups.get(g))
            .is_some_and(|group| {
                plan.kinds()
                    .iter()
                    .all(|&k| group.kinds[k as usize].is_some())
            });
        if !complete {
            self.lose_counts(reason);
        }
    }

    /// `bench_group(g)`: the task measures group `g` next; its counter slots (the kernel
    /// configures the task's counters with [`RunPlan::group_config`]).
    pub fn enter_group(&mut self, g: u64, plan: &RunPlan) -> Result<usize, String> {
        let groups = plan.groups();
        let g = usize::try_from(g)
            .ok()
            .filter(|&g| g < groups)
            .ok_or_else(|| format!("group {g} does not exist (the plan has {groups})"))?;
        let slots = plan.group_config(g).len();
        self.current = Some(g);
        self.groups[g].stride = SAMPLE_HEAD + slots;
        Ok(slots)
    }

    /// The words a `bench_samples` call with `count` rows must carry in the current group, or
    /// `Err` if no group is selected or `count` is not the plan's `reps`.
    pub fn expected_words(&self, count: u64, plan: &RunPlan) -> Result<usize, String> {
        let g = self.current.ok_or("samples before any bench_group call")?;
        if count != u64::from(plan.reps) {
            return Err(format!(
                "{count} samples given, the plan has {} repetitions",
                plan.reps
            ));
        }
        Ok(self.groups[g].stride * plan.reps as usize)
    }

    /// `bench_samples`: the rows of one kind for the current group.
    pub fn add_samples(
        &mut self,
        kind: u64,
        words: Vec<u64>,
        plan: &RunPlan,
    ) -> Result<(), String> {
        let kind = Kind::from_u64(kind).ok_or_else(|| format!("unknown sample kind {kind}"))?;
        if !plan.kinds().contains(&kind) {
            return Err(format!(
                "`{}` samples given, but overhead `{}` does not use them",
                kind.name(),
                plan.overhead.name()
            ));
        }
        let expected = self.expected_words(u64::from(plan.reps), plan)?;
        if words.len() != expected {
            return Err(format!("{} sample words, expected {expected}", words.len()));
        }
        let g = self.current.ok_or("samples before any bench_group call")?;
        let slot = &mut self.groups[g].kinds[kind as usize];
        if slot.is_some() {
            return Err(format!(
                "`{}` samples of group {g} given twice",
                kind.name()
            ));
        }
        *slot = Some(words);
        Ok(())
    }

    /// One column of the rows of `kind` in group `g`.
    fn column(&self, g: usize, kind: Kind, column: usize) -> Option<Vec<u64>> {
        let group = self.groups.get(g)?;
        let rows = group.kinds[kind as usize].as_ref()?;
        if group.stride == 0 || column >= group.stride {
            return None;
        }
        Some(rows.chunks(group.stride).map(|r| r[column]).collect())
    }

    /// The samples of one event (a column) in group `g`, in the shape `stats::summarize` wants.
    fn event_samples(&self, g: usize, column: usize) -> Option<EventSamples> {
        Some(EventSamples {
            region: self.column(g, Kind::Region, column)?,
            empty: self.column(g, Kind::Empty, column),
            region2x: self.column(g, Kind::Region2x, column),
            interrupts: self.column(g, Kind::Region, 1)?,
        })
    }

    /// `bench_end`: the statistics of every event of the plan (the virtual TSC first).
    pub fn finish(&self, plan: &RunPlan) -> Report {
        let mut results = Vec::new();
        let measure = |g: usize, column: usize| -> Result<Measured, String> {
            let s = self.event_samples(g, column).ok_or_else(|| {
                format!("group {g} was not measured completely (missing samples)")
            })?;
            let summary = stats::summarize(
                plan.overhead,
                &Samples {
                    region: &s.region,
                    empty: s.empty.as_deref(),
                    region2x: s.region2x.as_deref(),
                },
                Some(self.iterations),
            )?;
            Ok(Measured {
                summary,
                interrupts: s.interrupts.iter().sum(),
                interrupts_max: s.interrupts.iter().copied().max().unwrap_or(0),
                samples: s,
            })
        };
        results.push(EventResult {
            event: String::from("tsc"),
            unit: UNIT_TSC,
            counter: Some(String::from("tsc")),
            group: Some(0),
            outcome: measure(0, 0).map_err(Failure::Harness),
        });
        for e in &plan.events.events {
            let (counter, group, outcome) = match &e.status {
                // Measured with every repetition anyway: the first result is it.
                Status::Tsc => continue,
                Status::Counted {
                    group,
                    slot,
                    counter,
                    ..
                } => (
                    Some(counter.clone()),
                    Some(*group),
                    match self.groups.get(*group).and_then(|g| g.lost.as_ref()) {
                        Some(lost) => {
                            Err(Failure::Harness(format!("its counts were lost: {lost}")))
                        }
                        None => measure(*group, SAMPLE_HEAD + slot).map_err(Failure::Harness),
                    },
                ),
                Status::Unsupported { reason } => {
                    (None, None, Err(Failure::Unsupported(reason.clone())))
                }
            };
            results.push(EventResult {
                event: e.name.clone(),
                unit: e.unit,
                counter,
                group,
                outcome,
            });
        }
        let metrics = derived_metrics(
            &results,
            self.iterations,
            self.bytes_per_iteration,
            plan.tsc_hz,
        );
        Report { results, metrics }
    }
}

/// The samples of one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSamples {
    pub region: Vec<u64>,
    pub empty: Option<Vec<u64>>,
    pub region2x: Option<Vec<u64>>,
    /// Interrupts taken in each region repetition.
    pub interrupts: Vec<u64>,
}

/// A measured event.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub summary: Summary,
    pub interrupts: u64,
    pub interrupts_max: u64,
    pub samples: EventSamples,
}

/// Why an event has no statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// This CPU (or PMU backend) cannot count it: a fact, not an error.
    Unsupported(String),
    /// The benchmark did not hand in what the statistics need.
    Harness(String),
}

/// One event of a finished benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct EventResult {
    pub event: String,
    pub unit: &'static str,
    pub counter: Option<String>,
    pub group: Option<usize>,
    pub outcome: Result<Measured, Failure>,
}

/// A derived metric.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedMetric {
    pub name: String,
    pub value: Option<f64>,
    pub unit: String,
    pub reason: Option<String>,
}

/// A finished benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub results: Vec<EventResult>,
    pub metrics: Vec<DerivedMetric>,
}

/// The metrics the counted events allow (events crate), from the medians after overhead
/// removal, plus the time per iteration from the virtual TSC.
fn derived_metrics(
    results: &[EventResult],
    iterations: u64,
    bytes_per_iteration: Option<u64>,
    tsc_hz: Option<u64>,
) -> Vec<DerivedMetric> {
    let mut out = Vec::new();
    let mut inputs = Inputs::new();
    for r in results {
        let Ok(m) = &r.outcome else { continue };
        if r.unit == UNIT_TSC {
            inputs.set("tsc_ticks", m.summary.value.median);
            let per_iter = m.summary.value.median / iterations as f64;
            match tsc_hz {
                Some(hz) if hz > 0 => out.push(DerivedMetric {
                    name: String::from("ns-per-iteration"),
                    value: Some(per_iter * 1e9 / hz as f64),
                    unit: String::from("ns"),
                    reason: None,
                }),
                _ => out.push(DerivedMetric {
                    name: String::from("ns-per-iteration"),
                    value: None,
                    unit: String::from("ns"),
                    reason: Some(String::from("the TSC frequency is unknown")),
                }),
            }
        } else {
            // `instructions:u` feeds `instructions`.
            let base = r.event.split(':').next().unwrap_or(&r.event);
            inputs.set(base, m.summary.value.median);
        }
    }
    if let Some(hz) = tsc_hz.filter(|&hz| hz > 0) {
        inputs.set("tsc_hz", hz as f64);
    }
    // Per region, like the other inputs (the medians are per measured region).
    if let Some(bytes) = bytes_per_iteration {
        inputs.set("bytes", bytes as f64 * iterations as f64);
    }
    for (metric, value) in metrics::evaluate(&inputs) {
        let (value, reason) = match value {
            MetricValue::Value(v) => (Some(v), None),
            other => (None, Some(format!("{other:?}"))),
        };
        out.push(DerivedMetric {
            name: String::from(metric.name),
            value,
            unit: String::from(metric.unit),
            reason,
        });
    }
    out
}

/// Where records and console lines go (the serial console on the machine, a buffer in tests).
pub trait Sink {
    fn record(&mut self, kind: &str, build: &mut dyn FnMut(Record<'_>) -> Record<'_>);
    fn text(&mut self, line: fmt::Arguments<'_>);
    /// A benchmark's median per iteration for one event (`None`: not counted), as the table
    /// shows it; the screen's summary collects these. Other sinks ignore it.
    fn median(&mut self, _bench: &str, _event: &str, _median: Option<f64>) {}
}

fn stats_object<'a>(r: Record<'a>, key: &str, s: Option<&Stats>) -> Record<'a> {
    match s {
        None => r.null(key),
        Some(s) => r.object(key, |r| {
            r.u64("n", s.n as u64)
                .f64("min", s.min)
                .f64("median", s.median)
                .f64("mean", s.mean)
                .f64("stddev", s.stddev)
                .f64("max", s.max)
                .f64("mean_20_80", s.mean_20_80)
        }),
    }
}

/// At most this many bytes of the `bench_start` record are event names: the rest of the
/// record takes a few hundred, and a record line is at most `MAX_RECORD_LEN` (4096). A nanoBench
/// config can name hundreds of events; `events_total` then says how many there are, and each
/// `result` record names its own.
const START_EVENTS_BUDGET: usize = 3000;

/// The length of `s` as a JSON string's contents (escaped, without the quotes).
fn escaped_len(s: &str) -> usize {
    struct Count(usize);
    impl fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = crate::output::record::write_escaped(&mut c, s);
    c.0
}

/// The `bench_start` record.
pub fn emit_start(payload: &str, bench: &Bench, plan: &RunPlan, sink: &mut dyn Sink) {
    let all: Vec<&str> = plan
        .events
        .events
        .iter()
        .filter(|e| e.status != Status::Tsc)
        .map(|e| e.name.as_str())
        .collect();
    let mut used = 0;
    let shown = all
        .iter()
        .take_while(|n| {
            // The quotes and the comma.
            used += escaped_len(n) + 3;
            used <= START_EVENTS_BUDGET
        })
        .count();
    let cpu = crate::platform::cpus::current();
    sink.record("bench_start", &mut |r| {
        r.str("payload", payload)
            .u64("cpu", cpu as u64)
            .str("core_type", crate::platform::cpus::core_type_name(cpu))
            .str("bench", &bench.name)
            .u64("iterations", bench.iterations)
            .opt_u64("bytes_per_iteration", bench.bytes_per_iteration)
            .u64("reps", u64::from(plan.reps))
            .u64("warmup", u64::from(plan.warmup))
            .str("overhead", plan.overhead.name())
            .u64("groups", plan.groups() as u64)
            .str_array("events", all[..shown].iter().copied())
            .u64("events_total", all.len() as u64)
    });
}

/// The records of a finished benchmark (`result` per event, `samples`, `metric`) and its
/// console table. Returns (results, unsupported, harness errors).
pub fn emit_report(
    payload: &str,
    bench: &Bench,
    plan: &RunPlan,
    report: &Report,
    sink: &mut dyn Sink,
) -> (u64, u64, u64) {
    let groups = plan.groups();
    let (mut unsupported, mut errors) = (0, 0);
    for res in &report.results {
        let measured = res.outcome.as_ref().ok();
        let reason = match &res.outcome {
            Ok(_) => None,
            Err(Failure::Unsupported(r)) => {
                unsupported += 1;
                Some(r.clone())
            }
            Err(Failure::Harness(r)) => {
                errors += 1;
                Some(format!("not measured: {r}"))
            }
        };
        let summary = measured.map(|m| &m.summary);
        sink.record("result", &mut |r| {
            let r = r
                .str("payload", payload)
                .u64("cpu", crate::platform::cpus::current() as u64)
                .str("bench", &bench.name)
                .str("event", &res.event)
                .str("unit", res.unit)
                .bool("supported", measured.is_some())
                .opt_str("reason", reason.as_deref())
                .opt_str("counter", res.counter.as_deref())
                .bool(
                    "emulated",
                    plan.emulated && measured.is_some() && res.unit != UNIT_TSC,
                )
                .opt_u64("group", res.group.map(|g| g as u64))
                .u64("groups", groups as u64)
                .bool("multiplexed", groups > 1)
                .opt_f64("scaling", measured.map(|_| 1.0))
                .u64("reps", u64::from(plan.reps))
                .u64("warmup", u64::from(plan.warmup))
                .u64("iterations", bench.iterations)
                .str("overhead", plan.overhead.name());
            let r = stats_object(r, "raw", summary.map(|s| &s.raw));
            let r = stats_object(r, "raw2x", summary.and_then(|s| s.raw2x.as_ref()));
            let r = stats_object(
                r,
                "overhead_stats",
                summary.and_then(|s| s.overhead.as_ref()),
            );
            let r = stats_object(r, "value", summary.map(|s| &s.value));
            let r = stats_object(
                r,
                "per_iteration",
                summary.and_then(|s| s.per_iteration.as_ref()),
            );
            r.opt_u64("outliers", summary.map(|s| s.outliers as u64))
                .opt_u64("interrupts", measured.map(|m| m.interrupts))
                .opt_u64("interrupts_max", measured.map(|m| m.interrupts_max))
                .opt_u64("smis", bench.smis)
        });
        if let Some(m) = measured {
            let kinds = [
                (Kind::Region, Some(&m.samples.region)),
                (Kind::Empty, m.samples.empty.as_ref()),
                (Kind::Region2x, m.samples.region2x.as_ref()),
            ];
            for (kind, values) in kinds {
                let Some(values) = values else { continue };
                let flags = stats::outliers(values);
                for (i, chunk) in values.chunks(SAMPLES_PER_RECORD).enumerate() {
                    let first = i * SAMPLES_PER_RECORD;
                    let outliers: Vec<u64> = (first..first + chunk.len())
                        .filter(|&k| flags[k])
                        .map(|k| k as u64)
                        .collect();
                    sink.record("samples", &mut |r| {
                        r.str("payload", payload)
                            .str("bench", &bench.name)
                            .str("event", &res.event)
                            .str("kind", kind.name())
                            .u64("first", first as u64)
                            .u64_array("values", chunk)
                            .u64_array("outliers", &outliers)
                    });
                }
            }
        }
    }
    for m in &report.metrics {
        sink.record("metric", &mut |r| {
            r.str("payload", payload)
                .str("bench", &bench.name)
                .str("name", &m.name)
                .opt_f64("value", m.value)
                .str("unit", &m.unit)
                .opt_str("reason", m.reason.as_deref())
        });
    }
    table(bench, plan, report, sink);
    (report.results.len() as u64, unsupported, errors)
}

/// The perf-stat-like console table of one benchmark.
fn table(bench: &Bench, plan: &RunPlan, report: &Report, sink: &mut dyn Sink) {
    sink.text(format_args!(""));
    sink.text(format_args!(
        " Counter stats for '{}' ({} reps after {} warm-up, {} iterations, overhead {}):",
        bench.name,
        plan.reps,
        plan.warmup,
        bench.iterations,
        plan.overhead.name()
    ));
    sink.text(format_args!(""));
    let mut last_reason: Option<&str> = None;
    for r in &report.results {
        match &r.outcome {
            Ok(m) => {
                let v = m.summary.per_iteration.as_ref().unwrap_or(&m.summary.value);
                sink.median(&bench.name, &r.event, Some(v.median));
                let spread = if v.mean != 0.0 {
                    100.0 * v.stddev / v.mean.abs()
                } else {
                    0.0
                };
                let emulated = plan.emulated && r.unit != UNIT_TSC;
                sink.text(format_args!(
                    "  {:>16.3}  {:<24} per iteration  ( +- {:>5.2}% )  [{}{}]{}",
                    v.median,
                    r.event,
                    spread,
                    r.counter.as_deref().unwrap_or("-"),
                    if emulated { ", emulated" } else { "" },
                    if m.interrupts > 0 { " interrupted" } else { "" }
                ));
            }
            Err(Failure::Unsupported(reason)) => {
                sink.median(&bench.name, &r.event, None);
                // One reason for many events (no counters at all) is printed once.
                let shown = if last_reason == Some(reason.as_str()) {
                    "(as above)"
                } else {
                    reason.as_str()
                };
                last_reason = Some(reason.as_str());
                sink.text(format_args!(
                    "  {:>16}  {:<24} {}",
                    "<not supported>", r.event, shown
                ))
            }
            Err(Failure::Harness(reason)) => {
                sink.median(&bench.name, &r.event, None);
                sink.text(format_args!(
                    "  {:>16}  {:<24} {}",
                    "<not measured>", r.event, reason
                ))
            }
        }
    }
    for m in &report.metrics {
        if let Some(v) = m.value {
            sink.text(format_args!("  {:>16.3}  {:<24} {}", v, m.name, m.unit));
        }
    }
    sink.text(format_args!(""));
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::{String, ToString};
    use std::vec::Vec;

    use events::cpu::{CpuModel, Vendor};
    use events::pmu::PmuCaps;

    use super::*;
    use crate::harness::plan;

    struct Collect {
        records: Vec<serde_json::Value>,
        lines: Vec<String>,
    }

    impl Sink for Collect {
        fn record(&mut self, kind: &str, build: &mut dyn FnMut(Record<'_>) -> Record<'_>) {
            let mut s = String::new();
            build(Record::new(&mut s, kind)).finish().unwrap();
            assert!(s.len() < 4096, "record too long: {}", s.len());
            self.records.push(serde_json::from_str(&s).unwrap());
        }
        fn text(&mut self, line: fmt::Arguments<'_>) {
            self.lines.push(line.to_string());
        }
    }

    fn run_plan(spec: &str, caps: &PmuCaps, overhead: Overhead, reps: u32) -> RunPlan {
        RunPlan {
            reps,
            warmup: 2,
            overhead,
            events: plan::plan(spec, caps, &[]),
            tsc_hz: Some(1_000_000_000),
            emulated: false,
        }
    }

    fn rows(stride: usize, reps: usize, f: impl Fn(usize, usize) -> u64) -> Vec<u64> {
        (0..reps)
            .flat_map(|r| (0..stride).map(move |c| (r, c)))
            .map(|(r, c)| f(r, c))
            .collect()
    }

    #[test]
    fn harness_calls_reach_only_the_benchmark_they_name() {
        // 0 is whichever is open (or the call's own "outside a benchmark" error).
        assert_eq!(addressed_bench(None, 0), Ok(()));
        assert_eq!(addressed_bench(Some((3, "b")), 0), Ok(()));
        assert_eq!(addressed_bench(Some((3, "b")), 3), Ok(()));
        let e = addressed_bench(Some((4, "another")), 3).unwrap_err();
        assert!(
            e.contains("benchmark 3") && e.contains("4 (`another`)"),
            "{e}"
        );
        let e = addressed_bench(None, 3).unwrap_err();
        assert!(e.contains("no benchmark is open"), "{e}");
    }

    #[test]
    fn bench_start_names_as_many_events_as_fit_and_counts_them_all() {
        let caps = PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-55").unwrap());
        // A nanoBench config of 300 lines with long names, as uops.info's are.
        let text: String = (0..300)
            .map(|i| std::format!("C0.00 OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_MISS.\"N{i}\"\n"))
            .collect();
        let config = events::nanobench::parse_config(&text).unwrap();
        let mut plan = run_plan("cycles:u", &caps, Overhead::None, 3);
        plan.events = plan::plan_with("cycles:u", &config, &caps, &[], &plan::Platform::default());
        let b = Bench::begin("big", 10, &plan).unwrap();
        let mut sink = Collect {
            records: Vec::new(),
            lines: Vec::new(),
        };
        // (Collect refuses a record of 4096 bytes or more.)
        emit_start("p", &b, &plan, &mut sink);
        let start = &sink.records[0];
        assert_eq!(start["events_total"], 301);
        let names = start["events"].as_array().unwrap();
        assert!(names.len() > 20 && names.len() < 301, "{}", names.len());
        assert_eq!(names[0], "cycles:u");
        assert_eq!(names[1], "OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_MISS.\"N0\"");
        // A short list is whole.
        let plan = run_plan("cycles,instructions", &caps, Overhead::None, 3);
        let b = Bench::begin("small", 10, &plan).unwrap();
        emit_start("p", &b, &plan, &mut sink);
        assert_eq!(
            sink.records[1]["events"],
            serde_json::json!(["cycles", "instructions"])
        );
        assert_eq!(sink.records[1]["events_total"], 2);
    }

    #[test]
    fn tsc_only_empty_overhead_gives_exact_per_iteration_values() {
        let caps = PmuCaps::tsc_only(Vendor::Intel, None);
        let plan = run_plan("cycles,instructions", &caps, Overhead::Empty, 5);
        assert_eq!(plan.words(), [1, 2, 5, 1, 1]);
        let mut b = Bench::begin("add", 100, &plan).unwrap();
        assert_eq!(b.enter_group(0, &plan), Ok(0));
        // Region: 1000 ticks + 37 of overhead; empty: the 37. No interrupts.
        b.add_samples(0, rows(2, 5, |_, c| [1037, 0][c]), &plan)
            .unwrap();
        b.add_samples(1, rows(2, 5, |_, c| [37, 0][c]), &plan)
            .unwrap();
        let report = b.finish(&plan);
        assert_eq!(report.results.len(), 3);
        let tsc = report.results[0].outcome.as_ref().unwrap();
        assert_eq!(tsc.summary.value.median, 1000.0);
        assert_eq!(tsc.summary.value.stddev, 0.0);
        assert_eq!(tsc.summary.per_iteration.unwrap().mean, 10.0);
        assert_eq!(tsc.interrupts, 0);
        for r in &report.results[1..] {
            assert!(matches!(r.outcome, Err(Failure::Unsupported(_))), "{r:?}");
        }
        let mut sink = Collect {
            records: Vec::new(),
            lines: Vec::new(),
        };
        emit_start("p", &b, &plan, &mut sink);
        let counts = emit_report("p", &b, &plan, &report, &mut sink);
        assert_eq!(counts, (3, 2, 0));
        let kinds: Vec<&str> = sink
            .records
            .iter()
            .map(|r| r["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "bench_start",
                "result",
                "samples",
                "samples",
                "result",
                "result",
                "metric"
            ]
        );
        let start = &sink.records[0];
        assert_eq!(
            start["events"],
            serde_json::json!(["cycles", "instructions"])
        );
        let result = &sink.records[1];
        assert_eq!(result["event"], "tsc");
        assert_eq!(result["supported"], true);
        assert_eq!(result["value"]["median"], 1000.0);
        assert_eq!(result["per_iteration"]["stddev"], 0.0);
        assert_eq!(result["overhead_stats"]["min"], 37.0);
        assert!(result["raw2x"].is_null());
        assert_eq!(sink.records[2]["kind"], "region");
        assert_eq!(
            sink.records[2]["values"],
            serde_json::json!([1037, 1037, 1037, 1037, 1037])
        );
        assert_eq!(sink.records[3]["kind"], "empty");
        let cycles = &sink.records[4];
        assert_eq!(cycles["supported"], false);
        assert!(cycles["reason"].as_str().unwrap().len() > 10);
        assert!(cycles["value"].is_null() && cycles["interrupts"].is_null());
        let metric = &sink.records[6];
        assert_eq!(metric["name"], "ns-per-iteration");
        assert_eq!(metric["value"], 10.0);
        assert!(sink.lines.iter().any(|l| l.contains("<not supported>")));
        assert!(
            sink.lines
                .iter()
                .any(|l| l.contains("10.000") && l.contains("tsc"))
        );
    }

    #[test]
    fn diff_mode_and_groups_on_a_pmu() {
        let caps = PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-55").unwrap());
        // Seven GP events (cycles and instructions go on fixed counters): two groups.
        let spec = "cycles,instructions,branches,branch-misses,cache-references,cache-misses,r01c2,r02c2,r04c2";
        let plan = run_plan(spec, &caps, Overhead::Diff, 3);
        assert_eq!(plan.groups(), 2);
        let mut b = Bench::begin("chain", 10, &plan).unwrap();
        for g in 0..2u64 {
            let slots = b.enter_group(g, &plan).unwrap();
            assert_eq!(slots, plan.group_config(g as usize).len());
            let stride = SAMPLE_HEAD + slots;
            // Column c counts (c + 1) per iteration plus 7; the U run has 10 iterations.
            let u = rows(
                stride,
                3,
                |_, c| if c == 1 { 0 } else { 10 * (c as u64 + 1) + 7 },
            );
            let u2 = rows(
                stride,
                3,
                |_, c| if c == 1 { 0 } else { 20 * (c as u64 + 1) + 7 },
            );
            assert!(
                b.add_samples(1, u.clone(), &plan).is_err(),
                "empty not in diff mode"
            );
            b.add_samples(0, u, &plan).unwrap();
            b.add_samples(2, u2.clone(), &plan).unwrap();
            assert!(b.add_samples(2, u2, &plan).is_err(), "twice");
        }
        let report = b.finish(&plan);
        assert_eq!(report.results.len(), 10);
        for r in &report.results {
            let m = r
                .outcome
                .as_ref()
                .unwrap_or_else(|e| panic!("{}: {e:?}", r.event));
            let per = m.summary.per_iteration.unwrap();
            assert_eq!(per.stddev, 0.0);
            let expected = match r.group {
                _ if r.event == "tsc" => 1.0,
                Some(g) => {
                    let slot = plan
                        .events
                        .events
                        .iter()
                        .find(|e| e.name == r.event)
                        .unwrap();
                    let Status::Counted { slot, .. } = slot.status else {
                        panic!()
                    };
                    assert!(g < 2);
                    (SAMPLE_HEAD + slot + 1) as f64
                }
                None => panic!(),
            };
            assert_eq!(per.median, expected, "{}", r.event);
        }
        // IPC from the medians: instructions and cycles are both counted.
        assert!(
            report
                .metrics
                .iter()
                .any(|m| m.name == "ipc" && m.value.is_some())
        );
    }

    /// Declared bytes give the bandwidth; repetitions outside the Tukey fences are listed by
    /// index in the `samples` records.
    #[test]
    fn bandwidth_and_outlier_indices() {
        let caps = PmuCaps::tsc_only(Vendor::Intel, None);
        let plan = run_plan("", &caps, Overhead::None, 8);
        let mut b = Bench::begin("copy", 4, &plan).unwrap().with_bytes(1000);
        b.enter_group(0, &plan).unwrap();
        // 4 iterations of 1000 bytes in 2000 ticks at 1 GHz: 2 us, 2000 MB/s; repetition 5 is
        // far off.
        let tsc = [2000, 2000, 2000, 2000, 2000, 9000, 2000, 2000];
        b.add_samples(0, rows(2, 8, |r, c| if c == 0 { tsc[r] } else { 0 }), &plan)
            .unwrap();
        let report = b.finish(&plan);
        let bw = report
            .metrics
            .iter()
            .find(|m| m.name == "bandwidth")
            .unwrap();
        assert_eq!(bw.value, Some(2000.0));
        let mut sink = Collect {
            records: Vec::new(),
            lines: Vec::new(),
        };
        emit_start("p", &b, &plan, &mut sink);
        emit_report("p", &b, &plan, &report, &mut sink);
        assert_eq!(sink.records[0]["bytes_per_iteration"], 1000);
        let samples = sink
            .records
            .iter()
            .find(|r| r["type"] == "samples")
            .unwrap();
        assert_eq!(samples["outliers"], serde_json::json!([5]));
        let result = sink.records.iter().find(|r| r["type"] == "result").unwrap();
        assert_eq!(result["outliers"], 1);
    }

    #[test]
    fn bad_calls_are_refused_with_reasons() {
        let caps = PmuCaps::tsc_only(Vendor::Intel, None);
        let plan = run_plan("", &caps, Overhead::Empty, 4);
        assert!(Bench::begin("", 1, &plan).is_err());
        assert!(Bench::begin("a b", 1, &plan).is_err());
        assert!(Bench::begin(&"x".repeat(65), 1, &plan).is_err());
        assert!(Bench::begin("ok", 0, &plan).is_err());
        let mut b = Bench::begin("ok", 1, &plan).unwrap();
        assert!(
            b.add_samples(0, rows(2, 4, |_, _| 1), &plan).is_err(),
            "no group yet"
        );
        assert!(b.enter_group(1, &plan).is_err());
        b.enter_group(0, &plan).unwrap();
        assert!(b.expected_words(3, &plan).is_err(), "reps");
        assert_eq!(b.expected_words(4, &plan), Ok(8));
        assert!(
            b.add_samples(7, rows(2, 4, |_, _| 1), &plan).is_err(),
            "kind"
        );
        assert!(
            b.add_samples(0, rows(2, 3, |_, _| 1), &plan).is_err(),
            "length"
        );
        b.add_samples(0, rows(2, 4, |_, _| 1), &plan).unwrap();
        // The empty region never came: the TSC result says so.
        let report = b.finish(&plan);
        match &report.results[0].outcome {
            Err(Failure::Harness(m)) => assert!(m.contains("empty"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}

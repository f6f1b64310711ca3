//! The results in `perf stat`'s machine formats, so scripts written for perf read them: `-x SEP`
//! (perf's CSV) and `-j` (perf's JSON lines). Field order and keys follow Linux's
//! tools/perf/Documentation/perf-stat.txt ("CSV FORMAT", "JSON FORMAT") and what
//! tools/perf/util/stat-display.c prints; what each field holds for baremark is in
//! docs/output-formats.md ("perf-compatible output").
//!
//! Every benchmark is shown the way `perf stat --for-each-cgroup` shows a cgroup: the same event
//! lines once per benchmark, its name in the cgroup field after the event name (CSV) or under
//! `"cgroup"` (JSON).

use crate::results::{Benchmark, ResultRec, Results};

/// perf's texts for a counter without a value (stat-display.c, `CNTR_NOT_SUPPORTED`,
/// `CNTR_NOT_COUNTED`).
pub const NOT_SUPPORTED: &str = "<not supported>";
pub const NOT_COUNTED: &str = "<not counted>";

/// Which of perf's machine formats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// `perf stat -x SEP`.
    Csv { separator: String },
    /// `perf stat -j`.
    JsonLines,
}

/// Checks a `-x` separator: any non-empty string, as perf takes, but no quote or line break,
/// which would break the quoting of fields and the one-line-per-counter shape.
pub fn parse_separator(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("the field separator is empty; give one, e.g. -x , or -x ';'".into());
    }
    if s.contains(['"', '\n', '\r']) {
        return Err(format!(
            "the field separator {s:?} holds a quote or a line break; use e.g. , or ; or a tab"
        ));
    }
    Ok(s.to_string())
}

/// A counter's value, or why there is none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Count {
    Value(f64),
    NotSupported,
    NotCounted,
}

impl Count {
    /// The value as `value` writes it, or perf's text for a counter without one.
    fn text(self, value: fn(f64) -> String) -> String {
        match self {
            Count::Value(v) => value(v),
            Count::NotSupported => NOT_SUPPORTED.into(),
            Count::NotCounted => NOT_COUNTED.into(),
        }
    }
}

/// One line of perf's output.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// A counter: value, unit, event name, variance, run time, share of the run.
    Counter {
        count: Count,
        unit: String,
        event: String,
        /// The benchmark (perf's cgroup field).
        cgroup: String,
        /// The CPU it ran on, when the results span several (perf stat -A's first field).
        cpu: Option<u64>,
        /// Standard deviation in percent of the mean.
        variance: f64,
        runtime_ns: u64,
        pcnt_running: f64,
    },
    /// A derived metric on a line of its own (perf: "additional metrics ... with all earlier
    /// fields being empty").
    Metric {
        cgroup: String,
        cpu: Option<u64>,
        value: f64,
        unit: String,
    },
    /// One CPU's count of a system-mode event over the run (`perf stat -a -A`: the CPU comes
    /// first; the cgroup field says `system`).
    System {
        cpu: u64,
        count: u64,
        event: String,
        runtime_ns: u64,
    },
}

/// perf's fields in CSV column order, by their JSON keys: every line of both formats is one
/// value (or none) for each, from [`Line::cells`].
const FIELDS: [&str; 10] = [
    "cpu",
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

/// A field's value; each format writes each kind its own way.
#[derive(Clone, Copy)]
enum Cell<'a> {
    /// A counter's count: CSV `%.0f` when whole, JSON `%f` in a string.
    Count(Count),
    /// A metric's value: `%f` (in a string in JSON).
    Metric(f64),
    /// The variance in percent: `%.2f`, with a `%` sign in CSV.
    Variance(f64),
    /// A percentage: `%.2f`.
    Percent(f64),
    Int(u64),
    Text(&'a str),
    /// perf stat -A's CPU: `CPU3` in CSV, `"3"` in JSON.
    Cpu(u64),
}

impl Cell<'_> {
    /// As a `-x` field (before quoting).
    fn csv(self) -> String {
        match self {
            Cell::Count(c) => c.text(csv_count),
            Cell::Metric(v) => fixed6(v),
            Cell::Variance(v) => format!("{v:.2}%"),
            Cell::Percent(v) => format!("{v:.2}"),
            Cell::Int(n) => n.to_string(),
            Cell::Text(s) => s.to_string(),
            Cell::Cpu(n) => format!("CPU{n}"),
        }
    }

    /// As a `-j` value.
    fn json(self) -> String {
        match self {
            Cell::Count(c) => jstr(&c.text(fixed6)),
            Cell::Metric(v) => jstr(&fixed6(v)),
            Cell::Variance(v) | Cell::Percent(v) => format!("{v:.2}"),
            Cell::Int(n) => n.to_string(),
            Cell::Text(s) => jstr(s),
            Cell::Cpu(n) => jstr(&n.to_string()),
        }
    }
}

impl Line {
    /// The line's value of each of [`FIELDS`]; `None` where it has none (an empty CSV field,
    /// no JSON key).
    fn cells(&self) -> [Option<Cell<'_>>; FIELDS.len()] {
        match self {
            Line::Counter {
                count,
                unit,
                event,
                cgroup,
                cpu,
                variance,
                runtime_ns,
                pcnt_running,
            } => [
                cpu.map(Cell::Cpu),
                Some(Cell::Count(*count)),
                Some(Cell::Text(unit)),
                Some(Cell::Text(event)),
                Some(Cell::Text(cgroup)),
                Some(Cell::Variance(*variance)),
                Some(Cell::Int(*runtime_ns)),
                Some(Cell::Percent(*pcnt_running)),
                None,
                None,
            ],
            Line::System {
                cpu,
                count,
                event,
                runtime_ns,
            } => [
                Some(Cell::Cpu(*cpu)),
                Some(Cell::Count(Count::Value(*count as f64))),
                Some(Cell::Text("")),
                Some(Cell::Text(event)),
                Some(Cell::Text("system")),
                Some(Cell::Variance(0.0)),
                Some(Cell::Int(*runtime_ns)),
                Some(Cell::Percent(100.0)),
                None,
                None,
            ],
            Line::Metric {
                cgroup,
                cpu,
                value,
                unit,
            } => [
                cpu.map(Cell::Cpu),
                None,
                None,
                None,
                Some(Cell::Text(cgroup)),
                None,
                None,
                None,
                Some(Cell::Metric(*value)),
                Some(Cell::Text(unit)),
            ],
        }
    }
}

/// The lines of `res`: per benchmark in run order, its events in the kernel's order (the TSC
/// first), then its derived metrics that have a value.
pub fn lines(res: &Results) -> Vec<Line> {
    let mut out = Vec::new();
    // Like `perf stat -A`: the CPU on every line when the benchmarks ran on more than one.
    let mut cpus: Vec<u64> = res.benchmarks.iter().filter_map(|b| b.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let per_cpu = cpus.len() > 1;
    for b in &res.benchmarks {
        let cgroup = b.title();
        let cpu = b.cpu.filter(|_| per_cpu);
        for r in &b.typed {
            let mut line = counter_line(b, r, res.machine.tsc_hz, &cgroup);
            if let Line::Counter { cpu: c, .. } = &mut line {
                *c = cpu;
            }
            out.push(line);
        }
        for m in &b.typed_metrics {
            // perf prints no line for a metric it cannot compute; the reason is in --json.
            if let Some(value) = m.value.filter(|v| v.is_finite()) {
                out.push(Line::Metric {
                    cgroup: cgroup.clone(),
                    cpu,
                    value,
                    unit: m.name.clone(),
                });
            }
        }
    }
    // run.cfg `system`: the run's counts per CPU.
    if let Some(w) = res.system.iter().rev().find(|w| w.scope == "run") {
        let vendor = res
            .machine
            .cpu
            .as_deref()
            .and_then(|c| c.split('-').next())
            .and_then(events::cpu::Vendor::from_cpuid_name);
        let runtime_ns = match res.machine.tsc_hz.filter(|&hz| hz > 0) {
            Some(hz) => (w.tsc as f64 * 1e9 / hz as f64).round() as u64,
            None => 0,
        };
        for (cpu, count, event) in
            w.perf_rows(|word| crate::profile::spec::name_of_word(word, vendor))
        {
            out.push(Line::System {
                cpu,
                count,
                event,
                runtime_ns,
            });
        }
    }
    out
}

fn counter_line(b: &Benchmark, r: &ResultRec, tsc_hz: Option<u64>, cgroup: &str) -> Line {
    // perf leaves the unit of plain counts empty; the TSC keeps its `ticks`.
    let unit = match r.unit.as_deref() {
        Some("events") | None => String::new(),
        Some(u) => u.to_string(),
    };
    let (count, variance, runtime_ns, pcnt_running) = match (&r.value, r.supported) {
        (Some(v), true) => {
            // The counter ran in its group's repetitions only: one group's share of the
            // benchmark's measured repetitions, like perf's time running / time enabled.
            let groups = r.groups.filter(|&g| r.multiplexed && g > 1).unwrap_or(1);
            (
                Count::Value(v.median),
                perf_variance(v.stddev, v.mean, v.n),
                region_time_ns(b, v.n, tsc_hz),
                100.0 / groups as f64,
            )
        }
        // perf: enabled but never running (`<not counted>`, 0% running), or never enabled
        // (`<not supported>`, run == enabled == 0, printed as 100%).
        _ if r.not_counted() => (Count::NotCounted, 0.0, 0, 0.0),
        _ => (Count::NotSupported, 0.0, 0, 100.0),
    };
    Line::Counter {
        count,
        unit,
        event: r.event.clone(),
        cgroup: cgroup.to_string(),
        cpu: None,
        variance,
        runtime_ns,
        pcnt_running,
    }
}

/// perf's `-r` variance (`rel_stddev_stats` of `stddev_stats`, tools/perf/util/stat.c): the
/// standard error of the mean (sample standard deviation over sqrt(n)) in percent of the
/// mean's magnitude; 0 for fewer than two samples or a mean of 0. The kernel's `stddev` is the
/// population one, so the standard error is `stddev / sqrt(n - 1)`.
fn perf_variance(stddev: f64, mean: f64, n: u64) -> f64 {
    if n < 2 || mean == 0.0 || !mean.is_finite() || !stddev.is_finite() {
        0.0
    } else {
        100.0 * stddev / ((n - 1) as f64).sqrt() / mean.abs()
    }
}

/// How long the counter counted, in ns: `reps` repetitions of the measured region and of the
/// region its overhead removal used (the empty region, or the run of 2U iterations), timed by
/// the benchmark's virtual TSC (mean ticks). 0 without the TSC's statistics or frequency.
fn region_time_ns(b: &Benchmark, reps: u64, tsc_hz: Option<u64>) -> u64 {
    let (Some(tsc), Some(hz)) = (b.result("tsc"), tsc_hz.filter(|&hz| hz > 0)) else {
        return 0;
    };
    let Some(raw) = &tsc.raw else { return 0 };
    let ticks_per_rep = raw.mean
        + tsc.overhead_stats.as_ref().map_or(0.0, |s| s.mean)
        + tsc.raw2x.as_ref().map_or(0.0, |s| s.mean);
    let ns = reps as f64 * ticks_per_rep * 1e9 / hz as f64;
    if ns.is_finite() && ns > 0.0 {
        ns.round() as u64
    } else {
        0
    }
}

/// A count as perf's CSV prints it: no decimals when whole (perf's `%.0f`), else exactly (a
/// median of an even number of repetitions can end in .5). Never `-0`.
fn csv_count(v: f64) -> String {
    let v = if v == 0.0 { 0.0 } else { v };
    format!("{v}")
}

/// perf's `%f`, as its JSON prints counter and metric values (as strings). Never `-0.000000`.
fn fixed6(v: f64) -> String {
    let s = format!("{v:.6}");
    if s.starts_with('-') && s[1..].bytes().all(|c| c == b'0' || c == b'.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// One CSV field. perf writes fields as they are ("not-quite-CSV"), so a name holding the
/// separator would shift every later field; such a field (or one with a quote or line break)
/// is quoted as RFC 4180 does, which CSV readers take back apart.
fn csv_field(s: &str, sep: &str) -> String {
    if s.contains(sep) || s.contains(['"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `perf stat -x SEP`: per line counter value, unit, event name, cgroup (the benchmark),
/// variance, counter run time, percentage running, metric value, metric unit: nine fields on
/// every line, the metric fields empty on counter lines and the first seven (but the
/// benchmark) empty on metric lines.
pub fn csv(res: &Results, sep: &str) -> String {
    let mut out = String::new();
    for line in lines(res) {
        let cells = line.cells();
        // The CPU field only when the lines carry it (perf stat -A), else perf's nine.
        let skip = usize::from(cells[0].is_none());
        let quoted: Vec<String> = cells
            .into_iter()
            .skip(skip)
            .map(|c| csv_field(&c.map(Cell::csv).unwrap_or_default(), sep))
            .collect();
        out.push_str(&quoted.join(sep));
        out.push('\n');
    }
    out
}

/// A JSON string literal.
fn jstr(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// `{"key" : value, ...}` with perf's spacing (stat-display.c's `json_out`).
fn json_object(pairs: &[(&str, String)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{} : {v}", jstr(k)))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

/// `perf stat -j`: one object per line. Counter lines: `counter-value` (a string: `%f`, or
/// `<not supported>`/`<not counted>`), `unit`, `event`, `cgroup` (the benchmark), `variance`,
/// `event-runtime`, `pcnt-running`. Metric lines: `cgroup`, `metric-value` (a string, as
/// current perf prints it; older perf printed a bare number), `metric-unit`.
pub fn json_lines(res: &Results) -> String {
    let mut out = String::new();
    for line in lines(res) {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        pairs.extend(
            FIELDS
                .iter()
                .zip(line.cells())
                .filter_map(|(&key, c)| Some((key, c?.json()))),
        );
        out.push_str(&json_object(&pairs));
        out.push('\n');
    }
    out
}

/// `res` in `format`.
pub fn render(res: &Results, format: &Format) -> String {
    match format {
        Format::Csv { separator } => csv(res, separator),
        Format::JsonLines => json_lines(res),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Line as LogLine, parse_line};

    fn results(lines: &[String]) -> Results {
        let records: Vec<_> = lines
            .iter()
            .filter_map(|l| match parse_line(l) {
                LogLine::Record(r) => Some(r),
                LogLine::Text(_) => None,
            })
            .collect();
        Results::from_records(&records)
    }

    fn stats(n: u64, median: f64, mean: f64, stddev: f64) -> String {
        format!(
            r#"{{"n":{n},"min":0,"median":{median},"mean":{mean},"stddev":{stddev},"max":0,"mean_20_80":{mean}}}"#
        )
    }

    /// A `result` record of benchmark `bench` (its payload of the same name), supported when
    /// it has a `value` unless `extra` says otherwise.
    fn result(bench: &str, event: &str, unit: &str, value: Option<String>, extra: &str) -> String {
        let supported = if extra.contains("\"supported\"") {
            String::new()
        } else {
            format!(r#","supported":{}"#, value.is_some())
        };
        let v = value.unwrap_or_else(|| "null".into());
        let name = serde_json::to_string(bench).unwrap();
        format!(
            r#"{{"type":"result","v":1,"payload":{name},"bench":{name},"event":{},"unit":"{unit}","reps":4,"iterations":10,"overhead":"empty","raw":{v},"value":{v},"per_iteration":null{supported}{extra}}}"#,
            serde_json::to_string(event).unwrap()
        )
    }

    fn fields<'a>(line: &'a str, sep: &str) -> Vec<&'a str> {
        line.split(sep).collect()
    }

    #[test]
    fn separators_are_checked() {
        assert_eq!(parse_separator(","), Ok(",".into()));
        assert_eq!(parse_separator("\t"), Ok("\t".into()));
        assert_eq!(parse_separator("::"), Ok("::".into()));
        assert!(parse_separator("").unwrap_err().contains("empty"));
        for bad in ["\"", "a\nb", "\r"] {
            assert!(
                parse_separator(bad)
                    .unwrap_err()
                    .contains("quote or a line break")
            );
        }
    }

    #[test]
    fn numbers_print_as_perf_reads_them() {
        assert_eq!(csv_count(4000.0), "4000");
        assert_eq!(csv_count(39999.5), "39999.5");
        assert_eq!(csv_count(-0.0), "0");
        assert_eq!(csv_count(-2.5), "-2.5");
        assert_eq!(csv_count(1e15), "1000000000000000");
        assert_eq!(fixed6(1.0), "1.000000");
        assert_eq!(fixed6(-0.0000001), "0.000000");
        assert_eq!(fixed6(-1.5), "-1.500000");
        // perf's variance: the standard error of the mean, in percent of the mean.
        assert_eq!(perf_variance(1.0, 0.0, 20), 0.0);
        assert_eq!(perf_variance(1.0, 4.0, 1), 0.0);
        assert_eq!(perf_variance(2.0, -4.0, 5), 25.0);
    }

    #[test]
    fn a_name_holding_the_separator_is_quoted() {
        let res = results(&[
            result(
                "b",
                "cpu/event=0x3c,umask=1/",
                "events",
                Some(stats(4, 7.0, 7.0, 0.0)),
                "",
            ),
            result(
                "b",
                "say \"hi\"",
                "events",
                Some(stats(4, 1.0, 1.0, 0.0)),
                "",
            ),
        ]);
        let out = csv(&res, ",");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "7,,\"cpu/event=0x3c,umask=1/\",b,0.00%,0,100.00,,"
        );
        assert_eq!(lines[1], "1,,\"say \"\"hi\"\"\",b,0.00%,0,100.00,,");
        // A CSV reader takes the fields back apart: nine, the name whole.
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(out.as_bytes());
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert!(rows.iter().all(|r| r.len() == 9));
        assert_eq!(&rows[0][2], "cpu/event=0x3c,umask=1/");
        assert_eq!(&rows[1][2], "say \"hi\"");
        // With another separator nothing needs quoting; a separator of several characters is
        // used as it is.
        let semi = csv(&res, ";");
        assert_eq!(
            fields(semi.lines().next().unwrap(), ";")[2],
            "cpu/event=0x3c,umask=1/"
        );
        let multi = csv(&res, "::");
        assert!(multi.lines().all(|l| fields(l, "::").len() == 9), "{multi}");
    }

    #[test]
    fn json_names_are_escaped() {
        let res = results(&[result(
            "b\\c",
            "say \"hi\"",
            "events",
            Some(stats(4, 1.0, 1.0, 0.0)),
            "",
        )]);
        let line = json_lines(&res);
        let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(v["event"], "say \"hi\"");
        assert_eq!(v["cgroup"], "b\\c");
    }

    #[test]
    fn not_supported_and_not_counted_are_told_apart() {
        let res = results(&[
            result(
                "b",
                "cycles",
                "events",
                None,
                r#","supported":false,"reason":"no counters""#,
            ),
            result(
                "b",
                "instructions",
                "events",
                None,
                r#","supported":false,"reason":"not measured: lost""#,
            ),
            result("b", "branches", "events", None, r#","supported":true"#),
        ]);
        let out = csv(&res, ",");
        let lines: Vec<Vec<&str>> = out.lines().map(|l| fields(l, ",")).collect();
        // perf: never enabled (run == enabled == 0: 100%), or enabled but never running (0%).
        assert_eq!(
            lines[0],
            [
                "<not supported>",
                "",
                "cycles",
                "b",
                "0.00%",
                "0",
                "100.00",
                "",
                ""
            ]
        );
        assert_eq!(lines[1][0], NOT_COUNTED);
        assert_eq!(lines[1][6], "0.00");
        assert_eq!(lines[2][0], NOT_COUNTED);
        let json: Vec<serde_json::Value> = json_lines(&res)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(json[0]["counter-value"], NOT_SUPPORTED);
        assert_eq!(json[1]["counter-value"], NOT_COUNTED);
        assert!(json[0].get("metric-value").is_none());
    }

    #[test]
    fn multiplexed_groups_share_the_run_and_runtime_comes_from_the_tsc() {
        let tsc = format!(
            r#","groups":4,"multiplexed":true,"overhead_stats":{}"#,
            stats(4, 50.0, 50.0, 0.0)
        );
        // raw mean 1000 ticks + empty region 50 ticks, 4 repetitions, at 1 GHz: 4200 ns.
        let lines = [
            r#"{"type":"tsc","v":1,"hz":1000000000}"#.to_string(),
            result(
                "b",
                "tsc",
                "ticks",
                Some(stats(4, 950.0, 1000.0, 10.0)),
                &tsc,
            ),
            result(
                "b",
                "cycles",
                "events",
                Some(stats(4, 900.0, 900.0, 9.0)),
                r#","groups":4,"multiplexed":true"#,
            ),
        ];
        let out = csv(&results(&lines), ",");
        let rows: Vec<Vec<&str>> = out.lines().map(|l| fields(l, ",")).collect();
        assert_eq!(
            rows[0],
            // Variance: 100 * 10 / sqrt(4 - 1) / 1000 (perf's standard error of the mean).
            ["950", "ticks", "tsc", "b", "0.58%", "4200", "25.00", "", ""]
        );
        assert_eq!(rows[1][5], "4200");
        assert_eq!(rows[1][6], "25.00");
        // Without the TSC's frequency there is no time to give.
        let out = csv(&results(&lines[1..]), ",");
        assert_eq!(fields(out.lines().next().unwrap(), ",")[5], "0");
    }

    #[test]
    fn metrics_get_lines_of_their_own_and_the_unknown_ones_none() {
        let res = results(&[
            result("b", "tsc", "ticks", Some(stats(4, 1.0, 1.0, 0.0)), ""),
            r#"{"type":"metric","v":1,"payload":"b","bench":"b","name":"ipc","value":1.25,"unit":"instructions/cycle","reason":null}"#.into(),
            r#"{"type":"metric","v":1,"payload":"b","bench":"b","name":"cpi","value":null,"unit":"cycles/instruction","reason":"cycles not counted"}"#.into(),
        ]);
        let out = csv(&res, ",");
        let rows: Vec<Vec<&str>> = out.lines().map(|l| fields(l, ",")).collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert_eq!(rows[1], ["", "", "", "b", "", "", "", "1.250000", "ipc"]);
        let json = json_lines(&res);
        let last: serde_json::Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
        assert_eq!(
            last,
            serde_json::json!({"cgroup": "b", "metric-value": "1.250000", "metric-unit": "ipc"})
        );
    }

    #[test]
    fn results_on_several_cpus_carry_the_cpu_as_perf_stat_a_does() {
        let on = |cpu: u64| {
            let r = result("b", "tsc", "ticks", Some(stats(4, 1.0, 1.0, 0.0)), "");
            format!("{},\"cpu\":{cpu}}}", r.trim_end_matches('}'))
        };
        let res = results(&[on(0), on(3)]);
        assert_eq!(res.benchmarks.len(), 2);
        let out = csv(&res, ",");
        let rows: Vec<Vec<&str>> = out.lines().map(|l| fields(l, ",")).collect();
        assert_eq!(rows[0][..4], ["CPU0", "1", "ticks", "tsc"], "{out}");
        assert_eq!(rows[1][..5], ["CPU3", "1", "ticks", "tsc", "b"], "{out}");
        assert!(rows.iter().all(|r| r.len() == 10), "{out}");
        let json = json_lines(&res);
        let last: serde_json::Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
        assert_eq!(last["cpu"], "3", "{json}");
        // One CPU: perf's nine fields, no CPU.
        let res = results(&[on(3)]);
        assert_eq!(fields(csv(&res, ",").lines().next().unwrap(), ",").len(), 9);
        assert!(!json_lines(&res).contains("\"cpu\""));
    }
}

//! The results as people read them: a `perf stat`-like table per benchmark, under a header
//! that says what was measured on and how. Fits 100 columns.

use std::fmt::Write as _;

use crate::numbers::{count, mhz, num};
use crate::results::{Benchmark, ResultRec, Results};

/// Widths of the number columns: median, mean 20-80, ± stddev, min, max.
const W_MEDIAN: usize = 15;
const W_MEAN: usize = 13;
const W_PCT: usize = 9;
const W_MIN: usize = 12;
const W_MAX: usize = 12;
/// Where the event name starts.
const NUMBERS: usize = W_MEDIAN + W_MEAN + W_PCT + W_MIN + W_MAX + 4;
const W_EVENT: usize = 20;

/// Standard deviation as a percentage of the mean.
fn pct(stddev: f64, mean: f64) -> String {
    if stddev == 0.0 {
        "0.00%".into()
    } else if mean == 0.0 || !stddev.is_finite() || !mean.is_finite() {
        "-".into()
    } else {
        format!("{:.2}%", stddev / mean.abs() * 100.0)
    }
}

fn overhead_text(mode: Option<&str>) -> String {
    match mode {
        Some("empty") => "overhead: empty region subtracted".into(),
        Some("diff") => "overhead: diff (run of 2U iterations minus run of U)".into(),
        Some("none") => "overhead: none (regions as measured)".into(),
        Some(other) => format!("overhead: {other}"),
        None => "overhead: ?".into(),
    }
}

/// The header: machine and harness settings.
pub fn header(res: &Results) -> String {
    let m = &res.machine;
    let c = &res.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "machine  {}{}{}",
        m.cpu.as_deref().unwrap_or("unknown CPU"),
        m.cpu_brand
            .as_deref()
            .map(|b| format!(" \"{b}\""))
            .unwrap_or_default(),
        m.hypervisor
            .as_deref()
            .map(|h| format!(" | hypervisor {h}"))
            .unwrap_or_default()
    );
    // The CPUs when there is more than one (or more than one kind).
    if m.cpus_online.is_some_and(|n| n > 1) || m.hybrid {
        let n = m.cpus_online.unwrap_or(0);
        let _ = writeln!(
            out,
            "         {n} CPU{} online{}",
            if n == 1 { "" } else { "s" },
            if m.hybrid {
                " (hybrid: results name their core type)"
            } else {
                ""
            }
        );
    }
    let tsc = match (m.tsc_hz, m.tsc_method.as_deref()) {
        (Some(hz), method) => format!("{} ({})", mhz(hz), method.unwrap_or("?")),
        (None, method) => format!("frequency unknown ({})", method.unwrap_or("no method")),
    };
    let model = match (m.pmu_uarch_model, m.pmu_uarch_latencies) {
        (true, Some([l2, llc, mem, mispredict])) => format!(
            " (emulated: QEMU's PMU model with caches and a branch predictor, exact counts, cycles a model figure: instructions + stalls of {l2} per L2 line, {llc} per LLC line, {mem} per memory line, {mispredict} per misprediction; not hardware)"
        ),
        (true, None) => " (emulated: QEMU's PMU model with caches and a branch predictor, exact counts, cycles a model figure, not hardware)".into(),
        (false, _) if m.pmu_emulated => {
            " (emulated: QEMU's PMU model, exact counts, not hardware)".into()
        }
        (false, _) => String::new(),
    };
    let _ = writeln!(
        out,
        "         pmu backend {}{model} | tsc {tsc}",
        m.pmu_backend.as_deref().unwrap_or("unknown"),
    );
    let _ = writeln!(
        out,
        "harness  {} repetitions after {} warm-up{} | {}",
        c.reps.map_or("?".into(), |n| n.to_string()),
        c.warmup.map_or("?".into(), |n| n.to_string()),
        if c.warmup == Some(1) { "" } else { "s" },
        overhead_text(c.overhead.as_deref())
    );
    let mut items: Vec<String> = std::iter::once("tsc")
        .chain(c.events.iter().map(String::as_str))
        .map(str::to_string)
        .collect();
    // The kernel lists only as many names as fit its record (long nanoBench configs).
    if let Some(more) = c
        .events_total
        .and_then(|n| n.checked_sub(c.events.len() as u64))
        .filter(|&n| n > 0)
    {
        items.push(format!("(+{more} more below)"));
    }
    if let Some(g) = c.groups.filter(|&g| g > 1) {
        items.push(format!("({g} groups, measured in turn)"));
    }
    out.push_str(&wrap("         events: ", &items, WIDTH));
    out
}

/// The table's width.
const WIDTH: usize = 100;

/// `items` after `prefix`, comma-separated, broken into lines of at most `width` characters
/// (an item longer than a line gets one of its own), continued under the first item.
fn wrap(prefix: &str, items: &[String], width: usize) -> String {
    let indent = " ".repeat(prefix.chars().count());
    let mut lines = vec![prefix.to_string()];
    for (i, item) in items.iter().enumerate() {
        // A parenthesised note follows the item before it without a comma.
        let sep = match i {
            0 => "",
            _ if item.starts_with('(') => " ",
            _ => ", ",
        };
        let line = lines.last_mut().expect("one line at least");
        // + 1: room for the comma that ends a broken line.
        if i > 0 && line.chars().count() + sep.len() + item.chars().count() + 1 > width {
            if sep == ", " {
                line.push(',');
            }
            lines.push(format!("{indent}{item}"));
        } else {
            line.push_str(sep);
            line.push_str(item);
        }
    }
    lines.join("\n") + "\n"
}

fn counter_text(r: &ResultRec) -> String {
    let counter = r.counter.as_deref().unwrap_or("-");
    let emulated = if r.emulated { " (emulated)" } else { "" };
    match (r.group, r.groups) {
        (Some(g), Some(n)) if n > 1 => format!("{counter} g{g}{emulated}"),
        _ => format!("{counter}{emulated}"),
    }
}

/// One benchmark's table.
pub fn benchmark(b: &Benchmark) -> String {
    let mut out = String::new();
    let per_iteration = b.typed.iter().any(|r| r.per_iteration.is_some());
    let what = match (b.iterations, per_iteration) {
        (Some(n), true) => format!("{} iterations, values per iteration", count(n)),
        (Some(n), false) => format!("{} iterations, values per region", count(n)),
        (None, _) => "values per region".to_string(),
    };
    let _ = writeln!(
        out,
        " Performance counter stats for '{}'{} ({what}; tsc in ticks):",
        b.title(),
        b.placement()
            .map(|p| format!(" on {p}"))
            .unwrap_or_default()
    );
    // Records lost in a damaged log: what survived is shown, and said to be partial.
    if !b.incomplete.is_empty() {
        let _ = writeln!(out, "   INCOMPLETE: {}", b.incomplete.join("; "));
    }
    out.push('\n');
    // Wide enough for the longest name (nanoBench configs name events like
    // `OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE`), so the counter column stays aligned.
    let w_event = b
        .typed
        .iter()
        .map(|r| r.event.chars().count())
        .max()
        .unwrap_or(0)
        .max(W_EVENT);
    let _ = writeln!(
        out,
        "{:>W_MEDIAN$} {:>W_MEAN$} {:>W_PCT$} {:>W_MIN$} {:>W_MAX$}  {:<w_event$} counter",
        "median", "mean 20-80", "± stddev", "min", "max", "event"
    );
    // A reason shared by several rows (no counters at all) is printed once.
    let mut last_reason: Option<&str> = None;
    for r in &b.typed {
        match r.chosen() {
            Some((s, _)) if r.supported => {
                let _ = writeln!(
                    out,
                    "{:>W_MEDIAN$} {:>W_MEAN$} {:>W_PCT$} {:>W_MIN$} {:>W_MAX$}  {:<w_event$} {}",
                    num(s.median),
                    num(s.mean_20_80),
                    pct(s.stddev, s.mean),
                    num(s.min),
                    num(s.max),
                    r.event,
                    counter_text(r)
                );
            }
            _ => {
                let label = if r.not_counted() {
                    "<not counted>"
                } else {
                    "<not supported>"
                };
                let full = r.reason.as_deref().unwrap_or(if r.supported {
                    "no statistics"
                } else {
                    "no reason given"
                });
                let reason = if last_reason == Some(full) {
                    "(as above)"
                } else {
                    full
                };
                last_reason = Some(full);
                let _ = writeln!(
                    out,
                    "{label:>W_MEDIAN$}{:pad$}{:<w_event$} {reason}",
                    "",
                    r.event,
                    pad = NUMBERS - W_MEDIAN + 2
                );
            }
        }
    }
    let _ = write!(out, "{}", notes(b));
    if !b.typed_metrics.is_empty() {
        out.push('\n');
        for (i, m) in b.typed_metrics.iter().enumerate() {
            let value = match m.value {
                Some(v) => format!("{:>W_MEDIAN$} {}", num(v), m.unit.as_deref().unwrap_or("")),
                None => format!(
                    "{:>W_MEDIAN$} ({})",
                    "n/a",
                    m.reason.as_deref().unwrap_or("no reason given")
                ),
            };
            let _ = writeln!(
                out,
                "   {:<8} {:<28}{}",
                if i == 0 { "derived" } else { "" },
                m.name,
                value.trim_end()
            );
        }
    }
    out
}

/// The lines under a benchmark's rows: overhead, multiplexing, interrupts, outliers.
fn notes(b: &Benchmark) -> String {
    let mut out = String::new();
    let tsc = b.result("tsc");
    if let Some(r) = tsc {
        match (r.overhead.as_deref(), &r.overhead_stats, &r.raw2x) {
            (Some("empty"), Some(o), _) => {
                let _ = writeln!(
                    out,
                    "\n   overhead: the empty region took {} ticks (median) per region, subtracted",
                    num(o.median)
                );
            }
            (Some("diff"), _, Some(x2)) => {
                let raw = r.raw.map_or(f64::NAN, |s| s.median);
                let _ = writeln!(
                    out,
                    "\n   diff: medians {} ticks for U iterations, {} for 2U; values are the difference",
                    num(raw),
                    num(x2.median)
                );
            }
            _ => out.push('\n'),
        }
    } else {
        out.push('\n');
    }
    if let Some(r) = b.typed.iter().find(|r| r.multiplexed) {
        let _ = writeln!(
            out,
            "   event groups: {} measured one after another, each over all {} repetitions (exact, not scaled)",
            r.groups.map_or("?".into(), |g| g.to_string()),
            r.reps.map_or("?".into(), |n| n.to_string())
        );
    }
    let interrupts = b.typed.iter().filter_map(|r| r.interrupts).max();
    let worst = b.typed.iter().filter_map(|r| r.interrupts_max).max();
    match interrupts {
        Some(0) => {
            let _ = writeln!(out, "   interrupts: none in the measured regions");
        }
        Some(n) => {
            let _ = writeln!(
                out,
                "   interrupts: {n} in the measured regions (at most {} in one repetition): they are in the values",
                worst.map_or("?".into(), |w| w.to_string())
            );
        }
        None => {}
    }
    if let Some(n) = b.typed.iter().filter_map(|r| r.smis).max() {
        let _ = writeln!(
            out,
            "{}",
            if n == 0 {
                String::from("   SMIs: none during the benchmark")
            } else {
                format!(
                    "   SMIs: {n} during the benchmark (System Management Mode: firmware time the kernel cannot see, in the values of the repetitions it hit)"
                )
            }
        );
    }
    let outliers: Vec<String> = b
        .typed
        .iter()
        .filter_map(|r| {
            r.outliers
                .filter(|&n| n > 0)
                .map(|n| format!("{} {n}", r.event))
        })
        .collect();
    if !outliers.is_empty() {
        let _ = writeln!(
            out,
            "   outliers (outside the Tukey fences): {}",
            outliers.join(", ")
        );
    }
    out
}

/// Whether `b` is the suite's empty benchmark, whose value after overhead removal is zero by
/// construction: its summary row shows the overhead itself.
fn is_overhead_row(b: &Benchmark) -> bool {
    b.bench == "empty"
        && b.typed
            .iter()
            .any(|r| r.overhead.as_deref() == Some("empty") && r.overhead_stats.is_some())
}

/// One summary cell: the median and the spread, or why there is none.
fn summary_cell(r: Option<&ResultRec>, overhead_row: bool) -> String {
    let Some(r) = r else {
        return "-".into();
    };
    let stats = if overhead_row {
        r.overhead_stats.as_ref()
    } else {
        r.chosen().map(|(s, _)| s)
    };
    match stats {
        Some(s) if r.supported => format!("{} ±{}", num(s.median), pct(s.stddev, s.mean)),
        _ if r.not_counted() => "not counted".into(),
        _ => "not supported".into(),
    }
}

/// The CPUs of a run that measured some benchmark on more than one CPU (`--cpus`), with the
/// core type of each on a hybrid part, in index order; empty otherwise.
fn cpus_of_suite(res: &Results) -> Vec<(u64, Option<String>)> {
    let mut cpus: Vec<(u64, Option<String>)> = Vec::new();
    for b in &res.benchmarks {
        let Some(c) = b.cpu else { continue };
        if !cpus.iter().any(|(i, _)| *i == c) {
            let t = b.core_type.clone().filter(|t| t != "uniform");
            cpus.push((c, t));
        }
    }
    cpus.sort();
    let repeated = res.benchmarks.iter().enumerate().any(|(i, b)| {
        res.benchmarks[..i]
            .iter()
            .any(|a| a.title() == b.title() && a.cpu != b.cpu)
    });
    if repeated { cpus } else { Vec::new() }
}

/// A CPU's column heading: `cpu 3`, `cpu 3 (atom)` on a hybrid part.
fn cpu_heading((cpu, core_type): &(u64, Option<String>)) -> String {
    match core_type {
        Some(t) => format!("cpu {cpu} ({t})"),
        None => format!("cpu {cpu}"),
    }
}

/// One event's table of a run on several CPUs: the event's name over the benchmarks, a column
/// per CPU; `-` where the benchmark did not run on that CPU.
fn per_cpu_rows(res: &Results, event: &str, cpus: &[(u64, Option<String>)]) -> Vec<Vec<String>> {
    let mut header = vec![event.to_string()];
    header.extend(cpus.iter().map(cpu_heading));
    let mut rows = vec![header];
    let mut seen: Vec<String> = Vec::new();
    for b in &res.benchmarks {
        let title = b.title();
        if seen.contains(&title) {
            continue;
        }
        seen.push(title.clone());
        let overhead_row = is_overhead_row(b);
        let mut name = if overhead_row {
            format!("{title} (the overhead)")
        } else {
            title.clone()
        };
        let same: Vec<&Benchmark> = res
            .benchmarks
            .iter()
            .filter(|o| o.title() == title)
            .collect();
        if same.iter().any(|o| !o.incomplete.is_empty()) {
            name.push_str(" (incomplete)");
        }
        let mut row = vec![name];
        for (cpu, _) in cpus {
            let on = same.iter().rev().find(|o| o.cpu == Some(*cpu));
            row.push(match on {
                Some(o) => summary_cell(o.result(event), is_overhead_row(o)),
                None => "-".into(),
            });
        }
        rows.push(row);
    }
    rows
}

/// Why an event counted on some CPUs was not on others (a hybrid part's other core type): one
/// line per event and CPU, with the kernel's reason.
fn not_supported_by_cpu(
    out: &mut String,
    res: &Results,
    columns: &[&str],
    cpus: &[(u64, Option<String>)],
) {
    for event in columns {
        for c in cpus {
            let reason = res
                .benchmarks
                .iter()
                .filter(|b| b.cpu == Some(c.0))
                .find_map(|b| b.result(event).filter(|r| !r.supported))
                .map(|r| r.reason.clone().unwrap_or_else(|| "no reason given".into()));
            if let Some(reason) = reason {
                let _ = writeln!(
                    out,
                    "   {event} not supported on {}: {reason}",
                    cpu_heading(c)
                );
            }
        }
    }
}

/// Rows as aligned lines: the first column to the left, the others to the right.
fn table_lines(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::from(" ");
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[0]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The suite summary: a row per benchmark, a column per event counted anywhere (median per
/// iteration and its relative standard deviation); events no benchmark could count folded into
/// one line; the overhead, multiplexing and interrupts as footnotes.
pub fn summary(res: &Results) -> String {
    let mut out = String::new();
    // Events in the order the benchmarks report them.
    let mut events: Vec<&str> = Vec::new();
    for b in &res.benchmarks {
        for r in &b.typed {
            if !events.contains(&r.event.as_str()) {
                events.push(&r.event);
            }
        }
    }
    let counted = |e: &str| {
        res.benchmarks.iter().any(|b| {
            b.result(e)
                .is_some_and(|r| r.supported && r.chosen().is_some())
        })
    };
    let (columns, folded): (Vec<&str>, Vec<&str>) = events.iter().partition(|e| counted(e));
    let cpus = cpus_of_suite(res);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["benchmark".to_string()];
    // A `cpu` column when some benchmark ran elsewhere than the boot CPU, or the part is hybrid.
    let cpu_column = res.benchmarks.iter().any(|b| b.placement().is_some());
    if cpu_column {
        header.push("cpu".to_string());
    }
    header.extend(columns.iter().map(|e| e.to_string()));
    rows.push(header);
    for b in &res.benchmarks {
        let overhead_row = is_overhead_row(b);
        let mut name = if overhead_row {
            format!("{} (the overhead)", b.title())
        } else {
            b.title()
        };
        if !b.incomplete.is_empty() {
            name.push_str(" (incomplete)");
        }
        let mut row = vec![name];
        if cpu_column {
            let core_type = b.core_type.as_deref().filter(|t| *t != "uniform");
            row.push(match (b.cpu, core_type) {
                (Some(c), Some(t)) => format!("{c} {t}"),
                (Some(c), None) => c.to_string(),
                (None, Some(t)) => t.to_string(),
                (None, None) => "?".to_string(),
            });
        }
        row.extend(
            columns
                .iter()
                .map(|e| summary_cell(b.result(e), overhead_row)),
        );
        rows.push(row);
    }
    let per_iteration = res
        .benchmarks
        .iter()
        .flat_map(|b| &b.typed)
        .any(|r| r.per_iteration.is_some());
    let reps = res
        .benchmarks
        .iter()
        .flat_map(|b| &b.typed)
        .find_map(|r| r.reps);
    let what = if per_iteration {
        "per iteration"
    } else {
        "per region"
    };
    let over = reps.map_or(String::new(), |n| format!(" over {n} repetitions"));
    if cpus.len() > 1 {
        let titles = res.benchmarks.iter().fold(Vec::new(), |mut v, b| {
            if !v.contains(&b.title()) {
                v.push(b.title());
            }
            v
        });
        let _ = writeln!(
            out,
            " Summary of {} benchmarks on {} CPUs: median {what} ± relative standard deviation{over}, a table per event, a column per CPU; tsc in ticks\n",
            titles.len(),
            cpus.len(),
        );
        for event in &columns {
            let _ = write!(out, "{}", table_lines(&per_cpu_rows(res, event, &cpus)));
            out.push('\n');
        }
        not_supported_by_cpu(&mut out, res, &columns, &cpus);
    } else {
        let _ = writeln!(
            out,
            " Summary of {} benchmarks: median {what} ± relative standard deviation{over}; tsc in ticks\n",
            res.benchmarks.len(),
        );
        let _ = write!(out, "{}", table_lines(&rows));
        out.push('\n');
    }
    if !folded.is_empty() {
        let reason = folded
            .iter()
            .find_map(|e| {
                res.benchmarks
                    .iter()
                    .find_map(|b| b.result(e).and_then(|r| r.reason.clone()))
            })
            .unwrap_or_else(|| "no reason given".into());
        let _ = writeln!(
            out,
            "   not counted in any benchmark: {} ({reason})",
            folded.join(", ")
        );
    }
    let overheads: Vec<f64> = res
        .benchmarks
        .iter()
        .filter_map(|b| b.result("tsc"))
        .filter(|r| r.overhead.as_deref() == Some("empty"))
        .filter_map(|r| r.overhead_stats.as_ref().map(|s| s.median))
        .collect();
    if !overheads.is_empty() {
        let lo = overheads.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = overheads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let range = if lo == hi {
            num(lo)
        } else {
            format!("{} to {}", num(lo), num(hi))
        };
        let _ = writeln!(
            out,
            "   overhead: the empty region, {range} ticks per region (median), measured with each benchmark and subtracted"
        );
    } else if let Some(mode) = res.config.overhead.as_deref() {
        let _ = writeln!(out, "   {}", overhead_text(Some(mode)));
    }
    if let Some(r) = res
        .benchmarks
        .iter()
        .flat_map(|b| &b.typed)
        .find(|r| r.multiplexed)
    {
        let _ = writeln!(
            out,
            "   event groups: {} measured one after another, each over all repetitions (exact, not scaled)",
            r.groups.map_or("?".into(), |g| g.to_string())
        );
    }
    let interrupted: Vec<String> = res
        .benchmarks
        .iter()
        .filter_map(|b| {
            let n = b.typed.iter().filter_map(|r| r.interrupts).max()?;
            (n > 0).then(|| format!("{} ({n})", b.title()))
        })
        .collect();
    if interrupted.is_empty() {
        let _ = writeln!(out, "   interrupts: none in the measured regions");
    } else {
        let _ = writeln!(
            out,
            "   interrupts in the measured regions (they are in the values): {}",
            interrupted.join(", ")
        );
    }
    let counted: Vec<(String, u64)> = res
        .benchmarks
        .iter()
        .filter_map(|b| Some((b.title(), b.typed.iter().filter_map(|r| r.smis).max()?)))
        .collect();
    let with_smis: Vec<String> = counted
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| format!("{t} ({n})"))
        .collect();
    if !with_smis.is_empty() {
        let _ = writeln!(
            out,
            "   SMIs during (System Management Mode, firmware time in the values): {}",
            with_smis.join(", ")
        );
    } else if !counted.is_empty() {
        let _ = writeln!(out, "   SMIs: none during the benchmarks");
    }
    for b in res.benchmarks.iter().filter(|b| !b.incomplete.is_empty()) {
        let _ = writeln!(
            out,
            "   incomplete: {}: {} (the figures shown are those that survived)",
            b.title(),
            b.incomplete.join("; ")
        );
    }
    let _ = writeln!(
        out,
        "   per-benchmark tables, outliers and derived metrics: --detail"
    );
    out
}

/// The whole report: header, the benchmarks, errors, a closing count. More than one benchmark
/// is shown as one summary table unless `detail` asks for every benchmark's own table.
pub fn render(res: &Results, detail: bool) -> String {
    let mut out = header(res);
    if detail || res.benchmarks.len() <= 1 {
        // On several CPUs (`--cpus`) every table names its CPU, the boot CPU's too.
        let several = !cpus_of_suite(res).is_empty();
        for b in &res.benchmarks {
            out.push('\n');
            let table = benchmark(b);
            match (several, b.cpu) {
                (true, Some(0)) if b.placement().is_none() => out.push_str(&table.replacen(
                    &format!("'{}' (", b.title()),
                    &format!("'{}' on cpu 0 (", b.title()),
                    1,
                )),
                _ => out.push_str(&table),
            }
        }
    } else {
        out.push('\n');
        out.push_str(&summary(res));
    }
    if !res.errors.is_empty() {
        out.push('\n');
        for e in &res.errors {
            let whom = match (&e.payload, &e.bench) {
                (Some(p), Some(b)) if p != b => format!("{p}/{b}: "),
                (Some(p), _) => format!("{p}: "),
                (None, Some(b)) => format!("{b}: "),
                (None, None) => String::new(),
            };
            let _ = writeln!(out, "ERROR    [{}] {whom}{}", e.kind, e.message);
        }
    }
    let (results, unsupported) = res.counts();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let _ = writeln!(
        out,
        "\n{} | {}, {unsupported} not supported | {}",
        plural(res.benchmarks.len(), "benchmark"),
        plural(results, "result"),
        plural(res.errors.len(), "error")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench_log(placements: &[(&str, u64, &str)], hybrid: bool) -> Results {
        let mut log = format!(
            r#"{{"type":"cpus","v":1,"online":4,"failed":0,"disabled":0,"boot_apic_id":0,"hybrid":{hybrid},"core_types":{{}},"max_cpus":512,"only_boot_cpu_because":null}}"#
        );
        let stats = r#"{"n":3,"min":1,"median":2,"mean":2,"stddev":0,"max":3,"mean_20_80":2}"#;
        for (name, cpu, ty) in placements {
            log.push_str(&format!(
                "\n{{\"type\":\"bench_start\",\"v\":1,\"payload\":\"{name}\",\"cpu\":{cpu},\"core_type\":\"{ty}\",\"bench\":\"{name}\",\"iterations\":10,\"reps\":3,\"warmup\":1,\"overhead\":\"none\",\"groups\":1,\"events\":[]}}\n\
                 {{\"type\":\"result\",\"v\":1,\"payload\":\"{name}\",\"cpu\":{cpu},\"bench\":\"{name}\",\"event\":\"tsc\",\"unit\":\"ticks\",\"supported\":true,\"reason\":null,\"counter\":\"tsc\",\"group\":null,\"groups\":1,\"multiplexed\":false,\"scaling\":null,\"reps\":3,\"warmup\":1,\"iterations\":10,\"overhead\":\"none\",\"raw\":{stats},\"raw2x\":null,\"overhead_stats\":null,\"value\":{stats},\"per_iteration\":{stats},\"outliers\":0,\"interrupts\":0,\"interrupts_max\":0}}"
            ));
        }
        Results::from_records(&crate::records::records_of_log(&log))
    }

    #[test]
    fn the_cpu_is_shown_when_a_benchmark_ran_elsewhere_than_the_boot_cpu() {
        let res = bench_log(&[("a", 0, "uniform"), ("b", 0, "uniform")], false);
        let s = summary(&res);
        assert!(
            s.contains("\n benchmark           tsc\n a          2.000 ±0.00%\n"),
            "{s}"
        );
        assert!(!benchmark(&res.benchmarks[0]).contains(" on cpu"));
        assert!(
            header(&res).contains("\n         4 CPUs online\n"),
            "{}",
            header(&res)
        );

        let res = bench_log(&[("a", 3, "uniform"), ("b", 0, "uniform")], false);
        let s = summary(&res);
        assert!(s.contains("\n benchmark  cpu           tsc\n a            3  2.000 ±0.00%\n b            0  2.000 ±0.00%\n"), "{s}");
        let t = benchmark(&res.benchmarks[0]);
        assert!(
            t.starts_with(" Performance counter stats for 'a' on cpu 3 (10 iterations"),
            "{t}"
        );
        assert_eq!(res.benchmarks[0].cpu, Some(3));
        let csv = res.to_csv().unwrap();
        assert!(
            csv.lines()
                .next()
                .unwrap()
                .ends_with(",emulated,cpu,core_type"),
            "{csv}"
        );
        assert!(
            csv.lines().nth(1).unwrap().ends_with(",false,3,uniform"),
            "{csv}"
        );
        let json = res.to_json();
        assert!(
            json.contains("\"cpu\": 3,\n      \"core_type\": \"uniform\""),
            "{json}"
        );

        // A hybrid part: the core type of every benchmark.
        let res = bench_log(&[("a", 0, "core"), ("b", 2, "atom")], true);
        let s = summary(&res);
        assert!(s.contains(" a          0 core"), "{s}");
        assert!(s.contains(" b          2 atom"), "{s}");
        assert!(benchmark(&res.benchmarks[0]).contains("'a' on cpu 0 (core) ("));
        assert!(header(&res).contains("4 CPUs online (hybrid"));
    }

    #[test]
    fn a_suite_on_several_cpus_gets_a_table_per_event_and_a_column_per_cpu() {
        let res = bench_log(
            &[
                ("a", 0, "uniform"),
                ("b", 0, "uniform"),
                ("a", 1, "uniform"),
                ("b", 1, "uniform"),
                ("a", 3, "uniform"),
            ],
            false,
        );
        assert_eq!(res.benchmarks.len(), 5);
        let s = summary(&res);
        assert!(
            s.starts_with(" Summary of 2 benchmarks on 3 CPUs: median per iteration"),
            "{s}"
        );
        assert!(
            s.contains(
                "\n tsc         cpu 0         cpu 1         cpu 3\n a    2.000 ±0.00%  2.000 ±0.00%  2.000 ±0.00%\n b    2.000 ±0.00%  2.000 ±0.00%             -\n"
            ),
            "{s}"
        );
        let detail = render(&res, true);
        assert!(
            detail.contains("for 'a' on cpu 0 (10 iterations"),
            "{detail}"
        );
        assert!(
            detail.contains("for 'a' on cpu 3 (10 iterations"),
            "{detail}"
        );
        // On a hybrid part the heading names the core type.
        let res = bench_log(&[("a", 0, "core"), ("a", 2, "atom")], true);
        let s = summary(&res);
        assert!(s.contains("\n tsc  cpu 0 (core)  cpu 2 (atom)\n"), "{s}");
    }

    #[test]
    fn the_header_says_how_many_events_the_kernel_left_out() {
        let records = crate::records::records_of_log(
            r#"{"type":"bench_start","v":1,"payload":"p","bench":"b","iterations":10,"reps":3,"warmup":1,"overhead":"none","groups":2,"events":["A.B","C.D"],"events_total":285}"#,
        );
        let res = Results::from_records(&records);
        assert_eq!(res.config.events_total, Some(285));
        let h = header(&res);
        assert!(
            h.contains("events: tsc, A.B, C.D (+283 more below) (2 groups, measured in turn)"),
            "{h}"
        );
        // All of them listed (or an older kernel that did not say): nothing added.
        for tail in [r#""events_total":2}"#, "}"] {
            let line = format!(
                r#"{{"type":"bench_start","v":1,"payload":"p","bench":"b","iterations":10,"reps":3,"warmup":1,"overhead":"none","groups":1,"events":["A.B","C.D"]{}"#,
                if tail == "}" {
                    "}".to_string()
                } else {
                    format!(",{tail}")
                }
            );
            let res = Results::from_records(&crate::records::records_of_log(&line));
            assert!(
                header(&res).contains("events: tsc, A.B, C.D\n"),
                "{}",
                header(&res)
            );
        }
    }

    #[test]
    fn long_lists_wrap_under_the_first_item() {
        let items: Vec<String> = ["tsc", "instructions", "cycles", "(2 groups)"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            wrap("  events: ", &items, 100),
            "  events: tsc, instructions, cycles (2 groups)\n"
        );
        assert_eq!(
            wrap("  events: ", &items, 30),
            "  events: tsc, instructions,\n          cycles (2 groups)\n"
        );
    }

    #[test]
    fn the_spread_is_a_percentage_of_the_mean() {
        assert_eq!(pct(0.5, 100.0), "0.50%");
        assert_eq!(pct(0.0, 0.0), "0.00%");
        assert_eq!(pct(1.0, 0.0), "-");
    }
}

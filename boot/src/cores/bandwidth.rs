//! Bandwidth as cores are added, and loaded latency (`bandwidth` payload): tables, the two
//! line charts, JSON (`baremark-bandwidth/1`) and CSV.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::{TimeUnit, cpu_name, list, num, num_list, reports, triple, uncounted, val};
use crate::numbers;
use crate::records::Record;
use crate::results::Results;

/// What the run measured (the `bw_setup` report).
#[derive(Clone, Debug, PartialEq)]
pub struct Setup {
    pub cpus: Vec<usize>,
    /// Each core's buffer.
    pub bytes: u64,
    pub passes: u64,
    pub reps: u64,
    pub kernels: Vec<String>,
    pub loaded: bool,
    pub loads: u64,
    pub events: Vec<String>,
    pub counters: String,
}

/// One CPU's window, median/min/max over the repetitions.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub cpu: usize,
    pub ticks: (u64, u64, u64),
    /// Per event (`None`: not counted on that CPU).
    pub counts: Vec<Option<(u64, u64, u64)>>,
    /// The data checked out after every window (bytes moved are bytes moved).
    pub ok: bool,
}

/// `kernel` on `cores` cores at once: each core's window; `bytes` each core moved.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub kernel: String,
    pub cores: usize,
    pub bytes: u64,
    pub windows: Vec<Window>,
}

/// The chase with `streamers` others streaming.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub streamers: usize,
    pub chase: Window,
    pub streams: Vec<Window>,
    pub bytes_per_pass: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Bandwidth {
    pub setup: Setup,
    pub steps: Vec<Step>,
    pub loaded: Vec<Loaded>,
    pub unit: TimeUnit,
    pub cpu_name: String,
    pub done: bool,
}

fn window(r: &Record, events: usize, uncounted: &[usize]) -> Result<Window> {
    let cpu = num(r, "cpu")? as usize;
    let counts = (0..events)
        .map(|e| {
            if uncounted.contains(&cpu) {
                return Ok(None);
            }
            val(r, &format!("e.{e}")).map(triple).transpose()
        })
        .collect::<Result<_>>()?;
    Ok(Window {
        cpu,
        ticks: triple(val(r, "tsc").context("a report lacks `tsc`")?)?,
        counts,
        ok: val(r, "ok") == Some("1"),
    })
}

impl Bandwidth {
    /// The run in `records` (the first `bandwidth` task's reports); `Ok(None)` without one.
    pub fn from_records(records: &[Record]) -> Result<Option<Bandwidth>> {
        let mut setup: Option<Setup> = None;
        let mut steps: Vec<Step> = Vec::new();
        let mut loaded: Vec<Loaded> = Vec::new();
        let mut done = false;
        for r in reports(records, "bandwidth") {
            if let Some(e) = val(r, "bw_error") {
                bail!("the bandwidth payload refused its arguments: {e}");
            }
            if val(r, "bw_setup").is_some() {
                setup = Some(parse_setup(r)?);
                continue;
            }
            if val(r, "bw_done").is_some() {
                done = true;
                continue;
            }
            let s = setup
                .as_ref()
                .context("a bandwidth report before the bw_setup report")?;
            let uncounted = uncounted(&s.counters);
            let ctx = || format!("reading the bandwidth report {}", r.get("values"));
            if let Some(kernel) = val(r, "bw") {
                let cores = num(r, "cores").with_context(ctx)? as usize;
                let w = window(r, s.events.len(), &uncounted).with_context(ctx)?;
                let bytes = num(r, "bytes").with_context(ctx)?;
                match steps
                    .iter_mut()
                    .find(|st| st.kernel == kernel && st.cores == cores)
                {
                    Some(st) => st.windows.push(w),
                    None => steps.push(Step {
                        kernel: kernel.to_string(),
                        cores,
                        bytes,
                        windows: vec![w],
                    }),
                }
            } else if let Some(kind) = val(r, "ll") {
                let k = num(r, "streamers").with_context(ctx)? as usize;
                let w = window(r, s.events.len(), &uncounted).with_context(ctx)?;
                if kind == "chase" {
                    loaded.push(Loaded {
                        streamers: k,
                        chase: w,
                        streams: Vec::new(),
                        bytes_per_pass: 0,
                    });
                } else {
                    let l = loaded
                        .iter_mut()
                        .find(|l| l.streamers == k)
                        .context("a loaded-latency stream report before its chase")?;
                    l.bytes_per_pass = num(r, "bytes_per_pass").with_context(ctx)?;
                    l.streams.push(w);
                }
            }
        }
        let Some(setup) = setup else {
            return Ok(None);
        };
        let res = Results::from_records(records);
        Ok(Some(Bandwidth {
            setup,
            steps,
            loaded,
            unit: TimeUnit::of(&res.machine),
            cpu_name: cpu_name(&res),
            done,
        }))
    }

    /// The rate of `bytes` in `ticks`: GB/s with a TSC frequency, else bytes per tick.
    pub fn rate(&self, bytes: u64, ticks: f64) -> f64 {
        match self.unit.seconds(ticks) {
            Some(s) if s > 0.0 => bytes as f64 / s / 1e9,
            _ if ticks > 0.0 => bytes as f64 / ticks,
            _ => f64::NAN,
        }
    }

    pub fn rate_unit(&self) -> &'static str {
        if self.unit.seconds(1.0).is_some() {
            "GB/s"
        } else {
            "bytes per TSC tick"
        }
    }

    /// A step's total: every core's bytes over its own window (median), summed.
    pub fn step_rate(&self, st: &Step) -> f64 {
        st.windows
            .iter()
            .map(|w| self.rate(st.bytes, w.ticks.0 as f64))
            .sum()
    }

    /// The loaded chase's latency per load, in the time unit.
    pub fn latency(&self, l: &Loaded) -> f64 {
        self.unit
            .value(l.chase.ticks.0 as f64 / self.setup.loads.max(1) as f64)
    }

    fn step(&self, kernel: &str, cores: usize) -> Option<&Step> {
        self.steps
            .iter()
            .find(|s| s.kernel == kernel && s.cores == cores)
    }

    /// Steps (kernel, cores) with a window missing or data that did not check out.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for k in &self.setup.kernels {
            for n in 1..=self.setup.cpus.len() {
                match self.step(k, n) {
                    None => out.push(format!("{k} on {n} cores: no report")),
                    Some(st) if st.windows.len() < n.min(64) => {
                        out.push(format!("{k} on {n} cores: {} windows", st.windows.len()))
                    }
                    Some(st) => {
                        for w in st.windows.iter().filter(|w| !w.ok) {
                            out.push(format!(
                                "{k} on {n} cores: CPU {}'s data did not check out",
                                w.cpu
                            ));
                        }
                    }
                }
            }
        }
        if !self.done {
            out.push("the payload did not finish".into());
        }
        out
    }

    pub fn table(&self) -> String {
        let s = &self.setup;
        let mut out = String::new();
        let _ = writeln!(
            out,
            " Bandwidth as cores are added on {}: each core's bytes over its own window (median of \
             {} repetitions), summed over the cores, in {}; {} per core per window (its own \
             buffer, {} pass{}), 8-byte loads and stores{}",
            self.cpu_name,
            s.reps,
            self.rate_unit(),
            numbers::count(s.bytes * s.passes),
            s.passes,
            if s.passes == 1 { "" } else { "es" },
            self.unit.label()
        );
        let _ = write!(out, "\n {:>6}", "cores");
        for k in &s.kernels {
            let _ = write!(out, " {:>14}", k);
        }
        for k in &s.kernels {
            let _ = write!(out, " {:>22}", format!("{k} per core min-max"));
        }
        out.push('\n');
        for n in 1..=s.cpus.len() {
            let _ = write!(out, " {n:>6}");
            for k in &s.kernels {
                let cell = self
                    .step(k, n)
                    .map_or("missing".into(), |st| numbers::num(self.step_rate(st)));
                let _ = write!(out, " {cell:>14}");
            }
            for k in &s.kernels {
                let cell = self.step(k, n).map_or("missing".into(), |st| {
                    let rates: Vec<f64> = st
                        .windows
                        .iter()
                        .map(|w| self.rate(st.bytes, w.ticks.0 as f64))
                        .collect();
                    let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = rates.iter().copied().fold(0.0, f64::max);
                    format!("{} - {}", numbers::num(lo), numbers::num(hi))
                });
                let _ = write!(out, " {cell:>22}");
            }
            out.push('\n');
        }
        if !s.events.is_empty() {
            let _ = writeln!(
                out,
                "\n Each core's counts per 64-byte line moved (median; CPU {}, the first, on 1 core)",
                s.cpus.first().copied().unwrap_or(0)
            );
            for k in &s.kernels {
                if let Some(st) = self.step(k, 1) {
                    let lines = (st.bytes / 64).max(1) as f64;
                    let cells: Vec<String> = s
                        .events
                        .iter()
                        .zip(&st.windows[0].counts)
                        .map(|(e, c)| match c {
                            Some((m, ..)) => format!("{e} {}", numbers::num(*m as f64 / lines)),
                            None => format!("{e} <not supported>"),
                        })
                        .collect();
                    let _ = writeln!(out, " {k:>6}: {}", cells.join(", "));
                }
            }
        }
        if !self.loaded.is_empty() {
            let _ = writeln!(
                out,
                "\n Loaded latency: a pointer chase ({} dependent loads through a random cycle of 8 MiB) on CPU {} while k others stream (read)\n",
                numbers::count(s.loads),
                s.cpus.first().copied().unwrap_or(0)
            );
            let ev = s.events.first().cloned().unwrap_or_default();
            let _ = writeln!(
                out,
                " {:>9} {:>18} {:>24} {:>22}",
                "streamers",
                format!("latency {}/load", self.unit.name()),
                if ev.is_empty() {
                    "-".into()
                } else {
                    format!("{ev} per load")
                },
                format!("streamers' {}", self.rate_unit())
            );
            for l in &self.loaded {
                let per = match l.chase.counts.first() {
                    Some(Some((m, ..))) => numbers::num(*m as f64 / s.loads.max(1) as f64),
                    Some(None) => "<not supported>".into(),
                    None => "-".into(),
                };
                // A streamer's ticks are per pass over its buffer.
                let streamed: f64 = l
                    .streams
                    .iter()
                    .map(|w| self.rate(l.bytes_per_pass, w.ticks.0 as f64))
                    .sum();
                let _ = writeln!(
                    out,
                    " {:>9} {:>18} {:>24} {:>22}",
                    l.streamers,
                    numbers::num(self.latency(l)),
                    per,
                    if l.streams.is_empty() {
                        "-".into()
                    } else {
                        numbers::num(streamed)
                    }
                );
            }
        }
        let problems = self.problems();
        if !problems.is_empty() {
            let _ = writeln!(out, "\n PROBLEM  {}", problems.join("; "));
        }
        if s.counters != "ok" {
            let _ = writeln!(
                out,
                "   <not supported>: the counters of CPU:ERROR {} (counters_configure)",
                s.counters
            );
        }
        out
    }

    /// The bandwidth chart: a line per kernel over the number of cores.
    pub fn svg(&self) -> String {
        let x: Vec<u64> = (1..=self.setup.cpus.len() as u64).collect();
        let series: Vec<(String, Vec<Option<f64>>)> = self
            .setup
            .kernels
            .iter()
            .map(|k| {
                (
                    k.clone(),
                    x.iter()
                        .map(|&n| self.step(k, n as usize).map(|st| self.step_rate(st)))
                        .collect(),
                )
            })
            .collect();
        super::svg::lines(
            &format!(
                "Bandwidth as cores are added, {}{}",
                self.cpu_name,
                if self.unit.emulated {
                    " [emulated]"
                } else {
                    ""
                }
            ),
            "cores streaming together",
            self.rate_unit(),
            &x,
            &series,
        )
    }

    /// The loaded-latency chart: latency over the number of streamers.
    pub fn loaded_svg(&self) -> String {
        let x: Vec<u64> = self.loaded.iter().map(|l| l.streamers as u64).collect();
        let ys = self.loaded.iter().map(|l| Some(self.latency(l))).collect();
        super::svg::lines(
            &format!(
                "Loaded latency, {}{}",
                self.cpu_name,
                if self.unit.emulated {
                    " [emulated]"
                } else {
                    ""
                }
            ),
            "cores streaming",
            &format!("{} per load", self.unit.name()),
            &x,
            &[("chase latency".to_string(), ys)],
        )
    }

    pub fn json(&self) -> Value {
        let s = &self.setup;
        let win = |w: &Window, bytes: u64| {
            json!({
                "cpu": w.cpu,
                "ticks": {"median": w.ticks.0, "min": w.ticks.1, "max": w.ticks.2},
                "rate": self.rate(bytes, w.ticks.0 as f64),
                "checked": w.ok,
                "counts": s.events.iter().zip(&w.counts).map(|(e, c)| (e.clone(), match c {
                    Some((m, lo, hi)) => json!({"median": m, "min": lo, "max": hi}),
                    None => json!("not supported"),
                })).collect::<serde_json::Map<_, _>>(),
            })
        };
        json!({
            "schema": "baremark-bandwidth/1",
            "cpu": self.cpu_name,
            "emulated": self.unit.emulated,
            "tsc_hz": self.unit.tsc_hz,
            "rate_unit": self.rate_unit(),
            "latency_unit": self.unit.name(),
            "cpus": s.cpus, "bytes": s.bytes, "passes": s.passes, "reps": s.reps,
            "kernels": s.kernels, "loads": s.loads, "events": s.events,
            "complete": self.problems().is_empty(),
            "bandwidth": self.steps.iter().map(|st| json!({
                "kernel": st.kernel, "cores": st.cores, "bytes_per_core": st.bytes,
                "rate": self.step_rate(st),
                "windows": st.windows.iter().map(|w| win(w, st.bytes)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "loaded_latency": self.loaded.iter().map(|l| json!({
                "streamers": l.streamers,
                "latency": self.latency(l),
                "chase": win(&l.chase, 0),
                "streams": l.streams.iter().map(|w| win(w, l.bytes_per_pass)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    pub fn csv(&self) -> String {
        let s = &self.setup;
        let mut out = String::from(
            "what,kernel,cores,cpu,bytes,ticks_median,ticks_min,ticks_max,rate,checked",
        );
        for e in &s.events {
            let _ = write!(out, ",{e}");
        }
        out.push('\n');
        let row = |out: &mut String, what: &str, kernel: &str, n: usize, w: &Window, bytes: u64| {
            let _ = write!(
                out,
                "{what},{kernel},{n},{},{bytes},{},{},{},{},{}",
                w.cpu,
                w.ticks.0,
                w.ticks.1,
                w.ticks.2,
                self.rate(bytes, w.ticks.0 as f64),
                w.ok
            );
            for c in &w.counts {
                match c {
                    Some((m, ..)) => {
                        let _ = write!(out, ",{m}");
                    }
                    None => out.push_str(",not supported"),
                }
            }
            out.push('\n');
        };
        for st in &self.steps {
            for w in &st.windows {
                row(&mut out, "bandwidth", &st.kernel, st.cores, w, st.bytes);
            }
        }
        for l in &self.loaded {
            row(&mut out, "chase", "chase", l.streamers, &l.chase, 0);
            for w in &l.streams {
                row(&mut out, "stream", "read", l.streamers, w, l.bytes_per_pass);
            }
        }
        out
    }
}

fn parse_setup(r: &Record) -> Result<Setup> {
    let list = |k: &str| list(r, k);
    Ok(Setup {
        cpus: num_list(r, "cpus")?
            .into_iter()
            .map(|c| c as usize)
            .collect(),
        bytes: num(r, "bytes")?,
        passes: num(r, "passes")?,
        reps: num(r, "reps")?,
        kernels: list("kernels"),
        loaded: val(r, "loaded") == Some("on"),
        loads: num(r, "loads")?,
        events: list("events"),
        counters: val(r, "counters").unwrap_or("ok").to_string(),
    })
}

//! Core-to-core latency (`c2c` payload): the matrix of one-way latencies for every ordered
//! pair, per variant (`cas`, `rw`), with each side's counters; as a table like
//! nviennot/core-to-core-latency's, a heatmap SVG, JSON (`baremark-c2c/1`) and CSV.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::{TimeUnit, cpu_name, list, median, num, num_list, reports, triple, uncounted, val};
use crate::numbers;
use crate::records::Record;
use crate::results::Results;

/// What the run measured (the `c2c_setup` report).
#[derive(Clone, Debug, PartialEq)]
pub struct Setup {
    pub cpus: Vec<usize>,
    pub rounds: u64,
    pub warmup: u64,
    pub reps: u64,
    pub spin: String,
    pub variants: Vec<String>,
    pub events: Vec<String>,
    /// `ok`, or `CPU:ERROR,...` for the CPUs whose counters could not count the events.
    pub counters: String,
    /// On a hybrid part, each CPU's core type (`core`, `atom`), in the order of `cpus`.
    pub core_types: Vec<String>,
}

/// One ordered pair in one variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub variant: String,
    pub from: usize,
    pub to: usize,
    /// Per repetition: `from`'s TSC ticks for `rounds` round trips.
    pub tsc: Vec<u64>,
    /// Per event: median/min/max over the repetitions, of `from`'s and `to`'s counts of
    /// `rounds` round trips (`None`: that side's counters did not count).
    pub from_counts: Vec<Option<(u64, u64, u64)>>,
    pub to_counts: Vec<Option<(u64, u64, u64)>>,
}

/// A core-to-core run.
#[derive(Clone, Debug, PartialEq)]
pub struct C2c {
    pub setup: Setup,
    pub pairs: Vec<Pair>,
    pub unit: TimeUnit,
    /// The machine, as the report names it.
    pub cpu_name: String,
    /// The payload reported its end (`c2c_done`); false: the run was cut short.
    pub done: bool,
}

impl C2c {
    /// The run in `records` (the first `c2c` task's reports); `Ok(None)` when there is none.
    /// The payload's own error (`c2c_error`) is an error with its text.
    pub fn from_records(records: &[Record]) -> Result<Option<C2c>> {
        let mut setup = None;
        let mut pairs = Vec::new();
        let mut done = false;
        for r in reports(records, "c2c") {
            if let Some(e) = val(r, "c2c_error") {
                bail!("the c2c payload refused its arguments: {e}");
            }
            if val(r, "c2c_setup").is_some() {
                setup = Some(parse_setup(r)?);
            } else if val(r, "c2c").is_some() {
                let s = setup
                    .as_ref()
                    .context("a c2c pair report before the c2c_setup report")?;
                pairs.push(
                    parse_pair(r, s.events.len())
                        .with_context(|| format!("reading the c2c report {}", r.get("values")))?,
                );
            } else if val(r, "c2c_done").is_some() {
                done = true;
            }
        }
        let Some(setup) = setup else {
            return Ok(None);
        };
        // A side whose counters could not count: "not supported", never its reads of 0.
        let uncounted = setup.uncounted();
        for p in &mut pairs {
            if uncounted.contains(&p.from) {
                p.from_counts.iter_mut().for_each(|v| *v = None);
            }
            if uncounted.contains(&p.to) {
                p.to_counts.iter_mut().for_each(|v| *v = None);
            }
        }
        let res = Results::from_records(records);
        Ok(Some(C2c {
            setup,
            pairs,
            unit: TimeUnit::of(&res.machine),
            cpu_name: cpu_name(&res),
            done,
        }))
    }

    /// One-way latency of a pair in the time unit: (median, min, max) over the repetitions of
    /// round trip / 2.
    pub fn one_way(&self, p: &Pair) -> (f64, f64, f64) {
        let per = |t: f64| self.unit.value(t / (2.0 * self.setup.rounds as f64));
        let min = p.tsc.iter().copied().min().unwrap_or(0) as f64;
        let max = p.tsc.iter().copied().max().unwrap_or(0) as f64;
        (per(median(&p.tsc)), per(min), per(max))
    }

    fn pair(&self, variant: &str, from: usize, to: usize) -> Option<&Pair> {
        self.pairs
            .iter()
            .find(|p| p.variant == variant && p.from == from && p.to == to)
    }

    /// The ordered pairs of the setup's CPUs that have no report.
    pub fn missing(&self) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        for v in &self.setup.variants {
            for &a in &self.setup.cpus {
                for &b in self.setup.cpus.iter().filter(|&&b| b != a) {
                    if self.pair(v, a, b).is_none() {
                        out.push((v.clone(), a, b));
                    }
                }
            }
        }
        out
    }

    /// The tables: per variant the matrix (rows `from`, columns `to`) and its summary, then
    /// every pair with each side's counters per round trip.
    pub fn table(&self) -> String {
        let s = &self.setup;
        let mut out = String::new();
        let _ = writeln!(
            out,
            " Core-to-core latency on {}: one-way = round trip / 2, in {}; median of {} \
             repetitions of {} round trips after {} warm-up; waits: {}{}",
            self.cpu_name,
            self.unit.name(),
            s.reps,
            s.rounds,
            s.warmup,
            s.spin,
            self.unit.label()
        );
        for v in &s.variants {
            let what = match v.as_str() {
                "cas" => "cas: one line, each side compare-and-swaps it in turn",
                _ => "rw: two lines, each written by one side and read by the other",
            };
            let _ = writeln!(out, "\n {what}\n");
            let w = 9;
            let _ = write!(out, " {:>8}", "from\\to");
            for b in &s.cpus {
                let _ = write!(out, "{:>w$}", b);
            }
            out.push('\n');
            let mut all: Vec<(f64, usize, usize, f64)> = Vec::new();
            for &a in &s.cpus {
                let _ = write!(out, " {a:>8}");
                for &b in &s.cpus {
                    let cell = if a == b {
                        "-".to_string()
                    } else if let Some(p) = self.pair(v, a, b) {
                        let (m, lo, hi) = self.one_way(p);
                        all.push((m, a, b, if m > 0.0 { (hi - lo) / m } else { 0.0 }));
                        numbers::num(m)
                    } else {
                        "missing".to_string()
                    };
                    let _ = write!(out, "{cell:>w$}");
                }
                out.push('\n');
            }
            if !s.core_types.is_empty() {
                let _ = writeln!(
                    out,
                    " core types: {}",
                    s.cpus
                        .iter()
                        .zip(&s.core_types)
                        .map(|(c, t)| format!("{c} {t}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            if !all.is_empty() {
                let lo = all.iter().min_by(|x, y| x.0.total_cmp(&y.0)).unwrap();
                let hi = all.iter().max_by(|x, y| x.0.total_cmp(&y.0)).unwrap();
                let mut ms: Vec<f64> = all.iter().map(|x| x.0).collect();
                ms.sort_by(f64::total_cmp);
                let spread = all.iter().map(|x| x.3).fold(0.0, f64::max);
                let _ = writeln!(
                    out,
                    "\n min {} ({}->{}), median {}, max {} ({}->{}) {}; repetitions spread \
                     (max-min)/median at most {:.2}%",
                    numbers::num(lo.0),
                    lo.1,
                    lo.2,
                    numbers::num(ms[ms.len() / 2]),
                    numbers::num(hi.0),
                    hi.1,
                    hi.2,
                    self.unit.name(),
                    spread * 100.0
                );
            }
        }
        if !s.events.is_empty() {
            let _ = writeln!(
                out,
                "\n Each side's counters per round trip (median over the repetitions; its own \
                 CPU's counters)\n"
            );
            let _ = write!(out, " {:<6} {:<9}", "pair", "variant");
            for side in ["from", "to"] {
                for e in &s.events {
                    let _ = write!(out, " {:>20}", format!("{side} {e}"));
                }
            }
            out.push('\n');
            // Past 48 rows the table would bury the matrix: the JSON and CSV carry every pair.
            let shown = if self.pairs.len() > 48 {
                0
            } else {
                self.pairs.len()
            };
            if shown == 0 {
                let _ = writeln!(
                    out,
                    " ({} pairs: every pair is in --json and --csv; here min / median / max \
                     over the pairs)",
                    self.pairs.len()
                );
                for v in &s.variants {
                    let _ = write!(out, " {:<6} {v:<9}", "all");
                    for side in [0, 1] {
                        for e in 0..s.events.len() {
                            let mut per: Vec<f64> = self
                                .pairs
                                .iter()
                                .filter(|p| &p.variant == v)
                                .filter_map(|p| {
                                    let c = if side == 0 {
                                        &p.from_counts
                                    } else {
                                        &p.to_counts
                                    };
                                    c[e].map(|(m, ..)| m as f64 / s.rounds as f64)
                                })
                                .collect();
                            per.sort_by(f64::total_cmp);
                            let cell = match (per.first(), per.last()) {
                                (Some(lo), Some(hi)) => format!(
                                    "{}/{}/{}",
                                    numbers::num(*lo),
                                    numbers::num(per[per.len() / 2]),
                                    numbers::num(*hi)
                                ),
                                _ => "<not supported>".into(),
                            };
                            let _ = write!(out, " {cell:>20}");
                        }
                    }
                    out.push('\n');
                }
            }
            for p in &self.pairs[..shown] {
                let _ = write!(
                    out,
                    " {:<6} {:<9}",
                    format!("{}->{}", p.from, p.to),
                    p.variant
                );
                for counts in [&p.from_counts, &p.to_counts] {
                    for c in counts {
                        let cell = match c {
                            Some((m, ..)) => numbers::num(*m as f64 / s.rounds as f64),
                            None => "<not supported>".to_string(),
                        };
                        let _ = write!(out, " {cell:>20}");
                    }
                }
                out.push('\n');
            }
            if s.counters != "ok" {
                let _ = writeln!(
                    out,
                    "   <not supported>: the counters of CPU:ERROR {} (counters_configure)",
                    s.counters
                );
            }
        }
        let missing = self.missing();
        if !missing.is_empty() {
            let _ = writeln!(
                out,
                "\n MISSING  {} pairs have no report{}: {}",
                missing.len(),
                if self.done {
                    ""
                } else {
                    " (the payload did not finish)"
                },
                missing
                    .iter()
                    .take(8)
                    .map(|(v, a, b)| format!("{v} {a}->{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        out
    }

    /// The heatmap of one variant: a cell per ordered pair, coloured by its one-way latency,
    /// with the value written in it.
    pub fn heatmap(&self, variant: &str) -> String {
        let cpus = &self.setup.cpus;
        let cells: Vec<Vec<Option<f64>>> = cpus
            .iter()
            .map(|&a| {
                cpus.iter()
                    .map(|&b| self.pair(variant, a, b).map(|p| self.one_way(p).0))
                    .collect()
            })
            .collect();
        // On a hybrid part the labels name the core type: `2 atom`.
        let labels: Vec<String> = cpus
            .iter()
            .enumerate()
            .map(|(i, c)| match self.setup.core_types.get(i) {
                Some(t) => format!("{c} {t}"),
                None => c.to_string(),
            })
            .collect();
        super::svg::heatmap(
            &format!(
                "Core-to-core latency ({variant}), one-way {}, {}{}",
                self.unit.name(),
                self.cpu_name,
                if self.unit.emulated {
                    " [emulated]"
                } else {
                    ""
                }
            ),
            "from CPU",
            "to CPU",
            &labels,
            &cells,
        )
    }

    /// JSON `baremark-c2c/1` (docs/cores.md).
    pub fn json(&self) -> Value {
        let s = &self.setup;
        let side = |c: &[Option<(u64, u64, u64)>]| -> Value {
            s.events
                .iter()
                .zip(c)
                .map(|(e, v)| {
                    (
                        e.clone(),
                        match v {
                            Some((m, lo, hi)) => json!({"median": m, "min": lo, "max": hi}),
                            None => json!("not supported"),
                        },
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        json!({
            "schema": "baremark-c2c/1",
            "cpu": self.cpu_name,
            "emulated": self.unit.emulated,
            "tsc_hz": self.unit.tsc_hz,
            "unit": self.unit.name(),
            "cpus": s.cpus,
            "rounds": s.rounds,
            "warmup": s.warmup,
            "reps": s.reps,
            "spin": s.spin,
            "events": s.events,
            "core_types": s.core_types,
            "complete": self.done && self.missing().is_empty(),
            "pairs": self.pairs.iter().map(|p| {
                let (m, lo, hi) = self.one_way(p);
                json!({
                    "variant": p.variant, "from": p.from, "to": p.to,
                    "one_way": {"median": m, "min": lo, "max": hi},
                    "round_trip_tsc": p.tsc,
                    "from_counts": side(&p.from_counts),
                    "to_counts": side(&p.to_counts),
                })
            }).collect::<Vec<_>>(),
        })
    }

    /// CSV: a row per pair and variant.
    pub fn csv(&self) -> String {
        let s = &self.setup;
        let u = self.unit.name().replace(' ', "_");
        let mut out = format!("variant,from,to,one_way_{u}_median,one_way_{u}_min,one_way_{u}_max");
        for side in ["from", "to"] {
            for e in &s.events {
                let _ = write!(out, ",{side} {e} per round trip");
            }
        }
        out.push('\n');
        for p in &self.pairs {
            let (m, lo, hi) = self.one_way(p);
            let _ = write!(out, "{},{},{},{m},{lo},{hi}", p.variant, p.from, p.to);
            for c in [&p.from_counts, &p.to_counts] {
                for v in c {
                    match v {
                        Some((med, ..)) => {
                            let _ = write!(out, ",{}", *med as f64 / s.rounds as f64);
                        }
                        None => out.push_str(",not supported"),
                    }
                }
            }
            out.push('\n');
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
        rounds: num(r, "rounds")?,
        warmup: num(r, "warmup")?,
        reps: num(r, "reps")?,
        spin: val(r, "spin").unwrap_or("?").to_string(),
        variants: list("variants"),
        events: list("events"),
        counters: val(r, "counters").unwrap_or("ok").to_string(),
        core_types: val(r, "core_types")
            .map(|t| t.split(',').map(core_type_name).collect())
            .unwrap_or_default(),
    })
}

/// CPUID.1AH's core type byte by name.
fn core_type_name(code: &str) -> String {
    match code {
        "0x40" => "core".into(),
        "0x20" => "atom".into(),
        other => format!("type {other}"),
    }
}

fn parse_pair(r: &Record, events: usize) -> Result<Pair> {
    let counts = |side: &str| -> Result<Vec<Option<(u64, u64, u64)>>> {
        (0..events)
            .map(|e| val(r, &format!("{side}.{e}")).map(triple).transpose())
            .collect()
    };
    Ok(Pair {
        variant: val(r, "c2c").unwrap_or("").to_string(),
        from: num(r, "from")? as usize,
        to: num(r, "to")? as usize,
        tsc: num_list(r, "tsc")?,
        from_counts: counts("from")?,
        to_counts: counts("to")?,
    })
}

impl Setup {
    /// The CPUs whose counters could not count the events (`counters=CPU:ERROR,...`).
    pub fn uncounted(&self) -> Vec<usize> {
        uncounted(&self.counters)
    }
}

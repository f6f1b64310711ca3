//! Measuring across cores (docs/cores.md): the `c2c` and `bandwidth` payloads' reports made
//! into tables, SVG charts, JSON and CSV, from a live run (`baremark c2c`, `baremark
//! bandwidth`) or a saved log (`report`).
//!
//! The payloads report `key=value` lines (the kernel's `report` records); what each key means
//! is in docs/cores.md. A report this module cannot read is an error naming it, never a guess.

pub mod bandwidth;
pub mod c2c;
pub mod cli;
mod svg;

use anyhow::{Context, Result, bail};

use crate::records::Record;
use crate::results::Machine;

/// The `values` of the `report` records of task `task`, in order.
fn reports<'a>(records: &'a [Record], task: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
    records
        .iter()
        .filter(move |r| r.kind == "report" && r.str("task") == Some(task))
}

/// A report's value for `key`, as text.
fn val<'a>(r: &'a Record, key: &str) -> Option<&'a str> {
    r.get("values").get(key).and_then(|v| v.as_str())
}

/// A report's value for `key`, as a number; an error names the report and the key.
fn num(r: &Record, key: &str) -> Result<u64> {
    let v = val(r, key).with_context(|| format!("a report lacks `{key}`"))?;
    v.parse()
        .with_context(|| format!("`{key}={v}` is not a whole number"))
}

/// A comma-separated list of numbers.
fn num_list(r: &Record, key: &str) -> Result<Vec<u64>> {
    let v = val(r, key).with_context(|| format!("a report lacks `{key}`"))?;
    v.split(',')
        .map(|x| {
            x.parse()
                .with_context(|| format!("`{key}={v}`: `{x}` is not a whole number"))
        })
        .collect()
}

/// A comma-separated list of words (empty when the key is missing).
fn list(r: &Record, key: &str) -> Vec<String> {
    val(r, key)
        .unwrap_or("")
        .split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// The CPUs a setup's `counters=CPU:ERROR,...` names (none for `ok`): their counters could not
/// count the events, so their counts are "not supported", never the zeros they read.
fn uncounted(counters: &str) -> Vec<usize> {
    if counters == "ok" {
        return Vec::new();
    }
    counters
        .split(',')
        .filter_map(|x| x.split_once(':')?.0.parse().ok())
        .collect()
}

/// The machine as the tables name it: its brand string, else its perfmon-style name.
fn cpu_name(res: &crate::results::Results) -> String {
    res.machine
        .cpu_brand
        .clone()
        .or(res.machine.cpu.clone())
        .unwrap_or_else(|| "unknown CPU".into())
}

/// `median/min/max`.
fn triple(text: &str) -> Result<(u64, u64, u64)> {
    let mut it = text.split('/').map(str::parse::<u64>);
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(Ok(a)), Some(Ok(b)), Some(Ok(c)), None) => Ok((a, b, c)),
        _ => bail!("`{text}` is not median/min/max"),
    }
}

/// Median of a list (the mean of the middle two when even).
fn median(v: &[u64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2] as f64,
        n => (s[n / 2 - 1] as f64 + s[n / 2] as f64) / 2.0,
    }
}

/// How time is shown: nanoseconds when the TSC's frequency is known, else TSC ticks; and
/// whether the figures come from the emulated PMU (then the TSC counts instructions of every
/// CPU under `-icount`, and the figures are labelled `emulated`).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeUnit {
    pub tsc_hz: Option<u64>,
    pub emulated: bool,
}

impl TimeUnit {
    /// Nanoseconds from the TSC's frequency; on the emulated PMU TSC ticks, which count
    /// instructions there (a frequency would only restate them).
    pub fn of(m: &Machine) -> TimeUnit {
        TimeUnit {
            tsc_hz: m.tsc_hz.filter(|_| !m.pmu_emulated),
            emulated: m.pmu_emulated,
        }
    }

    /// `ticks` in the unit.
    pub fn value(&self, ticks: f64) -> f64 {
        match self.tsc_hz {
            Some(hz) if hz > 0 => ticks * 1e9 / hz as f64,
            _ => ticks,
        }
    }

    pub fn name(&self) -> &'static str {
        if self.tsc_hz.is_some_and(|hz| hz > 0) {
            "ns"
        } else {
            "TSC ticks"
        }
    }

    /// Seconds of `ticks`, when the frequency is known.
    pub fn seconds(&self, ticks: f64) -> Option<f64> {
        self.tsc_hz.filter(|&hz| hz > 0).map(|hz| ticks / hz as f64)
    }

    /// The label every figure carries under emulation.
    pub fn label(&self) -> &'static str {
        if self.emulated {
            " [emulated: under -icount the TSC counts the instructions of every CPU in turn]"
        } else {
            ""
        }
    }
}

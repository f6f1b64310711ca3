//! The results table of the final screen: a row per benchmark, a column per event counted in
//! any of them, the median per iteration in each cell (the harness's `result` records'
//! `per_iteration.median`, else `value.median`), as the host's summary table shows it.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// The medians collected during the run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    events: Vec<String>,
    benches: Vec<Bench>,
}

#[derive(Clone, Debug)]
struct Bench {
    name: String,
    /// Per event (same order as `Summary::events`); `None`: not counted.
    medians: Vec<Option<f64>>,
}

impl Summary {
    pub const fn new() -> Self {
        Self {
            events: Vec::new(),
            benches: Vec::new(),
        }
    }

    /// Records one result: `median` per iteration, `None` if the event was not counted.
    pub fn add(&mut self, bench: &str, event: &str, median: Option<f64>) {
        let e = match self.events.iter().position(|x| x == event) {
            Some(e) => e,
            None => {
                self.events.push(event.to_string());
                self.events.len() - 1
            }
        };
        let b = match self.benches.iter().position(|x| x.name == bench) {
            Some(b) => b,
            None => {
                self.benches.push(Bench {
                    name: bench.to_string(),
                    medians: Vec::new(),
                });
                self.benches.len() - 1
            }
        };
        let medians = &mut self.benches[b].medians;
        if medians.len() <= e {
            medians.resize(e + 1, None);
        }
        medians[e] = median;
    }

    /// Benchmarks seen.
    pub fn benchmarks(&self) -> usize {
        self.benches.len()
    }

    /// The table's lines (header first) for a screen `cols` wide. Events no benchmark counted
    /// get no column; columns that do not fit are left out and the last line says how many.
    pub fn table(&self, cols: usize) -> Vec<String> {
        const NAME: &str = "benchmark";
        let counted: Vec<usize> = (0..self.events.len())
            .filter(|&e| {
                self.benches
                    .iter()
                    .any(|b| b.medians.get(e).copied().flatten().is_some())
            })
            .collect();
        let cell = |b: &Bench, e: usize| match b.medians.get(e).copied().flatten() {
            Some(m) => format_median(m),
            None => String::from("-"),
        };
        // The name column never takes more than half the screen; longer names are cut.
        let name_w = self
            .benches
            .iter()
            .map(|b| b.name.chars().count())
            .chain([NAME.len()])
            .max()
            .unwrap_or(0)
            .min(cols / 2);
        let mut shown = Vec::new();
        let mut used = 1 + name_w;
        for &e in &counted {
            let w = self
                .benches
                .iter()
                .map(|b| cell(b, e).len())
                .chain([self.events[e].chars().count()])
                .max()
                .unwrap_or(1);
            if used + 2 + w > cols {
                break;
            }
            used += 2 + w;
            shown.push((e, w));
        }
        let line = |name: &str, cells: &mut dyn Iterator<Item = (String, usize)>| {
            let mut s = String::from(" ");
            s.extend(name.chars().take(name_w));
            for _ in name.chars().count()..name_w {
                s.push(' ');
            }
            for (c, w) in cells {
                s.push_str(&format!("  {c:>w$}"));
            }
            String::from(s.trim_end())
        };
        let mut lines = Vec::new();
        lines.push(line(
            NAME,
            &mut shown.iter().map(|&(e, w)| (self.events[e].clone(), w)),
        ));
        for b in &self.benches {
            lines.push(line(
                &b.name,
                &mut shown.iter().map(|&(e, w)| (cell(b, e), w)),
            ));
        }
        if shown.len() < counted.len() {
            lines.push(format!(
                " ({} more events do not fit: see the serial log)",
                counted.len() - shown.len()
            ));
        }
        lines
    }
}

/// A median as the screen shows it: about four significant digits, no exponent (the host's
/// summary table's rule, without digit grouping).
pub fn format_median(x: f64) -> String {
    if !x.is_finite() {
        return String::from("n/a");
    }
    let a = x.abs();
    // (`f64::fract` is not in core; below 100 000 an integer survives the round trip.)
    let whole = a < 100_000.0 && (a as u64) as f64 == a;
    let decimals = if a == 0.0 || (a >= 100.0 && whole) || a >= 100_000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else {
        4
    };
    let s = format!("{a:.decimals$}");
    // A negative value that rounds to zero shows as zero.
    if x < 0.0 && s.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("-{s}")
    } else {
        s
    }
}

//! System mode per CPU (docs/records.md `system_counts`, `system_cpu_counts`): a window's
//! per-CPU rows gathered, shown as `perf stat -a -A` shows them (a `CPUn` row each) and as
//! likwid's STAT table does (per event the Sum, Min, Max and Avg over the CPUs), and as
//! `perf stat -a -A`'s machine-format lines (the CPU first).

use crate::records::Record;

/// One CPU's row of a window.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuRow {
    pub cpu: u64,
    pub core_type: Option<String>,
    pub counts: Vec<u64>,
    pub stale: bool,
}

/// A `system_counts` record and its `system_cpu_counts` rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub scope: String,
    pub task: Option<String>,
    pub events: Vec<u64>,
    /// Per event, the sum over the CPUs (the record's `counts`).
    pub total: Vec<u64>,
    pub tsc: u64,
    /// The CPUs the total covers (the record's `cpus`); rows are expected for each.
    pub cpus: Vec<u64>,
    pub rows: Vec<CpuRow>,
}

fn u64s(r: &Record, key: &str) -> Vec<u64> {
    r.get(key)
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
        .unwrap_or_default()
}

impl Window {
    /// The window a `system_counts` record opens (`None` for another record).
    pub fn open(r: &Record) -> Option<Window> {
        (r.kind == "system_counts").then(|| Window {
            scope: r.str("scope").unwrap_or("run").to_string(),
            task: r.str("task").map(str::to_string),
            events: u64s(r, "events"),
            total: u64s(r, "counts"),
            tsc: r.u64("tsc").unwrap_or(0),
            cpus: u64s(r, "cpus"),
            rows: Vec::new(),
        })
    }

    /// Adds a `system_cpu_counts` row; false for another record.
    pub fn add(&mut self, r: &Record) -> bool {
        if r.kind != "system_cpu_counts" {
            return false;
        }
        self.rows.push(CpuRow {
            cpu: r.u64("cpu").unwrap_or(0),
            core_type: r.str("core_type").map(str::to_string),
            counts: u64s(r, "counts"),
            stale: r.get("stale").as_bool() == Some(true),
        });
        true
    }

    /// Every CPU the total covers has its row.
    pub fn complete(&self) -> bool {
        !self.cpus.is_empty() && self.rows.len() >= self.cpus.len()
    }

    /// Per event `(sum, min, max, avg)` over the rows (likwid's STAT columns).
    pub fn stats(&self) -> Vec<(u64, u64, u64, f64)> {
        (0..self.events.len())
            .map(|e| {
                let v: Vec<u64> = self
                    .rows
                    .iter()
                    .map(|r| r.counts.get(e).copied().unwrap_or(0))
                    .collect();
                let sum: u64 = v.iter().sum();
                let min = v.iter().copied().min().unwrap_or(0);
                let max = v.iter().copied().max().unwrap_or(0);
                let avg = if v.is_empty() {
                    0.0
                } else {
                    sum as f64 / v.len() as f64
                };
                (sum, min, max, avg)
            })
            .collect()
    }

    /// The per-CPU table and the STAT table; `name` names an event word.
    pub fn render(&self, name: impl Fn(u64) -> String) -> String {
        let names: Vec<String> = self.events.iter().map(|&w| name(w)).collect();
        let hybrid = self
            .rows
            .iter()
            .any(|r| r.core_type.as_deref().is_some_and(|t| t != "uniform"));
        let mut header = vec!["CPU".to_string()];
        if hybrid {
            header.push("core type".into());
        }
        header.extend(names.iter().cloned());
        let mut rows = vec![header];
        for r in &self.rows {
            let mut row = vec![format!("CPU{}{}", r.cpu, if r.stale { "*" } else { "" })];
            if hybrid {
                row.push(r.core_type.clone().unwrap_or_default());
            }
            row.extend(r.counts.iter().map(|c| c.to_string()));
            rows.push(row);
        }
        let mut out = format!(
            "system   {}: per CPU (perf stat -a -A)\n",
            self.task.as_deref().unwrap_or("the run")
        );
        out.push_str(&grid(&rows, 1 + usize::from(hybrid)));
        if self.rows.iter().any(|r| r.stale) {
            out.push_str("         * did not answer: its counts are those of its last read\n");
        }
        let mut stat = vec![vec![
            "STAT".to_string(),
            "Sum".into(),
            "Min".into(),
            "Max".into(),
            "Avg".into(),
        ]];
        for (name, (sum, min, max, avg)) in names.iter().zip(self.stats()) {
            stat.push(vec![
                name.clone(),
                sum.to_string(),
                min.to_string(),
                max.to_string(),
                format!("{avg:.2}"),
            ]);
        }
        out.push_str(&grid(&stat, 1));
        out
    }

    /// `perf stat -a -A` lines: per CPU and event `(cpu, count, event)`.
    pub fn perf_rows(&self, name: impl Fn(u64) -> String) -> Vec<(u64, u64, String)> {
        let names: Vec<String> = self.events.iter().map(|&w| name(w)).collect();
        self.rows
            .iter()
            .flat_map(|r| {
                names
                    .iter()
                    .enumerate()
                    .map(move |(e, n)| (r.cpu, r.counts.get(e).copied().unwrap_or(0), n.clone()))
            })
            .collect()
    }
}

/// Every window of `records`, with its rows.
pub fn windows<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    for r in records {
        if let Some(w) = Window::open(r) {
            out.push(w);
        } else if let Some(w) = out.last_mut() {
            w.add(r);
        }
    }
    out
}

/// Rows of cells, indented under a record's label: the first `left` columns left-aligned, the
/// others right-aligned.
fn grid(rows: &[Vec<String>], left: usize) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| {
                if c < left {
                    format!("{s:<w$}", w = widths[c])
                } else {
                    format!("{s:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str("         ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Line, parse_line};

    /// Names as the report gives them for the words of these tests.
    fn name(w: u64) -> String {
        match w {
            0x100c0 => "instructions:u".into(),
            0x200c0 => "instructions:k".into(),
            _ => format!("{w:#x}"),
        }
    }

    fn rec(s: &str) -> Record {
        match parse_line(s) {
            Line::Record(r) => r,
            Line::Text(t) => panic!("not a record: {t}"),
        }
    }

    fn run_window() -> Vec<Record> {
        let mut v = vec![rec(
            r#"{"type":"system_counts","v":1,"scope":"run","cpu":0,"task":null,"task_index":null,"generation":1,"same_generation":true,"events":[65728,131264],"counts":[60,1010],"tsc":9,"cpus":[0,1,2,3]}"#,
        )];
        for (cpu, u, k) in [(0, 0, 400), (1, 10, 200), (2, 20, 210), (3, 30, 200)] {
            v.push(rec(&format!(
                r#"{{"type":"system_cpu_counts","v":1,"scope":"run","task":null,"task_index":null,"cpu":{cpu},"core_type":"uniform","generation":1,"counts":[{u},{k}],"tsc":9,"stale":false}}"#
            )));
        }
        v
    }

    #[test]
    fn the_table_has_every_cpu_and_the_stat_row() {
        let w = windows(&run_window());
        assert_eq!(w.len(), 1);
        assert!(w[0].complete());
        let text = w[0].render(name);
        for cpu in 0..4 {
            assert!(text.contains(&format!("\n         CPU{cpu} ")), "{text}");
        }
        let stat = text
            .lines()
            .skip_while(|l| !l.contains("STAT"))
            .collect::<Vec<_>>();
        assert!(stat[0].contains("Sum") && stat[0].contains("Avg"), "{text}");
        // instructions:u: sum 60, min 0, max 30, avg 15; instructions:k: 1010, 200, 400, 252.5.
        let u: Vec<&str> = stat[1].split_whitespace().collect();
        assert_eq!(u, ["instructions:u", "60", "0", "30", "15.00"], "{text}");
        let k: Vec<&str> = stat[2].split_whitespace().collect();
        assert_eq!(
            k,
            ["instructions:k", "1010", "200", "400", "252.50"],
            "{text}"
        );
        // The record's total is the rows' sum.
        let sums: Vec<u64> = w[0].stats().iter().map(|s| s.0).collect();
        assert_eq!(sums, w[0].total);
    }

    #[test]
    fn perf_rows_name_the_cpu() {
        let w = windows(&run_window());
        let rows = w[0].perf_rows(name);
        assert_eq!(rows.len(), 8);
        assert_eq!(rows[2], (1, 10, "instructions:u".to_string()));
    }
}

//! The shared end of `run`, `report` and `count`: records -> [`Results`] -> the table and the
//! `--json`, `--csv` and `--plot` files, so every command writes the same bytes for the same
//! records.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::plot;
use crate::records::Record;
use crate::results::Results;

/// Where to write the results.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OutputArgs {
    /// Write the results as one JSON document (schema: docs/output-formats.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as CSV, one row per benchmark and event.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Plot the per-repetition virtual TSC of every benchmark as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Print every benchmark's own table (perf-stat style, with outliers and derived metrics)
    /// instead of the one-table summary shown for more than one benchmark.
    #[arg(long)]
    pub detail: bool,
}

impl OutputArgs {
    /// Checks the destinations before a run spends time: the folders exist, the plot is SVG.
    pub fn check(&self) -> Result<()> {
        for (flag, path) in [
            ("--json", &self.json),
            ("--csv", &self.csv),
            ("--plot", &self.plot),
        ] {
            let Some(path) = path else { continue };
            if path.is_dir() {
                bail!(
                    "{flag} {}: that is a folder; give a file name",
                    path.display()
                );
            }
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if let Some(parent) = parent
                && !parent.is_dir()
            {
                bail!(
                    "{flag} {}: the folder {} does not exist",
                    path.display(),
                    parent.display()
                );
            }
        }
        if let Some(plot) = &self.plot
            && !plot
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
        {
            bail!(
                "--plot {}: plots are written as SVG; give a file name ending in .svg",
                plot.display()
            );
        }
        Ok(())
    }

    pub fn any(&self) -> bool {
        self.json.is_some() || self.csv.is_some() || self.plot.is_some()
    }
}

fn write(path: &Path, text: &str, what: &str) -> Result<String> {
    std::fs::write(path, text)
        .with_context(|| format!("writing the {what} to {}", path.display()))?;
    Ok(format!("{what} written to {}", path.display()))
}

/// Writes the files asked for; returns one line per file written.
pub fn write_files(res: &Results, out: &OutputArgs) -> Result<Vec<String>> {
    let mut done = Vec::new();
    if let Some(path) = &out.json {
        done.push(write(path, &res.to_json(), "JSON results")?);
    }
    if let Some(path) = &out.csv {
        done.push(write(path, &res.to_csv()?, "CSV results")?);
    }
    if let Some(path) = &out.plot {
        done.push(write(path, &plot::svg(res)?, "plot")?);
    }
    Ok(done)
}

/// The results of `records`, or `None` when they hold no benchmark and no harness error (a
/// run without benchmark payloads: then there is no table to print).
pub fn results(records: &[Record]) -> Option<Results> {
    let res = Results::from_records(records);
    let relevant = !res.benchmarks.is_empty()
        || res.errors.iter().any(|e| e.kind == "harness_error")
        || records
            .iter()
            .any(|r| r.kind == "bench_start" || r.kind == "summary");
    relevant.then_some(res)
}

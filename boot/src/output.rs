//! The shared end of `run`, `report` and `count`: records -> [`Results`] -> the table, the
//! `--json`, `--csv` and `--plot` files and the perf-format output (`-x`, `-j`), so every
//! command writes the same bytes for the same records.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::perf_format::{self, Format};
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
    /// Print the results as `perf stat -x SEP` does: a line per benchmark and event, fields
    /// separated by SEP, in perf's order (docs/output-formats.md). They go to stdout and
    /// everything else to stderr, unless -o names a file.
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        value_parser = perf_format::parse_separator,
        conflicts_with = "json_output"
    )]
    pub field_separator: Option<String>,
    /// Print the results as `perf stat -j` does: a JSON object per benchmark and event, one a
    /// line (docs/output-formats.md). Like -x, on stdout unless -o names a file.
    #[arg(short = 'j', long = "json-output")]
    pub json_output: bool,
    /// Write the -x or -j output to FILE instead of stdout (which then shows the table as
    /// usual).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Checks the destinations before a run spends time: the folders exist, the plot is SVG.
    pub fn check(&self) -> Result<()> {
        if self.output.is_some() && self.perf_format().is_none() {
            bail!("-o/--output FILE takes the -x or -j output: add -x SEP or -j");
        }
        for (flag, path) in [
            ("--json", &self.json),
            ("--csv", &self.csv),
            ("--plot", &self.plot),
            ("--output", &self.output),
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

    /// Whether any file is asked for.
    pub fn any(&self) -> bool {
        self.json.is_some() || self.csv.is_some() || self.plot.is_some() || self.output.is_some()
    }

    /// The perf format asked for with -x or -j.
    pub fn perf_format(&self) -> Option<Format> {
        match (&self.field_separator, self.json_output) {
            (Some(sep), _) => Some(Format::Csv {
                separator: sep.clone(),
            }),
            (None, true) => Some(Format::JsonLines),
            (None, false) => None,
        }
    }

    /// Whether stdout carries the perf-format lines, and only them: -x or -j without -o. Then
    /// the text for people (report, table, outcome) goes to stderr, so a script reads stdout
    /// clean.
    pub fn perf_on_stdout(&self) -> bool {
        self.perf_format().is_some() && self.output.is_none()
    }

    /// Where text for people goes: stdout, or stderr when stdout carries the perf format.
    pub fn human(&self) -> Box<dyn std::io::Write> {
        if self.perf_on_stdout() {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        }
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
    if let (Some(path), Some(format)) = (&out.output, out.perf_format()) {
        let what = match format {
            Format::Csv { .. } => "perf-stat CSV",
            Format::JsonLines => "perf-stat JSON lines",
        };
        done.push(write(path, &perf_format::render(res, &format), what)?);
    }
    Ok(done)
}

/// Prints the perf-format lines on stdout when they go there (-x or -j without -o). A reader
/// that stopped early (`| head`) is not an error.
pub fn print_perf(res: &Results, out: &OutputArgs) {
    if let (true, Some(format)) = (out.perf_on_stdout(), out.perf_format()) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(perf_format::render(res, &format).as_bytes());
        let _ = stdout.flush();
    }
}

/// The results of `records`, or `None` when they hold no benchmark and no harness error (a
/// run without benchmark payloads: then there is no table to print).
pub fn results(records: &[Record]) -> Option<Results> {
    let res = Results::from_records(records);
    has_results(&res, records).then_some(res)
}

/// Whether `res`, from `records`, is worth a table: benchmarks, harness errors, a summary.
pub fn has_results(res: &Results, records: &[Record]) -> bool {
    !res.benchmarks.is_empty()
        || res
            .errors
            .iter()
            .any(|e| e.kind == "harness_error" || e.kind == "lost")
        || records
            .iter()
            .any(|r| r.kind == "bench_start" || r.kind == "summary")
}

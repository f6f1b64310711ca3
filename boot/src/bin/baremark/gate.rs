//! The CI gate's options (`run`, `report` and `check` share them) and its end of a command:
//! the checks, their text, the JUnit and Markdown files, `$GITHUB_STEP_SUMMARY`, baselines.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use baremark::expect::{self, Case, Evidence, Spec, baseline, report};
use baremark::records::Record;
use baremark::results::Results;

use super::note;

/// Exit status when the run itself went well but an expectation or the baseline failed.
pub const EXIT_EXPECTATION: u8 = 6;

#[derive(clap::Args, Debug, Default)]
pub struct GateArgs {
    /// Check the run against an expectations file (TOML, docs/expectations.md); exit with
    /// status 6 when a check fails (the kernel's own failure statuses come first).
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Compare with the baseline NAME (`--baseline-dir`/NAME.json): every benchmark and event
    /// of it must be there, unchanged on the emulated PMU, else within the tolerance.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Save this run's results as baseline NAME (after the checks).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// The folder of baselines (commit it with your repository).
    #[arg(long, value_name = "DIR", default_value = baseline::DEFAULT_DIR)]
    pub baseline_dir: PathBuf,
    /// On hardware: a significant change of a median beyond PCT percent fails the baseline.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub baseline_tolerance: f64,
    /// Write the checks as JUnit XML to FILE (a test case per check).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the checks as Markdown to FILE (also appended to `$GITHUB_STEP_SUMMARY` when that
    /// is set, as on GitHub Actions).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Print every check, not only the failures.
    #[arg(long)]
    pub show_passed: bool,
    /// Write an expectations file that holds this run as it is (`equals` for every counted
    /// event of every benchmark): for exact runs, to review and commit.
    #[arg(long, value_name = "FILE")]
    pub write_expect: Option<PathBuf>,
}

impl GateArgs {
    pub fn active(&self) -> bool {
        self.expect.is_some()
            || self.baseline.is_some()
            || self.save_baseline.is_some()
            || self.write_expect.is_some()
    }

    /// Checks what can be checked before anything boots: the expectations file parses, the
    /// baseline exists, the names are names.
    pub fn precheck(&self) -> Result<Option<Spec>> {
        if self.baseline_tolerance.is_nan() || self.baseline_tolerance < 0.0 {
            anyhow::bail!("--baseline-tolerance: a percentage of 0 or more");
        }
        if let Some(name) = &self.baseline {
            baseline::load(&self.baseline_dir, name)?;
        }
        if let Some(name) = &self.save_baseline {
            baseline::path(&self.baseline_dir, name)?;
        }
        self.expect.as_deref().map(Spec::load).transpose()
    }
}

/// What the gate reads.
pub struct Input<'a> {
    pub results: &'a Results,
    pub records: Option<&'a [Record]>,
    pub lines: Option<&'a [usize]>,
    pub source: String,
    pub json: Option<&'a Value>,
}

/// Runs the gate: prints the checks, writes the files; `Ok(true)` when every check passed (or
/// there were none).
pub fn finish(args: &GateArgs, input: &Input<'_>, human: &mut dyn Write) -> Result<bool> {
    if !args.active() {
        return Ok(true);
    }
    let spec = args.precheck()?;
    let base = match &args.baseline {
        Some(name) => Some((name, baseline::load(&args.baseline_dir, name)?)),
        None => None,
    };
    let ev = Evidence {
        results: input.results,
        records: input.records,
        lines: input.lines,
        source: input.source.clone(),
        json: input.json,
    };
    let mut cases: Vec<Case> = match &spec {
        Some(spec) => expect::evaluate(spec, &ev, base.as_ref().map(|(_, (_, r))| r)),
        None => Vec::new(),
    };
    if let Some((name, (b, _))) = &base {
        cases.extend(baseline::compare(
            b,
            name,
            input.results,
            args.baseline_tolerance,
            baremark::diff::DEFAULT_ALPHA,
        ));
    }
    let what = match (&args.expect, &args.baseline) {
        (Some(f), Some(b)) => format!("{} and baseline {b}", f.display()),
        (Some(f), None) => f.display().to_string(),
        (None, Some(b)) => format!("baseline {b}"),
        (None, None) => String::new(),
    };
    let passed = cases.iter().all(|c| c.passed);
    if !cases.is_empty() {
        let _ = writeln!(human, "\n{}", report::text(&cases, &what, args.show_passed));
    }
    let mut wrote = Vec::new();
    if let Some(path) = &args.junit {
        let stamp = timestamp();
        write(path, &report::junit(&cases, &input.source, &stamp))?;
        wrote.push(format!("wrote {}", path.display()));
    }
    let md = report::markdown(&cases, &input.source);
    if let Some(path) = &args.markdown {
        write(path, &md)?;
        wrote.push(format!("wrote {}", path.display()));
    }
    if !cases.is_empty()
        && let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY")
    {
        let path = Path::new(&summary);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("appending to $GITHUB_STEP_SUMMARY ({})", path.display()))?;
        f.write_all(md.as_bytes())?;
        wrote.push(format!("appended the checks to {}", path.display()));
    }
    if let Some(path) = &args.write_expect {
        write(path, &expect::expectations_of(input.results, &input.source))?;
        wrote.push(format!(
            "wrote the expectations of this run to {}",
            path.display()
        ));
    }
    if let Some(name) = &args.save_baseline {
        let p = baseline::save(input.results, &args.baseline_dir, name)?;
        wrote.push(format!("saved baseline {name} as {}", p.display()));
    }
    note(&wrote);
    Ok(passed)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Now as `2026-11-28T01:02:03` (UTC), for JUnit's `timestamp`.
fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The gate at the end of `run`: the records as they came; their lines from the saved log
/// (`--log`) when there is one, so a failure says where in it.
pub fn finish_run(
    args: &GateArgs,
    records: &[Record],
    log: Option<&Path>,
    human: &mut dyn Write,
) -> Result<bool> {
    if !args.active() {
        return Ok(true);
    }
    let mut res = Results::from_records(records);
    let scanned = log
        .and_then(|p| std::fs::read(p).ok())
        .map(|bytes| baremark::logscan::scan(&bytes));
    let run = scanned
        .as_ref()
        .and_then(|s| s.runs.iter().rfind(|r| r.copy_of.is_none()));
    let (records, lines, source) = match (run, log) {
        (Some(run), Some(p)) if run.records.len() == records.len() => {
            for (payload, bench, why) in &run.incomplete {
                res.mark_incomplete(payload, bench, why);
            }
            (
                &run.records[..],
                Some(&run.record_lines[..]),
                p.display().to_string(),
            )
        }
        _ => (records, None, "this run's serial output".to_string()),
    };
    finish(
        args,
        &Input {
            results: &res,
            records: Some(records),
            lines,
            source,
            json: None,
        },
        human,
    )
}

/// `baremark check INPUT`: a serial log (or stick) or a results JSON file against the gate.
pub fn check(input: &Path, args: &GateArgs) -> Result<std::process::ExitCode> {
    use std::process::ExitCode;
    if !args.active() {
        anyhow::bail!("check: give --expect FILE and/or --baseline NAME");
    }
    args.precheck()?;
    let bytes = std::fs::read(input).ok();
    let json: Option<Value> = bytes
        .as_deref()
        .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        .filter(|v| v.get("schema").and_then(Value::as_str) == Some(baremark::results::SCHEMA));
    let mut human = std::io::stdout();
    let passed = if let Some(doc) = &json {
        let loaded = baremark::diff::load_bytes(bytes.as_deref().unwrap_or_default())
            .with_context(|| input.display().to_string())?;
        let mut res = Results::from_records(&[]);
        res.benchmarks = loaded.benchmarks;
        let m = &doc["machine"];
        res.machine.pmu_backend = m["pmu_backend"].as_str().map(str::to_string);
        res.machine.pmu_emulated = m["pmu_emulated"].as_bool().unwrap_or(false);
        res.machine.pmu_uarch_model = m["pmu_uarch_model"].as_bool().unwrap_or(false);
        res.machine.tsc_hz = m["tsc_hz"].as_u64();
        res.errors = doc["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| baremark::results::ErrorEntry {
                kind: e["kind"].as_str().unwrap_or("error").to_string(),
                payload: e["payload"].as_str().map(str::to_string),
                bench: e["bench"].as_str().map(str::to_string),
                message: e["message"].as_str().unwrap_or("").to_string(),
            })
            .collect();
        finish(
            args,
            &Input {
                results: &res,
                records: None,
                lines: None,
                source: input.display().to_string(),
                json: Some(doc),
            },
            &mut human,
        )?
    } else {
        let read = baremark::stick::read_input(input)?;
        note(&read.notes);
        let scan = baremark::logscan::scan(&read.stream);
        let Some(run) = scan.runs.iter().rfind(|r| r.copy_of.is_none()) else {
            anyhow::bail!(
                "{} holds no baremark records and is not a results JSON file (`{}`)",
                read.source,
                baremark::results::SCHEMA
            );
        };
        let mut res = Results::from_records(&run.records);
        for (payload, bench, why) in &run.incomplete {
            res.mark_incomplete(payload, bench, why);
        }
        finish(
            args,
            &Input {
                results: &res,
                records: Some(&run.records),
                lines: Some(&run.record_lines),
                source: read.source.clone(),
                json: None,
            },
            &mut human,
        )?
    };
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_EXPECTATION)
    })
}

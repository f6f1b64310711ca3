//! `baremark diff`: two runs compared, with a significance test and a gate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::EXIT_KERNEL_FAILURE;

#[derive(clap::Args)]
pub struct DiffArgs {
    /// The baseline: a results JSON file (`run --json`) or a serial log.
    #[arg(value_name = "A")]
    a: PathBuf,
    /// The run compared with it, likewise.
    #[arg(value_name = "B")]
    b: PathBuf,
    /// Significance level of the two-sided test.
    #[arg(long, default_value_t = baremark::diff::DEFAULT_ALPHA, value_parser = parse_alpha)]
    alpha: f64,
    /// Exit with status 1 if a significant change makes B worse (larger) than A by more than
    /// PCT percent.
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    fail_above: Option<f64>,
    /// Also write the comparison as JSON (`baremark-diff/1`) to FILE (`-`: stdout, instead of
    /// the table).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "`{s}` is not a significance level between 0 and 1 (e.g. 0.01)"
        )),
    }
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if p >= 0.0 && p.is_finite() => Ok(p),
        _ => Err(format!("`{s}` is not a percentage of 0 or more (e.g. 2.5)")),
    }
}

/// `diff`: exit 0, or 1 (EXIT_KERNEL_FAILURE) when `--fail-above` finds a significant regression
/// over the gate; input errors are 2 (EXIT_ERROR) through `main`.
pub fn diff(args: DiffArgs) -> Result<ExitCode> {
    let a = baremark::diff::load(&args.a)?;
    let b = baremark::diff::load(&args.b)?;
    for (name, input) in [("A", &a), ("B", &b)] {
        if input.benchmarks.is_empty() {
            bail!(
                "{name} ({} {}) holds no benchmarks",
                input.kind,
                name_of(name, &args)
            );
        }
        for e in &input.errors {
            eprintln!("baremark: note: {name} ({}): {e}", name_of(name, &args));
        }
    }
    let names = (args.a.display().to_string(), args.b.display().to_string());
    let d = baremark::diff::compare(&a, &b, (&names.0, &names.1), args.alpha);
    let to_stdout = args.json.as_deref() == Some(Path::new("-"));
    match &args.json {
        Some(_) if to_stdout => print!("{}", d.to_json()),
        Some(path) => {
            std::fs::write(path, d.to_json())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("baremark: wrote {}", path.display());
        }
        None => {}
    }
    if !to_stdout {
        print!("{}", d.render());
    }
    let Some(pct) = args.fail_above else {
        return Ok(ExitCode::SUCCESS);
    };
    let over = d.over_gate(pct);
    if over.is_empty() {
        eprintln!("baremark: no significant regression above {pct}%");
        return Ok(ExitCode::SUCCESS);
    }
    for r in &over {
        eprintln!(
            "baremark: regression over {pct}%: {}/{} {} {} (p {})",
            r.payload,
            r.bench,
            r.event,
            r.change_pct.map_or("n/a".into(), |c| format!("{c:+.2}%")),
            if r.exact {
                "exact".to_string()
            } else {
                format!("{:.2e}", r.p.unwrap_or(0.0))
            }
        );
    }
    Ok(ExitCode::from(EXIT_KERNEL_FAILURE))
}

fn name_of<'a>(which: &str, args: &'a DiffArgs) -> std::path::Display<'a> {
    if which == "A" {
        args.a.display()
    } else {
        args.b.display()
    }
}

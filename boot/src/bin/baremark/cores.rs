//! `baremark c2c` and `baremark bandwidth` (docs/cores.md): boot the built-in cross-core
//! payload with the options made into its argument text (or read a saved log), then print the
//! tables and write the files.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use baremark::cores::cli;
use baremark::image::{OnEnd, RunConfig};
use baremark::records::{self, Record};
use baremark::session;

use super::{
    EXIT_DAMAGED, EXIT_KERNEL_FAILURE, QemuArgs, boot_live, note, prepare_boot, verdict_code,
};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  baremark c2c --smp 4 --pmu emulated                  (every pair of 4 CPUs, emulated PMU)
  baremark c2c --smp 8 --cpus 0-3 --svg c2c.svg --json c2c.json
  baremark c2c --from-log serial.log --svg c2c.svg     (a run from real hardware)")]
pub struct C2cArgs {
    #[command(flatten)]
    qemu: QemuArgs,
    #[command(flatten)]
    opts: baremark::cores::cli::C2cOptions,
    /// Also print the kernel's records as they arrive.
    #[arg(long)]
    verbose: bool,
}

#[derive(clap::Args)]
#[command(after_help = "Examples:
  baremark bandwidth --smp 4 --pmu emulated --bytes 1M
  baremark bandwidth --smp 8 --kernels read --svg bw.svg --json bw.json
  baremark bandwidth --from-log serial.log --svg bw.svg      (a run from real hardware)")]
pub struct BandwidthArgs {
    #[command(flatten)]
    qemu: QemuArgs,
    #[command(flatten)]
    opts: baremark::cores::cli::BandwidthOptions,
    /// Also print the kernel's records as they arrive.
    #[arg(long)]
    verbose: bool,
}

/// After a boot: QEMU's outcome lines and the exit status.
type Booted = Option<(String, ExitCode)>;

/// `c2c` and `bandwidth`: the records of the built-in payload `name` run with argument text
/// `text` (every CPU of `--smp` started; no task budget, `--timeout` bounds the run), or of a
/// saved log; after a boot also its outcome lines and exit status.
fn cross_core_records(
    qemu: QemuArgs,
    name: &str,
    text: String,
    from_log: Option<&Path>,
    verbose: bool,
) -> Result<(Vec<Record>, Booted)> {
    if let Some(log) = from_log {
        let input = baremark::stick::read_input(log)?;
        note(&input.notes);
        let text = String::from_utf8_lossy(&input.stream);
        return Ok((records::records_of_log(&text), None));
    }
    let p = baremark::payloads::builtin(name).context("the built-in payload is missing")?;
    let config = RunConfig {
        on_end: OnEnd::QemuExit,
        payloads: vec![(name.to_string(), p.elf.to_vec())],
        extra_members: vec![(format!("args/{name}"), text.into_bytes())],
        task_budget_ms: Some(0),
        ..RunConfig::default()
    };
    let (request, reason) = prepare_boot(qemu, config)?;
    let outcome = boot_live(&request, verbose, verbose, &mut std::io::stderr())?;
    let lines = session::outcome_lines(&outcome, &reason);
    let code = verdict_code(&outcome);
    Ok((outcome.records, Some((lines, code))))
}

/// No run of the payload in the records: after a boot, QEMU's lines and the boot's status;
/// from a log, an error.
fn nothing(outcome: Booted, payload: &str, setup: &str) -> Result<ExitCode> {
    let Some((lines, code)) = outcome else {
        bail!("the log holds no {payload} run (no {setup} report)");
    };
    println!("{lines}");
    eprintln!("baremark: the {payload} payload reported nothing (see the records: --verbose)");
    Ok(code)
}

/// `--json` and `--csv`, when asked for.
fn write_data(
    files: &cli::FileOptions,
    json: &serde_json::Value,
    csv: &str,
    wrote: &mut Vec<String>,
) -> Result<()> {
    if let Some(path) = &files.json {
        wrote.push(cli::write_file(path, &serde_json::to_string_pretty(json)?)?);
    }
    if let Some(path) = &files.csv {
        wrote.push(cli::write_file(path, csv)?);
    }
    Ok(())
}

/// The exit status: after a boot, QEMU's lines and the boot's status, 1 if the run is not
/// complete; from a log, 0 or 5 (damaged: the run is not complete).
fn status(outcome: Booted, complete: bool) -> ExitCode {
    match outcome {
        Some((lines, code)) => {
            println!("{lines}");
            if complete {
                code
            } else {
                ExitCode::from(EXIT_KERNEL_FAILURE)
            }
        }
        None => ExitCode::from(if complete { 0 } else { EXIT_DAMAGED }),
    }
}

pub fn c2c(args: C2cArgs) -> Result<ExitCode> {
    use baremark::cores::c2c::C2c;
    let text = args.opts.payload_args(args.qemu.smp)?;
    let files = &args.opts.files;
    let (records, outcome) = cross_core_records(
        args.qemu,
        "c2c",
        text,
        files.from_log.as_deref(),
        args.verbose,
    )?;
    let Some(run) = C2c::from_records(&records)? else {
        return nothing(outcome, "c2c", "c2c_setup");
    };
    println!("{}", run.table().trim_end());
    let several = run.setup.variants.len() > 1;
    let mut wrote = Vec::new();
    if let Some(svg) = &files.svg {
        for v in &run.setup.variants {
            wrote.push(cli::write_file(
                &cli::variant_path(svg, v, several),
                &run.heatmap(v),
            )?);
        }
    }
    write_data(files, &run.json(), &run.csv(), &mut wrote)?;
    note(&wrote);
    Ok(status(outcome, run.done && run.missing().is_empty()))
}

pub fn bandwidth(args: BandwidthArgs) -> Result<ExitCode> {
    use baremark::cores::bandwidth::Bandwidth;
    let text = args.opts.payload_args(args.qemu.smp)?;
    let files = &args.opts.files;
    let (records, outcome) = cross_core_records(
        args.qemu,
        "bandwidth",
        text,
        files.from_log.as_deref(),
        args.verbose,
    )?;
    let Some(run) = Bandwidth::from_records(&records)? else {
        return nothing(outcome, "bandwidth", "bw_setup");
    };
    println!("{}", run.table().trim_end());
    let mut wrote = Vec::new();
    if let Some(svg) = &files.svg {
        wrote.push(cli::write_file(svg, &run.svg())?);
        if !run.loaded.is_empty() {
            wrote.push(cli::write_file(
                &cli::variant_path(svg, "loaded", true),
                &run.loaded_svg(),
            )?);
        }
    }
    write_data(files, &run.json(), &run.csv(), &mut wrote)?;
    note(&wrote);
    Ok(status(outcome, run.problems().is_empty()))
}

/// The c2c matrix and the bandwidth table of a run's records, if it holds them (`run
/// --builtin c2c`, `report` on a saved log); a report they cannot read is a note.
pub fn print_tables(records: &[Record], human: &mut dyn std::io::Write) {
    match baremark::cores::c2c::C2c::from_records(records) {
        Ok(Some(run)) => {
            let _ = writeln!(human, "\n{}", run.table().trim_end());
        }
        Ok(None) => {}
        Err(e) => note(&[format!("c2c: {e:#}")]),
    }
    match baremark::cores::bandwidth::Bandwidth::from_records(records) {
        Ok(Some(run)) => {
            let _ = writeln!(human, "\n{}", run.table().trim_end());
        }
        Ok(None) => {}
        Err(e) => note(&[format!("bandwidth: {e:#}")]),
    }
}

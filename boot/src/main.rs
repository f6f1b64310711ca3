//! `baremark`: the command-line tool.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use baremark::events_cli;
use baremark::image::{self, Firmware, OnEnd, RunConfig};
use baremark::qemu::{Accel, QemuOptions};
use baremark::records::{Line, parse_log};
use baremark::render;
use baremark::session::{self, BootRequest, Event, Verdict};

/// Exit status when the kernel reported failure.
const EXIT_KERNEL_FAILURE: u8 = 1;
/// Exit status for usage or setup errors (no QEMU, bad arguments, ...).
const EXIT_ERROR: u8 = 2;
/// Exit status when QEMU ended without an end record.
const EXIT_NO_END: u8 = 3;
/// Exit status when the run timed out.
const EXIT_TIMEOUT: u8 = 4;

#[derive(Parser)]
#[command(
    name = "baremark",
    version,
    about = "Bare-metal x86_64 measurement unikernel: build images, boot them, read the report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Boot the kernel in QEMU, stream its records, print the report; exit with its status.
    Run(RunArgs),
    /// Write bootable disk images (e.g. to `dd` onto a USB stick).
    Image(ImageArgs),
    /// Render the report from a saved serial log (e.g. captured from real hardware).
    Report {
        /// The log file (raw serial output).
        log: PathBuf,
    },
    /// Events: list what can be counted, show exact register encodings.
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
}

#[derive(Subcommand)]
enum EventsCommand {
    /// List the events of a CPU (like `perf list`): names, encodings, counters, descriptions.
    List {
        #[command(flatten)]
        target: events_cli::TargetArgs,
    },
    /// Print the exact event-select value the kernel would write for each event.
    Encode {
        /// Events in perf syntax: instructions:u, r01c2, cpu/event=0x3c,umask=1/, {a,b}, ...
        #[arg(required = true, value_name = "SPEC")]
        specs: Vec<String>,
        #[command(flatten)]
        target: events_cli::TargetArgs,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Boot through UEFI (OVMF) instead of BIOS.
    #[arg(long)]
    uefi: bool,
    /// Accelerator: auto probes KVM with a quick boot and falls back to TCG.
    #[arg(long, value_enum, default_value = "auto")]
    accel: Accel,
    /// QEMU CPU model (default: host under KVM, max under TCG).
    #[arg(long)]
    cpu: Option<String>,
    /// TCG only: `-icount shift=N`, so the TSC advances exactly 2^N per instruction.
    #[arg(long, value_name = "SHIFT")]
    icount: Option<u32>,
    /// Seconds before the run is declared hung.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Keep the raw serial stream in this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Pass an argument to QEMU as it is (repeat for several).
    #[arg(long = "qemu-arg", value_name = "ARG", allow_hyphen_values = true)]
    qemu_args: Vec<String>,
    /// Guest memory in MiB.
    #[arg(long, default_value_t = 256)]
    memory: u32,
    /// Skip the APIC timer checks at boot.
    #[arg(long)]
    no_timer_checks: bool,
    /// Run the PMU selftest (kvm-unit-tests-style checks; every check SKIPs without counters).
    #[arg(long)]
    selftest: bool,
    /// Also print the kernel's own text lines and the raw records.
    #[arg(long)]
    verbose: bool,
    /// Run a payload ELF in ring 3 after the boot report (repeatable; named after the file
    /// stem). Built-ins (`--builtin`) run first, then these, each in the order given.
    #[arg(long = "payload", value_name = "FILE.elf")]
    payloads: Vec<PathBuf>,
    /// Run a built-in payload (repeatable): hello, loop1000, loop2000, rdpmc, spin, spawner.
    #[arg(long = "builtin", value_name = "NAME")]
    builtins: Vec<String>,
    /// Run the payloads concurrently, round-robin, preempted by the APIC timer every this many
    /// microseconds (default: one after the other).
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    quantum_us: Option<u32>,
    /// The watchdog: kill a task after this many milliseconds of its own run time (0: no
    /// budget; default: the kernel's, 2000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=3_600_000))]
    task_budget_ms: Option<u32>,
    /// Test-only: make the kernel misbehave (page-fault, panic, invalid-opcode, stack-overflow, hang)
    /// or run the ring-3 smoke payloads (ring3).
    #[arg(long, hide = true)]
    test: Option<String>,
}

#[derive(clap::Args)]
struct ImageArgs {
    /// Write a BIOS (MBR) image here.
    #[arg(long, value_name = "FILE")]
    bios: Option<PathBuf>,
    /// Write a UEFI (GPT) image here.
    #[arg(long, value_name = "FILE")]
    uefi: Option<PathBuf>,
    /// What the kernel does after its report: halt (real hardware) or exit QEMU.
    #[arg(long, value_enum, default_value = "halt")]
    on_end: OnEnd,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Image(args) => write_images(args).map(|()| ExitCode::SUCCESS),
        Command::Report { log } => report(&log),
        Command::Events { command } => events(command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("baremark: error: {e:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn run(args: RunArgs) -> Result<ExitCode> {
    let firmware = if args.uefi {
        Firmware::Uefi
    } else {
        Firmware::Bios
    };
    let mut qemu = QemuOptions::new(firmware, args.accel);
    qemu.cpu = args.cpu;
    qemu.icount = args.icount;
    qemu.memory_mib = args.memory;
    qemu.extra_args = args.qemu_args;
    qemu.timeout = Duration::from_secs(args.timeout);
    if args.icount.is_some() && args.accel == Accel::Kvm {
        bail!("--icount needs TCG (QEMU counts instructions only under software emulation)");
    }
    // Make sure QEMU is there before spending time on anything else.
    baremark::qemu::qemu_binary()?;

    let (accel, reason) = if args.icount.is_some() && args.accel == Accel::Auto {
        (Accel::Tcg, "--icount needs TCG".to_string())
    } else {
        session::resolve_accel(args.accel, &qemu)
    };
    qemu.accel = accel;
    eprintln!(
        "baremark: booting the {} image in QEMU with {} ({reason})",
        firmware.name(),
        accel.name()
    );

    let payloads = collect_payloads(&args.builtins, &args.payloads)?;
    let config = RunConfig {
        on_end: OnEnd::QemuExit,
        test: args.test,
        timer_checks: !args.no_timer_checks,
        selftest: args.selftest,
        extra_lines: Vec::new(),
        payloads,
        quantum_us: args.quantum_us.unwrap_or(0),
        task_budget_ms: args.task_budget_ms,
    };
    let request = BootRequest {
        config,
        qemu,
        log: args.log.clone(),
    };
    let verbose = args.verbose;
    let mut stdout = std::io::stdout();
    let outcome = session::boot(&request, &mut |event| match event {
        Event::Record(record, _) => {
            if verbose {
                let _ = writeln!(stdout, "  {}", record.value);
            }
            if let Some(lines) = render::record_lines(record) {
                let _ = writeln!(stdout, "{lines}");
            }
            let _ = stdout.flush();
        }
        Event::Text(text) => {
            if verbose {
                let _ = writeln!(stdout, "  | {text}");
            }
        }
    })?;
    println!("{}", render::outcome_lines(&outcome, &reason));
    if let Some(log) = &args.log {
        eprintln!("baremark: serial log saved to {}", log.display());
    }
    Ok(ExitCode::from(match outcome.verdict() {
        Verdict::Success => 0,
        Verdict::KernelFailure(_) => EXIT_KERNEL_FAILURE,
        Verdict::NoEndRecord(_) => EXIT_NO_END,
        Verdict::Timeout => EXIT_TIMEOUT,
    }))
}

/// The payloads of a run: the built-ins named, then the files, each in the order given.
fn collect_payloads(builtins: &[String], files: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut payloads = Vec::new();
    for name in builtins {
        let p = baremark::payloads::builtin(name).with_context(|| {
            let known: Vec<&str> = baremark::payloads::BUILTIN.iter().map(|p| p.name).collect();
            format!(
                "no built-in payload `{name}` (there are: {})",
                known.join(", ")
            )
        })?;
        payloads.push((p.name.to_string(), p.elf.to_vec()));
    }
    for path in files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| image::valid_payload_name(s))
            .with_context(|| {
                format!(
                    "payload {}: the file stem must be 1-64 ASCII letters, digits, `-`, `_` or `.`",
                    path.display()
                )
            })?
            .to_string();
        let elf =
            std::fs::read(path).with_context(|| format!("reading payload {}", path.display()))?;
        payloads.push((name, elf));
    }
    Ok(payloads)
}

fn write_images(args: ImageArgs) -> Result<()> {
    if args.bios.is_none() && args.uefi.is_none() {
        bail!("say where to write the image: --bios FILE and/or --uefi FILE");
    }
    let config = RunConfig {
        on_end: args.on_end,
        ..RunConfig::default()
    };
    for (firmware, path) in [(Firmware::Bios, &args.bios), (Firmware::Uefi, &args.uefi)] {
        if let Some(path) = path {
            image::build_image(firmware, &config, path)?;
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            println!(
                "wrote {} image: {} ({} KiB)",
                firmware.name(),
                path.display(),
                size / 1024
            );
        }
    }
    println!(
        "write it to a USB stick with: sudo dd if=IMAGE of=/dev/sdX bs=4M conv=fsync status=progress"
    );
    Ok(())
}

fn report(log: &PathBuf) -> Result<ExitCode> {
    let bytes = std::fs::read(log).with_context(|| format!("reading {}", log.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut end_status = None;
    let mut records = 0;
    for line in parse_log(&text) {
        if let Line::Record(record) = line {
            records += 1;
            if record.kind == "end" {
                end_status = record.str("status").map(str::to_string);
            }
            if let Some(lines) = render::record_lines(&record) {
                println!("{lines}");
            }
        }
    }
    if records == 0 {
        bail!(
            "{} holds no baremark records (is it the raw serial output at 115200 baud?)",
            log.display()
        );
    }
    Ok(match end_status.as_deref() {
        Some("ok") => ExitCode::SUCCESS,
        Some(_) => ExitCode::from(EXIT_KERNEL_FAILURE),
        None => {
            eprintln!(
                "baremark: the log has no end record: the run did not finish (or the capture stopped early)"
            );
            ExitCode::from(EXIT_NO_END)
        }
    })
}

fn events(command: EventsCommand) -> Result<ExitCode> {
    match command {
        EventsCommand::List { target } => {
            let t = events_cli::target(
                target.cpu.as_deref(),
                target.core_type.as_deref(),
                target.perfmon.as_deref(),
            )?;
            events_cli::list_cmd(&t, target.format)?;
            Ok(ExitCode::SUCCESS)
        }
        EventsCommand::Encode { specs, target } => {
            let t = events_cli::target(
                target.cpu.as_deref(),
                target.core_type.as_deref(),
                target.perfmon.as_deref(),
            )?;
            let ok = events_cli::encode_cmd(&specs, &t, target.format)?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_KERNEL_FAILURE)
            })
        }
    }
}

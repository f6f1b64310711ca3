//! `baremark`: the command-line tool.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use baremark::content::{self, HarnessArgs, PayloadArgs};
use baremark::events_cli;
use baremark::image::{self, Firmware, OnEnd, RunConfig};
use baremark::logscan;
use baremark::output::{self, OutputArgs};
use baremark::profile::{self, ProfileArgs};
use baremark::progress::Progress;
use baremark::qemu::{Accel, PmuModel, QemuOptions};
use baremark::records::{self, Record};
use baremark::results::Results;
use baremark::session::{self, BootRequest, Event, RunOutcome, Verdict};
use baremark::{render, table};

mod cores;
mod diff_cmd;
mod gate;

/// Exit status when the kernel reported failure (and for `diff`: a regression over the gate).
const EXIT_KERNEL_FAILURE: u8 = 1;
/// Exit status for usage or setup errors (no QEMU, bad arguments, ...).
const EXIT_ERROR: u8 = 2;
/// Exit status when QEMU ended without an end record.
const EXIT_NO_END: u8 = 3;
/// Exit status when the run timed out.
const EXIT_TIMEOUT: u8 = 4;
/// Exit status of `report` when the log is damaged: records were lost or are doubtful; what
/// was intact is rendered and the damage listed (docs/reliability.md).
const EXIT_DAMAGED: u8 = 5;

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
    /// Boot the kernel in QEMU, run the payloads (default: the benchmark suite), print the
    /// report and the results table; exit with the kernel's status.
    Run(Box<RunArgs>),
    /// Measure one payload and print only its results and derived metrics (like perf stat).
    Count(CountArgs),
    /// Benchmark an instruction sequence, like nanoBench: the code (Intel syntax by default) is
    /// copied --unroll times, assembled on the host (GNU as), run as a ring-3 payload, and
    /// reported per copy with the fixed cost removed as (2U copies) - (U copies).
    Asm(AsmArgs),
    /// Core-to-core latency: how long a cache line takes between every ordered pair of CPUs
    /// (compare-and-swap ping-pong, and one writer / one reader), with each side's counters;
    /// a matrix, a heatmap SVG, JSON and CSV (docs/cores.md).
    C2c(cores::C2cArgs),
    /// Memory bandwidth as cores are added (read, write and copy kernels started together on
    /// 1, 2, ... N cores) and loaded latency (a pointer chase while k cores stream); a table,
    /// SVG charts, JSON and CSV (docs/cores.md).
    Bandwidth(cores::BandwidthArgs),
    /// Write bootable disk images (e.g. to `dd` onto a USB stick).
    Image(ImageArgs),
    /// Render the report, the results table and the files from a saved serial log (`run
    /// --log`, or a capture from real hardware), or from the results file a USB stick brought
    /// back.
    Report {
        /// The serial log; or the stick's results file (`BAREMARK/RESULTS.LOG`), the mounted
        /// stick's folder, or the stick itself (its device, e.g. /dev/sdb, or an image file).
        log: PathBuf,
        #[command(flatten)]
        output: OutputArgs,
        /// Show the sampling profiles the log holds (`run --sample`): per task and event a
        /// table by symbol and source line, the hottest function's annotated disassembly,
        /// and an SVG bar chart (docs/profiling.md).
        #[arg(long)]
        profile: bool,
        #[command(flatten)]
        profile_args: ProfileArgs,
        #[command(flatten)]
        gate: gate::GateArgs,
    },
    /// Check a run against an expectations file and/or a baseline (a CI gate): a serial log,
    /// a stick's results file or a results JSON file; JUnit XML and Markdown reports; exit 6
    /// when a check fails (docs/expectations.md).
    Check {
        /// The run: a serial log, the stick's results file or its folder, or a results JSON
        /// file (`run --json`; it carries no reports, selftest or end record).
        input: PathBuf,
        #[command(flatten)]
        gate: gate::GateArgs,
    },
    /// Compare two runs (results JSON files or serial logs): per benchmark and event both
    /// medians, the change, and whether it is significant (Mann-Whitney U test on the
    /// repetitions). Exit 1 with --fail-above when a significant regression exceeds the gate.
    Diff(diff_cmd::DiffArgs),
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
        #[arg(value_name = "SPEC")]
        specs: Vec<String>,
        /// A nanoBench event config file: each line's IA32_PERFEVTSELx (AMD PERF_CTLx) value,
        /// as nanoBench.sh programs it (user mode), next to its name.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        target: events_cli::TargetArgs,
    },
}

/// How QEMU runs (shared by `run` and `count`).
#[derive(clap::Args)]
struct QemuArgs {
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
    /// Keep the raw serial stream in this file (`baremark report` reads it back).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Pass an argument to QEMU as it is (repeat for several).
    #[arg(long = "qemu-arg", value_name = "ARG", allow_hyphen_values = true)]
    qemu_args: Vec<String>,
    /// Guest memory in MiB.
    #[arg(long, default_value_t = 256)]
    memory: u32,
    /// CPUs in the guest (QEMU's `-smp N`, 1 to 288): the kernel starts them all, and a payload
    /// runs on the one given after its name (`--builtin NAME@CPU`; `count`, `asm`: --on-cpu).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = baremark::qemu::parse_smp)]
    smp: u32,
    /// `emulated`: count with baremark's emulated PMU, a PMU model in QEMU's TCG
    /// (docs/emulated-pmu.md): exact, deterministic counts without hardware counters. Builds
    /// that QEMU on first use (cached), and runs under TCG with `-icount shift=0` unless
    /// `--icount` says otherwise. Its figures are labelled `emulated`.
    #[arg(long, value_enum, value_name = "emulated")]
    pmu: Option<PmuMode>,
    /// The emulated PMU's model (with `--pmu emulated`).
    #[arg(long, value_enum, default_value = "intel-v4", requires = "pmu")]
    pmu_model: PmuModel,
    /// With `--pmu emulated`: also model the micro-architecture (QEMU's `pmu-uarch=on`): data
    /// caches (L1D, L2, LLC from the CPU model's geometry), a gshare branch predictor, and
    /// cycles that add their stalls to the instructions. LLC, L2, L1D and branch-miss events
    /// then count; cycles are a model figure; about 1.7x slower (docs/emulated-pmu.md).
    #[arg(long, requires = "pmu")]
    uarch: bool,
    /// With `--uarch`: the cycle model's stall cycles, `KEY=CYCLES` for a load line from `l2`,
    /// `llc`, `mem`ory, or a `mispredict`ed branch (defaults 4, 12, 24, 15; e.g.
    /// `l2=12,llc=42,mem=250,mispredict=16` for a Skylake's pointer-chase latencies).
    #[arg(
        long,
        value_name = "KEY=CYCLES,...",
        requires = "uarch",
        value_delimiter = ',',
        value_parser = baremark::qemu::parse_uarch_latency
    )]
    uarch_latency: Vec<(&'static str, u32)>,
}

/// `--pmu`: where counters come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PmuMode {
    /// QEMU's TCG with baremark's PMU model.
    Emulated,
}

#[derive(clap::Args)]
struct RunArgs {
    #[command(flatten)]
    qemu: QemuArgs,
    /// Skip the APIC timer checks at boot.
    #[arg(long)]
    no_timer_checks: bool,
    /// Run the PMU selftest (kvm-unit-tests-style checks; every check SKIPs without counters).
    #[arg(long)]
    selftest: bool,
    /// Plant a canary pattern in the kernel's free memory before the payloads run, so a payload
    /// (fuzz-syscalls) can tell whether kernel memory reaches it (docs/reliability.md).
    #[arg(long)]
    canary: bool,
    /// Also print the kernel's own text lines and the raw records (and no progress bar).
    #[arg(long)]
    verbose: bool,
    #[command(flatten)]
    payloads: PayloadArgs,
    #[command(flatten)]
    harness: HarnessArgs,
    /// Run payload NAME in the background on CPU (repeatable; CPU 1 or more, with --smp): it
    /// starts first and runs while the other payloads do, and is stopped when they are done (a
    /// noisy neighbour): `--background spin@2`. NAME is a payload given with --builtin,
    /// --payload or --suite (it then runs only in the background) or else a built-in payload.
    #[arg(long = "background", value_name = "NAME@CPU")]
    background: Vec<String>,
    /// Run the payloads concurrently, round-robin, preempted by the APIC timer every this many
    /// microseconds (default: one after the other).
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    quantum_us: Option<u32>,
    /// The watchdog: kill a task after this many milliseconds of its own run time (0: no
    /// budget; default: the kernel's, 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=3_600_000))]
    task_budget_ms: Option<u32>,
    #[command(flatten)]
    output: OutputArgs,
    /// Sample every payload task: record its RIP every PERIOD events of EVENT (perf syntax,
    /// one event each; repeatable, one GP counter each), then show the profile, like `perf
    /// record` + `perf report` (docs/profiling.md). E.g. instructions:u@10007.
    #[arg(long = "sample", value_name = "EVENT@PERIOD")]
    sample: Vec<String>,
    /// System mode for the run (run.cfg `system`): count these `counters_configure` words on
    /// every CPU, the kernel and every task, read around every payload; shown per CPU like
    /// `perf stat -a -A` (docs/user-guide.md "Per-CPU system counts"). E.g. 0x100c0,0x200c0.
    #[arg(long = "system", value_name = "0xWORD,...")]
    system: Option<String>,
    #[command(flatten)]
    profile: ProfileArgs,
    #[command(flatten)]
    gate: gate::GateArgs,
    /// Test-only: make the kernel misbehave (page-fault, panic, invalid-opcode, stack-overflow, hang)
    /// or run the ring-3 smoke payloads (ring3).
    #[arg(long, hide = true)]
    test: Option<String>,
    /// Test-only: start an APIC ID with no CPU behind it (run.cfg `test_phantom_cpu`), to see
    /// a CPU that does not answer reported as failed.
    #[arg(long, hide = true, value_name = "APICID")]
    test_phantom_cpu: Option<u32>,
}

#[derive(clap::Args)]
struct CountArgs {
    /// The payload: an ELF file (a path, or a name ending in .elf) or a built-in payload's name;
    /// `@CPU` at the end (digits only) runs it on that CPU, like --on-cpu: `add-latency@3`.
    #[arg(value_name = "PAYLOAD.elf|NAME[@CPU]")]
    payload: String,
    #[command(flatten)]
    measure: MeasureArgs,
}

/// How one payload is measured and shown (`count` and `asm`).
#[derive(clap::Args)]
struct MeasureArgs {
    #[command(flatten)]
    qemu: QemuArgs,
    #[command(flatten)]
    harness: HarnessArgs,
    /// The watchdog budget in milliseconds (0: none; default: the kernel's, 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=3_600_000))]
    task_budget_ms: Option<u32>,
    /// Run the payload on this CPU (an index: 0 is the boot CPU, the default; give QEMU the
    /// CPUs with --smp). `count NAME@CPU` says the same.
    #[arg(long, value_name = "CPU", value_parser = parse_cpu_index)]
    on_cpu: Option<usize>,
    /// Run it on each of these CPUs in turn: indexes and ranges (`0,2-3`), `all` or
    /// `each-type` (one CPU of each core type), like `run --cpus`; a table per CPU.
    #[arg(long, value_name = "LIST|all|each-type", value_parser = baremark::image::CpuSet::parse,
          conflicts_with = "on_cpu")]
    cpus: Option<baremark::image::CpuSet>,
    #[command(flatten)]
    output: OutputArgs,
    /// Also print the kernel's text lines and the raw records.
    #[arg(long)]
    verbose: bool,
}

fn parse_cpu_index(s: &str) -> Result<usize, String> {
    let max = content::PIN_CPU_MAX;
    match s.trim().parse::<usize>() {
        Ok(n) if n < max => Ok(n),
        _ => Err(format!(
            "`{s}` is not a CPU index: give 0 (the boot CPU) to {}",
            max - 1
        )),
    }
}

#[derive(clap::Args)]
#[command(after_help = "Examples:
  baremark asm \"add rax, rbx\" --unroll 100 --icount 0
  baremark asm \"imul rax, rax\" --pmu emulated --events instructions,cycles
  baremark asm --init \"mov rax, r14; mov [rax], rax\" \"mov rax, [rax]\"    (load latency)
  baremark asm --syntax att \"addq %rbx, %rax\" --loop 100 --unroll 10
R14, RDI, RSI, RBP and RSP point into the middle of 1 MiB scratch areas; the other registers start
at 0 (or as --init leaves them). With --loop, R15 is the loop counter. See docs/asm.md.")]
struct AsmArgs {
    /// The code to benchmark: instructions separated by `;` or newlines (`|n`: an n-byte NOP).
    #[arg(
        value_name = "CODE",
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    code: Option<String>,
    /// Read the code to benchmark from FILE instead.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Code run before every repetition, outside the measured window (nanoBench's -asm_init);
    /// the registers it leaves are where the code starts. `@FILE` reads it from a file.
    #[arg(long, value_name = "CODE")]
    init: Option<String>,
    /// Code run inside the measured window just before the copies (nanoBench's
    /// -asm_late_init); its cost cancels out in 2U - U. `@FILE` reads it from a file.
    #[arg(long, value_name = "CODE")]
    late_init: Option<String>,
    /// Code run once before the benchmark (nanoBench's -asm_one_time_init), e.g. to fill
    /// memory. `@FILE` reads it from a file.
    #[arg(long, value_name = "CODE")]
    one_time_init: Option<String>,
    /// The syntax of all the code.
    #[arg(long, value_enum, default_value = "intel")]
    syntax: baremark::asm::Syntax,
    /// Copies of the code in one measured region (the doubled region has twice as many).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    unroll: u64,
    /// Iterations of a loop around the copies (0: no loop). The loop counter is R15, which the
    /// code must then leave alone.
    #[arg(long = "loop", value_name = "N", default_value_t = 0)]
    loop_count: u64,
    /// The first copy starts this many bytes past a 64-byte boundary.
    #[arg(long, value_name = "OFFSET", default_value_t = 0)]
    align: u64,
    /// The benchmark's name in the results.
    #[arg(long, default_value = "asm")]
    name: String,
    /// Keep the generated source, the object and the payload ELF in DIR (e.g. to disassemble
    /// it, or to run it again with `run --payload DIR/NAME.elf`).
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Assemble and link only (into --keep's DIR); do not boot.
    #[arg(long, requires = "keep")]
    build_only: bool,
    #[command(flatten)]
    measure: MeasureArgs,
}

#[derive(clap::Args)]
#[command(
    after_help = "Which image for a USB stick: --usb. It is the BIOS image (MBR boot code and a FAT \
partition) with the UEFI bootloader added at efi/boot/bootx64.efi, so BIOS/CSM firmware and UEFI \
firmware both boot it (disable Secure Boot: the bootloader is not signed). If a UEFI machine does \
not offer it, use --uefi (a GPT disk, UEFI only); --bios is BIOS only."
)]
struct ImageArgs {
    /// Write an image for a USB stick (`dd` it to the whole device) that BIOS and UEFI firmware
    /// both boot.
    #[arg(long, value_name = "FILE")]
    usb: Option<PathBuf>,
    /// Write a BIOS-only (MBR) image here.
    #[arg(long, value_name = "FILE")]
    bios: Option<PathBuf>,
    /// Write a UEFI-only (GPT) image here.
    #[arg(long, value_name = "FILE")]
    uefi: Option<PathBuf>,
    /// What the kernel does after its report: halt (real hardware) or exit QEMU.
    #[arg(long, value_enum, default_value = "halt")]
    on_end: OnEnd,
    #[command(flatten)]
    payloads: PayloadArgs,
    #[command(flatten)]
    harness: HarnessArgs,
    /// The watchdog budget in milliseconds (0: none; default: the kernel's, 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=3_600_000))]
    task_budget_ms: Option<u32>,
    /// Run the PMU selftest after the boot report (certifies the machine's counters; read the
    /// PASS/FAIL/SKIP records from the serial capture).
    #[arg(long)]
    selftest: bool,
    /// The size in MiB of the results file on the USB stick (`BAREMARK/RESULTS.LOG`), where the
    /// kernel writes its serial stream; read it back with `baremark report` (the file, the
    /// mounted stick, or the stick's device). 0: no results file.
    #[arg(long, value_name = "MIB", default_value_t = baremark::stick::DEFAULT_MIB,
          value_parser = clap::value_parser!(u64).range(0..=1024))]
    results_mib: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Count(args) => count(args),
        Command::C2c(args) => cores::c2c(args),
        Command::Bandwidth(args) => cores::bandwidth(args),
        Command::Asm(args) => asm(args),
        Command::Image(args) => write_images(args).map(|()| ExitCode::SUCCESS),
        Command::Report {
            log,
            output,
            profile,
            profile_args,
            gate,
        } => report(&log, &output, profile.then_some(&profile_args), &gate),
        Command::Check { input, gate } => gate::check(&input, &gate),
        Command::Diff(args) => diff_cmd::diff(args),
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

fn note(lines: &[String]) {
    for line in lines {
        eprintln!("baremark: {line}");
    }
}

/// Checks QEMU, picks the accelerator, and says how the image will boot. Returns the request
/// and why that accelerator.
fn prepare_boot(args: QemuArgs, config: RunConfig) -> Result<(BootRequest, String)> {
    let firmware = if args.uefi {
        Firmware::Uefi
    } else {
        Firmware::Bios
    };
    let mut qemu = QemuOptions::new(firmware, args.accel);
    qemu.cpu = args.cpu;
    qemu.icount = args.icount;
    qemu.memory_mib = args.memory;
    qemu.smp = args.smp;
    // The CPUs pinned to must be there (unless QEMU's own -smp is passed through).
    if !args.qemu_args.iter().any(|a| a == "-smp") {
        content::check_pins_fit(&config.pins, args.smp)?;
        content::check_background_fit(&config.background, args.smp)?;
        content::check_cpu_set_fits(config.cpus.as_ref(), args.smp)?;
    }
    qemu.extra_args = args.qemu_args;
    qemu.timeout = Duration::from_secs(args.timeout);
    if args.icount.is_some() && args.accel == Accel::Kvm {
        bail!("--icount needs TCG (QEMU counts instructions only under software emulation)");
    }
    let emulated = args.pmu == Some(PmuMode::Emulated);
    if emulated {
        if args.accel == Accel::Kvm {
            bail!(
                "--pmu emulated is a model in QEMU's software emulation: use --accel tcg (or auto)"
            );
        }
        // The model counts from QEMU's instruction counter: -icount is required.
        qemu.icount = Some(args.icount.unwrap_or(0));
        qemu.pmu_model = Some(args.pmu_model);
        qemu.pmu_uarch = args.uarch;
        qemu.pmu_uarch_latencies = args.uarch_latency.clone();
        qemu.binary = Some(baremark::qemu::emulated_pmu_qemu()?);
    } else {
        // Make sure QEMU is there before spending time on anything else.
        baremark::qemu::qemu_binary()?;
    }

    let (accel, reason) = if emulated {
        (
            Accel::Tcg,
            format!(
                "--pmu emulated: QEMU's PMU model {}{} under -icount shift={}",
                args.pmu_model.name(),
                if args.uarch {
                    " with its micro-architecture model"
                } else {
                    ""
                },
                qemu.icount.unwrap_or(0)
            ),
        )
    } else if args.icount.is_some() && args.accel == Accel::Auto {
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
    let request = BootRequest {
        config,
        qemu,
        log: args.log,
    };
    Ok((request, reason))
}

/// Boots, showing progress over the payloads and (with `print_records`) a line per record on
/// `human` (stdout, or stderr when stdout carries the perf format).
fn boot_live(
    request: &BootRequest,
    verbose: bool,
    print_records: bool,
    human: &mut dyn Write,
) -> Result<RunOutcome> {
    let mut progress = Progress::new(request.config.payloads.len(), verbose);
    let mut renderer = render::RecordRenderer::verbose(verbose);
    let outcome = session::boot(request, &mut |event| match event {
        Event::Record(record, _) => {
            progress.record(record);
            progress.suspend(|| {
                if verbose {
                    let _ = writeln!(human, "  {}", record.value);
                }
                if print_records && let Some(lines) = renderer.lines(record) {
                    let _ = writeln!(human, "{lines}");
                }
                let _ = human.flush();
            });
        }
        Event::Text(text) => {
            if verbose {
                progress.suspend(|| {
                    let _ = writeln!(human, "  | {text}");
                });
            }
        }
    });
    progress.finish();
    if print_records && let Some(lines) = renderer.finish() {
        let _ = writeln!(human, "{lines}");
    }
    outcome
}

/// The shared end of `run` and `report`: the results table (when the records hold results),
/// the perf-format lines and the files asked for.
fn finish_results(records: &[Record], output: &OutputArgs) -> Result<()> {
    cores::print_tables(records, &mut output.human());
    let res = match output::results(records) {
        Some(res) => {
            let table = table::render(&res, output.detail);
            let _ = writeln!(output.human(), "\n{}", table.trim_end());
            res
        }
        None if output.any() || output.perf_format().is_some() => Results::from_records(records),
        None => return Ok(()),
    };
    output::print_perf(&res, output);
    note(&output::write_files(&res, output)?);
    Ok(())
}

fn verdict_code(outcome: &RunOutcome) -> ExitCode {
    ExitCode::from(match outcome.verdict() {
        Verdict::Success => 0,
        Verdict::KernelFailure(_) => EXIT_KERNEL_FAILURE,
        Verdict::NoEndRecord(_) => EXIT_NO_END,
        Verdict::Timeout => EXIT_TIMEOUT,
    })
}

fn run(args: RunArgs) -> Result<ExitCode> {
    args.output.check()?;
    // The gate's files and names before anything boots.
    args.gate.precheck()?;
    // The sampling options' own mistakes before anything boots; the event is encoded once the
    // PMU is known (below).
    if !args.sample.is_empty() {
        precheck_samples(&args.sample)?;
    }
    let sampling = !args.sample.is_empty();
    let elves = if sampling {
        args.profile.svg_dir()?;
        Some(ProfileArgs::elves(&args.profile)?)
    } else {
        None
    };
    if let Some(words) = &args.system
        && words.contains(['\n', '\r'])
    {
        bail!("--system {words:?}: one line of 0xWORD,... (no line break)");
    }
    let mut selection = content::collect_payloads(&args.payloads)?;
    let background = content::apply_background(&args.background, &mut selection)?;
    let content::Selection {
        payloads,
        pins,
        mut notes,
    } = selection;
    let arg_members = content::payload_args(&args.payloads, &payloads)?;
    let mut config = RunConfig {
        on_end: OnEnd::QemuExit,
        extra_members: arg_members,
        pins,
        background,
        cpus: args.payloads.cpus.clone(),
        test: args.test,
        test_phantom_cpu: args.test_phantom_cpu,
        timer_checks: !args.no_timer_checks,
        selftest: args.selftest,
        canary: args.canary,
        payloads,
        quantum_us: args.quantum_us.unwrap_or(0),
        task_budget_ms: args.task_budget_ms,
        extra_lines: args
            .system
            .iter()
            .map(|words| format!("system = {words}"))
            .collect(),
        ..RunConfig::default()
    };
    notes.extend(content::apply_harness(&args.harness, &mut config)?);
    note(&notes);
    let log = args.qemu.log.clone();
    let (mut request, reason) = prepare_boot(args.qemu, config)?;
    let samples = if sampling {
        let (caps, what) = sampling_pmu(&request.qemu)?;
        let specs = profile::spec::encode(&args.sample, &caps, &what)?;
        request.config.sample = Some(profile::spec::config_value(&specs));
        note(&[format!(
            "sampling {} on {what}",
            specs
                .iter()
                .map(|s| format!("{} (word {:#x}) every {} events", s.event, s.word, s.period))
                .collect::<Vec<_>>()
                .join(", ")
        )]);
        specs
    } else {
        Vec::new()
    };
    let outcome = boot_live(&request, args.verbose, true, &mut args.output.human())?;
    finish_results(&outcome.records, &args.output)?;
    if let Some(elves) = elves {
        let elves = elves.with_packed(&request.config.payloads);
        let names: Vec<String> = samples.iter().map(|s| s.event.clone()).collect();
        print_profiles(
            &outcome.records,
            &elves,
            &names,
            &args.profile,
            &args.output,
        )?;
    }
    let _ = writeln!(
        args.output.human(),
        "{}",
        session::outcome_lines(&outcome, &reason)
    );
    if let Some(log) = &log {
        eprintln!("baremark: serial log saved to {}", log.display());
    }
    let passed = gate::finish_run(
        &args.gate,
        &outcome.records,
        log.as_deref(),
        &mut args.output.human(),
    )?;
    Ok(match outcome.verdict() {
        Verdict::Success if !passed => ExitCode::from(gate::EXIT_EXPECTATION),
        _ => verdict_code(&outcome),
    })
}

/// Checks the `--sample` arguments before the PMU is known (before QEMU starts): accepted when
/// an Intel or an AMD PMU takes them, else the first's error.
fn precheck_samples(args: &[String]) -> Result<()> {
    let encode = |model: PmuModel| profile::spec::encode(args, &model.caps(), "the PMU");
    match encode(PmuModel::IntelV4) {
        Ok(_) => Ok(()),
        Err(e) => encode(PmuModel::AmdCore).map(|_| ()).map_err(|_| e),
    }
}

/// The PMU a run's `--sample` events are encoded for: the emulated model's, the host's under
/// KVM (its guest sees the host's vendor and events); plain TCG has no counters.
fn sampling_pmu(qemu: &QemuOptions) -> Result<(events::pmu::PmuCaps, String)> {
    if let Some(model) = qemu.pmu_model {
        return Ok((model.caps(), format!("the emulated PMU ({})", model.name())));
    }
    if qemu.accel == Accel::Kvm {
        let (caps, origin) = events_cli::host_caps();
        return Ok((caps, format!("KVM's virtual PMU ({origin})")));
    }
    bail!(
        "--sample needs hardware counters, and QEMU's plain TCG emulates none: add --pmu \
         emulated (baremark's PMU model) or run under KVM with a virtual PMU"
    )
}

/// The profiles of `records` after the results: the text, then the SVGs written.
fn print_profiles(
    records: &[Record],
    elves: &profile::ElfSource,
    names: &[String],
    args: &ProfileArgs,
    output: &OutputArgs,
) -> Result<()> {
    let dir = args.svg_dir()?;
    let (text, files) = profile::report(records, elves, names, Some(&dir))?;
    let mut human = output.human();
    if text.is_empty() {
        // The kernel says why in a config_error (a key it does not know) or an error record
        // (`source: sampling`: the events could not be configured): show it.
        let refused = records
            .iter()
            .filter(|r| {
                r.kind == "config_error"
                    || (r.kind == "error" && r.str("source") == Some("sampling"))
            })
            .filter_map(|r| r.str("message"))
            .find(|m| m.contains("`sample`") || m.contains("sampl"));
        let why = match refused {
            Some(m) => format!("the kernel did not sample: {m}"),
            None => "did a payload task run? the kernel samples ring-3 tasks only".to_string(),
        };
        let _ = writeln!(human, "\nPROFILE  no samples in the records: {why}");
        return Ok(());
    }
    let _ = writeln!(human, "\n{}", text.trim_end());
    for f in files {
        eprintln!("baremark: wrote {}", f.display());
    }
    Ok(())
}

/// `count`: one payload, only its results.
fn count(args: CountArgs) -> Result<ExitCode> {
    let mut measure = args.measure;
    measure.output.check()?;
    // `NAME@3` / `FILE.elf@3`: `@` and digits at the end are the CPU (a file's path may hold
    // another `@`).
    let (name, cpu) = content::split_pin("count", &args.payload, false)?;
    match (cpu, measure.on_cpu) {
        (Some(a), Some(b)) if a != b => {
            bail!(
                "count {}: CPU {a} there, but --on-cpu {b}: give one",
                args.payload
            )
        }
        (Some(a), _) => measure.on_cpu = Some(a),
        _ => {}
    }
    if let (Some(cpu), Some(cpus)) = (measure.on_cpu, &measure.cpus) {
        bail!(
            "count {}: CPU {cpu} there, but --cpus {}: give one",
            args.payload,
            cpus.to_text()
        );
    }
    let path = PathBuf::from(name);
    let payload = if path.is_file() || name.ends_with(".elf") {
        content::read_payload_file(&path)?
    } else {
        let p = baremark::payloads::builtin(name).with_context(|| {
            format!(
                "`{name}` is neither a file nor a built-in payload (there are: {})",
                baremark::payloads::builtin_names().join(", ")
            )
        })?;
        (p.name.to_string(), p.elf.to_vec())
    };
    let (outcome, _) = measure_one(payload, measure)?;
    Ok(verdict_code(&outcome))
}

/// `count` and `asm`: boots with one payload and prints its benchmarks' own tables (`perf
/// stat` for one payload), the perf-format lines and the files asked for.
fn measure_one(payload: content::NamedElf, m: MeasureArgs) -> Result<(RunOutcome, Results)> {
    m.output.check()?;
    let pins = m.on_cpu.map(|cpu| (payload.0.clone(), cpu));
    let mut config = RunConfig {
        on_end: OnEnd::QemuExit,
        payloads: vec![payload],
        pins: pins.into_iter().collect(),
        cpus: m.cpus.clone(),
        task_budget_ms: m.task_budget_ms,
        ..RunConfig::default()
    };
    note(&content::apply_harness(&m.harness, &mut config)?);
    let (request, reason) = prepare_boot(m.qemu, config)?;
    let mut human = m.output.human();
    let outcome = boot_live(&request, m.verbose, false, &mut human)?;
    let res = Results::from_records(&outcome.records);
    let _ = writeln!(human, "{}", table::render(&res, true).trim_end());
    output::print_perf(&res, &m.output);
    note(&output::write_files(&res, &m.output)?);
    if outcome.verdict() != Verdict::Success {
        let _ = writeln!(human, "{}", session::outcome_lines(&outcome, &reason));
    } else if res.benchmarks.is_empty() {
        eprintln!(
            "baremark: the payload reported no benchmark (is it built with baremark_sdk::bench?)"
        );
    }
    Ok((outcome, res))
}

/// Code from the command line, or from a file for `@FILE` (and `--file`).
fn asm_code(part: baremark::asm::Part, text: &str) -> Result<baremark::asm::Code> {
    if let Some(path) = text.strip_prefix('@') {
        return asm_file(part, Path::new(path));
    }
    Ok(baremark::asm::Code {
        part,
        origin: part.option().to_string(),
        text: text.to_string(),
    })
}

fn asm_file(part: baremark::asm::Part, path: &Path) -> Result<baremark::asm::Code> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(baremark::asm::Code {
        part,
        origin: path.display().to_string(),
        text,
    })
}

/// `asm`: assemble, link, then measure it like `count` does.
fn asm(args: AsmArgs) -> Result<ExitCode> {
    use baremark::asm::Part;
    args.measure.output.check()?;
    let code = match (&args.code, &args.file) {
        (_, Some(path)) => asm_file(Part::Code, path)?,
        (Some(text), None) => asm_code(Part::Code, text)?,
        (None, None) => bail!("give the code to benchmark (CODE or --file FILE)"),
    };
    let optional =
        |part, text: &Option<String>| text.as_deref().map(|t| asm_code(part, t)).transpose();
    let spec = baremark::asm::Spec {
        name: args.name.clone(),
        syntax: args.syntax,
        code,
        init: optional(Part::Init, &args.init)?,
        late_init: optional(Part::LateInit, &args.late_init)?,
        one_time_init: optional(Part::OneTimeInit, &args.one_time_init)?,
        unroll: args.unroll,
        loop_count: args.loop_count,
        align: args.align,
    };
    let temp = tempfile::tempdir().context("creating a temporary folder")?;
    let dir = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir.clone()
        }
        None => temp.path().to_path_buf(),
    };
    let built = match baremark::asm::build(&spec, &dir) {
        Ok(built) => built,
        Err(e) => {
            // A rejected statement is the user's to fix: say where, and no "error: error".
            let rejected = e.downcast::<baremark::asm::AsmError>()?;
            eprint!("baremark: error: {rejected}");
            return Ok(ExitCode::from(EXIT_ERROR));
        }
    };
    for w in &built.warnings {
        eprint!(
            "baremark: {}",
            baremark::asm::render(w, &spec.codes()).trim_start()
        );
    }
    if let Some(dir) = &args.keep {
        eprintln!(
            "baremark: kept {}/{{{name}.s,{name}.o,{name}.elf}}",
            dir.display(),
            name = spec.name
        );
    }
    if args.build_only {
        return Ok(ExitCode::SUCCESS);
    }
    let mut measure = args.measure;
    // nanoBench's measurement: (2U copies) - (U copies), the fixed part gone.
    measure.harness.overhead = measure.harness.overhead.or(Some(image::Overhead::Diff));
    eprintln!(
        "baremark: {} copies of the code per region (unroll {}{}); values are per copy",
        spec.iterations(),
        spec.unroll,
        if spec.loop_count > 0 {
            format!(" x loop {}", spec.loop_count)
        } else {
            String::new()
        }
    );
    let (outcome, res) = measure_one((spec.name.clone(), built.elf), measure)?;
    // A fault in the user's code: say where, in the user's terms.
    let mut faulted = false;
    for r in outcome.records.iter().filter(|r| r.kind == "fault") {
        faulted = true;
        let rip = r
            .str("rip")
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
        if let Some(place) = rip.and_then(|rip| baremark::asm::locate(&spec, &built.symbols, rip)) {
            eprintln!(
                "baremark: the task faulted ({} {}) {place}; the code runs in ring 3 (docs/asm.md)",
                r.str("mnemonic").unwrap_or("?"),
                r.str("name").unwrap_or("?")
            );
        }
    }
    let code = verdict_code(&outcome);
    if code == ExitCode::SUCCESS && (faulted || !res.errors.is_empty()) {
        return Ok(ExitCode::from(EXIT_KERNEL_FAILURE));
    }
    Ok(code)
}

fn write_images(args: ImageArgs) -> Result<()> {
    if args.bios.is_none() && args.uefi.is_none() && args.usb.is_none() {
        bail!("say where to write the image: --usb FILE (BIOS and UEFI), --bios FILE, --uefi FILE");
    }
    let content::Selection {
        payloads,
        pins,
        mut notes,
    } = content::collect_payloads(&args.payloads)?;
    let arg_members = content::payload_args(&args.payloads, &payloads)?;
    let mut config = RunConfig {
        on_end: args.on_end,
        extra_members: arg_members,
        pins,
        cpus: args.payloads.cpus.clone(),
        payloads,
        task_budget_ms: args.task_budget_ms,
        selftest: args.selftest,
        ..RunConfig::default()
    };
    notes.extend(content::apply_harness(&args.harness, &mut config)?);
    note(&notes);
    let images = [
        ("USB (BIOS and UEFI)", &args.usb),
        ("BIOS", &args.bios),
        ("UEFI", &args.uefi),
    ];
    for (what, path) in images {
        let Some(path) = path else { continue };
        let place = match what {
            "BIOS" => image::build_image(Firmware::Bios, &config, path).map(|()| None)?,
            "UEFI" => image::build_image(Firmware::Uefi, &config, path).map(|()| None)?,
            _ => image::build_usb_image(
                &config,
                path,
                (args.results_mib > 0).then_some(args.results_mib),
            )?,
        };
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        println!(
            "wrote {what} image: {} ({} KiB, {} payloads)",
            path.display(),
            size / 1024,
            config.payloads.len()
        );
        if let Some(place) = place {
            println!(
                "  results file {}: {} MiB at sectors {}..{}, disk signature {:#010x}; after the \
                 run: baremark report /media/.../BAREMARK/RESULTS.LOG",
                baremark::stick::RESULTS_LOG,
                place.sectors / 2048,
                place.lba,
                place.lba + place.sectors,
                place.disk_signature
            );
        }
    }
    println!(
        "write it to a USB stick with: sudo dd if=IMAGE of=/dev/sdX bs=4M conv=fsync status=progress"
    );
    Ok(())
}

/// `report`: the log is read robustly (`logscan`): each run is rendered from its intact
/// records, then what was lost or is doubtful, and where. Exit 0, 1 (a run's end record says
/// fail), 5 (damaged: records lost or doubtful), 3 (a run has no end record), 2 (no records).
fn report(
    log: &Path,
    output: &OutputArgs,
    profile: Option<&ProfileArgs>,
    gate_args: &gate::GateArgs,
) -> Result<ExitCode> {
    output.check()?;
    gate_args.precheck()?;
    let mut gate_passed = true;
    let elves = match profile {
        Some(args) => {
            args.svg_dir()?;
            Some(ProfileArgs::elves(args)?)
        }
        None => None,
    };
    let input = baremark::stick::read_input(log)?;
    note(&input.notes);
    let scan = logscan::scan(&input.stream);
    if scan.runs.is_empty() && scan.damage.is_empty() {
        bail!(
            "{} holds no baremark records (is it the raw serial output at 115200 baud?)",
            input.source
        );
    }
    let mut human = output.human();
    let shown: Vec<&logscan::Run> = scan.runs.iter().filter(|r| r.copy_of.is_none()).collect();
    let total = scan.runs.len();
    for (i, run) in shown.iter().enumerate() {
        if total > 1 {
            let _ = writeln!(
                human,
                "{}=== run {} of {total} (lines {}-{}) ===",
                if i > 0 { "\n" } else { "" },
                run.number,
                run.lines.0,
                run.lines.1
            );
        }
        let mut renderer = render::RecordRenderer::default();
        for record in &run.records {
            if let Some(lines) = renderer.lines(record) {
                let _ = writeln!(human, "{lines}");
            }
        }
        if let Some(lines) = renderer.finish() {
            let _ = writeln!(human, "{lines}");
        }
        let mut res = Results::from_records(&run.records);
        for (payload, bench, why) in &run.incomplete {
            res.mark_incomplete(payload, bench, why);
        }
        let relevant = output::has_results(&res, &run.records);
        if relevant {
            let table = table::render(&res, output.detail);
            let _ = writeln!(human, "\n{}", table.trim_end());
        }
        cores::print_tables(&run.records, &mut human);
        // The files hold one run: the last (a log appended to holds the newest last).
        let last = i + 1 == shown.len();
        if last {
            gate_passed = gate::finish(
                gate_args,
                &gate::Input {
                    results: &res,
                    records: Some(&run.records),
                    lines: Some(&run.record_lines),
                    source: input.source.clone(),
                    json: None,
                },
                &mut human,
            )?;
        }
        if last && (relevant || output.any() || output.perf_format().is_some()) {
            if shown.len() > 1 && (output.any() || output.perf_format().is_some()) {
                eprintln!(
                    "baremark: the results written are run {}'s (lines {}-{}), the last of the {total} runs in the log",
                    run.number, run.lines.0, run.lines.1
                );
            }
            output::print_perf(&res, output);
            note(&output::write_files(&res, output)?);
        }
        match (profile, &elves) {
            (Some(args), Some(elves)) => {
                print_profiles(&run.records, elves, &[], args, output)?;
            }
            _ if run.records.iter().any(records::is_profile_record) => {
                let _ = writeln!(
                    human,
                    "\nprofile  the log holds sampling profiles (run --sample): add --profile to see them"
                );
            }
            _ => {}
        }
    }
    if shown.is_empty() && (output.any() || output.perf_format().is_some()) {
        eprintln!("baremark: no record of a run survived in the log: no results written");
    }
    let summary = logscan::render(&scan, &input.source);
    if !summary.is_empty() {
        let _ = writeln!(human, "\n{}", summary.trim_end());
    }
    let _ = human.flush();
    Ok(match scan.verdict() {
        logscan::Verdict::Ok if !gate_passed => ExitCode::from(gate::EXIT_EXPECTATION),
        logscan::Verdict::Ok => ExitCode::SUCCESS,
        logscan::Verdict::KernelFailure => ExitCode::from(EXIT_KERNEL_FAILURE),
        logscan::Verdict::Damaged => {
            eprintln!(
                "baremark: the log is damaged: what was intact is rendered, the damage is listed above (exit status {EXIT_DAMAGED})"
            );
            ExitCode::from(EXIT_DAMAGED)
        }
        logscan::Verdict::NoEnd => {
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
        EventsCommand::Encode {
            specs,
            config,
            target,
        } => {
            if specs.is_empty() && config.is_none() {
                bail!(
                    "events encode: nothing to encode: give events in perf syntax (SPEC...) or a \
                     nanoBench config (--config FILE)"
                );
            }
            // A bad file is a usage error (2), before anything is printed.
            let config = match &config {
                Some(path) => Some((path, content::load_nanobench_config(path)?.1)),
                None => None,
            };
            let t = events_cli::target(
                target.cpu.as_deref(),
                target.core_type.as_deref(),
                target.perfmon.as_deref(),
            )?;
            let config = config
                .as_ref()
                .map(|(path, events)| (path.as_path(), events.as_slice()));
            let ok = events_cli::encode_cmd(&specs, config, &t, target.format)?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_KERNEL_FAILURE)
            })
        }
    }
}

//! What goes into an image besides the kernel: the payloads (built-ins, suites, files), the
//! harness settings (`events`, `reps`, `warmup`, `overhead`), with `--config` a nanoBench event
//! config and, with `--perfmon`, Intel's event tables. Shared by `run`, `image` and `count`,
//! checked on the host before anything is built.

pub use crate::image::{PIN_CPU_MAX, PINS_MAX};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use events::cpu::{CpuModel, Vendor};
use events::event::{EventDesc, NamedEvents};
use events::nanobench::{self, NanoBenchEvent};
use events::perfmon::{self, MapEntry};
use events::pmu::{CoreType, PmuCaps};
use events::table::EventTable;

use crate::image::{self, Overhead, RunConfig};
use crate::payloads;

/// What `--events` is when not given (perf stat's hardware defaults).
pub const DEFAULT_EVENTS: &str = "cycles,instructions,branches,branch-misses";

/// The harness settings of `run`, `image` and `count`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct HarnessArgs {
    /// Events to count besides the virtual TSC, in perf syntax: instructions,cycles:u,
    /// {branches,branch-misses}, r01c2, cpu/event=0x3c,umask=1/, BR_MISP_RETIRED.ALL_BRANCHES
    /// (with --perfmon). Checked here for syntax and known names; the kernel resolves them for
    /// the CPU it boots on and reports the ones it cannot count as <not supported>. Default:
    /// cycles,instructions,branches,branch-misses; `none`: only the virtual TSC.
    #[arg(long, value_name = "LIST")]
    pub events: Option<String>,
    /// A nanoBench event config file (nanoBench's option name): one `EvtSel.UMASK(.CMSK=N)
    /// (.EDG)(.INV)(.AnyT)(.CTR=n)(.TakenAlone)(.MSR_...=v) Name` line per event, as the
    /// configs uops.info uses. Counted in user mode, as nanoBench.sh does, and reported under
    /// the file's names. Replaces the default event set; with --events, both are counted.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Measured repetitions per benchmark (default: the kernel's, 20).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub reps: Option<u32>,
    /// Warm-up repetitions before the measured ones, not recorded (default: the kernel's, 5).
    #[arg(long, value_name = "W", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub warmup: Option<u32>,
    /// Overhead removal: empty (subtract an empty region, the default), diff (2U minus U
    /// iterations), none.
    #[arg(long, value_enum, value_name = "MODE")]
    pub overhead: Option<Overhead>,
    /// A copy of Intel's perfmon repository (with mapfile.csv): every core event file in it is
    /// packed as a compact table (`events/<cpu>.tab`), so the kernel knows the model-specific
    /// event names of whatever Intel CPU it boots on.
    #[arg(long, value_name = "DIR")]
    pub perfmon: Option<PathBuf>,
}

/// A payload to pack: its name and its ELF.
pub type NamedElf = (String, Vec<u8>);

/// The payload selection of `run` and `image`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct PayloadArgs {
    /// Run a payload ELF in ring 3 (repeatable; named after the file stem). `@CPU` at the end,
    /// digits only, runs it on that CPU (an index: 0 is the boot CPU; in QEMU give --smp):
    /// `bench.elf@3`. Any other `@` is part of the file's path.
    #[arg(long = "payload", value_name = "FILE.elf[@CPU]")]
    pub payloads: Vec<PathBuf>,
    /// Run a built-in payload (repeatable): hello, loop1000, loop2000, rdpmc, spin, spawner, and
    /// the benchmark suite's payloads. `NAME@CPU` runs it on that CPU (0 is the boot CPU, the
    /// default; in QEMU give --smp): `add-latency@3`.
    #[arg(long = "builtin", value_name = "NAME[@CPU]")]
    pub builtins: Vec<String>,
    /// Run a named list of built-in payloads (repeatable): default (the benchmark suite), core,
    /// memory, harness, none. Without --suite, --builtin or --payload: the default suite.
    /// Order: suites, then built-ins, then files. `NAME@CPU` runs all of them on that CPU.
    #[arg(long = "suite", value_name = "NAME[@CPU]")]
    pub suites: Vec<String>,
    /// Give payload NAME the argument text TEXT (repeatable; it reads it with the `args`
    /// syscall, e.g. `--args fuzz-syscalls="seed=7 calls=100000"`).
    #[arg(long = "args", value_name = "NAME=TEXT")]
    pub args: Vec<String>,
    /// Run the payloads on each of these CPUs in turn, the others idle: CPU indexes and ranges
    /// (`0,2-3`), `all` (every CPU started) or `each-type` (one CPU of each core type on a
    /// hybrid part, else CPU 0); the summary gets a column per CPU. A payload pinned with
    /// `NAME@CPU` still runs once, there.
    #[arg(long = "cpus", value_name = "LIST|all|each-type", value_parser = crate::image::CpuSet::parse)]
    pub cpus: Option<crate::image::CpuSet>,
}

/// The longest `--args` text (the kernel's `ARGS_MAX`).
pub const ARGS_MAX: usize = 4096;

/// The ramdisk members for `--args` (`args/<name>`), checked against the payloads packed.
pub fn payload_args(args: &PayloadArgs, payloads: &[NamedElf]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut members: Vec<(String, Vec<u8>)> = Vec::new();
    for arg in &args.args {
        let Some((name, text)) = arg.split_once('=') else {
            bail!("--args {arg}: give NAME=TEXT (the payload's name, then its argument text)");
        };
        if !payloads.iter().any(|(n, _)| n == name) {
            bail!(
                "--args {name}=...: no payload `{name}` is packed (there are: {})",
                payloads
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if text.len() > ARGS_MAX {
            bail!(
                "--args {name}=...: {} bytes; the most is {ARGS_MAX}",
                text.len()
            );
        }
        let path = format!("args/{name}");
        if members.iter().any(|(p, _)| *p == path) {
            bail!("--args {name}=... is given twice");
        }
        members.push((path, text.as_bytes().to_vec()));
    }
    Ok(members)
}

/// A payload to run on a chosen CPU: `(payload name, CPU index)` (run.cfg `pin`).
pub type Pin = (String, usize);

/// Splits `NAME@CPU` into the name and the CPU index. `option` names the option in errors.
///
/// Strict (`--builtin`, `--suite`: their names never hold `@`): any `@` starts a CPU index,
/// which must be there and be a number. Lenient (`--payload`, a file's path): only `@` and
/// digits at the very end are a CPU index; any other `@` is part of the path.
pub fn split_pin<'a>(option: &str, arg: &'a str, strict: bool) -> Result<(&'a str, Option<usize>)> {
    let Some((name, cpu)) = arg.rsplit_once('@') else {
        return Ok((arg, None));
    };
    let digits = !cpu.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit());
    if !digits {
        if !strict {
            return Ok((arg, None));
        }
        if cpu.is_empty() {
            bail!("{option} {arg}: give a CPU index after `@` (e.g. {name}@1; 0 is the boot CPU)");
        }
        bail!(
            "{option} {arg}: `{cpu}` is not a CPU index: after `@` comes the CPU's number (0 is the \
             boot CPU)"
        );
    }
    if name.is_empty() {
        bail!("{option} {arg}: give the payload before `@` (e.g. hello@{cpu})");
    }
    match cpu.parse::<usize>() {
        Ok(n) if n < PIN_CPU_MAX => Ok((name, Some(n))),
        _ => bail!(
            "{option} {arg}: CPU {cpu} is past the kernel's {PIN_CPU_MAX} CPUs (indexes 0 to {})",
            PIN_CPU_MAX - 1
        ),
    }
}

/// Refuses pins to CPUs a QEMU machine with `smp` CPUs does not have, before it boots (the
/// kernel would only report the payload as not run).
pub fn check_pins_fit(pins: &[Pin], smp: u32) -> Result<()> {
    check_cpus_fit(pins, smp, |name, cpu| {
        format!("payload `{name}` is pinned to CPU {cpu}")
    })
}

/// Refuses a `--cpus` list naming CPUs a QEMU machine with `smp` CPUs does not have, before it
/// boots.
pub fn check_cpu_set_fits(cpus: Option<&crate::image::CpuSet>, smp: u32) -> Result<()> {
    let Some(crate::image::CpuSet::List(list)) = cpus else {
        return Ok(());
    };
    let Some(&last) = list.last() else {
        return Ok(());
    };
    if last >= smp as usize {
        let have = if smp == 1 {
            "QEMU gets 1 CPU (index 0, the boot CPU)".to_string()
        } else {
            format!("QEMU gets {smp} CPUs (indexes 0 to {})", smp - 1)
        };
        let hint = if last < crate::image::SMP_MAX as usize {
            format!("add --smp {} (or more), or give --cpus all", last + 1)
        } else {
            format!(
                "QEMU's q35 machine has at most {} CPUs",
                crate::image::SMP_MAX
            )
        };
        bail!("--cpus names CPU {last}, but {have}: {hint}");
    }
    Ok(())
}

/// Refuses background payloads (`--background`) on CPUs a QEMU machine with `smp` CPUs does not
/// have, before it boots, as [`check_pins_fit`] does pins.
pub fn check_background_fit(background: &[Pin], smp: u32) -> Result<()> {
    check_cpus_fit(background, smp, |name, cpu| {
        format!("background payload `{name}` is to run on CPU {cpu}")
    })
}

fn check_cpus_fit(pins: &[Pin], smp: u32, what: impl Fn(&str, usize) -> String) -> Result<()> {
    let Some((name, cpu)) = pins.iter().max_by_key(|(_, cpu)| *cpu) else {
        return Ok(());
    };
    if *cpu >= smp as usize {
        let have = if smp == 1 {
            "QEMU gets 1 CPU (index 0, the boot CPU)".to_string()
        } else {
            format!("QEMU gets {smp} CPUs (indexes 0 to {})", smp - 1)
        };
        let hint = if *cpu < crate::image::SMP_MAX as usize {
            format!("add --smp {} (or more)", cpu + 1)
        } else {
            format!(
                "QEMU's q35 machine has at most {} CPUs (indexes 0 to {})",
                crate::image::SMP_MAX,
                crate::image::SMP_MAX - 1
            )
        };
        bail!("{}, but {have}: {hint}", what(name, *cpu));
    }
    Ok(())
}

/// The background payloads of `run --background NAME@CPU` (run.cfg `background`), in the order
/// given. NAME is a payload already selected (--builtin, --payload, --suite: it then runs in
/// the background instead of in the foreground) or else a built-in payload, which is packed
/// for it (after the others). CPU is 1 or more (CPU 0, the boot CPU, runs the others), one
/// background payload each CPU, and a background payload is not also pinned (`NAME@CPU` on its
/// --builtin, --payload or --suite). Returns the `(name, CPU)` pairs for run.cfg.
pub fn apply_background(args: &[String], sel: &mut Selection) -> Result<Vec<Pin>> {
    let mut background: Vec<Pin> = Vec::new();
    for arg in args {
        let (name, cpu) = split_pin("--background", arg, true)?;
        let Some(cpu) = cpu else {
            bail!(
                "--background {arg}: give the CPU it runs on, 1 or more (e.g. {name}@1; CPU 0, \
                 the boot CPU, runs the other payloads)"
            );
        };
        if cpu == 0 {
            bail!(
                "--background {arg}: CPU 0, the boot CPU, runs the other payloads: give CPU 1 or \
                 more (and --smp for QEMU)"
            );
        }
        if let Some((other, _)) = background.iter().find(|(n, c)| n == name || *c == cpu) {
            if other == name {
                bail!("--background {arg}: `{name}` is given twice");
            }
            bail!(
                "--background {arg}: CPU {cpu} already runs `{other}` (one background payload a CPU)"
            );
        }
        if let Some((_, at)) = sel.pins.iter().find(|(n, _)| n == name) {
            bail!(
                "--background {arg}: `{name}` is also given to run on CPU {at}; a payload runs \
                 either in the background or in the foreground"
            );
        }
        if let Some((other, _)) = sel.pins.iter().find(|(_, c)| *c == cpu) {
            bail!(
                "--background {arg}: payload `{other}` is to run on CPU {cpu} too, which runs \
                 `{name}` until the others are done: choose another CPU"
            );
        }
        if !sel.payloads.iter().any(|(n, _)| n == name) {
            let p = payloads::builtin(name).with_context(|| {
                format!(
                    "--background {arg}: `{name}` is neither a payload given (--builtin, \
                     --payload, --suite) nor a built-in payload (there are: {})",
                    payloads::builtin_names().join(", ")
                )
            })?;
            sel.payloads.push((p.name.to_string(), p.elf.to_vec()));
        }
        background.push((name.to_string(), cpu));
    }
    if background.len() > PINS_MAX {
        bail!(
            "{} background payloads; the kernel takes at most {PINS_MAX}",
            background.len()
        );
    }
    if !background.is_empty() && sel.payloads.len() == background.len() {
        sel.notes.push(
            "every payload runs in the background: nothing runs in the foreground, so they are \
             stopped as soon as they start"
                .to_string(),
        );
    }
    Ok(background)
}

/// What a run packs: the payloads, the CPUs some of them are pinned to, notes for the user.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub payloads: Vec<NamedElf>,
    /// Pins in the order the payloads are packed.
    pub pins: Vec<Pin>,
    pub notes: Vec<String>,
}

/// The payloads of a run: the suites named, then the built-ins, then the files, each in the
/// order given; with none of them, the default suite. Returns `(name, ELF)` pairs, the pins
/// (`NAME@CPU`) and notes for the user (e.g. that the default suite is not built in).
pub fn collect_payloads(args: &PayloadArgs) -> Result<Selection> {
    let mut notes = Vec::new();
    let mut payloads: Vec<NamedElf> = Vec::new();
    let mut pins: Vec<Pin> = Vec::new();
    let implicit = args.suites.is_empty() && args.builtins.is_empty() && args.payloads.is_empty();
    let suites: Vec<(&str, Option<usize>)> = if implicit {
        vec![(payloads::DEFAULT_SUITE, None)]
    } else {
        args.suites
            .iter()
            .map(|s| split_pin("--suite", s, true))
            .collect::<Result<_>>()?
    };
    for (name, cpu) in suites {
        match payloads::suite_payloads(name) {
            Ok(list) => {
                for p in list {
                    payloads.push((p.name.to_string(), p.elf.to_vec()));
                    pins.extend(cpu.map(|c| (p.name.to_string(), c)));
                }
            }
            // Before payloads/suite is built in, a plain `run` still boots (the report only).
            Err(e) if implicit => notes.push(format!("{e:#}; booting without payloads")),
            Err(e) => return Err(e),
        }
    }
    for arg in &args.builtins {
        let (name, cpu) = split_pin("--builtin", arg, true)?;
        let p = payloads::builtin(name).with_context(|| {
            format!(
                "no built-in payload `{name}` (there are: {})",
                payloads::builtin_names().join(", ")
            )
        })?;
        payloads.push((p.name.to_string(), p.elf.to_vec()));
        pins.extend(cpu.map(|c| (p.name.to_string(), c)));
    }
    for path in &args.payloads {
        let (path, cpu) = match path.to_str() {
            Some(text) => {
                let (file, cpu) = split_pin("--payload", text, false)?;
                (PathBuf::from(file), cpu)
            }
            None => (path.clone(), None),
        };
        let payload = read_payload_file(&path)?;
        pins.extend(cpu.map(|c| (payload.0.clone(), c)));
        payloads.push(payload);
    }
    let mut seen = BTreeMap::new();
    for (name, _) in &payloads {
        if seen.insert(name.as_str(), ()).is_some() {
            bail!(
                "payload `{name}` is given twice (results are keyed by payload name; rename the file)"
            );
        }
    }
    if pins.len() > PINS_MAX {
        bail!(
            "{} payloads are pinned to a CPU; the kernel takes at most {PINS_MAX} pins",
            pins.len()
        );
    }
    Ok(Selection {
        payloads,
        pins,
        notes,
    })
}

/// A payload file, named after its stem.
pub fn read_payload_file(path: &Path) -> Result<NamedElf> {
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
    let elf = std::fs::read(path).with_context(|| format!("reading payload {}", path.display()))?;
    Ok((name, elf))
}

/// Checks the harness settings and writes them into `config`: the event list is validated,
/// perfmon tables are packed. Returns notes for the user.
pub fn apply_harness(args: &HarnessArgs, config: &mut RunConfig) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let mut tables = Vec::new();
    if let Some(dir) = &args.perfmon {
        let pack = pack_perfmon(dir)?;
        notes.push(pack.summary());
        config.extra_members.extend(pack.members);
        tables = pack.tables;
    }
    if let Some(path) = &args.config {
        let (text, events) = load_nanobench_config(path)?;
        notes.push(format!(
            "--config {}: {} nanoBench events, counted in user mode (as nanoBench.sh)",
            path.display(),
            events.len()
        ));
        config.nanobench_config = Some(text);
    }
    // Like `perf stat`, some events by default: on a machine without counters they show what
    // is missing (`<not supported>`) next to the TSC figures. `--events none`: the TSC alone.
    // A nanoBench config replaces the defaults, as nanoBench counts only what its config names.
    let list = match (&args.events, &args.config) {
        (Some(list), _) => Some(list.as_str()),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_EVENTS),
    };
    if let Some(list) = list.filter(|l| l.trim() != "none") {
        validate_events(list, &tables)?;
        config.events = Some(list.trim().to_string());
    }
    config.reps = args.reps;
    config.warmup = args.warmup;
    config.overhead = args.overhead;
    Ok(notes)
}

/// PMUs an event list is checked against on the host: the kernel resolves the list for the CPU
/// it boots on, which the host does not know, so a name is accepted when any of these knows it.
/// Intel v4 (Skylake: AnyThread, 4 GP) and v5 (Sapphire Rapids: 8 GP, 4 fixed), AMD Zen 2
/// (PerfCtrExtCore), Zen 4 (PerfMonV2) and Zen 5.
const NEUTRAL_CPUS: [CpuModel; 5] = [
    CpuModel::new(Vendor::Intel, 6, 0x5e),
    CpuModel::new(Vendor::Intel, 6, 0x8f),
    CpuModel::new(Vendor::Amd, 0x17, 0x31),
    CpuModel::new(Vendor::Amd, 0x19, 0x11),
    CpuModel::new(Vendor::Amd, 0x1a, 0x02),
];

/// Names from several event tables (all the perfmon files packed), first match wins.
struct Tables<'a>(&'a [EventTable]);

impl NamedEvents for Tables<'_> {
    fn event(&self, name: &str) -> Option<EventDesc> {
        self.0.iter().find_map(|t| t.get(name).cloned())
    }
    fn all(&self) -> Vec<EventDesc> {
        self.0
            .iter()
            .flat_map(|t| t.events().iter().cloned())
            .collect()
    }
}

/// Checks an event list the way the kernel will parse it, without knowing the CPU: the syntax,
/// and that every name is known to some vendor's catalogue (or to a `--perfmon` table). The
/// error shows the list with carets under the problem.
pub fn validate_events(list: &str, tables: &[EventTable]) -> Result<()> {
    if list.trim().is_empty() {
        bail!("--events is empty: leave it out to count only the virtual TSC");
    }
    // run.cfg is line based and `#` starts a comment there: such a list would reach the
    // kernel cut short.
    if let Some(pos) = list.find(['#', '\n', '\r']) {
        let what = match list[pos..].chars().next() {
            Some('#') => "`#` (it starts a comment in run.cfg)",
            _ => "a line break",
        };
        bail!(
            "--events: at column {}: the list cannot contain {what}\n{}",
            pos + 1,
            caret(list, pos, 1)
        );
    }
    let named = Tables(tables);
    let mut best: Option<events::parse::ParseError> = None;
    for cpu in NEUTRAL_CPUS {
        let caps = PmuCaps::nominal(cpu);
        // Intel tables only make sense for an Intel PMU (the encodings differ).
        let named: Option<&dyn NamedEvents> =
            (cpu.vendor == Vendor::Intel && !tables.is_empty()).then_some(&named);
        match events::parse::parse(list, &caps, named) {
            Ok(_) => return Ok(()),
            // The error found furthest into the list is the most useful one: an earlier
            // position only means that PMU gave up sooner (e.g. on an AMD-only name).
            Err(e) if best.as_ref().is_none_or(|b| e.position > b.position) => best = Some(e),
            Err(_) => {}
        }
    }
    let e = best.expect("at least one PMU was tried");
    let hint = if matches!(e.kind, events::parse::ErrorKind::UnknownName(_)) && tables.is_empty() {
        " (model-specific Intel names need --perfmon DIR)"
    } else {
        ""
    };
    Err(anyhow!(
        "--events: {e}{hint}\n{}",
        indent(&e.caret_line(list))
    ))
}

/// Reads and checks a nanoBench config file (`--config`): its text, to pack as it is (the
/// kernel parses it again), and its events. Errors name the file, line and column, and show the
/// line with a caret under the problem.
pub fn load_nanobench_config(path: &Path) -> Result<(String, Vec<NanoBenchEvent>)> {
    let bytes =
        std::fs::read(path).with_context(|| format!("--config: reading {}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow!(
            "--config {}: line {line}: not UTF-8 text (at byte offset {at})",
            path.display()
        )
    })?;
    let events = nanobench::parse_config(&text).map_err(|e| {
        let line = text.split('\n').nth(e.line - 1).unwrap_or("");
        anyhow!(
            "--config {}: {e}\n{}",
            path.display(),
            column_caret(line, e.column)
        )
    })?;
    if events.is_empty() {
        bail!(
            "--config {}: no event lines (only comments and blank lines); nanoBench's format is \
             one `EvtSel.UMASK[.options] Name` per line, e.g. `C0.00 INST_RETIRED.ANY_P`",
            path.display()
        );
    }
    Ok((text, events))
}

/// `line` indented, and a caret under its 1-based character `column` (tabs shown as one space
/// each, so the caret stays under the character the column counts).
fn column_caret(line: &str, column: usize) -> String {
    let shown: String = line
        .trim_end_matches(['\r', '\n'])
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    format!("    {shown}\n    {}^", " ".repeat(column.saturating_sub(1)))
}

fn caret(input: &str, pos: usize, len: usize) -> String {
    let pad = input[..pos].chars().count();
    indent(&format!(
        "{}\n{}{}",
        input.replace(['\n', '\r'], " "),
        " ".repeat(pad),
        "^".repeat(len.max(1))
    ))
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Event tables packed from a perfmon repository.
#[derive(Debug, Default)]
pub struct PerfmonPack {
    /// `(events/<cpu>.tab, bytes)`, sorted by name.
    pub members: Vec<(String, Vec<u8>)>,
    /// The tables, for checking `--events` names on the host.
    pub tables: Vec<EventTable>,
    /// Core event files read.
    pub files: usize,
    /// Core event files mapfile.csv lists that the folder does not have.
    pub absent: usize,
    /// Events the importer could not convert (reported on stderr).
    pub skipped: usize,
    pub dir: PathBuf,
}

impl PerfmonPack {
    pub fn bytes(&self) -> usize {
        self.members.iter().map(|(_, b)| b.len()).sum()
    }

    /// One line for the user.
    pub fn summary(&self) -> String {
        format!(
            "perfmon: packed {} event tables ({} KiB) from {} core event files in {}{}{}",
            self.members.len(),
            self.bytes().div_ceil(1024),
            self.files,
            self.dir.display(),
            if self.absent > 0 {
                format!(
                    "; {} files mapfile.csv lists are not there (their CPUs get no table)",
                    self.absent
                )
            } else {
                String::new()
            },
            if self.skipped > 0 {
                format!(
                    "; {} events could not be converted exactly and were left out",
                    self.skipped
                )
            } else {
                String::new()
            }
        )
    }
}

/// The ramdisk member for a table: `events/GenuineIntel-6-55.tab`, with the stepping when the
/// mapfile row depends on it (`events/GenuineIntel-6-55-4.tab`) and the core role on hybrid
/// parts (`events/GenuineIntel-6-97-core.tab`, `-atom`, `-lowpower_atom`).
pub fn table_member(cpu: &CpuModel, role: Option<&str>) -> String {
    match role {
        Some(role) => format!("events/{cpu}-{}.tab", role.to_ascii_lowercase()),
        None => format!("events/{cpu}.tab"),
    }
}

/// The concrete CPUs (vendor-family-model, with a stepping only when the row depends on it)
/// that a mapfile row's `Family-model` pattern covers.
fn row_cpus(entry: &MapEntry) -> Vec<CpuModel> {
    let mut parts = entry.family_model.split('-');
    let vendor = parts.next().and_then(Vendor::from_cpuid_name);
    let family = parts.next().and_then(|f| f.parse::<u32>().ok());
    let (Some(vendor), Some(family)) = (vendor, family) else {
        return Vec::new();
    };
    let mut cpus = Vec::new();
    // Display models are 8 bits (extended model, model).
    for model in 0..=0xffu32 {
        let cpu = CpuModel::new(vendor, family, model);
        if !entry.matches(&cpu) {
            continue;
        }
        let steppings: Vec<u32> = (0..=0xf)
            .filter(|&s| {
                entry.matches(&CpuModel {
                    stepping: Some(s),
                    ..cpu
                })
            })
            .collect();
        if steppings.len() == 16 {
            cpus.push(cpu);
        } else {
            cpus.extend(steppings.into_iter().map(|s| CpuModel {
                stepping: Some(s),
                ..cpu
            }));
        }
    }
    cpus
}

/// Imports every core event file that `dir/mapfile.csv` lists and `dir` has, as one compact
/// table (without descriptions) per CPU the mapfile maps to it.
pub fn pack_perfmon(dir: &Path) -> Result<PerfmonPack> {
    let mapfile_path = dir.join("mapfile.csv");
    if !mapfile_path.is_file() {
        bail!(
            "--perfmon {}: no mapfile.csv there; point it at a copy of Intel's perfmon repository \
             (github.com/intel/perfmon), which maps CPUs to event files",
            dir.display()
        );
    }
    let map = perfmon::load_mapfile(&mapfile_path).map_err(|e| anyhow!("--perfmon: {e}"))?;
    let mut pack = PerfmonPack {
        dir: dir.to_path_buf(),
        ..PerfmonPack::default()
    };
    let mut imported: BTreeMap<PathBuf, Option<perfmon::Imported>> = BTreeMap::new();
    let mut members: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for entry in map.entries.iter().filter(|e| e.is_core()) {
        let Some(path) = entry.path_under(dir) else {
            continue;
        };
        if !imported.contains_key(&path) {
            let loaded = if path.is_file() {
                let got =
                    perfmon::load_events_file(&path).map_err(|e| anyhow!("--perfmon: {e}"))?;
                for issue in &got.skipped {
                    eprintln!("baremark: perfmon: skipped {issue}");
                }
                pack.skipped += got.skipped.len();
                pack.files += 1;
                pack.tables.push(
                    got.to_table(&path.display().to_string(), None, entry.core_type)
                        .map_err(|e| anyhow!("--perfmon: {e}"))?,
                );
                Some(got)
            } else {
                pack.absent += 1;
                None
            };
            imported.insert(path.clone(), loaded);
        }
        let Some(Some(events)) = imported.get(&path) else {
            continue;
        };
        let core_type: Option<CoreType> = entry.core_type;
        let role = core_type.map(|ct| {
            entry
                .core_role
                .clone()
                .unwrap_or_else(|| ct.perfmon_name().to_string())
        });
        let cpus = row_cpus(entry);
        if cpus.is_empty() {
            eprintln!(
                "baremark: perfmon: {}:{}: Family-model `{}` names no CPU this tool can spell; skipped",
                mapfile_path.display(),
                entry.line,
                entry.family_model
            );
        }
        for cpu in cpus {
            let name = table_member(&cpu, role.as_deref());
            if members.contains_key(&name) {
                continue; // an earlier row already mapped this CPU (mapfile order wins)
            }
            let table = events
                .to_table(&path.display().to_string(), Some(cpu), core_type)
                .map_err(|e| anyhow!("--perfmon: {e}"))?;
            members.insert(name, table.to_bytes_without_descriptions());
        }
    }
    if pack.files == 0 {
        bail!(
            "--perfmon {}: none of the core event files mapfile.csv lists is there",
            dir.display()
        );
    }
    pack.members = members.into_iter().collect();
    Ok(pack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_is_chosen_after_the_name() {
        assert_eq!(
            split_pin("--builtin", "add-latency@3", true).unwrap(),
            ("add-latency", Some(3))
        );
        assert_eq!(
            split_pin("--builtin", "hello", true).unwrap(),
            ("hello", None)
        );
        assert_eq!(
            split_pin("--builtin", "hello@0", true).unwrap(),
            ("hello", Some(0))
        );
        assert_eq!(
            split_pin("--builtin", "h@511", true).unwrap(),
            ("h", Some(511))
        );
        for (bad, why) in [
            ("hello@", "give a CPU index after `@`"),
            ("hello@x", "`x` is not a CPU index"),
            ("hello@-1", "`-1` is not a CPU index"),
            ("hello@3 ", "`3 ` is not a CPU index"),
            ("@3", "give the payload before `@`"),
            ("hello@512", "past the kernel's 512 CPUs"),
            (
                "hello@99999999999999999999999",
                "past the kernel's 512 CPUs",
            ),
        ] {
            let e = format!("{:#}", split_pin("--builtin", bad, true).unwrap_err());
            assert!(e.starts_with(&format!("--builtin {bad}: ")), "{e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
        // A file's path: only `@` and digits at the end choose the CPU.
        assert_eq!(
            split_pin("--payload", "/tmp/a@b/x.elf@2", false).unwrap(),
            ("/tmp/a@b/x.elf", Some(2))
        );
        for path in ["/tmp/a@b/x.elf", "x@y.elf", "x.elf@", "/tmp/a@3/x.elf"] {
            assert_eq!(split_pin("--payload", path, false).unwrap(), (path, None));
        }
        assert!(split_pin("--payload", "x.elf@512", false).is_err());
    }

    #[test]
    fn pins_come_with_the_payloads_and_reach_run_cfg() {
        let args = PayloadArgs {
            builtins: vec!["hello@3".into(), "loop1000".into()],
            ..PayloadArgs::default()
        };
        let sel = collect_payloads(&args).unwrap();
        let names: Vec<&str> = sel.payloads.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["hello", "loop1000"]);
        assert_eq!(sel.pins, [("hello".to_string(), 3)]);
        let config = RunConfig {
            payloads: sel.payloads,
            pins: sel.pins,
            ..RunConfig::default()
        };
        assert!(
            config.to_text().contains("\npin = hello@3\n"),
            "{}",
            config.to_text()
        );
        image::build_ramdisk(&config).unwrap();
        // A file: named after its stem, the CPU after the last `@`.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bench.elf");
        std::fs::write(&file, b"\x7fELF").unwrap();
        let args = PayloadArgs {
            payloads: vec![PathBuf::from(format!("{}@2", file.display()))],
            ..PayloadArgs::default()
        };
        let sel = collect_payloads(&args).unwrap();
        assert_eq!(sel.payloads[0].0, "bench");
        assert_eq!(sel.pins, [("bench".to_string(), 2)]);
        // The name is checked as a built-in's after the CPU is taken off.
        let args = PayloadArgs {
            builtins: vec!["nosuch@1".into()],
            ..PayloadArgs::default()
        };
        let e = format!("{:#}", collect_payloads(&args).unwrap_err());
        assert!(e.contains("no built-in payload `nosuch`"), "{e}");
    }

    #[test]
    fn background_payloads_are_packed_checked_and_reach_run_cfg() {
        let select = |builtins: &[&str]| {
            collect_payloads(&PayloadArgs {
                builtins: builtins.iter().map(|b| b.to_string()).collect(),
                ..PayloadArgs::default()
            })
            .unwrap()
        };
        let bg = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        // A built-in not given otherwise is packed after the others.
        let mut sel = select(&["add-latency@1"]);
        let background = apply_background(&bg(&["spin@2"]), &mut sel).unwrap();
        assert_eq!(background, [("spin".to_string(), 2)]);
        let names: Vec<&str> = sel.payloads.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["add-latency", "spin"]);
        assert!(sel.notes.is_empty(), "{:?}", sel.notes);
        let config = RunConfig {
            payloads: sel.payloads,
            pins: sel.pins,
            background,
            ..RunConfig::default()
        };
        let text = config.to_text();
        assert!(
            text.contains(
                "
pin = add-latency@1
"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "
background = spin@2
"
            ),
            "{text}"
        );
        image::build_ramdisk(&config).unwrap();
        // A payload given already runs in the background instead (packed once).
        let mut sel = select(&["hello", "loop1000"]);
        apply_background(&bg(&["loop1000@3"]), &mut sel).unwrap();
        assert_eq!(sel.payloads.len(), 2);
        // Only background payloads: said.
        let mut sel = select(&["spin"]);
        apply_background(&bg(&["spin@1"]), &mut sel).unwrap();
        assert!(
            sel.notes[0].contains("nothing runs in the foreground"),
            "{:?}",
            sel.notes
        );
        // Mistakes, refused before anything boots.
        for (given, args, why) in [
            (
                &["hello"][..],
                &["spin"][..],
                "give the CPU it runs on, 1 or more",
            ),
            (
                &["hello"],
                &["spin@0"],
                "CPU 0, the boot CPU, runs the other payloads",
            ),
            (&["hello"], &["spin@x"], "is not a CPU index"),
            (&["hello"], &["spin@512"], "past the kernel's 512 CPUs"),
            (
                &["hello"],
                &["nosuch@1"],
                "`nosuch` is neither a payload given",
            ),
            (&["hello"], &["spin@1", "spin@2"], "`spin` is given twice"),
            (
                &["hello"],
                &["spin@1", "loop1000@1"],
                "CPU 1 already runs `spin`",
            ),
            (
                &["spin@1"],
                &["spin@2"],
                "`spin` is also given to run on CPU 1",
            ),
            (
                &["hello@2"],
                &["spin@2"],
                "payload `hello` is to run on CPU 2 too",
            ),
        ] {
            let mut sel = select(given);
            let e = format!("{:#}", apply_background(&bg(args), &mut sel).unwrap_err());
            assert!(e.contains(why), "{args:?}: {e}");
        }
        // Its CPU must be in the machine, like a pin's.
        check_background_fit(&[("spin".into(), 3)], 4).unwrap();
        let e = format!(
            "{:#}",
            check_background_fit(&[("spin".into(), 2)], 2).unwrap_err()
        );
        assert_eq!(
            e,
            "background payload `spin` is to run on CPU 2, but QEMU gets 2 CPUs (indexes 0 to 1): add --smp 3 (or more)"
        );
    }

    #[test]
    fn a_pin_past_the_machines_cpus_is_refused_before_booting() {
        let pins = vec![("a".to_string(), 1), ("b".to_string(), 3)];
        check_pins_fit(&pins, 4).unwrap();
        check_pins_fit(&[], 1).unwrap();
        let e = format!("{:#}", check_pins_fit(&pins, 2).unwrap_err());
        assert_eq!(
            e,
            "payload `b` is pinned to CPU 3, but QEMU gets 2 CPUs (indexes 0 to 1): add --smp 4 (or more)"
        );
        let e = format!("{:#}", check_pins_fit(&pins[..1], 1).unwrap_err());
        assert!(
            e.contains("QEMU gets 1 CPU (index 0, the boot CPU): add --smp 2"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            check_pins_fit(&[("c".into(), 300)], 288).unwrap_err()
        );
        assert!(e.contains("at most 288 CPUs"), "{e}");
    }

    #[test]
    fn event_lists_are_checked_without_knowing_the_vendor() {
        for ok in [
            "instructions,cycles",
            "{branches,branch-misses}:u",
            "r01c2",
            "cpu/event=0x3c,umask=1/",
            // AMD-only: the host accepts it, the kernel decides on the machine.
            "ls_not_halted_cyc",
            "instructions:H",
            " instructions , cycles:k ",
        ] {
            validate_events(ok, &[]).unwrap_or_else(|e| panic!("{ok}: {e:#}"));
        }
        let e = validate_events("instructions,cyclez", &[]).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("at column 14: unknown event name `cyclez`"),
            "{msg}"
        );
        assert!(
            msg.contains("    instructions,cyclez\n                 ^^^^^^"),
            "{msg}"
        );
        let e = format!("{:#}", validate_events("{instructions", &[]).unwrap_err());
        assert!(e.contains("^"), "{e}");
        let e = format!("{:#}", validate_events("cpu/name='a#b'/", &[]).unwrap_err());
        assert!(e.contains("column 12") && e.contains("comment"), "{e}");
        assert!(validate_events("  ", &[]).is_err());
        let e = format!(
            "{:#}",
            validate_events("MACHINE_CLEARS.COUNT", &[]).unwrap_err()
        );
        assert!(e.contains("--perfmon"), "{e}");
    }

    #[test]
    fn harness_settings_reach_run_cfg() {
        let mut config = RunConfig::default();
        let args = HarnessArgs {
            events: Some(" instructions,{cycles,branches}:u ".into()),
            reps: Some(50),
            warmup: Some(0),
            overhead: Some(Overhead::Diff),
            perfmon: None,
            config: None,
        };
        apply_harness(&args, &mut config).unwrap();
        let text = config.to_text();
        assert!(
            text.contains("events = instructions,{cycles,branches}:u\n"),
            "{text}"
        );
        assert!(text.contains("reps = 50\n"), "{text}");
        assert!(text.contains("warmup = 0\n"), "{text}");
        assert!(text.contains("overhead = diff\n"), "{text}");
        // Nothing asked: no key, so the kernel's defaults apply.
        let text = RunConfig::default().to_text();
        for key in ["events", "reps", "warmup", "overhead"] {
            assert!(!text.contains(&format!("{key} =")), "{text}");
        }
    }

    fn config_file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        f
    }

    const NB: &str =
        "# counted by baremark\nC0.00 INST_RETIRED.ANY_P\n\nC4.00 BR_INST_RETIRED.ALL_BRANCHES\n";

    #[test]
    fn a_nanobench_config_replaces_the_default_events() {
        let f = config_file(NB);
        let mut config = RunConfig::default();
        let args = HarnessArgs {
            config: Some(f.path().to_path_buf()),
            ..HarnessArgs::default()
        };
        let notes = apply_harness(&args, &mut config).unwrap();
        assert_eq!(
            config.nanobench_config.as_deref(),
            Some(NB),
            "packed as read"
        );
        assert_eq!(config.events, None, "no default events beside the config");
        assert!(notes[0].contains("2 nanoBench events"), "{notes:?}");
        assert!(!config.to_text().contains("events ="));
        // With --events, both are counted.
        let mut config = RunConfig::default();
        let args = HarnessArgs {
            events: Some("cycles:u".into()),
            config: Some(f.path().to_path_buf()),
            ..HarnessArgs::default()
        };
        apply_harness(&args, &mut config).unwrap();
        assert_eq!(config.events.as_deref(), Some("cycles:u"));
        assert!(config.nanobench_config.is_some());
        // Without --config: the defaults, and no config member.
        let mut config = RunConfig::default();
        apply_harness(&HarnessArgs::default(), &mut config).unwrap();
        assert_eq!(config.events.as_deref(), Some(DEFAULT_EVENTS));
        assert_eq!(config.nanobench_config, None);
    }

    #[test]
    fn a_bad_nanobench_config_names_the_file_line_and_column() {
        let f = config_file("C0.00 OK\n\tB1.01.CMSK=1.EDGE STALLS\n");
        let msg = format!("{:#}", load_nanobench_config(f.path()).unwrap_err());
        let name = f.path().display().to_string();
        assert!(
            msg.starts_with(&format!(
                "--config {name}: line 2, column 15: unknown option `EDGE`"
            )),
            "{msg}"
        );
        // The line (its tab as one space) with a caret under column 15.
        assert!(
            msg.ends_with("\n     B1.01.CMSK=1.EDGE STALLS\n                  ^"),
            "{msg}"
        );
        let f = config_file("# nothing\n\n");
        let msg = format!("{:#}", load_nanobench_config(f.path()).unwrap_err());
        assert!(msg.contains("no event lines"), "{msg}");
        let mut bad = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut bad, b"C0.00 A\nC4.00 B\xff\n").unwrap();
        let msg = format!("{:#}", load_nanobench_config(bad.path()).unwrap_err());
        assert!(
            msg.contains("line 2: not UTF-8 text (at byte offset 15)"),
            "{msg}"
        );
        let msg = format!(
            "{:#}",
            load_nanobench_config(Path::new("/nonexistent/cfg.txt")).unwrap_err()
        );
        assert!(
            msg.starts_with("--config: reading /nonexistent/cfg.txt"),
            "{msg}"
        );
    }

    #[test]
    fn stepping_dependent_rows_expand_per_stepping() {
        let text = "Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n\
GenuineIntel-6-55-[01234],V1,/SKX/events/skylakex_core.json,core,,,\n\
GenuineIntel-6-(4E|5E),V1,/SKL/events/skylake_core.json,core,,,\n\
GenuineIntel-6-97,V1,/ADL/events/alderlake_gracemont_core.json,hybridcore,0x20,0x000001,Atom\n";
        let map = perfmon::parse_mapfile("mapfile.csv", text).unwrap();
        let names: Vec<Vec<String>> = map
            .entries
            .iter()
            .map(|e| {
                row_cpus(e)
                    .iter()
                    .map(|c| table_member(c, e.core_role.as_deref()))
                    .collect()
            })
            .collect();
        assert_eq!(
            names[0],
            (0..5)
                .map(|s| format!("events/GenuineIntel-6-55-{s}.tab"))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            names[1],
            [
                "events/GenuineIntel-6-4E.tab",
                "events/GenuineIntel-6-5E.tab"
            ]
        );
        assert_eq!(names[2], ["events/GenuineIntel-6-97-atom.tab"]);
    }

    #[test]
    fn perfmon_folder_packs_tables_per_cpu() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/perfmon");
        // The test data is part of the test's subject: without it the test fails, never
        // passes silently.
        assert!(
            Path::new(dir).join("mapfile.csv").exists(),
            "Intel perfmon test data not found at {dir} (../shared beside the clone): this test cannot run without it"
        );
        let pack = pack_perfmon(Path::new(dir)).unwrap();
        let names: Vec<&str> = pack.members.iter().map(|(n, _)| n.as_str()).collect();
        for want in [
            "events/GenuineIntel-6-5E.tab",
            "events/GenuineIntel-6-8F.tab",
            "events/GenuineIntel-6-97-core.tab",
            "events/GenuineIntel-6-97-atom.tab",
        ] {
            assert!(names.contains(&want), "{want} not in {names:?}");
        }
        assert!(pack.absent > 0, "the test data has only some files");
        let (_, skl) = &pack.members[names
            .iter()
            .position(|n| *n == "events/GenuineIntel-6-5E.tab")
            .unwrap()];
        let table = EventTable::from_bytes(skl).unwrap();
        assert_eq!(
            table.cpu(),
            Some(CpuModel::new(Vendor::Intel, 6, 0x5e)),
            "the header names the CPU"
        );
        assert!(table.get("MACHINE_CLEARS.COUNT").is_some());
        validate_events("MACHINE_CLEARS.COUNT,instructions", &pack.tables).unwrap();
        let mut config = RunConfig::default();
        apply_harness(
            &HarnessArgs {
                perfmon: Some(dir.into()),
                events: Some("BR_MISP_RETIRED.ALL_BRANCHES:u".into()),
                ..HarnessArgs::default()
            },
            &mut config,
        )
        .unwrap();
        assert_eq!(config.extra_members.len(), pack.members.len());
    }
}

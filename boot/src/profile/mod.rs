//! Sampling profiles (docs/profiling.md): `run --sample EVENT@PERIOD` has the kernel record a
//! task's RIP every PERIOD events (`profile_samples` and `profile_summary` records, docs/records.md);
//! here they are read back, named with the payload ELF's symbols and line tables, and shown as
//! `perf report` shows a flat profile: a table by symbol and source line, the hottest
//! function's annotated disassembly, and an SVG bar chart of the functions.

pub mod elf;
pub mod spec;
mod svg;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::records::{PROFILE_SAMPLES, Record, is_profile_record, parse_rip};
pub use elf::{Function, Line, Symbolizer};

/// Addresses at or above this are the kernel's (the higher half).
const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

/// The samples of one task and one sampled event (slot).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskSamples {
    pub task: String,
    pub task_index: u64,
    /// The entry of run.cfg `sample`.
    pub slot: u64,
    /// Its `counters_configure` word.
    pub event: u64,
    pub period: u64,
    pub rips: Vec<u64>,
    /// `(samples, lost)` from the `profile_summary` record; `None`: the log has none (the task
    /// did not end, or the record was lost).
    pub summary: Option<(u64, u64)>,
    /// Why the task's counts were lost (the summary's `counters_lost`): the samples stop there.
    pub counters_lost: Option<String>,
    /// What does not add up (bad fields, RIPs missing against the summary).
    pub problems: Vec<String>,
}

impl TaskSamples {
    /// Samples the kernel dropped (its buffer was full).
    pub fn lost(&self) -> u64 {
        self.summary.map_or(0, |(_, lost)| lost)
    }
}

/// The profile records of a run, by task and slot, in the order they first appear.
pub fn collect(records: &[Record]) -> Vec<TaskSamples> {
    let mut out: Vec<TaskSamples> = Vec::new();
    for r in records.iter().filter(|r| is_profile_record(r)) {
        let (Some(task_index), Some(slot)) = (r.u64("task_index"), r.u64("slot")) else {
            continue;
        };
        let i = match out
            .iter()
            .position(|t| t.task_index == task_index && t.slot == slot)
        {
            Some(i) => i,
            None => {
                out.push(TaskSamples {
                    task: r.str("task").unwrap_or("?").to_string(),
                    task_index,
                    slot,
                    event: r.hex("event").unwrap_or(0),
                    period: r.u64("period").unwrap_or(0),
                    ..TaskSamples::default()
                });
                out.len() - 1
            }
        };
        let t = &mut out[i];
        if r.kind == PROFILE_SAMPLES {
            // `first` (the index of the record's first RIP): a record already read (a
            // duplicated line) is dropped, a gap is a problem. Logs without it are read as they
            // come.
            if let Some(first) = r.u64("first") {
                let have = t.rips.len() as u64;
                if first < have {
                    t.problems.push(format!(
                        "a duplicated record (RIPs {first} and on) was dropped"
                    ));
                    continue;
                }
                if first > have {
                    t.problems.push(format!(
                        "RIPs {have} to {} are missing (a record lost?)",
                        first - 1
                    ));
                }
            }
            let rips = r.get("rips").as_array().map(Vec::as_slice).unwrap_or(&[]);
            let before = t.rips.len();
            t.rips.extend(rips.iter().filter_map(parse_rip));
            let bad = rips.len() - (t.rips.len() - before);
            if bad > 0 {
                t.problems
                    .push(format!("{bad} RIPs that are not addresses were skipped"));
            }
        } else {
            t.summary = Some((r.u64("samples").unwrap_or(0), r.u64("lost").unwrap_or(0)));
            t.counters_lost = r.str("counters_lost").map(str::to_string);
        }
    }
    for t in &mut out {
        match t.summary {
            Some((n, _)) if n != t.rips.len() as u64 => t.problems.push(format!(
                "the kernel sent {n} samples, the log holds {} (records lost?)",
                t.rips.len()
            )),
            None => t.problems.push(
                "no profile_summary record: the task did not end, or the log is cut".to_string(),
            ),
            _ => {}
        }
    }
    out
}

/// One row of the table: a symbol and source line, and its samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub symbol: String,
    pub source: Option<String>,
    pub samples: u64,
}

/// An instruction of the annotated function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    pub addr: u64,
    /// Intel syntax.
    pub text: String,
    pub samples: u64,
    pub line: Option<Line>,
}

/// The hottest function, instruction by instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub function: Function,
    /// Its samples (all of them, also those at no instruction start).
    pub samples: u64,
    pub instructions: Vec<Instruction>,
    /// Samples at addresses inside the function where no instruction starts (should be 0).
    pub between: u64,
}

/// A task's profile of one event.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub total: u64,
    /// By symbol and source line, most samples first.
    pub rows: Vec<Row>,
    /// By function (symbol), most samples first: the SVG's bars.
    pub functions: Vec<(String, u64)>,
    pub hottest: Option<Annotation>,
}

/// What `rip` is called without a function symbol for it.
fn unnamed(rip: u64, sym: Option<&Symbolizer>) -> String {
    if rip >= KERNEL_BASE {
        "[kernel]".to_string()
    } else if sym.is_some() {
        "[unknown]".to_string()
    } else {
        format!("{rip:#x}")
    }
}

/// Builds the profile of `t`, with the payload's symbols when there are.
pub fn analyze(t: &TaskSamples, sym: Option<&Symbolizer>) -> Profile {
    let mut rows: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
    let mut functions: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_function: BTreeMap<u64, (Function, Vec<u64>)> = BTreeMap::new();
    for &rip in &t.rips {
        let f = sym.and_then(|s| s.function(rip));
        let name = f.map_or_else(|| unnamed(rip, sym), |f| f.name.clone());
        let line = sym.and_then(|s| s.line(rip)).map(|l| l.to_string());
        *rows.entry((name.clone(), line)).or_default() += 1;
        *functions.entry(name).or_default() += 1;
        if let Some(f) = f {
            by_function
                .entry(f.start)
                .or_insert_with(|| (f.clone(), Vec::new()))
                .1
                .push(rip);
        }
    }
    let mut rows: Vec<Row> = rows
        .into_iter()
        .map(|((symbol, source), samples)| Row {
            symbol,
            source,
            samples,
        })
        .collect();
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.symbol.cmp(&b.symbol)));
    let mut functions: Vec<(String, u64)> = functions.into_iter().collect();
    functions.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let hottest = by_function
        .into_values()
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.start.cmp(&a.0.start)))
        .and_then(|(f, rips)| sym.map(|s| annotate(s, &f, &rips)));
    Profile {
        total: t.rips.len() as u64,
        rows,
        functions,
        hottest,
    }
}

/// Disassembles `f` (iced-x86, Intel syntax) and counts `rips` per instruction.
pub fn annotate(sym: &Symbolizer, f: &Function, rips: &[u64]) -> Annotation {
    use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};
    let mut per_addr: BTreeMap<u64, u64> = BTreeMap::new();
    for &r in rips {
        *per_addr.entry(r).or_default() += 1;
    }
    let mut instructions = Vec::new();
    if let Some(code) = sym.code(f) {
        let mut decoder = Decoder::with_ip(64, code, f.start, DecoderOptions::NONE);
        let mut formatter = IntelFormatter::new();
        let mut text = String::new();
        while decoder.can_decode() {
            let insn = decoder.decode();
            text.clear();
            formatter.format(&insn, &mut text);
            instructions.push(Instruction {
                addr: insn.ip(),
                text: text.clone(),
                samples: per_addr.remove(&insn.ip()).unwrap_or(0),
                line: sym.line(insn.ip()),
            });
        }
    }
    Annotation {
        function: f.clone(),
        samples: rips.len() as u64,
        instructions,
        between: per_addr.values().sum(),
    }
}

fn pct(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * n as f64 / total as f64
    }
}

/// The heading line of a profile: task, event, period, counts; `event_name` as typed when the
/// caller knows it.
pub fn heading(t: &TaskSamples, event_name: &str) -> String {
    let counts = match t.summary {
        Some((n, lost)) => format!("{n} samples, {lost} lost"),
        None => format!("{} samples in the log, no summary", t.rips.len()),
    };
    format!(
        "{} (#{}) | {event_name} ({:#x}) every {} events | {counts}",
        t.task, t.task_index, t.event, t.period
    )
}

/// The text report of one profile: the lost samples first (they make every share doubtful),
/// the table, the hottest function annotated. `elf_note` says where the symbols came from, or
/// why there are none.
pub fn render(t: &TaskSamples, p: &Profile, event_name: &str, elf_note: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "profile  {}", heading(t, event_name));
    let _ = writeln!(out, "         symbols: {elf_note}");
    if t.lost() > 0 {
        let _ = writeln!(
            out,
            "LOST     {} of {} samples: periods that ended without a RIP of their own (several \
             reached at one look, e.g. in a system call): the shares below may be skewed; sample \
             less often (a larger period)",
            t.lost(),
            t.lost() + t.summary.map_or(0, |(n, _)| n)
        );
    }
    if let Some(why) = &t.counters_lost {
        let _ = writeln!(
            out,
            "LOST     the task's counts were lost, so its samples stop there: {why}"
        );
    }
    for problem in &t.problems {
        let _ = writeln!(out, "NOTE     {problem}");
    }
    if p.total == 0 {
        let _ = writeln!(out, "         no samples");
        return out;
    }
    let width = p
        .rows
        .iter()
        .map(|r| r.symbol.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        out,
        "\n {:>8}  {:>7}  {:<width$}  source",
        "overhead", "samples", "symbol"
    );
    for r in &p.rows {
        let _ = writeln!(
            out,
            " {:>7.2}%  {:>7}  {:<width$}  {}",
            pct(r.samples, p.total),
            r.samples,
            r.symbol,
            r.source.as_deref().unwrap_or("-")
        );
    }
    if let Some(a) = &p.hottest {
        let _ = writeln!(
            out,
            "\n hottest function {} ({:#x}, {} bytes): {} samples, {:.2}% of the task's; the \
             RIP sampled is the next instruction to run",
            a.function.name,
            a.function.start,
            a.function.size,
            a.samples,
            pct(a.samples, p.total)
        );
        let _ = writeln!(
            out,
            " {:>7}  {:>7}  {:<10}  {:<34}  source",
            "samples", "percent", "address", "instruction"
        );
        let mut last_line = None;
        for i in &a.instructions {
            // The source line only where it changes, as perf annotate interleaves it.
            let line = i.line.as_ref().map(ToString::to_string);
            let shown = if line != last_line {
                line.clone().unwrap_or_default()
            } else {
                String::new()
            };
            last_line = line;
            let row = format!(
                " {:>7}  {:>6.2}%  {:<10}  {:<34}  {}",
                i.samples,
                pct(i.samples, a.samples),
                format!("{:x}", i.addr),
                i.text,
                shown
            );
            let _ = writeln!(out, "{}", row.trim_end());
        }
        if a.between > 0 {
            let _ = writeln!(
                out,
                "NOTE     {} samples fell between instruction starts (the symbol's code does not \
                 decode as the CPU ran it?)",
                a.between
            );
        }
    }
    out
}

/// Where the ELF of each task comes from: `--elf NAME=PATH`, then the payloads the run packed,
/// then the built-in payloads.
#[derive(Default)]
pub struct ElfSource {
    given: BTreeMap<String, Vec<u8>>,
    /// Payloads by name with where they came from, for the note.
    packed: BTreeMap<String, Vec<u8>>,
}

impl ElfSource {
    /// Reads every `--elf NAME=PATH` (a missing or unreadable file is an error now, before a
    /// run spends time).
    pub fn new(elf_args: &[String]) -> Result<ElfSource> {
        let mut given = BTreeMap::new();
        for arg in elf_args {
            let Some((name, path)) = arg.split_once('=') else {
                bail!("--elf {arg}: give NAME=PATH (the task's name, then its ELF file)");
            };
            let bytes = std::fs::read(path)
                .with_context(|| format!("--elf {name}={path}: cannot read the ELF file"))?;
            if given.insert(name.to_string(), bytes).is_some() {
                bail!("--elf {name}=...: given twice");
            }
        }
        Ok(ElfSource {
            given,
            packed: BTreeMap::new(),
        })
    }

    /// The payloads a run packed (their bytes are the code that ran).
    pub fn with_packed(mut self, payloads: &[(String, Vec<u8>)]) -> ElfSource {
        self.packed = payloads.iter().cloned().collect();
        self
    }

    /// The ELF of task `name` and where it came from.
    pub fn get(&self, name: &str) -> Option<(&[u8], String)> {
        if let Some(b) = self.given.get(name) {
            return Some((b, "--elf".to_string()));
        }
        if let Some(b) = self.packed.get(name) {
            return Some((b, "the payload this run packed".to_string()));
        }
        crate::payloads::builtin(name).map(|p| (p.elf, "the built-in payload".to_string()))
    }
}

/// Every profile of `records`, rendered, with SVGs written into `svg_dir` (when given). The
/// names typed for the sampled events (`run`), by slot, replace the names guessed from the
/// words. Returns the text and the paths written.
pub fn report(
    records: &[Record],
    elves: &ElfSource,
    typed_names: &[String],
    svg_dir: Option<&Path>,
) -> Result<(String, Vec<PathBuf>)> {
    let vendor = records
        .iter()
        .find(|r| r.kind == "cpu")
        .and_then(|r| r.str("vendor"))
        .and_then(events::cpu::Vendor::from_cpuid_name);
    let mut text = String::new();
    // Tasks the kernel could not sample (docs/syscall-abi.md, "Sampling") have no profile:
    // say why first.
    for r in records
        .iter()
        .filter(|r| r.kind == "error" && r.str("source") == Some("sampling"))
    {
        let _ = writeln!(
            text,
            "PROFILE  not sampled: {}",
            r.str("message").unwrap_or("(no message)")
        );
    }
    let mut written = Vec::new();
    let mut symbolizers: BTreeMap<String, Result<Symbolizer, String>> = BTreeMap::new();
    for t in collect(records) {
        let sym = symbolizers
            .entry(t.task.clone())
            .or_insert_with(|| match elves.get(&t.task) {
                Some((bytes, from)) => Symbolizer::new(bytes, &format!("{} ({from})", t.task))
                    .map_err(|e| format!("{e:#}")),
                None => Err(format!(
                    "no ELF for task `{}`: give --elf {}=PATH to name its addresses",
                    t.task, t.task
                )),
            });
        let (sym, note) = match sym {
            Ok(s) => (
                Some(&*s),
                match elves.get(&t.task) {
                    Some((bytes, from)) => format!(
                        "{from}, {} KiB, {}",
                        bytes.len().div_ceil(1024),
                        if s.has_lines() {
                            "with line tables"
                        } else {
                            "symbols only (no DWARF line tables)"
                        }
                    ),
                    None => String::new(),
                },
            ),
            Err(e) => (None, format!("none: {e}")),
        };
        let event_name = typed_names
            .get(t.slot as usize)
            .cloned()
            .unwrap_or_else(|| spec::name_of_word(t.event, vendor));
        let p = analyze(&t, sym);
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&render(&t, &p, &event_name, &note));
        if let Some(dir) = svg_dir {
            let safe: String = t
                .task
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let path = dir.join(format!(
                "profile-{safe}-{}-slot{}.svg",
                t.task_index, t.slot
            ));
            std::fs::write(&path, svg::bar_chart(&t, &p, &event_name))
                .with_context(|| format!("writing {}", path.display()))?;
            written.push(path);
        }
    }
    Ok((text, written))
}

/// Options of `run --sample` and `report --profile`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ProfileArgs {
    /// The ELF of task NAME, to name its sampled addresses (repeatable). Built-in payloads and
    /// (in `run`) the payloads packed need none.
    #[arg(long = "elf", value_name = "NAME=PATH")]
    pub elf: Vec<String>,
    /// Write each profile's SVG bar chart (`profile-TASK-INDEX-slotSLOT.svg`) into DIR
    /// (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub profile_dir: Option<PathBuf>,
}

impl ProfileArgs {
    /// The SVG folder, checked to exist.
    pub fn svg_dir(&self) -> Result<PathBuf> {
        let dir = self
            .profile_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        if !dir.is_dir() {
            bail!("--profile-dir {}: no such folder", dir.display());
        }
        Ok(dir)
    }
}

impl ProfileArgs {
    /// The `--elf` files, read.
    pub fn elves(&self) -> Result<ElfSource> {
        ElfSource::new(&self.elf)
    }
}

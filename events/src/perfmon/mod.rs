//! Intel perfmon import: `mapfile.csv` and the `*_core.json` event files of
//! github.com/intel/perfmon (feature `std`, hosted targets only).
//!
//! Users point the tool at their own copy of Intel's repository (or at one event file); the
//! result is an [`EventTable`], which the host writes in the compact binary form the kernel
//! reads (see `table`). Nothing here runs on bare metal.
//!
//! # mapfile.csv
//!
//! Columns `Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name`,
//! found by header name. Quirks handled:
//! - `Family-model` is a small regular expression over `Vendor-Family-Model[-Stepping]`
//!   (family decimal, model and stepping upper-case hex without padding, as Linux prints
//!   them): plain `GenuineIntel-6-55`, stepping classes `GenuineIntel-6-55-[01234]`,
//!   alternations `GenuineIntel-6-(97|9A)`. The matcher here knows literals, `.`, classes with
//!   ranges and `^` negation, groups with `|`, and `?`/`*`/`+`; matching is case-insensitive
//!   and always whole-string. A pattern without a stepping matches every stepping; a pattern
//!   with one matches a CPU of unknown stepping if it matches some stepping 0-F (so Skylake-SP
//!   and Cascade Lake, both model 0x55, are ambiguous until the stepping is known).
//! - Only `EventType` `core` and `hybridcore` rows name core event files; the others (uncore,
//!   offcore matrix, metrics, ...) are kept but never loaded, and their files may be absent.
//! - Hybrid rows carry `Core Type` as CPUID 0x1A reports it (`0x20` Atom, `0x40` Core), a
//!   `Native Model ID` and a `Core Role Name` (`Atom`, `Core`, `LowPower_Atom`: Arrow Lake has
//!   two Atom files told apart only by native model ID).
//! - `Filename` starts with `/` and is relative to the repository root.
//! - A row that cannot be understood is kept in [`Mapfile::bad_rows`] with its line and reason.
//!
//! # Event files
//!
//! The top level is an array of events, or `{"Header": {...}, "Events": [...]}`. Every value is
//! normally a string (numbers are accepted too); numbers are hex with `0x`/`0X` in either case
//! (`"0xcd"`, `"0xC5"`, `"0X00"`), otherwise decimal. Fields used:
//!
//! | field | becomes |
//! |---|---|
//! | `EventName` | `name` (names are unique ignoring ASCII case; a later duplicate is skipped) |
//! | `EventCode` | `select.code`; may list two codes, `"0xB7, 0xBB"` (offcore: the second pairs with the second MSR and becomes `alt`) |
//! | `UMask` | `select.umask`; Atom offcore events list two, `"0x01,0x02"` (below) |
//! | `UMaskExt` | `select.umask2` (PERFEVTSEL 47:40, Lunar Lake on) |
//! | `CounterMask`, `Invert`, `EdgeDetect`, `AnyThread` | `cmask`, `inv`, `edge`, `any_thread` |
//! | `Counter` | `gp_counters` from `"0,1,2,3"` (or ranges `"0-3"`); `"Fixed counter N"` sets `fixed` |
//! | `MSRIndex`, `MSRValue` | `extra` (offcore response 0x1A6/0x1A7, load latency 0x3F6, frontend 0x3F7); `"0"`/`"0x00"` means none; `"0x1a6,0x1a7"` gives the `alt` MSR |
//! | `TakenAlone`, `Deprecated` | `taken_alone`, `deprecated` (`"0"`/`"1"`) |
//! | `BriefDescription` (else `PublicDescription`) | `description` |
//! | `Equal`, `ExtSel` | must be 0: baremark's event select has no such bits, so an event needing them is skipped |
//!
//! Everything else (`SampleAfterValue`, `PEBS`, `Precise`, `Data_LA`, `CounterHTOff`, `Errata`,
//! `Speculative`, ...) concerns sampling or documentation and is ignored. `Counter` (not
//! `CounterHTOff`) is used: it is the set that is valid with hyper-threading on.
//!
//! Fixed counters: the files give them the pseudo encoding event 0x00, umask N+1, with
//! `Counter` "Fixed counter N". Such an event gets `fixed = Some(N)` and `gp_counters = None`
//! (the pseudo code is not a GP event); a `Counter` that disagrees with the umask skips it.
//!
//! Two-encoding events: `EventDesc::alt` holds a second event code and MSR with the same umask.
//! Core offcore events (`"0xB7, 0xBB"` or `"0x2A,0x2B"` with `"0x1a6,0x1a7"`) fit. Atom offcore
//! events (one code, umasks `"0x01,0x02"`, MSRs `"0x1a6,0x1a7"`) differ in the umask, which
//! `alt` cannot say, and templates such as Skylake's `OFFCORE_RESPONSE` have two codes but no
//! MSRs; both keep the first encoding and the dropped second one is reported in
//! [`Imported::notes`].
//!
//! No value is ever truncated: an event with a field out of range or malformed is left out and
//! reported in [`Imported::skipped`] with its file, name, field and reason. Errors that concern
//! a whole file (unreadable, not JSON, wrong shape) are a [`PerfmonError`].
//!
//! | file         | job                                                                    |
//! |--------------|------------------------------------------------------------------------|
//! | `mapfile`    | mapfile.csv rows, and the core event files it lists for a CPU          |
//! | `pattern`    | the `Family-model` matcher (a small regular expression, no dependency) |
//! | `event_file` | event files: perfmon events into event descriptions, skipped and notes |
//! | `mod.rs`     | errors, reading files, and loading the table for a CPU                 |

mod event_file;
mod mapfile;
mod pattern;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::cpu::CpuModel;
use crate::pmu::CoreType;
use crate::table::{EventTable, TableError};

pub use event_file::{EventIssue, Header, Imported, parse_events_json};
pub use mapfile::{BadRow, MapEntry, Mapfile, load_mapfile, parse_mapfile};

/// A whole-file or selection error.
#[derive(Debug)]
pub enum PerfmonError {
    /// A file could not be read.
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// mapfile.csv is not CSV, or lacks a required column.
    Mapfile {
        file: String,
        line: Option<u64>,
        reason: String,
    },
    /// An event file is not JSON.
    Json {
        file: String,
        line: usize,
        column: usize,
        reason: String,
    },
    /// An event file is JSON but not an event list.
    Shape { file: String, reason: String },
    /// mapfile.csv lists no core event file for the CPU.
    NoMatch {
        mapfile: String,
        cpu: CpuModel,
        core_type: Option<CoreType>,
    },
    /// mapfile.csv lists several core event files for the CPU; say which (core type,
    /// stepping) or load one with [`load_entry`].
    Ambiguous {
        cpu: CpuModel,
        core_type: Option<CoreType>,
        candidates: Vec<MapEntry>,
    },
    /// mapfile.csv names a file that is not in the repository copy.
    MissingFile { path: PathBuf, mapfile_line: u64 },
    /// The events do not form a table (should not happen after import checks).
    Table { file: String, error: TableError },
}

impl fmt::Display for PerfmonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerfmonError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            PerfmonError::Mapfile { file, line, reason } => match line {
                Some(l) => write!(f, "{file}:{l}: {reason}"),
                None => write!(f, "{file}: {reason}"),
            },
            PerfmonError::Json {
                file,
                line,
                column,
                reason,
            } => write!(f, "{file}:{line}:{column}: not valid JSON: {reason}"),
            PerfmonError::Shape { file, reason } => write!(f, "{file}: {reason}"),
            PerfmonError::NoMatch {
                mapfile,
                cpu,
                core_type,
            } => {
                write!(f, "{mapfile} lists no core event file for {cpu}")?;
                if let Some(ct) = core_type {
                    write!(f, " ({} cores)", ct.perfmon_name())?;
                }
                Ok(())
            }
            PerfmonError::Ambiguous {
                cpu,
                core_type,
                candidates,
            } => {
                write!(f, "several core event files match {cpu}")?;
                if let Some(ct) = core_type {
                    write!(f, " ({} cores)", ct.perfmon_name())?;
                }
                f.write_str(":")?;
                for c in candidates {
                    write!(f, " {} [{}", c.filename, c.family_model)?;
                    if let Some(role) = &c.core_role {
                        write!(f, ", {role}")?;
                    }
                    if let Some(id) = c.native_model_id {
                        write!(f, ", native model {id:#x}")?;
                    }
                    f.write_str("]")?;
                }
                f.write_str(
                    "; give the core type (hybrid parts) or the stepping (e.g. GenuineIntel-6-55-4), \
                     or name one event file instead of the repository",
                )
            }
            PerfmonError::MissingFile { path, mapfile_line } => write!(
                f,
                "{} (listed on mapfile.csv line {mapfile_line}) does not exist",
                path.display()
            ),
            PerfmonError::Table { file, error } => write!(f, "{file}: {error}"),
        }
    }
}

impl std::error::Error for PerfmonError {}

fn read(path: &Path) -> Result<String, PerfmonError> {
    std::fs::read_to_string(path).map_err(|error| PerfmonError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// `0x`/`0X` hex, else decimal.
fn parse_num(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (t, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("\"{s}\" is not a number"));
    }
    u64::from_str_radix(digits, radix).map_err(|_| format!("\"{s}\" does not fit 64 bits"))
}

/// A loaded event table and what was left out of it.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub table: EventTable,
    /// The event file read.
    pub file: PathBuf,
    pub header: Option<Header>,
    pub skipped: Vec<EventIssue>,
    pub notes: Vec<EventIssue>,
}

/// Reads and parses one event file.
pub fn load_events_file(path: &Path) -> Result<Imported, PerfmonError> {
    let text = read(path)?;
    parse_events_json(&path.display().to_string(), &text)
}

/// Loads the file of mapfile row `entry` from the repository at `root`, as a table for `cpu`.
pub fn load_entry(
    root: &Path,
    entry: &MapEntry,
    cpu: Option<CpuModel>,
) -> Result<Loaded, PerfmonError> {
    let path = entry
        .path_under(root)
        .ok_or_else(|| PerfmonError::Mapfile {
            file: root.join("mapfile.csv").display().to_string(),
            line: Some(entry.line),
            reason: format!("Filename \"{}\" leaves the repository", entry.filename),
        })?;
    if !path.is_file() {
        return Err(PerfmonError::MissingFile {
            path,
            mapfile_line: entry.line,
        });
    }
    load_file_as(&path, cpu, entry.core_type)
}

fn load_file_as(
    path: &Path,
    cpu: Option<CpuModel>,
    core_type: Option<CoreType>,
) -> Result<Loaded, PerfmonError> {
    let imported = load_events_file(path)?;
    let table = imported.to_table(&path.display().to_string(), cpu, core_type)?;
    Ok(Loaded {
        table,
        file: path.to_path_buf(),
        header: imported.header,
        skipped: imported.skipped,
        notes: imported.notes,
    })
}

/// The core event table for `cpu` (and `core_type` on hybrid parts). `perfmon` is either a
/// copy of Intel's repository (a directory with mapfile.csv) or one event file, which is then
/// taken to be for `cpu` as given. Several matching files (a hybrid part without a core type,
/// a stepping-dependent model without a stepping) are [`PerfmonError::Ambiguous`].
pub fn load_for_cpu(
    perfmon: &Path,
    cpu: &CpuModel,
    core_type: Option<CoreType>,
) -> Result<Loaded, PerfmonError> {
    if perfmon.is_file() {
        return load_file_as(perfmon, Some(*cpu), core_type);
    }
    let mapfile_path = perfmon.join("mapfile.csv");
    let map = load_mapfile(&mapfile_path)?;
    let mut files = map.core_files(cpu, core_type);
    match files.len() {
        0 => Err(PerfmonError::NoMatch {
            mapfile: mapfile_path.display().to_string(),
            cpu: *cpu,
            core_type,
        }),
        1 => {
            // The table records the row's core type: none for a non-hybrid part, whatever
            // was asked.
            load_entry(perfmon, &files.remove(0), Some(*cpu))
        }
        _ => Err(PerfmonError::Ambiguous {
            cpu: *cpu,
            core_type,
            candidates: files,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::pattern::Pattern;
    use super::*;

    // Helpers shared with the tests in `pattern` and `mapfile`.

    pub(super) fn pat(p: &str) -> Pattern {
        Pattern::parse(p).unwrap()
    }

    pub(super) fn cpu(s: &str) -> CpuModel {
        CpuModel::parse(s).unwrap()
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_num("0xcd"), Ok(0xcd));
        assert_eq!(parse_num("0XC5"), Ok(0xc5));
        assert_eq!(parse_num(" 12 "), Ok(12));
        assert!(parse_num("0x").is_err());
        assert!(parse_num("-1").is_err());
        assert!(parse_num("+1").is_err());
        assert!(parse_num("0x1FFFFFFFFFFFFFFFF").is_err());
        assert!(parse_num("NA").is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_input_never_panics(text in ".{0,200}") {
            let _ = parse_events_json("f.json", &text);
            let _ = parse_mapfile("m.csv", &text);
            if let Ok(p) = Pattern::parse(&text) {
                let _ = p.matches_cpu(&cpu("GenuineIntel-6-55"));
            }
        }
    }
}

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

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::cpu::CpuModel;
use crate::event::{EventDesc, EventSelect, ExtraMsr, Source};
use crate::pmu::CoreType;
use crate::table::{EventTable, TableError};

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

// ---------------------------------------------------------------------------------------------
// mapfile.csv

/// One row of mapfile.csv.
#[derive(Clone, Debug)]
pub struct MapEntry {
    /// 1-based line in mapfile.csv.
    pub line: u64,
    /// The `Family-model` pattern as written.
    pub family_model: String,
    pattern: Pattern,
    pub version: String,
    /// As written, `/SKL/events/skylake_core.json` (relative to the repository root).
    pub filename: String,
    /// `core`, `hybridcore`, `uncore`, `metrics`, ...
    pub event_type: String,
    /// Hybrid parts: the core type the file describes.
    pub core_type: Option<CoreType>,
    /// Hybrid parts: CPUID 0x1A EAX\[23:0\].
    pub native_model_id: Option<u32>,
    /// Hybrid parts: `Core`, `Atom`, `LowPower_Atom`.
    pub core_role: Option<String>,
}

impl MapEntry {
    /// Whether the row names a core event file (`core` or `hybridcore`).
    pub fn is_core(&self) -> bool {
        self.event_type.eq_ignore_ascii_case("core")
            || self.event_type.eq_ignore_ascii_case("hybridcore")
    }

    /// Whether the row's `Family-model` pattern covers `cpu` (see the module docs for
    /// steppings).
    pub fn matches(&self, cpu: &CpuModel) -> bool {
        self.pattern.matches_cpu(cpu)
    }

    /// The file's path under the repository root `root`; `None` if the name would leave it.
    pub fn path_under(&self, root: &Path) -> Option<PathBuf> {
        let rel = Path::new(self.filename.trim_start_matches(['/', '\\']));
        // The mapfile is user input: do not let it point outside the repository.
        let inside = rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        (inside && !self.filename.trim().is_empty()).then(|| root.join(rel))
    }
}

/// A mapfile row that was not understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRow {
    pub line: u64,
    pub reason: String,
}

/// A parsed mapfile.csv.
#[derive(Clone, Debug)]
pub struct Mapfile {
    pub entries: Vec<MapEntry>,
    pub bad_rows: Vec<BadRow>,
}

impl Mapfile {
    /// The core event files mapfile.csv lists for `cpu`, in file order, each file once. With a
    /// core type, hybrid rows of the other type are left out; without one, a hybrid part yields
    /// a file per core type.
    pub fn core_files(&self, cpu: &CpuModel, core_type: Option<CoreType>) -> Vec<MapEntry> {
        let mut seen = BTreeSet::new();
        self.entries
            .iter()
            .filter(|e| e.is_core() && e.matches(cpu))
            .filter(|e| match (core_type, e.core_type) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            })
            .filter(|e| seen.insert(e.filename.clone()))
            .cloned()
            .collect()
    }
}

/// Parses mapfile.csv text; `file` names it in errors.
pub fn parse_mapfile(file: &str, text: &str) -> Result<Mapfile, PerfmonError> {
    let err = |line: Option<u64>, reason: String| PerfmonError::Mapfile {
        file: file.to_string(),
        line,
        reason,
    };
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = rd
        .headers()
        .map_err(|e| err(Some(1), e.to_string()))?
        .clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim_start_matches('\u{feff}').eq_ignore_ascii_case(name))
    };
    let need = |name: &str| col(name).ok_or_else(|| err(Some(1), format!("no \"{name}\" column")));
    let (c_fm, c_file, c_type) = (need("Family-model")?, need("Filename")?, need("EventType")?);
    let (c_ver, c_core, c_native, c_role) = (
        col("Version"),
        col("Core Type"),
        col("Native Model ID"),
        col("Core Role Name"),
    );

    let mut map = Mapfile {
        entries: Vec::new(),
        bad_rows: Vec::new(),
    };
    for rec in rd.records() {
        let rec = rec.map_err(|e| err(e.position().map(|p| p.line()), e.to_string()))?;
        let line = rec.position().map_or(0, |p| p.line());
        let cell = |c: Option<usize>| c.and_then(|c| rec.get(c)).unwrap_or("").to_string();
        if rec.iter().all(|c| c.is_empty()) {
            continue;
        }
        let row = (|| -> Result<MapEntry, String> {
            let family_model = cell(Some(c_fm));
            if family_model.is_empty() {
                return Err("empty Family-model".into());
            }
            let pattern = Pattern::parse(&family_model)
                .map_err(|r| format!("Family-model \"{family_model}\": {r}"))?;
            let filename = cell(Some(c_file));
            if filename.is_empty() {
                return Err("empty Filename".into());
            }
            let core_text = cell(c_core);
            let core_type = if core_text.is_empty() {
                None
            } else {
                let by_code = parse_num(&core_text)
                    .ok()
                    .and_then(|n| u8::try_from(n).ok())
                    .and_then(CoreType::from_cpuid);
                let by_name = [CoreType::Atom, CoreType::Core]
                    .into_iter()
                    .find(|ct| core_text.eq_ignore_ascii_case(ct.perfmon_name()));
                Some(by_code.or(by_name).ok_or_else(|| {
                    format!("Core Type \"{core_text}\" is neither 0x20 (Atom) nor 0x40 (Core)")
                })?)
            };
            let native_text = cell(c_native);
            let native_model_id = if native_text.is_empty() {
                None
            } else {
                Some(
                    parse_num(&native_text)
                        .ok()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| {
                            format!("Native Model ID \"{native_text}\" is not a number")
                        })?,
                )
            };
            let role = cell(c_role);
            Ok(MapEntry {
                line,
                family_model,
                pattern,
                version: cell(c_ver),
                filename,
                event_type: cell(Some(c_type)),
                core_type,
                native_model_id,
                core_role: (!role.is_empty()).then_some(role),
            })
        })();
        match row {
            Ok(e) => map.entries.push(e),
            Err(reason) => map.bad_rows.push(BadRow { line, reason }),
        }
    }
    Ok(map)
}

/// Reads and parses a mapfile.csv.
pub fn load_mapfile(path: &Path) -> Result<Mapfile, PerfmonError> {
    let text = read(path)?;
    parse_mapfile(&path.display().to_string(), &text)
}

fn read(path: &Path) -> Result<String, PerfmonError> {
    std::fs::read_to_string(path).map_err(|error| PerfmonError::Io {
        path: path.to_path_buf(),
        error,
    })
}

// ---------------------------------------------------------------------------------------------
// The Family-model matcher: just enough regular expression for mapfile.csv, without a regex
// dependency.

#[derive(Clone, Debug)]
enum Node {
    /// An upper-cased byte.
    Lit(u8),
    Any,
    /// Inclusive upper-cased byte ranges.
    Class {
        negated: bool,
        ranges: Vec<(u8, u8)>,
    },
    Group(Vec<Vec<Node>>),
    Repeat {
        node: Box<Node>,
        min: usize,
        many: bool,
    },
}

#[derive(Clone, Debug)]
struct Pattern(Vec<Node>);

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, String> {
        if !text.is_ascii() {
            return Err("not ASCII".into());
        }
        // Case-insensitive: upper-case the pattern here and the subject when matching.
        let s = text.to_ascii_uppercase().into_bytes();
        let s = s.strip_prefix(b"^").unwrap_or(&s);
        let s = s.strip_suffix(b"$").unwrap_or(s);
        let mut pos = 0;
        let alts = parse_alternatives(s, &mut pos, 0)?;
        if pos != s.len() {
            return Err(format!("unexpected '{}'", s[pos] as char));
        }
        Ok(Pattern(vec![Node::Group(alts)]))
    }

    /// Whether the whole of `subject` matches. Subjects are CPU strings (at most 41 bytes:
    /// `GenuineIntel-4294967295-FFFFFFFF-FFFFFFFF`); one longer than [`SUBJECT_MAX`] never
    /// matches.
    fn full_match(&self, subject: &str) -> bool {
        let s = subject.to_ascii_uppercase().into_bytes();
        if s.len() > SUBJECT_MAX {
            return false;
        }
        let mut m = Matcher {
            s: &s,
            memo: HashMap::new(),
        };
        m.seq(&self.0, 1) & (1 << s.len()) != 0
    }

    fn matches_cpu(&self, cpu: &CpuModel) -> bool {
        let vendor = cpu.vendor.cpuid_name();
        let mut bases = vec![format!("{vendor}-{}-{:X}", cpu.family, cpu.model)];
        // Linux prints the model unpadded; accept a two-digit spelling as well.
        let padded = format!("{vendor}-{}-{:02X}", cpu.family, cpu.model);
        if padded != bases[0] {
            bases.push(padded);
        }
        bases.iter().any(|base| {
            self.full_match(base)
                || match cpu.stepping {
                    Some(s) => self.full_match(&format!("{base}-{s:X}")),
                    None => (0..16u32).any(|s| self.full_match(&format!("{base}-{s:X}"))),
                }
        })
    }
}

/// Parses `a|b|c` up to a `)` (not consumed) or the end.
fn parse_alternatives(s: &[u8], pos: &mut usize, depth: usize) -> Result<Vec<Vec<Node>>, String> {
    if depth > 16 {
        return Err("groups nested too deeply".into());
    }
    let mut alts = vec![Vec::new()];
    while let Some(&c) = s.get(*pos) {
        let node = match c {
            b')' => break,
            b'|' => {
                *pos += 1;
                alts.push(Vec::new());
                continue;
            }
            b'(' => {
                *pos += 1;
                let inner = parse_alternatives(s, pos, depth + 1)?;
                if s.get(*pos) != Some(&b')') {
                    return Err("unclosed '('".into());
                }
                *pos += 1;
                Node::Group(inner)
            }
            b'[' => {
                *pos += 1;
                parse_class(s, pos)?
            }
            b'.' => {
                *pos += 1;
                Node::Any
            }
            b'\\' => {
                let Some(&e) = s.get(*pos + 1) else {
                    return Err("'\\' at the end".into());
                };
                if e.is_ascii_alphanumeric() {
                    return Err(format!("escape '\\{}' is not supported", e as char));
                }
                *pos += 2;
                Node::Lit(e)
            }
            b'?' | b'*' | b'+' | b'{' | b'}' | b']' | b'^' | b'$' => {
                return Err(format!("unexpected '{}'", c as char));
            }
            _ => {
                *pos += 1;
                Node::Lit(c)
            }
        };
        let node = match s.get(*pos) {
            Some(&q @ (b'?' | b'*' | b'+')) => {
                *pos += 1;
                Node::Repeat {
                    node: Box::new(node),
                    min: usize::from(q == b'+'),
                    many: q != b'?',
                }
            }
            _ => node,
        };
        if let Some(last) = alts.last_mut() {
            last.push(node);
        }
    }
    Ok(alts)
}

/// Parses a class body after `[`, through `]`.
fn parse_class(s: &[u8], pos: &mut usize) -> Result<Node, String> {
    let negated = s.get(*pos) == Some(&b'^');
    if negated {
        *pos += 1;
    }
    let mut ranges = Vec::new();
    loop {
        let Some(&c) = s.get(*pos) else {
            return Err("unclosed '['".into());
        };
        *pos += 1;
        match c {
            b']' if !ranges.is_empty() => break,
            b']' => return Err("empty class".into()),
            _ => {
                if s.get(*pos) == Some(&b'-') && s.get(*pos + 1).is_some_and(|&h| h != b']') {
                    let hi = s[*pos + 1];
                    if hi < c {
                        return Err(format!("bad range {}-{}", c as char, hi as char));
                    }
                    ranges.push((c, hi));
                    *pos += 2;
                } else {
                    ranges.push((c, c));
                }
            }
        }
    }
    Ok(Node::Class { negated, ranges })
}

/// A set of positions in a subject (0..=len), one bit each.
type Positions = u128;

/// The longest subject [`Pattern::full_match`] takes: its positions must fit [`Positions`].
const SUBJECT_MAX: usize = Positions::BITS as usize - 1;

/// Matching one subject: the set of positions each step can reach, moving forward through the
/// pattern from position 0.
///
/// Where a group or a repeat can end when it starts at `p` is computed once per (node, `p`) and
/// remembered, so the time is polynomial (nodes x positions^2) however the repeats nest, and
/// for the usual patterns about one step per node. (Recomputing a repeat's inner matches from
/// every position it reached, at every level, took time exponential in the nesting: a 60-byte
/// Family-model such as `((((.*)*)*)*...)*` hung the import; found with the `perfmon_mapfile`
/// fuzz target.)
struct Matcher<'a> {
    s: &'a [u8],
    /// (node address, start) -> end positions: of a group, or of one or more repetitions.
    memo: HashMap<(usize, usize), Positions>,
}

impl Matcher<'_> {
    /// Where matching `seq` can end, from any of `starts`.
    fn seq(&mut self, seq: &[Node], starts: Positions) -> Positions {
        let mut cur = starts;
        for node in seq {
            if cur == 0 {
                break;
            }
            cur = bits(cur).fold(0, |acc, p| acc | self.node(node, p));
        }
        cur
    }

    /// Where matching `node` from `p` can end.
    fn node(&mut self, node: &Node, p: usize) -> Positions {
        let one = |ok: bool| if ok { 1 << (p + 1) } else { 0 };
        let s = self.s;
        match node {
            Node::Lit(c) => one(s.get(p) == Some(c)),
            Node::Any => one(p < s.len()),
            // Upper-casing the pattern turned `a-f` into `A-F`; the subject is upper-cased too.
            Node::Class { negated, ranges } => one(s
                .get(p)
                .is_some_and(|c| ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(c)) != *negated)),
            Node::Group(alts) => self.remembered(node, p, |m| {
                alts.iter().fold(0, |acc, alt| acc | m.seq(alt, 1 << p))
            }),
            Node::Repeat { min, .. } => self.repeated(node, p) | if *min == 0 { 1 << p } else { 0 },
        }
    }

    /// Where one or more repetitions of `repeat`'s node from `p` can end: the ends of one, and
    /// (for `*` and `+`) the ends of more from each of those. Matches never end before they
    /// start, and one ending at `p` itself adds nothing, so the recursion only moves forward.
    fn repeated(&mut self, repeat: &Node, p: usize) -> Positions {
        let Node::Repeat { node, many, .. } = repeat else {
            return 0;
        };
        self.remembered(repeat, p, |m| {
            let once = m.node(node, p);
            if !*many {
                return once;
            }
            bits(once)
                .filter(|&q| q > p)
                .fold(once, |acc, q| acc | m.repeated(repeat, q))
        })
    }

    /// `compute`'s value for (`node`, `p`), computed once.
    fn remembered(
        &mut self,
        node: &Node,
        p: usize,
        compute: impl FnOnce(&mut Self) -> Positions,
    ) -> Positions {
        let key = (core::ptr::from_ref(node).addr(), p);
        if let Some(&ends) = self.memo.get(&key) {
            return ends;
        }
        let ends = compute(self);
        self.memo.insert(key, ends);
        ends
    }
}

/// The positions in a set, in increasing order.
fn bits(mut set: Positions) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (set != 0).then(|| {
            let p = set.trailing_zeros() as usize;
            set &= set - 1;
            p
        })
    })
}

// ---------------------------------------------------------------------------------------------
// Event files

/// The `Header` object of an event file (informational).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Header {
    #[serde(rename = "Info", default)]
    pub info: Option<String>,
    #[serde(rename = "Version", default)]
    pub version: Option<String>,
    #[serde(rename = "DatePublished", default)]
    pub date_published: Option<String>,
}

/// An event left out of the import, or a part of one that was dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventIssue {
    pub file: String,
    /// The event's name, or `#index` if it has none.
    pub event: String,
    /// The perfmon field at fault, if one.
    pub field: Option<String>,
    pub reason: String,
}

impl fmt::Display for EventIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.event)?;
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// What one event file gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub header: Option<Header>,
    /// Converted events, in file order.
    pub events: Vec<EventDesc>,
    /// Events left out, with the reason.
    pub skipped: Vec<EventIssue>,
    /// Events imported with something dropped (a second encoding `alt` cannot hold).
    pub notes: Vec<EventIssue>,
}

impl Imported {
    /// The events as a table for `cpu` / `core_type`.
    pub fn to_table(
        &self,
        file: &str,
        cpu: Option<CpuModel>,
        core_type: Option<CoreType>,
    ) -> Result<EventTable, PerfmonError> {
        EventTable::new(self.events.clone())
            .map(|t| t.with_target(cpu, core_type))
            .map_err(|error| PerfmonError::Table {
                file: file.to_string(),
                error,
            })
    }
}

/// Parses an event file's text; `file` names it in errors and issues.
pub fn parse_events_json(file: &str, text: &str) -> Result<Imported, PerfmonError> {
    let top: Value = serde_json::from_str(text).map_err(|e| PerfmonError::Json {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        reason: e.to_string(),
    })?;
    let shape = |reason: &str| PerfmonError::Shape {
        file: file.to_string(),
        reason: reason.to_string(),
    };
    let (header, list) = match top {
        Value::Array(list) => (None, list),
        Value::Object(mut obj) => {
            let header = obj.get("Header").and_then(|h| Header::deserialize(h).ok());
            match obj.remove("Events") {
                Some(Value::Array(list)) => (header, list),
                Some(_) => return Err(shape("\"Events\" is not an array")),
                None => return Err(shape("an object without \"Events\"")),
            }
        }
        _ => {
            return Err(shape(
                "expected an array of events or {\"Header\": ..., \"Events\": [...]}",
            ));
        }
    };

    let mut out = Imported {
        header,
        ..Imported::default()
    };
    // Lower-cased names seen so far, for the case-insensitive duplicate check.
    let mut names = BTreeSet::new();
    for (i, v) in list.iter().enumerate() {
        let issue = |event: String, field: Option<&str>, reason: String| EventIssue {
            file: file.to_string(),
            event,
            field: field.map(str::to_string),
            reason,
        };
        let Value::Object(obj) = v else {
            out.skipped.push(issue(
                format!("#{i}"),
                None,
                "not a JSON object".to_string(),
            ));
            continue;
        };
        let name = match field_text(obj, "EventName") {
            Ok(Some(n)) if !n.is_empty() => n,
            Ok(_) => {
                out.skipped.push(issue(
                    format!("#{i}"),
                    Some("EventName"),
                    "missing or empty".to_string(),
                ));
                continue;
            }
            Err(reason) => {
                out.skipped
                    .push(issue(format!("#{i}"), Some("EventName"), reason));
                continue;
            }
        };
        match convert(&name, obj) {
            Ok((event, notes)) => {
                if !names.insert(name.to_ascii_lowercase()) {
                    out.skipped.push(issue(
                        name,
                        Some("EventName"),
                        "duplicate of an earlier event (names are case-insensitive)".to_string(),
                    ));
                    continue;
                }
                for (field, reason) in notes {
                    out.notes.push(issue(name.clone(), Some(field), reason));
                }
                out.events.push(event);
            }
            Err((field, reason)) => out.skipped.push(issue(name, Some(field), reason)),
        }
    }
    Ok(out)
}

/// A field's text: strings as they are, numbers and booleans spelled out, `null` as absent.
fn field_text(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(if *b { "1" } else { "0" }.to_string())),
        Some(_) => Err("expected a string".to_string()),
    }
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

/// A perfmon field and what is wrong with it (or what was dropped from it).
type FieldError = (&'static str, String);

/// A converted event and notes on what was dropped.
type Converted = (EventDesc, Vec<FieldError>);

/// A comma-separated list of numbers, each at most `max`; `None` when the field is absent or
/// empty.
fn nums(
    obj: &Map<String, Value>,
    field: &'static str,
    max: u64,
) -> Result<Option<Vec<u64>>, FieldError> {
    let Some(text) = field_text(obj, field).map_err(|r| (field, r))? else {
        return Ok(None);
    };
    if text.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for part in text.split(',') {
        let v = parse_num(part).map_err(|r| (field, r))?;
        if v > max {
            return Err((field, format!("{v:#x} is out of range (at most {max:#x})")));
        }
        out.push(v);
    }
    Ok(Some(out))
}

/// A single number field, at most `max`; 0 when absent.
fn num(obj: &Map<String, Value>, field: &'static str, max: u64) -> Result<u64, FieldError> {
    match nums(obj, field, max)? {
        None => Ok(0),
        Some(v) if v.len() == 1 => Ok(v[0]),
        Some(_) => Err((field, "expected one value, found a list".to_string())),
    }
}

/// A `"0"`/`"1"` flag; false when absent.
fn flag(obj: &Map<String, Value>, field: &'static str) -> Result<bool, FieldError> {
    match field_text(obj, field).map_err(|r| (field, r))?.as_deref() {
        None | Some("") | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err((field, format!("\"{other}\" is neither 0 nor 1"))),
    }
}

/// `Counter`: GP counter mask and fixed counter.
fn counters(obj: &Map<String, Value>) -> Result<(Option<u32>, Option<u8>), FieldError> {
    const F: &str = "Counter";
    let Some(text) = field_text(obj, F).map_err(|r| (F, r))? else {
        // No restriction given: any GP counter.
        return Ok((Some(u32::MAX), None));
    };
    let index = |t: &str| -> Result<u32, FieldError> {
        let v = parse_num(t).map_err(|r| (F, r))?;
        if v >= 32 {
            return Err((F, format!("counter {v} is beyond 31")));
        }
        Ok(v as u32)
    };
    let (mut gp, mut fixed) = (0u32, None);
    for tok in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let lower = tok.to_ascii_lowercase();
        if let Some(n) = lower
            .strip_prefix("fixed counter")
            .or_else(|| lower.strip_prefix("fixedcounter"))
        {
            let n = index(n.trim())?;
            if fixed.is_some_and(|f| f != n as u8) {
                return Err((F, "lists two fixed counters".to_string()));
            }
            fixed = Some(n as u8);
        } else if let Some((lo, hi)) = tok.split_once('-') {
            let (lo, hi) = (index(lo)?, index(hi)?);
            if lo > hi {
                return Err((F, format!("empty range \"{tok}\"")));
            }
            for i in lo..=hi {
                gp |= 1 << i;
            }
        } else {
            gp |= 1 << index(tok)?;
        }
    }
    if gp == 0 && fixed.is_none() {
        return Err((F, format!("\"{text}\" names no counter")));
    }
    Ok(((gp != 0).then_some(gp), fixed))
}

/// Converts one event; the notes say what was dropped.
fn convert(name: &str, obj: &Map<String, Value>) -> Result<Converted, FieldError> {
    let mut notes = Vec::new();
    let codes = nums(obj, "EventCode", 0xff)?.ok_or(("EventCode", "missing".to_string()))?;
    let umasks = nums(obj, "UMask", 0xff)?.unwrap_or_else(|| vec![0]);
    let umask2 = num(obj, "UMaskExt", 0xff)? as u8;
    let cmask = num(obj, "CounterMask", 0xff)? as u8;
    // Bits baremark's event select cannot express: refuse rather than count something else.
    if num(obj, "ExtSel", u64::MAX)? != 0 {
        return Err(("ExtSel", "extended event select is not supported".into()));
    }
    if flag(obj, "Equal")? {
        return Err((
            "Equal",
            "the cmask equality (EQ) bit is not supported".into(),
        ));
    }
    let msrs: Vec<u64> = nums(obj, "MSRIndex", u64::from(u32::MAX))?.unwrap_or_default();
    // "0" / "0x00" mean no MSR.
    let msrs: Vec<u64> = if msrs.iter().all(|&m| m == 0) {
        Vec::new()
    } else {
        msrs
    };
    let values = nums(obj, "MSRValue", u64::MAX)?.unwrap_or_else(|| vec![0]);
    for (field, len) in [
        ("EventCode", codes.len()),
        ("UMask", umasks.len()),
        ("MSRIndex", msrs.len()),
        ("MSRValue", values.len()),
    ] {
        if len > 2 {
            return Err((field, format!("lists {len} values; at most two encodings")));
        }
    }
    if msrs.len() == 1 && values.len() == 2 {
        return Err(("MSRValue", "two values for one MSR".into()));
    }
    let value_for = |i: usize| values.get(i).or(values.first()).copied().unwrap_or(0);
    let extra_for = |i: usize| {
        msrs.get(i).filter(|&&m| m != 0).map(|&m| ExtraMsr {
            msr: m as u32,
            value: value_for(i),
        })
    };

    let (gp, counter_fixed) = counters(obj)?;
    let mut select = EventSelect::new(codes[0] as u16, umasks[0] as u8);
    select.umask2 = umask2;
    select.cmask = cmask;
    select.inv = flag(obj, "Invert")?;
    select.edge = flag(obj, "EdgeDetect")?;
    select.any_thread = flag(obj, "AnyThread")?;

    let mut e = EventDesc::gp(name, select, Source::Perfmon);
    e.taken_alone = flag(obj, "TakenAlone")?;
    e.deprecated = flag(obj, "Deprecated")?;
    e.description = [("BriefDescription"), ("PublicDescription")]
        .iter()
        .find_map(|f| field_text(obj, f).ok().flatten().filter(|d| !d.is_empty()));

    if codes == [0] {
        // The fixed-counter pseudo encoding: event 0x00, umask N+1.
        let Some(index) = umasks[0].checked_sub(1) else {
            return Err((
                "UMask",
                "event code 0x00 with umask 0 is neither a GP event nor a fixed counter".into(),
            ));
        };
        if index >= 32 {
            return Err(("UMask", format!("fixed counter {index} is beyond 31")));
        }
        if let Some(c) = counter_fixed.filter(|&c| u64::from(c) != index) {
            return Err((
                "Counter",
                format!(
                    "\"Fixed counter {c}\" disagrees with the pseudo encoding umask {:#04x}",
                    umasks[0]
                ),
            ));
        }
        if umasks.len() > 1 || !msrs.is_empty() {
            return Err((
                "EventCode",
                "a fixed-counter event with a second encoding or an MSR".into(),
            ));
        }
        e.fixed = Some(index as u8);
        e.gp_counters = None;
        return Ok((e, notes));
    }

    e.fixed = counter_fixed;
    e.gp_counters = gp;
    e.extra = extra_for(0);
    let pairs = codes.len().max(umasks.len()).max(msrs.len());
    if pairs == 2 {
        let code2 = codes.get(1).copied().unwrap_or(codes[0]);
        let umask2nd = umasks.get(1).copied().unwrap_or(umasks[0]);
        let extra2 = extra_for(1);
        // `alt` is another event code with the same umask and its own MSR (core offcore
        // events); anything else cannot be said and is reported.
        match extra2 {
            Some(x) if code2 != codes[0] && umask2nd == umasks[0] && e.extra.is_some() => {
                e.alt = Some((code2 as u16, x));
            }
            _ => {
                let msr = match extra2 {
                    Some(x) => format!(", MSR {:#x}", x.msr),
                    None => ", no MSR".to_string(),
                };
                let field = match (codes.len(), umasks.len()) {
                    (_, 2) => "UMask",
                    (2, _) => "EventCode",
                    _ => "MSRIndex",
                };
                notes.push((
                    field,
                    format!(
                        "second encoding (event {code2:#04x}, umask {umask2nd:#04x}{msr}) dropped: \
                         only a second event code with its own MSR can be kept; using event \
                         {:#04x}, umask {:#04x}",
                        codes[0], umasks[0]
                    ),
                ));
            }
        }
    }
    if let Err((field, reason)) = crate::table::check_event(&e) {
        return Err((field, reason.to_string()));
    }
    Ok((e, notes))
}

// ---------------------------------------------------------------------------------------------
// Loading

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
    use super::*;

    fn pat(p: &str) -> Pattern {
        Pattern::parse(p).unwrap()
    }

    fn cpu(s: &str) -> CpuModel {
        CpuModel::parse(s).unwrap()
    }

    #[test]
    fn family_model_patterns() {
        assert!(pat("GenuineIntel-6-55").matches_cpu(&cpu("GenuineIntel-6-55")));
        assert!(pat("GenuineIntel-6-55").matches_cpu(&cpu("GenuineIntel-6-55-7")));
        assert!(!pat("GenuineIntel-6-55").matches_cpu(&cpu("GenuineIntel-6-5E")));
        assert!(!pat("GenuineIntel-6-5").matches_cpu(&cpu("GenuineIntel-6-55")));
        let skx = pat("GenuineIntel-6-55-[01234]");
        assert!(skx.matches_cpu(&cpu("GenuineIntel-6-55-4")));
        assert!(!skx.matches_cpu(&cpu("GenuineIntel-6-55-5")));
        assert!(
            skx.matches_cpu(&cpu("GenuineIntel-6-55")),
            "stepping unknown"
        );
        let clx = pat("GenuineIntel-6-55-[56789ABCDEF]");
        assert!(clx.matches_cpu(&cpu("GenuineIntel-6-55-b")));
        let adl = pat("GenuineIntel-6-(97|9A|B7|BA|BF)");
        assert!(adl.matches_cpu(&cpu("GenuineIntel-6-9a")));
        assert!(adl.matches_cpu(&cpu("GenuineIntel-6-BF-2")));
        assert!(!adl.matches_cpu(&cpu("GenuineIntel-6-9B")));
        let range = pat("GenuineIntel-6-5[0-9a-f]");
        assert!(range.matches_cpu(&cpu("GenuineIntel-6-5C")));
        assert!(!range.matches_cpu(&cpu("GenuineIntel-6-6C")));
        assert!(pat("GenuineIntel-6-[^5]E").matches_cpu(&cpu("GenuineIntel-6-4E")));
        assert!(!pat("GenuineIntel-6-[^5]E").matches_cpu(&cpu("GenuineIntel-6-5E")));
        assert!(pat("GenuineIntel-6-55(-[0-4])?").matches_cpu(&cpu("GenuineIntel-6-55-2")));
        assert!(pat("GenuineIntel-6-8.*").matches_cpu(&cpu("GenuineIntel-6-8F-3")));
        assert!(pat("GenuineIntel-18-1").matches_cpu(&cpu("GenuineIntel-18-1")));
        assert!(
            pat("GenuineIntel-6-0F").matches_cpu(&cpu("GenuineIntel-6-F")),
            "padded"
        );
        assert!(pat("^GenuineIntel-6-55$").matches_cpu(&cpu("GenuineIntel-6-55")));
        assert!(!pat("GenuineIntel-6-55").matches_cpu(&cpu("AuthenticAMD-6-55")));
        for bad in [
            "GenuineIntel-6-(55",
            "GenuineIntel-6-55)",
            "GenuineIntel-6-[55",
            "GenuineIntel-6-[]",
            "GenuineIntel-6-[9-0]",
            "GenuineIntel-6-\\d",
            "*GenuineIntel",
            "GenuineIntel-6-5{2}",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
        // Deep nesting is refused, not a stack overflow.
        let deep = format!("{}x{}", "(".repeat(100), ")".repeat(100));
        assert!(Pattern::parse(&deep).is_err());
        // Nested repeats terminate.
        assert!(pat("(a*)*b").full_match("aaab"));
        assert!(!pat("(a?)*b").full_match("aaac"));
    }

    /// Fuzzing regression (perfmon_mapfile target): nested repeats took time exponential in
    /// their depth; this row hung the import for minutes.
    #[test]
    fn nested_repeats_match_in_polynomial_time() {
        let text = "Family-model,Filename,EventType\n\
                    ((((((((((((((((.*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*,/x.json,core\n\
                    ((((((((((.|..)*)*)*)*)*)*)*)*)*-55)+,/y.json,core\n";
        let map = parse_mapfile("m.csv", text).unwrap();
        let started = std::time::Instant::now();
        let files = map.core_files(&cpu("GenuineIntel-6-55"), None);
        assert_eq!(files.len(), 2);
        assert!(map.core_files(&cpu("GenuineIntel-6-56"), None).len() == 1);
        // Milliseconds now; minutes before.
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
        // Repeats of what can match empty still match.
        assert!(pat("(a?)+b").full_match("b"));
        assert!(pat("(a*)+").full_match(""));
        assert!(pat("(ab|a)*c").full_match("aababc"));
        assert!(!pat("(ab|a)+c").full_match("c"));
        assert!(!pat("x").full_match(&"x".repeat(SUBJECT_MAX + 1)));
        assert!(pat("x*").full_match(&"x".repeat(SUBJECT_MAX)));
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

    fn one(json: &str) -> Result<EventDesc, EventIssue> {
        let text = format!("[{json}]");
        let imp = parse_events_json("t.json", &text).unwrap();
        match (imp.events.first(), imp.skipped.first()) {
            (Some(e), None) => Ok(e.clone()),
            (None, Some(s)) => Err(s.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn counter_field() {
        let e = one(r#"{"EventName":"A","EventCode":"0x3c","Counter":"0-3"}"#).unwrap();
        assert_eq!(e.gp_counters, Some(0b1111));
        let e = one(r#"{"EventName":"A","EventCode":"0x3c","Counter":"0,2,3,"}"#).unwrap();
        assert_eq!(e.gp_counters, Some(0b1101));
        let e = one(r#"{"EventName":"A","EventCode":"0x3c"}"#).unwrap();
        assert_eq!(e.gp_counters, Some(u32::MAX));
        let e =
            one(r#"{"EventName":"A","EventCode":"0x3c","Counter":"0,1,Fixed counter 1"}"#).unwrap();
        assert_eq!((e.gp_counters, e.fixed), (Some(0b11), Some(1)));
        for bad in ["32", "3-1", "x", "", "Fixed counter 0,Fixed counter 1"] {
            let s = one(&format!(
                r#"{{"EventName":"A","EventCode":"0x3c","Counter":"{bad}"}}"#
            ))
            .unwrap_err();
            assert_eq!(s.field.as_deref(), Some("Counter"), "{bad}: {s}");
        }
    }

    #[test]
    fn numbers_as_json_numbers_and_wrong_types() {
        let e = one(r#"{"EventName":"A","EventCode":60,"UMask":1,"CounterMask":2}"#).unwrap();
        assert_eq!((e.select.code, e.select.umask, e.select.cmask), (60, 1, 2));
        let s = one(r#"{"EventName":"A","EventCode":["0x3c"]}"#).unwrap_err();
        assert_eq!(s.field.as_deref(), Some("EventCode"));
        let s = one(r#"{"EventName":"A"}"#).unwrap_err();
        assert_eq!(
            (s.field.as_deref(), s.reason.as_str()),
            (Some("EventCode"), "missing")
        );
        let s = one(r#"{"EventCode":"0x3c"}"#).unwrap_err();
        assert_eq!(
            (s.event.as_str(), s.field.as_deref()),
            ("#0", Some("EventName"))
        );
        let s = one(r#"{"EventName":"A","EventCode":"0x3c","Invert":"2"}"#).unwrap_err();
        assert_eq!(s.field.as_deref(), Some("Invert"));
        let s = one(r#"{"EventName":"A","EventCode":"0x3c","ExtSel":"1"}"#).unwrap_err();
        assert_eq!(s.field.as_deref(), Some("ExtSel"));
        let s = one(r#""just a string""#).unwrap_err();
        assert_eq!(s.reason, "not a JSON object");
    }

    #[test]
    fn whole_file_errors() {
        assert!(matches!(
            parse_events_json("f.json", "{\"Events\": [1,"),
            Err(PerfmonError::Json { line: 1, .. })
        ));
        assert!(matches!(
            parse_events_json("f.json", "{\"Header\": {}}"),
            Err(PerfmonError::Shape { .. })
        ));
        assert!(matches!(
            parse_events_json("f.json", "{\"Events\": {}}"),
            Err(PerfmonError::Shape { .. })
        ));
        assert!(matches!(
            parse_events_json("f.json", "42"),
            Err(PerfmonError::Shape { .. })
        ));
        let e = parse_events_json("f.json", "{\"Events\": []}").unwrap();
        assert!(e.events.is_empty() && e.header.is_none());
        let msg = parse_events_json("dir/f.json", "[")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("dir/f.json:1:"), "{msg}");
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

        #[test]
        fn pattern_like_input_never_panics(text in "[-()|\\[\\]^$.?*+0-9A-Fa-f]{0,40}") {
            if let Ok(p) = Pattern::parse(&text) {
                let _ = p.full_match("GenuineIntel-6-55-4");
                let _ = p.matches_cpu(&cpu("GenuineIntel-6-55"));
            }
        }

        #[test]
        fn arbitrary_event_fields_never_panic(
            fields in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "EventName", "EventCode", "UMask", "UMaskExt", "Counter", "MSRIndex",
                        "MSRValue", "CounterMask", "Invert", "EdgeDetect", "AnyThread",
                        "TakenAlone", "Deprecated", "Equal", "ExtSel", "BriefDescription",
                    ]),
                    "(0x[0-9a-fA-F]{0,20}|[0-9]{0,22}|Fixed counter [0-9]{1,3}|[0-9x, -]{0,12})",
                ),
                0..12,
            )
        ) {
            let obj: Map<String, Value> = fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::String(v)))
                .collect();
            let text = Value::Array(vec![Value::Object(obj)]).to_string();
            let imp = parse_events_json("f.json", &text).unwrap();
            proptest::prop_assert_eq!(imp.events.len() + imp.skipped.len(), 1);
            // Whatever imports fits the table.
            proptest::prop_assert!(imp.to_table("f.json", None, None).is_ok());
        }
    }

    #[test]
    fn mapfile_rows() {
        let text = "Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n\
                    GenuineIntel-6-(97|9A),V1,/H/a_core.json,hybridcore,0x20,0x000001,Atom\n\
                    GenuineIntel-6-(97|9A),V1,/H/c_core.json,hybridcore,0x40,0x000001,Core\n\
                    GenuineIntel-6-(97,V1,/H/x_core.json,core,,,\n\
                    GenuineIntel-6-99,V1,/H/y_core.json,core,0x30,,\n\
                    \n\
                    GenuineIntel-6-97,V1,/H/uncore.json,uncore,,,\n";
        let m = parse_mapfile("mapfile.csv", text).unwrap();
        assert_eq!(m.entries.len(), 3);
        assert_eq!(
            m.bad_rows.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![4, 5]
        );
        assert!(m.bad_rows[1].reason.contains("Core Type"));
        let adl = cpu("GenuineIntel-6-9A");
        assert_eq!(m.core_files(&adl, None).len(), 2);
        let atom = m.core_files(&adl, Some(CoreType::Atom));
        assert_eq!(atom.len(), 1);
        assert_eq!(atom[0].filename, "/H/a_core.json");
        assert_eq!(atom[0].native_model_id, Some(1));
        assert_eq!(atom[0].core_role.as_deref(), Some("Atom"));
        assert!(matches!(
            parse_mapfile("m.csv", "Family-model,Version\nx,y\n"),
            Err(PerfmonError::Mapfile { line: Some(1), .. })
        ));
        // The Filename must stay inside the repository.
        let mut e = m.entries[0].clone();
        e.filename = "/../../etc/passwd".into();
        assert!(e.path_under(Path::new("/r")).is_none());
        assert_eq!(
            m.entries[0].path_under(Path::new("/r")),
            Some(PathBuf::from("/r/H/a_core.json"))
        );
    }
}

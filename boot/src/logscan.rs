//! Reading a saved serial log that may be damaged: a capture cut off mid-record, bits flipped
//! on the line, garbage between or inside records, repeated lines, NUL bytes and stray carriage
//! returns, two boots captured into one file.
//!
//! [`scan`] keeps every intact record, sets aside the doubtful ones, and says what was lost or
//! is doubtful and where (line numbers and byte offsets in the file). Records carry no
//! sequence number and no checksum (docs/records.md), so what can be found is what breaks the
//! JSON, the schema or the protocol; a flipped bit that leaves a valid record of the right
//! shape (a digit changed into another digit) cannot be seen. docs/reliability.md, "Damaged
//! serial logs", has the table of cases.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::records::{Record, SCHEMA_VERSION};
use crate::results::{MetricRec, ResultRec};

/// What went wrong with a part of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A record that ends before it closes: its line ended, or another record began inside it.
    Cut,
    /// A line that begins as a record but is not valid JSON (bytes changed on the way).
    Corrupt,
    /// Bytes the kernel never writes (invalid UTF-8, control characters) inside a run.
    Garbage,
    /// A record that parses but shows marks of damage; set aside.
    Doubtful,
    /// A second, different record where a run has room for one; the first is kept.
    Conflict,
    /// Records the protocol requires that are not in the log.
    Missing,
    /// The log ends inside a record: the capture (or the machine) stopped mid-line.
    Truncated,
}

impl Kind {
    /// The name in the damage summary.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cut => "cut",
            Kind::Corrupt => "corrupt",
            Kind::Garbage => "garbage",
            Kind::Doubtful => "doubtful",
            Kind::Conflict => "conflict",
            Kind::Missing => "missing",
            Kind::Truncated => "truncated",
        }
    }

    const ALL: [Kind; 7] = [
        Kind::Cut,
        Kind::Corrupt,
        Kind::Truncated,
        Kind::Garbage,
        Kind::Doubtful,
        Kind::Conflict,
        Kind::Missing,
    ];
}

/// One place where the log is damaged.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    pub kind: Kind,
    /// 1-based lines of the file, first and last.
    pub lines: (usize, usize),
    /// Offset in the file of the damaged bytes (none for what is inferred: `missing`).
    pub byte: Option<usize>,
    /// The run it is in (1-based), if any.
    pub run: Option<usize>,
    /// The record type, as far as it can be read.
    pub record: Option<String>,
    /// The benchmark it belongs to (payload, bench), as far as it can be told.
    pub bench: Option<(String, String)>,
    pub detail: String,
}

/// What was cleaned up without losing anything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Repairs {
    /// NUL bytes removed.
    pub nul_bytes: usize,
    /// Carriage returns removed other than the one ending each line.
    pub stray_cr: usize,
    /// Records split over several lines by a line break, joined again: (first, last) line.
    pub rejoined: Vec<(usize, usize)>,
    /// Lines holding more than one record (a line break lost between them).
    pub glued: Vec<usize>,
    /// Exact copies of a record dropped: (line of the copy, line of the record kept).
    pub duplicates: Vec<(usize, usize)>,
}

impl Repairs {
    fn any(&self) -> bool {
        self.nul_bytes > 0
            || self.stray_cr > 0
            || !self.rejoined.is_empty()
            || !self.glued.is_empty()
            || !self.duplicates.is_empty()
    }
}

/// One boot of the kernel: its records from `boot` to `end`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// 1-based.
    pub number: usize,
    /// First and last line of the file that belong to it.
    pub lines: (usize, usize),
    /// The intact records, in order.
    pub records: Vec<Record>,
    /// The line of each record.
    pub record_lines: Vec<usize>,
    /// Whether it begins with its `boot` record.
    pub booted: bool,
    /// The earlier run this one repeats record for record, if any.
    pub copy_of: Option<usize>,
    /// Benchmarks with records lost or doubtful: (payload, bench, why).
    pub incomplete: Vec<(String, String, String)>,
}

impl Run {
    /// The `status` of the run's `end` record, if it has one.
    pub fn end_status(&self) -> Option<&str> {
        self.records
            .iter()
            .find(|r| r.kind == "end")
            .map(|r| r.str("status").unwrap_or("?"))
    }
}

/// A log read with [`scan`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    pub runs: Vec<Run>,
    pub damage: Vec<Damage>,
    pub repairs: Repairs,
    /// Lines and bytes in the file.
    pub lines: usize,
    pub bytes: usize,
}

/// How a log ended, for the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every run ended `ok` and nothing was lost.
    Ok,
    /// A run's intact `end` record says `fail`.
    KernelFailure,
    /// Records were lost or are doubtful (a cut at the very end of the log aside).
    Damaged,
    /// A run has no `end` record (and nothing else was lost).
    NoEnd,
}

impl Scan {
    /// All intact records of every run, in order.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.runs.iter().flat_map(|r| &r.records)
    }

    /// Whether records were lost or are doubtful anywhere but at the very end of the log (a
    /// capture that stopped mid-record is a run without an end, like one cut at a line end).
    pub fn damaged(&self) -> bool {
        self.damage.iter().any(|d| d.kind != Kind::Truncated)
    }

    /// The verdict: a failure the kernel reported first, then damage, then a missing end (a
    /// run without one, or a log that ends inside a record). Runs that repeat an earlier run
    /// exactly are the same run.
    pub fn verdict(&self) -> Verdict {
        let runs = || self.runs.iter().filter(|r| r.copy_of.is_none());
        if runs().any(|r| matches!(r.end_status(), Some(s) if s != "ok")) {
            Verdict::KernelFailure
        } else if self.damaged() {
            Verdict::Damaged
        } else if runs().count() == 0
            || runs().any(|r| r.end_status().is_none())
            || self.damage.iter().any(|d| d.kind == Kind::Truncated)
        {
            Verdict::NoEnd
        } else {
            Verdict::Ok
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The schema, as far as the checks need it (docs/records.md).

/// Top-level fields of each record type besides `type` and `v`.
const FIELDS: &[(&str, &[&str])] = &[
    (
        "boot",
        &[
            "kernel",
            "version",
            "bootloader_api",
            "firmware",
            "serial",
            "tsc_at_entry",
            "memory",
            "kernel_image",
            "config",
            "framebuffer",
            "rsdp",
        ],
    ),
    ("config_error", &["line", "message"]),
    (
        "cpu",
        &[
            "vendor",
            "family",
            "model",
            "stepping",
            "brand",
            "max_leaf",
            "max_extended_leaf",
            "hypervisor",
            "hypervisor_signature",
            "features",
            "protections",
            "vector",
            "cr0",
            "cr4",
        ],
    ),
    (
        "checks",
        &[
            "breakpoint_resume",
            "gp_recovery",
            "msr_gp_recovery",
            "msr_write_allow_list",
            "interrupts_enabled",
            "heap_used_bytes",
            "unmapped_null_page",
        ],
    ),
    (
        "tsc",
        &[
            "hz",
            "method",
            "uncertainty_hz",
            "uncertainty_ppm",
            "samples",
            "invariant",
            "cpuid_16h_base_mhz",
            "pit_hz",
            "pit_uncertainty_hz",
            "pit_present",
        ],
    ),
    (
        "apic",
        &[
            "mode",
            "id",
            "version",
            "lvt_entries",
            "base",
            "timer_hz",
            "timer_divide",
            "timer_vector",
            "spurious_vector",
            "timer_checks",
            "error_status",
        ],
    ),
    (
        "pmu",
        &[
            "discovery",
            "summary",
            "backend",
            "emulated",
            "reason",
            "kind",
            "gp_counters",
            "gp_width",
            "fixed_mask",
            "fixed_width",
            "full_width_write",
            "core_type",
            "perf_capabilities",
            "cpuid_23h",
            "hypervisor",
            "pmi_vector",
            "cpuid_0a",
            "intel",
            "amd",
            "probes",
        ],
    ),
    ("selftest", &["check", "result", "detail"]),
    (
        "selftest_summary",
        &["checks", "passed", "failed", "skipped"],
    ),
    ("error", &["source", "message"]),
    (
        "fault",
        &[
            "mode",
            "vector",
            "mnemonic",
            "name",
            "error_code",
            "rip",
            "cs",
            "rflags",
            "rsp",
            "ss",
            "cr2",
            "page_fault",
            "registers",
            "task",
            "task_index",
            "detail",
        ],
    ),
    ("panic", &["file", "line", "column", "message"]),
    ("end", &["status", "reason", "tsc", "on_end", "interrupts"]),
    (
        "task_start",
        &[
            "task",
            "task_index",
            "entry",
            "segments",
            "mapped_bytes",
            "user_page",
        ],
    ),
    (
        "schedule",
        &[
            "policy",
            "tasks",
            "quantum_us",
            "quantum_tsc",
            "timer_count",
            "timer_divide",
            "switch_tsc_min",
            "switch_tsc_max",
            "switch_wall_tsc",
            "switch_hw_tsc_min",
            "switch_hw_wall_tsc",
            "switch_hw_loaded_wall_tsc",
        ],
    ),
    ("task_error", &["task", "task_index", "message"]),
    ("report", &["task", "task_index", "values", "text"]),
    ("task_output", &["task", "task_index", "part", "text"]),
    (
        "task_exit",
        &[
            "task",
            "task_index",
            "code",
            "virtual_tsc",
            "rdpmc_emulated",
            "counters_lost",
            "pce",
            "pce_entries",
            "syscalls",
            "interrupts",
            "entries",
        ],
    ),
    (
        "task_spawn",
        &[
            "task",
            "task_index",
            "parent",
            "parent_index",
            "add_to_parent",
        ],
    ),
    (
        "task_killed",
        &[
            "task",
            "task_index",
            "budget_ms",
            "budget_tsc",
            "virtual_tsc",
            "syscalls",
            "interrupts",
        ],
    ),
    (
        "bench_start",
        &[
            "payload",
            "bench",
            "iterations",
            "bytes_per_iteration",
            "reps",
            "warmup",
            "overhead",
            "groups",
            "events",
            "events_total",
        ],
    ),
    (
        "result",
        &[
            "payload",
            "bench",
            "event",
            "unit",
            "supported",
            "reason",
            "counter",
            "emulated",
            "group",
            "groups",
            "multiplexed",
            "scaling",
            "reps",
            "warmup",
            "iterations",
            "overhead",
            "raw",
            "raw2x",
            "overhead_stats",
            "value",
            "per_iteration",
            "outliers",
            "interrupts",
            "interrupts_max",
        ],
    ),
    (
        "samples",
        &[
            "payload", "bench", "event", "kind", "first", "values", "outliers",
        ],
    ),
    (
        "metric",
        &["payload", "bench", "name", "value", "unit", "reason"],
    ),
    (
        "harness_error",
        &["payload", "task_index", "bench", "message"],
    ),
    (
        "summary",
        &[
            "payloads",
            "benchmarks",
            "results",
            "unsupported",
            "errors",
            "tsc_hz",
            "tsc_method",
        ],
    ),
    // Named by the results model; no field is checked.
    ("bench_summary", &[]),
];

/// Fields whose value is one of a few words: a value one character off one of them is a
/// flipped bit. (Other values pass: a later kernel may add words.)
const WORDS: &[(&str, &str, &[&str])] = &[
    ("end", "status", &["ok", "fail"]),
    ("samples", "kind", &["region", "empty", "region2x"]),
    ("result", "unit", &["ticks", "events"]),
    ("result", "overhead", &["empty", "diff", "none"]),
    ("bench_start", "overhead", &["empty", "diff", "none"]),
    ("fault", "mode", &["kernel", "user"]),
    ("selftest", "result", &["pass", "fail", "skip"]),
];

/// Machine records: one per boot, so a second, different one means a second boot whose `boot`
/// record was lost.
const MACHINE: &[&str] = &["cpu", "checks", "tsc", "apic", "pmu"];
/// Other records a run has at most one of.
const ONCE: &[&str] = &["schedule", "selftest_summary", "summary", "end"];
/// Records of one task, one of each per task (`task_index`).
const PER_TASK: &[&str] = &[
    "task_start",
    "task_exit",
    "task_killed",
    "task_error",
    "task_spawn",
];
/// Records of a benchmark.
const HARNESS: &[&str] = &["bench_start", "result", "samples", "metric"];

fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    FIELDS.iter().find(|(k, _)| *k == kind).map(|(_, f)| *f)
}

/// The candidate in `set` that `s` differs from in exactly one byte (a flipped bit changes one
/// byte, and keeps the length).
fn one_off<'a>(s: &str, set: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    set.into_iter().find(|c| {
        c.len() == s.len() && c.bytes().zip(s.bytes()).filter(|(a, b)| a != b).count() == 1
    })
}

/// Why an intact-looking record is doubtful, if it is.
fn doubt(r: &Record, run_version: Option<u64>) -> Option<String> {
    // The profile's records are checked by their reader (a RIP list half read would skew it).
    if crate::profile::is_profile_record(r) {
        return crate::profile::doubt(r);
    }
    let kind = r.kind.as_str();
    let Some(fields) = fields_of(kind) else {
        let known = FIELDS.iter().map(|(k, _)| *k);
        if let Some(k) = one_off(kind, known) {
            return Some(format!(
                "record type `{kind}` is unknown and one character off `{k}` (a flipped bit?)"
            ));
        }
        if !kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            || kind.is_empty()
        {
            return Some(format!(
                "record type `{}` is not a name the kernel writes",
                kind.escape_default()
            ));
        }
        // A record type this tool does not know: shown raw, as docs/records.md says.
        return None;
    };
    if let Some(v) = run_version
        && r.version() != Some(v)
    {
        return Some(format!(
            "its schema version `{}` differs from the run's v{v} (a flipped bit?)",
            r.get("v")
        ));
    }
    let obj = r.value.as_object()?;
    for key in obj.keys() {
        if key == "type" || key == "v" || fields.contains(&key.as_str()) {
            continue;
        }
        if let Some(k) = one_off(key, fields.iter().copied())
            && !obj.contains_key(k)
        {
            return Some(format!(
                "field `{}` is not in the schema and `{k}` is missing (a flipped bit?)",
                key.escape_default()
            ));
        }
    }
    for (_, field, words) in WORDS.iter().filter(|(k, _, _)| *k == kind) {
        if let Some(s) = r.str(field)
            && !words.contains(&s)
            && let Some(w) = one_off(s, words.iter().copied())
        {
            return Some(format!(
                "`{field}` is `{}`, one character off `{w}` (a flipped bit?)",
                s.escape_default()
            ));
        }
    }
    wrong_types(r).map(|e| format!("a field has the wrong type: {e}"))
}

/// Type errors in the fields the results and the report read.
fn wrong_types(r: &Record) -> Option<String> {
    let string = |k: &str| match r.get(k) {
        Value::String(_) => None,
        other => Some(format!("`{k}` is {other}, not a string")),
    };
    let count = |k: &str, nullable: bool| match r.get(k) {
        Value::Null if nullable => None,
        v if v.is_u64() => None,
        other => Some(format!("`{k}` is {other}, not a count")),
    };
    let first = |checks: Vec<Option<String>>| checks.into_iter().flatten().next();
    match r.kind.as_str() {
        "result" => serde_json::from_value::<ResultRec>(r.value.clone())
            .err()
            .map(|e| e.to_string())
            .or_else(|| first(vec![string("payload"), string("bench")])),
        "metric" => serde_json::from_value::<MetricRec>(r.value.clone())
            .err()
            .map(|e| e.to_string())
            .or_else(|| first(vec![string("payload"), string("bench")])),
        "samples" => first(vec![
            string("payload"),
            string("bench"),
            string("event"),
            string("kind"),
            count("first", false),
            match r.get("values") {
                Value::Array(a) if a.iter().all(|v| v.is_i64() || v.is_u64()) => None,
                other => Some(format!("`values` is {other}, not integers")),
            },
        ]),
        "bench_start" => first(vec![
            string("payload"),
            string("bench"),
            count("iterations", true),
            count("reps", true),
            count("events_total", true),
            match r.get("events") {
                Value::Array(a) if a.iter().all(Value::is_string) => None,
                Value::Null => None,
                other => Some(format!("`events` is {other}, not names")),
            },
        ]),
        "summary" => first(vec![count("benchmarks", true), count("results", true)]),
        "end" => string("status"),
        "task_start" | "task_exit" | "task_killed" | "task_error" | "task_spawn" => {
            first(vec![string("task"), count("task_index", false)])
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Lines and pieces.

/// The kernel writes the `type` field first: `{"type":` is where a record begins.
const START: &[u8] = b"{\"type\":";
/// At most this many lines are joined back into one record.
const MAX_JOIN: usize = 8;
/// A record line is at most 4096 bytes (docs/records.md); joins stop well past that.
const MAX_JOINED_BYTES: usize = 3 * 4096;

/// A line of the file with its noise removed.
struct Line {
    /// 1-based.
    number: usize,
    /// Offset of its first byte in the file.
    start: usize,
    /// The bytes without NULs, stray CRs and the line ending.
    text: Vec<u8>,
    /// The offset within the raw line of each byte of `text` (`None`: the same).
    map: Option<Vec<usize>>,
    /// Ends with a line feed (the last line of a cut capture does not).
    terminated: bool,
}

impl Line {
    /// The file offset of byte `i` of `text`.
    fn offset(&self, i: usize) -> usize {
        self.start
            + match &self.map {
                None => i,
                Some(map) => map
                    .get(i)
                    .copied()
                    .unwrap_or_else(|| map.last().map_or(0, |m| m + 1)),
            }
    }
}

fn split_lines(bytes: &[u8], repairs: &mut Repairs) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let (raw, terminated, next) = match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(n) => (&bytes[start..start + n], true, start + n + 1),
            None => (&bytes[start..], false, bytes.len()),
        };
        // One CR before the LF is the kernel's own line ending; any other CR is noise.
        let body = raw.strip_suffix(b"\r").unwrap_or(raw);
        let (text, map) = if body.iter().any(|&b| b == 0 || b == b'\r') {
            let mut text = Vec::with_capacity(body.len());
            let mut map = Vec::with_capacity(body.len());
            for (i, &b) in body.iter().enumerate() {
                match b {
                    0 => repairs.nul_bytes += 1,
                    b'\r' => repairs.stray_cr += 1,
                    _ => {
                        text.push(b);
                        map.push(i);
                    }
                }
            }
            (text, Some(map))
        } else {
            (body.to_vec(), None)
        };
        lines.push(Line {
            number: lines.len() + 1,
            start,
            text,
            map,
            terminated,
        });
        start = next;
    }
    lines
}

/// Why a record could not be read.
#[derive(Clone, Debug, PartialEq)]
enum Broken {
    /// The text ended before the record closed.
    Eof,
    /// Another record begins inside it.
    CutBy,
    /// Not valid JSON: the parser's message and the column.
    Syntax(String, usize),
    /// Valid JSON, or nearly, but its `type` cannot be read.
    Damaged(String),
}

#[derive(Debug)]
enum Piece {
    Record(usize, usize, Record),
    Broken(usize, usize, Broken),
    Text(usize, usize),
}

impl Piece {
    fn span(&self) -> (usize, usize) {
        match self {
            Piece::Record(s, e, _) | Piece::Broken(s, e, _) | Piece::Text(s, e) => (*s, *e),
        }
    }
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn is_blank(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_whitespace)
}

/// A JSON object with a string `type`.
fn as_record(value: Value) -> Option<Record> {
    let kind = value.get("type")?.as_str()?.to_string();
    value.is_object().then_some(Record { kind, value })
}

/// A JSON object without a string `type` that is a record all the same: it has the schema
/// version, or a key one character off `type`.
fn typeless_record(value: &Value) -> bool {
    value.as_object().is_some_and(|o| {
        o.contains_key("v")
            || o.contains_key("type")
            || o.keys().any(|k| one_off(k, ["type"]).is_some())
    })
}

/// Splits a line into records, broken records and text. A record begins at `{"type":`, or at
/// the start of a line that opens a JSON object (`{"`).
fn split(s: &[u8]) -> Vec<Piece> {
    let lead = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let tail = s.len()
        - s.iter()
            .rev()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(0);
    // The usual case: the whole line is one record.
    if s.get(lead) == Some(&b'{')
        && let Ok(value) = serde_json::from_slice::<Value>(&s[lead..tail])
    {
        let typeless = typeless_record(&value);
        return vec![match as_record(value) {
            Some(r) => Piece::Record(lead, tail, r),
            None if typeless => Piece::Broken(
                lead,
                tail,
                Broken::Damaged("its `type` field is damaged".into()),
            ),
            None => Piece::Text(lead, tail),
        }];
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < s.len() {
        // A line that opens an object begins with a record (its `type` may be damaged, or on
        // the next line).
        let next = if pos == 0 && s.get(lead) == Some(&b'{') {
            Some(lead)
        } else {
            find(s, START, pos)
        };
        let Some(at) = next else {
            if !is_blank(&s[pos..]) {
                out.push(Piece::Text(pos, s.len()));
            }
            break;
        };
        if !is_blank(&s[pos..at]) {
            out.push(Piece::Text(pos, at));
        }
        let mut stream = serde_json::Deserializer::from_slice(&s[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                let end = (at + stream.byte_offset()).max(at + 1);
                let typeless = typeless_record(&value);
                out.push(match as_record(value) {
                    Some(r) => Piece::Record(at, end, r),
                    None if typeless => Piece::Broken(
                        at,
                        end,
                        Broken::Damaged("its `type` field is damaged".into()),
                    ),
                    None => Piece::Text(at, end),
                });
                pos = end;
            }
            Some(Err(e)) => {
                let error_at = at + e.column().saturating_sub(1);
                let later = find(s, START, at + 1);
                let (end, why) = match later {
                    // Intact up to where the next record begins: cut short by it.
                    Some(j) if e.is_eof() || error_at >= j => (j, Broken::CutBy),
                    Some(j) => (j, syntax(&e, error_at - at)),
                    None if e.is_eof() => (s.len(), Broken::Eof),
                    None => (s.len(), syntax(&e, error_at - at)),
                };
                out.push(Piece::Broken(at, end, why));
                pos = end;
            }
            None => break,
        }
    }
    out
}

fn syntax(e: &serde_json::Error, column: usize) -> Broken {
    let msg = e.to_string();
    let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]);
    Broken::Syntax(msg.to_string(), column + 1)
}

/// A name read from a broken record's text, `"key":"value"`, if it is one the kernel could
/// have written (a damaged one is no guide).
fn field_in(raw: &[u8], key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let at = find(raw, pat.as_bytes(), 0)? + pat.len();
    let len = raw[at..].iter().take(128).position(|&b| b == b'"')?;
    let v = std::str::from_utf8(&raw[at..at + len]).ok()?;
    let name = |c: char| c.is_ascii_alphanumeric() || "_-.+".contains(c);
    (!v.is_empty() && v.chars().all(name)).then(|| v.to_string())
}

/// Why a text line is not the kernel's, if it is not: the kernel writes UTF-8 without control
/// characters (a task's echoed output, `task   NAME: ...`, may hold any).
fn garbage(raw: &[u8]) -> Option<String> {
    if raw.starts_with(b"task ") {
        return None;
    }
    if let Err(e) = std::str::from_utf8(raw) {
        return Some(format!(
            "{} the kernel never writes (not UTF-8 at column {})",
            plural(raw.len(), "byte"),
            e.valid_up_to() + 1
        ));
    }
    raw.iter()
        .position(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
        .map(|i| {
            format!(
                "{} the kernel never writes (control character 0x{:02x} at column {})",
                plural(raw.len(), "byte"),
                raw[i],
                i + 1
            )
        })
}

/// A logical line: one line of the file, or several joined back into one record.
struct Logical {
    text: Vec<u8>,
    /// (index into the lines, offset in `text` where it begins)
    members: Vec<(usize, usize)>,
}

impl Logical {
    fn member(&self, pos: usize) -> (usize, usize) {
        let i = self
            .members
            .iter()
            .rposition(|&(_, off)| off <= pos)
            .unwrap_or(0);
        self.members[i]
    }
}

/// An item of the log in order: a record, a broken record, or text.
struct Item {
    /// First and last line.
    lines: (usize, usize),
    /// File offset of its first byte.
    byte: usize,
    body: Body,
}

enum Body {
    Record(Record, Vec<u8>),
    /// Why, the bytes, whether the log ends inside it.
    Broken(Broken, Vec<u8>, bool),
    Text(Vec<u8>),
}

/// Where the pieces of a logical line are, in the file.
fn items_of(logical: &Logical, lines: &[Line], pieces: Vec<Piece>, out: &mut Vec<Item>) {
    for piece in pieces {
        let (start, end) = piece.span();
        let (first, off) = logical.member(start);
        let (last, _) = logical.member(end.saturating_sub(1).max(start));
        let byte = lines[first].offset(start - off);
        let raw = logical.text[start..end].to_vec();
        let body = match piece {
            Piece::Record(_, _, r) => Body::Record(r, raw),
            Piece::Broken(_, _, why) => {
                // The end of an unterminated last line: the capture stopped there.
                let at_eof =
                    end == logical.text.len() && last + 1 == lines.len() && !lines[last].terminated;
                Body::Broken(why, raw, at_eof)
            }
            Piece::Text(..) => Body::Text(raw),
        };
        out.push(Item {
            lines: (lines[first].number, lines[last].number),
            byte,
            body,
        });
    }
}

/// The items of the log; records split over lines are joined again.
fn items(lines: &[Line], repairs: &mut Repairs) -> Vec<Item> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut logical = Logical {
            text: lines[i].text.clone(),
            members: vec![(i, 0)],
        };
        let mut pieces = split(&logical.text);
        // A record broken at the end of its line whose rest is on the next lines (a line break
        // inserted into it): join them while that makes it whole. A line that begins with a
        // record of its own is never taken.
        if let Some(Piece::Broken(at, _, Broken::Eof)) = pieces.last() {
            let at = *at;
            let mut text = logical.text.clone();
            let mut members = logical.members.clone();
            let mut k = i;
            while k + 1 < lines.len() && members.len() < MAX_JOIN && text.len() < MAX_JOINED_BYTES {
                // The rest of a split record holds no record start of its own.
                let next = &lines[k + 1];
                if is_blank(&next.text) || find(&next.text, START, 0).is_some() {
                    break;
                }
                members.push((k + 1, text.len()));
                text.extend_from_slice(&next.text);
                k += 1;
                let joined = split(&text);
                match joined.iter().find(|p| p.span().0 == at) {
                    Some(Piece::Record(..)) => {
                        repairs.rejoined.push((lines[i].number, lines[k].number));
                        logical = Logical { text, members };
                        pieces = joined;
                        i = k;
                        break;
                    }
                    Some(Piece::Broken(_, _, Broken::Eof)) => continue,
                    _ => break,
                }
            }
        }
        let records = pieces
            .iter()
            .filter(|p| matches!(p, Piece::Record(..)))
            .count();
        if records > 1 {
            repairs.glued.push(lines[logical.members[0].0].number);
        }
        items_of(&logical, lines, pieces, &mut out);
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Runs, duplicates and conflicts.

/// A benchmark's records in a run, from its `bench_start`.
#[derive(Default)]
struct Block {
    payload: String,
    bench: String,
    line: usize,
    /// The task (its index) it ran in.
    task: Option<u64>,
    start: Option<Record>,
    /// event -> (line, record)
    results: BTreeMap<String, (usize, Record)>,
    /// (event, kind) -> repetitions seen
    samples: BTreeMap<(String, String), BTreeSet<usize>>,
    /// Its task has not ended yet.
    open: bool,
}

/// The run being read.
#[derive(Default)]
struct Building {
    run: Run,
    ended: bool,
    version: Option<u64>,
    /// Records a run has one of (by type and key): line and value.
    seen: HashMap<(String, String), (usize, Value)>,
    /// Every record's bytes: an exact copy after the `end` is a repeated line, not a new run.
    all: HashMap<Vec<u8>, usize>,
    /// Exact copies of benchmark records in one task: (task, bytes) -> line.
    copies: HashMap<(Option<u64>, Vec<u8>), usize>,
    /// The previous record: line and bytes.
    last: Option<(usize, Vec<u8>)>,
    /// The latest task of each name.
    task_of: HashMap<String, u64>,
    blocks: Vec<Block>,
    /// (payload, bench) -> its latest block
    latest: HashMap<(String, String), usize>,
    /// task_index -> the record that ended it
    task_end: HashMap<u64, String>,
    /// task_index -> (name, line) of its `task_start`
    task_start: BTreeMap<u64, (String, usize)>,
    /// Benchmarks a `harness_error` names: (payload, bench or "").
    harness_errors: HashSet<(String, String)>,
    /// The line of the damaged `boot` record that began this run.
    boot_damaged: Option<usize>,
    /// Benchmarks with records lost or doubtful: (payload, bench, why).
    marks: Vec<(String, String, String)>,
}

/// Damage found while reading a record: kind, benchmark, detail.
type Found = (Kind, Option<(String, String)>, String);

fn is_harness(kind: &str) -> bool {
    HARNESS.contains(&kind)
}

/// Record types that can repeat back to back in a healthy run.
fn repeatable(kind: &str) -> bool {
    matches!(
        kind,
        "task_output" | "report" | "error" | "harness_error" | "config_error" | "panic" | "fault"
    ) || fields_of(kind).is_none()
}

fn bench_of(r: &Record) -> Option<(String, String)> {
    Some((r.str("payload")?.to_string(), r.str("bench")?.to_string()))
}

fn title(payload: &str, bench: &str) -> String {
    if payload == bench {
        payload.to_string()
    } else {
        format!("{payload}/{bench}")
    }
}

impl Building {
    fn new(number: usize, line: usize, booted: bool, boot_damaged: Option<usize>) -> Building {
        Building {
            run: Run {
                number,
                lines: (line, line),
                booted,
                ..Run::default()
            },
            boot_damaged,
            ..Building::default()
        }
    }

    fn mark(&mut self, bench: &Option<(String, String)>, why: String) {
        if let Some((p, b)) = bench {
            self.marks.push((p.clone(), b.clone(), why));
        }
    }

    /// Takes a record into the run, or says why not: `Ok(None)` kept, `Ok(Some(line))` an
    /// exact copy of the record at `line`, `Err` damage.
    fn take(&mut self, r: Record, raw: Vec<u8>, line: usize) -> Result<Option<usize>, Found> {
        let kind = r.kind.clone();
        // The version the run's records carry: its boot's, when this tool reads it (a boot
        // of another version is judged against the rest at the end of the run).
        if kind == "boot" && self.run.records.is_empty() {
            self.version = r.version().filter(|&v| v == SCHEMA_VERSION);
        }
        let version = self.version.filter(|_| kind != "boot");
        if let Some(why) = doubt(&r, version) {
            let bench = bench_of(&r).filter(|_| is_harness(&kind));
            self.mark(
                &bench,
                format!("a doubtful `{kind}` record was set aside (line {line})"),
            );
            return Err((Kind::Doubtful, bench, format!("{why}; set aside")));
        }
        if let Some((first, _)) = self.last.as_ref().filter(|(_, l)| *l == raw)
            && !repeatable(&kind)
        {
            return Ok(Some(*first));
        }
        let key = match kind.as_str() {
            k if MACHINE.contains(&k) || ONCE.contains(&k) || k == "boot" => Some(String::new()),
            k if PER_TASK.contains(&k) => Some(format!("#{}", r.get("task_index"))),
            "fault" if r.str("mode") == Some("user") => Some(format!("#{}", r.get("task_index"))),
            "selftest" => Some(r.get("check").to_string()),
            _ => None,
        };
        if let Some(key) = key {
            if let Some((first, v)) = self.seen.get(&(kind.clone(), key.clone())) {
                if *v == r.value {
                    return Ok(Some(*first));
                }
                let whose = if key.is_empty() {
                    String::new()
                } else {
                    format!(" for task {key}")
                };
                return Err((
                    Kind::Conflict,
                    None,
                    format!(
                        "a second `{kind}` record{whose} in the run, different from line {first}'s: \
                         kept the first, set this one aside"
                    ),
                ));
            }
            self.seen
                .insert((kind.clone(), key), (line, r.value.clone()));
        }
        if is_harness(&kind) {
            let task = r.str("payload").and_then(|p| self.task_of.get(p).copied());
            if let Some(&first) = self.copies.get(&(task, raw.clone())) {
                return Ok(Some(first));
            }
            if let Some(detail) = self.file_harness(&r, line, task) {
                let bench = bench_of(&r);
                self.mark(
                    &bench,
                    format!("two different `{kind}` records for one place (line {line})"),
                );
                return Err((Kind::Conflict, bench, detail));
            }
            self.copies.insert((task, raw.clone()), line);
        }
        self.follow_tasks(&r, line);
        if kind == "end" {
            self.ended = true;
        }
        self.all.insert(raw.clone(), line);
        self.last = Some((line, raw));
        self.run.records.push(r);
        self.run.record_lines.push(line);
        Ok(None)
    }

    /// Follows tasks: their names, how they ended, the benchmarks they leave open.
    fn follow_tasks(&mut self, r: &Record, line: usize) {
        let name = r.str("task").unwrap_or("?").to_string();
        match (r.kind.as_str(), r.u64("task_index")) {
            ("task_start", Some(i)) => {
                self.task_of.insert(name.clone(), i);
                self.task_start.insert(i, (name, line));
            }
            ("task_exit" | "task_killed" | "fault", Some(i)) => {
                self.task_end.insert(i, r.kind.clone());
                for block in self.blocks.iter_mut().filter(|k| k.payload == name) {
                    block.open = false;
                }
            }
            ("harness_error", _) => {
                if let Some(p) = r.str("payload") {
                    let bench = r.str("bench").unwrap_or("").to_string();
                    self.harness_errors.insert((p.to_string(), bench));
                }
            }
            _ => {}
        }
    }

    /// Files a benchmark record in its block. Returns why it conflicts with one there.
    fn file_harness(&mut self, r: &Record, line: usize, task: Option<u64>) -> Option<String> {
        let payload = r.str("payload").unwrap_or("?").to_string();
        let bench = r.str("bench").unwrap_or("?").to_string();
        let key = (payload.clone(), bench.clone());
        let new_block = |start: Option<Record>| Block {
            payload: payload.clone(),
            bench: bench.clone(),
            line,
            task,
            open: start.is_some(),
            start,
            ..Block::default()
        };
        if r.kind == "bench_start" {
            self.blocks.push(new_block(Some(r.clone())));
            self.latest.insert(key, self.blocks.len() - 1);
            return None;
        }
        let id = match self.latest.get(&key) {
            Some(&id) => id,
            None => {
                // Its bench_start is not in the log: the protocol check says so.
                self.blocks.push(new_block(None));
                self.latest.insert(key, self.blocks.len() - 1);
                self.blocks.len() - 1
            }
        };
        let block = &mut self.blocks[id];
        let event = r.str("event").unwrap_or("?").to_string();
        match r.kind.as_str() {
            "result" => match block.results.get(&event) {
                Some((first, _)) => Some(format!(
                    "a second `result` for {event} in this benchmark, different from line {first}'s: \
                     kept the first, set this one aside"
                )),
                None => {
                    block.results.insert(event, (line, r.clone()));
                    None
                }
            },
            "samples" => {
                let kind = r.str("kind").unwrap_or("?").to_string();
                let first = usize::try_from(r.u64("first").unwrap_or(0)).unwrap_or(usize::MAX);
                let n = r.get("values").as_array().map_or(0, Vec::len);
                let range = first..first.saturating_add(n);
                let seen = block
                    .samples
                    .entry((event.clone(), kind.clone()))
                    .or_default();
                if range.clone().any(|i| seen.contains(&i)) {
                    return Some(format!(
                        "samples of {event}/{kind} from repetition {first} overlap another record's: \
                         kept the first, set this one aside"
                    ));
                }
                // The kernel caps repetitions at 1000; a huge `first` is caught by the checks
                // of the results (docs/harness.md), not stored here.
                if range.end - range.start <= 100_000 && first <= 1_000_000 {
                    seen.extend(range);
                }
                None
            }
            _ => None,
        }
    }
}

struct Reader {
    scan: Scan,
    current: Option<Building>,
    /// A damaged `boot` record was seen at this line: the next record begins a new run.
    boot_lost_at: Option<usize>,
}

impl Reader {
    fn damage(
        &mut self,
        kind: Kind,
        item: &Item,
        record: Option<String>,
        found: (Option<(String, String)>, String),
    ) {
        let run = self.current.as_ref().map(|b| b.run.number);
        self.scan.damage.push(Damage {
            kind,
            lines: item.lines,
            byte: Some(item.byte),
            run,
            record,
            bench: found.0,
            detail: found.1,
        });
    }

    fn finish_run(&mut self) {
        if let Some(b) = self.current.take() {
            let run = check_protocol(b, &mut self.scan.damage);
            self.scan.runs.push(run);
        }
    }

    fn new_run(&mut self, line: usize, booted: bool) {
        self.finish_run();
        let number = self.scan.runs.len() + 1;
        self.current = Some(Building::new(
            number,
            line,
            booted,
            self.boot_lost_at.take(),
        ));
    }

    /// The run in progress (not ended) that a line belongs to.
    fn open_run(&mut self, item: &Item) -> Option<&mut Building> {
        let b = self.current.as_mut().filter(|b| !b.ended)?;
        b.run.lines.1 = item.lines.1;
        Some(b)
    }

    fn text(&mut self, item: &Item, raw: &[u8]) {
        // Before the first record and between runs the firmware and the bootloader speak.
        if self.open_run(item).is_none() {
            return;
        }
        if let Some(why) = garbage(raw) {
            self.damage(Kind::Garbage, item, None, (None, format!("{why}: skipped")));
        }
    }

    fn broken(&mut self, item: &Item, why: &Broken, raw: &[u8], at_eof: bool) {
        // Outside a run, a line that merely begins with `{` is the firmware's.
        let in_run = self.current.as_ref().is_some_and(|b| !b.ended);
        if !in_run && !raw.starts_with(b"{\"") {
            return;
        }
        let record = field_in(raw, "type");
        let payload = field_in(raw, "payload");
        let bench = field_in(raw, "bench");
        let (kind, mut detail) = match why {
            Broken::Eof if at_eof => (
                Kind::Truncated,
                format!(
                    "the log ends inside it after {} bytes: the capture (or the machine) stopped",
                    raw.len()
                ),
            ),
            Broken::Eof => (
                Kind::Cut,
                format!(
                    "cut short: its line ends after {} bytes, before the record closes",
                    raw.len()
                ),
            ),
            Broken::CutBy => (
                Kind::Cut,
                format!(
                    "cut short after {} bytes by the start of another record",
                    raw.len()
                ),
            ),
            Broken::Syntax(msg, col) => (
                Kind::Corrupt,
                format!("not valid JSON at column {col}: {msg}"),
            ),
            Broken::Damaged(msg) => (Kind::Corrupt, msg.clone()),
        };
        // Which benchmark lost it: the one it names, else the ones in progress.
        let harness = record.as_deref().is_none_or(is_harness);
        let mut benches = Vec::new();
        if let Some(b) = self.open_run(item)
            && harness
        {
            match (&payload, &bench) {
                (Some(p), Some(n)) => benches.push((p.clone(), n.clone())),
                _ => benches.extend(
                    b.blocks
                        .iter()
                        .filter(|k| k.open && payload.as_ref().is_none_or(|p| *p == k.payload))
                        .map(|k| (k.payload.clone(), k.bench.clone())),
                ),
            }
            let what = record.as_deref().map_or("a record".to_string(), a_record);
            for bench in &benches {
                b.mark(
                    &Some(bench.clone()),
                    format!("{what} is {} (line {})", kind.name(), item.lines.0),
                );
            }
        }
        match record.as_deref() {
            Some("end") => detail.push_str("; how the run ended is unknown"),
            Some("boot") => {
                detail.push_str("; a new run begins");
                if self
                    .current
                    .as_ref()
                    .is_some_and(|b| !b.run.records.is_empty())
                {
                    self.finish_run();
                }
                self.boot_lost_at = Some(item.lines.0);
            }
            _ => {}
        }
        detail.push_str("; skipped");
        self.damage(kind, item, record, (benches.into_iter().next(), detail));
    }

    fn record(&mut self, item: &Item, r: Record, raw: Vec<u8>) {
        let line = item.lines.0;
        // Where the record goes: this run, or a new one.
        let kind = r.kind.as_str();
        let new_run = match self.current.as_ref() {
            None => Some(kind == "boot"),
            Some(b) if kind == "boot" => {
                // The run's own boot record again before its end is a repeated line.
                let again = !b.ended
                    && b.seen
                        .get(&("boot".to_string(), String::new()))
                        .is_some_and(|(_, v)| *v == r.value);
                (!again).then_some(true)
            }
            // After the end: a repeated line of the run, or the next run (its boot lost).
            Some(b) if b.ended => (!b.all.contains_key(&raw)).then_some(false),
            // A second, different machine record: a new boot whose boot record was lost.
            Some(b) if MACHINE.contains(&kind) => b
                .seen
                .get(&(kind.to_string(), String::new()))
                .is_some_and(|(_, v)| *v != r.value)
                .then_some(false),
            Some(_) => None,
        };
        if let Some(booted) = new_run {
            self.new_run(line, booted);
        }
        let Some(b) = self.current.as_mut() else {
            return;
        };
        b.run.lines.1 = b.run.lines.1.max(item.lines.1);
        let after_end = b.ended;
        let copy_after_end = after_end.then(|| b.all.get(&raw).copied()).flatten();
        if let Some(first) = copy_after_end {
            self.scan.repairs.duplicates.push((line, first));
            return;
        }
        let kind = r.kind.clone();
        match b.take(r, raw, line) {
            Ok(None) => {}
            Ok(Some(first)) => self.scan.repairs.duplicates.push((line, first)),
            Err((k, bench, mut detail)) => {
                if kind == "end" {
                    detail.push_str("; how the run ended is unknown");
                }
                self.damage(k, item, Some(kind), (bench, detail));
            }
        }
    }
}

/// Adds a `missing` (or another kind of) finding of the protocol check.
fn finding(
    damage: &mut Vec<Damage>,
    kind: Kind,
    run: usize,
    line: usize,
    record: &str,
    bench: Option<(String, String)>,
    detail: String,
) {
    damage.push(Damage {
        kind,
        lines: (line, line),
        byte: None,
        run: Some(run),
        record: Some(record.to_string()),
        bench,
        detail,
    });
}

/// The checks a whole run allows: records the protocol requires that are not there.
fn check_protocol(mut b: Building, damage: &mut Vec<Damage>) -> Run {
    let run_no = b.run.number;
    let first_line = b.run.record_lines.first().copied().unwrap_or(b.run.lines.0);
    if !b.run.booted && b.boot_damaged.is_none() {
        let detail = if run_no == 1 {
            "the log begins inside a run: its `boot` record is not there (the capture started late?)"
        } else {
            "a new run begins without a `boot` record (lost?)"
        };
        finding(
            damage,
            Kind::Missing,
            run_no,
            first_line,
            "boot",
            None,
            detail.into(),
        );
    }
    // A boot record of another version among records of this tool's: its `v` was hit.
    if let Some(boot) = b.run.records.first().filter(|r| r.kind == "boot")
        && boot.version() != Some(SCHEMA_VERSION)
    {
        let ours = b
            .run
            .records
            .iter()
            .filter(|r| r.version() == Some(SCHEMA_VERSION));
        if ours.count() * 2 > b.run.records.len() {
            let detail = format!(
                "its schema version `{}` differs from the v{SCHEMA_VERSION} of the run's other records (a flipped bit?)",
                boot.get("v")
            );
            finding(
                damage,
                Kind::Doubtful,
                run_no,
                first_line,
                "boot",
                None,
                detail,
            );
        }
    }
    let ended_ok = b.run.end_status() == Some("ok");
    let stopped = b.run.end_status().is_none();
    let mut marks = std::mem::take(&mut b.marks);
    for block in &b.blocks {
        let who = Some((block.payload.clone(), block.bench.clone()));
        let name = title(&block.payload, &block.bench);
        // A run without an end stopped (or its capture did): what its benchmarks in progress
        // lack never came. That is the missing end (exit 3), not damage.
        let cut_off = stopped && block.open;
        let mut lost = |record: &str, mut detail: String, why: String| {
            let kind = if cut_off {
                detail.push_str(": the run stops before they came (it has no `end` record)");
                Kind::Truncated
            } else {
                Kind::Missing
            };
            finding(
                damage,
                kind,
                run_no,
                block.line,
                record,
                who.clone(),
                detail,
            );
            marks.push((block.payload.clone(), block.bench.clone(), why));
        };
        let Some(start) = &block.start else {
            lost(
                "bench_start",
                format!("{name}: its records are here but its `bench_start` is not (lost?)"),
                "its `bench_start` record is missing".into(),
            );
            continue;
        };
        let events = start.get("events").as_array().map_or(0, Vec::len) as u64;
        let expected = 1 + start.u64("events_total").unwrap_or(events);
        let got = block.results.len() as u64;
        let task_exited = block
            .task
            .and_then(|t| b.task_end.get(&t))
            .is_some_and(|how| how == "task_exit");
        let refused = b
            .harness_errors
            .contains(&(block.payload.clone(), block.bench.clone()))
            || b.harness_errors
                .contains(&(block.payload.clone(), String::new()));
        if got == 0 {
            // A benchmark whose task faulted, was killed or never ended has no results: that is
            // what the kernel reports, not damage.
            if task_exited && !refused && ended_ok {
                lost(
                    "result",
                    format!(
                        "{name}: no `result` records though its task exited (expected {expected}: tsc and {} events)",
                        expected - 1
                    ),
                    format!("its {expected} `result` records are missing"),
                );
            }
        } else if got < expected {
            // The results of a benchmark are sent together: some but not all is loss.
            lost(
                "result",
                format!(
                    "{name}: {} of {expected} `result` records missing (its bench_start plans tsc and {} events)",
                    expected - got,
                    expected - 1
                ),
                format!("{} of {expected} `result` records missing", expected - got),
            );
        }
        // Samples of each measured event: every kind the overhead mode measures, every
        // repetition.
        let mut want = vec!["region"];
        match start.str("overhead") {
            Some("empty") => want.push("empty"),
            Some("diff") => want.push("region2x"),
            _ => {}
        }
        for (event, (_, result)) in &block.results {
            let has_samples = block.samples.keys().any(|(e, _)| e == event);
            // Synthetic and older logs carry samples for some events only.
            if result.get("supported").as_bool() != Some(true) || !has_samples {
                continue;
            }
            let reps = result
                .u64("reps")
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n <= 1_000_000);
            for kind in &want {
                let seen = block.samples.get(&(event.clone(), kind.to_string()));
                let lacking = match (seen, reps) {
                    (None, Some(n)) => n.max(1),
                    (None, None) => 1,
                    (Some(s), Some(n)) => (0..n).filter(|i| !s.contains(i)).count(),
                    (Some(_), None) => 0,
                };
                if lacking == 0 {
                    continue;
                }
                let detail = match seen {
                    None => format!("{name}: no `samples` of {event}/{kind}"),
                    Some(_) => format!(
                        "{name}: samples of {event}/{kind}: {lacking} of {} repetitions missing (a `samples` record lost?)",
                        reps.unwrap_or(0)
                    ),
                };
                lost(
                    "samples",
                    detail,
                    format!("samples of {event}/{kind} missing"),
                );
            }
        }
    }
    // The summary counts what the kernel sent.
    if let Some(pos) = b.run.records.iter().position(|r| r.kind == "summary") {
        let summary = &b.run.records[pos];
        let line = b.run.record_lines[pos];
        for (field, kind) in [("benchmarks", "bench_start"), ("results", "result")] {
            let Some(said) = summary.u64(field) else {
                continue;
            };
            let got = b.run.records.iter().filter(|r| r.kind == kind).count() as u64;
            if got < said {
                let detail = format!(
                    "the summary counts {said} `{kind}` records, the log holds {got}: {} lost",
                    said - got
                );
                finding(damage, Kind::Missing, run_no, line, kind, None, detail);
            } else if got > said {
                let detail = format!(
                    "the summary counts {said} `{kind}` records, the log holds {got}: {} more than the kernel sent",
                    got - said
                );
                finding(damage, Kind::Doubtful, run_no, line, kind, None, detail);
            }
        }
    }
    // Every task ends, in a run that ended ok.
    if ended_ok {
        for (index, (name, line)) in &b.task_start {
            if !b.task_end.contains_key(index) {
                let detail = format!(
                    "task {name} (#{index}) started but has no `task_exit`, `fault` or `task_killed` (lost?)"
                );
                finding(
                    damage,
                    Kind::Missing,
                    run_no,
                    *line,
                    "task_exit",
                    None,
                    detail,
                );
            }
        }
    }
    // One entry per benchmark, the reasons joined.
    let mut run = b.run;
    for (p, n, why) in marks {
        match run
            .incomplete
            .iter_mut()
            .find(|(pp, nn, _)| *pp == p && *nn == n)
        {
            Some((_, _, w)) => {
                if !w.contains(&why) {
                    w.push_str("; ");
                    w.push_str(&why);
                }
            }
            None => run.incomplete.push((p, n, why)),
        }
    }
    run
}

/// Reads a saved serial log (the raw bytes: a capture may hold anything).
pub fn scan(bytes: &[u8]) -> Scan {
    let mut repairs = Repairs::default();
    let lines = split_lines(bytes, &mut repairs);
    let items = items(&lines, &mut repairs);
    let mut reader = Reader {
        scan: Scan {
            repairs,
            lines: lines.len(),
            bytes: bytes.len(),
            ..Scan::default()
        },
        current: None,
        boot_lost_at: None,
    };
    for item in items {
        match item.body {
            Body::Record(ref r, ref raw) => reader.record(&item, r.clone(), raw.clone()),
            Body::Broken(ref why, ref raw, at_eof) => reader.broken(&item, why, raw, at_eof),
            Body::Text(ref raw) => {
                // Text that names a record type is a record whose opening brace was hit.
                if find(raw, b"\"type\":\"", 0).is_some() {
                    let why = Broken::Damaged("its opening `{` is damaged".into());
                    reader.broken(&item, &why, raw, false);
                } else {
                    reader.text(&item, raw);
                }
            }
        }
    }
    reader.finish_run();
    let mut scan = reader.scan;
    // A run that repeats an earlier one record for record is the same log twice.
    for i in 1..scan.runs.len() {
        let copy_of = (0..i).find(|&j| {
            scan.runs[j].copy_of.is_none() && scan.runs[j].records == scan.runs[i].records
        });
        scan.runs[i].copy_of = copy_of.map(|j| scan.runs[j].number);
    }
    scan.damage.sort_by_key(|d| (d.lines.0, d.kind));
    scan
}

// ---------------------------------------------------------------------------------------------
// The summary for people.

/// "a `result` record", "an `end` record".
fn a_record(kind: &str) -> String {
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} `{kind}` record")
}

/// Lines as "line 12" or "lines 12, 40-42, 90".
fn line_list(mut lines: Vec<usize>) -> String {
    lines.sort_unstable();
    lines.dedup();
    let mut out = String::from(if lines.len() == 1 { "line " } else { "lines " });
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        if i > 0 {
            out.push_str(", ");
        }
        if j > i {
            let _ = write!(out, "{}-{}", lines[i], lines[j]);
        } else {
            let _ = write!(out, "{}", lines[i]);
        }
        i = j + 1;
    }
    out
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// At most this many places of each kind of damage are shown one a line.
pub const SHOWN_PER_KIND: usize = 5;

/// One damage item as a line.
fn damage_line(d: &Damage) -> String {
    let lines = if d.lines.0 == d.lines.1 {
        format!("line {}", d.lines.0)
    } else {
        format!("lines {}-{}", d.lines.0, d.lines.1)
    };
    let at = d.byte.map(|b| format!(" (byte {b})")).unwrap_or_default();
    let record = d.record.as_deref().map_or("a record".to_string(), a_record);
    let what = match &d.bench {
        // Found by the protocol checks: the detail names what.
        _ if d.byte.is_none() => String::new(),
        _ if d.kind == Kind::Garbage => String::new(),
        Some((p, b)) => format!("{record} of {}: ", title(p, b)),
        None => format!("{record}: "),
    };
    format!(
        "DAMAGE   [{}] {lines}{at}: {what}{}",
        d.kind.name(),
        d.detail
    )
}

/// The log section of `report`: the runs (when more than one), what was lost or is doubtful
/// and where, what was repaired. Empty for a clean log of one run.
pub fn render(scan: &Scan, name: &str) -> String {
    let mut out = String::new();
    let shown: Vec<&Run> = scan.runs.iter().collect();
    if shown.len() > 1 {
        let _ = writeln!(
            out,
            "log      {name}: {} lines, {} runs",
            scan.lines,
            shown.len()
        );
        for run in &shown {
            let ending = match run.end_status() {
                Some("ok") => "ended ok".to_string(),
                Some(s) => format!("ended {s}"),
                None => "no end record".to_string(),
            };
            let copy = run
                .copy_of
                .map(|c| format!("; an exact copy of run {c}, not shown again"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "         run {} (lines {}-{}): {}{ending}{copy}",
                run.number,
                run.lines.0,
                run.lines.1,
                if run.booted { "" } else { "no boot record, " }
            );
        }
    }
    if !scan.damage.is_empty() {
        let mut counts: Vec<String> = Vec::new();
        for kind in Kind::ALL {
            let n = scan.damage.iter().filter(|d| d.kind == kind).count();
            if n > 0 {
                counts.push(format!("{} {n}", kind.name()));
            }
        }
        let _ = writeln!(
            out,
            "log      {name} {} ({} lines, {} bytes): {}",
            if scan.damaged() {
                "is damaged"
            } else {
                "ends inside a record"
            },
            scan.lines,
            scan.bytes,
            counts.join(", ")
        );
        for kind in Kind::ALL {
            let of_kind: Vec<&Damage> = scan.damage.iter().filter(|d| d.kind == kind).collect();
            for d in of_kind.iter().take(SHOWN_PER_KIND) {
                let _ = writeln!(out, "{}", damage_line(d));
            }
            if of_kind.len() > SHOWN_PER_KIND {
                let rest: Vec<usize> = of_kind[SHOWN_PER_KIND..]
                    .iter()
                    .map(|d| d.lines.0)
                    .collect();
                let _ = writeln!(
                    out,
                    "DAMAGE   [{}] {} more at {}",
                    kind.name(),
                    rest.len(),
                    line_list(rest)
                );
            }
        }
        let incomplete: Vec<String> = scan
            .runs
            .iter()
            .flat_map(|r| &r.incomplete)
            .map(|(p, b, _)| {
                if p == b {
                    p.clone()
                } else {
                    format!("{p}/{b}")
                }
            })
            .collect();
        if !incomplete.is_empty() {
            let _ = writeln!(
                out,
                "         incomplete benchmarks (marked in the table): {}",
                incomplete.join(", ")
            );
        }
    }
    let r = &scan.repairs;
    if r.any() {
        let mut parts = Vec::new();
        if r.nul_bytes > 0 {
            parts.push(format!("removed {}", plural(r.nul_bytes, "NUL byte")));
        }
        if r.stray_cr > 0 {
            parts.push(format!(
                "removed {}",
                plural(r.stray_cr, "stray carriage return")
            ));
        }
        if !r.rejoined.is_empty() {
            let spans: Vec<String> = r.rejoined.iter().map(|(a, b)| format!("{a}-{b}")).collect();
            parts.push(format!(
                "joined {} split over lines {}",
                plural(r.rejoined.len(), "record"),
                spans.join(", ")
            ));
        }
        if !r.glued.is_empty() {
            parts.push(format!(
                "separated the records sharing {} (a line break lost)",
                line_list(r.glued.clone())
            ));
        }
        if !r.duplicates.is_empty() {
            let copies: Vec<usize> = r.duplicates.iter().map(|(c, _)| *c).collect();
            let example = r.duplicates[0];
            parts.push(format!(
                "dropped {} at {} (line {} repeats line {})",
                plural(r.duplicates.len(), "repeated record"),
                line_list(copies),
                example.0,
                example.1
            ));
        }
        let _ = writeln!(
            out,
            "note     {name}: cleaned up, nothing lost: {}",
            parts.join("; ")
        );
    }
    out
}

#[cfg(test)]
mod tests;

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
//!
//! The parts, in the order a log goes through them: `lines` cuts the bytes into records,
//! broken records and text; `runs` takes them into runs and finds what is repeated, in
//! conflict or missing, with `schema` saying which records are doubtful; `summary` tells people.

mod lines;
mod runs;
mod schema;
mod summary;
#[cfg(test)]
mod tests;

use crate::records::Record;
pub use summary::{SHOWN_PER_KIND, render};

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

/// Reads a saved serial log (the raw bytes: a capture may hold anything).
pub fn scan(bytes: &[u8]) -> Scan {
    let mut repairs = Repairs::default();
    let lines = lines::split_lines(bytes, &mut repairs);
    let items = lines::items(&lines, &mut repairs);
    let mut scan = runs::read(
        items,
        Scan {
            repairs,
            lines: lines.len(),
            bytes: bytes.len(),
            ..Scan::default()
        },
    );
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

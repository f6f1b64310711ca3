//! What goes wrong: [`ParseError`] (a byte span of the input and an [`ErrorKind`]), its
//! messages and the caret line under the input; constructors for the other parts.

use alloc::format;
use alloc::string::String;
use core::fmt;

use crate::cpu::Vendor;

/// A parse or resolution error at a byte span of the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset into the input (always on a char boundary, at most the input's length).
    pub position: usize,
    /// Length of the offending text in bytes (0 when something is missing at `position`).
    pub len: usize,
    pub kind: ErrorKind,
}

/// What is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Neither the catalogue nor the table knows the name.
    UnknownName(String),
    /// A term value that is not a number (decimal, or hex after `0x`) fitting 64 bits.
    BadNumber(String),
    /// A token starting with `r` that is neither a known name nor `r` + hex digits (64 bits).
    BadRaw(String),
    /// A value too wide for its field.
    OutOfRange {
        field: &'static str,
        value: u64,
        max: u64,
    },
    /// The event (or a field or term) exists but this PMU cannot count it; the reason.
    NotAvailable(String),
    /// A modifier letter other than `u`, `k`, `H`, `G`.
    UnknownModifier(String),
    /// A `pmu/.../` term other than the accepted ones.
    UnknownTerm(String),
    /// A PMU name other than `cpu`, `cpu_core`, `cpu_atom`.
    UnknownPmu(String),
    /// Malformed input; the message says what was expected.
    Syntax(String),
    /// A field or modifier that this vendor's event selects do not have.
    NotOnVendor { field: &'static str, vendor: Vendor },
    /// A raw config sets bits that are not event bits (privilege, enable, reserved, ...).
    RawBits { bits: u64, reason: &'static str },
    /// Parts that cannot go together (a term twice, `config=` with `event=`, `H` with `G`).
    Conflict(String),
}

fn vendor_name(v: Vendor) -> &'static str {
    match v {
        Vendor::Intel => "Intel",
        Vendor::Amd => "AMD",
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnknownName(n) => write!(f, "unknown event name `{n}`"),
            ErrorKind::BadNumber(t) => write!(
                f,
                "bad number `{t}`: expected decimal or 0x-prefixed hex, at most 64 bits"
            ),
            ErrorKind::BadRaw(t) => write!(
                f,
                "`{t}` is neither a known event nor a raw event (`r` followed by hex digits, at most 64 bits)"
            ),
            ErrorKind::OutOfRange { field, value, max } => write!(
                f,
                "field out of range: {field} = {value} ({value:#x}), at most {max} ({max:#x})"
            ),
            ErrorKind::NotAvailable(r) => write!(f, "not available on this PMU: {r}"),
            ErrorKind::UnknownModifier(m) if m == "p" || m == "P" => write!(
                f,
                "unknown modifier `{m}`: precise sampling (PEBS/IBS) is not supported; baremark counts, it does not sample"
            ),
            ErrorKind::UnknownModifier(m) => write!(
                f,
                "unknown modifier `{m}` (accepted: u user, k kernel, H host, G guest)"
            ),
            ErrorKind::UnknownTerm(t) => write!(
                f,
                "unknown term `{t}` (accepted: event, umask, umask2, cmask, inv, edge, any, in_tx, in_txcp, config, name)"
            ),
            ErrorKind::UnknownPmu(p) => {
                write!(f, "unknown PMU `{p}` (accepted: cpu, cpu_core, cpu_atom)")
            }
            ErrorKind::Syntax(m) | ErrorKind::Conflict(m) => f.write_str(m),
            ErrorKind::NotOnVendor { field, vendor } => {
                write!(f, "{field} does not exist on {} PMUs", vendor_name(*vendor))
            }
            ErrorKind::RawBits { bits, reason } => {
                write!(f, "raw config sets bits {bits:#x}: {reason}")
            }
        }
    }
}

impl fmt::Display for ParseError {
    /// `at column N: message`, where the column is the byte offset plus one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at column {}: {}",
            self.position.saturating_add(1),
            self.kind
        )
    }
}

impl core::error::Error for ParseError {}

/// The largest char boundary of `s` at or below `i`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1; // i > 0 here: 0 is always a boundary
    }
    i
}

impl ParseError {
    /// The input, a newline, and carets under the error's span (one caret when the span is
    /// empty). Control characters in the input are shown as spaces so the carets line up.
    pub fn caret_line(&self, input: &str) -> String {
        let mut out: String = input
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        out.push('\n');
        let start = floor_boundary(input, self.position);
        let end = floor_boundary(input, self.position.saturating_add(self.len)).max(start);
        let pad = input.get(..start).map_or(0, |s| s.chars().count());
        let width = input
            .get(start..end)
            .map_or(0, |s| s.chars().count())
            .max(1);
        out.extend(core::iter::repeat_n(' ', pad));
        out.extend(core::iter::repeat_n('^', width));
        out
    }
}

pub(super) fn err(position: usize, len: usize, kind: ErrorKind) -> ParseError {
    ParseError {
        position,
        len,
        kind,
    }
}

pub(super) fn syntax(position: usize, len: usize, msg: &str) -> ParseError {
    err(position, len, ErrorKind::Syntax(String::from(msg)))
}

pub(super) fn unexpected(c: char, position: usize, expected: &str) -> ParseError {
    err(
        position,
        c.len_utf8(),
        ErrorKind::Syntax(format!(
            "unexpected `{}`: expected {expected}",
            c.escape_debug()
        )),
    )
}

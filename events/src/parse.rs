//! The perf-style event syntax: what users type to say what to count.
//!
//! ```text
//! list      = item *( "," item )
//! item      = event | group
//! group     = "{" event *( "," event ) "}" [ ":" mods ]
//! event     = name [ ":" mods ]
//!           | raw [ ":" mods ]
//!           | pmu "/" term *( "," term ) "/" [ [ ":" ] mods ]
//! name      = 1*( ALPHA / DIGIT / "_" / "." / "-" )
//! raw       = "r" 1*HEXDIG                       ; at most 64 bits
//! pmu       = "cpu" | "cpu_core" | "cpu_atom"
//! term      = "event=" num | "umask=" num | "umask2=" num | "cmask=" num | "config=" num
//!           | flag [ "=" ( "0" | "1" ) ] | "name=" ( word | "'" text "'" | DQUOTE text DQUOTE )
//! flag      = "inv" | "edge" | "any" | "in_tx" | "in_txcp"
//! num       = 1*DIGIT | ( "0x" | "0X" ) 1*HEXDIG  ; at most 64 bits
//! mods      = 1*( "u" | "k" | "H" | "G" )
//! ```
//!
//! - Whitespace is allowed at both ends, around `,`, inside `{ }` and inside `cpu/ /`; nowhere
//!   else (not inside a name, not before `:`).
//! - Names resolve through the built-in catalogue first (perf's generic names such as
//!   `instructions`, `cycles`, `branches`; Intel architectural and fixed-counter names; AMD Zen
//!   names), then through the optional [`NamedEvents`] table (tried as typed, then upper-cased, so
//!   `machine_clears.count` finds `MACHINE_CLEARS.COUNT`). A name the catalogue knows but the PMU
//!   lacks is an error; it is never mapped to another event.
//! - A token that is `r` followed only by hex digits is a raw event, even if a table had such a
//!   name (as in perf).
//! - Raw values and `config=` are in register layout: event 7:0, umask 15:8, edge 18, inv 23,
//!   cmask 31:24; Intel AnyThread 21 (v3/v4 only), in_tx 32, in_txcp 33, umask2 47:40; AMD event
//!   bits 11:8 at 35:32. USR/OS (16/17), INT (20), EN (22), AMD GuestOnly/HostOnly (40/41) and
//!   reserved bits are errors: those belong to the modifiers or to baremark.
//! - Modifiers: `u` user only, `k` kernel only, `uk` both; no `u`/`k` means both (perf's
//!   default). `H` host only, `G` guest only (AMD only; an error on Intel, as is `H` with `G`).
//!   Anything else (perf's `p`, `pp`, `S`, `I`, ...) is an unknown modifier.
//! - Group modifiers follow perf: the group's letters are added to each member's own, so
//!   `{cycles:k,instructions}:u` counts cycles in user and kernel mode and instructions in user
//!   mode only.
//! - `cpu_core/.../` and `cpu_atom/.../` are accepted unless the capabilities say they describe
//!   the other core type of a hybrid part (or an AMD PMU).
//! - Terms: each at most once; `config=` cannot be combined with field terms; unset fields are 0
//!   (as in perf). A value too wide for its field is an error, never truncated.
//! - Errors carry the byte offset and length of what is wrong. All syntax errors (anywhere in the
//!   list) are reported before any error that depends on the PMU (unknown names, unavailable
//!   events, ranges); on a TSC-only PMU every event is then "not available".

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::catalog;
use crate::cpu::Vendor;
use crate::encode::{self, EncodeError, FixedCtrl, bits};
use crate::event::{EventDesc, EventSelect, EventSpec, Modifiers, NamedEvents, Source};
use crate::pmu::{CoreType, PmuCaps, PmuKind};

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

/// One event as typed, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The event as typed, with its own modifiers (not a group's).
    pub text: String,
    /// Byte offset of `text` in the input.
    pub position: usize,
    pub event: EventDesc,
    /// Effective modifiers (a group's merged in).
    pub modifiers: Modifiers,
}

impl Spec {
    /// The description and modifiers, as the rest of the crate takes them.
    pub fn to_event_spec(&self) -> EventSpec {
        EventSpec {
            event: self.event.clone(),
            modifiers: self.modifiers,
        }
    }
}

/// Events that are counted together: an explicit `{...}` group, or a lone event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub events: Vec<Spec>,
    /// Written with `{}`: the members must be on counters at the same time.
    pub explicit: bool,
}

/// A parsed list, in input order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventList {
    pub groups: Vec<Group>,
}

impl EventList {
    /// Every event, in input order.
    pub fn specs(&self) -> impl Iterator<Item = &Spec> {
        self.groups.iter().flat_map(|g| g.events.iter())
    }

    /// Number of events (not groups).
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.events.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Parses and resolves an event list for `caps`, looking names the catalogue lacks up in
/// `named`.
pub fn parse(
    input: &str,
    caps: &PmuCaps,
    named: Option<&dyn NamedEvents>,
) -> Result<EventList, ParseError> {
    // Syntax first, for the whole list, so a typo is reported before anything PMU specific.
    let ast = Parser {
        c: Cursor { s: input, pos: 0 },
    }
    .list()?;
    let r = Resolver { caps, named, input };
    let mut groups = Vec::with_capacity(ast.len());
    for g in ast {
        let events = g
            .members
            .iter()
            .map(|item| r.item(item))
            .collect::<Result<Vec<_>, _>>()?;
        groups.push(Group {
            events,
            explicit: g.explicit,
        });
    }
    Ok(EventList { groups })
}

/// One event of a list, resolved on its own ([`parse_each`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EachEvent {
    /// The event as typed, with its own modifiers (not a group's).
    pub text: String,
    /// Byte offset of `text` in the input.
    pub position: usize,
    /// Its `{}` group: the index among the list's explicit groups.
    pub group: Option<usize>,
    /// Modifiers apply to it (its own or its group's).
    pub has_modifiers: bool,
    /// Its `name=` term (`cpu/event=0x0e,umask=0x01,name=UOPS_ISSUED.ANY/`): what results
    /// call it, as perf does, whether or not it resolves on this PMU.
    pub name: Option<String>,
    /// The event, or why it does not resolve on this PMU.
    pub resolved: Result<Spec, ParseError>,
}

impl EachEvent {
    /// What results call the event: its `name=` term, else the event as typed.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.text)
    }
}

/// Checks the syntax of the whole list (an error anywhere is the list's error), then resolves
/// each event on its own: an event this PMU cannot count (an unknown name, a value out of
/// range, ...) fails alone, and the others are still resolved. For a kernel that plans what
/// it can and reports the rest.
pub fn parse_each(
    input: &str,
    caps: &PmuCaps,
    named: Option<&dyn NamedEvents>,
) -> Result<Vec<EachEvent>, ParseError> {
    let ast = Parser {
        c: Cursor { s: input, pos: 0 },
    }
    .list()?;
    let r = Resolver { caps, named, input };
    let mut explicit = 0;
    let mut out = Vec::new();
    for g in ast {
        let group = g.explicit.then(|| {
            explicit += 1;
            explicit - 1
        });
        for item in &g.members {
            out.push(EachEvent {
                text: String::from(input.get(item.start..item.end).unwrap_or("")),
                position: item.start,
                group,
                has_modifiers: item.mods.is_some(),
                name: item.name_term().map(String::from),
                resolved: r.item(item),
            });
        }
    }
    Ok(out)
}

fn err(position: usize, len: usize, kind: ErrorKind) -> ParseError {
    ParseError {
        position,
        len,
        kind,
    }
}

fn syntax(position: usize, len: usize, msg: &str) -> ParseError {
    err(position, len, ErrorKind::Syntax(String::from(msg)))
}

fn unexpected(c: char, position: usize, expected: &str) -> ParseError {
    err(
        position,
        c.len_utf8(),
        ErrorKind::Syntax(format!(
            "unexpected `{}`: expected {expected}",
            c.escape_debug()
        )),
    )
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// Characters that end a modifier run or a term value.
fn is_delimiter(c: char) -> bool {
    matches!(c, ',' | '{' | '}' | ':' | '/' | '=') || c.is_whitespace()
}

/// The hex digits of a raw event token (`r01c2` -> `01c2`).
fn raw_digits(token: &str) -> Option<&str> {
    let hex = token.strip_prefix('r')?;
    (!hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// A name that was probably meant as a raw event (`r`, `rxyz`): `r` plus letters and digits.
fn looks_like_raw(token: &str) -> bool {
    token
        .strip_prefix('r')
        .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn parse_number(t: &str) -> Option<u64> {
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        // Checked by hand because from_str_radix also takes a sign.
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse().ok(),
        None => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Syntax

struct Cursor<'a> {
    s: &'a str,
    /// Always on a char boundary.
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(_, c)| !f(c))
            .map_or(rest.len(), |(i, _)| i);
        self.pos += len;
        rest.get(..len).unwrap_or("")
    }

    fn skip_ws(&mut self) {
        self.take_while(|c| c.is_whitespace());
    }

    /// Length of the char at the cursor (0 at the end), for error spans.
    fn char_len(&self) -> usize {
        self.peek().map_or(0, char::len_utf8)
    }
}

/// Modifier letters with where they were typed (for errors that concern one letter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mods {
    usr: bool,
    os: bool,
    host: Option<usize>,
    guest: Option<usize>,
}

impl Mods {
    fn check(self) -> Result<Mods, ParseError> {
        if let (Some(h), Some(g)) = (self.host, self.guest) {
            return Err(err(
                h.max(g),
                1,
                ErrorKind::Conflict(String::from(
                    "`H` (host only) and `G` (guest only) together count both, which is the default; write neither",
                )),
            ));
        }
        Ok(self)
    }

    /// perf's group rule: the group's letters are added to the member's.
    fn union(self, group: Mods) -> Result<Mods, ParseError> {
        Mods {
            usr: self.usr || group.usr,
            os: self.os || group.os,
            host: self.host.or(group.host),
            guest: self.guest.or(group.guest),
        }
        .check()
    }

    fn modifiers(self) -> Modifiers {
        // Neither `u` nor `k`: both, as perf counts by default.
        let either = self.usr || self.os;
        Modifiers {
            usr: self.usr || !either,
            os: self.os || !either,
            int: false,
            host_only: self.host.is_some(),
            guest_only: self.guest.is_some(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PmuName {
    Cpu,
    CpuCore,
    CpuAtom,
}

impl PmuName {
    fn from_name(s: &str) -> Option<PmuName> {
        match s {
            "cpu" => Some(PmuName::Cpu),
            "cpu_core" => Some(PmuName::CpuCore),
            "cpu_atom" => Some(PmuName::CpuAtom),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Event,
    Umask,
    Umask2,
    Cmask,
    Inv,
    Edge,
    Any,
    InTx,
    InTxcp,
    Config,
    Name,
}

impl Key {
    const ALL: [Key; 11] = [
        Key::Event,
        Key::Umask,
        Key::Umask2,
        Key::Cmask,
        Key::Inv,
        Key::Edge,
        Key::Any,
        Key::InTx,
        Key::InTxcp,
        Key::Config,
        Key::Name,
    ];

    fn name(self) -> &'static str {
        match self {
            Key::Event => "event",
            Key::Umask => "umask",
            Key::Umask2 => "umask2",
            Key::Cmask => "cmask",
            Key::Inv => "inv",
            Key::Edge => "edge",
            Key::Any => "any",
            Key::InTx => "in_tx",
            Key::InTxcp => "in_txcp",
            Key::Config => "config",
            Key::Name => "name",
        }
    }

    fn from_name(s: &str) -> Option<Key> {
        Key::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    fn is_flag(self) -> bool {
        matches!(
            self,
            Key::Inv | Key::Edge | Key::Any | Key::InTx | Key::InTxcp
        )
    }

    /// Whether the term sets part of the encoding that `config=` also sets.
    fn is_field(self) -> bool {
        !matches!(self, Key::Config | Key::Name)
    }
}

#[derive(Clone, Copy, Debug)]
enum Value<'a> {
    Num(u64),
    Str(&'a str),
}

#[derive(Clone, Debug)]
struct Term<'a> {
    key: Key,
    /// Span of `key=value`.
    pos: usize,
    len: usize,
    value: Value<'a>,
}

#[derive(Clone, Debug)]
enum Ev<'a> {
    Name {
        text: &'a str,
        pos: usize,
    },
    Raw {
        text: &'a str,
        pos: usize,
        config: u64,
    },
    Pmu {
        pmu: PmuName,
        /// Span of `pmu/.../`.
        pos: usize,
        len: usize,
        terms: Vec<Term<'a>>,
    },
}

#[derive(Clone, Debug)]
struct Item<'a> {
    /// Span of the event with its own modifiers.
    start: usize,
    end: usize,
    ev: Ev<'a>,
    /// Effective modifier letters (after a group's); `None`: none written.
    mods: Option<Mods>,
}

impl<'a> Item<'a> {
    /// The `name=` term of a `pmu/.../` event.
    fn name_term(&self) -> Option<&'a str> {
        match &self.ev {
            Ev::Pmu { terms, .. } => terms.iter().find_map(|t| match t.value {
                Value::Str(s) => Some(s),
                Value::Num(_) => None,
            }),
            _ => None,
        }
    }
}

struct GroupAst<'a> {
    members: Vec<Item<'a>>,
    explicit: bool,
}

struct Parser<'a> {
    c: Cursor<'a>,
}

const EXPECTED_EVENT: &str = "an event: a name, a raw event (r01c2), cpu/.../ or a `{` group";

impl<'a> Parser<'a> {
    fn list(&mut self) -> Result<Vec<GroupAst<'a>>, ParseError> {
        let mut groups = Vec::new();
        let mut last_comma = None;
        loop {
            self.c.skip_ws();
            groups.push(self.item(last_comma)?);
            self.c.skip_ws();
            let at = self.c.pos;
            match self.c.peek() {
                None => return Ok(groups),
                Some(',') => {
                    last_comma = Some(at);
                    self.c.bump();
                }
                Some('}') => return Err(syntax(at, 1, "`}` without a matching `{`")),
                Some('{') => return Err(unexpected('{', at, "`,` before a group")),
                Some(c) => return Err(unexpected(c, at, "`,` between events")),
            }
        }
    }

    /// The error for a missing event at the cursor.
    fn missing_event(&self, last_comma: Option<usize>) -> ParseError {
        let at = self.c.pos;
        match (self.c.peek(), last_comma) {
            (None, None) => syntax(0, self.c.s.len(), "no events given"),
            (None, Some(comma)) => syntax(comma, 1, "trailing `,`: expected an event after it"),
            (Some(','), _) => syntax(at, 1, "empty item: expected an event before this `,`"),
            (Some('}'), _) => syntax(at, 1, "`}` without a matching `{`"),
            (Some(c), _) => unexpected(c, at, EXPECTED_EVENT),
        }
    }

    fn item(&mut self, last_comma: Option<usize>) -> Result<GroupAst<'a>, ParseError> {
        match self.c.peek() {
            Some('{') => self.group(),
            None | Some(',') | Some('}') => Err(self.missing_event(last_comma)),
            Some(_) => Ok(GroupAst {
                members: vec![self.event()?],
                explicit: false,
            }),
        }
    }

    fn group(&mut self) -> Result<GroupAst<'a>, ParseError> {
        let open = self.c.pos;
        self.c.bump();
        let never_closed = || syntax(open, 1, "`{` is never closed");
        let mut members = Vec::new();
        let mut last_comma = None;
        loop {
            self.c.skip_ws();
            let at = self.c.pos;
            match self.c.peek() {
                None => return Err(never_closed()),
                Some('{') => return Err(syntax(at, 1, "groups cannot be nested")),
                Some('}') => {
                    return Err(match last_comma {
                        Some(comma) => syntax(
                            comma,
                            1,
                            "trailing `,` in a group: expected an event after it",
                        ),
                        None => syntax(open, at + 1 - open, "empty group"),
                    });
                }
                Some(',') => {
                    return Err(syntax(
                        at,
                        1,
                        "empty item: expected an event before this `,`",
                    ));
                }
                Some(_) => members.push(self.event()?),
            }
            self.c.skip_ws();
            let at = self.c.pos;
            match self.c.peek() {
                Some(',') => {
                    last_comma = Some(at);
                    self.c.bump();
                }
                Some('}') => {
                    self.c.bump();
                    break;
                }
                None => return Err(never_closed()),
                Some('{') => return Err(syntax(at, 1, "groups cannot be nested")),
                Some(c) => return Err(unexpected(c, at, "`,` or `}`")),
            }
        }
        if self.c.peek() == Some(':') {
            self.c.bump();
            let group = self.mods()?;
            for m in &mut members {
                m.mods = Some(match m.mods {
                    Some(own) => own.union(group)?,
                    None => group,
                });
            }
        }
        Ok(GroupAst {
            members,
            explicit: true,
        })
    }

    fn event(&mut self) -> Result<Item<'a>, ParseError> {
        let start = self.c.pos;
        let text = self.c.take_while(is_name_char);
        if text.is_empty() {
            return Err(match self.c.peek() {
                Some(c) => unexpected(c, start, EXPECTED_EVENT),
                None => syntax(start, 0, "expected an event"),
            });
        }
        let ev;
        let mut mods = None;
        if self.c.peek() == Some('/') {
            let pmu = PmuName::from_name(text)
                .ok_or_else(|| err(start, text.len(), ErrorKind::UnknownPmu(text.to_string())))?;
            self.c.bump();
            let terms = self.terms(start)?;
            ev = Ev::Pmu {
                pmu,
                pos: start,
                len: self.c.pos - start,
                terms,
            };
            // perf writes `cpu/.../u`; `cpu/.../:u` is accepted too.
            match self.c.peek() {
                Some(':') => {
                    self.c.bump();
                    mods = Some(self.mods()?);
                }
                Some(c) if c.is_ascii_alphanumeric() => mods = Some(self.mods()?),
                _ => {}
            }
        } else {
            ev = match raw_digits(text) {
                Some(hex) => Ev::Raw {
                    text,
                    pos: start,
                    config: u64::from_str_radix(hex, 16)
                        .map_err(|_| err(start, text.len(), ErrorKind::BadRaw(text.to_string())))?,
                },
                None => Ev::Name { text, pos: start },
            };
            if self.c.peek() == Some(':') {
                self.c.bump();
                mods = Some(self.mods()?);
            }
        }
        Ok(Item {
            start,
            end: self.c.pos,
            ev,
            mods,
        })
    }

    fn mods(&mut self) -> Result<Mods, ParseError> {
        let start = self.c.pos;
        let run = self.c.take_while(|c| !is_delimiter(c));
        if run.is_empty() {
            return Err(syntax(
                start,
                self.c.char_len(),
                "expected modifiers (u, k, H, G) after `:`",
            ));
        }
        let mut m = Mods::default();
        for (i, ch) in run.char_indices() {
            let at = start + i;
            match ch {
                'u' => m.usr = true,
                'k' => m.os = true,
                'H' => m.host = Some(at),
                'G' => m.guest = Some(at),
                _ => {
                    return Err(err(
                        at,
                        ch.len_utf8(),
                        ErrorKind::UnknownModifier(ch.to_string()),
                    ));
                }
            }
        }
        m.check()
    }

    /// Terms after `pmu/`, through the closing `/`; `pmu_start` is where `pmu` begins.
    fn terms(&mut self, pmu_start: usize) -> Result<Vec<Term<'a>>, ParseError> {
        let open_len = self.c.pos - pmu_start;
        let never_closed = || syntax(pmu_start, open_len, "the terms are never closed with `/`");
        let mut terms: Vec<Term<'a>> = Vec::new();
        let mut last_comma = None;
        loop {
            self.c.skip_ws();
            let kpos = self.c.pos;
            let key = self.c.take_while(is_name_char);
            if key.is_empty() {
                return Err(match (self.c.peek(), last_comma) {
                    (None, _) => never_closed(),
                    (Some('/'), Some(comma)) => {
                        syntax(comma, 1, "trailing `,`: expected a term after it")
                    }
                    (Some('/'), None) => syntax(
                        pmu_start,
                        kpos + 1 - pmu_start,
                        "no terms between the slashes (e.g. cpu/event=0xc0/)",
                    ),
                    (Some(','), _) => syntax(kpos, 1, "empty term before this `,`"),
                    (Some(c), _) => unexpected(c, kpos, "a term such as event=0xc0"),
                });
            }
            let k = Key::from_name(key)
                .ok_or_else(|| err(kpos, key.len(), ErrorKind::UnknownTerm(key.to_string())))?;
            let value = if self.c.peek() == Some('=') {
                self.c.bump();
                self.value(k)?
            } else if k.is_flag() {
                Value::Num(1)
            } else {
                return Err(err(
                    kpos,
                    key.len(),
                    ErrorKind::Syntax(format!("`{0}` needs a value: `{0}=...`", k.name())),
                ));
            };
            let len = self.c.pos - kpos;
            if terms.iter().any(|t| t.key == k) {
                return Err(err(
                    kpos,
                    len,
                    ErrorKind::Conflict(format!("`{}` is given twice", k.name())),
                ));
            }
            let clash = terms.iter().find(|t| {
                (k == Key::Config && t.key.is_field()) || (k.is_field() && t.key == Key::Config)
            });
            if let Some(t) = clash {
                let field = if k == Key::Config { t.key } else { k };
                return Err(err(
                    kpos,
                    len,
                    ErrorKind::Conflict(format!(
                        "`config` gives the whole encoding; it cannot be combined with `{}`",
                        field.name()
                    )),
                ));
            }
            terms.push(Term {
                key: k,
                pos: kpos,
                len,
                value,
            });
            self.c.skip_ws();
            let at = self.c.pos;
            match self.c.peek() {
                Some(',') => {
                    last_comma = Some(at);
                    self.c.bump();
                }
                Some('/') => {
                    self.c.bump();
                    return Ok(terms);
                }
                None => return Err(never_closed()),
                Some(c) => return Err(unexpected(c, at, "`,` or the closing `/`")),
            }
        }
    }

    /// The value after `key=`.
    fn value(&mut self, k: Key) -> Result<Value<'a>, ParseError> {
        let vpos = self.c.pos;
        let quote = self
            .c
            .peek()
            .filter(|&q| k == Key::Name && (q == '\'' || q == '"'));
        let text = match quote {
            Some(q) => {
                self.c.bump();
                let inner = self.c.take_while(|c| c != q);
                if self.c.peek() != Some(q) {
                    return Err(syntax(vpos, 1, "the quote is never closed"));
                }
                self.c.bump();
                inner
            }
            None => self
                .c
                .take_while(|c| !matches!(c, ',' | '/' | '{' | '}') && !c.is_whitespace()),
        };
        if text.is_empty() {
            let what = if quote.is_some() {
                "the name is empty"
            } else {
                "expected a value after `=`"
            };
            return Err(syntax(vpos, self.c.pos - vpos, what));
        }
        if k == Key::Name {
            return Ok(Value::Str(text));
        }
        parse_number(text)
            .map(Value::Num)
            .ok_or_else(|| err(vpos, text.len(), ErrorKind::BadNumber(text.to_string())))
    }
}

// ---------------------------------------------------------------------------------------------
// Resolution against a PMU

const NO_COUNTERS: &str = "no programmable counters";

struct Resolver<'a> {
    caps: &'a PmuCaps,
    named: Option<&'a dyn NamedEvents>,
    input: &'a str,
}

fn encode_kind(e: EncodeError) -> ErrorKind {
    match e {
        EncodeError::OutOfRange { field, value, max } => ErrorKind::OutOfRange {
            field: field.name(),
            value,
            max,
        },
        EncodeError::NotOnVendor { field, vendor } => ErrorKind::NotOnVendor {
            field: field.name(),
            vendor,
        },
    }
}

fn fit(field: &'static str, value: u64, max: u64) -> Result<u64, ErrorKind> {
    if value > max {
        Err(ErrorKind::OutOfRange { field, value, max })
    } else {
        Ok(value)
    }
}

impl Resolver<'_> {
    fn tsc_only(&self) -> bool {
        self.caps.kind == PmuKind::TscOnly
    }

    fn item(&self, item: &Item<'_>) -> Result<Spec, ParseError> {
        let mods = item.mods.unwrap_or_default();
        let modifiers = mods.modifiers();
        // Span for errors about the event itself (without modifiers).
        let (event, at, len) = match &item.ev {
            Ev::Name { text, pos } => (self.named(text, *pos)?, *pos, text.len()),
            Ev::Raw { text, pos, config } => {
                let e = |k| err(*pos, text.len(), k);
                if self.tsc_only() {
                    return Err(e(ErrorKind::NotAvailable(String::from(NO_COUNTERS))));
                }
                let select = self.decode_config(*config).map_err(e)?;
                (self.raw_desc(text, select).map_err(e)?, *pos, text.len())
            }
            Ev::Pmu {
                pmu,
                pos,
                len,
                terms,
            } => {
                let e = |k| err(*pos, *len, k);
                if self.tsc_only() {
                    return Err(e(ErrorKind::NotAvailable(String::from(NO_COUNTERS))));
                }
                self.check_pmu(*pmu).map_err(e)?;
                let (select, name) = self.terms_select(terms)?;
                let text = self.input.get(*pos..*pos + *len).unwrap_or_default();
                let desc = self.raw_desc(name.unwrap_or(text), select).map_err(e)?;
                (desc, *pos, *len)
            }
        };
        if self.caps.vendor == Vendor::Intel {
            for (letter, field) in [
                (mods.host, ":H (host-only counting)"),
                (mods.guest, ":G (guest-only counting)"),
            ] {
                if let Some(p) = letter {
                    return Err(err(
                        p,
                        1,
                        ErrorKind::NotOnVendor {
                            field,
                            vendor: Vendor::Intel,
                        },
                    ));
                }
            }
        }
        // The encoding must be possible now, not fail later when counters are programmed.
        let check = if event.has_gp_encoding() {
            encode::gp_event_select(self.caps.vendor, &event.select, &modifiers, true).map(drop)
        } else {
            FixedCtrl::from_modifiers(&modifiers, false).map(drop)
        };
        check.map_err(|e| err(at, len, encode_kind(e)))?;
        Ok(Spec {
            text: self
                .input
                .get(item.start..item.end)
                .unwrap_or_default()
                .to_string(),
            position: item.start,
            event,
            modifiers,
        })
    }

    fn named(&self, text: &str, pos: usize) -> Result<EventDesc, ParseError> {
        let e = |k| err(pos, text.len(), k);
        // Catalogue first: perf's generic names win over a table's.
        let found = catalog::by_name(text, self.caps).or_else(|| self.table(text).map(Ok));
        match found {
            None if looks_like_raw(text) => Err(e(ErrorKind::BadRaw(text.to_string()))),
            None => Err(e(ErrorKind::UnknownName(text.to_string()))),
            Some(_) if self.tsc_only() => {
                Err(e(ErrorKind::NotAvailable(String::from(NO_COUNTERS))))
            }
            Some(Err(u)) => Err(e(ErrorKind::NotAvailable(u.reason))),
            Some(Ok(d)) => Ok(d),
        }
    }

    fn table(&self, name: &str) -> Option<EventDesc> {
        let t = self.named?;
        t.event(name).or_else(|| {
            // perfmon names are upper case; do not rely on every table matching case-blind.
            let upper = name.to_ascii_uppercase();
            (upper != name).then(|| t.event(&upper)).flatten()
        })
    }

    fn check_pmu(&self, pmu: PmuName) -> Result<(), ErrorKind> {
        let want = match pmu {
            PmuName::Cpu => return Ok(()),
            PmuName::CpuCore => CoreType::Core,
            PmuName::CpuAtom => CoreType::Atom,
        };
        let name = if want == CoreType::Core {
            "cpu_core"
        } else {
            "cpu_atom"
        };
        if self.caps.vendor != Vendor::Intel {
            return Err(ErrorKind::NotAvailable(format!(
                "{name} is a PMU of Intel hybrid parts; use cpu"
            )));
        }
        match self.caps.core_type {
            Some(have) if have != want => Err(ErrorKind::NotAvailable(format!(
                "{name} events, but these capabilities describe the {} cores",
                have.perfmon_name()
            ))),
            _ => Ok(()),
        }
    }

    fn raw_desc(&self, name: &str, select: EventSelect) -> Result<EventDesc, ErrorKind> {
        let mut d = EventDesc::gp(name, select, Source::Raw);
        if select.in_txcp {
            // IN_TXCP works only on GP counter 2 (Intel SDM, TSX performance monitoring).
            if self.caps.gp_counters <= 2 {
                return Err(ErrorKind::NotAvailable(format!(
                    "in_txcp counts only on GP counter 2 and this PMU has {} GP counters",
                    self.caps.gp_counters
                )));
            }
            d.gp_counters = Some(1 << 2);
        }
        Ok(d)
    }

    /// A raw config (`rNNN`, `config=`) in register layout.
    fn decode_config(&self, config: u64) -> Result<EventSelect, ErrorKind> {
        let raw_bits = |bits, reason| Err(ErrorKind::RawBits { bits, reason });
        let privilege = config & (bits::USR | bits::OS);
        if privilege != 0 {
            return raw_bits(
                privilege,
                "USR/OS (bits 16, 17) are the privilege filter: set it with :u / :k",
            );
        }
        if config & bits::INT != 0 {
            return raw_bits(
                bits::INT,
                "INT (bit 20) raises sampling interrupts, which baremark does not use",
            );
        }
        if config & bits::EN != 0 {
            return raw_bits(
                bits::EN,
                "EN (bit 22) is set by baremark when counting starts",
            );
        }
        match self.caps.vendor {
            Vendor::Intel => {
                if config & bits::ANY_THREAD != 0 && !self.caps.any_thread {
                    return Err(ErrorKind::NotAvailable(String::from(
                        "AnyThread (bit 21) needs an Intel v3/v4 PMU that has not deprecated it",
                    )));
                }
                let reserved = config & !(encode::INTEL_VALID_BITS & !bits::PIN_CONTROL);
                if reserved != 0 {
                    return raw_bits(
                        reserved,
                        "not event bits on Intel (reserved, or pin control which baremark never sets)",
                    );
                }
                encode::decode_intel_perfevtsel(config)
                    .map(|d| d.select)
                    .map_err(|e| ErrorKind::RawBits {
                        bits: e.reserved,
                        reason: "reserved on Intel",
                    })
            }
            Vendor::Amd => {
                let host_guest = config & (bits::AMD_HOST_ONLY | bits::AMD_GUEST_ONLY);
                if host_guest != 0 {
                    return raw_bits(
                        host_guest,
                        "HostOnly/GuestOnly (bits 41, 40) are set with :H / :G",
                    );
                }
                let reserved = config & !encode::AMD_VALID_BITS;
                if reserved != 0 {
                    return raw_bits(reserved, "reserved on AMD");
                }
                encode::decode_amd_perf_ctl(config)
                    .map(|d| d.select)
                    .map_err(|e| ErrorKind::RawBits {
                        bits: e.reserved,
                        reason: "reserved on AMD",
                    })
            }
        }
    }

    /// The select and the `name=` of `pmu/terms/`.
    fn terms_select<'t>(
        &self,
        terms: &[Term<'t>],
    ) -> Result<(EventSelect, Option<&'t str>), ParseError> {
        let intel = self.caps.vendor == Vendor::Intel;
        let mut sel = EventSelect::default();
        let mut name = None;
        for t in terms {
            let e = |k| err(t.pos, t.len, k);
            let n = match t.value {
                Value::Str(s) => {
                    name = Some(s);
                    continue;
                }
                Value::Num(n) => n,
            };
            let intel_only = |field| {
                if intel {
                    Ok(())
                } else {
                    Err(e(ErrorKind::NotOnVendor {
                        field,
                        vendor: self.caps.vendor,
                    }))
                }
            };
            let flag = |field| fit(field, n, 1).map(|v| v == 1).map_err(e);
            let byte = |field| fit(field, n, 0xff).map(|v| v as u8).map_err(e);
            match t.key {
                Key::Config => sel = self.decode_config(n).map_err(e)?,
                Key::Event => {
                    let max = if intel { 0xff } else { 0xfff };
                    sel.code = fit("event", n, max).map_err(e)? as u16;
                }
                Key::Umask => sel.umask = byte("umask")?,
                Key::Umask2 => {
                    intel_only("umask2")?;
                    sel.umask2 = byte("umask2")?;
                }
                Key::Cmask => sel.cmask = byte("cmask")?,
                Key::Inv => sel.inv = flag("inv")?,
                Key::Edge => sel.edge = flag("edge")?,
                Key::Any => {
                    intel_only("any")?;
                    sel.any_thread = flag("any")?;
                    if sel.any_thread && !self.caps.any_thread {
                        return Err(e(ErrorKind::NotAvailable(String::from(
                            "any (AnyThread) needs an Intel v3/v4 PMU that has not deprecated it",
                        ))));
                    }
                }
                Key::InTx => {
                    intel_only("in_tx")?;
                    sel.in_tx = flag("in_tx")?;
                }
                Key::InTxcp => {
                    intel_only("in_txcp")?;
                    sel.in_txcp = flag("in_txcp")?;
                }
                // The parser stores `name=` as a string; nothing to do for a number.
                Key::Name => {}
            }
        }
        Ok((sel, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuModel;
    use alloc::string::ToString;
    use proptest::prelude::*;

    fn caps(s: &str) -> PmuCaps {
        PmuCaps::nominal(CpuModel::parse(s).unwrap())
    }
    fn skx() -> PmuCaps {
        caps("GenuineIntel-6-55")
    }

    #[test]
    fn parse_each_resolves_events_alone_after_the_whole_syntax() {
        let each = parse_each(
            "cycles,nosuch,{instructions,branches}:u,r01c2",
            &skx(),
            None,
        )
        .unwrap();
        let texts: Vec<&str> = each.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            ["cycles", "nosuch", "instructions", "branches", "r01c2"]
        );
        assert_eq!(each[1].position, 7);
        assert!(matches!(
            each[1].resolved.as_ref().unwrap_err().kind,
            ErrorKind::UnknownName(_)
        ));
        assert!(each[0].resolved.is_ok() && each[4].resolved.is_ok());
        assert_eq!(
            (each[2].group, each[3].group, each[4].group),
            (Some(0), Some(0), None)
        );
        // The group's `:u` applies to its members.
        assert!(each[2].has_modifiers && !each[0].has_modifiers);
        assert!(!each[2].resolved.as_ref().unwrap().modifiers.os);
        // A syntax error anywhere is the list's.
        let e = parse_each("cycles,,nosuch", &skx(), None).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Syntax(_)), "{e:?}");
    }

    #[test]
    fn name_terms_name_the_event_even_when_it_does_not_resolve() {
        let each = parse_each(
            "cpu/event=0x0e,umask=0x01,name=UOPS_ISSUED.ANY/u, cpu/name='a b',event=0xc0/,              cpu/event=0x1c0,name=\"too wide\"/, cycles:u, r01c2, cpu/event=0x3c/",
            &skx(),
            None,
        )
        .unwrap();
        let names: Vec<Option<&str>> = each.iter().map(|e| e.name.as_deref()).collect();
        assert_eq!(
            names,
            [
                Some("UOPS_ISSUED.ANY"),
                Some("a b"),
                Some("too wide"),
                None,
                None,
                None
            ]
        );
        let shown: Vec<&str> = each.iter().map(EachEvent::display_name).collect();
        assert_eq!(
            shown,
            [
                "UOPS_ISSUED.ANY",
                "a b",
                "too wide",
                "cycles:u",
                "r01c2",
                "cpu/event=0x3c/"
            ]
        );
        // The name does not change what is counted; the text stays as typed.
        let s = each[0].resolved.as_ref().unwrap();
        assert_eq!(s.event.name, "UOPS_ISSUED.ANY");
        assert_eq!(s.event.select, EventSelect::new(0x0e, 0x01));
        assert!(s.modifiers.usr && !s.modifiers.os);
        assert_eq!(
            each[0].text,
            "cpu/event=0x0e,umask=0x01,name=UOPS_ISSUED.ANY/u"
        );
        // Intel event codes have 8 bits: it does not resolve, but keeps its name.
        assert!(each[2].resolved.is_err());
    }
    fn spr() -> PmuCaps {
        caps("GenuineIntel-6-8F")
    }
    fn zen4() -> PmuCaps {
        caps("AuthenticAMD-25-11")
    }
    fn zen3() -> PmuCaps {
        caps("AuthenticAMD-25-21")
    }
    fn tsc() -> PmuCaps {
        PmuCaps::tsc_only(Vendor::Intel, None)
    }

    /// A case-sensitive table (as a naive implementation would be), to check that the parser
    /// itself makes lookups case-blind.
    struct Stub(Vec<EventDesc>);

    impl NamedEvents for Stub {
        fn event(&self, name: &str) -> Option<EventDesc> {
            self.0.iter().find(|e| e.name == name).cloned()
        }
        fn all(&self) -> Vec<EventDesc> {
            self.0.clone()
        }
    }

    fn stub() -> Stub {
        let perfmon = |name, sel| EventDesc::gp(name, sel, Source::Perfmon);
        Stub(vec![
            perfmon(
                "MACHINE_CLEARS.COUNT",
                EventSelect {
                    cmask: 1,
                    edge: true,
                    ..EventSelect::new(0xc3, 0x01)
                },
            ),
            perfmon("BR_MISP_RETIRED.ALL_BRANCHES", EventSelect::new(0xc5, 0x00)),
            // Same names as catalogue events, with other encodings: the catalogue must win.
            perfmon("instructions", EventSelect::new(0x99, 0x99)),
            perfmon("INST_RETIRED.ANY", EventSelect::new(0x98, 0x98)),
            perfmon("TABLE_ONLY.EVENT", EventSelect::new(0x42, 0x07)),
        ])
    }

    fn ok(input: &str, caps: &PmuCaps) -> EventList {
        parse(input, caps, None).unwrap_or_else(|e| panic!("{input}: {e}\n{}", e.caret_line(input)))
    }

    fn one(input: &str, caps: &PmuCaps) -> Spec {
        let list = ok(input, caps);
        assert_eq!(list.len(), 1, "{input}");
        list.specs().next().cloned().unwrap()
    }

    fn fail(input: &str, caps: &PmuCaps) -> ParseError {
        match parse(input, caps, None) {
            Ok(l) => panic!("{input}: expected an error, got {l:?}"),
            Err(e) => e,
        }
    }

    /// Asserts the error's span and kind.
    #[track_caller]
    fn fails(input: &str, caps: &PmuCaps, position: usize, len: usize, kind: ErrorKind) {
        let e = fail(input, caps);
        assert_eq!(
            e,
            ParseError {
                position,
                len,
                kind
            },
            "{input}: {e}\n{}",
            e.caret_line(input)
        );
    }

    fn syn(s: &str) -> ErrorKind {
        ErrorKind::Syntax(s.to_string())
    }

    fn sel(code: u16, umask: u8) -> EventSelect {
        EventSelect::new(code, umask)
    }

    // ---- valid inputs -------------------------------------------------------------------

    #[test]
    fn named_events_with_modifiers() {
        let s = one("instructions:u", &skx());
        assert_eq!(s.event.select, sel(0xc0, 0));
        assert_eq!(s.modifiers, Modifiers::USER);
        assert_eq!(s.event.source, Source::Generic);
        assert_eq!((s.text.as_str(), s.position), ("instructions:u", 0));

        let s = one("cycles:k", &skx());
        assert_eq!(
            (s.event.select, s.modifiers),
            (sel(0x3c, 0), Modifiers::KERNEL)
        );
        for both in ["cycles:uk", "cycles:ku", "cycles", "cycles:kuuk"] {
            assert_eq!(one(both, &skx()).modifiers, Modifiers::default(), "{both}");
        }
        assert_eq!(one("branch-misses", &skx()).event.select, sel(0xc5, 0));
        assert_eq!(one("branches", &skx()).event.select, sel(0xc4, 0));
        assert_eq!(one("cpu-cycles", &skx()).event.select, sel(0x3c, 0));
        // Catalogue names: fixed-counter (case-blind), architectural, Zen.
        let fc0 = one("INST_RETIRED.ANY", &skx());
        assert_eq!((fc0.event.fixed, fc0.event.select), (Some(0), sel(0xc0, 0)));
        assert_eq!(one("inst_retired.any:k", &skx()).event.fixed, Some(0));
        assert_eq!(one("llc-misses", &skx()).event.select, sel(0x2e, 0x41));
        assert_eq!(one("ex_ret_brn_misp", &zen3()).event.select, sel(0xc3, 0));
        // AMD generic mapping.
        assert_eq!(one("branch-misses:u", &zen4()).event.select, sel(0xc3, 0));
        // A fixed-only event (no GP encoding) parses with modifiers.
        let rc = one("ref-cycles:u", &skx());
        assert_eq!((rc.event.fixed, rc.event.gp_counters), (Some(2), None));
    }

    #[test]
    fn amd_host_guest_modifiers() {
        let h = one("cycles:H", &zen4());
        assert_eq!(
            h.modifiers,
            Modifiers {
                host_only: true,
                ..Modifiers::default()
            }
        );
        let g = one("cycles:uG", &zen4());
        assert_eq!(
            g.modifiers,
            Modifiers {
                guest_only: true,
                ..Modifiers::USER
            }
        );
        let raw = one("r76:kH", &zen4());
        assert_eq!(
            encode::gp_event_select(Vendor::Amd, &raw.event.select, &raw.modifiers, true),
            Ok(0x200_0042_0076)
        );
    }

    #[test]
    fn raw_events() {
        let s = one("r01c2", &skx());
        assert_eq!(s.event.select, sel(0xc2, 0x01));
        assert_eq!(s.event.name, "r01c2");
        assert_eq!(s.event.source, Source::Raw);
        assert_eq!((s.event.gp_counters, s.event.fixed), (Some(u32::MAX), None));
        assert_eq!(s.modifiers, Modifiers::default());
        let s = one("r1c2:u", &skx());
        assert_eq!(
            (s.event.select, s.modifiers),
            (sel(0xc2, 0x01), Modifiers::USER)
        );
        assert_eq!(s.event.name, "r1c2");
        assert_eq!(one("rC0", &skx()).event.select, sel(0xc0, 0));
        // cmask, inv, edge, umask2, in_tx in register layout.
        // 0x1201_c000_01c3: umask2 0x12 (bits 47:40), in_tx (32), cmask 0xc0.
        let s = one("r1201c00001c3", &spr()).event.select;
        assert_eq!(
            s,
            EventSelect {
                umask2: 0x12,
                in_tx: true,
                cmask: 0xc0,
                ..sel(0xc3, 0x01)
            }
        );
        let s = one("r018401c3", &skx()).event.select;
        assert_eq!(
            s,
            EventSelect {
                cmask: 1,
                inv: true,
                edge: true,
                ..sel(0xc3, 0x01)
            }
        );
        // AMD: event bits 11:8 at 35:32.
        assert_eq!(one("r100000120", &zen4()).event.select, sel(0x120, 1));
        assert_eq!(one("r1c2", &zen4()).event.select, sel(0xc2, 1));
        // AnyThread on a v4 PMU that allows it.
        assert!(one("r2000c0", &skx()).event.select.any_thread);
        // in_txcp restricts the event to GP counter 2.
        let cp = one("r2000001c2", &skx());
        assert!(cp.event.select.in_txcp);
        assert_eq!(cp.event.gp_counters, Some(1 << 2));
    }

    #[test]
    fn pmu_terms() {
        let s = one("cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/u", &skx());
        assert_eq!(
            s.event.select,
            EventSelect {
                cmask: 1,
                inv: true,
                edge: true,
                ..sel(0x3c, 0x01)
            }
        );
        assert_eq!(s.modifiers, Modifiers::USER);
        assert_eq!(s.event.name, "cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/");
        assert_eq!(s.text, "cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/u");
        assert_eq!(s.event.source, Source::Raw);
        // `/:u` form, flags written =1 / =0, decimal values, whitespace inside.
        let s = one("cpu/ event=192 , inv=0, edge=1 /:k", &skx());
        assert_eq!(
            (s.event.select, s.modifiers),
            (
                EventSelect {
                    edge: true,
                    ..sel(0xc0, 0)
                },
                Modifiers::KERNEL
            )
        );
        // name= and the Intel-only terms.
        let s = one(
            "cpu/event=0xd0,umask=0x81,umask2=0x12,in_tx,name=loads/",
            &spr(),
        );
        assert_eq!(s.event.name, "loads");
        assert_eq!(
            s.event.select,
            EventSelect {
                umask2: 0x12,
                in_tx: true,
                ..sel(0xd0, 0x81)
            }
        );
        assert_eq!(
            one("cpu/event=0xc0,name='my insts'/", &skx()).event.name,
            "my insts"
        );
        assert!(one("cpu/event=0xc0,any/", &skx()).event.select.any_thread);
        let cp = one("cpu/event=0xc2,in_txcp=1/", &skx());
        assert_eq!(cp.event.gp_counters, Some(1 << 2));
        // config= is a raw value.
        assert_eq!(one("cpu/config=0x1c2/", &skx()).event.select, sel(0xc2, 1));
        // AMD accepts 12-bit events, and hybrid PMU names are accepted when caps do not say.
        assert_eq!(
            one("cpu/event=0x120,umask=1/", &zen4()).event.select,
            sel(0x120, 1)
        );
        assert_eq!(
            one("cpu_core/event=0xc0/", &spr()).event.select,
            sel(0xc0, 0)
        );
        let mut atom = spr();
        atom.core_type = Some(CoreType::Atom);
        assert_eq!(
            one("cpu_atom/event=0xc0/", &atom).event.select,
            sel(0xc0, 0)
        );
    }

    #[test]
    fn lists_and_groups() {
        let l = ok("{instructions,cycles}:u,branch-misses", &skx());
        assert_eq!(l.groups.len(), 2);
        assert!(l.groups[0].explicit && !l.groups[1].explicit);
        assert_eq!(l.groups[0].events.len(), 2);
        assert!(
            l.groups[0]
                .events
                .iter()
                .all(|s| s.modifiers == Modifiers::USER)
        );
        assert_eq!(l.groups[0].events[1].text, "cycles");
        assert_eq!(l.groups[0].events[1].position, 14);
        assert_eq!(l.groups[1].events[0].modifiers, Modifiers::default());
        assert_eq!(l.len(), 3);
        assert!(!l.is_empty());
        let names: Vec<&str> = l.specs().map(|s| s.event.name.as_str()).collect();
        assert_eq!(names, ["instructions", "cycles", "branch-misses"]);

        // perf's group rule: letters are added to the member's own.
        let l = ok("{cycles:k,instructions}:u", &skx());
        assert_eq!(l.groups[0].events[0].modifiers, Modifiers::default());
        assert_eq!(l.groups[0].events[1].modifiers, Modifiers::USER);
        // Host-only on the member, user on the group.
        let l = ok("{cycles:H,instructions}:u", &zen4());
        assert_eq!(
            l.groups[0].events[0].modifiers,
            Modifiers {
                host_only: true,
                ..Modifiers::USER
            }
        );

        // Whitespace around commas and braces; the same event twice; single-member group.
        let l = ok(
            "  cycles , { instructions ,cycles } ,cycles,{r1c2}  ",
            &skx(),
        );
        assert_eq!(l.groups.len(), 4);
        assert_eq!(l.len(), 5);
        assert!(l.groups[3].explicit);
        assert_eq!(l.groups[1].events[0].position, 13);

        // Several simple events are separate groups.
        let l = ok("cycles,instructions,r01c2", &skx());
        assert_eq!(l.groups.len(), 3);
        assert!(l.groups.iter().all(|g| !g.explicit && g.events.len() == 1));
    }

    #[test]
    fn table_lookup() {
        let t = stub();
        let table: Option<&dyn NamedEvents> = Some(&t);
        let mc = parse("machine_clears.count:u", &skx(), table).unwrap();
        let s = mc.specs().next().unwrap();
        assert_eq!(s.event.name, "MACHINE_CLEARS.COUNT");
        assert_eq!(s.event.source, Source::Perfmon);
        assert_eq!(
            (
                s.event.select.code,
                s.event.select.cmask,
                s.event.select.edge
            ),
            (0xc3, 1, true)
        );
        assert_eq!(s.modifiers, Modifiers::USER);
        assert!(parse("TABLE_ONLY.EVENT", &skx(), table).is_ok());
        // The catalogue wins: generic names, architectural and fixed perfmon names.
        let l = parse(
            "instructions,INST_RETIRED.ANY,BR_MISP_RETIRED.ALL_BRANCHES",
            &skx(),
            table,
        )
        .unwrap();
        let got: Vec<(Source, u16)> = l
            .specs()
            .map(|s| (s.event.source, s.event.select.code))
            .collect();
        assert_eq!(
            got,
            [
                (Source::Generic, 0xc0),
                (Source::BuiltIn, 0xc0),
                (Source::Architectural, 0xc5)
            ]
        );
        // Without the table the perfmon-only name is unknown.
        fails(
            "cycles,MACHINE_CLEARS.COUNT",
            &skx(),
            7,
            20,
            ErrorKind::UnknownName("MACHINE_CLEARS.COUNT".into()),
        );
        // A table event on a TSC-only machine.
        assert_eq!(
            parse("TABLE_ONLY.EVENT", &tsc(), table).unwrap_err().kind,
            ErrorKind::NotAvailable(NO_COUNTERS.into())
        );
    }

    // ---- errors ------------------------------------------------------------------------

    #[test]
    fn unknown_names_and_unavailable_events() {
        fails(
            "instructions,cyclez:u",
            &skx(),
            13,
            6,
            ErrorKind::UnknownName("cyclez".into()),
        );
        // Known but not on this PMU: never remapped.
        let e = fail("cycles,ex_ret_brn_misp", &skx());
        assert_eq!((e.position, e.len), (7, 15));
        assert!(
            matches!(&e.kind, ErrorKind::NotAvailable(r) if r.contains("not an AMD")),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("at column 8: not available on this PMU: ")
        );
        let e = fail("bus-cycles", &zen4());
        assert!(matches!(e.kind, ErrorKind::NotAvailable(_)));
        fails(
            "TOPDOWN.SLOTS",
            &skx(),
            0,
            13,
            ErrorKind::NotAvailable("this PMU has no fixed counter 3".into()),
        );
        // Generic names are case-sensitive, as in perf's lexer.
        fails(
            "Cycles",
            &skx(),
            0,
            6,
            ErrorKind::UnknownName("Cycles".into()),
        );
    }

    #[test]
    fn modifier_errors() {
        fails(
            "instructions:p",
            &skx(),
            13,
            1,
            ErrorKind::UnknownModifier("p".into()),
        );
        assert!(
            fail("instructions:p", &skx())
                .to_string()
                .contains("precise sampling")
        );
        fails(
            "cycles:upp",
            &skx(),
            8,
            1,
            ErrorKind::UnknownModifier("p".into()),
        );
        fails(
            "cycles:x",
            &skx(),
            7,
            1,
            ErrorKind::UnknownModifier("x".into()),
        );
        fails(
            "cycles:S",
            &skx(),
            7,
            1,
            ErrorKind::UnknownModifier("S".into()),
        );
        fails(
            "cycles:ué",
            &skx(),
            8,
            2,
            ErrorKind::UnknownModifier("é".into()),
        );
        fails(
            "{cycles}:I",
            &skx(),
            9,
            1,
            ErrorKind::UnknownModifier("I".into()),
        );
        fails(
            "cpu/event=1/up",
            &skx(),
            13,
            1,
            ErrorKind::UnknownModifier("p".into()),
        );
        fails(
            "cycles:",
            &skx(),
            7,
            0,
            syn("expected modifiers (u, k, H, G) after `:`"),
        );
        fails(
            "cycles:,x",
            &skx(),
            7,
            1,
            syn("expected modifiers (u, k, H, G) after `:`"),
        );
        fails(
            "cycles:u:k",
            &skx(),
            8,
            1,
            syn("unexpected `:`: expected `,` between events"),
        );
        // H/G: AMD only, and not together.
        fails(
            "cycles,instructions:uH",
            &skx(),
            21,
            1,
            ErrorKind::NotOnVendor {
                field: ":H (host-only counting)",
                vendor: Vendor::Intel,
            },
        );
        fails(
            "{cycles}:G",
            &skx(),
            9,
            1,
            ErrorKind::NotOnVendor {
                field: ":G (guest-only counting)",
                vendor: Vendor::Intel,
            },
        );
        let e = fail("cycles:HG", &zen4());
        assert_eq!((e.position, e.len), (8, 1));
        assert!(matches!(e.kind, ErrorKind::Conflict(_)));
        let e = fail("{cycles:G}:H", &zen4());
        assert_eq!((e.position, e.len), (11, 1));
        assert!(matches!(e.kind, ErrorKind::Conflict(_)));
    }

    #[test]
    fn raw_errors() {
        let bad = |s: &str| ErrorKind::BadRaw(s.to_string());
        fails("r", &skx(), 0, 1, bad("r"));
        fails("cycles,rxyz", &skx(), 7, 4, bad("rxyz"));
        fails(
            "r1ffffffffffffffffff",
            &skx(),
            0,
            20,
            bad("r1ffffffffffffffffff"),
        );
        fails("r0x1c2", &skx(), 0, 6, bad("r0x1c2"));
        // 16 digits with leading zeros are fine; 17 significant digits are not.
        assert_eq!(one("r00000000000000c0", &skx()).event.select, sel(0xc0, 0));
        // A name starting with r that is not raw-shaped is an unknown name.
        fails(
            "ref_cyclez",
            &skx(),
            0,
            10,
            ErrorKind::UnknownName("ref_cyclez".into()),
        );
        // Bits that belong to modifiers or to baremark.
        fails(
            "r4100c0",
            &skx(),
            0,
            7,
            ErrorKind::RawBits {
                bits: bits::USR,
                reason: "USR/OS (bits 16, 17) are the privilege filter: set it with :u / :k",
            },
        );
        let kind = |input: &str, c: &PmuCaps| fail(input, c).kind;
        assert!(matches!(
            kind("r1000c0", &skx()),
            ErrorKind::RawBits {
                bits: bits::INT,
                ..
            }
        ));
        assert!(matches!(
            kind("r4000c0", &skx()),
            ErrorKind::RawBits { bits: bits::EN, .. }
        ));
        assert!(matches!(
            kind("r800c0", &skx()),
            ErrorKind::RawBits {
                bits: bits::PIN_CONTROL,
                ..
            }
        ));
        assert!(matches!(
            kind("r4000000c0", &skx()),
            ErrorKind::RawBits {
                bits: 0x4_0000_0000,
                ..
            }
        ));
        assert!(matches!(
            kind("r100000000c0", &zen4()),
            ErrorKind::RawBits {
                bits: bits::AMD_GUEST_ONLY,
                ..
            }
        ));
        assert!(matches!(
            kind("r200000000c0", &zen4()),
            ErrorKind::RawBits {
                bits: bits::AMD_HOST_ONLY,
                ..
            }
        ));
        assert!(matches!(
            kind("r400000000c0", &zen4()),
            ErrorKind::RawBits {
                bits: 0x400_0000_0000,
                ..
            }
        ));
        assert!(matches!(
            kind("r2000c0", &zen4()),
            ErrorKind::RawBits {
                bits: bits::ANY_THREAD,
                ..
            }
        ));
        // AnyThread on v5 (deprecated) is not available.
        assert!(matches!(
            kind("r2000c0", &spr()),
            ErrorKind::NotAvailable(_)
        ));
        // in_txcp needs a third GP counter.
        let two = PmuCaps::from_intel_cpuid([0x0730_0204, 0, 0, 0x603], true, None);
        assert!(matches!(
            kind("r2000000c0", &two),
            ErrorKind::NotAvailable(_)
        ));
        // Raw values on a TSC-only PMU.
        fails(
            "r1c2",
            &tsc(),
            0,
            4,
            ErrorKind::NotAvailable(NO_COUNTERS.into()),
        );
    }

    #[test]
    fn term_errors() {
        let range = |field, value, max| ErrorKind::OutOfRange { field, value, max };
        fails(
            "cpu/umask=0x100/",
            &skx(),
            4,
            11,
            range("umask", 0x100, 0xff),
        );
        fails(
            "cpu/event=0x100/",
            &skx(),
            4,
            11,
            range("event", 0x100, 0xff),
        );
        fails(
            "cpu/event=0x1000/",
            &zen4(),
            4,
            12,
            range("event", 0x1000, 0xfff),
        );
        fails(
            "cpu/event=0xc0,cmask=256/",
            &skx(),
            15,
            9,
            range("cmask", 256, 0xff),
        );
        fails("cpu/event=0xc0,inv=2/", &skx(), 15, 5, range("inv", 2, 1));
        fails(
            "cpu/umask2=0x100,event=1/",
            &spr(),
            4,
            12,
            range("umask2", 0x100, 0xff),
        );
        assert!(
            fail("cpu/umask=0x100/", &skx())
                .to_string()
                .contains("field out of range: umask = 256 (0x100), at most 255 (0xff)")
        );
        let num = |s: &str| ErrorKind::BadNumber(s.to_string());
        fails("cpu/event=0xzz/", &skx(), 10, 4, num("0xzz"));
        fails("cpu/event=0x/", &skx(), 10, 2, num("0x"));
        fails("cpu/event=-1/", &skx(), 10, 2, num("-1"));
        fails("cpu/event=+1/", &skx(), 10, 2, num("+1"));
        fails(
            "cpu/event=99999999999999999999/",
            &skx(),
            10,
            20,
            num("99999999999999999999"),
        );
        fails(
            "cpu/event=/",
            &skx(),
            10,
            0,
            syn("expected a value after `=`"),
        );
        fails(
            "cpu/event/",
            &skx(),
            4,
            5,
            syn("`event` needs a value: `event=...`"),
        );
        fails(
            "cpu/period=1000/",
            &skx(),
            4,
            6,
            ErrorKind::UnknownTerm("period".into()),
        );
        fails(
            "msr/tsc/",
            &skx(),
            0,
            3,
            ErrorKind::UnknownPmu("msr".into()),
        );
        fails(
            "cycles/",
            &skx(),
            0,
            6,
            ErrorKind::UnknownPmu("cycles".into()),
        );
        let conflict = |s: &str| ErrorKind::Conflict(s.to_string());
        fails(
            "cpu/event=1,event=2/",
            &skx(),
            12,
            7,
            conflict("`event` is given twice"),
        );
        fails(
            "cpu/config=0x1c2,umask=1/",
            &skx(),
            17,
            7,
            conflict("`config` gives the whole encoding; it cannot be combined with `umask`"),
        );
        fails(
            "cpu/cmask=1,config=0xc0/",
            &skx(),
            12,
            11,
            conflict("`config` gives the whole encoding; it cannot be combined with `cmask`"),
        );
        fails(
            "cpu/config=0x4300c0/",
            &skx(),
            4,
            15,
            ErrorKind::RawBits {
                bits: bits::USR | bits::OS,
                reason: "USR/OS (bits 16, 17) are the privilege filter: set it with :u / :k",
            },
        );
        // Vendor-specific terms.
        let not_on = |field, vendor| ErrorKind::NotOnVendor { field, vendor };
        fails(
            "cpu/event=0xc0,in_tx/",
            &zen4(),
            15,
            5,
            not_on("in_tx", Vendor::Amd),
        );
        fails(
            "cpu/event=0xc0,in_txcp=1/",
            &zen4(),
            15,
            9,
            not_on("in_txcp", Vendor::Amd),
        );
        fails(
            "cpu/event=0xc0,umask2=0/",
            &zen4(),
            15,
            8,
            not_on("umask2", Vendor::Amd),
        );
        fails(
            "cpu/event=0xc0,any/",
            &zen4(),
            15,
            3,
            not_on("any", Vendor::Amd),
        );
        let e = fail("cpu/event=0xc0,any/", &spr());
        assert_eq!((e.position, e.len), (15, 3));
        assert!(matches!(e.kind, ErrorKind::NotAvailable(_)));
        // Hybrid PMU names against the capabilities.
        let mut core = spr();
        core.core_type = Some(CoreType::Core);
        let e = fail("cpu_atom/event=0xc0/", &core);
        assert_eq!((e.position, e.len), (0, 20));
        assert!(matches!(e.kind, ErrorKind::NotAvailable(_)));
        assert!(matches!(
            fail("cpu_core/event=0xc0/", &zen4()).kind,
            ErrorKind::NotAvailable(_)
        ));
        fails(
            "cpu/event=0xc0/",
            &tsc(),
            0,
            15,
            ErrorKind::NotAvailable(NO_COUNTERS.into()),
        );
        // Syntax inside the slashes.
        fails(
            "cpu//",
            &skx(),
            0,
            5,
            syn("no terms between the slashes (e.g. cpu/event=0xc0/)"),
        );
        fails(
            "cpu/event=1,/",
            &skx(),
            11,
            1,
            syn("trailing `,`: expected a term after it"),
        );
        fails(
            "cpu/event=1,,umask=1/",
            &skx(),
            12,
            1,
            syn("empty term before this `,`"),
        );
        fails(
            "cpu/event=1",
            &skx(),
            0,
            4,
            syn("the terms are never closed with `/`"),
        );
        fails(
            "cpu/event=1 umask=2/",
            &skx(),
            12,
            1,
            syn("unexpected `u`: expected `,` or the closing `/`"),
        );
        fails(
            "cpu/=1/",
            &skx(),
            4,
            1,
            syn("unexpected `=`: expected a term such as event=0xc0"),
        );
        fails(
            "cpu/event=1,name='x/",
            &skx(),
            17,
            1,
            syn("the quote is never closed"),
        );
        fails(
            "cpu/event=1,name=''/",
            &skx(),
            17,
            2,
            syn("the name is empty"),
        );
    }

    #[test]
    fn list_and_group_syntax_errors() {
        fails("", &skx(), 0, 0, syn("no events given"));
        fails("   ", &skx(), 0, 3, syn("no events given"));
        fails(
            "a,,b",
            &skx(),
            2,
            1,
            syn("empty item: expected an event before this `,`"),
        );
        fails(
            ",cycles",
            &skx(),
            0,
            1,
            syn("empty item: expected an event before this `,`"),
        );
        fails(
            "cycles,",
            &skx(),
            6,
            1,
            syn("trailing `,`: expected an event after it"),
        );
        fails(
            "cycles , ",
            &skx(),
            7,
            1,
            syn("trailing `,`: expected an event after it"),
        );
        fails(
            "{cycles,{instructions}}",
            &skx(),
            8,
            1,
            syn("groups cannot be nested"),
        );
        fails("{cycles{", &skx(), 7, 1, syn("groups cannot be nested"));
        fails(
            "{cycles,instructions",
            &skx(),
            0,
            1,
            syn("`{` is never closed"),
        );
        fails("cycles,{", &skx(), 7, 1, syn("`{` is never closed"));
        fails("cycles}", &skx(), 6, 1, syn("`}` without a matching `{`"));
        fails("cycles,}", &skx(), 7, 1, syn("`}` without a matching `{`"));
        fails("{}", &skx(), 0, 2, syn("empty group"));
        fails("{ }", &skx(), 0, 3, syn("empty group"));
        fails(
            "{cycles,}",
            &skx(),
            7,
            1,
            syn("trailing `,` in a group: expected an event after it"),
        );
        fails(
            "{,cycles}",
            &skx(),
            1,
            1,
            syn("empty item: expected an event before this `,`"),
        );
        fails(
            "cycles instructions",
            &skx(),
            7,
            1,
            syn("unexpected `i`: expected `,` between events"),
        );
        fails(
            "cycles{x}",
            &skx(),
            6,
            1,
            syn("unexpected `{`: expected `,` before a group"),
        );
        fails(
            "{cycles}x",
            &skx(),
            8,
            1,
            syn("unexpected `x`: expected `,` between events"),
        );
        fails(
            "{cycles x}",
            &skx(),
            8,
            1,
            syn("unexpected `x`: expected `,` or `}`"),
        );
        let e = fail("cycles,$x", &skx());
        assert_eq!((e.position, e.len), (7, 1));
        assert!(matches!(e.kind, ErrorKind::Syntax(_)));
        // A multi-byte character: the error spans the whole character.
        let e = fail("cycles,€", &skx());
        assert_eq!((e.position, e.len), (7, 3));
        // cycles=1 is not a term outside cpu/.../.
        assert_eq!(fail("cycles=1", &skx()).position, 6);
    }

    #[test]
    fn syntax_errors_come_before_pmu_errors() {
        // The unknown name is first in the input, but the syntax error is reported.
        fails("cyclez,{cycles", &skx(), 7, 1, syn("`{` is never closed"));
        // On a TSC-only PMU: syntax errors first, then every event is unavailable.
        fails(
            "cycles,cycles:p",
            &tsc(),
            14,
            1,
            ErrorKind::UnknownModifier("p".into()),
        );
        fails(
            "cycles:u",
            &tsc(),
            0,
            6,
            ErrorKind::NotAvailable(NO_COUNTERS.into()),
        );
        fails(
            "instructions",
            &tsc(),
            0,
            12,
            ErrorKind::NotAvailable(NO_COUNTERS.into()),
        );
    }

    #[test]
    fn display_and_caret_line() {
        let input = "instructions,cyclez:u";
        let e = fail(input, &skx());
        assert_eq!(e.to_string(), "at column 14: unknown event name `cyclez`");
        assert_eq!(
            e.caret_line(input),
            "instructions,cyclez:u\n             ^^^^^^"
        );
        // An empty span at the end still gets one caret.
        let input = "cycles:";
        assert_eq!(fail(input, &skx()).caret_line(input), "cycles:\n       ^");
        // Columns count characters, not bytes; control characters keep their column.
        let input = "\tcpu/name=é/p";
        let e = fail(input, &skx());
        assert_eq!(e.position, 13);
        assert_eq!(e.caret_line(input), " cpu/name=é/p\n            ^");
        // Spans that do not fit the input (a caller mixing inputs) do not panic.
        let odd = ParseError {
            position: 99,
            len: usize::MAX,
            kind: syn("x"),
        };
        assert_eq!(odd.caret_line("ab"), "ab\n  ^");
        let mid = ParseError {
            position: 1,
            len: 1,
            kind: syn("x"),
        };
        assert_eq!(mid.caret_line("é"), "é\n^");
        assert_eq!(odd.to_string(), "at column 100: x");
    }

    #[test]
    fn specs_convert() {
        let s = one("instructions:k", &skx());
        let es = s.to_event_spec();
        assert_eq!((es.event, es.modifiers), (s.event, Modifiers::KERNEL));
    }

    // ---- properties --------------------------------------------------------------------

    fn all_caps() -> [PmuCaps; 5] {
        [skx(), spr(), zen4(), caps("AuthenticAMD-16-2"), tsc()]
    }

    fn check_any(input: &str) -> Result<(), TestCaseError> {
        let t = stub();
        for c in all_caps() {
            for table in [None, Some(&t as &dyn NamedEvents)] {
                match parse(input, &c, table) {
                    Ok(list) => {
                        prop_assert!(!list.is_empty());
                        for s in list.specs() {
                            prop_assert!(
                                input
                                    .get(s.position..)
                                    .is_some_and(|r| r.starts_with(&s.text))
                            );
                        }
                    }
                    Err(e) => {
                        prop_assert!(e.position <= input.len(), "{e:?}");
                        prop_assert!(input.is_char_boundary(e.position), "{e:?}");
                        let end = e.position.checked_add(e.len);
                        prop_assert!(end.is_some_and(|end| end <= input.len()), "{e:?}");
                        prop_assert!(end.is_some_and(|end| input.is_char_boundary(end)), "{e:?}");
                        let _ = e.to_string();
                        prop_assert!(e.caret_line(input).contains('^'));
                    }
                }
            }
        }
        Ok(())
    }

    fn syntax_soup() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "{",
            "}",
            "/",
            ",",
            ":",
            "=",
            " ",
            "r",
            "x",
            "u",
            "k",
            "H",
            "G",
            "p",
            "0",
            "1",
            "9",
            "a",
            "c",
            "f",
            "0x",
            "cpu",
            "cpu_core",
            "cpu_atom",
            "event",
            "umask",
            "umask2",
            "cmask",
            "inv",
            "edge",
            "any",
            "in_tx",
            "in_txcp",
            "config",
            "name",
            "'",
            "cycles",
            "instructions",
            "branch-misses",
            "ex_ret_brn_misp",
            "MACHINE_CLEARS.COUNT",
            "ffffffffffffffff",
            "é",
            "\t",
        ]);
        prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn arbitrary_strings_never_panic(input in any::<String>()) {
            check_any(&input)?;
        }

        #[test]
        fn syntax_soup_never_panics(input in syntax_soup()) {
            check_any(&input)?;
        }

        #[test]
        fn every_raw_config_either_parses_or_is_refused(
            config in prop_oneof![any::<u64>(), any::<u64>().prop_map(|c| c & 0x0000_ff0f_ffa4_ffff)],
            user: bool,
        ) {
            let input = format!("r{config:x}{}", if user { ":u" } else { "" });
            for c in all_caps() {
                match parse(&input, &c, None) {
                    Ok(l) => {
                        let s = l.specs().next().unwrap();
                        // What parses encodes back to the same event bits.
                        let enc = encode::gp_event_select(c.vendor, &s.event.select, &Modifiers { usr: false, os: false, ..s.modifiers }, false);
                        prop_assert_eq!(enc, Ok(config));
                    }
                    Err(e) => prop_assert_eq!((e.position, e.len), (0, input.len() - if user { 2 } else { 0 })),
                }
            }
        }
    }
}

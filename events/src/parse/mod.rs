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
//!
//! | file        | job                                                                    |
//! |-------------|------------------------------------------------------------------------|
//! | `error`     | [`ParseError`] / [`ErrorKind`]: spans, messages, the caret line        |
//! | `lexer`     | the cursor over the input; name, delimiter, raw-token and number rules |
//! | `modifiers` | modifier letters (`u`, `k`, `H`, `G`), perf's group rule               |
//! | `ast`       | events as typed (names, raw values, `pmu/terms/`), terms, `{}` groups  |
//! | `syntax`    | the syntax pass over the whole list, into the AST                      |
//! | `resolve`   | the AST against a PMU: catalogue and table lookups, raw configs, terms |

mod ast;
mod error;
mod lexer;
mod modifiers;
mod resolve;
mod syntax;
#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;

use crate::event::{EventDesc, EventSpec, Modifiers, NamedEvents};
use crate::pmu::PmuCaps;

pub use error::{ErrorKind, ParseError};
use lexer::Cursor;
use resolve::Resolver;
use syntax::Parser;

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

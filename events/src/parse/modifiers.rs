//! Modifier letters (`u`, `k`, `H`, `G`): reading a run of them, perf's group rule, and the
//! [`Modifiers`] they mean.

use alloc::string::{String, ToString};

use super::error::{ErrorKind, ParseError, err, syntax};
use super::lexer::{Cursor, is_delimiter};
use crate::event::Modifiers;

/// Modifier letters with where they were typed (for errors that concern one letter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Mods {
    pub(super) usr: bool,
    pub(super) os: bool,
    pub(super) host: Option<usize>,
    pub(super) guest: Option<usize>,
}

impl Mods {
    /// The run of modifier letters at the cursor (after `:`, or right after `pmu/.../`).
    pub(super) fn parse(cur: &mut Cursor<'_>) -> Result<Mods, ParseError> {
        let start = cur.pos;
        let run = cur.take_while(|c| !is_delimiter(c));
        if run.is_empty() {
            return Err(syntax(
                start,
                cur.char_len(),
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
    pub(super) fn union(self, group: Mods) -> Result<Mods, ParseError> {
        Mods {
            usr: self.usr || group.usr,
            os: self.os || group.os,
            host: self.host.or(group.host),
            guest: self.guest.or(group.guest),
        }
        .check()
    }

    pub(super) fn modifiers(self) -> Modifiers {
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

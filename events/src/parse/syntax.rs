//! The syntax pass: reads the whole list into the AST (`ast`), reporting the first syntax
//! error before anything that depends on the PMU is looked at.

use alloc::format;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::ast::{Ev, GroupAst, Item, Key, PmuName, Term, Value};
use super::error::{ErrorKind, ParseError, err, syntax, unexpected};
use super::lexer::{Cursor, is_name_char, parse_number, raw_digits};
use super::modifiers::Mods;

pub(super) struct Parser<'a> {
    pub(super) c: Cursor<'a>,
}

const EXPECTED_EVENT: &str = "an event: a name, a raw event (r01c2), cpu/.../ or a `{` group";

impl<'a> Parser<'a> {
    pub(super) fn list(&mut self) -> Result<Vec<GroupAst<'a>>, ParseError> {
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
            let group = Mods::parse(&mut self.c)?;
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
                    mods = Some(Mods::parse(&mut self.c)?);
                }
                Some(c) if c.is_ascii_alphanumeric() => mods = Some(Mods::parse(&mut self.c)?),
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
                mods = Some(Mods::parse(&mut self.c)?);
            }
        }
        Ok(Item {
            start,
            end: self.c.pos,
            ev,
            mods,
        })
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

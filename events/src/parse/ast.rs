//! What the syntax pass produces and resolution consumes: events as typed (names, raw values,
//! `pmu/terms/`), their terms and modifier letters, and `{}` groups, with byte spans.

use alloc::vec::Vec;

use super::modifiers::Mods;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PmuName {
    Cpu,
    CpuCore,
    CpuAtom,
}

impl PmuName {
    pub(super) fn from_name(s: &str) -> Option<PmuName> {
        match s {
            "cpu" => Some(PmuName::Cpu),
            "cpu_core" => Some(PmuName::CpuCore),
            "cpu_atom" => Some(PmuName::CpuAtom),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Key {
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

    pub(super) fn name(self) -> &'static str {
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

    pub(super) fn from_name(s: &str) -> Option<Key> {
        Key::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    pub(super) fn is_flag(self) -> bool {
        matches!(
            self,
            Key::Inv | Key::Edge | Key::Any | Key::InTx | Key::InTxcp
        )
    }

    /// Whether the term sets part of the encoding that `config=` also sets.
    pub(super) fn is_field(self) -> bool {
        !matches!(self, Key::Config | Key::Name)
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    Num(u64),
    Str(&'a str),
}

#[derive(Clone, Debug)]
pub(super) struct Term<'a> {
    pub(super) key: Key,
    /// Span of `key=value`.
    pub(super) pos: usize,
    pub(super) len: usize,
    pub(super) value: Value<'a>,
}

#[derive(Clone, Debug)]
pub(super) enum Ev<'a> {
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
pub(super) struct Item<'a> {
    /// Span of the event with its own modifiers.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) ev: Ev<'a>,
    /// Effective modifier letters (after a group's); `None`: none written.
    pub(super) mods: Option<Mods>,
}

impl<'a> Item<'a> {
    /// The `name=` term of a `pmu/.../` event.
    pub(super) fn name_term(&self) -> Option<&'a str> {
        match &self.ev {
            Ev::Pmu { terms, .. } => terms.iter().find_map(|t| match t.value {
                Value::Str(s) => Some(s),
                Value::Num(_) => None,
            }),
            _ => None,
        }
    }
}

pub(super) struct GroupAst<'a> {
    pub(super) members: Vec<Item<'a>>,
    pub(super) explicit: bool,
}

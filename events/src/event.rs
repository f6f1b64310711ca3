//! An event: what to count (the event-select fields), where it may be counted (GP counters,
//! a fixed counter), and what else it needs (extra MSRs, a counter of its own).

use alloc::string::String;
use alloc::vec::Vec;

/// The counting fields of an event select, common to Intel PERFEVTSELx and AMD PERF_CTLx
/// (privilege, interrupt and enable are in [`Modifiers`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventSelect {
    /// Event code: 8 bits on Intel, 12 bits on AMD.
    pub code: u16,
    /// Unit mask.
    pub umask: u8,
    /// Intel's second unit mask (perfmon "UMaskExt", PERFEVTSEL bits 47:40); 0 elsewhere.
    pub umask2: u8,
    /// Counter mask: count cycles with at least (or, with `inv`, fewer than) this many events.
    pub cmask: u8,
    pub inv: bool,
    /// Count rising edges of the condition.
    pub edge: bool,
    /// Intel v3/v4: count both hyper-threads of the core.
    pub any_thread: bool,
    /// Intel TSX: count only inside transactions.
    pub in_tx: bool,
    /// Intel TSX: exclude aborted transactions (checkpointed; GP counter 2 only).
    pub in_txcp: bool,
}

impl EventSelect {
    /// An event code and unit mask with nothing else set.
    pub const fn new(code: u16, umask: u8) -> Self {
        EventSelect {
            code,
            umask,
            umask2: 0,
            cmask: 0,
            inv: false,
            edge: false,
            any_thread: false,
            in_tx: false,
            in_txcp: false,
        }
    }

    /// Linux's "config" for the code and unit mask: `(umask << 8) | code` (AMD's event bits
    /// 11:8 go to config bits 35:32, as in the register).
    pub fn linux_config(&self) -> u64 {
        u64::from(self.code & 0xff)
            | (u64::from(self.umask) << 8)
            | (u64::from(self.code >> 8) << 32)
    }

    /// Whether nothing but the code and unit mask is set: no second unit mask and no filter a
    /// fixed counter cannot apply (counter mask, invert, edge, TSX). Only such an event can
    /// move to a fixed counter that counts the same thing.
    pub fn is_plain(&self) -> bool {
        self.umask2 == 0
            && self.cmask == 0
            && !self.inv
            && !self.edge
            && !self.in_tx
            && !self.in_txcp
    }
}

/// Per-use settings of an event: privilege filter, overflow interrupt, virtualisation filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Modifiers {
    /// Count in user mode (CPL 1-3). perf's `:u`.
    pub usr: bool,
    /// Count in kernel mode (CPL 0). perf's `:k`.
    pub os: bool,
    /// Raise a PMI on overflow (sampling).
    pub int: bool,
    /// AMD: count only in the host (`:H`).
    pub host_only: bool,
    /// AMD: count only in guests (`:G`).
    pub guest_only: bool,
}

impl Default for Modifiers {
    /// perf's default: user and kernel, no interrupt.
    fn default() -> Self {
        Modifiers {
            usr: true,
            os: true,
            int: false,
            host_only: false,
            guest_only: false,
        }
    }
}

impl Modifiers {
    pub const USER: Modifiers = Modifiers {
        usr: true,
        os: false,
        int: false,
        host_only: false,
        guest_only: false,
    };
    pub const KERNEL: Modifiers = Modifiers {
        usr: false,
        os: true,
        int: false,
        host_only: false,
        guest_only: false,
    };
}

/// An MSR an event needs programmed besides its event select (offcore response, load latency).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExtraMsr {
    pub msr: u32,
    pub value: u64,
}

/// Where an event description came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A perf generic event (`cycles`, `branch-misses`, ...), mapped as Linux maps it.
    Generic,
    /// One of Intel's architectural events (CPUID 0x0A EBX).
    Architectural,
    /// A built-in model-specific event (AMD Zen list, fixed-counter names).
    BuiltIn,
    /// A raw encoding the user typed (`r01c2`, `cpu/event=...,umask=.../`).
    Raw,
    /// An Intel perfmon table.
    Perfmon,
}

/// Everything known about one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDesc {
    /// Canonical name (`instructions`, `BR_MISP_RETIRED.ALL_BRANCHES`, `r01c2`).
    pub name: String,
    pub select: EventSelect,
    /// GP counters the event may use, bit i = counter i (`u32::MAX`: any); `None`: the event
    /// has no GP encoding and needs its fixed counter.
    pub gp_counters: Option<u32>,
    /// The fixed counter that counts exactly this event, if any.
    pub fixed: Option<u8>,
    /// The event must be the only one counting (perfmon "TakenAlone").
    pub taken_alone: bool,
    /// An extra MSR to program with the event (offcore response, load latency).
    pub extra: Option<ExtraMsr>,
    /// An alternative encoding with another code and extra MSR (offcore events have two:
    /// 0xB7 with MSR 0x1A6 and 0xBB with MSR 0x1A7), so two such events can run together.
    pub alt: Option<(u16, ExtraMsr)>,
    /// CPUID 0x0A EBX bit, for Intel architectural events.
    pub arch_bit: Option<u8>,
    pub source: Source,
    pub description: Option<String>,
    /// Marked deprecated in its table.
    pub deprecated: bool,
}

impl EventDesc {
    /// A GP event with a code and unit mask and no restrictions.
    pub fn gp(name: &str, select: EventSelect, source: Source) -> EventDesc {
        EventDesc {
            name: String::from(name),
            select,
            gp_counters: Some(u32::MAX),
            fixed: None,
            taken_alone: false,
            extra: None,
            alt: None,
            arch_bit: None,
            source,
            description: None,
            deprecated: false,
        }
    }

    /// With a fixed counter that counts the same event.
    pub fn with_fixed(mut self, index: u8) -> EventDesc {
        self.fixed = Some(index);
        self
    }

    /// With a description.
    pub fn describe(mut self, text: &str) -> EventDesc {
        self.description = Some(String::from(text));
        self
    }

    /// Whether the event has a GP encoding.
    pub fn has_gp_encoding(&self) -> bool {
        self.gp_counters.is_some_and(|m| m != 0)
    }
}

/// One event as a user asked for it: the description and the per-use modifiers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    pub event: EventDesc,
    pub modifiers: Modifiers,
}

/// A source of named events beyond the built-in catalogue, such as an imported Intel perfmon
/// table (see `table::EventTable`). The parser resolves names it does not know through it.
pub trait NamedEvents {
    /// The event called `name`; perfmon names are matched case-insensitively.
    fn event(&self, name: &str) -> Option<EventDesc>;
    /// Every event, in table order (for listings).
    fn all(&self) -> Vec<EventDesc>;
}

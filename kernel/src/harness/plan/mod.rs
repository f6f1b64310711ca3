//! The event plan of a benchmark: the user's event list (`run.cfg` key `events`, perf syntax,
//! docs/events.md) resolved for the PMU the kernel booted on, and split into groups of GP
//! counter configurations that the harness measures one after another (docs/harness.md).
//!
//! - A syntax error anywhere in the list is an error for the whole list ([`Plan::error`], with
//!   its column) and nothing is planned: the kernel measures only the TSC.
//! - Otherwise every event gets a [`Status`]: counted (group, slot, register value), the TSC,
//!   or unsupported with the reason. An event that does not resolve (unknown name, not on this
//!   PMU, ...) is unsupported on its own; the rest of the list is still planned.
//! - Events are placed with `events::assign` on the GP counters and (Intel) the fixed counters,
//!   honouring each event's counter constraints and keeping each `{}` group in one group. A
//!   group's request lists its GP counters first (GP 0, 1, ...; an unused one in between is 0)
//!   and then its fixed counters as `pmu::request::FIXED_ENTRY` entries. A `{}` group that cannot fit
//!   is unsupported as a whole, with the reason.
//! - On a TSC-only PMU every event is unsupported with that reason (names are not resolved:
//!   nothing could count them), and there are no groups.
//! - `tsc` (without modifiers) is the virtual TSC, which the harness measures with every
//!   repetition anyway: it gets [`Status::Tsc`] and no counter, so it is not measured twice.
//! - Names the catalogue does not know are looked up in the event tables whose target is this
//!   CPU (see [`table_matches`]).
//! - An event is reported under its `name=` term when it has one
//!   (`cpu/event=0x0e,umask=0x01,name=UOPS_ISSUED.ANY/` is `UOPS_ISSUED.ANY`), as perf does.
//! - The lines of a nanoBench config (`events::nanobench`, the ramdisk's
//!   `events/nanobench.cfg`) are planned after the list, under their names, counted in user
//!   mode as nanoBench.sh counts; their `CTR=n` pins the event to GP counter n and
//!   `TakenAlone` gives it a group of its own (both `events::assign`).
//! - An event with an extra MSR (offcore response 0x1A6/0x1A7, load latency 0x3F6, frontend
//!   0x3F7) is counted only on an Intel PMU whose CPU has that MSR ([`Platform`]); its group
//!   carries the MSR's value ([`Plan::group_msrs`]), written when the group's events are
//!   loaded.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use events::event::{EventSpec, NamedEvents};
use events::nanobench::NanoBenchEvent;
use events::parse;
use events::pmu::PmuCaps;
use events::table::EventTable;

use crate::pmu::regs::EXTRA_MSRS;

mod place;
mod reasons;
mod resolve;
#[cfg(test)]
mod tests;

use place::place;
use resolve::{Tables, resolve, resolve_config};

pub use resolve::table_matches;

/// Unit of a hardware event's counts.
pub const UNIT_EVENTS: &str = "events";
/// Unit of the TSC.
pub const UNIT_TSC: &str = "ticks";

/// What happens to one event of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Counted in group `group` (an index into [`Plan::groups`]) on virtual slot `slot`, which
    /// is GP counter `slot` (`counter`, e.g. `gp0`): `config` is `Plan::groups[group][slot]`.
    Counted {
        group: usize,
        slot: usize,
        counter: String,
        /// The GP event select (Intel PERFEVTSEL / AMD PERF_CTL) without EN and INT, as
        /// `counters_configure` takes it.
        config: u64,
    },
    /// `tsc`: the virtual TSC the harness measures with every repetition.
    Tsc,
    /// Not counted, and why.
    Unsupported { reason: String },
}

/// Where an event was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The `events` list, at this byte offset.
    List(usize),
    /// The nanoBench config, at this line (1-based).
    Config(usize),
}

/// One event of the list, in list order (then the config's, in line order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    /// What results call it: its `name=` term, else the event as written, with its own
    /// modifiers but not its `{}` group's (`instructions:u`); a config line's name.
    pub name: String,
    pub origin: Origin,
    /// The `{}` group it was written in: its index among the list's `{}` groups.
    pub explicit_group: Option<usize>,
    /// [`UNIT_EVENTS`], or [`UNIT_TSC`] for `tsc`.
    pub unit: &'static str,
    pub status: Status,
}

/// The plan for a benchmark.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Every event, in list order.
    pub events: Vec<PlannedEvent>,
    /// Per group, the `counters_configure` request: one GP event select per GP counter, from
    /// counter 0. A counter no event of the group uses (only when a constraint forces a gap)
    /// holds 0: neither USR nor OS, which counts nothing.
    pub groups: Vec<Vec<u64>>,
    /// Per group (as many as `groups`), the extra MSRs its events need, `(msr, value)`, at
    /// most one value per MSR (`events::assign` keeps events needing two apart).
    pub group_msrs: Vec<Vec<(u32, u64)>>,
    /// The list did not parse: `at column N: message`; then there are no events and no groups.
    pub error: Option<String>,
}

impl Plan {
    /// The events counted in `group`, in slot order, with their slots.
    pub fn group_events(&self, group: usize) -> Vec<(usize, &PlannedEvent)> {
        let mut out: Vec<(usize, &PlannedEvent)> = self
            .events
            .iter()
            .filter_map(|e| match e.status {
                Status::Counted { group: g, slot, .. } if g == group => Some((slot, e)),
                _ => None,
            })
            .collect();
        out.sort_by_key(|&(slot, _)| slot);
        out
    }
}

/// What the machine adds to the PMU's capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Platform {
    /// The counters are QEMU's emulated PMU: events it does not model are unsupported rather
    /// than counted as a register that never moves.
    pub emulated: bool,
    /// The emulated PMU models caches and a branch predictor (`pmu-uarch=on`): their events
    /// count there too.
    pub uarch_model: bool,
    /// Which of [`EXTRA_MSRS`] this CPU has (bit i: `EXTRA_MSRS[i]`; the kernel reads each at
    /// boot, and one that raises #GP is absent).
    pub extra_msrs: u8,
}

impl Platform {
    /// All four extra MSRs present (tests of Intel hardware).
    pub const WITH_EXTRA_MSRS: Platform = Platform {
        emulated: false,
        uarch_model: false,
        extra_msrs: 0b1111,
    };

    fn has_msr(&self, msr: u32) -> bool {
        EXTRA_MSRS
            .iter()
            .position(|&(m, _)| m == msr)
            .is_some_and(|i| self.extra_msrs & (1 << i) != 0)
    }
}

/// Plans `spec` for `caps`, with the names of those `tables` that match the CPU, on hardware
/// without the extra MSRs. An empty (or blank) list is an empty plan.
pub fn plan(spec: &str, caps: &PmuCaps, tables: &[EventTable]) -> Plan {
    plan_with(spec, &[], caps, tables, &Platform::default())
}

/// Plans the events of the `spec` list, then the lines of a nanoBench `config` (counted in
/// user mode, [`NANOBENCH_USER`](events::nanobench::NANOBENCH_USER)), for `caps` on
/// `platform`, with the names of those `tables` that match the CPU. A list that does not parse
/// is [`Plan::error`] and none of its events is planned; the config's still are.
pub fn plan_with(
    spec: &str,
    config: &[NanoBenchEvent],
    caps: &PmuCaps,
    tables: &[EventTable],
    platform: &Platform,
) -> Plan {
    let mut entries = Vec::new();
    let mut error = None;
    if !spec.trim().is_empty() {
        let all = tables;
        let tables = Tables(tables.iter().filter(|t| table_matches(t, caps)).collect());
        let named: Option<&dyn NamedEvents> = (!tables.0.is_empty()).then_some(&tables as _);
        // The list's syntax is checked as a whole; each event is then resolved on its own, so
        // an event this PMU cannot count does not spoil the others.
        match parse::parse_each(spec, caps, named) {
            Ok(each) => entries.extend(each.into_iter().map(|e| resolve(e, caps, platform, all))),
            Err(e) => error = Some(e.to_string()),
        }
    }
    entries.extend(config.iter().map(|e| resolve_config(e, caps, platform)));
    if entries.is_empty() {
        return Plan {
            error,
            ..Plan::default()
        };
    }
    Plan {
        error,
        ..place(entries, caps, platform)
    }
}

/// An event after resolution.
struct Entry {
    name: String,
    origin: Origin,
    explicit_group: Option<usize>,
    outcome: Outcome,
}

enum Outcome {
    Spec(EventSpec),
    Tsc,
    Unsupported(String),
}

//! Each event resolved on its own: the list's (the catalogue and the event tables that match
//! this CPU) and the nanoBench config's lines, counted or unsupported with the reason.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use events::encode::gp_event_select;
use events::event::{EventDesc, NamedEvents};
use events::nanobench::{NANOBENCH_USER, NanoBenchEvent};
use events::parse;
use events::pmu::{PmuCaps, PmuKind};
use events::table::EventTable;

use super::reasons::{emulated_blocker, tsc_only_reason};
use super::{Entry, Origin, Outcome, Platform};

/// Whether `table` describes the CPU of `caps`: same vendor, family and model; a table for one
/// stepping only for that stepping (and only when the stepping is known); a table for one core
/// type of a hybrid part only for that core type. A table without a CPU matches nothing.
pub fn table_matches(table: &EventTable, caps: &PmuCaps) -> bool {
    let (Some(t), Some(c)) = (table.cpu(), caps.cpu) else {
        return false;
    };
    (t.vendor, t.family, t.model) == (c.vendor, c.family, c.model)
        && (t.stepping.is_none() || t.stepping == c.stepping)
        && (table.core_type().is_none() || table.core_type() == caps.core_type)
}

/// The matching tables, searched in order.
pub(super) struct Tables<'a>(pub(super) Vec<&'a EventTable>);

impl NamedEvents for Tables<'_> {
    fn event(&self, name: &str) -> Option<EventDesc> {
        self.0.iter().find_map(|t| t.get(name).cloned())
    }

    fn all(&self) -> Vec<EventDesc> {
        self.0
            .iter()
            .flat_map(|t| t.events().iter().cloned())
            .collect()
    }
}

/// Why `name`, unknown to this CPU's tables, is not counted here when a table of the same part
/// for another core type of a hybrid part has it: it counts on those cores only.
pub(super) fn other_core_type_reason(
    name: &str,
    caps: &PmuCaps,
    tables: &[EventTable],
) -> Option<String> {
    let here = caps.core_type?;
    let other = tables.iter().find(|t| {
        let same_part = matches!((t.cpu(), caps.cpu), (Some(t), Some(c))
            if (t.vendor, t.family, t.model) == (c.vendor, c.family, c.model)
                && (t.stepping.is_none() || t.stepping == c.stepping));
        same_part && t.core_type().is_some_and(|ct| ct != here) && t.get(name).is_some()
    })?;
    let there = other.core_type()?.perfmon_name();
    Some(format!(
        "`{name}` is an event of this hybrid part's {there} cores only (their perfmon table has \
         it, the {} cores' has not): it counts on the {there} CPUs, not on this {} CPU",
        here.perfmon_name(),
        here.perfmon_name()
    ))
}

pub(super) fn resolve(
    e: parse::EachEvent,
    caps: &PmuCaps,
    platform: &Platform,
    tables: &[EventTable],
) -> Entry {
    let emulated = platform.emulated;
    let name = String::from(e.display_name());
    let base = e.text.split(':').next().unwrap_or(&e.text);
    let outcome = if base == "tsc" {
        if !e.has_modifiers {
            Outcome::Tsc
        } else {
            Outcome::Unsupported(String::from(
                "the TSC takes no modifiers: the harness always measures it, as the task's virtual TSC (its time in ring 3); write `tsc`",
            ))
        }
    } else if caps.kind == PmuKind::TscOnly {
        Outcome::Unsupported(tsc_only_reason(caps))
    } else {
        match e.resolved {
            Ok(s) => {
                let spec = s.to_event_spec();
                match emulated
                    .then(|| emulated_blocker(&spec, caps, platform.uarch_model))
                    .flatten()
                {
                    Some(reason) => Outcome::Unsupported(reason),
                    None => Outcome::Spec(spec),
                }
            }
            Err(err) => Outcome::Unsupported(match &err.kind {
                parse::ErrorKind::UnknownName(n) => {
                    other_core_type_reason(n, caps, tables).unwrap_or_else(|| err.kind.to_string())
                }
                // LLC references and misses and branch misses (architectural events 3, 4
                // and 6), which the emulated PMU's CPUID marks unavailable without its
                // micro-architecture model.
                parse::ErrorKind::NotAvailable(r)
                    if emulated
                        && !platform.uarch_model
                        && ["bit 3 ", "bit 4 ", "bit 6 "].iter().any(|b| r.contains(b)) =>
                {
                    format!(
                        "{}; the emulated PMU counts it with its micro-architecture model (`--uarch`)",
                        err.kind
                    )
                }
                kind => kind.to_string(),
            }),
        }
    };
    Entry {
        name,
        origin: Origin::List(e.position),
        explicit_group: e.group,
        outcome,
    }
}

/// A line of a nanoBench config, counted as nanoBench.sh counts it (user mode).
pub(super) fn resolve_config(e: &NanoBenchEvent, caps: &PmuCaps, platform: &Platform) -> Entry {
    let spec = e.event_spec(NANOBENCH_USER);
    let s = &spec.event.select;
    let outcome = if caps.kind == PmuKind::TscOnly {
        Outcome::Unsupported(tsc_only_reason(caps))
    } else if let Err(err) = gp_event_select(caps.vendor, s, &spec.modifiers, false) {
        Outcome::Unsupported(format!("`{}`: {err}", e.config))
    } else if s.any_thread && !caps.any_thread {
        Outcome::Unsupported(String::from(
            "AnyT (AnyThread) needs an Intel v3/v4 PMU that has not deprecated it",
        ))
    } else {
        match platform
            .emulated
            .then(|| emulated_blocker(&spec, caps, platform.uarch_model))
            .flatten()
        {
            Some(reason) => Outcome::Unsupported(reason),
            None => Outcome::Spec(spec),
        }
    };
    Entry {
        name: e.name.clone(),
        origin: Origin::Config(e.line),
        explicit_group: None,
        outcome,
    }
}

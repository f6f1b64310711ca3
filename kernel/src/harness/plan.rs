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

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use events::assign::{self, Counter};
use events::cpu::Vendor;
use events::encode::gp_event_select;
use events::event::{EventDesc, EventSpec, ExtraMsr, NamedEvents};
use events::nanobench::{NANOBENCH_USER, NanoBenchEvent};
use events::parse;
use events::pmu::{PmuCaps, PmuKind};
use events::table::EventTable;

use crate::pmu::regs::EXTRA_MSRS;
use crate::pmu::request::{MAX_SLOTS, fixed_entry, parse_request};

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
struct Tables<'a>(Vec<&'a EventTable>);

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

/// What the machine adds to the PMU's capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Platform {
    /// The counters are QEMU's emulated PMU: events it does not model are unsupported rather
    /// than counted as a register that never moves.
    pub emulated: bool,
    /// Which of [`EXTRA_MSRS`] this CPU has (bit i: `EXTRA_MSRS[i]`; the kernel reads each at
    /// boot, and one that raises #GP is absent).
    pub extra_msrs: u8,
}

impl Platform {
    /// All four extra MSRs present (tests of Intel hardware).
    pub const WITH_EXTRA_MSRS: Platform = Platform {
        emulated: false,
        extra_msrs: 0b1111,
    };

    fn has_msr(&self, msr: u32) -> bool {
        EXTRA_MSRS
            .iter()
            .position(|&(m, _)| m == msr)
            .is_some_and(|i| self.extra_msrs & (1 << i) != 0)
    }
}

fn msr_name(msr: u32) -> String {
    match EXTRA_MSRS.iter().find(|&&(m, _)| m == msr) {
        Some((_, name)) => format!("MSR {msr:#x} ({name})"),
        None => format!("MSR {msr:#x}"),
    }
}

/// Plans `spec` for `caps`, with the names of those `tables` that match the CPU, on hardware
/// without the extra MSRs. An empty (or blank) list is an empty plan.
pub fn plan(spec: &str, caps: &PmuCaps, tables: &[EventTable]) -> Plan {
    plan_with(spec, &[], caps, tables, &Platform::default())
}

/// Plans the events of the `spec` list, then the lines of a nanoBench `config` (counted in
/// user mode, [`NANOBENCH_USER`]), for `caps` on `platform`, with the names of those `tables`
/// that match the CPU. A list that does not parse is [`Plan::error`] and none of its events is
/// planned; the config's still are.
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
        let tables = Tables(tables.iter().filter(|t| table_matches(t, caps)).collect());
        let named: Option<&dyn NamedEvents> = (!tables.0.is_empty()).then_some(&tables as _);
        // The list's syntax is checked as a whole; each event is then resolved on its own, so
        // an event this PMU cannot count does not spoil the others.
        match parse::parse_each(spec, caps, named) {
            Ok(each) => entries.extend(each.into_iter().map(|e| resolve(e, caps, platform))),
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

/// Why nothing is counted on a TSC-only PMU (what `caps` says, nothing more).
fn tsc_only_reason(caps: &PmuCaps) -> String {
    let cpu = caps.cpu.map(|c| format!(" ({c})")).unwrap_or_default();
    format!(
        "no programmable counters: the PMU{cpu} is {}, so only the TSC is measured",
        caps.kind
    )
}

/// Why QEMU's emulated PMU (docs/emulated-pmu.md) cannot count `spec`, if it cannot. The model
/// counts instructions, core and reference cycles and branch instructions (Intel's
/// architectural encodings and fixed counters, AMD's 0x76/0xC0/0xC2) and nothing else.
fn emulated_blocker(spec: &EventSpec, caps: &PmuCaps) -> Option<String> {
    let d = &spec.event;
    let s = &d.select;
    if let Some(x) = d.extra {
        return Some(format!(
            "the emulated PMU (QEMU TCG model) has no {}: `{}` needs it",
            msr_name(x.msr),
            d.name
        ));
    }
    let modelled = if d.has_gp_encoding() {
        if s.umask2 != 0 || s.in_tx || s.any_thread {
            false
        } else {
            match caps.vendor {
                Vendor::Intel => matches!((s.code, s.umask), (0xc0 | 0xc4, 0) | (0x3c, 0 | 1)),
                Vendor::Amd => s.umask == 0 && matches!(s.code, 0x76 | 0xc0 | 0xc2),
            }
        }
    } else {
        d.fixed.is_some_and(|i| i < 3)
    };
    (!modelled).then(|| {
        format!(
            "the emulated PMU (QEMU TCG model) does not model `{}`: it counts instructions, cycles, ref-cycles and branches only",
            d.name
        )
    })
}

fn resolve(e: parse::EachEvent, caps: &PmuCaps, platform: &Platform) -> Entry {
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
                match emulated.then(|| emulated_blocker(&spec, caps)).flatten() {
                    Some(reason) => Outcome::Unsupported(reason),
                    None => Outcome::Spec(spec),
                }
            }
            Err(err) => Outcome::Unsupported(err.kind.to_string()),
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
fn resolve_config(e: &NanoBenchEvent, caps: &PmuCaps, platform: &Platform) -> Entry {
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
            .then(|| emulated_blocker(&spec, caps))
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

/// Why an event cannot go on a task's counters whatever else is counted, if it cannot.
fn task_blocker(spec: &EventSpec, caps: &PmuCaps, platform: &Platform) -> Option<String> {
    let d = &spec.event;
    if let Some(x) = d.extra {
        let what = msr_name(x.msr);
        if !EXTRA_MSRS.iter().any(|&(m, _)| m == x.msr) {
            return Some(format!(
                "it needs {what} programmed with its event select, which baremark does not write"
            ));
        }
        if caps.vendor != Vendor::Intel {
            return Some(format!(
                "it needs {what} programmed with its event select, an Intel MSR this AMD PMU does not have"
            ));
        }
        if !platform.has_msr(x.msr) {
            return Some(format!(
                "it needs {what} programmed with its event select, and this CPU does not have it (reading it raised #GP)"
            ));
        }
    }
    if !d.has_gp_encoding() {
        return match d.fixed {
            Some(i) if caps.has_fixed(i) => None,
            Some(i) => Some(format!(
                "it counts only on fixed counter {i}, which this PMU does not have"
            )),
            None => Some(String::from("it has no GP encoding")),
        };
    }
    if caps.gp_counters == 0 && !d.fixed.is_some_and(|i| caps.has_fixed(i)) {
        return Some(String::from("this PMU has no GP counters"));
    }
    None
}

fn place(entries: Vec<Entry>, caps: &PmuCaps, platform: &Platform) -> Plan {
    // No more slots than a task has: the fixed counters first, the GP counters in the rest.
    let fixed = caps.fixed_mask.count_ones() as usize;
    let gp_caps = PmuCaps {
        gp_counters: caps
            .gp_counters
            .min(u8::try_from(MAX_SLOTS.saturating_sub(fixed)).unwrap_or(u8::MAX)),
        ..*caps
    };
    let mut status: Vec<Option<Status>> = vec![None; entries.len()];
    // The events to place, and which entry each is.
    let mut specs: Vec<EventSpec> = Vec::new();
    let mut entry_of: Vec<usize> = Vec::new();
    let explicit = entries
        .iter()
        .filter_map(|e| e.explicit_group)
        .max()
        .map_or(0, |g| g + 1);
    // Indexed like the list's `{}` groups, so assignment's reasons name them as the user counts.
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); explicit];
    for (i, e) in entries.iter().enumerate() {
        match &e.outcome {
            Outcome::Tsc => status[i] = Some(Status::Tsc),
            Outcome::Unsupported(reason) => {
                status[i] = Some(Status::Unsupported {
                    reason: reason.clone(),
                });
            }
            Outcome::Spec(spec) => match task_blocker(spec, &gp_caps, platform) {
                Some(reason) => status[i] = Some(Status::Unsupported { reason }),
                None => {
                    if let Some(g) = e.explicit_group {
                        groups[g].push(specs.len());
                    }
                    let mut spec = spec.clone();
                    // An alternative encoding whose MSR this CPU lacks is no alternative.
                    if spec
                        .event
                        .alt
                        .is_some_and(|(_, x)| !platform.has_msr(x.msr))
                    {
                        spec.event.alt = None;
                    }
                    specs.push(spec);
                    entry_of.push(i);
                }
            },
        }
    }
    let assignment = assign::assign(&specs, &groups, &gp_caps);
    for u in &assignment.unschedulable {
        status[entry_of[u.event]] = Some(Status::Unsupported {
            reason: u.reason.clone(),
        });
    }
    let mut configs_out: Vec<Vec<u64>> = Vec::new();
    let mut msrs_out: Vec<Vec<(u32, u64)>> = Vec::new();
    for slice in &assignment.slices {
        let width = slice
            .placements
            .iter()
            .filter_map(|p| match p.counter {
                Counter::Gp(n) => Some(usize::from(n) + 1),
                Counter::Fixed(_) => None,
            })
            .max()
            .unwrap_or(0);
        let mut configs = vec![0u64; width];
        let mut msrs: Vec<(u32, u64)> = Vec::new();
        let mut members: Vec<(usize, usize, Counter, u64)> = Vec::new();
        // GP counters at their own index, then the fixed counters after them, in order.
        let mut placements: Vec<&assign::Placement> = slice.placements.iter().collect();
        placements.sort_by_key(|p| p.counter);
        for p in placements {
            let i = entry_of[p.event];
            let spec = &specs[p.event];
            let (select, extra) = assign::encoding(&spec.event, p.uses_alt);
            let encoded = match p.counter {
                // EN and INT clear: the kernel starts the counters, and never samples.
                Counter::Gp(n) => gp_event_select(caps.vendor, &select, &spec.modifiers, false)
                    .map(|c| (usize::from(n), c))
                    .map_err(|e| e.to_string()),
                Counter::Fixed(n) => {
                    configs.push(0);
                    Ok((configs.len() - 1, fixed_entry(n, &spec.modifiers)))
                }
            };
            match encoded {
                Ok((slot, config)) => {
                    configs[slot] = config;
                    members.push((i, slot, p.counter, config));
                    if let Some(ExtraMsr { msr, value }) = extra {
                        add_msr(&mut msrs, msr, value);
                    }
                }
                Err(reason) => status[i] = Some(Status::Unsupported { reason }),
            }
        }
        if members.is_empty() {
            continue;
        }
        // The request must be one counters_configure takes; it is, by construction, but an
        // event is never reported as counted on a configuration the kernel would refuse.
        if parse_request(caps.vendor, caps, &configs).is_err() {
            for (i, ..) in members {
                status[i] = Some(Status::Unsupported {
                    reason: String::from(
                        "internal error: counters_configure would refuse this group's configuration",
                    ),
                });
            }
            continue;
        }
        let group = configs_out.len();
        for (i, slot, counter, config) in members {
            status[i] = Some(Status::Counted {
                group,
                slot,
                counter: counter.to_string(),
                config,
            });
        }
        configs_out.push(configs);
        msrs_out.push(msrs);
    }
    let events = entries
        .into_iter()
        .zip(status)
        .map(|(e, s)| {
            let status = s.unwrap_or_else(|| Status::Unsupported {
                reason: String::from("internal error: the event was neither placed nor refused"),
            });
            PlannedEvent {
                unit: if status == Status::Tsc {
                    UNIT_TSC
                } else {
                    UNIT_EVENTS
                },
                name: e.name,
                origin: e.origin,
                explicit_group: e.explicit_group,
                status,
            }
        })
        .collect();
    Plan {
        events,
        groups: configs_out,
        group_msrs: msrs_out,
        error: None,
    }
}

/// Adds `msr = value` to a group's extra MSRs (once; `events::assign` never puts two values of
/// one MSR in a slice).
fn add_msr(msrs: &mut Vec<(u32, u64)>, msr: u32, value: u64) {
    if !msrs.iter().any(|&(m, _)| m == msr) {
        msrs.push((msr, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::request::FIXED_ENTRY;
    use events::cpu::{CpuModel, Vendor};
    use events::encode::bits;
    use events::event::{EventSelect, ExtraMsr, Modifiers, Source};
    use events::pmu::CoreType;
    use proptest::prelude::*;

    fn caps(cpu: &str) -> PmuCaps {
        PmuCaps::nominal(CpuModel::parse(cpu).unwrap())
    }

    fn skx() -> PmuCaps {
        caps("GenuineIntel-6-55")
    }

    const EMULATED: Platform = Platform {
        emulated: true,
        extra_msrs: 0,
    };

    fn reason_of(p: &Plan, i: usize) -> &str {
        match &p.events[i].status {
            Status::Unsupported { reason } => reason,
            other => panic!("event {i} ({}) is {other:?}", p.events[i].name),
        }
    }

    #[test]
    fn the_emulated_pmu_counts_only_the_events_it_models() {
        let spec = "cycles,instructions,branches,ref-cycles,branch-misses,cache-misses,r01c2,cycles:u,instructions:k";
        let p = plan_with(spec, &[], &skx(), &[], &EMULATED);
        for i in [0, 1, 2, 3, 7, 8] {
            assert!(
                matches!(p.events[i].status, Status::Counted { .. }),
                "{} must be counted: {:?}",
                p.events[i].name,
                p.events[i].status
            );
        }
        for i in [4, 5, 6] {
            assert!(
                reason_of(&p, i).contains("emulated PMU"),
                "{}",
                reason_of(&p, i)
            );
        }
        // The same list on hardware counts them all.
        let hw = plan(spec, &skx(), &[]);
        assert!(
            hw.events
                .iter()
                .all(|e| matches!(e.status, Status::Counted { .. }))
        );
        // AMD: branch misses (0xC3) are not modelled either; the three others are.
        let amd = caps("AuthenticAMD-15-107");
        let p = plan_with(
            "cycles,instructions,branches,branch-misses",
            &[],
            &amd,
            &[],
            &EMULATED,
        );
        for e in &p.events[..3] {
            assert!(matches!(e.status, Status::Counted { .. }), "{}", e.name);
        }
        assert!(reason_of(&p, 3).contains("does not model `branch-misses`"));
    }

    /// Plans and checks what every plan must satisfy: each group is a request
    /// `counters_configure` takes, each counted event's config is its group's value at its
    /// slot on the counter of that index, and nothing is reported as counted that is not.
    fn checked(spec: &str, caps: &PmuCaps, tables: &[EventTable]) -> Plan {
        checked_with(spec, &[], caps, tables, &Platform::default())
    }

    /// [`checked`] with a nanoBench config and a platform; also: each group's extra MSRs are
    /// the ones its counted events need, one value per MSR.
    fn checked_with(
        spec: &str,
        config: &[NanoBenchEvent],
        caps: &PmuCaps,
        tables: &[EventTable],
        platform: &Platform,
    ) -> Plan {
        let p = plan_with(spec, config, caps, tables, platform);
        assert_eq!(
            p,
            plan_with(spec, config, caps, tables, platform),
            "deterministic"
        );
        assert_eq!(p.group_msrs.len(), p.groups.len());
        for msrs in &p.group_msrs {
            for (i, &(m, _)) in msrs.iter().enumerate() {
                assert!(platform.has_msr(m), "{m:#x} is not on this platform");
                assert!(!msrs[..i].iter().any(|&(n, _)| n == m), "{m:#x} twice");
            }
        }
        for (g, configs) in p.groups.iter().enumerate() {
            assert!(
                parse_request(caps.vendor, caps, configs).is_ok(),
                "group {g} {configs:x?} refused"
            );
            assert!(!p.group_events(g).is_empty(), "group {g} counts something");
        }
        for e in &p.events {
            if let Status::Counted {
                group,
                slot,
                counter,
                config,
            } = &e.status
            {
                assert_eq!(p.groups[*group][*slot], *config, "{}", e.name);
                if config & FIXED_ENTRY != 0 {
                    assert_eq!(*counter, format!("fixed{}", config & 0xff));
                } else {
                    assert_eq!(*counter, format!("gp{slot}"));
                    assert_eq!(config & (bits::EN | bits::INT), 0);
                }
            }
        }
        p
    }

    fn status<'a>(p: &'a Plan, name: &str) -> &'a Status {
        &p.events.iter().find(|e| e.name == name).unwrap().status
    }

    fn config(p: &Plan, name: &str) -> u64 {
        match status(p, name) {
            Status::Counted { config, .. } => *config,
            s => panic!("{name}: {s:?}"),
        }
    }

    fn group(p: &Plan, name: &str) -> usize {
        match status(p, name) {
            Status::Counted { group, .. } => *group,
            s => panic!("{name}: {s:?}"),
        }
    }

    fn reason<'a>(p: &'a Plan, name: &str) -> &'a str {
        match status(p, name) {
            Status::Unsupported { reason } => reason,
            s => panic!("{name}: {s:?}"),
        }
    }

    /// What `baremark events encode` prints for the event (EN set), without EN.
    fn encode_cli(spec: &str, caps: &PmuCaps) -> u64 {
        let list = parse::parse(spec, caps, None).unwrap();
        let s = list.specs().next().unwrap();
        gp_event_select(caps.vendor, &s.event.select, &s.modifiers, true).unwrap() & !bits::EN
    }

    const SIX: &str = "cycles,instructions:u,branch-misses,r01c2,cache-references,cache-misses";

    #[test]
    fn intel_six_events_fit_with_the_fixed_counters() {
        let caps = skx();
        let p = checked(SIX, &caps, &[]);
        assert_eq!(p.error, None);
        // cycles and instructions on fixed counters 1 and 0, the other four on GP 0-3.
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0].len(), 6);
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, SIX.split(',').collect::<Vec<_>>());
        assert_eq!(
            config(&p, "instructions:u"),
            FIXED_ENTRY | (1 << 16),
            "fixed 0, user only"
        );
        assert_eq!(
            config(&p, "cycles"),
            FIXED_ENTRY | 1 | (1 << 16) | (1 << 17)
        );
        for name in ["branch-misses", "r01c2", "cache-references", "cache-misses"] {
            assert_eq!(config(&p, name), encode_cli(name, &caps), "{name}");
        }
        for name in SIX.split(',') {
            assert_eq!(
                p.events.iter().find(|e| e.name == name).unwrap().unit,
                "events"
            );
        }
    }

    #[test]
    fn intel_more_gp_events_than_gp_counters_in_two_groups() {
        let caps = skx();
        let spec = "cycles,instructions:u,r01c2,r02c2,r04c2,r08c2,r10c2";
        let p = checked(spec, &caps, &[]);
        assert_eq!(p.groups.len(), 2);
        let counted: usize = (0..2).map(|g| p.group_events(g).len()).sum();
        assert_eq!(counted, 7, "each event in exactly one group");
        // perf's `instructions:u`: 0x4100c0 from `events encode`, EN cleared, on a GP counter.
        assert_eq!(encode_cli("instructions:u", &caps), 0x0100c0);
        for name in ["r01c2", "r02c2", "r04c2", "r08c2", "r10c2"] {
            assert_eq!(config(&p, name), encode_cli(name, &caps), "{name}");
        }
    }

    #[test]
    fn amd_zen() {
        let zen3 = caps("AuthenticAMD-25-21");
        let p = checked("cycles,instructions:u,branch-misses,r1000000c0", &zen3, &[]);
        assert_eq!(p.groups.len(), 1);
        assert_eq!(config(&p, "instructions:u"), 0x0100c0);
        // Raw events are in register layout: AMD event bits 11:8 at 35:32.
        assert_eq!(config(&p, "r1000000c0"), 0x1_0003_00c0);
        for name in ["cycles", "branch-misses", "r1000000c0"] {
            assert_eq!(config(&p, name), encode_cli(name, &zen3), "{name}");
        }
        // Host-only counting exists on AMD only.
        let zen4 = caps("AuthenticAMD-25-11");
        let p = checked("instructions:uH", &zen4, &[]);
        assert_eq!(
            config(&p, "instructions:uH"),
            0x0100c0 | bits::AMD_HOST_ONLY
        );
        let p = checked("instructions:uH,cycles", &skx(), &[]);
        assert!(reason(&p, "instructions:uH").contains("Intel"));
        assert_eq!(group(&p, "cycles"), 0);
    }

    #[test]
    fn tsc_only_counts_nothing_and_says_why() {
        for vendor in [Vendor::Intel, Vendor::Amd] {
            let caps = PmuCaps::tsc_only(vendor, None);
            let p = checked(
                "cycles,instructions:u,{branches,branch-misses}:k,r01c2,nosuch,tsc",
                &caps,
                &[],
            );
            assert_eq!((p.error.as_deref(), p.groups.len()), (None, 0));
            assert_eq!(p.events.len(), 7);
            for e in &p.events {
                match e.name.as_str() {
                    "tsc" => assert_eq!(e.status, Status::Tsc),
                    _ => assert_eq!(
                        e.status,
                        Status::Unsupported {
                            reason: String::from(
                                "no programmable counters: the PMU is TSC only, so only the TSC is measured"
                            )
                        }
                    ),
                }
            }
            assert_eq!(p.events[3].explicit_group, Some(0));
        }
        // A syntax error is still the list's error.
        let p = checked("cycles,", &PmuCaps::tsc_only(Vendor::Intel, None), &[]);
        assert!(p.error.is_some() && p.events.is_empty());
    }

    #[test]
    fn explicit_groups_stay_together() {
        let caps = skx();
        let p = checked(
            "cycles,instructions,{branches,branch-misses,cache-misses},cache-references",
            &caps,
            &[],
        );
        // cycles and instructions on fixed counters: the rest fits the 4 GP counters.
        assert_eq!(p.groups.len(), 1);
        let g = group(&p, "branches");
        assert_eq!(group(&p, "branch-misses"), g);
        assert_eq!(group(&p, "cache-misses"), g);
        assert_eq!(p.events[2].explicit_group, Some(0));
        assert_eq!(p.events[0].explicit_group, None);
        // Group modifiers apply to the members (the names stay as written).
        let p = checked("{cycles,instructions:k}:u", &caps, &[]);
        assert_eq!(config(&p, "cycles"), FIXED_ENTRY | 1 | (1 << 16));
        assert_eq!(
            config(&p, "instructions:k"),
            FIXED_ENTRY | (1 << 16) | (1 << 17)
        );
        // A group larger than the counters: its events, and only them, are unsupported.
        let p = checked(
            "{cycles,instructions,branches,branch-misses,cache-misses,r01c2,r02c2},cache-references",
            &caps,
            &[],
        );
        for name in [
            "cycles",
            "instructions",
            "branches",
            "branch-misses",
            "cache-misses",
            "r01c2",
            "r02c2",
        ] {
            assert!(
                reason(&p, name).starts_with("explicit group 0 cannot be counted in one slice"),
                "{name}: {}",
                reason(&p, name)
            );
        }
        assert_eq!(group(&p, "cache-references"), 0);
        assert_eq!(p.groups.len(), 1);
    }

    #[test]
    fn syntax_errors_fail_the_whole_list() {
        for (spec, column) in [
            ("cycles,,instructions", 8),
            ("cycles:p", 8),
            ("{cycles,instructions", 1),
            ("cpu/event=0xc0,bogus=1/", 16),
            ("r123456789abcdef01", 1),
            ("cycles nosuch", 8),
        ] {
            let p = checked(spec, &skx(), &[]);
            let err = p
                .error
                .as_deref()
                .unwrap_or_else(|| panic!("{spec}: {p:?}"));
            assert!(
                err.starts_with(&format!("at column {column}:")),
                "{spec}: {err}"
            );
            assert!(p.events.is_empty() && p.groups.is_empty());
        }
        assert_eq!(checked("  ", &skx(), &[]), Plan::default());
    }

    #[test]
    fn a_bad_event_does_not_spoil_the_others() {
        let caps = skx();
        let spec =
            "cycles,nosuch,rxyz,cpu/event=0x1c0/,instructions,ref-cycles,tsc,tsc:u,{tsc,cycles}:k";
        let p = checked(spec, &caps, &[]);
        assert_eq!(p.error, None);
        assert_eq!(reason(&p, "nosuch"), "unknown event name `nosuch`");
        assert!(reason(&p, "rxyz").contains("neither a known event nor a raw event"));
        assert!(reason(&p, "cpu/event=0x1c0/").contains("out of range"));
        // Intel counts reference cycles on fixed counter 2 only: tasks get it.
        assert_eq!(
            config(&p, "ref-cycles"),
            FIXED_ENTRY | 2 | (1 << 16) | (1 << 17)
        );
        assert_eq!(*status(&p, "tsc"), Status::Tsc);
        assert_eq!(p.events[6].unit, UNIT_TSC);
        assert!(reason(&p, "tsc:u").contains("no modifiers"));
        // `tsc` in a group with modifiers: unsupported; the cycles beside it are counted.
        assert!(matches!(p.events[8].status, Status::Unsupported { .. }));
        assert_eq!(
            p.events[8].origin,
            Origin::List(spec.find("{tsc").unwrap() + 1)
        );
        assert_eq!(group(&p, "instructions"), 0);
        // `cycles` on fixed 1 and `cycles:k` on GP 0 (fixed 1 is taken); instructions and
        // ref-cycles on fixed 0 and 2.
        let mut g = p.groups[0].clone();
        g.sort_unstable();
        assert_eq!(g.len(), 4, "{:x?}", p.groups);
        assert!(g.contains(&0x02003c), "{:x?}", p.groups);
    }

    #[test]
    fn a_counter_constraint_can_leave_a_gap() {
        // IN_TXCP counts only on GP counter 2: the request carries counters 0-2, 0-1 unused.
        let caps = skx();
        let p = checked("cpu/event=0x3c,in_txcp/", &caps, &[]);
        assert_eq!(p.groups, vec![vec![0, 0, 0x2_0003_003c]]);
        match status(&p, "cpu/event=0x3c,in_txcp/") {
            Status::Counted { slot, counter, .. } => {
                assert_eq!((*slot, counter.as_str()), (2, "gp2"))
            }
            s => panic!("{s:?}"),
        }
        let p = checked("cycles,cpu/event=0x3c,in_txcp/,instructions", &caps, &[]);
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0][2], 0x2_0003_003c);
    }

    fn table_event(name: &str, code: u16, umask: u8) -> EventDesc {
        let mut e = EventDesc::gp(name, EventSelect::new(code, umask), Source::Perfmon);
        e.gp_counters = Some(0b1111);
        e
    }

    fn skx_table() -> EventTable {
        let mut offcore = table_event("OCR.DEMAND_DATA_RD.ANY_RESPONSE", 0xb7, 0x01);
        offcore.extra = Some(ExtraMsr {
            msr: 0x1a6,
            value: 0x10001,
        });
        let mut alone = table_event("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", 0xcd, 0x01);
        alone.taken_alone = true;
        let mut low = table_event("L1D_PEND_MISS.PENDING", 0x48, 0x01);
        low.gp_counters = Some(0b0100);
        EventTable::new(vec![
            table_event("MEM_LOAD_RETIRED.L1_MISS", 0xd1, 0x08),
            offcore,
            alone,
            low,
        ])
        .unwrap()
        .with_target(Some(CpuModel::parse("GenuineIntel-6-55").unwrap()), None)
    }

    #[test]
    fn names_from_the_matching_table() {
        let caps = skx();
        let tables = [skx_table()];
        let p = checked(
            "mem_load_retired.l1_miss:u,OCR.DEMAND_DATA_RD.ANY_RESPONSE,MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4,L1D_PEND_MISS.PENDING,cycles",
            &caps,
            &tables,
        );
        assert_eq!(config(&p, "mem_load_retired.l1_miss:u"), 0x0108d1);
        assert!(reason(&p, "OCR.DEMAND_DATA_RD.ANY_RESPONSE").contains("MSR 0x1a6"));
        // Taken alone: a group of its own.
        let alone = group(&p, "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4");
        assert_eq!(p.group_events(alone).len(), 1);
        match status(&p, "L1D_PEND_MISS.PENDING") {
            Status::Counted { slot, .. } => assert_eq!(*slot, 2),
            s => panic!("{s:?}"),
        }
        assert_eq!(p.groups.len(), 2);
        // Tables for another model, stepping or core type are not used.
        let other = [
            skx_table().with_target(Some(CpuModel::parse("GenuineIntel-6-5E").unwrap()), None),
            skx_table().with_target(Some(CpuModel::parse("GenuineIntel-6-55-7").unwrap()), None),
            skx_table().with_target(
                Some(CpuModel::parse("GenuineIntel-6-55").unwrap()),
                Some(CoreType::Atom),
            ),
            skx_table().with_target(None, None),
        ];
        let p = checked("MEM_LOAD_RETIRED.L1_MISS,cycles", &caps, &other);
        assert!(reason(&p, "MEM_LOAD_RETIRED.L1_MISS").contains("unknown event name"));
        assert_eq!(group(&p, "cycles"), 0);
        // A stepping-specific table matches that stepping; a core-type table that core type.
        let stepped = PmuCaps {
            cpu: Some(CpuModel::parse("GenuineIntel-6-55-7").unwrap()),
            core_type: Some(CoreType::Atom),
            ..caps
        };
        assert!(table_matches(&other[1], &stepped));
        assert!(table_matches(&other[2], &stepped));
        assert!(table_matches(&skx_table(), &stepped));
        assert!(!table_matches(&other[1], &caps));
    }

    #[test]
    fn an_event_with_a_name_term_is_reported_under_that_name() {
        let caps = skx();
        let spec = "cpu/event=0xc0,umask=0x0,name=INST_RETIRED.ANY_P/u,cpu/event=0x1c0,name='too wide'/,cycles:u";
        let p = checked(spec, &caps, &[]);
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["INST_RETIRED.ANY_P", "too wide", "cycles:u"]);
        assert_eq!(config(&p, "INST_RETIRED.ANY_P"), 0x0100c0);
        assert!(reason(&p, "too wide").contains("out of range"));
    }

    fn nb(text: &str) -> Vec<NanoBenchEvent> {
        events::nanobench::parse_config(text).unwrap()
    }

    /// The config value of a counted event, and its group's extra MSRs.
    fn msrs_of<'a>(p: &'a Plan, name: &str) -> &'a [(u32, u64)] {
        &p.group_msrs[group(p, name)]
    }

    #[test]
    fn nanobench_config_lines_are_planned_after_the_list_under_their_names() {
        let caps = skx();
        let cfg = nb(
            "# counted in user mode\nC0.00 INST_RETIRED.ANY_P\n\nC4.00 BR_INST_RETIRED.ALL_BRANCHES\nB1.01.CMSK=1.INV UOPS_EXECUTED.STALL_CYCLES\n",
        );
        let p = checked_with("cycles", &cfg, &caps, &[], &Platform::default());
        let got: Vec<(&str, Origin)> = p
            .events
            .iter()
            .map(|e| (e.name.as_str(), e.origin))
            .collect();
        assert_eq!(
            got,
            [
                ("cycles", Origin::List(0)),
                ("INST_RETIRED.ANY_P", Origin::Config(2)),
                ("BR_INST_RETIRED.ALL_BRANCHES", Origin::Config(4)),
                ("UOPS_EXECUTED.STALL_CYCLES", Origin::Config(5)),
            ]
        );
        // What nanoBench programs (nanobench::perfevtsel, user mode), without EN: the kernel
        // starts the counters. On GP counters, as nanoBench counts them.
        for e in &cfg {
            let want = e.perfevtsel(Vendor::Intel, &NANOBENCH_USER).unwrap() & !bits::EN;
            assert_eq!(config(&p, &e.name), want, "{}", e.name);
            match status(&p, &e.name) {
                Status::Counted { counter, .. } => assert!(counter.starts_with("gp"), "{counter}"),
                s => panic!("{s:?}"),
            }
        }
        assert_eq!(config(&p, "UOPS_EXECUTED.STALL_CYCLES"), 0x0181_01b1);
        assert_eq!(config(&p, "INST_RETIRED.ANY_P"), 0x0100c0);
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.group_msrs, vec![Vec::<(u32, u64)>::new()]);
        // The config alone, and a list that does not parse beside it.
        let p = checked_with("", &cfg, &caps, &[], &Platform::default());
        assert_eq!(p.events.len(), 3);
        let p = checked_with("cycles,,", &cfg, &caps, &[], &Platform::default());
        assert!(p.error.as_deref().unwrap().starts_with("at column 8"));
        assert_eq!(p.events.len(), 3);
        assert_eq!(p.events[0].name, "INST_RETIRED.ANY_P");
    }

    #[test]
    fn ctr_pins_a_line_to_its_counter_and_taken_alone_counts_it_alone() {
        let caps = skx();
        let cfg = nb(
            "C0.01.CTR=1 INST_RETIRED.PREC_DIST\nC4.00.CTR=1 BR.CTR1\n3C.00 CORE_CYCLES\nCD.01.TakenAlone ALONE\nC0.00.CTR=5 NO_SUCH_COUNTER\n",
        );
        let p = checked_with("", &cfg, &caps, &[], &Platform::default());
        for name in ["INST_RETIRED.PREC_DIST", "BR.CTR1"] {
            match status(&p, name) {
                Status::Counted { slot, counter, .. } => {
                    assert_eq!((*slot, counter.as_str()), (1, "gp1"), "{name}")
                }
                s => panic!("{name}: {s:?}"),
            }
        }
        // Two events pinned to one counter cannot be counted together.
        assert_ne!(group(&p, "INST_RETIRED.PREC_DIST"), group(&p, "BR.CTR1"));
        let alone = group(&p, "ALONE");
        assert_eq!(p.group_events(alone).len(), 1, "{p:?}");
        assert!(
            reason(&p, "NO_SUCH_COUNTER")
                .starts_with("it may only use GP counter(s) 5 but this PMU has 4 GP counter(s)"),
            "{}",
            reason(&p, "NO_SUCH_COUNTER")
        );
        assert_eq!(p.groups.len(), 3);
    }

    #[test]
    fn extra_msrs_go_with_their_group_where_the_cpu_has_them() {
        let intel = skx();
        let cfg = nb(
            "CD.01.MSR_3F6H=0x10.TakenAlone LL16\nB7.01.MSR_RSP0=0x10001 OCR1\nB7.01.MSR_RSP0=0x20002 OCR2\nC6.01.MSR_PF=0x11 FE\nC0.00 INST\n",
        );
        let p = checked_with("", &cfg, &intel, &[], &Platform::WITH_EXTRA_MSRS);
        assert_eq!(msrs_of(&p, "LL16"), [(0x3f6, 0x10)]);
        assert_eq!(p.group_events(group(&p, "LL16")).len(), 1);
        assert!(msrs_of(&p, "OCR1").contains(&(0x1a6, 0x10001)));
        assert!(msrs_of(&p, "OCR2").contains(&(0x1a6, 0x20002)));
        // One MSR, two values: not in one group.
        assert_ne!(group(&p, "OCR1"), group(&p, "OCR2"));
        assert!(msrs_of(&p, "FE").contains(&(0x3f7, 0x11)));
        assert_eq!(config(&p, "OCR1"), 0x0101b7);
        // A group without such events writes none.
        let inst = group(&p, "INST");
        let needs_msr = p
            .group_events(inst)
            .iter()
            .any(|(_, e)| ["OCR1", "OCR2", "FE", "LL16"].contains(&e.name.as_str()));
        assert_eq!(p.group_msrs[inst].is_empty(), !needs_msr);

        // A CPU without them (RDMSR raised #GP): those lines alone are not counted.
        let only_rsp = Platform {
            emulated: false,
            extra_msrs: 0b0011,
        };
        let p = checked_with("", &cfg, &intel, &[], &only_rsp);
        assert!(
            reason(&p, "LL16").contains("MSR 0x3f6 (MSR_PEBS_LD_LAT)")
                && reason(&p, "LL16").contains("this CPU does not have it"),
            "{}",
            reason(&p, "LL16")
        );
        assert!(reason(&p, "FE").contains("MSR 0x3f7 (MSR_PEBS_FRONTEND)"));
        assert_eq!(msrs_of(&p, "OCR1"), [(0x1a6, 0x10001)]);
        group(&p, "INST");
        // AMD has none of them; the emulated PMU models none.
        let p = checked_with(
            "",
            &cfg,
            &caps("AuthenticAMD-25-11"),
            &[],
            &Platform::WITH_EXTRA_MSRS,
        );
        assert!(reason(&p, "OCR1").contains("an Intel MSR this AMD PMU does not have"));
        group(&p, "INST");
        let p = checked_with("", &cfg, &intel, &[], &EMULATED);
        assert!(reason(&p, "OCR1").contains("emulated PMU (QEMU TCG model) has no MSR 0x1a6"));
        assert!(p.group_msrs.iter().all(Vec::is_empty));
    }

    #[test]
    fn offcore_events_with_two_encodings_share_a_group_through_the_second_msr() {
        let mut a = table_event("OCR.A", 0xb7, 0x01);
        a.extra = Some(ExtraMsr {
            msr: 0x1a6,
            value: 0x1,
        });
        a.alt = Some((
            0xbb,
            ExtraMsr {
                msr: 0x1a7,
                value: 0x1,
            },
        ));
        let mut b = table_event("OCR.B", 0xb7, 0x01);
        b.extra = Some(ExtraMsr {
            msr: 0x1a6,
            value: 0x2,
        });
        b.alt = Some((
            0xbb,
            ExtraMsr {
                msr: 0x1a7,
                value: 0x2,
            },
        ));
        let table = EventTable::new(vec![a, b])
            .unwrap()
            .with_target(Some(CpuModel::parse("GenuineIntel-6-55").unwrap()), None);
        let tables = [table];
        let p = checked_with(
            "OCR.A,OCR.B",
            &[],
            &skx(),
            &tables,
            &Platform::WITH_EXTRA_MSRS,
        );
        assert_eq!(p.groups.len(), 1);
        let mut msrs = p.group_msrs[0].clone();
        msrs.sort_unstable();
        let mut codes = [config(&p, "OCR.A") & 0xff, config(&p, "OCR.B") & 0xff];
        codes.sort_unstable();
        assert_eq!(codes, [0xb7, 0xbb], "one of them on its alternative code");
        assert_eq!(msrs.len(), 2);
        assert_eq!((msrs[0].0, msrs[1].0), (0x1a6, 0x1a7));
        // Whichever is on 0xBB has its value in 0x1A7.
        let on_bb = if config(&p, "OCR.A") & 0xff == 0xbb {
            1
        } else {
            2
        };
        assert_eq!(msrs[1].1, on_bb);
        // Without MSR 0x1A7 there is no alternative: two groups.
        let rsp0 = Platform {
            emulated: false,
            extra_msrs: 0b0001,
        };
        let p = checked_with("OCR.A,OCR.B", &[], &skx(), &tables, &rsp0);
        assert_eq!(p.groups.len(), 2);
        assert_eq!(p.group_msrs[0], [(0x1a6, 1)]);
        assert_eq!(p.group_msrs[1], [(0x1a6, 2)]);
    }

    #[test]
    fn config_lines_this_pmu_cannot_count_say_why() {
        // Sapphire Rapids (v5): AnyThread deprecated; Intel event selects have 8 bits.
        let cfg = nb("0D.03.CMSK=1.AnyT ANY\n28A.01\nC0.00 INST\n");
        let p = checked_with(
            "",
            &cfg,
            &caps("GenuineIntel-6-8F"),
            &[],
            &Platform::default(),
        );
        assert!(
            reason(&p, "ANY").starts_with("AnyT (AnyThread) needs"),
            "{}",
            reason(&p, "ANY")
        );
        assert!(
            reason(&p, "28A.01").starts_with("`28A.01`: "),
            "{}",
            reason(&p, "28A.01")
        );
        assert!(
            reason(&p, "28A.01").contains("out of range"),
            "{}",
            reason(&p, "28A.01")
        );
        group(&p, "INST");
        // AMD takes the 12-bit code.
        let p = checked_with(
            "",
            &cfg[1..],
            &caps("AuthenticAMD-25-11"),
            &[],
            &Platform::default(),
        );
        assert_eq!(config(&p, "28A.01"), 0x2_0001_018a);
        // TSC only: nothing is counted, each line says why.
        let p = checked_with(
            "",
            &cfg,
            &PmuCaps::tsc_only(Vendor::Intel, None),
            &[],
            &Platform::default(),
        );
        assert_eq!(p.events.len(), 3);
        assert!(p.groups.is_empty());
        assert!(reason(&p, "INST").starts_with("no programmable counters"));
        // The emulated PMU counts only what it models.
        let p = checked_with(
            "",
            &nb("C0.00 I\nC4.00 B\n0E.01 U\n"),
            &skx(),
            &[],
            &EMULATED,
        );
        group(&p, "I");
        group(&p, "B");
        assert!(
            reason(&p, "U").contains("does not model `U`"),
            "{}",
            reason(&p, "U")
        );
    }

    #[test]
    fn modifiers_and_encodings_match_the_parser() {
        let caps = skx();
        let p = checked(
            "instructions:k,cpu/event=0xc4,umask=0x20,cmask=2,inv/u",
            &caps,
            &[],
        );
        assert_eq!(config(&p, "instructions:k"), FIXED_ENTRY | (1 << 17));
        assert_eq!(
            config(&p, "cpu/event=0xc4,umask=0x20,cmask=2,inv/u"),
            0x0281_20c4
        );
        let m = Modifiers::USER;
        assert!(m.usr && !m.os);
    }

    // Event by event against the whole list: for lists the parser accepts, `parse_each` gives
    // its events (text, position, group), each resolved alone as the whole list resolves it.
    const ATOMS: [&str; 10] = [
        "cycles",
        "instructions:u",
        "r01c2",
        "r01c2:k",
        "cpu/event=0xc0,umask=0x1/u",
        "cpu/event=0x3c, name='a,b/c}{'/",
        "cpu/ event=0xc4 , inv /:k",
        "cpu/event=0x3c,name=\"x y\"/uk",
        "branch-misses:uk",
        "cpu/event=0xc0,name=n'q/",
    ];

    fn item() -> impl Strategy<Value = String> {
        let atom = prop::sample::select(ATOMS.to_vec()).prop_map(String::from);
        prop_oneof![
            atom.clone(),
            (
                prop::collection::vec(atom, 1..4),
                prop::sample::select(vec!["", ":u", ":k", ":uk"]),
                prop::sample::select(vec![",", " , ", ",\t", "\u{a0},"]),
            )
                .prop_map(|(m, mods, sep)| format!("{{ {} }}{mods}", m.join(sep))),
        ]
    }

    proptest! {
        #[test]
        fn each_event_alone_is_what_the_list_resolves_to(
            items in prop::collection::vec(item(), 1..6),
            sep in prop::sample::select(vec![",", ", ", " ,", "\n,\u{2003}"]),
            pad in prop::sample::select(vec!["", " ", "\u{a0}"]),
        ) {
            let caps = skx();
            let input = format!("{pad}{}{pad}", items.join(sep));
            let list = parse::parse(&input, &caps, None).unwrap();
            let each = parse::parse_each(&input, &caps, None).unwrap();
            prop_assert_eq!(each.len(), list.len());
            let mut explicit = 0;
            let mut k = 0;
            for g in &list.groups {
                for s in &g.events {
                    let e = &each[k];
                    prop_assert_eq!(e.text.as_str(), s.text.as_str());
                    prop_assert_eq!(e.position, s.position);
                    prop_assert_eq!(e.group, g.explicit.then_some(explicit));
                    let alone = e.resolved.as_ref().unwrap();
                    prop_assert_eq!(alone.to_event_spec(), s.to_event_spec());
                    k += 1;
                }
                if g.explicit {
                    explicit += 1;
                }
            }
            let p = checked(&input, &caps, &[]);
            prop_assert_eq!(p.events.len(), list.len());
        }

        #[test]
        fn never_panics_and_always_checks(spec in "[a-z0-9_:,{}/=' rkuHG.-]{0,40}") {
            for caps in [skx(), caps("AuthenticAMD-25-11"), PmuCaps::tsc_only(Vendor::Intel, None)] {
                let p = checked(&spec, &caps, &[]);
                if p.error.is_some() {
                    prop_assert!(p.events.is_empty());
                }
            }
        }
    }
}

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
//!   and then its fixed counters as `hwslots::FIXED_ENTRY` entries. A `{}` group that cannot fit
//!   is unsupported as a whole, with the reason.
//! - On a TSC-only PMU every event is unsupported with that reason (names are not resolved:
//!   nothing could count them), and there are no groups.
//! - `tsc` (without modifiers) is the virtual TSC, which the harness measures with every
//!   repetition anyway: it gets [`Status::Tsc`] and no counter, so it is not measured twice.
//! - Names the catalogue does not know are looked up in the event tables whose target is this
//!   CPU (see [`table_matches`]).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use events::assign::{self, Counter};
use events::cpu::Vendor;
use events::encode::gp_event_select;
use events::event::{EventDesc, EventSpec, NamedEvents};
use events::parse;
use events::pmu::{PmuCaps, PmuKind};
use events::table::EventTable;

use crate::task::hwslots::{fixed_entry, parse_counter_config};
use crate::task::vcounter::MAX_SLOTS;

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

/// One event of the list, in list order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    /// The event as written, with its own modifiers but not its `{}` group's
    /// (`instructions:u`).
    pub name: String,
    /// Byte offset of `name` in the list.
    pub position: usize,
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

/// Plans `spec` for `caps`, with the names of those `tables` that match the CPU. An empty (or
/// blank) list is an empty plan.
pub fn plan(spec: &str, caps: &PmuCaps, tables: &[EventTable]) -> Plan {
    plan_for(spec, caps, tables, false)
}

/// [`plan`], where `emulated` says the counters are QEMU's emulated PMU: events it does not
/// model are unsupported rather than counted as a register that never moves.
pub fn plan_for(spec: &str, caps: &PmuCaps, tables: &[EventTable], emulated: bool) -> Plan {
    if spec.trim().is_empty() {
        return Plan::default();
    }
    let tables = Tables(tables.iter().filter(|t| table_matches(t, caps)).collect());
    let named: Option<&dyn NamedEvents> = (!tables.0.is_empty()).then_some(&tables as _);
    // The list's syntax is checked as a whole; each event is then resolved on its own, so an
    // event this PMU cannot count does not spoil the others.
    match parse::parse_each(spec, caps, named) {
        Ok(each) => place(
            each.into_iter()
                .map(|e| resolve(e, caps, emulated))
                .collect(),
            caps,
        ),
        Err(e) => failed(e.to_string()),
    }
}

fn failed(error: String) -> Plan {
    Plan {
        error: Some(error),
        ..Plan::default()
    }
}

/// An event after resolution.
struct Entry {
    name: String,
    position: usize,
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

fn resolve(e: parse::EachEvent, caps: &PmuCaps, emulated: bool) -> Entry {
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
        name: e.text,
        position: e.position,
        explicit_group: e.group,
        outcome,
    }
}

/// Why an event cannot go on a task's counters whatever else is counted, if it cannot.
fn task_blocker(spec: &EventSpec, caps: &PmuCaps) -> Option<String> {
    let d = &spec.event;
    if !d.has_gp_encoding() {
        return match d.fixed {
            Some(i) if caps.has_fixed(i) => None,
            Some(i) => Some(format!(
                "it counts only on fixed counter {i}, which this PMU does not have"
            )),
            None => Some(String::from("it has no GP encoding")),
        };
    }
    if let Some(x) = d.extra {
        return Some(format!(
            "it needs MSR {:#x} programmed besides its event select, which task counters do not do yet",
            x.msr
        ));
    }
    if caps.gp_counters == 0 && !d.fixed.is_some_and(|i| caps.has_fixed(i)) {
        return Some(String::from("this PMU has no GP counters"));
    }
    None
}

fn place(entries: Vec<Entry>, caps: &PmuCaps) -> Plan {
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
            Outcome::Spec(spec) => match task_blocker(spec, &gp_caps) {
                Some(reason) => status[i] = Some(Status::Unsupported { reason }),
                None => {
                    if let Some(g) = e.explicit_group {
                        groups[g].push(specs.len());
                    }
                    specs.push(spec.clone());
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
        let mut members: Vec<(usize, usize, Counter, u64)> = Vec::new();
        // GP counters at their own index, then the fixed counters after them, in order.
        let mut placements: Vec<&assign::Placement> = slice.placements.iter().collect();
        placements.sort_by_key(|p| p.counter);
        for p in placements {
            let i = entry_of[p.event];
            let spec = &specs[p.event];
            let encoded = match p.counter {
                // EN and INT clear: the kernel starts the counters, and never samples.
                Counter::Gp(n) => {
                    gp_event_select(caps.vendor, &spec.event.select, &spec.modifiers, false)
                        .map(|c| (usize::from(n), c))
                        .map_err(|e| e.to_string())
                }
                Counter::Fixed(n) => {
                    configs.push(0);
                    Ok((configs.len() - 1, fixed_entry(n, &spec.modifiers)))
                }
            };
            match encoded {
                Ok((slot, config)) => {
                    configs[slot] = config;
                    members.push((i, slot, p.counter, config));
                }
                Err(reason) => status[i] = Some(Status::Unsupported { reason }),
            }
        }
        if members.is_empty() {
            continue;
        }
        // The request must be one counters_configure takes; it is, by construction, but an
        // event is never reported as counted on a configuration the kernel would refuse.
        if parse_counter_config(caps.vendor, caps, &configs).is_err() {
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
                position: e.position,
                explicit_group: e.explicit_group,
                status,
            }
        })
        .collect();
    Plan {
        events,
        groups: configs_out,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::hwslots::FIXED_ENTRY;
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

    fn reason_of(p: &Plan, i: usize) -> &str {
        match &p.events[i].status {
            Status::Unsupported { reason } => reason,
            other => panic!("event {i} ({}) is {other:?}", p.events[i].name),
        }
    }

    #[test]
    fn the_emulated_pmu_counts_only_the_events_it_models() {
        let spec = "cycles,instructions,branches,ref-cycles,branch-misses,cache-misses,r01c2,cycles:u,instructions:k";
        let p = plan_for(spec, &skx(), &[], true);
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
        let hw = plan_for(spec, &skx(), &[], false);
        assert!(
            hw.events
                .iter()
                .all(|e| matches!(e.status, Status::Counted { .. }))
        );
        // AMD: branch misses (0xC3) are not modelled either; the three others are.
        let amd = caps("AuthenticAMD-15-107");
        let p = plan_for(
            "cycles,instructions,branches,branch-misses",
            &amd,
            &[],
            true,
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
        let p = plan(spec, caps, tables);
        assert_eq!(p, plan(spec, caps, tables), "deterministic");
        for (g, configs) in p.groups.iter().enumerate() {
            assert!(
                parse_counter_config(caps.vendor, caps, configs).is_ok(),
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
        assert_eq!(p.events[8].position, spec.find("{tsc").unwrap() + 1);
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

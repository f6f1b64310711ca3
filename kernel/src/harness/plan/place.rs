//! The resolved events placed on the counters (`events::assign`), in groups, and each group's
//! `counters_configure` request and extra MSRs encoded.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use events::assign::{self, Counter};
use events::encode::gp_event_select;
use events::event::{EventSpec, ExtraMsr};
use events::pmu::PmuCaps;

use super::reasons::task_blocker;
use super::{Entry, Outcome, Plan, PlannedEvent, Platform, Status, UNIT_EVENTS, UNIT_TSC};
use crate::pmu::request::{MAX_SLOTS, fixed_entry, parse_request};

pub(super) fn place(entries: Vec<Entry>, caps: &PmuCaps, platform: &Platform) -> Plan {
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

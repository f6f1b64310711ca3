//! Counter assignment: placing events on counters, and splitting them into slices ("groups")
//! that are counted one after another (multiplexed) when they do not all fit at once.
//!
//! # What may go where
//!
//! - An event goes on its fixed counter `i` when it has one (`fixed: Some(i)`), the PMU has it,
//!   and nothing the fixed counter cannot do is asked for: fixed counters only filter OS/USR,
//!   AnyThread and PMI, so cmask/inv/edge/TSX filters (`!is_plain()`), AMD host/guest-only
//!   filters and an extra MSR send the event to a GP counter.
//! - Otherwise on a GP counter in both its own mask (`gp_counters`) and the PMU's
//!   (`PmuCaps::gp_mask`).
//! - A taken-alone event is the only event in its slice.
//! - Events with an extra MSR (offcore response 0x1A6/0x1A7, load latency 0x3F6) can share a
//!   slice only when every MSR is programmed with one value. An event with an alternative
//!   encoding (`alt`: offcore 0xB7/MSR 0x1A6 or 0xBB/MSR 0x1A7) may switch to it;
//!   [`Placement::uses_alt`] says which one was chosen and [`encoding`] gives it.
//!
//! # Does a set of events fit in one slice?
//!
//! 1. Taken-alone: at most one event if any of them is taken-alone.
//! 2. Extra MSRs: each event with an extra MSR picks its primary or alternative encoding. Two
//!    picks conflict when they name the same MSR with different values, so this is 2-SAT (one
//!    boolean per event, a clause per conflicting pair); it is solved exactly by assigning one
//!    event at a time and propagating forced choices (Even-Itai-Shamir), primary first.
//! 3. Counters: a bipartite matching between events and counters (GP counters and fixed
//!    counters are the same kind of node), found with augmenting paths (Kuhn), so events
//!    restricted to, say, counter 2 are placed whenever any placement exists. Each event tries
//!    its fixed counter first, then GP counters in ascending order, and takes a free counter
//!    before displacing another event, so the earliest event wanting a fixed counter keeps it.
//!
//! # Slicing
//!
//! Events that can never be counted on this PMU are reported ([`Unschedulable`]) with the
//! reason, and so are taken-alone events inside a `{}` group with other events and `{}` groups
//! that do not fit in one slice even alone; everything else is scheduled. Each remaining `{}`
//! group (overlapping groups are merged, indices past the event list ignored) and each free
//! event is an item; items are packed into the fewest slices that each fit (fitting is
//! monotone: a subset of a set that fits also fits):
//!
//! - Taken-alone items get a slice each.
//! - The others are sorted most constrained first (fewest usable counters, then larger items,
//!   then input order) and packed first-fit. This gives an upper bound.
//! - A lower bound: for every set `S` of counters that some event is limited to (and for all
//!   counters), the events limited to `S` need `ceil(n / |S|)` slices (this includes
//!   `ceil(#GP-only events / #GP counters)`); events that need the same MSR with different
//!   values and have no alternative need a slice each.
//! - When first-fit is above the lower bound and there are at most
//!   [`EXACT_SEARCH_MAX_ITEMS`] items, a branch-and-bound search (each item into each existing
//!   slice it fits, or a new slice while that can still beat the best) looks for fewer
//!   slices, stopping at the lower bound or after [`SEARCH_BUDGET`] fit checks.
//!
//! [`Assignment::optimal`] is true when the number of slices is proven minimal (first-fit met
//! the lower bound, or the exact search finished). Everything is decided by input order alone
//! (no hashing), so the same input always gives the same assignment. Slices are ordered by
//! their first event, placements within a slice by event index.
//!
//! | file       | job                                                                    |
//! |------------|------------------------------------------------------------------------|
//! | `fit`      | whether a set of events fits in one slice, and its placements          |
//! | `msrs`     | primary or alternative encodings so that no extra MSR needs two values |
//! | `matching` | events onto counters: bipartite matching with augmenting paths         |
//! | `pack`     | items (free events, merged `{}` groups) packed into the fewest slices  |

mod fit;
mod matching;
mod msrs;
mod pack;
#[cfg(test)]
mod tests;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::event::{EventDesc, EventSelect, EventSpec, ExtraMsr};
use crate::pmu::{PmuCaps, PmuKind};

use fit::fit;
use pack::{Item, merge_groups, pack};

/// Up to this many items (free events and `{}` groups, taken-alone ones not counted) the
/// number of slices is searched exactly; above, first-fit decreasing alone decides.
pub const EXACT_SEARCH_MAX_ITEMS: usize = 12;

/// The exact search gives up (keeping the best found, `optimal: false`) after this many fit
/// checks, so that no input can make assignment slow (about 40 ms optimised, 0.6 s in a debug
/// build, for slices of 8 events).
pub const SEARCH_BUDGET: u32 = 20_000;

/// A hardware counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counter {
    /// General-purpose counter n (Intel IA32_PMCn, AMD PERF_CTRn).
    Gp(u8),
    /// Intel fixed counter n (IA32_FIXED_CTRn).
    Fixed(u8),
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Counter::Gp(n) => write!(f, "gp{n}"),
            Counter::Fixed(n) => write!(f, "fixed{n}"),
        }
    }
}

/// One event on one counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Index into the event list given to [`assign`].
    pub event: usize,
    pub counter: Counter,
    /// The event is programmed with its alternative encoding (`EventDesc::alt`); see
    /// [`encoding`].
    pub uses_alt: bool,
}

/// Events counted together, at the same time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slice {
    /// Sorted by event index.
    pub placements: Vec<Placement>,
}

impl Slice {
    /// The placement of `event`, if it is in this slice.
    pub fn placement(&self, event: usize) -> Option<&Placement> {
        self.placements.iter().find(|p| p.event == event)
    }
}

/// An event that cannot be counted, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unschedulable {
    /// Index into the event list given to [`assign`].
    pub event: usize,
    pub reason: String,
}

/// The result of [`assign`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Slices counted one after another; a single slice means no multiplexing.
    pub slices: Vec<Slice>,
    /// Events that are not in any slice, sorted by event index.
    pub unschedulable: Vec<Unschedulable>,
    /// The number of slices is proven minimal.
    pub optimal: bool,
    /// The lower bound the slice count was compared with (see the module documentation).
    pub lower_bound: usize,
}

impl Assignment {
    /// The slice index and placement of `event`, if it was scheduled.
    pub fn placement(&self, event: usize) -> Option<(usize, &Placement)> {
        self.slices
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.placement(event).map(|p| (i, p)))
    }

    /// Whether the events have to be multiplexed (more than one slice).
    pub fn is_multiplexed(&self) -> bool {
        self.slices.len() > 1
    }
}

/// The event select and extra MSR to program for an event placed with `uses_alt`: the
/// alternative code and MSR when `uses_alt` and the event has one, the primary ones otherwise.
pub fn encoding(desc: &EventDesc, uses_alt: bool) -> (EventSelect, Option<ExtraMsr>) {
    match (uses_alt, desc.alt) {
        (true, Some((code, msr))) => (
            EventSelect {
                code,
                ..desc.select
            },
            Some(msr),
        ),
        _ => (desc.select, desc.extra),
    }
}

/// Places `events` on the counters of `caps`, keeping each `{}` group of `groups` (indices
/// into `events`) in one slice, in as few slices as possible. See the module documentation.
///
/// Reasons name a group by its index in `groups` (0-based; merged overlapping groups by the
/// first). Never panics; events not in any slice are in `unschedulable`.
pub fn assign(events: &[EventSpec], groups: &[Vec<usize>], caps: &PmuCaps) -> Assignment {
    assign_with_budget(events, groups, caps, SEARCH_BUDGET)
}

fn assign_with_budget(
    events: &[EventSpec],
    groups: &[Vec<usize>],
    caps: &PmuCaps,
    budget: u32,
) -> Assignment {
    let infos: Vec<Info> = events.iter().map(|spec| Info::new(spec, caps)).collect();
    let mut unschedulable = Vec::new();
    let mut usable = vec![true; events.len()];
    for (i, (spec, info)) in events.iter().zip(&infos).enumerate() {
        if let Some(reason) = never_schedulable(spec, info, caps) {
            unschedulable.push(Unschedulable { event: i, reason });
            usable[i] = false;
        }
    }

    let mut in_group = vec![false; events.len()];
    let mut items = Vec::new();
    for (label, members) in merge_groups(groups, events.len()) {
        for &e in &members {
            in_group[e] = true;
        }
        let mut members: Vec<usize> = members.into_iter().filter(|&e| usable[e]).collect();
        if members.len() > 1 {
            members.retain(|&e| {
                if infos[e].taken_alone {
                    unschedulable.push(Unschedulable {
                        event: e,
                        reason: format!(
                            "taken-alone event in explicit group {label} with other events; it must be counted alone"
                        ),
                    });
                }
                !infos[e].taken_alone
            });
        }
        if members.is_empty() {
            continue;
        }
        match fit(&members, &infos) {
            Ok(_) => items.push(Item::new(members, &infos)),
            Err(misfit) => {
                for e in members {
                    unschedulable.push(Unschedulable {
                        event: e,
                        reason: format!(
                            "explicit group {label} cannot be counted in one slice: {}",
                            misfit.describe(caps)
                        ),
                    });
                }
            }
        }
    }
    for e in 0..events.len() {
        if usable[e] && !in_group[e] {
            items.push(Item::new(vec![e], &infos));
        }
    }

    let packed = pack(&items, &infos, budget);
    let mut slices = Vec::new();
    for events in packed.slices {
        match fit(&events, &infos) {
            Ok(placements) => slices.push(Slice { placements }),
            // Unreachable: every packed slice was checked. Should it happen anyway, report
            // rather than panic or return an invalid slice.
            Err(misfit) => unschedulable.extend(events.into_iter().map(|event| Unschedulable {
                event,
                reason: format!(
                    "internal error: slice does not fit: {}",
                    misfit.describe(caps)
                ),
            })),
        }
    }
    unschedulable.sort_by_key(|u| u.event);
    slices.sort_by_key(|s| s.placements.first().map_or(usize::MAX, |p| p.event));
    Assignment {
        optimal: packed.optimal && slices.len() == packed.count,
        slices,
        unschedulable,
        lower_bound: packed.lower_bound,
    }
}

/// What assignment needs to know about one event.
#[derive(Clone, Copy, Debug)]
struct Info {
    /// Counters it may use on this PMU: bit i < 32 = GP counter i, bit 32 + i = fixed counter i.
    allowed: u64,
    taken_alone: bool,
    /// Its extra MSR, and the alternative encoding's MSR if it has one.
    msr: Option<(ExtraMsr, Option<ExtraMsr>)>,
}

impl Info {
    fn new(spec: &EventSpec, caps: &PmuCaps) -> Info {
        let d = &spec.event;
        let mut allowed = 0u64;
        if caps.kind != PmuKind::TscOnly {
            allowed = u64::from(d.gp_counters.unwrap_or(0) & caps.gp_mask());
            if let Some(i) = d.fixed
                && caps.has_fixed(i)
                && fixed_blocker(spec).is_none()
            {
                // has_fixed() guarantees i < 32.
                allowed |= 1u64 << (32 + u32::from(i));
            }
        }
        Info {
            allowed,
            taken_alone: d.taken_alone,
            msr: d.extra.map(|m| (m, d.alt.map(|(_, alt)| alt))),
        }
    }
}

/// What keeps an event off its fixed counter, if anything.
fn fixed_blocker(spec: &EventSpec) -> Option<&'static str> {
    if !spec.event.select.is_plain() {
        Some("cmask/inv/edge/TSX filters")
    } else if spec.modifiers.host_only || spec.modifiers.guest_only {
        Some("host/guest-only filters")
    } else if spec.event.extra.is_some() {
        Some("an extra MSR")
    } else {
        None
    }
}

/// Why an event can never be counted on this PMU, whatever else is counted.
fn never_schedulable(spec: &EventSpec, info: &Info, caps: &PmuCaps) -> Option<String> {
    if caps.kind == PmuKind::TscOnly {
        return Some(String::from(
            "no programmable counters: this PMU is TSC-only",
        ));
    }
    if caps.gp_counters == 0 && caps.fixed_mask == 0 {
        return Some(String::from("no programmable counters on this PMU"));
    }
    if info.allowed != 0 {
        return None;
    }
    let d = &spec.event;
    let gp = d.gp_counters.unwrap_or(0);
    let gp_part = if gp == 0 {
        String::from("it has no GP encoding")
    } else if caps.gp_counters == 0 {
        String::from("this PMU has no GP counters")
    } else {
        format!(
            "it may only use GP counter(s) {} but this PMU has {} GP counter(s)",
            list_bits(gp),
            caps.gp_counters
        )
    };
    let fixed_part = match d.fixed {
        None => String::from("no fixed counter counts it"),
        Some(i) if !caps.has_fixed(i) => format!("this PMU has no fixed counter {i}"),
        Some(i) => format!(
            "fixed counter {i} cannot apply {}",
            fixed_blocker(spec).unwrap_or("its settings")
        ),
    };
    Some(format!("{gp_part}, and {fixed_part}"))
}

fn list_bits(mask: u32) -> String {
    let bits: Vec<String> = (0..32)
        .filter(|b| mask & (1 << b) != 0)
        .map(|b| format!("{b}"))
        .collect();
    bits.join(", ")
}

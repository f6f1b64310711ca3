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

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::event::{EventDesc, EventSelect, EventSpec, ExtraMsr};
use crate::pmu::{PmuCaps, PmuKind};

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

/// Why a set of events does not fit in one slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Misfit {
    TakenAlone,
    /// Some MSR would need two values (its address).
    Msr(u32),
    Counters,
}

impl Misfit {
    fn describe(self, caps: &PmuCaps) -> String {
        match self {
            Misfit::TakenAlone => String::from("it holds a taken-alone event"),
            Misfit::Msr(msr) => {
                format!("its events need MSR {msr:#x} programmed with different values at once")
            }
            Misfit::Counters => format!(
                "its events need more counters, or other counters, than this PMU has ({} GP, fixed mask {:#x})",
                caps.gp_counters, caps.fixed_mask
            ),
        }
    }
}

/// Places the events of `set` (sorted, distinct) together, or says why they do not fit.
fn fit(set: &[usize], infos: &[Info]) -> Result<Vec<Placement>, Misfit> {
    if set.len() > 1 && set.iter().any(|&e| infos[e].taken_alone) {
        return Err(Misfit::TakenAlone);
    }
    let with_msr: Vec<(usize, (ExtraMsr, Option<ExtraMsr>))> = set
        .iter()
        .filter_map(|&e| infos[e].msr.map(|m| (e, m)))
        .collect();
    let options: Vec<(ExtraMsr, Option<ExtraMsr>)> = with_msr.iter().map(|&(_, m)| m).collect();
    let alt = choose_msrs(&options).map_err(Misfit::Msr)?;
    let allowed: Vec<u64> = set.iter().map(|&e| infos[e].allowed).collect();
    let counters = match_counters(&allowed).ok_or(Misfit::Counters)?;
    Ok(set
        .iter()
        .zip(counters)
        .map(|(&event, bit)| Placement {
            event,
            counter: counter_of_bit(bit),
            uses_alt: with_msr
                .iter()
                .zip(&alt)
                .any(|(&(e, _), &uses_alt)| e == event && uses_alt),
        })
        .collect())
}

fn counter_of_bit(bit: u32) -> Counter {
    if bit >= 32 {
        Counter::Fixed((bit - 32) as u8)
    } else {
        Counter::Gp(bit as u8)
    }
}

/// The MSR of option `choice` (0 primary, 1 alternative) of an event.
fn msr_option(o: &(ExtraMsr, Option<ExtraMsr>), choice: usize) -> Option<ExtraMsr> {
    if choice == 0 { Some(o.0) } else { o.1 }
}

fn msrs_conflict(a: ExtraMsr, b: ExtraMsr) -> bool {
    a.msr == b.msr && a.value != b.value
}

/// Picks primary or alternative for each event so that no MSR needs two values: `Ok(uses_alt)`
/// per event, or `Err(msr)` naming an MSR that cannot be settled. Exact 2-SAT (see the module
/// documentation), preferring primary encodings in input order.
fn choose_msrs(options: &[(ExtraMsr, Option<ExtraMsr>)]) -> Result<Vec<bool>, u32> {
    let mut chosen: Vec<Option<usize>> = vec![None; options.len()];
    // Events without an alternative have no choice: settle them first.
    for v in 0..options.len() {
        if chosen[v].is_none() && options[v].1.is_none() && !propagate(options, v, 0, &mut chosen) {
            return Err(options[v].0.msr);
        }
    }
    for v in 0..options.len() {
        if chosen[v].is_some() {
            continue;
        }
        let mut settled = false;
        for choice in 0..2 {
            let mut trial = chosen.clone();
            if propagate(options, v, choice, &mut trial) {
                chosen = trial;
                settled = true;
                break;
            }
        }
        if !settled {
            return Err(options[v].0.msr);
        }
    }
    Ok(chosen.iter().map(|c| *c == Some(1)).collect())
}

/// Sets event `v` to `choice` and forces every choice that follows; false on a conflict.
/// Invariant kept: every unassigned event can still take either encoding.
fn propagate(
    options: &[(ExtraMsr, Option<ExtraMsr>)],
    v: usize,
    choice: usize,
    chosen: &mut [Option<usize>],
) -> bool {
    chosen[v] = Some(choice);
    let mut stack = vec![v];
    while let Some(u) = stack.pop() {
        let Some(mu) = chosen[u].and_then(|c| msr_option(&options[u], c)) else {
            return false;
        };
        for w in 0..options.len() {
            if w == u {
                continue;
            }
            match chosen[w] {
                Some(c) => {
                    if msr_option(&options[w], c).is_none_or(|mw| msrs_conflict(mu, mw)) {
                        return false;
                    }
                }
                None => {
                    let ok: Vec<usize> = (0..2)
                        .filter(|&c| {
                            msr_option(&options[w], c).is_some_and(|mw| !msrs_conflict(mu, mw))
                        })
                        .collect();
                    match ok.as_slice() {
                        [] => return false,
                        [only] => {
                            chosen[w] = Some(*only);
                            stack.push(w);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    true
}

/// Counter bits in the order an event tries them: fixed counters first, then GP counters.
fn candidates(allowed: u64) -> impl Iterator<Item = u32> {
    (32..64)
        .chain(0..32)
        .filter(move |&b| allowed & (1u64 << b) != 0)
}

/// A counter bit for each event (indices as in `allowed`) with no counter used twice, or
/// `None` when no such matching exists. Kuhn's augmenting paths.
fn match_counters(allowed: &[u64]) -> Option<Vec<u32>> {
    let mut owner: [Option<usize>; 64] = [None; 64];
    for e in 0..allowed.len() {
        let mut visited = [false; 64];
        if !augment(e, allowed, &mut owner, &mut visited) {
            return None;
        }
    }
    let mut bits = vec![0u32; allowed.len()];
    for (bit, o) in owner.iter().enumerate() {
        if let Some(e) = *o {
            bits[e] = bit as u32;
        }
    }
    Some(bits)
}

fn augment(
    e: usize,
    allowed: &[u64],
    owner: &mut [Option<usize>; 64],
    visited: &mut [bool; 64],
) -> bool {
    // A free counter first, so events keep the counters they got (the first event wanting a
    // fixed counter keeps it).
    if let Some(b) = candidates(allowed[e]).find(|&b| owner[b as usize].is_none()) {
        owner[b as usize] = Some(e);
        return true;
    }
    for b in candidates(allowed[e]) {
        let b = b as usize;
        if visited[b] {
            continue;
        }
        visited[b] = true;
        if let Some(other) = owner[b]
            && augment(other, allowed, owner, visited)
        {
            owner[b] = Some(e);
            return true;
        }
    }
    false
}

/// A free event or a `{}` group: events that go into the same slice.
#[derive(Clone, Debug)]
struct Item {
    /// Sorted, non-empty.
    events: Vec<usize>,
    taken_alone: bool,
    /// The fewest counters any of its events may use.
    scarcity: u32,
}

impl Item {
    fn new(events: Vec<usize>, infos: &[Info]) -> Item {
        Item {
            taken_alone: events.iter().any(|&e| infos[e].taken_alone),
            scarcity: events
                .iter()
                .map(|&e| infos[e].allowed.count_ones())
                .min()
                .unwrap_or(0),
            events,
        }
    }

    fn first(&self) -> usize {
        self.events.first().copied().unwrap_or(usize::MAX)
    }
}

/// Merges overlapping groups (union-find); returns `(label, members)` with label the first
/// group naming any member, members sorted, sorted by label. Out-of-range indices are ignored.
fn merge_groups(groups: &[Vec<usize>], n: usize) -> Vec<(usize, Vec<usize>)> {
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut parent: Vec<usize> = (0..n).collect();
    let mut label: Vec<Option<usize>> = vec![None; n];
    for (g, members) in groups.iter().enumerate() {
        let mut first = None;
        for &e in members.iter().filter(|&&e| e < n) {
            label[e].get_or_insert(g);
            match first {
                None => first = Some(e),
                Some(f) => {
                    let (a, b) = (find(&mut parent, f), find(&mut parent, e));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
    }
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut slot: Vec<Option<usize>> = vec![None; n];
    for (e, l) in label.iter().enumerate() {
        let Some(l) = *l else { continue };
        let root = find(&mut parent, e);
        match slot[root] {
            Some(k) => {
                out[k].0 = out[k].0.min(l);
                out[k].1.push(e);
            }
            None => {
                slot[root] = Some(out.len());
                out.push((l, vec![e]));
            }
        }
    }
    out.sort_by_key(|(l, _)| *l);
    out
}

struct Packed {
    /// Event sets, each sorted.
    slices: Vec<Vec<usize>>,
    count: usize,
    optimal: bool,
    lower_bound: usize,
}

fn pack(items: &[Item], infos: &[Info], budget: u32) -> Packed {
    let mut slices: Vec<Vec<usize>> = items
        .iter()
        .filter(|it| it.taken_alone)
        .map(|it| it.events.clone())
        .collect();
    let alone = slices.len();
    let mut rest: Vec<&Item> = items.iter().filter(|it| !it.taken_alone).collect();
    rest.sort_by(|a, b| {
        a.scarcity
            .cmp(&b.scarcity)
            .then(b.events.len().cmp(&a.events.len()))
            .then(a.first().cmp(&b.first()))
    });
    let lb = lower_bound(&rest, infos);

    let mut best = first_fit(&rest, infos);
    let mut optimal = best.len() <= lb;
    if !optimal && rest.len() <= EXACT_SEARCH_MAX_ITEMS {
        let mut search = Search {
            items: &rest,
            infos,
            lower_bound: lb,
            best,
            budget,
            exhausted: false,
        };
        search.dfs(0, &mut Vec::new());
        optimal = !search.exhausted;
        best = search.best;
    }
    slices.extend(best);
    Packed {
        count: slices.len(),
        slices,
        optimal,
        lower_bound: alone + lb,
    }
}

/// Merges two sorted, disjoint event lists.
fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    out.extend_from_slice(a);
    out.extend_from_slice(b);
    out.sort_unstable();
    out
}

fn first_fit(items: &[&Item], infos: &[Info]) -> Vec<Vec<usize>> {
    let mut slices: Vec<Vec<usize>> = Vec::new();
    for item in items {
        let placed = slices.iter_mut().any(|slice| {
            let merged = union(slice, &item.events);
            let fits = fit(&merged, infos).is_ok();
            if fits {
                *slice = merged;
            }
            fits
        });
        if !placed {
            slices.push(item.events.clone());
        }
    }
    slices
}

/// A lower bound on the number of slices for `items` (none taken-alone).
fn lower_bound(items: &[&Item], infos: &[Info]) -> usize {
    let events: Vec<usize> = items
        .iter()
        .flat_map(|it| it.events.iter().copied())
        .collect();
    if events.is_empty() {
        return 0;
    }
    let mut bound = 1;
    // Events limited to a counter set S need ceil(n / |S|) slices.
    let mut sets: Vec<u64> = events.iter().map(|&e| infos[e].allowed).collect();
    sets.push(sets.iter().fold(0, |acc, s| acc | s));
    sets.sort_unstable();
    sets.dedup();
    for s in sets {
        let size = s.count_ones() as usize;
        if size == 0 {
            continue;
        }
        let n = events
            .iter()
            .filter(|&&e| infos[e].allowed & !s == 0)
            .count();
        bound = bound.max(n.div_ceil(size));
    }
    // Events without an alternative that need one MSR with different values.
    let mut fixed_msrs: Vec<(u32, u64)> = events
        .iter()
        .filter_map(|&e| match infos[e].msr {
            Some((m, None)) => Some((m.msr, m.value)),
            _ => None,
        })
        .collect();
    fixed_msrs.sort_unstable();
    fixed_msrs.dedup();
    for chunk in fixed_msrs.chunk_by(|a, b| a.0 == b.0) {
        bound = bound.max(chunk.len());
    }
    bound
}

/// Branch and bound over the ways to pack items into slices.
struct Search<'a> {
    items: &'a [&'a Item],
    infos: &'a [Info],
    lower_bound: usize,
    /// The best packing found (starts as first-fit's).
    best: Vec<Vec<usize>>,
    budget: u32,
    exhausted: bool,
}

impl Search<'_> {
    fn dfs(&mut self, i: usize, slices: &mut Vec<Vec<usize>>) {
        // Slices never go away, so a partial packing with as many slices as the best cannot
        // beat it.
        if self.exhausted || self.best.len() <= self.lower_bound || slices.len() >= self.best.len()
        {
            return;
        }
        let Some(item) = self.items.get(i) else {
            self.best = slices.clone();
            return;
        };
        for j in 0..slices.len() {
            if self.budget == 0 {
                self.exhausted = true;
                return;
            }
            self.budget -= 1;
            let merged = union(&slices[j], &item.events);
            if fit(&merged, self.infos).is_ok() {
                let old = core::mem::replace(&mut slices[j], merged);
                self.dfs(i + 1, slices);
                slices[j] = old;
                if self.exhausted || self.best.len() <= self.lower_bound {
                    return;
                }
            }
        }
        if slices.len() + 1 < self.best.len() {
            slices.push(item.events.clone());
            self.dfs(i + 1, slices);
            slices.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuModel;
    use crate::event::{EventDesc, EventSelect, Modifiers, Source};
    use proptest::prelude::*;

    fn skylake() -> PmuCaps {
        PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-55").unwrap())
    }

    fn spec(event: EventDesc) -> EventSpec {
        EventSpec {
            event,
            modifiers: Modifiers::default(),
        }
    }

    fn gp(name: &str, code: u16, umask: u8) -> EventSpec {
        spec(EventDesc::gp(
            name,
            EventSelect::new(code, umask),
            Source::Raw,
        ))
    }

    fn instructions() -> EventSpec {
        spec(EventDesc::gp("instructions", EventSelect::new(0xc0, 0), Source::Raw).with_fixed(0))
    }

    fn cycles() -> EventSpec {
        spec(EventDesc::gp("cycles", EventSelect::new(0x3c, 0), Source::Raw).with_fixed(1))
    }

    fn restricted(name: &str, mask: u32) -> EventSpec {
        let mut e = gp(name, 0x48, 1);
        e.event.gp_counters = Some(mask);
        e
    }

    fn offcore(name: &str, value: u64) -> EventSpec {
        let mut e = gp(name, 0xb7, 1);
        e.event.extra = Some(ExtraMsr { msr: 0x1a6, value });
        e.event.alt = Some((0xbb, ExtraMsr { msr: 0x1a7, value }));
        e
    }

    fn load_latency(name: &str, value: u64) -> EventSpec {
        let mut e = gp(name, 0xcd, 1);
        e.event.extra = Some(ExtraMsr { msr: 0x3f6, value });
        e
    }

    fn many(n: usize) -> Vec<EventSpec> {
        (0..n).map(|i| gp("e", 0x10 + i as u16, 1)).collect()
    }

    /// Checks every promise of [`assign`] that does not depend on optimality.
    fn check_valid(events: &[EventSpec], groups: &[Vec<usize>], caps: &PmuCaps, a: &Assignment) {
        let mut seen = vec![0usize; events.len()];
        for slice in &a.slices {
            assert!(!slice.placements.is_empty(), "empty slice");
            let mut used: Vec<Counter> = Vec::new();
            let mut msrs: Vec<ExtraMsr> = Vec::new();
            for p in &slice.placements {
                assert!(p.event < events.len());
                seen[p.event] += 1;
                assert!(!used.contains(&p.counter), "counter used twice: {a:?}");
                used.push(p.counter);
                let e = &events[p.event];
                match p.counter {
                    Counter::Gp(c) => {
                        assert!(c < caps.gp_counters && c < 32);
                        assert!(e.event.gp_counters.unwrap_or(0) & (1 << c) != 0);
                    }
                    Counter::Fixed(i) => {
                        assert_eq!(e.event.fixed, Some(i));
                        assert!(caps.has_fixed(i));
                        assert!(e.event.select.is_plain());
                        assert!(e.event.extra.is_none());
                    }
                }
                assert!(!p.uses_alt || e.event.alt.is_some());
                if let (_, Some(m)) = encoding(&e.event, p.uses_alt) {
                    for other in &msrs {
                        assert!(!msrs_conflict(m, *other), "MSR conflict in {slice:?}");
                    }
                    msrs.push(m);
                }
                if e.event.taken_alone {
                    assert_eq!(
                        slice.placements.len(),
                        1,
                        "taken-alone event shares a slice"
                    );
                }
            }
            assert!(slice.placements.windows(2).all(|w| w[0].event < w[1].event));
        }
        for u in &a.unschedulable {
            assert!(u.event < events.len());
            assert!(!u.reason.is_empty());
            seen[u.event] += 1;
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "placed or reported once: {seen:?} {a:?}"
        );
        for g in groups {
            let placed: Vec<usize> = g
                .iter()
                .filter_map(|&e| a.placement(e).map(|(s, _)| s))
                .collect();
            assert!(
                placed.windows(2).all(|w| w[0] == w[1]),
                "group split: {a:?}"
            );
        }
        // Independent lower bounds: GP-only events over GP counters, taken-alone events.
        let fixed_ok = |e: &EventSpec| {
            e.event.fixed.is_some_and(|i| caps.has_fixed(i))
                && e.event.select.is_plain()
                && e.event.extra.is_none()
        };
        let placed: Vec<&EventSpec> = (0..events.len())
            .filter(|&e| a.placement(e).is_some())
            .map(|e| &events[e])
            .collect();
        let gp_only = placed.iter().filter(|e| !fixed_ok(e)).count();
        if caps.gp_counters > 0 {
            assert!(a.slices.len() >= gp_only.div_ceil(usize::from(caps.gp_counters)));
        }
        assert!(a.slices.len() >= placed.iter().filter(|e| e.event.taken_alone).count());
        assert!(a.slices.len() >= a.lower_bound);
    }

    fn run(events: &[EventSpec], groups: &[Vec<usize>], caps: &PmuCaps) -> Assignment {
        let a = assign(events, groups, caps);
        check_valid(events, groups, caps, &a);
        assert_eq!(a, assign(events, groups, caps), "not deterministic");
        a
    }

    #[test]
    fn everything_fits_skylake() {
        let caps = skylake();
        assert_eq!((caps.gp_counters, caps.fixed_mask), (4, 0b111));
        let events = vec![
            instructions(),
            cycles(),
            gp("branches", 0xc4, 0),
            gp("branch-misses", 0xc5, 0),
            gp("cache-references", 0x2e, 0x4f),
            gp("cache-misses", 0x2e, 0x41),
        ];
        let a = run(&events, &[], &caps);
        assert_eq!(a.slices.len(), 1);
        assert!(a.optimal && a.unschedulable.is_empty() && !a.is_multiplexed());
        let p = &a.slices[0].placements;
        assert_eq!(p[0].counter, Counter::Fixed(0));
        assert_eq!(p[1].counter, Counter::Fixed(1));
        let mut gps: Vec<Counter> = p[2..].iter().map(|p| p.counter).collect();
        gps.sort();
        assert_eq!(
            gps,
            [
                Counter::Gp(0),
                Counter::Gp(1),
                Counter::Gp(2),
                Counter::Gp(3)
            ]
        );
    }

    #[test]
    fn more_events_than_counters_takes_the_fewest_slices() {
        let caps = skylake();
        let a = run(&many(10), &[], &caps);
        assert_eq!((a.slices.len(), a.lower_bound, a.optimal), (3, 3, true));

        // Fixed counters take instructions and cycles, so 8 GP events still need only 2.
        let mut events = many(8);
        events.push(instructions());
        events.push(cycles());
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.optimal), (2, true));
        assert!(a.is_multiplexed());
    }

    #[test]
    fn counter_2_only_events() {
        let caps = skylake();
        // Unrestricted events first: a greedy pass would give one of them counter 2.
        let mut events = many(3);
        events.push(restricted("c2", 0b100));
        let a = run(&events, &[], &caps);
        assert_eq!(a.slices.len(), 1);
        assert_eq!(a.slices[0].placements[3].counter, Counter::Gp(2));

        // Two counter-2-only events cannot share a slice; the lower bound knows.
        events.push(restricted("c2 again", 0b100));
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.lower_bound, a.optimal), (2, 2, true));

        // Counters 0-1 only, three of them, plus two free: 2 slices.
        let events = vec![
            gp("a", 1, 1),
            restricted("x", 0b11),
            restricted("y", 0b11),
            gp("b", 2, 1),
            restricted("z", 0b11),
        ];
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.optimal), (2, true));
    }

    #[test]
    fn fixed_capable_event_with_cmask_goes_to_gp() {
        let caps = skylake();
        let mut inst = instructions();
        inst.event.select.cmask = 1;
        let a = run(&[inst, instructions()], &[], &caps);
        assert_eq!(a.slices.len(), 1);
        assert!(matches!(a.slices[0].placements[0].counter, Counter::Gp(_)));
        assert_eq!(a.slices[0].placements[1].counter, Counter::Fixed(0));

        // Two plain instructions events: the first keeps fixed 0, the second goes to GP.
        let a = run(&[instructions(), instructions()], &[], &caps);
        assert_eq!(a.slices[0].placements[0].counter, Counter::Fixed(0));
        assert!(matches!(a.slices[0].placements[1].counter, Counter::Gp(_)));

        // A fixed-only event (no GP encoding) with an edge filter cannot be counted at all.
        let mut ref_cycles = spec(EventDesc {
            gp_counters: None,
            ..EventDesc::gp("ref-cycles", EventSelect::new(0, 3), Source::Raw).with_fixed(2)
        });
        ref_cycles.event.select.edge = true;
        let a = run(&[ref_cycles], &[], &caps);
        assert_eq!(a.unschedulable.len(), 1);
        assert!(a.unschedulable[0].reason.contains("cmask/inv/edge/TSX"));
    }

    #[test]
    fn taken_alone_events_get_their_own_slice() {
        let caps = skylake();
        let mut alone = gp("alone", 0xc0, 1);
        alone.event.taken_alone = true;
        let events = vec![gp("a", 1, 1), alone.clone(), gp("b", 2, 1)];
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.optimal), (2, true));
        let (slice, _) = a.placement(1).unwrap();
        assert_eq!(a.slices[slice].placements.len(), 1);

        // Inside an explicit group with other events: reported, the rest still scheduled.
        let a = run(&events, &[vec![0, 1, 2]], &caps);
        assert_eq!(a.unschedulable.len(), 1);
        assert_eq!(a.unschedulable[0].event, 1);
        assert!(a.unschedulable[0].reason.contains("taken-alone"));
        assert_eq!(a.slices.len(), 1);
        assert_eq!(a.slices[0].placements.len(), 2);

        // Alone in its own group is fine.
        let a = run(&events, &[vec![1]], &caps);
        assert!(a.unschedulable.is_empty());
    }

    #[test]
    fn offcore_conflict_resolved_with_the_alternative() {
        let caps = skylake();
        let events = vec![
            offcore("dram", 0x4000_0001),
            offcore("llc-hit", 0x0004_0001),
        ];
        let a = run(&events, &[], &caps);
        assert_eq!(a.slices.len(), 1);
        let p = &a.slices[0].placements;
        assert!(!p[0].uses_alt && p[1].uses_alt, "{p:?}");
        let (sel, msr) = encoding(&events[1].event, true);
        assert_eq!((sel.code, sel.umask), (0xbb, 1));
        assert_eq!(
            msr,
            Some(ExtraMsr {
                msr: 0x1a7,
                value: 0x0004_0001
            })
        );
        assert_eq!(
            encoding(&events[0].event, false),
            (events[0].event.select, events[0].event.extra)
        );

        // The same value twice needs no alternative.
        let a = run(&[offcore("x", 5), offcore("y", 5)], &[], &caps);
        assert!(a.slices[0].placements.iter().all(|p| !p.uses_alt));

        // Three values for two MSRs: two slices; together in a group: reported.
        let events = vec![offcore("a", 1), offcore("b", 2), offcore("c", 3)];
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.optimal), (2, true));
        let a = run(&events, &[vec![0, 1, 2]], &caps);
        assert_eq!(a.unschedulable.len(), 3);
        assert!(a.unschedulable[0].reason.contains("MSR"), "{a:?}");

        // An event without an alternative forces the others around it.
        let mut fixed_primary = offcore("p", 7);
        fixed_primary.event.alt = None;
        let events = vec![offcore("q", 8), fixed_primary];
        let a = run(&events, &[], &caps);
        assert_eq!(a.slices.len(), 1);
        assert!(a.slices[0].placements[0].uses_alt);

        // Load latency has no alternative: different thresholds never share a slice.
        let events = vec![
            load_latency("ll3", 3),
            load_latency("ll128", 128),
            gp("x", 1, 1),
        ];
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.lower_bound, a.optimal), (2, 2, true));
    }

    #[test]
    fn explicit_groups_stay_together() {
        let caps = skylake();
        let events = many(9);
        let groups = vec![vec![1, 5, 7], vec![2, 8]];
        let a = run(&events, &groups, &caps);
        assert_eq!((a.slices.len(), a.optimal), (3, true));
        let slice_of = |e| a.placement(e).unwrap().0;
        assert_eq!(slice_of(1), slice_of(5));
        assert_eq!(slice_of(5), slice_of(7));
        assert_eq!(slice_of(2), slice_of(8));

        // Overlapping groups merge; indices past the list are ignored.
        let a = run(&events, &[vec![0, 1], vec![1, 2, 99], vec![]], &caps);
        let s = a.placement(0).unwrap().0;
        assert!(a.slices[s].placement(1).is_some() && a.slices[s].placement(2).is_some());
    }

    #[test]
    fn group_too_large_is_reported() {
        let caps = skylake();
        let events = many(7);
        let a = run(&events, &[vec![0, 1, 2, 3, 4]], &caps);
        let reported: Vec<usize> = a.unschedulable.iter().map(|u| u.event).collect();
        assert_eq!(reported, [0, 1, 2, 3, 4]);
        assert!(a.unschedulable[0].reason.contains("explicit group 0"));
        assert_eq!(a.slices.len(), 1);
        assert_eq!(a.slices[0].placements.len(), 2);
    }

    #[test]
    fn tsc_only_schedules_nothing() {
        let caps = PmuCaps::tsc_only(crate::cpu::Vendor::Intel, None);
        let events = vec![instructions(), cycles(), gp("x", 1, 1)];
        let a = run(&events, &[vec![0, 1]], &caps);
        assert!(a.slices.is_empty());
        assert_eq!(a.unschedulable.len(), 3);
        assert!(
            a.unschedulable
                .iter()
                .all(|u| u.reason.contains("no programmable counters"))
        );
        assert_eq!((a.lower_bound, a.optimal), (0, true));
    }

    #[test]
    fn amd_six_gp_counters_no_fixed() {
        let caps = PmuCaps::nominal(CpuModel::parse("AuthenticAMD-25-21").unwrap());
        assert_eq!((caps.gp_counters, caps.fixed_mask), (6, 0));
        let mut events = many(5);
        events.push(instructions());
        let a = run(&events, &[], &caps);
        assert_eq!(a.slices.len(), 1);
        assert!(
            a.slices[0]
                .placements
                .iter()
                .all(|p| matches!(p.counter, Counter::Gp(_)))
        );
        events.push(cycles());
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.optimal), (2, true));
    }

    #[test]
    fn never_schedulable_reasons() {
        // Intel v2 with 2 GP counters and fixed counters 0-1.
        let caps = PmuCaps::from_intel_cpuid([0x0730_0202, 0, 0, 0x0000_0602], false, None);
        let ref_cycles = spec(EventDesc {
            gp_counters: None,
            ..EventDesc::gp("ref-cycles", EventSelect::new(0, 3), Source::Raw).with_fixed(2)
        });
        let no_counter = spec(EventDesc {
            gp_counters: None,
            ..EventDesc::gp("nothing", EventSelect::new(0, 9), Source::Raw)
        });
        let events = vec![
            restricted("c2", 0b100),
            ref_cycles,
            no_counter,
            gp("fine", 1, 1),
        ];
        let a = run(&events, &[], &caps);
        let reasons: Vec<&str> = a.unschedulable.iter().map(|u| u.reason.as_str()).collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[0].contains("GP counter(s) 2") && reasons[0].contains("2 GP counter(s)"));
        assert!(reasons[1].contains("no fixed counter 2"));
        assert!(reasons[2].contains("no GP encoding") && reasons[2].contains("no fixed counter"));
        assert_eq!(a.slices.len(), 1);
        assert_eq!(a.slices[0].placements[0].event, 3);

        // Host-only on a fixed-capable event: GP instead.
        let mut inst = instructions();
        inst.modifiers.host_only = true;
        let a = run(&[inst], &[], &skylake());
        assert!(matches!(a.slices[0].placements[0].counter, Counter::Gp(_)));
    }

    #[test]
    fn exact_search_beats_first_fit() {
        // AMD, 4 GP counters. First fit (most constrained first) fills slice 0 with the
        // counter-2 and counter-3 events and two free ones, then the two load-latency events
        // (different thresholds, no alternative) need a slice each: 3. Best: 2 slices, each
        // with one load-latency event.
        let caps = PmuCaps::amd(false, None, None);
        let events = vec![
            restricted("c2", 0b100),
            gp("a", 1, 1),
            gp("b", 2, 1),
            restricted("c3", 0b1000),
            load_latency("ll101", 101),
            load_latency("ll102", 102),
        ];
        let infos: Vec<Info> = events.iter().map(|s| Info::new(s, &caps)).collect();
        let items: Vec<Item> = (0..events.len())
            .map(|e| Item::new(vec![e], &infos))
            .collect();
        let mut sorted: Vec<&Item> = items.iter().collect();
        sorted.sort_by_key(|it| it.scarcity);
        assert_eq!(first_fit(&sorted, &infos).len(), 3);
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.lower_bound, a.optimal), (2, 2, true));
    }

    #[test]
    fn many_items_use_first_fit() {
        let caps = skylake();
        let mut events = many(30);
        events.push(restricted("c2", 0b100));
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.lower_bound, a.optimal), (8, 8, true));
        let events: Vec<EventSpec> = (0..20).map(|i| restricted("r", 1 << (i % 3))).collect();
        let a = run(&events, &[], &caps);
        assert_eq!(a.slices.len(), 7);
    }

    #[test]
    fn exact_search_proves_more_than_the_lower_bound() {
        // Twelve offcore events with distinct values: two per slice (two MSRs), so 6 slices;
        // the lower bound only sees counters (3), the search proves 5 impossible.
        let caps = skylake();
        let events: Vec<EventSpec> = (0..12).map(|v| offcore("o", v)).collect();
        let a = run(&events, &[], &caps);
        assert_eq!((a.slices.len(), a.lower_bound, a.optimal), (6, 3, true));
        assert!(a.slices.iter().all(|s| s.placements.len() == 2));
    }

    #[test]
    fn exhausted_search_keeps_a_valid_answer() {
        let caps = skylake();
        let events: Vec<EventSpec> = (0..12).map(|v| offcore("o", v)).collect();
        let a = assign_with_budget(&events, &[], &caps, 10);
        check_valid(&events, &[], &caps, &a);
        assert_eq!((a.slices.len(), a.optimal), (6, false));
    }

    #[test]
    fn empty_input() {
        let a = run(&[], &[vec![0, 1]], &skylake());
        assert!(a.slices.is_empty() && a.unschedulable.is_empty() && a.optimal);
    }

    // ---- property tests -------------------------------------------------------------------

    fn caps_strategy() -> impl Strategy<Value = PmuCaps> {
        prop_oneof![
            Just(skylake()),
            Just(PmuCaps::nominal(
                CpuModel::parse("GenuineIntel-6-8F").unwrap()
            )),
            Just(PmuCaps::amd(false, None, None)),
            Just(PmuCaps::amd(true, None, None)),
            Just(PmuCaps::from_intel_cpuid(
                [0x0730_0202, 0, 0, 0x0000_0602],
                false,
                None
            )),
            Just(PmuCaps::from_intel_cpuid(
                [0x0730_0201, 0, 0, 0],
                false,
                None
            )),
            Just(PmuCaps::tsc_only(crate::cpu::Vendor::Intel, None)),
        ]
    }

    fn event_strategy() -> impl Strategy<Value = EventSpec> {
        (
            prop_oneof![
                4 => Just(Some(u32::MAX)),
                1 => Just(None),
                1 => Just(Some(0b100)),
                1 => Just(Some(0b11)),
                1 => Just(Some(0b1111_0000)),
                1 => Just(Some(0b1000)),
            ],
            prop_oneof![3 => Just(None), 1 => (0u8..5).prop_map(Some)],
            prop_oneof![4 => Just(0u8), 1 => Just(1u8)],
            prop::bool::weighted(0.08),
            prop_oneof![
                4 => Just(None),
                1 => (1u64..4, any::<bool>()).prop_map(Some),
                1 => (1u64..3).prop_map(|v| Some((v + 100, false))),
            ],
            0u16..4,
        )
            .prop_map(|(gp_counters, fixed, cmask, taken_alone, extra, code)| {
                let mut e = gp("p", 0x10 + code, 1);
                e.event.gp_counters = gp_counters;
                e.event.fixed = fixed;
                e.event.select.cmask = cmask;
                e.event.taken_alone = taken_alone;
                match extra {
                    Some((v, true)) => {
                        e.event.extra = Some(ExtraMsr {
                            msr: 0x1a6,
                            value: v,
                        });
                        e.event.alt = Some((
                            0xbb,
                            ExtraMsr {
                                msr: 0x1a7,
                                value: v,
                            },
                        ));
                    }
                    Some((v, false)) if v > 100 => {
                        e.event.extra = Some(ExtraMsr {
                            msr: 0x3f6,
                            value: v,
                        });
                    }
                    Some((v, false)) => {
                        e.event.extra = Some(ExtraMsr {
                            msr: 0x1a6,
                            value: v,
                        });
                    }
                    None => {}
                }
                e
            })
    }

    /// Brute force: can `set` share a slice? Every counter choice and every encoding choice.
    fn brute_fits(set: &[usize], events: &[EventSpec], caps: &PmuCaps) -> bool {
        if set.len() > 1 && set.iter().any(|&e| events[e].event.taken_alone) {
            return false;
        }
        let options = |e: &EventSpec| -> Vec<Counter> {
            let d = &e.event;
            let mut v = Vec::new();
            if caps.kind == PmuKind::TscOnly {
                return v;
            }
            if let Some(i) = d.fixed
                && caps.has_fixed(i)
                && d.select.is_plain()
                && d.extra.is_none()
            {
                v.push(Counter::Fixed(i));
            }
            for c in 0..caps.gp_counters.min(32) {
                if d.gp_counters.unwrap_or(0) & (1 << c) != 0 {
                    v.push(Counter::Gp(c));
                }
            }
            v
        };
        fn counters(
            k: usize,
            set: &[usize],
            opts: &[Vec<Counter>],
            used: &mut Vec<Counter>,
        ) -> bool {
            if k == set.len() {
                return true;
            }
            for &c in &opts[k] {
                if !used.contains(&c) {
                    used.push(c);
                    if counters(k + 1, set, opts, used) {
                        return true;
                    }
                    used.pop();
                }
            }
            false
        }
        let opts: Vec<Vec<Counter>> = set.iter().map(|&e| options(&events[e])).collect();
        if !counters(0, set, &opts, &mut Vec::new()) {
            return false;
        }
        let with_msr: Vec<&EventDesc> = set
            .iter()
            .map(|&e| &events[e].event)
            .filter(|d| d.extra.is_some())
            .collect();
        (0u32..1 << with_msr.len()).any(|choice| {
            let msrs: Vec<ExtraMsr> = with_msr
                .iter()
                .enumerate()
                .map(|(k, d)| {
                    encoding(d, choice & (1 << k) != 0 && d.alt.is_some())
                        .1
                        .unwrap()
                })
                .collect();
            msrs.iter()
                .all(|a| msrs.iter().all(|b| !msrs_conflict(*a, *b)))
        })
    }

    /// Brute force: the fewest slices for the events that fit alone (no groups).
    fn brute_min_slices(events: &[EventSpec], caps: &PmuCaps) -> usize {
        let universe: Vec<usize> = (0..events.len())
            .filter(|&e| brute_fits(&[e], events, caps))
            .collect();
        let n = universe.len();
        let full = (1usize << n) - 1;
        let fits: Vec<bool> = (0..=full)
            .map(|m| {
                let set: Vec<usize> = (0..n)
                    .filter(|b| m & (1 << b) != 0)
                    .map(|b| universe[b])
                    .collect();
                brute_fits(&set, events, caps)
            })
            .collect();
        let mut best = vec![usize::MAX; full + 1];
        best[0] = 0;
        for m in 1..=full {
            let low = m.isolate_lowest_one();
            let mut sub = m;
            while sub != 0 {
                if sub & low != 0 && fits[sub] && best[m ^ sub] != usize::MAX {
                    best[m] = best[m].min(best[m ^ sub] + 1);
                }
                sub = (sub - 1) & m;
            }
        }
        best[full]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn random_event_sets_get_valid_assignments(
            events in prop::collection::vec(event_strategy(), 0..24),
            raw_groups in prop::collection::vec(prop::collection::vec(0usize..26, 0..5), 0..4),
            caps in caps_strategy(),
        ) {
            let a = run(&events, &raw_groups, &caps);
            if caps.kind == PmuKind::TscOnly {
                prop_assert!(a.slices.is_empty());
            }
        }

        #[test]
        fn small_inputs_are_packed_optimally(
            events in prop::collection::vec(event_strategy(), 0..7),
            caps in caps_strategy(),
        ) {
            let a = run(&events, &[], &caps);
            let scheduled: usize = a.slices.iter().map(|s| s.placements.len()).sum();
            let fit_alone = (0..events.len()).filter(|&e| brute_fits(&[e], &events, &caps)).count();
            prop_assert_eq!(scheduled, fit_alone);
            prop_assert!(a.optimal);
            prop_assert_eq!(a.slices.len(), brute_min_slices(&events, &caps));
        }
    }
}

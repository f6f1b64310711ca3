//! Tests of [`assign`]: the promises every assignment keeps (checked on each), worked cases,
//! and properties against brute force on small inputs.

use super::msrs::msrs_conflict;
use super::pack::first_fit;
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
    fn counters(k: usize, set: &[usize], opts: &[Vec<Counter>], used: &mut Vec<Counter>) -> bool {
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

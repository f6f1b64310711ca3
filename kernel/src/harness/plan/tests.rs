//! The tests of the event plan: the emulated PMU, counter constraints and groups, event tables,
//! nanoBench config lines, extra MSRs, and property tests against the parser.

use super::*;
use crate::pmu::request::{FIXED_ENTRY, parse_request};
use events::cpu::{CpuModel, Vendor};
use events::encode::{bits, gp_event_select};
use events::event::{EventDesc, EventSelect, ExtraMsr, Modifiers, Source};
use events::nanobench::NANOBENCH_USER;
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
    uarch_model: false,
    extra_msrs: 0,
};

/// The emulated PMU with its micro-architecture model (`pmu-uarch=on`).
const EMULATED_UARCH: Platform = Platform {
    uarch_model: true,
    ..EMULATED
};

fn assert_counted(p: &Plan, i: usize) {
    assert!(
        matches!(p.events[i].status, Status::Counted { .. }),
        "{} must be counted: {:?}",
        p.events[i].name,
        p.events[i].status
    );
}

fn reason_of(p: &Plan, i: usize) -> &str {
    match &p.events[i].status {
        Status::Unsupported { reason } => reason,
        other => panic!("event {i} ({}) is {other:?}", p.events[i].name),
    }
}

/// The emulated PMU's Intel CPUID.0AH:EBX: LLC references and misses and branch misses
/// unavailable; with the micro-architecture model (`pmu-uarch=on`) all available.
fn emulated_skx(uarch: bool) -> PmuCaps {
    let mut c = skx();
    c.arch_events_unavailable = if uarch {
        0
    } else {
        (1 << 3) | (1 << 4) | (1 << 6)
    };
    c
}

#[test]
fn the_emulated_pmu_counts_only_the_events_it_models() {
    let spec = "cycles,instructions,branches,ref-cycles,branch-misses,cache-misses,r01c2,cycles:u,instructions:k";
    let p = plan_with(spec, &[], &emulated_skx(false), &[], &EMULATED);
    for i in [0, 1, 2, 3, 7, 8] {
        assert_counted(&p, i);
    }
    // branch-misses and cache-misses are refused by CPUID.0AH:EBX already, r01c2 as the
    // emulated PMU's.
    for i in [4, 5] {
        assert!(
            reason_of(&p, i).contains("not available"),
            "{}",
            reason_of(&p, i)
        );
    }
    assert!(
        reason_of(&p, 6).contains("emulated PMU"),
        "{}",
        reason_of(&p, 6)
    );
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

#[test]
fn the_emulated_uarch_model_counts_cache_and_branch_miss_events() {
    // With the model on, CPUID.0AH:EBX marks the LLC events and branch misses available: they,
    // and L1D.REPLACEMENT (r0151), are counted; their CMASK/INV/EDGE forms and other cache
    // events (L2_RQSTS.MISS, r3f24) are not modelled.
    let spec = "cache-references,cache-misses,r0151,branch-misses,r3f24,r0100412e";
    let p = plan_with(spec, &[], &emulated_skx(true), &[], &EMULATED_UARCH);
    for i in [0, 1, 2, 3] {
        assert_counted(&p, i);
    }
    for i in [4, 5] {
        assert!(
            reason_of(&p, i).contains("does not model"),
            "{}",
            p.events[i].name
        );
    }
    // Without it (bits 3, 4 and 6 set) none of them is; r0151, which no CPUID bit covers,
    // is refused as not modelled, naming the switch.
    let p = plan_with(spec, &[], &emulated_skx(false), &[], &EMULATED);
    for e in &p.events[..6] {
        assert!(!matches!(e.status, Status::Counted { .. }), "{}", e.name);
    }
    for i in [0, 1, 2, 3] {
        assert!(reason_of(&p, i).contains("--uarch"), "{}", reason_of(&p, i));
    }
    // AMD: the L2 request and miss events, L2 requests from data-cache misses, the K8-era
    // pair and mispredicted branches, only with the model.
    let amd = caps("AuthenticAMD-25-1");
    let spec = "cache-references,cache-misses,r0c860,r077d,r077e,branch-misses,r0041";
    let p = plan_with(spec, &[], &amd, &[], &EMULATED_UARCH);
    for i in 0..6 {
        assert_counted(&p, i);
    }
    assert!(reason_of(&p, 6).contains("does not model"));
    let p = plan_with(spec, &[], &amd, &[], &EMULATED);
    for e in &p.events {
        assert!(!matches!(e.status, Status::Counted { .. }), "{}", e.name);
    }
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
fn a_hybrid_parts_event_counts_on_its_core_type_and_says_why_not_on_the_other() {
    let part = CpuModel::parse("GenuineIntel-6-55-4").unwrap();
    // The Core cores' table has the event; the Atom cores' table is another (here: none of it).
    let tables = [skx_table().with_target(Some(part), Some(CoreType::Core))];
    let core = PmuCaps {
        cpu: Some(part),
        core_type: Some(CoreType::Core),
        ..skx()
    };
    let atom = PmuCaps {
        core_type: Some(CoreType::Atom),
        ..core
    };
    let p = checked("MEM_LOAD_RETIRED.L1_MISS,cycles", &core, &tables);
    assert_eq!(config(&p, "MEM_LOAD_RETIRED.L1_MISS"), 0x0308d1);
    let p = checked("MEM_LOAD_RETIRED.L1_MISS,cycles", &atom, &tables);
    let why = reason(&p, "MEM_LOAD_RETIRED.L1_MISS");
    assert!(
        why.contains("an event of this hybrid part's Core cores only")
            && why.contains("not on this Atom CPU"),
        "{why}"
    );
    assert_eq!(group(&p, "cycles"), 0);
    // A name no table has is unknown, as before.
    let p = checked("NO_SUCH.EVENT", &atom, &tables);
    assert!(reason(&p, "NO_SUCH.EVENT").contains("unknown event name"));
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
        extra_msrs: 0b0011,
        ..Platform::default()
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
        extra_msrs: 0b0001,
        ..Platform::default()
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

#[test]
fn the_kernels_cpu_model_carries_the_stepping_so_stepping_tables_match() {
    // Intel's mapfile splits model 0x55 by stepping: Skylake-SP 0-4, Cascade Lake 5-F. The
    // host packs one table per stepping; the kernel used to key its CPU without the stepping,
    // and no such table ever matched.
    let skylake =
        skx_table().with_target(Some(CpuModel::parse("GenuineIntel-6-55-4").unwrap()), None);
    let clx = skx_table().with_target(Some(CpuModel::parse("GenuineIntel-6-55-7").unwrap()), None);
    let at = |stepping| PmuCaps {
        cpu: Some(crate::pmu::discovery::cpu_model(
            Vendor::Intel,
            6,
            0x55,
            stepping,
        )),
        ..skx()
    };
    assert!(table_matches(&skylake, &at(4)) && !table_matches(&clx, &at(4)));
    assert!(table_matches(&clx, &at(7)) && !table_matches(&skylake, &at(7)));
    let unstepped =
        skx_table().with_target(Some(CpuModel::parse("GenuineIntel-6-55").unwrap()), None);
    assert!(
        table_matches(&unstepped, &at(4)),
        "a table without a stepping matches them all"
    );
}

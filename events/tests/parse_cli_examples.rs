//! Event lists as users type them after `-e`, through the public API only: what they resolve to,
//! the register values they give, and how errors print.

use events::cpu::{CpuModel, Vendor};
use events::encode::gp_event_select;
use events::event::{EventDesc, EventSelect, Modifiers, NamedEvents, Source};
use events::parse::{ErrorKind, EventList, parse};
use events::pmu::PmuCaps;

fn caps(cpu: &str) -> PmuCaps {
    PmuCaps::nominal(CpuModel::parse(cpu).unwrap())
}

fn ok(input: &str, caps: &PmuCaps) -> EventList {
    parse(input, caps, None).unwrap_or_else(|e| panic!("{e}\n{}", e.caret_line(input)))
}

/// PERFEVTSEL / PERF_CTL values (enabled) of every event of the list.
fn registers(list: &EventList, vendor: Vendor) -> Vec<u64> {
    list.specs()
        .map(|s| gp_event_select(vendor, &s.event.select, &s.modifiers, true).unwrap())
        .collect()
}

#[test]
fn skylake_server_examples() {
    let skx = caps("GenuineIntel-6-55");
    // pmu-facts: instructions retired user only = 0x004100C0.
    let l = ok("instructions:u,cycles:k,branch-misses", &skx);
    assert_eq!(
        registers(&l, Vendor::Intel),
        [0x0041_00c0, 0x0042_003c, 0x0043_00c5]
    );
    let l = ok("r01c2,r1c2:u", &skx);
    assert_eq!(registers(&l, Vendor::Intel), [0x0043_01c2, 0x0041_01c2]);
    // MACHINE_CLEARS.COUNT written as terms: event 0xC3 umask 0x01 cmask 1 edge.
    let l = ok("cpu/event=0xc3,umask=0x01,cmask=1,edge,name=clears/", &skx);
    let s = l.specs().next().unwrap();
    assert_eq!(s.event.name, "clears");
    assert_eq!(registers(&l, Vendor::Intel), [0x0147_01c3]);
    let l = ok("cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/u", &skx);
    assert_eq!(registers(&l, Vendor::Intel), [0x01c5_013c]);
}

#[test]
fn groups_as_perf_reads_them() {
    let skx = caps("GenuineIntel-6-55");
    let l = ok("{instructions,cycles}:u,branch-misses", &skx);
    assert_eq!(l.groups.len(), 2);
    assert!(l.groups[0].explicit);
    assert_eq!(l.groups[0].events.len(), 2);
    assert!(
        l.groups[0]
            .events
            .iter()
            .all(|s| s.modifiers == Modifiers::USER)
    );
    assert!(!l.groups[1].explicit);
    assert_eq!(l.groups[1].events[0].modifiers, Modifiers::default());
    assert_eq!(l.len(), 3);
}

#[test]
fn zen4_examples() {
    let zen4 = caps("AuthenticAMD-25-11");
    let l = ok(
        "cpu/event=0x120,umask=1/,ex_ret_brn_misp:u,r76:H,ref-cycles",
        &zen4,
    );
    assert_eq!(
        registers(&l, Vendor::Amd),
        [0x1_0043_0120, 0x0041_00c3, 0x200_0043_0076, 0x1_0043_0120]
    );
    let e = parse("cpu/event=0x1000/", &zen4, None).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::OutOfRange {
            field: "event",
            value: 0x1000,
            max: 0xfff
        }
    );
}

#[test]
fn errors_print_with_a_caret() {
    let skx = caps("GenuineIntel-6-55");
    let input = "instructions:u,cyclez";
    let e = parse(input, &skx, None).unwrap_err();
    assert_eq!(e.to_string(), "at column 16: unknown event name `cyclez`");
    assert_eq!(
        e.caret_line(input),
        "instructions:u,cyclez\n               ^^^^^^"
    );
    let input = "cycles:pp";
    let e = parse(input, &skx, None).unwrap_err();
    assert_eq!((e.position, e.len), (7, 1));
    assert!(e.to_string().contains("precise sampling"), "{e}");
    let input = "cpu/umask=0x100/";
    let e = parse(input, &skx, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at column 5: field out of range: umask = 256 (0x100), at most 255 (0xff)"
    );
    assert_eq!(e.caret_line(input), "cpu/umask=0x100/\n    ^^^^^^^^^^^");
    let e = parse("cycles", &PmuCaps::tsc_only(Vendor::Intel, None), None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at column 1: not available on this PMU: no programmable counters"
    );
}

struct Perfmon(Vec<EventDesc>);

impl NamedEvents for Perfmon {
    fn event(&self, name: &str) -> Option<EventDesc> {
        self.0
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
            .cloned()
    }
    fn all(&self) -> Vec<EventDesc> {
        self.0.clone()
    }
}

#[test]
fn perfmon_names() {
    let skx = caps("GenuineIntel-6-55");
    let table = Perfmon(vec![EventDesc::gp(
        "MACHINE_CLEARS.COUNT",
        EventSelect {
            cmask: 1,
            edge: true,
            ..EventSelect::new(0xc3, 0x01)
        },
        Source::Perfmon,
    )]);
    let l = parse(
        "MACHINE_CLEARS.COUNT:u,br_misp_retired.all_branches",
        &skx,
        Some(&table),
    )
    .unwrap();
    assert_eq!(registers(&l, Vendor::Intel), [0x0145_01c3, 0x0043_00c5]);
}

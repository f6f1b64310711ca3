//! Tests of the parser as callers use it ([`parse`], [`parse_each`]): helpers shared by the
//! test modules, and the inputs that are accepted; errors and properties in the submodules.

mod errors;
mod properties;

use super::resolve::NO_COUNTERS;
use super::*;
use crate::cpu::{CpuModel, Vendor};
use crate::encode::{self, bits};
use crate::event::{EventSelect, Source};
use crate::pmu::CoreType;
use alloc::string::ToString;
use alloc::vec;

fn caps(s: &str) -> PmuCaps {
    PmuCaps::nominal(CpuModel::parse(s).unwrap())
}
fn skx() -> PmuCaps {
    caps("GenuineIntel-6-55")
}
fn spr() -> PmuCaps {
    caps("GenuineIntel-6-8F")
}
fn zen4() -> PmuCaps {
    caps("AuthenticAMD-25-11")
}
fn zen3() -> PmuCaps {
    caps("AuthenticAMD-25-21")
}
fn tsc() -> PmuCaps {
    PmuCaps::tsc_only(Vendor::Intel, None)
}

/// A case-sensitive table (as a naive implementation would be), to check that the parser
/// itself makes lookups case-blind.
struct Stub(Vec<EventDesc>);

impl NamedEvents for Stub {
    fn event(&self, name: &str) -> Option<EventDesc> {
        self.0.iter().find(|e| e.name == name).cloned()
    }
    fn all(&self) -> Vec<EventDesc> {
        self.0.clone()
    }
}

fn stub() -> Stub {
    let perfmon = |name, sel| EventDesc::gp(name, sel, Source::Perfmon);
    Stub(vec![
        perfmon(
            "MACHINE_CLEARS.COUNT",
            EventSelect {
                cmask: 1,
                edge: true,
                ..EventSelect::new(0xc3, 0x01)
            },
        ),
        perfmon("BR_MISP_RETIRED.ALL_BRANCHES", EventSelect::new(0xc5, 0x00)),
        // Same names as catalogue events, with other encodings: the catalogue must win.
        perfmon("instructions", EventSelect::new(0x99, 0x99)),
        perfmon("INST_RETIRED.ANY", EventSelect::new(0x98, 0x98)),
        perfmon("TABLE_ONLY.EVENT", EventSelect::new(0x42, 0x07)),
    ])
}

fn ok(input: &str, caps: &PmuCaps) -> EventList {
    parse(input, caps, None).unwrap_or_else(|e| panic!("{input}: {e}\n{}", e.caret_line(input)))
}

fn one(input: &str, caps: &PmuCaps) -> Spec {
    let list = ok(input, caps);
    assert_eq!(list.len(), 1, "{input}");
    list.specs().next().cloned().unwrap()
}

fn fail(input: &str, caps: &PmuCaps) -> ParseError {
    match parse(input, caps, None) {
        Ok(l) => panic!("{input}: expected an error, got {l:?}"),
        Err(e) => e,
    }
}

/// Asserts the error's span and kind.
#[track_caller]
fn fails(input: &str, caps: &PmuCaps, position: usize, len: usize, kind: ErrorKind) {
    let e = fail(input, caps);
    assert_eq!(
        e,
        ParseError {
            position,
            len,
            kind
        },
        "{input}: {e}\n{}",
        e.caret_line(input)
    );
}

fn syn(s: &str) -> ErrorKind {
    ErrorKind::Syntax(s.to_string())
}

fn sel(code: u16, umask: u8) -> EventSelect {
    EventSelect::new(code, umask)
}

#[test]
fn parse_each_resolves_events_alone_after_the_whole_syntax() {
    let each = parse_each(
        "cycles,nosuch,{instructions,branches}:u,r01c2",
        &skx(),
        None,
    )
    .unwrap();
    let texts: Vec<&str> = each.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        ["cycles", "nosuch", "instructions", "branches", "r01c2"]
    );
    assert_eq!(each[1].position, 7);
    assert!(matches!(
        each[1].resolved.as_ref().unwrap_err().kind,
        ErrorKind::UnknownName(_)
    ));
    assert!(each[0].resolved.is_ok() && each[4].resolved.is_ok());
    assert_eq!(
        (each[2].group, each[3].group, each[4].group),
        (Some(0), Some(0), None)
    );
    // The group's `:u` applies to its members.
    assert!(each[2].has_modifiers && !each[0].has_modifiers);
    assert!(!each[2].resolved.as_ref().unwrap().modifiers.os);
    // A syntax error anywhere is the list's.
    let e = parse_each("cycles,,nosuch", &skx(), None).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Syntax(_)), "{e:?}");
}

#[test]
fn name_terms_name_the_event_even_when_it_does_not_resolve() {
    let each = parse_each(
        "cpu/event=0x0e,umask=0x01,name=UOPS_ISSUED.ANY/u, cpu/name='a b',event=0xc0/,              cpu/event=0x1c0,name=\"too wide\"/, cycles:u, r01c2, cpu/event=0x3c/",
        &skx(),
        None,
    )
    .unwrap();
    let names: Vec<Option<&str>> = each.iter().map(|e| e.name.as_deref()).collect();
    assert_eq!(
        names,
        [
            Some("UOPS_ISSUED.ANY"),
            Some("a b"),
            Some("too wide"),
            None,
            None,
            None
        ]
    );
    let shown: Vec<&str> = each.iter().map(EachEvent::display_name).collect();
    assert_eq!(
        shown,
        [
            "UOPS_ISSUED.ANY",
            "a b",
            "too wide",
            "cycles:u",
            "r01c2",
            "cpu/event=0x3c/"
        ]
    );
    // The name does not change what is counted; the text stays as typed.
    let s = each[0].resolved.as_ref().unwrap();
    assert_eq!(s.event.name, "UOPS_ISSUED.ANY");
    assert_eq!(s.event.select, EventSelect::new(0x0e, 0x01));
    assert!(s.modifiers.usr && !s.modifiers.os);
    assert_eq!(
        each[0].text,
        "cpu/event=0x0e,umask=0x01,name=UOPS_ISSUED.ANY/u"
    );
    // Intel event codes have 8 bits: it does not resolve, but keeps its name.
    assert!(each[2].resolved.is_err());
}

// ---- valid inputs -------------------------------------------------------------------

#[test]
fn named_events_with_modifiers() {
    let s = one("instructions:u", &skx());
    assert_eq!(s.event.select, sel(0xc0, 0));
    assert_eq!(s.modifiers, Modifiers::USER);
    assert_eq!(s.event.source, Source::Generic);
    assert_eq!((s.text.as_str(), s.position), ("instructions:u", 0));

    let s = one("cycles:k", &skx());
    assert_eq!(
        (s.event.select, s.modifiers),
        (sel(0x3c, 0), Modifiers::KERNEL)
    );
    for both in ["cycles:uk", "cycles:ku", "cycles", "cycles:kuuk"] {
        assert_eq!(one(both, &skx()).modifiers, Modifiers::default(), "{both}");
    }
    assert_eq!(one("branch-misses", &skx()).event.select, sel(0xc5, 0));
    assert_eq!(one("branches", &skx()).event.select, sel(0xc4, 0));
    assert_eq!(one("cpu-cycles", &skx()).event.select, sel(0x3c, 0));
    // Catalogue names: fixed-counter (case-blind), architectural, Zen.
    let fc0 = one("INST_RETIRED.ANY", &skx());
    assert_eq!((fc0.event.fixed, fc0.event.select), (Some(0), sel(0xc0, 0)));
    assert_eq!(one("inst_retired.any:k", &skx()).event.fixed, Some(0));
    assert_eq!(one("llc-misses", &skx()).event.select, sel(0x2e, 0x41));
    assert_eq!(one("ex_ret_brn_misp", &zen3()).event.select, sel(0xc3, 0));
    // AMD generic mapping.
    assert_eq!(one("branch-misses:u", &zen4()).event.select, sel(0xc3, 0));
    // A fixed-only event (no GP encoding) parses with modifiers.
    let rc = one("ref-cycles:u", &skx());
    assert_eq!((rc.event.fixed, rc.event.gp_counters), (Some(2), None));
}

#[test]
fn amd_host_guest_modifiers() {
    let h = one("cycles:H", &zen4());
    assert_eq!(
        h.modifiers,
        Modifiers {
            host_only: true,
            ..Modifiers::default()
        }
    );
    let g = one("cycles:uG", &zen4());
    assert_eq!(
        g.modifiers,
        Modifiers {
            guest_only: true,
            ..Modifiers::USER
        }
    );
    let raw = one("r76:kH", &zen4());
    assert_eq!(
        encode::gp_event_select(Vendor::Amd, &raw.event.select, &raw.modifiers, true),
        Ok(0x200_0042_0076)
    );
}

#[test]
fn raw_events() {
    let s = one("r01c2", &skx());
    assert_eq!(s.event.select, sel(0xc2, 0x01));
    assert_eq!(s.event.name, "r01c2");
    assert_eq!(s.event.source, Source::Raw);
    assert_eq!((s.event.gp_counters, s.event.fixed), (Some(u32::MAX), None));
    assert_eq!(s.modifiers, Modifiers::default());
    let s = one("r1c2:u", &skx());
    assert_eq!(
        (s.event.select, s.modifiers),
        (sel(0xc2, 0x01), Modifiers::USER)
    );
    assert_eq!(s.event.name, "r1c2");
    assert_eq!(one("rC0", &skx()).event.select, sel(0xc0, 0));
    // cmask, inv, edge, umask2, in_tx in register layout.
    // 0x1201_c000_01c3: umask2 0x12 (bits 47:40), in_tx (32), cmask 0xc0.
    let s = one("r1201c00001c3", &spr()).event.select;
    assert_eq!(
        s,
        EventSelect {
            umask2: 0x12,
            in_tx: true,
            cmask: 0xc0,
            ..sel(0xc3, 0x01)
        }
    );
    let s = one("r018401c3", &skx()).event.select;
    assert_eq!(
        s,
        EventSelect {
            cmask: 1,
            inv: true,
            edge: true,
            ..sel(0xc3, 0x01)
        }
    );
    // AMD: event bits 11:8 at 35:32.
    assert_eq!(one("r100000120", &zen4()).event.select, sel(0x120, 1));
    assert_eq!(one("r1c2", &zen4()).event.select, sel(0xc2, 1));
    // AnyThread on a v4 PMU that allows it.
    assert!(one("r2000c0", &skx()).event.select.any_thread);
    // in_txcp restricts the event to GP counter 2.
    let cp = one("r2000001c2", &skx());
    assert!(cp.event.select.in_txcp);
    assert_eq!(cp.event.gp_counters, Some(1 << 2));
}

#[test]
fn pmu_terms() {
    let s = one("cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/u", &skx());
    assert_eq!(
        s.event.select,
        EventSelect {
            cmask: 1,
            inv: true,
            edge: true,
            ..sel(0x3c, 0x01)
        }
    );
    assert_eq!(s.modifiers, Modifiers::USER);
    assert_eq!(s.event.name, "cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/");
    assert_eq!(s.text, "cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/u");
    assert_eq!(s.event.source, Source::Raw);
    // `/:u` form, flags written =1 / =0, decimal values, whitespace inside.
    let s = one("cpu/ event=192 , inv=0, edge=1 /:k", &skx());
    assert_eq!(
        (s.event.select, s.modifiers),
        (
            EventSelect {
                edge: true,
                ..sel(0xc0, 0)
            },
            Modifiers::KERNEL
        )
    );
    // name= and the Intel-only terms.
    let s = one(
        "cpu/event=0xd0,umask=0x81,umask2=0x12,in_tx,name=loads/",
        &spr(),
    );
    assert_eq!(s.event.name, "loads");
    assert_eq!(
        s.event.select,
        EventSelect {
            umask2: 0x12,
            in_tx: true,
            ..sel(0xd0, 0x81)
        }
    );
    assert_eq!(
        one("cpu/event=0xc0,name='my insts'/", &skx()).event.name,
        "my insts"
    );
    assert!(one("cpu/event=0xc0,any/", &skx()).event.select.any_thread);
    let cp = one("cpu/event=0xc2,in_txcp=1/", &skx());
    assert_eq!(cp.event.gp_counters, Some(1 << 2));
    // config= is a raw value.
    assert_eq!(one("cpu/config=0x1c2/", &skx()).event.select, sel(0xc2, 1));
    // AMD accepts 12-bit events, and hybrid PMU names are accepted when caps do not say.
    assert_eq!(
        one("cpu/event=0x120,umask=1/", &zen4()).event.select,
        sel(0x120, 1)
    );
    assert_eq!(
        one("cpu_core/event=0xc0/", &spr()).event.select,
        sel(0xc0, 0)
    );
    let mut atom = spr();
    atom.core_type = Some(CoreType::Atom);
    assert_eq!(
        one("cpu_atom/event=0xc0/", &atom).event.select,
        sel(0xc0, 0)
    );
}

#[test]
fn lists_and_groups() {
    let l = ok("{instructions,cycles}:u,branch-misses", &skx());
    assert_eq!(l.groups.len(), 2);
    assert!(l.groups[0].explicit && !l.groups[1].explicit);
    assert_eq!(l.groups[0].events.len(), 2);
    assert!(
        l.groups[0]
            .events
            .iter()
            .all(|s| s.modifiers == Modifiers::USER)
    );
    assert_eq!(l.groups[0].events[1].text, "cycles");
    assert_eq!(l.groups[0].events[1].position, 14);
    assert_eq!(l.groups[1].events[0].modifiers, Modifiers::default());
    assert_eq!(l.len(), 3);
    assert!(!l.is_empty());
    let names: Vec<&str> = l.specs().map(|s| s.event.name.as_str()).collect();
    assert_eq!(names, ["instructions", "cycles", "branch-misses"]);

    // perf's group rule: letters are added to the member's own.
    let l = ok("{cycles:k,instructions}:u", &skx());
    assert_eq!(l.groups[0].events[0].modifiers, Modifiers::default());
    assert_eq!(l.groups[0].events[1].modifiers, Modifiers::USER);
    // Host-only on the member, user on the group.
    let l = ok("{cycles:H,instructions}:u", &zen4());
    assert_eq!(
        l.groups[0].events[0].modifiers,
        Modifiers {
            host_only: true,
            ..Modifiers::USER
        }
    );

    // Whitespace around commas and braces; the same event twice; single-member group.
    let l = ok(
        "  cycles , { instructions ,cycles } ,cycles,{r1c2}  ",
        &skx(),
    );
    assert_eq!(l.groups.len(), 4);
    assert_eq!(l.len(), 5);
    assert!(l.groups[3].explicit);
    assert_eq!(l.groups[1].events[0].position, 13);

    // Several simple events are separate groups.
    let l = ok("cycles,instructions,r01c2", &skx());
    assert_eq!(l.groups.len(), 3);
    assert!(l.groups.iter().all(|g| !g.explicit && g.events.len() == 1));
}

#[test]
fn table_lookup() {
    let t = stub();
    let table: Option<&dyn NamedEvents> = Some(&t);
    let mc = parse("machine_clears.count:u", &skx(), table).unwrap();
    let s = mc.specs().next().unwrap();
    assert_eq!(s.event.name, "MACHINE_CLEARS.COUNT");
    assert_eq!(s.event.source, Source::Perfmon);
    assert_eq!(
        (
            s.event.select.code,
            s.event.select.cmask,
            s.event.select.edge
        ),
        (0xc3, 1, true)
    );
    assert_eq!(s.modifiers, Modifiers::USER);
    assert!(parse("TABLE_ONLY.EVENT", &skx(), table).is_ok());
    // The catalogue wins: generic names, architectural and fixed perfmon names.
    let l = parse(
        "instructions,INST_RETIRED.ANY,BR_MISP_RETIRED.ALL_BRANCHES",
        &skx(),
        table,
    )
    .unwrap();
    let got: Vec<(Source, u16)> = l
        .specs()
        .map(|s| (s.event.source, s.event.select.code))
        .collect();
    assert_eq!(
        got,
        [
            (Source::Generic, 0xc0),
            (Source::BuiltIn, 0xc0),
            (Source::Architectural, 0xc5)
        ]
    );
    // Without the table the perfmon-only name is unknown.
    fails(
        "cycles,MACHINE_CLEARS.COUNT",
        &skx(),
        7,
        20,
        ErrorKind::UnknownName("MACHINE_CLEARS.COUNT".into()),
    );
    // A table event on a TSC-only machine.
    assert_eq!(
        parse("TABLE_ONLY.EVENT", &tsc(), table).unwrap_err().kind,
        ErrorKind::NotAvailable(NO_COUNTERS.into())
    );
}

#[test]
fn specs_convert() {
    let s = one("instructions:k", &skx());
    let es = s.to_event_spec();
    assert_eq!((es.event, es.modifiers), (s.event, Modifiers::KERNEL));
}

//! Inputs that are refused: the error's span and kind, and that syntax errors come first.

use super::*;

#[test]
fn unknown_names_and_unavailable_events() {
    fails(
        "instructions,cyclez:u",
        &skx(),
        13,
        6,
        ErrorKind::UnknownName("cyclez".into()),
    );
    // Known but not on this PMU: never remapped.
    let e = fail("cycles,ex_ret_brn_misp", &skx());
    assert_eq!((e.position, e.len), (7, 15));
    assert!(
        matches!(&e.kind, ErrorKind::NotAvailable(r) if r.contains("not an AMD")),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("at column 8: not available on this PMU: ")
    );
    let e = fail("bus-cycles", &zen4());
    assert!(matches!(e.kind, ErrorKind::NotAvailable(_)));
    fails(
        "TOPDOWN.SLOTS",
        &skx(),
        0,
        13,
        ErrorKind::NotAvailable("this PMU has no fixed counter 3".into()),
    );
    // Generic names are case-sensitive, as in perf's lexer.
    fails(
        "Cycles",
        &skx(),
        0,
        6,
        ErrorKind::UnknownName("Cycles".into()),
    );
}

#[test]
fn modifier_errors() {
    fails(
        "instructions:p",
        &skx(),
        13,
        1,
        ErrorKind::UnknownModifier("p".into()),
    );
    assert!(
        fail("instructions:p", &skx())
            .to_string()
            .contains("precise sampling")
    );
    fails(
        "cycles:upp",
        &skx(),
        8,
        1,
        ErrorKind::UnknownModifier("p".into()),
    );
    fails(
        "cycles:x",
        &skx(),
        7,
        1,
        ErrorKind::UnknownModifier("x".into()),
    );
    fails(
        "cycles:S",
        &skx(),
        7,
        1,
        ErrorKind::UnknownModifier("S".into()),
    );
    fails(
        "cycles:ué",
        &skx(),
        8,
        2,
        ErrorKind::UnknownModifier("é".into()),
    );
    fails(
        "{cycles}:I",
        &skx(),
        9,
        1,
        ErrorKind::UnknownModifier("I".into()),
    );
    fails(
        "cpu/event=1/up",
        &skx(),
        13,
        1,
        ErrorKind::UnknownModifier("p".into()),
    );
    fails(
        "cycles:",
        &skx(),
        7,
        0,
        syn("expected modifiers (u, k, H, G) after `:`"),
    );
    fails(
        "cycles:,x",
        &skx(),
        7,
        1,
        syn("expected modifiers (u, k, H, G) after `:`"),
    );
    fails(
        "cycles:u:k",
        &skx(),
        8,
        1,
        syn("unexpected `:`: expected `,` between events"),
    );
    // H/G: AMD only, and not together.
    fails(
        "cycles,instructions:uH",
        &skx(),
        21,
        1,
        ErrorKind::NotOnVendor {
            field: ":H (host-only counting)",
            vendor: Vendor::Intel,
        },
    );
    fails(
        "{cycles}:G",
        &skx(),
        9,
        1,
        ErrorKind::NotOnVendor {
            field: ":G (guest-only counting)",
            vendor: Vendor::Intel,
        },
    );
    let e = fail("cycles:HG", &zen4());
    assert_eq!((e.position, e.len), (8, 1));
    assert!(matches!(e.kind, ErrorKind::Conflict(_)));
    let e = fail("{cycles:G}:H", &zen4());
    assert_eq!((e.position, e.len), (11, 1));
    assert!(matches!(e.kind, ErrorKind::Conflict(_)));
}

#[test]
fn raw_errors() {
    let bad = |s: &str| ErrorKind::BadRaw(s.to_string());
    fails("r", &skx(), 0, 1, bad("r"));
    fails("cycles,rxyz", &skx(), 7, 4, bad("rxyz"));
    fails(
        "r1ffffffffffffffffff",
        &skx(),
        0,
        20,
        bad("r1ffffffffffffffffff"),
    );
    fails("r0x1c2", &skx(), 0, 6, bad("r0x1c2"));
    // 16 digits with leading zeros are fine; 17 significant digits are not.
    assert_eq!(one("r00000000000000c0", &skx()).event.select, sel(0xc0, 0));
    // A name starting with r that is not raw-shaped is an unknown name.
    fails(
        "ref_cyclez",
        &skx(),
        0,
        10,
        ErrorKind::UnknownName("ref_cyclez".into()),
    );
    // Bits that belong to modifiers or to baremark.
    fails(
        "r4100c0",
        &skx(),
        0,
        7,
        ErrorKind::RawBits {
            bits: bits::USR,
            reason: "USR/OS (bits 16, 17) are the privilege filter: set it with :u / :k",
        },
    );
    let kind = |input: &str, c: &PmuCaps| fail(input, c).kind;
    // The error names exactly the bits that are not event bits on the PMU.
    for (input, c, set) in [
        ("r1000c0", skx(), bits::INT),
        ("r4000c0", skx(), bits::EN),
        ("r800c0", skx(), bits::PIN_CONTROL),
        ("r4000000c0", skx(), 0x4_0000_0000),
        ("r100000000c0", zen4(), bits::AMD_GUEST_ONLY),
        ("r200000000c0", zen4(), bits::AMD_HOST_ONLY),
        ("r400000000c0", zen4(), 0x400_0000_0000),
        ("r2000c0", zen4(), bits::ANY_THREAD),
    ] {
        let k = kind(input, &c);
        assert!(
            matches!(k, ErrorKind::RawBits { bits, .. } if bits == set),
            "{input}: {k:?}"
        );
    }
    // AnyThread on v5 (deprecated) is not available.
    assert!(matches!(
        kind("r2000c0", &spr()),
        ErrorKind::NotAvailable(_)
    ));
    // in_txcp needs a third GP counter.
    let two = PmuCaps::from_intel_cpuid([0x0730_0204, 0, 0, 0x603], true, None);
    assert!(matches!(
        kind("r2000000c0", &two),
        ErrorKind::NotAvailable(_)
    ));
    // Raw values on a TSC-only PMU.
    fails(
        "r1c2",
        &tsc(),
        0,
        4,
        ErrorKind::NotAvailable(NO_COUNTERS.into()),
    );
}

#[test]
fn term_errors() {
    let range = |field, value, max| ErrorKind::OutOfRange { field, value, max };
    fails(
        "cpu/umask=0x100/",
        &skx(),
        4,
        11,
        range("umask", 0x100, 0xff),
    );
    fails(
        "cpu/event=0x100/",
        &skx(),
        4,
        11,
        range("event", 0x100, 0xff),
    );
    fails(
        "cpu/event=0x1000/",
        &zen4(),
        4,
        12,
        range("event", 0x1000, 0xfff),
    );
    fails(
        "cpu/event=0xc0,cmask=256/",
        &skx(),
        15,
        9,
        range("cmask", 256, 0xff),
    );
    fails("cpu/event=0xc0,inv=2/", &skx(), 15, 5, range("inv", 2, 1));
    fails(
        "cpu/umask2=0x100,event=1/",
        &spr(),
        4,
        12,
        range("umask2", 0x100, 0xff),
    );
    assert!(
        fail("cpu/umask=0x100/", &skx())
            .to_string()
            .contains("field out of range: umask = 256 (0x100), at most 255 (0xff)")
    );
    let num = |s: &str| ErrorKind::BadNumber(s.to_string());
    fails("cpu/event=0xzz/", &skx(), 10, 4, num("0xzz"));
    fails("cpu/event=0x/", &skx(), 10, 2, num("0x"));
    fails("cpu/event=-1/", &skx(), 10, 2, num("-1"));
    fails("cpu/event=+1/", &skx(), 10, 2, num("+1"));
    fails(
        "cpu/event=99999999999999999999/",
        &skx(),
        10,
        20,
        num("99999999999999999999"),
    );
    fails(
        "cpu/event=/",
        &skx(),
        10,
        0,
        syn("expected a value after `=`"),
    );
    fails(
        "cpu/event/",
        &skx(),
        4,
        5,
        syn("`event` needs a value: `event=...`"),
    );
    fails(
        "cpu/period=1000/",
        &skx(),
        4,
        6,
        ErrorKind::UnknownTerm("period".into()),
    );
    fails(
        "msr/tsc/",
        &skx(),
        0,
        3,
        ErrorKind::UnknownPmu("msr".into()),
    );
    fails(
        "cycles/",
        &skx(),
        0,
        6,
        ErrorKind::UnknownPmu("cycles".into()),
    );
    let conflict = |s: &str| ErrorKind::Conflict(s.to_string());
    fails(
        "cpu/event=1,event=2/",
        &skx(),
        12,
        7,
        conflict("`event` is given twice"),
    );
    fails(
        "cpu/config=0x1c2,umask=1/",
        &skx(),
        17,
        7,
        conflict("`config` gives the whole encoding; it cannot be combined with `umask`"),
    );
    fails(
        "cpu/cmask=1,config=0xc0/",
        &skx(),
        12,
        11,
        conflict("`config` gives the whole encoding; it cannot be combined with `cmask`"),
    );
    fails(
        "cpu/config=0x4300c0/",
        &skx(),
        4,
        15,
        ErrorKind::RawBits {
            bits: bits::USR | bits::OS,
            reason: "USR/OS (bits 16, 17) are the privilege filter: set it with :u / :k",
        },
    );
    // Vendor-specific terms.
    let not_on = |field, vendor| ErrorKind::NotOnVendor { field, vendor };
    fails(
        "cpu/event=0xc0,in_tx/",
        &zen4(),
        15,
        5,
        not_on("in_tx", Vendor::Amd),
    );
    fails(
        "cpu/event=0xc0,in_txcp=1/",
        &zen4(),
        15,
        9,
        not_on("in_txcp", Vendor::Amd),
    );
    fails(
        "cpu/event=0xc0,umask2=0/",
        &zen4(),
        15,
        8,
        not_on("umask2", Vendor::Amd),
    );
    fails(
        "cpu/event=0xc0,any/",
        &zen4(),
        15,
        3,
        not_on("any", Vendor::Amd),
    );
    let e = fail("cpu/event=0xc0,any/", &spr());
    assert_eq!((e.position, e.len), (15, 3));
    assert!(matches!(e.kind, ErrorKind::NotAvailable(_)));
    // Hybrid PMU names against the capabilities.
    let mut core = spr();
    core.core_type = Some(CoreType::Core);
    let e = fail("cpu_atom/event=0xc0/", &core);
    assert_eq!((e.position, e.len), (0, 20));
    assert!(matches!(e.kind, ErrorKind::NotAvailable(_)));
    assert!(matches!(
        fail("cpu_core/event=0xc0/", &zen4()).kind,
        ErrorKind::NotAvailable(_)
    ));
    fails(
        "cpu/event=0xc0/",
        &tsc(),
        0,
        15,
        ErrorKind::NotAvailable(NO_COUNTERS.into()),
    );
    // Syntax inside the slashes.
    fails(
        "cpu//",
        &skx(),
        0,
        5,
        syn("no terms between the slashes (e.g. cpu/event=0xc0/)"),
    );
    fails(
        "cpu/event=1,/",
        &skx(),
        11,
        1,
        syn("trailing `,`: expected a term after it"),
    );
    fails(
        "cpu/event=1,,umask=1/",
        &skx(),
        12,
        1,
        syn("empty term before this `,`"),
    );
    fails(
        "cpu/event=1",
        &skx(),
        0,
        4,
        syn("the terms are never closed with `/`"),
    );
    fails(
        "cpu/event=1 umask=2/",
        &skx(),
        12,
        1,
        syn("unexpected `u`: expected `,` or the closing `/`"),
    );
    fails(
        "cpu/=1/",
        &skx(),
        4,
        1,
        syn("unexpected `=`: expected a term such as event=0xc0"),
    );
    fails(
        "cpu/event=1,name='x/",
        &skx(),
        17,
        1,
        syn("the quote is never closed"),
    );
    fails(
        "cpu/event=1,name=''/",
        &skx(),
        17,
        2,
        syn("the name is empty"),
    );
}

#[test]
fn list_and_group_syntax_errors() {
    fails("", &skx(), 0, 0, syn("no events given"));
    fails("   ", &skx(), 0, 3, syn("no events given"));
    fails(
        "a,,b",
        &skx(),
        2,
        1,
        syn("empty item: expected an event before this `,`"),
    );
    fails(
        ",cycles",
        &skx(),
        0,
        1,
        syn("empty item: expected an event before this `,`"),
    );
    fails(
        "cycles,",
        &skx(),
        6,
        1,
        syn("trailing `,`: expected an event after it"),
    );
    fails(
        "cycles , ",
        &skx(),
        7,
        1,
        syn("trailing `,`: expected an event after it"),
    );
    fails(
        "{cycles,{instructions}}",
        &skx(),
        8,
        1,
        syn("groups cannot be nested"),
    );
    fails("{cycles{", &skx(), 7, 1, syn("groups cannot be nested"));
    fails(
        "{cycles,instructions",
        &skx(),
        0,
        1,
        syn("`{` is never closed"),
    );
    fails("cycles,{", &skx(), 7, 1, syn("`{` is never closed"));
    fails("cycles}", &skx(), 6, 1, syn("`}` without a matching `{`"));
    fails("cycles,}", &skx(), 7, 1, syn("`}` without a matching `{`"));
    fails("{}", &skx(), 0, 2, syn("empty group"));
    fails("{ }", &skx(), 0, 3, syn("empty group"));
    fails(
        "{cycles,}",
        &skx(),
        7,
        1,
        syn("trailing `,` in a group: expected an event after it"),
    );
    fails(
        "{,cycles}",
        &skx(),
        1,
        1,
        syn("empty item: expected an event before this `,`"),
    );
    fails(
        "cycles instructions",
        &skx(),
        7,
        1,
        syn("unexpected `i`: expected `,` between events"),
    );
    fails(
        "cycles{x}",
        &skx(),
        6,
        1,
        syn("unexpected `{`: expected `,` before a group"),
    );
    fails(
        "{cycles}x",
        &skx(),
        8,
        1,
        syn("unexpected `x`: expected `,` between events"),
    );
    fails(
        "{cycles x}",
        &skx(),
        8,
        1,
        syn("unexpected `x`: expected `,` or `}`"),
    );
    let e = fail("cycles,$x", &skx());
    assert_eq!((e.position, e.len), (7, 1));
    assert!(matches!(e.kind, ErrorKind::Syntax(_)));
    // A multi-byte character: the error spans the whole character.
    let e = fail("cycles,€", &skx());
    assert_eq!((e.position, e.len), (7, 3));
    // cycles=1 is not a term outside cpu/.../.
    assert_eq!(fail("cycles=1", &skx()).position, 6);
}

#[test]
fn syntax_errors_come_before_pmu_errors() {
    // The unknown name is first in the input, but the syntax error is reported.
    fails("cyclez,{cycles", &skx(), 7, 1, syn("`{` is never closed"));
    // On a TSC-only PMU: syntax errors first, then every event is unavailable.
    fails(
        "cycles,cycles:p",
        &tsc(),
        14,
        1,
        ErrorKind::UnknownModifier("p".into()),
    );
    fails(
        "cycles:u",
        &tsc(),
        0,
        6,
        ErrorKind::NotAvailable(NO_COUNTERS.into()),
    );
    fails(
        "instructions",
        &tsc(),
        0,
        12,
        ErrorKind::NotAvailable(NO_COUNTERS.into()),
    );
}

#[test]
fn display_and_caret_line() {
    let input = "instructions,cyclez:u";
    let e = fail(input, &skx());
    assert_eq!(e.to_string(), "at column 14: unknown event name `cyclez`");
    assert_eq!(
        e.caret_line(input),
        "instructions,cyclez:u\n             ^^^^^^"
    );
    // An empty span at the end still gets one caret.
    let input = "cycles:";
    assert_eq!(fail(input, &skx()).caret_line(input), "cycles:\n       ^");
    // Columns count characters, not bytes; control characters keep their column.
    let input = "\tcpu/name=é/p";
    let e = fail(input, &skx());
    assert_eq!(e.position, 13);
    assert_eq!(e.caret_line(input), " cpu/name=é/p\n            ^");
    // Spans that do not fit the input (a caller mixing inputs) do not panic.
    let odd = ParseError {
        position: 99,
        len: usize::MAX,
        kind: syn("x"),
    };
    assert_eq!(odd.caret_line("ab"), "ab\n  ^");
    let mid = ParseError {
        position: 1,
        len: 1,
        kind: syn("x"),
    };
    assert_eq!(mid.caret_line("é"), "é\n^");
    assert_eq!(odd.to_string(), "at column 100: x");
}

//! Profiles of synthetic RIPs against the real `profile` payload ELF: the shares are exactly
//! the ones constructed.

use super::*;
use crate::records::parse_line;

const SOURCE: &str = include_str!("../../../payloads/profile/src/main.rs");

fn profile_elf() -> &'static [u8] {
    crate::payloads::builtin("profile")
        .expect("the profile payload is built in")
        .elf
}

fn sym() -> Symbolizer {
    Symbolizer::new(profile_elf(), "profile").unwrap()
}

/// The 1-based lines of the two `asm!` invocations: heavy's, then light's.
fn asm_lines() -> (u32, u32) {
    let lines: Vec<u32> = SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "core::arch::asm!(")
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(lines.len(), 2, "heavy and light have one asm! each");
    (lines[0], lines[1])
}

/// The four loop instructions of `f` (after its `mov`, before its `ret`).
fn loop_addrs(s: &Symbolizer, name: &str) -> Vec<u64> {
    let f = s.function_named(name).unwrap().clone();
    annotate(s, &f, &[]).instructions[1..5]
        .iter()
        .map(|i| i.addr)
        .collect()
}

fn samples(rips: Vec<u64>, summary: Option<(u64, u64)>) -> TaskSamples {
    TaskSamples {
        task: "profile".into(),
        task_index: 0,
        slot: 0,
        event: 0x1_00c0,
        period: 10007,
        rips,
        summary,
        counters_lost: None,
        problems: Vec::new(),
    }
}

#[test]
fn functions_lines_and_code_of_the_real_elf() {
    let s = sym();
    assert!(s.has_lines(), "the profile payload keeps its line tables");
    let heavy = s
        .function_named("profile::heavy")
        .expect("heavy is a symbol")
        .clone();
    let light = s
        .function_named("profile::light")
        .expect("light is a symbol")
        .clone();
    let (heavy_line, light_line) = asm_lines();
    for (f, line, count) in [
        (&heavy, heavy_line, ",0BB8h"),
        (&light, light_line, ",3E8h"),
    ] {
        let a = annotate(&s, f, &[]);
        let texts: Vec<&str> = a.instructions.iter().map(|i| i.text.as_str()).collect();
        // mov, the 4-instruction loop, ret: the counts the payload's comments state.
        assert!(
            texts[0].starts_with("mov ") && texts[0].ends_with(count),
            "{texts:?}"
        );
        assert_eq!(&texts[1..3], ["nop", "nop"]);
        assert!(texts[3].starts_with("dec "), "{texts:?}");
        assert!(texts[4].starts_with("jne "), "{texts:?}");
        assert_eq!(texts[5], "ret");
        let l = s.line(f.start + 1).expect("a source line");
        assert!(l.file.ends_with("payloads/profile/src/main.rs"), "{l}");
        assert_eq!(l.line, line, "{}'s loop is on its asm! line", f.name);
        assert_eq!(s.function(f.start + f.size - 1).unwrap().name, f.name);
    }
    assert!(s.function(0x10).is_none(), "below the image");
}

#[test]
fn shares_table_annotation_and_svg_are_as_constructed() {
    let s = sym();
    let heavy = loop_addrs(&s, "profile::heavy");
    let light = loop_addrs(&s, "profile::light");
    // 3:1, spread evenly over each loop's four instructions; one RIP outside every symbol and
    // one in the kernel.
    let mut rips = Vec::new();
    for k in 0..300 {
        rips.push(heavy[k % 4]);
    }
    for k in 0..100 {
        rips.push(light[k % 4]);
    }
    rips.push(0x30_0000);
    rips.push(0xffff_8000_0010_0000);
    let t = samples(rips, Some((402, 0)));
    let p = analyze(&t, Some(&s));
    assert_eq!(p.total, 402);
    assert_eq!(
        p.functions,
        [
            ("profile::heavy".to_string(), 300),
            ("profile::light".to_string(), 100),
            ("[kernel]".to_string(), 1),
            ("[unknown]".to_string(), 1),
        ]
    );
    let (heavy_line, light_line) = asm_lines();
    assert_eq!(p.rows[0].symbol, "profile::heavy");
    assert_eq!(p.rows[0].samples, 300);
    assert!(
        p.rows[0]
            .source
            .as_deref()
            .is_some_and(|s| s.ends_with(&format!("payloads/profile/src/main.rs:{heavy_line}"))),
        "{:?}",
        p.rows[0]
    );
    assert!(
        p.rows[1]
            .source
            .as_deref()
            .unwrap()
            .ends_with(&format!(":{light_line}"))
    );
    assert_eq!(p.rows[2].source, None, "no line for [kernel]");
    let a = p
        .hottest
        .as_ref()
        .expect("the hottest function is annotated");
    assert_eq!(a.function.name, "profile::heavy");
    assert_eq!(a.samples, 300);
    assert_eq!(a.between, 0);
    let per: Vec<u64> = a.instructions.iter().map(|i| i.samples).collect();
    assert_eq!(per, [0, 75, 75, 75, 75, 0]);

    let text = render(&t, &p, "instructions:u", "test");
    assert!(
        text.contains(
            "profile (#0) | instructions:u (0x100c0) every 10007 events | 402 samples, 0 lost"
        ),
        "{text}"
    );
    assert!(text.contains("  74.63%      300  profile::heavy"), "{text}");
    assert!(text.contains("  24.88%      100  profile::light"), "{text}");
    assert!(
        text.contains("[unknown]") && text.contains("[kernel]"),
        "{text}"
    );
    assert!(text.contains("hottest function profile::heavy"), "{text}");
    assert!(text.contains("  25.00%  "), "{text}");
    assert!(!text.contains("LOST"), "{text}");

    let svg = svg::bar_chart(&t, &p, "instructions:u");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains(">profile::heavy</text>") && svg.contains("300 (74.63%)"),
        "{svg}"
    );
    assert!(!svg.contains("LOST"));
}

#[test]
fn lost_samples_and_missing_ones_are_shown() {
    let s = sym();
    let heavy = loop_addrs(&s, "profile::heavy");
    let t = samples(vec![heavy[0]; 10], Some((12, 5)));
    let records_text = render(&t, &analyze(&t, Some(&s)), "cycles", "x");
    assert!(
        records_text.contains("LOST     5 of 17 samples: periods that ended"),
        "{records_text}"
    );
    let lines = [
        r#"{"type":"cpu","v":1,"vendor":"GenuineIntel"}"#.to_string(),
        format!(r#"{{"type":"profile_samples","v":1,"task":"profile","task_index":0,"slot":0,"event":"0x100c0","period":10007,"rips":[{},"0x{:x}",null]}}"#, heavy[0], heavy[1]),
        r#"{"type":"profile_summary","v":1,"task":"profile","task_index":0,"slot":0,"event":"0x100c0","period":10007,"samples":3,"lost":1}"#.to_string(),
        r#"{"type":"profile_samples","v":1,"task":"ghost","task_index":1,"slot":0,"event":"0x100c0","period":10007,"rips":[4198400]}"#.to_string(),
        r#"{"type":"error","v":1,"source":"sampling","message":"task spin: 5 sampled events, 4 GP counters"}"#.to_string(),
        // The harness's `samples` record is not a profile record.
        r#"{"type":"samples","v":1,"payload":"p","bench":"b","event":"tsc","kind":"region","first":0,"values":[1]}"#.to_string(),
    ];
    let records: Vec<Record> = lines
        .iter()
        .filter_map(|l| match parse_line(l) {
            crate::records::Line::Record(r) => Some(r),
            _ => None,
        })
        .collect();
    let all = collect(&records);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].rips, [heavy[0], heavy[1]]);
    assert_eq!(all[0].lost(), 1);
    assert!(
        all[0].problems.iter().any(|p| p.contains("not addresses")),
        "{:?}",
        all[0].problems
    );
    assert!(
        all[0]
            .problems
            .iter()
            .any(|p| p.contains("sent 3 samples, the log holds 2"))
    );
    assert!(
        all[1]
            .problems
            .iter()
            .any(|p| p.contains("no profile_summary"))
    );
    let dir = tempfile::tempdir().unwrap();
    let (text, files) = report(&records, &ElfSource::default(), &[], Some(dir.path())).unwrap();
    assert!(
        text.starts_with("PROFILE  not sampled: task spin: 5 sampled events"),
        "{text}"
    );
    assert!(
        text.contains("instructions:u (0x100c0)"),
        "the word is named: {text}"
    );
    assert!(text.contains("LOST     1 of 4 samples"), "{text}");
    assert!(
        text.contains("no ELF for task `ghost`: give --elf ghost=PATH"),
        "{text}"
    );
    assert!(
        text.contains(" 0x401000"),
        "an address without symbols is shown raw: {text}"
    );
    assert_eq!(files.len(), 2);
    let svg = std::fs::read_to_string(&files[0]).unwrap();
    assert!(svg.contains("1 samples LOST"), "{svg}");
}

#[test]
fn elves_that_cannot_name_anything_are_clear_errors() {
    let err = |bytes: &[u8]| format!("{:#}", Symbolizer::new(bytes, "x").err().unwrap());
    assert!(err(b"not an elf").contains("x: not an ELF file"));
    // The zoo's payloads are stripped of their symbols (Cargo.toml).
    let stripped = crate::payloads::builtin("zoo-memory").unwrap().elf;
    assert!(
        err(stripped).contains("no function symbols (stripped?)"),
        "{}",
        err(stripped)
    );
    let missing = format!(
        "{:#}",
        ElfSource::new(&["profile=/nonexistent/profile.elf".into()])
            .err()
            .unwrap()
    );
    assert!(
        missing.contains("--elf profile=/nonexistent/profile.elf: cannot read"),
        "{missing}"
    );
    assert!(ElfSource::new(&["profile".into()]).is_err());
    // An ELF given for a task replaces the built-in one; a bad one is reported per task.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.elf");
    std::fs::write(&bad, b"junk").unwrap();
    let elves = ElfSource::new(&[format!("profile={}", bad.display())]).unwrap();
    let rec = parse_line(
        r#"{"type":"profile_samples","v":1,"task":"profile","task_index":0,"slot":0,"event":"0x1","period":5,"rips":[1]}"#,
    );
    let crate::records::Line::Record(r) = rec else {
        panic!()
    };
    let (text, _) = report(&[r], &elves, &[], None).unwrap();
    assert!(
        text.contains("symbols: none: profile (--elf): not an ELF file"),
        "{text}"
    );
}

#[test]
fn lost_counts_are_told() {
    let mut t = samples(vec![0x401945], Some((1, 0)));
    t.counters_lost = Some("the PMU refused the switch-in".into());
    let text = render(&t, &analyze(&t, None), "cycles", "none");
    assert!(
        text.contains(
            "LOST     the task's counts were lost, so its samples stop there: the PMU refused"
        ),
        "{text}"
    );
}

#[test]
fn duplicated_records_are_dropped_and_gaps_told() {
    let rec = |l: &str| match parse_line(l) {
        crate::records::Line::Record(r) => r,
        _ => panic!("{l}"),
    };
    let line = |first: u64, rips: &str| {
        rec(&format!(
            r#"{{"type":"profile_samples","v":1,"task":"t","task_index":0,"slot":0,"event":"0x100c0","period":5,"first":{first},"rips":[{rips}]}}"#
        ))
    };
    let summary = rec(
        r#"{"type":"profile_summary","v":1,"task":"t","task_index":0,"slot":0,"event":"0x100c0","period":5,"samples":4,"lost":0}"#,
    );
    // The same two RIPs twice in a loop are two records; the same record twice is one.
    let records = [
        line(0, "1,2"),
        line(2, "1,2"),
        line(2, "1,2"),
        summary.clone(),
    ];
    let t = &collect(&records)[0];
    assert_eq!(t.rips, [1, 2, 1, 2]);
    assert_eq!(t.problems.len(), 1, "{:?}", t.problems);
    assert!(
        t.problems[0].contains("duplicated record"),
        "{:?}",
        t.problems
    );
    // A record missing: the gap is named (and the count does not add up).
    let records = [line(0, "1,2"), line(4, "3"), summary];
    let t = &collect(&records)[0];
    assert!(
        t.problems
            .iter()
            .any(|p| p.contains("RIPs 2 to 3 are missing")),
        "{:?}",
        t.problems
    );
}

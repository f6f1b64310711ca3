//! One function per fuzz target: feeds `data` to a parser of untrusted input and checks what
//! the parser promises (no panic, errors that point inside the input, results that hold their
//! invariants or survive a round trip). A failed check panics, which libFuzzer reports as a
//! crash.
//!
//! Also compiled into tests/tests/fuzz_seeds.rs, which runs each body over its committed seeds
//! (fuzz/seeds/<target>/) without libFuzzer; `crate::records` and `crate::results` name the
//! host tool's modules in both crates.

use baremark_kernel::config::{self, ConfigError, ConfigSource};
use baremark_kernel::devices::ramdisk;
use baremark_kernel::task::elf::{self, LOWER_HALF_END, Limits, PAGE_SIZE};
use events::cpu::{CpuModel, Vendor};
use events::encode;
use events::event::{EventDesc, EventSelect, Modifiers, NamedEvents, Source};
use events::nanobench;
use events::parse::{self, ParseError};
use events::perfmon;
use events::pmu::{CoreType, PmuCaps};
use events::table::EventTable;

/// The PMUs the event syntax is resolved for: Intel v4 and v5, a hybrid part's Atom cores, an
/// Intel v2 from CPUID, AMD Zen 4 and pre-Zen, and TSC only.
fn pmus() -> Vec<PmuCaps> {
    let nominal = |s: &str| PmuCaps::nominal(CpuModel::parse(s).expect("a valid CPU string"));
    vec![
        nominal("GenuineIntel-6-55"),
        nominal("GenuineIntel-6-8F"),
        PmuCaps {
            core_type: Some(CoreType::Atom),
            ..nominal("GenuineIntel-6-97")
        },
        PmuCaps::from_intel_cpuid([0x0730_0202, 0, 0, 0x603], false, None),
        nominal("AuthenticAMD-25-11"),
        nominal("AuthenticAMD-16-2"),
        PmuCaps::tsc_only(Vendor::Intel, None),
    ]
}

/// A small perfmon-like table, so names resolve through [`NamedEvents`] too.
fn named_table() -> EventTable {
    let mut offcore = EventDesc::gp(
        "OFFCORE_RESPONSE.ALL_DATA_RD",
        EventSelect::new(0xb7, 0x01),
        Source::Perfmon,
    );
    offcore.extra = Some(events::event::ExtraMsr {
        msr: 0x1a6,
        value: 0x10091,
    });
    EventTable::new(vec![
        EventDesc::gp(
            "UOPS_ISSUED.ANY",
            EventSelect::new(0x0e, 0x01),
            Source::Perfmon,
        ),
        EventDesc::gp(
            "ld_blocks.store_forward",
            EventSelect::new(0x03, 0x02),
            Source::Perfmon,
        ),
        offcore,
    ])
    .expect("a valid table")
}

/// A parse error's span lies inside the input, on char boundaries.
fn check_parse_error(input: &str, e: &ParseError) {
    let end = e.position.checked_add(e.len).expect("span end overflows");
    assert!(end <= input.len(), "error span {e:?} past the input's end");
    assert!(
        input.is_char_boundary(e.position) && input.is_char_boundary(end),
        "error span {e:?} not on char boundaries"
    );
}

/// The error renders, as a message and under the input. Once per parse: the caret line copies
/// the whole input, so doing it for each of a list's failing events made the target quadratic.
fn check_error_renders(input: &str, e: &ParseError) {
    assert!(!e.to_string().is_empty());
    let caret = e.caret_line(input);
    assert!(caret.contains('^'), "no caret in {caret:?}");
}

/// The perf-style event syntax (`events::parse`): `parse` and `parse_each`.
///
/// The first byte picks the PMU (its low three bits, modulo the 7 of [`pmus`]) and whether
/// names may resolve through the perfmon-like table (bit 3); the rest is the event list. One
/// PMU per input rather than all of them: resolving a long list 14 times made each input cost
/// 14 times as much, and the fuzzer reaches every PMU through the byte anyway.
pub fn event_spec(data: &[u8]) {
    let Some((&select, rest)) = data.split_first() else {
        return;
    };
    let Ok(input) = std::str::from_utf8(rest) else {
        return;
    };
    let pmus = pmus();
    let caps = pmus[usize::from(select & 7) % pmus.len()];
    let table = named_table();
    let named = (select & 8 != 0).then_some(&table as &dyn NamedEvents);
    let whole = parse::parse(input, &caps, named);
    let each = parse::parse_each(input, &caps, named);
    match (&whole, &each) {
        (Err(e), Err(f)) => {
            // A syntax error is the same error either way.
            assert_eq!(e, f, "parse and parse_each disagree on {input:?}");
            check_parse_error(input, e);
            check_error_renders(input, e);
        }
        (Ok(_), Err(f)) => panic!("parse_each fails ({f:?}) where parse does not"),
        (Err(e), Ok(each)) => {
            // A resolution error: parse reports the first event that fails alone.
            check_parse_error(input, e);
            check_error_renders(input, e);
            let first = each.iter().find_map(|x| x.resolved.as_ref().err());
            assert_eq!(Some(e), first, "parse's error is not parse_each's first");
        }
        (Ok(list), Ok(each)) => {
            assert_eq!(list.len(), each.len());
            for (spec, one) in list.specs().zip(each) {
                assert_eq!(
                    input.get(spec.position..spec.position + spec.text.len()),
                    Some(spec.text.as_str()),
                    "a spec's text is not the input at its position"
                );
                assert_eq!(spec.text, one.text);
                let alone = one.resolved.as_ref().expect("resolved in the list");
                assert_eq!(alone.event, spec.event);
                // Whatever resolved can be encoded or says why not, without a panic.
                let _ =
                    encode::gp_event_select(caps.vendor, &spec.event.select, &spec.modifiers, true);
            }
        }
    }
    if let Ok(each) = &each {
        for one in each {
            if let Err(e) = &one.resolved {
                check_parse_error(input, e);
            }
            assert!(!one.display_name().is_empty());
        }
    }
}

/// An imported or decoded table survives its own binary form.
fn check_table_round_trip(table: &EventTable) {
    let back = EventTable::from_bytes(&table.to_bytes()).expect("a written table reads back");
    assert_eq!(
        &back, table,
        "the table changed through to_bytes/from_bytes"
    );
    let lean = EventTable::from_bytes(&table.to_bytes_without_descriptions())
        .expect("a table without descriptions reads back");
    assert_eq!(lean.len(), table.len());
    for e in table.events() {
        assert_eq!(
            table.get(&e.name),
            Some(e),
            "{} is not found by name",
            e.name
        );
        assert_eq!(
            table.get(&e.name.to_ascii_uppercase()).map(|f| &f.name),
            Some(&e.name),
            "names are not case-insensitive"
        );
    }
}

/// Intel perfmon event JSON (`perfmon::parse_events_json`).
pub fn perfmon_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match perfmon::parse_events_json("fuzz.json", text) {
        Ok(imported) => {
            // Every event the importer keeps must fit the compact table.
            let cpu = CpuModel::parse("GenuineIntel-6-55").ok();
            let table = imported
                .to_table("fuzz.json", cpu, Some(CoreType::Core))
                .expect("imported events make a table");
            assert_eq!(table.len(), imported.events.len());
            check_table_round_trip(&table);
            for issue in imported.skipped.iter().chain(&imported.notes) {
                assert!(!issue.to_string().is_empty());
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// Intel perfmon mapfile.csv (`perfmon::parse_mapfile`), and matching CPUs against its
/// Family-model patterns: a CPU without a stepping (every stepping is tried) and a hybrid
/// part's core type.
pub fn perfmon_mapfile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match perfmon::parse_mapfile("mapfile.csv", text) {
        Ok(map) => {
            for (cpu, core_type) in [
                ("GenuineIntel-6-55", None),
                ("GenuineIntel-6-97-2", Some(CoreType::Core)),
            ] {
                let cpu = CpuModel::parse(cpu).expect("a valid CPU string");
                for entry in map.core_files(&cpu, core_type) {
                    assert!(entry.is_core() && entry.matches(&cpu));
                    assert!(!entry.filename.is_empty());
                    assert!(
                        core_type.is_none() || entry.core_type.is_none_or(|t| Some(t) == core_type)
                    );
                }
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// The compact event table (`EventTable::from_bytes`), as the kernel reads it from the
/// ramdisk.
pub fn event_table(data: &[u8]) {
    match EventTable::from_bytes(data) {
        Ok(table) => check_table_round_trip(&table),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// nanoBench config files (`nanobench::parse_config`); what it accepts must also be valid
/// event syntax when written as one (`spec_string`).
pub fn nanobench_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.split('\n').count();
    match nanobench::parse_config(text) {
        Ok(events) => {
            let intel = pmus()[0];
            for e in &events {
                assert!((1..=lines).contains(&e.line) && e.column >= 1);
                assert!(!e.name.is_empty() && !e.config.is_empty());
                let _ = e.perfevtsel(Vendor::Intel, &Modifiers::default());
                let _ = e.perfevtsel(Vendor::Amd, &Modifiers::default());
                match e.spec_string(&Modifiers::default()) {
                    Ok(spec) => {
                        let each = parse::parse_each(&spec, &intel, None)
                            .unwrap_or_else(|err| panic!("{spec:?} does not parse: {err}"));
                        assert_eq!(each.len(), 1, "{spec:?} is not one event");
                        assert_eq!(each[0].display_name(), e.name, "{spec:?} renames the event");
                        if let Ok(resolved) = &each[0].resolved {
                            assert_eq!(resolved.event.select, e.select, "{spec:?}");
                        }
                    }
                    Err(err) => {
                        assert_eq!(err.line, e.line);
                        assert!(err.column >= 1 && !err.message.is_empty());
                    }
                }
            }
            let _ = nanobench::config_to_spec_string(&events, &Modifiers::default());
        }
        Err(e) => {
            assert!(
                (1..=lines).contains(&e.line),
                "error line {} of {lines}",
                e.line
            );
            assert!(e.column >= 1 && !e.message.is_empty());
        }
    }
}

/// Payload ELF validation and the load plan (`task::elf::plan`), under the default limits and
/// under tight ones.
pub fn elf_plan(data: &[u8]) {
    let tight = Limits {
        user_start: 0,
        user_end: u64::MAX,
        max_bytes: 1 << 20,
        max_segments: 2,
    };
    for limits in [Limits::default(), tight] {
        match elf::plan(data, &limits) {
            Ok(plan) => {
                let lo = limits.user_start.max(PAGE_SIZE);
                let hi = limits.user_end.min(LOWER_HALF_END);
                assert!(!plan.segments.is_empty());
                assert!(plan.segments.len() <= limits.max_segments);
                assert!(plan.mapped_bytes() <= limits.max_bytes);
                for s in &plan.segments {
                    assert!(s.page_start % PAGE_SIZE == 0 && s.page_end % PAGE_SIZE == 0);
                    assert!(s.page_start >= lo && s.page_end <= hi, "{s:?} out of range");
                    assert!(s.page_start <= s.vaddr && s.mem_size > 0);
                    assert!(s.vaddr + s.mem_size <= s.page_end);
                    assert!(s.file_range.end <= data.len() && s.file_size() as u64 <= s.mem_size);
                    assert!(!(s.writable && s.executable), "W^X broken: {s:?}");
                }
                for pair in plan.segments.windows(2) {
                    assert!(
                        pair[0].page_end <= pair[1].page_start,
                        "segments share a page"
                    );
                }
                assert!(
                    plan.segments
                        .iter()
                        .any(|s| s.executable && s.contains(plan.entry)),
                    "entry outside an executable segment"
                );
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

/// Checks a run configuration holds only values the kernel accepts.
fn check_run_config(c: &config::RunConfig) {
    assert!(c.quantum_us <= config::QUANTUM_US_MAX);
    assert!(c.task_budget_ms <= config::TASK_BUDGET_MS_MAX);
    assert!((1..=config::REPS_MAX).contains(&c.reps));
    assert!(c.warmup <= config::REPS_MAX);
    assert!(c.counter_preset <= config::COUNTER_PRESET_MAX);
    if let Some(events) = &c.events {
        assert!(!events.is_empty() && events.len() <= config::EVENTS_MAX && events != "none");
    }
}

/// The run configuration text (`run.cfg`, `config::parse`).
pub fn run_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count();
    let mut errors = Vec::new();
    let c = config::parse(text, &mut |e| errors.push(e));
    assert_eq!(c.source, ConfigSource::Ramdisk);
    check_run_config(&c);
    for e in &errors {
        let line = e.line().expect("a run.cfg problem is on a line");
        assert!(
            (1..=lines).contains(&line),
            "error on line {line} of {lines}"
        );
        assert!(!e.to_string().is_empty());
    }
}

/// The ramdisk: the ustar reader (`ramdisk::entries`) and the run configuration read through
/// it (`config::from_ramdisk`).
pub fn ramdisk(data: &[u8]) {
    let whole = data.as_ptr_range();
    let mut regular = 0;
    let mut failed = false;
    for entry in ramdisk::entries(data) {
        assert!(!failed, "an entry after an error");
        match entry {
            Ok(entry) => {
                regular += 1;
                // Members are views into the archive, past a header.
                let range = entry.data.as_ptr_range();
                assert!(whole.start <= range.start && range.end <= whole.end);
                assert!(range.start as usize - whole.start as usize >= 512);
                let path = if entry.prefix.is_empty() {
                    entry.name.to_string()
                } else {
                    format!("{}/{}", entry.prefix, entry.name)
                };
                assert!(entry.is(&path), "{entry:?} is not {path:?}");
            }
            Err(e) => {
                failed = true;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(regular <= data.len() / 512);

    let mut errors = Vec::new();
    let (c, members) = config::from_ramdisk(data, &mut |e| errors.push(e));
    assert_eq!(members, regular, "from_ramdisk counts other members");
    check_run_config(&c);
    let corrupt = errors
        .iter()
        .filter(|e| matches!(e, ConfigError::CorruptArchive(_)))
        .count();
    assert_eq!(corrupt, usize::from(failed));
    if c.source == ConfigSource::Defaults {
        assert_eq!(c, config::RunConfig::default());
    }
}

/// The kernel's serial stream as the host reads a log (`records::parse_log`,
/// `records_of_log`): lossy UTF-8, then lines.
pub fn serial_records(data: &[u8]) {
    use crate::records::{self, Line};
    let text = String::from_utf8_lossy(data);
    let lines = records::parse_log(&text);
    assert_eq!(lines.len(), text.lines().count());
    let mut kept = Vec::new();
    for (line, raw) in lines.iter().zip(text.lines()) {
        match line {
            Line::Record(r) => {
                assert!(r.value.is_object());
                assert_eq!(r.value.get("type").and_then(|t| t.as_str()), Some(&*r.kind));
                let _ = (r.version(), r.hex("rip"), r.u64("v"), r.str("type"));
                kept.push(r.clone());
            }
            Line::Text(t) => assert_eq!(t, raw.trim_end_matches(['\r', '\n'])),
        }
    }
    assert_eq!(records::records_of_log(&text), kept);
}

/// The result assembler (`Results::from_records`) over a log's records, and the JSON and CSV
/// it writes.
pub fn results(data: &[u8]) {
    use crate::records;
    use crate::results::Results;
    let text = String::from_utf8_lossy(data);
    let recs = records::records_of_log(&text);
    let res = Results::from_records(&recs);
    let json: serde_json::Value =
        serde_json::from_str(&res.to_json()).expect("the results JSON parses");
    assert_eq!(json["schema"], "baremark-results/1");
    res.to_csv().expect("the results CSV is written");
    let (all, unsupported) = res.counts();
    assert!(unsupported <= all);
    // A run without an `end` record is reported incomplete, and only then.
    let ended = recs.iter().any(|r| r.kind == "end");
    let incomplete = res.errors.iter().any(|e| e.kind == "incomplete");
    assert_eq!(ended, !incomplete);
}

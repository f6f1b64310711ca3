//! Perfmon import against small fixtures written for this project (tests/fixtures/perfmon),
//! each reproducing a quirk of Intel's published files. Needs `--features std`.
#![cfg(all(feature = "std", not(target_os = "none")))]

use std::path::{Path, PathBuf};

use events::cpu::CpuModel;
use events::encode::intel_perfevtsel;
use events::event::{ExtraMsr, Modifiers, NamedEvents, Source};
use events::perfmon::{self, Loaded, PerfmonError};
use events::pmu::CoreType;
use events::table::EventTable;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perfmon")
}

fn cpu(s: &str) -> CpuModel {
    CpuModel::parse(s).unwrap()
}

fn load(model: &str, core_type: Option<CoreType>) -> Result<Loaded, PerfmonError> {
    perfmon::load_for_cpu(&root(), &cpu(model), core_type)
}

/// The table survives the binary format, with and without descriptions.
fn assert_round_trip(t: &EventTable) {
    assert_eq!(EventTable::from_bytes(&t.to_bytes()).as_ref(), Ok(t));
    let compact = EventTable::from_bytes(&t.to_bytes_without_descriptions()).unwrap();
    assert_eq!(compact.len(), t.len());
    assert_eq!(compact.cpu(), t.cpu());
    assert_eq!(compact.core_type(), t.core_type());
}

#[test]
fn header_events_file_every_quirk() {
    let l = load("GenuineIntel-6-4E", None).unwrap();
    assert!(l.file.ends_with("TST/events/test_core.json"));
    let h = l.header.as_ref().unwrap();
    assert_eq!(h.version.as_deref(), Some("3"));
    let t = &l.table;
    assert_eq!(t.cpu(), Some(cpu("GenuineIntel-6-4E")));
    assert_eq!(t.core_type(), None);
    assert!(t.events().iter().all(|e| e.source == Source::Perfmon));

    // Fixed counters: pseudo code 0, umask N+1, no GP encoding.
    let inst = t.get("inst_retired.any").unwrap();
    assert_eq!((inst.fixed, inst.gp_counters), (Some(0), None));
    assert_eq!((inst.select.code, inst.select.umask), (0, 1));
    assert_eq!(
        inst.description.as_deref(),
        Some("Instructions retired (fixed counter 0).")
    );
    let ref_tsc = t.get("CPU_CLK_UNHALTED.REF_TSC").unwrap();
    assert_eq!((ref_tsc.fixed, ref_tsc.gp_counters), (Some(2), None));

    // Upper-case hex, Counter list, brief description preferred.
    let br = t.get("BR_MISP_RETIRED.ALL_BRANCHES").unwrap();
    assert_eq!((br.select.code, br.select.umask), (0xc5, 0));
    assert_eq!(br.gp_counters, Some(0b1111));
    assert_eq!(br.fixed, None);
    assert_eq!(
        br.description.as_deref(),
        Some("Mispredicted branches retired.")
    );
    assert!(!br.deprecated && !br.taken_alone);

    // Mixed-case hex ("0X01"), load latency MSR, TakenAlone, public description only.
    let ll = t.get("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4").unwrap();
    assert_eq!((ll.select.code, ll.select.umask), (0xcd, 0x01));
    assert_eq!(
        ll.extra,
        Some(ExtraMsr {
            msr: 0x3f6,
            value: 4
        })
    );
    assert!(ll.taken_alone);
    assert_eq!(ll.gp_counters, Some(0xff));
    assert!(ll.description.as_deref().unwrap().contains("public"));

    // cmask + edge: the exact PERFEVTSEL value.
    let mc = t.get("MACHINE_CLEARS.COUNT").unwrap();
    assert_eq!(
        (mc.select.cmask, mc.select.edge, mc.select.inv),
        (1, true, false)
    );
    assert_eq!(
        intel_perfevtsel(&mc.select, &Modifiers::default(), true),
        Ok(0x0147_01c3)
    );
    // cmask + inv + AnyThread, Counter as a range.
    let st = t.get("UOPS_ISSUED.STALL_CYCLES").unwrap();
    assert!(st.select.inv && st.select.any_thread && !st.select.edge);
    assert_eq!(st.gp_counters, Some(0b1111));
    assert_eq!(
        intel_perfevtsel(&st.select, &Modifiers::default(), true),
        Ok(0x01e3_010e)
    );

    // Offcore: two codes, two MSRs, one value.
    let ocr = t.get("OCR.DEMAND_DATA_RD.ANY_RESPONSE").unwrap();
    assert_eq!((ocr.select.code, ocr.select.umask), (0xb7, 0x01));
    assert_eq!(
        ocr.extra,
        Some(ExtraMsr {
            msr: 0x1a6,
            value: 0x10001
        })
    );
    assert_eq!(
        ocr.alt,
        Some((
            0xbb,
            ExtraMsr {
                msr: 0x1a7,
                value: 0x10001
            }
        ))
    );
    // The newer spelling without a space, upper-case MSR numbers.
    let reads = t.get("OCR.READS.L3_MISS").unwrap();
    assert_eq!(reads.select.code, 0x2a);
    assert_eq!(reads.extra.unwrap().value, 0x3F_BFC0_0477);
    assert_eq!(reads.alt.map(|(c, x)| (c, x.msr)), Some((0x2b, 0x1a7)));
    // Template without MSRs: first code only, and a note says so.
    let tmpl = t.get("OFFCORE_RESPONSE").unwrap();
    assert_eq!((tmpl.select.code, tmpl.extra, tmpl.alt), (0xb7, None, None));
    assert_eq!(l.notes.len(), 1, "{:?}", l.notes);
    assert_eq!(l.notes[0].event, "OFFCORE_RESPONSE");
    assert!(l.notes[0].reason.contains("0xbb"), "{}", l.notes[0]);

    // UMaskExt, and its "0X00" spelling; Deprecated; ten counters.
    let cond = t.get("BR_INST_RETIRED.COND").unwrap();
    assert_eq!((cond.select.umask, cond.select.umask2), (0x11, 0x01));
    assert_eq!(cond.gp_counters, Some(0x3ff));
    assert_eq!(
        intel_perfevtsel(&cond.select, &Modifiers::default(), true),
        Ok(0x0100_0043_11c4)
    );
    let thread_p = t.get("CPU_CLK_UNHALTED.THREAD_P").unwrap();
    assert!(thread_p.deprecated);
    assert_eq!(thread_p.select.umask2, 0);

    // What was skipped, and why: never truncated.
    let skipped: Vec<(&str, Option<&str>)> = l
        .skipped
        .iter()
        .map(|s| (s.event.as_str(), s.field.as_deref()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            ("BAD.UMASK_TOO_WIDE", Some("UMask")),
            ("BAD.CMASK_TOO_WIDE", Some("CounterMask")),
            ("BAD.MSR_VALUE_TOO_WIDE", Some("MSRValue")),
            ("BAD.EQUAL", Some("Equal")),
            ("BAD.FIXED_MISMATCH", Some("Counter")),
            ("br_misp_retired.all_branches", Some("EventName")),
        ]
    );
    let msg = l.skipped[0].to_string();
    assert!(
        msg.contains("test_core.json: BAD.UMASK_TOO_WIDE: UMask: 0x1ff is out of range"),
        "{msg}"
    );
    assert!(l.skipped[2].reason.contains("64 bits"));
    assert!(t.get("BAD.UMASK_TOO_WIDE").is_none());
    assert_eq!(t.len(), 11);
    assert_round_trip(t);
}

#[test]
fn array_file_and_stepping_selection() {
    // Stepping 0-4 selects the array-style file.
    let l = load("GenuineIntel-6-55-2", None).unwrap();
    assert!(l.header.is_none());
    assert!(l.skipped.is_empty() && l.notes.is_empty());
    let t = &l.table;
    assert_eq!(t.len(), 3);
    let any = t.get("CPU_CLK_UNHALTED.THREAD_ANY").unwrap();
    assert_eq!((any.fixed, any.gp_counters), (Some(1), None));
    assert!(any.select.any_thread);
    let fe = t.get("FRONTEND_RETIRED.DSB_MISS").unwrap();
    assert_eq!(
        fe.extra,
        Some(ExtraMsr {
            msr: 0x3f7,
            value: 0x11
        })
    );
    assert_round_trip(t);

    // Steppings 5-F select a file this copy does not have.
    match load("GenuineIntel-6-55-7", None) {
        Err(PerfmonError::MissingFile { path, mapfile_line }) => {
            assert!(path.ends_with("LATER/events/later_core.json"));
            assert_eq!(mapfile_line, 7);
        }
        other => panic!("{other:?}"),
    }
    // Without a stepping both rows match: ambiguous, naming both files.
    match load("GenuineIntel-6-55", None) {
        Err(e @ PerfmonError::Ambiguous { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("/ARR/events/array_core.json"), "{msg}");
            assert!(msg.contains("/LATER/events/later_core.json"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn hybrid_selection() {
    let map = perfmon::load_mapfile(&root().join("mapfile.csv")).unwrap();
    let adl = cpu("GenuineIntel-6-97");
    let both = map.core_files(&adl, None);
    assert_eq!(
        both.iter().map(|e| e.filename.as_str()).collect::<Vec<_>>(),
        vec![
            "/HYB/events/hybrid_small_core.json",
            "/HYB/events/hybrid_big_core.json"
        ]
    );
    assert_eq!(both[0].core_type, Some(CoreType::Atom));
    assert_eq!(both[1].core_type, Some(CoreType::Core));
    assert!(matches!(
        load("GenuineIntel-6-9A", None),
        Err(PerfmonError::Ambiguous { ref candidates, .. }) if candidates.len() == 2
    ));

    let small = load("GenuineIntel-6-9A", Some(CoreType::Atom)).unwrap();
    assert_eq!(small.table.core_type(), Some(CoreType::Atom));
    // Atom offcore: one code, two umasks; `alt` cannot hold the second umask.
    let ocr = small.table.get("OCR.DEMAND_DATA_RD.ANY_RESPONSE").unwrap();
    assert_eq!((ocr.select.code, ocr.select.umask), (0xb7, 0x01));
    assert_eq!(ocr.extra.map(|x| x.msr), Some(0x1a6));
    assert_eq!(ocr.alt, None);
    assert_eq!(small.notes.len(), 1);
    assert_eq!(small.notes[0].field.as_deref(), Some("UMask"));
    assert!(small.notes[0].reason.contains("umask 0x02, MSR 0x1a7"));
    assert_eq!(
        small.table.get("CPU_CLK_UNHALTED.CORE").unwrap().fixed,
        Some(1)
    );

    let big = load("GenuineIntel-6-97-1", Some(CoreType::Core)).unwrap();
    assert_eq!(big.table.core_type(), Some(CoreType::Core));
    assert_eq!(big.table.get("TOPDOWN.SLOTS").unwrap().fixed, Some(3));
    let ocr = big.table.event("ocr.demand_data_rd.any_response").unwrap();
    assert_eq!(ocr.alt.map(|(c, x)| (c, x.msr)), Some((0x2b, 0x1a7)));
    assert_round_trip(&small.table);
    assert_round_trip(&big.table);

    // Two Atom files for one model (Arrow Lake's Atom and LowPower_Atom): the native model
    // ID tells them apart; the loader does not guess.
    let arl = map.core_files(&cpu("GenuineIntel-6-C5"), Some(CoreType::Atom));
    assert_eq!(
        arl.iter()
            .map(|e| (e.core_role.as_deref(), e.native_model_id))
            .collect::<Vec<_>>(),
        vec![(Some("Atom"), Some(3)), (Some("LowPower_Atom"), Some(2))]
    );
    assert!(matches!(
        load("GenuineIntel-6-C5", Some(CoreType::Atom)),
        Err(PerfmonError::Ambiguous { .. })
    ));
}

#[test]
fn mapfile_problems_and_single_files() {
    let map = perfmon::load_mapfile(&root().join("mapfile.csv")).unwrap();
    assert_eq!(map.bad_rows.len(), 1);
    assert_eq!(map.bad_rows[0].line, 14);
    assert!(map.bad_rows[0].reason.contains("unclosed '('"));
    // Uncore and metrics rows are listed but never loaded (their files are absent).
    assert!(
        map.entries
            .iter()
            .any(|e| e.event_type == "uncore experimental" && !e.is_core())
    );

    assert!(matches!(
        load("GenuineIntel-6-01", None),
        Err(PerfmonError::NoMatch { .. })
    ));
    // A Filename that leaves the repository.
    match load("GenuineIntel-6-99", None) {
        Err(PerfmonError::Mapfile { line, reason, .. }) => {
            assert_eq!(line, Some(15));
            assert!(reason.contains("leaves the repository"));
        }
        other => panic!("{other:?}"),
    }
    // A repository without mapfile.csv.
    let err =
        perfmon::load_for_cpu(&root().join("TST"), &cpu("GenuineIntel-6-4E"), None).unwrap_err();
    assert!(matches!(err, PerfmonError::Io { .. }));
    assert!(err.to_string().contains("mapfile.csv"), "{err}");

    // One event file instead of the repository: taken to be for the CPU given.
    let file = root().join("HYB/events/hybrid_big_core.json");
    let l = perfmon::load_for_cpu(&file, &cpu("GenuineIntel-6-97"), Some(CoreType::Core)).unwrap();
    assert_eq!(l.table.len(), 2);
    assert_eq!(l.table.cpu(), Some(cpu("GenuineIntel-6-97")));
    assert_eq!(l.table.core_type(), Some(CoreType::Core));
}

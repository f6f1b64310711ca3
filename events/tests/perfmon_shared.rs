//! Perfmon import end to end against the real Intel files in ../shared/perfmon (test data kept
//! outside the project). Skips, passing, when that folder is absent. Needs `--features std`.
#![cfg(all(feature = "std", not(target_os = "none")))]

use std::path::{Path, PathBuf};

use events::cpu::CpuModel;
use events::encode::intel_perfevtsel;
use events::event::{ExtraMsr, Modifiers};
use events::perfmon;
use events::pmu::CoreType;
use events::table::EventTable;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/perfmon");

/// The shared folder. Without it these tests cannot run their subject: they fail, never pass
/// silently.
fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(SHARED);
    assert!(
        p.join("mapfile.csv").is_file(),
        "../shared/perfmon not found ({SHARED}): Intel's event files are these tests' subject"
    );
    Some(p)
}

fn cpu(s: &str) -> CpuModel {
    CpuModel::parse(s).unwrap()
}

fn core_json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            core_json_files(&p, out);
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with("_core.json"))
        {
            out.push(p);
        }
    }
}

#[test]
fn every_core_file_imports_and_round_trips() {
    let Some(root) = shared() else { return };
    let mut files = Vec::new();
    core_json_files(&root, &mut files);
    assert!(!files.is_empty(), "no *_core.json under {SHARED}");
    for f in &files {
        let imported = perfmon::load_events_file(f).unwrap_or_else(|e| panic!("{e}"));
        let name = f.strip_prefix(&root).unwrap().display().to_string();
        eprintln!(
            "{name}: {} events, {} skipped, {} with a dropped second encoding",
            imported.events.len(),
            imported.skipped.len(),
            imported.notes.len()
        );
        for s in &imported.skipped {
            eprintln!("  skipped: {s}");
        }
        assert!(imported.events.len() > 100, "{name}");
        assert!(imported.header.is_some(), "{name}");
        // Every event of every file survives the binary table unchanged.
        let table = imported.to_table(&name, None, None).unwrap();
        assert_eq!(table.events(), &imported.events[..]);
        let back = EventTable::from_bytes(&table.to_bytes()).unwrap();
        assert_eq!(back, table, "{name}");
        let compact = EventTable::from_bytes(&table.to_bytes_without_descriptions()).unwrap();
        assert_eq!(compact.len(), table.len());
        for e in table.events() {
            // Case-insensitive lookup finds each one.
            assert_eq!(
                back.get(&e.name.to_ascii_lowercase()).map(|x| &x.name),
                Some(&e.name)
            );
            // Every imported GP encoding is a valid Intel PERFEVTSEL.
            intel_perfevtsel(&e.select, &Modifiers::default(), true)
                .unwrap_or_else(|err| panic!("{name}: {}: {err}", e.name));
        }
    }
}

#[test]
fn mapfile_parses_completely() {
    let Some(root) = shared() else { return };
    let map = perfmon::load_mapfile(&root.join("mapfile.csv")).unwrap();
    assert!(map.bad_rows.is_empty(), "{:?}", map.bad_rows);
    assert!(map.entries.len() > 200);
    // Skylake-SP and Cascade Lake share model 0x55 and differ by stepping.
    let skx = map.core_files(&cpu("GenuineIntel-6-55-4"), None);
    assert_eq!(skx.len(), 1);
    assert_eq!(skx[0].filename, "/SKX/events/skylakex_core.json");
    let clx = map.core_files(&cpu("GenuineIntel-6-55-7"), None);
    assert_eq!(clx[0].filename, "/CLX/events/cascadelakex_core.json");
    assert_eq!(map.core_files(&cpu("GenuineIntel-6-55"), None).len(), 2);
    // Family 18 (Nova Lake) is hybrid.
    assert_eq!(map.core_files(&cpu("GenuineIntel-18-1"), None).len(), 2);
}

#[test]
fn skylake() {
    let Some(root) = shared() else { return };
    let l = perfmon::load_for_cpu(&root, &cpu("GenuineIntel-6-5E"), None).unwrap();
    assert!(l.file.ends_with("SKL/events/skylake_core.json"));
    let t = &l.table;
    assert_eq!(t.cpu(), Some(cpu("GenuineIntel-6-5E")));

    let mc = t.get("MACHINE_CLEARS.COUNT").unwrap();
    assert_eq!((mc.select.cmask, mc.select.edge), (1, true));
    assert_eq!(
        intel_perfevtsel(&mc.select, &Modifiers::default(), true),
        Ok(0x0147_01c3)
    );
    let br = t.get("br_misp_retired.all_branches").unwrap();
    assert_eq!(br.select.code, 0xc5);
    assert_eq!(br.gp_counters, Some(0b1111));

    let ocr = t
        .get("OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE")
        .unwrap();
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

    let inst = t.get("INST_RETIRED.ANY").unwrap();
    assert_eq!((inst.fixed, inst.gp_counters), (Some(0), None));
    let any = t.get("CPU_CLK_UNHALTED.THREAD_ANY").unwrap();
    assert_eq!(any.fixed, Some(1));
    assert!(any.select.any_thread);
    let ll = t.get("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4").unwrap();
    assert_eq!(
        ll.extra,
        Some(ExtraMsr {
            msr: 0x3f6,
            value: 4
        })
    );
    assert!(ll.taken_alone);
    // The OFFCORE_RESPONSE template keeps its first code only.
    assert!(l.notes.iter().any(|n| n.event == "OFFCORE_RESPONSE"));
}

#[test]
fn icelake_offcore() {
    let Some(root) = shared() else { return };
    let l = perfmon::load_for_cpu(&root, &cpu("GenuineIntel-6-7E"), None).unwrap();
    let ocr = l.table.get("OCR.DEMAND_DATA_RD.ANY_RESPONSE").unwrap();
    assert_eq!(ocr.select.code, 0xb7);
    assert_eq!(ocr.extra.map(|x| x.msr), Some(0x1a6));
    assert_eq!(ocr.alt.map(|(c, x)| (c, x.msr)), Some((0xbb, 0x1a7)));
    assert_eq!(l.table.get("TOPDOWN.SLOTS").unwrap().fixed, Some(3));
}

#[test]
fn sapphire_rapids_offcore() {
    let Some(root) = shared() else { return };
    let l = perfmon::load_for_cpu(&root, &cpu("GenuineIntel-6-8F"), None).unwrap();
    let ocr = l.table.get("OCR.DEMAND_DATA_RD.ANY_RESPONSE").unwrap();
    assert_eq!(ocr.select.code, 0x2a);
    assert_eq!(ocr.alt.map(|(c, x)| (c, x.msr)), Some((0x2b, 0x1a7)));
}

#[test]
fn alder_lake_hybrid() {
    let Some(root) = shared() else { return };
    let map = perfmon::load_mapfile(&root.join("mapfile.csv")).unwrap();
    let adl = cpu("GenuineIntel-6-97");
    let files: Vec<_> = map
        .core_files(&adl, None)
        .into_iter()
        .map(|e| (e.filename, e.core_type))
        .collect();
    assert_eq!(
        files,
        vec![
            (
                "/ADL/events/alderlake_gracemont_core.json".to_string(),
                Some(CoreType::Atom)
            ),
            (
                "/ADL/events/alderlake_goldencove_core.json".to_string(),
                Some(CoreType::Core)
            ),
        ]
    );
    assert!(matches!(
        perfmon::load_for_cpu(&root, &adl, None),
        Err(perfmon::PerfmonError::Ambiguous { .. })
    ));

    let p = perfmon::load_for_cpu(&root, &adl, Some(CoreType::Core)).unwrap();
    assert!(p.file.ends_with("alderlake_goldencove_core.json"));
    assert_eq!(p.table.core_type(), Some(CoreType::Core));
    let ocr = p.table.get("OCR.DEMAND_DATA_RD.ANY_RESPONSE").unwrap();
    assert_eq!(ocr.alt.map(|(c, x)| (c, x.msr)), Some((0x2b, 0x1a7)));

    let e = perfmon::load_for_cpu(&root, &adl, Some(CoreType::Atom)).unwrap();
    assert!(e.file.ends_with("alderlake_gracemont_core.json"));
    assert_eq!(e.table.core_type(), Some(CoreType::Atom));
    // Gracemont offcore: umasks 0x01/0x02 for MSRs 0x1a6/0x1a7; the first encoding is kept.
    let ocr = e.table.get("OCR.DEMAND_DATA_RD.ANY_RESPONSE").unwrap();
    assert_eq!((ocr.select.code, ocr.select.umask), (0xb7, 0x01));
    assert_eq!(ocr.extra.map(|x| x.msr), Some(0x1a6));
    assert_eq!(ocr.alt, None);
    assert!(
        e.notes
            .iter()
            .any(|n| n.event == "OCR.DEMAND_DATA_RD.ANY_RESPONSE")
    );
    assert_eq!(e.table.get("CPU_CLK_UNHALTED.CORE").unwrap().fixed, Some(1));
}

#[test]
fn lunar_lake_umask_ext() {
    let Some(root) = shared() else { return };
    let file = root.join("LNL/events/lunarlake_lioncove_core.json");
    let l = perfmon::load_for_cpu(&file, &cpu("GenuineIntel-6-BD"), Some(CoreType::Core)).unwrap();
    let with_umask2 = l
        .table
        .events()
        .iter()
        .filter(|e| e.select.umask2 != 0)
        .count();
    assert!(with_umask2 > 0);
    let cond = l.table.get("BR_INST_RETIRED.COND").unwrap();
    assert_eq!(
        (cond.select.code, cond.select.umask, cond.select.umask2),
        (0xc4, 0x11, 0x01)
    );
    assert_eq!(
        intel_perfevtsel(&cond.select, &Modifiers::default(), true),
        Ok(0x0100_0043_11c4)
    );
    assert_eq!(cond.gp_counters, Some(0x3ff));
    // Lunar Lake's P-core is listed in mapfile.csv too, with the skymont E-core file absent here.
    let map = perfmon::load_mapfile(&root.join("mapfile.csv")).unwrap();
    let lnl = map.core_files(&cpu("GenuineIntel-6-BD"), Some(CoreType::Atom));
    assert_eq!(lnl.len(), 1);
    assert!(matches!(
        perfmon::load_entry(&root, &lnl[0], None),
        Err(perfmon::PerfmonError::MissingFile { .. })
    ));
}

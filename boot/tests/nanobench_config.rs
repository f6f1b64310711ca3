//! `--config FILE` (nanoBench event config files) on the command line: `events encode --config`
//! prints what nanoBench would program for each line, `run`/`count`/`image` check the file
//! before anything is built and pack it into the ramdisk. Counting it end to end is in
//! tests/tests/nanobench_config.rs (QEMU with the emulated PMU).

mod common;

use common::{baremark, fixture};

use std::path::Path;
use std::process::Output;

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A config in the format of nanoBench's configs/cfg_*.txt, one line per option kind.
const CONFIG: &str = "\
# uops.info style (nanoBench's README format)
3C.00 CORE_CYCLES
0E.01 UOPS_ISSUED.ANY
B1.01.CMSK=1.INV UOPS_EXECUTED.STALL_CYCLES
79.30.CMSK=4.EDG IDQ.MS_SWITCHES_4

A3.14.CMSK=20 CYCLE_ACTIVITY.STALLS_MEM_ANY
0D.03.CMSK=1.AnyT INT_MISC.RECOVERY_CYCLES_ANY
CD.01.MSR_3F6H=0x10.TakenAlone MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16
C0.01.CTR=1 INST_RETIRED.PREC_DIST
B7.01.MSR_RSP0=0x10001 OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE
";

// IA32_PERFEVTSELx fields (Intel SDM vol. 3B, 20.2.1.1): what nanoBench.sh programs is EN and
// USR (user mode only) with the line's fields.
const USR: u64 = 1 << 16;
const EDGE: u64 = 1 << 18;
const ANY: u64 = 1 << 21;
const EN: u64 = 1 << 22;
const INV: u64 = 1 << 23;

fn sel(event: u64, umask: u64, cmask: u64) -> u64 {
    EN | USR | (cmask << 24) | (umask << 8) | event
}

fn write_config(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn events_encode_prints_each_lines_register_value_next_to_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), "cfg_Skylake.txt", CONFIG);
    let out = baremark()
        .args(["events", "encode", "--cpu", "GenuineIntel-6-55", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert!(out.status.success(), "{stdout}{}", stderr_of(&out));
    let expected: [(usize, &str, u64, &str); 9] = [
        (2, "CORE_CYCLES", sel(0x3c, 0x00, 0), "0-3"),
        (3, "UOPS_ISSUED.ANY", sel(0x0e, 0x01, 0), "0-3"),
        (
            4,
            "UOPS_EXECUTED.STALL_CYCLES",
            sel(0xb1, 0x01, 1) | INV,
            "0-3",
        ),
        (5, "IDQ.MS_SWITCHES_4", sel(0x79, 0x30, 4) | EDGE, "0-3"),
        // CMSK is decimal, as nanoBench reads it (strtoul base 0): 20 = 0x14.
        (
            7,
            "CYCLE_ACTIVITY.STALLS_MEM_ANY",
            sel(0xa3, 0x14, 20),
            "0-3",
        ),
        (
            8,
            "INT_MISC.RECOVERY_CYCLES_ANY",
            sel(0x0d, 0x03, 1) | ANY,
            "0-3",
        ),
        (
            9,
            "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16",
            sel(0xcd, 0x01, 0),
            "0-3",
        ),
        (10, "INST_RETIRED.PREC_DIST", sel(0xc0, 0x01, 0), "1"),
        (
            11,
            "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE",
            sel(0xb7, 0x01, 0),
            "0-3",
        ),
    ];
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("line "))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), expected.len(), "{stdout}");
    for (row, (line, name, value, counters)) in rows.iter().zip(expected) {
        assert_eq!(
            row[..4],
            [
                line.to_string().as_str(),
                name,
                format!("{value:#x}").as_str(),
                counters
            ],
            "{stdout}"
        );
        assert!(row.contains(&"usr") && !row.contains(&"os"), "{row:?}");
    }
    // Spot checks against hand-computed values.
    assert!(stdout.contains(" 0x1c101b1 "), "{stdout}");
    assert!(stdout.contains(" 0x161030d "), "{stdout}");
    let line = |n: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{n} ")))
            .unwrap()
    };
    assert!(
        line("9").ends_with("msr[0x3f6]=0x10 taken-alone"),
        "{}",
        line("9")
    );
    assert!(line("10").ends_with(" ctr=1"), "{}", line("10"));
    assert!(line("11").ends_with("msr[0x1a6]=0x10001"), "{}", line("11"));
    assert!(
        stdout.contains("# nanoBench config ") && stdout.contains("user mode only"),
        "{stdout}"
    );

    // JSON: one object per line, with the same values.
    let out = baremark()
        .args(["events", "encode", "--cpu", "GenuineIntel-6-55", "--config"])
        .arg(&cfg)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 9);
    for (item, (line, name, value, counters)) in items.iter().zip(expected) {
        assert_eq!(item["line"], line);
        assert_eq!(item["name"], name);
        assert_eq!(item["config"], format!("{value:#x}"));
        assert_eq!(item["counters"], counters);
        assert!(item["error"].is_null());
    }
    assert_eq!(items[2]["spec"], "B1.01.CMSK=1.INV");
    assert_eq!(items[6]["taken_alone"], true);
    assert_eq!(items[6]["extra_msr"]["msr"], "0x3f6");
    assert_eq!(items[8]["extra_msr"]["value"], "0x10001");
    assert_eq!(items[0]["taken_alone"], false);
}

#[test]
fn events_encode_takes_specs_and_a_config_together() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), "c.txt", "C4.00 BR_INST_RETIRED.ALL_BRANCHES\n");
    let out = baremark()
        .args([
            "events",
            "encode",
            "instructions:u",
            "--cpu",
            "GenuineIntel-6-55",
            "--config",
        ])
        .arg(&cfg)
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert!(out.status.success(), "{stdout}{}", stderr_of(&out));
    let spec_row = stdout.find("\ninstructions:u ").expect("the spec's row");
    let config_row = stdout
        .find("\n1     BR_INST_RETIRED.ALL_BRANCHES")
        .expect("the config's row");
    assert!(spec_row < config_row, "{stdout}");
    assert!(stdout.contains(&format!(" {:#x} ", sel(0xc4, 0, 0))));
}

#[test]
fn events_encode_reports_lines_this_pmu_cannot_encode_by_line() {
    let dir = tempfile::tempdir().unwrap();
    // A 12-bit event code is AMD's; AnyThread is Intel's.
    let cfg = write_config(
        dir.path(),
        "zen.txt",
        "076.00 LsNotHaltedCyc\n28A.01\n0D.03.AnyT ANY\n",
    );
    let out = baremark()
        .args(["events", "encode", "--cpu", "GenuineIntel-6-55", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    let stderr = stderr_of(&out);
    let want = format!(
        "{}: line 2, column 1: 28A.01 (28A.01): error: ",
        cfg.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    // The lines that encode are still printed.
    assert!(stdout_of(&out).contains(&format!(" {:#x} ", sel(0x76, 0, 0))));

    let out = baremark()
        .args([
            "events",
            "encode",
            "--cpu",
            "AuthenticAMD-25-17",
            "--config",
        ])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = stdout_of(&out);
    // AMD PERF_CTL: event bits 11:8 at 35:32.
    assert!(
        stdout.contains(&format!(" {:#x} ", (0x2u64 << 32) | sel(0x8a, 0x01, 0))),
        "{stdout}"
    );
    assert!(stderr_of(&out).contains("line 3, column 1: 0D.03.AnyT (ANY): error"));
}

#[test]
fn a_bad_config_is_refused_with_its_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_config(
        dir.path(),
        "bad.txt",
        "C0.00 INST\n\n3C.00.CMSK=1.edg CYCLES\n",
    );
    let where_ = format!("--config {}: line 3, column 14: ", bad.display());
    for args in [
        vec!["events", "encode", "--cpu", "GenuineIntel-6-55"],
        vec!["run"],
        vec!["count", "hello"],
        vec!["image", "--bios", "/nonexistent/x.img"],
    ] {
        let out = baremark()
            .env("BAREMARK_QEMU", "/nonexistent/qemu")
            .args(&args)
            .arg("--config")
            .arg(&bad)
            .output()
            .unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("baremark: error: {where_}unknown option `edg`")),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("did you mean `EDG`?"), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "    3C.00.CMSK=1.edg CYCLES\n    {}^",
                " ".repeat(13)
            )),
            "{args:?}: {stderr}"
        );
    }
    let out = baremark()
        .env("BAREMARK_QEMU", "/nonexistent/qemu")
        .args(["run", "--config", "/nonexistent/cfg.txt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--config: reading /nonexistent/cfg.txt"));
    // `encode` needs events or a config.
    let out = baremark().args(["events", "encode"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--config"), "{}", stderr_of(&out));
}

/// The bytes of `member` in a ustar archive somewhere in `image` (the ramdisk is stored
/// uncompressed in the image's FAT partition).
fn ramdisk_member(image: &[u8], member: &str) -> Option<Vec<u8>> {
    let mut name = [0u8; 100];
    name[..member.len()].copy_from_slice(member.as_bytes());
    let at = image.windows(100).position(|w| w == name)?;
    let header = &image[at..at + 512];
    // Size: octal digits at offset 124.
    let size = std::str::from_utf8(&header[124..135]).ok()?;
    let size = usize::from_str_radix(size.trim_matches(['\0', ' ']), 8).ok()?;
    Some(image[at + 512..at + 512 + size].to_vec())
}

#[test]
fn image_packs_the_config_and_no_default_events() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), "cfg.txt", CONFIG);
    for (extra, events_line) in [
        (vec![], None),
        (vec!["--events", "cycles:u"], Some("events = cycles:u\n")),
    ] {
        let img = dir.path().join("x.img");
        let out = baremark()
            .args(["image", "--builtin", "hello", "--bios"])
            .arg(&img)
            .args(&extra)
            .arg("--config")
            .arg(&cfg)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("9 nanoBench events, counted in user mode"),
            "{}",
            stderr_of(&out)
        );
        let bytes = std::fs::read(&img).unwrap();
        let packed = ramdisk_member(&bytes, "events/nanobench.cfg").expect("the config member");
        assert_eq!(packed, CONFIG.as_bytes(), "packed as written");
        let run_cfg = String::from_utf8(ramdisk_member(&bytes, "run.cfg").unwrap()).unwrap();
        match events_line {
            // The config replaces the default events...
            None => assert!(!run_cfg.contains("events ="), "{run_cfg}"),
            // ...and is counted besides --events.
            Some(line) => assert!(run_cfg.contains(line), "{run_cfg}"),
        }
    }
}

/// A serial log of `baremark count add-latency --pmu emulated --config cfg.txt --events
/// 'cpu/event=0xc0,umask=0x0,name=INST_RETIRED.NAMED/u' --reps 5 --warmup 1 --log ...` (the
/// emulated Intel v4 PMU, exact counts): the config's names, and the `name=` term's, are what
/// the table, the JSON and the CSV call the results.
#[test]
fn results_carry_the_configs_names_in_the_table_json_and_csv() {
    let log = fixture("nanobench-emulated.log");
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let out = baremark()
        .arg("report")
        .arg(&log)
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stdout = stdout_of(&out);
    // name, per-iteration median, counter; the counter column aligned under its header.
    let header = stdout
        .lines()
        .find(|l| l.contains(" event ") && l.ends_with(" counter"))
        .expect("the table's header");
    // In characters: the header has a `±`.
    let counter_at = header[..header.find(" counter").unwrap()].chars().count() + 1;
    let counted = [
        ("INST_RETIRED.NAMED", "10.00", "gp0 g0 (emulated)"),
        ("INST_RETIRED.ANY_P", "10.00", "gp1 g0 (emulated)"),
        ("BR_INST_RETIRED.ALL_BRANCHES", "1.000", "gp3 g0 (emulated)"),
        // CTR=2: on GP counter 2, nowhere else.
        ("INST_RETIRED.ANY_P.CTR2", "10.00", "gp2 g0 (emulated)"),
        // TakenAlone: a group of its own.
        ("BR_INST_RETIRED.ALONE", "1.000", "gp0 g1 (emulated)"),
    ];
    for (name, median, counter) in counted {
        let row = stdout
            .lines()
            .find(|l| l.split_whitespace().nth(5) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"));
        assert_eq!(row.split_whitespace().next(), Some(median), "{row}");
        assert_eq!(
            row.chars().skip(counter_at).collect::<String>(),
            counter,
            "{row}"
        );
    }
    for (name, why) in [
        ("UOPS_ISSUED.ANY", "does not model `UOPS_ISSUED.ANY`"),
        (
            "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE",
            "has no MSR 0x1a6 (MSR_OFFCORE_RSP_0)",
        ),
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with('<') && l.contains(&format!(" {name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"));
        assert!(row.starts_with("<not supported>"), "{row}");
        assert!(row.contains(why), "{row}");
    }

    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let results = v["benchmarks"][0]["results"].as_array().unwrap();
    let names: Vec<(&str, bool)> = results
        .iter()
        .map(|r| {
            (
                r["event"].as_str().unwrap(),
                r["supported"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("tsc", true),
            ("INST_RETIRED.NAMED", true),
            ("INST_RETIRED.ANY_P", true),
            ("BR_INST_RETIRED.ALL_BRANCHES", true),
            ("INST_RETIRED.ANY_P.CTR2", true),
            ("BR_INST_RETIRED.ALONE", true),
            ("UOPS_ISSUED.ANY", false),
            ("OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE", false),
        ]
    );
    assert_eq!(results[3]["per_iteration"]["median"], 1.0);
    assert!(results[6]["value"].is_null(), "not supported is no value");

    let csv = std::fs::read_to_string(&csv).unwrap();
    let row = csv
        .lines()
        .find(|l| l.starts_with("add-latency,add-latency,INST_RETIRED.ANY_P.CTR2,"))
        .unwrap_or_else(|| panic!("no CSV row:\n{csv}"));
    assert!(row.contains(",gp2,"), "{row}");
    let row = csv
        .lines()
        .find(|l| l.starts_with("add-latency,add-latency,UOPS_ISSUED.ANY,"))
        .unwrap();
    assert!(row.contains(",false,"), "{row}");
}

//! The `baremark` command line, end to end: `run` (boots QEMU under TCG), `report` on the
//! saved log, and `image`; the results path (`report`, `run` and `count` against a stand-in
//! for QEMU that replays a serial log) on synthetic logs in tests/fixtures/.

mod common;

use common::{baremark, fake_qemu, fixture};

/// The report lines (record renderings) of `run` output: everything from `boot` to `end`.
fn report_lines(stdout: &str) -> Vec<String> {
    let start = stdout
        .lines()
        .position(|l| l.starts_with("boot "))
        .expect("a boot line");
    let end = stdout
        .lines()
        .position(|l| l.starts_with("end "))
        .expect("an end line");
    stdout
        .lines()
        .skip(start)
        .take(end - start + 1)
        .map(str::to_string)
        .collect()
}

#[test]
fn run_prints_the_report_and_report_reproduces_it_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serial.log");
    let out = baremark()
        .args([
            "run",
            "--accel",
            "tcg",
            "--timeout",
            "60",
            "--suite",
            "none",
            "--log",
        ])
        .arg(&log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("with tcg (requested with --accel tcg)"),
        "{stderr}"
    );
    for prefix in [
        "boot ",
        "cpu ",
        "checks ",
        "tsc ",
        "apic ",
        "pmu ",
        "end      ok",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(prefix)),
            "no `{prefix}` line in:\n{stdout}"
        );
    }
    // Timing to the first and the end record is reported.
    let timing = stdout
        .lines()
        .find(|l| l.contains("first record after"))
        .expect("timing line");
    assert!(
        timing.contains("end record after") && timing.contains("QEMU exit status 33"),
        "{timing}"
    );

    // The raw log holds the records; `report` renders the same lines from it.
    let raw = std::fs::read_to_string(&log).unwrap();
    assert!(
        raw.lines().any(|l| l.starts_with("{\"type\":\"end\"")),
        "log:\n{raw}"
    );
    let rep = baremark().arg("report").arg(&log).output().unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let rep_stdout = String::from_utf8_lossy(&rep.stdout);
    assert_eq!(report_lines(&rep_stdout), report_lines(&stdout));
}

#[test]
fn run_exits_with_failure_when_the_kernel_fails() {
    let out = baremark()
        .args([
            "run",
            "--accel",
            "tcg",
            "--timeout",
            "60",
            "--suite",
            "none",
            "--test",
            "panic",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("PANIC    kernel/src/boot/actions.rs:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the kernel reported failure: kernel panic"),
        "{stdout}"
    );
}

#[test]
fn report_rejects_a_file_without_records() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("noise.log");
    std::fs::write(&log, "just some\nserial noise\n").unwrap();
    let out = baremark().arg("report").arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no baremark records"));
}

#[test]
fn image_writes_bootable_bios_and_uefi_disks() {
    let dir = tempfile::tempdir().unwrap();
    let (bios, uefi) = (dir.path().join("bios.img"), dir.path().join("uefi.img"));
    let out = baremark()
        .args(["image", "--bios"])
        .arg(&bios)
        .arg("--uefi")
        .arg(&uefi)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bios = std::fs::read(&bios).unwrap();
    assert_eq!(&bios[510..512], &[0x55, 0xaa], "MBR boot signature");
    let uefi = std::fs::read(&uefi).unwrap();
    assert_eq!(&uefi[512..520], b"EFI PART", "GPT header at LBA 1");
    let out = baremark().arg("image").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no destination is an error");
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn events_encode_prints_the_exact_register_value() {
    let out = baremark()
        .args([
            "events",
            "encode",
            "instructions:u",
            "--cpu",
            "GenuineIntel-6-55",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("instructions:u"))
        .expect("a line for the event");
    assert!(line.contains("0x4100c0"), "{line}");
    assert!(line.contains("fixed 0 (ctrl 0x2)"), "{line}");

    let out = baremark()
        .args([
            "events",
            "encode",
            "instructions:u",
            "{cycles,branch-misses}:k",
            "r01c2",
            "--cpu",
            "GenuineIntel-6-55",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = json_of(&out);
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 4, "one object per event");
    assert_eq!(items[0]["spec"], "instructions:u");
    assert_eq!(items[0]["config"], "0x4100c0");
    assert_eq!(items[0]["fixed"], 0);
    assert_eq!(items[0]["fields"]["usr"], true);
    assert_eq!(items[0]["fields"]["os"], false);
    assert!(items[0]["error"].is_null());
    assert_eq!(items[1]["config"], "0x42003c", "cycles, kernel only");
    assert_eq!(items[2]["config"], "0x4200c5", "branch-misses, kernel only");
    assert!(items[2]["fixed"].is_null());
    assert_eq!(
        items[3]["config"], "0x4301c2",
        "r01c2 with perf's default user+kernel"
    );
}

#[test]
fn events_encode_with_intel_perfmon_data() {
    let perfmon = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/perfmon");
    assert!(
        std::path::Path::new(perfmon).join("mapfile.csv").exists(),
        "Intel perfmon test data not found at {perfmon} (../shared beside the clone): this test cannot run without it"
    );
    let out = baremark()
        .args([
            "events",
            "encode",
            "MACHINE_CLEARS.COUNT",
            "BR_MISP_RETIRED.ALL_BRANCHES:u",
        ])
        .args([
            "--cpu",
            "GenuineIntel-6-5E",
            "--perfmon",
            perfmon,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    // Skylake: event 0xC3 umask 0x01 with cmask 1 and edge, user+kernel, EN.
    assert_eq!(v[0]["config"], "0x14701c3");
    assert_eq!(v[0]["fields"]["cmask"], 1);
    assert_eq!(v[0]["fields"]["edge"], true);
    assert_eq!(v[1]["config"], "0x4100c5");
}

#[test]
fn events_encode_rejects_bad_input_with_the_parsers_message() {
    let out = baremark()
        .args(["events", "encode", "cyclez", "--cpu", "GenuineIntel-6-55"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("at column 1: unknown event name `cyclez`"),
        "{stderr}"
    );
    assert!(stderr.contains("^^^^^^"), "caret under the name: {stderr}");

    let out = baremark()
        .args([
            "events",
            "encode",
            "instructions",
            "cpu/umask=0x100/",
            "--cpu",
            "GenuineIntel-6-55",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert!(v[0]["error"].is_null());
    assert!(v[1]["config"].is_null());
    assert!(
        v[1]["error"].as_str().unwrap().contains("umask"),
        "{}",
        v[1]
    );

    let out = baremark()
        .args(["events", "encode", "cycles", "--cpu", "Cyrix-6-5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown vendor"));
}

#[test]
fn events_list_shows_supported_and_unsupported_events() {
    let out = baremark()
        .args([
            "events",
            "list",
            "--cpu",
            "AuthenticAMD-25-11",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = json_of(&out);
    let find = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .cloned()
            .unwrap()
    };
    let ref_cycles = find("ref-cycles");
    assert_eq!(ref_cycles["supported"], true);
    assert_eq!(
        ref_cycles["config"], "0x100430120",
        "Zen 4: event 0x120 umask 1"
    );
    let bus = find("bus-cycles");
    assert_eq!(bus["supported"], false);
    assert!(
        bus["reason"]
            .as_str()
            .unwrap()
            .contains("Linux maps no event")
    );

    let out = baremark()
        .args(["events", "list", "--cpu", "GenuineIntel-6-55"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("branch-misses") && l.contains("0x4300c5")),
        "{stdout}"
    );
    assert!(stdout.contains("not supported on this PMU:"));
}

#[test]
fn run_takes_builtin_and_file_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.elf");
    std::fs::write(&garbage, b"not an ELF").unwrap();
    let out = baremark()
        .args([
            "run",
            "--accel",
            "tcg",
            "--timeout",
            "60",
            "--no-timer-checks",
            "--builtin",
            "hello",
            "--payload",
        ])
        .arg(&garbage)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit {:?}\n{stdout}", out.status);
    for line in [
        "task     hello (#0) | entry 0x",
        "output   hello: hello from ring 3",
        "report   hello: rdtsc_delta=",
        "task     hello: exit 0 | 3 syscalls, 0 interrupts | virtual tsc ",
        "TASK     garbage: not run: payload is not an ELF file",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "no line starting `{line}` in:\n{stdout}"
        );
    }
}

#[test]
fn run_refuses_an_unknown_builtin_payload() {
    let out = baremark()
        .args(["run", "--accel", "tcg", "--builtin", "no-such-payload"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no built-in payload `no-such-payload` (there are: hello, loop1000"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Results: table, JSON, CSV, plot. The fixtures are synthetic serial logs with the harness
// records (docs/harness.md): bench-empty.log has two benchmarks measured with overhead `empty`
// on a KVM guest, 130 repetitions (so the samples of each kind span two records), events in two
// groups (multiplexed), an unsupported event, derived metrics, a harness error and a faulting
// payload; bench-diff.log is a TSC-only TCG run with overhead `diff`.

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout_of(out),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn report_renders_the_results_table_json_csv_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, svg) = (
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("r.svg"),
    );
    let out = baremark()
        .arg("report")
        .arg(fixture("bench-empty.log"))
        .arg("--detail")
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = stdout_of(&out);
    for want in [
        "machine  GenuineIntel-6-55-4 \"Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\" | hypervisor kvm",
        "         pmu backend intel-arch-v4 | tsc 2100.000 MHz (hypervisor-leaf)",
        "harness  130 repetitions after 5 warm-ups | overhead: empty region subtracted",
        "         events: tsc, instructions, cycles, branch-misses, topdown-retiring",
        "                 (2 groups, measured in turn)",
        " Performance counter stats for 'add-latency' (1,000 iterations, values per iteration; tsc in ticks):",
        " Performance counter stats for 'chase-l1' (10,000 iterations, values per iteration; tsc in ticks):",
        "   overhead: the empty region took 61.00 ticks (median) per region, subtracted",
        "   event groups: 2 measured one after another, each over all 130 repetitions (exact, not scaled)",
        "   interrupts: 2 in the measured regions (at most 1 in one repetition): they are in the values",
        "   outliers (outside the Tukey fences): tsc 1",
        "HARNESS  broken/twice: bench_samples: 3 samples for kind region, expected 130",
        "ERROR    [fault] broken: #GP general-protection at rip 0x401234",
        "2 benchmarks | 10 results, 2 not supported | 2 errors",
    ] {
        assert!(
            stdout.lines().any(|l| l == want),
            "no line `{want}` in:\n{stdout}"
        );
    }
    let row = |event: &str| {
        stdout
            .lines()
            .find(|l| l.contains(&format!("  {event} ")))
            .unwrap_or_else(|| panic!("no row for {event}:\n{stdout}"))
            .to_string()
    };
    let tsc = row("tsc");
    assert!(
        tsc.trim_start()
            .starts_with("4.000         4.000     0.87%        4.000        4.399"),
        "{tsc}"
    );
    assert!(row("cycles").ends_with("gp1 g0"), "{}", row("cycles"));
    let unsupported = row("topdown-retiring");
    assert!(unsupported.starts_with("<not supported>"), "{unsupported}");
    assert!(unsupported.ends_with("needs Intel architectural v5 (this PMU is v4)"));
    assert!(
        stdout
            .contains("   derived  IPC                                   1.000 instructions/cycle")
    );
    assert!(
        stdout.contains("branch_miss_ratio                       n/a (branches was not counted)")
    );
    // The table is readable at 100 columns (the reasons of unsupported events may run past).
    let table = &stdout[stdout.find("\nmachine  ").expect("a table")..];
    for line in table.lines().filter(|l| !l.starts_with("<not supported>")) {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }

    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "baremark-results/1");
    assert_eq!(v["machine"]["cpu"], "GenuineIntel-6-55-4");
    assert_eq!(v["machine"]["pmu_backend"], "intel-arch-v4");
    assert_eq!(v["machine"]["tsc_hz"], 2_100_000_000u64);
    assert_eq!(v["machine"]["tsc_method"], "hypervisor-leaf");
    assert_eq!(v["config"]["reps"], 130);
    assert_eq!(v["config"]["overhead"], "empty");
    assert_eq!(v["config"]["events"][3], "topdown-retiring");
    let benches = v["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 2);
    let b = &benches[0];
    assert_eq!(b["payload"], "add-latency");
    assert_eq!(b["iterations"], 1000);
    assert_eq!(b["results"].as_array().unwrap().len(), 5);
    assert_eq!(b["results"][0]["event"], "tsc");
    assert_eq!(b["results"][0]["per_iteration"]["median"], 4.0);
    assert!(
        b["results"][0].get("type").is_none(),
        "record header dropped"
    );
    assert_eq!(b["results"][4]["supported"], false);
    assert!(b["results"][4]["value"].is_null());
    // 130 repetitions arrived in two records (128 + 2) per kind and were joined in order.
    let region = b["samples"]["tsc"]["region"].as_array().unwrap();
    assert_eq!(region.len(), 130);
    assert!(region.iter().all(serde_json::Value::is_u64));
    assert_eq!(region[77], 4460, "the outlier repetition");
    assert_eq!(b["samples"]["tsc"]["empty"].as_array().unwrap().len(), 130);
    assert_eq!(b["samples"]["instructions"]["region"][129], 4040);
    assert_eq!(b["metrics"][0]["name"], "IPC");
    assert!(b["metrics"][2]["value"].is_null());
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["kind"], "harness_error");
    assert_eq!(errors[0]["bench"], "twice");
    assert_eq!(v["summary"]["results"], 10);

    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv_text.lines().collect();
    assert_eq!(rows.len(), 1 + 10, "a header and one row per result");
    assert_eq!(
        rows[0],
        "payload,bench,event,unit,supported,reason,counter,group,reps,warmup,iterations,overhead,\
value_median,value_mean,value_stddev,value_min,value_max,value_mean_20_80,\
per_iteration_median,per_iteration_mean,per_iteration_stddev,per_iteration_min,per_iteration_max,\
per_iteration_mean_20_80,outliers,interrupts,emulated"
    );
    assert!(
        rows[1].starts_with("add-latency,add-latency,tsc,ticks,true,,tsc,,130,5,1000,empty,4000,")
    );
    assert_eq!(
        rows[5],
        "add-latency,add-latency,topdown-retiring,events,false,needs Intel architectural v5 (this PMU is v4),,,130,5,1000,empty,,,,,,,,,,,,,,,false"
    );

    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") || svg_text.starts_with("<?xml"));
    assert!(svg_text.trim_end().ends_with("</svg>"));
    for name in ["add-latency", "chase-l1", "GenuineIntel-6-55-4"] {
        assert!(svg_text.contains(name), "{name} not in the plot");
    }
}

#[test]
fn report_summarises_several_benchmarks_in_one_table() {
    let out = baremark()
        .arg("report")
        .arg(fixture("bench-empty.log"))
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = stdout_of(&out);
    // One table: a row per benchmark, a column per event counted anywhere.
    for want in [
        " Summary of 2 benchmarks: median per iteration ± relative standard deviation over 130 repetitions; tsc in ticks",
        " benchmark             tsc  instructions        cycles  branch-misses",
        " add-latency  4.000 ±0.87%  4.000 ±0.00%  4.000 ±0.02%     0 ±141.99%",
        " chase-l1     4.000 ±0.09%  4.000 ±0.00%  16.00 ±0.00%     0 ±137.14%",
        "   not counted in any benchmark: topdown-retiring (needs Intel architectural v5 (this PMU is v4))",
        "   overhead: the empty region, 61.00 to 81.00 ticks per region (median), measured with each benchmark and subtracted",
        "   event groups: 2 measured one after another, each over all repetitions (exact, not scaled)",
        "   interrupts in the measured regions (they are in the values): chase-l1 (2)",
        "   per-benchmark tables, outliers and derived metrics: --detail",
        "2 benchmarks | 10 results, 2 not supported | 2 errors",
    ] {
        assert!(
            stdout.lines().any(|l| l == want),
            "no line `{want}` in:\n{stdout}"
        );
    }
    assert!(
        !stdout.contains("Performance counter stats"),
        "the per-benchmark tables only with --detail:\n{stdout}"
    );
}

#[test]
fn the_suite_summary_shows_the_empty_benchmark_as_the_overhead() {
    // A real serial log: the default suite under TCG (virtual TSC only).
    let out = baremark()
        .arg("report")
        .arg(fixture("suite-tcg.log"))
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = stdout_of(&out);
    let rows: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with(" benchmark "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 16, "a row per benchmark:\n{stdout}");
    // The empty benchmark's value after overhead removal is 0 by construction: its row is the
    // overhead itself, as the footnote gives it, never a negative number.
    assert!(
        rows[0].starts_with(" empty (the overhead)     98.00 ±"),
        "{}",
        rows[0]
    );
    assert!(stdout.lines().any(|l| l
        == "   overhead: the empty region, 98.00 ticks per region (median), measured with each benchmark and subtracted"));
    assert!(stdout.lines().any(|l| l.starts_with(
        "   not counted in any benchmark: cycles, instructions, branches, branch-misses (no programmable counters"
    )));
    assert!(rows.iter().all(|r| !r.contains(" -")), "{stdout}");
    // --detail: the per-benchmark tables instead.
    let out = baremark()
        .arg("report")
        .arg(fixture("suite-tcg.log"))
        .arg("--detail")
        .output()
        .unwrap();
    assert_ok(&out);
    let detail = stdout_of(&out);
    assert_eq!(detail.matches("Performance counter stats for").count(), 16);
    assert!(!detail.contains(" Summary of"));
}

#[test]
fn report_shows_diff_mode_and_events_the_pmu_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("d.json");
    let out = baremark()
        .arg("report")
        .arg(fixture("bench-diff.log"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = stdout_of(&out);
    for want in [
        "harness  5 repetitions after 0 warm-ups | overhead: diff (run of 2U iterations minus run of U)",
        "   diff: medians 4,103 ticks for U iterations, 8,103 for 2U; values are the difference",
        "1 benchmark | 2 results, 1 not supported | 0 errors",
    ] {
        assert!(
            stdout.lines().any(|l| l == want),
            "no `{want}` in:\n{stdout}"
        );
    }
    assert!(
        !stdout.contains("multiplexed"),
        "one group is not multiplexed"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let tsc = &v["benchmarks"][0]["results"][0];
    assert_eq!(tsc["overhead"], "diff");
    assert_eq!(tsc["raw2x"]["median"], 8103.0);
    assert_eq!(tsc["value"]["median"], 4000.0);
    assert!(tsc["overhead_stats"].is_null());
    assert_eq!(
        v["benchmarks"][0]["samples"]["tsc"]["region2x"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert_eq!(v["machine"]["cpu"], "AuthenticAMD-15-6B-1");
}

#[test]
fn run_and_report_write_the_same_files_for_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let qemu = fake_qemu(dir.path(), &fixture("bench-empty.log"));
    let files =
        |tag: &str| ["json", "csv", "svg"].map(|ext| dir.path().join(format!("{tag}.{ext}")));
    let [run_json, run_csv, run_svg] = files("run");
    let log = dir.path().join("serial.log");
    let run = baremark()
        .env("BAREMARK_QEMU", &qemu)
        .args([
            "run",
            "--accel",
            "tcg",
            "--timeout",
            "30",
            "--suite",
            "none",
        ])
        .arg("--log")
        .arg(&log)
        .arg("--json")
        .arg(&run_json)
        .arg("--csv")
        .arg(&run_csv)
        .arg("--plot")
        .arg(&run_svg)
        .output()
        .unwrap();
    assert_ok(&run);
    let [rep_json, rep_csv, rep_svg] = files("report");
    let rep = baremark()
        .arg("report")
        .arg(&log)
        .arg("--json")
        .arg(&rep_json)
        .arg("--csv")
        .arg(&rep_csv)
        .arg("--plot")
        .arg(&rep_svg)
        .output()
        .unwrap();
    assert_ok(&rep);
    for (a, b) in [(run_json, rep_json), (run_csv, rep_csv), (run_svg, rep_svg)] {
        let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
        assert!(!a.is_empty());
        assert!(a == b, "run and report wrote different bytes");
    }
    // The same report lines and table; `run` then says how QEMU ran.
    let (run_out, rep_out) = (stdout_of(&run), stdout_of(&rep));
    assert!(
        run_out.starts_with(&rep_out),
        "run:\n{run_out}\nreport:\n{rep_out}"
    );
    assert!(run_out[rep_out.len()..].starts_with("qemu     tcg"));
}

#[test]
fn count_prints_only_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let qemu = fake_qemu(dir.path(), &fixture("bench-diff.log"));
    let out = baremark()
        .env("BAREMARK_QEMU", &qemu)
        .args(["count", "--accel", "tcg", "--timeout", "30", "hello"])
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = stdout_of(&out);
    assert!(
        stdout.starts_with("machine  AuthenticAMD-15-6B-1"),
        "{stdout}"
    );
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with("boot ") || l.starts_with("task "))
    );
    assert!(stdout.contains("Performance counter stats for 'seq-read'"));
    assert!(stdout.contains("   derived  tsc_ns_per_iteration"));

    let out = baremark()
        .args(["count", "no-such-payload"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither a file nor a built-in payload"));
}

#[test]
fn events_are_checked_before_anything_is_built() {
    for (args, column, carets) in [
        (
            vec!["run", "--events", "instructions,cyclez"],
            14,
            "             ^^^^^^",
        ),
        (
            vec!["count", "--events", "{cycles,instructions", "hello"],
            1,
            "^",
        ),
        (
            vec![
                "image",
                "--usb",
                "/nonexistent/x.img",
                "--events",
                "cycles:q",
            ],
            8,
            "       ^",
        ),
    ] {
        let out = baremark()
            .env("BAREMARK_QEMU", "/nonexistent/qemu")
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("baremark: error: --events: at column {column}: ")),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.lines().any(|l| l == format!("    {carets}")),
            "{args:?}: no caret line `    {carets}` in:\n{stderr}"
        );
    }
}

#[test]
fn bad_content_and_destinations_are_refused_with_a_reason() {
    for (args, want) in [
        (
            vec!["run", "--suite", "nope"],
            "no suite `nope`; there are:",
        ),
        (vec!["run", "--reps", "0"], "--reps"),
        (vec!["run", "--warmup", "1001"], "--warmup"),
        (vec!["run", "--overhead", "half"], "--overhead"),
        (vec!["run", "--plot", "out.png"], "plots are written as SVG"),
        (
            vec!["report", "x.log", "--json", "/nonexistent/dir/r.json"],
            "does not exist",
        ),
        (
            vec!["image", "--usb", "x.img", "--perfmon", "/nonexistent"],
            "no mapfile.csv",
        ),
        (
            vec!["run", "--builtin", "hello", "--builtin", "hello"],
            "payload `hello` is given twice",
        ),
    ] {
        let out = baremark()
            .env("BAREMARK_QEMU", "/nonexistent/qemu")
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: no `{want}` in {stderr}");
    }
}

#[test]
fn usb_image_carries_bios_boot_code_and_the_uefi_bootloader() {
    let dir = tempfile::tempdir().unwrap();
    let usb = dir.path().join("usb.img");
    let out = baremark()
        .args(["image", "--usb"])
        .arg(&usb)
        .args(["--builtin", "hello", "--reps", "3"])
        .output()
        .unwrap();
    assert_ok(&out);
    let img = std::fs::read(&usb).unwrap();
    assert_eq!(&img[510..512], &[0x55, 0xaa], "MBR boot signature");
    // The FAT partition's directory holds the UEFI fallback boot program (8.3 name).
    assert!(
        img.windows(11).any(|w| w == b"BOOTX64 EFI"),
        "no efi/boot/bootx64.efi in the image"
    );
    assert!(stdout_of(&out).contains("wrote USB (BIOS and UEFI) image"));
}

#[test]
fn background_mistakes_are_refused_before_booting() {
    for (args, want) in [
        (
            vec!["--builtin", "hello", "--background", "spin@2"],
            "background payload `spin` is to run on CPU 2, but QEMU gets 1 CPU (index 0, the boot CPU): add --smp 3",
        ),
        (
            vec!["--smp", "2", "--builtin", "hello", "--background", "spin@0"],
            "CPU 0, the boot CPU, runs the other payloads",
        ),
        (
            vec!["--smp", "2", "--builtin", "hello", "--background", "spin"],
            "give the CPU it runs on, 1 or more",
        ),
        (
            vec![
                "--smp",
                "3",
                "--builtin",
                "hello@1",
                "--background",
                "spin@1",
            ],
            "payload `hello` is to run on CPU 1 too",
        ),
    ] {
        let out = baremark()
            .env("BAREMARK_QEMU", "/nonexistent/qemu")
            .arg("run")
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: no `{want}` in {stderr}");
    }
}

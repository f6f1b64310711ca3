//! Choosing a CPU from the command line (issue 28), as users run it: `--smp N` and
//! `--builtin NAME@CPU` (`count NAME@CPU`, `--on-cpu`). Mistakes are refused before anything
//! boots; a run on QEMU (TCG) with four CPUs shows the `cpus` line, the CPU that did not start,
//! and the benchmark on the CPU it was given, in the report, the table and the JSON file.
//! Every command runs in a temporary folder: nothing is written into the working tree.

use std::process::Output;

fn text(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn baremark(dir: &std::path::Path, args: &[&str]) -> Output {
    baremark_tests::baremark_cli()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("baremark runs")
}

#[test]
fn mistakes_in_choosing_a_cpu_are_refused_before_booting() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["run", "--smp", "2", "--builtin", "hello@3"][..],
            "payload `hello` is pinned to CPU 3, but QEMU gets 2 CPUs (indexes 0 to 1): add --smp 4 (or more)",
        ),
        (
            &["count", "hello@1"][..],
            "pinned to CPU 1, but QEMU gets 1 CPU (index 0, the boot CPU): add --smp 2",
        ),
        (
            &["count", "hello", "--on-cpu", "2", "--smp", "2"][..],
            "pinned to CPU 2, but QEMU gets 2 CPUs",
        ),
        (
            &["count", "hello@1", "--on-cpu", "2"][..],
            "CPU 1 there, but --on-cpu 2",
        ),
        (
            &["run", "--builtin", "hello@x"][..],
            "--builtin hello@x: `x` is not a CPU index",
        ),
        (
            &["run", "--builtin", "hello@"][..],
            "--builtin hello@: give a CPU index after `@`",
        ),
        (
            &["run", "--builtin", "hello@512"][..],
            "past the kernel's 512 CPUs",
        ),
        (
            &["run", "--suite", "core@2"][..],
            "pinned to CPU 2, but QEMU gets 1 CPU",
        ),
        (
            &["run", "--smp", "0"][..],
            "QEMU's q35 machine takes 1 to 288",
        ),
        (&["run", "--smp", "289"][..], "takes 1 to 288"),
        (
            &["run", "--smp", "4", "--cpus", "0,2-4"][..],
            "--cpus names CPU 4, but QEMU gets 4 CPUs (indexes 0 to 3): add --smp 5 (or more), or give --cpus all",
        ),
        (
            &["count", "hello", "--cpus", "1"][..],
            "--cpus names CPU 1, but QEMU gets 1 CPU (index 0, the boot CPU)",
        ),
        (
            &["run", "--cpus", "2,1"][..],
            "in ascending order (CPU 1 comes after 2)",
        ),
        (&["run", "--cpus", "3-1"][..], "a range goes up (e.g. 1-3)"),
        (
            &["run", "--cpus", "every"][..],
            "`every` is not a CPU index or a range",
        ),
        (
            &["run", "--cpus", ""][..],
            "give `all`, `each-type` or CPU indexes",
        ),
        (&["run", "--cpus", "600"][..], "past the kernel's 512 CPUs"),
        (
            &["count", "hello@1", "--cpus", "all", "--smp", "2"][..],
            "CPU 1 there, but --cpus all: give one",
        ),
        (&["run", "--smp", "four"][..], "is not a number of CPUs"),
    ] {
        let out = baremark(dir.path(), args);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        assert!(all.contains(says), "{args:?}: {all}");
        assert!(
            !all.contains("booting the"),
            "{args:?}: refused after booting: {all}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "a refused command writes nothing"
    );
}

#[test]
fn a_benchmark_runs_on_the_cpu_named_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.json");
    let out = baremark(
        dir.path(),
        &[
            "run",
            "--accel",
            "tcg",
            "--smp",
            "4",
            "--builtin",
            "add-latency@3",
            "--builtin",
            "add-throughput",
            "--test-phantom-cpu",
            "9",
            "--reps",
            "5",
            "--timeout",
            "120",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One line for the CPUs, and why the one that did not start did not.
    assert!(
        stdout.contains(
            "\ncpus     4 online (APIC IDs 0-3) | 1 failed\n         APIC ID 9: not started: "
        ),
        "{all}"
    );
    assert!(
        !stdout.contains("\nprocessor"),
        "no raw processor lines: {all}"
    );
    assert!(
        stdout.contains("task     add-latency (#0) | entry "),
        "{all}"
    );
    let task = stdout
        .lines()
        .find(|l| l.starts_with("task     add-latency (#0)"))
        .unwrap();
    assert!(task.ends_with(" | cpu 3"), "{task}");
    let other = stdout
        .lines()
        .find(|l| l.starts_with("task     add-throughput (#1)"))
        .unwrap();
    assert!(!other.contains("cpu"), "the boot CPU is not named: {other}");
    // The summary's cpu column.
    assert!(stdout.contains("\n benchmark       cpu"), "{all}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!(" {name} ")))
            .unwrap_or_else(|| panic!("no row for {name}: {all}"))
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string()
    };
    assert_eq!(row("add-latency"), "3");
    assert_eq!(row("add-throughput"), "0");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["machine"]["cpus_online"], 4);
    let benchmarks = v["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks[0]["payload"], "add-latency");
    assert_eq!(benchmarks[0]["cpu"], 3);
    assert_eq!(benchmarks[0]["results"][0]["cpu"], 3);
    assert_eq!(benchmarks[1]["cpu"], 0);
}

#[test]
fn count_measures_on_the_cpu_given() {
    let dir = tempfile::tempdir().unwrap();
    let out = baremark(
        dir.path(),
        &[
            "count",
            "add-latency@2",
            "--accel",
            "tcg",
            "--smp",
            "3",
            "--reps",
            "5",
            "--timeout",
            "120",
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(" Performance counter stats for 'add-latency' on cpu 2 ("),
        "{all}"
    );
}

/// The QEMU with the emulated PMU (BAREMARK_QEMU_PMU, or built once).
fn emulated_qemu_ready() {
    baremark::qemu::emulated_pmu_qemu()
        .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}"));
}

/// `(payload, cpu, event) -> per-iteration median` of a `--json` results file.
fn medians(json: &std::path::Path) -> Vec<(String, u64, String, f64)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let mut out = Vec::new();
    for b in v["benchmarks"].as_array().unwrap() {
        for r in b["results"].as_array().unwrap() {
            out.push((
                b["payload"].as_str().unwrap().to_string(),
                b["cpu"].as_u64().unwrap(),
                r["event"].as_str().unwrap().to_string(),
                r["per_iteration"]["median"].as_f64().unwrap_or(f64::NAN),
            ));
        }
    }
    out
}

/// `--cpus all` on the emulated PMU with four CPUs under icount: two suite payloads on each
/// CPU in turn, every count exact and the same on each core and as on one CPU; the summary has
/// a column per CPU and `-x` carries the CPU as `perf stat -A` does.
#[test]
fn the_suite_on_every_core_counts_the_same_on_each() {
    emulated_qemu_ready();
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "--pmu",
        "emulated",
        "--builtin",
        "add-latency",
        "--builtin",
        "branch-predictable",
        "--reps",
        "5",
        "--events",
        "instructions,branches",
        "--timeout",
        "240",
    ];
    let all_json = dir.path().join("all.json");
    let mut args = vec!["run", "--smp", "4", "--cpus", "all", "-x", ",", "--json"];
    args.push(all_json.to_str().unwrap());
    args.extend(common);
    let out = baremark(dir.path(), &args);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let one_json = dir.path().join("one.json");
    let mut args = vec!["run", "--json", one_json.to_str().unwrap()];
    args.extend(common);
    let single = baremark(dir.path(), &args);
    assert_eq!(single.status.code(), Some(0), "{}", text(&single));

    let one = medians(&one_json);
    let every = medians(&all_json);
    assert_eq!(one.len(), 2 * 3, "{one:?}");
    assert_eq!(every.len(), 4 * one.len(), "{every:?}");
    for (payload, cpu, event, median) in &one {
        assert_eq!(*cpu, 0);
        assert!(median.is_finite() && *median > 0.0, "{payload} {event}");
        for on in 0..4u64 {
            let m = every
                .iter()
                .find(|(p, c, e, _)| p == payload && *c == on && e == event)
                .unwrap_or_else(|| panic!("no {event} of {payload} on CPU {on}: {all}"));
            assert_eq!(m.3, *median, "{payload} {event} on CPU {on}: {all}");
        }
    }
    // The human report (on stderr beside -x): a table per event, a column per CPU.
    let human = String::from_utf8_lossy(&out.stderr);
    assert!(
        human.contains(" Summary of 2 benchmarks on 4 CPUs: "),
        "{all}"
    );
    let heading = human
        .lines()
        .find(|l| l.starts_with(" instructions "))
        .unwrap_or_else(|| panic!("no instructions table: {all}"));
    assert_eq!(
        heading.split_whitespace().collect::<Vec<_>>(),
        [
            "instructions",
            "cpu",
            "0",
            "cpu",
            "1",
            "cpu",
            "2",
            "cpu",
            "3"
        ],
        "{all}"
    );
    let row = human
        .lines()
        .skip_while(|l| !l.starts_with(" instructions "))
        .find(|l| l.starts_with(" add-latency "))
        .unwrap();
    let cells: Vec<&str> = row
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cells.len(), 5, "{row}");
    assert!(cells[1..].iter().all(|c| *c == cells[1]), "{row}");
    // -x: the CPU first on every line.
    let csv = String::from_utf8_lossy(&out.stdout);
    for on in 0..4 {
        assert!(
            csv.lines()
                .any(|l| l.starts_with(&format!("CPU{on},"))
                    && l.contains(",instructions,add-latency,")),
            "{csv}"
        );
    }
    assert!(csv.lines().all(|l| l.starts_with("CPU")), "{csv}");
}

/// A perfmon directory for the emulated part (GenuineIntel-6-5E) as a hybrid one: the Core
/// cores' table has an event the Atom cores' has not, and the other way round.
fn hybrid_perfmon(dir: &std::path::Path) -> std::path::PathBuf {
    let root = dir.join("perfmon");
    std::fs::create_dir_all(root.join("HYB/events")).unwrap();
    std::fs::write(
        root.join("mapfile.csv"),
        "Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n\
         GenuineIntel-6-5E,V1,/HYB/events/hyb_atom_core.json,hybridcore,0x20,0x000001,Atom\n\
         GenuineIntel-6-5E,V1,/HYB/events/hyb_core_core.json,hybridcore,0x40,0x000001,Core\n",
    )
    .unwrap();
    let table = |name: &str, code: &str| {
        serde_json::json!({"Header": {"Info": "test"}, "Events": [{
            "EventCode": code, "UMask": "0x00", "EventName": name, "BriefDescription": "test",
            "Counter": "0,1", "CounterMask": "0", "Invert": "0", "EdgeDetect": "0",
            "MSRIndex": "0x00", "MSRValue": "0x00", "TakenAlone": "0", "Offcore": "0",
            "Deprecated": "0"}]})
        .to_string()
    };
    // Instructions retired on the Core cores, branches on the Atom cores (both architectural,
    // so the emulated PMU counts them exactly).
    std::fs::write(
        root.join("HYB/events/hyb_core_core.json"),
        table("CORE_ONLY.INSTRUCTIONS", "0xc0"),
    )
    .unwrap();
    std::fs::write(
        root.join("HYB/events/hyb_atom_core.json"),
        table("ATOM_ONLY.BRANCHES", "0xc4"),
    )
    .unwrap();
    root
}

/// `--cpus each-type` on the emulated hybrid part (CPUs 2 and 3 Atom): one Core and one Atom
/// CPU, each with its own perfmon table's events; an event of the other type's table is
/// `<not supported>` there, with the reason, and only there.
#[test]
fn each_core_type_counts_its_own_events() {
    emulated_qemu_ready();
    let dir = tempfile::tempdir().unwrap();
    let perfmon = hybrid_perfmon(dir.path());
    let cpu = format!(
        "{},pmu-hybrid-from=2",
        baremark::qemu::PmuModel::IntelV5.default_cpu()
    );
    let json = dir.path().join("r.json");
    let out = baremark(
        dir.path(),
        &[
            "run",
            "--pmu",
            "emulated",
            "--pmu-model",
            "intel-v5",
            "--cpu",
            &cpu,
            "--smp",
            "4",
            "--cpus",
            "each-type",
            "--builtin",
            "add-latency",
            "--reps",
            "5",
            "--perfmon",
            perfmon.to_str().unwrap(),
            "--events",
            "instructions,CORE_ONLY.INSTRUCTIONS,ATOM_ONLY.BRANCHES",
            "--timeout",
            "240",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let benchmarks = v["benchmarks"].as_array().unwrap();
    let placed: Vec<(u64, &str)> = benchmarks
        .iter()
        .map(|b| (b["cpu"].as_u64().unwrap(), b["core_type"].as_str().unwrap()))
        .collect();
    assert_eq!(placed, [(0, "core"), (2, "atom")], "{all}");
    let result = |b: usize, event: &str| {
        benchmarks[b]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["event"] == event)
            .unwrap_or_else(|| panic!("no {event}: {all}"))
            .clone()
    };
    for b in 0..2 {
        assert_eq!(result(b, "instructions")["per_iteration"]["median"], 10.0);
    }
    let counted = |b: usize, event: &str, per: f64| {
        let r = result(b, event);
        assert_eq!(r["supported"], true, "{r}");
        assert_eq!(r["per_iteration"]["median"], per, "{r}");
    };
    let refused = |b: usize, event: &str, only: &str, here: &str| {
        let r = result(b, event);
        assert_eq!(r["supported"], false, "{r}");
        let why = r["reason"].as_str().unwrap();
        assert!(
            why.contains(&format!("an event of this hybrid part's {only} cores only"))
                && why.contains(&format!("not on this {here} CPU")),
            "{why}"
        );
    };
    counted(0, "CORE_ONLY.INSTRUCTIONS", 10.0);
    refused(1, "CORE_ONLY.INSTRUCTIONS", "Core", "Atom");
    counted(1, "ATOM_ONLY.BRANCHES", 1.0);
    refused(0, "ATOM_ONLY.BRANCHES", "Atom", "Core");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\n CORE_ONLY.INSTRUCTIONS  cpu 0 (core)   cpu 2 (atom)\n add-latency             10.00 ±0.00%  not supported\n"),
        "{all}"
    );
    assert!(
        stdout.contains("   CORE_ONLY.INSTRUCTIONS not supported on cpu 2 (atom): `CORE_ONLY.INSTRUCTIONS` is an event of this hybrid part's Core cores only"),
        "{all}"
    );
}

/// `count --cpus all`: one payload on each CPU in turn, a table for each naming its CPU.
#[test]
fn count_on_every_cpu_prints_a_table_per_cpu() {
    emulated_qemu_ready();
    let dir = tempfile::tempdir().unwrap();
    let out = baremark(
        dir.path(),
        &[
            "count",
            "add-latency",
            "--pmu",
            "emulated",
            "--smp",
            "2",
            "--cpus",
            "all",
            "--reps",
            "5",
            "--events",
            "instructions",
            "--timeout",
            "240",
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for cpu in 0..2 {
        let table = stdout
            .split(" Performance counter stats for ")
            .find(|t| t.starts_with(&format!("'add-latency' on cpu {cpu} (")))
            .unwrap_or_else(|| panic!("no table for CPU {cpu}: {all}"));
        let line = table
            .lines()
            .find(|l| l.contains(" instructions "))
            .unwrap();
        assert!(line.trim_start().starts_with("10.00 "), "{line}");
    }
}

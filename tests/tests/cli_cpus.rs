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

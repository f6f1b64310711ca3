//! The `baremark` command line, end to end: `run` (boots QEMU under TCG), `report` on the
//! saved log, and `image`.

use std::process::Command;

fn baremark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_baremark"))
}

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
        .args(["run", "--accel", "tcg", "--timeout", "60", "--log"])
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
            "--test",
            "panic",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("PANIC    kernel/src/machine.rs:"),
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
    if !std::path::Path::new(perfmon).join("mapfile.csv").exists() {
        eprintln!("skipping: {perfmon} not found (Intel perfmon test data)");
        return;
    }
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

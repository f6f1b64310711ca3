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

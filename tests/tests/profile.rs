//! Sampling profiles end to end on the emulated PMU (exact counts under `-icount shift=0`):
//! `baremark run --sample instructions:u@10007 --builtin profile` as users run it, then
//! `baremark report --profile` on its log. The `profile` payload's `heavy` and `light` run 3:1
//! instructions (payloads/profile/src/main.rs), so their samples must be 3:1 within one sample;
//! nothing may be lost; the report names both functions and their source lines.

use std::process::Output;

use baremark::profile::{self, Symbolizer};
use baremark::records::records_of_log;

const PERIOD: u64 = 10007;
const SOURCE: &str = include_str!("../../payloads/profile/src/main.rs");

fn text(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The 1-based lines of `heavy`'s and `light`'s `asm!`, where their loops are.
fn asm_lines() -> Vec<u32> {
    SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "core::arch::asm!(")
        .map(|(i, _)| i as u32 + 1)
        .collect()
}

#[test]
fn heavy_and_light_are_sampled_three_to_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serial.log");
    let run = baremark_tests::baremark_cli()
        .args([
            "run",
            "--pmu",
            "emulated",
            "--builtin",
            "profile",
            "--no-timer-checks",
        ])
        .args([
            "--task-budget-ms",
            "0",
            "--timeout",
            "180",
            "--events",
            "none",
        ])
        .args(["--sample", &format!("instructions:u@{PERIOD}")])
        .arg("--log")
        .arg(&log)
        .arg("--profile-dir")
        .arg(dir.path())
        .output()
        .expect("running baremark");
    assert!(run.status.success(), "{}", text(&run));
    let records = records_of_log(&std::fs::read_to_string(&log).unwrap());
    let all = profile::collect(&records);
    let config_errors: Vec<String> = records
        .iter()
        .filter(|r| r.kind == "config_error")
        .map(|r| r.value.to_string())
        .collect();
    assert_eq!(
        all.len(),
        1,
        "one task sampled on one event; the kernel's config errors: {config_errors:?}\n{}",
        text(&run)
    );
    let t = &all[0];
    assert_eq!((t.task.as_str(), t.slot, t.period), ("profile", 0, PERIOD));
    assert_eq!(
        t.event, 0x1_00c0,
        "instructions:u on the Intel model, without EN and INT"
    );
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.lost(), 0, "no sample may be lost");
    assert_eq!(t.summary.map(|(n, _)| n), Some(t.rips.len() as u64));

    let elf = baremark::payloads::builtin("profile").unwrap().elf;
    let sym = Symbolizer::new(elf, "profile").unwrap();
    let p = profile::analyze(t, Some(&sym));
    let of = |name: &str| {
        p.functions
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, k)| *k)
    };
    let (heavy, light) = (of("profile::heavy"), of("profile::light"));
    // 200 * (12002 + 4002) instructions in the two, about 2,000 around them: 320 samples.
    assert!((300..=340).contains(&p.total), "{p:?}");
    assert!(
        heavy + light + 2 >= p.total,
        "nearly every sample is in heavy or light: {p:?}"
    );
    let both = (heavy + light) as f64;
    assert!(
        (heavy as f64 - 0.75 * both).abs() <= 1.0 && (light as f64 - 0.25 * both).abs() <= 1.0,
        "heavy {heavy} : light {light} is not 3:1 within one sample"
    );
    // `run` printed the same profile.
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("profile::heavy") && stdout.contains("hottest function"),
        "{stdout}"
    );

    let report = baremark_tests::baremark_cli()
        .arg("report")
        .arg(&log)
        .arg("--profile")
        .arg("--profile-dir")
        .arg(dir.path())
        .output()
        .expect("running baremark report");
    assert!(report.status.success(), "{}", text(&report));
    let out = String::from_utf8_lossy(&report.stdout);
    let lines = asm_lines();
    for (name, line) in [("profile::heavy", lines[0]), ("profile::light", lines[1])] {
        let row = out
            .lines()
            .find(|l| l.contains(&format!(" {name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{out}"));
        assert!(
            row.trim_end()
                .ends_with(&format!("payloads/profile/src/main.rs:{line}")),
            "{name}'s row names its loop's source line {line}: {row}"
        );
    }
    assert!(
        out.contains(&format!("instructions:u (0x100c0) every {PERIOD} events")),
        "{out}"
    );
    let svg = dir.path().join("profile-profile-0-slot0.svg");
    let svg = std::fs::read_to_string(&svg).expect("the SVG is written");
    assert!(svg.contains("profile::heavy") && svg.contains("profile::light"));
}

/// `run --sample` mistakes end the command with status 2 and the reason, before QEMU starts.
#[test]
fn bad_sample_options_are_refused_with_the_reason() {
    for (args, reason) in [
        (&["--sample", "instructions:u@0"][..], "the period is 0"),
        (&["--sample", "instructions:u"], "give EVENT@PERIOD"),
        (&["--sample", "instructions:u@4294967296"], "too large"),
        (&["--sample", "instrucions@1000"], "instrucions"),
        (
            &["--sample", "cycles@1000", "--accel", "tcg"],
            "QEMU's plain TCG emulates none",
        ),
        (
            &[
                "--sample",
                "cycles@1000",
                "--pmu",
                "emulated",
                "--elf",
                "x=/nonexistent.elf",
            ],
            "--elf x=/nonexistent.elf: cannot read",
        ),
    ] {
        let out = baremark_tests::baremark_cli()
            .args(["run", "--builtin", "profile"])
            .args(args)
            .output()
            .expect("running baremark");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(reason),
            "{args:?}: no `{reason}` in\n{stderr}"
        );
    }
}

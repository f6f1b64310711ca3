//! The C payload example (`payloads/c`): built with the system's `make` and `gcc` into
//! `target/tmp`, checked by the kernel's loader, then run under the harness in QEMU with
//! `-icount shift=0`, where its `imul` chain must come out at exactly the instructions per
//! iteration it reports, like the Rust suite's `add-latency` (tests/tests/harness.rs); and its
//! `counters.elf` (the counter syscalls from C) on the emulated PMU. Fails
//! with the reason on machines without `make` or `gcc` (the test command's machines have both).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Firmware, Overhead, RunConfig};
use baremark::session::RunOutcome;
use baremark_tests::{
    bench_result, boot, boot_emulated_ok, expect_exact_per_iteration, expect_loadable_payload,
    expect_record, expect_success, instructions_per_iteration,
};

const BENCH: &str = "imul-latency";
const REPS: u32 = 12;
const WARMUP: u32 = 3;

/// Whether `tool --version` runs.
fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `bench.elf`, built once per test process.
fn elf() -> Option<&'static [u8]> {
    static ELF: OnceLock<Vec<u8>> = OnceLock::new();
    Some(
        ELF.get_or_init(|| std::fs::read(built().join("bench.elf")).expect("make wrote bench.elf")),
    )
}

/// `counters.elf`.
fn counters_elf() -> Vec<u8> {
    std::fs::read(built().join("counters.elf")).expect("make wrote counters.elf")
}

/// The folder `make` built payloads/c into, once per test process.
fn built() -> &'static Path {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    OUT.get_or_init(|| {
        // Without the tools the test cannot run its subject: it fails, never passes silently.
        assert!(
            have("make") && have("gcc"),
            "`make` and `gcc` are needed to build payloads/c (apt-get install make gcc)"
        );
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../payloads/c");
        // Build products go to target/tmp, never into the source tree.
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-payload");
        let built = Command::new("make")
            .arg("-C")
            .arg(&src)
            .arg(format!("OUT={}", out.display()))
            .arg("CC=gcc")
            .output()
            .expect("make runs");
        assert!(
            built.status.success(),
            "make -C payloads/c failed:\n{}{}",
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
        out
    })
}

fn run(elf: &[u8], overhead: Overhead) -> RunOutcome {
    let config = RunConfig {
        timer_checks: false,
        payloads: vec![("bench".to_string(), elf.to_vec())],
        reps: Some(REPS),
        warmup: Some(WARMUP),
        overhead: Some(overhead),
        ..RunConfig::default()
    };
    let outcome = boot(Firmware::Bios, config, Duration::from_secs(120), Some(0));
    expect_success(&outcome);
    outcome
}

#[test]
fn the_c_payload_is_a_static_exec_the_kernels_loader_accepts_with_w_xor_x() {
    let Some(elf) = elf() else { return };
    expect_loadable_payload("bench.elf", elf);
}

#[test]
fn the_c_imul_chain_is_exactly_its_instruction_count_per_iteration() {
    let Some(elf) = elf() else { return };
    for overhead in [Overhead::Empty, Overhead::Diff] {
        let outcome = run(elf, overhead);
        let exit = expect_record(&outcome, "task_exit");
        assert_eq!(exit.u64("code"), Some(0), "{}", exit.value);

        // What the payload (ramdisk name `bench`) says one iteration executes.
        let expected = instructions_per_iteration(&outcome, "bench");
        assert_eq!(expected, 6.0, "4 imuls, dec, jnz");

        let r = bench_result(&outcome, BENCH, "tsc");
        assert_eq!(r.get("supported"), true);
        assert_eq!(r.u64("reps"), Some(u64::from(REPS)));
        expect_exact_per_iteration(r, expected, overhead);

        let summary = expect_record(&outcome, "summary");
        assert_eq!(summary.u64("benchmarks"), Some(1));
        assert_eq!(summary.u64("errors"), Some(0));
        assert!(outcome.records_of("harness_error").next().is_none());
    }
}

/// The counter syscalls from C (payloads/c/counters.c) on the emulated PMU: the overflow
/// handler at exactly every P instructions, eight events multiplexed, system mode refused while
/// the task has counters and granted after.
#[test]
fn the_c_sdk_notifies_multiplexes_and_counts_the_system() {
    const P: i64 = 10_007;
    const N: i64 = 25_000;
    let config = RunConfig {
        timer_checks: false,
        payloads: vec![("counters".to_string(), counters_elf())],
        ..RunConfig::default()
    };
    let outcome = boot_emulated_ok(
        config,
        Duration::from_secs(120),
        baremark::qemu::PmuModel::IntelV5,
    );
    let values = &outcome
        .records_of("report")
        .next()
        .unwrap_or_else(|| panic!("no report: {}", outcome.tail_text()))
        .get("values");
    let v = |k: &str| -> i64 {
        values[k]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no {k}: {values}"))
    };
    assert!(v("configure") > 0, "{values}");
    assert_eq!((v("set_handler"), v("threshold")), (0, 0), "{values}");
    let stopped = v("stopped");
    assert!(stopped > 4 * N, "{values}");
    assert_eq!(v("notifications"), stopped / P, "{values}");
    assert_eq!(v("first"), P, "{values}");
    assert_eq!(v("last"), v("notifications") * P, "{values}");
    assert_eq!(v("mux_n"), 8, "{values}");
    let (raw, enabled, running) = (v("mux_raw_0"), v("mux_enabled"), v("mux_running_0"));
    assert!(0 < running && running < enabled, "{values}");
    // The estimate of a loop of 160N instructions (and the calls around it), within 1%.
    let estimate = raw as i128 * enabled as i128 / running as i128;
    let exact = 160 * N as i128;
    assert!(
        (exact..exact * 101 / 100).contains(&estimate),
        "{estimate}: {values}"
    );
    assert_eq!(v("mux_running_0") + v("mux_running_7"), enabled, "{values}");
    assert_eq!(v("system_while_own"), -5, "EBUSY: {values}");
    let g = v("system_configure");
    assert!(g > 0, "{values}");
    assert_eq!(v("system_read"), 1, "{values}");
    assert_eq!(v("system_generation"), g, "{values}");
    assert_eq!(v("system_release"), g + 1, "{values}");
}

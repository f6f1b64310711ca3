//! baremark's hardware-counter path end to end on the emulated PMU (emulator/: a PMU model in
//! QEMU's TCG, exact under `-icount shift=0`): discovery, the harness programming GP and fixed
//! counters for ring-3 tasks, and the results. On a machine that retires one instruction per
//! cycle and whose TSC counts instructions, with `overhead = diff` every fixed part cancels:
//! each suite benchmark's cycles and instructions per iteration are exactly the instruction
//! count it states, and its branches exactly the branches of its loop.

use std::time::Duration;

use baremark::image::{Firmware, Overhead};
use baremark::payloads::suite_payloads;
use baremark::qemu::PmuModel;
use baremark::session::RunOutcome;
use baremark_tests::{
    bench_result, boot_emulated, boot_emulated_ok, expect_clean_harness_run, expect_record,
    stated_instructions, suite_config,
};

const EVENTS: &str = "cycles,instructions,branches,branch-misses";

fn run_suite(model: PmuModel) -> RunOutcome {
    let config = suite_config(Overhead::Diff, Some(EVENTS));
    let outcome = boot_emulated(Firmware::Bios, config, Duration::from_secs(300), model);
    expect_clean_harness_run(&outcome);
    outcome
}

/// The median per iteration of a counted, emulated, exact (no spread) result.
fn exact(outcome: &RunOutcome, bench: &str, event: &str) -> f64 {
    let r = bench_result(outcome, bench, event);
    assert_eq!(
        r.get("supported").as_bool(),
        Some(true),
        "{bench} {event}: {}",
        r.value
    );
    assert_eq!(
        r.get("emulated").as_bool(),
        Some(true),
        "{bench} {event}: labelled emulated"
    );
    let per = r.get("per_iteration");
    assert_eq!(per["stddev"].as_f64(), Some(0.0), "{bench} {event}: {per}");
    assert_eq!(per["min"], per["max"], "{bench} {event}: {per}");
    assert_eq!(r.u64("interrupts"), Some(0), "{bench} {event}");
    per["median"].as_f64().unwrap()
}

/// Checks every suite benchmark's counts, and says where `branch-misses` went. Without a
/// global control (`global_ctrl` false: AMD legacy) the kernel stops and starts a task's
/// counters one after another, so a benchmark that enters the kernel in every iteration sees
/// them apart by the few instructions in between.
fn check_counts(outcome: &RunOutcome, global_ctrl: bool) {
    let payloads = suite_payloads("default").unwrap();
    for p in &payloads {
        let name = p.name;
        let tsc = bench_result(outcome, name, "tsc");
        assert_eq!(
            tsc.get("emulated").as_bool(),
            Some(false),
            "the TSC is not a PMU figure"
        );
        let tsc = tsc.get("per_iteration")["median"].as_f64().unwrap();
        let cycles = exact(outcome, name, "cycles");
        let instructions = exact(outcome, name, "instructions");
        let branches = exact(outcome, name, "branches");
        // One instruction per cycle, and the TSC counts instructions: the three agree.
        let enters_kernel = matches!(name, "syscall" | "read-rdpmc");
        if global_ctrl || !enters_kernel {
            assert_eq!(cycles, instructions, "{name}: IPC 1");
        } else {
            assert!(
                (cycles - instructions).abs() <= 8.0,
                "{name}: {cycles} {instructions}"
            );
        }
        if !enters_kernel {
            // (those two spend part of each iteration in the kernel, where the task's virtual
            // TSC stops but :uk counters go on)
            assert_eq!(tsc, instructions, "{name}: the TSC counts instructions");
        }
        let stated = stated_instructions(outcome, name);
        match name {
            // QEMU executes `rep movsb` one byte at a time and counts each.
            "rep-movsb" => assert_eq!(instructions, 4096.0 + 8.0, "{name}"),
            // 4 in ring 3 plus the kernel's whole path, which `instructions` (user and
            // kernel) counts: a couple of thousand
            "syscall" | "read-rdpmc" => {
                assert!(
                    instructions > 4.0 && instructions < 5000.0,
                    "{name}: {instructions}"
                )
            }
            "read-fast" => assert!(instructions > 5.0 && instructions < 100.0),
            _ => assert_eq!(instructions, stated.parse::<f64>().unwrap(), "{name}"),
        }
        match name {
            // a conditional branch taken on half the iterations, plus the loop's own
            "branch-predictable" | "branch-unpredictable" => {
                assert!(branches > 2.0 && branches < 3.0, "{name}: {branches}")
            }
            // the empty region: nothing at all
            "empty" => assert_eq!((instructions, branches), (0.0, 0.0), "{name}"),
            // the loop is straight-line code and one backward branch
            "add-latency" | "add-throughput" | "int-divide" | "chase-l1" | "chase-l2"
            | "chase-llc" | "chase-dram" | "store-forward" | "rep-movsb" => {
                assert_eq!(branches, 1.0, "{name}")
            }
            _ => assert!(
                branches >= 1.0 && branches <= instructions,
                "{name}: {branches}"
            ),
        }
        let misses = bench_result(outcome, name, "branch-misses");
        assert_eq!(
            misses.get("supported").as_bool(),
            Some(false),
            "{name}: not modelled"
        );
        assert!(misses.str("reason").is_some());
    }
}

#[test]
fn intel_v4_counts_the_suite_exactly() {
    let outcome = run_suite(PmuModel::IntelV4);
    let pmu = expect_record(&outcome, "pmu");
    assert_eq!(pmu.get("emulated").as_bool(), Some(true));
    assert_eq!(pmu.str("backend"), Some("intel-arch-v4"));
    assert_eq!(pmu.get("intel")["version"], 4);
    assert_eq!(pmu.u64("gp_counters"), Some(4));
    assert_eq!(pmu.u64("gp_width"), Some(48));
    assert_eq!(pmu.u64("fixed_width"), Some(48));
    assert_eq!(pmu.get("full_width_write").as_bool(), Some(true));
    assert!(pmu.str("summary").unwrap().contains("emulated"));
    check_counts(&outcome, true);
    // cycles and instructions went to the fixed counters, branches to a GP counter
    assert_eq!(
        bench_result(&outcome, "add-latency", "instructions").str("counter"),
        Some("fixed0")
    );
    assert_eq!(
        bench_result(&outcome, "add-latency", "branches").str("counter"),
        Some("gp0")
    );
    let reason = bench_result(&outcome, "add-latency", "branch-misses")
        .str("reason")
        .unwrap();
    assert!(reason.contains("CPUID.0AH:EBX bit 6"), "{reason}");
    // the derived IPC is there and exact
    let ipc = outcome
        .records_of("metric")
        .find(|m| m.str("bench") == Some("add-latency") && m.str("name") == Some("ipc"))
        .expect("an ipc metric");
    assert_eq!(ipc.get("value").as_f64(), Some(1.0));
}

#[test]
fn intel_v2_without_full_width_writes_counts_the_suite_exactly() {
    let outcome = run_suite(PmuModel::IntelV2);
    let pmu = expect_record(&outcome, "pmu");
    assert_eq!(pmu.get("intel")["version"], 2);
    assert_eq!(pmu.get("full_width_write").as_bool(), Some(false));
    check_counts(&outcome, true);
}

#[test]
fn amd_perfmon_v2_counts_the_suite_exactly() {
    let outcome = run_suite(PmuModel::AmdV2);
    let pmu = expect_record(&outcome, "pmu");
    assert_eq!(pmu.get("emulated").as_bool(), Some(true));
    assert_eq!(pmu.str("kind"), Some("amd-perfmon-v2"));
    assert_eq!(pmu.u64("gp_counters"), Some(6));
    assert!(
        pmu.get("intel")["events_unavailable"].is_null(),
        "AMD has no such vector"
    );
    check_counts(&outcome, true);
    // AMD has no availability mask: the model's refusal says why
    let reason = bench_result(&outcome, "add-latency", "branch-misses")
        .str("reason")
        .unwrap();
    assert!(reason.contains("emulated PMU"), "{reason}");
}

#[test]
fn amd_legacy_counts_the_suite_exactly() {
    let outcome = run_suite(PmuModel::AmdLegacy);
    assert_eq!(
        expect_record(&outcome, "pmu").str("kind"),
        Some("amd-legacy")
    );
    check_counts(&outcome, false);
}

/// USR/OS filtering splits at the exact privilege switch: the `syscall` benchmark's loop is
/// `mov, syscall, dec, jnz`, so in ring 3 it retires exactly 4 instructions and 2 branches
/// (SYSCALL counts at the CPL it leaves) per iteration, and the kernel the rest (the light
/// syscall's 42 instructions and 3 branches); `add-latency` never enters the kernel.
fn check_privilege_split(model: PmuModel) {
    let mut config = suite_config(
        Overhead::Diff,
        Some("instructions:u,branches:u,instructions:k,branches:k"),
    );
    config
        .payloads
        .retain(|(name, _)| name == "syscall" || name == "add-latency");
    let outcome = boot_emulated_ok(config, Duration::from_secs(120), model);
    assert_eq!(
        exact(&outcome, "syscall", "instructions:u"),
        4.0,
        "{model:?}"
    );
    assert_eq!(exact(&outcome, "syscall", "branches:u"), 2.0, "{model:?}");
    // An unknown number: a light syscall (kernel/hw/src/user.rs), whose kernel part the
    // counters see whole, counted by hand: 16 instructions of entry and number test, 26 of the
    // light path to SYSRETQ; its branches the test's `jbe` (not taken), the `jz` to the light
    // path and SYSRETQ.
    assert_eq!(
        exact(&outcome, "syscall", "instructions:k"),
        42.0,
        "{model:?}"
    );
    assert_eq!(exact(&outcome, "syscall", "branches:k"), 3.0, "{model:?}");
    assert_eq!(
        exact(&outcome, "add-latency", "instructions:u"),
        10.0,
        "{model:?}"
    );
    assert_eq!(
        exact(&outcome, "add-latency", "instructions:k"),
        0.0,
        "{model:?}"
    );
}

#[test]
fn privilege_filtering_splits_at_the_exact_switch() {
    check_privilege_split(PmuModel::IntelV5);
    check_privilege_split(PmuModel::AmdV2);
}

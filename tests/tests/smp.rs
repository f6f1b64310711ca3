//! Every core: the kernel starts every CPU of the MADT (BIOS and UEFI, 1 to 8 CPUs under TCG),
//! a payload pinned to a CPU runs there with the same exact counts as on the boot CPU, a CPU
//! that does not answer is reported and the run goes on, and a pin to a CPU that is not online
//! is refused with a clear error.

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::{Accel, PmuModel, QemuOptions};
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_tests::{boot_with, expect_success_in};

/// `add-latency` under `-icount shift=0`: 10 instructions per iteration, so exactly 10 TSC
/// ticks per iteration after the overhead is removed.
const ADD_LATENCY_TSC: f64 = 10.0;

fn add_latency() -> Vec<u8> {
    baremark::payloads::builtin("add-latency")
        .expect("the add-latency payload")
        .elf
        .to_vec()
}

/// One copy of add-latency per CPU, `add-latency-cpuN` pinned to CPU N.
fn pinned_copies(cpus: usize, extra: &[&str]) -> RunConfig {
    let names: Vec<String> = (0..cpus).map(|n| format!("add-latency-cpu{n}")).collect();
    let pin = names
        .iter()
        .enumerate()
        .map(|(n, name)| format!("{name}@{n}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut extra_lines = vec![format!("pin = {pin}")];
    extra_lines.extend(extra.iter().map(|l| l.to_string()));
    RunConfig {
        timer_checks: false,
        reps: Some(5),
        warmup: Some(1),
        overhead: Some(baremark::image::Overhead::Diff),
        payloads: names.into_iter().map(|n| (n, add_latency())).collect(),
        extra_lines,
        ..RunConfig::default()
    }
}

fn boot_smp(firmware: Firmware, smp: usize, config: RunConfig) -> RunOutcome {
    boot_smp_with(firmware, smp, config, true)
}

/// `icount`: under `-icount shift=0` (exact, vCPUs round-robin in one thread); without it, TCG
/// runs the vCPUs in threads of their own.
fn boot_smp_with(firmware: Firmware, smp: usize, config: RunConfig, icount: bool) -> RunOutcome {
    let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
    qemu.timeout = Duration::from_secs(240);
    qemu.icount = icount.then_some(0);
    qemu.extra_args = vec!["-smp".into(), smp.to_string()];
    boot_with(qemu, config)
}

fn records<'a>(outcome: &'a RunOutcome, kind: &'a str) -> impl Iterator<Item = &'a Record> {
    outcome.records.iter().filter(move |r| r.kind == kind)
}

fn cpus_record(outcome: &RunOutcome) -> &Record {
    records(outcome, "cpus")
        .next()
        .unwrap_or_else(|| panic!("no cpus record\n{}", outcome.tail_text()))
}

/// The TSC result of payload `name`'s benchmark: (median per iteration, its record).
fn tsc_result<'a>(outcome: &'a RunOutcome, name: &str) -> &'a Record {
    records(outcome, "result")
        .find(|r| r.str("payload") == Some(name) && r.str("event") == Some("tsc"))
        .unwrap_or_else(|| panic!("no tsc result of {name}\n{}", outcome.tail_text()))
}

fn check_every_cpu_online_and_exact(firmware: Firmware, smp: usize, icount: bool) {
    let outcome = boot_smp_with(firmware, smp, pinned_copies(smp, &[]), icount);
    expect_success_in(&outcome, format_args!("{firmware:?} -smp {smp}: "));
    let cpus = cpus_record(&outcome);
    assert_eq!(cpus.u64("online"), Some(smp as u64), "{}", cpus.value);
    assert_eq!(cpus.u64("failed"), Some(0), "{}", cpus.value);
    // Both APIC modes: TCG's `max` CPU has x2APIC, which the host turns off under `-icount`
    // without the emulator (QEMU's "Bad icount read"; boot/src/qemu.rs).
    let apic = records(&outcome, "apic").next().expect("apic record");
    let mode = if icount { "xapic" } else { "x2apic" };
    assert_eq!(apic.str("mode"), Some(mode), "{}", apic.value);
    let online: Vec<&Record> = records(&outcome, "processor")
        .filter(|p| p.str("state") == Some("online"))
        .collect();
    assert_eq!(online.len(), smp);
    for p in &online {
        assert!(
            p.u64("timer_hz").is_some_and(|hz| hz > 0),
            "each CPU calibrates its own timer: {}",
            p.value
        );
    }
    for n in 0..smp {
        let name = format!("add-latency-cpu{n}");
        let start = records(&outcome, "task_start")
            .find(|r| r.str("task") == Some(name.as_str()))
            .expect("task_start");
        assert_eq!(start.u64("cpu"), Some(n as u64), "{}", start.value);
        let r = tsc_result(&outcome, &name);
        assert_eq!(r.u64("cpu"), Some(n as u64), "ran on its CPU: {}", r.value);
        assert_eq!(r.get("supported").as_bool(), Some(true), "{}", r.value);
        assert_eq!(
            r.u64("interrupts"),
            Some(0),
            "no interrupt on CPU {n}: {}",
            r.value
        );
        if icount {
            let per = r.get("per_iteration");
            assert_eq!(
                per["median"].as_f64(),
                Some(ADD_LATENCY_TSC),
                "{firmware:?} -smp {smp}, CPU {n}: the exact virtual-TSC delta: {}",
                r.value
            );
            assert_eq!(per["min"], per["max"], "no spread on CPU {n}: {}", r.value);
        }
    }
}

#[test]
fn bios_starts_every_cpu_and_a_pinned_payload_is_exact_on_each() {
    for smp in [1, 2, 4, 8] {
        check_every_cpu_online_and_exact(Firmware::Bios, smp, true);
    }
}

/// OVMF under `-icount` takes about 20 s per CPU to reach the kernel (its own AP start-up runs
/// round-robin in one thread): exactness with 2 CPUs, the other counts without `-icount`; 4 and
/// 8 CPUs under `-icount` are in the long matrix (`scripts/matrix.sh`, the next test).
#[test]
fn uefi_starts_every_cpu_and_a_pinned_payload_is_exact_on_each() {
    check_every_cpu_online_and_exact(Firmware::Uefi, 2, true);
    for smp in [1, 4, 8] {
        check_every_cpu_online_and_exact(Firmware::Uefi, smp, false);
    }
}

#[test]
#[ignore = "about 3 minutes of OVMF under -icount: scripts/matrix.sh"]
fn uefi_pinned_payloads_are_exact_on_4_and_8_cpus_under_icount() {
    for smp in [4, 8] {
        check_every_cpu_online_and_exact(Firmware::Uefi, smp, true);
    }
}

#[test]
fn a_cpu_that_does_not_answer_is_reported_and_the_run_goes_on() {
    // APIC ID 200: a MADT-like entry with no CPU behind it.
    let outcome = boot_smp(
        Firmware::Bios,
        2,
        pinned_copies(2, &["test_phantom_cpu = 200"]),
    );
    expect_success_in(&outcome, "phantom CPU: ");
    let cpus = cpus_record(&outcome);
    assert_eq!(cpus.u64("online"), Some(2), "{}", cpus.value);
    assert_eq!(cpus.u64("failed"), Some(1), "{}", cpus.value);
    let phantom = records(&outcome, "processor")
        .find(|p| p.u64("apic_id") == Some(200))
        .expect("a processor record for APIC ID 200");
    assert_eq!(phantom.str("state"), Some("failed"), "{}", phantom.value);
    assert!(
        phantom
            .str("reason")
            .is_some_and(|r| r.contains("did not answer")),
        "{}",
        phantom.value
    );
    // The CPUs that did start still run their payloads, exactly.
    for n in 0..2 {
        let r = tsc_result(&outcome, &format!("add-latency-cpu{n}"));
        assert_eq!(
            r.get("per_iteration")["median"].as_f64(),
            Some(ADD_LATENCY_TSC)
        );
    }
}

#[test]
fn a_pin_to_a_cpu_that_is_not_online_is_refused_and_the_rest_runs() {
    let mut config = pinned_copies(2, &[]);
    config.payloads.push(("stray".into(), add_latency()));
    config.extra_lines = vec!["pin = add-latency-cpu0@0,add-latency-cpu1@1,stray@7".into()];
    let outcome = boot_smp(Firmware::Bios, 2, config);
    let error = records(&outcome, "task_error")
        .find(|r| r.str("task") == Some("stray"))
        .unwrap_or_else(|| panic!("no task_error for stray\n{}", outcome.tail_text()));
    assert_eq!(error.u64("cpu"), Some(7));
    assert!(
        error
            .str("message")
            .is_some_and(|m| m.contains("pinned to CPU 7") && m.contains("not online")),
        "{}",
        error.value
    );
    for n in 0..2 {
        tsc_result(&outcome, &format!("add-latency-cpu{n}"));
    }
}

/// On the emulated PMU with 4 CPUs: `instructions:u` of the same payload pinned to each core
/// is exact (10 per iteration), and labelled with its CPU.
fn check_emulated_counts_on_every_core(model: PmuModel) {
    let mut config = pinned_copies(4, &[]);
    config.events = Some("instructions:u".into());
    let qemu_outcome = boot_emulated_smp(config, model, 4);
    expect_success_in(&qemu_outcome, format_args!("{model:?} -smp 4: "));
    let apic = records(&qemu_outcome, "apic").next().expect("apic record");
    let mode = if model == PmuModel::IntelV4 {
        "xapic"
    } else {
        "x2apic"
    };
    assert_eq!(apic.str("mode"), Some(mode), "{model:?}: {}", apic.value);
    assert_eq!(cpus_record(&qemu_outcome).u64("online"), Some(4));
    for n in 0..4 {
        let name = format!("add-latency-cpu{n}");
        let r = records(&qemu_outcome, "result")
            .find(|r| {
                r.str("payload") == Some(name.as_str()) && r.str("event") == Some("instructions:u")
            })
            .unwrap_or_else(|| panic!("no instructions:u result of {name}"));
        assert_eq!(r.get("supported").as_bool(), Some(true), "{}", r.value);
        assert_eq!(r.get("emulated").as_bool(), Some(true), "{}", r.value);
        assert_eq!(r.u64("cpu"), Some(n as u64), "{}", r.value);
        let per = r.get("per_iteration");
        assert_eq!(
            per["median"].as_f64(),
            Some(ADD_LATENCY_TSC),
            "{model:?} CPU {n}: {}",
            r.value
        );
        assert_eq!(per["min"], per["max"], "{}", r.value);
    }
}

fn boot_emulated_smp(config: RunConfig, model: PmuModel, smp: usize) -> RunOutcome {
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(240);
    qemu.icount = Some(0);
    qemu.pmu_model = Some(model);
    qemu.extra_args = vec!["-smp".into(), smp.to_string()];
    qemu.binary = Some(
        baremark::qemu::emulated_pmu_qemu()
            .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}")),
    );
    boot_with(qemu, config)
}

#[test]
fn emulated_intel_counts_exactly_on_every_core() {
    check_emulated_counts_on_every_core(PmuModel::IntelV4);
}

#[test]
fn emulated_amd_counts_exactly_on_every_core() {
    check_emulated_counts_on_every_core(PmuModel::AmdV2);
}

/// The emulator's hybrid mode (`pmu-hybrid-from=2` with 4 CPUs: CPUs 0-1 Core, 2-3 Atom): the
/// kernel reports both core types and each core's own counters; a payload runs on an Atom core
/// (its virtual TSC exact), and one that counts events there is refused with the reason,
/// since its events were planned for the boot CPU's PMU.
#[test]
fn emulated_hybrid_reports_both_core_types_and_each_cores_counters() {
    let mut config = pinned_copies(4, &[]);
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(240);
    qemu.icount = Some(0);
    qemu.pmu_model = Some(PmuModel::IntelV5);
    qemu.cpu = Some(format!(
        "{},pmu-model={},pmu-hybrid-from=2",
        PmuModel::IntelV5.default_cpu(),
        PmuModel::IntelV5.name()
    ));
    qemu.extra_args = vec!["-smp".into(), "4".into()];
    qemu.binary = Some(
        baremark::qemu::emulated_pmu_qemu()
            .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}")),
    );
    config.events = None;
    let outcome = boot_with(qemu.clone(), config);
    expect_success_in(&outcome, "hybrid: ");
    let cpus = cpus_record(&outcome);
    assert_eq!(cpus.get("hybrid").as_bool(), Some(true), "{}", cpus.value);
    assert_eq!(
        cpus.get("core_types")["core"].as_u64(),
        Some(2),
        "{}",
        cpus.value
    );
    assert_eq!(
        cpus.get("core_types")["atom"].as_u64(),
        Some(2),
        "{}",
        cpus.value
    );
    for p in records(&outcome, "processor") {
        let index = p.u64("index").expect("online");
        let (kind, gp, fixed) = if index < 2 {
            ("core", 8, 3)
        } else {
            ("atom", 6, 2)
        };
        assert_eq!(p.str("core_type"), Some(kind), "{}", p.value);
        assert_eq!(p.get("pmu")["gp"].as_u64(), Some(gp), "{}", p.value);
        assert_eq!(p.get("pmu")["fixed"].as_u64(), Some(fixed), "{}", p.value);
    }
    for n in 0..4 {
        let r = tsc_result(&outcome, &format!("add-latency-cpu{n}"));
        assert_eq!(
            r.get("per_iteration")["median"].as_f64(),
            Some(ADD_LATENCY_TSC)
        );
        let start = records(&outcome, "task_start")
            .find(|t| t.str("task") == Some(format!("add-latency-cpu{n}").as_str()))
            .unwrap();
        let kind = if n < 2 { "core" } else { "atom" };
        assert_eq!(start.str("core_type"), Some(kind), "{}", start.value);
    }
    // Counting events on every core, each with its own PMU's plan: reference cycles go on
    // fixed counter 2, which the Core CPUs have and the Atom CPUs lack (their plan says so);
    // branches and instructions count exactly on both.
    let mut config = pinned_copies(4, &[]);
    config.events = Some("branches:u,instructions:u,ref-cycles:k".into());
    let outcome = boot_with(qemu, config);
    expect_success_in(&outcome, "hybrid, counting: ");
    let result = |n: usize, event: &str| {
        let name = format!("add-latency-cpu{n}");
        records(&outcome, "result")
            .find(|r| r.str("payload") == Some(name.as_str()) && r.str("event") == Some(event))
            .unwrap_or_else(|| panic!("no {event} result of {name}\n{}", outcome.tail_text()))
            .clone()
    };
    for n in 0..4 {
        for (event, per) in [("branches:u", 1.0), ("instructions:u", ADD_LATENCY_TSC)] {
            let r = result(n, event);
            assert_eq!(r.u64("cpu"), Some(n as u64));
            assert_eq!(r.get("supported").as_bool(), Some(true), "{}", r.value);
            assert_eq!(
                r.get("per_iteration")["median"].as_f64(),
                Some(per),
                "{}",
                r.value
            );
        }
        let r = result(n, "ref-cycles:k");
        if n < 2 {
            assert_eq!(r.str("counter"), Some("fixed2"), "CPU {n}: {}", r.value);
        } else {
            assert_eq!(
                r.get("supported").as_bool(),
                Some(false),
                "CPU {n}: {}",
                r.value
            );
            assert!(
                r.str("reason")
                    .is_some_and(|m| m.contains("fixed counter 2")),
                "CPU {n}: {}",
                r.value
            );
        }
    }
}

/// A noisy neighbour (run.cfg `background`): `spin` loops on CPU 2 for the whole run while
/// add-latency runs pinned to CPUs 0, 1 and 3; each CPU's counters count its own instructions
/// (the emulator counts per vCPU), so `instructions:u` stays exactly 10 per iteration, and the
/// spinning task is stopped, reported, when the others are done.
#[test]
fn emulated_counts_stay_exact_while_another_core_spins() {
    let names = ["add-latency-cpu0", "add-latency-cpu1", "add-latency-cpu3"];
    let spin = baremark::payloads::builtin("spin").unwrap().elf.to_vec();
    let mut payloads: Vec<(String, Vec<u8>)> = vec![("spin".into(), spin)];
    payloads.extend(names.iter().map(|n| (n.to_string(), add_latency())));
    let config = RunConfig {
        timer_checks: false,
        reps: Some(5),
        warmup: Some(1),
        overhead: Some(baremark::image::Overhead::Diff),
        events: Some("instructions:u".into()),
        payloads,
        extra_lines: vec![
            "background = spin@2".into(),
            "pin = add-latency-cpu0@0,add-latency-cpu1@1,add-latency-cpu3@3".into(),
        ],
        ..RunConfig::default()
    };
    let outcome = boot_emulated_smp(config, PmuModel::IntelV4, 4);
    expect_success_in(&outcome, "background spin: ");
    for (name, cpu) in names.iter().zip([0, 1, 3]) {
        let r = records(&outcome, "result")
            .find(|r| r.str("payload") == Some(*name) && r.str("event") == Some("instructions:u"))
            .unwrap_or_else(|| panic!("no result of {name}\n{}", outcome.tail_text()));
        assert_eq!(r.u64("cpu"), Some(cpu), "{}", r.value);
        let per = r.get("per_iteration");
        assert_eq!(
            per["median"].as_f64(),
            Some(ADD_LATENCY_TSC),
            "{name}: {}",
            r.value
        );
        assert_eq!(per["min"], per["max"], "{name}: {}", r.value);
    }
    let stopped = records(&outcome, "task_stopped")
        .find(|r| r.str("task") == Some("spin"))
        .unwrap_or_else(|| panic!("spin was not stopped\n{}", outcome.tail_text()));
    assert_eq!(stopped.u64("cpu"), Some(2), "{}", stopped.value);
    // It ran meanwhile: millions of instructions of its own virtual TSC.
    assert!(
        stopped.u64("virtual_tsc").is_some_and(|v| v > 1_000_000),
        "{}",
        stopped.value
    );
    let started = records(&outcome, "task_start")
        .find(|r| r.str("task") == Some("spin"))
        .expect("spin's task_start");
    assert_eq!(started.u64("cpu"), Some(2));
}

/// A region far longer than QEMU's round-robin time slice (about 100 million instructions under
/// `-icount`), so the other vCPUs run in the middle of it: 200 million iterations of `nop` with
/// nanoBench's loop (`baremark asm`), its ELF built by the host tool.
fn long_region_payload() -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("baremark-smp-long-{}", std::process::id()));
    let out = baremark_tests::baremark_cli()
        .args([
            "asm",
            "nop",
            "--unroll",
            "1",
            "--loop",
            "200000000",
            "--build-only",
        ])
        .arg("--keep")
        .arg(&dir)
        .output()
        .expect("running baremark asm");
    assert!(
        out.status.success(),
        "baremark asm: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let elf = std::fs::read(dir.join("asm.elf")).expect("the asm payload");
    let _ = std::fs::remove_dir_all(&dir);
    elf
}

/// `instructions:u` of the long region pinned to CPU 1: (median, min, max) per iteration.
fn long_region_count(background_spin: bool) -> (f64, f64, f64) {
    let mut payloads = vec![("long".to_string(), long_region_payload())];
    let mut extra_lines = vec!["pin = long@1".to_string()];
    if background_spin {
        let spin = baremark::payloads::builtin("spin").unwrap().elf.to_vec();
        payloads.insert(0, ("spin".into(), spin));
        extra_lines.push("background = spin@2".into());
    }
    let config = RunConfig {
        timer_checks: false,
        reps: Some(2),
        warmup: Some(0),
        events: Some("instructions:u".into()),
        task_budget_ms: Some(0),
        payloads,
        extra_lines,
        ..RunConfig::default()
    };
    let outcome = boot_emulated_smp(config, PmuModel::IntelV4, 4);
    expect_success_in(
        &outcome,
        format_args!("long region, spin {background_spin}: "),
    );
    if background_spin {
        let stopped = records(&outcome, "task_stopped")
            .find(|r| r.str("task") == Some("spin"))
            .expect("spin stopped");
        assert!(stopped.u64("virtual_tsc").is_some_and(|v| v > 50_000_000));
    }
    let r = records(&outcome, "result")
        .find(|r| r.str("payload") == Some("long") && r.str("event") == Some("instructions:u"))
        .unwrap_or_else(|| panic!("no result\n{}", outcome.tail_text()));
    assert_eq!(r.u64("cpu"), Some(1));
    let per = r.get("per_iteration");
    (
        per["median"].as_f64().unwrap(),
        per["min"].as_f64().unwrap(),
        per["max"].as_f64().unwrap(),
    )
}

/// With the other vCPUs running in the middle of the region (a spinning neighbour on CPU 2),
/// CPU 1's `instructions:u` is the same exact count as with nothing else running: each CPU's
/// counters count its own instructions (emulator patch 0009; with one global count, the
/// neighbour's instructions were counted too).
#[test]
fn emulated_long_region_is_exact_with_a_spinning_neighbour() {
    let alone = long_region_count(false);
    let noisy = long_region_count(true);
    assert_eq!(alone.1, alone.2, "alone: {alone:?}");
    assert_eq!(noisy.1, noisy.2, "with a neighbour: {noisy:?}");
    assert_eq!(alone, noisy);
}

/// Threads (`thread_start`, `thread_join`): the `threads` payload on CPU 0 passes a cache line
/// to its thread on CPU 3 and back, then each counts its own `instructions:u` around the same
/// loop (exactly equal: each CPU counts its own), the refusals are the documented errors, and a
/// thread the task does not join is stopped when the task exits (its memory freed after).
#[test]
fn emulated_threads_share_memory_and_count_their_own_instructions() {
    let threads = baremark::payloads::builtin("threads").unwrap().elf.to_vec();
    let config = RunConfig {
        timer_checks: false,
        payloads: vec![("threads".into(), threads)],
        ..RunConfig::default()
    };
    let outcome = boot_emulated_smp(config, PmuModel::IntelV4, 4);
    expect_success_in(&outcome, "threads: ");
    let values = baremark_tests::reported_values(&outcome, 0);
    let num = |k: &str| baremark_tests::num(&values, k);
    assert_eq!(num("rounds"), 4, "{values:?}");
    assert_eq!(num("line"), 8, "every round trip arrived: {values:?}");
    assert_eq!(num("join"), 42, "the thread's exit code: {values:?}");
    assert_eq!(
        values.get("join_again").map(String::as_str),
        Some("-4"),
        "{values:?}"
    );
    let (main, thread) = (num("main_insns"), num("thread_insns"));
    assert_eq!(
        main, thread,
        "the same loop, counted on each CPU: {values:?}"
    );
    assert!(
        (40_000..40_200).contains(&main),
        "10000 iterations of 4 instructions and the reads: {values:?}"
    );
    assert_eq!(values.get("start_self").map(String::as_str), Some("EINVAL"));
    assert_eq!(values.get("start_none").map(String::as_str), Some("ENODEV"));
    assert_eq!(values.get("orphan").map(String::as_str), Some("ok"));
    let starts: Vec<&Record> = records(&outcome, "thread_start").collect();
    assert_eq!(starts.len(), 2, "{}", outcome.tail_text());
    assert_eq!(starts[0].u64("cpu"), Some(3));
    assert_eq!(starts[1].u64("cpu"), Some(2));
    let partner = starts[0].u64("task_index").unwrap();
    let exit = records(&outcome, "task_exit")
        .find(|r| r.u64("task_index") == Some(partner))
        .expect("the thread's task_exit");
    assert_eq!(exit.get("code").as_i64(), Some(42));
    assert_eq!(exit.u64("cpu"), Some(3));
    let orphan = starts[1].u64("task_index").unwrap();
    let stopped = records(&outcome, "task_stopped")
        .find(|r| r.u64("task_index") == Some(orphan))
        .unwrap_or_else(|| panic!("the orphan thread was not stopped\n{}", outcome.tail_text()));
    assert!(
        stopped
            .str("reason")
            .is_some_and(|r| r.contains("without joining"))
    );
    // Every frame of the task, its threads' stacks and pages included, is free again.
    let summary = records(&outcome, "summary").next().expect("summary");
    assert_eq!(
        summary.get("frames")["before"],
        summary.get("frames")["after"],
        "{}",
        summary.value
    );
}

/// A join of a thread that never ends waits at most what is left of the task's budget: the
/// kernel stops the thread and the join returns EABORTED; the run goes on.
#[test]
fn emulated_join_of_a_thread_that_never_ends_is_bounded_by_the_budget() {
    let threads = baremark::payloads::builtin("threads").unwrap().elf.to_vec();
    let config = RunConfig {
        timer_checks: false,
        task_budget_ms: Some(200),
        payloads: vec![("threads".into(), threads)],
        extra_members: vec![("args/threads".into(), b"join-forever".to_vec())],
        ..RunConfig::default()
    };
    let outcome = boot_emulated_smp(config, PmuModel::IntelV4, 4);
    expect_success_in(&outcome, "join forever: ");
    let values = baremark_tests::reported_values(&outcome, 0);
    assert_eq!(
        values.get("join_forever").map(String::as_str),
        Some("-7"),
        "{values:?}"
    );
    let stopped = records(&outcome, "task_stopped")
        .next()
        .unwrap_or_else(|| panic!("the thread was not stopped\n{}", outcome.tail_text()));
    assert_eq!(stopped.u64("cpu"), Some(2), "{}", stopped.value);
}

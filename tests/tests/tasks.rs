//! Payload ELFs from the ramdisk run as ring-3 tasks (kernel/src/task/run/), under TCG with
//! `-icount shift=0`, where the TSC advances exactly once per instruction: the built-in `hello`,
//! a garbage "ELF" (rejected with a `task_error`, the next payload still runs), the loop
//! payloads (virtual TSC from the counter page around N iterations of a 4-instruction loop) and
//! `rdpmc` (the counter page and emulated RDPMC back to back, then RDPMC with an index it has no
//! counter for). The same image is booted twice to show the numbers are exactly reproducible.

use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::payloads::builtin;
use baremark::session::RunOutcome;
use baremark_tests::{
    boot, builtin_payloads, expect_ok_end, expect_record, expect_success, expect_success_in,
    indexed_record, task_record,
};

/// Not an ELF file: the kernel's loader must reject it and go on.
const GARBAGE: &[u8] = b"this is not an ELF file, just bytes in the ramdisk\n";

/// The payloads in run order (name, built-in or `None` for the garbage fixture).
const PAYLOADS: [(&str, Option<&str>); 5] = [
    ("hello", Some("hello")),
    ("badelf", None),
    ("loop1000", Some("loop1000")),
    ("loop2000", Some("loop2000")),
    ("rdpmc", Some("rdpmc")),
];

fn config() -> RunConfig {
    RunConfig {
        timer_checks: false,
        // No watchdog: a task running alone must see no timer interrupt at all.
        task_budget_ms: Some(0),
        payloads: PAYLOADS
            .iter()
            .map(|&(name, b)| {
                let elf = match b {
                    Some(b) => builtin(b).expect("built-in payload").elf.to_vec(),
                    None => GARBAGE.to_vec(),
                };
                (name.to_string(), elf)
            })
            .collect(),
        ..RunConfig::default()
    }
}

fn run(which: usize) -> &'static RunOutcome {
    static RUNS: [OnceLock<RunOutcome>; 2] = [OnceLock::new(), OnceLock::new()];
    RUNS[which].get_or_init(|| boot(Firmware::Bios, config(), Duration::from_secs(120), Some(0)))
}

/// The same payloads run concurrently, round-robin, with the smallest quantum (1 us; the kernel
/// raises it to 1.5 times its own measured switch cost, about 1300 instructions of the task per
/// quantum under icount).
fn preempted() -> &'static RunOutcome {
    static RUN: OnceLock<RunOutcome> = OnceLock::new();
    RUN.get_or_init(|| {
        let config = RunConfig {
            quantum_us: 1,
            ..config()
        };
        boot(Firmware::Bios, config, Duration::from_secs(120), Some(0))
    })
}

fn both() -> [&'static RunOutcome; 2] {
    [run(0), run(1)]
}

/// A value of a task's `report` record, as a number.
fn reported(outcome: &RunOutcome, task: &str, key: &str) -> u64 {
    let report = task_record(outcome, "report", task);
    report.get("values")[key]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "report of `{task}` has no numeric `{key}`: {}",
                report.value
            )
        })
}

#[test]
fn the_run_ends_ok_after_every_payload() {
    for outcome in both() {
        expect_success(outcome);
        expect_ok_end(outcome);
        // Every payload has its records in order: task_start, then task_exit or fault; or a
        // task_error. Tasks come after the boot report and before `end`.
        let kinds: Vec<&str> = outcome.records.iter().map(|r| r.kind.as_str()).collect();
        let pmu_at = kinds.iter().position(|k| *k == "pmu").unwrap();
        let end_at = kinds.iter().position(|k| *k == "end").unwrap();
        for (index, (name, _)) in PAYLOADS.iter().enumerate() {
            let positions: Vec<usize> = outcome
                .records
                .iter()
                .enumerate()
                .filter(|(_, r)| r.str("task") == Some(name))
                .map(|(i, r)| {
                    assert_eq!(r.u64("task_index"), Some(index as u64), "{}", r.value);
                    i
                })
                .collect();
            assert!(!positions.is_empty(), "no records for `{name}`");
            assert!(positions.iter().all(|&i| pmu_at < i && i < end_at));
        }
    }
}

#[test]
fn hello_runs_and_reports() {
    for outcome in both() {
        let start = task_record(outcome, "task_start", "hello");
        assert_eq!(
            start.hex("entry").map(|e| e >> 20),
            Some(4),
            "{}",
            start.value
        );
        assert!(start.u64("segments").unwrap() >= 1);
        assert!(start.u64("mapped_bytes").unwrap() >= 4096);
        let output = task_record(outcome, "task_output", "hello");
        assert_eq!(output.str("text"), Some("hello from ring 3\n"));
        let report = task_record(outcome, "report", "hello");
        assert!(
            report.get("values")["rdtsc_delta"].is_string(),
            "{}",
            report.value
        );
        let exit = task_record(outcome, "task_exit", "hello");
        assert_eq!(exit.get("code").as_i64(), Some(0));
        assert_eq!(exit.u64("syscalls"), Some(3), "write, report, exit");
        assert_eq!(exit.u64("interrupts"), Some(0));
        assert!(exit.u64("virtual_tsc").unwrap() > 0);
    }
}

#[test]
fn a_garbage_payload_is_rejected_and_the_next_one_runs() {
    for outcome in both() {
        let error = task_record(outcome, "task_error", "badelf");
        assert!(
            error.str("message").unwrap().contains("not an ELF file"),
            "{}",
            error.value
        );
        assert!(
            outcome
                .records
                .iter()
                .all(|r| r.kind != "task_start" || r.str("task") != Some("badelf"))
        );
        let next = task_record(outcome, "task_exit", "loop1000");
        assert_eq!(next.get("code").as_i64(), Some(0));
    }
}

#[test]
fn the_loop_delta_is_exactly_n_times_k_plus_a_constant() {
    let mut constants = Vec::new();
    for outcome in both() {
        for (task, n) in [("loop1000", 1000u64), ("loop2000", 2000)] {
            assert_eq!(reported(outcome, task, "n"), n);
            let k = reported(outcome, task, "k");
            assert_eq!(k, 4);
            let delta = reported(outcome, task, "delta");
            assert!(delta >= n * k, "{task}: delta {delta} < n * k");
            constants.push(delta - n * k);
        }
        // The whole tasks differ by the loop alone: kernel time is not in the virtual TSC, and
        // everything else the two payloads do is the same.
        let vtsc = |t: &str| {
            task_record(outcome, "task_exit", t)
                .u64("virtual_tsc")
                .unwrap()
        };
        assert_eq!(vtsc("loop2000") - vtsc("loop1000"), 4 * 1000);
    }
    assert!(
        constants.iter().all(|&c| c == constants[0]),
        "the reader's overhead differs: {constants:?}"
    );
    assert!(constants[0] < 1000, "overhead {}", constants[0]);
}

#[test]
fn the_counter_page_and_emulated_rdpmc_agree() {
    let mut diffs = Vec::new();
    for outcome in both() {
        let fast = reported(outcome, "rdpmc", "fast");
        let emulated = reported(outcome, "rdpmc", "rdpmc");
        assert!(emulated >= fast, "fast {fast}, rdpmc {emulated}");
        // counters_read, later, gives the same virtual TSC a little further on.
        let via_syscall = reported(outcome, "rdpmc", "counters_read_tsc");
        assert!(via_syscall > emulated, "{via_syscall} <= {emulated}");
        assert_eq!(reported(outcome, "rdpmc", "counters_read_n"), 0);
        assert_eq!(reported(outcome, "rdpmc", "generation"), 1);
        assert_eq!(reported(outcome, "rdpmc", "diff"), emulated - fast);
        // counters_stop freezes the virtual TSC; counters_start lets it move again.
        assert_eq!(reported(outcome, "rdpmc", "stopped_delta"), 0);
        assert!(reported(outcome, "rdpmc", "started_delta") > 1000);
        diffs.push(emulated - fast);
        // Then RDPMC with index 0, a counter the task does not have: a user fault saying so.
        let fault = task_record(outcome, "fault", "rdpmc");
        assert_eq!(fault.str("mode"), Some("user"));
        assert!(
            matches!(fault.u64("vector"), Some(6 | 13)),
            "#UD or #GP: {}",
            fault.value
        );
        let detail = fault.str("detail").unwrap_or_default();
        assert!(detail.contains("no counter"), "{detail}");
        assert!(
            outcome
                .records_of("task_exit")
                .all(|r| r.str("task") != Some("rdpmc"))
        );
    }
    // The emulated read comes right after the fast one: the difference is the instructions in
    // between (the rest of the fast reader, the trap and the kernel's path to its RDTSC), the
    // same on every run.
    assert_eq!(diffs[0], diffs[1], "not reproducible: {diffs:?}");
    assert!(diffs[0] < 2000, "difference {}", diffs[0]);
}

#[test]
fn syscalls_check_their_arguments_and_fill_their_buffers() {
    for outcome in both() {
        let values = &task_record(outcome, "report", "rdpmc").get("values");
        // No counters on TCG: an event is refused (ENODEV), the task goes on.
        assert_eq!(values["configure_event"], "Err(NoDev)");
        // A result buffer in the task's read-only code is refused.
        assert_eq!(values["time_into_code"], "Err(Fault)");
        // The counter page has no counter slots (only the virtual TSC).
        assert_eq!(values["read_values"], "Ok(0)");
        let hz = reported(outcome, "rdpmc", "time_hz");
        let tsc_record = expect_record(outcome, "tsc");
        assert_eq!(Some(hz), tsc_record.u64("hz"));
        assert!(reported(outcome, "rdpmc", "time_tsc") > 0);
    }
}

#[test]
fn preempted_round_robin_gives_the_same_virtual_tsc_deltas() {
    let outcome = preempted();
    expect_success(outcome);
    assert_eq!(
        expect_record(outcome, "boot").get("config")["quantum_us"],
        1
    );
    let schedule = expect_record(outcome, "schedule");
    assert_eq!(schedule.str("policy"), Some("round-robin"));
    assert_eq!(
        schedule.u64("tasks"),
        Some(4),
        "the garbage payload is not a task"
    );
    let quantum = schedule.u64("quantum_tsc").unwrap();
    let switch = schedule.u64("switch_tsc_min").unwrap();
    assert_eq!(
        schedule.u64("switch_tsc_max"),
        Some(switch),
        "icount: exact"
    );
    // The quantum (TSC ticks of wall time, kernel included) is shorter than loop2000's
    // 8000-instruction loop (today also than loop1000's 4000), so that loop was preempted at
    // least once between its two reads.
    assert!(quantum < 8000, "quantum {quantum}");
    task_record(outcome, "task_error", "badelf");
    let alone = run(0);
    for (task, n) in [("loop1000", 1000u64), ("loop2000", 2000)] {
        let exit = task_record(outcome, "task_exit", task);
        assert_eq!(exit.get("code").as_i64(), Some(0));
        let interrupts = exit.u64("interrupts").unwrap();
        assert!(interrupts > n / 1000, "{task}: {interrupts} interrupts");
        // The kernel takes its measured switch cost off every preemption, so no instruction of
        // the other task or of the kernel's switch appears in the delta (a quantum of the other
        // task is thousands of instructions), and the reader is retry-free: a preemption
        // between its load and its RDTSC is fixed up by the kernel, not retried.
        let preempted = reported(outcome, task, "delta");
        let alone_delta = reported(alone, task, "delta");
        assert_eq!(preempted, alone_delta, "{task}: preempted vs alone");
        // Thousands of back-to-back read pairs, preempted at every phase of the reader (the
        // quantum and the pair's length are not multiples of each other): one difference.
        let pairs = reported(outcome, task, "pairs");
        let (lo, hi) = (
            reported(outcome, task, "pair_min"),
            reported(outcome, task, "pair_max"),
        );
        assert_eq!(lo, hi, "{task}: read pairs differ under preemption");
        assert_eq!(lo, reported(alone, task, "pair_min"));
        assert!(
            interrupts > pairs * lo / quantum / 2,
            "{task}: too few preemptions"
        );
    }
    let hello = task_record(outcome, "task_exit", "hello");
    assert_eq!(hello.get("code").as_i64(), Some(0));
    let end = expect_record(outcome, "end");
    assert_eq!(end.str("status"), Some("ok"));
    let preemptions: u64 = outcome
        .records_of("task_exit")
        .filter_map(|r| r.u64("interrupts"))
        .sum();
    assert!(end.get("interrupts")["timer"].as_u64().unwrap() >= preemptions);
}

/// The watchdog's budget in the tests (milliseconds of a task's own time: about 20 million
/// instructions of `spin` under icount).
const BUDGET_MS: u32 = 5;

/// `spin` (loops forever without a syscall), then `loop1000`, with the watchdog on: alone, or
/// round-robin (`quantum`).
fn watchdog(quantum: bool) -> &'static RunOutcome {
    static RUNS: [OnceLock<RunOutcome>; 2] = [OnceLock::new(), OnceLock::new()];
    RUNS[usize::from(quantum)].get_or_init(|| {
        let config = RunConfig {
            timer_checks: false,
            payloads: builtin_payloads(&["spin", "loop1000"]),
            quantum_us: if quantum { 1 } else { 0 },
            task_budget_ms: Some(BUDGET_MS),
            ..RunConfig::default()
        };
        boot(Firmware::Bios, config, Duration::from_secs(120), Some(0))
    })
}

#[test]
fn without_a_budget_a_task_alone_takes_no_timer_interrupt() {
    let outcome = run(0);
    let boot = expect_record(outcome, "boot");
    assert_eq!(boot.get("config")["task_budget_ms"], 0);
    for (name, b) in PAYLOADS {
        if b.is_some() && name != "rdpmc" {
            let exit = task_record(outcome, "task_exit", name);
            assert_eq!(exit.u64("interrupts"), Some(0), "{name}: {}", exit.value);
            // TSC-only tasks run with CR4.PCE clear: RDPMC always traps and is emulated.
            assert_eq!(exit.get("pce"), false, "{name}: {}", exit.value);
            assert_eq!(exit.u64("pce_entries"), Some(0), "{name}: {}", exit.value);
        }
    }
    assert!(outcome.records.iter().all(|r| r.kind != "task_killed"));
}

#[test]
fn the_watchdog_kills_a_spinning_task_and_the_next_one_runs() {
    for quantum in [false, true] {
        let outcome = watchdog(quantum);
        expect_success_in(outcome, format_args!("quantum {quantum}; "));
        expect_ok_end(outcome);
        assert_eq!(
            expect_record(outcome, "boot").get("config")["task_budget_ms"],
            u64::from(BUDGET_MS)
        );
        let killed = task_record(outcome, "task_killed", "spin");
        assert_eq!(killed.u64("budget_ms"), Some(u64::from(BUDGET_MS)));
        let budget_tsc = killed.u64("budget_tsc").unwrap();
        let vtsc = killed.u64("virtual_tsc").unwrap();
        // Killed once past its budget, and promptly: within 2% (the timer and TSC frequencies
        // are estimates; an early interrupt re-arms for the rest).
        assert!(budget_tsc > 1_000_000, "{}", killed.value);
        assert!(vtsc >= budget_tsc, "{}", killed.value);
        assert!(vtsc - budget_tsc < budget_tsc / 50, "{}", killed.value);
        // Its own time ran out, not the kernel's service of it (it makes no syscall).
        assert_eq!(killed.str("exceeded"), Some("ring3"), "{}", killed.value);
        assert!(killed.u64("interrupts").unwrap() >= 1, "{}", killed.value);
        assert_eq!(killed.u64("syscalls"), Some(0), "{}", killed.value);
        assert!(
            outcome
                .records
                .iter()
                .all(|r| !(r.kind == "task_exit" && r.str("task") == Some("spin"))),
            "spin exited"
        );
        // The next payload still runs, and measures exactly what it measures alone.
        let exit = task_record(outcome, "task_exit", "loop1000");
        assert_eq!(exit.get("code"), 0);
        assert_eq!(
            reported(outcome, "loop1000", "delta"),
            reported(run(0), "loop1000", "delta"),
            "quantum {quantum}"
        );
    }
}

/// `spawner` (spawns `loop1000` without and with `SPAWN_ADD_CHILD`, then the error cases and
/// `rdpmc`, which faults), then `loop1000` and `rdpmc` themselves (spawn finds payloads in the
/// ramdisk): one after the other, or round-robin (`quantum`).
fn family(quantum: bool) -> &'static RunOutcome {
    static RUNS: [OnceLock<RunOutcome>; 2] = [OnceLock::new(), OnceLock::new()];
    RUNS[usize::from(quantum)].get_or_init(|| {
        let config = RunConfig {
            timer_checks: false,
            payloads: builtin_payloads(&["spawner", "loop1000", "rdpmc"]),
            quantum_us: if quantum { 1 } else { 0 },
            ..RunConfig::default()
        };
        boot(Firmware::Bios, config, Duration::from_secs(120), Some(0))
    })
}

#[test]
fn a_child_s_counts_are_added_to_its_parent_s_only_when_asked() {
    for quantum in [false, true] {
        let outcome = family(quantum);
        expect_success_in(outcome, format_args!("quantum {quantum}; "));
        assert_eq!(expect_record(outcome, "end").str("status"), Some("ok"));
        let value = |key: &str| -> i64 {
            let report = task_record(outcome, "report", "spawner");
            report.get("values")[key]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no `{key}` in {}", report.value))
        };
        // Children get indices after the ramdisk's three payloads, in spawn order.
        assert_eq!(value("plain_id"), 3);
        assert_eq!(value("added_id"), 4);
        assert_eq!(value("plain_code"), 0);
        assert_eq!(value("added_code"), 0);
        for (id, add) in [(3, false), (4, true)] {
            let spawn = indexed_record(outcome, "task_spawn", id);
            assert_eq!(spawn.str("task"), Some("loop1000"));
            assert_eq!(spawn.str("parent"), Some("spawner"));
            assert_eq!(spawn.u64("parent_index"), Some(0));
            assert_eq!(spawn.get("add_to_parent"), add);
        }
        let child_plain = indexed_record(outcome, "task_exit", 3);
        let child_added = indexed_record(outcome, "task_exit", 4);
        let child_tsc = child_added.u64("virtual_tsc").unwrap();
        assert_eq!(child_plain.u64("virtual_tsc"), Some(child_tsc));
        // The parent's two measurements run the same instructions; only the second includes
        // the child's count, exactly.
        let (plain, added) = (value("plain"), value("added"));
        assert!(plain > 0 && plain < 20_000, "plain {plain}");
        // Exact, alone and under round-robin.
        let extra = added - plain - child_tsc as i64;
        assert_eq!(
            extra, 0,
            "quantum {quantum}: plain {plain}, added {added}, child {child_tsc}"
        );
        // Errors: unknown name ENOENT, bad pointer EFAULT, unknown flag EINVAL, waiting for a
        // non-child or a child already waited for ENOENT, a child that faulted EABORTED.
        assert_eq!(value("unknown"), -4);
        assert_eq!(value("fault"), -2);
        assert_eq!(value("bad_flags"), -1);
        assert_eq!(value("not_child"), -4);
        assert_eq!(value("again"), -4);
        assert_eq!(value("aborted"), -7);
        let rdpmc_child = indexed_record(outcome, "task_spawn", 5);
        assert_eq!(rdpmc_child.str("task"), Some("rdpmc"));
        assert_eq!(task_record(outcome, "task_exit", "spawner").get("code"), 0);
    }
}

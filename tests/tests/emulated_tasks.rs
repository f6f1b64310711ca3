//! A task's hardware counters end to end on the emulated PMU (emulator/, exact under `-icount
//! shift=0`), for an Intel v2 (legacy counter writes), an Intel v5 and an AMD PerfMonV2 model:
//! the `hwcount` payload (payloads/rdpmc/src/hwcount.rs) counts `instructions:u`,
//! `instructions:k`, `branches:u` and (Intel) fixed counter 0 through `counters_configure`, and
//! reads them through the counter page with RDPMC in ring 3 (CR4.PCE set), through emulated
//! RDPMC and `counters_read` when stopped (CR4.PCE clear), across thousands of switches with the
//! counters preset just below their wrap, round-robin, and with children's counts added.
//! Also: a failed switch of a task's counters (run.cfg `test_pmu_fault`) loses the counts and
//! says so, in a payload's reads and in the harness's results.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Firmware, Overhead, RunConfig};
use baremark::qemu::PmuModel;
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_tests::{
    bench_result, boot_emulated, boot_emulated_ok, builtin_payloads, expect_record, num,
    reported_values, suite_config,
};

/// Instructions and branches in ring 3 per iteration of `hwcount`'s syscall loop.
const SYS_LOOP_INSTRUCTIONS: u64 = 45;
const SYS_LOOP_BRANCHES: u64 = 22;

/// `hwcount` and the two children it spawns, one after the other, no watchdog.
fn config(extra: &[&str], quantum_us: u32) -> RunConfig {
    RunConfig {
        timer_checks: false,
        task_budget_ms: Some(0),
        quantum_us,
        extra_lines: extra.iter().map(|l| l.to_string()).collect(),
        payloads: builtin_payloads(&["hwcount", "loop1000", "loop2000"]),
        ..RunConfig::default()
    }
}

fn boot(model: PmuModel, extra: &[&str], quantum_us: u32) -> RunOutcome {
    boot_emulated_ok(config(extra, quantum_us), Duration::from_secs(180), model)
}

/// Each model's plain run, booted once for all the tests that read it.
fn plain(model: PmuModel) -> &'static RunOutcome {
    static RUNS: [OnceLock<RunOutcome>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let i = MODELS.iter().position(|&m| m == model).unwrap();
    RUNS[i].get_or_init(|| boot(model, &[], 0))
}

const MODELS: [PmuModel; 3] = [PmuModel::IntelV2, PmuModel::IntelV5, PmuModel::AmdV2];

/// Every `key=value` of `hwcount`'s `report` records (it is the first payload: task_index 0).
fn reported(outcome: &RunOutcome) -> BTreeMap<String, String> {
    reported_values(outcome, 0)
}

fn task_exit<'a>(outcome: &'a RunOutcome, task: &str) -> &'a Record {
    outcome
        .records_of("task_exit")
        .find(|r| r.str("task") == Some(task))
        .unwrap_or_else(|| panic!("no task_exit of {task}: {}", outcome.tail_text()))
}

/// The slots `hwcount` configured: GP instructions:u, instructions:k, branches:u, and on Intel
/// fixed counter 0 instructions:u.
fn slots(model: PmuModel) -> &'static [&'static str] {
    match model {
        PmuModel::AmdV2 => &["inst_u", "inst_k", "br_u"],
        _ => &["inst_u", "inst_k", "br_u", "fixed0_u"],
    }
}

/// Discovery names the model's version, counters, widths and full-width writes.
#[test]
fn discovery_names_each_model() {
    for model in MODELS {
        let pmu = expect_record(plain(model), "pmu");
        assert_eq!(pmu.get("emulated").as_bool(), Some(true), "{model:?}");
        match model {
            PmuModel::IntelV2 | PmuModel::IntelV5 => {
                let v = if model == PmuModel::IntelV2 { 2 } else { 5 };
                assert_eq!(pmu.get("intel")["version"], v, "{model:?}: {}", pmu.value);
                assert_eq!(pmu.str("backend"), Some(&*format!("intel-arch-v{v}")));
                assert_eq!(pmu.u64("gp_counters"), Some(4), "{}", pmu.value);
                assert_eq!(pmu.u64("gp_width"), Some(48));
                assert_eq!(pmu.u64("fixed_width"), Some(48));
                assert_eq!(pmu.get("intel")["fixed_counters"], 3, "{}", pmu.value);
                assert_eq!(pmu.str("fixed_mask"), Some("0x7"), "{}", pmu.value);
                // v5 enumerates its fixed counters with a bitmap (CPUID.0AH:ECX)
                let bitmap = if v == 5 { "0x7" } else { "0x0" };
                assert_eq!(pmu.get("intel")["fixed_mask"], bitmap, "{}", pmu.value);
                assert_eq!(
                    pmu.get("full_width_write").as_bool(),
                    Some(model == PmuModel::IntelV5),
                    "{model:?}: FW_WRITE only from v4 on here"
                );
            }
            _ => {
                assert_eq!(pmu.str("kind"), Some("amd-perfmon-v2"));
                assert_eq!(pmu.u64("gp_counters"), Some(6));
                assert_eq!(pmu.u64("gp_width"), Some(48));
                assert_eq!(pmu.get("full_width_write").as_bool(), Some(true));
            }
        }
    }
}

/// The counter page's fast read (RDPMC in ring 3 with CR4.PCE set) around 1000 and 2000
/// iterations of a 4-instruction, 1-branch loop: exactly 4000 more instructions (GP, fixed
/// and the virtual TSC alike) and 1000 more branches in ring 3, none in ring 0.
#[test]
fn the_fast_read_counts_exactly_with_rdpmc_in_ring_3() {
    for model in MODELS {
        let outcome = plain(model);
        let v = reported(outcome);
        let d = |slot: &str| {
            num(&v, &format!("fast_2000_{slot}")) - num(&v, &format!("fast_1000_{slot}"))
        };
        assert_eq!(d("inst_u"), 4000, "{model:?}: {v:?}");
        assert_eq!(d("br_u"), 1000, "{model:?}");
        // The retry-free slot reader (SDK `read_slot`) agrees exactly.
        let r = |slot: &str| {
            num(&v, &format!("reader_2000_{slot}")) - num(&v, &format!("reader_1000_{slot}"))
        };
        assert_eq!(r("inst_u"), 4000, "{model:?}: {v:?}");
        assert_eq!(r("br_u"), 1000, "{model:?}");
        assert_eq!(
            d("tsc"),
            4000,
            "{model:?}: the virtual TSC counts the same instructions"
        );
        for n in [1000, 2000] {
            assert_eq!(
                num(&v, &format!("fast_{n}_inst_k")),
                0,
                "{model:?}: no ring 0"
            );
            if slots(model).contains(&"fixed0_u") {
                assert_eq!(
                    num(&v, &format!("fast_{n}_fixed0_u")),
                    num(&v, &format!("fast_{n}_inst_u")),
                    "{model:?}: the fixed and the GP counter agree"
                );
            }
        }
        let exit = task_exit(outcome, "hwcount");
        assert_eq!(exit.get("pce").as_bool(), Some(true), "{}", exit.value);
        // Only the stopped phase's RDPMCs trapped: one per slot.
        assert_eq!(
            exit.u64("rdpmc_emulated"),
            Some(slots(model).len() as u64),
            "{model:?}: {}",
            exit.value
        );
        assert!(exit.get("counters_lost").is_null(), "{}", exit.value);
    }
}

/// Stopped (CR4.PCE clear), every slot reads the same through the counter page, through
/// RDPMC of its GP or fixed index (emulated by the kernel) and through `counters_read`.
#[test]
fn stopped_counters_read_the_same_through_page_emulated_rdpmc_and_syscall() {
    for model in MODELS {
        let v = reported(plain(model));
        for slot in slots(model) {
            let page = num(&v, &format!("stopped_page_{slot}"));
            assert_eq!(
                page,
                num(&v, &format!("stopped_rdpmc_{slot}")),
                "{model:?} {slot}"
            );
            assert_eq!(
                page,
                num(&v, &format!("stopped_read_{slot}")),
                "{model:?} {slot}"
            );
            assert_eq!(
                page,
                num(&v, &format!("stopped_reader_{slot}")),
                "{model:?} {slot}: the slot reader's abort path"
            );
        }
        assert!(num(&v, "stopped_page_inst_u") > 12_000, "{model:?}: {v:?}");
    }
}

/// 2000 more iterations of a loop with a `yield` in each (2000 more switches out and in) count
/// exactly 2000 times the loop's instructions and branches in ring 3.
#[test]
fn counts_survive_thousands_of_switches() {
    for model in MODELS {
        let v = reported(plain(model));
        let d = |slot: &str| {
            num(&v, &format!("sys_4000_{slot}")) - num(&v, &format!("sys_2000_{slot}"))
        };
        assert_eq!(
            d("inst_u"),
            2000 * SYS_LOOP_INSTRUCTIONS,
            "{model:?}: {v:?}"
        );
        assert_eq!(d("br_u"), 2000 * SYS_LOOP_BRANCHES, "{model:?}");
        // Ring 0: the kernel's few instructions between enabling the counters and SYSRET, and
        // between SYSCALL and disabling them, in every switch.
        assert!(d("inst_k") >= 2000, "{model:?}: {}", d("inst_k"));
        if slots(model).contains(&"fixed0_u") {
            assert_eq!(d("fixed0_u"), d("inst_u"), "{model:?}");
        }
    }
}

/// With every counter preset 20 events below its wrap at each switch-in (run.cfg
/// `counter_preset`), every run of the task longer than 20 events wraps its counters: the
/// 64-bit virtual counts must come out exactly as without the preset, across all the switches
/// (legacy 32-bit sign-extended writes on Intel v2, full-width writes on AMD).
#[test]
fn counters_preset_near_the_wrap_widen_exactly() {
    for model in [PmuModel::IntelV2, PmuModel::AmdV2] {
        let preset = boot(model, &["counter_preset = 20"], 0);
        assert_eq!(reported(&preset), reported(plain(model)), "{model:?}");
        assert!(task_exit(&preset, "hwcount").get("counters_lost").is_null());
    }
}

/// Round-robin (the smallest quantum; `hwcount` yields in every iteration of its syscall loop,
/// so thousands of switches to the other tasks, and timer preemptions), `hwcount` reads through
/// `counters_read` exactly what it reads alone, in ring 3.
#[test]
fn round_robin_tasks_read_what_they_read_alone() {
    let model = PmuModel::IntelV5;
    let rr = boot(model, &[], 1);
    let schedule = expect_record(&rr, "schedule");
    assert!(schedule.u64("quantum_us").is_some(), "{}", schedule.value);
    let alone = reported(plain(model));
    let preempted = reported(&rr);
    let exit = task_exit(&rr, "hwcount");
    assert!(
        exit.u64("interrupts").unwrap() >= 10,
        "preempted: {} {}",
        exit.value,
        schedule.value
    );
    let differ: Vec<String> = alone
        .keys()
        .filter(|key| {
            key.starts_with("sys_") || key.starts_with("spawn_plain") || key.starts_with("reader_")
        })
        .filter(|key| key.ends_with("_u"))
        .filter(|key| preempted[*key] != alone[*key])
        .map(|key| format!("{key}: {} alone, {} preempted", alone[key], preempted[key]))
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
    // Children run concurrently and are preempted too; what `loop2000` adds over `loop1000` is
    // still exactly its 1000 more iterations. (Their absolute counts come out about 10
    // instructions and 1 branch in ring 3 per preemption of the child higher than alone: an
    // open question, noted in docs/pmu.md.)
    for (slot, more) in [("inst_u", 4000), ("br_u", 1000), ("fixed0_u", 4000)] {
        let d = |run: &BTreeMap<String, String>| {
            num(run, &format!("spawn_add_2000_{slot}"))
                - num(run, &format!("spawn_add_1000_{slot}"))
        };
        assert_eq!(d(&preempted), more, "{slot}");
    }
}

/// `spawn` + `wait` with `SPAWN_ADD_CHILD` adds the child's hardware counts to the parent's:
/// `loop2000` adds exactly 1000 loop iterations (4000 instructions, 1000 branches) more than
/// `loop1000`; without the flag nothing of the child is added.
#[test]
fn children_s_hardware_counts_are_added_to_the_parent_s() {
    for model in MODELS {
        let v = reported(plain(model));
        let d = |a: &str, b: &str, slot: &str| {
            num(&v, &format!("{a}_{slot}")) as i64 - num(&v, &format!("{b}_{slot}")) as i64
        };
        assert_eq!(
            d("spawn_add_2000", "spawn_add_1000", "inst_u"),
            4000,
            "{model:?}: {v:?}"
        );
        assert_eq!(
            d("spawn_add_2000", "spawn_add_1000", "br_u"),
            1000,
            "{model:?}"
        );
        // The child's whole run in ring 3 (the loop and the rest of its program).
        assert!(
            d("spawn_add_1000", "spawn_plain_1000", "inst_u") > 4000,
            "{model:?}"
        );
        // Without the flag: the parent's own instructions around spawn and wait only.
        assert!(num(&v, "spawn_plain_1000_inst_u") < 200, "{model:?}: {v:?}");
    }
}

/// A failed switch of the task's counters (the third switch-in, injected) loses its counts:
/// the page's read and `counters_read` say so (`ECOUNTERS`) instead of returning the stale
/// or zero-based values, an `error` record says why, and `counters_reset` starts them again.
#[test]
fn a_failed_counter_switch_loses_the_counts_and_says_so() {
    let model = PmuModel::IntelV5;
    let outcome = boot(model, &["test_pmu_fault = 3"], 0);
    assert_eq!(
        expect_record(&outcome, "boot").get("config")["test_pmu_fault"],
        3
    );
    let v = reported(&outcome);
    assert_eq!(v["lost_page"], "lost", "{v:?}");
    assert_eq!(v["lost_read"], "lost", "{v:?}");
    assert_eq!(v["lost_after_reset"], "ok", "{v:?}");
    let error = outcome
        .records_of("error")
        .find(|r| r.str("source") == Some("tasks"))
        .expect("an error record");
    let message = error.str("message").unwrap();
    assert!(
        message.contains("test_pmu_fault") && message.contains("lost"),
        "{message}"
    );
    // After the reset the counts are exact again.
    let fast =
        |slot: &str| num(&v, &format!("fast_2000_{slot}")) - num(&v, &format!("fast_1000_{slot}"));
    assert_eq!(fast("inst_u"), 4000);
    assert!(
        task_exit(&outcome, "hwcount")
            .get("counters_lost")
            .is_null()
    );
    // The plain run's reads of the same phase worked.
    let plain = reported(plain(model));
    assert_eq!(
        (plain["lost_page"].as_str(), plain["lost_read"].as_str()),
        ("ok", "ok")
    );
}

/// The harness: the counts of a benchmark group lost mid-measurement are reported "not
/// measured" with the reason, never as supported values; the next benchmark is exact.
#[test]
fn the_harness_reports_lost_counts_as_not_measured() {
    let mut config = suite_config(Overhead::Diff, Some("instructions,branches"));
    config
        .payloads
        .retain(|(name, _)| name == "add-latency" || name == "add-throughput");
    // Switch-in 1: the return from bench_group; 2: from the first bench_samples.
    config.extra_lines.push("test_pmu_fault = 2".into());
    let outcome = boot_emulated_ok(config, Duration::from_secs(120), PmuModel::IntelV4);
    for event in ["instructions", "branches"] {
        let r = bench_result(&outcome, "add-latency", event);
        assert_eq!(r.get("supported").as_bool(), Some(false), "{}", r.value);
        let reason = r.str("reason").unwrap();
        assert!(reason.contains("lost"), "{reason}");
        let r = bench_result(&outcome, "add-throughput", event);
        assert_eq!(r.get("supported").as_bool(), Some(true), "{}", r.value);
    }
}

/// More events than counters: the harness measures them in groups, one after the other, and
/// reports every one, exactly.
#[test]
fn the_harness_reports_every_event_of_many_groups() {
    let events = "instructions,cycles,branches,instructions:u,branches:u,cycles:u,\
                  instructions:k,branches:k,ref-cycles,cycles:k";
    let mut config = suite_config(Overhead::Diff, Some(events));
    config.payloads.retain(|(name, _)| name == "add-latency");
    let outcome = boot_emulated(
        Firmware::Bios,
        config,
        Duration::from_secs(120),
        PmuModel::IntelV2,
    );
    baremark_tests::expect_clean_harness_run(&outcome);
    let results: Vec<&Record> = outcome
        .records_of("result")
        .filter(|r| r.str("bench") == Some("add-latency"))
        .collect();
    assert_eq!(results.len(), 11, "tsc and the 10 events");
    let groups = results[0].u64("groups").unwrap();
    assert!(groups >= 2, "{groups} groups");
    for r in &results {
        let event = r.str("event").unwrap();
        assert_eq!(r.get("supported").as_bool(), Some(true), "{}", r.value);
        assert_eq!(r.get("multiplexed").as_bool(), Some(true));
        let per = r.get("per_iteration")["median"].as_f64().unwrap();
        let expected = match event {
            "instructions" | "cycles" | "instructions:u" | "cycles:u" | "tsc" | "ref-cycles" => {
                10.0
            }
            "branches" | "branches:u" => 1.0,
            _ => 0.0,
        };
        assert_eq!(per, expected, "{event}: {}", r.value);
    }
}

/// Light syscalls (kernel/hw/src/user.rs, "Light syscalls"): with four counters live, an
/// unknown number is answered by the SYSCALL entry itself. Counted by hand from the assembly:
/// 16 instructions of entry and test, 26 of the light path, and the loop's own 4 (`mov`,
/// `syscall`, `dec`, `jnz`): 46 TSC ticks per call under `-icount shift=0`, where `user_page`
/// (a known number: out of `run`, served, counters switched, back in) costs over ten times
/// that. Both return what the general path returns (ENOSYS, the page's address), every call is
/// in `task_exit.syscalls`, the light calls' kernel ticks in its service time and not in the
/// task's virtual TSC, which sees only what the entry and exit assembly leave on its side of
/// the readings.
#[test]
fn unknown_syscalls_take_the_light_path_with_counters_live() {
    let config = RunConfig {
        timer_checks: false,
        task_budget_ms: Some(0),
        payloads: vec![
            ("light".into(), builtin("wallcost")),
            ("general".into(), builtin("wallcost")),
        ],
        extra_members: vec![
            ("args/light".into(), b"syscall".to_vec()),
            ("args/general".into(), b"syscall-general".to_vec()),
        ],
        ..RunConfig::default()
    };
    let o = boot_emulated_ok(config, Duration::from_secs(180), PmuModel::IntelV4);
    let (light, general) = (reported_values(&o, 0), reported_values(&o, 1));
    let get = |v: &BTreeMap<String, String>, k: &str| -> u64 {
        v.get(k)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{k} in {v:?}"))
    };
    for v in [&light, &general] {
        assert_eq!(v.get("counters").map(String::as_str), Some("4"), "{v:?}");
        assert_eq!(get(v, "calls"), 1000);
    }
    assert_eq!(light["result"], "-3", "ENOSYS");
    assert_eq!(
        general["result"],
        format!("{}", 0x7fff_c000_0000u64),
        "the page"
    );
    let (lw, gw) = (get(&light, "wall_ticks"), get(&general, "wall_ticks"));
    assert_eq!(lw / 1000, 46, "46 ticks per light call: {light:?}");
    assert!(gw / 1000 > 10 * 46, "the general path: {general:?}");
    // What the task is charged per call: its loop's 4, the entry's 6 up to its TSC reading
    // and the exit's 12 after its own (the general exit path has 5 more after its reading).
    assert_eq!(get(&light, "seen_ticks") / 1000, 22, "{light:?}");
    assert_eq!(get(&general, "seen_ticks") / 1000, 27, "{general:?}");
    let exit = |task: &str| task_exit(&o, task);
    let (le, ge) = (exit("light"), exit("general"));
    assert_eq!(
        le.u64("syscalls"),
        ge.u64("syscalls"),
        "{} {}",
        le.value,
        ge.value
    );
    assert!(le.u64("syscalls").unwrap() > 1000);
    // Every light call's kernel part (24 ticks between its two readings) is service.
    let service = le.u64("service_tsc").unwrap();
    assert!(service >= 24 * 1000, "{}", le.value);
    assert!(
        service < ge.u64("service_tsc").unwrap(),
        "{} {}",
        le.value,
        ge.value
    );
}

fn builtin(name: &str) -> Vec<u8> {
    baremark::payloads::builtin(name)
        .unwrap_or_else(|| panic!("no built-in payload {name}"))
        .elf
        .to_vec()
}

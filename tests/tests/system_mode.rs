//! System mode end to end on the emulated PMU (exact under `-icount shift=0`): the `sysmode`
//! payload (payloads/rdpmc/src/sysmode.rs) counts `instructions:u`, `instructions:k` and
//! `instructions` on the whole machine, around its own loops and its children's; `EBUSY` both
//! ways; generations that change exactly at configurations and releases. And run.cfg `system`:
//! the run's counts, read around every payload, add up exactly.

use std::collections::BTreeMap;

use baremark::qemu::PmuModel;
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_tests::{boot_payloads_emulated, reported_values};

/// The payload's loop: `spin(N)` is 4N instructions in ring 3.
const N: u64 = 50_000;
const EBUSY: i64 = -5;
const ENOENT: i64 = -4;

fn boot(model: PmuModel, payloads: &[(&str, &str)], extra: &[&str]) -> RunOutcome {
    boot_payloads_emulated(model, payloads, extra, None)
}

/// Every `report` value of the task with `task_index` `index`, as a number.
fn reported(outcome: &RunOutcome, index: u64) -> BTreeMap<String, i64> {
    reported_values(outcome, index)
        .into_iter()
        .map(|(k, v)| {
            let n = v
                .parse()
                .unwrap_or_else(|_| panic!("{k}={v} is not a number"));
            (k, n)
        })
        .collect()
}

fn window(model: PmuModel) {
    let outcome = boot(model, &[("sysmode", "sysmode")], &[]);
    let v = reported(&outcome, 0);
    let ctx = format!("{model:?}: {v:?}");
    // One generation for every read of one configuration.
    let g = v["g_configure"];
    assert!(g > 0, "{ctx}");
    for i in 0..8 {
        assert_eq!(v[&format!("g_read_{i}")], g, "{ctx}");
    }
    for i in 1..5 {
        // The whole machine: every instruction is in ring 3 or ring 0.
        assert_eq!(
            v[&format!("all_{i}")],
            v[&format!("u_{i}")] + v[&format!("k_{i}")],
            "{i}: {ctx}"
        );
    }
    // Twice the loop is exactly 4N instructions more in ring 3, and the same kernel work.
    assert_eq!(v["u_2"] - v["u_1"], 4 * N as i64, "{ctx}");
    assert_eq!(v["k_2"], v["k_1"], "{ctx}");
    assert!(v["k_1"] > 0, "{ctx}");
    // The children's loops count too: every task's instructions are the machine's.
    assert_eq!(v["u_4"] - v["u_3"], 4 * N as i64, "{ctx}");
    assert!(v["k_3"] > v["k_1"], "loading a child is kernel work: {ctx}");
    // Tasks cannot have counters of their own meanwhile.
    let c1 = reported(&outcome, 1);
    let c2 = reported(&outcome, 2);
    assert_eq!(c1["child_configure_1"], EBUSY, "{c1:?}");
    assert_eq!(c2["child_configure_2"], EBUSY, "{c2:?}");
    // Generations: +1 at every configuration and release, never at a read.
    assert_eq!(v["g_reconfigure"], g + 1, "{ctx}");
    assert_eq!(v["g_read_after"], g + 1, "{ctx}");
    assert_eq!(v["g_release"], g + 2, "{ctx}");
    assert_eq!(v["read_released"], ENOENT, "{ctx}");
    // A task with counters of its own: system mode is EBUSY until it drops them.
    assert!(v["own_configure"] > 0, "{ctx}");
    assert_eq!(v["system_while_own"], EBUSY, "{ctx}");
    assert_eq!(v["g_again"], g + 3, "{ctx}");
    assert_eq!(v["g_release_again"], g + 4, "{ctx}");
}

#[test]
fn intel_system_window_counts_the_whole_machine() {
    window(PmuModel::IntelV5);
}

#[test]
fn amd_system_window_counts_the_whole_machine() {
    window(PmuModel::AmdV2);
}

fn counts(r: &Record) -> Vec<u64> {
    r.get("counts")
        .as_array()
        .expect("counts")
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

/// run.cfg `system` for the run: the payloads are observers (their own requests are EBUSY),
/// each payload's share is read around it, and ring 3 runs only in payloads, so the run's
/// `instructions:u` is exactly the sum of theirs.
#[test]
fn run_system_counts_add_up_exactly() {
    let outcome = boot(
        PmuModel::IntelV5,
        &[("sys-a", "sysmode"), ("sys-b", "sysmode")],
        &["system = 0x100c0,0x200c0,0x300c0"],
    );
    for index in 0..2 {
        let v = reported(&outcome, index);
        assert_eq!(v["observer"], 1, "{v:?}");
        assert_eq!(v["system_configure"], EBUSY, "{v:?}");
        assert_eq!(v["own_configure"], EBUSY, "{v:?}");
    }
    let records: Vec<&Record> = outcome.records_of("system_counts").collect();
    assert_eq!(records.len(), 3, "{}", outcome.tail_text());
    let (a, b, run) = (counts(records[0]), counts(records[1]), counts(records[2]));
    assert_eq!(records[0].str("task"), Some("sys-a"));
    assert_eq!(records[2].str("scope"), Some("run"));
    for r in &records {
        let c = counts(r);
        assert_eq!(c[2], c[0] + c[1], "{}", r.value);
        assert_eq!(
            r.get("same_generation").as_bool(),
            Some(true),
            "{}",
            r.value
        );
    }
    // The same program twice: the same ring-3 instructions (its loop is 4N of them).
    assert_eq!(a[0], b[0]);
    assert!(a[0] > 4 * N);
    // No ring-3 code outside the payloads: the run's is exactly theirs; the kernel's is more.
    assert_eq!(run[0], a[0] + b[0]);
    assert!(run[1] > a[1] + b[1]);
}

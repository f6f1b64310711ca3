//! Overflow thresholds and the notification handler end to end on the emulated PMU (exact under
//! `-icount shift=0`): the `notify` payload (payloads/rdpmc/src/notify.rs) counts
//! `instructions:u`, sets a threshold of P, and its handler must run exactly `count / P` times,
//! each at exactly `k * P`, at a RIP inside the loop, without changing the loop's own count or
//! any register; handlers that fault, never return or recurse end only their task; refusals
//! (`EBUSY` in a handler, `EINVAL`, `EPERM` by run.cfg `counters`, `ENODEV` on plain TCG).

use std::collections::BTreeMap;

use baremark::qemu::PmuModel;
use baremark::session::RunOutcome;
use baremark_tests::{boot_payloads_emulated, num, reported_values};

/// The payload's loop and period (payloads/rdpmc/src/notify.rs).
const N: u64 = 25_000;
const P: u64 = 10_007;
const EINVAL: &str = "-1";
const EBUSY: &str = "-5";
/// `wait` for a child that faulted or was killed.
const EABORTED: &str = "-7";

/// `notify` with `extra` run.cfg lines; the child whose handler never returns meets the
/// watchdog (500 ms).
fn boot(model: PmuModel, extra: &[&str]) -> RunOutcome {
    boot_payloads_emulated(model, &[("notify", "notify")], extra, Some(500))
}

/// The parent's `report` values (task_index 0).
fn reported(outcome: &RunOutcome) -> BTreeMap<String, String> {
    reported_values(outcome, 0)
}

fn check_model(model: PmuModel) {
    let outcome = boot(model, &[]);
    let v = reported(&outcome);
    let ctx = format!("{model:?}: {v:?}");
    assert!(num(&v, "configure") > 0, "{ctx}");
    // Refusals outside a handler.
    assert_eq!(v["return_outside"], EINVAL, "{ctx}");
    assert_eq!(v["threshold_no_handler"], EINVAL, "{ctx}");
    assert_eq!(v["threshold_bad_slot"], EINVAL, "{ctx}");
    assert_eq!(v["threshold_big_period"], EINVAL, "{ctx}");
    assert_eq!(v["threshold_small_period"], EINVAL, "{ctx}");
    assert_eq!(v["set"], "0", "{ctx}");
    // The loop's own count is the same with and without notifications, and it is the loop.
    let plain = num(&v, "plain_delta");
    assert_eq!(num(&v, "notified_delta"), plain, "{ctx}");
    // (4 instructions per iteration, plus the `counters_read` call's own part.)
    assert!((4 * N..4 * N + 200).contains(&plain), "{ctx}");
    // Exactly floor(count / P) notifications, the k-th at exactly (k + 1) * P, one period
    // each, inside the loop.
    let stopped = num(&v, "stopped");
    assert!(stopped > 4 * N, "{ctx}");
    let n = num(&v, "notifications");
    assert_eq!(n, stopped / P, "{ctx}");
    for k in 0..n {
        assert_eq!(num(&v, &format!("count_{k}")), (k + 1) * P, "{ctx}");
        assert_eq!(num(&v, &format!("periods_{k}")), 1, "{ctx}");
        assert_eq!(num(&v, &format!("rip_in_spin_{k}")), 1, "{ctx}");
    }
    // Inside a handler the counters cannot be changed.
    assert_eq!(v["in_handler_threshold"], EBUSY, "{ctx}");
    assert_eq!(v["in_handler_configure"], EBUSY, "{ctx}");
    // Every register as it was, across 40 notifications that clobbered XMM0.
    assert_eq!(v["regs_ok"], "1", "{ctx}");
    assert_eq!(num(&v, "regs_notifications"), 40, "{ctx}");
    // Handlers that fault, never return, or recurse end only their own task.
    assert_eq!(v["child_fault"], EABORTED, "{ctx}");
    assert_eq!(v["child_never_returns"], EABORTED, "{ctx}");
    assert_eq!(v["child_recursion"], EABORTED, "{ctx}");
    let faults: Vec<_> = outcome.records_of("fault").collect();
    assert_eq!(faults.len(), 2, "{model:?}: {}", outcome.tail_text());
    assert_eq!(outcome.records_of("task_killed").count(), 1, "{ctx}");
    // The parent's exit record counts its notifications.
    let exit = outcome
        .records_of("task_exit")
        .find(|r| r.u64("task_index") == Some(0))
        .expect("the parent's task_exit");
    assert_eq!(exit.u64("notifications"), Some(n + 40), "{ctx}");
    assert_eq!(exit.u64("notifications_late"), Some(0), "{ctx}");
    assert_eq!(exit.u64("code"), Some(0), "{ctx}");
}

#[test]
fn intel_v5_notifies_exactly() {
    check_model(PmuModel::IntelV5);
}

/// Legacy counter writes (no full-width writes): the armed value is a sign-extended 32-bit one.
#[test]
fn intel_v2_notifies_exactly() {
    check_model(PmuModel::IntelV2);
}

#[test]
fn amd_notifies_exactly() {
    check_model(PmuModel::AmdV2);
}

/// run.cfg `counters` not naming the payload: `EPERM` for its counters, and it says so.
#[test]
fn a_payload_not_allowed_counters_gets_eperm() {
    let outcome = boot(PmuModel::IntelV5, &["counters = someone-else"]);
    let v = reported(&outcome);
    assert_eq!(v["configure"], "-12", "{v:?}");
}

/// run.cfg `sample`: every task records its RIP every 1000 `instructions:u` (Intel: event 0xC0,
/// USR): `profile_samples` records whose RIPs are the payload's code, a `profile_summary` that
/// counts them all with none lost, and a payload that asks for counters of its own gets `EBUSY`
/// and goes on.
#[test]
fn sampling_records_every_period() {
    let outcome = boot_payloads_emulated(
        PmuModel::IntelV5,
        &[("loop2000", "loop2000"), ("notify", "notify")],
        &["sample = 0x100c0@1000"],
        Some(500),
    );
    let rips: Vec<u64> = outcome
        .records_of("profile_samples")
        .filter(|r| r.u64("task_index") == Some(0))
        .flat_map(|r| {
            assert_eq!(r.str("event"), Some("0x100c0"), "{}", r.value);
            assert_eq!(r.u64("period"), Some(1000), "{}", r.value);
            r.get("rips")
                .as_array()
                .expect("rips")
                .iter()
                .map(|v| v.as_u64().expect("a RIP"))
                .collect::<Vec<_>>()
        })
        .collect();
    let summary = outcome
        .records_of("profile_summary")
        .find(|r| r.u64("task_index") == Some(0))
        .unwrap_or_else(|| panic!("no profile_summary: {}", outcome.tail_text()));
    assert_eq!(summary.u64("samples"), Some(rips.len() as u64));
    assert_eq!(summary.u64("lost"), Some(0));
    // loop2000 runs 8000 instructions in its loop alone.
    assert!(rips.len() >= 8, "{} samples", rips.len());
    assert!(
        rips.iter()
            .all(|&rip| (0x40_0000..0x50_0000).contains(&rip)),
        "{rips:x?}"
    );
    // The sampled `notify` payload cannot configure counters of its own: EBUSY, and it goes on.
    let v = reported_values(&outcome, 1);
    assert_eq!(v["configure"], EBUSY, "{v:?}");
    assert!(outcome.records_of("profile_summary").count() >= 2);
}

/// `wallcost`'s 10,000,000-instruction loop (10 instructions per iteration) sampled every
/// 10,007 instructions:u on `model`: the run's outcome.
fn sampled_loop(model: PmuModel) -> RunOutcome {
    let config = baremark::image::RunConfig {
        timer_checks: false,
        payloads: baremark_tests::builtin_payloads(&["wallcost"]),
        extra_members: vec![("args/wallcost".into(), b"loop".to_vec())],
        extra_lines: vec!["sample = 0x100c0@10007".into()],
        ..baremark::image::RunConfig::default()
    };
    baremark_tests::boot_emulated_ok(config, std::time::Duration::from_secs(120), model)
}

/// A long profile (999 samples) keeps its RIPs in memory while the task runs: the
/// `profile_samples` records, 64 RIPs each and numbered without a gap, all come after its
/// `task_exit` (records are serial output, which the task would otherwise wait for at every
/// 64th sample).
#[test]
fn samples_are_written_when_the_task_ends() {
    let outcome = sampled_loop(PmuModel::IntelV4);
    let exit_at = outcome
        .records
        .iter()
        .position(|r| r.kind == "task_exit")
        .expect("task_exit");
    let mut firsts = Vec::new();
    let mut rips = 0;
    for (i, r) in outcome.records.iter().enumerate() {
        if r.kind == "profile_samples" {
            assert!(i > exit_at, "written while the task ran: {}", r.value);
            firsts.push(r.u64("first").expect("first"));
            rips += r.get("rips").as_array().expect("rips").len();
        }
    }
    assert_eq!(rips, 999);
    let expected: Vec<u64> = (0..firsts.len() as u64).map(|k| 64 * k).collect();
    assert_eq!(firsts, expected);
}

/// Overflows served in place (kernel/src/task/run/sample.rs): where the PMU has an overflow
/// status register and full-width counter writes (Intel v4, AMD PerfMonV2), every one of the
/// 999 samples is taken with the counters running and the task straight back in ring 3; on
/// Intel v2 (legacy 32-bit writes) every one takes the general path. Both give the same
/// samples: 999, none lost, every RIP in the loop's 10 instructions, and the same virtual TSC;
/// in place costs a fraction of the general path's TSC ticks per sample (wall, RDTSC around
/// the loop less its 10,000,000 instructions).
#[test]
fn overflows_are_served_in_place_where_the_pmu_allows() {
    let mut vtscs = Vec::new();
    let mut per_sample = Vec::new();
    for (model, in_place) in [
        (PmuModel::IntelV4, 999),
        (PmuModel::AmdV2, 999),
        (PmuModel::IntelV2, 0),
    ] {
        let outcome = sampled_loop(model);
        let summary = outcome
            .records_of("profile_summary")
            .next()
            .expect("profile_summary");
        assert_eq!(
            summary.u64("samples"),
            Some(999),
            "{model:?}: {}",
            summary.value
        );
        assert_eq!(summary.u64("lost"), Some(0), "{model:?}");
        assert_eq!(summary.u64("in_place"), Some(in_place), "{model:?}");
        let rips: Vec<u64> = outcome
            .records_of("profile_samples")
            .flat_map(|r| {
                r.get("rips")
                    .as_array()
                    .expect("rips")
                    .iter()
                    .map(|v| v.as_u64().expect("a RIP"))
                    .collect::<Vec<_>>()
            })
            .collect();
        let (lo, hi) = (rips.iter().min().unwrap(), rips.iter().max().unwrap());
        assert!(
            hi - lo < 32,
            "{model:?}: RIPs in one loop: {lo:#x}..{hi:#x}"
        );
        let exit = outcome.records_of("task_exit").next().expect("task_exit");
        assert_eq!(exit.u64("interrupts"), Some(999), "{}", exit.value);
        vtscs.push(exit.u64("virtual_tsc").unwrap());
        let wall: u64 = reported_values(&outcome, 0)["wall_ticks"].parse().unwrap();
        per_sample.push((wall - 10_000_000) / 999);
    }
    assert!(vtscs.iter().all(|&v| v == vtscs[0]), "{vtscs:?}");
    // In place: under 1,000 ticks a sample, and under half of the general path's.
    assert!(
        per_sample[0] < 1000 && per_sample[1] < 1000,
        "{per_sample:?}"
    );
    assert!(
        2 * per_sample[0] < per_sample[2] && 2 * per_sample[1] < per_sample[2],
        "{per_sample:?}"
    );
}

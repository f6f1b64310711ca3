//! System mode per CPU on the emulated PMU with 4 CPUs under `-icount shift=0` (exact): every
//! CPU counts, the per-CPU counts add up exactly to the total, and each CPU's `instructions:u`
//! is what ran there: run.cfg `system` around payloads pinned to CPUs 1 to 3, and a payload's
//! own window around threads on CPUs 1 to 3 (`system_read`'s per-CPU form). The `sysmode`
//! payload (payloads/rdpmc/src/sysmode.rs) runs `spin(c N)`, 4cN ring-3 instructions, on CPU c.

use std::collections::BTreeMap;
use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::{Accel, PmuModel, QemuOptions};
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_tests::{boot_with, expect_success_in, reported_values};

const N: u64 = 50_000;
const CPUS: u64 = 4;

fn sysmode() -> Vec<u8> {
    baremark::payloads::builtin("sysmode")
        .expect("the sysmode payload")
        .elf
        .to_vec()
}

fn boot_4(config: RunConfig) -> RunOutcome {
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(240);
    qemu.icount = Some(0);
    qemu.pmu_model = Some(PmuModel::IntelV5);
    qemu.extra_args = vec!["-smp".into(), CPUS.to_string()];
    qemu.binary = Some(
        baremark::qemu::emulated_pmu_qemu()
            .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}")),
    );
    let outcome = boot_with(qemu, config);
    expect_success_in(&outcome, format_args!("-smp {CPUS}: "));
    outcome
}

fn counts(r: &Record) -> Vec<u64> {
    r.get("counts")
        .as_array()
        .unwrap_or_else(|| panic!("no counts: {}", r.value))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

/// Each `system_counts` record with the `system_cpu_counts` rows that follow it.
fn windows(outcome: &RunOutcome) -> Vec<(&Record, Vec<&Record>)> {
    let mut out: Vec<(&Record, Vec<&Record>)> = Vec::new();
    for r in &outcome.records {
        match r.kind.as_str() {
            "system_counts" => out.push((r, Vec::new())),
            "system_cpu_counts" => out.last_mut().expect("a total first").1.push(r),
            _ => {}
        }
    }
    out
}

/// run.cfg `system` around `sys-c` pinned to CPU c (c = 1..3), which runs `spin(c N)`: each
/// payload's `instructions:u` is on its CPU alone, the CPUs add up exactly to the total, and
/// CPU c's count is 4N more than CPU c-1's (the same program but for the loop).
#[test]
fn run_system_counts_every_cpu_and_add_up() {
    let names: Vec<String> = (1..CPUS).map(|c| format!("sys-{c}")).collect();
    let config = RunConfig {
        timer_checks: false,
        payloads: names.iter().map(|n| (n.clone(), sysmode())).collect(),
        pins: names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i + 1))
            .collect(),
        extra_members: names
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("args/{n}"), format!("{}", i + 1).into_bytes()))
            .collect(),
        extra_lines: vec!["system = 0x100c0,0x200c0,0x300c0".into()],
        ..RunConfig::default()
    };
    let outcome = boot_4(config);
    let w = windows(&outcome);
    assert_eq!(w.len(), 4, "{}", outcome.tail_text());
    let mut user_on = BTreeMap::new();
    for (total, rows) in &w {
        let cpus: Vec<u64> = rows.iter().map(|r| r.u64("cpu").unwrap()).collect();
        assert_eq!(cpus, (0..CPUS).collect::<Vec<_>>(), "{}", total.value);
        let t = counts(total);
        for (e, &want) in t.iter().enumerate() {
            let sum: u64 = rows.iter().map(|r| counts(r)[e]).sum();
            assert_eq!(sum, want, "entry {e}: {}", total.value);
        }
        assert_eq!(t.len(), 3, "{}", total.value);
        for r in rows {
            let c = counts(r);
            assert_eq!(c[2], c[0] + c[1], "{}", r.value);
            assert_eq!(r.get("stale").as_bool(), Some(false), "{}", r.value);
            assert_eq!(r.str("core_type"), Some("uniform"), "{}", r.value);
        }
        if total.str("scope") == Some("payload") {
            let on = total.u64("cpu").unwrap();
            assert_eq!(total.str("task"), Some(format!("sys-{on}").as_str()));
            // Ring 3 ran only on the payload's CPU.
            for r in rows {
                let u = counts(r)[0];
                if r.u64("cpu") == Some(on) {
                    assert_eq!(u, t[0], "{}", r.value);
                    user_on.insert(on, u);
                } else {
                    assert_eq!(u, 0, "{}", r.value);
                }
            }
        } else {
            // The run: each CPU's ring-3 count is exactly its payload's.
            for r in rows {
                let cpu = r.u64("cpu").unwrap();
                assert_eq!(
                    counts(r)[0],
                    user_on.get(&cpu).copied().unwrap_or(0),
                    "{}",
                    r.value
                );
            }
        }
    }
    assert_eq!(user_on.len(), 3, "{user_on:?}");
    assert!(user_on[&1] > 4 * N, "{user_on:?}");
    assert_eq!(user_on[&2] - user_on[&1], 4 * N, "{user_on:?}");
    assert_eq!(user_on[&3] - user_on[&2], 4 * N, "{user_on:?}");
}

/// A payload's own window (`system_configure`, `system_read` per CPU) around threads on CPUs
/// 1 to 3: each CPU's row is its thread's, they add up to the total, and CPU c's thread ran
/// exactly 4N more ring-3 instructions than CPU c-1's.
#[test]
fn per_cpu_read_counts_each_threads_cpu() {
    let config = RunConfig {
        timer_checks: false,
        payloads: vec![("sysmode".into(), sysmode())],
        extra_members: vec![("args/sysmode".into(), b"cpus".to_vec())],
        ..RunConfig::default()
    };
    let outcome = boot_4(config);
    let v: BTreeMap<String, i64> = reported_values(&outcome, 0)
        .into_iter()
        .map(|(k, v)| (k.clone(), v.parse().unwrap_or_else(|_| panic!("{k}={v}"))))
        .collect();
    assert!(v["g_configure"] > 0, "{v:?}");
    assert_eq!(v["g_read"], v["g_configure"], "{v:?}");
    assert_eq!(v["rows"], CPUS as i64, "{v:?}");
    assert_eq!(v["stale"], 0, "{v:?}");
    for kind in ["u", "k", "all"] {
        let sum: i64 = (0..CPUS).map(|c| v[&format!("cpu_{kind}_{c}")]).sum();
        assert_eq!(sum, v[&format!("total_{kind}")], "{kind}: {v:?}");
    }
    for c in 0..CPUS {
        assert_eq!(
            v[&format!("cpu_all_{c}")],
            v[&format!("cpu_u_{c}")] + v[&format!("cpu_k_{c}")],
            "{c}: {v:?}"
        );
    }
    let u = |c: u64| v[&format!("cpu_u_{c}")];
    assert!(u(1) > 4 * N as i64, "{v:?}");
    assert_eq!(u(2) - u(1), 4 * N as i64, "{v:?}");
    assert_eq!(u(3) - u(2), 4 * N as i64, "{v:?}");
    // The idle CPUs' kernel work (each thread's start and end) is counted there.
    for c in 1..CPUS {
        assert!(v[&format!("cpu_k_{c}")] > 0, "{c}: {v:?}");
    }
}

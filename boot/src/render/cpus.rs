//! The CPUs in the report: the `cpus` line and the `processor` records under it (which CPUs
//! started, why others did not, core types), and where a task or benchmark ran.

use std::fmt::Write as _;

use serde_json::Value;

use crate::records::Record;

use super::{label, s};
use crate::numbers::mhz;

/// `0-3, 8, 10-11` (sorted, duplicates dropped).
pub fn ranges(ids: &[u64]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", ids[i], ids[j])
        } else {
            ids[i].to_string()
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// A CPU's PMU as a `processor` record gives it: `v2: 4 GP x 48 bits, 3 fixed x 48 bits`.
fn processor_pmu(p: &Value) -> String {
    let n = |k: &str| p.get(k).and_then(Value::as_u64).unwrap_or(0);
    format!(
        "v{}: {} GP x {} bits, {} fixed x {} bits",
        n("version"),
        n("gp"),
        n("gp_width"),
        n("fixed"),
        n("fixed_width")
    )
}

/// One CPU (`processor` record) on a line: `cpu 3 | APIC ID 3, uid 3 | online | ...`.
pub(super) fn processor_line(r: &Record) -> String {
    let who = match r.u64("index") {
        Some(i) => format!("cpu {i} | APIC ID {}", r.u64("apic_id").unwrap_or(0)),
        None => format!("APIC ID {}", r.u64("apic_id").unwrap_or(0)),
    };
    let uid = r
        .u64("uid")
        .map(|u| format!(", uid {u}"))
        .unwrap_or_default();
    let mut line = format!("{who}{uid} | {}", s(r, "state"));
    if let Some(why) = r.str("reason") {
        let _ = write!(line, ": {why}");
    }
    if let Some(t) = r.str("core_type") {
        let _ = write!(line, " | {t}");
    }
    if let Some(hz) = r.u64("timer_hz") {
        let _ = write!(line, " | timer {}", mhz(hz));
    }
    let pmu = r.get("pmu");
    if pmu.is_object() {
        let _ = write!(
            line,
            " | pmu {}{}",
            processor_pmu(pmu),
            if pmu.get("same_as_boot_cpu").and_then(Value::as_bool) == Some(false) {
                " (not the boot CPU's)"
            } else {
                ""
            }
        );
    }
    line
}

/// The `cpus` record's line, and under it what the `processor` records before it add: why
/// only the boot CPU runs, each CPU that failed to start and why, the CPUs not enabled (by
/// reason), which CPUs are which core type on a hybrid part, PMUs unlike the boot CPU's; with
/// `verbose`, a line per CPU.
pub fn cpus_lines(r: &Record, processors: &[Record], verbose: bool) -> String {
    let online = r.u64("online").unwrap_or(0);
    let failed = r.u64("failed").unwrap_or(0);
    let disabled = r.u64("disabled").unwrap_or(0);
    let types = r.get("core_types");
    let count = |t: &str| types.get(t).and_then(Value::as_u64).unwrap_or(0);
    let hybrid = r.get("hybrid").as_bool() == Some(true);
    let is = |p: &&Record, state: &str| p.str("state") == Some(state);
    let online_ids: Vec<u64> = processors
        .iter()
        .filter(|p| is(p, "online"))
        .filter_map(|p| p.u64("apic_id"))
        .collect();
    let mut out = format!("{}{online} online", label("cpus"));
    if !online_ids.is_empty() {
        let _ = write!(
            out,
            " (APIC ID{} {})",
            if online_ids.len() == 1 { "" } else { "s" },
            ranges(&online_ids)
        );
    }
    if failed > 0 {
        let _ = write!(out, " | {failed} failed");
    }
    if disabled > 0 {
        let _ = write!(out, " | {disabled} not enabled");
    }
    if hybrid {
        let _ = write!(
            out,
            " | hybrid: {} core, {} atom",
            count("core"),
            count("atom")
        );
        let other = online.saturating_sub(count("core") + count("atom") + count("uniform"));
        if other > 0 {
            let _ = write!(out, ", {other} other");
        }
    }
    let more = |out: &mut String, text: String| {
        let _ = write!(out, "\n{}{text}", label(""));
    };
    if let Some(why) = r.str("only_boot_cpu_because") {
        more(&mut out, format!("only the boot CPU runs: {why}"));
    }
    for p in processors.iter().filter(|p| is(p, "failed")) {
        more(
            &mut out,
            format!(
                "APIC ID {}: not started: {}",
                p.u64("apic_id").unwrap_or(0),
                s(p, "reason")
            ),
        );
    }
    // The CPUs not enabled, by reason (a firmware may list hundreds of absent ones).
    let mut by_reason: Vec<(&str, Vec<u64>)> = Vec::new();
    for p in processors.iter().filter(|p| is(p, "disabled")) {
        let why = p.str("reason").unwrap_or("no reason given");
        let id = p.u64("apic_id").unwrap_or(0);
        match by_reason.iter_mut().find(|(w, _)| *w == why) {
            Some((_, ids)) => ids.push(id),
            None => by_reason.push((why, vec![id])),
        }
    }
    for (why, ids) in by_reason {
        more(
            &mut out,
            format!(
                "APIC ID{} {}: not enabled: {why}",
                if ids.len() == 1 { "" } else { "s" },
                ranges(&ids)
            ),
        );
    }
    // Which CPU (the index a pin names) is which core type, and PMUs unlike the boot CPU's.
    let mut groups: Vec<(String, Vec<u64>)> = Vec::new();
    let mut add = |key: String, index: u64| match groups.iter_mut().find(|(k, _)| *k == key) {
        Some((_, v)) => v.push(index),
        None => groups.push((key, vec![index])),
    };
    for p in processors.iter().filter(|p| is(p, "online")) {
        let Some(index) = p.u64("index") else {
            continue;
        };
        if hybrid {
            add(format!("type {}", s(p, "core_type")), index);
        }
        let pmu = p.get("pmu");
        if pmu.get("same_as_boot_cpu").and_then(Value::as_bool) == Some(false) {
            add(
                format!("pmu {} (not the boot CPU's)", processor_pmu(pmu)),
                index,
            );
        }
    }
    for (what, indexes) in groups {
        more(
            &mut out,
            format!(
                "cpu{} {}: {what}",
                if indexes.len() == 1 { "" } else { "s" },
                ranges(&indexes)
            ),
        );
    }
    if verbose {
        for p in processors {
            more(&mut out, processor_line(p));
        }
    }
    out
}

/// ` on cpu 3` when a record's `cpu` is not the boot CPU.
pub(super) fn on_cpu(r: &Record) -> String {
    match r.u64("cpu") {
        Some(c) if c != 0 => format!(" on cpu {c}"),
        _ => String::new(),
    }
}

/// ` | cpu 3`, ` | cpu 3 (atom)`: where a task or benchmark ran, when not on the boot CPU or
/// when the part is hybrid (a `core_type` other than `uniform`); empty otherwise.
pub fn cpu_note(r: &Record) -> String {
    let cpu = r.u64("cpu");
    let core_type = r.str("core_type").filter(|t| *t != "uniform");
    match (cpu, core_type) {
        (Some(c), Some(t)) => format!(" | cpu {c} ({t})"),
        (Some(c), None) if c != 0 => format!(" | cpu {c}"),
        _ => String::new(),
    }
}

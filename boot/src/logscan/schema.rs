//! The record schema as far as the damage checks need it (docs/records.md): each type's fields,
//! its one-word values, how many a run has, and why an intact-looking record is doubtful.

use serde_json::Value;

use crate::records::{PROFILE_SAMPLES, Record, is_profile_record, parse_rip};
use crate::results::{MetricRec, ResultRec};

/// Top-level fields of each record type besides `type` and `v`.
const FIELDS: &[(&str, &[&str])] = &[
    (
        "boot",
        &[
            "kernel",
            "version",
            "bootloader_api",
            "firmware",
            "serial",
            "tsc_at_entry",
            "memory",
            "kernel_image",
            "config",
            "framebuffer",
            "rsdp",
        ],
    ),
    ("config_error", &["line", "message"]),
    (
        "cpu",
        &[
            "vendor",
            "family",
            "model",
            "stepping",
            "brand",
            "max_leaf",
            "max_extended_leaf",
            "hypervisor",
            "hypervisor_signature",
            "features",
            "protections",
            "vector",
            "cr0",
            "cr4",
        ],
    ),
    (
        "checks",
        &[
            "breakpoint_resume",
            "gp_recovery",
            "msr_gp_recovery",
            "msr_write_allow_list",
            "interrupts_enabled",
            "heap_used_bytes",
            "unmapped_null_page",
        ],
    ),
    (
        "tsc",
        &[
            "hz",
            "method",
            "uncertainty_hz",
            "uncertainty_ppm",
            "samples",
            "invariant",
            "cpuid_16h_base_mhz",
            "pit_hz",
            "pit_uncertainty_hz",
            "pit_present",
            "sources",
            "cross_check",
        ],
    ),
    ("usb_handoff", &["controllers", "results"]),
    (
        "pci",
        &[
            "access",
            "functions",
            "ecam_agree",
            "extended_capabilities",
            "problems",
            "ecam",
        ],
    ),
    (
        "iommu",
        &[
            "units",
            "translation_was_on",
            "protection_was_on",
            "results",
        ],
    ),
    (
        "acpi",
        &[
            "state",
            "rsdp",
            "error",
            "revision",
            "oem",
            "root",
            "tables",
            "problems",
            "cpus",
            "cpus_enabled",
            "cpus_x2apic",
            "apic_ids",
            "pm_timer",
            "hpet",
            "mcfg",
            "dmar",
        ],
    ),
    (
        "apic",
        &[
            "mode",
            "id",
            "version",
            "lvt_entries",
            "base",
            "x2apic_at_entry",
            "timer_hz",
            "timer_divide",
            "timer_vector",
            "spurious_vector",
            "timer_checks",
            "error_status",
        ],
    ),
    (
        "pmu",
        &[
            "discovery",
            "summary",
            "backend",
            "emulated",
            "uarch_model",
            "uarch_latencies",
            "reason",
            "kind",
            "gp_counters",
            "gp_width",
            "fixed_mask",
            "fixed_width",
            "full_width_write",
            "core_type",
            "perf_capabilities",
            "cpuid_23h",
            "limited",
            "hypervisor",
            "pmi_vector",
            "cpuid_0a",
            "intel",
            "amd",
            "probes",
        ],
    ),
    ("selftest", &["check", "result", "detail"]),
    (
        "selftest_summary",
        &["checks", "passed", "failed", "skipped"],
    ),
    ("error", &["source", "message"]),
    (
        "fault",
        &[
            "mode",
            "vector",
            "mnemonic",
            "name",
            "error_code",
            "rip",
            "cs",
            "rflags",
            "rsp",
            "ss",
            "cr2",
            "page_fault",
            "registers",
            "task",
            "task_index",
            "cpu",
            "detail",
        ],
    ),
    (
        "processor",
        &[
            "index",
            "apic_id",
            "uid",
            "state",
            "reason",
            "core_type",
            "timer_hz",
            "pmu",
        ],
    ),
    (
        "cpus",
        &[
            "online",
            "failed",
            "disabled",
            "boot_apic_id",
            "hybrid",
            "core_types",
            "max_cpus",
            "only_boot_cpu_because",
        ],
    ),
    ("panic", &["file", "line", "column", "message"]),
    ("end", &["status", "reason", "tsc", "on_end", "interrupts"]),
    (
        "task_start",
        &[
            "task",
            "task_index",
            "cpu",
            "core_type",
            "entry",
            "segments",
            "mapped_bytes",
            "user_page",
        ],
    ),
    (
        "schedule",
        &[
            "policy",
            "tasks",
            "quantum_us",
            "quantum_tsc",
            "timer_count",
            "timer_divide",
            "switch_tsc_min",
            "switch_tsc_max",
            "switch_wall_tsc",
            "switch_hw_tsc_min",
            "switch_hw_wall_tsc",
            "switch_hw_loaded_wall_tsc",
        ],
    ),
    ("task_error", &["task", "task_index", "cpu", "message"]),
    ("report", &["task", "task_index", "cpu", "values", "text"]),
    ("task_output", &["task", "task_index", "part", "text"]),
    (
        "task_exit",
        &[
            "task",
            "task_index",
            "cpu",
            "core_type",
            "code",
            "virtual_tsc",
            "rdpmc_emulated",
            "counters_lost",
            "pce",
            "pce_entries",
            "syscalls",
            "interrupts",
            "entries",
        ],
    ),
    (
        "task_spawn",
        &[
            "task",
            "task_index",
            "parent",
            "parent_index",
            "add_to_parent",
        ],
    ),
    (
        "task_killed",
        &[
            "task",
            "task_index",
            "cpu",
            "budget_ms",
            "budget_tsc",
            "virtual_tsc",
            "syscalls",
            "interrupts",
        ],
    ),
    (
        "thread_start",
        &[
            "task",
            "task_index",
            "parent_index",
            "thread",
            "cpu",
            "entry",
            "stack_top",
            "user_page",
        ],
    ),
    (
        "task_stopped",
        &[
            "task",
            "task_index",
            "cpu",
            "reason",
            "virtual_tsc",
            "syscalls",
            "interrupts",
        ],
    ),
    (
        "bench_start",
        &[
            "payload",
            "cpu",
            "core_type",
            "bench",
            "iterations",
            "bytes_per_iteration",
            "reps",
            "warmup",
            "overhead",
            "groups",
            "events",
            "events_total",
        ],
    ),
    (
        "result",
        &[
            "payload",
            "cpu",
            "bench",
            "event",
            "unit",
            "supported",
            "reason",
            "counter",
            "emulated",
            "group",
            "groups",
            "multiplexed",
            "scaling",
            "reps",
            "warmup",
            "iterations",
            "overhead",
            "raw",
            "raw2x",
            "overhead_stats",
            "value",
            "per_iteration",
            "outliers",
            "interrupts",
            "interrupts_max",
            "smis",
        ],
    ),
    (
        "samples",
        &[
            "payload", "bench", "event", "kind", "first", "values", "outliers",
        ],
    ),
    (
        "metric",
        &["payload", "bench", "name", "value", "unit", "reason"],
    ),
    (
        "harness_error",
        &["payload", "task_index", "bench", "message"],
    ),
    (
        "summary",
        &[
            "payloads",
            "benchmarks",
            "stopped",
            "results",
            "unsupported",
            "errors",
            "tsc_hz",
            "tsc_method",
        ],
    ),
    // Named by the results model; no field is checked.
    ("bench_summary", &[]),
];

/// Fields whose value is one of a few words: a value one character off one of them is a
/// flipped bit. (Other values pass: a later kernel may add words.)
const WORDS: &[(&str, &str, &[&str])] = &[
    ("end", "status", &["ok", "fail"]),
    ("samples", "kind", &["region", "empty", "region2x"]),
    ("result", "unit", &["ticks", "events"]),
    ("result", "overhead", &["empty", "diff", "none"]),
    ("bench_start", "overhead", &["empty", "diff", "none"]),
    ("fault", "mode", &["kernel", "user"]),
    ("processor", "state", &["online", "failed", "disabled"]),
    ("selftest", "result", &["pass", "fail", "skip"]),
];

/// Machine records: one per boot, so a second, different one means a second boot whose `boot`
/// record was lost.
pub(super) const MACHINE: &[&str] = &[
    "cpu",
    "checks",
    "acpi",
    "tsc",
    "apic",
    "pmu",
    "cpus",
    "iommu",
    "usb_handoff",
];
/// Other records a run has at most one of.
pub(super) const ONCE: &[&str] = &["schedule", "selftest_summary", "summary", "end"];
/// Records of one task, one of each per task (`task_index`).
pub(super) const PER_TASK: &[&str] = &[
    "task_start",
    "task_exit",
    "task_killed",
    "task_stopped",
    "task_error",
    "task_spawn",
    "thread_start",
];
/// Records of a benchmark.
pub(super) const HARNESS: &[&str] = &["bench_start", "result", "samples", "metric"];

pub(super) fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    FIELDS.iter().find(|(k, _)| *k == kind).map(|(_, f)| *f)
}

/// The candidate in `set` that `s` differs from in exactly one byte (a flipped bit changes one
/// byte, and keeps the length).
pub(super) fn one_off<'a>(s: &str, set: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    set.into_iter().find(|c| {
        c.len() == s.len() && c.bytes().zip(s.bytes()).filter(|(a, b)| a != b).count() == 1
    })
}

/// Why an intact-looking record is doubtful, if it is.
pub(super) fn doubt(r: &Record, run_version: Option<u64>) -> Option<String> {
    // The profile's records have rules of their own (a RIP list half read would skew it).
    if is_profile_record(r) {
        return profile_wrong_types(r).map(wrong_type);
    }
    let kind = r.kind.as_str();
    let Some(fields) = fields_of(kind) else {
        let known = FIELDS.iter().map(|(k, _)| *k);
        if let Some(k) = one_off(kind, known) {
            return Some(format!(
                "record type `{kind}` is unknown and one character off `{k}` (a flipped bit?)"
            ));
        }
        if !kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            || kind.is_empty()
        {
            return Some(format!(
                "record type `{}` is not a name the kernel writes",
                kind.escape_default()
            ));
        }
        // A record type this tool does not know: shown raw, as docs/records.md says.
        return None;
    };
    if let Some(v) = run_version
        && r.version() != Some(v)
    {
        return Some(format!(
            "its schema version `{}` differs from the run's v{v} (a flipped bit?)",
            r.get("v")
        ));
    }
    let obj = r.value.as_object()?;
    for key in obj.keys() {
        if key == "type" || key == "v" || fields.contains(&key.as_str()) {
            continue;
        }
        if let Some(k) = one_off(key, fields.iter().copied())
            && !obj.contains_key(k)
        {
            return Some(format!(
                "field `{}` is not in the schema and `{k}` is missing (a flipped bit?)",
                key.escape_default()
            ));
        }
    }
    for (_, field, words) in WORDS.iter().filter(|(k, _, _)| *k == kind) {
        if let Some(s) = r.str(field)
            && !words.contains(&s)
            && let Some(w) = one_off(s, words.iter().copied())
        {
            return Some(format!(
                "`{field}` is `{}`, one character off `{w}` (a flipped bit?)",
                s.escape_default()
            ));
        }
    }
    wrong_types(r).map(wrong_type)
}

fn wrong_type(e: String) -> String {
    format!("a field has the wrong type: {e}")
}

/// Type errors in the fields the results and the report read.
fn wrong_types(r: &Record) -> Option<String> {
    let string = |k: &str| match r.get(k) {
        Value::String(_) => None,
        other => Some(format!("`{k}` is {other}, not a string")),
    };
    let count = |k: &str, nullable: bool| match r.get(k) {
        Value::Null if nullable => None,
        v if v.is_u64() => None,
        other => Some(format!("`{k}` is {other}, not a count")),
    };
    let first = |checks: Vec<Option<String>>| checks.into_iter().flatten().next();
    match r.kind.as_str() {
        "result" => serde_json::from_value::<ResultRec>(r.value.clone())
            .err()
            .map(|e| e.to_string())
            .or_else(|| first(vec![string("payload"), string("bench")])),
        "metric" => serde_json::from_value::<MetricRec>(r.value.clone())
            .err()
            .map(|e| e.to_string())
            .or_else(|| first(vec![string("payload"), string("bench")])),
        "samples" => first(vec![
            string("payload"),
            string("bench"),
            string("event"),
            string("kind"),
            count("first", false),
            match r.get("values") {
                Value::Array(a) if a.iter().all(|v| v.is_i64() || v.is_u64()) => None,
                other => Some(format!("`values` is {other}, not integers")),
            },
        ]),
        "bench_start" => first(vec![
            string("payload"),
            string("bench"),
            count("iterations", true),
            count("reps", true),
            count("events_total", true),
            match r.get("events") {
                Value::Array(a) if a.iter().all(Value::is_string) => None,
                Value::Null => None,
                other => Some(format!("`events` is {other}, not names")),
            },
        ]),
        "summary" => first(vec![count("benchmarks", true), count("results", true)]),
        "end" => string("status"),
        "task_start" | "task_exit" | "task_killed" | "task_stopped" | "task_error"
        | "task_spawn" => first(vec![string("task"), count("task_index", false)]),
        _ => None,
    }
}

/// Type errors in the fields the profile's reader reads (docs/records.md).
fn profile_wrong_types(r: &Record) -> Option<String> {
    let count =
        |k: &str| (!r.get(k).is_u64()).then(|| format!("`{k}` is {}, not a count", r.get(k)));
    match r.str("task") {
        None => Some(format!("`task` is {}, not a string", r.get("task"))),
        Some(_) => None,
    }
    .or_else(|| count("task_index"))
    .or_else(|| count("slot"))
    .or_else(|| count("period"))
    .or_else(|| {
        r.hex("event")
            .is_none()
            .then(|| format!("`event` is {}, not a hex word", r.get("event")))
    })
    .or_else(|| match r.kind.as_str() {
        PROFILE_SAMPLES => match r.get("rips").as_array() {
            Some(a) if a.iter().all(|v| parse_rip(v).is_some()) => None,
            _ => Some("`rips` is not a list of addresses".to_string()),
        },
        _ => count("samples").or_else(|| count("lost")),
    })
}

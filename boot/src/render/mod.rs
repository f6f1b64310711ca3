//! The human-readable boot report, rendered from records (live or from a saved log).

use std::fmt::Write as _;

use serde_json::Value;

use events::cpu::Vendor;

use crate::numbers::mhz;
use crate::profile::spec::name_of_word;
use crate::records::{Record, SCHEMA_VERSION};

mod cpus;
pub use cpus::{cpu_note, cpus_lines, ranges};
use cpus::{on_cpu, processor_line};

fn s<'a>(r: &'a Record, key: &str) -> &'a str {
    r.str(key).unwrap_or("?")
}

/// A report line's label: the name in a column of 8.
pub fn label(name: &str) -> String {
    format!("{name:<8} ")
}

/// A `multiplexed_counts` record as `perf stat` shows multiplexed events: the estimate, and
/// the share of the enabled time the event was counted.
fn multiplexed_lines(r: &Record, vendor: Option<Vendor>) -> String {
    let enabled = r.u64("enabled").unwrap_or(0);
    let list = |k: &str| -> Vec<Value> { r.get(k).as_array().cloned().unwrap_or_default() };
    let (events, raw, running, scaled, counted) = (
        list("events"),
        list("raw"),
        list("running"),
        list("scaled"),
        list("counted"),
    );
    let mut out = format!(
        "{}{} (#{}): {} events in {} groups taking turns, {} turns | enabled {enabled} virtual \
         tsc ticks",
        label("mux"),
        s(r, "task"),
        r.u64("task_index").unwrap_or(0),
        events.len(),
        r.u64("groups").unwrap_or(0),
        r.u64("rotations").unwrap_or(0)
    );
    // Names padded to one column, as `perf stat` aligns its percentages.
    let names: Vec<String> = events
        .iter()
        .map(|e| name_of_word(e.as_u64().unwrap_or(0), vendor))
        .collect();
    let width = names.iter().map(String::len).max().unwrap_or(0);
    for (i, name) in names.iter().enumerate() {
        let num = |v: &[Value]| v.get(i).and_then(Value::as_u64).unwrap_or(0);
        if counted.get(i).and_then(Value::as_str) == Some("yes") {
            let share = if enabled == 0 {
                0.0
            } else {
                num(&running) as f64 * 100.0 / enabled as f64
            };
            let _ = write!(
                out,
                "\n{}{:>16}  {name:<width$}  ({share:.2}%, scaled from {} counted)",
                label(""),
                num(&scaled),
                num(&raw)
            );
        } else {
            let _ = write!(
                out,
                "\n{}{:>16}  {name:<width$}  (its group never ran)",
                label(""),
                "<not counted>",
            );
        }
    }
    if let Some(why) = r.str("counters_lost") {
        let _ = write!(out, "\n{}counts lost: {why}", label(""));
    }
    out
}

/// Renders a stream of records in order, remembering what later lines need: the CPU vendor
/// (from the `cpu` record), so that event words are named as on that vendor (AMD's and Intel's
/// encodings of the same generic event differ, and one vendor's word can mean another event on
/// the other).
///
/// The `processor` records (one per CPU) are kept until the `cpus` record after them, and shown
/// under its line: the CPUs that did not start and why, the core types of a hybrid part; with
/// `verbose`, every CPU.
#[derive(Default)]
pub struct RecordRenderer {
    vendor: Option<Vendor>,
    processors: Vec<Record>,
    /// Show a line per CPU under the `cpus` line (`run --verbose`).
    pub verbose: bool,
    /// The system-mode window whose per-CPU rows are coming (shown as tables once complete).
    system: Option<crate::system_table::Window>,
}

impl RecordRenderer {
    /// A renderer that shows every CPU's `processor` record (`run --verbose`).
    pub fn verbose(verbose: bool) -> Self {
        Self {
            verbose,
            ..Self::default()
        }
    }

    /// The report line(s) for the next record, or `None` for records that need no line.
    pub fn lines(&mut self, r: &Record) -> Option<String> {
        if r.kind == "cpu"
            && let Some(v) = r.str("vendor").and_then(Vendor::from_cpuid_name)
        {
            self.vendor = Some(v);
        }
        match r.kind.as_str() {
            "processor" => {
                self.processors.push(r.clone());
                return None;
            }
            "cpus" => {
                let processors = std::mem::take(&mut self.processors);
                let mut out = cpus_lines(r, &processors, self.verbose);
                if let Some(v) = r.version().filter(|&v| v != SCHEMA_VERSION) {
                    let _ = write!(
                        out,
                        "  [record schema v{v}; this tool knows v{SCHEMA_VERSION}]"
                    );
                }
                return Some(out);
            }
            "system_cpu_counts" => {
                let w = self.system.as_mut()?;
                w.add(r);
                return w.complete().then(|| self.system.take()).flatten().map(|w| {
                    let vendor = self.vendor;
                    w.render(|word| name_of_word(word, vendor))
                        .trim_end()
                        .to_string()
                });
            }
            _ => {}
        }
        if let Some(w) = crate::system_table::Window::open(r) {
            self.system = Some(w);
        }
        // `processor` records without their `cpus` record (a log cut short): one line each.
        let held: Vec<String> = std::mem::take(&mut self.processors)
            .iter()
            .filter_map(|p| record_lines(p, self.vendor))
            .collect();
        let line = record_lines(r, self.vendor);
        if held.is_empty() {
            return line;
        }
        Some(held.into_iter().chain(line).collect::<Vec<_>>().join("\n"))
    }

    /// What is held back at the end of the records (`processor` records whose `cpus` record
    /// never came).
    pub fn finish(&mut self) -> Option<String> {
        let held: Vec<String> = std::mem::take(&mut self.processors)
            .iter()
            .filter_map(|p| record_lines(p, self.vendor))
            .collect();
        (!held.is_empty()).then(|| held.join("\n"))
    }
}

/// The report line(s) for one record, or `None` for records that need no line; event words are
/// named as on `vendor` (either vendor's generic events when it is not known).
pub fn record_lines(r: &Record, vendor: Option<Vendor>) -> Option<String> {
    let mut out = match r.kind.as_str() {
        // The RIPs are shown together, as the profile (`--sample`, crate::profile).
        "profile_samples" => return None,
        // Results are shown together, as the table at the end (table.rs).
        kind if crate::results::RESULT_RECORDS.contains(&kind) => return None,
        "profile_summary" => {
            let lost = r.u64("lost").unwrap_or(0);
            let counts_lost = r
                .str("counters_lost")
                .map(|why| format!("; counts lost: {why}"))
                .unwrap_or_default();
            format!(
                "{}{} (#{}): {} samples of {} every {} events, {lost} lost{}{counts_lost}",
                label(if lost > 0 || !counts_lost.is_empty() {
                    "PROFILE"
                } else {
                    "profile"
                }),
                s(r, "task"),
                r.u64("task_index").unwrap_or(0),
                r.u64("samples").unwrap_or(0),
                s(r, "event"),
                r.u64("period").unwrap_or(0),
                if lost > 0 {
                    " (periods without a RIP of their own: the profile may be skewed)"
                } else {
                    ""
                }
            )
        }
        "processor" => format!("{}{}", label("cpu"), processor_line(r)),
        "cpus" => cpus_lines(r, &[], false),
        "harness_error" => format!(
            "{}{}{}: {}",
            label("HARNESS"),
            s(r, "payload"),
            r.str("bench").map(|b| format!("/{b}")).unwrap_or_default(),
            s(r, "message")
        ),
        "boot" => {
            let mem = r.get("memory");
            let cfg = r.get("config");
            let usable = mem.get("usable_bytes").and_then(Value::as_u64).unwrap_or(0) >> 20;
            let test = cfg.get("test").and_then(Value::as_str).unwrap_or("none");
            let test = if test == "none" {
                String::new()
            } else {
                format!(" | TEST {test}")
            };
            format!(
                "{}{} {} | firmware {} | {} MiB usable | config from {}{}",
                label("boot"),
                s(r, "kernel"),
                s(r, "version"),
                s(r, "firmware"),
                usable,
                cfg.get("source").and_then(Value::as_str).unwrap_or("?"),
                test
            )
        }
        "screen" => match r.str("state") {
            Some("on") => format!(
                "{}{}x{} {}, {} bytes per pixel | {}x{} characters",
                label("screen"),
                r.u64("width").unwrap_or(0),
                r.u64("height").unwrap_or(0),
                s(r, "pixel_format"),
                r.u64("bytes_per_pixel").unwrap_or(0),
                r.u64("columns").unwrap_or(0),
                r.u64("rows").unwrap_or(0)
            ),
            _ => format!("{}off: {}", label("screen"), s(r, "reason")),
        },
        "screen_cost" => format!(
            "{}{} flushes: {} tsc ticks, at most {} | {} rows drawn, {} shifted",
            label("screen"),
            r.u64("flushes").unwrap_or(0),
            r.u64("tsc_total").unwrap_or(0),
            r.u64("tsc_max").unwrap_or(0),
            r.u64("rows_drawn").unwrap_or(0),
            r.u64("rows_shifted").unwrap_or(0)
        ),
        "cpu" => {
            let features = r.get("features").as_object();
            let (have, lack): (Vec<_>, Vec<_>) = features
                .into_iter()
                .flatten()
                .partition(|(_, v)| v.as_bool().unwrap_or(false));
            let names = |v: Vec<(&String, &Value)>| {
                v.into_iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let prot = r
                .get("protections")
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| format!("{k} {}", v.as_str().unwrap_or("?")))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            format!(
                "{}{} family {:#x} model {:#x} stepping {} \"{}\" | hypervisor {}\n{}features: {}\n{}lacking:  {}\n{}protections: {}",
                label("cpu"),
                s(r, "vendor"),
                r.u64("family").unwrap_or(0),
                r.u64("model").unwrap_or(0),
                r.u64("stepping").unwrap_or(0),
                s(r, "brand"),
                r.str("hypervisor")
                    .or(r.str("hypervisor_signature"))
                    .unwrap_or("none"),
                label(""),
                names(have),
                label(""),
                names(lack),
                label(""),
                prot
            )
        }
        "checks" => format!(
            "{}breakpoint resume {} | #GP recovery {} | MSR #GP recovery {} | MSR write allow-list {}",
            label("checks"),
            s(r, "breakpoint_resume"),
            s(r, "gp_recovery"),
            s(r, "msr_gp_recovery"),
            s(r, "msr_write_allow_list")
        ),
        "tsc" => {
            let head = match r.u64("hz") {
                Some(hz) => match r.u64("uncertainty_ppm") {
                    Some(ppm) => format!(
                        "{} +/- {ppm} ppm ({}, {} samples)",
                        mhz(hz),
                        s(r, "method"),
                        r.u64("samples").unwrap_or(0)
                    ),
                    None => format!("{} ({})", mhz(hz), s(r, "method")),
                },
                None => "frequency unknown".to_string(),
            };
            // The cross-check against a second source (older logs: the PIT's rate).
            let check = r.get("cross_check");
            let pit = match (
                check.get("hz").and_then(Value::as_u64),
                r.u64("pit_hz"),
                r.str("method"),
            ) {
                (Some(hz), _, _) => format!(
                    " | cross-check {} ({}) {}",
                    mhz(hz),
                    check.get("method").and_then(Value::as_str).unwrap_or("?"),
                    if check.get("agrees").and_then(Value::as_bool) == Some(true) {
                        "agrees"
                    } else {
                        "DISAGREES"
                    }
                ),
                (None, Some(p), Some(m))
                    if m != "pit-calibration" && !r.get("sources").is_object() =>
                {
                    format!(" | PIT check {}", mhz(p))
                }
                _ => String::new(),
            };
            let invariant = if r.get("invariant").as_bool() == Some(true) {
                "invariant"
            } else {
                "not invariant"
            };
            let unused: Vec<String> = r
                .get("sources")
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(name, v)| {
                    let e = v.get("error").and_then(Value::as_str)?;
                    Some(format!(
                        "\n{}{}: not used: {e}",
                        label(""),
                        name.replace('_', "-")
                    ))
                })
                .collect();
            format!(
                "{}{head}{pit} | {invariant}{}",
                label("tsc"),
                unused.concat()
            )
        }
        "pci" => {
            let ecam = r.get("ecam");
            let mut line = match ecam.get("base").and_then(Value::as_str) {
                Some(base) => format!(
                    "{}{} functions | ECAM at {base} buses {}-{} (MCFG), checked against the ports | {} with PCIe extended capabilities",
                    label("pci"),
                    r.u64("functions").unwrap_or(0),
                    ecam.get("bus_start").and_then(Value::as_u64).unwrap_or(0),
                    ecam.get("bus_end").and_then(Value::as_u64).unwrap_or(0),
                    r.u64("extended_capabilities").unwrap_or(0)
                ),
                None => format!(
                    "{}{} functions | ports 0xCF8/0xCFC",
                    label("pci"),
                    r.u64("functions").unwrap_or(0)
                ),
            };
            for p in r.get("problems").as_array().into_iter().flatten() {
                line.push_str(&format!("\n{}{}", label(""), p.as_str().unwrap_or("?")));
            }
            line
        }
        "iommu" => labelled_lines("iommu", r.get("results")),
        "usb_handoff" if r.get("results").as_array().is_some_and(|a| !a.is_empty()) => {
            labelled_lines("usb", r.get("results"))
        }
        "usb_handoff" => format!(
            "{}no USB controller to take from the firmware",
            label("usb")
        ),
        "acpi" => match r.str("state") {
            Some("ok" | "problems") => {
                let tables: Vec<&str> = r
                    .get("tables")
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let cpus = r.u64("cpus").unwrap_or(0);
                let x2 = r.u64("cpus_x2apic").unwrap_or(0);
                let pm = r.get("pm_timer");
                let dmar = r.get("dmar");
                let mut line = format!(
                    "{}{} {} rev {} | {} | {} CPU{}{} | pm-timer {} | hpet {} | mcfg {} | dmar {}",
                    label("acpi"),
                    s(r, "oem"),
                    s(r, "root"),
                    r.u64("revision").unwrap_or(0),
                    tables.join(" "),
                    cpus,
                    if cpus == 1 { "" } else { "s" },
                    if x2 > 0 {
                        format!(" ({x2} x2APIC)")
                    } else {
                        String::new()
                    },
                    match pm.get("port").and_then(Value::as_str) {
                        Some(port) => format!(
                            "{port} ({} bits)",
                            pm.get("bits").and_then(Value::as_u64).unwrap_or(0)
                        ),
                        None => "none".to_string(),
                    },
                    r.str("hpet").unwrap_or("none"),
                    if r.get("mcfg").as_array().is_some_and(|a| !a.is_empty()) {
                        "yes"
                    } else {
                        "none"
                    },
                    match dmar.get("units").and_then(Value::as_u64) {
                        Some(n) => format!("{n} units"),
                        None => "none".to_string(),
                    }
                );
                for p in r.get("problems").as_array().into_iter().flatten() {
                    line.push_str(&format!(
                        "\n{}ignored: {}",
                        label(""),
                        p.as_str().unwrap_or("?")
                    ));
                }
                line
            }
            Some("error") => format!("{}unusable: {}", label("acpi"), s(r, "error")),
            _ => format!(
                "{}no ACPI tables (no RSDP from the firmware)",
                label("acpi")
            ),
        },
        "apic" => {
            let checks = r.get("timer_checks");
            let c = |k: &str| {
                checks
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string()
            };
            let latency = checks
                .get("deadline_latency_tsc")
                .and_then(Value::as_u64)
                .map(|t| format!(" (fired {t} TSC ticks after the deadline)"))
                .unwrap_or_default();
            format!(
                "{}{} id {} | timer {} | one-shot {} | periodic {} | tsc-deadline {}{}",
                label("apic"),
                s(r, "mode"),
                r.u64("id").unwrap_or(0),
                r.u64("timer_hz").map_or("not measured".into(), mhz),
                c("one_shot"),
                c("periodic"),
                c("tsc_deadline"),
                latency
            )
        }
        "pmu" => {
            let intel = r.get("intel");
            let version = intel.get("version").and_then(Value::as_u64).unwrap_or(0);
            let counters = if version > 0 {
                format!(
                    " | v{version}: {} GP x {} bits, {} fixed x {} bits",
                    intel
                        .get("gp_counters")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                    intel.get("gp_width").and_then(Value::as_u64).unwrap_or(0),
                    intel
                        .get("fixed_counters")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                    intel
                        .get("fixed_width")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                )
            } else if r.u64("gp_counters").unwrap_or(0) > 0 {
                // AMD: no architectural version; the counters the backend drives
                format!(
                    " | {}: {} GP x {} bits",
                    r.str("kind").unwrap_or("?"),
                    r.u64("gp_counters").unwrap_or(0),
                    r.u64("gp_width").unwrap_or(0)
                )
            } else {
                String::new()
            };
            let backend = r.str("backend").unwrap_or("none");
            let reason = r
                .str("reason")
                .map(|x| format!("\n{}{x}", label("")))
                .unwrap_or_default();
            format!(
                "{}{}{counters} | backend {backend}{reason}",
                label("pmu"),
                s(r, "summary")
            )
        }
        "selftest" => format!(
            "{}{:<4} {:<18} {}",
            label("selftest"),
            s(r, "result").to_uppercase(),
            s(r, "check"),
            s(r, "detail")
        ),
        "selftest_summary" => format!(
            "{}SUMMARY: {} tests, {} unexpected failures, {} skipped ({} passed)",
            label("selftest"),
            r.u64("checks").unwrap_or(0),
            r.u64("failed").unwrap_or(0),
            r.u64("skipped").unwrap_or(0),
            r.u64("passed").unwrap_or(0)
        ),
        "config_error" => match r.u64("line") {
            Some(line) => format!(
                "{}run.cfg line {line}: {}",
                label("config"),
                s(r, "message")
            ),
            None => format!("{}{}", label("config"), s(r, "message")),
        },
        "error" => format!("{}[{}] {}", label("ERROR"), s(r, "source"), s(r, "message")),
        "fault" => {
            let mut line = format!(
                "{}{}-mode {} {} (vector {}) at rip {} | error code {} | rsp {}",
                label("FAULT"),
                s(r, "mode"),
                s(r, "mnemonic"),
                s(r, "name"),
                r.u64("vector").unwrap_or(0),
                s(r, "rip"),
                s(r, "error_code"),
                s(r, "rsp")
            );
            if let Some(cr2) = r.str("cr2") {
                let flags: Vec<&str> = r
                    .get("page_fault")
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let _ = write!(line, " | cr2 {cr2} ({})", flags.join(", "));
            }
            if let Some(task) = r.str("task") {
                let _ = write!(line, " | task {task}");
            }
            if let Some(cpu) = r.u64("cpu").filter(|&c| c != 0) {
                let _ = write!(line, " | cpu {cpu}");
            }
            if let Some(detail) = r.str("detail") {
                let _ = write!(line, " | {detail}");
            }
            line
        }
        "panic" => format!(
            "{}{}:{}:{}: {}",
            label("PANIC"),
            s(r, "file"),
            r.u64("line").unwrap_or(0),
            r.u64("column").unwrap_or(0),
            s(r, "message")
        ),
        "end" => {
            let irq = r.get("interrupts");
            let n = |k: &str| irq.get(k).and_then(Value::as_u64).unwrap_or(0);
            let status = match r.str("status") {
                Some("ok") => "ok".to_string(),
                Some(other) => format!(
                    "{} ({})",
                    other.to_uppercase(),
                    r.str("reason").unwrap_or("no reason")
                ),
                None => "?".into(),
            };
            // PMIs only where there were some (most runs never arm an overflow)
            let pmi = n("pmi") + n("pmi_busy") + n("pmi_spurious");
            let pmi = if pmi > 0 {
                format!(
                    ", pmi {} (busy {}, spurious {})",
                    n("pmi"),
                    n("pmi_busy"),
                    n("pmi_spurious")
                )
            } else {
                String::new()
            };
            // Wake-up IPIs (work sent to another CPU) only where there were some.
            let wake = match n("wake_ipi") {
                0 => String::new(),
                w => format!(", wake ipi {w}"),
            };
            format!(
                "{}{status} | interrupts: timer {}, nmi {}, spurious {}, unexpected {}{wake}{pmi}",
                label("end"),
                n("timer"),
                n("nmi"),
                n("spurious_apic") + n("spurious_pic"),
                n("unexpected")
            )
        }
        "task_start" => format!(
            "{}{} (#{}) | entry {} | {} segments, {} KiB{}",
            label("task"),
            s(r, "task"),
            r.u64("task_index").unwrap_or(0),
            s(r, "entry"),
            r.u64("segments").unwrap_or(0),
            r.u64("mapped_bytes").unwrap_or(0) >> 10,
            cpu_note(r)
        ),
        "task_output" => format!(
            "{}{}: {}",
            label("output"),
            s(r, "task"),
            s(r, "text").trim_end()
        ),
        "task_exit" => {
            let mut line = format!(
                "{}{}: exit {} | {} syscalls, {} interrupts",
                label("task"),
                s(r, "task"),
                r.get("code").as_i64().unwrap_or(0),
                r.u64("syscalls").unwrap_or(0),
                r.u64("interrupts").unwrap_or(0)
            );
            if let Some(v) = r.u64("virtual_tsc") {
                let _ = write!(line, " | virtual tsc {v}");
            }
            line.push_str(&cpu_note(r));
            match (r.u64("notifications"), r.u64("notifications_late")) {
                (Some(n), Some(late)) if n > 0 && late > 0 => {
                    let _ = write!(line, " | {n} notifications ({late} periods late)");
                }
                (Some(n), _) if n > 0 => {
                    let _ = write!(line, " | {n} notifications");
                }
                _ => {}
            }
            line
        }
        "multiplexed_counts" => multiplexed_lines(r, vendor),
        "system_counts" => {
            let words = r.get("events").as_array().cloned().unwrap_or_default();
            let counts = r.get("counts").as_array().cloned().unwrap_or_default();
            let list: Vec<String> = words
                .iter()
                .zip(&counts)
                .map(|(w, c)| {
                    let word = w.as_u64().unwrap_or(0);
                    format!("{} {}", name_of_word(word, vendor), c.as_u64().unwrap_or(0))
                })
                .collect();
            format!(
                "{}{}{}: {} | {} tsc ticks | generation {}{}",
                label("system"),
                match r.str("task") {
                    Some(t) => format!("{t} (#{})", r.u64("task_index").unwrap_or(0)),
                    None => "the run".to_string(),
                },
                on_cpu(r),
                list.join(" | "),
                r.u64("tsc").unwrap_or(0),
                r.u64("generation").unwrap_or(0),
                if r.get("same_generation").as_bool() == Some(false) {
                    " (RECONFIGURED meanwhile: not one configuration's counts)"
                } else {
                    ""
                }
            )
        }
        "task_spawn" => format!(
            "{}{} (#{}) spawned by {} (#{}){}",
            label("spawn"),
            s(r, "task"),
            r.u64("task_index").unwrap_or(0),
            s(r, "parent"),
            r.u64("parent_index").unwrap_or(0),
            if r.get("add_to_parent").as_bool() == Some(true) {
                " | its counts add to the parent's"
            } else {
                ""
            }
        ),
        "task_killed" => format!(
            "{}{}: killed by the watchdog: past its budget of {} ms{} | virtual tsc {} | {} syscalls, {} interrupts{}",
            label("TASK"),
            s(r, "task"),
            r.u64("budget_ms").unwrap_or(0),
            if r.str("exceeded") == Some("service") {
                format!(
                    " of the kernel's time serving its syscalls ({} TSC ticks)",
                    r.u64("service_tsc").unwrap_or(0)
                )
            } else {
                String::new()
            },
            r.u64("virtual_tsc").unwrap_or(0),
            r.u64("syscalls").unwrap_or(0),
            r.u64("interrupts").unwrap_or(0),
            cpu_note(r)
        ),
        "task_stopped" => format!(
            "{}{}: stopped{} at the end ({}) | virtual tsc {} | {} syscalls, {} interrupts",
            label("task"),
            s(r, "task"),
            match r.u64("cpu") {
                Some(c) => format!(" on cpu {c}"),
                None => String::new(),
            },
            if r.str("reason").is_some_and(|m| m.starts_with("thread")) {
                "a thread its task did not join"
            } else {
                "a background payload: the others are done"
            },
            r.u64("virtual_tsc").unwrap_or(0),
            r.u64("syscalls").unwrap_or(0),
            r.u64("interrupts").unwrap_or(0)
        ),
        "thread_start" => format!(
            "{}{} (#{}): thread {} of #{} on cpu {} | entry {} | stack {}",
            label("thread"),
            s(r, "task"),
            r.u64("task_index").unwrap_or(0),
            r.u64("thread").unwrap_or(0),
            r.u64("parent_index").unwrap_or(0),
            r.u64("cpu").unwrap_or(0),
            s(r, "entry"),
            s(r, "stack_top")
        ),
        "task_error" => format!(
            "{}{}: not run: {}",
            label("TASK"),
            s(r, "task"),
            s(r, "message")
        ),
        "report" => match r.get("values").as_object() {
            Some(values) => {
                let pairs: Vec<String> = values
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
                    .collect();
                format!(
                    "{}{}{}: {}",
                    label("report"),
                    s(r, "task"),
                    on_cpu(r),
                    pairs.join(" ")
                )
            }
            None => format!(
                "{}{}{}: {}",
                label("report"),
                s(r, "task"),
                on_cpu(r),
                s(r, "text").trim_end()
            ),
        },
        "schedule" => format!(
            "{}{} | {} tasks | quantum {} us ({} TSC ticks) | switch cost {} TSC ticks",
            label("sched"),
            s(r, "policy"),
            r.u64("tasks").unwrap_or(0),
            r.u64("quantum_us").unwrap_or(0),
            r.u64("quantum_tsc").unwrap_or(0),
            r.u64("switch_tsc_min")
                .map_or("unmeasured".to_string(), |t| t.to_string())
        ),
        "results_file" => {
            let rejected: Vec<&str> = r
                .get("rejected")
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut out = match r.str("state") {
                Some("open") => format!(
                    "{}results file on {} (sectors {}..{})",
                    label("stick"),
                    s(r, "disk"),
                    r.u64("lba").unwrap_or(0),
                    r.u64("lba").unwrap_or(0) + r.u64("sectors").unwrap_or(0)
                ),
                _ => format!(
                    "{}no USB stick with this image's results file (disk signature {}): results \
                     on the serial port only",
                    label("stick"),
                    s(r, "disk_signature")
                ),
            };
            for why in rejected {
                let _ = write!(out, "\n{}not used: {why}", label(""));
            }
            out
        }
        "outputs" => format!(
            "{}{} flushes (screen and results file): {} tsc ticks, at most {}{}{}",
            label("outputs"),
            r.u64("flushes").unwrap_or(0),
            r.u64("flush_tsc_total").unwrap_or(0),
            r.u64("flush_tsc_max").unwrap_or(0),
            r.u64("results_file_bytes")
                .map_or(String::new(), |b| format!(
                    " | results file {b} bytes so far"
                )),
            match r.u64("dropped_bytes") {
                Some(0) | None => String::new(),
                Some(n) => format!(" | {n} bytes DROPPED"),
            }
        ),
        "usb_note" => format!("{}{}", label("usb"), s(r, "message")),
        "usb_disk" => format!(
            "{}{} {} {} on xHCI {} port {} ({} speed): {} blocks of {} bytes | digest {}",
            label("usb"),
            s(r, "vendor"),
            s(r, "product"),
            s(r, "revision"),
            s(r, "controller"),
            r.u64("port").unwrap_or(0),
            s(r, "speed"),
            r.u64("blocks").unwrap_or(0),
            r.u64("block_size").unwrap_or(0),
            r.str("digest").unwrap_or("none")
        ),
        "usb_write" => format!(
            "{}write test on {}: sectors {}..{} {}{}",
            label("usb"),
            s(r, "disk"),
            r.u64("lba").unwrap_or(0),
            r.u64("lba").unwrap_or(0) + r.u64("sectors").unwrap_or(0),
            s(r, "result"),
            r.str("message").map_or(String::new(), |m| format!(": {m}"))
        ),
        other => format!("{}{}", label(other), r.value),
    };
    if let Some(v) = r.version().filter(|&v| v != SCHEMA_VERSION) {
        let _ = write!(
            out,
            "  [record schema v{v}; this tool knows v{SCHEMA_VERSION}]"
        );
    }
    Some(out)
}

/// An array of strings as lines, the first under `name`'s label, the others indented.
fn labelled_lines(name: &str, lines: &Value) -> String {
    lines
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .enumerate()
        .map(|(i, l)| format!("{}{l}", label(if i == 0 { name } else { "" })))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Line, parse_line};

    fn rec(json: &str) -> Record {
        match parse_line(json) {
            Line::Record(r) => r,
            Line::Text(t) => panic!("not a record: {t}"),
        }
    }

    #[test]
    fn renders_the_stick_records() {
        let open = rec(
            r#"{"type":"results_file","v":1,"state":"open","disk":"QEMU QEMU HARDDISK 2.5+ (xHCI 00:02.0 port 1, super speed)","lba":1085,"sectors":4096,"disk_signature":"0x1a2b3c4d","rejected":["xHCI 00:03.0 port 2: disk signature 0x00000001, not 0x1a2b3c4d"],"probe_tsc":5}"#,
        );
        assert_eq!(
            record_lines(&open, None).unwrap(),
            "stick    results file on QEMU QEMU HARDDISK 2.5+ (xHCI 00:02.0 port 1, super speed) (sectors 1085..5181)\n         not used: xHCI 00:03.0 port 2: disk signature 0x00000001, not 0x1a2b3c4d"
        );
        let missing = rec(
            r#"{"type":"results_file","v":1,"state":"not-found","disk":null,"lba":1,"sectors":2,"disk_signature":"0x1a2b3c4d","rejected":[],"probe_tsc":5}"#,
        );
        assert!(
            record_lines(&missing, None)
                .unwrap()
                .contains("serial port only")
        );
        let outputs = rec(
            r#"{"type":"outputs","v":1,"flushes":3,"flush_tsc_total":10,"flush_tsc_max":5,"results_file_bytes":null,"results_file_state":null,"dropped_bytes":7}"#,
        );
        assert_eq!(
            record_lines(&outputs, None).unwrap(),
            "outputs  3 flushes (screen and results file): 10 tsc ticks, at most 5 | 7 bytes DROPPED"
        );
    }

    #[test]
    fn renders_multiplexed_counts_as_perf_does() {
        let r = rec(
            r#"{"type":"multiplexed_counts","v":1,"task":"mux","task_index":0,"groups":2,"rotations":40,"enabled":1000,"events":[65728,65732,65728],"raw":[500,125,0],"running":[500,500,0],"scaled":[1000,250,0],"counted":["yes","yes","never-ran"],"counters_lost":null}"#,
        );
        // Event words are named as on the vendor of the log's `cpu` record.
        let mut renderer = RecordRenderer::default();
        renderer.lines(&rec(r#"{"type":"cpu","v":1,"vendor":"GenuineIntel"}"#));
        assert_eq!(
            renderer.lines(&r).unwrap(),
            "mux      mux (#0): 3 events in 2 groups taking turns, 40 turns | enabled 1000 virtual tsc ticks\n                     1000  instructions:u  (50.00%, scaled from 500 counted)\n                      250  branches:u      (50.00%, scaled from 125 counted)\n            <not counted>  instructions:u  (its group never ran)"
        );
        // On AMD 0xc4 is not `branches` (0xc2 is): the word stays in hex.
        let system = rec(
            r#"{"type":"system_counts","v":1,"task":null,"events":[196726,65732],"counts":[7,8],"tsc":9,"generation":2,"same_generation":true}"#,
        );
        let mut amd = RecordRenderer::default();
        amd.lines(&rec(r#"{"type":"cpu","v":1,"vendor":"AuthenticAMD"}"#));
        assert_eq!(
            amd.lines(&system).unwrap(),
            "system   the run: cycles 7 | 0x100c4 8 | 9 tsc ticks | generation 2"
        );
        let exit = rec(
            r#"{"type":"task_exit","v":1,"task":"n","task_index":0,"code":0,"syscalls":3,"interrupts":2,"virtual_tsc":9,"notifications":4,"notifications_late":0}"#,
        );
        assert!(
            record_lines(&exit, None)
                .unwrap()
                .ends_with("| 4 notifications")
        );
    }

    #[test]
    fn a_stopped_background_task_says_so() {
        let stopped = rec(
            r#"{"type":"task_stopped","v":1,"task":"spin","task_index":1,"cpu":2,"reason":"background payload: the other payloads are done","virtual_tsc":123456,"syscalls":0,"interrupts":4}"#,
        );
        assert_eq!(
            record_lines(&stopped, None).unwrap(),
            "task     spin: stopped on cpu 2 at the end (a background payload: the others are done) | virtual tsc 123456 | 0 syscalls, 4 interrupts"
        );
    }

    #[test]
    fn renders_known_records() {
        let tsc = rec(
            r#"{"type":"tsc","v":1,"hz":2994123456,"method":"pit-calibration","uncertainty_ppm":12,"samples":5,"invariant":false}"#,
        );
        assert_eq!(
            record_lines(&tsc, None).unwrap(),
            "tsc      2994.123 MHz +/- 12 ppm (pit-calibration, 5 samples) | not invariant"
        );
        let fault = rec(
            r##"{"type":"fault","v":1,"mode":"kernel","vector":14,"mnemonic":"#PF","name":"page-fault","rip":"0x1","error_code":"0x0","rsp":"0x2","cr2":"0xdead","page_fault":["not-present","read","supervisor"]}"##,
        );
        let line = record_lines(&fault, None).unwrap();
        assert!(
            line.starts_with("FAULT    kernel-mode #PF page-fault (vector 14)"),
            "{line}"
        );
        assert!(
            line.contains("cr2 0xdead (not-present, read, supervisor)"),
            "{line}"
        );
        let end = rec(
            r#"{"type":"end","v":1,"status":"fail","reason":"kernel panic","interrupts":{"timer":7}}"#,
        );
        assert_eq!(
            record_lines(&end, None).unwrap(),
            "end      FAIL (kernel panic) | interrupts: timer 7, nmi 0, spurious 0, unexpected 0"
        );
        // The watchdog says which budget ran out when it was the kernel's service.
        let killed = rec(
            r#"{"type":"task_killed","v":1,"task":"flood","task_index":0,"budget_ms":20,"exceeded":"service","service_tsc":20001000,"virtual_tsc":90000,"syscalls":5000,"interrupts":1}"#,
        );
        let line = record_lines(&killed, None).unwrap();
        assert!(
            line.contains("past its budget of 20 ms of the kernel's time serving its syscalls (20001000 TSC ticks) | virtual tsc 90000"),
            "{line}"
        );
        let killed = rec(
            r#"{"type":"task_killed","v":1,"task":"spin","task_index":0,"budget_ms":20,"exceeded":"ring3","virtual_tsc":20000100}"#,
        );
        let line = record_lines(&killed, None).unwrap();
        assert!(
            line.contains("past its budget of 20 ms | virtual tsc 20000100"),
            "{line}"
        );
    }

    fn processor(
        index: Option<u64>,
        apic: u64,
        state: &str,
        reason: Option<&str>,
        ty: &str,
    ) -> Record {
        let pmu = if state == "online" {
            let same = ty != "atom";
            format!(
                r#"{{"version":5,"gp":{},"gp_width":48,"fixed":3,"fixed_width":48,"same_as_boot_cpu":{same}}}"#,
                if same { 8 } else { 6 }
            )
        } else {
            "null".to_string()
        };
        rec(&format!(
            r#"{{"type":"processor","v":1,"index":{},"apic_id":{apic},"uid":{apic},"state":"{state}","reason":{},"core_type":{},"timer_hz":{},"pmu":{pmu}}}"#,
            index.map_or("null".to_string(), |i| i.to_string()),
            reason.map_or("null".to_string(), |r| format!("\"{r}\"")),
            if state == "online" {
                format!("\"{ty}\"")
            } else {
                "null".into()
            },
            if state == "online" {
                "1000000000"
            } else {
                "null"
            },
        ))
    }

    #[test]
    fn cpus_are_one_line_and_the_ones_that_did_not_start_say_why() {
        let mut renderer = RecordRenderer::default();
        for i in 0..4 {
            assert_eq!(
                renderer.lines(&processor(Some(i), i, "online", None, "uniform")),
                None,
                "held for the cpus line"
            );
        }
        renderer.lines(&processor(
            None,
            9,
            "failed",
            Some("did not answer INIT-STARTUP-STARTUP within 100 ms"),
            "",
        ));
        for id in [12, 13, 14] {
            renderer.lines(&processor(
                None,
                id,
                "disabled",
                Some("not enabled in the MADT (absent)"),
                "",
            ));
        }
        let cpus = rec(
            r#"{"type":"cpus","v":1,"online":4,"failed":1,"disabled":3,"boot_apic_id":0,"hybrid":false,"core_types":{"uniform":4,"core":0,"atom":0},"max_cpus":512,"only_boot_cpu_because":null}"#,
        );
        assert_eq!(
            renderer.lines(&cpus).unwrap(),
            "cpus     4 online (APIC IDs 0-3) | 1 failed | 3 not enabled\n\
             \x20        APIC ID 9: not started: did not answer INIT-STARTUP-STARTUP within 100 ms\n\
             \x20        APIC IDs 12-14: not enabled: not enabled in the MADT (absent)"
        );
        // Nothing held after it.
        assert_eq!(renderer.finish(), None);
        // Alone, and why.
        let alone = rec(
            r#"{"type":"cpus","v":1,"online":1,"failed":0,"disabled":0,"boot_apic_id":0,"hybrid":false,"core_types":{"uniform":1,"core":0,"atom":0},"max_cpus":512,"only_boot_cpu_because":"no MADT: only the boot CPU is known"}"#,
        );
        assert_eq!(
            RecordRenderer::default().lines(&alone).unwrap(),
            "cpus     1 online\n         only the boot CPU runs: no MADT: only the boot CPU is known"
        );
    }

    #[test]
    fn a_hybrid_part_says_which_cpu_is_which_core() {
        let mut renderer = RecordRenderer::verbose(true);
        for (i, ty) in ["core", "core", "atom", "atom"].iter().enumerate() {
            renderer.lines(&processor(Some(i as u64), i as u64 * 2, "online", None, ty));
        }
        let cpus = rec(
            r#"{"type":"cpus","v":1,"online":4,"failed":0,"disabled":0,"boot_apic_id":0,"hybrid":true,"core_types":{"uniform":0,"core":2,"atom":2},"max_cpus":512,"only_boot_cpu_because":null}"#,
        );
        let text = renderer.lines(&cpus).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..4],
            [
                "cpus     4 online (APIC IDs 0, 2, 4, 6) | hybrid: 2 core, 2 atom",
                "         cpus 0-1: type core",
                "         cpus 2-3: type atom",
                "         cpus 2-3: pmu v5: 6 GP x 48 bits, 3 fixed x 48 bits (not the boot CPU's)",
            ]
        );
        // --verbose: every CPU.
        assert_eq!(lines.len(), 8, "{text}");
        assert_eq!(
            lines[6],
            "         cpu 2 | APIC ID 4, uid 4 | online | atom | timer 1000.000 MHz | pmu v5: 6 GP x 48 bits, 3 fixed x 48 bits (not the boot CPU's)"
        );
        // Where tasks ran: the CPU when not the boot CPU, the core type on a hybrid part.
        let start = |cpu: u64, ty: &str| {
            rec(&format!(
                r#"{{"type":"task_start","v":1,"task":"t","task_index":0,"cpu":{cpu},"core_type":"{ty}","entry":"0x401000","segments":2,"mapped_bytes":8192}}"#
            ))
        };
        assert!(
            record_lines(&start(0, "uniform"), None)
                .unwrap()
                .ends_with("8 KiB")
        );
        assert!(
            record_lines(&start(3, "uniform"), None)
                .unwrap()
                .ends_with("8 KiB | cpu 3")
        );
        assert!(
            record_lines(&start(0, "atom"), None)
                .unwrap()
                .ends_with("8 KiB | cpu 0 (atom)")
        );
    }

    #[test]
    fn processor_records_of_a_cut_log_are_not_lost() {
        let mut renderer = RecordRenderer::default();
        renderer.lines(&processor(Some(0), 0, "online", None, "uniform"));
        let text = renderer
            .lines(&rec(r#"{"type":"pci","v":1,"functions":5}"#))
            .unwrap();
        assert!(
            text.starts_with("cpu      cpu 0 | APIC ID 0, uid 0 | online"),
            "{text}"
        );
        assert!(
            text.ends_with("pci      5 functions | ports 0xCF8/0xCFC"),
            "{text}"
        );
        renderer.lines(&processor(Some(0), 0, "online", None, "uniform"));
        assert!(renderer.finish().unwrap().starts_with("cpu      cpu 0"));
        let end =
            rec(r#"{"type":"end","v":1,"status":"ok","interrupts":{"timer":7,"wake_ipi":2}}"#);
        assert_eq!(
            record_lines(&end, None).unwrap(),
            "end      ok | interrupts: timer 7, nmi 0, spurious 0, unexpected 0, wake ipi 2"
        );
    }

    #[test]
    fn unknown_types_and_versions_are_shown_not_dropped() {
        let r = rec(r#"{"type":"future","v":2,"x":1}"#);
        let line = record_lines(&r, None).unwrap();
        assert!(line.starts_with("future"));
        assert!(line.contains("schema v2"));
    }
}

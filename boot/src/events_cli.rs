//! `baremark events list` and `baremark events encode`: what users can count, and the exact
//! register values the kernel would write.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use events::catalog;
use events::cpu::{CpuModel, Vendor};
use events::encode::{FixedCtrl, gp_event_select};
use events::event::{EventDesc, Modifiers, NamedEvents};
use events::nanobench::{NANOBENCH_USER, NanoBenchEvent};
use events::parse::{self, Spec};
use events::pmu::{CoreType, PmuCaps};
use events::table::EventTable;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Where the PMU description comes from.
pub struct Target {
    pub caps: PmuCaps,
    /// Human description of where `caps` came from.
    pub origin: String,
    pub table: Option<EventTable>,
}

/// Resolves `--cpu` / `--perfmon`: a perfmon-style CPU string gives nominal capabilities for
/// that model; without it, this machine's CPUID is read.
pub fn target(
    cpu: Option<&str>,
    core_type: Option<&str>,
    perfmon: Option<&Path>,
) -> Result<Target> {
    let core_type = match core_type {
        None => None,
        Some("core" | "Core" | "p" | "P") => Some(CoreType::Core),
        Some("atom" | "Atom" | "e" | "E") => Some(CoreType::Atom),
        Some(other) => bail!("unknown core type `{other}`: use core (P-core) or atom (E-core)"),
    };
    let (mut caps, origin) = match cpu {
        Some(s) => {
            let model = CpuModel::parse(s).map_err(|e| anyhow::anyhow!("--cpu {s}: {e}"))?;
            (PmuCaps::nominal(model), format!("nominal PMU of {model}"))
        }
        None => host_caps(),
    };
    caps.core_type = core_type.or(caps.core_type);
    let table = match perfmon {
        None => None,
        Some(path) => {
            let model = caps
                .cpu
                .context("--perfmon needs to know the CPU model: pass --cpu VENDOR-FAMILY-MODEL")?;
            let loaded = events::perfmon::load_for_cpu(path, &model, caps.core_type)
                .map_err(|e| anyhow::anyhow!("{e}"))
                .with_context(|| {
                    format!("loading perfmon events for {model} from {}", path.display())
                })?;
            // Events the importer could not convert are reported, never silently dropped.
            for issue in &loaded.skipped {
                eprintln!("baremark: perfmon: skipped {issue}");
            }
            Some(loaded.table)
        }
    };
    Ok(Target {
        caps,
        origin,
        table,
    })
}

/// The capabilities of the machine this tool runs on, from its CPUID. (A VM without a virtual
/// PMU reports none, and then nothing is countable: that is the truth about that machine.)
pub fn host_caps() -> (PmuCaps, String) {
    #[cfg(target_arch = "x86_64")]
    {
        use raw_cpuid::CpuId;
        let cpuid = CpuId::new();
        let vendor = cpuid
            .get_vendor_info()
            .and_then(|v| Vendor::from_cpuid_name(v.as_str()));
        let model = cpuid.get_feature_info().and_then(|f| {
            vendor.map(|v| CpuModel::new(v, u32::from(f.family_id()), u32::from(f.model_id())))
        });
        let caps = match vendor {
            Some(Vendor::Intel) => {
                let r = raw_cpuid::native_cpuid::cpuid_count(0x0a, 0);
                PmuCaps::from_intel_cpuid([r.eax, r.ebx, r.ecx, r.edx], false, model)
            }
            Some(Vendor::Amd) => {
                let ext_core = cpuid
                    .get_extended_processor_and_feature_identifiers()
                    .is_some_and(|e| e.has_perf_cntr_extensions());
                let max_ext = raw_cpuid::native_cpuid::cpuid_count(0x8000_0000, 0).eax;
                let v2 = (max_ext >= 0x8000_0022)
                    .then(|| raw_cpuid::native_cpuid::cpuid_count(0x8000_0022, 0))
                    .filter(|r| r.eax & 1 != 0)
                    .map(|r| (r.ebx & 0xf) as u8);
                PmuCaps::amd(ext_core, v2, model)
            }
            None => PmuCaps::tsc_only(Vendor::Intel, None),
        };
        let what = model.map_or("an unknown CPU".to_string(), |m| m.to_string());
        (caps, format!("this machine's CPUID ({what})"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (
            PmuCaps::tsc_only(Vendor::Intel, None),
            "not an x86_64 machine: pass --cpu".to_string(),
        )
    }
}

/// GP counters an event may use on this PMU, as text ("0-3", "2", "none").
fn gp_counters_text(e: &EventDesc, caps: &PmuCaps) -> String {
    let mask = e.gp_counters.unwrap_or(0) & caps.gp_mask();
    if mask == 0 {
        return "none".into();
    }
    let list: Vec<u32> = (0..32).filter(|i| mask & (1 << i) != 0).collect();
    let contiguous = list.windows(2).all(|w| w[1] == w[0] + 1);
    if contiguous && list.len() > 1 {
        format!("{}-{}", list[0], list[list.len() - 1])
    } else {
        list.iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The encodings of one event for the kernel.
struct Encoded {
    /// GP event-select value with EN set and INT clear; `None` without a GP encoding.
    config: Option<u64>,
    /// Fixed counter index and its 4-bit control field, when a fixed counter can count it.
    fixed: Option<(u8, u8)>,
}

fn encode(e: &EventDesc, m: &Modifiers, caps: &PmuCaps) -> Result<Encoded, String> {
    let config = if e.has_gp_encoding() && caps.gp_counters > 0 {
        Some(gp_event_select(caps.vendor, &e.select, m, true).map_err(|err| err.to_string())?)
    } else {
        None
    };
    let fixed = match e
        .fixed
        .filter(|&i| caps.has_fixed(i) && e.select.is_plain())
    {
        Some(i) => {
            let ctl =
                FixedCtrl::from_modifiers(m, e.select.any_thread).map_err(|err| err.to_string())?;
            Some((i, ctl.bits()))
        }
        None => None,
    };
    if config.is_none() && fixed.is_none() {
        return Err(format!(
            "{} cannot be counted on this PMU (no GP encoding and no fixed counter)",
            e.name
        ));
    }
    Ok(Encoded { config, fixed })
}

fn fields_json(e: &EventDesc, m: &Modifiers) -> Value {
    let s = &e.select;
    json!({
        "event": format!("{:#x}", s.code),
        "umask": format!("{:#x}", s.umask),
        "umask2": format!("{:#x}", s.umask2),
        "cmask": s.cmask,
        "inv": s.inv,
        "edge": s.edge,
        "any": s.any_thread,
        "in_tx": s.in_tx,
        "in_txcp": s.in_txcp,
        "usr": m.usr,
        "os": m.os,
        "int": m.int,
        "host_only": m.host_only,
        "guest_only": m.guest_only,
    })
}

fn fields_text(e: &EventDesc, m: &Modifiers) -> String {
    let s = &e.select;
    let mut t = format!("event={:#04x} umask={:#04x}", s.code, s.umask);
    if s.umask2 != 0 {
        let _ = write!(t, " umask2={:#04x}", s.umask2);
    }
    if s.cmask != 0 {
        let _ = write!(t, " cmask={}", s.cmask);
    }
    for (on, name) in [
        (s.inv, "inv"),
        (s.edge, "edge"),
        (s.any_thread, "any"),
        (s.in_tx, "in_tx"),
        (s.in_txcp, "in_txcp"),
        (m.usr, "usr"),
        (m.os, "os"),
        (m.host_only, "host"),
        (m.guest_only, "guest"),
    ] {
        if on {
            t.push(' ');
            t.push_str(name);
        }
    }
    if let Some(x) = e.extra {
        let _ = write!(t, " msr[{:#x}]={:#x}", x.msr, x.value);
    }
    t
}

fn spec_json(spec: &Spec, caps: &PmuCaps) -> Value {
    let e = &spec.event;
    let m = &spec.modifiers;
    match encode(e, m, caps) {
        Ok(enc) => json!({
            "spec": spec.text,
            "name": e.name,
            "config": enc.config.map(|c| format!("{c:#x}")),
            "fixed": enc.fixed.map(|(i, _)| i),
            "fixed_ctrl": enc.fixed.map(|(_, f)| format!("{f:#x}")),
            "counters": gp_counters_text(e, caps),
            "fields": fields_json(e, m),
            "extra_msr": e.extra.map(|x| json!({"msr": format!("{:#x}", x.msr), "value": format!("{:#x}", x.value)})),
            "error": Value::Null,
        }),
        Err(err) => error_json(&spec.text, &err),
    }
}

fn error_json(spec: &str, err: &str) -> Value {
    json!({"spec": spec, "name": Value::Null, "config": Value::Null, "fixed": Value::Null, "fixed_ctrl": Value::Null, "fields": Value::Null, "error": err})
}

/// One line of a nanoBench config, encoded as nanoBench.sh programs it (user mode, EN set).
fn config_line_json(e: &NanoBenchEvent, caps: &PmuCaps) -> Value {
    let desc = e.event_desc();
    let m = NANOBENCH_USER;
    let mut obj = match e.perfevtsel(caps.vendor, &m) {
        Ok(config) => json!({
            "spec": e.config,
            "name": e.name,
            "config": format!("{config:#x}"),
            "fixed": Value::Null,
            "fixed_ctrl": Value::Null,
            "counters": gp_counters_text(&desc, caps),
            "fields": fields_json(&desc, &m),
            "extra_msr": e.extra.map(|x| json!({"msr": format!("{:#x}", x.msr), "value": format!("{:#x}", x.value)})),
            "error": Value::Null,
        }),
        Err(err) => {
            let mut o = error_json(&e.config, &err.to_string());
            o["name"] = json!(e.name);
            o
        }
    };
    obj["line"] = json!(e.line);
    obj["taken_alone"] = json!(e.taken_alone);
    obj
}

/// The decoded fields of a config line, with its placement options.
fn config_fields_text(e: &NanoBenchEvent) -> String {
    let mut t = fields_text(&e.event_desc(), &NANOBENCH_USER);
    if let Some(n) = e.counter {
        let _ = write!(t, " ctr={n}");
    }
    if e.taken_alone {
        t.push_str(" taken-alone");
    }
    t
}

/// `baremark events encode`: the events of `specs`, then the lines of the nanoBench `config`
/// (its path and events). Returns whether every spec and line encoded.
pub fn encode_cmd(
    specs: &[String],
    config: Option<(&Path, &[NanoBenchEvent])>,
    target: &Target,
    format: Format,
) -> Result<bool> {
    let named = target.table.as_ref().map(|t| t as &dyn NamedEvents);
    let mut objects = Vec::new();
    let mut all_ok = true;
    let mut text = String::new();
    let mut errors = Vec::new();
    for input in specs {
        match parse::parse(input, &target.caps, named) {
            Ok(list) => {
                for spec in list.specs() {
                    let obj = spec_json(spec, &target.caps);
                    if obj["error"].is_null() {
                        let config = obj["config"].as_str().unwrap_or("-");
                        let fixed = match (&obj["fixed"], obj["fixed_ctrl"].as_str()) {
                            (Value::Number(i), Some(ctl)) => format!("fixed {i} (ctrl {ctl})"),
                            _ => "-".into(),
                        };
                        let _ = writeln!(
                            text,
                            "{:<28} {:<14} {:<18} {}",
                            spec.text,
                            config,
                            fixed,
                            fields_text(&spec.event, &spec.modifiers)
                        );
                    } else {
                        all_ok = false;
                        errors.push(format!(
                            "{}: error: {}",
                            spec.text,
                            obj["error"].as_str().unwrap_or("")
                        ));
                    }
                    objects.push(obj);
                }
            }
            Err(e) => {
                all_ok = false;
                errors.push(format!(
                    "{input}: error: {e}\n{}",
                    indent(&e.caret_line(input)).trim_end()
                ));
                objects.push(error_json(input, &e.to_string()));
            }
        }
    }
    let mut config_text = String::new();
    if let Some((path, events)) = config {
        for e in events {
            let obj = config_line_json(e, &target.caps);
            match obj["config"].as_str() {
                Some(value) => {
                    let _ = writeln!(
                        config_text,
                        "{:<5} {:<40} {:<14} {:<9} {}",
                        e.line,
                        e.name,
                        value,
                        obj["counters"].as_str().unwrap_or("-"),
                        config_fields_text(e)
                    );
                }
                None => {
                    all_ok = false;
                    errors.push(format!(
                        "{}: line {}, column {}: {} ({}): error: {}",
                        path.display(),
                        e.line,
                        e.column,
                        e.config,
                        e.name,
                        obj["error"].as_str().unwrap_or("")
                    ));
                }
            }
            objects.push(obj);
        }
    }
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&Value::Array(objects))?),
        Format::Text => {
            println!(
                "# {} ({}); config = GP event select with EN set, INT clear",
                target.origin, target.caps.kind
            );
            if !specs.is_empty() {
                println!(
                    "{:<28} {:<14} {:<18} fields",
                    "spec", "config", "fixed counter"
                );
                print!("{text}");
            }
            if let Some((path, _)) = config {
                if !specs.is_empty() {
                    println!();
                }
                println!(
                    "# nanoBench config {}: user mode only, as nanoBench.sh counts",
                    path.display()
                );
                println!(
                    "{:<5} {:<40} {:<14} {:<9} fields",
                    "line", "name", "config", "counters"
                );
                print!("{config_text}");
            }
            for e in &errors {
                eprintln!("{e}");
            }
        }
    }
    Ok(all_ok)
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

/// `baremark events list`.
pub fn list_cmd(target: &Target, format: Format) -> Result<()> {
    let caps = &target.caps;
    let mut rows: Vec<(String, Result<EventDesc, String>, &'static str)> = catalog::list(caps)
        .into_iter()
        .map(|(name, r)| (name.to_string(), r.map_err(|u| u.reason), "built-in"))
        .collect();
    if let Some(table) = &target.table {
        rows.extend(
            table
                .all()
                .into_iter()
                .map(|e| (e.name.clone(), Ok(e), "perfmon")),
        );
    }
    let default = Modifiers::default();
    match format {
        Format::Json => {
            let objects: Vec<Value> = rows
                .iter()
                .map(|(name, r, source)| match r {
                    Ok(e) => {
                        let enc = encode(e, &default, caps);
                        json!({
                            "name": name,
                            "source": source,
                            "supported": enc.is_ok(),
                            "config": enc.as_ref().ok().and_then(|x| x.config).map(|c| format!("{c:#x}")),
                            "fixed": e.fixed.filter(|&i| caps.has_fixed(i)),
                            "counters": gp_counters_text(e, caps),
                            "description": e.description,
                            "deprecated": e.deprecated,
                            "reason": enc.err(),
                        })
                    }
                    Err(reason) => json!({"name": name, "source": source, "supported": false, "reason": reason}),
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&Value::Array(objects))?);
        }
        Format::Text => {
            println!(
                "# {} ({}); config = user+kernel, EN set",
                target.origin, caps.kind
            );
            println!(
                "{:<44} {:<14} {:<10} {:<6} description",
                "name", "config", "gp", "fixed"
            );
            let mut unsupported = Vec::new();
            for (name, r, _) in &rows {
                match r.as_ref().map(|e| (e, encode(e, &default, caps))) {
                    Ok((e, Ok(enc))) => println!(
                        "{:<44} {:<14} {:<10} {:<6} {}{}",
                        name,
                        enc.config.map_or("-".to_string(), |c| format!("{c:#x}")),
                        gp_counters_text(e, caps),
                        enc.fixed.map_or("-".to_string(), |(i, _)| i.to_string()),
                        e.description.as_deref().unwrap_or(""),
                        if e.deprecated { " [deprecated]" } else { "" }
                    ),
                    Ok((_, Err(reason))) => unsupported.push((name, reason)),
                    Err(reason) => unsupported.push((name, reason.clone())),
                }
            }
            if !unsupported.is_empty() {
                println!("\nnot supported on this PMU:");
                for (name, reason) in unsupported {
                    println!("  {name:<42} {reason}");
                }
            }
        }
    }
    Ok(())
}

/// Arguments shared by the events subcommands.
#[derive(clap::Args, Debug)]
pub struct TargetArgs {
    /// CPU to encode for, perfmon style: GenuineIntel-6-55, AuthenticAMD-25-17 (default: this
    /// machine's CPUID).
    #[arg(long, value_name = "CPUID")]
    pub cpu: Option<String>,
    /// Hybrid parts: core or atom.
    #[arg(long, value_name = "TYPE")]
    pub core_type: Option<String>,
    /// Intel perfmon data: a checkout of Intel's perfmon repository (with mapfile.csv) or one
    /// *_core.json file.
    #[arg(long, value_name = "PATH")]
    pub perfmon: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

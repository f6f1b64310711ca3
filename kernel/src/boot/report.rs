//! The boot report: one record per subsystem (`boot`, `cpu`, `checks`, `tsc`, `apic`, `pmu`),
//! each followed by a human-readable line.

use baremark_hw::apic::ApicMode;
use baremark_hw::boot::{BootFacts, Firmware};
use baremark_hw::cpu::{Protection, Protections};
use baremark_hw::fpu::{Mode as VectorMode, VectorSupport};
use baremark_hw::serial::SerialStatus;
use baremark_hw::{cpu as hwcpu, msr, paging};
use raw_cpuid::CpuIdReaderNative;

use crate::config::{ConfigSource, RunConfig};
use crate::output::console::record;
use crate::output::record::Record;
use crate::platform::acpi::Acpi;
use crate::platform::cpu::{CpuInfo, raw_cpuid_leaf};
use crate::platform::interrupts::COUNTS;
use crate::platform::timer::{ApicReport, TscReport};
use crate::platform::tsc::Mhz;
use crate::platform::tsc::TscFrequency;
use crate::pmu::cpuid::{self, AmdPerfmon, IntelArchPerfmon};
use crate::say;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use events::pmu::PmuKind;

pub(super) fn report_boot(
    facts: &BootFacts,
    config: &RunConfig,
    members: usize,
    tsc_at_entry: u64,
) {
    let firmware = match facts.firmware {
        Firmware::Bios => "bios",
        Firmware::Uefi => "uefi",
        Firmware::Unknown => "unknown",
    };
    let (api_major, api_minor, api_patch) = facts.bootloader_api;
    let heap = facts.heap.ok();
    record("boot", |r| {
        r.str("kernel", "baremark")
            .str("version", crate::VERSION)
            .fmt(
                "bootloader_api",
                format_args!("{api_major}.{api_minor}.{api_patch}"),
            )
            .str("firmware", firmware)
            .str(
                "serial",
                match facts.serial {
                    SerialStatus::Ready => "ready",
                    SerialStatus::Absent => "absent",
                    SerialStatus::Stalled => "stalled",
                },
            )
            .u64("tsc_at_entry", tsc_at_entry)
            .object("memory", |r| {
                r.u64("usable_bytes", facts.frames.usable_bytes)
                    .u64("map_entries", facts.memory_regions as u64)
                    .u64("usable_regions", facts.frames.usable_regions as u64)
                    .u64("dropped_regions", facts.frames.dropped_regions as u64)
                    .u64("dropped_bytes", facts.frames.dropped_bytes)
                    .u64("frames_used", facts.frames.allocated_frames)
                    .opt_u64("heap_bytes", heap)
                    .hex("physical_memory_offset", facts.physical_memory_offset)
            })
            .object("kernel_image", |r| {
                r.hex("physical", facts.kernel_phys)
                    .u64("bytes", facts.kernel_len)
                    .hex("virtual", facts.kernel_virt)
            })
            .object("config", |r| {
                r.str(
                    "source",
                    if config.source == ConfigSource::Ramdisk {
                        "ramdisk"
                    } else {
                        "defaults"
                    },
                )
                .u64("ramdisk_bytes", facts.ramdisk.len() as u64)
                .u64("ramdisk_members", members as u64)
                .str(
                    "on_end",
                    if config.on_end == crate::traps::OnEnd::QemuExit {
                        "qemu-exit"
                    } else {
                        "halt"
                    },
                )
                .str("test", config.test.name())
                .bool("timer_checks", config.timer_checks)
                .bool("selftest", config.selftest)
                .bool("canary", config.canary)
                .u64("quantum_us", u64::from(config.quantum_us))
                .u64("task_budget_ms", u64::from(config.task_budget_ms))
                .opt_str("events", config.events.as_deref())
                .u64("reps", u64::from(config.reps))
                .u64("warmup", u64::from(config.warmup))
                .str("overhead", config.overhead.name())
                .u64("counter_preset", config.counter_preset)
                .u64("test_pmu_fault", u64::from(config.test_pmu_fault))
                .u64("test_smis", u64::from(config.test_smis))
            })
            .opt_str("framebuffer", facts.framebuffer.map(|_| "present"))
            .opt_u64("rsdp", facts.rsdp)
    });
    say!(
        "baremark {} | firmware {firmware} | {} MiB usable | heap {} KiB | config from {}",
        crate::VERSION,
        facts.frames.usable_bytes >> 20,
        heap.unwrap_or(0) >> 10,
        if config.source == ConfigSource::Ramdisk {
            "ramdisk"
        } else {
            "defaults"
        }
    );
    if let Err(e) = facts.heap {
        record("error", |r| {
            r.str("source", "heap")
                .fmt("message", format_args!("heap not mapped: {e:?}"))
        });
    }
    if facts.frames.dropped_regions > 0 {
        record("error", |r| {
            r.str("source", "memory").fmt(
                "message",
                format_args!(
                    "the memory map has more than {} separate usable regions: the {} smallest \
                     ({} KiB) are not used",
                    baremark_hw::frames::MAX_REGIONS,
                    facts.frames.dropped_regions,
                    facts.frames.dropped_bytes >> 10
                ),
            )
        });
    }
}

fn protection_name(p: Protection) -> &'static str {
    match p {
        Protection::Enabled => "enabled",
        Protection::AlreadyOn => "already-on",
        Protection::Unsupported => "unsupported",
        Protection::Failed => "failed",
    }
}

fn vector_mode_name(mode: VectorMode) -> &'static str {
    match mode {
        VectorMode::None => "none",
        VectorMode::Fxsave => "fxsave",
        VectorMode::Xsave => "xsave",
    }
}

pub(super) fn report_cpu(cpu: &CpuInfo, prot: &Protections, vector: &VectorSupport) {
    let hv_sig = cpu.hypervisor_signature;
    record("cpu", |r| {
        r.str("vendor", cpu.vendor.as_str())
            .u64("family", u64::from(cpu.family))
            .u64("model", u64::from(cpu.model))
            .u64("stepping", u64::from(cpu.stepping))
            .str("brand", cpu.brand.as_str())
            .hex("max_leaf", u64::from(cpu.max_leaf))
            .hex("max_extended_leaf", u64::from(cpu.max_extended_leaf))
            .opt_str("hypervisor", cpu.hypervisor_name)
            .opt_str("hypervisor_signature", hv_sig.as_ref().map(|s| s.as_str()))
            .object("features", |mut r| {
                for (name, present) in cpu.features.list() {
                    r = r.bool(name, present);
                }
                r
            })
            .object("protections", |r| {
                r.str("nx", protection_name(prot.nx))
                    .str("smep", protection_name(prot.smep))
                    .str("smap", protection_name(prot.smap))
                    .str("umip", protection_name(prot.umip))
                    .str("wp", protection_name(prot.wp))
            })
            .object("vector", |r| {
                r.str("mode", vector_mode_name(vector.mode))
                    .bool("sse", vector.mode != VectorMode::None)
                    .bool("avx", vector.avx)
                    .bool("avx512", vector.avx512)
                    .hex("xcr0", vector.xcr0)
                    .u64("area_bytes", u64::from(vector.area_bytes))
            })
            .hex("cr0", hwcpu::cr0())
            .hex("cr4", hwcpu::cr4())
    });
    say!(
        "cpu    {} family {:#x} model {:#x} stepping {} \"{}\" | hypervisor {}",
        cpu.vendor.as_str(),
        cpu.family,
        cpu.model,
        cpu.stepping,
        cpu.brand.as_str(),
        cpu.hypervisor_name
            .or(hv_sig.as_ref().map(|s| s.as_str()))
            .unwrap_or("none")
    );
}

/// Proves the trap path returns correctly: a breakpoint is handled and resumed, and a #GP on
/// an MSR that does not exist is turned into an error by the MSR door's exception table.
pub(super) fn report_checks() {
    let before = COUNTS
        .breakpoints
        .load(core::sync::atomic::Ordering::Relaxed);
    baremark_hw::trap::raise_breakpoint();
    let breakpoint_ok = COUNTS
        .breakpoints
        .load(core::sync::atomic::Ordering::Relaxed)
        == before + 1;
    let gp_fixup = msr::gp_recovery_selftest();
    // MSRs that real CPUs refuse with #GP: x2APIC ID while the APIC is still in xAPIC mode (it is
    // until the APIC bring-up), an address in KVM's paravirtual range that nothing implements,
    // and an unassigned AMD address. QEMU's TCG returns 0 for unknown MSRs instead, so there the
    // MSR case is "not-exercised" (the mechanism itself is proven by `gp_recovery`).
    let probes = [0x802u32, 0x4b56_4d7f, 0xc001_1fff];
    let gp_caught = probes
        .iter()
        .filter(|&&m| msr::read(m) == Err(msr::MsrError::GeneralProtection))
        .count();
    let protected = msr::write(msr::addr::IA32_EFER, 0) == Err(msr::MsrError::Protected);
    record("checks", |r| {
        r.str(
            "breakpoint_resume",
            if breakpoint_ok { "ok" } else { "failed" },
        )
        .str("gp_recovery", if gp_fixup { "ok" } else { "failed" })
        .str(
            "msr_gp_recovery",
            if gp_caught > 0 { "ok" } else { "not-exercised" },
        )
        .str(
            "msr_write_allow_list",
            if protected { "ok" } else { "failed" },
        )
        .bool("interrupts_enabled", hwcpu::interrupts_enabled())
        .opt_u64("heap_used_bytes", Some(baremark_hw::heap::usage().0 as u64))
        .bool("unmapped_null_page", paging::translate(0).is_none())
    });
}

/// One reference clock's calibration in the `tsc` record: null where there is none.
fn source<'a>(r: Record<'a>, key: &str, s: Option<&Result<TscFrequency, String>>) -> Record<'a> {
    match s {
        None => r.null(key),
        Some(Ok(f)) => r.object(key, |r| {
            r.u64("hz", f.hz)
                .opt_u64("uncertainty_hz", f.uncertainty_hz)
                .u64("samples", u64::from(f.samples))
                .null("error")
        }),
        Some(Err(e)) => r.object(key, |r| {
            r.null("hz")
                .null("uncertainty_hz")
                .u64("samples", 0)
                .str("error", e)
        }),
    }
}

pub(super) fn report_tsc(tsc: &TscReport, cpu: &CpuInfo) {
    let chosen = tsc.chosen;
    record("tsc", |r| {
        let r = match chosen {
            Some(f) => r
                .u64("hz", f.hz)
                .str("method", f.method.name())
                .opt_u64("uncertainty_hz", f.uncertainty_hz)
                .opt_u64("uncertainty_ppm", f.uncertainty_ppm())
                .u64("samples", u64::from(f.samples)),
            None => r
                .null("hz")
                .str("method", "none")
                .null("uncertainty_hz")
                .null("uncertainty_ppm")
                .u64("samples", 0),
        };
        let r = r
            .bool("invariant", cpu.features.invariant_tsc)
            .opt_u64("cpuid_16h_base_mhz", tsc.base_mhz.map(u64::from))
            .opt_u64("pit_hz", tsc.pit.as_ref().ok().map(|p| p.hz))
            .opt_u64(
                "pit_uncertainty_hz",
                tsc.pit.as_ref().ok().and_then(|p| p.uncertainty_hz),
            )
            .bool("pit_present", tsc.pit.is_ok());
        let r = r.object("sources", |r| {
            let r = source(r, "hpet", tsc.hpet.as_ref());
            let r = source(r, "pm_timer", tsc.pm_timer.as_ref());
            source(r, "pit", Some(&tsc.pit))
        });
        match tsc.cross_check {
            Some((other, agree)) => r.object("cross_check", |r| {
                r.str("method", other.method.name())
                    .u64("hz", other.hz)
                    .bool("agrees", agree)
            }),
            None => r.null("cross_check"),
        }
    });
    match chosen {
        Some(f) => match f.uncertainty_ppm() {
            Some(ppm) => say!(
                "tsc    {} +/- {} ppm ({}, {} samples)",
                Mhz(f.hz),
                ppm,
                f.method.name(),
                f.samples
            ),
            None => say!("tsc    {} ({})", Mhz(f.hz), f.method.name()),
        },
        None => say!("tsc    frequency unknown: no CPUID leaf and no usable reference clock"),
    }
    match tsc.cross_check {
        Some((o, true)) => say!(
            "       cross-check: {} ({}) agrees",
            Mhz(o.hz),
            o.method.name()
        ),
        Some((o, false)) => say!(
            "       cross-check: {} ({}) DISAGREES beyond both uncertainties",
            Mhz(o.hz),
            o.method.name()
        ),
        None => {}
    }
    for (name, s) in [
        ("hpet", tsc.hpet.as_ref()),
        ("pm-timer", tsc.pm_timer.as_ref()),
        ("pit", Some(&tsc.pit)),
    ] {
        if let Some(Err(e)) = s {
            say!("       {name}: not used: {e}");
        }
    }
    if chosen.is_none() {
        record("error", |r| {
            r.str("source", "tsc").str(
                "message",
                "TSC frequency unknown: no CPUID leaf and no usable reference clock (HPET, PM \
                 timer, PIT); the run goes on without time-based features",
            )
        });
    }
}

/// The `acpi` record: the tables found, what they say, and what was wrong with them.
pub(super) fn report_acpi(rsdp: Option<u64>, acpi: Option<&Result<Acpi, String>>) {
    let (rsdp, acpi) = match (rsdp, acpi) {
        (Some(rsdp), Some(Ok(a))) => (rsdp, a),
        (Some(rsdp), Some(Err(e))) => {
            record("acpi", |r| {
                r.str("state", "error").hex("rsdp", rsdp).str("error", e)
            });
            say!("acpi   unusable: {e}");
            return;
        }
        _ => {
            record("acpi", |r| r.str("state", "absent").null("rsdp"));
            say!("acpi   no RSDP from the firmware: no ACPI tables");
            return;
        }
    };
    let cpus = acpi.madt.as_ref().map(|m| m.cpus.as_slice()).unwrap_or(&[]);
    let ids: Vec<u64> = cpus.iter().map(|c| u64::from(c.apic_id)).collect();
    let sigs: Vec<String> = acpi.tables.iter().map(|t| t.signature.clone()).collect();
    let mcfg: Vec<String> = acpi
        .mcfg
        .iter()
        .map(|m| {
            format!(
                "segment {} buses {}-{} at {:#x}",
                m.segment, m.bus_start, m.bus_end, m.base
            )
        })
        .collect();
    record("acpi", |r| {
        let r = r
            .str(
                "state",
                if acpi.problems.is_empty() {
                    "ok"
                } else {
                    "problems"
                },
            )
            .hex("rsdp", rsdp)
            .u64("revision", u64::from(acpi.revision))
            .str("oem", &acpi.oem_id)
            .str("root", &acpi.root)
            .str_array("tables", sigs.iter().map(String::as_str))
            .str_array("problems", acpi.problems.iter().map(String::as_str))
            .u64("cpus", cpus.len() as u64)
            .u64(
                "cpus_enabled",
                cpus.iter().filter(|c| c.enabled).count() as u64,
            )
            .u64(
                "cpus_x2apic",
                cpus.iter().filter(|c| c.x2apic).count() as u64,
            )
            .u64_array("apic_ids", &ids);
        let r = match acpi.fadt.as_ref().and_then(|f| f.pm_timer) {
            Some(p) => r.object("pm_timer", |r| {
                r.hex("port", u64::from(p.port))
                    .u64("bits", if p.wide { 32 } else { 24 })
            }),
            None => r.null("pm_timer"),
        };
        let r = match acpi.hpet {
            Some(h) => r.hex("hpet", h.base),
            None => r.null("hpet"),
        };
        let r = r.str_array("mcfg", mcfg.iter().map(String::as_str));
        match &acpi.dmar {
            Some(d) => r.object("dmar", |r| {
                r.u64("address_width", u64::from(d.address_width))
                    .hex("flags", u64::from(d.flags))
                    .u64("units", d.units.len() as u64)
                    .u64("reserved_regions", d.reserved.len() as u64)
            }),
            None => r.null("dmar"),
        }
    });
    say!(
        "acpi   {} {} rev {} | {} | {} CPUs{} | pm-timer {} | hpet {} | mcfg {} | dmar {}",
        acpi.oem_id,
        acpi.root,
        acpi.revision,
        sigs.join(" "),
        cpus.len(),
        if cpus.iter().any(|c| c.x2apic) {
            " (x2APIC entries)"
        } else {
            ""
        },
        match acpi.fadt.as_ref().and_then(|f| f.pm_timer) {
            Some(p) => format!("{:#x}", p.port),
            None => String::from("none"),
        },
        match acpi.hpet {
            Some(h) => format!("{:#x}", h.base),
            None => String::from("none"),
        },
        if mcfg.is_empty() { "none" } else { "yes" },
        match &acpi.dmar {
            Some(d) => format!("{} units", d.units.len()),
            None => String::from("none"),
        }
    );
    for p in &acpi.problems {
        say!("       ignored: {p}");
    }
}

pub(super) fn report_apic(apic: &ApicReport) {
    match apic.info {
        Ok(info) => {
            let mode = if info.mode == ApicMode::X2Apic {
                "x2apic"
            } else {
                "xapic"
            };
            record("apic", |r| {
                r.str("mode", mode)
                    .u64("id", u64::from(info.id))
                    .hex("version", u64::from(info.version))
                    .u64("lvt_entries", u64::from(info.lvt_entries))
                    .hex("base", info.base_phys)
                    .bool("x2apic_at_entry", info.x2apic_at_entry)
                    .opt_u64("timer_hz", apic.timer_hz)
                    .u64(
                        "timer_divide",
                        u64::from(crate::platform::timer::TIMER_DIVIDE),
                    )
                    .u64(
                        "timer_vector",
                        u64::from(crate::platform::interrupts::TIMER_VECTOR),
                    )
                    .u64(
                        "spurious_vector",
                        u64::from(crate::platform::interrupts::SPURIOUS_VECTOR),
                    )
                    .object("timer_checks", |r| {
                        r.str("one_shot", apic.one_shot.as_str())
                            .str("periodic", apic.periodic.as_str())
                            .str("tsc_deadline", apic.tsc_deadline.as_str())
                            .opt_str("one_shot_detail", apic.one_shot.detail())
                            .opt_str("periodic_detail", apic.periodic.detail())
                            .opt_str("tsc_deadline_detail", apic.tsc_deadline.detail())
                            .opt_u64("periodic_interval_tsc", apic.periodic_interval_tsc)
                            .opt_u64("deadline_latency_tsc", apic.deadline_latency_tsc)
                    })
                    .u64(
                        "error_status",
                        u64::from(baremark_hw::apic::read_and_clear_errors()),
                    )
            });
            say!(
                "apic   {mode} id {} | timer {} | one-shot {} | periodic {} | tsc-deadline {}",
                info.id,
                apic.timer_hz
                    .map_or(MhzOrUnknown(None), |h| MhzOrUnknown(Some(h))),
                apic.one_shot.as_str(),
                apic.periodic.as_str(),
                apic.tsc_deadline.as_str()
            );
        }
        Err(e) => {
            record("error", |r| {
                r.str("source", "apic")
                    .fmt("message", format_args!("local APIC unavailable: {e:?}"))
            });
            say!("apic   unavailable: {e:?}");
        }
    }
}

struct MhzOrUnknown(Option<u64>);

impl core::fmt::Display for MhzOrUnknown {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(hz) => write!(f, "{}", Mhz(hz)),
            None => f.write_str("not measured"),
        }
    }
}

pub(super) fn report_pmu(cpu: &CpuInfo) {
    let d = crate::pmu::machine::init(cpu);
    let reader = CpuIdReaderNative;
    let ext1_ecx = if cpu.max_extended_leaf >= 0x8000_0001 {
        raw_cpuid_leaf(&reader, 0x8000_0001)[2]
    } else {
        0
    };
    let leaf_22 =
        (cpu.max_extended_leaf >= 0x8000_0022).then(|| raw_cpuid_leaf(&reader, 0x8000_0022));
    let amd = AmdPerfmon::decode(ext1_ecx, leaf_22);
    let intel = IntelArchPerfmon::decode(d.leaf_0a);
    let backend = crate::pmu::machine::with_pmu(|pmu, _| pmu.backend.name()).unwrap_or("none");
    let emulated = crate::pmu::machine::emulated();
    let uarch_model = crate::pmu::machine::uarch_model();
    let summary = if uarch_model {
        "QEMU's emulated PMU (TCG model, baremark emulator/) with its micro-architecture model (pmu-uarch): exact instructions, ref-cycles, branches, data-cache and branch-miss events; cycles are instructions plus the model's stalls; figures are emulated, not hardware"
    } else if emulated {
        "QEMU's emulated PMU (TCG model, baremark emulator/): exact instructions, cycles, ref-cycles and branches; figures are emulated, not hardware"
    } else if cpu.hypervisor_name == Some("tcg") {
        "QEMU software emulation (TCG): no performance counters are emulated"
    } else {
        cpuid::summary(&intel, &amd, cpu.vendor.as_str())
    };
    let caps = d.caps;
    let latencies = cpu.tcg_uarch_latencies.filter(|_| uarch_model);
    record("pmu", |r| {
        let r = r
            .str("discovery", "cpuid+msr-probe")
            .str("summary", summary)
            .str("backend", backend)
            .bool("emulated", emulated)
            .bool("uarch_model", uarch_model);
        let r = match latencies {
            Some([l2, llc, mem, mispredict]) => r.object("uarch_latencies", |o| {
                o.u64("l2", l2.into())
                    .u64("llc", llc.into())
                    .u64("mem", mem.into())
                    .u64("mispredict", mispredict.into())
            }),
            None => r.null("uarch_latencies"),
        };
        r.str("reason", &d.reason)
            .opt_str("hypervisor", cpu.hypervisor_name)
            .str(
                "kind",
                match caps.kind {
                    PmuKind::IntelArch { .. } => "intel-arch",
                    PmuKind::AmdLegacy => "amd-legacy",
                    PmuKind::AmdExtCore => "amd-perfctr-core",
                    PmuKind::AmdPerfMonV2 => "amd-perfmon-v2",
                    PmuKind::TscOnly => "tsc-only",
                },
            )
            .u64("gp_counters", u64::from(caps.gp_counters))
            .u64("gp_width", u64::from(caps.gp_width))
            .hex("fixed_mask", u64::from(caps.fixed_mask))
            .u64("fixed_width", u64::from(caps.fixed_width))
            .bool("full_width_write", caps.full_width_write)
            .opt_str("core_type", caps.core_type.map(|c| c.perfmon_name()))
            .opt_u64("perf_capabilities", d.perf_capabilities)
            .bool("cpuid_23h", d.used_leaf_23)
            .opt_str("limited", d.limited.as_deref())
            .u64(
                "pmi_vector",
                u64::from(crate::platform::interrupts::PMI_VECTOR),
            )
            .object("cpuid_0a", |r| {
                r.hex("eax", u64::from(d.leaf_0a[0]))
                    .hex("ebx", u64::from(d.leaf_0a[1]))
                    .hex("ecx", u64::from(d.leaf_0a[2]))
                    .hex("edx", u64::from(d.leaf_0a[3]))
            })
            .object("intel", |r| {
                let r = r
                    .u64("version", u64::from(intel.version))
                    .u64("gp_counters", u64::from(intel.gp_counters))
                    .u64("gp_width", u64::from(intel.gp_width))
                    .u64("events_len", u64::from(intel.events_len));
                // Without an architectural PMU (AMD, TSC-only) there is no availability
                // vector: 0x0 would read as "every event available".
                let r = if intel.version > 0 {
                    r.hex("events_unavailable", u64::from(intel.events_unavailable))
                } else {
                    r.null("events_unavailable")
                };
                r.u64("fixed_counters", u64::from(intel.fixed_counters))
                    .u64("fixed_width", u64::from(intel.fixed_width))
                    .hex("fixed_mask", u64::from(intel.fixed_mask))
            })
            .object("amd", |r| {
                r.bool("perfctr_core", amd.perfctr_core)
                    .bool("perfmon_v2", amd.perfmon_v2)
                    .opt_u64("perfmon_v2_counters", amd.v2_core_counters.map(u64::from))
            })
            .object("probes", |mut r| {
                for p in &d.probes {
                    let mut key = crate::output::record::LineBuf::<16>::new();
                    let _ = core::fmt::Write::write_fmt(&mut key, format_args!("{:#x}", p.msr));
                    r = r.str(key.as_str(), if p.result.is_ok() { "ok" } else { "fault" });
                }
                r
            })
    });
    say!("pmu    {summary} | backend {backend}: {}", d.reason);
}

/// The `usb_handoff` record: every USB controller taken from the firmware at boot, so its
/// legacy SMIs stop before anything is measured.
pub(super) fn report_usb_handoff(done: &[crate::devices::usb::legacy::Handoff]) {
    let lines: Vec<String> = done
        .iter()
        .map(|h| format!("{}: {}", h.controller, h.outcome))
        .collect();
    record("usb_handoff", |r| {
        r.u64("controllers", done.len() as u64)
            .str_array("results", lines.iter().map(String::as_str))
    });
    for l in &lines {
        say!("usb    {l}");
    }
}

/// The `iommu` record (machines whose ACPI has a DMAR): each VT-d unit, what the firmware left
/// on, and what was turned off.
pub(super) fn report_iommu(units: &[crate::devices::iommu::Unit]) {
    let lines: Vec<String> = units
        .iter()
        .map(|u| {
            format!(
                "unit at {:#x}{}: {}",
                u.base,
                u.version
                    .map(|(ma, mi)| format!(" (VT-d {ma}.{mi})"))
                    .unwrap_or_default(),
                u.outcome
            )
        })
        .collect();
    record("iommu", |r| {
        r.u64("units", units.len() as u64)
            .u64(
                "translation_was_on",
                units.iter().filter(|u| u.translation_was_on).count() as u64,
            )
            .u64(
                "protection_was_on",
                units.iter().filter(|u| u.protection_was_on).count() as u64,
            )
            .str_array("results", lines.iter().map(String::as_str))
    });
    for l in &lines {
        say!("iommu  {l}");
    }
}

/// The `pci` record: how configuration space is reached.
pub(super) fn report_pci(p: &crate::devices::pci::PciReport) {
    record("pci", |r| {
        let r = r
            .str("access", p.access)
            .u64("functions", p.functions as u64)
            .u64("ecam_agree", p.agree as u64)
            .u64("extended_capabilities", p.extended as u64)
            .str_array("problems", p.problems.iter().map(String::as_str));
        match p.ecam {
            Some(e) => r.object("ecam", |r| {
                r.hex("base", e.base)
                    .u64("bus_start", u64::from(e.bus_start))
                    .u64("bus_end", u64::from(e.bus_end))
            }),
            None => r.null("ecam"),
        }
    });
    match p.ecam {
        Some(e) => say!(
            "pci    {} functions | ECAM at {:#x} buses {}-{} (MCFG), checked against the ports on all | {} with PCIe extended capabilities",
            p.functions,
            e.base,
            e.bus_start,
            e.bus_end,
            p.extended
        ),
        None => say!("pci    {} functions | ports 0xCF8/0xCFC", p.functions),
    }
    for problem in &p.problems {
        say!("       {problem}");
    }
}

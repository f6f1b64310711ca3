//! The boot sequence, on top of every other subsystem.
//!
//! Order: trap handler, hardware bring-up (serial, descriptor tables, memory), run
//! configuration, then one record per subsystem (`boot`, `cpu`, `checks`, `tsc`, `apic`, `pmu`;
//! `report`), each followed by a human-readable line; then any test action (`actions`), the
//! selftest, the payloads, and the `end` record.

mod actions;
mod cpus;
mod report;

use baremark_hw::fpu;
use baremark_hw::{cpu as hwcpu, pic, trap};
use bootloader_api::BootInfo;

use crate::config::{self, ConfigError, RunConfig};
use crate::output::console::record;
use crate::platform::cpu;
use crate::platform::timer;
use crate::say;
use crate::traps;
use crate::traps::fatal::{self, Status};
use actions::run_test_action;
use report::{
    report_acpi, report_apic, report_boot, report_checks, report_cpu, report_iommu, report_pci,
    report_pmu, report_tsc, report_usb_handoff,
};

/// Kernel entry, called by the bootloader stub in `main.rs`.
pub fn run(boot_info: &'static mut BootInfo) -> ! {
    let tsc_at_entry = hwcpu::rdtsc();
    trap::set_handler(traps::handle);
    let facts = match baremark_hw::boot::init(boot_info) {
        Ok(facts) => facts,
        Err(e) => {
            record("error", |r| {
                r.str("source", "boot")
                    .fmt("message", format_args!("{e:?}"))
            });
            fatal::end(Status::Fail, Some("unusable boot information"));
        }
    };

    // The screen takes the frame buffer now (and draws nothing until the first flush).
    crate::output::screen::init(baremark_hw::boot::take_framebuffer());

    // Configuration errors are reported after the boot record, so collect them first.
    let mut errors: [Option<ConfigError<'static>>; 16] = [None; 16];
    let mut dropped_errors = 0;
    let (config, members) = config::from_ramdisk(facts.ramdisk, &mut |e| match errors
        .iter_mut()
        .find(|s| s.is_none())
    {
        Some(slot) => *slot = Some(e),
        None => dropped_errors += 1,
    });
    fatal::set_on_end(config.on_end);

    report_boot(&facts, &config, members, tsc_at_entry);
    crate::output::sinks::report_screen();
    for e in errors.iter().flatten() {
        record("config_error", |r| {
            r.opt_u64("line", e.line().map(|l| l as u64))
                .fmt("message", format_args!("{e}"))
        });
    }
    if dropped_errors > 0 {
        record("config_error", |r| {
            r.null("line")
                .fmt("message", format_args!("{dropped_errors} more errors"))
        });
    }

    let cpu = cpu::identify();
    let protections = hwcpu::enable_protections();
    // Ring 3 may use x87/SSE/AVX (`asm` benchmarks vector instructions); the kernel never does.
    let vector = fpu::enable();
    report_cpu(&cpu, &protections, &vector);

    report_checks();

    let acpi = facts
        .rsdp
        .map(|rsdp| crate::platform::acpi::parse(&crate::platform::acpi::FirmwareMem, rsdp));
    report_acpi(facts.rsdp, acpi.as_ref());
    let acpi = acpi.and_then(Result::ok);

    let tsc = timer::tsc_frequency(&cpu, acpi.as_ref());
    report_tsc(&tsc, &cpu);
    crate::output::screen::set_clock(tsc_at_entry, tsc.chosen.map(|f| f.hz));

    pic::remap_and_mask();
    let apic = timer::bring_up_apic(&cpu, tsc.chosen.map(|f| f.hz), config.timer_checks);
    report_apic(&apic);

    report_pmu(&cpu);

    // The other CPUs, once the boot CPU's APIC, TSC rate and PMU are known (they copy them).
    let alone = cpus::start_all(
        acpi.as_ref().and_then(|a| a.madt.as_ref()),
        apic.info.map_or(0, |i| i.id),
        apic.timer_hz,
        tsc.chosen.map(|f| f.hz),
        config.test_phantom_cpu,
    );
    cpus::report(alone);

    crate::devices::clock::set_tsc_hz(tsc.chosen.map(|f| f.hz));
    report_pci(&crate::devices::pci::configure(
        acpi.as_ref().map_or(&[][..], |a| a.mcfg.as_slice()),
    ));
    // Before any DMA: an IOMMU the firmware left on would block the controllers'.
    if let Some(dmar) = acpi.as_ref().and_then(|a| a.dmar.as_ref()) {
        report_iommu(&crate::devices::iommu::disable_dma_blocking(dmar));
    }
    report_usb_handoff(&crate::devices::usb::legacy::handoff_all());
    crate::output::sinks::open_results_file(config.results_file);
    crate::output::sinks::between_payloads("boot report complete");

    run_test_action(config.test, config.usb_test_lba);
    if config.selftest {
        let summary = crate::selftest::live::run();
        if summary.failed > 0 {
            let mut reason = crate::output::record::LineBuf::<64>::new();
            let _ = core::fmt::Write::write_fmt(
                &mut reason,
                format_args!("selftest: {} checks failed", summary.failed),
            );
            fatal::end(Status::Fail, Some(reason.as_str()));
        }
    }
    let tsc_hz = tsc.chosen.map(|f| f.hz);
    let quantum = match (config.quantum_us, apic.timer_hz, tsc_hz) {
        (0, _, _) => None,
        (us, Some(timer_hz), Some(tsc_hz)) => Some(crate::task::run::Quantum {
            us,
            timer_hz,
            tsc_hz,
        }),
        _ => {
            record("error", |r| {
                r.str("source", "tasks").str(
                    "message",
                    "quantum_us ignored: the APIC timer or the TSC frequency is unknown; \
                     payloads run one after the other",
                )
            });
            None
        }
    };
    let budget = match (config.task_budget_ms, apic.timer_hz, tsc_hz) {
        (0, _, _) => None,
        (ms, Some(timer_hz), Some(tsc_hz)) => Some(crate::task::run::Budget {
            ms,
            timer_hz,
            tsc_hz,
        }),
        _ => {
            record("error", |r| {
                r.str("source", "tasks").str(
                    "message",
                    "task_budget_ms ignored: the APIC timer or the TSC frequency is unknown; \
                     tasks run without a watchdog",
                )
            });
            None
        }
    };
    let harness = harness_plans(&config, facts.ramdisk, tsc_hz);
    crate::task::run::set_diagnostics(crate::task::run::Diagnostics {
        counter_preset: config.counter_preset,
        fault_at_switch_in: config.test_pmu_fault,
        smis_per_bench: config.test_smis,
    });
    crate::task::run::set_policy(crate::task::run::Policy {
        sample: config.sample.clone(),
        counters: config.counters.clone(),
        mux_interval_us: config.mux_interval_us,
        timer_hz: apic.timer_hz,
        system: config.system.clone(),
        pins: config.pins.clone(),
        background: config.background.clone(),
        cpus: config.cpus.clone(),
    });
    let frames_before = baremark_hw::paging::frame_stats();
    if config.canary {
        crate::task::canary::plant();
    }
    let payloads = crate::task::run::run_payloads(facts.ramdisk, tsc_hz, quantum, budget, harness);
    if payloads.payloads > 0 {
        let frames = baremark_hw::paging::frame_stats();
        record("summary", |r| {
            r.u64("payloads", payloads.payloads)
                .u64("spawned", payloads.spawned)
                .object("frames", |r| {
                    r.u64("before", frames_before.allocated_frames)
                        .u64("after", frames.allocated_frames)
                        .u64("peak", frames.peak_frames)
                        .u64("usable", frames.usable_bytes / 4096)
                })
                .u64("benchmarks", payloads.benchmarks)
                .u64("stopped", payloads.stopped)
                .u64("results", payloads.results)
                .u64("unsupported", payloads.unsupported)
                .u64("errors", payloads.harness_errors)
                .opt_u64("tsc_hz", tsc_hz)
                .opt_str("tsc_method", tsc.chosen.map(|f| f.method.name()))
        });
        say!(
            "tasks  {} payloads (+{} spawned): {} exited, {} faulted, {} killed, {} not loadable{}",
            payloads.payloads,
            payloads.spawned,
            payloads.exited,
            payloads.faulted,
            payloads.killed,
            payloads.rejected,
            if payloads.stopped > 0 {
                alloc::format!(", {} stopped (background)", payloads.stopped)
            } else {
                alloc::string::String::new()
            }
        );
    }
    say!("baremark: boot report complete");
    fatal::end(Status::Ok, None)
}

/// The harness settings of this run: the `events` list and the nanoBench config the host
/// packed as `events/nanobench.cfg`, resolved for this PMU (with the event tables the host
/// packed as `events/<cpu>.tab`, the one for this CPU is used), repetitions, warm-ups,
/// overhead mode. A bad list, config or table is reported, and what it would have added is not
/// counted.
fn harness_plan(
    run: &RunConfig,
    ramdisk: &'static [u8],
    tsc_hz: Option<u64>,
    caps: events::pmu::PmuCaps,
    report: bool,
) -> &'static crate::harness::session::RunPlan {
    let mut tables = alloc::vec::Vec::new();
    let mut config = alloc::vec::Vec::new();
    for entry in crate::devices::ramdisk::entries(ramdisk).map_while(Result::ok) {
        let in_events = if entry.prefix.is_empty() {
            entry.name.starts_with("events/")
        } else {
            entry.prefix == "events"
        };
        let is_config = if entry.prefix.is_empty() {
            entry.name == events::nanobench::CONFIG_MEMBER
        } else {
            in_events && entry.name == "nanobench.cfg"
        };
        if is_config {
            config = nanobench_config(entry.data, report);
            continue;
        }
        let path_is_table = in_events && entry.name.ends_with(".tab");
        if !path_is_table {
            continue;
        }
        match events::table::EventTable::from_bytes(entry.data) {
            Ok(t) => tables.push(t),
            Err(_) if !report => {}
            Err(e) => record("harness_error", |r| {
                r.null("payload").null("bench").fmt(
                    "message",
                    format_args!("event table `{}`: {e:?} (ignored)", entry.name),
                )
            }),
        }
    }
    let platform = crate::harness::plan::Platform {
        emulated: crate::pmu::machine::emulated(),
        uarch_model: crate::pmu::machine::uarch_model(),
        extra_msrs: extra_msrs_present(&caps),
    };
    let events = crate::harness::plan::plan_with(
        run.events.as_deref().unwrap_or(""),
        &config,
        &caps,
        &tables,
        &platform,
    );
    if let Some(e) = events.error.as_ref().filter(|_| report) {
        record("harness_error", |r| {
            r.null("payload").null("bench").fmt(
                "message",
                format_args!(
                    "events `{}`: {e}; none of its events is measured",
                    run.events.as_deref().unwrap_or("")
                ),
            )
        });
    }
    alloc::boxed::Box::leak(alloc::boxed::Box::new(crate::harness::session::RunPlan {
        reps: run.reps,
        warmup: run.warmup,
        overhead: run.overhead,
        events,
        tsc_hz,
        emulated: platform.emulated,
    }))
}

/// The harness plan of every online CPU: the boot CPU's for each CPU whose PMU is the same,
/// else one resolved for that CPU's own PMU (a hybrid part's other core type), each made once.
fn harness_plans(
    run: &RunConfig,
    ramdisk: &'static [u8],
    tsc_hz: Option<u64>,
) -> &'static crate::task::run::Plans {
    let tsc_only = || events::pmu::PmuCaps::tsc_only(events::cpu::Vendor::Intel, None);
    let boot_caps = crate::pmu::machine::caps_of(0).unwrap_or_else(tsc_only);
    let boot_plan = harness_plan(run, ramdisk, tsc_hz, boot_caps, true);
    let mut made = alloc::vec![(boot_caps, boot_plan)];
    let mut by_cpu = alloc::vec::Vec::new();
    for cpu in crate::platform::cpus::all().iter().filter_map(|c| c.index) {
        let caps = crate::pmu::machine::caps_of(cpu).unwrap_or(boot_caps);
        let plan = match made.iter().find(|(c, _)| *c == caps) {
            Some((_, p)) => *p,
            None => {
                let p = harness_plan(run, ramdisk, tsc_hz, caps, false);
                made.push((caps, p));
                p
            }
        };
        if by_cpu.len() <= cpu {
            by_cpu.resize(cpu + 1, boot_plan);
        }
        by_cpu[cpu] = plan;
    }
    alloc::boxed::Box::leak(alloc::boxed::Box::new(crate::task::run::Plans {
        boot: boot_plan,
        by_cpu,
    }))
}

/// The events of the nanoBench config member; a `harness_error` record (and none of its
/// events) if it is not UTF-8 or does not parse. The host checked it, so this is a ramdisk
/// made by other means.
fn nanobench_config(
    data: &[u8],
    report: bool,
) -> alloc::vec::Vec<events::nanobench::NanoBenchEvent> {
    let member = events::nanobench::CONFIG_MEMBER;
    let parsed = core::str::from_utf8(data)
        .map_err(|e| alloc::format!("not UTF-8 at byte offset {}", e.valid_up_to()))
        .and_then(|text| events::nanobench::parse_config(text).map_err(|e| alloc::format!("{e}")));
    parsed.unwrap_or_else(|message| {
        if !report {
            return alloc::vec::Vec::new();
        }
        record("harness_error", |r| {
            r.null("payload").null("bench").fmt(
                "message",
                format_args!("{member}: {message}; none of its events is measured"),
            )
        });
        alloc::vec::Vec::new()
    })
}

/// Which of the extra MSRs events may need (`pmu::regs::EXTRA_MSRS`) this CPU has: on an Intel PMU,
/// those whose RDMSR does not raise #GP (they are model specific: offcore response from
/// Nehalem, the frontend MSR from Skylake, and a hypervisor may lack any of them).
fn extra_msrs_present(caps: &events::pmu::PmuCaps) -> u8 {
    if !matches!(caps.kind, events::pmu::PmuKind::IntelArch { .. }) {
        return 0;
    }
    crate::pmu::machine::with_pmu(|_, msr| {
        crate::pmu::regs::EXTRA_MSRS
            .iter()
            .enumerate()
            .filter(|(_, (m, _))| crate::pmu::msr::Msr::read(msr, *m).is_ok())
            .fold(0u8, |set, (i, _)| set | (1 << i))
    })
    .unwrap_or(0)
}

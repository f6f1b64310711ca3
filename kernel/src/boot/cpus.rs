//! Starting every CPU of the MADT: one at a time (`baremark_hw::smp::start`), each finishing its
//! own bring-up on itself ([`ap_main`]: protections, vector state, its local APIC in the boot
//! CPU's mode with every LVT masked, its timer calibrated, its PMU's CPUID read and LVTPC
//! armed) before it waits for work. The `cpus` record says what became of each.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use baremark_hw::{apic, cpu as hwcpu, fpu, percpu, smp};
use spin::Mutex;

use crate::output::console::record;
use crate::platform::acpi::Madt;
use crate::platform::cpus::{CoreType, Cpu, CpuState};
use crate::platform::interrupts::SPURIOUS_VECTOR;

// run.cfg `pin` accepts the CPU indexes the kernel can start.
const _: () = assert!(crate::task::settings::PIN_CPU_MAX == percpu::MAX_CPUS);

/// How long a CPU has to answer INIT-STARTUP-STARTUP (after the second STARTUP). Hardware
/// answers in microseconds; an emulator running hundreds of vCPUs on a few host threads may
/// take long (Linux waits 10 s).
const ANSWER_US: u64 = 1_000_000;
/// How long a CPU that answered has to finish its bring-up (its timer calibration takes 10 ms
/// of TSC time; an emulator with hundreds of vCPUs on a few host threads takes seconds).
const BRING_UP_US: u64 = 10_000_000;

/// What an AP found about itself, by index, for the boot CPU to collect.
static AP_FACTS: Mutex<Vec<(usize, Result<ApFacts, String>)>> = Mutex::new(Vec::new());

#[derive(Clone, Copy)]
struct ApFacts {
    apic_id: u32,
    core_type: CoreType,
    pmu_leaf: [u32; 4],
    timer_hz: Option<u64>,
}

/// The TSC rate, for the APs' timer calibration.
static TSC_HZ: AtomicU64 = AtomicU64::new(0);

/// Starts every enabled CPU of `madt` (plus `phantom`, an APIC ID with nothing behind it, for
/// the test of a CPU that does not start) and records them all (`platform::cpus`). Without a
/// MADT or a TSC rate, only the boot CPU runs, and the reason is returned.
pub fn start_all(
    madt: Option<&Madt>,
    bsp_apic_id: u32,
    bsp_timer_hz: Option<u64>,
    tsc_hz: Option<u64>,
    phantom: Option<u32>,
) -> Option<&'static str> {
    percpu::set_bsp_apic_id(bsp_apic_id);
    let bsp = Cpu {
        index: Some(0),
        apic_id: bsp_apic_id,
        uid: None,
        state: CpuState::Online,
        core_type: Some(CoreType::here()),
        pmu_leaf: Some(crate::platform::cpus::pmu_leaf_here()),
        timer_hz: bsp_timer_hz,
    };
    let mut cpus = Vec::new();
    let why_alone = match (madt, tsc_hz, apic::mode()) {
        (None, _, _) => Some("no MADT: only the boot CPU is known"),
        (_, None, _) => Some("the TSC rate is unknown: start-up cannot be timed"),
        (_, _, None) => Some("the local APIC is not up"),
        _ => None,
    };
    let (Some(madt), Some(tsc_hz), None) = (madt, tsc_hz, why_alone) else {
        cpus.push(bsp);
        crate::platform::cpus::set_all(cpus);
        return why_alone;
    };
    TSC_HZ.store(tsc_hz, Ordering::Relaxed);
    let x2apic = apic::mode() == Some(apic::ApicMode::X2Apic);
    let mut entries: Vec<(u32, Option<u32>, bool, bool)> = madt
        .cpus
        .iter()
        .map(|c| (c.apic_id, Some(c.uid), c.enabled, c.online_capable))
        .collect();
    if let Some(id) = phantom {
        entries.push((id, None, true, false));
    }
    // INIT to every CPU to start first, then the SDM's 10 ms once: firmware may leave its
    // CPUs spinning, and with hundreds of them (or an emulator running them on a few host
    // threads) they would slow each other's start.
    let to_start = |&&(id, _, enabled, _): &&(u32, Option<u32>, bool, bool)| {
        enabled && id != bsp_apic_id && (id <= 0xfe || x2apic)
    };
    for (id, ..) in entries.iter().filter(to_start) {
        smp::send_init(*id);
    }
    smp::wait_after_init(tsc_hz);
    let mut next_index = 1;
    let mut bsp = Some(bsp);
    for (apic_id, uid, enabled, online_capable) in entries {
        if apic_id == bsp_apic_id {
            if let Some(mut b) = bsp.take() {
                b.uid = uid;
                cpus.push(b);
            }
            continue;
        }
        let mut cpu = Cpu {
            index: None,
            apic_id,
            uid,
            state: CpuState::Disabled { online_capable },
            core_type: None,
            pmu_leaf: None,
            timer_hz: None,
        };
        if !enabled {
            cpus.push(cpu);
            continue;
        }
        cpu.state = if apic_id > 0xfe && !x2apic {
            CpuState::Failed(String::from(
                "its APIC ID does not fit in 8 bits and the APIC is in xAPIC mode",
            ))
        } else {
            match start_one(apic_id, next_index, tsc_hz) {
                Ok(facts) => {
                    cpu.index = Some(next_index);
                    // What the CPU read from its own APIC (the MADT's ID reached it, so the
                    // same unless the firmware's table is wrong).
                    cpu.apic_id = facts.apic_id;
                    cpu.core_type = Some(facts.core_type);
                    cpu.pmu_leaf = Some(facts.pmu_leaf);
                    cpu.timer_hz = facts.timer_hz;
                    next_index += 1;
                    CpuState::Online
                }
                Err(why) => {
                    // Its index is never reused: a CPU that answered late may still hold it.
                    next_index += 1;
                    CpuState::Failed(why)
                }
            }
        };
        cpus.push(cpu);
    }
    // A MADT without the boot CPU's entry: it is still CPU 0.
    if let Some(b) = bsp {
        cpus.insert(0, b);
    }
    crate::platform::cpus::set_all(cpus);
    None
}

/// Starts one CPU and waits for its bring-up; its facts, or why it is not online.
fn start_one(apic_id: u32, index: usize, tsc_hz: u64) -> Result<ApFacts, String> {
    smp::start(apic_id, index, tsc_hz, ANSWER_US, true, ap_main).map_err(|e| match e {
        smp::StartError::NoLowMemory => {
            String::from("no usable memory below 636 KiB for the start-up code")
        }
        smp::StartError::OutOfMemory => String::from("no memory for its stack and tables"),
        smp::StartError::TooManyCpus => format!("more than {} CPUs", percpu::MAX_CPUS),
        smp::StartError::NoAnswer { waited_us } => format!(
            "did not answer INIT-STARTUP-STARTUP within {} ms",
            waited_us / 1000
        ),
        smp::StartError::IpiNotAccepted => {
            String::from("its APIC did not accept the start-up IPIs")
        }
    })?;
    let start = hwcpu::rdtsc();
    loop {
        {
            let mut facts = AP_FACTS.lock();
            if let Some(pos) = facts.iter().position(|(i, _)| *i == index) {
                return facts.swap_remove(pos).1;
            }
        }
        if hwcpu::rdtsc().wrapping_sub(start) > tsc_hz / 1_000_000 * BRING_UP_US {
            return Err(format!(
                "answered but did not finish its bring-up within {} ms",
                BRING_UP_US / 1000
            ));
        }
        core::hint::spin_loop();
    }
}

/// An AP's own bring-up, on itself, then [`smp::idle_loop`].
fn ap_main() -> ! {
    let index = percpu::index();
    hwcpu::enable_protections();
    fpu::enable();
    let facts = match apic::init_ap(SPURIOUS_VECTOR) {
        Ok(apic_id) => {
            let tsc_hz = TSC_HZ.load(Ordering::Relaxed);
            let timer_hz = crate::platform::timer::calibrate_timer(tsc_hz);
            crate::pmu::machine::init_here(&crate::platform::cpu::identify());
            Ok(ApFacts {
                apic_id,
                core_type: CoreType::here(),
                pmu_leaf: crate::platform::cpus::pmu_leaf_here(),
                timer_hz,
            })
        }
        Err(e) => Err(format!("its local APIC could not be brought up: {e:?}")),
    };
    let failed = facts.is_err();
    AP_FACTS.lock().push((index, facts));
    if failed {
        hwcpu::halt_forever();
    }
    smp::idle_loop()
}

/// The `cpus` record (how many of each state, why only the boot CPU runs if it does), one
/// `processor` record per CPU of the MADT, and the human-readable lines.
pub fn report(alone: Option<&str>) {
    let cpus = crate::platform::cpus::all();
    let online = cpus.iter().filter(|c| c.state == CpuState::Online).count();
    let failed: Vec<&Cpu> = cpus
        .iter()
        .filter(|c| matches!(c.state, CpuState::Failed(_)))
        .collect();
    let disabled = cpus
        .iter()
        .filter(|c| matches!(c.state, CpuState::Disabled { .. }))
        .count();
    let boot_leaf = cpus.first().and_then(|c| c.pmu_leaf);
    let count_type = |t: CoreType| cpus.iter().filter(|c| c.core_type == Some(t)).count() as u64;
    let hybrid = cpus
        .iter()
        .any(|c| c.core_type.is_some_and(|t| t != CoreType::Uniform));
    for c in &cpus {
        record("processor", |r| {
            let r = r
                .opt_u64("index", c.index.map(|i| i as u64))
                .u64("apic_id", u64::from(c.apic_id))
                .opt_u64("uid", c.uid.map(u64::from));
            let r = match &c.state {
                CpuState::Online => r.str("state", "online").null("reason"),
                CpuState::Failed(why) => r.str("state", "failed").str("reason", why),
                CpuState::Disabled { online_capable } => r.str("state", "disabled").str(
                    "reason",
                    if *online_capable {
                        "online-capable but not enabled by the firmware; not started"
                    } else {
                        "not enabled in the MADT (absent)"
                    },
                ),
            };
            let r = r
                .opt_str("core_type", c.core_type.map(CoreType::name))
                .opt_u64("timer_hz", c.timer_hz);
            match c.pmu_leaf {
                Some(leaf) => {
                    let p = crate::pmu::cpuid::IntelArchPerfmon::decode(leaf);
                    r.object("pmu", |r| {
                        r.u64("version", u64::from(p.version))
                            .u64("gp", u64::from(p.gp_counters))
                            .u64("gp_width", u64::from(p.gp_width))
                            .u64("fixed", u64::from(p.fixed_counters))
                            .u64("fixed_width", u64::from(p.fixed_width))
                            .bool("same_as_boot_cpu", Some(leaf) == boot_leaf)
                    })
                }
                None => r.null("pmu"),
            }
        });
    }
    record("cpus", |r| {
        r.u64("online", online as u64)
            .u64("failed", failed.len() as u64)
            .u64("disabled", disabled as u64)
            .u64(
                "boot_apic_id",
                cpus.first().map_or(0, |c| u64::from(c.apic_id)),
            )
            .bool("hybrid", hybrid)
            .object("core_types", |r| {
                r.u64("uniform", count_type(CoreType::Uniform))
                    .u64("core", count_type(CoreType::Core))
                    .u64("atom", count_type(CoreType::Atom))
            })
            .u64("max_cpus", percpu::MAX_CPUS as u64)
            .opt_str("only_boot_cpu_because", alone)
    });
    let ids: Vec<u32> = cpus
        .iter()
        .filter(|c| c.state == CpuState::Online)
        .map(|c| c.apic_id)
        .collect();
    let types = if hybrid {
        format!(
            " | hybrid: {} core, {} atom",
            count_type(CoreType::Core),
            count_type(CoreType::Atom)
        )
    } else {
        String::new()
    };
    crate::say!(
        "cpus     {online} online (APIC IDs {}){}{}{}",
        id_ranges(&ids),
        if failed.is_empty() {
            String::new()
        } else {
            format!(" | {} failed", failed.len())
        },
        if disabled > 0 {
            format!(" | {disabled} not enabled")
        } else {
            String::new()
        },
        types
    );
    if let Some(why) = alone {
        crate::say!("         only the boot CPU runs: {why}");
    }
    for c in failed {
        if let CpuState::Failed(why) = &c.state {
            crate::say!("         APIC ID {}: not started: {why}", c.apic_id);
        }
    }
}

/// `0-3, 8, 10-11`.
fn id_ranges(ids: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(&if j > i {
            format!("{}-{}", ids[i], ids[j])
        } else {
            format!("{}", ids[i])
        });
        i = j + 1;
    }
    out
}

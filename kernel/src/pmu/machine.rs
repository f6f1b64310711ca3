//! The machine's PMU: the hardware `Msr`, discovery at boot, the backend in use, and the PMI.
//!
//! PMI delivery: the local APIC's LVTPC entry raises a fixed vector (`platform::interrupts::PMI_VECTOR`), not an NMI.
//! baremark never needs a sample taken inside interrupt-disabled kernel code (measured code runs in
//! ring 3 with interrupts enabled; the selftest takes its PMIs in an interrupt window), and
//! a maskable vector keeps the handler free of NMI re-entrancy: it can take the PMU lock like any
//! other code. docs/pmu.md explains the choice.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use alloc::boxed::Box;
use baremark_hw::apic::{self, PmiDelivery};
use baremark_hw::msr as hwmsr;
use events::cpu::Vendor;
use raw_cpuid::CpuIdReaderNative;
use spin::Mutex;

use crate::platform::cpu::{CpuInfo, raw_cpuid_subleaf};
use crate::platform::interrupts::PMI_VECTOR;
use crate::pmu::amd::AmdPmu;
use crate::pmu::backend::{PmiEvent, PmuBackend};
use crate::pmu::discovery::{self, BackendChoice, Discovery};
use crate::pmu::intel::IntelArchPmu;
use crate::pmu::msr::{Msr, MsrFault};
use crate::pmu::switch::BatchMsr;
use crate::pmu::tsc_only::TscOnlyPmu;

/// The hardware MSR door (kernel/hw/src/msr.rs) as an [`Msr`].
pub struct HwMsr;

fn fault(e: hwmsr::MsrError) -> MsrFault {
    match e {
        hwmsr::MsrError::GeneralProtection => MsrFault::GeneralProtection,
        hwmsr::MsrError::Protected => MsrFault::Protected,
    }
}

impl Msr for HwMsr {
    fn read(&mut self, msr: u32) -> Result<u64, MsrFault> {
        hwmsr::read(msr).map_err(fault)
    }
    fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        hwmsr::write(msr, value).map_err(fault)
    }
    fn rdpmc(&mut self, ecx: u32) -> Result<u64, MsrFault> {
        // The door does not tell #GP from #UD; RDPMC faults mean "not readable" either way.
        hwmsr::rdpmc(ecx).map_err(|_| MsrFault::GeneralProtection)
    }
}

// The batched doors' limit is the switch plans' (a plan's lists are made with it).
const _: () = assert!(hwmsr::BATCH_MAX == crate::pmu::switch::LIST_MAX);

// The kernel drives no more counters than the MSR door lets it write.
const _: () = assert!(crate::pmu::regs::intel::GP_MAX == baremark_hw::msr_allow::INTEL_GP_MAX);
const _: () =
    assert!(crate::pmu::regs::intel::FIXED_SUPPORTED == baremark_hw::msr_allow::INTEL_FIXED_MAX);
const _: () = assert!(crate::pmu::regs::amd::CORE_MAX == baremark_hw::msr_allow::AMD_CORE_MAX);

/// The MSR door's limits for what discovery found.
fn limits_of(d: &Discovery) -> hwmsr::PmuLimits {
    let caps = &d.caps;
    match (d.choice, caps.kind) {
        (BackendChoice::IntelArch, _) => hwmsr::PmuLimits {
            intel_gp: caps.gp_counters,
            intel_fixed: caps.fixed_mask,
            intel_global: caps.intel_version().is_some_and(|v| v >= 2),
            ..hwmsr::PmuLimits::NONE
        },
        (BackendChoice::Amd, events::pmu::PmuKind::AmdLegacy) => hwmsr::PmuLimits {
            amd_legacy: caps.gp_counters,
            ..hwmsr::PmuLimits::NONE
        },
        // The K7 PERF_CTL0-3 / PERF_CTR0-3 alias the first four core counters (the selftest
        // checks that they do).
        (BackendChoice::Amd, kind) => hwmsr::PmuLimits {
            amd_legacy: caps.gp_counters.min(4),
            amd_core: caps.gp_counters,
            amd_global: kind == events::pmu::PmuKind::AmdPerfMonV2,
            ..hwmsr::PmuLimits::NONE
        },
        (BackendChoice::TscOnly, _) => hwmsr::PmuLimits::NONE,
    }
}

impl BatchMsr for HwMsr {
    type List = hwmsr::WriteList;
    fn list(&self, msrs: &[u32]) -> Result<hwmsr::WriteList, MsrFault> {
        hwmsr::WriteList::new(msrs).map_err(fault)
    }
    fn write_list(&mut self, list: &hwmsr::WriteList, values: &[u64]) -> Result<(), MsrFault> {
        hwmsr::write_list(list, values).map_err(fault)
    }
    fn rdpmc_list(&mut self, ecx: &[u32], out: &mut [u64]) -> Result<(), MsrFault> {
        hwmsr::rdpmc_list(ecx, out).map_err(fault)
    }
}

/// The PMU in use.
pub struct Pmu {
    pub backend: Box<dyn PmuBackend + Send>,
    pub discovery: Discovery,
    /// The counters are QEMU's TCG PMU model (baremark's `emulator/`), not hardware: a PMU
    /// under the TCG hypervisor signature. Every figure from them is labelled `emulated`.
    pub emulated: bool,
    /// The emulated PMU also models data caches, a branch predictor and the cycles they cost
    /// (the emulator's `pmu-uarch=on`, said by CPUID 0x40000001): its LLC, L1D, L2 and
    /// branch-miss events count, and its cycles are a model figure.
    pub uarch_model: bool,
}

/// Whether the counters in use are QEMU's emulated PMU (see [`Pmu::emulated`]).
pub fn emulated() -> bool {
    with_pmu(|pmu, _| pmu.emulated).unwrap_or(false)
}

/// Whether the emulated PMU models the micro-architecture (see [`Pmu::uarch_model`]).
pub fn uarch_model() -> bool {
    with_pmu(|pmu, _| pmu.uarch_model).unwrap_or(false)
}

/// Each CPU's PMU (its backend keeps shadows of that CPU's registers), by CPU index: the boot
/// CPU's from `init`, another CPU's from `init_here` at its start.
static PMUS: [Mutex<Option<Pmu>>; baremark_hw::layout::MAX_CPUS] =
    [const { Mutex::new(None) }; baremark_hw::layout::MAX_CPUS];

/// The executing CPU's PMU slot.
fn this_pmu() -> &'static Mutex<Option<Pmu>> {
    &PMUS[crate::platform::cpus::current()]
}

/// PMI statistics, reported in the `end` record.
pub struct PmiCounts {
    pub handled: AtomicU64,
    pub spurious: AtomicU64,
    /// PMIs that found the PMU busy (the interrupted code held it); acknowledged later.
    pub busy: AtomicU64,
}

pub static PMI_COUNTS: PmiCounts = PmiCounts {
    handled: AtomicU64::new(0),
    spurious: AtomicU64::new(0),
    busy: AtomicU64::new(0),
};

/// Called with every PMI's findings (the virtual-counter and sampling code will register one).
pub type PmiHook = fn(&PmiEvent);
static PMI_HOOK: spin::Once<PmiHook> = spin::Once::new();

/// Registers the function called after each PMI is acknowledged.
pub fn set_pmi_hook(hook: PmiHook) {
    PMI_HOOK.call_once(|| hook);
}

/// Discovers the boot CPU's PMU, puts the chosen backend in a known state, programs LVTPC, and
/// sets the MSR door's limits to the counters found.
pub fn init(cpu: &CpuInfo) -> Discovery {
    bring_up(cpu, true)
}

/// The same for the executing CPU (another CPU, at its start: a hybrid part's cores differ),
/// which keeps the MSR door's limits the boot CPU's.
pub fn init_here(cpu: &CpuInfo) {
    bring_up(cpu, false);
}

/// Discovery, the backend's reset (the TSC alone if it fails), LVTPC, and this CPU's PMU slot.
fn bring_up(cpu: &CpuInfo, sets_limits: bool) -> Discovery {
    let vendor = Vendor::from_cpuid_name(cpu.vendor.as_str());
    let model = vendor.map(|v| discovery::cpu_model(v, cpu.family, cpu.model, cpu.stepping));
    let reader = CpuIdReaderNative;
    let cpuid = |leaf: u32, sub: u32| raw_cpuid_subleaf(&reader, leaf, sub);
    let mut msr = HwMsr;
    let mut d = discovery::discover(&cpuid, &mut msr, model);
    let mut backend: Box<dyn PmuBackend + Send> = match d.choice {
        BackendChoice::IntelArch => Box::new(IntelArchPmu::new(d.caps)),
        BackendChoice::Amd => Box::new(AmdPmu::new(d.caps)),
        BackendChoice::TscOnly => Box::new(TscOnlyPmu::new(vendor.unwrap_or(Vendor::Intel), model)),
    };
    // The MSR door lets writes reach the counters found, no others (before the reset writes).
    if sets_limits {
        hwmsr::set_pmu_limits(limits_of(&d));
    }
    if let Err(e) = backend.reset(&mut msr) {
        d.reason = alloc::format!(
            "{}; but resetting the counters failed ({e}): falling back to the TSC",
            d.reason
        );
        d.choice = BackendChoice::TscOnly;
        d.caps = events::pmu::PmuCaps::tsc_only(vendor.unwrap_or(Vendor::Intel), model);
        backend = Box::new(TscOnlyPmu::new(vendor.unwrap_or(Vendor::Intel), model));
        if sets_limits {
            hwmsr::set_pmu_limits(hwmsr::PmuLimits::NONE);
        }
    }
    // The PMI stays masked without counters; otherwise it is armed on its vector (counters only
    // interrupt when a period was armed with INT).
    apic::set_lvt_perf(
        PmiDelivery::Vector(PMI_VECTOR),
        d.choice == BackendChoice::TscOnly,
    );
    let emulated = cpu.hypervisor_name == Some("tcg") && d.choice != BackendChoice::TscOnly;
    *this_pmu().lock() = Some(Pmu {
        backend,
        emulated,
        uarch_model: emulated && cpu.tcg_uarch_model,
        discovery: d.clone(),
    });
    d
}

/// The capabilities of CPU `index`'s PMU (`None` before its discovery).
pub fn caps_of(index: usize) -> Option<events::pmu::PmuCaps> {
    PMUS.get(index)?
        .lock()
        .as_ref()
        .map(|pmu| *pmu.backend.caps())
}

/// Runs `f` with the executing CPU's PMU and the hardware MSR door. `None` before `init` (or
/// `init_here` on this CPU).
pub fn with_pmu<R>(f: impl FnOnce(&mut Pmu, &mut HwMsr) -> R) -> Option<R> {
    let mut guard = this_pmu().lock();
    guard.as_mut().map(|pmu| f(pmu, &mut HwMsr))
}

/// [`with_pmu`], or `None` at once if the executing CPU's PMU is held: for code that may run
/// from an interrupt (a call from another CPU), which must not wait for the code it
/// interrupted.
pub fn try_with_pmu<R>(f: impl FnOnce(&mut Pmu, &mut HwMsr) -> R) -> Option<R> {
    let mut guard = this_pmu().try_lock()?;
    guard.as_mut().map(|pmu| f(pmu, &mut HwMsr))
}

/// A PMI taken while a task ran in ring 3 with its counters live (`task::run::notify`): the
/// task's switch-out has already read and cleared the overflow status and folded the wrap, so
/// only the local APIC's part is left: LVTPC unmasked where the CPU masks it on delivery, EOI.
pub fn ack_task_pmi() {
    PMI_COUNTS.handled.fetch_add(1, Relaxed);
    if with_pmu(|pmu, _| pmu.backend.pmi_unmasks_lvtpc()).unwrap_or(true) {
        apic::unmask_lvt_perf();
    }
    apic::eoi();
}

/// [`ack_task_pmi`] for an overflow served in place (`task::run::sample`): the caller knows
/// whether the backend unmasks LVTPC (the task switch asked it once) and that the PMI came as
/// [`PMI_VECTOR`](crate::platform::interrupts::PMI_VECTOR), so the entry is written back
/// unmasked without reading it or taking the PMU's lock.
pub fn ack_task_pmi_in_place(unmask_lvtpc: bool) {
    PMI_COUNTS.handled.fetch_add(1, Relaxed);
    if unmask_lvtpc {
        apic::set_lvt_perf(
            apic::PmiDelivery::Vector(crate::platform::interrupts::PMI_VECTOR),
            false,
        );
    }
    apic::eoi();
}

/// The PMI vector's handler (called from `traps`, interrupts disabled).
pub fn on_pmi() {
    let Some(mut guard) = this_pmu().try_lock() else {
        // The interrupted code holds the PMU: it sees the overflow status itself.
        PMI_COUNTS.busy.fetch_add(1, Relaxed);
        apic::unmask_lvt_perf();
        apic::eoi();
        return;
    };
    if let Some(pmu) = guard.as_mut() {
        match pmu.backend.handle_pmi(&mut HwMsr) {
            Ok(event) if event.is_spurious() => {
                PMI_COUNTS.spurious.fetch_add(1, Relaxed);
            }
            Ok(event) => {
                PMI_COUNTS.handled.fetch_add(1, Relaxed);
                if let Some(hook) = PMI_HOOK.get() {
                    hook(&event);
                }
            }
            Err(_) => {
                PMI_COUNTS.spurious.fetch_add(1, Relaxed);
            }
        }
        if pmu.backend.pmi_unmasks_lvtpc() {
            apic::unmask_lvt_perf();
        }
    } else {
        PMI_COUNTS.spurious.fetch_add(1, Relaxed);
    }
    drop(guard);
    apic::eoi();
}

//! The CPUs: what each started CPU is (APIC ID, core type, its PMU's CPUID leaf, its timer),
//! which CPU code runs on, and [`run_on`] to put work on another one. Starting them is the
//! boot sequence's job (`boot::cpus`, over `baremark_hw::smp`); this is what the rest of the
//! kernel asks.

use alloc::string::String;
use alloc::vec::Vec;

use baremark_hw::{percpu, smp};
use raw_cpuid::CpuIdReaderNative;
use spin::Mutex;

use crate::platform::cpu::{raw_cpuid_leaf, raw_cpuid_subleaf};

/// A hybrid part's kind of core (CPUID.1AH:EAX[31:24]), or none on a part with one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreType {
    /// Not a hybrid part (CPUID.07H:EDX[15] clear): every core is the same.
    Uniform,
    /// Intel Core (P-core), 0x40.
    Core,
    /// Intel Atom (E-core), 0x20.
    Atom,
    /// Another value of CPUID.1AH.
    Other(u8),
}

impl CoreType {
    pub fn name(self) -> &'static str {
        match self {
            CoreType::Uniform => "uniform",
            CoreType::Core => "core",
            CoreType::Atom => "atom",
            CoreType::Other(_) => "other",
        }
    }

    /// CPUID.1AH:EAX[31:24] as the CPU reports it (0 on a part with one kind of core).
    pub fn code(self) -> u8 {
        match self {
            CoreType::Uniform => 0,
            CoreType::Core => 0x40,
            CoreType::Atom => 0x20,
            CoreType::Other(c) => c,
        }
    }

    /// The executing CPU's core type.
    pub fn here() -> CoreType {
        let reader = CpuIdReaderNative;
        let max = raw_cpuid_leaf(&reader, 0)[0];
        let hybrid = max >= 7 && raw_cpuid_subleaf(&reader, 7, 0)[3] & (1 << 15) != 0;
        if !hybrid || max < 0x1a {
            return CoreType::Uniform;
        }
        match (raw_cpuid_leaf(&reader, 0x1a)[0] >> 24) as u8 {
            0x40 => CoreType::Core,
            0x20 => CoreType::Atom,
            other => CoreType::Other(other),
        }
    }
}

/// The executing CPU's CPUID 0x0A (its architectural PMU; zeros where there is none). Each
/// CPU reads its own: a hybrid part's core types differ there.
pub fn pmu_leaf_here() -> [u32; 4] {
    let reader = CpuIdReaderNative;
    if raw_cpuid_leaf(&reader, 0)[0] >= 0x0a {
        raw_cpuid_leaf(&reader, 0x0a)
    } else {
        [0; 4]
    }
}

/// What became of one CPU of the MADT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuState {
    /// Started and waiting for work (or the boot CPU).
    Online,
    /// Enabled in the MADT but did not come up: why.
    Failed(String),
    /// Not enabled in the MADT (online-capable or absent): not started.
    Disabled { online_capable: bool },
}

/// One CPU as the `cpus` record reports it.
#[derive(Clone, Debug)]
pub struct Cpu {
    /// Index (0: the boot CPU, then started CPUs in MADT order); `None` if not started.
    pub index: Option<usize>,
    pub apic_id: u32,
    /// The MADT's processor UID (`None` for the boot CPU without a MADT).
    pub uid: Option<u32>,
    pub state: CpuState,
    pub core_type: Option<CoreType>,
    /// Its CPUID 0x0A.
    pub pmu_leaf: Option<[u32; 4]>,
    /// Its APIC timer's input clock, measured on it.
    pub timer_hz: Option<u64>,
}

static CPUS: Mutex<Vec<Cpu>> = Mutex::new(Vec::new());

// The wake vector is the one the trap handler knows.
const _: () = assert!(crate::platform::interrupts::WAKE_VECTOR == smp::WAKE_VECTOR);

/// Records the CPUs the boot sequence found and started.
pub fn set_all(cpus: Vec<Cpu>) {
    *CPUS.lock() = cpus;
}

/// Every CPU of the MADT (and the boot CPU), with its state.
pub fn all() -> Vec<Cpu> {
    CPUS.lock().clone()
}

/// The online CPU with index `index`.
pub fn online(index: usize) -> Option<Cpu> {
    CPUS.lock()
        .iter()
        .find(|c| c.index == Some(index) && c.state == CpuState::Online)
        .cloned()
}

/// The online CPUs: their indices and core types (CPUID.1AH:EAX[31:24], 0 where the part has
/// one kind of core), in index order.
pub fn online_list() -> Vec<(usize, u8)> {
    let mut list: Vec<(usize, u8)> = CPUS
        .lock()
        .iter()
        .filter(|c| c.state == CpuState::Online)
        .filter_map(|c| Some((c.index?, c.core_type.map_or(0, CoreType::code))))
        .collect();
    list.sort_unstable();
    list
}

/// How many CPUs are online (at least 1: this one).
pub fn online_count() -> usize {
    CPUS.lock()
        .iter()
        .filter(|c| c.state == CpuState::Online)
        .count()
        .max(1)
}

/// The core type name of online CPU `index` ("uniform" on a part with one kind of core, and
/// for a CPU not known).
pub fn core_type_name(index: usize) -> &'static str {
    CPUS.lock()
        .iter()
        .find(|c| c.index == Some(index))
        .and_then(|c| c.core_type)
        .map_or("uniform", CoreType::name)
}

/// The index of the CPU this runs on (0: the boot CPU).
#[inline]
pub fn current() -> usize {
    percpu::index()
}

/// Why [`run_on`] did not run the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOnError {
    /// No online CPU has that index.
    NotOnline,
    /// That CPU is busy with other work.
    Busy,
}

impl core::fmt::Display for RunOnError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            RunOnError::NotOnline => "that CPU is not online",
            RunOnError::Busy => "that CPU is busy",
        })
    }
}

/// Starts `work` on CPU `index` in the background (it runs while this CPU goes on); refused on
/// this CPU, on a CPU that is not online and on one that has a job.
pub fn start_job(index: usize, work: impl FnMut() + Send + 'static) -> Result<(), RunOnError> {
    if online(index).is_none() {
        return Err(RunOnError::NotOnline);
    }
    smp::start_job(index, alloc::boxed::Box::new(work)).map_err(|e| match e {
        smp::RunOnError::NotStarted => RunOnError::NotOnline,
        smp::RunOnError::Busy => RunOnError::Busy,
    })
}

/// Asks the background job on CPU `index` to stop and waits until it has.
pub fn stop_job(index: usize) {
    smp::request_stop(index);
    smp::wait_job(index);
}

/// Waits until the background job on CPU `index` (if any) has returned.
pub fn wait_job(index: usize) {
    smp::wait_job(index);
}

/// Whether the kernel asked the background job running on this CPU to stop.
pub fn stop_requested() -> bool {
    smp::stop_requested()
}

/// Runs `work` on CPU `index` and returns when it is done; this CPU halts meanwhile (so only
/// one CPU runs kernel code at a time). On this CPU it just calls it.
pub fn run_on(index: usize, mut work: impl FnMut()) -> Result<(), RunOnError> {
    if index != current() && online(index).is_none() {
        return Err(RunOnError::NotOnline);
    }
    smp::run_on(index, &mut work).map_err(|e| match e {
        smp::RunOnError::NotStarted => RunOnError::NotOnline,
        smp::RunOnError::Busy => RunOnError::Busy,
    })
}

/// How long [`call_on`] waits for a CPU to take a call: 2^31 TSC ticks, about a second at
/// 2 GHz (a CPU takes a call as soon as it has interrupts on; the kernel's stretches with them
/// off are short).
const CALL_TIMEOUT_TICKS: u64 = 1 << 31;

/// Why [`call_on`] did not run the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No online CPU has that index.
    NotOnline,
    /// The CPU did not take the call in time.
    NoAnswer,
}

/// Runs the short `work` on CPU `index` whatever it is doing (idle, waiting, or running a
/// job or a task: from its wake interrupt) and waits for it; on this CPU it just calls it.
/// Unlike [`run_on`] it works on a busy CPU, so `work` must be short and must not wait for
/// other CPUs.
pub fn call_on(index: usize, mut work: impl FnMut() + Send) -> Result<(), CallError> {
    if index != current() && online(index).is_none() {
        return Err(CallError::NotOnline);
    }
    smp::call(index, &mut work, CALL_TIMEOUT_TICKS).map_err(|e| match e {
        smp::CallError::NotStarted => CallError::NotOnline,
        smp::CallError::NoAnswer => CallError::NoAnswer,
    })
}

/// Runs a call another CPU made to this one ([`call_on`]); the wake vector's handler calls it.
pub fn serve_calls() {
    smp::serve_calls();
}

/// The indexes of the online CPUs, in order.
pub fn online_indexes() -> Vec<usize> {
    let mut v: Vec<usize> = CPUS
        .lock()
        .iter()
        .filter(|c| c.state == CpuState::Online)
        .filter_map(|c| c.index)
        .collect();
    if v.is_empty() {
        v.push(current());
    }
    v.sort_unstable();
    v.dedup();
    v
}

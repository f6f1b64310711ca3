//! System mode (docs/syscall-abi.md, "System mode"): who holds the system-wide counters
//! (`task::system`), and the IRIX rules around them.
//!
//! - The run configuration (`system = ...`) takes them before the payloads run and gives them
//!   back after; a task takes them with `system_configure` and gives them back with
//!   `system_configure(_, 0)` or by ending.
//! - While they exist, a task's request for counters of its own is refused with `EBUSY`; while
//!   any task holds counters ([`CounterHold`]), a request for system counters is refused with
//!   `EBUSY`. Another holder's system counters are `EBUSY` too.
//! - Every read returns the generation, which changes at every configuration and release, so a
//!   payload can tell whether two reads are of the same counters (IRIX's check "generation
//!   number should be the same").
//!
//! Per CPU (docs/design.md, "System mode on every CPU"): a configuration programs the same
//! entries on every online CPU, each CPU its own PMU, through a short call on that CPU
//! (`cpus::call_on`: from its wake interrupt, so also on a CPU that runs a task or a job); a
//! read asks every CPU for its own counts the same way and returns them per CPU, with their
//! exact sum. The holder, the generation and `EBUSY` stay rules of the whole machine.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use baremark_hw::cpu as hwcpu;
use baremark_hw::layout::MAX_CPUS;
use spin::{Mutex, MutexGuard};

use crate::platform::cpus;
use crate::pmu::machine::HwMsr;
use crate::task::abi::{EBUSY, ENODEV, ENOENT};
use crate::task::system::{Holder, SystemCounters};

/// The machine-wide part: who holds the system counters, their entries, and the CPUs they
/// were programmed on.
struct Config {
    holder: Holder,
    words: Vec<u64>,
    cpus: Vec<usize>,
}

static STATE: Mutex<Option<Config>> = Mutex::new(None);
/// Each CPU's own system counters (its PMU's; only that CPU programs and reads them).
static PER_CPU: [Mutex<Option<SystemCounters>>; MAX_CPUS] = [const { Mutex::new(None) }; MAX_CPUS];
/// Bumped at every configuration and release.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Tasks that hold counters of their own.
static TASK_HOLDERS: AtomicU32 = AtomicU32::new(0);

/// The machine-wide state, locked. Another CPU may hold it while it waits for a call to this
/// one, so the wait serves calls.
fn state() -> MutexGuard<'static, Option<Config>> {
    loop {
        if let Some(g) = STATE.try_lock() {
            return g;
        }
        cpus::serve_calls();
        hwcpu::pause();
    }
}

/// A task holds counters of its own while one of these lives (`task::run` keeps one for every
/// task with counter slots).
#[derive(Debug)]
pub struct CounterHold(());

impl CounterHold {
    pub fn new() -> CounterHold {
        TASK_HOLDERS.fetch_add(1, Ordering::Relaxed);
        CounterHold(())
    }
}

impl Default for CounterHold {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for CounterHold {
    fn drop(&mut self) {
        TASK_HOLDERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// System counters exist (tasks may not program counters).
pub fn active() -> bool {
    state().is_some()
}

/// The current generation.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// On the executing CPU: its system counters stopped and dropped (if any).
fn stop_here() {
    let old = PER_CPU[cpus::current()].lock().take();
    if let Some(old) = old {
        let _ = crate::pmu::machine::try_with_pmu(|pmu, msr| old.stop(pmu.backend.as_mut(), msr));
    }
}

/// On the executing CPU: `words` programmed and started (what it had before stopped first).
fn start_here(words: &[u64], holder: Holder) -> Result<(), i64> {
    stop_here();
    let s = crate::pmu::machine::try_with_pmu(|pmu, msr| {
        let backend = pmu.backend.as_mut();
        if backend.caps().kind == events::pmu::PmuKind::TscOnly {
            return Err(ENODEV);
        }
        SystemCounters::start(backend, msr, words, holder, hwcpu::rdtsc())
    })
    // Its PMU was in use by the code the call interrupted.
    .unwrap_or(Err(EBUSY))?;
    *PER_CPU[cpus::current()].lock() = Some(s);
    Ok(())
}

/// Stops the system counters on every CPU of `cpus` (one that does not answer keeps counting
/// until its next configuration stops them).
fn stop_on(list: &[usize]) {
    for &cpu in list {
        let _ = cpus::call_on(cpu, stop_here);
    }
}

/// Takes (or, for the same holder, replaces) the system counters with `words` on every online
/// CPU: the new generation. `EBUSY` while a task holds counters or another holder has the
/// system counters (or a CPU could not be reached); `ENODEV` without a PMU on some CPU;
/// `EINVAL` for entries `counters_configure` would refuse on some CPU. On any error no CPU
/// keeps them.
pub fn configure(words: &[u64], holder: Holder) -> Result<u64, i64> {
    if TASK_HOLDERS.load(Ordering::Relaxed) > 0 {
        return Err(EBUSY);
    }
    let mut state = state();
    if let Some(s) = state.as_ref()
        && s.holder != holder
    {
        return Err(EBUSY);
    }
    let old = state.take();
    let had_old = old.is_some();
    if let Some(old) = &old {
        stop_on(&old.cpus);
    }
    let online = cpus::online_indexes();
    let mut started = Vec::new();
    let mut error = None;
    for &cpu in &online {
        let mut result = Err(EBUSY);
        let called = cpus::call_on(cpu, || result = start_here(words, holder));
        match called.map_err(|_| EBUSY).and(result) {
            Ok(()) => started.push(cpu),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    if let Some(e) = error {
        stop_on(&started);
        // An old configuration is gone even so: that is a change too.
        if had_old {
            GENERATION.fetch_add(1, Ordering::Relaxed);
        }
        return Err(e);
    }
    *state = Some(Config {
        holder,
        words: words.to_vec(),
        cpus: started,
    });
    Ok(GENERATION.fetch_add(1, Ordering::Relaxed) + 1)
}

/// Gives the system counters back on every CPU: the new generation. `ENOENT` if there are
/// none, `EBUSY` if another holder has them.
pub fn release(holder: Holder) -> Result<u64, i64> {
    let mut state = state();
    match state.as_ref() {
        None => return Err(ENOENT),
        Some(s) if s.holder != holder => return Err(EBUSY),
        Some(_) => {}
    }
    if let Some(s) = state.take() {
        stop_on(&s.cpus);
    }
    Ok(GENERATION.fetch_add(1, Ordering::Relaxed) + 1)
}

/// A task ended: its system counters, if it held them, are given back.
pub fn release_if_held_by(task_index: u64) {
    let held = state()
        .as_ref()
        .is_some_and(|s| s.holder == Holder::Task(task_index));
    if held {
        let _ = release(Holder::Task(task_index));
    }
}

/// One CPU's system counts at a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuCounts {
    pub cpu: usize,
    /// Per entry, the 64-bit count since the configuration.
    pub counts: Vec<u64>,
    /// TSC ticks since the configuration, by this CPU's TSC.
    pub tsc: u64,
    /// The CPU did not answer (or its PMU was busy): the counts are its last read's.
    pub stale: bool,
}

/// A read of the system counters on every CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub generation: u64,
    pub words: Vec<u64>,
    /// By CPU index.
    pub cpus: Vec<CpuCounts>,
    /// Per entry, the exact sum over `cpus`.
    pub total: Vec<u64>,
    /// TSC ticks since the configuration, by the reading CPU's TSC.
    pub tsc: u64,
}

/// On the executing CPU: its counts now (`None`: none, or its PMU is busy).
fn sample_here() -> Option<(Vec<u64>, u64)> {
    let mut guard = PER_CPU[cpus::current()].lock();
    let s = guard.as_mut()?;
    let values = crate::pmu::machine::try_with_pmu(|pmu, _| {
        s.read(pmu.backend.as_mut(), &mut HwMsr, hwcpu::rdtsc())
    })?
    .ok()?;
    Some((values.counters().to_vec(), values.tsc))
}

/// Every CPU's counts and their sum now. `None` without system counters.
pub fn read() -> Option<Reading> {
    let state = state();
    let config = state.as_ref()?;
    let n = config.words.len();
    let mut rows = Vec::with_capacity(config.cpus.len());
    let mut tsc = 0;
    for &cpu in &config.cpus {
        let mut got = None;
        let _ = cpus::call_on(cpu, || got = sample_here());
        let (counts, ticks, stale) = match got {
            Some((c, t)) => (c, t, false),
            None => {
                let last = PER_CPU[cpu].lock().as_ref().map(SystemCounters::last);
                match last {
                    Some(v) => (v.counters().to_vec(), v.tsc, true),
                    None => (alloc::vec![0; n], 0, true),
                }
            }
        };
        if cpu == cpus::current() {
            tsc = ticks;
        }
        rows.push(CpuCounts {
            cpu,
            counts,
            tsc: ticks,
            stale,
        });
    }
    let mut total = alloc::vec![0u64; n];
    for r in &rows {
        for (t, c) in total.iter_mut().zip(&r.counts) {
            *t = t.wrapping_add(*c);
        }
    }
    Some(Reading {
        generation: generation(),
        words: config.words.clone(),
        cpus: rows,
        total,
        tsc,
    })
}

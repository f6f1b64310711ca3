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

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use baremark_hw::cpu as hwcpu;

use crate::pmu::machine::HwMsr;
use crate::task::abi::{EBUSY, ENODEV, ENOENT};
use crate::task::system::{Holder, SystemCounters};
use crate::task::vcounter::Values;

static STATE: spin::Mutex<Option<SystemCounters>> = spin::Mutex::new(None);
/// Bumped at every configuration and release.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Tasks that hold counters of their own.
static TASK_HOLDERS: AtomicU32 = AtomicU32::new(0);

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
    STATE.lock().is_some()
}

/// The current generation.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Takes (or, for the same holder, replaces) the system counters with `words`: the new
/// generation. `EBUSY` while a task holds counters or another holder has the system counters;
/// `ENODEV` without a PMU; `EINVAL` for entries `counters_configure` would refuse.
pub fn configure(words: &[u64], holder: Holder) -> Result<u64, i64> {
    if TASK_HOLDERS.load(Ordering::Relaxed) > 0 {
        return Err(EBUSY);
    }
    let mut state = STATE.lock();
    if let Some(s) = state.as_ref()
        && s.holder != holder
    {
        return Err(EBUSY);
    }
    let old = state.take();
    let had_old = old.is_some();
    crate::pmu::machine::with_pmu(|pmu, msr| {
        let backend = pmu.backend.as_mut();
        if backend.caps().kind == events::pmu::PmuKind::TscOnly {
            return Err(ENODEV);
        }
        if let Some(old) = old {
            let _ = old.stop(backend, msr);
        }
        let s = SystemCounters::start(backend, msr, words, holder, hwcpu::rdtsc())?;
        *state = Some(s);
        Ok(GENERATION.fetch_add(1, Ordering::Relaxed) + 1)
    })
    .unwrap_or(Err(ENODEV))
    .inspect_err(|_| {
        // An old configuration is gone even so: that is a change too.
        if had_old {
            GENERATION.fetch_add(1, Ordering::Relaxed);
        }
    })
}

/// Gives the system counters back: the new generation. `ENOENT` if there are none, `EBUSY`
/// if another holder has them.
pub fn release(holder: Holder) -> Result<u64, i64> {
    let mut state = STATE.lock();
    match state.as_ref() {
        None => return Err(ENOENT),
        Some(s) if s.holder != holder => return Err(EBUSY),
        Some(_) => {}
    }
    if let Some(s) = state.take() {
        let _ = crate::pmu::machine::with_pmu(|pmu, msr| s.stop(pmu.backend.as_mut(), msr));
    }
    Ok(GENERATION.fetch_add(1, Ordering::Relaxed) + 1)
}

/// A task ended: its system counters, if it held them, are given back.
pub fn release_if_held_by(task_index: u64) {
    let held = STATE
        .lock()
        .as_ref()
        .is_some_and(|s| s.holder == Holder::Task(task_index));
    if held {
        let _ = release(Holder::Task(task_index));
    }
}

/// The generation, the system counters' entries and their 64-bit counts now (`Values::tsc`: TSC
/// ticks since they started). `None` without system counters.
pub fn read() -> Option<(u64, Vec<u64>, Values)> {
    let mut state = STATE.lock();
    let s = state.as_mut()?;
    let values = crate::pmu::machine::with_pmu(|pmu, _| {
        s.read(pmu.backend.as_mut(), &mut HwMsr, hwcpu::rdtsc())
    })?
    .ok()?;
    Some((generation(), s.words.clone(), values))
}

//! The glue between a task's virtual counters and the PMU backend: what the task runner will do
//! with a task's hardware counters around each run in ring 3, written against the
//! [`PmuBackend`] trait so it is host-tested on the simulated PMU (`pmu::sim`).
//!
//! - [`program`] once per configuration: each slot's event loaded into its counter, stopped;
//! - [`switch_in`] right before entering ring 3: read each counter (the `start` of the
//!   virtual counters), then enable them all at once;
//! - [`switch_out`] right after coming back: disable them all, then read (`sum += widen(now -
//!   start)`), so the kernel's own events between two runs are never the task's;
//! - [`release`] when the task ends or reconfigures;
//! - [`rdpmc_index`] for the counter page (the index + 1 is published, so the fast path reads the
//!   hardware counter itself while CR4.PCE is set).
//!
//! Not wired into `task::run` yet: `counters_configure` with events still answers `EINVAL` on
//! every backend, and every task is TSC-only.

use alloc::vec::Vec;
use core::fmt;

use events::event::{EventSelect, Modifiers};

use super::vcounter::{VcError, VirtualCounters};
use crate::pmu::backend::{Counter, CounterSet, PmuBackend, PmuError};
use crate::pmu::msr::Msr;

/// One hardware slot of a task: the counter and the event it counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwSlot {
    pub counter: Counter,
    pub select: EventSelect,
    pub modifiers: Modifiers,
}

/// What went wrong switching a task's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HwError {
    Pmu(PmuError),
    Counters(VcError),
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::Pmu(e) => write!(f, "PMU: {e}"),
            HwError::Counters(e) => write!(f, "virtual counters: {e}"),
        }
    }
}

impl From<PmuError> for HwError {
    fn from(e: PmuError) -> Self {
        HwError::Pmu(e)
    }
}

impl From<VcError> for HwError {
    fn from(e: VcError) -> Self {
        HwError::Counters(e)
    }
}

/// The counters of `slots`.
pub fn counter_set(slots: &[HwSlot]) -> CounterSet {
    slots.iter().fold(CounterSet::EMPTY, |set, s| {
        set.union(CounterSet::one(s.counter))
    })
}

/// Configures `vc` for `slots` (one virtual slot per hardware slot, in order, with the
/// backend's widths; counts zero, a new generation) and loads each event into its counter,
/// stopped. `vc` must be switched out.
pub fn program(
    backend: &mut dyn PmuBackend,
    msr: &mut dyn Msr,
    slots: &[HwSlot],
    vc: &mut VirtualCounters,
) -> Result<(), HwError> {
    let widths: Vec<(Counter, u8)> = slots
        .iter()
        .map(|s| (s.counter, backend.width(s.counter)))
        .collect();
    vc.configure(&widths)?;
    for s in slots {
        backend.program(msr, s.counter, &s.select, &s.modifiers)?;
    }
    Ok(())
}

/// The raw values of the slots' counters, in slot order.
fn read_all(
    backend: &mut dyn PmuBackend,
    msr: &mut dyn Msr,
    slots: &[HwSlot],
) -> Result<Vec<u64>, HwError> {
    slots
        .iter()
        .map(|s| backend.read(msr, s.counter).map_err(HwError::from))
        .collect()
}

/// Before the task enters ring 3: its virtual counters resume at the counters' current values
/// (and `tsc`), then the counters start.
pub fn switch_in(
    backend: &mut dyn PmuBackend,
    msr: &mut dyn Msr,
    slots: &[HwSlot],
    vc: &mut VirtualCounters,
    tsc: u64,
) -> Result<(), HwError> {
    let raw = read_all(backend, msr, slots)?;
    vc.resume(&raw, tsc)?;
    backend.enable(msr, counter_set(slots))?;
    Ok(())
}

/// After the task is back from ring 3: the counters stop, then its virtual counters fold what
/// they counted since [`switch_in`] (and `tsc`).
pub fn switch_out(
    backend: &mut dyn PmuBackend,
    msr: &mut dyn Msr,
    slots: &[HwSlot],
    vc: &mut VirtualCounters,
    tsc: u64,
) -> Result<(), HwError> {
    backend.disable(msr, counter_set(slots))?;
    let raw = read_all(backend, msr, slots)?;
    vc.suspend(&raw, tsc)?;
    Ok(())
}

/// Stops and clears the slots' counters (the task ended or reconfigures).
pub fn release(
    backend: &mut dyn PmuBackend,
    msr: &mut dyn Msr,
    slots: &[HwSlot],
) -> Result<(), HwError> {
    for s in slots {
        backend.release(msr, s.counter)?;
    }
    Ok(())
}

/// The RDPMC index of `counter` for the counter page, if it is one of the slots' and RDPMC can
/// read it (the page stores index + 1; `None` leaves the reader to its syscall path).
pub fn rdpmc_index(backend: &dyn PmuBackend, slots: &[HwSlot], counter: Counter) -> Option<u32> {
    if slots.iter().any(|s| s.counter == counter) {
        backend.rdpmc_index(counter)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::amd::AmdPmu;
    use crate::pmu::intel::IntelArchPmu;
    use crate::pmu::sim::{AmdFlavour, IntelConfig, SimPmu};

    fn slot(counter: Counter, code: u16, umask: u8) -> HwSlot {
        HwSlot {
            counter,
            select: EventSelect::new(code, umask),
            modifiers: Modifiers::default(),
        }
    }

    /// Two tasks share two counters; each sees exactly the events counted while it was switched
    /// in, never the kernel's between runs, across the counters' wrap.
    fn time_share(backend: &mut dyn PmuBackend, sim: &mut SimPmu, slots: &[HwSlot]) {
        backend.reset(sim).unwrap();
        let mut tasks = [VirtualCounters::new(), VirtualCounters::new()];
        for t in &mut tasks {
            program(backend, sim, slots, t).unwrap();
        }
        // Start near the wrap of the first counter.
        let c0 = slots[0].counter;
        let w0 = backend.width(c0);
        let near = if w0 >= 64 {
            u64::MAX - 999
        } else {
            (1u64 << w0) - 1000
        };
        backend.write(sim, c0, near).unwrap();
        let mut own = [[0u64; 2]; 2];
        let mut tsc = 1u64 << 40;
        for round in 0..200u64 {
            let t = (round % 2) as usize;
            // The kernel's own events before the switch-in and after the switch-out: counted
            // by the hardware only if the counters ran (they must not).
            for s in slots {
                sim.count(s.counter, 11);
            }
            switch_in(backend, sim, slots, &mut tasks[t], tsc).unwrap();
            for s in slots {
                assert!(sim.is_counting(s.counter), "enabled while the task runs");
            }
            for (i, s) in slots.iter().enumerate() {
                let k = 1 + (round * 7919 + i as u64 * 31) % 500;
                sim.count(s.counter, k);
                own[t][i] += k;
            }
            tsc += 100;
            switch_out(backend, sim, slots, &mut tasks[t], tsc).unwrap();
            for s in slots {
                assert!(!sim.is_counting(s.counter), "stopped while the kernel runs");
                sim.count(s.counter, 7);
            }
            tsc += 10;
        }
        for (t, vc) in tasks.iter().enumerate() {
            for (i, &n) in own[t].iter().enumerate().take(slots.len()) {
                assert_eq!(vc.values().get(i), Some(n), "task {t} slot {i}");
            }
            assert_eq!(vc.values().tsc, 100 * 100);
        }
        for s in slots {
            assert_eq!(
                rdpmc_index(backend, slots, s.counter),
                backend.rdpmc_index(s.counter)
            );
            assert!(rdpmc_index(backend, slots, s.counter).is_some());
        }
        release(backend, sim, slots).unwrap();
    }

    #[test]
    fn intel_gp_and_fixed_counters_time_share_exactly() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        // Instructions retired on a GP counter, and on fixed counter 0 (its own encoding).
        let slots = [
            slot(Counter::Gp(0), 0xc0, 0),
            slot(Counter::Fixed(0), 0xc0, 0),
        ];
        time_share(&mut pmu, &mut sim, &slots);
    }

    #[test]
    fn amd_counters_time_share_exactly() {
        let mut sim = SimPmu::amd(AmdFlavour::PerfMonV2(6));
        let mut pmu = AmdPmu::new(sim.caps());
        let slots = [slot(Counter::Gp(0), 0xc0, 0), slot(Counter::Gp(3), 0x76, 0)];
        time_share(&mut pmu, &mut sim, &slots);
    }

    #[test]
    fn a_counter_the_pmu_lacks_is_an_error_not_a_panic() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        pmu.reset(&mut sim).unwrap();
        let mut vc = VirtualCounters::new();
        let slots = [slot(Counter::Gp(40), 0xc0, 0)];
        assert!(program(&mut pmu, &mut sim, &slots, &mut vc).is_err());
    }
}

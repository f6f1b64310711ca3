//! System-wide counters (docs/syscall-abi.md, "System mode"), the PMU part: events counted on
//! the whole machine, the kernel and every task alike, from the moment they are configured to
//! their release, widened to 64 bits at every read. Written against [`PmuBackend`], so it is
//! host-tested on the simulated PMU; the rules (who may hold them, the generation) are
//! `crate::system_mode`.
//!
//! IRIX's system mode: while system counters exist no task may program counters (its switches
//! would stop and rewrite them), and they cannot be taken while a task holds counters.

use alloc::vec::Vec;

use super::hwslots::{self, HwError, HwSlot};
use super::vcounter::{Values, VirtualCounters};
use crate::pmu::backend::PmuBackend;
use crate::pmu::msr::Msr;

/// Who holds the system counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// The run configuration (`system`): for the whole run.
    Run,
    /// The task with this `task_index` (`system_configure`): until it releases them or ends.
    Task(u64),
}

/// The system counters while they count.
#[derive(Debug)]
pub struct SystemCounters {
    pub holder: Holder,
    /// The `counters_configure`-style entries asked for.
    pub words: Vec<u64>,
    slots: Vec<HwSlot>,
    /// 64-bit widening (no task switches: resumed once, sampled at every read).
    vc: VirtualCounters,
}

impl SystemCounters {
    /// Programs `words` (the checks of `counters_configure`: `EINVAL`, `ENODEV`) and starts
    /// them at `tsc`.
    pub fn start(
        backend: &mut dyn PmuBackend,
        msr: &mut dyn Msr,
        words: &[u64],
        holder: Holder,
        tsc: u64,
    ) -> Result<SystemCounters, i64> {
        let caps = *backend.caps();
        let slots = hwslots::slots_of(hwslots::parse_counter_config(caps.vendor, &caps, words)?);
        let mut vc = VirtualCounters::new();
        if hwslots::program(backend, msr, &slots, &mut vc).is_err() {
            let _ = hwslots::release(backend, msr, &slots);
            return Err(super::abi::EINVAL);
        }
        let raw = match hwslots::start(backend, msr, &slots) {
            Ok(raw) => raw,
            Err(_) => {
                let _ = hwslots::release(backend, msr, &slots);
                return Err(super::abi::EINVAL);
            }
        };
        if vc.resume(&raw, tsc).is_err() {
            let _ = hwslots::release(backend, msr, &slots);
            return Err(super::abi::EINVAL);
        }
        Ok(SystemCounters {
            holder,
            words: words.to_vec(),
            slots,
            vc,
        })
    }

    /// The 64-bit counts since the start (and the TSC ticks since then), as of `tsc`. Reads
    /// must come often enough that no counter passes its width between two (docs: every
    /// payload boundary reads them).
    pub fn read(
        &mut self,
        backend: &mut dyn PmuBackend,
        msr: &mut dyn Msr,
        tsc: u64,
    ) -> Result<Values, HwError> {
        let raw: Result<Vec<u64>, _> = self
            .slots
            .iter()
            .map(|s| backend.read(msr, s.counter))
            .collect();
        self.vc.sample(&raw?, tsc)?;
        Ok(self.vc.values())
    }

    /// The 64-bit counts as of the last [`read`](Self::read) (or the start).
    pub fn last(&self) -> Values {
        self.vc.values()
    }

    /// Stops and releases the counters.
    pub fn stop(self, backend: &mut dyn PmuBackend, msr: &mut dyn Msr) -> Result<(), HwError> {
        backend.disable(msr, hwslots::counter_set(&self.slots))?;
        hwslots::release(backend, msr, &self.slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::amd::AmdPmu;
    use crate::pmu::backend::Counter;
    use crate::pmu::intel::IntelArchPmu;
    use crate::pmu::sim::{AmdFlavour, IntelConfig, SimPmu};

    const USR: u64 = 1 << 16;
    const OS: u64 = 1 << 17;

    fn counts_everything(backend: &mut dyn PmuBackend, sim: &mut SimPmu) {
        backend.reset(sim).unwrap();
        let words = [0xc0 | USR, 0xc0 | OS, 0xc0 | USR | OS];
        let mut s = SystemCounters::start(backend, sim, &words, Holder::Run, 1000).unwrap();
        for i in 0..3u8 {
            assert!(sim.is_counting(Counter::Gp(i)));
        }
        // Near the wrap of GP 0: the 64-bit count goes on across it.
        let width = backend.width(Counter::Gp(0));
        let first = sim.value(Counter::Gp(0));
        backend
            .write(sim, Counter::Gp(0), (1u64 << width) - 10)
            .unwrap();
        let before = (1u64 << width) - 10 - first;
        let mut own = [before, 0, 0];
        for k in 1..50u64 {
            sim.count(Counter::Gp(0), k);
            sim.count(Counter::Gp(1), 2 * k);
            sim.count(Counter::Gp(2), 3 * k);
            own[0] += k;
            own[1] += 2 * k;
            own[2] += 3 * k;
            let v = s.read(backend, sim, 1000 + k).unwrap();
            assert_eq!(v.counters(), &own[..], "read {k}");
            assert_eq!(v.tsc, k);
        }
        s.stop(backend, sim).unwrap();
        for i in 0..3u8 {
            assert!(!sim.is_counting(Counter::Gp(i)));
        }
    }

    #[test]
    fn intel_system_counters_count_and_widen() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        counts_everything(&mut pmu, &mut sim);
    }

    #[test]
    fn amd_system_counters_count_and_widen() {
        let mut sim = SimPmu::amd(AmdFlavour::PerfMonV2(6));
        let mut pmu = AmdPmu::new(sim.caps());
        counts_everything(&mut pmu, &mut sim);
    }

    #[test]
    fn bad_entries_are_refused() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        pmu.reset(&mut sim).unwrap();
        let too_many = [0xc0 | USR; 5];
        assert_eq!(
            SystemCounters::start(&mut pmu, &mut sim, &too_many, Holder::Run, 0).err(),
            Some(super::super::abi::EINVAL)
        );
        // EN set
        assert_eq!(
            SystemCounters::start(
                &mut pmu,
                &mut sim,
                &[0xc0 | USR | 1 << 22],
                Holder::Task(3),
                0
            )
            .err(),
            Some(super::super::abi::EINVAL)
        );
    }
}

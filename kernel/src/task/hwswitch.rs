//! The task switch for hardware counters, fast protocol: a task's counters are saved at the
//! switch-out (stop, one RDPMC each) and restored at the switch-in (the values written back,
//! then started), as perfctr and Linux do, from MSR lists the backend computed once per
//! configuration ([`crate::pmu::switch::SwitchPlan`]). Nothing is folded at a switch, so the
//! counter page does not change either (`vcounter` module docs, "The fast protocol").
//!
//! | switch      | writes                                           | reads                  |
//! |-------------|--------------------------------------------------|------------------------|
//! | in, counters still the task's | enable (one GLOBAL_CTRL write on v2+)  | -                      |
//! | in, after another task | program (event selects, fixed control, status clear), each counter's saved value, enable | - |
//! | out         | disable (one write on v2+)                       | one RDPMC per counter, GLOBAL_STATUS (v2+) |
//!
//! "Still the task's" (`loaded`) is the runner's business (`run::hw`): the counters hold this
//! task's events and the values it left, because nothing touched them since its switch-out.
//!
//! Wraps: a counter that wrapped during the run (its status bit; without a status register, a
//! reading below the one before) is folded at the switch-out
//! ([`VirtualCounters::fold_wrapped`]), which keeps the 64-bit value exact for fewer than
//! 2^width events per run. A counter that cannot take its saved value back (Intel without
//! FW_WRITE: only sign-extended 32-bit values) is rebased to 0 instead
//! ([`VirtualCounters::rebase`]).
//!
//! Overflow in place ([`TaskSwitch::overflow_in_place`]): a sampled task's overflow interrupt
//! is served with its counters running (they count ring 3 only, so nothing counts while the
//! kernel does it): every counter is read, the wrapped ones folded by their status bits, the
//! sampled ones rebased to their next arming value, all written back and the status cleared.
//! No disable, no enable, no page rewrite: the runner's `sample` module.
//!
//! Generic over [`BatchMsr`], so it is host-tested on the simulated PMU against the general
//! protocol of `hwslots`.

use core::fmt;

use super::vcounter::{MAX_SLOTS, VcError, VirtualCounters};
use crate::pmu::msr::MsrFault;
use crate::pmu::switch::{BatchMsr, LIST_MAX, SwitchPlan};

/// What went wrong in a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchError {
    Msr(MsrFault),
    Counters(VcError),
    /// The plan has more slots or writes than a switch handles.
    TooLarge,
    /// The diagnostic preset does not fit the counter's write (Intel without FW_WRITE).
    PresetUnwritable {
        slot: usize,
    },
}

impl fmt::Display for SwitchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchError::Msr(e) => write!(f, "PMU: {e:?}"),
            SwitchError::Counters(e) => write!(f, "virtual counters: {e}"),
            SwitchError::TooLarge => write!(f, "more counters than a switch handles"),
            SwitchError::PresetUnwritable { slot } => {
                write!(
                    f,
                    "slot {slot}: the preset value cannot be written to its counter"
                )
            }
        }
    }
}

impl From<MsrFault> for SwitchError {
    fn from(e: MsrFault) -> Self {
        SwitchError::Msr(e)
    }
}

impl From<VcError> for SwitchError {
    fn from(e: VcError) -> Self {
        SwitchError::Counters(e)
    }
}

/// A list of writes: the checked MSRs and their values.
#[derive(Clone, Debug)]
struct Writes<L> {
    list: L,
    values: [u64; LIST_MAX],
}

impl<L> Writes<L> {
    fn new<M: BatchMsr<List = L>>(msr: &M, writes: &[(u32, u64)]) -> Result<Self, SwitchError> {
        if writes.len() > LIST_MAX {
            return Err(SwitchError::TooLarge);
        }
        let mut msrs = [0u32; LIST_MAX];
        let mut values = [0u64; LIST_MAX];
        for (i, &(m, v)) in writes.iter().enumerate() {
            msrs[i] = m;
            values[i] = v;
        }
        Ok(Writes {
            list: msr.list(&msrs[..writes.len()])?,
            values,
        })
    }
}

/// The overflow status register, checked at every switch-out.
#[derive(Clone, Debug)]
struct Status<L> {
    status: u32,
    clear: L,
    /// Slot i's bit.
    bits: [u64; MAX_SLOTS],
    /// All the slots' bits.
    mask: u64,
    /// Slot i's counter and the status clear, written together when an overflow served in
    /// place rearms the slot ([`TaskSwitch::overflow_in_place`]).
    rearm: [Option<L>; MAX_SLOTS],
}

/// One task's switch, made from its plan once per configuration.
#[derive(Clone, Debug)]
pub struct TaskSwitch<L> {
    slots: usize,
    program: Writes<L>,
    /// Each slot's counter MSR (slot order), for the saved values.
    restore: L,
    /// Slot i's counter takes only sign-extended 32-bit values (Intel without FW_WRITE).
    legacy_write: [bool; MAX_SLOTS],
    /// Some slot's counter does (its saved value is checked at every switch-in that restores).
    any_legacy: bool,
    enable: Writes<L>,
    disable: Writes<L>,
    rdpmc: [u32; MAX_SLOTS],
    status: Option<Status<L>>,
}

/// Whether a legacy Intel counter write (bits 31:0, sign-extended) sets a `width`-bit counter
/// to `value`.
fn legacy_writable(value: u64, width: u8) -> bool {
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (value as u32 as i32 as i64 as u64) & mask == value
}

impl<L: Clone> TaskSwitch<L> {
    /// The switch for `plan` (its lists checked by `msr`).
    pub fn new<M: BatchMsr<List = L>>(msr: &M, plan: &SwitchPlan) -> Result<Self, SwitchError> {
        let slots = plan.rdpmc.len();
        if slots > MAX_SLOTS || plan.counter_write.len() != slots {
            return Err(SwitchError::TooLarge);
        }
        let mut restore = [0u32; MAX_SLOTS];
        let mut legacy_write = [false; MAX_SLOTS];
        for (i, &(m, full)) in plan.counter_write.iter().enumerate() {
            restore[i] = m;
            legacy_write[i] = !full;
        }
        let mut rdpmc = [0u32; MAX_SLOTS];
        rdpmc[..slots].copy_from_slice(&plan.rdpmc);
        let status = match &plan.overflow {
            Some(o) => {
                if o.bits.len() != slots {
                    return Err(SwitchError::TooLarge);
                }
                let mut bits = [0u64; MAX_SLOTS];
                bits[..slots].copy_from_slice(&o.bits);
                let mut rearm: [Option<L>; MAX_SLOTS] = core::array::from_fn(|_| None);
                for (i, r) in rearm.iter_mut().enumerate().take(slots) {
                    *r = Some(msr.list(&[restore[i], o.clear])?);
                }
                Some(Status {
                    status: o.status,
                    clear: msr.list(&[o.clear])?,
                    bits,
                    mask: o.bits.iter().fold(0, |a, b| a | b),
                    rearm,
                })
            }
            None => None,
        };
        Ok(TaskSwitch {
            slots,
            program: Writes::new(msr, &plan.program)?,
            restore: msr.list(&restore[..slots])?,
            legacy_write,
            any_legacy: legacy_write.iter().any(|&l| l),
            enable: Writes::new(msr, &plan.enable)?,
            disable: Writes::new(msr, &plan.disable)?,
            rdpmc,
            status,
        })
    }

    /// Switch-in: unless `loaded` (the counters still hold this task's events and the values
    /// it left), its events are loaded and its saved values written back; then its counters
    /// start and `vc` resumes (`tsc`: the virtual TSC's provisional start). `preset` (a
    /// diagnostic, 0: off) sets every counter that many events below its wrap instead.
    /// `vc` must be switched out and configured for this plan's slots. The three steps
    /// ([`prepare_in`](Self::prepare_in), `vc.resume_held`, [`write_in`](Self::write_in)) in
    /// one call.
    pub fn switch_in<M: BatchMsr<List = L>>(
        &self,
        msr: &mut M,
        vc: &mut VirtualCounters,
        loaded: bool,
        preset: u64,
        tsc: u64,
    ) -> Result<(), SwitchError> {
        let restore = self.prepare_in(vc, loaded, preset)?;
        vc.resume_held(tsc)?;
        self.write_in(msr, vc, restore)
    }

    /// The switch-in's decisions, before anything is written: whether the events and values
    /// must be loaded (not `loaded`, or a preset), and the rebases that needs (a value the
    /// counter cannot take, the preset). `vc` must be switched out. The runner publishes the
    /// page after this and resumes `vc`, then calls [`write_in`](Self::write_in) last, so the
    /// kernel's work between starting the counters and ring 3 stays short and the same.
    pub fn prepare_in(
        &self,
        vc: &mut VirtualCounters,
        loaded: bool,
        preset: u64,
    ) -> Result<bool, SwitchError> {
        if vc.len() != self.slots {
            return Err(SwitchError::Counters(VcError::Readings {
                expected: self.slots,
                got: vc.len(),
            }));
        }
        if preset == 0 && (loaded || !self.any_legacy) {
            return Ok(!loaded);
        }
        for (i, &legacy) in self.legacy_write.iter().enumerate().take(self.slots) {
            let width = vc.slots()[i].width;
            if preset != 0 {
                let wrap = if width >= 64 { 0 } else { 1u64 << width };
                let value = wrap.wrapping_sub(preset);
                if legacy && !legacy_writable(value, width) {
                    return Err(SwitchError::PresetUnwritable { slot: i });
                }
                vc.rebase(i, value)?;
            } else if legacy && !legacy_writable(vc.held()[i], width) {
                vc.rebase(i, 0)?;
            }
        }
        Ok(true)
    }

    /// The switch-in's writes: with `restore` (from [`prepare_in`](Self::prepare_in)) the
    /// events and `vc`'s saved values, then the start.
    pub fn write_in<M: BatchMsr<List = L>>(
        &self,
        msr: &mut M,
        vc: &VirtualCounters,
        restore: bool,
    ) -> Result<(), SwitchError> {
        if restore {
            msr.write_list(&self.program.list, &self.program.values)?;
            msr.write_list(&self.restore, vc.held())?;
        }
        msr.write_list(&self.enable.list, &self.enable.values)?;
        Ok(())
    }

    /// Whether [`overflow_in_place`](Self::overflow_in_place) can serve this plan: an overflow
    /// status register to tell which counters wrapped, and every counter writable with any
    /// value (no legacy 32-bit writes).
    pub fn serves_overflow_in_place(&self) -> bool {
        self.status.is_some() && !self.any_legacy
    }

    /// An overflow interrupt served with the counters running (module docs); every slot must
    /// count in ring 3 only (the counters run on meanwhile) and `vc` runs. Each slot whose
    /// status bit says it wrapped is read and folded at that reading (exact for fewer than
    /// 2^width events since its last fold, as at a switch-out); `rearm(slot, value, width)`
    /// then gives the raw value its counter must hold from now on (`None`: it keeps counting
    /// from the reading), written with the status clear. Returns the wrapped slots (bit `i`:
    /// slot `i`): 0 (nothing wrapped: not this task's overflow) changes nothing.
    pub fn overflow_in_place<M: BatchMsr<List = L>>(
        &self,
        msr: &mut M,
        vc: &mut VirtualCounters,
        mut rearm: impl FnMut(usize, u64, u8) -> Option<u64>,
    ) -> Result<u64, SwitchError> {
        let n = self.slots.min(vc.len());
        let Some(st) = self.status.as_ref().filter(|_| !self.any_legacy) else {
            return Ok(0);
        };
        let wrapped = msr.read(st.status)? & st.mask;
        if wrapped == 0 {
            return Ok(0);
        }
        let mut cleared = false;
        let mut slots = 0u64;
        for i in 0..n {
            if wrapped & st.bits[i] == 0 {
                continue;
            }
            slots |= 1 << i;
            let raw = msr.rdpmc(self.rdpmc[i])?;
            let Some((value, width)) = vc.fold_reading(i, raw, true) else {
                continue;
            };
            if let (Some(new), Some(list)) = (rearm(i, value, width), &st.rearm[i]) {
                vc.set_start(i, new);
                msr.write_list(list, &[vc.held()[i], wrapped])?;
                cleared = true;
            }
        }
        if !cleared {
            msr.write_list(&st.clear, &[wrapped])?;
        }
        Ok(slots)
    }

    /// Switch-out: the counters stop, each is read into `vc`'s saved values, `vc` suspends at
    /// `tsc`, and any counter that wrapped during the run is folded (and its status bit
    /// cleared). `vc.slots_version()` changes exactly when something was folded.
    pub fn switch_out<M: BatchMsr<List = L>>(
        &self,
        msr: &mut M,
        vc: &mut VirtualCounters,
        tsc: u64,
    ) -> Result<(), SwitchError> {
        let n = self.slots;
        if vc.len() != n {
            return Err(SwitchError::Counters(VcError::Readings {
                expected: n,
                got: vc.len(),
            }));
        }
        msr.write_list(&self.disable.list, &self.disable.values)?;
        match &self.status {
            Some(st) => {
                msr.rdpmc_list(&self.rdpmc[..n], vc.held_mut())?;
                vc.suspend_held(tsc)?;
                let wrapped = msr.read(st.status)? & st.mask;
                if wrapped != 0 {
                    for (i, &bit) in st.bits.iter().enumerate().take(n) {
                        if wrapped & bit != 0 {
                            vc.fold_wrapped(i)?;
                        }
                    }
                    msr.write_list(&st.clear, &[wrapped])?;
                }
            }
            None => {
                let mut raw = [0u64; MAX_SLOTS];
                msr.rdpmc_list(&self.rdpmc[..n], &mut raw)?;
                let mut wrapped = [false; MAX_SLOTS];
                for (i, w) in wrapped.iter_mut().enumerate().take(n) {
                    let width = vc.slots()[i].width;
                    let mask = if width >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << width) - 1
                    };
                    raw[i] &= mask;
                    *w = raw[i] < vc.held()[i];
                }
                vc.held_mut().copy_from_slice(&raw[..n]);
                vc.suspend_held(tsc)?;
                for (i, &w) in wrapped.iter().enumerate().take(n) {
                    if w {
                        vc.fold_wrapped(i)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use events::event::{EventSelect, Modifiers};

    use super::*;
    use crate::pmu::amd::AmdPmu;
    use crate::pmu::backend::{Counter, PmuBackend};
    use crate::pmu::intel::IntelArchPmu;
    use crate::pmu::msr::RecordingMsr;
    use crate::pmu::sim::{AmdFlavour, IntelConfig, SimPmu, WithEventMsrs};

    /// Every counter of the PMU: instructions on each GP counter (the first task) or branches
    /// (the second), and each fixed counter.
    fn all_slots(backend: &dyn PmuBackend, code: u16) -> Vec<(Counter, EventSelect, Modifiers)> {
        let caps = *backend.caps();
        let usr = Modifiers {
            usr: true,
            os: false,
            ..Modifiers::default()
        };
        let gp = (0..caps.gp_counters).map(|n| (Counter::Gp(n), EventSelect::new(code, 0), usr));
        let fixed = (0..16u8)
            .filter(|&i| caps.has_fixed(i))
            .map(|i| (Counter::Fixed(i), EventSelect::new(0, i + 1), usr));
        gp.chain(fixed).take(MAX_SLOTS).collect()
    }

    fn width(backend: &dyn PmuBackend, c: Counter) -> u8 {
        backend.width(c)
    }

    /// Two tasks with every counter of the PMU take turns (a task sometimes runs twice in a
    /// row: its counters are then still loaded); each run counts a different number of events
    /// on each counter, some runs close to 2^width, and the counters start near their wrap.
    /// Each task's 64-bit values must be exactly its own events, never the other's or the
    /// kernel's, through every wrap; and they must match the general protocol (`hwslots`) run
    /// on a second simulated PMU with the same events.
    fn time_share(backend: &mut dyn PmuBackend, sim: &mut SimPmu) {
        backend.reset(sim).unwrap();
        let plans: Vec<_> = [0xc0u16, 0xc4]
            .iter()
            .map(|&code| all_slots(backend, code))
            .collect();
        let n = plans[0].len();
        let mut tasks = [VirtualCounters::new(), VirtualCounters::new()];
        let mut switches = Vec::new();
        for (t, plan) in plans.iter().enumerate() {
            let widths: Vec<_> = plan.iter().map(|s| (s.0, width(backend, s.0))).collect();
            tasks[t].configure(&widths).unwrap();
            let sp = backend.switch_plan(plan).unwrap();
            assert_eq!(sp.rdpmc.len(), n);
            switches.push(TaskSwitch::new(sim, &sp).unwrap());
        }
        // The counters start a few events below their wrap.
        for (c, _, _) in &plans[0] {
            let w = width(backend, *c);
            backend.write(sim, *c, (1u64 << w) - 3).unwrap_or(());
        }
        let mut own = [[0u64; MAX_SLOTS]; 2];
        let mut loaded: Option<usize> = None;
        let mut tsc = 1u64 << 40;
        for round in 0..300u64 {
            let t = usize::from(round % 3 == 2);
            for (c, _, _) in &plans[t] {
                sim.count(*c, 11); // the kernel's: never counted
            }
            switches[t]
                .switch_in(sim, &mut tasks[t], loaded == Some(t), 0, tsc)
                .unwrap();
            loaded = Some(t);
            for (i, (c, _, _)) in plans[t].iter().enumerate() {
                assert!(sim.is_counting(*c), "round {round}: {c} enabled");
                let w = width(backend, *c);
                // Mostly small runs; every 7th run on slot 0 nearly a whole turn.
                let k = if round % 7 == 3 && i == 0 {
                    (1u64 << w) - 1 - round
                } else {
                    1 + (round * 7919 + i as u64 * 31) % 5000
                };
                sim.count(*c, k);
                own[t][i] = own[t][i].wrapping_add(k);
            }
            tsc += 100;
            switches[t].switch_out(sim, &mut tasks[t], tsc).unwrap();
            for (c, _, _) in &plans[t] {
                assert!(!sim.is_counting(*c), "round {round}: {c} stopped");
                sim.count(*c, 7);
            }
            tsc += 10;
            for (u, vc) in tasks.iter().enumerate() {
                for (i, &own) in own[u].iter().enumerate().take(n) {
                    assert_eq!(
                        vc.values().get(i),
                        Some(own),
                        "round {round}: task {u} slot {i}"
                    );
                }
            }
        }
        assert_eq!(tasks[0].values().tsc + tasks[1].values().tsc, 300 * 100);
    }

    /// Overflows served in place: a task with every counter runs, each counter wraps several
    /// times (slot 0 rearmed to overflow every 1000 events at each of its wraps, the others
    /// left counting); every value stays exactly the task's events, including after a
    /// switch-out, the status is cleared each time, and a call without a wrap changes nothing.
    fn overflow_in_place_keeps_values(backend: &mut dyn PmuBackend, sim: &mut SimPmu) {
        backend.reset(sim).unwrap();
        let plan = all_slots(backend, 0xc0);
        let n = plan.len();
        let widths: Vec<_> = plan.iter().map(|s| (s.0, width(backend, s.0))).collect();
        let mut vc = VirtualCounters::new();
        vc.configure(&widths).unwrap();
        let sp = backend.switch_plan(&plan).unwrap();
        let switch = TaskSwitch::new(sim, &sp).unwrap();
        assert!(switch.serves_overflow_in_place());
        // Every counter 5 events below its wrap.
        switch.switch_in(sim, &mut vc, false, 5, 0).unwrap();
        let mut own = [0u64; MAX_SLOTS];
        let none = switch
            .overflow_in_place(sim, &mut vc, |_, _, _| Some(0))
            .unwrap();
        assert_eq!(none, 0, "nothing wrapped: nothing done");
        let mut rearms = 0;
        for round in 0..50u64 {
            for (i, (c, _, _)) in plan.iter().enumerate() {
                let k = 7 + round * 13 + i as u64;
                sim.count(*c, k);
                own[i] += k;
            }
            let wrapped = switch
                .overflow_in_place(sim, &mut vc, |i, value, width| {
                    assert_eq!(value, own[i], "round {round}: slot {i} folded exactly");
                    (i == 0).then(|| {
                        rearms += 1;
                        ((1u64 << width) - 1000) & ((1u64 << width) - 1)
                    })
                })
                .unwrap();
            if wrapped != 0 {
                let st = switch.status.as_ref().unwrap();
                let status = crate::pmu::msr::Msr::read(sim, st.status).unwrap();
                assert_eq!(status & st.mask, 0, "round {round}");
            }
        }
        assert!(rearms > 5, "slot 0 wrapped and was rearmed: {rearms}");
        switch.switch_out(sim, &mut vc, 100).unwrap();
        for (i, &own) in own.iter().enumerate().take(n) {
            assert_eq!(vc.values().get(i), Some(own), "slot {i}");
        }
    }

    #[test]
    fn overflows_served_in_place_keep_every_value() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        overflow_in_place_keeps_values(&mut pmu, &mut sim);
        let mut sim = SimPmu::amd(AmdFlavour::PerfMonV2(6));
        let mut pmu = AmdPmu::new(sim.caps());
        overflow_in_place_keeps_values(&mut pmu, &mut sim);
        // Legacy writes or no status register: not served in place.
        for config in [IntelConfig::V2, IntelConfig::V1] {
            let sim = SimPmu::intel(config);
            let pmu = IntelArchPmu::new(sim.caps());
            let plan = all_slots(&pmu, 0xc0);
            let sp = pmu.switch_plan(&plan).unwrap();
            assert!(
                !TaskSwitch::new(&sim, &sp)
                    .unwrap()
                    .serves_overflow_in_place()
            );
        }
    }

    #[test]
    fn intel_v4_every_counter_time_shares_exactly() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        time_share(&mut pmu, &mut sim);
    }

    #[test]
    fn intel_v5_every_counter_time_shares_exactly() {
        let mut sim = SimPmu::intel(IntelConfig::V5);
        let mut pmu = IntelArchPmu::new(sim.caps());
        time_share(&mut pmu, &mut sim);
    }

    /// Without FW_WRITE the saved values above 2^31 cannot be written back: rebased to 0.
    #[test]
    fn intel_without_full_width_writes_time_shares_exactly() {
        for config in [IntelConfig::V2, IntelConfig::V3] {
            let mut sim = SimPmu::intel(config);
            let mut pmu = IntelArchPmu::new(sim.caps());
            time_share(&mut pmu, &mut sim);
        }
    }

    /// v1: no global control (EN in each event select) and no status (a wrap is a reading
    /// below the last).
    #[test]
    fn intel_v1_time_shares_exactly() {
        let mut sim = SimPmu::intel(IntelConfig::V1);
        let mut pmu = IntelArchPmu::new(sim.caps());
        time_share(&mut pmu, &mut sim);
    }

    #[test]
    fn amd_every_flavour_time_shares_exactly() {
        for flavour in [
            AmdFlavour::Legacy,
            AmdFlavour::ExtCore,
            AmdFlavour::PerfMonV2(6),
        ] {
            let mut sim = SimPmu::amd(flavour);
            let mut pmu = AmdPmu::new(sim.caps());
            time_share(&mut pmu, &mut sim);
        }
    }

    /// What a switch writes and reads on Intel v4 with every counter: the loaded switch-in is
    /// one write, the switch-out one write, one RDPMC per counter and the status read.
    #[test]
    fn intel_v4_switch_msr_sequence() {
        let sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        let mut msr = RecordingMsr::new(sim);
        pmu.reset(&mut msr).unwrap();
        let plan = all_slots(&pmu, 0xc0);
        let widths: Vec<_> = plan.iter().map(|s| (s.0, pmu.width(s.0))).collect();
        let mut vc = VirtualCounters::new();
        vc.configure(&widths).unwrap();
        let ts = TaskSwitch::new(&msr, &pmu.switch_plan(&plan).unwrap()).unwrap();
        msr.clear();
        ts.switch_in(&mut msr, &mut vc, false, 0, 1).unwrap();
        // 4 event selects, FIXED_CTR_CTRL, the status clear, 7 counters, GLOBAL_CTRL.
        assert_eq!(msr.writes().len(), 4 + 1 + 1 + 7 + 1);
        assert_eq!(msr.writes().last(), Some(&(0x38f, 0x7_0000_000f)));
        msr.clear();
        ts.switch_out(&mut msr, &mut vc, 2).unwrap();
        assert_eq!(msr.writes(), [(0x38f, 0)]);
        assert_eq!(msr.log.len(), 1 + 7 + 1, "{:?}", msr.log);
        msr.clear();
        ts.switch_in(&mut msr, &mut vc, true, 0, 3).unwrap();
        assert_eq!(msr.writes(), [(0x38f, 0x7_0000_000f)]);
        assert_eq!(msr.log.len(), 1);
    }

    /// An event's extra MSR (offcore response here) rides in the plan's `program` list, as
    /// `run::hw` adds it: written whenever the task's events are loaded after another task's,
    /// and not when they are still loaded.
    #[test]
    fn extra_msrs_are_written_where_the_events_are_loaded() {
        let sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        let mut msr = RecordingMsr::new(WithEventMsrs::new(sim));
        pmu.reset(&mut msr).unwrap();
        let slots = [(
            Counter::Gp(0),
            EventSelect::new(0xb7, 0x01),
            Modifiers::USER,
        )];
        let mut plan = pmu.switch_plan(&slots).unwrap();
        plan.program.push((0x1a6, 0x10001));
        let mut vc = VirtualCounters::new();
        vc.configure(&[(Counter::Gp(0), pmu.width(Counter::Gp(0)))])
            .unwrap();
        let ts = TaskSwitch::new(&msr, &plan).unwrap();
        msr.clear();
        ts.switch_in(&mut msr, &mut vc, false, 0, 1).unwrap();
        assert!(msr.writes().contains(&(0x1a6, 0x10001)), "{:?}", msr.log);
        assert_eq!(msr.inner.value(0x1a6), 0x10001);
        ts.switch_out(&mut msr, &mut vc, 2).unwrap();
        // Still loaded: the start only.
        msr.clear();
        ts.switch_in(&mut msr, &mut vc, true, 0, 3).unwrap();
        assert!(!msr.writes().iter().any(|&(m, _)| m == 0x1a6));
        ts.switch_out(&mut msr, &mut vc, 4).unwrap();
        // Another task's value in between: restored with the events.
        crate::pmu::msr::Msr::write(&mut msr, 0x1a6, 0x20002).unwrap();
        ts.switch_in(&mut msr, &mut vc, false, 0, 5).unwrap();
        assert_eq!(msr.inner.value(0x1a6), 0x10001);
    }

    /// The diagnostic preset: each switch-in sets the counters N below their wrap, so every run
    /// of more than N events wraps them; the values stay exact (without FW_WRITE too: 2^w - N
    /// is a sign-extended 32-bit value).
    #[test]
    fn preset_counters_wrap_every_run_and_stay_exact() {
        for config in [IntelConfig::V4_SKYLAKE, IntelConfig::V2] {
            let mut sim = SimPmu::intel(config);
            let mut pmu = IntelArchPmu::new(sim.caps());
            pmu.reset(&mut sim).unwrap();
            let plan = all_slots(&pmu, 0xc0);
            let widths: Vec<_> = plan.iter().map(|s| (s.0, pmu.width(s.0))).collect();
            let mut vc = VirtualCounters::new();
            vc.configure(&widths).unwrap();
            let ts = TaskSwitch::new(&sim, &pmu.switch_plan(&plan).unwrap()).unwrap();
            let mut own = 0u64;
            for round in 0..20u64 {
                ts.switch_in(&mut sim, &mut vc, round > 0, 100, round)
                    .unwrap();
                let k = 50 + round * 20;
                for (c, _, _) in &plan {
                    sim.count(*c, k);
                }
                own += k;
                ts.switch_out(&mut sim, &mut vc, round + 1).unwrap();
                for i in 0..plan.len() {
                    assert_eq!(vc.values().get(i), Some(own), "round {round} slot {i}");
                }
            }
        }
        assert!(legacy_writable((1 << 40) - 100, 40));
        assert!(legacy_writable(0x7fff_ffff, 48));
        assert!(!legacy_writable(0x8000_0000, 48));
        assert!(!legacy_writable(1 << 40, 48));
    }

    /// RDPMC in ring 3 reads any counter once CR4.PCE is set, not only the task's own
    /// (zoo-rdpmc with a counter read GP 1 and fixed 0). So a switch-in after another task's
    /// counters sets every counter the task does not own to 0: it cannot read the other's
    /// counts. The other task's counts are not lost: its own switch-in restores them.
    #[test]
    fn a_switch_in_hides_the_counts_of_other_tasks() {
        let backends: [(SimPmu, bool); 5] = [
            (SimPmu::intel(IntelConfig::V4_SKYLAKE), true),
            (SimPmu::intel(IntelConfig::V1), true),
            (SimPmu::amd(AmdFlavour::Legacy), false),
            (SimPmu::amd(AmdFlavour::ExtCore), false),
            (SimPmu::amd(AmdFlavour::PerfMonV2(6)), false),
        ];
        for (mut sim, intel) in backends {
            let mut intel_pmu;
            let mut amd_pmu;
            let pmu: &mut dyn PmuBackend = if intel {
                intel_pmu = IntelArchPmu::new(sim.caps());
                &mut intel_pmu
            } else {
                amd_pmu = AmdPmu::new(sim.caps());
                &mut amd_pmu
            };
            pmu.reset(&mut sim).unwrap();
            let all = all_slots(pmu, 0xc0);
            let one = [all[0]];
            let configure = |slots: &[(Counter, EventSelect, Modifiers)]| {
                let widths: Vec<_> = slots.iter().map(|s| (s.0, width(pmu, s.0))).collect();
                let mut vc = VirtualCounters::new();
                vc.configure(&widths).unwrap();
                vc
            };
            let (mut vc_a, mut vc_b) = (configure(&all), configure(&one));
            let a = TaskSwitch::new(&sim, &pmu.switch_plan(&all).unwrap()).unwrap();
            let b = TaskSwitch::new(&sim, &pmu.switch_plan(&one).unwrap()).unwrap();
            // A counts on every counter.
            a.switch_in(&mut sim, &mut vc_a, false, 0, 0).unwrap();
            for (c, _, _) in &all {
                sim.count(*c, 1000);
            }
            a.switch_out(&mut sim, &mut vc_a, 10).unwrap();
            // B, with one counter, finds every other counter at 0.
            b.switch_in(&mut sim, &mut vc_b, false, 0, 20).unwrap();
            for (c, _, _) in &all[1..] {
                assert_eq!(sim.value(*c), 0, "{c}: another task's count is visible");
            }
            sim.count(all[0].0, 5);
            b.switch_out(&mut sim, &mut vc_b, 30).unwrap();
            assert_eq!(vc_b.values().get(0), Some(5));
            // A's counts are its own again after its switch-in.
            a.switch_in(&mut sim, &mut vc_a, false, 0, 40).unwrap();
            for (c, _, _) in &all {
                sim.count(*c, 1);
            }
            a.switch_out(&mut sim, &mut vc_a, 50).unwrap();
            for i in 0..all.len() {
                assert_eq!(vc_a.values().get(i), Some(1001), "slot {i}");
            }
        }
    }

    /// A refused MSR comes back as an error (the runner then loses the counts).
    #[test]
    fn a_faulting_pmu_is_an_error() {
        let sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let pmu = IntelArchPmu::new(sim.caps());
        let mut plan = pmu.switch_plan(&all_slots(&pmu, 0xc0)).unwrap();
        plan.enable = alloc::vec![(0x1234_5678, 1)];
        let mut sim = sim;
        let ts = TaskSwitch::new(&sim, &plan).unwrap();
        let mut vc = VirtualCounters::new();
        let widths: Vec<_> = all_slots(&pmu, 0xc0)
            .iter()
            .map(|s| (s.0, pmu.width(s.0)))
            .collect();
        vc.configure(&widths).unwrap();
        assert!(matches!(
            ts.switch_in(&mut sim, &mut vc, false, 0, 0),
            Err(SwitchError::Msr(_))
        ));
    }
}

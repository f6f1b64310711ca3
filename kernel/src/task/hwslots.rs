//! The glue between a task's virtual counters and the PMU backend: what the task runner will do
//! with a task's hardware counters around each run in ring 3, written against the
//! [`PmuBackend`] trait so it is host-tested on the simulated PMU (`pmu::sim`).
//!
//! - [`program`] once per configuration: each slot's event loaded into its counter, stopped;
//! - [`start`] right before entering ring 3: read each counter (the `start` of the virtual
//!   counters, resumed by the runner after its virtual TSC reading), then enable them all at
//!   once ([`switch_in`] does both steps in one call);
//! - [`switch_out`] right after coming back: disable them all, then read (`sum += widen(now -
//!   start)`), so the kernel's own events between two runs are never the task's;
//! - [`release`] when the task ends or reconfigures;
//! - [`rdpmc_index`] for the counter page (the index + 1 is published, so the fast path reads the
//!   hardware counter itself while CR4.PCE is set).
//!
//! - [`parse_counter_config`] validates a task's `counters_configure` request into slots.
//!
//! `task::run` switches a task's counters with `hwswitch` (save and restore from the backend's
//! switch plan); `start` and `switch_out` here are its fallback for a backend without a plan,
//! and the reference the fast switch is tested against.

use alloc::vec::Vec;
use core::fmt;

use events::cpu::Vendor;
use events::event::{EventSelect, Modifiers};
use events::pmu::PmuCaps;

use super::abi::{EINVAL, ENODEV};
use super::vcounter::{VcError, VirtualCounters};
use crate::pmu::backend::{Counter, CounterSet, PmuBackend, PmuError, wr};
use crate::pmu::msr::Msr;
use crate::pmu::request::RequestError;

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
    /// The fast switch (`hwswitch`).
    Switch(super::hwswitch::SwitchError),
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::Pmu(e) => write!(f, "PMU: {e}"),
            HwError::Counters(e) => write!(f, "virtual counters: {e}"),
            HwError::Switch(e) => write!(f, "{e}"),
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

pub use crate::pmu::request::{FIXED_ENTRY, fixed_entry};

/// [`request::parse_request`](crate::pmu::request::parse_request) with its refusal as the
/// syscall ABI's error code: `ENODEV` without counters, `EINVAL` for anything else.
pub fn parse_counter_config(
    vendor: Vendor,
    caps: &PmuCaps,
    raw: &[u64],
) -> Result<Vec<(Counter, EventSelect, Modifiers, u8)>, i64> {
    crate::pmu::request::parse_request(vendor, caps, raw).map_err(|e| match e {
        RequestError::NoCounters => ENODEV,
        RequestError::Invalid => EINVAL,
    })
}

/// The slots of a parsed request (`parse_counter_config`), without their widths (the backend
/// gives those when they are programmed).
pub fn slots_of(parsed: Vec<(Counter, EventSelect, Modifiers, u8)>) -> Vec<HwSlot> {
    parsed
        .into_iter()
        .map(|(counter, select, modifiers, _)| HwSlot {
            counter,
            select,
            modifiers,
        })
        .collect()
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

/// The task runner's switch-in: the slots' counters are read (the virtual counters' resume
/// readings, returned) and started. The runner resumes the virtual counters with them after
/// its virtual TSC reading, so the kernel's own switching work is never the task's time.
pub fn start(
    backend: &mut dyn PmuBackend,
    msr: &mut dyn Msr,
    slots: &[HwSlot],
) -> Result<Vec<u64>, HwError> {
    let raw = read_all(backend, msr, slots)?;
    backend.enable(msr, counter_set(slots))?;
    Ok(raw)
}

/// [`start`], then the virtual counters resume at its readings and `tsc`: the runner's
/// switch-in in one call (it takes `tsc` between the two, `task::run::hw`).
pub fn switch_in(
    backend: &mut dyn PmuBackend,
    msr: &mut dyn Msr,
    slots: &[HwSlot],
    vc: &mut VirtualCounters,
    tsc: u64,
) -> Result<(), HwError> {
    let raw = start(backend, msr, slots)?;
    vc.resume(&raw, tsc)?;
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

/// Writes the extra MSRs a task's events need (`(msr, value)`: offcore response, load
/// latency, frontend; `pmu::regs::EXTRA_MSRS`), in order, through the kernel's MSR door
/// and its allow-list. The first write the CPU refuses is the error.
pub fn write_msrs(msr: &mut dyn Msr, msrs: &[(u32, u64)]) -> Result<(), PmuError> {
    for &(m, v) in msrs {
        wr(msr, m, v)?;
    }
    Ok(())
}

/// Clears the extra MSRs of a released configuration (0: what nanoBench leaves unwritten, and
/// an offcore-response event then counts nothing), so no later event inherits a value.
pub fn clear_msrs(msr: &mut dyn Msr, msrs: &[(u32, u64)]) -> Result<(), PmuError> {
    for &(m, _) in msrs {
        wr(msr, m, 0)?;
    }
    Ok(())
}

/// IRIX's add-to-parent for hardware counters: the child's counts are added to the parent's
/// only when both count the same events on the same counters. `VirtualCounters::add_child`
/// compares counters and widths only; a child that reprogrammed the same counters for other
/// events would otherwise have its counts added as if they were the parent's events.
pub fn add_child_counts(
    parent: &mut VirtualCounters,
    parent_hw: &[HwSlot],
    child: &VirtualCounters,
    child_hw: &[HwSlot],
) -> Result<(), VcError> {
    if parent_hw != child_hw {
        return Err(VcError::ConfigMismatch);
    }
    parent.add_child(child)
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
    use crate::pmu::request::MAX_SLOTS;
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

    const USR_OS: u64 = (1 << 16) | (1 << 17);

    #[test]
    fn extra_msrs_are_written_and_cleared_through_the_msr_door() {
        use crate::pmu::msr::RecordingMsr;
        use crate::pmu::sim::WithEventMsrs;
        let mut msr = RecordingMsr::new(WithEventMsrs::new(SimPmu::intel(IntelConfig::V4_SKYLAKE)));
        let msrs = [(0x1a6, 0x10001), (0x3f6, 0x10)];
        write_msrs(&mut msr, &msrs).unwrap();
        assert_eq!(msr.writes(), msrs);
        assert_eq!(msr.inner.value(0x3f6), 0x10);
        msr.clear();
        clear_msrs(&mut msr, &msrs).unwrap();
        assert_eq!(msr.writes(), [(0x1a6, 0), (0x3f6, 0)]);
        assert_eq!(msr.inner.value(0x1a6), 0);
        // A CPU without the MSR: #GP, named.
        let mut amd = SimPmu::amd(AmdFlavour::PerfMonV2(6));
        assert_eq!(
            write_msrs(&mut amd, &msrs),
            Err(PmuError::Msr {
                msr: 0x1a6,
                fault: crate::pmu::msr::MsrFault::GeneralProtection
            })
        );
        assert_eq!(write_msrs(&mut amd, &[]), Ok(()));
    }

    #[test]
    fn config_tsc_only_accepts_only_the_empty_list() {
        let caps = PmuCaps::tsc_only(Vendor::Intel, None);
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &[]),
            Ok(Vec::new())
        );
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &[0xc0 | USR_OS]),
            Err(ENODEV)
        );
        let caps = PmuCaps::tsc_only(Vendor::Amd, None);
        assert_eq!(
            parse_counter_config(Vendor::Amd, &caps, &[0x76 | USR_OS]),
            Err(ENODEV)
        );
    }

    #[test]
    fn config_intel_assigns_gp_counters_in_order_and_programs() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let caps = sim.caps();
        let raw = [0xc0 | USR_OS, 0x3c | (1 << 16), 0x01c2 | USR_OS | (2 << 24)];
        let parsed = parse_counter_config(Vendor::Intel, &caps, &raw).unwrap();
        assert_eq!(parsed.len(), 3);
        for (i, (counter, _, m, width)) in parsed.iter().enumerate() {
            assert_eq!(*counter, Counter::Gp(i as u8));
            assert_eq!(*width, caps.gp_width);
            assert!(m.usr);
        }
        assert_eq!(parsed[0].1, EventSelect::new(0xc0, 0));
        assert!(!parsed[1].2.os);
        assert_eq!((parsed[2].1.umask, parsed[2].1.cmask), (0x01, 2));
        // The backend takes them.
        let mut pmu = IntelArchPmu::new(caps);
        pmu.reset(&mut sim).unwrap();
        let slots = slots_of(parsed);
        let mut vc = VirtualCounters::new();
        program(&mut pmu, &mut sim, &slots, &mut vc).unwrap();
        assert_eq!(vc.len(), 3);
        switch_in(&mut pmu, &mut sim, &slots, &mut vc, 100).unwrap();
        sim.count(Counter::Gp(1), 42);
        switch_out(&mut pmu, &mut sim, &slots, &mut vc, 200).unwrap();
        assert_eq!(vc.values().get(1), Some(42));
        release(&mut pmu, &mut sim, &slots).unwrap();
    }

    #[test]
    fn config_amd_extended_event_codes_decode() {
        let sim = SimPmu::amd(AmdFlavour::PerfMonV2(6));
        let caps = sim.caps();
        // Event 0x1c0 (bits 11:8 at 35:32).
        let raw = [0xc0 | USR_OS | (1 << 32), 0x76 | USR_OS];
        let parsed = parse_counter_config(Vendor::Amd, &caps, &raw).unwrap();
        assert_eq!(parsed[0].1.code, 0x1c0);
        assert_eq!(parsed[1].0, Counter::Gp(1));
        // AnyThread (bit 21) and bit 19 are reserved on AMD.
        for bad in [1u64 << 21, 1 << 19, 1 << 63] {
            assert_eq!(
                parse_counter_config(Vendor::Amd, &caps, &[0x76 | USR_OS | bad]),
                Err(EINVAL)
            );
        }
    }

    #[test]
    fn config_rejects_en_int_reserved_bits_and_too_many_events() {
        let sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let caps = sim.caps();
        for bad in [
            1u64 << 22, // EN
            1 << 20,    // INT
            1 << 19,    // pin control
            1 << 34,    // reserved
            1 << 63,    // reserved
        ] {
            assert_eq!(
                parse_counter_config(Vendor::Intel, &caps, &[0xc0 | USR_OS | bad]),
                Err(EINVAL),
                "{bad:#x}"
            );
        }
        let n = usize::from(caps.gp_counters);
        let ok = alloc::vec![0xc0 | USR_OS; n];
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &ok).map(|v| v.len()),
            Ok(n)
        );
        let too_many = alloc::vec![0xc0 | USR_OS; n + 1];
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &too_many),
            Err(EINVAL)
        );
        let big = PmuCaps {
            gp_counters: 40,
            ..caps
        };
        let over = alloc::vec![0xc0 | USR_OS; MAX_SLOTS + 1];
        assert_eq!(
            parse_counter_config(Vendor::Intel, &big, &over),
            Err(EINVAL)
        );
    }

    #[test]
    fn config_fixed_entries_count_on_fixed_counters() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let caps = sim.caps();
        let user = Modifiers {
            os: false,
            ..Modifiers::default()
        };
        // instructions on fixed 0 (user only), a GP event, ref-cycles on fixed 2.
        let raw = [
            fixed_entry(0, &user),
            0x3c | USR_OS,
            fixed_entry(2, &Modifiers::default()),
        ];
        let parsed = parse_counter_config(Vendor::Intel, &caps, &raw).unwrap();
        assert_eq!(parsed[0].0, Counter::Fixed(0));
        assert_eq!(parsed[0].3, caps.fixed_width);
        assert!(parsed[0].2.usr && !parsed[0].2.os);
        assert_eq!(parsed[1].0, Counter::Gp(0), "GP entries number GP counters");
        assert_eq!(parsed[2].0, Counter::Fixed(2));
        let mut pmu = IntelArchPmu::new(caps);
        pmu.reset(&mut sim).unwrap();
        let slots = slots_of(parsed);
        let mut vc = VirtualCounters::new();
        program(&mut pmu, &mut sim, &slots, &mut vc).unwrap();
        switch_in(&mut pmu, &mut sim, &slots, &mut vc, 0).unwrap();
        sim.count(Counter::Fixed(0), 1000);
        sim.count(Counter::Fixed(2), 77);
        switch_out(&mut pmu, &mut sim, &slots, &mut vc, 10).unwrap();
        assert_eq!(vc.values().get(0), Some(1000));
        assert_eq!(vc.values().get(2), Some(77));
        assert_eq!(
            rdpmc_index(&pmu, &slots, Counter::Fixed(2)),
            Some((1 << 30) | 2)
        );
        release(&mut pmu, &mut sim, &slots).unwrap();
        // Refused: a fixed counter twice, one the PMU lacks, reserved bits, on AMD.
        let twice = [fixed_entry(1, &user), fixed_entry(1, &user)];
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &twice),
            Err(EINVAL)
        );
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &[fixed_entry(7, &user)]),
            Err(EINVAL)
        );
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &[fixed_entry(0, &user) | (1 << 20)]),
            Err(EINVAL)
        );
        let amd = SimPmu::amd(AmdFlavour::PerfMonV2(6)).caps();
        assert_eq!(
            parse_counter_config(Vendor::Amd, &amd, &[fixed_entry(0, &user)]),
            Err(EINVAL)
        );
        // Fixed entries do not use up GP counters.
        let mut many = alloc::vec![0xc0 | USR_OS; usize::from(caps.gp_counters)];
        many.push(fixed_entry(1, &user));
        assert!(parse_counter_config(Vendor::Intel, &caps, &many).is_ok());
    }

    #[test]
    fn config_refuses_events_counting_at_no_privilege_level() {
        // Neither USR nor OS: the counter would count 0 forever and report it as a count.
        let caps = SimPmu::intel(IntelConfig::V4_SKYLAKE).caps();
        let none = Modifiers {
            usr: false,
            os: false,
            ..Modifiers::default()
        };
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &[0xc0]),
            Err(EINVAL)
        );
        assert_eq!(
            parse_counter_config(Vendor::Intel, &caps, &[fixed_entry(0, &none)]),
            Err(EINVAL)
        );
        let amd = SimPmu::amd(AmdFlavour::PerfMonV2(6)).caps();
        assert_eq!(
            parse_counter_config(Vendor::Amd, &amd, &[0x76]),
            Err(EINVAL)
        );
        // An all-zero GP entry stays what it is: an unused counter between used ones.
        let parsed = parse_counter_config(Vendor::Intel, &caps, &[0, 0xc0 | USR_OS]).unwrap();
        assert_eq!(parsed[1].0, Counter::Gp(1));
    }

    #[test]
    fn a_child_counting_other_events_on_the_same_counters_is_not_added() {
        // The parent counts instructions and cycles; the child reconfigured the same two GP
        // counters for branches and cache misses: same counters and widths, other events.
        let parent_hw = [slot(Counter::Gp(0), 0xc0, 0), slot(Counter::Gp(1), 0x3c, 0)];
        let child_hw = [
            slot(Counter::Gp(0), 0xc4, 0),
            slot(Counter::Gp(1), 0x2e, 0x41),
        ];
        let configure = |hw: &[HwSlot]| {
            let mut vc = VirtualCounters::new();
            vc.configure(&hw.iter().map(|s| (s.counter, 48)).collect::<Vec<_>>())
                .unwrap();
            vc
        };
        let mut parent = configure(&parent_hw);
        let child = configure(&child_hw);
        assert_eq!(
            add_child_counts(&mut parent, &parent_hw, &child, &child_hw),
            Err(VcError::ConfigMismatch)
        );
        // The same events (the child inherited them) are added.
        let twin = configure(&parent_hw);
        assert_eq!(
            add_child_counts(&mut parent, &parent_hw, &twin, &parent_hw),
            Ok(())
        );
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

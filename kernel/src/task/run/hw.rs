//! A task's hardware counters around its runs in ring 3: switched in right before every entry
//! to ring 3 and switched out right after every return (tasks share the counters).
//!
//! The switch is `hwswitch`'s save and restore from the MSR lists the backend made when the
//! task configured its events ([`Running::make_switch`]; the events' extra MSRs, e.g. offcore
//! response, are written with the event selects): no backend call, no PMU lock, no
//! allocation. A switch-in whose counters still hold the task's events and values (no other
//! task's switch, no configuration, no release since its switch-out: `PROGRAMMED_FOR`) only
//! starts them. Should the backend give no plan, the general protocol of `hwslots` runs instead
//! (program, read, start; stop, read, fold).
//!
//! # Lost counts
//!
//! If the PMU refuses a switch (an MSR faults, a counter is missing), or an extra MSR of the
//! events when they are configured (`bench_group`), the counts of that run cannot be known, and
//! neither can any sum that includes them. The task's counts are then
//! *lost* until it starts them again (`counters_configure` or `counters_reset`): its counters
//! are released, its slots frozen (the virtual TSC goes on: it needs no PMU), the counter page
//! publishes the slots as not readable (`index` 0 while the task runs, so the SDK's fast read
//! falls back to `counters_read`), `counters_read` returns `ECOUNTERS`, the SDK's slot reader
//! goes to its abort path and gets `ECOUNTERS` too, any other RDPMC of a lost slot ends the
//! task with a fault saying so, a benchmark group given samples (or ended) after the
//! loss is reported "not measured", and one `error` record says why. Nothing is ever published as a count that was not counted.
//!
//! # Diagnostics (run.cfg, test-only)
//!
//! - `counter_preset = N`: at every switch-in each of the task's counters is preset to N events
//!   below its wrap (2^width - N), so every run longer than N events wraps it and the 64-bit
//!   virtual counts must widen across the wrap (tests/tests/emulated_tasks.rs).
//! - `test_pmu_fault = N`: the N-th switch-in of task hardware counters in the run fails as if
//!   the PMU had refused it, to prove the lost-counts path end to end.
//! - `test_smis = N`: right after each `bench_begin` the kernel raises N SMIs through the APM
//!   control port, to prove that SMIs in a benchmark are counted (tests/tests/platform.rs).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use baremark_hw::msr::WriteList;

use super::super::hwslots::{self, HwError};
use super::super::hwswitch::TaskSwitch;
use super::Running;
use crate::pmu::backend::PmuError;
use crate::pmu::machine::HwMsr;

/// The run's diagnostic settings for task counters (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Preset every counter this many events below its wrap at each switch-in (0: never).
    pub counter_preset: u64,
    /// Fail the N-th switch-in of task hardware counters (0: never).
    pub fault_at_switch_in: u32,
    /// SMIs to raise after each `bench_begin` (0: none).
    pub smis_per_bench: u32,
}

static COUNTER_PRESET: AtomicU64 = AtomicU64::new(0);
static FAULT_AT: AtomicU32 = AtomicU32::new(0);
static SMIS_PER_BENCH: AtomicU32 = AtomicU32::new(0);
/// Switch-ins of task hardware counters so far in the run.
static SWITCH_INS: AtomicU32 = AtomicU32::new(0);

/// Sets the run's diagnostics (before the payloads run).
pub fn set_diagnostics(d: Diagnostics) {
    COUNTER_PRESET.store(d.counter_preset, Ordering::Relaxed);
    FAULT_AT.store(d.fault_at_switch_in, Ordering::Relaxed);
    SMIS_PER_BENCH.store(d.smis_per_bench, Ordering::Relaxed);
    SWITCH_INS.store(0, Ordering::Relaxed);
}

/// The diagnostic `test_smis`: raises the configured number of SMIs (after `bench_begin`).
pub(super) fn raise_test_smis() {
    for _ in 0..SMIS_PER_BENCH.load(Ordering::Relaxed) {
        baremark_hw::port::raise_apm_smi(0);
    }
}

/// Whose events and values the counters hold: the [`HwSwitch::id`] whose switch-in loaded them
/// last (its switch-out left them stopped, holding the task's values), 0 once anything else may
/// have touched them (another switch, a release, a configuration, a failed switch). A task
/// switched back in with its counters still loaded only starts them.
/// Per CPU (each CPU's counters are its own).
static PROGRAMMED_FOR: [AtomicU64; crate::task::settings::PIN_CPU_MAX] =
    [const { AtomicU64::new(0) }; crate::task::settings::PIN_CPU_MAX];

/// This CPU's `PROGRAMMED_FOR`.
fn programmed_for() -> &'static AtomicU64 {
    &PROGRAMMED_FOR[crate::platform::cpus::current()]
}
/// The next [`HwSwitch::id`].
static NEXT_SWITCH_ID: AtomicU64 = AtomicU64::new(1);

/// The counters may no longer hold any task's events (`PROGRAMMED_FOR`).
pub(super) fn forget_programming() {
    programmed_for().store(0, Ordering::Relaxed);
}

/// A task's fast switch (`hwswitch`), with an identity for `PROGRAMMED_FOR`: one per
/// configuration of one task.
#[derive(Debug)]
pub(super) struct HwSwitch {
    id: u64,
    pub(super) switch: TaskSwitch<WriteList>,
    /// The backend unmasks LVTPC after a PMI (asked once, for `sample`'s acknowledgement).
    pub(super) unmask_lvtpc: bool,
    /// An overflow can be served in place (`sample`): the switch can (`TaskSwitch::
    /// serves_overflow_in_place`) and no slot counts in ring 0.
    pub(super) in_place: bool,
}

impl HwSwitch {
    /// The same lists under a new identity (a spawned child's counters are its own).
    pub(super) fn copy(&self) -> Box<HwSwitch> {
        Box::new(HwSwitch {
            id: NEXT_SWITCH_ID.fetch_add(1, Ordering::Relaxed),
            switch: self.switch.clone(),
            unmask_lvtpc: self.unmask_lvtpc,
            in_place: self.in_place,
        })
    }
}

/// `test_pmu_fault` is set: every switch goes through the switch-ins it counts.
pub(super) fn faults_injected() -> bool {
    FAULT_AT.load(Ordering::Relaxed) != 0
}

/// The injected failure of this switch-in, if `test_pmu_fault` names it.
fn injected_fault() -> Option<HwError> {
    let at = FAULT_AT.load(Ordering::Relaxed);
    if at == 0 {
        return None;
    }
    let n = SWITCH_INS.fetch_add(1, Ordering::Relaxed) + 1;
    (n == at).then_some(HwError::Pmu(PmuError::NotSupported(
        "failure injected by run.cfg test_pmu_fault",
    )))
}

fn no_pmu() -> HwError {
    HwError::Pmu(PmuError::NotSupported("no PMU"))
}

impl Running {
    /// Whether the task's counters live in hardware counters while it runs (then ring 3 may
    /// execute RDPMC itself: CR4.PCE): it configured events on a PMU and their counts are not
    /// lost.
    pub(super) fn uses_hardware_counters(&self) -> bool {
        !self.hw.is_empty() && self.hw_lost.is_none()
    }

    /// The task has counter slots but they do not count (their counts were lost).
    pub(super) fn has_frozen_slots(&self) -> bool {
        !self.hw.is_empty() && self.hw_lost.is_some()
    }

    /// Stops and clears the task's hardware counters and their extra MSRs (it ended or
    /// reconfigures).
    pub(super) fn release_hw(&mut self) {
        if self.hw.is_empty() {
            return;
        }
        forget_programming();
        let (hw, msrs) = (&self.hw, &self.hw_msrs);
        let _ = crate::pmu::machine::with_pmu(|pmu, msr| {
            let _ = hwslots::clear_msrs(msr, msrs);
            hwslots::release(pmu.backend.as_mut(), msr, hw)
        });
    }

    /// The task's counts are lost (module docs): its counters are released and an `error`
    /// record says why. (An open benchmark's group is marked when the task hands samples taken
    /// since, or ends it: samples handed before the loss are exact.)
    pub(super) fn lose_counts(&mut self, e: HwError) {
        self.lose_counts_because(format!(
            "switching the task's hardware counters failed: {e}"
        ));
    }

    /// [`lose_counts`](Self::lose_counts) for `reason`.
    pub(super) fn lose_counts_because(&mut self, reason: String) {
        self.release_hw();
        super::records::task_error(
            self.task,
            &format!(
                "{reason}: its counts are lost until counters_configure or counters_reset; \
                 they are reported as not counted"
            ),
        );
        crate::say!("task   {}: counts lost: {reason}", self.task.name);
        self.hw_lost = Some(String::from(reason.as_str()));
    }

    /// The fast switch for the task's slots as configured now (after `counters_configure`):
    /// the backend's plan, its MSR lists checked once, with the events' extra MSRs written
    /// where the plan loads the events. `None` (the general protocol then runs) if the backend
    /// gives no plan.
    pub(super) fn make_switch(&mut self) {
        let slots: Vec<_> = self
            .hw
            .iter()
            .map(|s| (s.counter, s.select, s.modifiers))
            .collect();
        let plan = crate::pmu::machine::with_pmu(|pmu, _| {
            (
                pmu.backend.switch_plan(&slots),
                pmu.backend.pmi_unmasks_lvtpc(),
            )
        });
        self.hw_switch = match plan {
            Some((Ok(mut plan), unmask_lvtpc)) => {
                // The counters are stopped while `program` is written: order does not matter.
                plan.program.extend_from_slice(&self.hw_msrs);
                let ring3_only = slots.iter().all(|s| !s.2.os);
                TaskSwitch::new(&HwMsr, &plan).ok().map(|switch| {
                    Box::new(HwSwitch {
                        id: NEXT_SWITCH_ID.fetch_add(1, Ordering::Relaxed),
                        in_place: ring3_only && switch.serves_overflow_in_place(),
                        switch,
                        unmask_lvtpc,
                    })
                })
            }
            _ => None,
        };
    }

    /// Fast switch-in (`hwswitch`), first step: the decisions and the rebases they need
    /// (`Some(restore)`), then the virtual counters resume at `tsc` (the provisional start).
    /// `None` without a fast switch, or when it failed: the counts are then lost and the
    /// virtual counters resume frozen. [`write_in_hw`](Self::write_in_hw) follows, last
    /// thing before ring 3.
    pub(super) fn prepare_in_hw(&mut self, tsc: u64) -> Option<bool> {
        let hs = self.hw_switch.as_deref()?;
        let loaded = programmed_for().load(Ordering::Relaxed) == hs.id;
        let preset = COUNTER_PRESET.load(Ordering::Relaxed);
        match hs.switch.prepare_in(&mut self.vc, loaded, preset) {
            Ok(restore) => {
                let _ = self.vc.resume_held(tsc);
                Some(restore)
            }
            Err(e) => {
                self.fail_switch_in(HwError::Switch(e), tsc);
                None
            }
        }
    }

    /// Fast switch-in, second step: the MSR writes (events and values with `restore`, then the
    /// start). Whether the counters run (CR4.PCE); on a PMU error the counts are lost (the
    /// virtual counters go on frozen).
    pub(super) fn write_in_hw(&mut self, restore: bool, tsc: u64) -> bool {
        let Some(hs) = self.hw_switch.as_deref() else {
            return false;
        };
        let result = match injected_fault() {
            Some(e) => Err(e),
            None => hs
                .switch
                .write_in(&mut HwMsr, &self.vc, restore)
                .map_err(HwError::Switch),
        };
        match result {
            Ok(()) => {
                programmed_for().store(hs.id, Ordering::Relaxed);
                true
            }
            Err(e) => {
                self.fail_switch_in(e, tsc);
                false
            }
        }
    }

    fn fail_switch_in(&mut self, e: HwError, tsc: u64) {
        forget_programming();
        self.lose_counts(e);
        if !self.vc.is_running() {
            self.resume_frozen(tsc);
        }
    }

    /// Fast switch-out (`hwswitch`) at `tsc`. On a PMU error the counts are lost.
    pub(super) fn switch_out_hw_fast(&mut self, tsc: u64) {
        let Some(hs) = self.hw_switch.as_deref() else {
            return;
        };
        if let Err(e) = hs.switch.switch_out(&mut HwMsr, &mut self.vc, tsc) {
            forget_programming();
            if self.vc.is_running() {
                let _ = self.vc.suspend_held(tsc);
            }
            self.lose_counts(HwError::Switch(e));
        }
    }

    /// Switch-in of a task with hardware counters by the general protocol (no fast switch):
    /// its events are loaded into its counters, then `hwslots::start` (read, enable). The
    /// readings, for [`resume_hw`](Self::resume_hw); `None` on a PMU error: the counts are lost
    /// (the virtual counters then resume frozen).
    pub(super) fn start_hw(&mut self) -> Option<Vec<u64>> {
        let preset = COUNTER_PRESET.load(Ordering::Relaxed);
        let (hw, msrs) = (&self.hw, &self.hw_msrs);
        forget_programming();
        let result = match injected_fault() {
            Some(e) => Err(e),
            None => crate::pmu::machine::with_pmu(|pmu, msr| {
                let backend = pmu.backend.as_mut();
                hwslots::write_msrs(msr, msrs)?;
                for s in hw {
                    backend.program(msr, s.counter, &s.select, &s.modifiers)?;
                    if preset != 0 {
                        let width = backend.width(s.counter);
                        let wrap = if width >= 64 { 0 } else { 1u64 << width };
                        backend.write(msr, s.counter, wrap.wrapping_sub(preset))?;
                    }
                }
                hwslots::start(backend, msr, hw)
            })
            .unwrap_or(Err(no_pmu())),
        };
        match result {
            Ok(raw) => Some(raw),
            Err(e) => {
                self.lose_counts(e);
                None
            }
        }
    }

    /// The virtual counters resume at the readings of [`start_hw`](Self::start_hw) and `tsc`.
    pub(super) fn resume_hw(&mut self, raw: &[u64], tsc: u64) {
        if let Err(e) = self.vc.resume(raw, tsc) {
            self.lose_counts(HwError::Counters(e));
            if !self.vc.is_running() {
                self.resume_frozen(tsc);
            }
        }
    }

    /// Switch-out of a task with hardware counters: `hwslots::switch_out` (disable, read,
    /// suspend). On a PMU error the counts are lost and the virtual counters suspend adding
    /// nothing.
    pub(super) fn switch_out_hw(&mut self, tsc: u64) {
        let (hw, vc) = (&self.hw, &mut self.vc);
        let result = crate::pmu::machine::with_pmu(|pmu, msr| {
            hwslots::switch_out(pmu.backend.as_mut(), msr, hw, vc, tsc)
        })
        .unwrap_or(Err(no_pmu()));
        if let Err(e) = result {
            if self.vc.is_running() {
                let _ = self.vc.suspend(&self.vc.held_readings(), tsc);
            }
            self.lose_counts(e);
        }
    }

    /// Resume and suspend of a task whose slots are frozen: the virtual TSC runs, the slots add
    /// nothing.
    pub(super) fn resume_frozen(&mut self, tsc: u64) {
        let _ = self.vc.resume(&self.vc.held_readings(), tsc);
    }

    pub(super) fn suspend_frozen(&mut self, tsc: u64) {
        let _ = self.vc.suspend(&self.vc.held_readings(), tsc);
    }
}

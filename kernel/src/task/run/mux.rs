//! Time-multiplexing a task's events (docs/syscall-abi.md, "Multiplexing"; the arithmetic is
//! `task::mux`). A task that configures more GP events than the PMU has GP counters, with
//! `CONFIGURE_MULTIPLEX`, gets its events in groups that take turns on the counters: the active
//! group is an ordinary configuration (`configure_events`, the fast switch, widening); when it
//! has run `mux_interval_us` of the task's virtual TSC, the kernel folds its counts and running
//! time into the task's [`Mux`] and loads the next group (`rotate_if_due`, before the task's
//! next run; the APIC timer is armed for it, `Running::run_watched`). All of it is kernel time:
//! the task's virtual TSC (its *enabled* time) never includes it.
//!
//! A multiplexed task's counts are read with `counters_read` (raw counts) or
//! `counters_read_scaled` (raw, enabled, running per event); its counter page publishes the
//! slots as not readable (RDPMC would read one group's counter, not the event's count).

use alloc::format;
use alloc::vec::Vec;

use events::pmu::PmuKind;

use super::super::abi::{ENODEV, ENOSPC};
use super::super::hwslots::{self, FIXED_ENTRY};
use super::super::mux::{Mux, scaled, split_groups};
use super::Running;
use crate::output::console::record;
use crate::say;

impl Running {
    /// `counters_configure(ptr, count, CONFIGURE_MULTIPLEX)` with the entries `raw`: one group
    /// when they fit (an ordinary configuration), else groups taking turns. The generation, or
    /// an error code (the old configuration stays).
    pub(super) fn configure_multiplexed(&mut self, raw: &[u64]) -> i64 {
        let caps = crate::pmu::machine::with_pmu(|pmu, _| *pmu.backend.caps());
        let Some(caps) = caps.filter(|c| c.kind != PmuKind::TscOnly) else {
            return ENODEV;
        };
        let fixed: Vec<bool> = raw.iter().map(|w| w & FIXED_ENTRY != 0).collect();
        let groups = split_groups(&fixed, usize::from(caps.gp_counters));
        // Every group must configure on its own (the same checks as without multiplexing).
        for g in &groups {
            let words: Vec<u64> = g.iter().map(|&i| raw[i]).collect();
            if let Err(code) = hwslots::parse_counter_config(caps.vendor, &caps, &words) {
                return code;
            }
        }
        if groups.len() == 1 {
            self.mux = None;
            return self.configure_events(raw, &[]);
        }
        let first: Vec<u64> = groups[0].iter().map(|&i| raw[i]).collect();
        let generation = self.configure_events(&first, &[]);
        if generation < 0 {
            return generation;
        }
        self.mux = Some(alloc::boxed::Box::new(Mux::new(raw.to_vec(), groups)));
        // One group's counter is not the event's count: ring 3 reads by syscall.
        self.hw_rdpmc.iter_mut().for_each(|r| *r = None);
        generation
    }

    /// TSC ticks of the task's run until its active group has had its turn (`None`: not
    /// multiplexed).
    pub(super) fn mux_left(&self) -> Option<u64> {
        let m = self.mux.as_deref()?;
        let ran = self.vc.values().tsc.saturating_sub(m.loaded_at);
        Some(mux_interval_tsc(self.tsc_hz).saturating_sub(ran).max(1))
    }

    /// Loads the next group if the active one has had its turn (before the task's next run).
    pub(super) fn rotate_if_due(&mut self) {
        // Before every run: nothing but this test for a task that is not multiplexed.
        if self.mux.is_none() {
            return;
        }
        let interval = mux_interval_tsc(self.tsc_hz);
        let Some(m) = self.mux.as_deref_mut() else {
            return;
        };
        let values = self.vc.values();
        if values.tsc.saturating_sub(m.loaded_at) < interval || self.hw_lost.is_some() {
            return;
        }
        let next = m.rotate(values.counters(), values.tsc);
        let words: Vec<u64> = m.groups[next].iter().map(|&i| m.words[i]).collect();
        if let Err(e) = self.load_group(&words) {
            self.lose_counts_because(format!("loading the next group of its events failed: {e}"));
        }
    }

    /// The group `words` on the counters, its slots counting from 0, the virtual TSC and the
    /// generation going on.
    fn load_group(&mut self, words: &[u64]) -> Result<(), &'static str> {
        super::hw::forget_programming();
        let old = core::mem::take(&mut self.hw);
        let vc = &mut self.vc;
        let result = crate::pmu::machine::with_pmu(|pmu, msr| {
            let backend = pmu.backend.as_mut();
            let caps = *backend.caps();
            let slots = hwslots::slots_of(
                hwslots::parse_counter_config(caps.vendor, &caps, words)
                    .map_err(|_| "the group does not configure")?,
            );
            let _ = hwslots::release(backend, msr, &old);
            let widths: Vec<_> = slots
                .iter()
                .map(|s| (s.counter, backend.width(s.counter)))
                .collect();
            vc.regroup(&widths)
                .map_err(|_| "the virtual counters refused")?;
            for s in &slots {
                backend
                    .program(msr, s.counter, &s.select, &s.modifiers)
                    .map_err(|_| "the PMU refused an event select")?;
            }
            Ok(slots)
        })
        .unwrap_or(Err("no PMU"))?;
        self.hw_rdpmc = alloc::vec![None; result.len()];
        self.hw = result;
        self.make_switch();
        Ok(())
    }

    /// Per event: raw count, running time, and the enabled time (the virtual TSC), as of the
    /// last switch-out. `None`: not multiplexed.
    pub(super) fn mux_totals(&self) -> Option<(Vec<u64>, Vec<u64>, u64)> {
        let m = self.mux.as_deref()?;
        let values = self.vc.values();
        let (raw, running) = m.totals(values.counters(), values.tsc);
        Some((raw, running, values.tsc))
    }

    /// `counters_read` of a multiplexed task: the raw counts of every event.
    pub(super) fn mux_read_buffer(&self, len: u64) -> Option<Result<Vec<u8>, i64>> {
        let (raw, _, tsc) = self.mux_totals()?;
        Some(super::super::abi::counters_buffer(
            self.vc.generation(),
            tsc,
            &raw,
            len,
        ))
    }

    /// `counters_read_scaled(ptr, len)`: `{generation, tsc, n, [raw, enabled, running] x n}`
    /// (docs/syscall-abi.md); also for a configuration that is not multiplexed (running =
    /// enabled).
    pub(super) fn counters_read_scaled(&mut self, ptr: u64, len: u64) -> i64 {
        let (raw, running, enabled) = match self.mux_totals() {
            Some(t) => t,
            None => {
                let v = self.vc.values();
                (
                    v.counters().to_vec(),
                    alloc::vec![v.tsc; v.counters().len()],
                    v.tsc,
                )
            }
        };
        let n = raw.len();
        let need = 8 * (3 + 3 * n as u64);
        if len < need {
            return ENOSPC;
        }
        let mut out = Vec::with_capacity(need as usize);
        for w in [self.vc.generation(), enabled, n as u64] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for i in 0..n {
            for w in [raw[i], enabled, running[i]] {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        match self.copy_out(ptr, &out) {
            0 => n as i64,
            e => e,
        }
    }

    /// The multiplexed configuration ends (reconfigured, or the task ends): a
    /// `multiplexed_counts` record with every event's raw count, running and
    /// enabled time and estimate.
    pub(super) fn report_mux(&self) {
        let Some((raw, running, enabled)) = self.mux_totals() else {
            return;
        };
        let Some(m) = self.mux.as_deref() else {
            return;
        };
        let task = self.task;
        let estimates: Vec<Option<u64>> = (0..raw.len())
            .map(|i| scaled(raw[i], enabled, running[i]))
            .collect();
        record("multiplexed_counts", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .u64("groups", m.groups.len() as u64)
                .u64("rotations", m.rotations)
                .u64("enabled", enabled)
                .u64_array("events", &m.words)
                .u64_array("raw", &raw)
                .u64_array("running", &running)
                .u64_array(
                    "scaled",
                    &estimates.iter().map(|e| e.unwrap_or(0)).collect::<Vec<_>>(),
                )
                .str_array(
                    "counted",
                    estimates
                        .iter()
                        .map(|e| if e.is_some() { "yes" } else { "never-ran" }),
                )
                .opt_str("counters_lost", self.hw_lost.as_deref())
        });
        for i in 0..raw.len() {
            let share = if enabled == 0 {
                0.0
            } else {
                running[i] as f64 * 100.0 / enabled as f64
            };
            match estimates[i] {
                Some(est) => say!(
                    "mux    {}: {:#x}: {} counted, scaled {est} ({share:.2}%)",
                    task.name,
                    m.words[i],
                    raw[i]
                ),
                None => say!(
                    "mux    {}: {:#x}: <not counted> (its group never ran)",
                    task.name,
                    m.words[i]
                ),
            }
        }
    }
}

/// The group turn in TSC ticks (run.cfg `mux_interval_us`; at an unknown TSC frequency, 1 GHz is
/// assumed).
fn mux_interval_tsc(tsc_hz: Option<u64>) -> u64 {
    let us = u128::from(super::policy::mux_interval_us());
    let ticks = us * u128::from(tsc_hz.unwrap_or(1_000_000_000)) / 1_000_000;
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}

//! AMD core performance counters: legacy, PerfCtrExtCore and PerfMonV2 (AMD APM vol. 2,
//! "Performance Monitoring Counters"; Linux `arch/x86/events/amd/core.c`;
//! ../shared/reference/pmu-facts.md).
//!
//! # Registers
//!
//! | kind                 | counters | CTLn                  | CTRn                  | global |
//! |----------------------|----------|-----------------------|-----------------------|--------|
//! | legacy               | 4        | 0xC0010000 + n        | 0xC0010004 + n        | none   |
//! | PerfCtrExtCore       | 6        | 0xC0010200 + 2n       | 0xC0010201 + 2n       | none   |
//! | PerfMonV2            | CPUID 0x80000022 EBX[3:0] | 0xC0010200 + 2n | 0xC0010201 + 2n | GlobalCtl 0xC0000301, GlobalStatus 0xC0000300, StatusClr 0xC0000302 |
//!
//! Counters are 48 bits wide and written at full width (a value of 2^48 or more is refused with
//! [`PmuError::ValueTooWide`]). There are no fixed counters: `Counter::Fixed(_)` is
//! [`PmuError::NoSuchCounter`]. RDPMC reads core counter n with ECX = n.
//!
//! # How counting is gated
//!
//! - **Legacy / PerfCtrExtCore**: by PERF_CTL.En alone. [`PmuBackend::program`] writes the control
//!   with En = 0, [`PmuBackend::enable`] rewrites it (from the shadow) with En = 1,
//!   [`PmuBackend::disable`] with En = 0.
//! - **PerfMonV2**: `program` writes PERF_CTL with En = 1 and the counter's PerfCntrGlobalCtl bit
//!   starts and stops it ([`AmdPmu::reset`] clears GlobalCtl first).
//!
//! INT (bit 20) is set by `program` exactly when `modifiers.int`; [`PmuBackend::arm_period`] only
//! presets the count.
//!
//! # Overflow
//!
//! - **Legacy / PerfCtrExtCore** have no status register. A counter is *armed* when its value was
//!   last set with bit 47 set (by `arm_period`, which writes `(-P) & (2^48 - 1)`, or by `write` of
//!   such a value, e.g. -1); an armed counter whose bit 47 reads 0 has wrapped, i.e. overflowed.
//!   `handle_pmi` reads the armed counters and reports (and disarms) those; an NMI arriving after
//!   that finds nothing and is reported as spurious, as Linux expects of late AMD NMIs.
//! - **PerfMonV2**: PerfCntrGlobalStatus bits, cleared by writing them to PerfCntrGlobalStatusClr.
//!   `handle_pmi`: GlobalCtl = 0, read GlobalStatus, write the bits read to StatusClr, restore
//!   GlobalCtl (no loop: Linux's `amd_pmu_v2_handle_irq` has none).
//!
//! AMD does not mask LVTPC when it delivers a PMI, so [`PmuBackend::pmi_unmasks_lvtpc`] is false.
//!
//! Periods: `1 <= P < 2^47` (Linux's AMD `max_period`). Every counter write happens with the
//! counter stopped (stop, write, restart when it was running).

use events::encode;
use events::event::{EventSelect, Modifiers};
use events::pmu::{PmuCaps, PmuKind};

use super::backend::{Counter, CounterSet, PmiEvent, PmuBackend, PmuError, rd, wr};
use super::msr::Msr;
use super::regs::amd as r;
use super::switch::SwitchPlan;

/// PERF_CTL.En.
const EN: u64 = encode::bits::EN;
/// Legacy PERF_CTL0-3.
const LEGACY_COUNTERS: u8 = 4;
/// PerfCtrExtCore counters.
const EXT_CORE_COUNTERS: u8 = 6;
/// PerfMonV2: EBX[3:0] gives at most 15; GlobalCtl could hold more, but the MSR layout past 16
/// would run into other registers.
const MAX_COUNTERS: u8 = 16;

fn width_mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn top_bit(width: u8) -> u64 {
    match width {
        0 => 0,
        w if w >= 64 => 1 << 63,
        w => 1 << (w - 1),
    }
}

/// Which register layout the PMU has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// `caps` was not an AMD kind: no counters.
    None,
    Legacy,
    ExtCore,
    PerfMonV2,
}

/// The AMD backend.
#[derive(Clone, Debug)]
pub struct AmdPmu {
    caps: PmuCaps,
    layout: Layout,
    count: u8,
    width: u8,
    /// PERF_CTLn as programmed: En clear without PerfMonV2 (enable ORs it in), set with it.
    ctl: [u64; MAX_COUNTERS as usize],
    /// Counters holding an event (bit n = counter n).
    programmed: u32,
    /// Running counters: PerfMonV2 the shadow of GlobalCtl; otherwise counters with CTL.En set.
    enabled: u32,
    /// Without PerfMonV2: counters whose overflow is watched (bit 47 set when last written).
    armed: u32,
}

impl AmdPmu {
    /// The backend for `caps` (kind `AmdLegacy`, `AmdExtCore` or `AmdPerfMonV2`; anything else
    /// gives a backend with no counters). Touches no MSR: call [`AmdPmu::reset`] before using it.
    pub fn new(caps: PmuCaps) -> AmdPmu {
        let layout = match caps.kind {
            PmuKind::AmdLegacy => Layout::Legacy,
            PmuKind::AmdExtCore => Layout::ExtCore,
            PmuKind::AmdPerfMonV2 => Layout::PerfMonV2,
            _ => Layout::None,
        };
        let width = caps.gp_width.min(64);
        let count = match layout {
            _ if width == 0 => 0,
            Layout::None => 0,
            Layout::Legacy => caps.gp_counters.min(LEGACY_COUNTERS),
            Layout::ExtCore => caps.gp_counters.min(EXT_CORE_COUNTERS),
            Layout::PerfMonV2 => caps.gp_counters.min(MAX_COUNTERS),
        };
        AmdPmu {
            caps,
            layout,
            count,
            width,
            ctl: [0; MAX_COUNTERS as usize],
            programmed: 0,
            enabled: 0,
            armed: 0,
        }
    }

    /// Whether the PMU has the PerfMonV2 global registers.
    pub fn has_global(&self) -> bool {
        self.layout == Layout::PerfMonV2
    }

    /// The counters currently running (as this backend started them).
    pub fn enabled(&self) -> CounterSet {
        CounterSet {
            gp: self.enabled,
            fixed: 0,
        }
    }

    /// The largest period `arm_period` accepts: 2^(width-1) - 1 (2^47 - 1).
    pub fn max_period(&self) -> u64 {
        top_bit(self.width).saturating_sub(1)
    }

    /// Puts the PMU in a known state: GlobalCtl = 0 (PerfMonV2), every PERF_CTL = 0 and
    /// PERF_CTR = 0, and GlobalStatus cleared (the bits read are written to StatusClr). The shadows
    /// are reset first.
    pub fn reset(&mut self, msr: &mut dyn Msr) -> Result<(), PmuError> {
        self.ctl = [0; MAX_COUNTERS as usize];
        self.programmed = 0;
        self.enabled = 0;
        self.armed = 0;
        if self.has_global() {
            wr(msr, r::GLOBAL_CTL, 0)?;
        }
        for n in 0..self.count {
            wr(msr, self.ctl_msr(n), 0)?;
            wr(msr, self.ctr_msr(n), 0)?;
        }
        if self.has_global() {
            let status = rd(msr, r::GLOBAL_STATUS)?;
            if status != 0 {
                wr(msr, r::GLOBAL_STATUS_CLR, status)?;
            }
        }
        Ok(())
    }

    fn ctl_msr(&self, n: u8) -> u32 {
        match self.layout {
            Layout::Legacy | Layout::None => r::PERF_CTL0 + u32::from(n),
            Layout::ExtCore | Layout::PerfMonV2 => r::EXT_CTL0 + 2 * u32::from(n),
        }
    }

    fn ctr_msr(&self, n: u8) -> u32 {
        match self.layout {
            Layout::Legacy | Layout::None => r::PERF_CTR0 + u32::from(n),
            Layout::ExtCore | Layout::PerfMonV2 => r::EXT_CTR0 + 2 * u32::from(n),
        }
    }

    fn counter_mask(&self) -> u32 {
        if self.count >= 32 {
            u32::MAX
        } else {
            (1u32 << self.count) - 1
        }
    }

    /// The GP index of an existing counter.
    fn index(&self, counter: Counter) -> Result<u8, PmuError> {
        match counter {
            Counter::Gp(n) if n < self.count => Ok(n),
            _ => Err(PmuError::NoSuchCounter(counter)),
        }
    }

    /// The GP bits of `set`, if every counter in it exists.
    fn bits_of(&self, set: CounterSet) -> Result<u32, PmuError> {
        let extra = CounterSet {
            gp: set.gp & !self.counter_mask(),
            fixed: set.fixed,
        };
        match extra.iter().next() {
            Some(c) => Err(PmuError::NoSuchCounter(c)),
            None => Ok(set.gp),
        }
    }

    fn start(&mut self, msr: &mut dyn Msr, bits: u32) -> Result<(), PmuError> {
        let start = bits & self.programmed & !self.enabled;
        if start == 0 {
            return Ok(());
        }
        if self.has_global() {
            let new = self.enabled | start;
            wr(msr, r::GLOBAL_CTL, u64::from(new))?;
            self.enabled = new;
        } else {
            for n in 0..self.count {
                if start & (1 << n) != 0 {
                    let value = self.ctl.get(usize::from(n)).copied().unwrap_or(0) | EN;
                    wr(msr, self.ctl_msr(n), value)?;
                    self.enabled |= 1 << n;
                }
            }
        }
        Ok(())
    }

    fn stop(&mut self, msr: &mut dyn Msr, bits: u32) -> Result<(), PmuError> {
        let stop = bits & self.enabled;
        if stop == 0 {
            return Ok(());
        }
        if self.has_global() {
            let new = self.enabled & !stop;
            wr(msr, r::GLOBAL_CTL, u64::from(new))?;
            self.enabled = new;
        } else {
            for n in 0..self.count {
                if stop & (1 << n) != 0 {
                    let value = self.ctl.get(usize::from(n)).copied().unwrap_or(0) & !EN;
                    wr(msr, self.ctl_msr(n), value)?;
                    self.enabled &= !(1 << n);
                }
            }
        }
        Ok(())
    }

    /// Writes a checked value to counter `n`, stopping it around the write if it runs.
    fn write_stopped(&mut self, msr: &mut dyn Msr, n: u8, value: u64) -> Result<(), PmuError> {
        let bit = 1u32 << n;
        let running = self.enabled & bit != 0;
        if running {
            self.stop(msr, bit)?;
        }
        let written = wr(msr, self.ctr_msr(n), value);
        if running {
            let restarted = self.start(msr, bit);
            written?;
            restarted?;
        } else {
            written?;
        }
        Ok(())
    }

    /// Without PerfMonV2: the armed counters whose top bit has cleared.
    fn topbit_overflowed(&self, msr: &mut dyn Msr) -> Result<u32, PmuError> {
        let top = top_bit(self.width);
        let mut over = 0;
        for n in 0..self.count {
            if self.armed & (1 << n) != 0 && rd(msr, self.ctr_msr(n))? & top == 0 {
                over |= 1 << n;
            }
        }
        Ok(over)
    }
}

impl PmuBackend for AmdPmu {
    fn reset(&mut self, msr: &mut dyn Msr) -> Result<(), PmuError> {
        AmdPmu::reset(self, msr)
    }

    fn name(&self) -> &'static str {
        match self.layout {
            Layout::None => "amd-none",
            Layout::Legacy => "amd-legacy",
            Layout::ExtCore => "amd-perfctr-core",
            Layout::PerfMonV2 => "amd-perfmon-v2",
        }
    }

    fn caps(&self) -> &PmuCaps {
        &self.caps
    }

    fn width(&self, counter: Counter) -> u8 {
        match self.index(counter) {
            Ok(_) => self.width,
            Err(_) => 0,
        }
    }

    fn all_counters(&self) -> CounterSet {
        CounterSet {
            gp: self.counter_mask(),
            fixed: 0,
        }
    }

    fn program(
        &mut self,
        msr: &mut dyn Msr,
        counter: Counter,
        select: &EventSelect,
        modifiers: &Modifiers,
    ) -> Result<(), PmuError> {
        let n = self.index(counter)?;
        let value =
            encode::amd_perf_ctl(select, modifiers, self.has_global()).map_err(PmuError::Encode)?;
        let bit = 1u32 << n;
        if self.has_global() {
            self.stop(msr, bit)?;
        }
        // Without PerfMonV2 En = 0 in `value`, so this write also stops a running counter.
        wr(msr, self.ctl_msr(n), value)?;
        if let Some(slot) = self.ctl.get_mut(usize::from(n)) {
            *slot = value;
        }
        self.programmed |= bit;
        self.enabled &= !bit;
        self.armed &= !bit;
        Ok(())
    }

    fn release(&mut self, msr: &mut dyn Msr, counter: Counter) -> Result<(), PmuError> {
        let n = self.index(counter)?;
        let bit = 1u32 << n;
        if self.has_global() {
            self.stop(msr, bit)?;
        }
        wr(msr, self.ctl_msr(n), 0)?;
        if let Some(slot) = self.ctl.get_mut(usize::from(n)) {
            *slot = 0;
        }
        self.programmed &= !bit;
        self.enabled &= !bit;
        self.armed &= !bit;
        Ok(())
    }

    /// Counters in `set` that hold no event are ignored.
    fn enable(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        let bits = self.bits_of(set)?;
        self.start(msr, bits)
    }

    fn disable(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        let bits = self.bits_of(set)?;
        self.stop(msr, bits)
    }

    fn read(&mut self, msr: &mut dyn Msr, counter: Counter) -> Result<u64, PmuError> {
        let n = self.index(counter)?;
        Ok(rd(msr, self.ctr_msr(n))? & width_mask(self.width))
    }

    fn write(&mut self, msr: &mut dyn Msr, counter: Counter, value: u64) -> Result<(), PmuError> {
        let n = self.index(counter)?;
        if value > width_mask(self.width) {
            return Err(PmuError::ValueTooWide {
                value,
                max_bits: self.width,
            });
        }
        self.write_stopped(msr, n, value)?;
        if value & top_bit(self.width) != 0 {
            self.armed |= 1 << n;
        } else {
            self.armed &= !(1 << n);
        }
        Ok(())
    }

    fn arm_period(
        &mut self,
        msr: &mut dyn Msr,
        counter: Counter,
        period: u64,
    ) -> Result<(), PmuError> {
        let n = self.index(counter)?;
        let max = self.max_period();
        if period == 0 || period > max {
            return Err(PmuError::PeriodOutOfRange { period, max });
        }
        self.write_stopped(msr, n, period.wrapping_neg() & width_mask(self.width))?;
        self.armed |= 1 << n;
        Ok(())
    }

    fn overflow_status(&mut self, msr: &mut dyn Msr) -> Result<CounterSet, PmuError> {
        let gp = if self.has_global() {
            (rd(msr, r::GLOBAL_STATUS)? as u32) & self.counter_mask()
        } else {
            self.topbit_overflowed(msr)?
        };
        Ok(CounterSet { gp, fixed: 0 })
    }

    fn ack_overflow(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        let bits = self.bits_of(set)?;
        if self.has_global() {
            if bits != 0 {
                wr(msr, r::GLOBAL_STATUS_CLR, u64::from(bits))?;
            }
        } else {
            self.armed &= !bits;
        }
        Ok(())
    }

    fn handle_pmi(&mut self, msr: &mut dyn Msr) -> Result<PmiEvent, PmuError> {
        if !self.has_global() {
            let over = self.topbit_overflowed(msr)?;
            self.armed &= !over;
            return Ok(PmiEvent {
                overflowed: CounterSet { gp: over, fixed: 0 },
                other_status: 0,
            });
        }
        let saved = u64::from(self.enabled);
        wr(msr, r::GLOBAL_CTL, 0)?;
        let found = (|| -> Result<u64, PmuError> {
            let status = rd(msr, r::GLOBAL_STATUS)?;
            if status != 0 {
                wr(msr, r::GLOBAL_STATUS_CLR, status)?;
            }
            Ok(status)
        })();
        let restored = wr(msr, r::GLOBAL_CTL, saved);
        let status = found?;
        restored?;
        let counters = u64::from(self.counter_mask());
        Ok(PmiEvent {
            overflowed: CounterSet {
                gp: (status & counters) as u32,
                fixed: 0,
            },
            other_status: status & !counters,
        })
    }

    fn pmi_unmasks_lvtpc(&self) -> bool {
        false
    }

    fn rdpmc_index(&self, counter: Counter) -> Option<u32> {
        self.index(counter).ok().map(u32::from)
    }

    /// PerfMonV2: the controls (En set) and the slots' status bits cleared, one GlobalCtl
    /// write to start (the slots' bits) or stop (0) them. Legacy / PerfCtrExtCore: the controls
    /// with En clear, rewritten with En set to start and clear to stop. Every counter that is
    /// not a slot's is set to 0 with the controls.
    fn switch_plan(
        &self,
        slots: &[(Counter, EventSelect, Modifiers)],
    ) -> Result<SwitchPlan, PmuError> {
        let global = self.has_global();
        let mut plan = SwitchPlan::default();
        let mut bits = 0u32;
        for (counter, select, modifiers) in slots {
            let n = self.index(*counter)?;
            if bits & (1 << n) != 0 {
                return Err(PmuError::WrongCounter(*counter));
            }
            bits |= 1 << n;
            let value =
                encode::amd_perf_ctl(select, modifiers, global).map_err(PmuError::Encode)?;
            let ctl = self.ctl_msr(n);
            if global {
                plan.program.push((ctl, value));
            } else {
                plan.gate_by_enable_bit(ctl, value, EN);
            }
            plan.counter_write.push((self.ctr_msr(n), true));
            plan.rdpmc.push(u32::from(n));
        }
        // Every other counter to 0 (stopped: not this task's): with CR4.PCE set for this task,
        // RDPMC in ring 3 reads any counter, and the others would still hold the counts of the
        // task that used them last. Written only when the counters held another task's events.
        for n in (0..self.count).filter(|&n| bits & (1 << n) == 0) {
            plan.program.push((self.ctr_msr(n), 0));
        }
        if global {
            plan.gate_globally(
                r::GLOBAL_CTL,
                r::GLOBAL_STATUS,
                r::GLOBAL_STATUS_CLR,
                slots
                    .iter()
                    .map(|(c, _, _)| match c {
                        Counter::Gp(n) => 1u64 << n,
                        Counter::Fixed(_) => 0,
                    })
                    .collect(),
            );
        }
        Ok(plan)
    }
}

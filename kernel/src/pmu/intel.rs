//! Intel architectural performance monitoring, versions 1 to 5 (SDM vol. 3B, "Architectural
//! Performance Monitoring"; Linux `arch/x86/events/intel/core.c`; ../shared/reference/pmu-facts.md).
//!
//! # Registers
//!
//! | what                  | MSR              | notes                                              |
//! |-----------------------|------------------|----------------------------------------------------|
//! | GP counter n          | IA32_PMCn 0xC1+n | reads give the full width; writes keep bits 31:0 sign-extended |
//! | GP counter n, full    | IA32_A_PMCn 0x4C1+n | with PERF_CAPABILITIES.FW_WRITE only; a wider value is #GP |
//! | event select n        | PERFEVTSELn 0x186+n |                                                  |
//! | fixed counter i       | FIXED_CTRi 0x309+i | written at full width                            |
//! | fixed control         | 0x38D            | 4 bits per fixed counter (OS, USR, AnyThread, PMI) |
//! | global status/ctrl    | 0x38E / 0x38F    | v2+: GP bit n, fixed bit 32+i                      |
//! | status reset          | 0x390            | v2+: write 1s to clear status bits                 |
//!
//! # How counting is gated
//!
//! - **v1** has no global registers: a counter runs exactly when its PERFEVTSEL.EN is set.
//!   [`PmuBackend::program`] writes the event select with EN = 0, [`PmuBackend::enable`] rewrites
//!   it with EN = 1 and [`PmuBackend::disable`] with EN = 0 again (from the shadow copy: no
//!   read-modify-write). There are no fixed counters.
//! - **v2+**: `program` writes PERFEVTSEL with EN = 1 (or the fixed counter's 4-bit field), and
//!   the counter is started and stopped by its IA32_PERF_GLOBAL_CTRL bit alone, so a set of
//!   counters starts and stops with one WRMSR. [`IntelArchPmu::reset`] must have cleared
//!   GLOBAL_CTRL first (many parts come out of reset with the GP enable bits set).
//!
//! # Overflow interrupt (INT)
//!
//! `program` sets INT (PERFEVTSEL bit 20, or the PMI bit of the fixed field) exactly when
//! `modifiers.int` is set; [`PmuBackend::arm_period`] only presets the count. A period armed on
//! a counter programmed without `int` overflows into GLOBAL_STATUS (v2+) without a PMI, which
//! polling with [`PmuBackend::overflow_status`] can see.
//!
//! # Overflow detection
//!
//! - **v2+**: IA32_PERF_GLOBAL_STATUS bits, cleared through 0x390.
//! - **v1** has no status register. A counter is *armed* when its value was last set (by
//!   `arm_period`, or by `write` of a value with the top bit set, such as -1) with the top bit
//!   (bit width-1) set; an armed counter whose top bit reads 0 has wrapped past 2^width, i.e.
//!   overflowed (what Linux's generic handler checks). `ack_overflow` and `handle_pmi` disarm
//!   the counters they report, so a late PMI finds nothing (spurious) until the counter is armed
//!   again; `program`, `release` and a write of a value with the top bit clear disarm too.
//!
//! # Writes and periods
//!
//! Every counter write happens with the counter stopped: if it was running it is stopped, written
//! and restarted (three WRMSRs). GP counters are written through IA32_A_PMCx when
//! `caps.full_width_write` (a value of 2^width or more is refused with
//! [`PmuError::ValueTooWide`] instead of letting the WRMSR #GP), else through IA32_PMCx, which
//! keeps bits 31:0 and sign-extends them: a value is accepted only when it survives that, i.e.
//! `value == sext32(value) & mask(width)` (else `ValueTooWide { max_bits: 32 }`). Fixed counters
//! are written directly at their full width.
//!
//! `arm_period(P)` writes `(-P) & mask(width)` and needs `1 <= P < 2^(width-1)` so that the
//! overflow is unambiguous (top bit set when armed). For a GP counter without FW_WRITE the limit is
//! `P < 2^31` (P <= 2^31 - 1, Linux's `max_period` for the legacy alias): then -P has bit 31 set
//! and the sign extension reproduces it exactly. Fixed counters are always written at full width,
//! so their limit is `2^(fixed_width-1)`.
//!
//! # PMI (v2+), Linux's sequence
//!
//! Save the GLOBAL_CTRL shadow; GLOBAL_CTRL = 0; read GLOBAL_STATUS; write the bits read to 0x390;
//! re-read, and repeat while counter bits keep appearing (at most [`PMI_MAX_ROUNDS`] rounds; other
//! bits that appear meanwhile are written to 0x390 once more without another round); restore
//! GLOBAL_CTRL. Counter bits are reported as overflowed, anything else (CondChgd, DS buffer, ...)
//! as `other_status`; both are cleared. The kernel unmasks LVTPC afterwards
//! ([`PmuBackend::pmi_unmasks_lvtpc`] is true: Intel masks it on delivery) and signals EOI.
//!
//! Counter indices: at most 32 GP counters (the GLOBAL_* layout) and fixed counters 0-15 (the 16
//! fields of FIXED_CTR_CTRL); anything CPUID reports beyond is ignored. A width of 0 means no such
//! counters; widths above 64 are treated as 64.

use events::cpu::Vendor;
use events::encode::{self, EncodeError, Field, FixedCtrl};
use events::event::{EventSelect, Modifiers};
use events::pmu::PmuCaps;

use super::backend::{Counter, CounterSet, PmiEvent, PmuBackend, PmuError, rd, wr};
use super::msr::Msr;
use super::regs::intel as r;
use super::switch::SwitchPlan;

/// At most this many GP counters (GLOBAL_CTRL bits 31:0).
const MAX_GP: u8 = 32;
/// Fixed counters 0..16 (FIXED_CTR_CTRL has 16 four-bit fields).
const MAX_FIXED_MASK: u32 = 0xffff;
/// PERFEVTSEL.EN.
const EN: u64 = encode::bits::EN;
/// Largest period the legacy (sign-extending) IA32_PMCx alias can take: 2^31 - 1.
pub const LEGACY_MAX_PERIOD: u64 = (1 << 31) - 1;
/// The PMI handler acknowledges GLOBAL_STATUS at most this many times before giving up (new
/// overflows keep arriving only if a period is absurdly short).
pub const PMI_MAX_ROUNDS: usize = 4;

/// `2^width - 1` (all ones for width >= 64).
pub(crate) fn width_mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The top bit of a `width`-bit counter (0 for width 0).
pub(crate) fn top_bit(width: u8) -> u64 {
    match width {
        0 => 0,
        w if w >= 64 => 1 << 63,
        w => 1 << (w - 1),
    }
}

/// What a WRMSR of `value` to the legacy IA32_PMCx alias leaves in a `width`-bit counter: bits
/// 31:0 sign-extended, masked to the width.
pub(crate) fn legacy_write_result(value: u64, width: u8) -> u64 {
    (value as u32 as i32 as i64 as u64) & width_mask(width)
}

fn set_and(a: CounterSet, b: CounterSet) -> CounterSet {
    CounterSet {
        gp: a.gp & b.gp,
        fixed: a.fixed & b.fixed,
    }
}

fn set_minus(a: CounterSet, b: CounterSet) -> CounterSet {
    CounterSet {
        gp: a.gp & !b.gp,
        fixed: a.fixed & !b.fixed,
    }
}

/// Whether fixed counter `index` counts `sel` (code and unit mask; the caller checks it is plain).
/// Each fixed counter takes the perfmon pseudo encoding (code 0, umask index + 1); FC0, FC1 and FC3
/// also take the architectural event they count.
fn fixed_counts(index: u8, sel: &EventSelect) -> bool {
    let pseudo = sel.code == 0 && u16::from(sel.umask) == u16::from(index) + 1;
    let architectural = matches!(
        (index, sel.code, sel.umask),
        (0, 0xc0, 0x00) | (1, 0x3c, 0x00) | (3, 0xa4, 0x01)
    );
    pseudo || architectural
}

/// The Intel architectural PMU backend.
#[derive(Clone, Debug)]
pub struct IntelArchPmu {
    caps: PmuCaps,
    /// Architectural version (0: `caps` was not Intel architectural; no counters).
    version: u8,
    gp_count: u8,
    gp_width: u8,
    fixed_mask: u32,
    fixed_width: u8,
    /// PERFEVTSELn as programmed: EN clear on v1 (enable ORs it in), set on v2+.
    evtsel: [u64; MAX_GP as usize],
    /// Shadow of IA32_FIXED_CTR_CTRL.
    fixed_ctrl: u64,
    /// Counters holding an event.
    programmed: CounterSet,
    /// Running counters: v2+ the shadow of IA32_PERF_GLOBAL_CTRL; v1 the counters whose
    /// PERFEVTSEL.EN is set.
    enabled: CounterSet,
    /// v1: counters whose overflow is watched (top bit set when last written).
    armed: CounterSet,
}

impl IntelArchPmu {
    /// The backend for `caps` (its kind must be `IntelArch`; anything else gives a backend with
    /// no counters). Touches no MSR: call [`IntelArchPmu::reset`] before using it.
    pub fn new(caps: PmuCaps) -> IntelArchPmu {
        let version = caps.intel_version().unwrap_or(0);
        let gp_width = caps.gp_width.min(64);
        let fixed_width = caps.fixed_width.min(64);
        let gp_count = if version == 0 || gp_width == 0 {
            0
        } else {
            caps.gp_counters.min(MAX_GP)
        };
        let fixed_mask = if version < 2 || fixed_width == 0 {
            0
        } else {
            caps.fixed_mask & MAX_FIXED_MASK
        };
        IntelArchPmu {
            caps,
            version,
            gp_count,
            gp_width,
            fixed_mask,
            fixed_width,
            evtsel: [0; MAX_GP as usize],
            fixed_ctrl: 0,
            programmed: CounterSet::EMPTY,
            enabled: CounterSet::EMPTY,
            armed: CounterSet::EMPTY,
        }
    }

    /// The architectural version this backend drives (0 when `caps` was not Intel).
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Whether the PMU has the global control/status registers (v2+).
    pub fn has_global(&self) -> bool {
        self.version >= 2
    }

    /// The counters currently running (as this backend started them).
    pub fn enabled(&self) -> CounterSet {
        self.enabled
    }

    /// Puts the PMU in a known state: GLOBAL_CTRL = 0 (v2+), FIXED_CTR_CTRL = 0, every
    /// PERFEVTSEL = 0 and counter = 0, and GLOBAL_STATUS cleared (the bits read are written to
    /// 0x390). The shadows are reset first, so they say "all stopped" even if a write faults.
    pub fn reset(&mut self, msr: &mut dyn Msr) -> Result<(), PmuError> {
        self.evtsel = [0; MAX_GP as usize];
        self.fixed_ctrl = 0;
        self.programmed = CounterSet::EMPTY;
        self.enabled = CounterSet::EMPTY;
        self.armed = CounterSet::EMPTY;
        if self.has_global() {
            wr(msr, r::PERF_GLOBAL_CTRL, 0)?;
            if self.fixed_mask != 0 {
                wr(msr, r::FIXED_CTR_CTRL, 0)?;
            }
        }
        for n in 0..self.gp_count {
            wr(msr, r::PERFEVTSEL0 + u32::from(n), 0)?;
            wr(msr, self.gp_write_msr(n), 0)?;
        }
        for i in self.fixed_indices() {
            wr(msr, r::FIXED_CTR0 + u32::from(i), 0)?;
        }
        if self.has_global() {
            let status = rd(msr, r::PERF_GLOBAL_STATUS)?;
            if status != 0 {
                wr(msr, r::PERF_GLOBAL_OVF_CTRL, status)?;
            }
        }
        Ok(())
    }

    fn fixed_indices(&self) -> impl Iterator<Item = u8> + use<> {
        let mask = self.fixed_mask;
        (0..16u8).filter(move |i| mask & (1 << i) != 0)
    }

    fn gp_write_msr(&self, n: u8) -> u32 {
        if self.caps.full_width_write {
            r::A_PMC0 + u32::from(n)
        } else {
            r::PMC0 + u32::from(n)
        }
    }

    fn check(&self, counter: Counter) -> Result<(), PmuError> {
        if self.all_counters().contains(counter) {
            Ok(())
        } else {
            Err(PmuError::NoSuchCounter(counter))
        }
    }

    fn check_set(&self, set: CounterSet) -> Result<(), PmuError> {
        let extra = set_minus(set, self.all_counters());
        match extra.iter().next() {
            Some(c) => Err(PmuError::NoSuchCounter(c)),
            None => Ok(()),
        }
    }

    /// The MSR a counter is read from (IA32_PMCx reads give the full width).
    fn read_msr(counter: Counter) -> u32 {
        match counter {
            Counter::Gp(n) => r::PMC0 + u32::from(n),
            Counter::Fixed(i) => r::FIXED_CTR0 + u32::from(i),
        }
    }

    /// The MSR and raw value that set `counter` to `value`, or why it cannot be written.
    fn checked_write(&self, counter: Counter, value: u64) -> Result<(u32, u64), PmuError> {
        match counter {
            Counter::Gp(n) => {
                if self.caps.full_width_write {
                    if value > width_mask(self.gp_width) {
                        return Err(PmuError::ValueTooWide {
                            value,
                            max_bits: self.gp_width,
                        });
                    }
                } else if legacy_write_result(value, self.gp_width) != value {
                    return Err(PmuError::ValueTooWide {
                        value,
                        max_bits: self.gp_width.min(32),
                    });
                }
                Ok((self.gp_write_msr(n), value))
            }
            Counter::Fixed(i) => {
                if value > width_mask(self.fixed_width) {
                    return Err(PmuError::ValueTooWide {
                        value,
                        max_bits: self.fixed_width,
                    });
                }
                Ok((r::FIXED_CTR0 + u32::from(i), value))
            }
        }
    }

    /// The largest period `arm_period` accepts on `counter` (which exists).
    pub fn max_period(&self, counter: Counter) -> u64 {
        let half = top_bit(self.width(counter)).saturating_sub(1);
        match counter {
            Counter::Gp(_) if !self.caps.full_width_write => half.min(LEGACY_MAX_PERIOD),
            _ => half,
        }
    }

    /// Writes an already checked value, stopping the counter around the write if it runs.
    fn write_stopped(
        &mut self,
        msr: &mut dyn Msr,
        counter: Counter,
        addr: u32,
        value: u64,
    ) -> Result<(), PmuError> {
        let one = CounterSet::one(counter);
        let running = self.enabled.contains(counter);
        if running {
            self.disable(msr, one)?;
        }
        let written = wr(msr, addr, value);
        if running {
            // Restart even if the write faulted, so the counter set stays as it was.
            let restarted = self.enable(msr, one);
            written?;
            restarted?;
        } else {
            written?;
        }
        Ok(())
    }

    fn global_value(set: CounterSet) -> u64 {
        set.to_intel_global()
    }

    fn counter_bits(&self) -> u64 {
        self.all_counters().to_intel_global()
    }

    /// v1: the armed counters whose top bit has cleared.
    fn v1_overflowed(&self, msr: &mut dyn Msr) -> Result<CounterSet, PmuError> {
        let mut over = CounterSet::EMPTY;
        let top = top_bit(self.gp_width);
        for c in self.armed.iter() {
            let value = rd(msr, Self::read_msr(c))?;
            if value & top == 0 {
                over = over.union(CounterSet::one(c));
            }
        }
        Ok(over)
    }

    /// v2+: the PMI sequence once GLOBAL_CTRL is 0.
    fn ack_status_loop(&mut self, msr: &mut dyn Msr) -> Result<PmiEvent, PmuError> {
        let counters = self.counter_bits();
        let mut seen = 0u64;
        let mut status = rd(msr, r::PERF_GLOBAL_STATUS)?;
        for _ in 0..PMI_MAX_ROUNDS {
            if status == 0 {
                break;
            }
            wr(msr, r::PERF_GLOBAL_OVF_CTRL, status)?;
            seen |= status;
            let again = rd(msr, r::PERF_GLOBAL_STATUS)?;
            if again & counters == 0 {
                // No new overflow: clear what else appeared meanwhile, once, and stop.
                if again != 0 {
                    wr(msr, r::PERF_GLOBAL_OVF_CTRL, again)?;
                    seen |= again;
                }
                break;
            }
            status = again;
        }
        Ok(PmiEvent {
            overflowed: CounterSet::from_intel_global(seen & counters),
            other_status: seen & !counters,
        })
    }
}

fn any_thread_error() -> PmuError {
    PmuError::Encode(EncodeError::NotOnVendor {
        field: Field::AnyThread,
        vendor: Vendor::Intel,
    })
}

impl PmuBackend for IntelArchPmu {
    fn reset(&mut self, msr: &mut dyn Msr) -> Result<(), PmuError> {
        IntelArchPmu::reset(self, msr)
    }

    fn name(&self) -> &'static str {
        match self.version {
            0 => "intel-arch-none",
            1 => "intel-arch-v1",
            2 => "intel-arch-v2",
            3 => "intel-arch-v3",
            4 => "intel-arch-v4",
            // v5 and later (the exact version is in `caps`).
            _ => "intel-arch-v5",
        }
    }

    fn caps(&self) -> &PmuCaps {
        &self.caps
    }

    fn width(&self, counter: Counter) -> u8 {
        if !self.all_counters().contains(counter) {
            return 0;
        }
        match counter {
            Counter::Gp(_) => self.gp_width,
            Counter::Fixed(_) => self.fixed_width,
        }
    }

    fn all_counters(&self) -> CounterSet {
        let gp = if self.gp_count >= 32 {
            u32::MAX
        } else {
            (1u32 << self.gp_count) - 1
        };
        CounterSet {
            gp,
            fixed: self.fixed_mask,
        }
    }

    fn program(
        &mut self,
        msr: &mut dyn Msr,
        counter: Counter,
        select: &EventSelect,
        modifiers: &Modifiers,
    ) -> Result<(), PmuError> {
        self.check(counter)?;
        if select.any_thread && !self.caps.any_thread {
            return Err(any_thread_error());
        }
        let one = CounterSet::one(counter);
        match counter {
            Counter::Gp(n) => {
                let value = encode::intel_perfevtsel(select, modifiers, self.has_global())
                    .map_err(PmuError::Encode)?;
                if self.has_global() && self.enabled.contains(counter) {
                    self.disable(msr, one)?;
                }
                // v1: EN = 0 in `value`, so this write also stops a running counter.
                wr(msr, r::PERFEVTSEL0 + u32::from(n), value)?;
                if let Some(slot) = self.evtsel.get_mut(usize::from(n)) {
                    *slot = value;
                }
            }
            Counter::Fixed(i) => {
                if !select.is_plain() || !fixed_counts(i, select) {
                    return Err(PmuError::WrongCounter(counter));
                }
                let field = FixedCtrl::from_modifiers(modifiers, select.any_thread)
                    .map_err(PmuError::Encode)?;
                let bits = field.register_bits(i).map_err(PmuError::Encode)?;
                let shift = FixedCtrl::shift(i).map_err(PmuError::Encode)?;
                if self.enabled.contains(counter) {
                    self.disable(msr, one)?;
                }
                let value = (self.fixed_ctrl & !(0xf << shift)) | bits;
                wr(msr, r::FIXED_CTR_CTRL, value)?;
                self.fixed_ctrl = value;
            }
        }
        self.programmed = self.programmed.union(one);
        self.enabled = set_minus(self.enabled, one);
        self.armed = set_minus(self.armed, one);
        Ok(())
    }

    fn release(&mut self, msr: &mut dyn Msr, counter: Counter) -> Result<(), PmuError> {
        self.check(counter)?;
        let one = CounterSet::one(counter);
        if self.has_global() && self.enabled.contains(counter) {
            self.disable(msr, one)?;
        }
        match counter {
            Counter::Gp(n) => {
                wr(msr, r::PERFEVTSEL0 + u32::from(n), 0)?;
                if let Some(slot) = self.evtsel.get_mut(usize::from(n)) {
                    *slot = 0;
                }
            }
            Counter::Fixed(i) => {
                let shift = FixedCtrl::shift(i).map_err(PmuError::Encode)?;
                let value = self.fixed_ctrl & !(0xf << shift);
                wr(msr, r::FIXED_CTR_CTRL, value)?;
                self.fixed_ctrl = value;
            }
        }
        self.programmed = set_minus(self.programmed, one);
        self.enabled = set_minus(self.enabled, one);
        self.armed = set_minus(self.armed, one);
        Ok(())
    }

    /// Counters in `set` that hold no event are ignored.
    fn enable(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        self.check_set(set)?;
        let start = set_minus(set_and(set, self.programmed), self.enabled);
        if start.is_empty() {
            return Ok(());
        }
        if self.has_global() {
            let new = self.enabled.union(start);
            wr(msr, r::PERF_GLOBAL_CTRL, Self::global_value(new))?;
            self.enabled = new;
        } else {
            for c in start.iter() {
                if let Counter::Gp(n) = c {
                    let value = self.evtsel.get(usize::from(n)).copied().unwrap_or(0) | EN;
                    wr(msr, r::PERFEVTSEL0 + u32::from(n), value)?;
                    self.enabled = self.enabled.union(CounterSet::one(c));
                }
            }
        }
        Ok(())
    }

    fn disable(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        self.check_set(set)?;
        let stop = set_and(set, self.enabled);
        if stop.is_empty() {
            return Ok(());
        }
        if self.has_global() {
            let new = set_minus(self.enabled, stop);
            wr(msr, r::PERF_GLOBAL_CTRL, Self::global_value(new))?;
            self.enabled = new;
        } else {
            for c in stop.iter() {
                if let Counter::Gp(n) = c {
                    let value = self.evtsel.get(usize::from(n)).copied().unwrap_or(0) & !EN;
                    wr(msr, r::PERFEVTSEL0 + u32::from(n), value)?;
                    self.enabled = set_minus(self.enabled, CounterSet::one(c));
                }
            }
        }
        Ok(())
    }

    fn read(&mut self, msr: &mut dyn Msr, counter: Counter) -> Result<u64, PmuError> {
        self.check(counter)?;
        let value = rd(msr, Self::read_msr(counter))?;
        Ok(value & width_mask(self.width(counter)))
    }

    fn write(&mut self, msr: &mut dyn Msr, counter: Counter, value: u64) -> Result<(), PmuError> {
        self.check(counter)?;
        let (addr, raw) = self.checked_write(counter, value)?;
        self.write_stopped(msr, counter, addr, raw)?;
        let one = CounterSet::one(counter);
        if value & top_bit(self.width(counter)) != 0 {
            self.armed = self.armed.union(one);
        } else {
            self.armed = set_minus(self.armed, one);
        }
        Ok(())
    }

    fn arm_period(
        &mut self,
        msr: &mut dyn Msr,
        counter: Counter,
        period: u64,
    ) -> Result<(), PmuError> {
        self.check(counter)?;
        let max = self.max_period(counter);
        if period == 0 || period > max {
            return Err(PmuError::PeriodOutOfRange { period, max });
        }
        let value = period.wrapping_neg() & width_mask(self.width(counter));
        let (addr, raw) = self.checked_write(counter, value)?;
        self.write_stopped(msr, counter, addr, raw)?;
        self.armed = self.armed.union(CounterSet::one(counter));
        Ok(())
    }

    fn overflow_status(&mut self, msr: &mut dyn Msr) -> Result<CounterSet, PmuError> {
        if self.has_global() {
            let status = rd(msr, r::PERF_GLOBAL_STATUS)?;
            Ok(CounterSet::from_intel_global(status & self.counter_bits()))
        } else {
            self.v1_overflowed(msr)
        }
    }

    fn ack_overflow(&mut self, msr: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        self.check_set(set)?;
        if self.has_global() {
            let bits = set.to_intel_global();
            if bits != 0 {
                wr(msr, r::PERF_GLOBAL_OVF_CTRL, bits)?;
            }
        } else {
            self.armed = set_minus(self.armed, set);
        }
        Ok(())
    }

    fn handle_pmi(&mut self, msr: &mut dyn Msr) -> Result<PmiEvent, PmuError> {
        if !self.has_global() {
            let overflowed = self.v1_overflowed(msr)?;
            self.armed = set_minus(self.armed, overflowed);
            return Ok(PmiEvent {
                overflowed,
                other_status: 0,
            });
        }
        let saved = Self::global_value(self.enabled);
        wr(msr, r::PERF_GLOBAL_CTRL, 0)?;
        let found = self.ack_status_loop(msr);
        // Restore the running set whatever happened in between.
        let restored = wr(msr, r::PERF_GLOBAL_CTRL, saved);
        let event = found?;
        restored?;
        Ok(event)
    }

    fn pmi_unmasks_lvtpc(&self) -> bool {
        true
    }

    fn rdpmc_index(&self, counter: Counter) -> Option<u32> {
        if !self.all_counters().contains(counter) {
            return None;
        }
        Some(match counter {
            Counter::Gp(n) => u32::from(n),
            Counter::Fixed(i) => r::RDPMC_FIXED | u32::from(i),
        })
    }

    /// v2+: the event selects (EN set) and FIXED_CTR_CTRL, then the slots' status bits
    /// cleared; one GLOBAL_CTRL write starts (the slots' bits) or stops (0) them all. v1: the
    /// event selects with EN clear, rewritten with EN set to start and clear to stop. Every
    /// counter that is not a slot's is set to 0 with the events.
    fn switch_plan(
        &self,
        slots: &[(Counter, EventSelect, Modifiers)],
    ) -> Result<SwitchPlan, PmuError> {
        let global = self.has_global();
        let mut plan = SwitchPlan::default();
        let mut set = CounterSet::EMPTY;
        let mut fixed_ctrl = 0u64;
        for (counter, select, modifiers) in slots {
            let counter = *counter;
            self.check(counter)?;
            if set.contains(counter) {
                return Err(PmuError::WrongCounter(counter));
            }
            if select.any_thread && !self.caps.any_thread {
                return Err(any_thread_error());
            }
            set = set.union(CounterSet::one(counter));
            match counter {
                Counter::Gp(n) => {
                    let value = encode::intel_perfevtsel(select, modifiers, global)
                        .map_err(PmuError::Encode)?;
                    let evtsel = r::PERFEVTSEL0 + u32::from(n);
                    if global {
                        plan.program.push((evtsel, value));
                    } else {
                        plan.gate_by_enable_bit(evtsel, value, EN);
                    }
                    plan.counter_write
                        .push((self.gp_write_msr(n), self.caps.full_width_write));
                }
                Counter::Fixed(i) => {
                    if !select.is_plain() || !fixed_counts(i, select) {
                        return Err(PmuError::WrongCounter(counter));
                    }
                    let field = FixedCtrl::from_modifiers(modifiers, select.any_thread)
                        .map_err(PmuError::Encode)?;
                    fixed_ctrl |= field.register_bits(i).map_err(PmuError::Encode)?;
                    plan.counter_write
                        .push((r::FIXED_CTR0 + u32::from(i), true));
                }
            }
            plan.rdpmc.push(
                self.rdpmc_index(counter)
                    .ok_or(PmuError::NoSuchCounter(counter))?,
            );
        }
        // Every other counter to 0 (stopped: not this task's): with CR4.PCE set for this task,
        // RDPMC in ring 3 reads any counter, and the others would still hold the counts of the
        // task that used them last (as Linux does for an RDPMC task, perf/x86 "Reset the dirty
        // counter"). Written only when the counters held another task's events.
        let others = self.all_counters();
        for n in (0..32u8).filter(|&n| others.gp & (1 << n) != 0 && set.gp & (1 << n) == 0) {
            plan.program.push((self.gp_write_msr(n), 0));
        }
        for i in (0..32u8).filter(|&i| others.fixed & (1 << i) != 0 && set.fixed & (1 << i) == 0) {
            plan.program.push((r::FIXED_CTR0 + u32::from(i), 0));
        }
        if set.fixed != 0 {
            plan.program.push((r::FIXED_CTR_CTRL, fixed_ctrl));
        }
        if global {
            plan.gate_globally(
                r::PERF_GLOBAL_CTRL,
                r::PERF_GLOBAL_STATUS,
                r::PERF_GLOBAL_OVF_CTRL,
                slots
                    .iter()
                    .map(|(c, _, _)| CounterSet::one(*c).to_intel_global())
                    .collect(),
            );
        }
        Ok(plan)
    }
}

//! A simulated PMU: the documented register semantics of Intel architectural PMUs (v1-v5) and
//! AMD core counters (legacy, PerfCtrExtCore, PerfMonV2), behind the [`Msr`] trait, so the
//! backends can be tested on the host (the kvm-unit-tests `x86/pmu.c` checks, adapted; see
//! ../shared/reference/platform-facts.md). Events do not happen by themselves: a test says
//! "k events happened on counter c" with [`SimPmu::count`].
//!
//! What the model reproduces:
//!
//! - counter width; a WRMSR to the legacy IA32_PMCx alias keeps bits 31:0, sign-extends bit 31
//!   and masks to the width; IA32_A_PMCx exists only with FW_WRITE (else #GP) and #GPs on a value
//!   wider than the counter; a fixed counter or an AMD counter #GPs on a wider value too;
//! - reserved bits in PERFEVTSEL / PERF_CTL / FIXED_CTR_CTRL / GLOBAL_CTRL / GlobalCtl -> #GP
//!   (AnyThread, PERFEVTSEL bit 21 and the fixed fields' bit 2, exists on v3 and v4 only);
//! - Intel v2+: GLOBAL_CTRL gating, GLOBAL_STATUS (read-only: #GP on write), 0x390 clearing; v4+
//!   GLOBAL_STATUS_SET (0x391); v1 has none of the global registers;
//! - AMD: 48 bits; no status register before PerfMonV2 (overflow visible only as bit 47 clearing);
//!   PerfMonV2 GlobalCtl / GlobalStatus (read-only) / StatusClr / StatusSet. The legacy
//!   PERF_CTL0-3 / PERF_CTR0-3 alias counters 0-3 on every AMD flavour. StatusClr ignores bits it
//!   does not know (Linux writes `~status` to it);
//! - a counter counts only when its own enable (PERFEVTSEL.EN, a fixed field's OS/USR bits,
//!   PERF_CTL.En) and, where the PMU has one, its global-control bit are set, and its USR/OS filter
//!   matches the simulated privilege level ([`SimPmu::set_cpl`]; by default the level is left
//!   unspecified and an event with USR or OS counts);
//! - overflow when a counter wraps past 2^width: the status bit is set (where there is a status
//!   register), and a PMI is raised only when INT (PERFEVTSEL/PERF_CTL bit 20, fixed field bit 3)
//!   is set. A raised PMI is pending until [`SimPmu::take_pmi`] delivers it; delivery on Intel sets
//!   the LVTPC mask bit, and a PMI raised while LVTPC is masked is lost (counted in
//!   [`SimPmu::pmis_lost`]). AMD does not mask LVTPC on delivery;
//! - RDPMC: GP n, Intel fixed (1 << 30) | i, bit 31 the fast read of the low 32 bits (Intel); an
//!   index beyond the counters -> #GP;
//! - any other MSR -> #GP.
//!
//! Not modelled: what events count (a test says how many happened), CMASK/INV/EDGE effects, AMD
//! host/guest filters (the model is a host with SVM off), freeze-on-PMI, PEBS/LBR, INUSE.

use alloc::vec;
use alloc::vec::Vec;

use events::encode::{AMD_VALID_BITS, INTEL_VALID_BITS, bits};
use events::pmu::PmuCaps;

use super::backend::Counter;
use super::msr::{Msr, MsrFault};
use super::regs::{amd as ra, intel as ri};

const GP: MsrFault = MsrFault::GeneralProtection;

/// Intel PMU shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntelConfig {
    pub version: u8,
    pub gp: u8,
    pub gp_width: u8,
    /// Number of fixed counters (ignored on v1).
    pub fixed: u8,
    pub fixed_width: u8,
    /// IA32_PERF_CAPABILITIES.FW_WRITE.
    pub fw_write: bool,
}

impl IntelConfig {
    /// Core Solo/Duo: v1, 2 GP x 40 bits, no fixed counters, no full-width writes.
    pub const V1: IntelConfig = IntelConfig {
        version: 1,
        gp: 2,
        gp_width: 40,
        fixed: 0,
        fixed_width: 0,
        fw_write: false,
    };
    /// Core 2: v2, 2 GP x 40, 3 fixed x 40, no full-width writes.
    pub const V2: IntelConfig = IntelConfig {
        version: 2,
        gp: 2,
        gp_width: 40,
        fixed: 3,
        fixed_width: 40,
        fw_write: false,
    };
    /// Nehalem-like: v3, 4 GP x 48, 3 fixed x 48, no full-width writes.
    pub const V3: IntelConfig = IntelConfig {
        version: 3,
        gp: 4,
        gp_width: 48,
        fixed: 3,
        fixed_width: 48,
        fw_write: false,
    };
    /// Skylake: v4, 4 GP x 48, 3 fixed x 48, full-width writes.
    pub const V4_SKYLAKE: IntelConfig = IntelConfig {
        version: 4,
        gp: 4,
        gp_width: 48,
        fixed: 3,
        fixed_width: 48,
        fw_write: true,
    };
    /// Sapphire Rapids-like: v5, 8 GP x 48, 4 fixed x 48, full-width writes.
    pub const V5: IntelConfig = IntelConfig {
        version: 5,
        gp: 8,
        gp_width: 48,
        fixed: 4,
        fixed_width: 48,
        fw_write: true,
    };
}

/// AMD flavour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmdFlavour {
    /// 4 counters at PERF_CTL0-3 / PERF_CTR0-3.
    Legacy,
    /// PerfCtrExtCore: 6 interleaved counters.
    ExtCore,
    /// PerfMonV2 with this many counters (interleaved layout, global registers).
    PerfMonV2(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Intel(IntelConfig),
    Amd(AmdFlavour),
}

/// The simulated PMU of one CPU (plus its LVTPC mask bit).
#[derive(Clone, Debug)]
pub struct SimPmu {
    kind: Kind,
    gp_width: u8,
    fixed_width: u8,
    gp: Vec<u64>,
    ctl: Vec<u64>,
    fixed: Vec<u64>,
    fixed_ctrl: u64,
    global_ctrl: u64,
    global_status: u64,
    cpl: Option<u8>,
    pmi_pending: bool,
    lvtpc_masked: bool,
    pmis_delivered: u32,
    pmis_lost: u32,
}

fn mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn bit(n: u32) -> u64 {
    1u64.checked_shl(n).unwrap_or(0)
}

fn low_bits(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The simulated PMU replays switch lists one access at a time, like any host `Msr`.
impl super::switch::ReplayMsr for SimPmu {}

impl SimPmu {
    /// An Intel PMU in its power-on state: everything zero except GLOBAL_CTRL, whose GP enable bits
    /// are set (as on many parts).
    pub fn intel(config: IntelConfig) -> SimPmu {
        let config = IntelConfig {
            fixed: if config.version >= 2 { config.fixed } else { 0 },
            fixed_width: if config.version >= 2 {
                config.fixed_width
            } else {
                0
            },
            ..config
        };
        let gp = usize::from(config.gp);
        SimPmu {
            kind: Kind::Intel(config),
            gp_width: config.gp_width,
            fixed_width: config.fixed_width,
            gp: vec![0; gp],
            ctl: vec![0; gp],
            fixed: vec![0; usize::from(config.fixed)],
            fixed_ctrl: 0,
            global_ctrl: if config.version >= 2 {
                low_bits(gp.min(32))
            } else {
                0
            },
            global_status: 0,
            cpl: None,
            pmi_pending: false,
            lvtpc_masked: false,
            pmis_delivered: 0,
            pmis_lost: 0,
        }
    }

    /// An AMD PMU in its power-on state (PerfMonV2: GlobalCtl with every counter enabled, for
    /// software that only knows PERF_CTL.En; unconfirmed, and the backends clear it anyway).
    pub fn amd(flavour: AmdFlavour) -> SimPmu {
        let n = match flavour {
            AmdFlavour::Legacy => 4,
            AmdFlavour::ExtCore => 6,
            AmdFlavour::PerfMonV2(n) => usize::from(n.min(16)),
        };
        SimPmu {
            kind: Kind::Amd(flavour),
            gp_width: ra::WIDTH,
            fixed_width: 0,
            gp: vec![0; n],
            ctl: vec![0; n],
            fixed: Vec::new(),
            fixed_ctrl: 0,
            global_ctrl: if matches!(flavour, AmdFlavour::PerfMonV2(_)) {
                low_bits(n)
            } else {
                0
            },
            global_status: 0,
            cpl: None,
            pmi_pending: false,
            lvtpc_masked: false,
            pmis_delivered: 0,
            pmis_lost: 0,
        }
    }

    /// The capabilities discovery would report for this PMU.
    pub fn caps(&self) -> PmuCaps {
        match self.kind {
            Kind::Intel(c) => {
                let eax = u32::from(c.version)
                    | (u32::from(c.gp) << 8)
                    | (u32::from(c.gp_width) << 16)
                    | (7 << 24);
                let edx = u32::from(c.fixed) | (u32::from(c.fixed_width) << 5);
                PmuCaps::from_intel_cpuid([eax, 0, 0, edx], c.fw_write, None)
            }
            Kind::Amd(AmdFlavour::Legacy) => PmuCaps::amd(false, None, None),
            Kind::Amd(AmdFlavour::ExtCore) => PmuCaps::amd(true, None, None),
            Kind::Amd(AmdFlavour::PerfMonV2(n)) => PmuCaps::amd(true, Some(n), None),
        }
    }

    /// Sets the privilege level events happen at (0: kernel, 1-3: user).
    pub fn set_cpl(&mut self, cpl: u8) {
        self.cpl = Some(cpl);
    }

    /// A PMI was raised and not yet delivered.
    pub fn pmi_pending(&self) -> bool {
        self.pmi_pending
    }

    /// Delivers a pending PMI: returns whether there was one. On Intel, delivery sets the LVTPC
    /// mask bit.
    pub fn take_pmi(&mut self) -> bool {
        if !self.pmi_pending {
            return false;
        }
        self.pmi_pending = false;
        self.pmis_delivered += 1;
        if self.is_intel() {
            self.lvtpc_masked = true;
        }
        true
    }

    /// The LVTPC mask bit.
    pub fn lvtpc_masked(&self) -> bool {
        self.lvtpc_masked
    }

    /// Clears the LVTPC mask bit (what the kernel's PMI handler does on Intel).
    pub fn unmask_lvtpc(&mut self) {
        self.lvtpc_masked = false;
    }

    pub fn pmis_delivered(&self) -> u32 {
        self.pmis_delivered
    }

    /// PMIs raised while LVTPC was masked.
    pub fn pmis_lost(&self) -> u32 {
        self.pmis_lost
    }

    /// The raw value of a counter (0 if it does not exist), without an MSR access.
    pub fn value(&self, counter: Counter) -> u64 {
        match counter {
            Counter::Gp(n) => self.gp.get(usize::from(n)).copied().unwrap_or(0),
            Counter::Fixed(i) => self.fixed.get(usize::from(i)).copied().unwrap_or(0),
        }
    }

    /// PERFEVTSELn / PERF_CTLn as the hardware holds it.
    pub fn event_select(&self, n: u8) -> u64 {
        self.ctl.get(usize::from(n)).copied().unwrap_or(0)
    }

    pub fn fixed_ctrl(&self) -> u64 {
        self.fixed_ctrl
    }

    pub fn global_ctrl(&self) -> u64 {
        self.global_ctrl
    }

    pub fn global_status(&self) -> u64 {
        self.global_status
    }

    /// The counter whose value `msr` writes (IA32_PMCx, IA32_A_PMCx, FIXED_CTRx, AMD PERF_CTRn),
    /// if it is one.
    pub fn counter_at(&self, msr: u32) -> Option<Counter> {
        let n = self.gp.len();
        let gp = |i: usize| u8::try_from(i).ok().map(Counter::Gp);
        match self.kind {
            Kind::Intel(_) => {
                if let Some(i) = Self::in_block(msr, ri::PMC0, 1, n)
                    .or_else(|| Self::in_block(msr, ri::A_PMC0, 1, n))
                {
                    return gp(i);
                }
                Self::in_block(msr, ri::FIXED_CTR0, 1, self.fixed.len())
                    .and_then(|i| u8::try_from(i).ok().map(Counter::Fixed))
            }
            Kind::Amd(_) => match self.amd_decode(msr) {
                Some((i, false)) => gp(i),
                _ => None,
            },
        }
    }

    fn is_intel(&self) -> bool {
        matches!(self.kind, Kind::Intel(_))
    }

    fn intel_version(&self) -> u8 {
        match self.kind {
            Kind::Intel(c) => c.version,
            Kind::Amd(_) => 0,
        }
    }

    fn has_global(&self) -> bool {
        match self.kind {
            Kind::Intel(c) => c.version >= 2,
            Kind::Amd(f) => matches!(f, AmdFlavour::PerfMonV2(_)),
        }
    }

    fn privilege_counts(&self, usr: bool, os: bool) -> bool {
        match self.cpl {
            None => usr || os,
            Some(0) => os,
            Some(_) => usr,
        }
    }

    /// Whether `counter` counts right now.
    pub fn is_counting(&self, counter: Counter) -> bool {
        match counter {
            Counter::Gp(n) => {
                let Some(&ctl) = self.ctl.get(usize::from(n)) else {
                    return false;
                };
                let global = !self.has_global() || self.global_ctrl & bit(u32::from(n)) != 0;
                ctl & bits::EN != 0
                    && global
                    && self.privilege_counts(ctl & bits::USR != 0, ctl & bits::OS != 0)
            }
            Counter::Fixed(i) => {
                if usize::from(i) >= self.fixed.len() {
                    return false;
                }
                let field = self.fixed_ctrl.checked_shr(4 * u32::from(i)).unwrap_or(0) & 0xf;
                let global = self.global_ctrl & bit(32 + u32::from(i)) != 0;
                global && self.privilege_counts(field & 2 != 0, field & 1 != 0)
            }
        }
    }

    /// `k` events happened for `counter`: it advances if it is counting. On a wrap past 2^width
    /// the status bit is set (where there is one) and a PMI is raised when INT is set.
    pub fn count(&mut self, counter: Counter, k: u64) {
        if !self.is_counting(counter) {
            return;
        }
        let (width, status_bit, int) = match counter {
            Counter::Gp(n) => (
                self.gp_width,
                bit(u32::from(n)),
                self.event_select(n) & bits::INT != 0,
            ),
            Counter::Fixed(i) => (
                self.fixed_width,
                bit(32 + u32::from(i)),
                self.fixed_ctrl.checked_shr(4 * u32::from(i)).unwrap_or(0) & 8 != 0,
            ),
        };
        let slot = match counter {
            Counter::Gp(n) => self.gp.get_mut(usize::from(n)),
            Counter::Fixed(i) => self.fixed.get_mut(usize::from(i)),
        };
        let Some(slot) = slot else { return };
        let sum = u128::from(*slot) + u128::from(k);
        let wrapped = sum > u128::from(mask(width));
        *slot = (sum as u64) & mask(width);
        if wrapped {
            if self.has_global() {
                self.global_status |= status_bit;
            }
            if int {
                if self.lvtpc_masked {
                    self.pmis_lost += 1;
                } else {
                    self.pmi_pending = true;
                }
            }
        }
    }

    // ---- Intel registers ----

    fn intel_gp_mask(&self) -> u64 {
        low_bits(self.gp.len().min(32))
    }

    fn intel_fixed_bits(&self) -> u64 {
        low_bits(self.fixed.len().min(32)) << 32
    }

    /// Bits 0x390 / 0x391 accept: counters plus the other status bits of the version.
    fn intel_status_bits(&self) -> u64 {
        let other = if self.intel_version() >= 4 {
            (1 << 48) | (1 << 55) | (1 << 58) | (1 << 59) | (1 << 61) | (1 << 62) | (1 << 63)
        } else {
            (1 << 62) | (1 << 63)
        };
        self.intel_gp_mask() | self.intel_fixed_bits() | other
    }

    fn intel_evtsel_valid(&self) -> u64 {
        let v = self.intel_version();
        if (3..=4).contains(&v) {
            INTEL_VALID_BITS
        } else {
            INTEL_VALID_BITS & !bits::ANY_THREAD
        }
    }

    fn intel_fixed_ctrl_valid(&self) -> u64 {
        let field = if (3..=4).contains(&self.intel_version()) {
            0xf
        } else {
            0xb
        };
        (0..self.fixed.len().min(16)).fold(0, |acc, i| acc | (field << (4 * i)))
    }

    fn intel_fw_write(&self) -> bool {
        matches!(self.kind, Kind::Intel(c) if c.fw_write)
    }

    /// Index of `msr` in a block of `len` registers starting at `base` with `stride`.
    fn in_block(msr: u32, base: u32, stride: u32, len: usize) -> Option<usize> {
        let off = msr.checked_sub(base)?;
        if off % stride != 0 {
            return None;
        }
        let i = (off / stride) as usize;
        (i < len).then_some(i)
    }

    fn intel_read(&self, msr: u32) -> Result<u64, MsrFault> {
        let n = self.gp.len();
        let f = self.fixed.len();
        let v2 = self.intel_version() >= 2;
        if let Some(i) = Self::in_block(msr, ri::PMC0, 1, n) {
            return Ok(self.gp[i]);
        }
        if let Some(i) = Self::in_block(msr, ri::A_PMC0, 1, n) {
            return if self.intel_fw_write() {
                Ok(self.gp[i])
            } else {
                Err(GP)
            };
        }
        if let Some(i) = Self::in_block(msr, ri::PERFEVTSEL0, 1, n) {
            return Ok(self.ctl[i]);
        }
        if let Some(i) = Self::in_block(msr, ri::FIXED_CTR0, 1, f) {
            return Ok(self.fixed[i]);
        }
        match msr {
            ri::PERF_CAPABILITIES => Ok(if self.intel_fw_write() {
                ri::CAP_FW_WRITE
            } else {
                0
            }),
            ri::FIXED_CTR_CTRL if v2 => Ok(self.fixed_ctrl),
            ri::PERF_GLOBAL_STATUS if v2 => Ok(self.global_status),
            ri::PERF_GLOBAL_CTRL if v2 => Ok(self.global_ctrl),
            ri::PERF_GLOBAL_OVF_CTRL if v2 => Ok(0),
            ri::PERF_GLOBAL_STATUS_SET if self.intel_version() >= 4 => Ok(0),
            _ => Err(GP),
        }
    }

    fn intel_write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        let n = self.gp.len();
        let f = self.fixed.len();
        let v2 = self.intel_version() >= 2;
        if let Some(i) = Self::in_block(msr, ri::PMC0, 1, n) {
            self.gp[i] = (value as u32 as i32 as i64 as u64) & mask(self.gp_width);
            return Ok(());
        }
        if let Some(i) = Self::in_block(msr, ri::A_PMC0, 1, n) {
            if !self.intel_fw_write() || value & !mask(self.gp_width) != 0 {
                return Err(GP);
            }
            self.gp[i] = value;
            return Ok(());
        }
        if let Some(i) = Self::in_block(msr, ri::PERFEVTSEL0, 1, n) {
            if value & !self.intel_evtsel_valid() != 0 {
                return Err(GP);
            }
            self.ctl[i] = value;
            return Ok(());
        }
        if let Some(i) = Self::in_block(msr, ri::FIXED_CTR0, 1, f) {
            if value & !mask(self.fixed_width) != 0 {
                return Err(GP);
            }
            self.fixed[i] = value;
            return Ok(());
        }
        match msr {
            ri::FIXED_CTR_CTRL if v2 => {
                if value & !self.intel_fixed_ctrl_valid() != 0 {
                    return Err(GP);
                }
                self.fixed_ctrl = value;
            }
            ri::PERF_GLOBAL_CTRL if v2 => {
                if value & !(self.intel_gp_mask() | self.intel_fixed_bits()) != 0 {
                    return Err(GP);
                }
                self.global_ctrl = value;
            }
            ri::PERF_GLOBAL_OVF_CTRL if v2 => {
                if value & !self.intel_status_bits() != 0 {
                    return Err(GP);
                }
                self.global_status &= !value;
            }
            ri::PERF_GLOBAL_STATUS_SET if self.intel_version() >= 4 => {
                if value & !self.intel_status_bits() != 0 {
                    return Err(GP);
                }
                self.global_status |= value;
            }
            // GLOBAL_STATUS and PERF_CAPABILITIES are read-only; anything else does not exist.
            _ => return Err(GP),
        }
        Ok(())
    }

    fn intel_rdpmc(&self, ecx: u32) -> Result<u64, MsrFault> {
        let fast = ecx & ri::RDPMC_FAST != 0;
        let fixed = ecx & ri::RDPMC_FIXED != 0;
        let index = (ecx & !(ri::RDPMC_FAST | ri::RDPMC_FIXED)) as usize;
        let value = if fixed {
            *self.fixed.get(index).ok_or(GP)?
        } else {
            *self.gp.get(index).ok_or(GP)?
        };
        Ok(if fast { value & 0xffff_ffff } else { value })
    }

    // ---- AMD registers ----

    fn amd_ext(&self) -> bool {
        !matches!(self.kind, Kind::Amd(AmdFlavour::Legacy))
    }

    /// Which counter (and whether its CTL or CTR) an AMD MSR is.
    fn amd_decode(&self, msr: u32) -> Option<(usize, bool)> {
        let n = self.gp.len();
        if let Some(i) = Self::in_block(msr, ra::PERF_CTL0, 1, n.min(4)) {
            return Some((i, true));
        }
        if let Some(i) = Self::in_block(msr, ra::PERF_CTR0, 1, n.min(4)) {
            return Some((i, false));
        }
        if self.amd_ext() {
            if let Some(i) = Self::in_block(msr, ra::EXT_CTL0, 2, n) {
                return Some((i, true));
            }
            if let Some(i) = Self::in_block(msr, ra::EXT_CTR0, 2, n) {
                return Some((i, false));
            }
        }
        None
    }

    fn amd_read(&self, msr: u32) -> Result<u64, MsrFault> {
        if let Some((i, is_ctl)) = self.amd_decode(msr) {
            return Ok(if is_ctl { self.ctl[i] } else { self.gp[i] });
        }
        match msr {
            ra::GLOBAL_STATUS if self.has_global() => Ok(self.global_status),
            ra::GLOBAL_CTL if self.has_global() => Ok(self.global_ctrl),
            ra::GLOBAL_STATUS_CLR | ra::GLOBAL_STATUS_SET if self.has_global() => Ok(0),
            _ => Err(GP),
        }
    }

    fn amd_write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        if let Some((i, is_ctl)) = self.amd_decode(msr) {
            if is_ctl {
                if value & !AMD_VALID_BITS != 0 {
                    return Err(GP);
                }
                self.ctl[i] = value;
            } else {
                if value & !mask(self.gp_width) != 0 {
                    return Err(GP);
                }
                self.gp[i] = value;
            }
            return Ok(());
        }
        let counters = low_bits(self.gp.len());
        match msr {
            ra::GLOBAL_CTL if self.has_global() => {
                if value & !counters != 0 {
                    return Err(GP);
                }
                self.global_ctrl = value;
            }
            ra::GLOBAL_STATUS_CLR if self.has_global() => self.global_status &= !value,
            ra::GLOBAL_STATUS_SET if self.has_global() => {
                if value & !counters != 0 {
                    return Err(GP);
                }
                self.global_status |= value;
            }
            _ => return Err(GP),
        }
        Ok(())
    }

    fn amd_rdpmc(&self, ecx: u32) -> Result<u64, MsrFault> {
        self.gp.get(ecx as usize).copied().ok_or(GP)
    }
}

impl Msr for SimPmu {
    fn read(&mut self, msr: u32) -> Result<u64, MsrFault> {
        if self.is_intel() {
            self.intel_read(msr)
        } else {
            self.amd_read(msr)
        }
    }

    fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        if self.is_intel() {
            self.intel_write(msr, value)
        } else {
            self.amd_write(msr, value)
        }
    }

    fn rdpmc(&mut self, ecx: u32) -> Result<u64, MsrFault> {
        if self.is_intel() {
            self.intel_rdpmc(ecx)
        } else {
            self.amd_rdpmc(ecx)
        }
    }
}

/// An Intel CPU's companion MSRs of events beside a simulated PMU: offcore response
/// (0x1A6, 0x1A7), load latency (0x3F6) and frontend (0x3F7) as plain registers, which only
/// filter what an event counts (the simulated counters count what the tests say); every other
/// access goes to the PMU.
pub struct WithEventMsrs {
    pub pmu: SimPmu,
    regs: [(u32, u64); 4],
}

impl WithEventMsrs {
    pub fn new(pmu: SimPmu) -> WithEventMsrs {
        WithEventMsrs {
            pmu,
            regs: [(0x1a6, 0), (0x1a7, 0), (0x3f6, 0), (0x3f7, 0)],
        }
    }

    /// The value of companion MSR `msr` (panics for another MSR).
    pub fn value(&self, msr: u32) -> u64 {
        self.regs
            .iter()
            .find(|r| r.0 == msr)
            .expect("an event MSR")
            .1
    }
}

impl Msr for WithEventMsrs {
    fn read(&mut self, msr: u32) -> Result<u64, MsrFault> {
        match self.regs.iter().find(|r| r.0 == msr) {
            Some(&(_, v)) => Ok(v),
            None => self.pmu.read(msr),
        }
    }

    fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        match self.regs.iter_mut().find(|r| r.0 == msr) {
            Some(r) => {
                r.1 = value;
                Ok(())
            }
            None => self.pmu.write(msr, value),
        }
    }

    fn rdpmc(&mut self, ecx: u32) -> Result<u64, MsrFault> {
        self.pmu.rdpmc(ecx)
    }
}

impl super::switch::ReplayMsr for WithEventMsrs {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_alias_sign_extends_and_full_width_needs_fw_write() {
        let mut legacy = SimPmu::intel(IntelConfig::V3);
        legacy.write(ri::PMC0, 0xff01_2345_6789).unwrap();
        assert_eq!(legacy.value(Counter::Gp(0)), 0x2345_6789);
        legacy.write(ri::PMC0, 0x8000_0000).unwrap();
        assert_eq!(legacy.value(Counter::Gp(0)), 0xffff_8000_0000);
        assert_eq!(legacy.write(ri::A_PMC0, 1), Err(GP));
        assert_eq!(legacy.read(ri::A_PMC0), Err(GP));

        let mut fw = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        fw.write(ri::A_PMC0 + 1, 0xff01_2345_6789).unwrap();
        assert_eq!(fw.value(Counter::Gp(1)), 0xff01_2345_6789);
        assert_eq!(fw.write(ri::A_PMC0 + 1, 1 << 48), Err(GP));
        assert_eq!(fw.read(ri::PERF_CAPABILITIES), Ok(ri::CAP_FW_WRITE));
    }

    #[test]
    fn reserved_bits_read_only_and_unknown_registers_fault() {
        let mut v2 = SimPmu::intel(IntelConfig::V2);
        assert_eq!(v2.write(ri::PERFEVTSEL0, 1 << 34), Err(GP));
        assert_eq!(v2.write(ri::PERFEVTSEL0, bits::ANY_THREAD), Err(GP));
        assert_eq!(v2.write(ri::PERF_GLOBAL_STATUS, 1), Err(GP));
        assert_eq!(v2.write(ri::PERF_GLOBAL_CTRL, 1 << 2), Err(GP), "only 2 GP");
        assert_eq!(v2.write(ri::PERF_GLOBAL_STATUS_SET, 1), Err(GP), "v4+");
        assert_eq!(v2.write(ri::FIXED_CTR_CTRL, 1 << 12), Err(GP), "3 fields");
        assert_eq!(v2.read(0x1234), Err(GP));
        let mut v1 = SimPmu::intel(IntelConfig::V1);
        assert_eq!(v1.read(ri::PERF_GLOBAL_CTRL), Err(GP));
        assert_eq!(v1.read(ri::FIXED_CTR0), Err(GP));
        let mut amd = SimPmu::amd(AmdFlavour::Legacy);
        assert_eq!(amd.write(ra::PERF_CTL0, 1 << 21), Err(GP));
        assert_eq!(amd.write(ra::PERF_CTR0, 1 << 48), Err(GP));
        assert_eq!(amd.read(ra::EXT_CTL0), Err(GP), "legacy has no ext MSRs");
        assert_eq!(amd.read(ra::GLOBAL_CTL), Err(GP));
        let mut v2amd = SimPmu::amd(AmdFlavour::PerfMonV2(6));
        assert_eq!(v2amd.write(ra::GLOBAL_STATUS, 1), Err(GP));
        assert_eq!(v2amd.write(ra::GLOBAL_CTL, 1 << 6), Err(GP));
        // The legacy MSRs alias counters 0-3.
        v2amd.write(ra::PERF_CTR0 + 3, 77).unwrap();
        assert_eq!(v2amd.read(ra::EXT_CTR0 + 6), Ok(77));
    }

    #[test]
    fn counting_overflow_status_and_pmi() {
        let mut s = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        s.write(ri::PERF_GLOBAL_CTRL, 0).unwrap();
        s.write(ri::PERFEVTSEL0, 0x0053_00c0).unwrap(); // USR|OS|INT|EN
        s.count(Counter::Gp(0), 5);
        assert_eq!(s.value(Counter::Gp(0)), 0, "global bit clear");
        s.write(ri::PERF_GLOBAL_CTRL, 1).unwrap();
        s.write(ri::A_PMC0, mask(48) - 1).unwrap();
        s.count(Counter::Gp(0), 3);
        assert_eq!(s.value(Counter::Gp(0)), 1);
        assert_eq!(s.global_status(), 1);
        assert!(s.take_pmi());
        assert!(s.lvtpc_masked());
        assert!(!s.take_pmi());
        s.write(ri::PERF_GLOBAL_OVF_CTRL, 1).unwrap();
        assert_eq!(s.global_status(), 0);
        // A second overflow while LVTPC is masked is lost.
        s.write(ri::A_PMC0, mask(48)).unwrap();
        s.count(Counter::Gp(0), 1);
        assert!(!s.pmi_pending());
        assert_eq!(s.pmis_lost(), 1);
    }

    #[test]
    fn rdpmc_indices() {
        let mut s = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        s.write(ri::FIXED_CTR0 + 2, 0x12_3456_789a).unwrap();
        assert_eq!(s.rdpmc(ri::RDPMC_FIXED | 2), Ok(0x12_3456_789a));
        assert_eq!(
            s.rdpmc(ri::RDPMC_FAST | ri::RDPMC_FIXED | 2),
            Ok(0x3456_789a)
        );
        assert_eq!(s.rdpmc(4), Err(GP));
        assert_eq!(s.rdpmc(ri::RDPMC_FIXED | 3), Err(GP));
        let mut amd = SimPmu::amd(AmdFlavour::ExtCore);
        assert_eq!(amd.rdpmc(5), Ok(0));
        assert_eq!(amd.rdpmc(6), Err(GP));
    }
}

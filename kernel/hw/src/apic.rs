//! The local APIC, in x2APIC mode (registers are MSRs) when the CPU has it, otherwise in
//! xAPIC mode (registers in an uncached MMIO page).
//!
//! At start every local vector table (LVT) entry is masked: the kernel takes no interrupt it
//! did not ask for, which keeps measurements free of noise (nanoBench masks LVT entries for the
//! same reason). The timer can then be armed one-shot, periodic or in TSC-deadline mode.

use spin::Once;

use crate::msr::{self, MsrError};

/// Register offsets (xAPIC MMIO offsets; the x2APIC MSR is `0x800 + offset / 16`).
pub mod reg {
    pub const ID: u32 = 0x020;
    pub const VERSION: u32 = 0x030;
    pub const TPR: u32 = 0x080;
    pub const EOI: u32 = 0x0b0;
    pub const SPURIOUS: u32 = 0x0f0;
    pub const ESR: u32 = 0x280;
    pub const LVT_CMCI: u32 = 0x2f0;
    pub const LVT_TIMER: u32 = 0x320;
    pub const LVT_THERMAL: u32 = 0x330;
    pub const LVT_PERF: u32 = 0x340;
    pub const LVT_LINT0: u32 = 0x350;
    pub const LVT_LINT1: u32 = 0x360;
    pub const LVT_ERROR: u32 = 0x370;
    pub const TIMER_INITIAL: u32 = 0x380;
    pub const TIMER_CURRENT: u32 = 0x390;
    pub const TIMER_DIVIDE: u32 = 0x3e0;
    /// Interrupt command register, low and high halves (xAPIC; x2APIC has one 64-bit MSR).
    pub const ICR_LOW: u32 = 0x300;
    pub const ICR_HIGH: u32 = 0x310;
}

/// LVT mask bit.
pub const LVT_MASKED: u32 = 1 << 16;

/// How the local APIC is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApicMode {
    X2Apic,
    XApic,
}

#[derive(Clone, Copy)]
enum Access {
    X2Apic,
    XApic { base: u64 },
}

static ACCESS: Once<Access> = Once::new();

/// What `init` found.
#[derive(Clone, Copy, Debug)]
pub struct ApicInfo {
    pub mode: ApicMode,
    pub id: u32,
    pub version: u8,
    /// Number of LVT entries.
    pub lvt_entries: u8,
    /// Physical base of the xAPIC page (from IA32_APIC_BASE), also reported in x2APIC mode.
    pub base_phys: u64,
    /// The firmware handed the APIC over already in x2APIC mode (OVMF does with more than 255
    /// CPUs); it is kept in it.
    pub x2apic_at_entry: bool,
}

/// Why the APIC could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApicError {
    /// IA32_APIC_BASE could not be read or written.
    Msr(MsrError),
    /// The register page could not be mapped.
    Map(crate::paging::MapError),
}

/// Brings up the local APIC: x2APIC when `x2apic` (the caller checked CPUID), else xAPIC;
/// masks every LVT entry, clears TPR and errors, and software-enables it with
/// `spurious_vector`.
pub fn init(x2apic: bool, spurious_vector: u8) -> Result<ApicInfo, ApicError> {
    const ENABLE: u64 = 1 << 11;
    const EXTD: u64 = 1 << 10;
    let base = msr::read(msr::addr::IA32_APIC_BASE).map_err(ApicError::Msr)?;
    let base_phys = base & 0x000f_ffff_ffff_f000;
    if base & ENABLE == 0 {
        // SAFETY: enabling the APIC at its current base changes no memory mapping; all LVT
        // entries come up masked after reset.
        unsafe { msr::write_privileged(msr::addr::IA32_APIC_BASE, base | ENABLE) }
            .map_err(ApicError::Msr)?;
    }
    let access = if x2apic {
        // Enter x2APIC from xAPIC mode (the architectural order).
        // SAFETY: switches register access from MMIO to MSRs; nothing has used the MMIO page.
        unsafe { msr::write_privileged(msr::addr::IA32_APIC_BASE, base | ENABLE | EXTD) }
            .map_err(ApicError::Msr)?;
        Access::X2Apic
    } else {
        // SAFETY: `APIC_MMIO` is reserved for this page by `layout`; `base_phys` is the APIC's
        // register page, device memory.
        unsafe { crate::paging::map_device_page(crate::layout::APIC_MMIO, base_phys) }
            .map_err(ApicError::Map)?;
        Access::XApic {
            base: crate::layout::APIC_MMIO,
        }
    };
    let access = *ACCESS.call_once(|| access);

    let (version_reg, lvt_entries) = quiesce(spurious_vector);

    let raw_id = read(reg::ID);
    Ok(ApicInfo {
        mode: match access {
            Access::X2Apic => ApicMode::X2Apic,
            Access::XApic { .. } => ApicMode::XApic,
        },
        id: match access {
            Access::X2Apic => raw_id,
            Access::XApic { .. } => raw_id >> 24,
        },
        version: version_reg as u8,
        lvt_entries,
        base_phys,
        x2apic_at_entry: base & EXTD != 0,
    })
}

/// Masks every LVT entry, clears TPR, the timer and errors, and software-enables this CPU's
/// APIC with `spurious_vector`. Returns the version register and the number of LVT entries.
fn quiesce(spurious_vector: u8) -> (u32, u8) {
    let version_reg = read(reg::VERSION);
    let lvt_entries = (((version_reg >> 16) & 0xff) + 1) as u8;
    for lvt in [
        reg::LVT_TIMER,
        reg::LVT_THERMAL,
        reg::LVT_PERF,
        reg::LVT_LINT0,
        reg::LVT_LINT1,
        reg::LVT_ERROR,
    ] {
        write(lvt, LVT_MASKED);
    }
    if lvt_entries >= 7 {
        write(reg::LVT_CMCI, LVT_MASKED);
    }
    write(reg::TIMER_INITIAL, 0);
    write(reg::TPR, 0);
    // ESR is cleared by a write (xAPIC needs the write before the read).
    write(reg::ESR, 0);
    const SOFTWARE_ENABLE: u32 = 1 << 8;
    write(reg::SPURIOUS, SOFTWARE_ENABLE | u32::from(spurious_vector));

    (version_reg, lvt_entries)
}

/// Brings up the local APIC of an application processor in the mode the boot CPU chose (after
/// [`init`] on the boot CPU): enabled, x2APIC if the boot CPU's is, every LVT entry masked.
/// Returns this CPU's APIC ID.
pub fn init_ap(spurious_vector: u8) -> Result<u32, ApicError> {
    const ENABLE: u64 = 1 << 11;
    const EXTD: u64 = 1 << 10;
    let base = msr::read(msr::addr::IA32_APIC_BASE).map_err(ApicError::Msr)?;
    let x2apic = matches!(ACCESS.get(), Some(Access::X2Apic));
    let want = if x2apic {
        base | ENABLE | EXTD
    } else {
        base | ENABLE
    };
    if base & ENABLE == 0 {
        // SAFETY: enables this CPU's APIC at its current base (xAPIC first: the architectural
        // order); no mapping changes.
        unsafe { msr::write_privileged(msr::addr::IA32_APIC_BASE, (base | ENABLE) & !EXTD) }
            .map_err(ApicError::Msr)?;
    }
    if want != base {
        // SAFETY: switches this CPU's register access to the boot CPU's mode; its registers are
        // reached through `ACCESS` like the boot CPU's (the same MMIO page, or MSRs).
        unsafe { msr::write_privileged(msr::addr::IA32_APIC_BASE, want) }
            .map_err(ApicError::Msr)?;
    }
    quiesce(spurious_vector);
    let raw_id = read(reg::ID);
    Ok(if x2apic { raw_id } else { raw_id >> 24 })
}

/// What an interrupt command sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipi {
    /// A fixed interrupt on `vector`.
    Fixed(u8),
    /// INIT, level assert (the start-up sequence's first step).
    InitAssert,
    /// INIT, level de-assert (xAPIC only; the SDM's sequence for older APICs).
    InitDeassert,
    /// STARTUP: the CPU starts in real mode at `page << 12`.
    Startup(u8),
}

/// Sends `ipi` to the CPU with APIC ID `dest` (physical destination mode), and waits (bounded)
/// for an xAPIC to accept it. Returns false if the xAPIC still showed it pending.
pub fn send_ipi(dest: u32, ipi: Ipi) -> bool {
    const LEVEL_ASSERT: u32 = 1 << 14;
    const LEVEL_TRIGGER: u32 = 1 << 15;
    const DELIVERY_PENDING: u32 = 1 << 12;
    let low = match ipi {
        Ipi::Fixed(v) => u32::from(v) | LEVEL_ASSERT,
        Ipi::InitAssert => (0b101 << 8) | LEVEL_ASSERT | LEVEL_TRIGGER,
        Ipi::InitDeassert => (0b101 << 8) | LEVEL_TRIGGER,
        Ipi::Startup(page) => (0b110 << 8) | u32::from(page) | LEVEL_ASSERT,
    };
    match ACCESS.get() {
        Some(Access::X2Apic) => {
            // SAFETY: an interrupt command to another CPU; no memory mapping changes.
            let _ = unsafe {
                msr::write_privileged(
                    msr::addr::X2APIC_ICR,
                    (u64::from(dest) << 32) | u64::from(low),
                )
            };
            true
        }
        Some(&Access::XApic { base }) => {
            // SAFETY: `base` maps the APIC page; ICR high then low (the write of the low half
            // sends).
            unsafe {
                core::ptr::write_volatile(
                    (base + u64::from(reg::ICR_HIGH)) as *mut u32,
                    (dest & 0xff) << 24,
                );
                core::ptr::write_volatile((base + u64::from(reg::ICR_LOW)) as *mut u32, low);
            }
            (0..100_000).any(|_| {
                core::hint::spin_loop();
                read(reg::ICR_LOW) & DELIVERY_PENDING == 0
            })
        }
        None => false,
    }
}

/// The mode the boot CPU's APIC runs in (`None` before [`init`]).
pub fn mode() -> Option<ApicMode> {
    ACCESS.get().map(|a| match a {
        Access::X2Apic => ApicMode::X2Apic,
        Access::XApic { .. } => ApicMode::XApic,
    })
}

/// Reads a register. Returns 0 if the APIC was not initialised.
pub fn read(offset: u32) -> u32 {
    match ACCESS.get() {
        Some(Access::X2Apic) => {
            msr::read(msr::addr::X2APIC_BASE + (offset >> 4)).unwrap_or(0) as u32
        }
        Some(&Access::XApic { base }) => {
            // SAFETY: `base` maps the APIC register page (uncached); `offset` is one of the
            // aligned 32-bit registers in `reg`, all inside the page.
            unsafe { core::ptr::read_volatile((base + u64::from(offset & 0xff0)) as *const u32) }
        }
        None => 0,
    }
}

#[inline]
fn write(offset: u32, value: u32) {
    match ACCESS.get() {
        Some(Access::X2Apic) => {
            // SAFETY: x2APIC registers written here (LVTs, timer, TPR, EOI, SVR, ESR) do not
            // affect memory mappings; the ICR is never written through this function.
            let _ = unsafe {
                msr::write_privileged(msr::addr::X2APIC_BASE + (offset >> 4), u64::from(value))
            };
        }
        Some(&Access::XApic { base }) => {
            // SAFETY: as in `read`.
            unsafe {
                core::ptr::write_volatile((base + u64::from(offset & 0xff0)) as *mut u32, value)
            }
        }
        None => {}
    }
}

/// Signals end of interrupt for the interrupt being serviced.
#[inline]
pub fn eoi() {
    write(reg::EOI, 0);
}

/// Reads and clears the error status register.
pub fn read_and_clear_errors() -> u32 {
    write(reg::ESR, 0);
    read(reg::ESR)
}

/// How the performance-counter interrupt (LVTPC) is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmiDelivery {
    /// A fixed vector (maskable interrupt).
    Vector(u8),
    /// As NMI (delivery mode 100b).
    Nmi,
}

/// Programs the LVT performance-counter entry, unmasked or masked.
#[inline]
pub fn set_lvt_perf(delivery: PmiDelivery, masked: bool) {
    let entry = match delivery {
        PmiDelivery::Vector(v) => u32::from(v),
        PmiDelivery::Nmi => 0b100 << 8,
    };
    write(reg::LVT_PERF, entry | if masked { LVT_MASKED } else { 0 });
}

/// Clears the LVTPC mask bit (Intel sets it when it delivers a PMI), keeping the rest.
pub fn unmask_lvt_perf() {
    write(reg::LVT_PERF, read(reg::LVT_PERF) & !LVT_MASKED);
}

/// Timer modes of the LVT timer entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerMode {
    OneShot,
    Periodic,
    /// Fires when the TSC reaches the value written to IA32_TSC_DEADLINE.
    TscDeadline,
}

/// Encodes a divide value (1, 2, 4, ..., 128) for the divide configuration register.
pub const fn divide_code(divide: u32) -> Option<u32> {
    Some(match divide {
        1 => 0b1011,
        2 => 0b0000,
        4 => 0b0001,
        8 => 0b0010,
        16 => 0b0011,
        32 => 0b1000,
        64 => 0b1001,
        128 => 0b1010,
        _ => return None,
    })
}

/// Arms the timer. For one-shot and periodic modes the count starts at `initial` and counts
/// down at the bus/core crystal clock divided by `divide`; for TSC-deadline mode `initial` and
/// `divide` are ignored and the deadline is set with [`set_tsc_deadline`]. A `masked` timer
/// counts but raises no interrupt (used to calibrate it).
pub fn timer_arm(mode: TimerMode, vector: u8, divide: u32, initial: u32, masked: bool) {
    let mode_bits = match mode {
        TimerMode::OneShot => 0b00,
        TimerMode::Periodic => 0b01,
        TimerMode::TscDeadline => 0b10,
    };
    write(reg::TIMER_INITIAL, 0);
    let mask = if masked { LVT_MASKED } else { 0 };
    write(reg::LVT_TIMER, (mode_bits << 17) | mask | u32::from(vector));
    if mode == TimerMode::TscDeadline {
        // The SDM asks for a fence between switching the LVT to TSC-deadline mode and writing
        // the deadline MSR, which is not serialising in x2APIC mode.
        // SAFETY: MFENCE only orders memory accesses.
        unsafe { core::arch::x86_64::_mm_mfence() };
    } else {
        write(reg::TIMER_DIVIDE, divide_code(divide).unwrap_or(0b1011));
        write(reg::TIMER_INITIAL, initial);
    }
}

/// Sets the TSC deadline (TSC-deadline mode). 0 disarms.
pub fn set_tsc_deadline(tsc: u64) -> Result<(), MsrError> {
    msr::write(msr::addr::IA32_TSC_DEADLINE, tsc)
}

/// Stops the timer and masks its LVT entry.
pub fn timer_stop() {
    write(reg::LVT_TIMER, LVT_MASKED);
    write(reg::TIMER_INITIAL, 0);
    let _ = msr::write(msr::addr::IA32_TSC_DEADLINE, 0);
}

/// The timer's current count (one-shot and periodic modes).
pub fn timer_current() -> u32 {
    read(reg::TIMER_CURRENT)
}

//! The SYSCALL instruction: its MSRs (EFER.SCE, STAR, LSTAR, SFMASK).
//!
//! The entry point LSTAR names, `baremark_syscall_entry`, is in `user.rs` next to the code that
//! enters ring 3 (search `KERNEL ENTRY`): a SYSCALL from ring 3 is a return from
//! [`crate::user::run`] with [`crate::user::Exit::Syscall`], so both halves share one saved-state
//! layout.
//!
//! What the CPU does on SYSCALL (64-bit mode): RCX = RIP of the next instruction, R11 = RFLAGS,
//! RFLAGS &= !SFMASK, CS = STAR[47:32] (0x08, kernel code), SS = STAR[47:32] + 8 (0x10, kernel
//! data), RIP = LSTAR. RSP is not changed: the entry switches stacks itself. On SYSRETQ:
//! RIP = RCX, RFLAGS = R11, CS = STAR[63:48] + 16 | 3 (0x23, user code), SS = STAR[63:48] + 8 | 3
//! (0x1b, user data); see the GDT layout in `gdt.rs`.

use core::sync::atomic::Ordering::Relaxed;

use crate::gdt::{
    KERNEL_CODE_SELECTOR, KERNEL_DATA_SELECTOR, USER_CODE_SELECTOR, USER_DATA_SELECTOR,
};
use crate::msr::{self, MsrError};

/// MSR addresses.
pub mod addr {
    pub use crate::msr::addr::IA32_EFER;
    /// Segment selector bases for SYSCALL (bits 47:32) and SYSRET (bits 63:48).
    pub const IA32_STAR: u32 = 0xc000_0081;
    /// 64-bit SYSCALL entry point.
    pub const IA32_LSTAR: u32 = 0xc000_0082;
    /// RFLAGS bits cleared on SYSCALL.
    pub const IA32_FMASK: u32 = 0xc000_0084;
}

/// EFER.SCE: SYSCALL/SYSRET enable.
const EFER_SCE: u64 = 1 << 0;

/// The selector base SYSRET derives the user selectors from.
const SYSRET_BASE: u16 = KERNEL_DATA_SELECTOR;
const _: () = assert!((SYSRET_BASE + 8) | 3 == USER_DATA_SELECTOR);
const _: () = assert!((SYSRET_BASE + 16) | 3 == USER_CODE_SELECTOR);
const _: () = assert!(KERNEL_CODE_SELECTOR + 8 == KERNEL_DATA_SELECTOR);

/// STAR: SYSCALL loads CS 0x08 / SS 0x10, SYSRET loads CS 0x23 / SS 0x1b.
pub const STAR: u64 = ((SYSRET_BASE as u64) << 48) | ((KERNEL_CODE_SELECTOR as u64) << 32);

/// RFLAGS bits cleared on entry: TF (no single-step trap in the kernel), IF (no interrupt
/// before the entry has switched to the kernel stack), DF (the ABI's direction), IOPL and NT
/// (as Linux does; neither can matter before the kernel's own flags are restored, but they are
/// cleared anyway), AC (so SMAP stays in force in the kernel whatever ring 3 set).
pub const SFMASK: u64 = (1 << 8) | (1 << 9) | (1 << 10) | (3 << 12) | (1 << 14) | (1 << 18);

/// Turns SYSCALL on for this CPU and points it at `entry`, the kernel entry. Idempotent per CPU
/// (the first result is kept in its per-CPU block); [`crate::user::run`] calls it before every
/// entry to ring 3, with its own entry's address (given, not looked up, so this module does not
/// depend on `user.rs`).
pub fn init(entry: u64) -> Result<(), MsrError> {
    let state = &crate::percpu::this().syscall_state;
    match state.load(Relaxed) {
        1 => return Ok(()),
        2 => return Err(MsrError::GeneralProtection),
        _ => {}
    }
    let result = (|| {
        let efer = msr::read(addr::IA32_EFER)?;
        // SAFETY: STAR holds the selectors of the GDT laid out in `gdt.rs` (checked above),
        // LSTAR the entry in `user.rs`, which switches to the kernel stack before touching
        // memory; SFMASK clears IF so no interrupt can arrive before that. EFER.SCE only
        // enables the two instructions, and is set last, once everything it needs is in place.
        unsafe {
            msr::write_privileged(addr::IA32_STAR, STAR)?;
            msr::write_privileged(addr::IA32_LSTAR, entry)?;
            msr::write_privileged(addr::IA32_FMASK, SFMASK)?;
            msr::write_privileged(addr::IA32_EFER, efer | EFER_SCE)?;
        }
        Ok(())
    })();
    state.store(if result.is_ok() { 1 } else { 2 }, Relaxed);
    result
}

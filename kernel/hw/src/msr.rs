//! The door to model-specific registers: every RDMSR and WRMSR the kernel executes is in this
//! file (search for `wrmsr`).
//!
//! Every access is #GP-safe (RDPMC is here too, and also #UD-safe). The instructions sit in two small assembly routines whose
//! faulting instruction has an entry in an exception table: when the CPU (or a hypervisor that
//! advertises a feature but does not emulate its MSRs) raises #GP on one of them, the trap
//! handler resumes at a fix-up that returns an error instead of ending the run. The cost on the
//! normal path is one call; there is no probing overhead.
//!
//! Writes are split in two doors:
//! - [`write`] is public and takes only MSRs that cannot break memory safety or the kernel's
//!   own setup: performance-monitoring counters and controls, the TSC and the TSC deadline
//!   (see [`is_writable_by_kernel`]).
//! - [`write_privileged`] is crate-private, for EFER, the APIC base and the x2APIC registers,
//!   which only this crate's drivers touch.

use core::arch::global_asm;

/// Addresses of the MSRs the kernel uses outside the PMU drivers.
pub mod addr {
    pub const IA32_TSC: u32 = 0x10;
    pub const IA32_APIC_BASE: u32 = 0x1b;
    pub const IA32_TSC_DEADLINE: u32 = 0x6e0;
    /// First x2APIC register; register at xAPIC offset `off` is `X2APIC_BASE + (off >> 4)`.
    pub const X2APIC_BASE: u32 = 0x800;
    pub const IA32_EFER: u32 = 0xc000_0080;
}

/// Why an MSR access did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsrError {
    /// The CPU or hypervisor raised #GP: the MSR does not exist here, or the value is not
    /// accepted (for example a value wider than a counter through a full-width alias).
    GeneralProtection,
    /// The MSR is outside the set the kernel crate may write (see [`is_writable_by_kernel`]).
    Protected,
}

// The exception table maps each faulting instruction to the address where execution resumes.
// Layout: pairs of (instruction address, fix-up address), as 64-bit words.
global_asm!(
    r#"
    .section .text.baremark_msr, "ax"

    // u32 baremark_msr_read(u32 msr /* edi */, u64 *out /* rsi */): 0 = ok, 1 = #GP
    .global baremark_msr_read
    baremark_msr_read:
        mov ecx, edi
    baremark_msr_read_insn:
        rdmsr
        shl rdx, 32
        or rax, rdx
        mov [rsi], rax
        xor eax, eax
        ret
    baremark_msr_read_fixup:
        mov eax, 1
        ret

    // u32 baremark_msr_write(u32 msr /* edi */, u64 value /* rsi */): 0 = ok, 1 = #GP
    .global baremark_msr_write
    baremark_msr_write:
        mov ecx, edi
        mov eax, esi
        mov rdx, rsi
        shr rdx, 32
    baremark_msr_write_insn:
        wrmsr
        xor eax, eax
        ret
    baremark_msr_write_fixup:
        mov eax, 1
        ret

    // u32 baremark_gp_selftest(void): loads from a non-canonical address, which raises #GP(0)
    // on every x86_64 CPU and emulator; returns 1 when the fix-up ran (the mechanism works).
    // Needed because some emulators (QEMU's TCG) ignore unknown MSRs instead of raising #GP.
    .global baremark_gp_selftest
    baremark_gp_selftest:
        movabs rax, 0x8000000000000000
    baremark_gp_selftest_insn:
        mov rax, [rax]
        xor eax, eax
        ret
    baremark_gp_selftest_fixup:
        mov eax, 1
        ret

    // u32 baremark_rdpmc(u32 ecx /* edi */, u64 *out /* rsi */): 0 = ok, 1 = fault (#GP for a
    // bad index, #UD under QEMU's TCG, which has no RDPMC)
    .global baremark_rdpmc
    baremark_rdpmc:
        mov ecx, edi
    baremark_rdpmc_insn:
        rdpmc
        shl rdx, 32
        or rax, rdx
        mov [rsi], rax
        xor eax, eax
        ret
    baremark_rdpmc_fixup:
        mov eax, 1
        ret

    .section .data.rel.ro.baremark_extable, "aw"
    .balign 8
    .global baremark_msr_extable
    baremark_msr_extable:
        .quad baremark_msr_read_insn, baremark_msr_read_fixup
        .quad baremark_msr_write_insn, baremark_msr_write_fixup
        .quad baremark_gp_selftest_insn, baremark_gp_selftest_fixup
        .quad baremark_rdpmc_insn, baremark_rdpmc_fixup
    "#
);

unsafe extern "C" {
    fn baremark_msr_read(msr: u32, out: *mut u64) -> u32;
    fn baremark_msr_write(msr: u32, value: u64) -> u32;
    fn baremark_gp_selftest() -> u32;
    fn baremark_rdpmc(ecx: u32, out: *mut u64) -> u32;
    static baremark_msr_extable: [[u64; 2]; 4];
}

/// The fix-up address for a #GP at `rip`, if `rip` is one of this module's MSR instructions.
/// Called by the trap dispatcher for kernel-mode #GP only.
pub(crate) fn fixup_for(rip: u64) -> Option<u64> {
    // SAFETY: the table is immutable data defined above, with the layout declared here.
    let table = unsafe { &*core::ptr::addr_of!(baremark_msr_extable) };
    table
        .iter()
        .find(|entry| entry[0] == rip)
        .map(|entry| entry[1])
}

/// Executes RDPMC with ECX = `ecx`. A fault (#GP: no such counter, or CR4.PCE matters only in
/// ring 3; #UD: QEMU's TCG has no RDPMC) comes back as an error.
pub fn rdpmc(ecx: u32) -> Result<u64, MsrError> {
    let mut value = 0u64;
    // SAFETY: RDPMC only reads a counter into EDX:EAX; a #GP or #UD on it is turned into an
    // error by the exception table; `value` is a valid place for the result.
    let status = unsafe { baremark_rdpmc(ecx, &mut value) };
    if status == 0 {
        Ok(value)
    } else {
        Err(MsrError::GeneralProtection)
    }
}

/// Proves the #GP recovery path: a guarded load from a non-canonical address raises #GP and
/// must come back through the exception table. Returns whether it did.
pub fn gp_recovery_selftest() -> bool {
    // SAFETY: the load targets a non-canonical address, so it never reads memory: it raises
    // #GP, which the exception table turns into a return value of 1.
    unsafe { baremark_gp_selftest() == 1 }
}

/// Reads an MSR. A #GP (MSR absent, or refused by a hypervisor) comes back as an error.
pub fn read(msr: u32) -> Result<u64, MsrError> {
    let mut value = 0u64;
    // SAFETY: RDMSR has no effect besides loading EDX:EAX (the few MSRs with read side
    // effects are machine-check banks and the like, which the kernel never names); a #GP is
    // turned into an error by the exception table; `value` is a valid place for the result.
    let status = unsafe { baremark_msr_read(msr, &mut value) };
    if status == 0 {
        Ok(value)
    } else {
        Err(MsrError::GeneralProtection)
    }
}

/// Whether the kernel crate may write `msr` through [`write`]: MSRs whose value cannot break
/// memory safety or the kernel's setup. Counters and their controls, the TSC, the TSC
/// deadline, and the offcore-response / load-latency companions of events.
/// Not included: anything that makes the CPU write memory (DS area, PEBS, BTS via DEBUGCTL),
/// EFER, the APIC base, the syscall MSRs, segment bases.
pub const fn is_writable_by_kernel(msr: u32) -> bool {
    matches!(msr,
        addr::IA32_TSC
        | addr::IA32_TSC_DEADLINE
        // Intel: legacy counter aliases, event selects, fixed counters and their control,
        // global control/status/overflow-clear/status-set/in-use, full-width aliases,
        // offcore response and load latency companions.
        | 0xc1..=0xc8
        | 0x186..=0x18d
        | 0x309..=0x30c
        | 0x38d..=0x392
        | 0x4c1..=0x4c8
        | 0x1a6..=0x1a7
        | 0x3f6
        // AMD: legacy counters and controls, extended core counters, PerfMonV2 global set.
        | 0xc001_0000..=0xc001_0007
        | 0xc001_0200..=0xc001_020b
        | 0xc000_0300..=0xc000_0303)
}

/// Writes an MSR the kernel crate is allowed to write (see [`is_writable_by_kernel`]).
pub fn write(msr: u32, value: u64) -> Result<(), MsrError> {
    if !is_writable_by_kernel(msr) {
        return Err(MsrError::Protected);
    }
    // SAFETY: the allow-list above holds only MSRs whose contents cannot make the CPU access
    // memory or change the kernel's execution environment.
    unsafe { write_privileged(msr, value) }
}

/// Writes any MSR, #GP-safe.
///
/// # Safety
/// The caller must make sure the new value keeps the machine in a state the kernel relies on
/// (paging, the APIC mapping, the syscall entry, ...).
pub(crate) unsafe fn write_privileged(msr: u32, value: u64) -> Result<(), MsrError> {
    // SAFETY: the caller vouches for the value; a #GP is turned into an error.
    let status = unsafe { baremark_msr_write(msr, value) };
    if status == 0 {
        Ok(())
    } else {
        Err(MsrError::GeneralProtection)
    }
}

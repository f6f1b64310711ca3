//! The door to model-specific registers: every RDMSR and WRMSR the kernel executes is in this
//! file (search for `wrmsr`), but for EFER in the other CPUs' start-up code (`smp.rs`), which
//! runs before paging.
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

pub use crate::msr_allow::PmuLimits;
use crate::msr_allow::writable;

/// Addresses of the MSRs the kernel uses outside the PMU drivers.
pub mod addr {
    pub const IA32_TSC: u32 = 0x10;
    pub const IA32_APIC_BASE: u32 = 0x1b;
    pub const IA32_TSC_DEADLINE: u32 = 0x6e0;
    /// First x2APIC register; register at xAPIC offset `off` is `X2APIC_BASE + (off >> 4)`.
    pub const X2APIC_BASE: u32 = 0x800;
    pub const IA32_EFER: u32 = 0xc000_0080;
    /// GS base (the kernel's per-CPU block while kernel code runs, `percpu`).
    pub const IA32_GS_BASE: u32 = 0xc000_0101;
    /// The base SWAPGS exchanges with GS base (the user's while the kernel runs).
    pub const IA32_KERNEL_GS_BASE: u32 = 0xc000_0102;
    /// The x2APIC interrupt command register (one 64-bit MSR; `apic` sends IPIs through it).
    pub const X2APIC_ICR: u32 = 0x830;
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

    // The batched doors of a task switch (`write_list`, `rdpmc_list`): one unrolled block per
    // element, entered through a table of offsets at the block of the last element, so n
    // elements cost n blocks of four instructions and one computed jump, no loop. Elements go
    // last to first.

    // u32 baremark_wrmsr_list(const u32 *msrs /* rdi */, const u64 *values /* rsi */,
    //                         u64 n /* rdx, <= BATCH_MAX */): 0 = ok, 1 = #GP
    .global baremark_wrmsr_list
    baremark_wrmsr_list:
        lea rax, [rip + baremark_wrmsr_list_table]
        movsxd rdx, dword ptr [rax + rdx * 4]
        add rax, rdx
        jmp rax
    .irp k, 23,22,21,20,19,18,17,16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0
    baremark_wrmsr_list_at_\k:
        mov ecx, dword ptr [rdi + 4 * \k]
        mov eax, dword ptr [rsi + 8 * \k]
        mov edx, dword ptr [rsi + 8 * \k + 4]
    baremark_wrmsr_list_insn_\k:
        wrmsr
    .endr
    baremark_wrmsr_list_done:
        xor eax, eax
        ret
    baremark_batch_fixup:
        mov eax, 1
        ret

    // u32 baremark_rdpmc_list(const u32 *ecx /* rdi */, u64 *out /* rsi */,
    //                         u64 n /* rdx, <= BATCH_MAX */): 0 = ok, 1 = fault
    .global baremark_rdpmc_list
    baremark_rdpmc_list:
        lea rax, [rip + baremark_rdpmc_list_table]
        movsxd rdx, dword ptr [rax + rdx * 4]
        add rax, rdx
        jmp rax
    .irp k, 23,22,21,20,19,18,17,16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0
    baremark_rdpmc_list_at_\k:
        mov ecx, dword ptr [rdi + 4 * \k]
    baremark_rdpmc_list_insn_\k:
        rdpmc
        mov dword ptr [rsi + 8 * \k], eax
        mov dword ptr [rsi + 8 * \k + 4], edx
    .endr
        xor eax, eax
        ret

    .section .rodata.baremark_msr_batch, "a"
    .balign 4
    // Entry n: the block of element n - 1 (entry 0: nothing to do), relative to the table.
    baremark_wrmsr_list_table:
        .long baremark_wrmsr_list_done - baremark_wrmsr_list_table
    .irp k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23
        .long baremark_wrmsr_list_at_\k - baremark_wrmsr_list_table
    .endr
    baremark_rdpmc_list_table:
        .long baremark_wrmsr_list_done - baremark_rdpmc_list_table
    .irp k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23
        .long baremark_rdpmc_list_at_\k - baremark_rdpmc_list_table
    .endr

    .section .data.rel.ro.baremark_extable, "aw"
    .balign 8
    .global baremark_msr_extable
    baremark_msr_extable:
        .quad baremark_msr_read_insn, baremark_msr_read_fixup
        .quad baremark_msr_write_insn, baremark_msr_write_fixup
        .quad baremark_gp_selftest_insn, baremark_gp_selftest_fixup
        .quad baremark_rdpmc_insn, baremark_rdpmc_fixup
    .irp k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23
        .quad baremark_wrmsr_list_insn_\k, baremark_batch_fixup
        .quad baremark_rdpmc_list_insn_\k, baremark_batch_fixup
    .endr
    .global baremark_msr_extable_end
    baremark_msr_extable_end:
    "#
);

unsafe extern "C" {
    fn baremark_msr_read(msr: u32, out: *mut u64) -> u32;
    fn baremark_msr_write(msr: u32, value: u64) -> u32;
    fn baremark_gp_selftest() -> u32;
    fn baremark_rdpmc(ecx: u32, out: *mut u64) -> u32;
    fn baremark_wrmsr_list(msrs: *const u32, values: *const u64, n: u64) -> u32;
    fn baremark_rdpmc_list(ecx: *const u32, out: *mut u64, n: u64) -> u32;
    static baremark_msr_extable: [u64; 2];
    static baremark_msr_extable_end: [u64; 2];
}

/// The most elements of one [`WriteList`] or [`rdpmc_list`] (the unrolled blocks above).
pub const BATCH_MAX: usize = 24;

/// The fix-up address for a #GP at `rip`, if `rip` is one of this module's MSR instructions.
/// Called by the trap dispatcher for kernel-mode #GP only.
pub(crate) fn fixup_for(rip: u64) -> Option<u64> {
    let start = core::ptr::addr_of!(baremark_msr_extable);
    let end = core::ptr::addr_of!(baremark_msr_extable_end);
    let len = (end as usize - start as usize) / core::mem::size_of::<[u64; 2]>();
    // SAFETY: the table is immutable data defined above: pairs of 64-bit words from
    // `baremark_msr_extable` up to `baremark_msr_extable_end`.
    let table = unsafe { core::slice::from_raw_parts(start, len) };
    table
        .iter()
        .find(|entry| entry[0] == rip)
        .map(|entry| entry[1])
}

/// Executes RDPMC with ECX = `ecx`. A fault (#GP: no such counter, or CR4.PCE matters only in
/// ring 3; #UD: QEMU's TCG has no RDPMC) comes back as an error.
#[inline]
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

/// MSR_SMI_COUNT (0x34, Intel since Nehalem, read-only): System Management Interrupts taken
/// since reset. `None` where it faults (AMD, older Intel). SMIs are invisible to the kernel; this
/// is how a measurement knows one landed in it.
pub fn smi_count() -> Option<u64> {
    read(0x34).ok()
}

/// Reads an MSR. A #GP (MSR absent, or refused by a hypervisor) comes back as an error.
#[inline]
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

/// The counters writes may reach: every known one until [`set_pmu_limits`].
static LIMITS: spin::RwLock<PmuLimits> = spin::RwLock::new(PmuLimits::ALL_KNOWN);

/// Narrows the allow-list to the counters the PMU discovery found (called once at boot, before
/// a backend writes anything).
pub fn set_pmu_limits(limits: PmuLimits) {
    *LIMITS.write() = limits;
}

/// Whether the kernel crate may write `msr` through [`write`]: MSRs whose value cannot break
/// memory safety or the kernel's setup (`msr_allow::writable`): the counters and controls the
/// PMU discovery found, the TSC, the TSC deadline, the companions of events. Not included:
/// anything that makes the CPU write memory (DS area, PEBS, BTS via DEBUGCTL), EFER, the APIC
/// base, the syscall MSRs, segment bases.
pub fn is_writable_by_kernel(msr: u32) -> bool {
    writable(msr, &LIMITS.read())
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

/// A list of MSRs the kernel crate may write (each checked against [`is_writable_by_kernel`]
/// once, when the list is made), for [`write_list`]: a task's switch writes the same MSRs at
/// every switch, so they are checked once per configuration, not once per write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteList {
    len: usize,
    msrs: [u32; BATCH_MAX],
}

impl WriteList {
    /// The empty list.
    pub const EMPTY: WriteList = WriteList {
        len: 0,
        msrs: [0; BATCH_MAX],
    };

    /// A list of `msrs`; refused (`Protected`) if one of them is not writable by the kernel
    /// crate or there are more than [`BATCH_MAX`].
    pub fn new(msrs: &[u32]) -> Result<WriteList, MsrError> {
        if msrs.len() > BATCH_MAX || !msrs.iter().all(|&m| is_writable_by_kernel(m)) {
            return Err(MsrError::Protected);
        }
        let mut list = WriteList::EMPTY;
        list.msrs[..msrs.len()].copy_from_slice(msrs);
        list.len = msrs.len();
        Ok(list)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The MSRs, in list order.
    pub fn msrs(&self) -> &[u32] {
        &self.msrs[..self.len]
    }
}

/// Writes `values[i]` to MSR `list[i]` for every element of the list, **last element first**
/// (one unrolled block each; nothing else between the writes). `Err` if `values` is shorter
/// than the list (nothing written) or a write raised #GP (the elements after it in the list,
/// i.e. before it in time, were written).
#[inline]
pub fn write_list(list: &WriteList, values: &[u64]) -> Result<(), MsrError> {
    if values.len() < list.len {
        return Err(MsrError::Protected);
    }
    // SAFETY: every MSR of the list passed `is_writable_by_kernel` when the list was made (its
    // fields are private); `values` holds at least `len` (<= BATCH_MAX) elements, which the
    // routine reads and nothing else; a #GP is turned into an error by the exception table.
    let status =
        unsafe { baremark_wrmsr_list(list.msrs.as_ptr(), values.as_ptr(), list.len as u64) };
    if status == 0 {
        Ok(())
    } else {
        Err(MsrError::GeneralProtection)
    }
}

/// RDPMC with ECX = `ecx[i]` into `out[i]` for every element of `ecx` (at most
/// [`BATCH_MAX`]), last first, one unrolled block each. `Err` if `out` is shorter than `ecx`,
/// `ecx` is too long (nothing read), or an RDPMC faulted (#GP: no such counter; #UD: no
/// RDPMC).
#[inline]
pub fn rdpmc_list(ecx: &[u32], out: &mut [u64]) -> Result<(), MsrError> {
    if ecx.len() > BATCH_MAX || out.len() < ecx.len() {
        return Err(MsrError::Protected);
    }
    // SAFETY: RDPMC only reads counters; the routine reads `ecx.len()` (<= BATCH_MAX) elements
    // of `ecx` and writes as many of `out`, which is at least that long; a fault is turned
    // into an error by the exception table.
    let status = unsafe { baremark_rdpmc_list(ecx.as_ptr(), out.as_mut_ptr(), ecx.len() as u64) };
    if status == 0 {
        Ok(())
    } else {
        Err(MsrError::GeneralProtection)
    }
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

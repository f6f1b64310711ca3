//! CPU control: control registers, protections, the time-stamp counter, interrupts, halting.

use raw_cpuid::CpuId;
use x86_64::instructions::interrupts;
use x86_64::registers::control::{Cr0, Cr0Flags, Cr2, Cr4, Cr4Flags};

use crate::msr;

/// Reads the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC only reads the counter (CR4.TSD is never set by this kernel).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Reads the time-stamp counter after all earlier instructions have completed
/// (`lfence; rdtsc`), so the reading is not taken early by out-of-order execution.
#[inline(always)]
pub fn rdtsc_ordered() -> u64 {
    // SAFETY: LFENCE and RDTSC have no side effects besides ordering and reading the TSC.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
}

/// The faulting linear address of the last page fault.
pub fn cr2() -> u64 {
    Cr2::read_raw()
}

/// Raw CR0.
pub fn cr0() -> u64 {
    Cr0::read_raw()
}

/// Raw CR3 (the page-table root and its flag bits).
pub fn cr3() -> u64 {
    let (frame, flags) = x86_64::registers::control::Cr3::read_raw();
    frame.start_address().as_u64() | u64::from(flags)
}

/// Raw CR4.
pub fn cr4() -> u64 {
    Cr4::read_raw()
}

/// Enables maskable interrupts.
pub fn enable_interrupts() {
    interrupts::enable();
}

/// Disables maskable interrupts.
pub fn disable_interrupts() {
    interrupts::disable();
}

/// Enables interrupts and halts until one arrives, atomically (`sti; hlt`), so an interrupt
/// that becomes pending between the two cannot be missed. Interrupts stay enabled.
pub fn enable_interrupts_and_halt() {
    interrupts::enable_and_hlt();
}

/// PAUSE: a spin-wait hint. It also ends the vCPU's turn under QEMU's `-icount` round-robin
/// (`core::hint::spin_loop` emits nothing on this target), so a CPU that waits for another
/// lets it run.
pub fn pause() {
    // SAFETY: PAUSE has no operands and no effect but a delay.
    unsafe { core::arch::asm!("pause", options(nomem, nostack, preserves_flags)) };
}

/// Whether RFLAGS.IF is set.
pub fn interrupts_enabled() -> bool {
    interrupts::are_enabled()
}

/// Stops this CPU for good: interrupts off, then HLT in a loop (an NMI would wake it).
pub fn halt_forever() -> ! {
    loop {
        interrupts::disable();
        x86_64::instructions::hlt();
    }
}

/// What happened to one protection feature at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    /// Turned on by the kernel.
    Enabled,
    /// Already on when the kernel started (the bootloader turns on NX and WP).
    AlreadyOn,
    /// The CPU does not have the feature.
    Unsupported,
    /// The CPU advertises the feature but refused to enable it.
    Failed,
}

/// The protections the kernel turns on where the CPU has them.
#[derive(Clone, Copy, Debug)]
pub struct Protections {
    /// No-execute pages (EFER.NXE).
    pub nx: Protection,
    /// Supervisor-mode execution prevention (CR4.SMEP): the kernel never runs user pages.
    pub smep: Protection,
    /// Supervisor-mode access prevention (CR4.SMAP): the kernel never touches user pages
    /// by accident; deliberate copies will use STAC/CLAC.
    pub smap: Protection,
    /// User-mode instruction prevention (CR4.UMIP): SGDT, SIDT, SLDT, SMSW, STR fault in ring 3.
    pub umip: Protection,
    /// Write protection of read-only pages in ring 0 (CR0.WP).
    pub wp: Protection,
}

/// Turns on NX, SMEP, SMAP, UMIP and CR0.WP where the CPU has them.
pub fn enable_protections() -> Protections {
    let cpuid = CpuId::new();
    let ext = cpuid.get_extended_processor_and_feature_identifiers();
    let leaf7 = cpuid.get_extended_feature_info();
    let has_nx = ext.as_ref().is_some_and(|e| e.has_execute_disable());
    let has_smep = leaf7.as_ref().is_some_and(|f| f.has_smep());
    let has_smap = leaf7.as_ref().is_some_and(|f| f.has_smap());
    let has_umip = leaf7.as_ref().is_some_and(|f| f.has_umip());

    let nx = if !has_nx {
        Protection::Unsupported
    } else {
        const NXE: u64 = 1 << 11;
        match msr::read(msr::addr::IA32_EFER) {
            Ok(efer) if efer & NXE != 0 => Protection::AlreadyOn,
            Ok(efer) => {
                // SAFETY: setting EFER.NXE only gives meaning to bit 63 of page-table
                // entries, which the bootloader and this kernel use for no-execute already.
                match unsafe { msr::write_privileged(msr::addr::IA32_EFER, efer | NXE) } {
                    Ok(()) => Protection::Enabled,
                    Err(_) => Protection::Failed,
                }
            }
            Err(_) => Protection::Failed,
        }
    };

    let wp = if Cr0::read().contains(Cr0Flags::WRITE_PROTECT) {
        Protection::AlreadyOn
    } else {
        // SAFETY: CR0.WP only makes ring-0 writes honour read-only pages; the kernel never
        // writes through a read-only mapping on purpose.
        unsafe { Cr0::update(|f| f.insert(Cr0Flags::WRITE_PROTECT)) };
        Protection::Enabled
    };

    let set_cr4 = |present: bool, flag: Cr4Flags| {
        if !present {
            Protection::Unsupported
        } else if Cr4::read().contains(flag) {
            Protection::AlreadyOn
        } else {
            // SAFETY: the CPU advertises the feature (checked above). SMEP/SMAP/UMIP only
            // restrict what ring 0 may do with user pages and what ring 3 may execute; no user
            // mappings exist yet and the kernel does not touch user memory without STAC.
            unsafe { Cr4::update(|f| f.insert(flag)) };
            Protection::Enabled
        }
    };
    let smep = set_cr4(has_smep, Cr4Flags::SUPERVISOR_MODE_EXECUTION_PROTECTION);
    let smap = set_cr4(has_smap, Cr4Flags::SUPERVISOR_MODE_ACCESS_PREVENTION);
    let umip = set_cr4(has_umip, Cr4Flags::USER_MODE_INSTRUCTION_PREVENTION);

    Protections {
        nx,
        smep,
        smap,
        umip,
        wp,
    }
}

/// CR4.PCE as last written by [`set_user_rdpmc`] (it is clear at boot and nothing else writes
/// it), so that setting it to what it already is costs no CR4 access.
static USER_RDPMC: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Sets (`true`) or clears (`false`) CR4.PCE, which lets ring 3 execute RDPMC. With it clear,
/// RDPMC in ring 3 raises #GP (and #UD under QEMU's TCG), which the task runner emulates. The
/// task runner sets it to what the task it enters needs (set for a task whose counters are
/// live in the hardware) and leaves it so in the kernel: RDPMC in ring 0 does not depend on it.
/// Writes CR4 only when the value changes.
#[inline]
pub fn set_user_rdpmc(enabled: bool) {
    use core::sync::atomic::Ordering::Relaxed;
    if USER_RDPMC.load(Relaxed) == enabled {
        return;
    }
    // SAFETY: CR4.PCE only decides whether RDPMC is allowed outside ring 0; it changes no
    // mapping, no memory access rule and nothing the kernel relies on. Reading counters leaks
    // no kernel state beyond counts the kernel programmed for the task running.
    unsafe {
        Cr4::update(|f| f.set(Cr4Flags::PERFORMANCE_MONITOR_COUNTER, enabled));
    }
    USER_RDPMC.store(enabled, Relaxed);
}

/// Whether CR4.PCE is set (RDPMC allowed in ring 3).
pub fn user_rdpmc() -> bool {
    Cr4::read().contains(Cr4Flags::PERFORMANCE_MONITOR_COUNTER)
}

/// Instructions in one iteration of [`known_loop`].
pub const KNOWN_LOOP_BODY: u64 = 10;

/// Runs a loop of exactly `iterations` x 10 instructions (8 `nop`, `dec`, `jnz`) with one branch
/// per iteration: the workload whose counts the PMU selftest knows in advance (kvm-unit-tests
/// uses the same shape). `iterations` must be at least 1.
pub fn known_loop(iterations: u64) {
    let n = iterations.max(1);
    // SAFETY: the loop only changes RCX (declared) and the flags; it touches no memory.
    unsafe {
        core::arch::asm!(
            "2:",
            "nop", "nop", "nop", "nop", "nop", "nop", "nop", "nop",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
}

//! Per-CPU data: one block per CPU, reached through the GS base while the kernel runs.
//!
//! Each CPU's IA32_GS_BASE holds the address of its [`PerCpu`] block whenever kernel code runs;
//! IA32_KERNEL_GS_BASE holds the user's GS base. The ring-3 paths in `user.rs` execute SWAPGS
//! on every entry from ring 3 (first instruction of the SYSCALL entry and of the trap entry
//! from ring 3) and right before every return to ring 3, so ring 3 never sees the kernel's
//! base and a GS a task loaded never reaches the kernel.
//!
//! The one window where kernel code runs with the user's GS base is between that last SWAPGS
//! and IRETQ/SYSRETQ (a dozen instructions, interrupts off). Only an NMI or machine check can
//! arrive there; their handlers must not use per-CPU data (they count in global atomics).
//!
//! The block's first fields are at fixed offsets the assembly uses (`gs:[KERNEL_RSP_AT]` ...).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::msr;

pub use crate::layout::MAX_CPUS;

/// One CPU's block. `repr(C)`: the assembly reads the first fields by offset.
#[repr(C)]
pub struct PerCpu {
    /// Its own address (so `gs:[0]` gives the block).
    self_ptr: AtomicU64,
    /// `user::run`'s stack pointer while a task runs on this CPU (the SYSCALL entry and the
    /// trap exit load it).
    pub(crate) kernel_rsp: AtomicU64,
    /// The user RSP between SYSCALL and its store into the context.
    pub(crate) user_rsp_scratch: AtomicU64,
    /// The CPU's index: 0 for the boot CPU, then in start-up order.
    index: u32,
    /// Its local APIC ID.
    apic_id: AtomicU32,
    /// This CPU's TSS (for RSP0), set by `gdt`.
    pub(crate) tss: AtomicU64,
    /// SYSCALL set up on this CPU: 0 not yet, 1 done, 2 the CPU refused.
    pub(crate) syscall_state: AtomicU32,
    /// Jobs this CPU has run (`smp::run_on`), for the report.
    pub(crate) jobs: AtomicU64,
}

/// Offsets the assembly uses.
pub(crate) const KERNEL_RSP_AT: usize = core::mem::offset_of!(PerCpu, kernel_rsp);
pub(crate) const USER_RSP_AT: usize = core::mem::offset_of!(PerCpu, user_rsp_scratch);

impl PerCpu {
    pub(crate) const fn new(index: u32, apic_id: u32) -> PerCpu {
        PerCpu {
            self_ptr: AtomicU64::new(0),
            kernel_rsp: AtomicU64::new(0),
            user_rsp_scratch: AtomicU64::new(0),
            index,
            apic_id: AtomicU32::new(apic_id),
            tss: AtomicU64::new(0),
            syscall_state: AtomicU32::new(0),
            jobs: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn index(&self) -> usize {
        self.index as usize
    }

    pub fn apic_id(&self) -> u32 {
        self.apic_id.load(Ordering::Relaxed)
    }

    /// Jobs run on this CPU since boot.
    pub fn jobs(&self) -> u64 {
        self.jobs.load(Ordering::Relaxed)
    }
}

/// The boot CPU's block (its APIC ID is filled in once the APIC is up).
static BSP: PerCpu = PerCpu::new(0, 0);

/// Every CPU's block by index (null: not started).
static BLOCKS: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Points this CPU's GS base at `block` and records it under its index. Called once per CPU,
/// first thing after its GDT is loaded.
///
/// # Safety
/// `block` must live for the rest of the run and belong to this CPU alone (every field is an
/// atomic or written once before the block is shared, so shared references are sound).
pub(crate) unsafe fn install(block: *mut PerCpu) {
    // SAFETY: the caller gives a block that lives forever; shared access (atomics).
    let b = unsafe { &*block };
    b.self_ptr.store(block as u64, Ordering::Relaxed);
    let index = b.index as usize;
    // SAFETY: GS is used by the kernel only through this block (module docs); the user's base
    // starts at 0.
    unsafe {
        let _ = msr::write_privileged(msr::addr::IA32_GS_BASE, block as u64);
        let _ = msr::write_privileged(msr::addr::IA32_KERNEL_GS_BASE, 0);
    }
    if index < MAX_CPUS {
        BLOCKS[index].store(block as u64, Ordering::Release);
    }
}

/// Installs the boot CPU's block. Call once, early in boot.
pub(crate) fn init_bsp() {
    // SAFETY: the static lives forever and is the boot CPU's alone; this runs once, before
    // any other CPU starts.
    unsafe { install(core::ptr::from_ref(&BSP).cast_mut()) };
}

/// Records the boot CPU's APIC ID (known once its APIC is up).
pub fn set_bsp_apic_id(id: u32) {
    BSP.apic_id.store(id, Ordering::Relaxed);
}

/// This CPU's block.
#[inline]
pub fn this() -> &'static PerCpu {
    let ptr: u64;
    // SAFETY: GS base is this CPU's block while kernel code runs (module docs); reading its
    // first word has no side effect.
    unsafe {
        core::arch::asm!("mov {}, gs:[0]", out(reg) ptr, options(nostack, readonly, preserves_flags))
    };
    // SAFETY: the block lives forever (`install`); shared access only (mutable fields are
    // atomics or written by this CPU's assembly).
    unsafe { &*(ptr as *const PerCpu) }
}

/// This CPU's index (0: the boot CPU).
#[inline]
pub fn index() -> usize {
    this().index()
}

/// The block of CPU `index`, if it was started.
pub fn of(index: usize) -> Option<&'static PerCpu> {
    let ptr = BLOCKS.get(index)?.load(Ordering::Acquire);
    // SAFETY: non-null entries are blocks that live forever (`install`).
    (ptr != 0).then(|| unsafe { &*(ptr as *const PerCpu) })
}

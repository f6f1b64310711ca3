//! Global descriptor table and task-state segment.
//!
//! Layout (fixed, because SYSCALL/SYSRET derive selectors from it):
//!
//! | selector | segment                      |
//! |----------|------------------------------|
//! | 0x00     | null                         |
//! | 0x08     | kernel code (64-bit)         |
//! | 0x10     | kernel data                  |
//! | 0x1b     | user data (RPL 3)            |
//! | 0x23     | user code (64-bit, RPL 3)    |
//! | 0x28     | TSS (two slots)              |
//!
//! SYSRET loads SS = STAR[63:48] + 8 and CS = STAR[63:48] + 16, so with STAR[63:48] = 0x10 the
//! user data segment must come right before user code, as here.
//!
//! The TSS carries the interrupt stacks (IST): double fault, NMI and machine check switch to a
//! known-good stack, so a kernel stack overflow still produces a fault report.

use core::sync::atomic::Ordering::Relaxed;

use x86_64::VirtAddr;
use x86_64::instructions::segmentation::{CS, DS, ES, SS, Segment};
use x86_64::instructions::tables::load_tss;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use x86_64::structures::tss::TaskStateSegment;

use crate::layout::IST_STACK_SIZE;

pub const KERNEL_CODE_SELECTOR: u16 = 0x08;
pub const KERNEL_DATA_SELECTOR: u16 = 0x10;
pub const USER_DATA_SELECTOR: u16 = 0x18 | 3;
pub const USER_CODE_SELECTOR: u16 = 0x20 | 3;
pub const TSS_SELECTOR: u16 = 0x28;

/// IST slot (1-based, as written into IDT gates) for the double-fault handler.
pub const IST_DOUBLE_FAULT: u8 = 1;
/// IST slot for NMI.
pub const IST_NMI: u8 = 2;
/// IST slot for machine check.
pub const IST_MACHINE_CHECK: u8 = 3;

#[repr(C, align(16))]
struct IstStacks([[u8; IST_STACK_SIZE]; 3]);

/// One CPU's descriptor tables: its GDT (each CPU needs its own, since LTR marks its TSS
/// descriptor busy), its TSS and its interrupt stacks.
#[repr(C, align(16))]
pub(crate) struct CpuTables {
    ist: IstStacks,
    tss: TaskStateSegment,
    gdt: GlobalDescriptorTable,
}

impl CpuTables {
    /// Bytes one CPU's tables take (start-up allocates them for each other CPU).
    pub(crate) const SIZE: usize = core::mem::size_of::<CpuTables>();
}

// The boot CPU's tables. The CPU writes the IST stacks and reads the TSS; Rust touches them
// only through raw pointers (in `load`, `set_ring0_stack`), never through a reference.
static mut BSP_TABLES: CpuTables = CpuTables {
    ist: IstStacks([[0; IST_STACK_SIZE]; 3]),
    tss: TaskStateSegment::new(),
    gdt: GlobalDescriptorTable::new(),
};

/// Builds and loads the boot CPU's GDT and TSS, reloads the segment registers and installs its
/// per-CPU block (`percpu`). Call once, early.
pub fn init() {
    // SAFETY: the static lives forever and is the boot CPU's alone; this runs once.
    unsafe { load(&raw mut BSP_TABLES) };
    crate::percpu::init_bsp();
    set_this_cpu_tables(&raw mut BSP_TABLES);
}

/// Offset of the TSS in [`CpuTables`].
const TSS_AT: usize = core::mem::offset_of!(CpuTables, tss);

/// Fills `tables` (IST pointers, the GDT with its TSS descriptor), loads them on this CPU and
/// reloads the segment registers.
///
/// # Safety
/// `tables` must be zeroed or fresh, live for the rest of the run, and belong to this CPU.
pub(crate) unsafe fn load(tables: *mut CpuTables) {
    // SAFETY: the caller gives tables this CPU owns; the pointers stay inside them.
    let tss = unsafe { &raw mut (*tables).tss };
    // SAFETY: as above.
    let stacks = unsafe { &raw mut (*tables).ist };
    // SAFETY: as above; a fresh TSS (all zero is a valid empty TSS, with no I/O bitmap: the
    // base is written by `new`).
    unsafe { tss.write(TaskStateSegment::new()) };
    for (slot, index) in [IST_DOUBLE_FAULT, IST_NMI, IST_MACHINE_CHECK]
        .into_iter()
        .enumerate()
    {
        // SAFETY: `stacks` points into the tables; the pointer arithmetic stays inside them
        // (one past the end of stack `slot` is the initial stack pointer, the stack grows down).
        let top = unsafe { (&raw mut (*stacks).0[slot]).add(1) } as u64;
        // SAFETY: nothing else accesses this CPU's TSS yet.
        unsafe { (*tss).interrupt_stack_table[usize::from(index) - 1] = VirtAddr::new(top) };
    }

    let mut gdt = GlobalDescriptorTable::new();
    let kcode = gdt.append(Descriptor::kernel_code_segment());
    let kdata = gdt.append(Descriptor::kernel_data_segment());
    let udata = gdt.append(Descriptor::user_data_segment());
    let ucode = gdt.append(Descriptor::user_code_segment());
    // SAFETY: the TSS lives for the whole run and is never moved (the caller's promise).
    let tss_sel = gdt.append(unsafe { Descriptor::tss_segment_unchecked(tss) });
    debug_assert_eq!(kcode.0, KERNEL_CODE_SELECTOR);
    debug_assert_eq!(kdata.0, KERNEL_DATA_SELECTOR);
    debug_assert_eq!(udata.0, USER_DATA_SELECTOR);
    debug_assert_eq!(ucode.0, USER_CODE_SELECTOR);
    debug_assert_eq!(tss_sel.0, TSS_SELECTOR);
    // SAFETY: the GDT slot lives as long as the tables; written before it is loaded.
    let gdt: &'static GlobalDescriptorTable = unsafe {
        (&raw mut (*tables).gdt).write(gdt);
        &(*tables).gdt
    };
    gdt.load();
    // SAFETY: the selectors name the segments just loaded, with the layout above; the TSS
    // descriptor is loaded once on this CPU (LTR marks it busy).
    unsafe {
        CS::set_reg(SegmentSelector(KERNEL_CODE_SELECTOR));
        SS::set_reg(SegmentSelector(KERNEL_DATA_SELECTOR));
        DS::set_reg(SegmentSelector(KERNEL_DATA_SELECTOR));
        ES::set_reg(SegmentSelector(KERNEL_DATA_SELECTOR));
        load_tss(SegmentSelector(TSS_SELECTOR));
    }
}

/// Records `tables`' TSS as this CPU's (for [`set_ring0_stack`]); after `percpu::install`.
pub(crate) fn set_this_cpu_tables(tables: *mut CpuTables) {
    crate::percpu::this()
        .tss
        .store(tables as u64 + TSS_AT as u64, Relaxed);
}

/// Sets the stack this CPU switches to when an interrupt or exception arrives in ring 3 (RSP0).
pub fn set_ring0_stack(top: u64) {
    // SAFETY: a plain store into this CPU's TSS (the stored address, see `set_this_cpu_tables`);
    // the CPU reads RSP0 only on its next transition from ring 3, which this CPU is not making.
    unsafe { ring0_stack_slot().write_unaligned(top) };
}

/// The address of this CPU's TSS.RSP0 (8 bytes, at offset 4 of the TSS, so not 8-byte
/// aligned). The ring-3 entry code in `user.rs` stores the kernel stack pointer there, in
/// assembly, right before it enters ring 3, since only then is the value known.
pub(crate) fn ring0_stack_slot() -> *mut u64 {
    let tss = crate::percpu::this().tss.load(Relaxed) as *mut TaskStateSegment;
    // SAFETY: only computes the address of a field of this CPU's TSS; nothing is read or
    // written, and no reference is created (the struct is packed).
    unsafe { (&raw mut (*tss).privilege_stack_table).cast::<u64>() }
}

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

use spin::Once;
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

// Written by the CPU when it switches to an IST stack; never accessed from Rust.
static mut IST_STACKS: IstStacks = IstStacks([[0; IST_STACK_SIZE]; 3]);

// Read by the CPU on privilege and IST switches. Rust only writes it through raw pointers
// (in `init` and `set_ring0_stack`), never through a reference.
static mut TSS: TaskStateSegment = TaskStateSegment::new();

static GDT: Once<GlobalDescriptorTable> = Once::new();

/// Builds and loads the GDT and TSS, and reloads the segment registers. Call once, early.
pub fn init() {
    let stacks = &raw mut IST_STACKS;
    let tss = &raw mut TSS;
    for (slot, index) in [IST_DOUBLE_FAULT, IST_NMI, IST_MACHINE_CHECK]
        .into_iter()
        .enumerate()
    {
        // SAFETY: `stacks` points to a static; the pointer arithmetic stays inside it (one past
        // the end of stack `slot` is the initial stack pointer, the stack grows down).
        let top = unsafe { (&raw mut (*stacks).0[slot]).add(1) } as u64;
        // SAFETY: single-threaded early boot; nothing else accesses the TSS yet.
        unsafe { (*tss).interrupt_stack_table[usize::from(index) - 1] = VirtAddr::new(top) };
    }

    let gdt = GDT.call_once(|| {
        let mut gdt = GlobalDescriptorTable::new();
        let kcode = gdt.append(Descriptor::kernel_code_segment());
        let kdata = gdt.append(Descriptor::kernel_data_segment());
        let udata = gdt.append(Descriptor::user_data_segment());
        let ucode = gdt.append(Descriptor::user_code_segment());
        // SAFETY: TSS is a static that lives for the whole run and is never moved.
        let tss_sel = gdt.append(unsafe { Descriptor::tss_segment_unchecked(tss) });
        debug_assert_eq!(kcode.0, KERNEL_CODE_SELECTOR);
        debug_assert_eq!(kdata.0, KERNEL_DATA_SELECTOR);
        debug_assert_eq!(udata.0, USER_DATA_SELECTOR);
        debug_assert_eq!(ucode.0, USER_CODE_SELECTOR);
        debug_assert_eq!(tss_sel.0, TSS_SELECTOR);
        gdt
    });
    gdt.load();
    // SAFETY: the selectors name the segments just loaded, with the layout above; the TSS
    // descriptor is loaded once (LTR marks it busy).
    unsafe {
        CS::set_reg(SegmentSelector(KERNEL_CODE_SELECTOR));
        SS::set_reg(SegmentSelector(KERNEL_DATA_SELECTOR));
        DS::set_reg(SegmentSelector(KERNEL_DATA_SELECTOR));
        ES::set_reg(SegmentSelector(KERNEL_DATA_SELECTOR));
        load_tss(SegmentSelector(TSS_SELECTOR));
    }
}

/// Sets the stack the CPU switches to when an interrupt or exception arrives in ring 3 (RSP0).
pub fn set_ring0_stack(top: u64) {
    let tss = &raw mut TSS;
    // SAFETY: a plain store to the static TSS; the CPU reads RSP0 only on the next transition
    // from ring 3, which cannot happen concurrently on this single-CPU kernel.
    unsafe { (*tss).privilege_stack_table[0] = VirtAddr::new(top) };
}

/// The address of TSS.RSP0 (8 bytes, at offset 4 of the TSS, so not 8-byte aligned). The ring-3
/// entry code in `user.rs` stores the kernel stack pointer there, in assembly, right before it
/// enters ring 3, since only then is the value known.
pub(crate) fn ring0_stack_slot() -> *mut u64 {
    let tss = &raw mut TSS;
    // SAFETY: only computes the address of a field of the static TSS; nothing is read or
    // written, and no reference is created (the struct is packed).
    unsafe { (&raw mut (*tss).privilege_stack_table).cast::<u64>() }
}

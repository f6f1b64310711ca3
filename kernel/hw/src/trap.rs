//! Traps: the interrupt descriptor table, the entry stubs, and the single Rust function every
//! interrupt and exception reaches.
//!
//! KERNEL ENTRY (interrupts and exceptions). All 256 vectors have an assembly stub that makes
//! the stack uniform (pushes a zero error code where the CPU pushes none, then the vector
//! number) and jumps to `baremark_trap_common`, which, for a trap from ring 0, saves every
//! general-purpose register into a [`TrapFrame`] and calls [`trap_dispatch`]. A handler may change the frame (resume address,
//! registers); the stub restores it and returns with IRETQ. This is the only path by which an
//! interrupt or exception enters the kernel, from ring 0 or ring 3.
//!
//! A trap from ring 3 is different: `baremark_trap_common` jumps at once to
//! `baremark_user_trap_entry` (in `user.rs`), which stores the registers and the frame into the
//! running user context without calling the kernel's handler and returns from `user::run`
//! instead of going back to ring 3. The SYSCALL entry is in `user.rs` too.
//!
//! Before the kernel's handler sees a kernel-mode #GP or #UD, the dispatcher consults the
//! exception table of the MSR door (`msr.rs`): a fault on a guarded RDMSR/WRMSR/RDPMC resumes at
//! its fix-up.
//!
//! All gates are interrupt gates (IF cleared on entry). Double fault, NMI and machine check run
//! on their own IST stacks. `int3` may be executed from ring 3 (DPL 3) so a payload's breakpoint
//! is reported as #BP rather than #GP.

use core::arch::global_asm;

use spin::Once;
use x86_64::instructions::tables::lidt;
use x86_64::structures::DescriptorTablePointer;

use crate::gdt::{IST_DOUBLE_FAULT, IST_MACHINE_CHECK, IST_NMI, KERNEL_CODE_SELECTOR};

/// The registers saved on entry, in stack order (lowest address first).
#[repr(C)]
#[derive(Clone, Debug, Default)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    /// Vector number (pushed by the stub).
    pub vector: u64,
    /// Error code pushed by the CPU, or 0 for vectors without one.
    pub error_code: u64,
    // Pushed by the CPU:
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

impl TrapFrame {
    /// Whether the trap came from ring 3.
    pub fn from_user(&self) -> bool {
        self.cs & 3 == 3
    }
}

/// Vectors for which the CPU pushes an error code.
pub const fn has_error_code(vector: u8) -> bool {
    matches!(vector, 8 | 10..=14 | 17 | 21 | 29 | 30)
}

// The stubs. `.altmacro` lets `%i` expand the loop counter into the label name.
global_asm!(
    r#"
    .section .text.baremark_trap, "ax"
    .altmacro

    .macro BAREMARK_TRAP_STUB n
    .balign 16
    baremark_trap_stub_\n:
        .if \n == 8 || (\n >= 10 && \n <= 14) || \n == 17 || \n == 21 || \n == 29 || \n == 30
        .else
        push 0
        .endif
        push \n
        jmp baremark_trap_common
    .endm

    .set i, 0
    .rept 256
        BAREMARK_TRAP_STUB %i
        .set i, i + 1
    .endr

    // KERNEL ENTRY: the common path of every interrupt and exception.
    baremark_trap_common:
        // From ring 3: straight into the running context (`user.rs`), which returns from
        // `user::run`; the kernel's handler is not called (the kernel decides, after `run`
        // returns, what the trap means for the task).
        test byte ptr [rsp + {cs_at_entry}], 3
        jnz baremark_user_trap_entry
        push rax
        push rbx
        push rcx
        push rdx
        push rsi
        push rdi
        push rbp
        push r8
        push r9
        push r10
        push r11
        push r12
        push r13
        push r14
        push r15
        // The CPU aligned RSP to 16 before pushing its frame; frame + error code + vector +
        // 15 registers = 22 words, so RSP is 16-byte aligned here as the ABI needs at a call.
        mov rdi, rsp
        cld
        call {dispatch}
        pop r15
        pop r14
        pop r13
        pop r12
        pop r11
        pop r10
        pop r9
        pop r8
        pop rbp
        pop rdi
        pop rsi
        pop rdx
        pop rcx
        pop rbx
        pop rax
        add rsp, 16
        iretq

    .macro BAREMARK_TRAP_STUB_ADDR n
        .quad baremark_trap_stub_\n
    .endm

    .section .data.rel.ro.baremark_trap_stubs, "aw"
    .balign 8
    .global baremark_trap_stubs
    baremark_trap_stubs:
    .set i, 0
    .rept 256
        BAREMARK_TRAP_STUB_ADDR %i
        .set i, i + 1
    .endr
    .noaltmacro
    "#,
    dispatch = sym trap_dispatch,
    cs_at_entry = const core::mem::offset_of!(TrapFrame, cs) - core::mem::offset_of!(TrapFrame, vector),
);

unsafe extern "C" {
    static baremark_trap_stubs: [u64; 256];
}

/// The kernel's trap handler, installed once with [`set_handler`].
pub type TrapHandler = fn(&mut TrapFrame);

static HANDLER: Once<TrapHandler> = Once::new();

/// Number of traps that arrived before a handler was installed.
static EARLY_TRAPS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Installs the kernel's trap handler (once; later calls are ignored).
pub fn set_handler(handler: TrapHandler) {
    HANDLER.call_once(|| handler);
}

extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    const INVALID_OPCODE: u64 = 6;
    const GENERAL_PROTECTION: u64 = 13;
    if (frame.vector == GENERAL_PROTECTION || frame.vector == INVALID_OPCODE)
        && let Some(fixup) = crate::msr::fixup_for(frame.rip)
    {
        frame.rip = fixup;
        return;
    }
    match HANDLER.get() {
        Some(handler) => handler(frame),
        None => {
            // Nothing can be reported yet; an exception this early would loop, so stop.
            EARLY_TRAPS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            if frame.vector < 32 {
                crate::cpu::halt_forever();
            }
        }
    }
}

/// One 16-byte IDT gate.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    reserved: u32,
}

impl Gate {
    const fn interrupt_gate(handler: u64, ist: u8, dpl: u8) -> Self {
        Gate {
            offset_low: handler as u16,
            selector: KERNEL_CODE_SELECTOR,
            ist,
            // Present, DPL, type 0xE = 64-bit interrupt gate.
            type_attr: 0x80 | (dpl << 5) | 0x0e,
            offset_mid: (handler >> 16) as u16,
            offset_high: (handler >> 32) as u32,
            reserved: 0,
        }
    }
}

#[repr(C, align(16))]
struct Idt([Gate; 256]);

static IDT: Once<Idt> = Once::new();

/// Loads the IDT [`init`] built on this CPU (every CPU shares it).
pub fn load_idt() {
    if let Some(idt) = IDT.get() {
        let pointer = DescriptorTablePointer {
            limit: (core::mem::size_of::<Idt>() - 1) as u16,
            base: x86_64::VirtAddr::from_ptr(idt),
        };
        // SAFETY: as in `init`: the IDT is never freed or modified.
        unsafe { lidt(&pointer) };
    }
}

/// Builds and loads the IDT.
pub fn init() {
    let idt = IDT.call_once(|| {
        // SAFETY: the stub table is immutable data defined in the assembly above.
        let stubs = unsafe { &*core::ptr::addr_of!(baremark_trap_stubs) };
        let mut gates = [Gate::default(); 256];
        for (vector, gate) in gates.iter_mut().enumerate() {
            let ist = match vector {
                8 => IST_DOUBLE_FAULT,
                2 => IST_NMI,
                18 => IST_MACHINE_CHECK,
                _ => 0,
            };
            let dpl = if vector == 3 { 3 } else { 0 };
            *gate = Gate::interrupt_gate(stubs[vector], ist, dpl);
        }
        Idt(gates)
    });
    let pointer = DescriptorTablePointer {
        limit: (core::mem::size_of::<Idt>() - 1) as u16,
        base: x86_64::VirtAddr::from_ptr(idt),
    };
    // SAFETY: the IDT is a static that is never freed or modified after this point; every gate
    // points at a stub in this module with the kernel code selector.
    unsafe { lidt(&pointer) };
}

/// Executes `ud2`, for tests of the exception path (raises #UD, vector 6).
pub fn raise_invalid_opcode() {
    // SAFETY: UD2 raises #UD, which the trap handler reports; no memory is touched.
    unsafe { core::arch::asm!("ud2", options(nomem, nostack)) };
}

/// Executes `int3`, for tests of the exception path (raises #BP, vector 3).
pub fn raise_breakpoint() {
    // SAFETY: INT3 raises #BP; the trap handler decides whether to resume after it.
    unsafe { core::arch::asm!("int3", options(nomem, nostack)) };
}

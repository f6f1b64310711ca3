//! Ring 3: user address spaces, entering ring 3, and getting control back.
//!
//! # User mode as a function call
//!
//! The kernel runs a task with [`run`]`(&mut UserContext, &AddressSpace) -> Exit`. `run` saves the kernel's
//! callee-saved registers, RFLAGS, CR3 and its stack pointer on the kernel stack, switches to
//! the task's address space and enters ring 3 with the context's registers. Control comes back
//! to the kernel only as a return from `run`, with the context updated to the task's registers
//! at that moment:
//!
//! - **SYSCALL** in ring 3 ([`Exit::Syscall`]): LSTAR points at `baremark_syscall_entry` below
//!   (a `KERNEL ENTRY`). It switches to the kernel stack, stores every user register into the
//!   context (RIP from RCX, RFLAGS from R11, as the CPU left them) and returns from `run`. The
//!   kernel reads the number and arguments from the context, writes the result into `rax` and
//!   calls `run` again.
//! - **Any interrupt or exception** in ring 3 ([`Exit::Trap`]): the CPU switches to TSS.RSP0,
//!   which `run` sets to its own saved stack pointer, so the trap frame lands just below `run`'s
//!   saved registers. The ordinary trap stubs (`trap.rs`) push the vector and jump to
//!   `baremark_trap_common`, which sees that the trap came from ring 3 and jumps to
//!   `baremark_user_trap_entry` below (a `KERNEL ENTRY`): it stores the task's registers and
//!   the CPU's frame straight into the running context (no trap frame, no Rust handler),
//!   abandons the frame and returns from `run`. Interrupts (the APIC timer, a PMI)
//!   arrive this way too, un-acknowledged: the kernel decides what to do (acknowledge them,
//!   resume the task, end it).
//!
//! So there is no kernel-side "current task" state beyond the context pointer, and no kernel
//! code runs on behalf of ring 3 except inside `run`'s caller.
//!
//! # Stacks
//!
//! One kernel stack per CPU: the stack `run` is called on. `run` stores its stack pointer
//! (below the saved registers) in this CPU's per-CPU block (`percpu`, `gs:[KERNEL_RSP_AT]`,
//! "KERNEL_RSP" below) and in this CPU's TSS.RSP0. The SYSCALL entry executes SWAPGS first
//! (GS base = this CPU's block), parks the user RSP in the block for the two instructions until
//! it is stored into the context, and loads KERNEL_RSP; the trap entry from ring 3 executes
//! SWAPGS first too, and the return paths execute it right before the virtual TSC's boundary
//! (so ring 3 always runs with its own GS base). Interrupts are off from the start of `run`'s
//! entry sequence until
//! IRETQ/SYSRETQ loads the user RFLAGS, and from the SYSCALL (SFMASK clears IF) or the trap gate
//! (interrupt gates clear IF) until `run` restores the kernel's RFLAGS. NMI, double fault and
//! machine check arrive on their IST stacks even from ring 3; they exit `run` the same way.
//!
//! # CR3
//!
//! `run` switches to the task's page tables on entry and back to the kernel's (the CR3 it found)
//! on every exit, so kernel code outside `run` always runs on the kernel's own tables and sees
//! every upper-half mapping made since the address space was created. The price is two CR3
//! writes (a TLB flush without PCID) per kernel entry; lazy switching or PCID can remove it
//! later. The entry code itself runs on the task's tables for a few instructions: the upper
//! half (kernel image, stacks, statics, heap) is shared, see [`AddressSpace`].
//!
//! # Returning: SYSRETQ or IRETQ
//!
//! `run` returns to ring 3 with SYSRETQ when the context is exactly what SYSCALL left (RCX =
//! RIP and R11 = RFLAGS: SYSRETQ loads RIP from RCX and RFLAGS from R11), otherwise with IRETQ
//! (the first entry, after a trap, after the kernel moved RIP). Either way `run` first refuses
//! a RIP or RSP outside the canonical lower half ([`Exit::InvalidContext`]): SYSRETQ with a
//! non-canonical RCX raises #GP *in ring 0* on Intel CPUs, on the user's stack (the classic
//! SYSRET vulnerability), and IRETQ to a non-canonical RIP raises #GP in ring 0 as well. A
//! SYSCALL as the last instruction below 0x0000_8000_0000_0000 produces exactly such a RIP.
//! RFLAGS is sanitised on every entry: IF and bit 1 set; IOPL, NT, VM, RF and the rest cleared;
//! only the arithmetic flags, TF, DF, AC and ID kept.
//!
//! After a trap from ring 3 the CPU leaves SS null in the kernel; the trap exit reloads the
//! kernel data selector, so the kernel always runs with SS = 0x10 and SYSRETQ never starts from
//! a null SS (AMD CPUs keep SS's hidden attributes across SYSRET).
//!
//! NMIs stay blocked from an NMI until the next IRETQ. An NMI in ring 3 exits `run` without
//! IRETQ, so NMIs stay blocked until the next entry by IRETQ or kernel interrupt return.
//!
//! # The virtual TSC's boundary
//!
//! The SYSCALL entry and the trap entry (from ring 3) read the TSC first thing (after saving
//! RAX and RDX) into the context (`left_tsc`); the exit path reads it as the last thing before IRETQ/SYSRETQ
//! (`BAREMARK_VTSC_PUBLISH`), stores the reading in the context, writes the counter page's
//! virtual-TSC `start` and `tsc_offset` through the kernel's mapping of the pinned page, and does
//! the retry-free reader's fix-up of RSI, branch-free. So everything the kernel does around a run
//! is outside the task's virtual TSC; what it sees is about a dozen instructions on each side
//! (docs/design.md). [`UserContext::set_virtual_tsc`] says what to publish,
//! [`UserContext::entered_tsc`] and [`UserContext::left_tsc`] give the readings back.
//!
//! # Light syscalls
//!
//! A syscall whose answer needs nothing of the kernel's (today: a number the kernel does not
//! know, answered ENOSYS) is answered by the SYSCALL entry itself when the kernel allows it for
//! the run ([`UserContext::set_light_syscalls`]): after the entry's TSC reading it compares the
//! number, parks RDI, RDX and RSP in the context, sanitises R11 as `run` sanitises RFLAGS, counts
//! the call (the context's and the global SYSRETQ entries too), reads the TSC, moves the counter
//! page's virtual-TSC `start` and `tsc_offset` on by the ticks since the entry's reading (so the
//! task's virtual TSC does not count them, as it does not count the general path's), and returns
//! with SYSRETQ: no CR3 write, no counter switch, no return from [`run`]. The kernel allows it only
//! when nothing it keeps for the task would change: its counters are all live in hardware (or
//! stopped) and nothing else is in the way (the task runner's `light_syscalls`); it takes the calls
//! and ticks afterwards ([`UserContext::take_light`]) into the task's syscall count, service time
//! and run time. A RIP that SYSRETQ could not return to (non-canonical RCX) takes the general path,
//! which refuses it.
//!
//! # Not saved
//!
//! x87/SSE/AVX state: the kernel is built soft-float (`x86_64-unknown-none`) and never touches
//! it, so a task's vector registers survive kernel entries untouched; between tasks the task
//! runner switches them lazily (`fpu::VectorState`). FS/GS bases are not used by the kernel or
//! saved.
//!
//! SMEP and SMAP stay on. The kernel never dereferences a user pointer: it reads and writes a
//! task's memory through [`AddressSpace::read`] and [`AddressSpace::write`], which check that
//! the range is mapped user memory of that address space and copy through the bootloader's
//! mapping of physical memory.

use core::arch::global_asm;
use core::mem::offset_of;
use core::sync::atomic::{AtomicU64, Ordering};

use x86_64::structures::paging::PageTableFlags;

use crate::gdt::{KERNEL_DATA_SELECTOR, USER_CODE_SELECTOR, USER_DATA_SELECTOR};
use crate::{msr, paging};

/// The lowest page a task may map: page 0 stays unmapped so null pointers fault.
pub const USER_START: u64 = 0x1000;
/// The end (exclusive) of user memory: the end of the canonical lower half.
pub const USER_END: u64 = 0x0000_8000_0000_0000;
/// Page size.
pub const PAGE_SIZE: u64 = 4096;

/// RFLAGS.IF.
pub const RFLAGS_IF: u64 = 1 << 9;
/// RFLAGS bit 1, always set.
const RFLAGS_FIXED: u64 = 1 << 1;
/// RFLAGS bits a task may hold: CF, PF, AF, ZF, SF, TF, DF, OF, AC, ID.
const RFLAGS_USER: u64 = (1 << 0)
    | (1 << 2)
    | (1 << 4)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 10)
    | (1 << 11)
    | (1 << 18)
    | (1 << 21);

/// The registers of a task, and its address space.
///
/// The kernel may change any register between runs (a syscall's result in `rax`, `rip` moved
/// past an emulated instruction). `rflags` is sanitised by [`run`] (IF always set, IOPL 0).
/// The address space can only be set from an [`AddressSpace`].
#[repr(C)]
#[derive(Clone, Debug)]
pub struct UserContext {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rip: u64,
    pub rsp: u64,
    pub rflags: u64,
    /// Physical address of the task's level-4 table.
    cr3: u64,
    // The last trap from ring 3 (written by `baremark_user_trap_entry`).
    trap_vector: u64,
    trap_error_code: u64,
    trap_cr2: u64,
    // The virtual TSC at the ring-3 boundary (`set_virtual_tsc`; "The virtual TSC's boundary"
    // in the module docs). Read by the exit assembly: where to publish (the kernel's address
    // of the counter page, or `VTSC_SINK`), the virtual value to resume from, and the
    // retry-free reader's window `[lo, lo + span]`.
    vtsc_page: u64,
    /// The id of the address space `vtsc_page` was pinned in (0: the sink).
    vtsc_space: u64,
    vtsc_base: u64,
    vtsc_window_lo: u64,
    vtsc_window_span: u64,
    // The page's `seq` and `interrupts` for the next run (written before the boundary).
    page_seq: u64,
    page_interrupts: u64,
    /// Entries into ring 3 with this context, by IRETQ and by SYSRETQ.
    entries: EntryCounts,
    /// The TSC read by the exit assembly right before IRETQ/SYSRETQ.
    entered_tsc: u64,
    /// The TSC read by the entry assembly (SYSCALL or trap from ring 3) first thing.
    left_tsc: u64,
    // Light syscalls ("Light syscalls" in the module docs): numbers above `light_above` are
    // answered `light_result` by the entry assembly itself (`u64::MAX`: none); it counts them
    // and the TSC ticks they took until the kernel takes both ([`UserContext::take_light`]).
    light_above: u64,
    light_result: u64,
    light_calls: u64,
    light_ticks: u64,
}

impl UserContext {
    /// A context that starts at `entry` with stack pointer `rsp` in `space`, every other
    /// register zero and interrupts enabled.
    pub fn new(space: &AddressSpace, entry: u64, rsp: u64) -> Self {
        UserContext {
            rax: 0,
            rbx: 0,
            rcx: 0,
            rdx: 0,
            rsi: 0,
            rdi: 0,
            rbp: 0,
            r8: 0,
            r9: 0,
            r10: 0,
            r11: 0,
            r12: 0,
            r13: 0,
            r14: 0,
            r15: 0,
            rip: entry,
            rsp,
            rflags: RFLAGS_IF | RFLAGS_FIXED,
            cr3: space.cr3(),
            trap_vector: 0,
            trap_error_code: 0,
            trap_cr2: 0,
            vtsc_page: sink_address(),
            vtsc_space: 0,
            vtsc_base: 0,
            vtsc_window_lo: u64::MAX,
            vtsc_window_span: 0,
            page_seq: 0,
            page_interrupts: 0,
            entries: EntryCounts {
                iretq: 0,
                sysretq: 0,
            },
            entered_tsc: 0,
            left_tsc: 0,
            light_above: u64::MAX,
            light_result: 0,
            light_calls: 0,
            light_ticks: 0,
        }
    }

    /// Whether the entry assembly answers syscalls itself during the next run, and which:
    /// `Some(light)` answers every number from `light.from` up with `light.result` (module
    /// docs, "Light syscalls"); `None`: every syscall returns from [`run`].
    #[inline]
    pub fn set_light_syscalls(&mut self, light: Option<LightSyscalls>) {
        (self.light_above, self.light_result) = match light {
            // Number 0 is never light (`from` 0 reads as 1).
            Some(l) => (l.from.max(1) - 1, l.result),
            None => (u64::MAX, 0),
        };
    }

    /// The light syscalls answered since the last call, and the TSC ticks they took (from the
    /// entry's reading to the exit's), and resets both. The kernel takes them after every
    /// [`run`]: the ticks lie between [`UserContext::entered_tsc`] and
    /// [`UserContext::left_tsc`] and are not the task's time.
    #[inline]
    pub fn take_light(&mut self) -> LightTaken {
        LightTaken {
            calls: core::mem::take(&mut self.light_calls),
            ticks: core::mem::take(&mut self.light_ticks),
        }
    }

    /// What the exit assembly publishes for the next run: `Some` while the task's virtual TSC
    /// counts. It then writes `seq`, `base` and `interrupts` at [`PAGE_SEQ_AT`],
    /// [`VTSC_BASE_AT`] and [`PAGE_INTERRUPTS_AT`] of the pinned counter page, reads the TSC
    /// as the last thing before IRETQ/SYSRETQ (`T`), stores `T` at [`VTSC_START_AT`] and
    /// `base - T` at [`VTSC_OFFSET_AT`] (nothing when `page` is `None`), and, when RIP is in
    /// the retry-free reader's window, puts `base - T` into RSI. `None`: nothing is published
    /// and RSI is left alone.
    #[inline]
    pub fn set_virtual_tsc(&mut self, publish: Option<VtscPublish<'_>>) {
        match publish {
            Some(p) => {
                (self.vtsc_page, self.vtsc_space) = p
                    .page
                    .map_or((sink_address(), 0), |pin| (pin.frame_virt, pin.space));
                self.vtsc_base = p.base;
                self.page_seq = p.seq;
                self.page_interrupts = p.interrupts;
                (self.vtsc_window_lo, self.vtsc_window_span) = match p.window {
                    Some((lo, hi)) if lo <= hi => (lo, hi - lo),
                    _ => (u64::MAX, 0),
                };
            }
            None => {
                (self.vtsc_page, self.vtsc_space) = (sink_address(), 0);
                self.vtsc_window_lo = u64::MAX;
                self.vtsc_window_span = 0;
            }
        }
    }

    /// Moves what [`set_virtual_tsc`](Self::set_virtual_tsc) published on: the virtual TSC to
    /// resume from, the page's `seq` and `interrupts` (the page and the reader's window stay).
    #[inline]
    pub fn update_virtual_tsc(&mut self, base: u64, seq: u64, interrupts: u64) {
        (self.vtsc_base, self.page_seq, self.page_interrupts) = (base, seq, interrupts);
    }

    /// The entries into ring 3 with this context so far, by IRETQ and by SYSRETQ.
    #[inline]
    pub fn entries(&self) -> EntryCounts {
        self.entries
    }

    /// The TSC at the last entry into ring 3 (the exit assembly's reading before IRETQ or
    /// SYSRETQ): where the task's virtual TSC started counting.
    #[inline]
    pub fn entered_tsc(&self) -> u64 {
        self.entered_tsc
    }

    /// The TSC at the last return from ring 3 (the entry assembly's first reading after
    /// SYSCALL, or after a trap's frame is saved): where the task's virtual TSC stopped.
    #[inline]
    pub fn left_tsc(&self) -> u64 {
        self.left_tsc
    }

    /// Moves the task to another address space.
    pub fn set_address_space(&mut self, space: &AddressSpace) {
        self.cr3 = space.cr3();
    }

    /// The physical address of the task's level-4 table.
    pub fn cr3(&self) -> u64 {
        self.cr3
    }
}

/// Offset in the counter page of the virtual TSC slot's `start` (the kernel's `user_page`
/// layout: the TSC slot at 32, `start` 16 into it; checked there).
pub const VTSC_START_AT: u64 = 48;
/// Offset in the counter page of `tsc_offset` (the same layout; checked there).
pub const VTSC_OFFSET_AT: u64 = 584;
/// Offsets in the counter page of `seq`, the virtual TSC slot's `base` and `interrupts` (the
/// same layout; checked there).
pub const PAGE_SEQ_AT: u64 = 8;
pub const VTSC_BASE_AT: u64 = 40;
pub const PAGE_INTERRUPTS_AT: u64 = 576;

/// The virtual TSC's boundary values for [`UserContext::set_virtual_tsc`].
#[derive(Clone, Copy, Debug)]
pub struct VtscPublish<'a> {
    /// The task's counter page (`None`: it has none).
    pub page: Option<&'a PinnedPage>,
    /// The virtual TSC when the task resumes.
    pub base: u64,
    /// The retry-free reader's window `[lo, hi]` (`None`: not registered).
    pub window: Option<(u64, u64)>,
    /// The page's `seq` for this run (the kernel's copy, advanced for the run).
    pub seq: u64,
    /// The interrupts the task has taken, for the page.
    pub interrupts: u64,
}

/// Which syscalls the entry assembly answers itself ([`UserContext::set_light_syscalls`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LightSyscalls {
    /// The first number answered (every number from here up is; at least 1).
    pub from: u64,
    /// RAX on return.
    pub result: u64,
}

/// What [`UserContext::take_light`] gives back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LightTaken {
    /// Light syscalls answered.
    pub calls: u64,
    /// TSC ticks from their entries' readings to their exits' readings.
    pub ticks: u64,
}

/// Where the exit assembly publishes when there is no page to publish to: a page-sized sink
/// nothing reads, so the assembly needs no branch.
#[repr(C, align(4096))]
struct Sink(core::cell::UnsafeCell<[u8; PAGE_SIZE as usize]>);
// SAFETY: only the exit assembly writes it (interrupts off; several CPUs may write at once, but
// nothing ever reads it, so the values do not matter).
unsafe impl Sync for Sink {}
static VTSC_SINK: Sink = Sink(core::cell::UnsafeCell::new([0; PAGE_SIZE as usize]));

#[inline]
fn sink_address() -> u64 {
    VTSC_SINK.0.get() as u64
}

/// How control came back from ring 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The task executed SYSCALL. The context holds its registers: the number in `rax`, the
    /// arguments in `rdi`, `rsi`, `rdx`, `r10`, `r8`, `r9`; `rip` is past the instruction
    /// (and `rcx`/`r11` hold RIP/RFLAGS, as the CPU put them there).
    Syscall,
    /// An interrupt or exception arrived in ring 3. For an exception that is a fault, `rip` in
    /// the context is the faulting instruction; for a trap (`int3`) and for interrupts it is
    /// the next one. Interrupts have not been acknowledged (no EOI).
    Trap {
        vector: u8,
        /// The CPU's error code (0 for vectors without one).
        error_code: u64,
        /// For a page fault (vector 14): the faulting address (CR2).
        cr2: Option<u64>,
    },
    /// The context cannot be entered: nothing was run.
    InvalidContext(ContextError),
}

/// Why [`run`] refused a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextError {
    /// RIP is not a canonical lower-half address (IRETQ and SYSRETQ would raise #GP in ring 0).
    /// A SYSCALL as the very last instruction of the lower half leaves RIP here.
    NonCanonicalRip,
    /// RSP is not a canonical lower-half address.
    NonCanonicalRsp,
}

/// Vector number of a page fault.
const PAGE_FAULT: u64 = 14;

/// Value returned by the assembly when SYSCALL ended the run.
const EXIT_SYSCALL: u64 = 1;
/// Value returned by the assembly when a trap ended the run.
const EXIT_TRAP: u64 = 2;

/// Entries into ring 3 by IRETQ and by SYSRETQ, since boot.
static IRETQ_ENTRIES: AtomicU64 = AtomicU64::new(0);
static SYSRETQ_ENTRIES: AtomicU64 = AtomicU64::new(0);

/// How many times [`run`] entered ring 3 with each instruction, since boot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryCounts {
    pub iretq: u64,
    pub sysretq: u64,
}

/// The entry counts so far (a task's are the difference between two readings).
pub fn entry_counts() -> EntryCounts {
    EntryCounts {
        iretq: IRETQ_ENTRIES.load(Ordering::Relaxed),
        sysretq: SYSRETQ_ENTRIES.load(Ordering::Relaxed),
    }
}

// Layout of `run`'s saved state, from KERNEL_RSP upwards:
//   [+0] context pointer  [+8] kernel CR3  [+16] kernel RFLAGS
//   [+24] r15  [+32] r14  [+40] r13  [+48] r12  [+56] rbp  [+64] rbx  [+72] return address
// Nine pushes after the call: RSP is 16-byte aligned there, as TSS.RSP0 should be.
global_asm!(
    r#"
    .section .text.baremark_user, "ax"

    // The virtual TSC's boundary on the way into ring 3 (module docs): RDI = the context,
    // every register but RAX, RDX and RDI already the task's. The TSC read here is the last
    // thing the kernel does before IRETQ/SYSRETQ; what follows it (the 12 instructions
    // below, three or four loads and the return instruction) is all of the exit path the task's virtual TSC
    // sees. Branch-free: the same count whether or not the fix-up applies.
    .macro BAREMARK_VTSC_PUBLISH
        rdtsc
        shl rdx, 32
        or rax, rdx
        mov [rdi + {entered_tsc}], rax
        mov rdx, [rdi + {vtsc_page}]
        mov [rdx + {vtsc_start_at}], rax
        neg rax
        add rax, [rdi + {vtsc_base}]
        mov [rdx + {vtsc_offset_at}], rax
        // The retry-free reader's fix-up: RIP in [lo, lo + span] -> RSI = the new offset.
        mov rdx, [rdi + {rip}]
        sub rdx, [rdi + {vtsc_window_lo}]
        cmp rdx, [rdi + {vtsc_window_span}]
        cmovbe rsi, rax
    .endm

    // The entry paths' stores of the task's registers into the context at `base`, all but
    // RAX, RDX (each path has them elsewhere) and RSP, RIP, RFLAGS.
    .macro BAREMARK_STORE_REGS base
        mov [\base + {rbx}], rbx
        mov [\base + {rcx}], rcx
        mov [\base + {rsi}], rsi
        mov [\base + {rdi}], rdi
        mov [\base + {rbp}], rbp
        mov [\base + {r8}], r8
        mov [\base + {r9}], r9
        mov [\base + {r10}], r10
        mov [\base + {r11}], r11
        mov [\base + {r12}], r12
        mov [\base + {r13}], r13
        mov [\base + {r14}], r14
        mov [\base + {r15}], r15
    .endm

    // u64 baremark_user_run(UserContext *ctx /* rdi */, u64 *tss_rsp0 /* rsi */,
    //                       u64 use_sysret /* rdx */): EXIT_SYSCALL or EXIT_TRAP
    .global baremark_user_run
    baremark_user_run:
        push rbx
        push rbp
        push r12
        push r13
        push r14
        push r15
        pushfq
        cli
        mov rax, cr3
        push rax
        push rdi
        mov gs:[{kernel_rsp}], rsp
        mov [rsi], rsp
        // The counter page's fields that change at every entry besides the boundary's: `seq`,
        // the virtual TSC slot's `base`, `interrupts` (kernel time: before the TSC reading).
        mov rcx, [rdi + {vtsc_page}]
        mov rax, [rdi + {page_seq}]
        mov [rcx + {page_seq_at}], rax
        mov rax, [rdi + {vtsc_base}]
        mov [rcx + {vtsc_base_at}], rax
        mov rax, [rdi + {page_interrupts}]
        mov [rcx + {page_interrupts_at}], rax
        mov rax, [rdi + {cr3}]
        mov cr3, rax
        test rdx, rdx
        jnz 2f

        // IRETQ: ring 3 with every register of the context.
        push {user_ss}
        push qword ptr [rdi + {rsp}]
        push qword ptr [rdi + {rflags}]
        push {user_cs}
        push qword ptr [rdi + {rip}]
        mov rbx, [rdi + {rbx}]
        mov rcx, [rdi + {rcx}]
        mov rsi, [rdi + {rsi}]
        mov rbp, [rdi + {rbp}]
        mov r8, [rdi + {r8}]
        mov r9, [rdi + {r9}]
        mov r10, [rdi + {r10}]
        mov r11, [rdi + {r11}]
        mov r12, [rdi + {r12}]
        mov r13, [rdi + {r13}]
        mov r14, [rdi + {r14}]
        mov r15, [rdi + {r15}]
        // The user's GS base from here on (percpu.rs): the last use of the kernel's was above.
        swapgs
        BAREMARK_VTSC_PUBLISH
        mov rax, [rdi + {rax}]
        mov rdx, [rdi + {rdx}]
        mov rdi, [rdi + {rdi}]
        iretq

    2:  // SYSRETQ: RIP from RCX, RFLAGS from R11 (the context has RCX = RIP, R11 = RFLAGS,
        // and RIP is canonical: checked by `run`). Interrupts are off, so nothing runs on the
        // user stack in ring 0 between loading RSP and SYSRETQ; an NMI uses its IST stack.
        mov rcx, [rdi + {rip}]
        mov r11, [rdi + {rflags}]
        mov rbx, [rdi + {rbx}]
        mov rsi, [rdi + {rsi}]
        mov rbp, [rdi + {rbp}]
        mov r8, [rdi + {r8}]
        mov r9, [rdi + {r9}]
        mov r10, [rdi + {r10}]
        mov r12, [rdi + {r12}]
        mov r13, [rdi + {r13}]
        mov r14, [rdi + {r14}]
        mov r15, [rdi + {r15}]
        swapgs
        BAREMARK_VTSC_PUBLISH
        mov rsp, [rdi + {rsp}]
        mov rax, [rdi + {rax}]
        mov rdx, [rdi + {rdx}]
        mov rdi, [rdi + {rdi}]
        sysretq

    // KERNEL ENTRY (SYSCALL from ring 3; IA32_LSTAR). CS/SS are the kernel's, IF/TF/DF/AC are
    // clear (SFMASK), RSP is still the user's, CR3 the task's (the kernel half is shared).
    .global baremark_syscall_entry
    baremark_syscall_entry:
        // The kernel's GS base (this CPU's block, percpu.rs) first: it holds the kernel stack.
        swapgs
        mov gs:[{user_rsp_scratch}], rsp
        mov rsp, gs:[{kernel_rsp}]
        push rax
        push rdx
        // The task's virtual TSC stops here: the SYSCALL and these five instructions are all
        // of the entry path it sees.
        rdtsc
        shl rdx, 32
        or rax, rdx
        mov rdx, [rsp + 16]
        mov [rdx + {left_tsc}], rax
        // A light syscall (module docs): a number above `light_above`, and a canonical RIP
        // to return to (SYSRETQ to a non-canonical RCX would fault in ring 0).
        mov rax, [rsp + 8]
        cmp rax, [rdx + {light_above}]
        jbe 3f
        mov rax, rcx
        shr rax, 47
        jz baremark_light_syscall
    3:  pop rdx
        mov rax, [rsp + 8]
        mov [rax + {rdx}], rdx
        BAREMARK_STORE_REGS rax
        mov [rax + {rip}], rcx
        mov [rax + {rflags}], r11
        pop rbx
        mov [rax + {rax}], rbx
        mov rbx, gs:[{user_rsp_scratch}]
        mov [rax + {rsp}], rbx
        mov eax, {exit_syscall}
        jmp baremark_user_return

    // A light syscall, answered here (module docs, "Light syscalls"): RDX = the context,
    // [rsp] = the task's RDX, [rsp + 8] its RAX; RCX = its RIP (canonical), R11 its RFLAGS.
    // Nothing is switched: not CR3, not the counters, not the kernel's registers; the task's
    // virtual TSC is moved on by the ticks spent here, as the general path's is.
    baremark_light_syscall:
        mov [rdx + {rdi}], rdi
        mov rdi, rdx
        pop rdx
        mov [rdi + {rdx}], rdx
        add rsp, 8
        mov rax, gs:[{user_rsp_scratch}]
        mov [rdi + {rsp}], rax
        // RFLAGS as `run` sanitises them (R11 is what SYSCALL saved).
        and r11, {rflags_user}
        or r11, {rflags_set}
        add qword ptr [rdi + {light_calls}], 1
        add qword ptr [rdi + {sysretq_entries}], 1
        lock add qword ptr [rip + {sysretq_global}], 1
        swapgs
        // The task's virtual TSC starts again here: its start and offset on the page move on
        // by the ticks since the entry's reading, so the task sees the same few instructions
        // on each side as on the general path.
        rdtsc
        shl rdx, 32
        or rax, rdx
        sub rax, [rdi + {left_tsc}]
        add [rdi + {light_ticks}], rax
        mov rdx, [rdi + {vtsc_page}]
        add [rdx + {vtsc_start_at}], rax
        sub [rdx + {vtsc_offset_at}], rax
        mov rax, [rdi + {light_result}]
        mov rsp, [rdi + {rsp}]
        mov rdx, [rdi + {rdx}]
        mov rdi, [rdi + {rdi}]
        sysretq

    // KERNEL ENTRY (an interrupt or exception in ring 3). Reached from `baremark_trap_common`
    // (trap.rs) with the stub's vector and error code on the stack below the CPU's frame, on
    // TSS.RSP0 = KERNEL_RSP, whose first word is the context. Stores the task's registers and
    // the frame straight into the context, abandons the frame and returns from `run`.
    .global baremark_user_trap_entry
    baremark_user_trap_entry:
        swapgs
        push rax
        push rdx
        // The task's virtual TSC stops here: the delivery, the stub, the ring test, the SWAPGS
        // and these two pushes are all of the entry path it sees.
        rdtsc
        shl rdx, 32
        or rax, rdx
        // The CPU pushed its frame right below TSS.RSP0 = KERNEL_RSP (16-byte aligned, so no
        // padding): KERNEL_RSP's first word, the context, is 9 words up.
        mov rdx, [rsp + 72]
        mov [rdx + {left_tsc}], rax
        BAREMARK_STORE_REGS rdx
        // [rsp]: rdx, rax, vector, error code, rip, cs, rflags, rsp, ss.
        mov rax, [rsp]
        mov [rdx + {rdx}], rax
        mov rax, [rsp + 8]
        mov [rdx + {rax}], rax
        mov rax, [rsp + 16]
        mov [rdx + {trap_vector}], rax
        mov rax, [rsp + 24]
        mov [rdx + {trap_error_code}], rax
        mov rax, [rsp + 32]
        mov [rdx + {rip}], rax
        mov rax, [rsp + 48]
        mov [rdx + {rflags}], rax
        mov rax, [rsp + 56]
        mov [rdx + {rsp}], rax
        // CR2 is only meaningful for a page fault; `run` reports it for vector 14 alone.
        mov rax, cr2
        mov [rdx + {trap_cr2}], rax

    // Abandon the trap frame and return from `run`.
    baremark_user_trap_exit:
        mov rsp, gs:[{kernel_rsp}]
        mov ecx, {kernel_ss}
        mov ss, cx
        mov eax, {exit_trap}

    // RSP = KERNEL_RSP, RAX = exit value: back to the kernel's tables, flags and registers.
    baremark_user_return:
        mov rcx, [rsp + 8]
        mov cr3, rcx
        add rsp, 16
        popfq
        pop r15
        pop r14
        pop r13
        pop r12
        pop rbp
        pop rbx
        ret
    "#,
    kernel_rsp = const crate::percpu::KERNEL_RSP_AT,
    user_rsp_scratch = const crate::percpu::USER_RSP_AT,
    left_tsc = const offset_of!(UserContext, left_tsc),
    trap_vector = const offset_of!(UserContext, trap_vector),
    trap_error_code = const offset_of!(UserContext, trap_error_code),
    trap_cr2 = const offset_of!(UserContext, trap_cr2),
    entered_tsc = const offset_of!(UserContext, entered_tsc),
    vtsc_page = const offset_of!(UserContext, vtsc_page),
    vtsc_base = const offset_of!(UserContext, vtsc_base),
    vtsc_window_lo = const offset_of!(UserContext, vtsc_window_lo),
    vtsc_window_span = const offset_of!(UserContext, vtsc_window_span),
    vtsc_start_at = const VTSC_START_AT,
    vtsc_offset_at = const VTSC_OFFSET_AT,
    page_seq = const offset_of!(UserContext, page_seq),
    page_interrupts = const offset_of!(UserContext, page_interrupts),
    page_seq_at = const PAGE_SEQ_AT,
    vtsc_base_at = const VTSC_BASE_AT,
    page_interrupts_at = const PAGE_INTERRUPTS_AT,
    user_ss = const USER_DATA_SELECTOR,
    user_cs = const USER_CODE_SELECTOR,
    kernel_ss = const KERNEL_DATA_SELECTOR,
    light_above = const offset_of!(UserContext, light_above),
    light_result = const offset_of!(UserContext, light_result),
    light_calls = const offset_of!(UserContext, light_calls),
    light_ticks = const offset_of!(UserContext, light_ticks),
    sysretq_entries = const offset_of!(UserContext, entries) + offset_of!(EntryCounts, sysretq),
    sysretq_global = sym SYSRETQ_ENTRIES,
    rflags_user = const RFLAGS_USER,
    rflags_set = const RFLAGS_IF | RFLAGS_FIXED,
    exit_syscall = const EXIT_SYSCALL,
    exit_trap = const EXIT_TRAP,
    cr3 = const offset_of!(UserContext, cr3),
    rax = const offset_of!(UserContext, rax),
    rbx = const offset_of!(UserContext, rbx),
    rcx = const offset_of!(UserContext, rcx),
    rdx = const offset_of!(UserContext, rdx),
    rsi = const offset_of!(UserContext, rsi),
    rdi = const offset_of!(UserContext, rdi),
    rbp = const offset_of!(UserContext, rbp),
    r8 = const offset_of!(UserContext, r8),
    r9 = const offset_of!(UserContext, r9),
    r10 = const offset_of!(UserContext, r10),
    r11 = const offset_of!(UserContext, r11),
    r12 = const offset_of!(UserContext, r12),
    r13 = const offset_of!(UserContext, r13),
    r14 = const offset_of!(UserContext, r14),
    r15 = const offset_of!(UserContext, r15),
    rip = const offset_of!(UserContext, rip),
    rsp = const offset_of!(UserContext, rsp),
    rflags = const offset_of!(UserContext, rflags),
);

unsafe extern "C" {
    fn baremark_user_run(ctx: *mut UserContext, tss_rsp0: *mut u64, use_sysret: u64) -> u64;
    fn baremark_syscall_entry();
}

/// The address IA32_LSTAR must hold.
pub(crate) fn syscall_entry_address() -> u64 {
    baremark_syscall_entry as *const () as u64
}

/// Whether `addr` is a canonical lower-half address.
const fn is_user_canonical(addr: u64) -> bool {
    addr < USER_END
}

/// The RFLAGS a task is entered with.
pub const fn sanitise_rflags(rflags: u64) -> u64 {
    (rflags & RFLAGS_USER) | RFLAGS_IF | RFLAGS_FIXED
}

/// Runs the task in ring 3 until it executes SYSCALL or an interrupt or exception arrives;
/// the context then holds its registers at that point. See the module documentation.
///
/// Sets up the SYSCALL MSRs on first use; if the CPU refused them, a SYSCALL in ring 3 raises
/// #UD and comes back as [`Exit::Trap`] with vector 6.
pub fn run(ctx: &mut UserContext, space: &AddressSpace) -> Exit {
    // The tables entered are the live `space`'s, whatever the context remembers, and the exit
    // assembly publishes only into a page pinned in it (else into the sink).
    ctx.cr3 = space.l4;
    if ctx.vtsc_space != space.id {
        ctx.vtsc_page = sink_address();
    }
    if !is_user_canonical(ctx.rip) {
        return Exit::InvalidContext(ContextError::NonCanonicalRip);
    }
    if !is_user_canonical(ctx.rsp) {
        return Exit::InvalidContext(ContextError::NonCanonicalRsp);
    }
    let _ = crate::syscall::init(syscall_entry_address());
    ctx.rflags = sanitise_rflags(ctx.rflags);
    let use_sysret = ctx.rcx == ctx.rip && ctx.r11 == ctx.rflags;
    // Counts (wrapping: 2^64 entries never happen, and no check on this path).
    if use_sysret {
        SYSRETQ_ENTRIES.fetch_add(1, Ordering::Relaxed);
        ctx.entries.sysretq = ctx.entries.sysretq.wrapping_add(1);
    } else {
        IRETQ_ENTRIES.fetch_add(1, Ordering::Relaxed);
        ctx.entries.iretq = ctx.entries.iretq.wrapping_add(1);
    }
    let ptr: *mut UserContext = ctx;
    // SAFETY: `ptr` is a valid, exclusively borrowed context for the whole call; its CR3 is the
    // level-4 table of `space`, built by `AddressSpace::new` (the kernel half shared, so this
    // code, the stack and the statics stay mapped) and borrowed for the whole call, so none of
    // its frames is freed meanwhile; the page the exit assembly publishes into is the sink or
    // a page pinned in `space` (checked above). RIP and RSP are
    // canonical lower-half addresses (checked above), RFLAGS is sanitised (IOPL 0, IF set), so
    // IRETQ/SYSRETQ cannot fault in ring 0 and ring 3 cannot reach kernel memory or
    // privileged instructions. The TSS.RSP0 slot is valid. The assembly returns here with every
    // callee-saved register, the kernel's RFLAGS and CR3 restored.
    let exit =
        unsafe { baremark_user_run(ptr, crate::gdt::ring0_stack_slot(), u64::from(use_sysret)) };
    if exit == EXIT_SYSCALL {
        Exit::Syscall
    } else {
        Exit::Trap {
            vector: ctx.trap_vector as u8,
            error_code: ctx.trap_error_code,
            cr2: (ctx.trap_vector == PAGE_FAULT).then_some(ctx.trap_cr2),
        }
    }
}

/// Why a mapping in an address space failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The address is not a page-aligned address in `[USER_START, USER_END)`.
    NotUserPage,
    /// The page is already mapped (for a stack: its guard page is mapped).
    AlreadyMapped,
    /// Out of physical memory.
    OutOfFrames,
    /// Paging is not initialised.
    NotInitialised,
}

impl From<paging::MapError> for MapError {
    fn from(e: paging::MapError) -> Self {
        match e {
            paging::MapError::OutOfFrames => MapError::OutOfFrames,
            paging::MapError::AlreadyMapped => MapError::AlreadyMapped,
            paging::MapError::NotInitialised => MapError::NotInitialised,
        }
    }
}

/// A user memory access the kernel refused: part of the range is not mapped user memory of
/// the address space (unmapped, in the upper half, non-canonical, or the range wraps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessError {
    /// The first address that is not accessible.
    pub addr: u64,
}

/// A task's address space: a level-4 table whose upper half (entries 256-511) is a copy of the
/// kernel's, with `USER_ACCESSIBLE` cleared (so the kernel stays mapped while the task runs,
/// and traps and SYSCALL need no CR3 switch before the entry code runs, but ring 3 cannot
/// touch it), and whose lower half is the task's own: fresh zeroed frames, mapped with
/// `USER_ACCESSIBLE`, no-execute unless executable.
///
/// Kernel mappings made later in a level-4 slot the kernel did not use when the address space
/// was created would not be visible while its tables are active; `run` keeps that window to
/// its entry and exit code, which only touch the kernel image and stack.
///
/// Dropping it gives every frame of its lower half back to the frame allocator (its pages, its
/// page tables under entries 0-255, its level-4 table), so the memory of a task that ended serves
/// the next one. A [`UserContext`] names its tables, but [`run`] takes the address space too and
/// enters it, not what the context remembers, so no context can run on freed tables.
#[derive(Debug)]
pub struct AddressSpace {
    l4: u64,
    /// Unique for the kernel's life: a [`PinnedPage`] is only ever used with the space it came
    /// from, even if a level-4 frame were reused.
    id: u64,
    /// The tree's owner, shared by every handle ([`AddressSpace::share`]: a task's threads):
    /// the tree is freed when the last handle is dropped, so no CPU can run on freed tables.
    tree: alloc::sync::Arc<Tree>,
}

/// The page-table tree of an address space; freed when the last handle to it goes.
#[derive(Debug)]
struct Tree {
    l4: u64,
}

/// A page of an address space the kernel writes at every switch (a task's counter page): its
/// frame is looked up once, so a write is a bounds check and a copy instead of a page walk.
#[derive(Clone, Copy, Debug)]
pub struct PinnedPage {
    space: u64,
    frame_virt: u64,
}

impl AddressSpace {
    /// A new address space: the kernel half shared, the user half empty.
    pub fn new() -> Result<Self, MapError> {
        let l4 = paging::allocate_zeroed_frame()?;
        // SAFETY: `l4` is a fresh frame nothing else references.
        unsafe { paging::copy_kernel_half(l4) }?;
        static NEXT_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        Ok(AddressSpace {
            l4,
            id,
            tree: alloc::sync::Arc::new(Tree { l4 }),
        })
    }

    /// Another handle to the same address space, for a thread of the task that owns it: the
    /// same tables, the same pages (memory is shared as it is). The tables are freed when the
    /// last handle is dropped. Only one handle maps pages at a time (the kernel lets the task
    /// that started threads map their stacks, before they run, and nobody else).
    pub fn share(&self) -> AddressSpace {
        AddressSpace {
            l4: self.l4,
            id: self.id,
            tree: self.tree.clone(),
        }
    }

    /// Pins the mapped user page at `vaddr` (page-aligned) for [`AddressSpace::write_pinned`].
    /// Pages are never unmapped while their address space lives, so the frame stays this
    /// page's.
    pub fn pin(&self, vaddr: u64) -> Result<PinnedPage, AccessError> {
        let err = AccessError { addr: vaddr };
        if !vaddr.is_multiple_of(PAGE_SIZE) {
            return Err(err);
        }
        let frame = self.walk(vaddr).ok_or(err)?;
        let frame_virt = paging::phys_to_virt(frame).ok_or(err)?;
        Ok(PinnedPage {
            space: self.id,
            frame_virt,
        })
    }

    /// Writes `bytes` at `offset` of a page pinned in this address space; an error (nothing
    /// written) if the page is another space's or the range leaves the page.
    pub fn write_pinned(
        &mut self,
        page: &PinnedPage,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), AccessError> {
        let fits = offset
            .checked_add(bytes.len())
            .is_some_and(|end| end <= PAGE_SIZE as usize);
        if page.space != self.id || !fits {
            return Err(AccessError {
                addr: page.frame_virt,
            });
        }
        // SAFETY: `frame_virt` is the kernel's mapping of a frame mapped in this address space
        // (`pin` found it in this space: same `id`), which stays mapped while the space lives
        // (pages are never unmapped) and which no Rust reference points to; the range is
        // inside the frame (checked above). `&mut self`: nothing else writes it meanwhile.
        unsafe {
            core::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (page.frame_virt + offset as u64) as *mut u8,
                bytes.len(),
            )
        };
        Ok(())
    }

    /// [`write_pinned`](Self::write_pinned) of aligned words: one store each, no copy routine
    /// (under icount a byte copy costs a count per byte; the counter page's updates use this).
    #[inline]
    pub fn write_pinned_words(
        &mut self,
        page: &PinnedPage,
        offset: usize,
        words: &[u64],
    ) -> Result<(), AccessError> {
        let fits = words
            .len()
            .checked_mul(8)
            .and_then(|len| offset.checked_add(len))
            .is_some_and(|end| end <= PAGE_SIZE as usize);
        if page.space != self.id || !fits || !offset.is_multiple_of(8) {
            return Err(AccessError {
                addr: page.frame_virt,
            });
        }
        let at = (page.frame_virt + offset as u64) as *mut u64;
        for (k, &w) in words.iter().enumerate() {
            // SAFETY: as in `write_pinned`: a frame of this address space mapped by the kernel,
            // no Rust reference to it, the words inside it (checked above) and 8-byte aligned
            // (the frame is page-aligned and `offset` a multiple of 8).
            unsafe { at.add(k).write_volatile(w) };
        }
        Ok(())
    }

    /// The physical address of the level-4 table (the CR3 value).
    pub fn cr3(&self) -> u64 {
        self.l4
    }

    /// Maps a fresh zeroed frame at the page `vaddr` (page-aligned, in `[USER_START,
    /// USER_END)`), user-accessible, writable and executable as asked. Without NX support
    /// (EFER.NXE clear) every page is executable.
    pub fn map(&mut self, vaddr: u64, writable: bool, executable: bool) -> Result<(), MapError> {
        if !vaddr.is_multiple_of(PAGE_SIZE) || !(USER_START..USER_END).contains(&vaddr) {
            return Err(MapError::NotUserPage);
        }
        if self.walk(vaddr).is_some() {
            return Err(MapError::AlreadyMapped);
        }
        let mut flags = PageTableFlags::PRESENT | PageTableFlags::USER_ACCESSIBLE;
        if writable {
            flags |= PageTableFlags::WRITABLE;
        }
        if !executable && nx_enabled() {
            flags |= PageTableFlags::NO_EXECUTE;
        }
        let table_flags =
            PageTableFlags::PRESENT | PageTableFlags::WRITABLE | PageTableFlags::USER_ACCESSIBLE;
        let frame = paging::allocate_zeroed_frame()?;
        // SAFETY: the tree rooted at `self.l4` belongs to this address space (`&mut self`), and
        // `vaddr` is a lower-half page, which no other tree shares; `frame` is fresh.
        if let Err(e) = unsafe { paging::map_in(self.l4, vaddr, frame, flags, table_flags) } {
            // SAFETY: `frame` is ours and was not mapped (the mapping failed).
            unsafe { paging::free_frame(frame) };
            return Err(e.into());
        }
        Ok(())
    }

    /// Maps `pages` pages (writable, not executable) ending at `top` (page-aligned) for a
    /// stack, and checks that the page below them (the guard page) is unmapped, so an overflow
    /// faults. Returns the initial stack pointer (`top`).
    pub fn map_stack(&mut self, top: u64, pages: u64) -> Result<u64, MapError> {
        let bytes = pages.checked_mul(PAGE_SIZE).ok_or(MapError::NotUserPage)?;
        let guard = bytes
            .checked_add(PAGE_SIZE)
            .and_then(|b| top.checked_sub(b))
            .ok_or(MapError::NotUserPage)?;
        if !top.is_multiple_of(PAGE_SIZE) || top >= USER_END || guard < USER_START {
            return Err(MapError::NotUserPage);
        }
        if self.walk(guard).is_some() {
            return Err(MapError::AlreadyMapped);
        }
        for page in 0..pages {
            self.map(top - bytes + page * PAGE_SIZE, true, false)?;
        }
        Ok(top)
    }

    /// Whether `vaddr` is in a page mapped for ring 3 in this address space.
    pub fn is_mapped(&self, vaddr: u64) -> bool {
        self.walk(vaddr).is_some()
    }

    /// Checks that `[vaddr, vaddr + len)` is mapped user memory of this address space.
    pub fn check(&self, vaddr: u64, len: u64) -> Result<(), AccessError> {
        self.check_pages(vaddr, len, |page| self.walk(page).is_some())
    }

    /// Checks that `[vaddr, vaddr + len)` is mapped user memory the task itself may write
    /// (writable at every paging level): where a syscall may store a result. The task's code,
    /// read-only data and counter page are mapped but not writable by it.
    pub fn check_writable(&self, vaddr: u64, len: u64) -> Result<(), AccessError> {
        self.check_pages(vaddr, len, |page| {
            self.walk_flags(page).is_some_and(|(_, writable)| writable)
        })
    }

    /// Checks `ok` for every page of `[vaddr, vaddr + len)`, which must end in the user range;
    /// the error names the first address that fails.
    fn check_pages(
        &self,
        vaddr: u64,
        len: u64,
        ok: impl Fn(u64) -> bool,
    ) -> Result<(), AccessError> {
        let end = vaddr
            .checked_add(len)
            .filter(|&e| e <= USER_END)
            .ok_or(AccessError {
                addr: vaddr.max(USER_END),
            })?;
        let mut page = vaddr & !(PAGE_SIZE - 1);
        while page < end {
            if !ok(page) {
                return Err(AccessError {
                    addr: page.max(vaddr),
                });
            }
            page += PAGE_SIZE;
        }
        Ok(())
    }

    /// Copies `bytes` to `vaddr` (loading a payload: read-only and executable pages too), through
    /// the kernel's mapping of physical memory. Nothing is written unless the whole range is
    /// mapped user memory.
    pub fn write(&mut self, vaddr: u64, bytes: &[u8]) -> Result<(), AccessError> {
        self.copy(vaddr, bytes.len(), |phys_virt, offset, n| {
            // SAFETY: `phys_virt` is the kernel's mapping of `n` bytes of a frame of this
            // address space's user half (checked by `copy`), which no Rust reference points to.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    bytes[offset..offset + n].as_ptr(),
                    phys_virt as *mut u8,
                    n,
                )
            };
        })
    }

    /// Zeroes `len` bytes at `vaddr` (all or nothing, as [`AddressSpace::write`]).
    pub fn zero(&mut self, vaddr: u64, len: u64) -> Result<(), AccessError> {
        let len = usize::try_from(len).map_err(|_| AccessError { addr: vaddr })?;
        self.copy(vaddr, len, |phys_virt, _, n| {
            // SAFETY: as in `write`.
            unsafe { core::ptr::write_bytes(phys_virt as *mut u8, 0, n) };
        })
    }

    /// Copies `out.len()` bytes from `vaddr` (a syscall's buffer), after checking the whole
    /// range is mapped user memory of this address space (read-only pages included).
    pub fn read(&self, vaddr: u64, out: &mut [u8]) -> Result<(), AccessError> {
        self.copy(vaddr, out.len(), |phys_virt, offset, n| {
            // SAFETY: `phys_virt` is the kernel's mapping of `n` bytes of a user frame of this
            // address space (checked by `copy`); the task is not running, so nothing writes it.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    phys_virt as *const u8,
                    out[offset..offset + n].as_mut_ptr(),
                    n,
                )
            };
        })
    }

    /// Checks the range, then calls `f(kernel address, offset in the range, length)` for each
    /// piece of it within one page.
    fn copy(
        &self,
        vaddr: u64,
        len: usize,
        mut f: impl FnMut(u64, usize, usize),
    ) -> Result<(), AccessError> {
        // A range within one page is checked by the walk below (one walk instead of two: the
        // kernel writes a task's counter page pieces at every switch).
        let in_one_page = len > 0
            && vaddr.checked_add(len as u64).is_some_and(|end| {
                end <= USER_END && (vaddr & !(PAGE_SIZE - 1)) == ((end - 1) & !(PAGE_SIZE - 1))
            });
        if !in_one_page {
            self.check(vaddr, len as u64)?;
        }
        let mut done = 0usize;
        while done < len {
            let addr = vaddr + done as u64;
            let in_page = (PAGE_SIZE - addr % PAGE_SIZE) as usize;
            let n = in_page.min(len - done);
            let frame = self.walk(addr).ok_or(AccessError { addr })?;
            let virt =
                paging::phys_to_virt(frame + addr % PAGE_SIZE).ok_or(AccessError { addr })?;
            f(virt, done, n);
            done += n;
        }
        Ok(())
    }

    /// The frame behind the user page containing `vaddr`, if it is mapped user memory (present
    /// and user-accessible at every level; the user half never has huge pages).
    fn walk(&self, vaddr: u64) -> Option<u64> {
        self.walk_flags(vaddr).map(|(frame, _)| frame)
    }

    /// As [`AddressSpace::walk`], and whether the page is writable at every level.
    fn walk_flags(&self, vaddr: u64) -> Option<(u64, bool)> {
        const PRESENT: u64 = 1;
        const WRITABLE: u64 = 1 << 1;
        const USER: u64 = 1 << 2;
        const HUGE: u64 = 1 << 7;
        const ADDR: u64 = 0x000f_ffff_ffff_f000;
        if !is_user_canonical(vaddr) {
            return None;
        }
        let mut table = self.l4;
        let mut writable = true;
        for (level, shift) in [(4, 39), (3, 30), (2, 21), (1, 12)] {
            let index = (vaddr >> shift) & 0x1ff;
            let entry_virt = paging::phys_to_virt(table + index * 8)?;
            // SAFETY: the entry is in a page-table frame of this address space, mapped through
            // the physical-memory mapping; a volatile read of an aligned u64 (the CPU may set
            // accessed/dirty bits, but never while the kernel runs on this single CPU).
            let entry = unsafe { core::ptr::read_volatile(entry_virt as *const u64) };
            if entry & PRESENT == 0 || entry & USER == 0 || (level > 1 && entry & HUGE != 0) {
                return None;
            }
            writable &= entry & WRITABLE != 0;
            table = entry & ADDR;
        }
        Some((table, writable))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Never the active tables: `run` restores the kernel's CR3 before it returns, so this
        // is only a guard (such a tree would be leaked, not freed).
        let (active, _) = x86_64::registers::control::Cr3::read();
        if active.start_address().as_u64() == self.l4 {
            return;
        }
        // SAFETY: the tree is this address space's alone (`new` made its level-4 table, `map`
        // every lower-half page and table, with fresh frames), it is not active on this CPU
        // (checked) nor on any other (the last handle is gone, and `run` enters only a space
        // whose handle it is given), and it is never used again: a `PinnedPage` is usable only
        // with a handle of the space it came from.
        unsafe { paging::free_user_tree(self.l4) };
    }
}

/// Whether EFER.NXE is set (bit 63 of page-table entries means no-execute).
fn nx_enabled() -> bool {
    const NXE: u64 = 1 << 11;
    msr::read(msr::addr::IA32_EFER).is_ok_and(|efer| efer & NXE != 0)
}

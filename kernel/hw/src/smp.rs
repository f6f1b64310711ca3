//! Starting the other CPUs (application processors, APs) and handing them work.
//!
//! # Start-up
//!
//! An AP wakes in real mode at the page a STARTUP IPI names, so it needs code below 1 MiB: the
//! trampoline below, copied into four pages of low memory that the frame allocator never hands
//! out (`frames::LOW_MEMORY_END`; `reserve_low_memory` picks them from the memory map at boot):
//!
//! | page | holds                                                                      |
//! |------|----------------------------------------------------------------------------|
//! | 0    | the trampoline's code, its GDT and the parameters the boot CPU fills in    |
//! | 1    | a level-4 table: the kernel's upper half, plus page 2 for the lower half    |
//! | 2, 3 | a level-3 and a level-2 table mapping the first 2 MiB to themselves         |
//!
//! The trampoline goes real mode -> protected mode (CR0 = PE alone: this also clears CD and
//! NW, which INIT leaves set, so the AP runs with caches on) -> long mode (PAE, the level-4
//! table above, EFER.LME and NXE, the boot CPU's CR0) -> 64-bit code in low memory, which
//! jumps to `baremark_ap_entry` in the kernel image with the AP's stack and start record; that
//! loads the kernel's own CR3 and calls [`ap_entry`]. Its level-4 table must be below 4 GiB
//! (CR3 is loaded in 32-bit mode), hence a copy instead of the kernel's.
//!
//! The boot CPU starts one AP at a time ([`start`]) with the SDM's sequence (INIT, 10 ms,
//! STARTUP, 200 us, STARTUP if the AP has not answered yet), then waits a bounded time for it
//! to check in. An AP that does not answer gets another INIT (so a late one cannot run on the
//! next AP's parameters) and is reported; the others start as usual.
//!
//! # Work
//!
//! A started AP waits in [`idle_loop`]: interrupts on, HLT, its timer masked, until a job is put
//! in its mailbox and it is sent [`WAKE_VECTOR`]. [`run_on`] waits (HLT) until the job is done
//! (the AP sends the waiter the same vector); [`start_job`] returns at once, the job running
//! while the caller goes on, until it ends or [`request_stop`] asks it to (a flag the job polls,
//! and the vector, which brings a task in ring 3 back to the kernel).

use alloc::boxed::Box;
use core::arch::global_asm;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::apic::{self, Ipi};
use crate::gdt::CpuTables;
use crate::percpu::{self, MAX_CPUS, PerCpu};
use crate::{cpu, paging};

/// The vector of the IPIs that wake a CPU for a job, or its waiter when the job is done. The
/// kernel's trap handler acknowledges it (and counts it).
pub const WAKE_VECTOR: u8 = 0xf0;

/// Size of each AP's kernel stack.
pub const AP_STACK_SIZE: u64 = 128 * 1024;

/// Pages of low memory the start-up needs (table above).
pub const LOW_PAGES: u64 = 4;

/// The physical address of the low pages (0: none found).
static LOW_MEMORY: AtomicU64 = AtomicU64::new(0);

/// Picks [`LOW_PAGES`] pages of usable memory between 4 KiB and 636 KiB (below the EBDA) from
/// the memory map's usable regions `(start, end)`. The frame allocator never hands out memory
/// below 1 MiB, so they stay free for the trampoline.
pub fn reserve_low_memory(usable: impl Iterator<Item = (u64, u64)>) {
    const LOW_START: u64 = 0x1000;
    const LOW_END: u64 = 0x9f000;
    for (start, end) in usable {
        let start = start.max(LOW_START).next_multiple_of(4096);
        let end = end.min(LOW_END) & !0xfff;
        if end > start && end - start >= LOW_PAGES * 4096 {
            LOW_MEMORY.store(start, Ordering::Relaxed);
            return;
        }
    }
}

/// The low memory the trampoline uses, if the memory map had some.
pub fn low_memory() -> Option<u64> {
    Some(LOW_MEMORY.load(Ordering::Relaxed)).filter(|&p| p != 0)
}

// The trampoline: copied to low memory and run there (never in place), position-independent
// (EBX = its physical base, from CS). Fields filled by `prepare` are `tramp_*` data below.
global_asm!(
    r#"
    .section .rodata.baremark_ap_trampoline, "a"
    .balign 16
    .global baremark_ap_trampoline_start
    baremark_ap_trampoline_start:
    .code16
        cli
        cld
        movw %cs, %ax
        movw %ax, %ds
        movzwl %ax, %ebx
        shll $4, %ebx
        lgdtl (tramp_gdtr - baremark_ap_trampoline_start)
        movl $1, %eax
        movl %eax, %cr0
        ljmpl *(tramp_pm_ptr - baremark_ap_trampoline_start)
    .code32
    tramp_pm:
        movw $0x10, %ax
        movw %ax, %ds
        movw %ax, %es
        movw %ax, %ss
        movl $0x20, %eax
        movl %eax, %cr4
        movl (tramp_cr3 - baremark_ap_trampoline_start)(%ebx), %eax
        movl %eax, %cr3
        movl $0xc0000080, %ecx
        rdmsr
        orl $0x900, %eax
        wrmsr
        movl (tramp_cr0 - baremark_ap_trampoline_start)(%ebx), %eax
        movl %eax, %cr0
        ljmpl *(tramp_lm_ptr - baremark_ap_trampoline_start)(%ebx)
    .code64
    tramp_lm:
        // Only the CPU these parameters are for goes on: one that woke late (after its wait
        // ran out) must not run on the next CPU's stack. Its APIC ID from CPUID: leaf 0xB's
        // EDX (x2APIC ID) where the boot CPU has the leaf, else leaf 1's EBX[31:24].
        movl (tramp_id_leaf - baremark_ap_trampoline_start)(%rbx), %eax
        movq %rbx, %rsi
        xorl %ecx, %ecx
        cpuid
        cmpl $1, (tramp_id_leaf - baremark_ap_trampoline_start)(%rsi)
        jne 1f
        movl %ebx, %edx
        shrl $24, %edx
    1:
        movq %rsi, %rbx
        cmpl (tramp_apic_id - baremark_ap_trampoline_start)(%rbx), %edx
        jne tramp_park
        movq (tramp_stack - baremark_ap_trampoline_start)(%rbx), %rsp
        movq (tramp_boot - baremark_ap_trampoline_start)(%rbx), %rdi
        movq (tramp_kernel_cr3 - baremark_ap_trampoline_start)(%rbx), %rsi
        movq (tramp_entry - baremark_ap_trampoline_start)(%rbx), %rax
        jmpq *%rax
    tramp_park:
        cli
        hlt
        jmp tramp_park

        .balign 8
    tramp_gdt:
        .quad 0
        .quad 0x00cf9a000000ffff
        .quad 0x00cf92000000ffff
        .quad 0x00af9a000000ffff
    .global tramp_gdtr
    tramp_gdtr:
        .word 31
        .long 0
    .global tramp_pm_ptr
    tramp_pm_ptr:
        .long 0
        .word 0x08
    .global tramp_lm_ptr
    tramp_lm_ptr:
        .long 0
        .word 0x18
        .balign 8
    .global tramp_cr3
    tramp_cr3:
        .quad 0
    .global tramp_cr0
    tramp_cr0:
        .quad 0
    .global tramp_stack
    tramp_stack:
        .quad 0
    .global tramp_boot
    tramp_boot:
        .quad 0
    .global tramp_kernel_cr3
    tramp_kernel_cr3:
        .quad 0
    .global tramp_entry
    tramp_entry:
        .quad 0
    .global tramp_apic_id
    tramp_apic_id:
        .long 0
    .global tramp_id_leaf
    tramp_id_leaf:
        .long 0
    .global baremark_ap_trampoline_end
    baremark_ap_trampoline_end:

    .section .text.baremark_ap_entry, "ax"
    .global baremark_ap_entry
    baremark_ap_entry:
        movq %rsi, %cr3
        xorl %ebp, %ebp
        call {ap_entry}
        ud2
    "#,
    ap_entry = sym ap_entry,
    options(att_syntax)
);

unsafe extern "C" {
    static baremark_ap_trampoline_start: u8;
    static baremark_ap_trampoline_end: u8;
    static tramp_gdt: u8;
    static tramp_gdtr: u8;
    static tramp_pm: u8;
    static tramp_pm_ptr: u8;
    static tramp_lm: u8;
    static tramp_lm_ptr: u8;
    static tramp_cr3: u8;
    static tramp_cr0: u8;
    static tramp_stack: u8;
    static tramp_boot: u8;
    static tramp_kernel_cr3: u8;
    static tramp_entry: u8;
    static tramp_apic_id: u8;
    static tramp_id_leaf: u8;
    fn baremark_ap_entry();
}

/// What the boot CPU gives an AP (through the trampoline's `tramp_boot`).
struct ApBoot {
    block: *mut PerCpu,
    tables: *mut CpuTables,
    main: fn() -> !,
    /// Set by the AP once it runs on its own stack and tables (the trampoline is free again).
    alive: AtomicU32,
}

/// Why an AP did not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The memory map had no usable low memory for the trampoline.
    NoLowMemory,
    /// No memory for its stack, tables or per-CPU block.
    OutOfMemory,
    /// More CPUs than [`MAX_CPUS`].
    TooManyCpus,
    /// It did not answer INIT-STARTUP-STARTUP within the wait.
    NoAnswer { waited_us: u64 },
    /// Its xAPIC did not accept an IPI.
    IpiNotAccepted,
}

/// Offset of trampoline symbol `sym` from its start.
fn offset_of_sym(sym: *const u8) -> u64 {
    sym as u64 - (&raw const baremark_ap_trampoline_start) as u64
}

/// Copies the trampoline into low memory and builds its page tables. Idempotent; call before
/// the first [`start`].
fn prepare() -> Result<u64, StartError> {
    static PREPARED: AtomicU32 = AtomicU32::new(0);
    let low = low_memory().ok_or(StartError::NoLowMemory)?;
    if PREPARED.swap(1, Ordering::AcqRel) == 1 {
        return Ok(low);
    }
    let virt = paging::phys_to_virt(low).ok_or(StartError::NoLowMemory)?;
    let start = &raw const baremark_ap_trampoline_start;
    let len = (&raw const baremark_ap_trampoline_end) as usize - start as usize;
    assert!(len <= 4096, "the AP trampoline outgrew its page");
    let (cr0, kernel_cr3) = (cpu::cr0(), cpu::cr3());
    // SAFETY: `virt` maps the four low pages, which the frame allocator never hands out and
    // nothing else uses (`reserve_low_memory`); the copy stays inside page 0 (checked), the
    // table writes inside pages 1-3. The symbols are in this crate's read-only data.
    unsafe {
        core::ptr::write_bytes(virt as *mut u8, 0, (LOW_PAGES * 4096) as usize);
        core::ptr::copy_nonoverlapping(start, virt as *mut u8, len);
        let field = |sym: *const u8| (virt + offset_of_sym(sym)) as *mut u8;
        let put32 = |sym: *const u8, v: u64| field(sym).cast::<u32>().write_unaligned(v as u32);
        let put64 = |sym: *const u8, v: u64| field(sym).cast::<u64>().write_unaligned(v);
        // GDTR base (after its 2-byte limit), the far pointers' offsets: linear addresses.
        field(&raw const tramp_gdtr)
            .add(2)
            .cast::<u32>()
            .write_unaligned((low + offset_of_sym(&raw const tramp_gdt)) as u32);
        put32(
            &raw const tramp_pm_ptr,
            low + offset_of_sym(&raw const tramp_pm),
        );
        put32(
            &raw const tramp_lm_ptr,
            low + offset_of_sym(&raw const tramp_lm),
        );
        put64(&raw const tramp_cr3, low + 0x1000);
        put64(&raw const tramp_cr0, cr0);
        put64(&raw const tramp_kernel_cr3, kernel_cr3);
        put64(
            &raw const tramp_entry,
            baremark_ap_entry as *const () as u64,
        );
        // Level 4: the kernel's upper half, entry 0 -> level 3 -> level 2 -> a 2 MiB page at 0.
        let l4 = (virt + 0x1000) as *mut u64;
        let kernel_l4 =
            paging::phys_to_virt(kernel_cr3 & !0xfff).ok_or(StartError::NoLowMemory)? as *const u64;
        for i in 256..512 {
            l4.add(i).write(kernel_l4.add(i).read());
        }
        const PRESENT_WRITABLE: u64 = 0b11;
        const HUGE: u64 = 1 << 7;
        l4.write((low + 0x2000) | PRESENT_WRITABLE);
        ((virt + 0x2000) as *mut u64).write((low + 0x3000) | PRESENT_WRITABLE);
        ((virt + 0x3000) as *mut u64).write(PRESENT_WRITABLE | HUGE);
    }
    Ok(low)
}

/// The CPUID leaf an AP reads its APIC ID from (the trampoline checks it): 0xB (x2APIC ID,
/// 32 bits) where the boot CPU has it with a non-zero topology, else 1 (EBX[31:24]).
fn id_leaf() -> u32 {
    let max = core::arch::x86_64::__cpuid(0).eax;
    if max >= 0xb && core::arch::x86_64::__cpuid_count(0xb, 0).ebx != 0 {
        0xb
    } else {
        1
    }
}

/// Busy-waits `us` microseconds of TSC time (`tsc_hz` ticks per second).
fn wait_us(us: u64, tsc_hz: u64) {
    let ticks = tsc_hz / 1_000_000 * us;
    let start = cpu::rdtsc();
    while cpu::rdtsc().wrapping_sub(start) < ticks {
        core::hint::spin_loop();
    }
}

/// Sends INIT to the CPU with APIC ID `apic_id`: it stops whatever the firmware left it doing
/// (some firmware parks its CPUs in a spinning loop) and waits for STARTUP. The SDM's
/// INIT-SIPI-SIPI (volume 3, "MP initialization protocol"); an xAPIC also gets the INIT
/// de-assert older APICs need (x2APIC has none). Returns whether the APIC accepted it.
pub fn send_init(apic_id: u32) -> bool {
    let xapic = matches!(crate::apic::mode(), Some(crate::apic::ApicMode::XApic));
    let mut accepted = apic::send_ipi(apic_id, Ipi::InitAssert);
    if xapic {
        accepted &= apic::send_ipi(apic_id, Ipi::InitDeassert);
    }
    accepted
}

/// Waits the SDM's 10 ms after INIT (`tsc_hz` TSC ticks per second), for callers that sent
/// INIT to several CPUs with [`send_init`] before starting them.
pub fn wait_after_init(tsc_hz: u64) {
    wait_us(10_000, tsc_hz);
}

/// Starts the CPU with APIC ID `apic_id` as CPU `index` (`init_sent`: [`send_init`] and
/// [`wait_after_init`] were done for it already, else this sends INIT and waits first): it comes up on its own stack, GDT, TSS
/// and per-CPU block, runs `main` (the kernel's: the rest of its bring-up, then
/// [`idle_loop`]), and has checked in when this returns `Ok`. `answer_us` bounds the wait for
/// it after the second STARTUP.
pub fn start(
    apic_id: u32,
    index: usize,
    tsc_hz: u64,
    answer_us: u64,
    init_sent: bool,
    main: fn() -> !,
) -> Result<(), StartError> {
    if index >= MAX_CPUS {
        return Err(StartError::TooManyCpus);
    }
    let low = prepare()?;
    let stack = paging::allocate_contiguous_zeroed(AP_STACK_SIZE / 4096)
        .map_err(|_| StartError::OutOfMemory)?;
    let tables = paging::allocate_contiguous_zeroed((CpuTables::SIZE as u64).div_ceil(4096))
        .map_err(|_| StartError::OutOfMemory)?;
    let (Some(stack_virt), Some(tables_virt)) =
        (paging::phys_to_virt(stack), paging::phys_to_virt(tables))
    else {
        return Err(StartError::OutOfMemory);
    };
    let block = Box::into_raw(Box::new(PerCpu::new(index as u32, apic_id)));
    let boot = Box::leak(Box::new(ApBoot {
        block,
        tables: tables_virt as *mut CpuTables,
        main,
        alive: AtomicU32::new(0),
    }));
    let virt = paging::phys_to_virt(low).ok_or(StartError::NoLowMemory)?;
    // SAFETY: the trampoline page is ours (`prepare`), and no AP runs on it now (the previous
    // one checked in, or was sent INIT again).
    unsafe {
        let put64 = |sym: *const u8, v: u64| {
            ((virt + offset_of_sym(sym)) as *mut u64).write_volatile(v);
        };
        put64(&raw const tramp_stack, stack_virt + AP_STACK_SIZE);
        put64(&raw const tramp_boot, core::ptr::from_mut(boot) as u64);
        let put32 = |sym: *const u8, v: u32| {
            ((virt + offset_of_sym(sym)) as *mut u32).write_volatile(v);
        };
        put32(&raw const tramp_apic_id, apic_id);
        put32(&raw const tramp_id_leaf, id_leaf());
    }
    let mut accepted = true;
    if !init_sent {
        accepted = send_init(apic_id);
        wait_us(10_000, tsc_hz);
    }
    let page = (low >> 12) as u8;
    accepted &= apic::send_ipi(apic_id, Ipi::Startup(page));
    wait_us(200, tsc_hz);
    if boot.alive.load(Ordering::Acquire) == 0 {
        accepted &= apic::send_ipi(apic_id, Ipi::Startup(page));
    }
    let start = cpu::rdtsc();
    let limit = tsc_hz / 1_000_000 * answer_us;
    while boot.alive.load(Ordering::Acquire) == 0 {
        if cpu::rdtsc().wrapping_sub(start) > limit {
            // Back to wait-for-STARTUP, so it cannot wake later on the next AP's parameters.
            apic::send_ipi(apic_id, Ipi::InitAssert);
            return Err(if accepted {
                StartError::NoAnswer {
                    waited_us: answer_us,
                }
            } else {
                StartError::IpiNotAccepted
            });
        }
        core::hint::spin_loop();
    }
    Ok(())
}

/// The AP's first Rust code, on its own stack, with the kernel's page tables; interrupts off.
extern "C" fn ap_entry(boot: *mut ApBoot) -> ! {
    // SAFETY: `boot` is the leaked record `start` made for this AP; it lives forever.
    let boot = unsafe { &*boot };
    // SAFETY: the tables are fresh zeroed memory allocated for this AP alone, live forever.
    unsafe { crate::gdt::load(boot.tables) };
    crate::trap::load_idt();
    // SAFETY: the block was allocated for this AP alone and is leaked (lives forever).
    unsafe { percpu::install(boot.block) };
    crate::gdt::set_this_cpu_tables(boot.tables);
    boot.alive.store(1, Ordering::Release);
    (boot.main)()
}

/// One job in a CPU's mailbox: the work and who waits for it (`None`: a background job,
/// [`start_job`], whose record the CPU frees when done).
struct Job<'a> {
    work: *mut (dyn FnMut() + 'a),
    done: AtomicU32,
    waiter_apic: Option<u32>,
}

/// Per CPU: a background job ([`start_job`]) runs there.
static BACKGROUND: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];
/// Per CPU: the generation of the background job started there last ([`start_job`]).
static GENERATION: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
/// Per CPU: the generation of the background job the kernel asked to stop ([`request_stop`]);
/// a stop that arrives after its job ended never reaches the next one.
static STOP: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Each CPU's mailbox: the address of a [`Job`], or 0.
static MAILBOX: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Why [`run_on`] did not run the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOnError {
    /// No CPU with that index was started.
    NotStarted,
    /// That CPU already has a job.
    Busy,
}

/// Runs `work` on CPU `index` and waits for it (HLT, woken by the CPU's IPI when done). On the
/// calling CPU itself it simply calls it. While the job runs the calling CPU does nothing else,
/// so `work` may use anything the caller could.
pub fn run_on(index: usize, work: &mut dyn FnMut()) -> Result<(), RunOnError> {
    if index == percpu::index() {
        work();
        return Ok(());
    }
    let target = percpu::of(index).ok_or(RunOnError::NotStarted)?;
    let job = Job {
        work: core::ptr::from_mut(work),
        done: AtomicU32::new(0),
        waiter_apic: Some(percpu::this().apic_id()),
    };
    let addr = core::ptr::from_ref(&job) as u64;
    MAILBOX[index]
        .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire)
        .map_err(|_| RunOnError::Busy)?;
    let was_enabled = cpu::interrupts_enabled();
    apic::send_ipi(target.apic_id(), Ipi::Fixed(WAKE_VECTOR));
    loop {
        cpu::disable_interrupts();
        if job.done.load(Ordering::Acquire) != 0 {
            break;
        }
        // STI;HLT: a wake that arrives between the check and HLT still ends the HLT.
        cpu::enable_interrupts_and_halt();
    }
    if was_enabled {
        cpu::enable_interrupts();
    }
    Ok(())
}

/// An AP's life after its bring-up: waits (HLT, interrupts on, nothing armed) for jobs from
/// [`run_on`] and runs them, with interrupts off as the kernel runs everywhere.
pub fn idle_loop() -> ! {
    let me = percpu::index();
    loop {
        cpu::disable_interrupts();
        let addr = MAILBOX[me].load(Ordering::Acquire);
        if addr == 0 {
            cpu::enable_interrupts_and_halt();
            continue;
        }
        // SAFETY: `run_on` put the address of a job that lives until its `done` is set (it
        // waits for that), and no one else runs it (one mailbox per CPU).
        let job = unsafe { &*(addr as *const Job<'_>) };
        // SAFETY: the caller of `run_on` lent the closure exclusively and is halted until
        // `done`; a background job's closure is owned by its record. Nothing else calls it.
        unsafe { (*job.work)() };
        percpu::this().jobs.fetch_add(1, Ordering::Relaxed);
        match job.waiter_apic {
            Some(waiter) => {
                MAILBOX[me].store(0, Ordering::Release);
                // After this store the job may be gone: only `waiter` is used.
                job.done.store(1, Ordering::Release);
                apic::send_ipi(waiter, Ipi::Fixed(WAKE_VECTOR));
            }
            None => {
                // SAFETY: `start_job` leaked both boxes for this CPU alone; it ran once.
                unsafe {
                    drop(Box::from_raw(job.work));
                    drop(Box::from_raw(addr as *mut Job<'static>));
                }
                MAILBOX[me].store(0, Ordering::Release);
                BACKGROUND[me].store(0, Ordering::Release);
            }
        }
    }
}

/// Starts `work` on CPU `index` in the background and returns at once: the CPU runs it while
/// the caller goes on ([`job_running`], [`request_stop`], [`wait_job`]). Refused on the calling
/// CPU and on a CPU with a job.
pub fn start_job(index: usize, work: Box<dyn FnMut() + Send>) -> Result<(), RunOnError> {
    if index == percpu::index() {
        return Err(RunOnError::Busy);
    }
    let target = percpu::of(index).ok_or(RunOnError::NotStarted)?;
    let job = Box::into_raw(Box::new(Job {
        work: Box::into_raw(work),
        done: AtomicU32::new(0),
        waiter_apic: None,
    }));
    BACKGROUND[index].store(1, Ordering::Release);
    GENERATION[index].fetch_add(1, Ordering::AcqRel);
    if MAILBOX[index]
        .compare_exchange(0, job as u64, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        BACKGROUND[index].store(0, Ordering::Release);
        // SAFETY: never published; the boxes are still ours.
        unsafe {
            drop(Box::from_raw((*job).work));
            drop(Box::from_raw(job));
        }
        return Err(RunOnError::Busy);
    }
    apic::send_ipi(target.apic_id(), Ipi::Fixed(WAKE_VECTOR));
    Ok(())
}

/// Whether a background job runs on CPU `index`.
pub fn job_running(index: usize) -> bool {
    BACKGROUND
        .get(index)
        .is_some_and(|b| b.load(Ordering::Acquire) != 0)
}

/// Asks the background job on CPU `index` to stop: sets its flag ([`stop_requested`]) and sends
/// the CPU the wake IPI, so a task it runs in ring 3 comes back to the kernel, which looks.
pub fn request_stop(index: usize) {
    if !job_running(index) {
        return;
    }
    if let (Some(flag), Some(target)) = (STOP.get(index), percpu::of(index)) {
        flag.store(GENERATION[index].load(Ordering::Acquire), Ordering::Release);
        apic::send_ipi(target.apic_id(), Ipi::Fixed(WAKE_VECTOR));
    }
}

/// Whether the kernel asked the job on this CPU to stop.
pub fn stop_requested() -> bool {
    let me = percpu::index();
    let generation = GENERATION[me].load(Ordering::Acquire);
    job_running(me) && generation != 0 && STOP[me].load(Ordering::Acquire) == generation
}

/// Waits (polling) until the background job on CPU `index` has ended.
pub fn wait_job(index: usize) {
    while job_running(index) {
        core::hint::spin_loop();
    }
}

/// One short call put on a CPU by [`call`], run by that CPU's [`serve_calls`].
struct Call<'a> {
    work: *mut (dyn FnMut() + 'a),
    done: AtomicU32,
}

/// Each CPU's pending call: the address of a [`Call`], or 0.
static CALLS: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Why [`call`] did not run the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No CPU with that index was started.
    NotStarted,
    /// The CPU did not take the call within the wait (it ran with interrupts off all along).
    NoAnswer,
}

/// Runs the short `work` on CPU `index` whatever that CPU does (idle, waiting for a job, or
/// running one, a task in ring 3 included), from its wake interrupt ([`serve_calls`]), and
/// waits for it. On the calling CPU it just calls it. The call is taken the next time the CPU
/// has interrupts on; one not taken within `timeout_ticks` TSC ticks is withdrawn
/// (`NoAnswer`, `work` not run). While it waits this CPU serves calls made to it, so two CPUs
/// that call each other do not wait for each other.
pub fn call(
    index: usize,
    work: &mut (dyn FnMut() + Send),
    timeout_ticks: u64,
) -> Result<(), CallError> {
    if index == percpu::index() {
        work();
        return Ok(());
    }
    let target = percpu::of(index).ok_or(CallError::NotStarted)?;
    let job = Call {
        work: core::ptr::from_mut(work),
        done: AtomicU32::new(0),
    };
    let addr = core::ptr::from_ref(&job) as u64;
    let start = cpu::rdtsc();
    let expired = || cpu::rdtsc().wrapping_sub(start) > timeout_ticks;
    // Another CPU's call to the same CPU goes first.
    while CALLS[index]
        .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        if expired() {
            return Err(CallError::NoAnswer);
        }
        serve_calls();
        cpu::pause();
    }
    apic::send_ipi(target.apic_id(), Ipi::Fixed(WAKE_VECTOR));
    while job.done.load(Ordering::Acquire) == 0 {
        if expired()
            && CALLS[index]
                .compare_exchange(addr, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // Withdrawn before the CPU took it: it never runs.
            return Err(CallError::NoAnswer);
        }
        serve_calls();
        cpu::pause();
    }
    Ok(())
}

/// Runs the call made to this CPU, if any ([`call`]): from the wake vector's handler, and from
/// every wait of [`call`].
pub fn serve_calls() {
    let me = percpu::index();
    let addr = CALLS[me].swap(0, Ordering::AcqRel);
    if addr == 0 {
        return;
    }
    // SAFETY: `call` published the address of a call that lives until its `done` is set (it
    // waits for that; it withdraws only a call still in the slot, and this swap took it out).
    let job = unsafe { &*(addr as *const Call<'_>) };
    // SAFETY: the caller lent the closure exclusively and waits until `done`.
    unsafe { (*job.work)() };
    // After this store the call may be gone.
    job.done.store(1, Ordering::Release);
}

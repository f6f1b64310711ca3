//! The ring-3 side: raw syscalls, wrappers, the entry point and the panic handler.

use core::arch::asm;
use core::fmt::{self, Write};

use crate::{Error, REPORT_MAX, ReportFmtError, nr};

/// Raw syscall with up to three arguments (RDI, RSI, RDX); RCX and R11 are clobbered by SYSCALL.
#[inline(always)]
pub fn syscall3(number: u64, a: u64, b: u64, c: u64) -> i64 {
    let ret: i64;
    // SAFETY: SYSCALL transfers to the kernel, which validates every argument; it clobbers only
    // RCX and R11 (declared) and returns the result in RAX.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") number as i64 => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Raw syscall with four arguments (RDI, RSI, RDX, R10, as Linux does: SYSCALL takes RCX).
#[inline(always)]
pub fn syscall4(number: u64, a: u64, b: u64, c: u64, d: u64) -> i64 {
    let ret: i64;
    // SAFETY: as in `syscall3`, with R10 as the fourth argument (only read by the kernel).
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") number as i64 => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") d,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Ends the task with `code`.
pub fn exit(code: i64) -> ! {
    syscall3(nr::EXIT, code as u64, 0, 0);
    // The kernel never returns from exit; if it did, stop here without touching anything.
    loop {
        core::hint::spin_loop();
    }
}

/// Writes text to the console (a `task_output` record).
pub fn write(text: &str) -> Result<u64, Error> {
    Error::check(syscall3(
        nr::WRITE,
        text.as_ptr() as u64,
        text.len() as u64,
        0,
    ))
}

/// Reports a structured result: `key=value` lines (a `report` record).
pub fn report(lines: &str) -> Result<u64, Error> {
    Error::check(syscall3(
        nr::REPORT,
        lines.as_ptr() as u64,
        lines.len() as u64,
        0,
    ))
}

/// Formats `lines` (`key=value` lines) into a buffer of the kernel's limit ([`REPORT_MAX`]
/// bytes, on the stack: no allocator) and reports them as [`report`] does; a text that does
/// not fit is not sent at all ([`ReportFmtError::TooLong`]), so the caller can say so instead.
pub fn report_fmt(lines: fmt::Arguments<'_>) -> Result<u64, ReportFmtError> {
    let mut buf = Buf::<REPORT_MAX>::new();
    buf.write_fmt(lines).map_err(|_| ReportFmtError::TooLong)?;
    report(buf.as_str()).map_err(ReportFmtError::Refused)
}

/// The payload's argument text (`baremark run --args NAME=TEXT`) into `buf`: its length, of
/// which `min(len, buf.len())` bytes were copied (0: no arguments).
pub fn args(buf: &mut [u8]) -> Result<usize, Error> {
    Error::check(syscall3(
        nr::ARGS,
        buf.as_mut_ptr() as u64,
        buf.len() as u64,
        0,
    ))
    .map(|n| n as usize)
}

/// The TSC, read directly (RDTSC is allowed in ring 3).
#[inline(always)]
pub fn rdtsc() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: RDTSC reads the time-stamp counter into EDX:EAX and has no other effect.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// RDPMC: reads counter `index` (GP n, fixed `(1 << 30) | n`). The kernel emulates it when
/// CR4.PCE is clear, so the same binary works under emulation.
#[inline(always)]
pub fn rdpmc(index: u32) -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: RDPMC reads a counter into EDX:EAX; if the CPU refuses it in ring 3 the kernel
    // emulates it (or ends the task with a fault record).
    unsafe {
        asm!("rdpmc", in("ecx") index, out("eax") lo, out("edx") hi, options(nomem, nostack))
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// `time`: the real TSC and its frequency in Hz (0 when the kernel does not know it).
pub fn time() -> Result<(u64, Option<u64>), Error> {
    let mut buf = [0u64; 2];
    let status = Error::check(syscall3(nr::TIME, buf.as_mut_ptr() as u64, 0, 0))?;
    let hz = (status != crate::TIME_HZ_UNKNOWN).then_some(buf[1]);
    Ok((buf[0], hz))
}

/// What `counters_read` returns besides the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountersRead {
    /// The counter configuration's generation.
    pub generation: u64,
    /// The task's virtual TSC.
    pub tsc: u64,
    /// How many counter values there are (copied into the caller's slice).
    pub n: usize,
}

/// `counters_read`: the virtual TSC and up to 16 counter values (into `values`; `NoSpace` if
/// it is shorter than the number of counters).
pub fn counters_read(values: &mut [u64]) -> Result<CountersRead, Error> {
    let mut buf = [0u64; 3 + crate::page::MAX_SLOTS];
    let n = Error::check(syscall3(
        nr::COUNTERS_READ,
        buf.as_mut_ptr() as u64,
        core::mem::size_of_val(&buf) as u64,
        0,
    ))? as usize;
    let out = values.get_mut(..n).ok_or(Error::NoSpace)?;
    out.copy_from_slice(buf.get(3..3 + n).ok_or(Error::Invalid)?);
    Ok(CountersRead {
        generation: buf[0],
        tsc: buf[1],
        n,
    })
}

/// One online CPU, as `cpus` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CpuEntry {
    /// Its index (0: the boot CPU), the number `thread::start` and pins take.
    pub index: u32,
    /// CPUID.1AH:EAX[31:24]: 0x40 Core (P-core), 0x20 Atom (E-core), 0 on a part with one kind
    /// of core.
    pub core_type: u8,
}

/// `cpus`: the CPU the caller runs on, and the online CPUs in index order (into `out`;
/// `NoSpace` if it is shorter than their number). Returns `(current, n)`.
pub fn cpus(out: &mut [CpuEntry]) -> Result<(u32, usize), Error> {
    // 512 CPUs at most (the kernel's MAX_CPUS), plus the two header words.
    let mut buf = [0u64; 2 + 512];
    let n = Error::check(syscall3(
        nr::CPUS,
        buf.as_mut_ptr() as u64,
        core::mem::size_of_val(&buf) as u64,
        0,
    ))? as usize;
    let dst = out.get_mut(..n).ok_or(Error::NoSpace)?;
    for (d, &w) in dst.iter_mut().zip(buf.get(2..2 + n).ok_or(Error::Invalid)?) {
        *d = CpuEntry {
            index: w as u32,
            core_type: (w >> 32) as u8,
        };
    }
    Ok((buf[0] as u32, n))
}

/// `counters_configure`: the events (encodings as `baremark events encode` prints them) the
/// task's virtual counters count; returns the new generation.
/// Starts the task's virtual counters again after [`counters_stop`] (they start counting on
/// their own when the task begins).
pub fn counters_start() -> Result<u64, Error> {
    Error::check(syscall0(nr::COUNTERS_START))
}

/// Freezes the task's virtual counters (events and virtual TSC) until [`counters_start`].
pub fn counters_stop() -> Result<u64, Error> {
    Error::check(syscall0(nr::COUNTERS_STOP))
}

pub fn counters_configure(events: &[u64]) -> Result<u64, Error> {
    Error::check(syscall3(
        nr::COUNTERS_CONFIGURE,
        events.as_ptr() as u64,
        events.len() as u64,
        0,
    ))
}

/// Overflow notification (docs/syscall-abi.md, "Overflow notification"): a threshold per
/// counter slot, and a handler the kernel runs in the task each time a slot's count reaches the
/// next multiple of its period (with the task's counters stopped; the interrupted code then
/// goes on exactly where it was, every register as it was).
pub mod notify {
    use super::syscall3;
    use crate::{Error, nr};

    /// A handler: the slot, its 64-bit count when the threshold was reached, the interrupted
    /// RIP, and the periods that count stands for (1 unless the kernel saw the crossing late).
    pub type Handler = extern "C" fn(slot: u64, count: u64, rip: u64, periods: u64);

    // The kernel enters here with the handler's arguments in RDI, RSI, RDX, RCX (the C
    // calling convention's first four) and the handler itself in R8 (`counters_notify`'s
    // `arg`), RSP 16-byte aligned: call it, then `notify_return`, which restores every
    // register of the interrupted code. A handler that returns by any other way faults.
    core::arch::global_asm!(
        ".pushsection .text.baremark_notify_entry, \"ax\", @progbits",
        ".global baremark_notify_entry",
        "baremark_notify_entry:",
        "    call r8",
        "    mov eax, {ret}",
        "    syscall",
        "    ud2",
        ".popsection",
        ret = const nr::NOTIFY_RETURN,
    );

    unsafe extern "C" {
        fn baremark_notify_entry();
    }

    /// Registers `handler` (`None`: removes it and every threshold that notifies).
    pub fn set_handler(handler: Option<Handler>) -> Result<(), Error> {
        let (entry, arg) = match handler {
            Some(h) => (baremark_notify_entry as *const () as u64, h as usize as u64),
            None => (0, 0),
        };
        Error::check(syscall3(nr::COUNTERS_NOTIFY, entry, arg, 0)).map(|_| ())
    }

    /// Notifies the handler every `period` events of slot `slot`, counted from now (0: no
    /// more). Needs a handler; `Err(Invalid)` for a slot the task did not configure or a period
    /// outside 1000 to 2^31 - 1; `Err(NoDev)` without counters.
    pub fn threshold(slot: usize, period: u64) -> Result<(), Error> {
        Error::check(syscall3(nr::COUNTERS_THRESHOLD, slot as u64, period, 0)).map(|_| ())
    }
}

/// `counters_configure` with [`CONFIGURE_MULTIPLEX`](crate::CONFIGURE_MULTIPLEX): more GP
/// events than counters take turns (docs/syscall-abi.md "Multiplexing"); read them with
/// [`counters_read`] (raw counts) or [`counters_read_scaled`].
pub fn counters_configure_multiplexed(events: &[u64]) -> Result<u64, Error> {
    Error::check(syscall3(
        nr::COUNTERS_CONFIGURE,
        events.as_ptr() as u64,
        events.len() as u64,
        crate::CONFIGURE_MULTIPLEX,
    ))
}

/// `counters_read_scaled`: every event's raw count, enabled and running time (into `out`);
/// returns how many events there are.
pub fn counters_read_scaled(out: &mut [crate::Scaled]) -> Result<usize, Error> {
    let mut buf = [0u64; 3 + 3 * 16];
    let n = Error::check(syscall3(
        nr::COUNTERS_READ_SCALED,
        buf.as_mut_ptr() as u64,
        (buf.len() * 8) as u64,
        0,
    ))? as usize;
    if out.len() < n {
        return Err(Error::NoSpace);
    }
    for (i, s) in out.iter_mut().take(n).enumerate() {
        let w = &buf[3 + 3 * i..3 + 3 * i + 3];
        *s = crate::Scaled {
            raw: w[0],
            enabled: w[1],
            running: w[2],
        };
    }
    Ok(n)
}

/// `system_configure`: counts `events` (`counters_configure` entries) on the whole machine, the
/// kernel and every task (docs/syscall-abi.md "System mode"); `&[]` gives them back. The new
/// generation; `Err(Busy)` while a task holds counters of its own or another holder has them.
pub fn system_configure(events: &[u64]) -> Result<u64, Error> {
    Error::check(syscall3(
        nr::SYSTEM_CONFIGURE,
        events.as_ptr() as u64,
        events.len() as u64,
        0,
    ))
}

/// `system_read`: the system counters' 64-bit counts (into `values`), with their generation
/// and the TSC ticks since they started: `(generation, tsc, n)`. `Err(NoEnt)` without them.
pub fn system_read(values: &mut [u64]) -> Result<(u64, u64, usize), Error> {
    let mut buf = [0u64; 3 + 16];
    let n = Error::check(syscall3(
        nr::SYSTEM_READ,
        buf.as_mut_ptr() as u64,
        (buf.len() * 8) as u64,
        0,
    ))? as usize;
    values
        .get_mut(..n)
        .ok_or(Error::NoSpace)?
        .copy_from_slice(&buf[3..3 + n]);
    Ok((buf[0], buf[1], n))
}

/// [`system_read_cpus`]'s answer, a view of the caller's buffer: `{generation, tsc, n, m,
/// total[n], m x {cpu, flags, counts[n]}}` (docs/syscall-abi.md, `system_read`).
#[derive(Clone, Copy, Debug)]
pub struct SystemCpus<'a> {
    words: &'a [u64],
}

impl<'a> SystemCpus<'a> {
    pub fn generation(&self) -> u64 {
        self.words[0]
    }
    /// TSC ticks since the configuration (the reading CPU's).
    pub fn tsc(&self) -> u64 {
        self.words[1]
    }
    fn n(&self) -> usize {
        self.words[2] as usize
    }
    /// Per entry, the sum over the CPUs.
    pub fn total(&self) -> &'a [u64] {
        &self.words[4..4 + self.n()]
    }
    /// Every CPU's row: `(cpu, stale, counts)`; `stale`: it did not answer, the counts are its
    /// last read's.
    pub fn cpus(&self) -> impl Iterator<Item = (u64, bool, &'a [u64])> + 'a {
        let n = self.n();
        let words = self.words;
        (0..words[3] as usize).map(move |i| {
            let row = &words[4 + n + i * (2 + n)..4 + n + (i + 1) * (2 + n)];
            (row[0], row[1] & 1 != 0, &row[2..])
        })
    }
}

/// `system_read` in its per-CPU form (into `buf`, whose length bounds the CPUs and entries:
/// `4 + n + m(2 + n)` words): every CPU's counts and their sum. `Err(NoEnt)` without system
/// counters, `Err(NoSpace)` if `buf` is short.
pub fn system_read_cpus(buf: &mut [u64]) -> Result<SystemCpus<'_>, Error> {
    Error::check(syscall3(
        nr::SYSTEM_READ,
        buf.as_mut_ptr() as u64,
        (buf.len() * 8) as u64,
        crate::SYSTEM_READ_PER_CPU,
    ))?;
    Ok(SystemCpus { words: buf })
}

/// `spawn` flag: add the child's counts (and virtual TSC) into the caller's when it ends.
pub const SPAWN_ADD_CHILD: u64 = 1;

/// `wait` result: the child ended without an exit code (a fault, or the watchdog killed it).
pub const EABORTED: i64 = -7;

/// Starts the ramdisk's payload `name` (`payloads/<name>.elf`) as a child task with the caller's
/// counter configuration and zero counts; returns its id for [`wait`].
pub fn spawn(name: &str, flags: u64) -> Result<u64, Error> {
    spawn_with_arg(name, flags, 0)
}

/// [`spawn`], the child starting with `arg` in RDI (a payload defined with
/// [`entry_with_arg!`](crate::entry_with_arg) gets it as `main`'s argument).
pub fn spawn_with_arg(name: &str, flags: u64, arg: u64) -> Result<u64, Error> {
    Error::check(syscall4(
        nr::SPAWN,
        name.as_ptr() as u64,
        name.len() as u64,
        flags,
        arg,
    ))
}

/// Waits for the child `id` to end: its exit code, [`EABORTED`], or `ENOENT` (-4) if `id` is not
/// a child of the caller (or was already waited for). Raw, since exit codes may be negative.
pub fn wait(id: u64) -> i64 {
    syscall3(nr::WAIT, id, 0, 0)
}

/// Raw syscall without arguments.
#[inline(always)]
pub fn syscall0(number: u64) -> i64 {
    syscall3(number, 0, 0, 0)
}

/// The task's virtual counters, read from the counter page without a system call
/// (docs/syscall-abi.md, "Reads without a system call").
pub mod counters {
    use core::sync::atomic::{AtomicU64, Ordering, compiler_fence};

    use super::{rdpmc, rdtsc, syscall0};
    use crate::page::*;
    use crate::{Error, nr};

    /// The page's address once checked; 0 before.
    static PAGE: AtomicU64 = AtomicU64::new(0);

    // The retry-free virtual TSC reader (kernel/src/task/user_page.rs, "The retry-free virtual
    // TSC read"): RDI = the page. The kernel knows `[window_lo, window_hi]` (`read_window`) and,
    // when it resumes the task there, puts the current `tsc_offset` into RSI, so a preemption
    // between the load and RDTSC costs the reader nothing: no retry, no extra instructions.
    core::arch::global_asm!(
        ".pushsection .text.baremark_read_vtsc, \"ax\", @progbits",
        ".global baremark_read_vtsc",
        ".global baremark_read_vtsc_window_lo",
        ".global baremark_read_vtsc_window_hi",
        "baremark_read_vtsc:",
        "    mov rsi, [rdi + {add}]",
        "baremark_read_vtsc_window_lo:",
        "    mov rcx, [rdi + {mask}]",
        "baremark_read_vtsc_window_hi:",
        "    rdtsc",
        "    shl rdx, 32",
        "    or rax, rdx",
        "    and rax, rcx",
        "    add rax, rsi",
        "    ret",
        ".popsection",
        add = const TSC_ADD_OFFSET,
        mask = const TSC_MASK_OFFSET,
    );

    // The retry-free slot reader (kernel/src/task/user_page.rs, "The retry-free slot read"):
    // RDI = the slot. Resumed inside `[window_lo, window_hi]`, the task gets RSI, R8 and RCX
    // from the slot as the kernel just published it. A slot not readable now has index 0: ECX
    // becomes all ones, RDPMC faults, and the kernel resumes the task at the abort path, which
    // asks `counters_read` (`read_slot_slow`). No branch on the fast path.
    core::arch::global_asm!(
        ".pushsection .text.baremark_read_slot, \"ax\", @progbits",
        ".global baremark_read_slot",
        ".global baremark_read_slot_window_lo",
        ".global baremark_read_slot_window_hi",
        ".global baremark_read_slot_abort",
        "baremark_read_slot:",
        "    mov rsi, [rdi + {base}]",
        "baremark_read_slot_window_lo:",
        "    mov r8, [rdi + {start}]",
        "    mov ecx, [rdi + {index}]",
        "    dec ecx",
        "baremark_read_slot_window_hi:",
        "    rdpmc",
        "    shl rdx, 32",
        "    or rax, rdx",
        "    sub rax, r8",
        "    and rax, [rdi + {mask}]",
        "    add rax, rsi",
        "    ret",
        "baremark_read_slot_abort:",
        "    jmp {slow}",
        ".popsection",
        base = const SLOT_BASE_OFFSET,
        start = const SLOT_START_OFFSET,
        index = const SLOT_INDEX_OFFSET,
        mask = const SLOT_MASK_OFFSET,
        slow = sym read_slot_slow,
    );

    unsafe extern "C" {
        fn baremark_read_vtsc(page: u64) -> u64;
        static baremark_read_vtsc_window_lo: u8;
        static baremark_read_vtsc_window_hi: u8;
        fn baremark_read_slot(slot: u64) -> u64;
        static baremark_read_slot_window_lo: u8;
        static baremark_read_slot_window_hi: u8;
        static baremark_read_slot_abort: u8;
        // The harness region's window (`bench` module).
        static baremark_region_window_lo: u8;
        static baremark_region_window_hi: u8;
        static baremark_region_abort: u8;
    }

    /// The slot reader's abort path: the slot's value from `counters_read`. When that fails
    /// (the counts were lost) it returns 0 and sets [`SLOT_READ_FAILED`], which the callers
    /// check after their reads.
    extern "C" fn read_slot_slow(slot: u64) -> u64 {
        let page = PAGE.load(Ordering::Relaxed);
        let i = (slot.wrapping_sub(page + SLOTS_OFFSET as u64) / SLOT_SIZE as u64) as usize;
        let mut values = [0u64; MAX_SLOTS];
        match super::counters_read(&mut values) {
            Ok(_) if i < MAX_SLOTS => values[i],
            _ => {
                SLOT_READ_FAILED.store(true, Ordering::Relaxed);
                0
            }
        }
    }

    /// Set by the slot reader's abort path when `counters_read` failed.
    static SLOT_READ_FAILED: core::sync::atomic::AtomicBool =
        core::sync::atomic::AtomicBool::new(false);

    /// Whether a slot read since the last call failed (its value was 0, not a count); clears it.
    pub(crate) fn slot_read_failed() -> bool {
        SLOT_READ_FAILED.swap(false, Ordering::Relaxed)
    }

    /// Whether the kernel took both retry-free readers' windows (the harness region and
    /// [`read_slot`] need them).
    pub(crate) fn retry_free() -> bool {
        RETRY_FREE.load(Ordering::Relaxed)
    }

    /// Counter slot `i`'s 64-bit value with the retry-free slot reader: one RDPMC and no
    /// system call while the slot is readable (`Err(NoEnt)` without a page or when the
    /// kernel did not take the readers' windows, `Err(Invalid)` for a slot that is not
    /// configured, `Err(Counters)` when its counts were lost).
    #[inline(always)]
    pub fn read_slot(i: usize) -> Result<u64, Error> {
        let base = page().ok_or(Error::NoEnt)?;
        if !retry_free() {
            return Err(Error::NoEnt);
        }
        if i >= (load_u32(base, NR_SLOTS_OFFSET) as usize).min(MAX_SLOTS) {
            return Err(Error::Invalid);
        }
        // SAFETY: the slot is inside the checked counter page; the reader only loads four of
        // its fields and runs RDPMC (or, when the slot is not readable, the kernel sends it to
        // its abort path, a normal function call).
        let v = unsafe { baremark_read_slot(base + (SLOTS_OFFSET + i * SLOT_SIZE) as u64) };
        if slot_read_failed() {
            return Err(Error::Counters);
        }
        Ok(v)
    }

    fn load_u32(base: u64, offset: usize) -> u32 {
        // SAFETY: `base` is the counter page the kernel mapped read-only into this task for its
        // whole life (checked by `page`), and `offset` is a field of its layout (< SIZE),
        // naturally aligned. Volatile: the kernel changes it between our loads.
        unsafe { core::ptr::read_volatile((base + offset as u64) as *const u32) }
    }

    fn load_u64(base: u64, offset: usize) -> u64 {
        // SAFETY: as in `load_u32`.
        unsafe { core::ptr::read_volatile((base + offset as u64) as *const u64) }
    }

    /// The counter page's address (asks the kernel once), or `None` if there is none or its
    /// header is not a layout this SDK reads.
    #[inline]
    pub fn page() -> Option<u64> {
        let cached = PAGE.load(Ordering::Relaxed);
        if cached != 0 {
            return Some(cached);
        }
        let addr = Error::check(syscall0(nr::USER_PAGE)).ok()?;
        if addr == 0
            || load_u32(addr, MAGIC_OFFSET) != MAGIC
            || load_u32(addr, VERSION_OFFSET) != VERSION
        {
            return None;
        }
        // A page without the retry-free fields (an older kernel) is read with the seqlock only.
        if load_u32(addr, SIZE_OFFSET) as usize >= SIZE {
            let lo = core::ptr::addr_of!(baremark_read_vtsc_window_lo) as u64;
            let hi = core::ptr::addr_of!(baremark_read_vtsc_window_hi) as u64;
            let slot_lo = core::ptr::addr_of!(baremark_read_slot_window_lo) as u64;
            let slot_hi = core::ptr::addr_of!(baremark_read_slot_window_hi) as u64;
            let abort = core::ptr::addr_of!(baremark_read_slot_abort) as u64;
            let tsc = super::syscall4(nr::READ_WINDOW, lo, hi, nr::READ_WINDOW_TSC, 0);
            let slot = super::syscall4(
                nr::READ_WINDOW,
                slot_lo,
                slot_hi,
                nr::READ_WINDOW_SLOT,
                abort,
            );
            if Error::check(tsc).is_ok() && Error::check(slot).is_ok() {
                RETRY_FREE.store(true, Ordering::Relaxed);
            }
            let region = super::syscall4(
                nr::READ_WINDOW,
                core::ptr::addr_of!(baremark_region_window_lo) as u64,
                core::ptr::addr_of!(baremark_region_window_hi) as u64,
                nr::READ_WINDOW_REGION,
                core::ptr::addr_of!(baremark_region_abort) as u64,
            );
            if Error::check(region).is_ok() {
                REGION_WINDOW.store(true, Ordering::Relaxed);
            }
        }
        PAGE.store(addr, Ordering::Relaxed);
        Some(addr)
    }

    /// The kernel accepted the retry-free reader's window.
    static RETRY_FREE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    /// The kernel accepted the harness region's window (`read_window` kind 2).
    static REGION_WINDOW: core::sync::atomic::AtomicBool =
        core::sync::atomic::AtomicBool::new(false);

    /// Whether the kernel took the harness region's window: the region with hardware slots
    /// needs it (`bench`, docs/harness.md "The region").
    pub(crate) fn region_window() -> bool {
        REGION_WINDOW.load(Ordering::Relaxed)
    }

    /// One slot's value: `base`, plus the events since the kernel's last update when the slot
    /// is live (`index != 0`). `None` when the value is not on the page: a counter slot with
    /// `index` 0 while the task runs (the TSC slot live) is a counter ring 3 cannot read now
    /// (not readable with RDPMC, or its counts were lost), and its `base` misses the current
    /// run: the caller asks the kernel (`counters_read`).
    #[inline(always)]
    fn slot_value(base_addr: u64, slot: usize, tsc: bool) -> Option<u64> {
        let index = load_u32(base_addr, slot + SLOT_INDEX_OFFSET);
        let value = load_u64(base_addr, slot + SLOT_BASE_OFFSET);
        if index == 0 {
            let running = load_u32(base_addr, TSC_OFFSET + SLOT_INDEX_OFFSET) != 0;
            return (tsc || !running).then_some(value);
        }
        let width = load_u32(base_addr, slot + SLOT_WIDTH_OFFSET);
        let start = load_u64(base_addr, slot + SLOT_START_OFFSET);
        let raw = if tsc { rdtsc() } else { rdpmc(index - 1) };
        Some(value.wrapping_add(widen(start, raw, width)))
    }

    /// The slower path of [`snapshot`] and [`read_values`] for counters the page cannot give
    /// (`slot_value` is `None`): the `counters_read` syscall (the kernel folds the current run
    /// in). `Err(Counters)` when the counts were lost.
    #[cold]
    fn read_by_syscall(out: &mut [u64]) -> Result<u64, Error> {
        super::counters_read(out).map(|r| r.tsc)
    }

    /// The task's virtual TSC (TSC ticks while it ran in ring 3), from the counter page and
    /// RDTSC: no system call once [`page`] has been called. `None` without a page. Retry-free
    /// (a fixed instruction sequence, even across preemptions) when the kernel took the reader's
    /// window, else the seqlock read.
    #[inline(always)]
    pub fn read_tsc_fast() -> Option<u64> {
        let base = page()?;
        if RETRY_FREE.load(Ordering::Relaxed) {
            // SAFETY: `base` is the checked counter page, which is at least `SIZE` bytes (checked
            // in `page`); the reader only loads two of its fields and runs RDTSC.
            return Some(unsafe { baremark_read_vtsc(base) });
        }
        read_tsc_seqlock(base)
    }

    /// The seqlock read of the virtual TSC (module docs of the kernel's counter page).
    #[inline(always)]
    fn read_tsc_seqlock(base: u64) -> Option<u64> {
        loop {
            let seq = load_u64(base, SEQ_OFFSET);
            if seq & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            compiler_fence(Ordering::SeqCst);
            let value = slot_value(base, TSC_OFFSET, true);
            compiler_fence(Ordering::SeqCst);
            if load_u64(base, SEQ_OFFSET) == seq {
                return value;
            }
        }
    }

    /// One consistent snapshot for the harness: `out[0]` the virtual TSC, `out[1]` the task's
    /// interrupt count, `out[2..]` the counter slots (`out.len()` must be `2 + nr_slots`, else
    /// `Err(Invalid)`; `Err(NoEnt)` without a page; `Err(Counters)` when the task's hardware
    /// counts were lost). Counters the page cannot give while the task runs are read with
    /// `counters_read`.
    #[inline(always)]
    pub fn snapshot(out: &mut [u64]) -> Result<(), Error> {
        let base = page().ok_or(Error::NoEnt)?;
        loop {
            let seq = load_u64(base, SEQ_OFFSET);
            if seq & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            compiler_fence(Ordering::SeqCst);
            let n = load_u32(base, NR_SLOTS_OFFSET) as usize;
            if out.len() != n + 2 || n > MAX_SLOTS {
                return Err(Error::Invalid);
            }
            let mut on_page = true;
            out[0] = slot_value(base, TSC_OFFSET, true).unwrap_or(0);
            out[1] = load_u64(base, INTERRUPTS_OFFSET);
            for i in 0..n {
                let v = slot_value(base, SLOTS_OFFSET + i * SLOT_SIZE, false);
                on_page &= v.is_some();
                out[2 + i] = v.unwrap_or(0);
            }
            compiler_fence(Ordering::SeqCst);
            if load_u64(base, SEQ_OFFSET) == seq {
                if !on_page {
                    out[0] = read_by_syscall(&mut out[2..])?;
                    out[1] = load_u64(base, INTERRUPTS_OFFSET);
                }
                return Ok(());
            }
        }
    }

    /// Reads every configured counter into `out` (slot order) in one consistent snapshot and
    /// returns how many there are. `Err(NoSpace)` if `out` is shorter than that, `Err(NoEnt)`
    /// without a page, `Err(Counters)` when the task's hardware counts were lost. Counters the
    /// page cannot give while the task runs are read with `counters_read`.
    pub fn read_values(out: &mut [u64]) -> Result<usize, Error> {
        let base = page().ok_or(Error::NoEnt)?;
        loop {
            let seq = load_u64(base, SEQ_OFFSET);
            if seq & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            compiler_fence(Ordering::SeqCst);
            let n = (load_u32(base, NR_SLOTS_OFFSET) as usize).min(MAX_SLOTS);
            if out.len() < n {
                return Err(Error::NoSpace);
            }
            let mut on_page = true;
            for (i, v) in out.iter_mut().take(n).enumerate() {
                let value = slot_value(base, SLOTS_OFFSET + i * SLOT_SIZE, false);
                on_page &= value.is_some();
                *v = value.unwrap_or(0);
            }
            compiler_fence(Ordering::SeqCst);
            if load_u64(base, SEQ_OFFSET) == seq {
                if !on_page {
                    read_by_syscall(&mut out[..n])?;
                }
                return Ok(n);
            }
        }
    }
}

/// Formats into a fixed buffer, so payloads need no allocator.
pub struct Buf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Buf<N> {
    pub const fn new() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
        }
    }
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Default for Buf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Write for Buf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let take = s.len().min(N - self.len);
        self.bytes[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        if take < s.len() {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// Exit code of a payload that panicked.
pub const PANIC_EXIT: i64 = 101;

/// Reports the panic as a `report` (`panic=...`) and exits with [`PANIC_EXIT`].
pub fn panic_exit(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut buf = Buf::<512>::new();
    let _ = write!(buf, "panic={}", info.message());
    if let Some(l) = info.location() {
        let _ = write!(buf, "\npanic_location={}:{}", l.file(), l.line());
    }
    let _ = report(buf.as_str());
    exit(PANIC_EXIT)
}

/// Defines the payload's entry point (`_start`) and panic handler around `main() -> i64`; the
/// value `main` returns is the exit code.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn _start() -> ! {
            let f: fn() -> i64 = $main;
            $crate::exit(f())
        }

        #[panic_handler]
        fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
            $crate::panic_exit(info)
        }
    };
}

/// As [`entry!`](crate::entry) around `main(arg: u64) -> i64`: `arg` is RDI at the entry, the
/// `arg` the parent gave `spawn` ([`spawn_with_arg`]); 0 for a payload the kernel started from
/// the ramdisk.
#[macro_export]
macro_rules! entry_with_arg {
    ($main:path) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn _start(arg: u64) -> ! {
            let f: fn(u64) -> i64 = $main;
            $crate::exit(f(arg))
        }

        #[panic_handler]
        fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
            $crate::panic_exit(info)
        }
    };
}

//! The harness loop (docs/harness.md): a payload names a benchmark and gives its body; the SDK
//! asks the kernel for the plan, runs `warmup + reps` repetitions of every kind back to back,
//! reading the task's virtual counters around each from the counter page, and hands the deltas
//! to the kernel, which computes the statistics and reports them.
//!
//! ```ignore
//! extern "C" fn body(n: u64, _arg: u64) { for _ in 0..n { core::hint::black_box(()); } }
//! fn main() -> i64 {
//!     baremark_sdk::bench::run(&baremark_sdk::bench::Bench::new("spin", 1000, body)).is_ok() as i64 - 1
//! }
//! ```

use crate::Error;

/// The measured code: runs `n` iterations; `arg` is the payload's own (e.g. a pointer).
pub type Body = extern "C" fn(n: u64, arg: u64);

/// Runs before every repetition, outside the measured window (nanoBench's `asm_init`): e.g.
/// sets up the state the body starts from.
pub type Setup = extern "C" fn(arg: u64);

/// One benchmark.
#[derive(Clone, Copy, Debug)]
pub struct Bench<'a> {
    /// Its name in the records (1-64 bytes of `[A-Za-z0-9_.-]`).
    pub name: &'a str,
    /// Iterations per measured region (`n` of the body, >= 1); results are also given per
    /// iteration.
    pub iterations: u64,
    pub body: Body,
    pub arg: u64,
    /// Bytes the body moves per iteration (0: not declared): the kernel then reports the
    /// bandwidth.
    pub bytes_per_iteration: u64,
    /// Called before every repetition (warm-ups too), outside the measured window.
    pub setup: Option<Setup>,
    /// The region of overhead mode `diff`'s doubled kind (default: `body` with
    /// `2 * iterations`). A body whose code is unrolled rather than looped over `n` gives its
    /// doubled copy here; it is called with `n = 2 * iterations` too.
    pub body2x: Option<Body>,
}

impl<'a> Bench<'a> {
    pub const fn new(name: &'a str, iterations: u64, body: Body) -> Bench<'a> {
        Bench {
            name,
            iterations,
            body,
            arg: 0,
            bytes_per_iteration: 0,
            setup: None,
            body2x: None,
        }
    }

    /// Runs `setup(arg)` before every repetition, outside the measured window.
    pub const fn with_setup(self, setup: Setup) -> Bench<'a> {
        Bench {
            setup: Some(setup),
            ..self
        }
    }

    /// The doubled region for overhead mode `diff` (see [`Bench::body2x`]).
    pub const fn with_body2x(self, body2x: Body) -> Bench<'a> {
        Bench {
            body2x: Some(body2x),
            ..self
        }
    }

    pub const fn with_arg(self, arg: u64) -> Bench<'a> {
        Bench { arg, ..self }
    }

    /// Declares the bytes the body reads or writes per iteration (for the bandwidth metric).
    pub const fn with_bytes(self, bytes_per_iteration: u64) -> Bench<'a> {
        Bench {
            bytes_per_iteration,
            ..self
        }
    }
}

/// How overhead is removed (the plan's `overhead`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overhead {
    None = 0,
    Empty = 1,
    Diff = 2,
}

/// What a repetition measures (`bench_samples`' `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The body with `iterations`.
    Region = 0,
    /// [`empty_body`] through the same path (overhead `empty`).
    Empty = 1,
    /// The body with `2 * iterations` (overhead `diff`).
    Region2x = 2,
}

impl Kind {
    /// The kinds a plan measures, in order.
    pub fn for_overhead(o: Overhead) -> &'static [Kind] {
        match o {
            Overhead::None => &[Kind::Region],
            Overhead::Empty => &[Kind::Region, Kind::Empty],
            Overhead::Diff => &[Kind::Region, Kind::Region2x],
        }
    }
}

/// The kernel's plan (`bench_plan`): `{version, warmup, reps, overhead, groups}` as u64s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub warmup: u64,
    pub reps: u64,
    pub overhead: Overhead,
    /// Event groups, measured in turn (>= 1; group 0 alone on the TSC-only backend).
    pub groups: u64,
}

/// The plan's layout version this SDK reads.
pub const PLAN_VERSION: u64 = 1;
/// u64 words of the plan.
pub const PLAN_WORDS: usize = 5;
/// Most repetitions per kind (the kernel refuses more).
pub const MAX_REPS: usize = 1000;
/// Words per sample: virtual TSC, interrupts, then one per counter slot.
pub const MAX_STRIDE: usize = 2 + crate::page::MAX_SLOTS;

impl Plan {
    pub fn decode(words: &[u64; PLAN_WORDS]) -> Result<Plan, Error> {
        let overhead = match words[3] {
            0 => Overhead::None,
            1 => Overhead::Empty,
            2 => Overhead::Diff,
            _ => return Err(Error::Invalid),
        };
        if words[0] != PLAN_VERSION || words[2] == 0 || words[2] > MAX_REPS as u64 || words[4] == 0
        {
            return Err(Error::Invalid);
        }
        Ok(Plan {
            warmup: words[1],
            reps: words[2],
            overhead,
            groups: words[4],
        })
    }
}

// The empty region is `baremark_empty_body`, a function that is one `ret`, measured through the
// same path as the body, so `region - empty` is the body's own cost (see [`empty`]).
#[cfg(target_os = "none")]
core::arch::global_asm!(
    ".pushsection .text.baremark_empty_body, \"ax\", @progbits",
    ".global baremark_empty_body",
    "baremark_empty_body:",
    "    ret",
    ".popsection",
);

#[cfg(target_os = "none")]
unsafe extern "C" {
    fn baremark_empty_body(n: u64, arg: u64);
}

/// The empty body as a [`Body`] pointer: `ret` and nothing else (not the Rust wrapper above).
#[cfg(target_os = "none")]
pub fn empty() -> Body {
    // SAFETY: the symbol is a function with the `Body` ABI (it ignores its arguments).
    unsafe { core::mem::transmute::<unsafe extern "C" fn(u64, u64), Body>(baremark_empty_body) }
}

/// What the virtual-TSC-only region reads and runs (the assembly below reads it by offset).
#[cfg(target_os = "none")]
#[repr(C)]
struct Region {
    page: u64,
    body: u64,
    n: u64,
    arg: u64,
    /// The virtual TSC's delta, then the interrupt count after the body (raw: its reading
    /// before is `interrupts_before`).
    after: *mut u64,
    interrupts_before: u64,
}

// The region without counter slots (the TSC-only backend, or a group of no events): the
// interrupt count, the retry-free virtual TSC reader (`counters` module), the body, the reader
// again, the interrupt count. The virtual TSC's window holds only its reader's tail, the call of
// the body and the head of its second read; a preemption anywhere costs nothing.
#[cfg(target_os = "none")]
core::arch::global_asm!(
    ".pushsection .text.baremark_region_regs_0, \"ax\", @progbits",
    ".global baremark_region_regs_0",
    "baremark_region_regs_0:",
    "    push rbp",
    "    push rbx",
    "    push r12",
    "    mov rbx, rdi",
    "    mov rbp, [rbx + {page}]",
    "    mov rax, [rbp + {interrupts}]",
    "    mov [rbx + {interrupts_before}], rax",
    "    mov rdi, rbp",
    "    call baremark_read_vtsc",
    "    mov r12, rax",
    "    mov rdi, [rbx + {n}]",
    "    mov rsi, [rbx + {arg}]",
    "    call qword ptr [rbx + {body}]",
    "    mov rdi, rbp",
    "    call baremark_read_vtsc",
    "    sub rax, r12",
    "    mov rdi, [rbx + {after}]",
    "    mov [rdi], rax",
    "    mov rax, [rbp + {interrupts}]",
    "    mov [rdi + 8], rax",
    "    pop r12",
    "    pop rbx",
    "    pop rbp",
    "    ret",
    ".popsection",
    interrupts = const crate::page::INTERRUPTS_OFFSET,
    page = const core::mem::offset_of!(Region, page),
    body = const core::mem::offset_of!(Region, body),
    n = const core::mem::offset_of!(Region, n),
    arg = const core::mem::offset_of!(Region, arg),
    after = const core::mem::offset_of!(Region, after),
    interrupts_before = const core::mem::offset_of!(Region, interrupts_before),
);

/// What the region with hardware slots reads, runs and leaves (the assembly below reads and
/// writes it by offset; [`HwFrame::deltas`] turns it into one sample).
#[cfg(target_os = "none")]
#[repr(C)]
struct HwFrame {
    page: u64,
    body: u64,
    n: u64,
    arg: u64,
    /// Counter slots to read, 1..=16.
    nslots: u64,
    /// The page's `interrupts` before and after the body.
    interrupts_before: u64,
    interrupts_after: u64,
    /// The virtual TSC before and after: RDTSC, `tsc_offset`, `tsc_mask`.
    tsc_before: [u64; 3],
    tsc_after: [u64; 3],
    /// Each slot's RDPMC ECX (`index - 1`), taken with the copies before the body.
    ecx: [u32; crate::page::MAX_SLOTS],
    /// Each slot's RDPMC reading before and after the body.
    raw_before: [u64; crate::page::MAX_SLOTS],
    raw_after: [u64; crate::page::MAX_SLOTS],
    /// Each slot as the page published it around its reading (`index | width << 32`, `base`,
    /// `start`, `mask`).
    slot_before: [[u64; 4]; crate::page::MAX_SLOTS],
    slot_after: [[u64; 4]; crate::page::MAX_SLOTS],
}

#[cfg(target_os = "none")]
impl HwFrame {
    /// The sample (`[tsc, interrupts, slots..]`, `out.len() == 2 + nslots`) from a run that
    /// was not aborted; `false` if a slot's index changed between the two readings (its second
    /// RDPMC used the first one's ECX: the repetition is measured again).
    fn deltas(&self, out: &mut [u64]) -> bool {
        let k = self.nslots as usize;
        let slot = |s: &[u64; 4], raw: u64| s[1].wrapping_add(raw.wrapping_sub(s[2]) & s[3]);
        let tsc = |t: &[u64; 3]| (t[0] & t[2]).wrapping_add(t[1]);
        for i in 0..k {
            if self.slot_after[i][0] != self.slot_before[i][0] {
                return false;
            }
            out[2 + i] = slot(&self.slot_after[i], self.raw_after[i])
                .wrapping_sub(slot(&self.slot_before[i], self.raw_before[i]));
        }
        out[0] = tsc(&self.tsc_after).wrapping_sub(tsc(&self.tsc_before));
        out[1] = self.interrupts_after.wrapping_sub(self.interrupts_before);
        true
    }

    /// Whether a slot was not readable with RDPMC when the region last copied the page (index
    /// 0: its RDPMC faults, so measuring again would abort again).
    fn unreadable(&self) -> bool {
        self.slot_before[..self.nslots as usize]
            .iter()
            .any(|s| s[0] as u32 == 0)
    }
}

// The region with hardware slots (docs/harness.md, "The region"): every RDPMC is one of four
// instructions (`mov ecx, [ecx_i]; rdpmc; mov [raw_i], eax; mov [raw_i + 4], edx`), the slots
// are read in the same order (k-1 down to 0) before and after the body, and everything else
// (copying the slots' `base`, `start`, `index` from the page, the virtual TSC, the interrupt
// count, the arithmetic) is outside the counter windows: every counter's window is the same
// 4k + 2 instructions between its two RDPMCs (the other slots' reads, the call of the body, its
// return, one jump). The virtual TSC's RDTSCs are outside the counters' reads, so its window
// holds them all (8k + 6).
//
// No retry inside: the kernel knows `[window_lo, window_hi]` (`read_window` kind 2) and resumes
// a task interrupted there, or whose RDPMC faulted there (a slot not readable now), at
// `baremark_region_abort`, which returns 1: the SDK then measures the repetition again (or, for
// a slot that is not readable, with `counters_read`). So every reading and the page copy it is
// combined with come from one run of the task (no switch, no sample, no fold in between), and a
// repetition whose body was preempted keeps its exact counts. The body itself is outside the
// window (its code is elsewhere): preempting it costs nothing.
//
// The unrolled reads are entered at slot k-1 (the tables below), so one copy of the code, and
// one window, serves every k.
#[cfg(target_os = "none")]
core::arch::global_asm!(
    ".pushsection .text.baremark_region_hw, \"ax\", @progbits",
    ".global baremark_region_hw",
    ".global baremark_region_window_lo",
    ".global baremark_region_window_hi",
    ".global baremark_region_abort",
    ".macro BAREMARK_REGION_COPY_SLOTS to",
    "    lea rsi, [rbp + {slots}]",
    "    lea rdi, [rbx + \\to]",
    "    xor r14d, r14d",
    "2:  mov rax, [rsi]",
    "    mov [rdi], rax",
    "    dec eax",
    "    mov [rbx + {ecx} + 4 * r14], eax",
    "    mov rax, [rsi + 8]",
    "    mov [rdi + 8], rax",
    "    mov rax, [rsi + 16]",
    "    mov [rdi + 16], rax",
    "    mov rax, [rsi + 24]",
    "    mov [rdi + 24], rax",
    "    add rsi, 32",
    "    add rdi, 32",
    "    inc r14",
    "    cmp r14, r15",
    "    jb 2b",
    ".endm",
    "baremark_region_hw:",
    "    push rbp",
    "    push rbx",
    "    push r12",
    "    push r13",
    "    push r14",
    "    push r15",
    "    sub rsp, 8",
    "    mov rbx, rdi",
    "    mov rbp, [rbx + {page}]",
    "    mov r15, [rbx + {nslots}]",
    "    lea rax, [rip + baremark_region_before_entries]",
    "    mov r12, [rax + 8 * r15 - 8]",
    "    lea rax, [rip + baremark_region_after_entries]",
    "    mov r13, [rax + 8 * r15 - 8]",
    "baremark_region_window_lo:",
    "    BAREMARK_REGION_COPY_SLOTS {slot_before}",
    "    mov rax, [rbp + {interrupts}]",
    "    mov [rbx + {interrupts_before}], rax",
    "    mov rax, [rbp + {tsc_add}]",
    "    mov [rbx + {tsc_before} + 8], rax",
    "    mov rax, [rbp + {tsc_mask}]",
    "    mov [rbx + {tsc_before} + 16], rax",
    "    mov rdi, [rbx + {n}]",
    "    mov rsi, [rbx + {arg}]",
    "    rdtsc",
    "    mov [rbx + {tsc_before}], eax",
    "    mov [rbx + {tsc_before} + 4], edx",
    "    jmp r12",
    ".irp i, 15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0",
    "baremark_region_before_\\i:",
    "    mov ecx, [rbx + {ecx} + 4 * \\i]",
    "    rdpmc",
    "    mov [rbx + {raw_before} + 8 * \\i], eax",
    "    mov [rbx + {raw_before} + 8 * \\i + 4], edx",
    ".endr",
    "    call qword ptr [rbx + {body}]",
    "    jmp r13",
    ".irp i, 15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0",
    "baremark_region_after_\\i:",
    "    mov ecx, [rbx + {ecx} + 4 * \\i]",
    "    rdpmc",
    "    mov [rbx + {raw_after} + 8 * \\i], eax",
    "    mov [rbx + {raw_after} + 8 * \\i + 4], edx",
    ".endr",
    "    rdtsc",
    "    mov [rbx + {tsc_after}], eax",
    "    mov [rbx + {tsc_after} + 4], edx",
    "    mov rax, [rbp + {tsc_add}]",
    "    mov [rbx + {tsc_after} + 8], rax",
    "    mov rax, [rbp + {tsc_mask}]",
    "    mov [rbx + {tsc_after} + 16], rax",
    // The ECX copies of this pass are not used again (the next repetition takes its own).
    "    BAREMARK_REGION_COPY_SLOTS {slot_after}",
    "    mov rax, [rbp + {interrupts}]",
    "baremark_region_window_hi:",
    "    mov [rbx + {interrupts_after}], rax",
    "    xor eax, eax",
    "3:  add rsp, 8",
    "    pop r15",
    "    pop r14",
    "    pop r13",
    "    pop r12",
    "    pop rbx",
    "    pop rbp",
    "    ret",
    "baremark_region_abort:",
    "    mov eax, 1",
    "    jmp 3b",
    ".popsection",
    ".pushsection .rodata.baremark_region_entries, \"a\", @progbits",
    ".balign 8",
    "baremark_region_before_entries:",
    ".irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
    "    .quad baremark_region_before_\\i",
    ".endr",
    "baremark_region_after_entries:",
    ".irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
    "    .quad baremark_region_after_\\i",
    ".endr",
    ".popsection",
    slots = const crate::page::SLOTS_OFFSET,
    interrupts = const crate::page::INTERRUPTS_OFFSET,
    tsc_add = const crate::page::TSC_ADD_OFFSET,
    tsc_mask = const crate::page::TSC_MASK_OFFSET,
    page = const core::mem::offset_of!(HwFrame, page),
    body = const core::mem::offset_of!(HwFrame, body),
    n = const core::mem::offset_of!(HwFrame, n),
    arg = const core::mem::offset_of!(HwFrame, arg),
    nslots = const core::mem::offset_of!(HwFrame, nslots),
    interrupts_before = const core::mem::offset_of!(HwFrame, interrupts_before),
    interrupts_after = const core::mem::offset_of!(HwFrame, interrupts_after),
    tsc_before = const core::mem::offset_of!(HwFrame, tsc_before),
    tsc_after = const core::mem::offset_of!(HwFrame, tsc_after),
    ecx = const core::mem::offset_of!(HwFrame, ecx),
    raw_before = const core::mem::offset_of!(HwFrame, raw_before),
    raw_after = const core::mem::offset_of!(HwFrame, raw_after),
    slot_before = const core::mem::offset_of!(HwFrame, slot_before),
    slot_after = const core::mem::offset_of!(HwFrame, slot_after),
);

// The unrolled reads above name slots 15 to 0.
#[cfg(target_os = "none")]
const _: () = assert!(crate::page::MAX_SLOTS == 16);

#[cfg(target_os = "none")]
unsafe extern "C" {
    fn baremark_region_regs_0(r: *mut Region);
    /// 0, or 1 when the kernel sent it to its abort path.
    fn baremark_region_hw(f: *mut HwFrame) -> u64;
}

/// Runs of one repetition's region that may end at its abort path before the SDK measures it
/// with the seqlock snapshots instead (an interrupt lands in the region's few dozen
/// instructions about never twice in a row; a slot that is not readable goes there at once).
#[cfg(target_os = "none")]
const REGION_TRIES: u32 = 16;

#[cfg(target_os = "none")]
pub use imp::*;

#[cfg(target_os = "none")]
mod imp {
    use core::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::counters::{self, snapshot};
    use crate::nr;
    use crate::{syscall3, syscall4};

    /// The samples of one kind: `reps` rows of `stride` words. Static (payloads have no
    /// allocator), so one benchmark at a time.
    struct Samples(core::cell::UnsafeCell<[u64; MAX_REPS * MAX_STRIDE]>);
    // SAFETY: a task is single-threaded; `BUSY` keeps two runs from sharing the buffer.
    unsafe impl Sync for Samples {}
    static SAMPLES: Samples = Samples(core::cell::UnsafeCell::new([0; MAX_REPS * MAX_STRIDE]));
    static BUSY: AtomicBool = AtomicBool::new(false);

    /// `bench_plan`: the kernel's plan for this run.
    pub fn plan() -> Result<Plan, Error> {
        let mut words = [0u64; PLAN_WORDS];
        Error::check(syscall3(
            nr::BENCH_PLAN,
            words.as_mut_ptr() as u64,
            (PLAN_WORDS * 8) as u64,
            0,
        ))?;
        Plan::decode(&words)
    }

    /// `warmup + reps` repetitions of `body(n, arg)` back to back; the measured ones' deltas
    /// go into `out` (`reps` rows of `stride` words). Every kind runs this same code, so the
    /// empty region measures exactly the path around the body.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn repeat(
        body: Body,
        n: u64,
        arg: u64,
        setup: Option<Setup>,
        warmup: u64,
        reps: u64,
        stride: usize,
        out: &mut [u64],
    ) -> Result<(), Error> {
        let slots = stride - 2;
        if slots > 0 && counters::region_window() {
            return repeat_hw(body, n, arg, setup, warmup, reps, stride, out);
        }
        if slots > 0 || !counters::retry_free() {
            return repeat_seqlock(body, n, arg, setup, warmup, reps, stride, out);
        }
        let page = counters::page().ok_or(Error::NoEnt)?;
        let mut after = [0u64; 2];
        let mut region = Region {
            page,
            body: body as usize as u64,
            n,
            arg,
            after: after.as_mut_ptr(),
            interrupts_before: 0,
        };
        for r in 0..warmup + reps {
            if let Some(setup) = setup {
                setup(arg);
            }
            // SAFETY: `region` names the checked counter page, a body with the `Body` ABI and
            // a buffer of two words; the assembly follows the C ABI.
            unsafe { baremark_region_regs_0(&mut region) };
            if r >= warmup {
                let row = &mut out[(r - warmup) as usize * stride..][..stride];
                row[0] = after[0];
                row[1] = after[1].wrapping_sub(region.interrupts_before);
            }
        }
        Ok(())
    }

    /// [`repeat`] with hardware slots: the region's group reads (`baremark_region_hw`). A run
    /// the kernel sent to the abort path (interrupted inside the region's window, or a slot not
    /// readable) is run again, setup included; after [`REGION_TRIES`] such runs, or at once for
    /// a slot that is not readable, the repetition is measured with the seqlock snapshots,
    /// which ask `counters_read` for what the page cannot give.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn repeat_hw(
        body: Body,
        n: u64,
        arg: u64,
        setup: Option<Setup>,
        warmup: u64,
        reps: u64,
        stride: usize,
        out: &mut [u64],
    ) -> Result<(), Error> {
        let page = counters::page().ok_or(Error::NoEnt)?;
        let mut frame = HwFrame {
            page,
            body: body as usize as u64,
            n,
            arg,
            nslots: (stride - 2) as u64,
            interrupts_before: 0,
            interrupts_after: 0,
            tsc_before: [0; 3],
            tsc_after: [0; 3],
            ecx: [0; crate::page::MAX_SLOTS],
            raw_before: [0; crate::page::MAX_SLOTS],
            raw_after: [0; crate::page::MAX_SLOTS],
            slot_before: [[0; 4]; crate::page::MAX_SLOTS],
            slot_after: [[0; 4]; crate::page::MAX_SLOTS],
        };
        let mut row = [0u64; MAX_STRIDE];
        for r in 0..warmup + reps {
            let mut tries = 0;
            loop {
                if let Some(setup) = setup {
                    setup(arg);
                }
                // SAFETY: `frame` names the checked counter page with `nslots` (1..=16)
                // configured slots (`stride` came from `bench_group`) and a body with the
                // `Body` ABI; the assembly follows the C ABI and writes only `frame`.
                let aborted = unsafe { baremark_region_hw(&mut frame) } != 0;
                if !aborted && frame.deltas(&mut row[..stride]) {
                    break;
                }
                tries += 1;
                if tries >= REGION_TRIES || (aborted && frame.unreadable()) {
                    let mut before = [0u64; MAX_STRIDE];
                    let mut after = [0u64; MAX_STRIDE];
                    if let Some(setup) = setup {
                        setup(arg);
                    }
                    snapshot(&mut before[..stride])?;
                    body(core::hint::black_box(n), arg);
                    snapshot(&mut after[..stride])?;
                    for i in 0..stride {
                        row[i] = after[i].wrapping_sub(before[i]);
                    }
                    break;
                }
            }
            if r >= warmup {
                out[(r - warmup) as usize * stride..][..stride].copy_from_slice(&row[..stride]);
            }
        }
        Ok(())
    }

    /// [`repeat`] for a kernel that did not take the retry-free readers' windows: seqlock
    /// snapshots of the page around the body.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn repeat_seqlock(
        body: Body,
        n: u64,
        arg: u64,
        setup: Option<Setup>,
        warmup: u64,
        reps: u64,
        stride: usize,
        out: &mut [u64],
    ) -> Result<(), Error> {
        let mut before = [0u64; MAX_STRIDE];
        let mut after = [0u64; MAX_STRIDE];
        for r in 0..warmup + reps {
            if let Some(setup) = setup {
                setup(arg);
            }
            snapshot(&mut before[..stride])?;
            body(core::hint::black_box(n), arg);
            snapshot(&mut after[..stride])?;
            if r >= warmup {
                let row = (r - warmup) as usize * stride;
                for i in 0..stride {
                    out[row + i] = after[i].wrapping_sub(before[i]);
                }
            }
        }
        Ok(())
    }

    /// Runs the benchmark as the kernel's plan says and hands every sample to the kernel
    /// (which reports the statistics). `Err` if the kernel refused something (it also says
    /// why in a `harness_error` record).
    pub fn run(b: &Bench<'_>) -> Result<(), Error> {
        if BUSY.swap(true, Ordering::Acquire) {
            return Err(Error::Busy);
        }
        let result = run_locked(b);
        BUSY.store(false, Ordering::Release);
        result
    }

    fn run_locked(b: &Bench<'_>) -> Result<(), Error> {
        counters::page().ok_or(Error::NoEnt)?;
        let plan = plan()?;
        if b.iterations == 0 {
            return Err(Error::Invalid);
        }
        // The benchmark's id (>= 1; 0 from a kernel that does not number them): every later
        // call names it, so a body that ended this benchmark and began another cannot hand
        // this one's samples to it.
        let id = Error::check(syscall4(
            nr::BENCH_BEGIN,
            b.name.as_ptr() as u64,
            b.name.len() as u64,
            b.iterations,
            b.bytes_per_iteration,
        ))?;
        // Once begun, the benchmark is always ended: the kernel reports what it has (anything
        // missing as not measured, with the reason) instead of "never ended".
        let measured = measure(b, &plan, id);
        let ended = Error::check(syscall3(nr::BENCH_END, id, 0, 0)).map(|_| ());
        measured.and(ended)
    }

    /// Every group and kind of the plan, each handed to the kernel (`bench_samples`).
    fn measure(b: &Bench<'_>, plan: &Plan, id: u64) -> Result<(), Error> {
        // SAFETY: `BUSY` is held: nothing else uses the buffer until `run` returns.
        let samples = unsafe { &mut *SAMPLES.0.get() };
        for g in 0..plan.groups {
            let slots = Error::check(syscall3(nr::BENCH_GROUP, g, id, 0))? as usize;
            let stride = 2 + slots;
            if stride > MAX_STRIDE {
                return Err(Error::Invalid);
            }
            let words = plan.reps as usize * stride;
            for &kind in Kind::for_overhead(plan.overhead) {
                let (body, n) = match kind {
                    Kind::Region => (b.body, b.iterations),
                    Kind::Empty => (empty(), b.iterations),
                    Kind::Region2x => (b.body2x.unwrap_or(b.body), b.iterations.saturating_mul(2)),
                };
                repeat(
                    body,
                    n,
                    b.arg,
                    b.setup,
                    plan.warmup,
                    plan.reps,
                    stride,
                    &mut samples[..words],
                )?;
                Error::check(syscall3(
                    nr::BENCH_SAMPLES,
                    samples.as_ptr() as u64,
                    plan.reps,
                    kind as u64 | id << 8,
                ))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_decode_and_bad_ones_are_refused() {
        let p = Plan::decode(&[1, 5, 20, 1, 1]).unwrap();
        assert_eq!(p.overhead, Overhead::Empty);
        assert_eq!((p.warmup, p.reps, p.groups), (5, 20, 1));
        assert!(Plan::decode(&[2, 5, 20, 1, 1]).is_err(), "version");
        assert!(Plan::decode(&[1, 5, 0, 1, 1]).is_err(), "no reps");
        assert!(Plan::decode(&[1, 5, 1001, 1, 1]).is_err(), "too many reps");
        assert!(Plan::decode(&[1, 5, 20, 3, 1]).is_err(), "overhead");
        assert!(Plan::decode(&[1, 5, 20, 1, 0]).is_err(), "groups");
    }

    #[test]
    fn kinds_follow_the_overhead_mode() {
        assert_eq!(Kind::for_overhead(Overhead::None), &[Kind::Region]);
        assert_eq!(
            Kind::for_overhead(Overhead::Empty),
            &[Kind::Region, Kind::Empty]
        );
        assert_eq!(
            Kind::for_overhead(Overhead::Diff),
            &[Kind::Region, Kind::Region2x]
        );
    }
}

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

/// What one measured region reads and runs (the assembly below reads it by offset).
#[cfg(target_os = "none")]
#[repr(C)]
struct Region {
    page: u64,
    body: u64,
    n: u64,
    arg: u64,
    nslots: u64,
    /// Memory mode: the readings before the body (`[tsc, interrupts, slots..]`).
    before: *mut u64,
    /// Memory mode: the readings after it. Registers mode: the deltas (the interrupt count
    /// raw, its reading before is `interrupts_before`).
    after: *mut u64,
    interrupts_before: u64,
}

/// Most counter slots the registers mode keeps in registers (R13-R15; R12 holds the TSC).
#[cfg(target_os = "none")]
const REGISTER_SLOTS: usize = 3;

// The measured region (docs/harness.md, "The region"). Order: the interrupt count, the counter
// slots 0..k, the virtual TSC, the body, the virtual TSC, the slots k..0, the interrupt count;
// so each counter's window holds the others' reads symmetrically, and the virtual TSC's holds
// only its own reader's tail, the call of the body and the head of its second read. Every read
// is a retry-free reader (`counters` module): a preemption anywhere costs nothing.
//
// Registers mode (up to 3 slots, in the manner of nanoBench's `-no_mem`): the readings before
// the body stay in callee-saved registers and the deltas are formed in them, so the
// measurement code stores nothing to memory between the first and the last read. Memory mode
// (more slots): the readings go to two arrays.
#[cfg(target_os = "none")]
core::arch::global_asm!(
    ".pushsection .text.baremark_region, \"ax\", @progbits",
    ".macro BAREMARK_REGION_SLOT_BEFORE i, reg",
    "    lea rdi, [rbp + {slots} + 32 * \\i]",
    "    call baremark_read_slot",
    "    mov \\reg, rax",
    ".endm",
    ".macro BAREMARK_REGION_SLOT_AFTER i, reg",
    "    lea rdi, [rbp + {slots} + 32 * \\i]",
    "    call baremark_read_slot",
    "    sub rax, \\reg",
    "    mov \\reg, rax",
    ".endm",
    ".macro BAREMARK_REGION_PROLOGUE",
    "    push rbp",
    "    push rbx",
    "    push r12",
    "    push r13",
    "    push r14",
    "    push r15",
    "    sub rsp, 8",
    "    mov rbx, rdi",
    "    mov rbp, [rbx + {page}]",
    ".endm",
    ".macro BAREMARK_REGION_EPILOGUE",
    "    add rsp, 8",
    "    pop r15",
    "    pop r14",
    "    pop r13",
    "    pop r12",
    "    pop rbx",
    "    pop rbp",
    "    ret",
    ".endm",
    ".macro BAREMARK_REGION_BODY",
    "    mov rdi, rbp",
    "    call baremark_read_vtsc",
    "    mov r12, rax",
    "    mov rdi, [rbx + {n}]",
    "    mov rsi, [rbx + {arg}]",
    "    call qword ptr [rbx + {body}]",
    "    mov rdi, rbp",
    "    call baremark_read_vtsc",
    ".endm",
    ".macro BAREMARK_REGION_REGS k",
    ".global baremark_region_regs_\\k",
    "baremark_region_regs_\\k:",
    "    BAREMARK_REGION_PROLOGUE",
    "    mov rax, [rbp + {interrupts}]",
    "    mov [rbx + {interrupts_before}], rax",
    "    .if \\k >= 1",
    "    BAREMARK_REGION_SLOT_BEFORE 0, r13",
    "    .endif",
    "    .if \\k >= 2",
    "    BAREMARK_REGION_SLOT_BEFORE 1, r14",
    "    .endif",
    "    .if \\k >= 3",
    "    BAREMARK_REGION_SLOT_BEFORE 2, r15",
    "    .endif",
    "    BAREMARK_REGION_BODY",
    "    sub rax, r12",
    "    mov r12, rax",
    "    .if \\k >= 3",
    "    BAREMARK_REGION_SLOT_AFTER 2, r15",
    "    .endif",
    "    .if \\k >= 2",
    "    BAREMARK_REGION_SLOT_AFTER 1, r14",
    "    .endif",
    "    .if \\k >= 1",
    "    BAREMARK_REGION_SLOT_AFTER 0, r13",
    "    .endif",
    "    mov rax, [rbp + {interrupts}]",
    "    mov rdi, [rbx + {after}]",
    "    mov [rdi], r12",
    "    mov [rdi + 8], rax",
    "    mov [rdi + 16], r13",
    "    mov [rdi + 24], r14",
    "    mov [rdi + 32], r15",
    "    BAREMARK_REGION_EPILOGUE",
    ".endm",
    "BAREMARK_REGION_REGS 0",
    "BAREMARK_REGION_REGS 1",
    "BAREMARK_REGION_REGS 2",
    "BAREMARK_REGION_REGS 3",
    ".global baremark_region_memory",
    "baremark_region_memory:",
    "    BAREMARK_REGION_PROLOGUE",
    "    mov r12, [rbx + {before}]",
    "    mov r15, [rbx + {nslots}]",
    "    mov rax, [rbp + {interrupts}]",
    "    mov [r12 + 8], rax",
    "    xor r13d, r13d",
    "    lea r14, [rbp + {slots}]",
    "2:  cmp r13, r15",
    "    jae 3f",
    "    mov rdi, r14",
    "    call baremark_read_slot",
    "    mov [r12 + 16 + 8 * r13], rax",
    "    add r14, 32",
    "    inc r13",
    "    jmp 2b",
    "3:  mov rdi, rbp",
    "    call baremark_read_vtsc",
    "    mov [r12], rax",
    "    mov rdi, [rbx + {n}]",
    "    mov rsi, [rbx + {arg}]",
    "    call qword ptr [rbx + {body}]",
    "    mov rdi, rbp",
    "    call baremark_read_vtsc",
    "    mov r12, [rbx + {after}]",
    "    mov [r12], rax",
    "4:  test r13, r13",
    "    jz 5f",
    "    dec r13",
    "    sub r14, 32",
    "    mov rdi, r14",
    "    call baremark_read_slot",
    "    mov [r12 + 16 + 8 * r13], rax",
    "    jmp 4b",
    "5:  mov rax, [rbp + {interrupts}]",
    "    mov [r12 + 8], rax",
    "    BAREMARK_REGION_EPILOGUE",
    ".popsection",
    slots = const crate::page::SLOTS_OFFSET,
    interrupts = const crate::page::INTERRUPTS_OFFSET,
    page = const core::mem::offset_of!(Region, page),
    body = const core::mem::offset_of!(Region, body),
    n = const core::mem::offset_of!(Region, n),
    arg = const core::mem::offset_of!(Region, arg),
    nslots = const core::mem::offset_of!(Region, nslots),
    before = const core::mem::offset_of!(Region, before),
    after = const core::mem::offset_of!(Region, after),
    interrupts_before = const core::mem::offset_of!(Region, interrupts_before),
);

#[cfg(target_os = "none")]
unsafe extern "C" {
    fn baremark_region_regs_0(r: *mut Region);
    fn baremark_region_regs_1(r: *mut Region);
    fn baremark_region_regs_2(r: *mut Region);
    fn baremark_region_regs_3(r: *mut Region);
    fn baremark_region_memory(r: *mut Region);
}

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
        if !counters::retry_free() {
            return repeat_seqlock(body, n, arg, setup, warmup, reps, stride, out);
        }
        let page = counters::page().ok_or(Error::NoEnt)?;
        let slots = stride - 2;
        let mut before = [0u64; MAX_STRIDE];
        let mut after = [0u64; MAX_STRIDE];
        let mut region = Region {
            page,
            body: body as usize as u64,
            n,
            arg,
            nslots: slots as u64,
            before: before.as_mut_ptr(),
            after: after.as_mut_ptr(),
            interrupts_before: 0,
        };
        let in_registers = slots <= REGISTER_SLOTS;
        for r in 0..warmup + reps {
            if let Some(setup) = setup {
                setup(arg);
            }
            // SAFETY: `region` names the checked counter page (its `nslots` slots configured:
            // `stride` came from `bench_group`), a body with the `Body` ABI, and two buffers of
            // `MAX_STRIDE` words; the assembly follows the C ABI.
            unsafe {
                match slots {
                    0 => baremark_region_regs_0(&mut region),
                    1 => baremark_region_regs_1(&mut region),
                    2 => baremark_region_regs_2(&mut region),
                    3 => baremark_region_regs_3(&mut region),
                    _ => baremark_region_memory(&mut region),
                }
            }
            if r >= warmup {
                let row = &mut out[(r - warmup) as usize * stride..][..stride];
                if in_registers {
                    // The assembly left the deltas (the interrupt count raw).
                    row.copy_from_slice(&after[..stride]);
                    row[1] = after[1].wrapping_sub(region.interrupts_before);
                } else {
                    for i in 0..stride {
                        row[i] = after[i].wrapping_sub(before[i]);
                    }
                }
            }
        }
        if counters::slot_read_failed() {
            return Err(Error::Counters);
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

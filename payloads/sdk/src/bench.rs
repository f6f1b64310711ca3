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
}

impl<'a> Bench<'a> {
    pub const fn new(name: &'a str, iterations: u64, body: Body) -> Bench<'a> {
        Bench {
            name,
            iterations,
            body,
            arg: 0,
            bytes_per_iteration: 0,
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
    /// go into `out` (`reps` rows of `stride` words). Not inlined: every kind runs this same
    /// code, so the empty region measures exactly the path around the body.
    #[inline(never)]
    fn repeat(
        body: Body,
        n: u64,
        arg: u64,
        warmup: u64,
        reps: u64,
        stride: usize,
        out: &mut [u64],
    ) -> Result<(), Error> {
        let mut before = [0u64; MAX_STRIDE];
        let mut after = [0u64; MAX_STRIDE];
        for r in 0..warmup + reps {
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
        Error::check(syscall4(
            nr::BENCH_BEGIN,
            b.name.as_ptr() as u64,
            b.name.len() as u64,
            b.iterations,
            b.bytes_per_iteration,
        ))?;
        // Once begun, the benchmark is always ended: the kernel reports what it has (anything
        // missing as not measured, with the reason) instead of "never ended".
        let measured = measure(b, &plan);
        let ended = Error::check(syscall3(nr::BENCH_END, 0, 0, 0)).map(|_| ());
        measured.and(ended)
    }

    /// Every group and kind of the plan, each handed to the kernel (`bench_samples`).
    fn measure(b: &Bench<'_>, plan: &Plan) -> Result<(), Error> {
        // SAFETY: `BUSY` is held: nothing else uses the buffer until `run` returns.
        let samples = unsafe { &mut *SAMPLES.0.get() };
        for g in 0..plan.groups {
            let slots = Error::check(syscall3(nr::BENCH_GROUP, g, 0, 0))? as usize;
            let stride = 2 + slots;
            if stride > MAX_STRIDE {
                return Err(Error::Invalid);
            }
            let words = plan.reps as usize * stride;
            for &kind in Kind::for_overhead(plan.overhead) {
                let (body, n) = match kind {
                    Kind::Region => (b.body, b.iterations),
                    Kind::Empty => (empty(), b.iterations),
                    Kind::Region2x => (b.body, b.iterations.saturating_mul(2)),
                };
                repeat(
                    body,
                    n,
                    b.arg,
                    plan.warmup,
                    plan.reps,
                    stride,
                    &mut samples[..words],
                )?;
                Error::check(syscall3(
                    nr::BENCH_SAMPLES,
                    samples.as_ptr() as u64,
                    plan.reps,
                    kind as u64,
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

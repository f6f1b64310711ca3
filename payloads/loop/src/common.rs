//! The loop payloads' shared body: two fast reads of the virtual TSC around `n` iterations of a
//! 4-instruction loop (`nop; nop; dec; jnz`), reported as `n`, `k` and `delta`. Under
//! `-icount shift=0` (one TSC tick per instruction) `delta = n * k + c`, with `c` (the reader's
//! own instructions) the same for every `n`.

use core::fmt::Write as _;

use baremark_sdk::counters;

/// Instructions per loop iteration.
pub const K: u64 = 4;

/// `n` iterations of the loop (n >= 1).
#[inline(always)]
fn spin(n: u64) {
    // SAFETY: a register-only loop: no memory, no stack, only the counter register clobbered.
    unsafe {
        core::arch::asm!(
            "2:",
            "nop",
            "nop",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
}

/// The measurement; not inlined, so both payloads run the same instructions around the loop.
#[inline(never)]
fn measure(n: u64) -> Option<u64> {
    let t0 = counters::read_tsc_fast()?;
    spin(n);
    let t1 = counters::read_tsc_fast()?;
    Some(t1.wrapping_sub(t0))
}

/// Back-to-back reads of the virtual TSC: the smallest and largest difference over `pairs`
/// pairs. Run preempted (round-robin), some preemptions land between a read's load and its
/// RDTSC; the reads must still differ by the same count every time.
#[inline(never)]
fn pairs(pairs: u64) -> Option<(u64, u64)> {
    let (mut lo, mut hi) = (u64::MAX, 0);
    for _ in 0..pairs {
        let t0 = counters::read_tsc_fast()?;
        let t1 = counters::read_tsc_fast()?;
        let d = t1.wrapping_sub(t0);
        lo = lo.min(d);
        hi = hi.max(d);
    }
    Some((lo, hi))
}

/// Pairs of reads [`pairs`] checks.
const PAIRS: u64 = 2000;

/// Runs the measurement with `n` iterations and reports it; exit code 0, or 1 without a
/// counter page.
pub fn run(n: u64) -> i64 {
    // The first call asks the kernel for the page; the measured reads need no syscall.
    if counters::page().is_none() {
        let _ = baremark_sdk::report("error=no counter page");
        return 1;
    }
    let Some(delta) = measure(core::hint::black_box(n.max(1))) else {
        return 1;
    };
    let Some((pair_min, pair_max)) = pairs(PAIRS) else {
        return 1;
    };
    let mut buf = baremark_sdk::Buf::<160>::new();
    let _ = write!(
        buf,
        "n={n}\nk={K}\ndelta={delta}\npairs={PAIRS}\npair_min={pair_min}\npair_max={pair_max}"
    );
    let _ = baremark_sdk::report(buf.as_str());
    0
}

//! Shared code of the benchmark suite's payloads (one bin per benchmark, `src/bin/`): the
//! report of a benchmark's expected shape, static buffers, a deterministic PRNG, the pointer
//! chains of the `chase-*` benchmarks and the bodies more than one bin measures.
//!
//! Bodies whose instruction count matters are `global_asm!` functions whose code is the loop
//! and `ret` and nothing else: the harness's empty region is a bare `ret` called the same way,
//! so under `-icount shift=0` (one TSC tick per instruction) `region - empty` is exactly
//! `iterations * instructions_per_iteration`. The pure parts (PRNG, chain builder) are tested
//! on the host.
#![no_std]

use core::cell::UnsafeCell;

/// A static buffer the payload fills before measuring and its bodies read or write; page
/// aligned, so its cache lines and pages are the same on every run.
#[repr(C, align(4096))]
pub struct Buffer<T>(UnsafeCell<T>);

// SAFETY: a task is single-threaded; the payload writes a buffer (`get_mut`) only before it
// measures, and the bodies use it only through its address while nothing else does.
unsafe impl<T> Sync for Buffer<T> {}

impl<T> Buffer<T> {
    pub const fn new(value: T) -> Self {
        Buffer(UnsafeCell::new(value))
    }

    /// The address of the contents (a body's `arg`).
    pub fn addr(&self) -> u64 {
        self.0.get() as u64
    }

    /// The contents, to fill them before measuring.
    ///
    /// # Safety
    ///
    /// No other reference to the contents may be alive (payloads are single-threaded: call it
    /// once, before the benchmark runs).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get_mut(&self) -> &mut T {
        // SAFETY: the caller guarantees exclusive access.
        unsafe { &mut *self.0.get() }
    }
}

/// xorshift64 (Marsaglia): deterministic, so every run measures the same data.
#[derive(Clone, Copy, Debug)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// A generator from a non-zero seed (zero is replaced: it is xorshift's fixed point).
    pub const fn new(seed: u64) -> Self {
        XorShift64(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// Fills `bytes` with the predictable branch pattern: 0, 1, 0, 1, ... (half the branches taken,
/// like the random pattern, and learnt at once by any history-based predictor).
pub fn fill_alternating(bytes: &mut [u8]) {
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i & 1) as u8;
    }
}

/// Fills `bytes` with 0 or 1 from `seed`'s xorshift64 stream, one bit (the top one, the best
/// mixed) per byte: unpredictable, about half taken.
pub fn fill_random_bits(bytes: &mut [u8], seed: u64) {
    let mut rng = XorShift64::new(seed);
    for b in bytes.iter_mut() {
        *b = (rng.next_u64() >> 63) as u8;
    }
}

/// A node of a pointer chain: one 64-byte cache line whose first word is the address of the
/// next node.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct Line(pub [u64; 8]);

impl Line {
    pub const ZERO: Line = Line([0; 8]);
}

/// A keyed bijection of `[0, n)`: rounds of multiply-by-odd, xorshift-right and add on the
/// `bits`-bit words (each a bijection of `[0, 2^bits)`), cycle-walked into `[0, n)` (applying
/// the permutation again until the value is below `n` keeps it a bijection of `[0, n)`).
#[derive(Clone, Copy, Debug)]
pub struct Shuffle {
    n: u64,
    mask: u64,
    shift: u32,
    /// Per round: an odd multiplier and an addend.
    keys: [u64; 6],
}

impl Shuffle {
    /// A bijection of `[0, n)` (`n >= 2`) keyed by `seed`'s xorshift64 stream.
    pub fn new(n: u64, seed: u64) -> Shuffle {
        assert!(n >= 2);
        let bits = 64 - (n - 1).leading_zeros();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        let mut rng = XorShift64::new(seed);
        let mut keys = [0; 6];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = rng.next_u64() | (i % 2 == 0) as u64;
        }
        Shuffle {
            n,
            mask,
            shift: bits.div_ceil(2),
            keys,
        }
    }

    /// One pass of the rounds, unrolled (this runs for every node of a 48 MiB chain, also in
    /// unoptimised builds).
    #[inline(always)]
    fn rounds(&self, x: u64) -> u64 {
        let (m, s, k) = (self.mask, self.shift, &self.keys);
        let x = x.wrapping_mul(k[0]) & m;
        let x = (x ^ (x >> s)).wrapping_add(k[1]) & m;
        let x = x.wrapping_mul(k[2]) & m;
        let x = (x ^ (x >> s)).wrapping_add(k[3]) & m;
        let x = x.wrapping_mul(k[4]) & m;
        (x ^ (x >> s)).wrapping_add(k[5]) & m
    }

    /// The image of `i < n`.
    #[inline(always)]
    pub fn apply(&self, i: u64) -> u64 {
        let mut x = self.rounds(i);
        while x >= self.n {
            x = self.rounds(x);
        }
        x
    }
}

/// Links `lines` into one random cycle through every line, in one pass: the k-th node visited
/// is line `shuffle(k)`, and it points to line `shuffle(k + 1)` (the last to the first).
/// Returns the address of the first node. `base` is the address of `lines[0]` as the chase will
/// see it (the buffer's own address in a payload; anything on the host).
pub fn build_chain(lines: &mut [Line], base: u64, seed: u64) -> u64 {
    let n = lines.len() as u64;
    let addr = |i: u64| base + i * core::mem::size_of::<Line>() as u64;
    let shuffle = Shuffle::new(n, seed);
    let first = shuffle.apply(0);
    let mut cur = first;
    for k in 1..n {
        let next = shuffle.apply(k);
        lines[cur as usize].0[0] = addr(next);
        cur = next;
    }
    lines[cur as usize].0[0] = addr(first);
    addr(first)
}

#[cfg(target_os = "none")]
mod payload;
#[cfg(target_os = "none")]
pub use payload::*;

// On the host only the pure parts build; the SDK is for the ring-3 side.
/// What the suite's bins do on the host: they are ring-3 payloads, so only say so.
#[cfg(not(target_os = "none"))]
pub use baremark_sdk::host_main;

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec;
    use std::vec::Vec;

    use super::*;

    #[test]
    fn shuffle_is_a_bijection() {
        for n in [2u64, 3, 256, 1000, 4096, 3 << 10] {
            let s = Shuffle::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = s.apply(i);
                assert!(j < n);
                assert!(!seen[j as usize], "n={n}: {j} twice");
                seen[j as usize] = true;
            }
        }
    }

    #[test]
    fn chain_is_one_cycle_through_every_line() {
        for n in [256usize, 4096, 3 << 12] {
            let mut lines = vec![Line::ZERO; n];
            let base = 0x1000_0000;
            let start = build_chain(&mut lines, base, 7);
            let index = |a: u64| ((a - base) / 64) as usize;
            let mut visited = vec![false; n];
            let mut p = start;
            let mut strides = Vec::new();
            for _ in 0..n {
                let i = index(p);
                assert!(!visited[i], "n={n}: line {i} visited twice");
                visited[i] = true;
                let next = lines[i].0[0];
                strides.push(next.wrapping_sub(p) as i64);
                p = next;
            }
            assert_eq!(p, start, "n={n}: the chain closes");
            // Not a sequential or constant-stride walk a prefetcher would follow.
            strides.sort_unstable();
            strides.dedup();
            assert!(strides.len() > n / 2, "n={n}: {} strides", strides.len());
        }
    }

    #[test]
    fn branch_patterns_have_the_same_share_of_taken_branches() {
        let mut a = [0u8; 4096];
        let mut r = [0u8; 4096];
        fill_alternating(&mut a);
        fill_random_bits(&mut r, 1);
        let ones = |b: &[u8]| b.iter().filter(|&&x| x == 1).count();
        assert_eq!(ones(&a), 2048);
        assert!((1900..2200).contains(&ones(&r)), "{}", ones(&r));
        assert!(r.iter().all(|&x| x <= 1));
    }
}

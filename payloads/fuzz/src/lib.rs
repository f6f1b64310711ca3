//! The syscall fuzzer's parts that need no kernel: the seeded generator, the argument
//! dictionary, the argument text, which bytes each syscall may write, and the canary scan.
//! `src/bin/fuzz-syscalls.rs` drives them (docs/reliability.md, "Random syscalls").
#![cfg_attr(not(test), no_std)]

/// SplitMix64: small, fast, and every seed gives a different full-period stream.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the bias is below 2^-32 for the small `n` used here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// What to run: `seed=N calls=M` (either may be left out; decimal or 0x hex).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    pub seed: u64,
    pub calls: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            seed: 1,
            calls: 10_000,
        }
    }
}

fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses the argument text (`baremark run --args fuzz-syscalls="seed=7 calls=1000000"`).
pub fn parse_args(text: &str) -> Result<Params, &'static str> {
    let mut p = Params::default();
    for word in text.split_whitespace() {
        let (key, value) = word
            .split_once('=')
            .ok_or("arguments are key=value words: seed=N calls=N")?;
        let value = number(value).ok_or("a value is not a number")?;
        match key {
            "seed" => p.seed = value,
            "calls" => p.calls = value,
            _ => return Err("unknown key: the keys are seed and calls"),
        }
    }
    Ok(p)
}

/// The syscall numbers the ABI has (docs/syscall-abi.md); 0 (`exit`) is never called.
pub const NR_MAX: u64 = 25;
pub const NR_READ_WINDOW: u64 = 13;
pub const NR_COUNTERS_CONFIGURE: u64 = 2;
pub const NR_COUNTERS_NOTIFY: u64 = 20;
pub const NR_SYSTEM_CONFIGURE: u64 = 24;

/// Where the task's memory is (docs/syscall-abi.md): its image from 0x40_0000, its stack below
/// 0x7fff_8000_0000 (16 pages), the counter page.
pub const IMAGE_START: u64 = 0x40_0000;
pub const STACK_TOP: u64 = 0x7fff_8000_0000;
pub const USER_PAGE: u64 = 0x7fff_c000_0000;

/// Arguments that matter besides the fuzzer's own addresses: null and near-null, the first
/// user address, the page below the image, kernel-half addresses (the heap, the kernel image,
/// the physical map), non-canonical addresses, the ends of the address space, unmapped user
/// pages, straddles of the stack's top and of the counter page, lengths around page and struct
/// sizes, huge lengths and lengths that wrap.
pub const DICTIONARY: [u64; 40] = [
    0,
    1,
    8,
    0xfff,
    0x1000,
    0x3f_f000,
    IMAGE_START,
    0x7fff_0000_0000,
    STACK_TOP - 8,
    STACK_TOP,
    STACK_TOP - 16 * 4096 - 8,
    USER_PAGE,
    USER_PAGE + 4090,
    USER_PAGE + 4096,
    0x7fff_ffff_f000,
    0x7fff_ffff_fff8,
    0x0000_8000_0000_0000,
    0x8000_0000_0000_0000,
    0xffff_8000_0000_0000,
    0xffff_c000_0000_0000,
    0xffff_ffff_8000_0000,
    0xffff_ffff_ffff_f000,
    u64::MAX,
    u64::MAX - 7,
    u64::MAX - 4095,
    u64::MAX / 8 + 1,
    7,
    16,
    24,
    40,
    63,
    64,
    4095,
    4096,
    4097,
    1 << 20,
    1 << 32,
    1 << 40,
    (-1i64) as u64,
    (-8i64) as u64,
];

/// The bytes a syscall may write into the task, as `(pointer argument, length)`: the
/// syscalls that write (docs/syscall-abi.md), with the length their contract allows.
pub fn may_write(nr: u64, args: &[u64; 6]) -> Option<(u64, u64)> {
    match nr {
        // counters_read, bench_plan, args, counters_read_scaled, system_read, cpus (28 is
        // past NR_MAX, among the numbers tried as unknown: it writes at most `len` bytes)
        6 | 14 | 19 | 23 | 25 | 28 => Some((args[0], args[1])),
        11 => Some((args[0], 16)), // time
        _ => None,
    }
}

/// The canary, masked (each byte XOR 0xA5) so that the fuzzer's own memory never holds it: a
/// `write` of its own memory must not look like a leak.
const CANARY_MASKED: [u8; 16] = [
    0xe7, 0xe4, 0xf7, 0xe0, 0xe8, 0xe4, 0xf7, 0xee, 0x88, 0xe6, 0xe4, 0xeb, 0xe4, 0xf7, 0xfc, 0x84,
];

fn canary(i: usize) -> u8 {
    CANARY_MASKED[i % 16] ^ 0xa5
}

/// The first offset in `buf` where 8 bytes of the repeating canary start (at any phase).
pub fn find_canary(buf: &[u8]) -> Option<usize> {
    if buf.len() < 8 {
        return None;
    }
    (0..=buf.len() - 8).find(|&i| (0..16).any(|k| (0..8).all(|j| buf[i + j] == canary(k + j))))
}

/// The ABI's error codes: -1 (`EINVAL`) to -12 (`EPERM`).
pub const ERRORS: usize = 12;

/// A syscall's result is a value (>= 0) or one of the ABI's error codes.
pub fn valid_result(r: i64) -> bool {
    r >= 0 || (-(ERRORS as i64)..=-1).contains(&r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATTERN: &[u8; 16] = b"BAREMARK-CANARY!";

    #[test]
    fn the_masked_canary_is_the_kernels() {
        let unmasked: Vec<u8> = (0..16).map(canary).collect();
        assert_eq!(&unmasked, PATTERN);
    }

    #[test]
    fn the_canary_is_found_at_any_phase_and_not_in_near_misses() {
        let mut painted = [0u8; 64];
        for (i, b) in painted.iter_mut().enumerate() {
            *b = PATTERN[(i + 5) % 16];
        }
        let mut buf = [0xffu8; 100];
        buf[30..50].copy_from_slice(&painted[3..23]);
        assert_eq!(find_canary(&buf), Some(30));
        // Seven bytes are not enough, and the pattern alone in the clear is found.
        let mut near = [0u8; 40];
        near[10..17].copy_from_slice(&PATTERN[..7]);
        assert_eq!(find_canary(&near), None);
        assert_eq!(find_canary(PATTERN), Some(0));
    }

    #[test]
    fn arguments_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_args("").unwrap(), Params::default());
        assert_eq!(
            parse_args(" seed=0x10  calls=1000000 ").unwrap(),
            Params {
                seed: 16,
                calls: 1_000_000
            }
        );
        assert!(parse_args("seed").is_err());
        assert!(parse_args("seed=x").is_err());
        assert!(parse_args("rounds=3").is_err());
    }

    #[test]
    fn the_generator_is_reproducible_and_spreads() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut r = Rng::new(1);
        let mut seen = [0u32; 20];
        for _ in 0..20_000 {
            seen[r.below(20) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn results_outside_the_codes_are_invalid() {
        assert!(valid_result(0) && valid_result(i64::MAX) && valid_result(-12));
        assert!(!valid_result(-13) && !valid_result(i64::MIN));
    }
}

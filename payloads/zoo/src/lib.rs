//! Shared code of the misbehaving payloads (`src/bin/zoo-*.rs`, docs/reliability.md,
//! "Misbehaving payloads"): each bin does one thing a broken or hostile benchmark could do, and
//! the QEMU test `tests/tests/zoo.rs` checks that the kernel contains it (a record, the run goes
//! on, nothing measured before is lost).
//!
//! A misbehaviour that ends the task (a fault) can happen once per task, so a payload with
//! several variants runs each in a child of itself: the parent (started by the kernel, `arg` 0)
//! spawns its own name with `arg` = the case number ([`baremark_sdk::spawn_with_arg`]), waits
//! for it, and reports what `wait` returned per case (`EABORTED` for a child that faulted).
//! The pure parts (the RDPMC indices, the PRNG) are tested on the host.
#![no_std]

/// The `spawn` / `wait` results the payloads report (docs/syscall-abi.md).
pub mod codes {
    pub const EINVAL: i64 = -1;
    pub const EFAULT: i64 = -2;
    pub const ENOENT: i64 = -4;
    pub const EBUSY: i64 = -5;
    pub const EABORTED: i64 = -7;
}

/// xorshift64 (Marsaglia), the suite's: the random RDPMC indices. Deterministic for a seed,
/// so under `-icount` (where the TSC that seeds it is exact) a run is reproducible.
pub use baremark_payload_suite::XorShift64;

/// The RDPMC indices `zoo-rdpmc` tries first, one per child: every kind of index a CPU might
/// give meaning to, and the edges around the kernel's virtual-TSC pseudo-index.
pub const RDPMC_SPECIAL: [u32; 10] = [
    0,           // GP counter 0 (the task's slot 0 once it configured a counter)
    1,           // GP counter 1
    7,           // GP counter 7 (beyond most PMUs' GP counters)
    0x4000_0000, // fixed counter 0
    0x4000_0003, // fixed counter 3 (beyond most PMUs)
    0x2000_0000, // Intel PERF_METRICS
    0x8000_0000, // bit 31: "fast read" on old Intel CPUs
    0x0fff_ffff, // just below the virtual TSC's index
    0x1000_0001, // just above it
    0xffff_ffff, // every bit (the slot reader's "not readable" index)
];

/// How many random indices `zoo-rdpmc` tries after [`RDPMC_SPECIAL`].
pub const RDPMC_RANDOM: u64 = 4;

/// The RDPMC index of `zoo-rdpmc`'s case `case` (1-based): [`RDPMC_SPECIAL`], then random
/// 32-bit values from `seed`, never the virtual TSC's index (which the kernel always answers).
pub fn rdpmc_index(case: u64, seed: u64) -> u32 {
    let special = usize::try_from(case)
        .ok()
        .and_then(|c| c.checked_sub(1))
        .and_then(|i| RDPMC_SPECIAL.get(i));
    if let Some(&index) = special {
        return index;
    }
    let mut rng = XorShift64::new(seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    loop {
        let index = rng.next_u64() as u32;
        if index != VIRTUAL_TSC_INDEX {
            return index;
        }
    }
}

/// The kernel's virtual-TSC RDPMC index.
pub const VIRTUAL_TSC_INDEX: u32 = 0x1000_0000;

/// How a `zoo-spawn-bomb` task ends: its exit code says why it stopped spawning (the refused
/// `spawn`'s error, as a positive number) and how many children it had started before that
/// (`spawned * 100 + refusal`), so the test can tell every task's story from its `task_exit`.
pub fn bomb_exit_code(spawned: u64, refusal: i64) -> i64 {
    (spawned as i64).saturating_mul(100) + refusal.saturating_neg().clamp(0, 99)
}

/// The inverse of [`bomb_exit_code`]: `(spawned, refusal)`.
pub fn bomb_exit_parts(code: i64) -> (u64, i64) {
    ((code / 100) as u64, -(code % 100))
}

#[cfg(target_os = "none")]
mod payload;
#[cfg(target_os = "none")]
pub use payload::*;

/// What a zoo bin does when built for the host (it only runs in ring 3 under baremark).
#[cfg(not(target_os = "none"))]
pub use baremark_sdk::host_main;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdpmc_cases_start_with_the_special_indices_and_never_name_the_virtual_tsc() {
        for (i, &index) in RDPMC_SPECIAL.iter().enumerate() {
            assert_eq!(rdpmc_index(i as u64 + 1, 5), index);
            assert_ne!(index, VIRTUAL_TSC_INDEX);
        }
        let n = RDPMC_SPECIAL.len() as u64;
        let random: [u32; 4] = core::array::from_fn(|i| rdpmc_index(n + 1 + i as u64, 5));
        for (i, r) in random.iter().enumerate() {
            assert_ne!(*r, VIRTUAL_TSC_INDEX);
            // Different cases draw different values; the same seed the same ones.
            assert!(!random[..i].contains(r), "{random:x?}");
            assert_eq!(rdpmc_index(n + 1 + i as u64, 5), *r);
        }
        assert_ne!(rdpmc_index(n + 1, 5), rdpmc_index(n + 1, 6));
        // Case 0 (the parent) is not an index case, but never panics either.
        assert_ne!(rdpmc_index(0, 5), VIRTUAL_TSC_INDEX);
    }

    #[test]
    fn bomb_exit_codes_round_trip() {
        for (spawned, refusal) in [(0, codes::EBUSY), (16, codes::EBUSY), (3, -9), (0, -10)] {
            let code = bomb_exit_code(spawned, refusal);
            assert!(code >= 0);
            assert_eq!(bomb_exit_parts(code), (spawned, refusal));
        }
    }
}

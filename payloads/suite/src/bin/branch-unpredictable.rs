//! `branch-unpredictable`: one conditional branch per byte of an array of random bits (xorshift64,
//! fixed seed, about half taken). Runs the same instructions as `branch-predictable`: the
//! difference of the two is the cost of the mispredictions (about half the branches).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{
        BRANCH_INSTRUCTIONS, Buffer, bm_branch, body, fill_random_bits, run,
    };
    use baremark_sdk::bench::Bench;

    /// Bytes (branches) per region; the array holds twice as many, for the harness's `diff`
    /// mode, which runs 2 * ITERATIONS.
    const ITERATIONS: u64 = 32768;
    const BYTES: usize = 2 * ITERATIONS as usize;
    /// The pattern's seed.
    const SEED: u64 = 0x5eed;

    static ARRAY: Buffer<[u8; BYTES]> = Buffer::new([0; BYTES]);

    pub fn main() -> i64 {
        // SAFETY: the only reference to the array, before the benchmark runs.
        let bytes = unsafe { ARRAY.get_mut() };
        fill_random_bits(bytes, SEED);
        // SAFETY: the body reads n bytes from the array; the harness passes at most
        // 2 * ITERATIONS = BYTES.
        let f = unsafe { body(bm_branch) };
        run(
            &Bench::new("branch-unpredictable", ITERATIONS, f).with_arg(ARRAY.addr()),
            format_args!(
                "array_bytes={BYTES}\npattern=random bits (xorshift64 seed {SEED:#x})\ntaken_fraction=0.5\n\
                 instructions_per_iteration={BRANCH_INSTRUCTIONS}\n\
                 expect=branch-predictable plus about half a misprediction per iteration (roughly 7-12 cycles more on current cores)"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

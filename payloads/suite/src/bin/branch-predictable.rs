//! `branch-predictable`: one conditional branch per byte of an array holding 0, 1, 0, 1, ...
//! (learnt by any history-based predictor). Runs the same instructions as `branch-unpredictable`:
//! the difference of the two is the cost of the mispredictions.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{
        BRANCH_INSTRUCTIONS, Buffer, bm_branch, body, fill_alternating, run,
    };
    use baremark_sdk::bench::Bench;

    /// Bytes (branches) per region; the array holds twice as many, for the harness's `diff`
    /// mode, which runs 2 * ITERATIONS.
    const ITERATIONS: u64 = 32768;
    const BYTES: usize = 2 * ITERATIONS as usize;

    static ARRAY: Buffer<[u8; BYTES]> = Buffer::new([0; BYTES]);

    pub fn main() -> i64 {
        // SAFETY: the only reference to the array, before the benchmark runs.
        let bytes = unsafe { ARRAY.get_mut() };
        fill_alternating(bytes);
        // SAFETY: the body reads n bytes from the array; the harness passes at most
        // 2 * ITERATIONS = BYTES.
        let f = unsafe { body(bm_branch) };
        run(
            &Bench::new("branch-predictable", ITERATIONS, f).with_arg(ARRAY.addr()),
            format_args!(
                "array_bytes={BYTES}\npattern=alternating 0 1\ntaken_fraction=0.5\n\
                 instructions_per_iteration={BRANCH_INSTRUCTIONS}\n\
                 expect=a few cycles per iteration (8 instructions, no mispredictions); subtract it from branch-unpredictable"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

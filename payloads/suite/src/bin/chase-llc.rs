//! `chase-llc`: a pointer chase through a random cycle of 64-byte nodes in 4 MiB: beyond L2 on
//! most cores, within the last-level cache. The chase resumes where the previous region stopped
//! (a cursor): a region is a quarter lap (short enough for emulation), and four regions touch
//! every node, so no stretch of the chain small enough for L2 is re-walked.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{Buffer, Line, chase};

    /// The buffer: 4 MiB, 64-byte nodes.
    const NODES: usize = 4 * 1024 * 1024 / 64;
    /// Loads per region: a quarter lap; successive regions walk on.
    const ITERATIONS: u64 = 16384;

    static LINES: Buffer<[Line; NODES]> = Buffer::new([Line::ZERO; NODES]);
    /// Where the resuming chase stands (the first node before the first region).
    static CURSOR: Buffer<u64> = Buffer::new(0);

    pub fn main() -> i64 {
        chase(
            "chase-llc",
            &LINES,
            Some(&CURSOR),
            ITERATIONS,
            "last-level cache latency plus L1 DTLB misses: about 35-80 cycles per iteration; instructions_fixed are the cursor load and store",
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

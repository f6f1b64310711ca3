//! `chase-l1`: a pointer chase through a random cycle of 64-byte nodes in 16 KiB, which fits
//! in any L1 data cache: the L1 load-to-use latency.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{Buffer, Line, chase};

    /// The buffer: 16 KiB, 64-byte nodes.
    const NODES: usize = 16 * 1024 / 64;
    /// Loads per region: 16 laps of the cycle.
    const ITERATIONS: u64 = 4096;

    static LINES: Buffer<[Line; NODES]> = Buffer::new([Line::ZERO; NODES]);

    pub fn main() -> i64 {
        chase(
            "chase-l1",
            &LINES,
            None,
            ITERATIONS,
            "L1D load-to-use latency: 4-5 cycles per iteration on current cores",
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

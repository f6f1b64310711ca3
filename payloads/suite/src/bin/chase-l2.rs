//! `chase-l2`: a pointer chase through a random cycle of 64-byte nodes in 256 KiB: beyond L1,
//! within L2 (on cores whose L2 is larger than 256 KiB; a 256 KiB L2 spills some to L3).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{Buffer, Line, chase};

    /// The buffer: 256 KiB, 64-byte nodes.
    const NODES: usize = 256 * 1024 / 64;
    /// Loads per region: 4 laps of the cycle.
    const ITERATIONS: u64 = 16384;

    static LINES: Buffer<[Line; NODES]> = Buffer::new([Line::ZERO; NODES]);

    pub fn main() -> i64 {
        chase(
            "chase-l2",
            &LINES,
            None,
            ITERATIONS,
            "L2 latency: about 12-16 cycles per iteration (more where L2 is only 256 KiB)",
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

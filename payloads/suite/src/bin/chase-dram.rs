//! `chase-dram`: a pointer chase through a random cycle of 64-byte nodes in 48 MiB, larger than
//! the last-level cache of most machines: DRAM latency. The chase resumes where the previous
//! region stopped (a cursor), so repetitions short enough for emulation still walk the whole
//! buffer instead of re-walking one stretch that would stay in the LLC.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{Buffer, Line, chase};

    /// The buffer: 48 MiB (the payload budget is 64 MiB), 64-byte nodes.
    const NODES: usize = 48 * 1024 * 1024 / 64;
    /// Loads per region (a region is well under 5 ms under TCG); successive regions walk on.
    const ITERATIONS: u64 = 8192;

    static LINES: Buffer<[Line; NODES]> = Buffer::new([Line::ZERO; NODES]);

    /// Where the resuming chase stands (the first node before the first region).
    static CURSOR: Buffer<u64> = Buffer::new(0);

    pub fn main() -> i64 {
        chase(
            "chase-dram",
            &LINES,
            Some(&CURSOR),
            ITERATIONS,
            "DRAM latency plus a TLB miss (4 KiB pages): about 80-130 ns per iteration; a random walk hits the LLC with a probability near LLC size / 48 MiB, so machines with a large LLC read lower; instructions_fixed are the cursor load and store",
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

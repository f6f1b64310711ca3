//! `pause`: the cost of the PAUSE instruction (spin-wait hint), one per iteration. The example
//! payload of docs/user-guide.md.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_sdk::bench::{self, Bench, Body};

    // The body is `extern "C" fn(n, arg)`: the loop and `ret`, nothing before the loop, so that
    // under `-icount shift=0` region - empty is exactly n * 3 instructions.
    core::arch::global_asm!(
        ".pushsection .text.example_pause, \"ax\", @progbits",
        ".p2align 6",
        ".global example_pause",
        "example_pause:",
        "2:  pause",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".popsection",
    );

    unsafe extern "C" {
        fn example_pause(n: u64, arg: u64);
    }

    pub fn main() -> i64 {
        // SAFETY: the body touches RDI and flags only and ends for any n >= 1.
        let body =
            unsafe { core::mem::transmute::<unsafe extern "C" fn(u64, u64), Body>(example_pause) };
        // What the tables will be compared with: a `report` record.
        let _ = baremark_sdk::report(
            "bench=pause\niterations=1000\ninstructions_per_iteration=3\n\
             expect=tens to over a hundred cycles per iteration depending on the core; \
             under icount exactly 3",
        );
        match bench::run(&Bench::new("pause", 1000, body)) {
            Ok(()) => 0,
            Err(_) => 1, // the kernel said why in a harness_error record
        }
    }
}

// The host build (`cargo test --workspace` builds every bin) has no use for the SDK.
#[cfg(not(target_os = "none"))]
use baremark_sdk as _;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("a baremark payload: build it with --target x86_64-unknown-none");
}

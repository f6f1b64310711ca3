//! `add-latency`: a dependent chain of 8 `add`s on one register per iteration, the latency of
//! an integer add.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{body, run};
    use baremark_sdk::bench::Bench;

    /// Adds per iteration; with `dec` and `jnz`, K + 2 instructions.
    const K: u64 = 8;

    // The whole function is the loop and `ret` (no instruction before the loop), so under
    // `-icount shift=0` region - empty is exactly iterations * (K + 2).
    core::arch::global_asm!(
        ".pushsection .text.bm_add_latency, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_add_latency",
        ".type bm_add_latency, @function",
        "bm_add_latency:",
        "2:  add rax, rsi",
        "    add rax, rsi",
        "    add rax, rsi",
        "    add rax, rsi",
        "    add rax, rsi",
        "    add rax, rsi",
        "    add rax, rsi",
        "    add rax, rsi",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_add_latency, . - bm_add_latency",
        ".popsection",
    );

    unsafe extern "C" {
        fn bm_add_latency(n: u64, arg: u64);
    }

    pub fn main() -> i64 {
        // SAFETY: registers only (RAX, RDI, flags); any n >= 1 ends.
        let f = unsafe { body(bm_add_latency) };
        run(
            &Bench::new("add-latency", 1000, f).with_arg(1),
            format_args!(
                "adds_per_iteration={K}\ninstructions_per_iteration={}\n\
                 expect=latency: {K} cycles per iteration (1 cycle per dependent add) on most cores; \
                 under icount exactly {} per iteration",
                K + 2,
                K + 2
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

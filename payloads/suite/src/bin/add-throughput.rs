//! `add-throughput`: 8 independent `add`s per iteration (8 caller-saved registers, each its
//! own chain), the integer ALUs' throughput.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{body, run};
    use baremark_sdk::bench::Bench;

    /// Adds per iteration; with `dec` and `jnz`, K + 2 instructions.
    const K: u64 = 8;

    // Only caller-saved registers (RDI is the counter), so nothing is saved around the loop:
    // the function is the loop and `ret`, and region - empty is exactly iterations * (K + 2)
    // under `-icount shift=0`.
    core::arch::global_asm!(
        ".pushsection .text.bm_add_throughput, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_add_throughput",
        ".type bm_add_throughput, @function",
        "bm_add_throughput:",
        "2:  add rax, 1",
        "    add rcx, 1",
        "    add rdx, 1",
        "    add rsi, 1",
        "    add r8, 1",
        "    add r9, 1",
        "    add r10, 1",
        "    add r11, 1",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_add_throughput, . - bm_add_throughput",
        ".popsection",
    );

    unsafe extern "C" {
        fn bm_add_throughput(n: u64, arg: u64);
    }

    pub fn main() -> i64 {
        // SAFETY: caller-saved registers and flags only; any n >= 1 ends.
        let f = unsafe { body(bm_add_throughput) };
        run(
            &Bench::new("add-throughput", 1000, f),
            format_args!(
                "adds_per_iteration={K}\ninstructions_per_iteration={}\n\
                 expect=throughput: about 2 cycles per iteration with 4 integer ALUs (8 adds, dec+jnz \
                 fused), less with more ALUs; under icount exactly {} per iteration",
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

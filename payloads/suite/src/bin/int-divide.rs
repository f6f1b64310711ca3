//! `int-divide`: a dependent chain of 64-bit `div`s, the divider's latency.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{body, run};
    use baremark_sdk::bench::Bench;

    /// Instructions per iteration: xor, div, not, dec, jnz.
    const INSTRUCTIONS: u64 = 5;
    /// The divisor (arg, RSI): non-zero, so no #DE.
    const DIVISOR: u64 = 13;

    // RDX is zeroed before each `div` (so the quotient always fits: no #DE whatever RAX holds on
    // entry), and the quotient is inverted: the next dividend is then at least
    // 2^64 - 2^64 / 13 > 2^63, a full-width division every time. The chain is RAX -> div -> not
    // -> RAX; `xor edx, edx` is a zero idiom that depends on nothing. No instruction precedes
    // the loop.
    core::arch::global_asm!(
        ".pushsection .text.bm_int_divide, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_int_divide",
        ".type bm_int_divide, @function",
        "bm_int_divide:",
        "2:  xor edx, edx",
        "    div rsi",
        "    not rax",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_int_divide, . - bm_int_divide",
        ".popsection",
    );

    unsafe extern "C" {
        fn bm_int_divide(n: u64, arg: u64);
    }

    pub fn main() -> i64 {
        // SAFETY: registers only; the divisor (arg) is non-zero and RDX is 0 before every
        // division, so it never faults; any n >= 1 ends.
        let f = unsafe { body(bm_int_divide) };
        run(
            &Bench::new("int-divide", 1000, f).with_arg(DIVISOR),
            format_args!(
                "divisor={DIVISOR}\ninstructions_per_iteration={INSTRUCTIONS}\n\
                 expect=latency of one 64-bit div (RDX=0, dividend above 2^63) plus 1 cycle: about \
                 12-20 cycles per iteration on Ice Lake and later and on Zen, 40-95 on Skylake-era \
                 cores; under icount exactly {INSTRUCTIONS} per iteration"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

//! `store-forward`: a dependent chain through memory: store a register to a slot, load it back
//! into the same register: the store-to-load forwarding latency.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{Buffer, body, run};
    use baremark_sdk::bench::Bench;

    /// Instructions per iteration: store, load, dec, jnz.
    const INSTRUCTIONS: u64 = 4;

    /// The slot (arg), on its own line.
    static SLOT: Buffer<u64> = Buffer::new(0);

    // RAX -> [RSI] -> RAX: each load depends on the previous store. A static slot through RSI
    // (not RSP-relative) keeps the stack-engine special cases out. No instruction before the
    // loop.
    core::arch::global_asm!(
        ".pushsection .text.bm_store_forward, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_store_forward",
        ".type bm_store_forward, @function",
        "bm_store_forward:",
        "2:  mov [rsi], rax",
        "    mov rax, [rsi]",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_store_forward, . - bm_store_forward",
        ".popsection",
    );

    unsafe extern "C" {
        fn bm_store_forward(n: u64, arg: u64);
    }

    pub fn main() -> i64 {
        // SAFETY: writes and reads only the 8-byte slot at arg; any n >= 1 ends.
        let f = unsafe { body(bm_store_forward) };
        run(
            &Bench::new("store-forward", 1000, f).with_arg(SLOT.addr()),
            format_args!(
                "instructions_per_iteration={INSTRUCTIONS}\n\
                 expect=store-to-load forwarding latency: about 4-6 cycles per iteration (near 0-1 \
                 on cores that rename memory); under icount exactly {INSTRUCTIONS} per iteration"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

//! `rep-movsb`: one `rep movsb` copying a 4 KiB buffer into another per iteration: the string
//! copy's bandwidth on cache-resident data.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{Buffer, body, run};
    use baremark_sdk::bench::Bench;

    /// Bytes copied per iteration.
    const BYTES: usize = 4096;
    /// Instructions per iteration, `rep movsb` counted once.
    const INSTRUCTIONS: u64 = 8;
    /// Copies per region.
    const ITERATIONS: u64 = 16;

    static SRC: Buffer<[u8; BYTES]> = Buffer::new([0; BYTES]);
    static DST: Buffer<[u8; BYTES]> = Buffer::new([0; BYTES]);

    // `rep movsb` needs RDI, RSI and RCX, so the counter waits in RDX during the copy; the
    // pointers are set in every iteration (the copy advances them). The SysV ABI guarantees
    // DF = 0 at the call: the copy goes upwards. No instruction before the loop.
    core::arch::global_asm!(
        ".pushsection .text.bm_rep_movsb, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_rep_movsb",
        ".type bm_rep_movsb, @function",
        "bm_rep_movsb:",
        "2:  mov rdx, rdi",
        "    lea rsi, [rip + {src}]",
        "    lea rdi, [rip + {dst}]",
        "    mov ecx, {bytes}",
        "    rep movsb",
        "    mov rdi, rdx",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_rep_movsb, . - bm_rep_movsb",
        ".popsection",
        src = sym SRC,
        dst = sym DST,
        bytes = const BYTES,
    );

    unsafe extern "C" {
        fn bm_rep_movsb(n: u64, arg: u64);
    }

    pub fn main() -> i64 {
        // SAFETY: the only reference to the source, before the benchmark runs.
        for (i, b) in unsafe { SRC.get_mut() }.iter_mut().enumerate() {
            *b = i as u8;
        }
        // SAFETY: each iteration copies SRC into DST, both BYTES long; any n >= 1 ends.
        let f = unsafe { body(bm_rep_movsb) };
        run(
            &Bench::new("rep-movsb", ITERATIONS, f).with_bytes(BYTES as u64),
            format_args!(
                "bytes_per_iteration={BYTES}\ninstructions_per_iteration={INSTRUCTIONS}\n\
                 expect=L1-resident 4 KiB copy: roughly 64-200 cycles per iteration on cores with \
                 fast string moves (ERMSB/FSRM); bandwidth = bytes_per_iteration / time per iteration; \
                 under icount each byte moved may count as an instruction (QEMU executes rep movsb \
                 one element at a time)"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

//! `seq-read`: sequential 8-byte loads through a 1 MiB buffer, one whole pass per iteration:
//! read bandwidth (bytes_per_iteration / per-iteration time).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{Buffer, body, run};
    use baremark_sdk::bench::Bench;

    /// The buffer, read whole in each iteration.
    const BYTES: usize = 1 << 20;
    /// Instructions per iteration: 2 to start a pass, 11 per 64-byte line (8 loads, add, cmp,
    /// jb), 2 for the outer dec/jnz.
    const INSTRUCTIONS: u64 = 2 + 11 * (BYTES as u64 / 64) + 2;
    /// Passes per region.
    const ITERATIONS: u64 = 2;

    static DATA: Buffer<[u64; BYTES / 8]> = Buffer::new([0; BYTES / 8]);

    // One pass per iteration over [RSI, RSI + BYTES): eight independent 8-byte loads per line
    // (their results are dropped: the loads still execute), no instruction before the loop.
    core::arch::global_asm!(
        ".pushsection .text.bm_seq_read, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_seq_read",
        ".type bm_seq_read, @function",
        "bm_seq_read:",
        "2:  mov rax, rsi",
        "    lea rcx, [rsi + {bytes}]",
        "3:  mov rdx, [rax]",
        "    mov r8, [rax + 8]",
        "    mov r9, [rax + 16]",
        "    mov r10, [rax + 24]",
        "    mov rdx, [rax + 32]",
        "    mov r8, [rax + 40]",
        "    mov r9, [rax + 48]",
        "    mov r10, [rax + 56]",
        "    add rax, 64",
        "    cmp rax, rcx",
        "    jb 3b",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_seq_read, . - bm_seq_read",
        ".popsection",
        bytes = const BYTES,
    );

    unsafe extern "C" {
        fn bm_seq_read(n: u64, arg: u64);
    }

    pub fn main() -> i64 {
        // Touch every page and line before measuring (no first-touch cost in the region).
        // SAFETY: the only reference to the buffer, before the benchmark runs.
        for (i, w) in unsafe { DATA.get_mut() }.iter_mut().enumerate() {
            *w = i as u64;
        }
        // SAFETY: each pass reads [arg, arg + BYTES), the buffer; any n >= 1 ends.
        let f = unsafe { body(bm_seq_read) };
        run(
            &Bench::new("seq-read", ITERATIONS, f)
                .with_arg(DATA.addr())
                .with_bytes(BYTES as u64),
            format_args!(
                "buffer_bytes={BYTES}\nbytes_per_iteration={BYTES}\nloads_per_iteration={}\n\
                 load_bytes=8\ninstructions_per_iteration={INSTRUCTIONS}\n\
                 expect=one 1 MiB pass per iteration: bandwidth = bytes_per_iteration / time per \
                 iteration; roughly 16-64 bytes per cycle from L2/L3 depending on the core",
                BYTES / 8
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

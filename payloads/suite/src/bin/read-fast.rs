//! `read-fast`: the SDK's retry-free virtual TSC reader (`baremark_read_vtsc`: two loads from
//! the counter page, RDTSC, four instructions and `ret`), called in a loop whose code is the
//! loop and the call: 3 + 9 instructions per read under icount, 9 of them the read with its
//! call (harness-costs prints that).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{body, run};
    use baremark_sdk::bench::Bench;
    use baremark_sdk::counters;

    /// Instructions per iteration: the loop (mov, dec, jnz), the call and the reader's eight.
    const INSTRUCTIONS: u64 = 12;
    /// Of which the loop's.
    const LOOP: u64 = 3;

    // RDI = n, RSI = the page. The reader takes the page in RDI and clobbers RSI, RCX, RDX and
    // RAX, so the count and the page live in R8 and R9 (two instructions before the loop).
    core::arch::global_asm!(
        ".pushsection .text.bm_read_fast, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_read_fast",
        ".type bm_read_fast, @function",
        "bm_read_fast:",
        "    mov r8, rdi",
        "    mov r9, rsi",
        "2:  mov rdi, r9",
        "    call baremark_read_vtsc",
        "    dec r8",
        "    jnz 2b",
        "    ret",
        ".size bm_read_fast, . - bm_read_fast",
        ".popsection",
    );

    unsafe extern "C" {
        fn bm_read_fast(n: u64, page: u64);
    }

    pub fn main() -> i64 {
        let Some(page) = counters::page() else {
            let _ = baremark_sdk::report("bench=read-fast\nerror=no counter page");
            return 1;
        };
        // SAFETY: `page` is the task's counter page, which the reader only loads from; any
        // n >= 1 ends.
        let f = unsafe { body(bm_read_fast) };
        run(
            &Bench::new("read-fast", 1000, f).with_arg(page),
            format_args!(
                "instructions_per_iteration={INSTRUCTIONS}\nloop_instructions={LOOP}\nprologue_instructions=2\n\
                 expect=the retry-free reader: one RDTSC, two loads, four ALU instructions, the \
                 call and ret; about 20-40 cycles on hardware (RDTSC dominates)"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

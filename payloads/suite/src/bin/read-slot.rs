//! `read-slot`: the SDK's retry-free hardware slot reader (`baremark_read_slot`: three loads
//! from the counter page, RDPMC, six instructions and `ret`) on counter slot 0, called in a
//! loop: 3 + 12 instructions per read under icount, 12 of them the read with its call. Slot 0
//! is whatever event the harness's group puts first. Needs hardware counters: on a TSC-only
//! machine it says so and measures nothing.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{body, run};
    use baremark_sdk::bench::Bench;
    use baremark_sdk::{counters, counters_configure, page};

    /// Instructions per iteration: the loop (mov, dec, jnz), the call and the reader's eleven.
    const INSTRUCTIONS: u64 = 15;
    /// Of which the loop's.
    const LOOP: u64 = 3;

    // RDI = n, RSI = slot 0 of the page. The reader clobbers RSI, R8, RCX, RDX and RAX.
    core::arch::global_asm!(
        ".pushsection .text.bm_read_slot, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_read_slot",
        ".type bm_read_slot, @function",
        "bm_read_slot:",
        "    mov r9, rdi",
        "    mov r10, rsi",
        "2:  mov rdi, r10",
        "    call baremark_read_slot",
        "    dec r9",
        "    jnz 2b",
        "    ret",
        ".size bm_read_slot, . - bm_read_slot",
        ".popsection",
    );

    unsafe extern "C" {
        fn bm_read_slot(n: u64, slot: u64);
    }

    /// `instructions:u` on any GP counter: does this machine give tasks hardware counters?
    const PROBE: u64 = 0xc0 | (1 << 16);

    pub fn main() -> i64 {
        let Some(page_addr) = counters::page() else {
            let _ = baremark_sdk::report("bench=read-slot\nerror=no counter page");
            return 1;
        };
        if counters_configure(&[PROBE]).is_err() {
            let _ = baremark_sdk::report(
                "bench=read-slot\nskipped=no hardware counters for tasks on this PMU: nothing to read",
            );
            return 0;
        }
        let _ = counters_configure(&[]);
        // SAFETY: the address is slot 0 of the task's counter page, which the reader only
        // loads from (an unconfigured or unreadable slot goes to its abort path); any n >= 1
        // ends.
        let f = unsafe { body(bm_read_slot) };
        run(
            &Bench::new("read-slot", 1000, f).with_arg(page_addr + page::SLOTS_OFFSET as u64),
            format_args!(
                "instructions_per_iteration={INSTRUCTIONS}\nloop_instructions={LOOP}\nprologue_instructions=2\n\
                 expect=the retry-free slot reader: one RDPMC, three loads, six ALU instructions, \
                 the call and ret; RDPMC dominates on hardware (about 20-40 cycles)"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

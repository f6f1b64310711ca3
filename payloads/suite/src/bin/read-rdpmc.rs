//! `read-rdpmc`: reads of the task's virtual TSC through RDPMC with the virtual-TSC pseudo-index,
//! which always traps and which the kernel emulates: the cost of the emulated read.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{body, run};
    use baremark_sdk::bench::Bench;
    use baremark_sdk::page::VIRTUAL_TSC_INDEX;

    /// Instructions per iteration on the user side: mov, rdpmc, dec, jnz.
    const INSTRUCTIONS: u64 = 4;

    // What `baremark_sdk::rdpmc(VIRTUAL_TSC_INDEX)` executes, in a loop whose whole code is the
    // loop and `ret`. RDPMC writes EDX:EAX (caller-saved); the counter is in RDI.
    core::arch::global_asm!(
        ".pushsection .text.bm_read_rdpmc, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_read_rdpmc",
        ".type bm_read_rdpmc, @function",
        "bm_read_rdpmc:",
        "2:  mov ecx, {index}",
        "    rdpmc",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_read_rdpmc, . - bm_read_rdpmc",
        ".popsection",
        index = const VIRTUAL_TSC_INDEX,
    );

    unsafe extern "C" {
        fn bm_read_rdpmc(n: u64, arg: u64);
    }

    /// Reads per region: each traps, tens of microseconds under TCG (a region stays near 2 ms).
    const ITERATIONS: u64 = 50;

    pub fn main() -> i64 {
        // SAFETY: the kernel emulates RDPMC with this index for every task (EDX:EAX only);
        // any n >= 1 ends.
        let f = unsafe { body(bm_read_rdpmc) };
        run(
            &Bench::new("read-rdpmc", ITERATIONS, f),
            format_args!(
                "rdpmc_index={VIRTUAL_TSC_INDEX:#x}\ninstructions_per_iteration={INSTRUCTIONS}\n\
                 expect=a #GP trap and the kernel's emulation per read: the virtual TSC counts the \
                 user side and the kernel's fixed exception entry/exit path; on hardware several \
                 hundred cycles, far above read-fast"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

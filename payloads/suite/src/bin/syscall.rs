//! `syscall`: the system call round trip: a syscall the kernel does not have (ENOSYS at once)
//! per iteration.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::{body, run};
    use baremark_sdk::bench::Bench;

    /// Instructions per iteration on the user side: mov, syscall, dec, jnz.
    const INSTRUCTIONS: u64 = 4;
    /// No such syscall: the kernel answers ENOSYS without doing anything.
    const NR: u64 = 0xffff;

    // SYSCALL clobbers RCX and R11 (and RAX, the result); the counter lives in RDI, which the
    // kernel preserves. No instruction before the loop.
    core::arch::global_asm!(
        ".pushsection .text.bm_syscall, \"ax\", @progbits",
        ".p2align 6",
        ".global bm_syscall",
        ".type bm_syscall, @function",
        "bm_syscall:",
        "2:  mov eax, {nr}",
        "    syscall",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size bm_syscall, . - bm_syscall",
        ".popsection",
        nr = const NR,
    );

    unsafe extern "C" {
        fn bm_syscall(n: u64, arg: u64);
    }

    /// Round trips per region: each is tens of microseconds under TCG (a region stays near 2 ms).
    const ITERATIONS: u64 = 50;

    pub fn main() -> i64 {
        // SAFETY: an unknown syscall changes nothing but RAX, RCX and R11, all caller-saved;
        // any n >= 1 ends.
        let f = unsafe { body(bm_syscall) };
        run(
            &Bench::new("syscall", ITERATIONS, f),
            format_args!(
                "syscall_nr={NR}\ninstructions_per_iteration={INSTRUCTIONS}\n\
                 expect=the virtual TSC counts the user side and the kernel's fixed entry/exit path \
                 around its TSC reads, not the service itself: under icount {INSTRUCTIONS} plus that \
                 path's instructions per iteration; on hardware about 100-300 cycles"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

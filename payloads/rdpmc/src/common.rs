//! What the counter test payloads (`notify`, `mux`, `sysmode`, `threads`) share.

/// `n` iterations of `nop; nop; dec; jnz`: exactly 4 instructions and 1 branch each. Not
/// inlined: one address range (the notification test checks RIPs against it) and the same
/// instructions around the loop at every call.
#[inline(never)]
pub extern "C" fn spin(n: u64) {
    // SAFETY: a register-only loop: no memory, no stack, only the counter register clobbered.
    unsafe {
        core::arch::asm!(
            "2:", "nop", "nop", "dec {n}", "jnz 2b",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
}

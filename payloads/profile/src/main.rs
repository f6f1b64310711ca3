//! The profile payload: `heavy` and `light` run 3:1 instructions, called alternately
//! [`CALLS`] times each. Sampled every P instructions (`run --sample instructions:u@P`), a
//! flat profile must show them 3:1 (docs/profiling.md; tests/tests/profile.rs). Its ELF keeps
//! its symbols and line tables (the workspace Cargo.toml) so the host can name them.
#![cfg_attr(target_os = "none", no_std, no_main)]

/// Iterations of `light`'s loop; `heavy` runs three times as many.
pub const LIGHT_ITERATIONS: u64 = 1000;
/// Instructions per loop iteration (`nop; nop; dec; jnz`).
pub const LOOP_INSTRUCTIONS: u64 = 4;
/// Calls of each function.
pub const CALLS: u64 = 200;

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload_main);

/// 3 * 1000 iterations: `mov`, 12000 loop instructions, `ret` = 12002 instructions. The loop
/// count is an immediate inside the asm, so the compiler adds nothing around it.
#[cfg(target_os = "none")]
#[inline(never)]
fn heavy() {
    // SAFETY: a register-only loop: no memory, no stack, only the counter register clobbered.
    unsafe {
        core::arch::asm!(
            "mov {n:e}, 3000",
            "2:",
            "nop",
            "nop",
            "dec {n:e}",
            "jnz 2b",
            n = out(reg) _,
            options(nomem, nostack),
        );
    }
}

/// 1000 iterations: `mov`, 4000 loop instructions, `ret` = 4002 instructions.
#[cfg(target_os = "none")]
#[inline(never)]
fn light() {
    // SAFETY: as in `heavy`.
    unsafe {
        core::arch::asm!(
            "mov {n:e}, 1000",
            "2:",
            "nop",
            "nop",
            "dec {n:e}",
            "jnz 2b",
            n = out(reg) _,
            options(nomem, nostack),
        );
    }
}

#[cfg(target_os = "none")]
fn payload_main() -> i64 {
    use core::fmt::Write as _;
    // Alternately, so a sampling period cannot line up with one function's calls.
    for _ in 0..core::hint::black_box(CALLS) {
        heavy();
        light();
    }
    let mut buf = baremark_sdk::Buf::<160>::new();
    let _ = write!(
        buf,
        "calls={CALLS}\nheavy_iterations={}\nlight_iterations={LIGHT_ITERATIONS}\nloop_instructions={LOOP_INSTRUCTIONS}",
        3 * LIGHT_ITERATIONS
    );
    let _ = baremark_sdk::report(buf.as_str());
    0
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

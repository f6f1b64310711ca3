//! `zoo-syscall-flood`: `write` without end. Each call is a few instructions in ring 3 and a
//! `task_output` record for the kernel to format and send (on hardware, about 10 ms of a
//! 115200-baud serial line per record), so the task's own time grows slowly while the kernel
//! works for it without pause. The watchdog budgets the kernel's service of a task as well as
//! its own time (docs/run-config.md, `task_budget_ms`): the kernel must end it with a
//! `task_killed` record (`exceeded: "service"`) once its syscalls have had the budget's worth
//! of kernel time, and go on. It never exits.
//!
//! With `--args zoo-syscall-flood=light` it floods with an unknown number instead, which the
//! SYSCALL entry answers itself (a light syscall, kernel/hw/src/user.rs): the kernel's service
//! never returns to the task runner there, and must still be budgeted.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    /// No such syscall: ENOSYS.
    const UNKNOWN: u64 = 0xffff;

    pub fn main() -> i64 {
        let mut arg = [0u8; 8];
        let len = baremark_sdk::args(&mut arg).unwrap_or(0).min(arg.len());
        let light = &arg[..len] == b"light";
        let mut n = 0u64;
        loop {
            if light {
                let _ = baremark_sdk::syscall0(UNKNOWN);
            } else {
                let _ = baremark_sdk::write("flood\n");
            }
            n = core::hint::black_box(n + 1);
        }
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

//! The spin payload: loops forever in ring 3 without a system call, so only the kernel's
//! watchdog (`task_budget_ms`) can end it (a `task_killed` record).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload_main);

#[cfg(target_os = "none")]
fn payload_main() -> i64 {
    loop {
        core::hint::spin_loop();
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

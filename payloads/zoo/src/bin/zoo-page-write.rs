//! `zoo-page-write`: writes to its read-only counter page (docs/syscall-abi.md, "Reads without
//! a system call"). First through the kernel: the page as the result buffer of `time`,
//! `counters_read` and `bench_plan`, which the kernel must refuse with `EFAULT` (it writes only
//! memory the task itself may write); it reports the three results. Then itself: a store to
//! the page's `seq`, which must end it with a user `fault` record, vector 14 (`present`,
//! `write`, `user`, CR2 the page's `seq`). It never exits.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_sdk::{nr, syscall3};

    pub fn main() -> i64 {
        let page = syscall3(nr::USER_PAGE, 0, 0, 0) as u64;
        let time = syscall3(nr::TIME, page, 0, 0);
        let read = syscall3(nr::COUNTERS_READ, page, 4096, 0);
        let plan = syscall3(nr::BENCH_PLAN, page, 40, 0);
        baremark_payload_zoo::report(format_args!(
            "page={page:#x}\ntime={time}\ncounters_read={read}\nbench_plan={plan}"
        ));
        // SAFETY: not sound on purpose: the page is mapped read-only, so this store faults and
        // the kernel ends the task (nothing after it runs).
        unsafe { ((page + 8) as *mut u64).write_volatile(0) };
        let _ = baremark_sdk::report("error=the store to the counter page did not fault");
        1
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

//! `zoo-syscall-storm`: thousands of system calls inside measured harness regions
//! (docs/harness.md). Three benchmarks, one after the other:
//!
//! - `storm`: per iteration eight syscalls that answer at once (an unknown number, `user_page`,
//!   `time`, `counters_read`, `yield`, `bench_plan`, `wait` for no child, `spawn` of an
//!   unreadable name), 100 iterations per region: 800 kernel entries per region, thousands per
//!   benchmark. The results must be sane: the virtual TSC counts each entry's fixed path, not
//!   the kernel's service, so under `-icount shift=0` every repetition reads the same.
//! - `storm-reset`: `counters_reset` (and `counters_configure` with no events) inside the
//!   region, which would restart the virtual TSC the region's reads depend on; the kernel
//!   must not report a delta across a restart as a measurement.
//! - `storm-harness`: the harness's own calls inside the region (`bench_begin` of another
//!   benchmark, `bench_group`, `bench_end`): refused with a `harness_error`, or a clear end of
//!   the benchmark.
//!
//! It reports how each `bench::run` ended and exits 0.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_sdk::bench::{self, Bench};
    use baremark_sdk::{nr, syscall3, syscall4};

    /// A buffer the syscalls write into (`time`, `counters_read`, `bench_plan`).
    #[repr(C, align(64))]
    struct Scratch(core::cell::UnsafeCell<[u64; 32]>);
    // SAFETY: a task is single-threaded; only the kernel writes it (through syscalls).
    unsafe impl Sync for Scratch {}
    static SCRATCH: Scratch = Scratch(core::cell::UnsafeCell::new([0; 32]));

    const NAME: &str = "another";

    extern "C" fn storm(n: u64, buf: u64) {
        for _ in 0..n {
            syscall3(0xffff, 0, 0, 0);
            syscall3(nr::USER_PAGE, 0, 0, 0);
            syscall3(nr::TIME, buf, 0, 0);
            syscall3(nr::COUNTERS_READ, buf, 256, 0);
            syscall3(nr::YIELD, 0, 0, 0);
            syscall3(nr::BENCH_PLAN, buf, 40, 0);
            syscall3(nr::WAIT, 0xffff_ffff, 0, 0);
            syscall3(nr::SPAWN, 0x10, 8, 0);
        }
    }

    extern "C" fn storm_reset(n: u64, buf: u64) {
        for i in 0..n {
            syscall3(0xffff, 0, 0, 0);
            syscall3(nr::COUNTERS_RESET, 0, 0, 0);
            if i % 2 == 1 {
                syscall3(nr::COUNTERS_CONFIGURE, 0, 0, 0);
            }
            syscall3(nr::TIME, buf, 0, 0);
        }
    }

    extern "C" fn storm_harness(n: u64, _buf: u64) {
        for i in 0..n {
            syscall4(
                nr::BENCH_BEGIN,
                NAME.as_ptr() as u64,
                NAME.len() as u64,
                1,
                0,
            );
            syscall3(nr::BENCH_GROUP, 0, 0, 0);
            if i == n / 2 {
                syscall3(nr::BENCH_END, 0, 0, 0);
            }
        }
    }

    fn outcome(r: Result<(), baremark_sdk::Error>) -> &'static str {
        match r {
            Ok(()) => "ok",
            Err(baremark_sdk::Error::Invalid) => "EINVAL",
            Err(baremark_sdk::Error::Busy) => "EBUSY",
            Err(baremark_sdk::Error::Fault) => "EFAULT",
            Err(_) => "error",
        }
    }

    pub fn main() -> i64 {
        let buf = SCRATCH.0.get() as u64;
        let a = bench::run(&Bench::new("storm", 100, storm).with_arg(buf));
        let b = bench::run(&Bench::new("storm-reset", 100, storm_reset).with_arg(buf));
        let c = bench::run(&Bench::new("storm-harness", 10, storm_harness).with_arg(buf));
        baremark_payload_zoo::report(format_args!(
            "syscalls_per_iteration=8\nstorm={}\nstorm_reset={}\nstorm_harness={}",
            outcome(a),
            outcome(b),
            outcome(c)
        ));
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

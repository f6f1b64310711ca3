//! Threads: a function of this task run on another CPU, in the same address space
//! (docs/syscall-abi.md, "Threads"). Memory is shared as it is: statics, the heap, anything a
//! pointer reaches; use atomics for what both sides write.
//!
//! Each thread has its own counters (its CPU's) and its own counter page. The fast readers of
//! [`counters`](crate::counters) cache the first page they see, the task's, so in a thread read
//! counters with [`counters_read`](crate::counters_read), which is the thread's own.

use crate::{Error, nr, syscall4};

/// The first Rust code of a thread: RDI = the function, RSI = its argument (the kernel starts
/// the thread at this address with them). Its return value is the thread's exit code.
extern "C" fn trampoline(f: usize, arg: u64) -> ! {
    // SAFETY: `start` passed a `fn(u64) -> i64` as `f` (a function pointer's address is a
    // usize on x86_64), and nothing else starts threads at this address.
    let f: fn(u64) -> i64 = unsafe { core::mem::transmute::<usize, fn(u64) -> i64>(f) };
    crate::exit(f(arg))
}

/// Starts `f(arg)` on CPU `cpu` (an index: 0 is the boot CPU; not the caller's own); returns the
/// thread's id for [`join`]. Errors: `Invalid` (the caller's CPU), `NoDev` (no such CPU online),
/// `Busy` (it runs other work), `Limit` (the task started 511 threads already), `Perm` (a thread
/// cannot start threads).
pub fn start(cpu: u64, f: fn(u64) -> i64, arg: u64) -> Result<u64, Error> {
    let entry = trampoline as extern "C" fn(usize, u64) -> ! as usize as u64;
    Error::check(syscall4(
        nr::THREAD_START,
        cpu,
        entry,
        f as usize as u64,
        arg,
    ))
}

/// Waits for thread `id` to end: its exit code, `EABORTED` (-7: it faulted or was stopped) or
/// `ENOENT` (-4: not a thread of this task, or joined already). Raw, since exit codes may be
/// negative.
pub fn join(id: u64) -> i64 {
    syscall4(nr::THREAD_JOIN, id, 0, 0, 0)
}

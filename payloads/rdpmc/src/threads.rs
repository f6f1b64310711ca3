//! Test payload: threads (docs/syscall-abi.md "Threads"; tests/tests/smp.rs runs it on the
//! emulated PMU with 4 CPUs, the task on CPU 0). It starts a thread on CPU 3, passes a cache
//! line between them (`ROUNDS` round trips of one atomic word), then each side counts
//! `instructions:u` (its own counter, on its own CPU) around the same loop and reports it:
//! `main_insns` and `thread_insns` must be equal and exact. Then the refusals (`start_self`:
//! the caller's own CPU, `start_none`: a CPU that is not online), and last a thread on CPU 2
//! that never ends, which the task does not join: the kernel stops it when the task exits.
//! With the argument `join-forever` it only joins a thread that never ends (`join_forever`: the
//! kernel stops the thread when the task's budget runs out and the join returns EABORTED, -7).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
mod common;

#[cfg(target_os = "none")]
baremark_sdk::entry!(body::run);

#[cfg(target_os = "none")]
mod body {
    use core::fmt::Write as _;
    use core::sync::atomic::{AtomicU64, Ordering};

    use baremark_sdk::{Buf, Error, thread};

    use crate::common::spin;

    /// `instructions:u`: event 0xC0 (Intel and AMD) with USR.
    const INSTRUCTIONS_USR: u64 = 0xc0 | (1 << 16);
    /// Round trips of the cache line. Under `-icount` QEMU runs the CPUs in turns of about 100
    /// million instructions, so each hand-over costs a turn: few rounds.
    const ROUNDS: u64 = 4;
    /// Iterations of the measured loop (4 instructions each).
    const N: u64 = 10_000;
    /// The thread's CPU, and the CPU of the thread left running.
    const PARTNER: u64 = 3;
    const ORPHAN: u64 = 2;

    /// The cache line: odd values from the task, even from the thread.
    static LINE: AtomicU64 = AtomicU64::new(0);
    /// What the thread counted.
    static THREAD_INSNS: AtomicU64 = AtomicU64::new(0);

    /// `instructions:u` around [`spin`]`(N)`, by `counters_read` (the caller's own counters).
    #[inline(never)]
    fn measure() -> Result<u64, Error> {
        baremark_sdk::counters_configure(&[INSTRUCTIONS_USR])?;
        let (mut a, mut b) = ([0u64; 1], [0u64; 1]);
        baremark_sdk::counters_read(&mut a)?;
        spin(N);
        baremark_sdk::counters_read(&mut b)?;
        Ok(b[0].wrapping_sub(a[0]))
    }

    fn partner(_: u64) -> i64 {
        for i in 0..ROUNDS {
            while LINE.load(Ordering::Acquire) != 2 * i + 1 {
                core::hint::spin_loop();
            }
            LINE.store(2 * i + 2, Ordering::Release);
        }
        match measure() {
            Ok(n) => {
                THREAD_INSNS.store(n, Ordering::Relaxed);
                42
            }
            Err(_) => 1,
        }
    }

    fn forever(_: u64) -> i64 {
        loop {
            core::hint::spin_loop();
        }
    }

    fn code(r: Result<u64, Error>) -> &'static str {
        match r {
            Ok(_) => "ok",
            Err(Error::Invalid) => "EINVAL",
            Err(Error::NoDev) => "ENODEV",
            Err(Error::Busy) => "EBUSY",
            Err(Error::Limit) => "ELIMIT",
            Err(Error::Perm) => "EPERM",
            Err(_) => "other",
        }
    }

    pub fn run() -> i64 {
        let mut buf = Buf::<1024>::new();
        // `--args threads=join-forever`: join a thread that never ends; the kernel bounds the
        // wait by the task's budget, stops the thread and says it was aborted.
        let mut arg = [0u8; 32];
        let n = baremark_sdk::args(&mut arg).unwrap_or(0).min(arg.len());
        if &arg[..n] == b"join-forever" {
            let joined = match thread::start(ORPHAN, forever, 0) {
                Ok(id) => thread::join(id),
                Err(_) => 1,
            };
            let _ = write!(buf, "join_forever={joined}");
            let _ = baremark_sdk::report(buf.as_str());
            return 0;
        }
        let id = match thread::start(PARTNER, partner, 0) {
            Ok(id) => id,
            Err(e) => {
                let _ = write!(buf, "error=thread_start: {e:?}");
                let _ = baremark_sdk::report(buf.as_str());
                return 1;
            }
        };
        for i in 0..ROUNDS {
            LINE.store(2 * i + 1, Ordering::Release);
            while LINE.load(Ordering::Acquire) != 2 * i + 2 {
                core::hint::spin_loop();
            }
        }
        let main_insns = measure().unwrap_or(0);
        let joined = thread::join(id);
        let again = thread::join(id);
        let _ = writeln!(
            buf,
            "rounds={ROUNDS}\nline={}\nmain_insns={main_insns}\nthread_insns={}\njoin={joined}\njoin_again={again}",
            LINE.load(Ordering::Acquire),
            THREAD_INSNS.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            buf,
            "start_self={}\nstart_none={}",
            code(thread::start(0, partner, 0)),
            code(thread::start(99, partner, 0))
        );
        let _ = write!(buf, "orphan={}", code(thread::start(ORPHAN, forever, 0)));
        let _ = baremark_sdk::report(buf.as_str());
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

//! Test payload: overflow notification end to end (tests/tests/notify.rs runs it on the emulated
//! PMU under `-icount shift=0`, where every count is exact). Spawned by itself with an argument
//! for the cases that must end a task. Reports `key=value` lines:
//!
//! - `configure`: `counters_configure(instructions:u)` (`Perm` with run.cfg `counters` not naming
//!   it, `NoDev` without counters: the payload then reports the other refusals and exits);
//! - `plain_delta` / `notified_delta`: `instructions:u` by `counters_read` around
//!   [`spin`]`(N)`, without and with a threshold of `P` (the notifications must not change it);
//! - `stopped`: the count at `counters_stop` right after the notified loop (counted from
//!   `counters_reset`, so the handler must have run `stopped / P` times), `notifications`, and
//!   `count_<k>`, `periods_<k>`, `rip_in_spin_<k>` for each;
//! - `regs_ok`: registers (general and XMM0) kept across notifications while the handler
//!   clobbers XMM0; `regs_plain_wall`, `regs_notified_wall`: the real TSC around that loop
//!   without and with them (under icount: what the notifications cost, in instructions);
//! - `in_handler_threshold`, `in_handler_configure`: what those calls give inside a handler;
//! - `return_outside`, `threshold_no_handler`, `threshold_bad_slot`, `threshold_big_period`:
//!   refusals;
//! - `child_fault`, `child_never_returns`, `child_recursion`: what `wait` gives for a child
//!   whose handler faults, loops forever (the watchdog), or recurses without end.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry_with_arg!(body::run);

#[cfg(target_os = "none")]
mod common;

#[cfg(target_os = "none")]
mod body {
    use crate::common::spin;
    use core::fmt::Write as _;
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

    use baremark_sdk::{Buf, Error, notify, nr, syscall0, syscall3};

    /// `instructions:u`: event 0xC0 with USR, on Intel and AMD.
    const INSTRUCTIONS_U: u64 = 0xc0 | 1 << 16;
    /// Loop iterations (4 instructions each) and the threshold's period.
    const N: u64 = 25_000;
    const P: u64 = 10_007;
    const MAX_SEEN: usize = 16;

    static SEEN: AtomicU64 = AtomicU64::new(0);
    static COUNTS: [AtomicU64; MAX_SEEN] = [const { AtomicU64::new(0) }; MAX_SEEN];
    static PERIODS: [AtomicU64; MAX_SEEN] = [const { AtomicU64::new(0) }; MAX_SEEN];
    static RIPS: [AtomicU64; MAX_SEEN] = [const { AtomicU64::new(0) }; MAX_SEEN];
    static IN_HANDLER_THRESHOLD: AtomicU64 = AtomicU64::new(0);
    static IN_HANDLER_CONFIGURE: AtomicU64 = AtomicU64::new(0);

    fn code(r: Result<u64, Error>) -> i64 {
        match r {
            Ok(v) => v as i64,
            Err(Error::Invalid) => -1,
            Err(Error::Busy) => -5,
            Err(Error::NoDev) => -11,
            Err(Error::Perm) => -12,
            Err(_) => -99,
        }
    }

    extern "C" fn handler(slot: u64, count: u64, rip: u64, periods: u64) {
        let k = SEEN.fetch_add(1, Relaxed) as usize;
        if k < MAX_SEEN {
            COUNTS[k].store(count | slot << 56, Relaxed);
            PERIODS[k].store(periods, Relaxed);
            RIPS[k].store(rip, Relaxed);
        }
        if k == 0 {
            IN_HANDLER_THRESHOLD.store(code(notify::threshold(0, 0).map(|_| 0)) as u64, Relaxed);
            IN_HANDLER_CONFIGURE.store(
                code(baremark_sdk::counters_configure(&[INSTRUCTIONS_U])) as u64,
                Relaxed,
            );
        }
        // The handler's own vector registers: the interrupted code's must not see this.
        // SAFETY: clobbers XMM0 only (declared).
        unsafe { core::arch::asm!("pcmpeqd xmm0, xmm0", out("xmm0") _) };
    }

    extern "C" fn faulting(_: u64, _: u64, _: u64, _: u64) {
        // SAFETY: deliberately reads an unmapped address: the task must end with a fault.
        unsafe { core::ptr::read_volatile(0x10 as *const u64) };
    }

    extern "C" fn forever(_: u64, _: u64, _: u64, _: u64) {
        // No PAUSE: under icount every PAUSE leaves QEMU's CPU loop, which would make the
        // watchdog's budget take minutes of wall time.
        #[allow(clippy::empty_loop)]
        loop {}
    }

    #[inline(never)]
    fn recurse(depth: u64) -> u64 {
        let pad = [depth; 64];
        core::hint::black_box(&pad);
        // Never ends in practice (the stack's guard page ends the task first).
        if core::hint::black_box(depth) == u64::MAX {
            return 0;
        }
        recurse(depth + 1) + pad[3]
    }

    extern "C" fn recursing(_: u64, _: u64, _: u64, _: u64) {
        core::hint::black_box(recurse(0));
    }

    /// `instructions:u` by `counters_read` around `spin(N)`.
    fn delta() -> Result<u64, Error> {
        let mut a = [0u64; 1];
        let mut b = [0u64; 1];
        baremark_sdk::counters_read(&mut a)?;
        spin(N);
        baremark_sdk::counters_read(&mut b)?;
        Ok(b[0] - a[0])
    }

    /// Fills registers with patterns, spins `n` times, and checks that they (and XMM0) are
    /// as they were: 1 if so.
    fn registers_kept(n: u64) -> u64 {
        let ok: u64;
        // SAFETY: registers only; every one written is declared.
        unsafe {
            core::arch::asm!(
                "mov rsi, 0x2222", "mov rdi, 0x3333",
                "mov r8, 0x4444", "mov r9, 0x5555", "mov r10, 0x6666", "mov r11, 0x7777",
                "mov r12, 0x8888", "mov r13, 0x9999", "mov r14, 0xaaaa", "mov r15, 0xbbbb",
                "mov rdx, 0xcccc", "movq xmm0, rdx",
                "2:", "dec rcx", "jnz 2b",
                "xor eax, eax",
                "cmp rsi, 0x2222", "jne 3f",
                "cmp rdi, 0x3333", "jne 3f", "cmp r8, 0x4444", "jne 3f",
                "cmp r9, 0x5555", "jne 3f", "cmp r10, 0x6666", "jne 3f",
                "cmp r11, 0x7777", "jne 3f", "cmp r12, 0x8888", "jne 3f",
                "cmp r13, 0x9999", "jne 3f", "cmp r14, 0xaaaa", "jne 3f",
                "cmp r15, 0xbbbb", "jne 3f", "cmp rdx, 0xcccc", "jne 3f",
                "movq rdx, xmm0", "cmp rdx, 0xcccc", "jne 3f",
                "mov eax, 1",
                "3:",
                inout("rcx") n => _, out("rax") ok, out("rsi") _, out("rdi") _,
                out("rdx") _, out("r8") _, out("r9") _, out("r10") _, out("r11") _,
                out("r12") _, out("r13") _, out("r14") _, out("r15") _, out("xmm0") _,
                options(nomem, nostack),
            );
        }
        ok
    }

    /// A child: its handler faults, loops forever or recurses.
    fn child(case: u64) -> i64 {
        let h: notify::Handler = match case {
            1 => faulting,
            2 => forever,
            _ => recursing,
        };
        if baremark_sdk::counters_configure(&[INSTRUCTIONS_U]).is_err()
            || notify::set_handler(Some(h)).is_err()
            || notify::threshold(0, 1000).is_err()
        {
            return 2;
        }
        spin(N);
        // Only reached if the handler returned.
        3
    }

    fn wait_child(case: u64) -> i64 {
        match baremark_sdk::spawn_with_arg("notify", 0, case) {
            Ok(id) => baremark_sdk::wait(id),
            Err(_) => -100,
        }
    }

    pub fn run(arg: u64) -> i64 {
        if arg != 0 {
            return child(arg);
        }
        let mut buf = Buf::<1024>::new();
        let configured = baremark_sdk::counters_configure(&[INSTRUCTIONS_U]);
        let _ = writeln!(buf, "configure={}", code(configured));
        let _ = writeln!(
            buf,
            "return_outside={}",
            code(baremark_sdk::Error::check(syscall0(nr::NOTIFY_RETURN)))
        );
        let _ = writeln!(
            buf,
            "threshold_no_handler={}",
            code(notify::threshold(0, P).map(|_| 0))
        );
        if configured.is_err() {
            let _ = baremark_sdk::report(buf.as_str());
            return 0;
        }
        let plain = delta().unwrap_or(0);
        let _ = notify::set_handler(Some(handler));
        let _ = writeln!(
            buf,
            "threshold_bad_slot={}\nthreshold_big_period={}\nthreshold_small_period={}",
            code(notify::threshold(1, P).map(|_| 0)),
            code(notify::threshold(0, 1 << 31).map(|_| 0)),
            code(notify::threshold(0, 999).map(|_| 0))
        );
        let set = notify::threshold(0, P);
        // Counted from 0 from here: the k-th notification is at exactly k * P.
        let _ = syscall0(nr::COUNTERS_RESET);
        let notified = delta().unwrap_or(0);
        let _ = syscall0(nr::COUNTERS_STOP);
        let mut stopped = [0u64; 1];
        let _ = baremark_sdk::counters_read(&mut stopped);
        let _ = notify::threshold(0, 0);
        let _ = syscall0(nr::COUNTERS_START);
        let seen = SEEN.load(Relaxed);
        let _ = writeln!(
            buf,
            "set={}\nplain_delta={plain}\nnotified_delta={notified}\nstopped={}\nnotifications={seen}",
            code(set.map(|_| 0)),
            stopped[0]
        );
        let _ = writeln!(
            buf,
            "in_handler_threshold={}\nin_handler_configure={}",
            IN_HANDLER_THRESHOLD.load(Relaxed) as i64,
            IN_HANDLER_CONFIGURE.load(Relaxed) as i64
        );
        let spin_at = spin as *const () as u64;
        for k in 0..(seen as usize).min(MAX_SEEN) {
            let rip = RIPS[k].load(Relaxed);
            let _ = writeln!(
                buf,
                "count_{k}={}\nperiods_{k}={}\nrip_in_spin_{k}={}",
                COUNTS[k].load(Relaxed),
                PERIODS[k].load(Relaxed),
                u8::from((spin_at..spin_at + 32).contains(&rip))
            );
        }
        let _ = baremark_sdk::report(buf.as_str());

        // Registers across notifications (every 1000 instructions of a 2-instruction loop).
        let mut buf = Buf::<1024>::new();
        // The real TSC around the same loop without and with notifications: under icount the
        // difference is the instructions 40 notifications cost (kernel, SDK entry, handler).
        let wall = |f: &dyn Fn() -> u64| {
            let t0 = baremark_sdk::rdtsc();
            let r = f();
            (r, baremark_sdk::rdtsc() - t0)
        };
        let (_, plain_wall) = wall(&|| registers_kept(20_000));
        let _ = notify::threshold(0, 1000);
        let (kept, notified_wall) = wall(&|| registers_kept(20_000));
        let _ = notify::threshold(0, 0);
        let _ = writeln!(
            buf,
            "regs_ok={kept}\nregs_notifications={}\nregs_plain_wall={plain_wall}\nregs_notified_wall={notified_wall}",
            SEEN.load(Relaxed) - seen
        );
        let _ = writeln!(buf, "child_fault={}", wait_child(1));
        let _ = writeln!(buf, "child_never_returns={}", wait_child(2));
        let _ = writeln!(buf, "child_recursion={}", wait_child(3));
        let _ = baremark_sdk::report(buf.as_str());
        let _ = syscall3(nr::YIELD, 0, 0, 0);
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

//! Test payload: system mode end to end (tests/tests/system_mode.rs runs it on the emulated
//! PMU under `-icount shift=0`). Counts `instructions:u`, `instructions:k` and both
//! (`instructions`) on the whole machine with `system_configure` and reports, as `key=value`
//! lines:
//!
//! - `g_configure`, `g_read_<i>`: the generation of the configuration and of each of the 8 reads;
//! - `u_<i>`, `k_<i>`, `all_<i>`: the counts between the two reads around step i: `spin(N)`
//!   (i = 1), `spin(2N)` (i = 2), a child that runs `spin(N)` (i = 3) and one that runs
//!   `spin(2N)` (i = 4);
//! - `child_configure_<c>`: what a child's own `counters_configure` gets (`EBUSY`);
//! - `g_reconfigure`, `g_read_after`, `g_release`, `read_released`: reconfigured, read, given
//!   back, read again (`ENOENT`);
//! - `own_configure`, `system_while_own`: a task's own counters, then system mode (`EBUSY`);
//! - `g_again`, `g_release_again`: system mode once its own counters are dropped.
//!
//! Started while run.cfg `system` holds the system counters it is an observer: it reports
//! `observer=1`, what `system_configure` and `counters_configure` get (`EBUSY`), and the
//! generation it reads, then runs `spin(d N)`, `d` the first digit of its argument text (1
//! without one).
//!
//! With the argument text `cpus` it counts per CPU (tests/tests/system_per_cpu.rs): it takes
//! the system counters, reads them per CPU (`system_read_cpus`), starts a thread on CPUs 1 to 3
//! that runs `spin(c N)` on CPU `c`, joins them, reads again and reports per CPU `cpu_u_<c>`,
//! `cpu_k_<c>`, `cpu_all_<c>` (the deltas), `total_u`, `total_k`, `total_all`, `rows` and
//! `stale` (rows that did not answer).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry_with_arg!(body::run);

#[cfg(target_os = "none")]
mod common;

#[cfg(target_os = "none")]
mod body {
    use crate::common::spin;
    use core::fmt::Write as _;

    use baremark_sdk::{Buf, Error, nr, syscall3};

    const USR: u64 = 1 << 16;
    const OS: u64 = 1 << 17;
    const EVENTS: [u64; 3] = [0xc0 | USR, 0xc0 | OS, 0xc0 | USR | OS];
    const N: u64 = 50_000;

    fn configure(events: &[u64]) -> i64 {
        syscall3(
            nr::SYSTEM_CONFIGURE,
            events.as_ptr() as u64,
            events.len() as u64,
            0,
        )
    }

    /// `(generation, counts)`, or the error code.
    #[inline(never)]
    fn read() -> Result<(u64, [u64; 3]), i64> {
        let mut buf = [0u64; 6];
        let r = syscall3(nr::SYSTEM_READ, buf.as_mut_ptr() as u64, 48, 0);
        if r < 0 {
            return Err(r);
        }
        Ok((buf[0], [buf[3], buf[4], buf[5]]))
    }

    fn code(r: Result<u64, Error>) -> i64 {
        match r {
            Ok(v) => v as i64,
            Err(Error::Busy) => -5,
            Err(Error::Perm) => -12,
            Err(Error::NoDev) => -11,
            Err(_) => -99,
        }
    }

    fn child_run(arg: u64) -> i64 {
        let mut buf = Buf::<128>::new();
        let own = code(baremark_sdk::counters_configure(&[EVENTS[0]]));
        let _ = write!(buf, "child_configure_{arg}={own}");
        let _ = baremark_sdk::report(buf.as_str());
        spin(arg * N);
        0
    }

    /// The first digit of the argument text (1 without one).
    fn digit() -> u64 {
        let mut text = [0u8; 8];
        match baremark_sdk::args(&mut text) {
            Ok(n) if n > 0 && text[0].is_ascii_digit() => u64::from(text[0] - b'0'),
            _ => 1,
        }
    }

    fn is_cpus_mode() -> bool {
        let mut text = [0u8; 8];
        matches!(baremark_sdk::args(&mut text), Ok(4) if &text[..4] == b"cpus")
    }

    fn thread_spin(c: u64) -> i64 {
        spin(c * N);
        0
    }

    /// Words for 8 CPUs of 3 entries.
    const CPUS_WORDS: usize = 4 + 3 + 8 * (2 + 3);

    fn per_cpu() -> i64 {
        let mut buf = Buf::<1024>::new();
        let g = configure(&EVENTS);
        let _ = writeln!(buf, "g_configure={g}");
        let mut before = [0u64; CPUS_WORDS];
        let mut after = [0u64; CPUS_WORDS];
        let then = baremark_sdk::system_read_cpus(&mut before);
        let mut ids = [0u64; 3];
        for (i, id) in ids.iter_mut().enumerate() {
            *id = baremark_sdk::thread::start(i as u64 + 1, thread_spin, i as u64 + 1)
                .unwrap_or(u64::MAX);
        }
        for id in ids {
            let _ = baremark_sdk::thread::join(id);
        }
        let now = baremark_sdk::system_read_cpus(&mut after);
        let (Ok(then), Ok(now)) = (then, now) else {
            let _ = write!(buf, "read_failed=1");
            let _ = baremark_sdk::report(buf.as_str());
            return 1;
        };
        let _ = writeln!(buf, "g_read={}", now.generation());
        let (mut rows, mut stale) = (0, 0);
        for (cpu, is_stale, counts) in now.cpus() {
            let old = then
                .cpus()
                .find(|r| r.0 == cpu)
                .map_or(&[0u64; 3][..], |r| r.2);
            rows += 1;
            stale += u64::from(is_stale);
            let _ = writeln!(
                buf,
                "cpu_u_{cpu}={}\ncpu_k_{cpu}={}\ncpu_all_{cpu}={}",
                counts[0] - old[0],
                counts[1] - old[1],
                counts[2] - old[2]
            );
        }
        let (t1, t0) = (now.total(), then.total());
        let _ = write!(
            buf,
            "rows={rows}\nstale={stale}\ntotal_u={}\ntotal_k={}\ntotal_all={}",
            t1[0] - t0[0],
            t1[1] - t0[1],
            t1[2] - t0[2]
        );
        let _ = baremark_sdk::report(buf.as_str());
        configure(&[]);
        0
    }

    fn observer(refused: i64) -> i64 {
        let mut buf = Buf::<256>::new();
        let own = code(baremark_sdk::counters_configure(&[EVENTS[0]]));
        let g = read().map(|(g, _)| g as i64).unwrap_or_else(|e| e);
        let _ = write!(
            buf,
            "observer=1\nsystem_configure={refused}\nown_configure={own}\ng_read={g}"
        );
        let _ = baremark_sdk::report(buf.as_str());
        spin(digit() * N);
        0
    }

    fn spawn_wait(arg: u64) {
        if let Ok(id) = baremark_sdk::spawn_with_arg("sysmode", 0, arg) {
            let _ = baremark_sdk::wait(id);
        }
    }

    /// Step `i` between two reads: `spin(N)`, `spin(2N)`, a child that spins N, one that spins
    /// 2N. Steps 0 and 1 (and 2 and 3) run the same instructions but for the loop's length,
    /// whatever the compiler makes of them (separate closures once differed by one).
    #[inline(never)]
    fn step(i: u64) {
        let i = core::hint::black_box(i);
        let times = i % 2 + 1;
        if i < 2 {
            spin(times * N);
        } else {
            spawn_wait(times);
        }
    }

    /// The system counts right before and right after step `i`.
    #[inline(never)]
    fn around(i: u64) -> [(u64, [u64; 3]); 2] {
        let i = core::hint::black_box(i);
        let before = read().unwrap_or_default();
        step(i);
        let after = read().unwrap_or_default();
        [before, after]
    }

    pub fn run(arg: u64) -> i64 {
        if arg != 0 {
            return child_run(arg);
        }
        if is_cpus_mode() {
            return per_cpu();
        }
        let g = configure(&EVENTS);
        if g < 0 {
            return observer(g);
        }
        let mut buf = Buf::<1024>::new();
        let _ = writeln!(buf, "g_configure={g}");
        // Reads right around each step, made by the same code for every step, so that the
        // differences are the steps' (reads between the steps once made window 1 one
        // instruction longer than window 2: the compiler unrolls such loops differently).
        let mut windows = [[(0u64, [0u64; 3]); 2]; 4];
        for (i, w) in windows.iter_mut().enumerate() {
            *w = around(i as u64);
        }
        for (i, r) in windows.iter().flatten().enumerate() {
            let _ = writeln!(buf, "g_read_{i}={}", r.0);
        }
        for (i, [a, b]) in windows.iter().enumerate() {
            let (a, b) = (a.1, b.1);
            let _ = writeln!(
                buf,
                "u_{n}={}\nk_{n}={}\nall_{n}={}",
                b[0] - a[0],
                b[1] - a[1],
                b[2] - a[2],
                n = i + 1
            );
        }
        let _ = baremark_sdk::report(buf.as_str());

        let mut buf = Buf::<512>::new();
        let _ = writeln!(buf, "g_reconfigure={}", configure(&EVENTS[..2]));
        let _ = writeln!(
            buf,
            "g_read_after={}",
            read().map(|(g, _)| g as i64).unwrap_or_else(|e| e)
        );
        let _ = writeln!(buf, "g_release={}", configure(&[]));
        let _ = writeln!(
            buf,
            "read_released={}",
            read().map(|(g, _)| g as i64).unwrap_or_else(|e| e)
        );
        let _ = writeln!(
            buf,
            "own_configure={}",
            code(baremark_sdk::counters_configure(&[EVENTS[0]]))
        );
        let _ = writeln!(buf, "system_while_own={}", configure(&EVENTS));
        let _ = baremark_sdk::counters_configure(&[]);
        let _ = writeln!(buf, "g_again={}", configure(&EVENTS));
        let _ = writeln!(buf, "g_release_again={}", configure(&[]));
        let _ = baremark_sdk::report(buf.as_str());
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

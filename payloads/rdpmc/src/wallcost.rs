//! Test payload for the Linux side-by-side benchmark (tests/src/bin/linux-vs-baremark.rs,
//! docs/benchmarks.md): wall costs, read with the real TSC (RDTSC, the kernel's time included;
//! under `-icount shift=0` one tick per instruction of the whole machine).
//!
//! - `--args wallcost=syscall`: 4 counters configured (instructions:u twice, branches:u,
//!   cycles:u; the encodings of the CPU's vendor), then `CALLS` null syscalls (an unknown
//!   number: ENOSYS, answered by the SYSCALL entry itself, a light syscall) in a loop of
//!   `mov, syscall, dec, jnz`; reports `calls`, `wall_ticks` (RDTSC around the loop) and
//!   `seen_ticks` (the task's virtual TSC around it, what the task is charged), `counters`
//!   (configured or the error) and `result` (what the last call returned).
//! - `--args wallcost=syscall-general`: the same with `user_page` (a known number, so the
//!   kernel's general path: out of `run`, served, counters switched, back in).
//! - `--args wallcost=loop`: `LOOP_ITERATIONS` iterations of a 10-instruction loop (10,000,000
//!   instructions); reports `wall_ticks` around it. Run once plain and once sampled (`run.cfg
//!   sample`), the difference over the samples taken is the wall cost of one sample.
//! - `--args wallcost=notify`: the same loop with `instructions:u` configured and a handler
//!   notified every `NOTIFY_PERIOD` of them (it counts its calls); reports `wall_ticks` and
//!   `notifications`: the difference from the plain loop over them is the wall cost of one
//!   notification (PMI, handler entry, handler, `notify_return`).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(body::run);

#[cfg(target_os = "none")]
mod body {
    use core::fmt::Write as _;

    use baremark_sdk::Buf;

    const CALLS: u64 = 1000;
    const LOOP_ITERATIONS: u64 = 1_000_000;
    const NOTIFY_PERIOD: u64 = 10_007;

    static HANDLED: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

    extern "C" fn handler(_slot: u64, _count: u64, _rip: u64, _periods: u64) {
        HANDLED.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }
    const USR: u64 = 1 << 16;

    // No such syscall: the kernel answers ENOSYS without doing anything (the suite's
    // `syscall` benchmark uses the same number).
    core::arch::global_asm!(
        ".pushsection .text.wallcost_syscalls, \"ax\", @progbits",
        ".global wallcost_syscalls",
        "wallcost_syscalls:",
        "2:  mov rax, rsi",
        "    syscall",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".popsection",
        ".pushsection .text.wallcost_loop, \"ax\", @progbits",
        ".global wallcost_loop",
        // Typed and sized, so a profile can tell its RIPs from the rest (the Linux
        // side-by-side counts the samples in it).
        ".type wallcost_loop, @function",
        "wallcost_loop:",
        "2:  nop",
        "    nop",
        "    nop",
        "    nop",
        "    nop",
        "    nop",
        "    nop",
        "    nop",
        "    dec rdi",
        "    jnz 2b",
        "    ret",
        ".size wallcost_loop, . - wallcost_loop",
        ".popsection",
    );

    unsafe extern "C" {
        fn wallcost_syscalls(n: u64, nr: u64) -> i64;
        fn wallcost_loop(n: u64);
    }

    fn amd() -> bool {
        core::arch::x86_64::__cpuid(0).ebx == u32::from_le_bytes(*b"Auth")
    }

    pub fn run() -> i64 {
        let mut arg = [0u8; 32];
        let n = baremark_sdk::args(&mut arg).unwrap_or(0).min(arg.len());
        let mut buf = Buf::<512>::new();
        match &arg[..n] {
            which @ (b"syscall" | b"syscall-general") => {
                // No such syscall (the suite's `syscall` benchmark uses the same number), or
                // `user_page`, which the kernel serves on its general path.
                let nr = if which == b"syscall" { 0xffff } else { 12 };
                let (cycles, branches) = if amd() { (0x76, 0xc2) } else { (0x3c, 0xc4) };
                let events = [0xc0 | USR, 0xc0 | USR, branches | USR, cycles | USR];
                let counters = match baremark_sdk::counters_configure(&events) {
                    Ok(_) => "4",
                    Err(_) => "none (counters_configure refused)",
                };
                let seen0 = baremark_sdk::counters_read(&mut [0u64; 4]).map_or(0, |r| r.tsc);
                let t0 = baremark_sdk::rdtsc();
                // SAFETY: either syscall changes nothing but RAX, RCX and R11, which the
                // function may clobber (caller-saved); n >= 1 ends.
                let result = unsafe { wallcost_syscalls(CALLS, nr) };
                let t1 = baremark_sdk::rdtsc();
                let seen1 = baremark_sdk::counters_read(&mut [0u64; 4]).map_or(0, |r| r.tsc);
                let _ = write!(
                    buf,
                    "calls={CALLS}\ncounters={counters}\nwall_ticks={}\nseen_ticks={}\nresult={result}",
                    t1.wrapping_sub(t0),
                    seen1.wrapping_sub(seen0)
                );
            }
            b"loop" => {
                let t0 = baremark_sdk::rdtsc();
                // SAFETY: a register-only loop; n >= 1 ends.
                unsafe { wallcost_loop(LOOP_ITERATIONS) };
                let t1 = baremark_sdk::rdtsc();
                let _ = write!(
                    buf,
                    "iterations={LOOP_ITERATIONS}\ninstructions={}\nwall_ticks={}",
                    LOOP_ITERATIONS * 10,
                    t1.wrapping_sub(t0)
                );
            }
            b"notify" => {
                use baremark_sdk::notify;
                let set = baremark_sdk::counters_configure(&[0xc0 | USR])
                    .and_then(|_| notify::set_handler(Some(handler)))
                    .and_then(|_| notify::threshold(0, NOTIFY_PERIOD));
                if set.is_err() {
                    let _ = write!(buf, "error=the notification could not be set up");
                    let _ = baremark_sdk::report(buf.as_str());
                    return 2;
                }
                let t0 = baremark_sdk::rdtsc();
                // SAFETY: a register-only loop; n >= 1 ends.
                unsafe { wallcost_loop(LOOP_ITERATIONS) };
                let t1 = baremark_sdk::rdtsc();
                let _ = write!(
                    buf,
                    "iterations={LOOP_ITERATIONS}\nnotifications={}\nwall_ticks={}",
                    HANDLED.load(core::sync::atomic::Ordering::Relaxed),
                    t1.wrapping_sub(t0)
                );
            }
            _ => {
                let _ = write!(
                    buf,
                    "error=give --args wallcost=syscall, wallcost=syscall-general, wallcost=loop or wallcost=notify"
                );
                let _ = baremark_sdk::report(buf.as_str());
                return 2;
            }
        }
        let _ = baremark_sdk::report(buf.as_str());
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

//! Test payload: a task's hardware counters on a PMU, end to end (tests/tests/emulated_tasks.rs
//! runs it on the emulated PMU under `-icount shift=0`, where every count is exact). It
//! configures `instructions:u`, `instructions:k` and `branches:u` on GP 0-2 and, where the PMU
//! has one, fixed counter 0 (`instructions:u`), then reports, as `key=value` lines (one `report`
//! record per phase):
//!
//! - `lost_*`: after two `yield`s, a read through the counter page, `counters_read`, and a read
//!   after `counters_reset` (run with run.cfg `test_pmu_fault = 3`, the second `yield`'s return
//!   is the third switch-in and fails: the first two must say the counts were lost, the last
//!   must work again);
//! - `fast_<n>_<slot>`: slot deltas from the counter page's fast read (RDPMC in ring 3, CR4.PCE
//!   set) around `n` iterations of a 4-instruction, 1-branch loop, for n = 1000 and 2000, and
//!   `fast_<n>_tsc` the virtual TSC's;
//! - `stopped_*`: after `counters_stop` (CR4.PCE clear), each slot's value through the page,
//!   through RDPMC (emulated by the kernel: GP n and fixed `1 << 30 | n`) and `counters_read`;
//! - `sys_<m>_<slot>`: slot deltas by `counters_read` around `m` iterations of a loop of 40
//!   instructions and a `yield` system call (every one a switch out and in of the counters;
//!   with run.cfg `counter_preset` each switch-in presets them just below their wrap), for
//!   m = 2000 and 4000;
//! - `spawn_*`: deltas by `counters_read` around `spawn` + `wait` of `loop1000` and `loop2000`
//!   with `SPAWN_ADD_CHILD` and of `loop1000` without (the children must be in the ramdisk).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(body::run);

#[cfg(target_os = "none")]
mod body {
    use core::fmt::Write as _;

    use baremark_sdk::{Buf, Error, SPAWN_ADD_CHILD, counters, nr, syscall0};

    /// PERFEVTSEL USR and OS.
    const USR: u64 = 1 << 16;
    const OS: u64 = 1 << 17;
    /// Instructions retired: event 0xC0 on Intel and AMD.
    const INSTRUCTIONS: u64 = 0xc0;
    /// Branch instructions retired: 0xC4 on Intel, 0xC2 on AMD.
    const BRANCHES_INTEL: u64 = 0xc4;
    const BRANCHES_AMD: u64 = 0xc2;
    /// Slot names, in slot order.
    const NAMES: [&str; 4] = ["inst_u", "inst_k", "br_u", "fixed0_u"];

    /// CPUID leaf `leaf`, subleaf 0: (eax, ebx, ecx, edx).
    fn cpuid(leaf: u32) -> (u32, u32, u32, u32) {
        let r = core::arch::x86_64::__cpuid_count(leaf, 0);
        (r.eax, r.ebx, r.ecx, r.edx)
    }

    /// The events: GP entries for the CPU's vendor, plus fixed counter 0 on an Intel PMU that
    /// has it (CPUID.0AH: EDX[4:0] fixed counters, or the v5 bitmap in ECX).
    fn events() -> ([u64; 4], usize) {
        let (_, ebx, _, _) = cpuid(0);
        let intel = ebx == u32::from_le_bytes(*b"Genu");
        let branches = if intel { BRANCHES_INTEL } else { BRANCHES_AMD };
        let mut ev = [INSTRUCTIONS | USR, INSTRUCTIONS | OS, branches | USR, 0];
        let mut n = 3;
        if intel && cpuid(0).0 >= 0xa {
            let (eax, _, ecx, edx) = cpuid(0xa);
            let version = eax & 0xff;
            if (version >= 2 && edx & 0x1f >= 1) || (version >= 5 && ecx & 1 != 0) {
                ev[3] = baremark_sdk::fixed_entry(0, true, false);
                n = 4;
            }
        }
        (ev, n)
    }

    /// `n` iterations of `nop; nop; dec; jnz`: 4 instructions and 1 branch each.
    #[inline(always)]
    fn spin(n: u64) {
        // SAFETY: a register-only loop: no memory, no stack, only the counter register clobbered.
        unsafe {
            core::arch::asm!(
                "2:", "nop", "nop", "dec {n}", "jnz 2b",
                n = inout(reg) n => _,
                options(nomem, nostack),
            );
        }
    }

    /// `m` iterations of 40 instructions (20 of `dec; jnz`) and a `yield` system call: 45
    /// instructions and 22 branches in ring 3 per iteration (`mov r8, 20`, the inner loop, `mov
    /// eax, 7`, `syscall`, `dec r9`, `jnz`). Registers only; SYSCALL clobbers RCX and R11, the
    /// kernel writes RAX.
    #[inline(never)]
    fn syscall_loop(m: u64) {
        // SAFETY: `yield` (7) returns at once with RAX = 0 and every other register but RCX and
        // R11 preserved (docs/syscall-abi.md); the loop touches no memory.
        unsafe {
            core::arch::asm!(
                "2:",
                "mov r8, 20",
                "3:",
                "dec r8",
                "jnz 3b",
                "mov eax, 7",
                "syscall",
                "dec r9",
                "jnz 2b",
                inout("r9") m => _,
                out("r8") _, out("rax") _, out("rcx") _, out("r11") _,
                options(nostack),
            );
        }
    }

    /// Every slot's value (into `out`) from the counter page, and the virtual TSC.
    #[inline(always)]
    fn fast(out: &mut [u64; 4]) -> Result<u64, Error> {
        let tsc = counters::read_tsc_fast().ok_or(Error::NoEnt)?;
        counters::read_values(out)?;
        Ok(tsc)
    }

    /// Slot and virtual TSC deltas from the page around `n` iterations of [`spin`]. Not
    /// inlined: the same instructions surround the loop for every `n`.
    #[inline(never)]
    fn measure_fast(n: u64) -> Result<([u64; 4], u64), Error> {
        let mut a = [0u64; 4];
        let mut b = [0u64; 4];
        let t0 = fast(&mut a)?;
        spin(n);
        let t1 = fast(&mut b)?;
        Ok((
            core::array::from_fn(|i| b[i].wrapping_sub(a[i])),
            t1.wrapping_sub(t0),
        ))
    }

    /// Slot deltas by the SDK's retry-free slot reader (`counters::read_slot`) around `n`
    /// iterations of the loop.
    fn measure_reader(n: u64, slots: usize) -> Result<[u64; 4], Error> {
        let mut a = [0u64; 4];
        let mut b = [0u64; 4];
        for (i, v) in a.iter_mut().enumerate().take(slots) {
            *v = counters::read_slot(i)?;
        }
        spin(n);
        for (i, v) in b.iter_mut().enumerate().take(slots).rev() {
            *v = counters::read_slot(i)?;
        }
        Ok(core::array::from_fn(|i| b[i].wrapping_sub(a[i])))
    }

    /// Slot deltas by `counters_read` around `f`.
    fn measure_sys(f: impl FnOnce()) -> Result<[u64; 4], Error> {
        let mut a = [0u64; 4];
        let mut b = [0u64; 4];
        baremark_sdk::counters_read(&mut a)?;
        f();
        baremark_sdk::counters_read(&mut b)?;
        Ok(core::array::from_fn(|i| b[i].wrapping_sub(a[i])))
    }

    fn put(buf: &mut Buf<1024>, prefix: &str, n: usize, values: &[u64; 4]) {
        for (name, v) in NAMES.iter().zip(values).take(n) {
            let _ = writeln!(buf, "{prefix}_{name}={v}");
        }
    }

    fn outcome<T>(r: Result<T, Error>) -> &'static str {
        match r {
            Ok(_) => "ok",
            Err(Error::Counters) => "lost",
            Err(_) => "error",
        }
    }

    fn spawn_wait(name: &str, flags: u64) {
        if let Ok(id) = baremark_sdk::spawn(name, flags) {
            let _ = baremark_sdk::wait(id);
        }
    }

    pub fn run() -> i64 {
        if counters::page().is_none() {
            let _ = baremark_sdk::report("error=no counter page");
            return 1;
        }
        let (events, n) = events();
        let mut buf = Buf::<1024>::new();
        let _ = writeln!(buf, "slots={n}");
        if let Err(e) = baremark_sdk::counters_configure(&events[..n]) {
            let _ = write!(buf, "error=counters_configure: {e:?}");
            let _ = baremark_sdk::report(buf.as_str());
            return 1;
        }

        // Lost counts (run.cfg test_pmu_fault = 3: the second yield's return).
        let _ = syscall0(nr::YIELD);
        let _ = syscall0(nr::YIELD);
        let mut v = [0u64; 4];
        let page = outcome(counters::read_values(&mut v));
        let read = outcome(baremark_sdk::counters_read(&mut v));
        let _ = baremark_sdk::Error::check(syscall0(nr::COUNTERS_RESET));
        let reset = outcome(counters::read_values(&mut v));
        let _ = write!(
            buf,
            "lost_page={page}\nlost_read={read}\nlost_after_reset={reset}\n"
        );
        flush(&mut buf);

        // The fast read, with RDPMC in ring 3.
        for iterations in [1000u64, 2000] {
            match measure_fast(core::hint::black_box(iterations)) {
                Ok((d, tsc)) => {
                    let mut p = Buf::<16>::new();
                    let _ = write!(p, "fast_{iterations}");
                    put(&mut buf, p.as_str(), n, &d);
                    let _ = writeln!(buf, "fast_{iterations}_tsc={tsc}");
                }
                Err(e) => {
                    let _ = writeln!(buf, "fast_{iterations}_error={e:?}");
                }
            }
        }

        // The retry-free slot reader (RDPMC in ring 3), the same loops.
        for iterations in [1000u64, 2000] {
            match measure_reader(core::hint::black_box(iterations), n) {
                Ok(d) => {
                    let mut p = Buf::<16>::new();
                    let _ = write!(p, "reader_{iterations}");
                    put(&mut buf, p.as_str(), n, &d);
                }
                Err(e) => {
                    let _ = writeln!(buf, "reader_{iterations}_error={e:?}");
                }
            }
        }
        flush(&mut buf);

        // Stopped: CR4.PCE is clear, RDPMC is emulated; every way gives the same values.
        let _ = baremark_sdk::counters_stop();
        let mut by_page = [0u64; 4];
        let _ = counters::read_values(&mut by_page);
        let mut by_rdpmc = [0u64; 4];
        for (i, out) in by_rdpmc.iter_mut().enumerate().take(n) {
            let index = if i == 3 { 1 << 30 } else { i as u32 };
            *out = baremark_sdk::rdpmc(index);
        }
        let mut by_read = [0u64; 4];
        let _ = baremark_sdk::counters_read(&mut by_read);
        // The slot reader's RDPMC faults (index 0 while stopped): its abort path answers.
        let mut by_reader = [0u64; 4];
        for (i, out) in by_reader.iter_mut().enumerate().take(n) {
            *out = counters::read_slot(i).unwrap_or(u64::MAX);
        }
        let _ = baremark_sdk::counters_start();
        put(&mut buf, "stopped_reader", n, &by_reader);
        put(&mut buf, "stopped_page", n, &by_page);
        put(&mut buf, "stopped_rdpmc", n, &by_rdpmc);
        put(&mut buf, "stopped_read", n, &by_read);
        flush(&mut buf);

        // Thousands of switches.
        for m in [2000u64, 4000] {
            match measure_sys(|| syscall_loop(core::hint::black_box(m))) {
                Ok(d) => {
                    let mut p = Buf::<16>::new();
                    let _ = write!(p, "sys_{m}");
                    put(&mut buf, p.as_str(), n, &d);
                }
                Err(e) => {
                    let _ = writeln!(buf, "sys_{m}_error={e:?}");
                }
            }
        }

        flush(&mut buf);

        // Children's counts added to the parent's.
        let cases = [
            ("spawn_add_1000", "loop1000", SPAWN_ADD_CHILD),
            ("spawn_add_2000", "loop2000", SPAWN_ADD_CHILD),
            ("spawn_plain_1000", "loop1000", 0),
        ];
        for (key, child, flags) in cases {
            let name = core::hint::black_box(child);
            match measure_sys(|| spawn_wait(name, core::hint::black_box(flags))) {
                Ok(d) => put(&mut buf, key, n, &d),
                Err(e) => {
                    let _ = writeln!(buf, "{key}_error={e:?}");
                }
            }
        }
        flush(&mut buf);
        0
    }

    /// One `report` record per phase (a report holds at most 1024 bytes).
    fn flush(buf: &mut Buf<1024>) {
        let _ = baremark_sdk::report(buf.as_str());
        *buf = Buf::new();
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

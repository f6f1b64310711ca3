//! `fuzz-syscalls`: seeded random syscalls (docs/reliability.md, "Random syscalls").
//!
//! Every call's number and six arguments come from the seed: mostly the ABI's numbers (never
//! `exit`), some unknown ones; arguments from the dictionary (`baremark_payload_fuzz`), from the
//! fuzzer's own memory (its buffer, its edges, its code, a valid text), small integers and
//! random bits. After every call it checks that the result is a value or an ABI error code,
//! that the kernel wrote nothing into the fuzzer's buffer outside what the syscall's contract
//! allows, and that nothing it wrote holds the kernel's canary (`--canary`). At the end it
//! reports the calls, the results by code and the first failure, and exits 1 if there was one.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(fuzz::main);

#[cfg(target_os = "none")]
mod fuzz {
    use core::cell::UnsafeCell;
    use core::fmt::Write as _;

    use baremark_payload_fuzz::{
        DICTIONARY, ERRORS, IMAGE_START, NR_COUNTERS_CONFIGURE, NR_COUNTERS_NOTIFY, NR_MAX,
        NR_READ_WINDOW, NR_SYSTEM_CONFIGURE, Params, Rng, find_canary, may_write, parse_args,
        valid_result,
    };
    use baremark_sdk::Buf;

    /// The buffer the kernel may write into: three pages, kept at 0xFF between calls (not
    /// UTF-8, so `write`s of it are refused rather than printed).
    const OUT_BYTES: usize = 3 * 4096;
    #[repr(C, align(4096))]
    struct Out(UnsafeCell<[u8; OUT_BYTES]>);
    // SAFETY: the task is single-threaded.
    unsafe impl Sync for Out {}
    static OUT: Out = Out(UnsafeCell::new([0xff; OUT_BYTES]));

    /// A valid text and a valid benchmark name, for `write`, `report` and `bench_begin`.
    static TEXT: &[u8] = b"fuzz\n";
    static NAME: &[u8] = b"fz";
    /// Valid `counters_configure` entries (instructions, cycles, branches in ring 3; Intel
    /// fixed counter 0 in ring 3), so that on a PMU the task's hardware counters get
    /// programmed, switched, read and released under the random calls that follow.
    static ENTRIES: [u64; 4] = [0x1_00c0, 0x1_003c, 0x1_00c4, (1 << 63) | (1 << 16)];

    /// SYSCALL with six arguments.
    fn syscall6(nr: u64, a: &[u64; 6]) -> i64 {
        let ret: i64;
        // SAFETY: SYSCALL enters the kernel, which must validate every argument (that is what
        // is being tested); it clobbers RCX and R11 (declared) and returns in RAX. The kernel
        // may write only into this task's memory, where the fuzzer keeps nothing but OUT (and
        // its stack, which no argument points into: the dictionary's stack addresses are the
        // edges above and below the 16 pages).
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") nr as i64 => ret,
                in("rdi") a[0],
                in("rsi") a[1],
                in("rdx") a[2],
                in("r10") a[3],
                in("r8") a[4],
                in("r9") a[5],
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret
    }

    fn out() -> &'static mut [u8; OUT_BYTES] {
        // SAFETY: single-threaded, and no other reference to OUT lives across this one's use
        // (each use is a short scan or fill between syscalls).
        unsafe { &mut *OUT.0.get() }
    }

    fn argument(r: &mut Rng, out_base: u64, code: u64) -> u64 {
        match r.below(20) {
            0..=7 => r.pick(&DICTIONARY),
            8..=11 => {
                // The fuzzer's own memory: its buffer and its edges, its code, the texts.
                let own = [
                    out_base,
                    out_base + 8,
                    out_base + 4096 - 4,
                    out_base + OUT_BYTES as u64 - 8,
                    out_base + OUT_BYTES as u64,
                    code,
                    TEXT.as_ptr() as u64,
                    TEXT.len() as u64,
                    NAME.as_ptr() as u64,
                    NAME.len() as u64,
                    ENTRIES.as_ptr() as u64,
                    ENTRIES.as_ptr() as u64 + 8,
                ];
                r.pick(&own)
            }
            12..=15 => r.below(20),
            16 => (r.below(8) + 1).wrapping_neg(),
            _ => r.next_u64(),
        }
    }

    unsafe extern "C" {
        /// The SDK's overflow-handler entry (`baremark_sdk::notify`).
        fn baremark_notify_entry();
    }

    extern "C" fn ignore_notification(_: u64, _: u64, _: u64, _: u64) {}

    struct Failure {
        call: u64,
        nr: u64,
        args: [u64; 6],
        result: i64,
        what: &'static str,
    }

    pub fn main() -> i64 {
        let mut text = [0u8; 256];
        let params = match baremark_sdk::args(&mut text) {
            Ok(n) if n <= text.len() => core::str::from_utf8(&text[..n])
                .map_err(|_| "the arguments are not UTF-8")
                .and_then(parse_args),
            Ok(_) => Err("the arguments are longer than 256 bytes"),
            Err(_) => Err("the args syscall failed"),
        };
        let Params { seed, calls } = match params {
            Ok(p) => p,
            Err(e) => {
                let mut b = Buf::<256>::new();
                let _ = write!(b, "error=fuzz-syscalls: {e}");
                let _ = baremark_sdk::report(b.as_str());
                return 2;
            }
        };
        let mut b = Buf::<128>::new();
        let _ = writeln!(b, "fuzz-syscalls: seed={seed} calls={calls}");
        let _ = baremark_sdk::write(b.as_str());

        let out_base = OUT.0.get() as u64;
        let code = main as *const () as u64;
        let mut by_code = [0u64; ERRORS + 1]; // [ok, -1, ..., -12]
        let mut failures = 0u64;
        let mut first: Option<Failure> = None;
        let mut rng = Rng::new(seed);
        for call in 0..calls {
            let mut r = Rng::new(rng.next_u64());
            let nr = match r.below(20) {
                0..=16 => 1 + r.below(NR_MAX),
                17 | 18 => NR_MAX + 1 + r.below(64),
                _ => r.next_u64().max(1),
            };
            let mut args = [0u64; 6];
            for a in &mut args {
                *a = argument(&mut r, out_base, code);
            }
            // A reader window over the fuzzer's own code would make the kernel rewrite its
            // registers on resume (that is the window's contract): keep windows off it.
            let own = IMAGE_START..IMAGE_START + (8 << 20);
            if nr == NR_READ_WINDOW && (own.contains(&args[0]) || own.contains(&args[1])) {
                args[0] = 0x1000;
                args[1] = 0x1000;
            }
            // counters_configure refuses unknown flag bits (RDX): one call in four gets valid
            // entries and only the known flag, so that on a PMU configurations succeed (plain,
            // multiplexed with more entries than counters, or refused for the fixed counter) and
            // the counters are programmed, switched and read under the random calls that follow.
            if nr == NR_COUNTERS_CONFIGURE && r.below(4) == 0 {
                args[0] = ENTRIES.as_ptr() as u64;
                args[1] = 1 + r.below(ENTRIES.len() as u64);
                args[2] &= baremark_sdk::CONFIGURE_MULTIPLEX;
            }
            // An overflow handler at a random address would end the fuzzer at its first
            // notification: a handler is always the SDK's entry with a handler that returns.
            if nr == NR_COUNTERS_NOTIFY && args[0] != 0 {
                args[0] = baremark_notify_entry as *const () as u64;
                args[1] = ignore_notification as *const () as u64;
            }
            let result = syscall6(nr, &args);
            // System counters taken would refuse every later counters_configure: given back.
            if nr == NR_SYSTEM_CONFIGURE && result >= 0 {
                syscall6(NR_SYSTEM_CONFIGURE, &[0, 0, 0, 0, 0, 0]);
            }
            if nr == NR_READ_WINDOW {
                syscall6(NR_READ_WINDOW, &[0, 0, 0, 0, 0, 0]);
                syscall6(NR_READ_WINDOW, &[0, 0, 1, 0, 0, 0]);
            }
            let mut what = None;
            if !valid_result(result) {
                what = Some("a result that is neither a value nor an error code");
            } else if result >= 0 {
                by_code[0] += 1;
            } else {
                by_code[(-result) as usize] += 1;
            }
            // What changed in OUT: only inside what the call may write, and never the canary.
            let buf = out();
            let allowed = may_write(nr, &args).filter(|_| result >= 0);
            let mut changed = false;
            // Word by word (this runs after every call), bytes only where a word changed.
            for (w, chunk) in buf.as_chunks::<8>().0.iter().enumerate() {
                let word = u64::from_ne_bytes(*chunk);
                if word == u64::MAX {
                    continue;
                }
                changed = true;
                for (j, byte) in chunk.iter().enumerate() {
                    let addr = out_base + (w * 8 + j) as u64;
                    let inside = allowed.is_some_and(|(p, n)| addr >= p && addr - p < n);
                    if *byte != 0xff && !inside && what.is_none() {
                        what = Some("the kernel wrote outside what the syscall may write");
                    }
                }
            }
            if changed {
                if what.is_none() && find_canary(&buf[..]).is_some() {
                    what = Some("kernel memory (the canary) in a buffer the kernel wrote");
                }
                buf.fill(0xff);
            }
            if let Some(what) = what {
                failures += 1;
                if first.is_none() {
                    first = Some(Failure {
                        call,
                        nr,
                        args,
                        result,
                        what,
                    });
                }
            }
        }
        // The counter page is kernel-written too.
        // SAFETY: the counter page is mapped read-only in every task (docs/syscall-abi.md).
        let page = unsafe {
            core::slice::from_raw_parts(baremark_payload_fuzz::USER_PAGE as *const u8, 4096)
        };
        let page_leak = find_canary(page).is_some();
        if page_leak {
            failures += 1;
        }

        let mut rep = Buf::<1024>::new();
        let _ = write!(
            rep,
            "seed={seed}\ncalls={calls}\nok={}\neinval={}\nefault={}\nenosys={}\nenoent={}\nebusy={}\nenospc={}\neaborted={}\necounters={}\nenomem={}\nelimit={}\nenodev={}\neperm={}\nfailures={failures}\ncounter_page_canary={}\n",
            by_code[0],
            by_code[1],
            by_code[2],
            by_code[3],
            by_code[4],
            by_code[5],
            by_code[6],
            by_code[7],
            by_code[8],
            by_code[9],
            by_code[10],
            by_code[11],
            by_code[12],
            if page_leak { "found" } else { "none" },
        );
        match &first {
            Some(f) => {
                let _ = write!(
                    rep,
                    "first_failure={}\nfirst_failure_call={}\nfirst_failure_syscall={}\nfirst_failure_args={:#x} {:#x} {:#x} {:#x} {:#x} {:#x}\nfirst_failure_result={}\n",
                    f.what,
                    f.call,
                    f.nr,
                    f.args[0],
                    f.args[1],
                    f.args[2],
                    f.args[3],
                    f.args[4],
                    f.args[5],
                    f.result
                );
            }
            None => {
                let _ = writeln!(rep, "first_failure=none");
            }
        }
        let _ = baremark_sdk::report(rep.as_str());
        if failures == 0 { 0 } else { 1 }
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "fuzz-syscalls is a baremark payload: run it with `baremark run --builtin fuzz-syscalls`"
    );
}

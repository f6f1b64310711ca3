//! `zoo-rdpmc`: RDPMC in ring 3 with indices the task has no counter for: the special ones of
//! `baremark_payload_zoo::RDPMC_SPECIAL` (GP and fixed counters, PERF_METRICS, the "fast read"
//! bit, the neighbours of the virtual TSC's index, all ones), then random 32-bit ones. Each
//! RDPMC that names no counter of the task ends it, so each index runs in a child of this
//! payload (`arg`: the case); the child reports `case`, `index` and how many counters it has,
//! executes the RDPMC, and if that returns (a counter it does have), reports the value and
//! exits 0. Expected: every index without a counter ends its child with a user `fault` (#GP, or
//! #UD where RDPMC does not exist) whose `detail` names the index; the parent's `wait` returns
//! `EABORTED`.
//!
//! The parent first reads the virtual TSC through RDPMC with garbage in RCX's upper half (RDPMC
//! takes ECX only: the kernel must emulate it), runs the cases without counters, then configures
//! one counter (instructions in ring 3, GP 0; refused with `EINVAL` on a machine without a PMU)
//! and, if that worked, runs the cases again with it (`arg` 0x100 + case: the children inherit
//! the counter, so index 0 is theirs, read by the hardware with CR4.PCE set). It exits 0.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry_with_arg!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_zoo::{RDPMC_RANDOM, RDPMC_SPECIAL, VIRTUAL_TSC_INDEX};
    use baremark_payload_zoo::{rdpmc_index, report, run_cases};

    /// RDPMC with the whole of RCX as given (the CPU reads only ECX).
    fn rdpmc_rcx(rcx: u64) -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: RDPMC reads a counter into EDX:EAX; if the CPU refuses it in ring 3 the
        // kernel emulates it or ends the task.
        unsafe {
            core::arch::asm!("rdpmc", in("rcx") rcx, out("eax") lo, out("edx") hi,
                options(nomem, nostack))
        };
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// Cases 1..=CASES: the special indices, then the random ones.
    const CASES: u64 = RDPMC_SPECIAL.len() as u64 + RDPMC_RANDOM;
    /// `arg` bit of the second round (with a counter).
    const WITH_COUNTER: u64 = 0x100;

    pub fn main(arg: u64) -> i64 {
        if arg != 0 {
            return child(arg & 0xff);
        }
        let garbage = 0xdead_beef_0000_0000 | u64::from(VIRTUAL_TSC_INDEX);
        let a = rdpmc_rcx(garbage);
        let b = rdpmc_rcx(garbage);
        report(format_args!(
            "vtsc_with_high_rcx_bits={a}\nvtsc_again={b}\nmonotonic={}",
            u8::from(b > a)
        ));
        let aborted = run_cases("zoo-rdpmc", 1..=CASES);
        // GP 0 counting instructions retired in ring 3 (USR), without EN.
        let configured = baremark_sdk::counters_configure(&[0xc0 | (1 << 16)]);
        report(format_args!(
            "aborted_without_counters={aborted}\ncounters_configure={}",
            match configured {
                Ok(_) => "ok",
                Err(baremark_sdk::Error::Invalid) => "EINVAL",
                Err(_) => "error",
            }
        ));
        if configured.is_ok() {
            run_cases("zoo-rdpmc", (1..=CASES).map(|c| WITH_COUNTER | c));
        }
        0
    }

    fn child(case: u64) -> i64 {
        let index = rdpmc_index(case, baremark_sdk::rdtsc());
        let counters = baremark_sdk::counters_read(&mut [0u64; 16]).map_or(0, |r| r.n);
        report(format_args!(
            "case={case}\nindex={index:#x}\ncounters={counters}"
        ));
        // Ends the task unless the index is a counter of this task.
        let value = rdpmc_rcx(u64::from(index));
        report(format_args!("case={case}\nindex={index:#x}\nvalue={value}"));
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

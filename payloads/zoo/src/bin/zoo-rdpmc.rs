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
//! takes ECX only: the kernel must emulate it) and runs the cases without counters. Then, on a
//! machine with a PMU (else `counters_configure` says `EINVAL` and it stops there), it counts
//! instructions in ring 3 on GP 0, GP 1 and fixed counter 0 for a while, keeps only GP 0, and
//! runs the cases again (`arg` 0x100 + case): the children inherit GP 0, so index 0 is theirs
//! (read by the hardware: CR4.PCE is set for them), and every RDPMC runs in hardware. GP 1 and
//! fixed 0 are counters the CPU has but the child does not own: the hardware does not fault,
//! so they must read 0, not the parent's counts (the kernel clears the counters a task does
//! not own when it loads its events). It exits 0.
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
        // Instructions retired in ring 3 (USR, without EN) on GP 0, GP 1 and fixed counter 0
        // (GP 0 and GP 1 where there is no fixed counter 0), counted for a while.
        const INSTRUCTIONS_USR: u64 = 0xc0 | (1 << 16);
        let three = [
            INSTRUCTIONS_USR,
            INSTRUCTIONS_USR,
            baremark_sdk::fixed_entry(0, true, false),
        ];
        let configured = baremark_sdk::counters_configure(&three)
            .or_else(|_| baremark_sdk::counters_configure(&three[..2]));
        let mut x = 0u64;
        for i in 0..10_000u64 {
            x = core::hint::black_box(x.wrapping_add(i));
        }
        let mut counts = [0u64; 16];
        let read = baremark_sdk::counters_read(&mut counts).map_or(0, |r| r.n);
        // Then GP 0 alone, which the children inherit.
        let kept = configured.and_then(|_| baremark_sdk::counters_configure(&three[..1]));
        report(format_args!(
            "aborted_without_counters={aborted}\ncounters_configure={}\ncounted={read}\n\
             gp0={}\ngp1={}\nfixed0={}",
            match kept {
                Ok(_) => "ok",
                Err(baremark_sdk::Error::Invalid) => "EINVAL",
                Err(baremark_sdk::Error::NoDev) => "ENODEV",
                Err(_) => "error",
            },
            counts[0],
            counts[1],
            counts[2]
        ));
        if kept.is_ok() {
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

//! `read-fast`: reads of the task's virtual TSC through the counter page
//! (`counters::read_tsc_fast`, no system call): the cost of measuring itself.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_suite::run;
    use baremark_sdk::bench::Bench;
    use baremark_sdk::counters;

    /// n reads through the SDK's public reader (compiled Rust, so the instruction count depends
    /// on the build; the reader itself is the SDK's fixed assembly sequence).
    extern "C" fn reads(n: u64, _arg: u64) {
        for _ in 0..n {
            core::hint::black_box(counters::read_tsc_fast());
        }
    }

    pub fn main() -> i64 {
        run(
            &Bench::new("read-fast", 1000, reads),
            format_args!(
                "instructions_per_iteration=build-dependent (Rust loop around the SDK reader)\n\
                 expect=one RDTSC and two loads from the counter page per read: about 20-50 cycles \
                 on hardware (RDTSC dominates)"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

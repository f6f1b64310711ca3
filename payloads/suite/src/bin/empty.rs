//! `empty`: the harness floor. The body is the harness's own empty body (one `ret`), one
//! iteration: the raw value is the overhead of a measured region, and the value after overhead
//! removal is 0.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_sdk::bench::{self, Bench};

    pub fn main() -> i64 {
        baremark_payload_suite::run(
            &Bench::new("empty", 1, bench::empty()),
            format_args!(
                "instructions_per_iteration=0\n\
                 expect=raw: the harness overhead of one region; after overhead removal: exactly 0"
            ),
        )
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_suite::host_main();
}

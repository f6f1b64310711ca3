//! The loop payload with N = 1000 (see common.rs).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
mod common;

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload_main);

#[cfg(target_os = "none")]
fn payload_main() -> i64 {
    common::run(1000)
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

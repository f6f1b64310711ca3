//! The smallest useful payload: a line on the console, a result record, exit code 0.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload_main);

#[cfg(target_os = "none")]
fn payload_main() -> i64 {
    let _ = baremark_sdk::write("hello from ring 3\n");
    let start = baremark_sdk::rdtsc();
    let end = baremark_sdk::rdtsc();
    let mut buf = baremark_sdk::Buf::<64>::new();
    let _ = core::fmt::Write::write_fmt(&mut buf, format_args!("rdtsc_delta={}", end - start));
    let _ = baremark_sdk::report(buf.as_str());
    0
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

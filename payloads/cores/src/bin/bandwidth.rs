#![cfg_attr(target_os = "none", no_std, no_main)]
#[cfg(target_os = "none")]
baremark_sdk::entry!(body::run);
#[cfg(target_os = "none")]
mod body {
    pub fn run() -> i64 {
        0
    }
}
#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

//! The kernel binary: only the bootloader entry point. Everything else is in the library.
//!
//! On the host this file builds to a stub (so `cargo test --workspace` can build every target);
//! the real kernel is the `x86_64-unknown-none` build, produced by the `baremark` host crate.
#![cfg_attr(target_os = "none", no_std, no_main)]
#![deny(unsafe_code)]

#[cfg(target_os = "none")]
// `entry_point!` expands to `#[unsafe(export_name = "_start")]` and
// `#[unsafe(link_section = ".bootloader-config")]`: attributes, not unsafe operations, but the
// `unsafe_code` lint counts them. Nothing else in this module is allowed to use unsafe.
#[allow(unsafe_code)]
mod entry {
    bootloader_api::entry_point!(
        kernel_main,
        config = &baremark_hw::layout::BOOTLOADER_CONFIG
    );

    fn kernel_main(boot_info: &'static mut bootloader_api::BootInfo) -> ! {
        baremark_kernel::boot::run(boot_info)
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "baremark-kernel runs on bare metal; build the boot image with `cargo baremark image`."
    );
    std::process::exit(2);
}

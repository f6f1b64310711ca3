//! Passes the path of the kernel ELF (built for x86_64-unknown-none as an artifact dependency)
//! to the crate, which embeds it, so the `baremark` binary is self-contained.

fn main() {
    let kernel = std::env::var_os("CARGO_BIN_FILE_BAREMARK_KERNEL_kernel").expect(
        "cargo did not provide the kernel artifact (is -Z bindeps enabled in .cargo/config.toml?)",
    );
    println!(
        "cargo:rustc-env=BAREMARK_KERNEL_ELF={}",
        kernel.to_string_lossy()
    );
    println!("cargo:rerun-if-env-changed=CARGO_BIN_FILE_BAREMARK_KERNEL_kernel");
    let hello = std::env::var_os("CARGO_BIN_FILE_BAREMARK_PAYLOAD_HELLO_hello")
        .expect("cargo did not provide the hello payload");
    println!(
        "cargo:rustc-env=BAREMARK_PAYLOAD_HELLO_ELF={}",
        hello.to_string_lossy()
    );
}

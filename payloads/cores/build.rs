//! Payloads are static, non-PIE ELF64 executables linked at 0x400000 (the kernel's loader
//! rejects position-independent images). The bare-metal target links static-pie by default.

fn main() {
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-none") {
        println!("cargo:rustc-link-arg-bins=--no-pie");
        println!("cargo:rustc-link-arg-bins=--image-base=0x400000");
    }
}

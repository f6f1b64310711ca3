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
    for (var, env) in [
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_HELLO_hello",
            "BAREMARK_PAYLOAD_HELLO_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_LOOP_loop1000",
            "BAREMARK_PAYLOAD_LOOP1000_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_LOOP_loop2000",
            "BAREMARK_PAYLOAD_LOOP2000_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_RDPMC_rdpmc",
            "BAREMARK_PAYLOAD_RDPMC_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_RDPMC_hwcount",
            "BAREMARK_PAYLOAD_HWCOUNT_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_RDPMC_threads",
            "BAREMARK_PAYLOAD_THREADS_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_RDPMC_notify",
            "BAREMARK_PAYLOAD_NOTIFY_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_RDPMC_mux",
            "BAREMARK_PAYLOAD_MUX_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_RDPMC_wallcost",
            "BAREMARK_PAYLOAD_WALLCOST_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_RDPMC_sysmode",
            "BAREMARK_PAYLOAD_SYSMODE_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_CORES_c2c",
            "BAREMARK_PAYLOAD_C2C_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_CORES_bandwidth",
            "BAREMARK_PAYLOAD_BANDWIDTH_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_SPIN_spin",
            "BAREMARK_PAYLOAD_SPIN_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_SPAWN_spawner",
            "BAREMARK_PAYLOAD_SPAWNER_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_PROFILE_profile",
            "BAREMARK_PAYLOAD_PROFILE_ELF",
        ),
        (
            "CARGO_BIN_FILE_BAREMARK_PAYLOAD_FUZZ_fuzz-syscalls",
            "BAREMARK_PAYLOAD_FUZZ_SYSCALLS_ELF",
        ),
    ] {
        let path = std::env::var_os(var)
            .unwrap_or_else(|| panic!("cargo did not provide the payload artifact {var}"));
        println!("cargo:rustc-env={env}={}", path.to_string_lossy());
    }
    // The runner library of `baremark asm` (payloads/asm, a staticlib).
    let runner = std::env::vars_os()
        .find(|(var, _)| {
            var.to_str()
                .is_some_and(|v| v.starts_with("CARGO_STATICLIB_FILE_BAREMARK_PAYLOAD_ASM"))
        })
        .map(|(_, path)| path)
        .expect("cargo did not provide the asm runner library (payloads/asm, a staticlib)");
    println!(
        "cargo:rustc-env=BAREMARK_ASM_RUNNER_LIB={}",
        runner.to_string_lossy()
    );
    // The benchmark suite (payloads/suite, one bin per benchmark) is optional until it is
    // wired into Cargo.toml: when cargo provides its bins, name each for payloads.rs and turn
    // on `baremark_suite`, which compiles the suite's payloads in.
    println!("cargo::rustc-check-cfg=cfg(baremark_suite)");
    let prefix = "CARGO_BIN_FILE_BAREMARK_PAYLOAD_SUITE_";
    let mut suite = false;
    for (var, path) in std::env::vars_os() {
        let Some(bin) = var.to_str().and_then(|v| v.strip_prefix(prefix)) else {
            continue;
        };
        suite = true;
        println!(
            "cargo:rustc-env=BAREMARK_SUITE_ELF_{bin}={}",
            path.to_string_lossy()
        );
    }
    if suite {
        println!("cargo:rustc-cfg=baremark_suite");
    }
    // The misbehaving payloads (payloads/zoo, one bin per misbehaviour): each bin's path as
    // `BAREMARK_ZOO_ELF_<bin>` for payloads.rs.
    let prefix = "CARGO_BIN_FILE_BAREMARK_PAYLOAD_ZOO_";
    for (var, path) in std::env::vars_os() {
        if let Some(bin) = var.to_str().and_then(|v| v.strip_prefix(prefix)) {
            println!(
                "cargo:rustc-env=BAREMARK_ZOO_ELF_{bin}={}",
                path.to_string_lossy()
            );
        }
    }
}

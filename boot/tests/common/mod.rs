//! Helpers shared by the `baremark` binary's integration tests (each test file includes this
//! module; not every file uses every helper).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `baremark` binary cargo built for these tests.
pub fn baremark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_baremark"))
}

/// A file of `boot/tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A stand-in for QEMU (through `BAREMARK_QEMU`) that prints `log` as the serial output and
/// exits the way QEMU does after the kernel's successful isa-debug-exit.
pub fn fake_qemu(dir: &Path, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("fake-qemu");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ncat '{}'\nexit 33\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

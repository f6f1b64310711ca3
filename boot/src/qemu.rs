//! Finding and starting QEMU.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::image::Firmware;

/// How QEMU executes the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Accel {
    /// Probe KVM with a quick boot; use it if it works, else TCG.
    Auto,
    /// Hardware virtualisation with `-cpu host` (exposes the host PMU as a vPMU).
    Kvm,
    /// QEMU's software emulation (no performance counters; the TSC works).
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Auto => "auto",
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// Everything about the QEMU invocation.
#[derive(Clone, Debug)]
pub struct QemuOptions {
    pub firmware: Firmware,
    /// Must be `Kvm` or `Tcg` when starting QEMU (`Auto` is resolved by the session).
    pub accel: Accel,
    /// `-cpu` model; default `host` under KVM, `max` under TCG.
    pub cpu: Option<String>,
    /// `-icount shift=N` (TCG only): the TSC then advances exactly 2^N per instruction.
    pub icount: Option<u32>,
    pub memory_mib: u32,
    /// Arguments passed to QEMU as they are.
    pub extra_args: Vec<String>,
    /// Time allowed from start to QEMU's exit.
    pub timeout: Duration,
}

impl QemuOptions {
    pub fn new(firmware: Firmware, accel: Accel) -> Self {
        Self {
            firmware,
            accel,
            cpu: None,
            icount: None,
            memory_mib: 256,
            extra_args: Vec::new(),
            timeout: Duration::from_secs(60),
        }
    }
}

/// The QEMU binary: `$BAREMARK_QEMU`, else `qemu-system-x86_64` from PATH.
pub fn qemu_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("BAREMARK_QEMU") {
        return Ok(PathBuf::from(p));
    }
    let name = "qemu-system-x86_64";
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    bail!(
        "{name} not found. Install QEMU (Debian/Ubuntu: `sudo apt-get install qemu-system-x86`; \
         Fedora: `sudo dnf install qemu-system-x86`; Arch: `sudo pacman -S qemu-full`), \
         or set BAREMARK_QEMU to its path. ./run-qemu.sh installs it for you on Debian/Ubuntu."
    )
}

/// UEFI firmware for QEMU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ovmf {
    /// A single image with code and variables (`-bios FILE`).
    Combined(PathBuf),
    /// Split code and variable store (`-drive if=pflash`); the variables are copied per run.
    Split { code: PathBuf, vars: PathBuf },
}

/// Finds OVMF: `$BAREMARK_OVMF` (a combined image), else the usual distribution paths.
pub fn find_ovmf() -> Result<Ovmf> {
    if let Some(p) = std::env::var_os("BAREMARK_OVMF") {
        return Ok(Ovmf::Combined(PathBuf::from(p)));
    }
    for combined in [
        "/usr/share/ovmf/OVMF.fd",
        "/usr/share/qemu/OVMF.fd",
        "/usr/share/OVMF/OVMF.fd",
    ] {
        if Path::new(combined).is_file() {
            return Ok(Ovmf::Combined(combined.into()));
        }
    }
    for (code, vars) in [
        (
            "/usr/share/OVMF/OVMF_CODE_4M.fd",
            "/usr/share/OVMF/OVMF_VARS_4M.fd",
        ),
        (
            "/usr/share/OVMF/OVMF_CODE.fd",
            "/usr/share/OVMF/OVMF_VARS.fd",
        ),
        (
            "/usr/share/edk2/x64/OVMF_CODE.fd",
            "/usr/share/edk2/x64/OVMF_VARS.fd",
        ),
        (
            "/usr/share/edk2/ovmf/OVMF_CODE.fd",
            "/usr/share/edk2/ovmf/OVMF_VARS.fd",
        ),
    ] {
        if Path::new(code).is_file() && Path::new(vars).is_file() {
            return Ok(Ovmf::Split {
                code: code.into(),
                vars: vars.into(),
            });
        }
    }
    bail!(
        "no OVMF (UEFI firmware for QEMU) found. Install it (Debian/Ubuntu: `sudo apt-get install ovmf`; \
         Fedora: `sudo dnf install edk2-ovmf`), or set BAREMARK_OVMF to an OVMF.fd"
    )
}

/// Whether /dev/kvm can be opened for reading and writing; the error says why not.
pub fn kvm_device_usable() -> Result<(), String> {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("/dev/kvm does not exist".into()),
        Err(e) => Err(format!("/dev/kvm cannot be opened: {e}")),
    }
}

/// Builds the QEMU command line for booting `image`. `scratch` is a directory for per-run
/// files (a copy of the UEFI variable store).
pub fn command(qemu: &Path, image: &Path, opts: &QemuOptions, scratch: &Path) -> Result<Command> {
    let mut cmd = Command::new(qemu);
    cmd.args(["-machine", "q35", "-m"])
        .arg(format!("{}M", opts.memory_mib));
    match opts.accel {
        Accel::Kvm => {
            cmd.args(["-accel", "kvm", "-cpu"])
                .arg(opts.cpu.as_deref().unwrap_or("host"));
        }
        Accel::Tcg | Accel::Auto => {
            cmd.args(["-accel", "tcg", "-cpu"])
                .arg(opts.cpu.as_deref().unwrap_or("max"));
            if let Some(shift) = opts.icount {
                cmd.arg("-icount").arg(format!("shift={shift}"));
            }
        }
    }
    if opts.firmware == Firmware::Uefi {
        match find_ovmf()? {
            Ovmf::Combined(path) => {
                cmd.arg("-bios").arg(path);
            }
            Ovmf::Split { code, vars } => {
                let vars_copy = scratch.join("OVMF_VARS.fd");
                std::fs::copy(&vars, &vars_copy)?;
                cmd.arg("-drive").arg(format!(
                    "if=pflash,format=raw,readonly=on,file={}",
                    code.display()
                ));
                cmd.arg("-drive")
                    .arg(format!("if=pflash,format=raw,file={}", vars_copy.display()));
            }
        }
    }
    cmd.arg("-drive")
        .arg(format!("format=raw,file={}", image.display()));
    cmd.args([
        "-device",
        "isa-debug-exit,iobase=0xf4,iosize=0x04",
        "-serial",
        "stdio",
        "-display",
        "none",
        "-monitor",
        "none",
        // No network card: its option ROM costs boot time and the kernel has no use for it.
        "-nic",
        "none",
        // A triple fault must end the run, not reboot into the same failure forever.
        "-no-reboot",
    ]);
    cmd.args(&opts.extra_args);
    Ok(cmd)
}

/// QEMU's exit status for the kernel's isa-debug-exit values: 0x10 -> 33 (success),
/// 0x11 -> 35 (failure).
pub const QEMU_EXIT_SUCCESS: i32 = 33;
pub const QEMU_EXIT_FAILURE: i32 = 35;

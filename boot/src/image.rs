//! Boot images: the kernel (embedded in this binary), a ramdisk holding the run configuration,
//! and the bootloader's BIOS (MBR) or UEFI (GPT) disk image around them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use bootloader::{BootConfig, DiskImageBuilder};

/// The kernel ELF, built for x86_64-unknown-none by cargo (see build.rs).
pub static KERNEL_ELF: &[u8] = include_bytes!(env!("BAREMARK_KERNEL_ELF"));

/// Name of the configuration member in the ramdisk (the kernel's `config::CONFIG_MEMBER`).
pub const CONFIG_MEMBER: &str = "run.cfg";

/// Firmware an image is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Firmware {
    /// Legacy BIOS: an MBR disk image.
    Bios,
    /// UEFI: a GPT disk image with an EFI system partition.
    Uefi,
}

impl Firmware {
    pub fn name(self) -> &'static str {
        match self {
            Firmware::Bios => "bios",
            Firmware::Uefi => "uefi",
        }
    }
}

/// What the kernel does after its `end` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnEnd {
    /// Exit QEMU through isa-debug-exit (used by `baremark run`).
    QemuExit,
    /// Halt (images for real hardware).
    Halt,
}

/// The run configuration written to `run.cfg` (see docs/run-config.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    pub on_end: OnEnd,
    /// Test-only action (`page-fault`, `panic`, ...); `None` for a normal run.
    pub test: Option<String>,
    pub timer_checks: bool,
    /// Run the PMU selftest after the boot report.
    pub selftest: bool,
    /// Extra raw lines appended verbatim (tests use this to feed bad configuration).
    pub extra_lines: Vec<String>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            on_end: OnEnd::QemuExit,
            test: None,
            timer_checks: true,
            selftest: false,
            extra_lines: Vec::new(),
        }
    }
}

impl RunConfig {
    /// The `run.cfg` text.
    pub fn to_text(&self) -> String {
        let mut s = String::from("# baremark run configuration (written by the host tool)\n");
        let on_end = match self.on_end {
            OnEnd::QemuExit => "qemu-exit",
            OnEnd::Halt => "halt",
        };
        let _ = writeln!(s, "on_end = {on_end}");
        let _ = writeln!(s, "test = {}", self.test.as_deref().unwrap_or("none"));
        let _ = writeln!(
            s,
            "timer_checks = {}",
            if self.timer_checks { "on" } else { "off" }
        );
        if self.selftest {
            let _ = writeln!(s, "selftest = on");
        }
        for line in &self.extra_lines {
            let _ = writeln!(s, "{line}");
        }
        s
    }
}

/// Builds the ramdisk: a ustar archive with `run.cfg`.
pub fn build_ramdisk(config: &RunConfig) -> Result<Vec<u8>> {
    let mut archive = tar::Builder::new(Vec::new());
    let text = config.to_text();
    let mut header = tar::Header::new_ustar();
    header.set_size(text.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    archive
        .append_data(&mut header, CONFIG_MEMBER, text.as_bytes())
        .context("packing run.cfg")?;
    archive
        .into_inner()
        .context("finishing the ramdisk archive")
}

/// The bootloader's own configuration: its log lines off the serial port (the kernel's records
/// are the only thing there); warnings and errors still on the framebuffer for people at a
/// screen.
fn boot_config() -> BootConfig {
    let mut config = BootConfig::default();
    config.serial_logging = false;
    config.frame_buffer_logging = false;
    config.log_level = bootloader_boot_config::LevelFilter::Warn;
    config
}

/// Writes a disk image for `firmware` with the given run configuration to `out`.
pub fn build_image(firmware: Firmware, config: &RunConfig, out: &Path) -> Result<()> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let kernel = dir.path().join("kernel");
    std::fs::File::create(&kernel)
        .and_then(|mut f| f.write_all(KERNEL_ELF))
        .context("writing the kernel to a temporary file")?;
    let ramdisk = dir.path().join("ramdisk.tar");
    std::fs::write(&ramdisk, build_ramdisk(config)?).context("writing the ramdisk")?;

    let mut builder = DiskImageBuilder::new(kernel);
    builder.set_ramdisk(ramdisk);
    builder.set_boot_config(&boot_config());
    match firmware {
        Firmware::Bios => builder.create_bios_image(out),
        Firmware::Uefi => builder.create_uefi_image(out),
    }
    .with_context(|| {
        format!(
            "creating the {} image at {}",
            firmware.name(),
            out.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramdisk_is_a_ustar_archive_with_run_cfg() {
        let config = RunConfig {
            test: Some("panic".into()),
            ..RunConfig::default()
        };
        let bytes = build_ramdisk(&config).unwrap();
        assert_eq!(bytes.len() % 512, 0);
        let mut archive = tar::Archive::new(&bytes[..]);
        let mut entries = archive.entries().unwrap();
        let mut entry = entries.next().unwrap().unwrap();
        assert_eq!(entry.path().unwrap().to_str(), Some(CONFIG_MEMBER));
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
        assert!(text.contains("on_end = qemu-exit\n"));
        assert!(text.contains("test = panic\n"));
        assert!(text.contains("timer_checks = on\n"));
    }

    #[test]
    fn kernel_is_an_x86_64_elf() {
        assert_eq!(&KERNEL_ELF[..4], b"\x7fELF");
        assert_eq!(KERNEL_ELF[4], 2, "64-bit");
        assert_eq!(
            u16::from_le_bytes([KERNEL_ELF[18], KERNEL_ELF[19]]),
            0x3e,
            "x86_64"
        );
    }
}

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

/// How the harness removes the measurement's fixed cost (the `overhead` key; docs/harness.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Overhead {
    /// Subtract an empty region measured the same way (the kernel's default).
    Empty,
    /// Run the region with U and 2U iterations and take the difference (needs an iteration
    /// count).
    Diff,
    /// Report the region as measured.
    None,
}

impl Overhead {
    pub fn name(self) -> &'static str {
        match self {
            Overhead::Empty => "empty",
            Overhead::Diff => "diff",
            Overhead::None => "none",
        }
    }
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
    /// Payload ELF files, `(name, bytes)`, packed as `payloads/<name>.elf` in this order; the
    /// kernel runs them in ring 3 after the boot report (docs/run-config.md).
    pub payloads: Vec<(String, Vec<u8>)>,
    /// Run the payloads concurrently, round-robin, with this quantum in microseconds (the
    /// `quantum_us` key); 0: one after the other.
    pub quantum_us: u32,
    /// The watchdog's per-task budget in milliseconds (the `task_budget_ms` key; 0: none);
    /// `None`: the kernel's default (10000).
    pub task_budget_ms: Option<u32>,
    /// Events to count in perf syntax (the `events` key); `None`: only the virtual TSC.
    pub events: Option<String>,
    /// Measured repetitions per benchmark (`reps`, 1..=1000); `None`: the kernel's 20.
    pub reps: Option<u32>,
    /// Unrecorded warm-up repetitions (`warmup`, 0..=1000); `None`: the kernel's 5.
    pub warmup: Option<u32>,
    /// Overhead removal (`overhead`); `None`: the kernel's default, `empty`.
    pub overhead: Option<Overhead>,
    /// Compact event tables, `(member name, bytes)`, packed after the payloads (e.g.
    /// `events/GenuineIntel-6-55.tab`, see `content::pack_perfmon`).
    pub extra_members: Vec<(String, Vec<u8>)>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            on_end: OnEnd::QemuExit,
            test: None,
            timer_checks: true,
            selftest: false,
            extra_lines: Vec::new(),
            payloads: Vec::new(),
            quantum_us: 0,
            task_budget_ms: None,
            events: None,
            reps: None,
            warmup: None,
            overhead: None,
            extra_members: Vec::new(),
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
        if self.quantum_us > 0 {
            let _ = writeln!(s, "quantum_us = {}", self.quantum_us);
        }
        if let Some(ms) = self.task_budget_ms {
            let _ = writeln!(s, "task_budget_ms = {ms}");
        }
        if let Some(events) = &self.events {
            let _ = writeln!(s, "events = {events}");
        }
        if let Some(reps) = self.reps {
            let _ = writeln!(s, "reps = {reps}");
        }
        if let Some(warmup) = self.warmup {
            let _ = writeln!(s, "warmup = {warmup}");
        }
        if let Some(overhead) = self.overhead {
            let _ = writeln!(s, "overhead = {}", overhead.name());
        }
        for line in &self.extra_lines {
            let _ = writeln!(s, "{line}");
        }
        s
    }
}

/// The ramdisk member of payload `name` (the kernel runs every `payloads/*.elf` member).
pub fn payload_member(name: &str) -> String {
    format!("{PAYLOAD_DIR}/{name}.elf")
}

/// The ramdisk folder of payload members.
pub const PAYLOAD_DIR: &str = "payloads";

/// Whether `name` can name a payload: 1-64 bytes of ASCII letters, digits, `-`, `_`, `.`.
pub fn valid_payload_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// Builds the ramdisk: a ustar archive with `run.cfg`, then `payloads/<name>.elf` for each
/// payload in order, then the extra members (event tables).
pub fn build_ramdisk(config: &RunConfig) -> Result<Vec<u8>> {
    let mut archive = tar::Builder::new(Vec::new());
    let mut append = |path: &str, data: &[u8]| {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        archive.append_data(&mut header, path, data)
    };
    append(CONFIG_MEMBER, config.to_text().as_bytes()).context("packing run.cfg")?;
    for (name, elf) in &config.payloads {
        if !valid_payload_name(name) {
            anyhow::bail!("payload name `{name}`: use 1-64 ASCII letters, digits, `-`, `_` or `.`");
        }
        append(&payload_member(name), elf).with_context(|| format!("packing payload `{name}`"))?;
    }
    for (path, data) in &config.extra_members {
        append(path, data).with_context(|| format!("packing {path}"))?;
    }
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

/// Where UEFI firmware looks for the boot program on a removable disk.
const UEFI_FALLBACK_PATH: &str = "efi/boot/bootx64.efi";

/// Writes one image that boots both ways, for a USB stick: the BIOS image (MBR, boot code,
/// FAT partition) with the UEFI bootloader added to the FAT partition at the removable-media
/// path `efi/boot/bootx64.efi`. BIOS firmware runs the MBR's boot code; UEFI firmware finds the
/// FAT partition through the MBR and starts the UEFI bootloader, which loads the same kernel
/// and ramdisk from it. (bootloader 0.11 builds BIOS images as MBR disks and UEFI images as
/// GPT disks without BIOS boot code; neither boots the other way on its own.)
pub fn build_usb_image(config: &RunConfig, out: &Path) -> Result<()> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let kernel = dir.path().join("kernel");
    std::fs::write(&kernel, KERNEL_ELF).context("writing the kernel to a temporary file")?;
    let ramdisk = dir.path().join("ramdisk.tar");
    std::fs::write(&ramdisk, build_ramdisk(config)?).context("writing the ramdisk")?;

    let mut builder = DiskImageBuilder::new(kernel);
    builder.set_ramdisk(ramdisk);
    builder.set_boot_config(&boot_config());
    // The UEFI bootloader binary is only reachable through the TFTP folder export.
    let tftp = dir.path().join("tftp");
    builder
        .create_uefi_tftp_folder(&tftp)
        .context("extracting the UEFI bootloader")?;
    builder.set_file(UEFI_FALLBACK_PATH.to_string(), tftp.join("bootloader"));
    builder
        .create_bios_image(out)
        .with_context(|| format!("creating the USB image at {}", out.display()))
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
    fn payloads_follow_run_cfg_in_order() {
        let config = RunConfig {
            payloads: vec![
                ("b".into(), b"second".to_vec()),
                ("a".into(), b"first!".to_vec()),
            ],
            ..RunConfig::default()
        };
        let bytes = build_ramdisk(&config).unwrap();
        let mut archive = tar::Archive::new(&bytes[..]);
        let members: Vec<(String, Vec<u8>)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let path = e.path().unwrap().to_str().unwrap().to_string();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut data).unwrap();
                (path, data)
            })
            .collect();
        assert_eq!(members.len(), 3);
        assert_eq!(members[0].0, CONFIG_MEMBER);
        assert_eq!(members[1], ("payloads/b.elf".into(), b"second".to_vec()));
        assert_eq!(members[2], ("payloads/a.elf".into(), b"first!".to_vec()));
        let bad = RunConfig {
            payloads: vec![("../x".into(), Vec::new())],
            ..RunConfig::default()
        };
        assert!(build_ramdisk(&bad).is_err());
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

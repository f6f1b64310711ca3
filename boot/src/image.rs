//! Boot images: the kernel (embedded in this binary), a ramdisk holding the run configuration,
//! and the bootloader's BIOS (MBR) or UEFI (GPT) disk image around them.

use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom, Write};
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
    /// Plant the kernel's canary in its free memory before the payloads run (`canary = on`;
    /// docs/reliability.md).
    pub canary: bool,
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
    /// A nanoBench event config (`--config`), packed as it was read as
    /// `events::nanobench::CONFIG_MEMBER`; the kernel counts its events besides `events`.
    pub nanobench_config: Option<String>,
    /// Sampling (`sample = WORD@PERIOD,...`, as `run --sample` encodes it): every payload task
    /// records its RIP every PERIOD events (docs/profiling.md).
    pub sample: Option<String>,
    /// Payloads run on a chosen CPU (`pin = NAME@CPU,...`; `*` for every payload not named):
    /// `(payload name or "*", CPU index)`, in order. Empty: all on the boot CPU.
    pub pins: Vec<(String, usize)>,
    /// Payloads run in the background (`background = NAME@CPU,...`): each starts first on its
    /// CPU (1 or more) and runs while the others do, and is stopped when they are done (a noisy
    /// neighbour; its end is a `task_stopped` record). `(payload name, CPU index)`, in order.
    pub background: Vec<(String, usize)>,
    /// The CPUs the foreground payloads run on, each in turn (`cpus = all | each-type |
    /// 0,2-3`; `--cpus`): the kernel resolves `all` and `each-type` from the CPUs it started.
    pub cpus: Option<CpuSet>,
    /// Test-only: an APIC ID with nothing behind it, started like a CPU of the MADT
    /// (`test_phantom_cpu`), to see a CPU that does not answer reported.
    pub test_phantom_cpu: Option<u32>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            on_end: OnEnd::QemuExit,
            test: None,
            timer_checks: true,
            selftest: false,
            canary: false,
            extra_lines: Vec::new(),
            payloads: Vec::new(),
            quantum_us: 0,
            task_budget_ms: None,
            events: None,
            reps: None,
            warmup: None,
            overhead: None,
            extra_members: Vec::new(),
            nanobench_config: None,
            sample: None,
            pins: Vec::new(),
            background: Vec::new(),
            cpus: None,
            test_phantom_cpu: None,
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
        if self.canary {
            let _ = writeln!(s, "canary = on");
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
        if let Some(sample) = &self.sample {
            let _ = writeln!(s, "sample = {sample}");
        }
        if !self.pins.is_empty() {
            let pins: Vec<String> = self
                .pins
                .iter()
                .map(|(name, cpu)| format!("{name}@{cpu}"))
                .collect();
            let _ = writeln!(s, "pin = {}", pins.join(","));
        }
        if !self.background.is_empty() {
            let background: Vec<String> = self
                .background
                .iter()
                .map(|(name, cpu)| format!("{name}@{cpu}"))
                .collect();
            let _ = writeln!(s, "background = {}", background.join(","));
        }
        if let Some(cpus) = &self.cpus {
            let _ = writeln!(s, "cpus = {}", cpus.to_text());
        }
        if let Some(id) = self.test_phantom_cpu {
            let _ = writeln!(s, "test_phantom_cpu = {id}");
        }
        for line in &self.extra_lines {
            let _ = writeln!(s, "{line}");
        }
        s
    }
}

/// The CPUs a run's foreground payloads run on, each in turn (`--cpus`, run.cfg `cpus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuSet {
    /// These CPU indexes, ascending, each once.
    List(Vec<usize>),
    /// Every CPU the kernel started.
    All,
    /// One CPU of each core type (hybrid parts: a Core and an Atom CPU; else CPU 0).
    EachType,
}

impl CpuSet {
    /// Parses `all`, `each-type`, or CPU indexes and ranges such as `0,2-3` (ascending, each
    /// CPU once, below [`PIN_CPU_MAX`]), as the kernel does run.cfg `cpus`.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let text = text.trim();
        match text {
            "all" => return Ok(CpuSet::All),
            "each-type" => return Ok(CpuSet::EachType),
            "" => return Err("give `all`, `each-type` or CPU indexes such as 0,2-3".into()),
            _ => {}
        }
        let mut cpus: Vec<usize> = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let (lo, hi) = part.split_once('-').unwrap_or((part, part));
            let index = |t: &str| -> Result<usize, String> {
                let t = t.trim();
                if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format!(
                        "`{part}` is not a CPU index or a range (e.g. 2 or 2-3; or give `all` or \
                         `each-type`)"
                    ));
                }
                match t.parse::<usize>() {
                    Ok(n) if n < PIN_CPU_MAX => Ok(n),
                    _ => Err(format!(
                        "CPU {t} is past the kernel's {PIN_CPU_MAX} CPUs (indexes 0 to {})",
                        PIN_CPU_MAX - 1
                    )),
                }
            };
            let (lo, hi) = (index(lo)?, index(hi)?);
            if lo > hi {
                return Err(format!("`{part}`: a range goes up (e.g. {hi}-{lo})"));
            }
            if let Some(&last) = cpus.last()
                && lo <= last
            {
                return Err(format!(
                    "`{part}`: give each CPU once, in ascending order (CPU {} comes after {last})",
                    lo
                ));
            }
            cpus.extend(lo..=hi);
        }
        Ok(CpuSet::List(cpus))
    }

    /// The run.cfg text.
    pub fn to_text(&self) -> String {
        match self {
            CpuSet::All => "all".into(),
            CpuSet::EachType => "each-type".into(),
            CpuSet::List(cpus) => {
                // Consecutive indexes as ranges, as they were most likely given.
                let mut parts: Vec<String> = Vec::new();
                let mut i = 0;
                while i < cpus.len() {
                    let mut j = i;
                    while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                        j += 1;
                    }
                    parts.push(if j == i {
                        cpus[i].to_string()
                    } else {
                        format!("{}-{}", cpus[i], cpus[j])
                    });
                    i = j + 1;
                }
                parts.join(",")
            }
        }
    }

    /// The CPUs a machine with `smp` CPUs runs on (`all`: every one; `each-type`: CPU 0 in
    /// QEMU, whose CPUs are of one type unless the emulated PMU's hybrid mode says otherwise,
    /// so the kernel decides). `None` where only the kernel can tell.
    pub fn known_count(&self, smp: u32) -> Option<usize> {
        match self {
            CpuSet::List(c) => Some(c.len()),
            CpuSet::All => Some(smp as usize),
            CpuSet::EachType => None,
        }
    }
}

/// CPU indexes a pin may name: 0 to 511 (the kernel's `PIN_CPU_MAX`, its most CPUs).
pub const PIN_CPU_MAX: usize = 512;

/// The most pins (or background payloads) one run.cfg may give (the kernel's `PINS_MAX`).
pub const PINS_MAX: usize = 64;

/// The most CPUs QEMU's q35 machine takes (`--smp`).
pub const SMP_MAX: u32 = 288;

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

/// Checks the pins as the kernel will: each names `*` or a payload packed, once, and a CPU
/// index it can have; at most [`PINS_MAX`] of them.
fn check_pins(config: &RunConfig) -> Result<()> {
    if config.pins.len() > PINS_MAX {
        anyhow::bail!(
            "{} pins: the kernel takes at most {PINS_MAX}",
            config.pins.len()
        );
    }
    for (i, (name, cpu)) in config.pins.iter().enumerate() {
        if name != "*" && !config.payloads.iter().any(|(n, _)| n == name) {
            anyhow::bail!("pin {name}@{cpu}: no payload `{name}` is packed");
        }
        if *cpu >= PIN_CPU_MAX {
            anyhow::bail!(
                "pin {name}@{cpu}: CPU indexes go from 0 to {}",
                PIN_CPU_MAX - 1
            );
        }
        if config.pins[..i].iter().any(|(n, _)| n == name) {
            anyhow::bail!("pin {name}@...: `{name}` is pinned twice");
        }
    }
    Ok(())
}

/// Checks the background payloads as the kernel will: each a payload packed, once, not also
/// pinned with `pin`, on a CPU from 1 (the boot CPU runs the others) that no other background
/// payload and no pin names; at most [`PINS_MAX`] of them.
fn check_background(config: &RunConfig) -> Result<()> {
    if config.background.len() > PINS_MAX {
        anyhow::bail!(
            "{} background payloads: the kernel takes at most {PINS_MAX}",
            config.background.len()
        );
    }
    for (i, (name, cpu)) in config.background.iter().enumerate() {
        let this = format!("background {name}@{cpu}");
        if !config.payloads.iter().any(|(n, _)| n == name) {
            anyhow::bail!("{this}: no payload `{name}` is packed");
        }
        if *cpu == 0 || *cpu >= PIN_CPU_MAX {
            anyhow::bail!(
                "{this}: a background payload runs on CPU 1 to {} (CPU 0, the boot CPU, runs the \
                 others)",
                PIN_CPU_MAX - 1
            );
        }
        let earlier = &config.background[..i];
        if earlier.iter().any(|(n, _)| n == name) {
            anyhow::bail!("{this}: `{name}` is in the background twice");
        }
        if let Some((other, _)) = earlier.iter().find(|(_, c)| c == cpu) {
            anyhow::bail!(
                "{this}: CPU {cpu} already runs background payload `{other}` (one each CPU)"
            );
        }
        if let Some((_, at)) = config.pins.iter().find(|(n, _)| n == name) {
            anyhow::bail!(
                "{this}: `{name}` is also pinned to CPU {at}; a payload runs either in the \
                 background or in the foreground"
            );
        }
        if let Some((other, _)) = config.pins.iter().find(|(_, c)| c == cpu) {
            let who = if other == "*" {
                "every payload not named is".to_string()
            } else {
                format!("payload `{other}` is")
            };
            anyhow::bail!(
                "{this}: {who} pinned to CPU {cpu} too, which runs `{name}` until the others \
                 are done"
            );
        }
    }
    Ok(())
}

/// Builds the ramdisk: a ustar archive with `run.cfg`, then `payloads/<name>.elf` for each
/// payload in order, then the extra members (event tables), then the nanoBench config.
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
    check_pins(config)?;
    check_background(config)?;
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
    if let Some(text) = &config.nanobench_config {
        let member = events::nanobench::CONFIG_MEMBER;
        append(member, text.as_bytes()).with_context(|| format!("packing {member}"))?;
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
    // The frame buffer's size (the kernel's screen, docs/screen.md) is left to the firmware on
    // purpose: bootloader 0.11's UEFI stage takes the *last* GOP mode at least as large as
    // the minimums, the largest there is (2560x1600 in QEMU: four times the pixels to draw
    // for nothing), and its BIOS stage ignores them (the largest VESA mode within 1280x720).
    // Unset, QEMU gives a known mode either way: 1280x720 24-bit under BIOS, OVMF's default
    // 1280x800 32-bit under UEFI (tests/tests/screen.rs checks both).
    config.frame_buffer.minimum_framebuffer_width = None;
    config.frame_buffer.minimum_framebuffer_height = None;
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
        Firmware::Bios => builder
            .create_bios_image(out)
            .and_then(|()| move_bios_stacks(out)),
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
///
/// With `results_mib`, the stick gets a results file of that size (`stick`,
/// docs/results-file.md) and the kernel writes its serial stream into it; returns its place.
pub fn build_usb_image(
    config: &RunConfig,
    out: &Path,
    results_mib: Option<u64>,
) -> Result<Option<crate::stick::Place>> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let kernel = dir.path().join("kernel");
    std::fs::write(&kernel, KERNEL_ELF).context("writing the kernel to a temporary file")?;
    let mut config = config.clone();
    let results = match results_mib {
        Some(mib) => {
            if !crate::stick::MIB_RANGE.contains(&mib) {
                anyhow::bail!(
                    "--results-mib {mib}: the results file is {}..={} MiB",
                    crate::stick::MIB_RANGE.start(),
                    crate::stick::MIB_RANGE.end()
                );
            }
            let (id, signature) = crate::stick::Place::new_identity()?;
            config
                .extra_lines
                .extend(crate::stick::config_lines(&id, signature));
            Some((id, signature, mib * 2048))
        }
        None => None,
    };
    let ramdisk = dir.path().join("ramdisk.tar");
    std::fs::write(&ramdisk, build_ramdisk(&config)?).context("writing the ramdisk")?;

    let mut builder = DiskImageBuilder::new(kernel);
    builder.set_ramdisk(ramdisk);
    builder.set_boot_config(&boot_config());
    // The UEFI bootloader binary is only reachable through the TFTP folder export.
    let tftp = dir.path().join("tftp");
    builder
        .create_uefi_tftp_folder(&tftp)
        .context("extracting the UEFI bootloader")?;
    builder.set_file(UEFI_FALLBACK_PATH.to_string(), tftp.join("bootloader"));
    if let Some((id, _, sectors)) = results {
        let stamped = dir.path().join("results.log");
        std::fs::write(&stamped, crate::stick::stamped_file(&id, sectors))
            .context("writing the results file's first contents")?;
        builder.set_file(crate::stick::RESULTS_LOG.to_string(), stamped);
    }
    builder
        .create_bios_image(out)
        .and_then(|()| move_bios_stacks(out))
        .with_context(|| format!("creating the USB image at {}", out.display()))?;
    let Some((id, signature, sectors)) = results else {
        return Ok(None);
    };
    let mut image = std::fs::read(out).context("reading the USB image back")?;
    let place = crate::stick::finish_image(&mut image, &id, signature, sectors)
        .context("laying out the results file")?;
    std::fs::write(out, &image).with_context(|| format!("writing {}", out.display()))?;
    Ok(Some(place))
}

/// The line the floor image writes to COM1.
pub const FLOOR_LINE: &str = "baremark floor: a one-sector image ran";

/// The boot-time floor: a BIOS disk image whose one boot sector (an MBR) writes [`FLOOR_LINE`]
/// to COM1 and exits QEMU through isa-debug-exit as the kernel does (0x10 to port 0xf4: status
/// 33). Booted with the same QEMU command as a BIOS image, it costs what QEMU and SeaBIOS cost
/// before any bootloader runs (`boot-timing` measures baremark's boot against it). The rest of
/// its 512 KiB is zeros: SeaBIOS does not boot a disk smaller than one cylinder (1008 sectors).
pub fn floor_image() -> Vec<u8> {
    const LOAD: u16 = 0x7c00; // where the BIOS runs an MBR
    const MSG: u16 = 0x28; // the line's offset in the sector
    #[rustfmt::skip]
    let code: &[u8] = &[
        0xfa,                   // 00 cli
        0x31, 0xc0,             // 01 xor ax, ax
        0x8e, 0xd8,             // 03 mov ds, ax
        0xfc,                   // 05 cld
        0xbe, 0x00, 0x00,       // 06 mov si, LOAD + MSG (patched below)
        0xac,                   // 09 next: lodsb
        0x84, 0xc0,             // 0a test al, al
        0x74, 0x11,             // 0c jz exit (0x1f)
        0x88, 0xc4,             // 0e mov ah, al
        0xba, 0xfd, 0x03,       // 10 mov dx, 0x3fd (COM1 line status)
        0xec,                   // 13 wait: in al, dx
        0xa8, 0x20,             // 14 test al, 0x20 (transmitter empty)
        0x74, 0xfb,             // 16 jz wait
        0xb2, 0xf8,             // 18 mov dl, 0xf8 (COM1 data, 0x3f8)
        0x88, 0xe0,             // 1a mov al, ah
        0xee,                   // 1c out dx, al
        0xeb, 0xea,             // 1d jmp next
        0xba, 0xf4, 0x00,       // 1f exit: mov dx, 0xf4 (isa-debug-exit)
        0xb0, 0x10,             // 22 mov al, 0x10
        0xee,                   // 24 out dx, al
        0xf4,                   // 25 halt: hlt
        0xeb, 0xfd,             // 26 jmp halt
    ];
    let mut sector = vec![0u8; 512];
    sector[..code.len()].copy_from_slice(code);
    sector[7..9].copy_from_slice(&(LOAD + MSG).to_le_bytes());
    let line = format!("{FLOOR_LINE}\r\n");
    let msg = usize::from(MSG);
    assert_eq!(code.len(), msg);
    sector[msg..msg + line.len()].copy_from_slice(line.as_bytes());
    sector[510..].copy_from_slice(&[0x55, 0xaa]);
    sector.resize(512 * 1024, 0);
    sector
}

// The BIOS boot path's stacks, moved out of pages that hold code.
//
// Under QEMU's TCG every guest write to a 4 KiB page holding translated code takes a slow path
// (QEMU checks it for self-modifying code). The bootloader's stage 1 sets the stack at 0x7c00,
// just below itself, in the page that also holds stage 2's first 512 bytes (from 0x7e00; its
// disk loop among them), and stages 2, 3 and 4 all run on it: about two million stack writes
// took that path, 1.1 s of a 1.45 s boot (stage 2 copying files byte by byte, stage 3 drawing
// its banner pixel by pixel, stage 4 mapping memory). Two patches move the stack: stage 1's
// `mov sp, 0x7c00` becomes `mov sp, 0x7000` (stage 2 needs little stack, and real-mode stack
// addresses stay below 64 KiB, where the pages from 0x7000 up hold stage 2), and stage 3, which
// with stage 4 needs about 30 KiB, gets a stack of its own from a stub run before it. On
// hardware nothing changes but where the stacks are.

/// Stage 1's `mov sp, 0x7c00` (bootloader 0.11's `boot.s`).
const STAGE_1_MOV_SP: [u8; 3] = [0xbc, 0x00, 0x7c];
/// Stage 2's stack top instead: the highest address whose page holds no code.
const STAGE_2_STACK_TOP: u16 = 0x7000;
/// Where stage 2 loads the `boot-stage-3` file and calls it (its `STAGE_3_DST`).
const STAGE_3_ADDR: u32 = 0x10_0000;
/// Where stage 2 loads stage 4: the stage-3 file must end below it.
const STAGE_4_ADDR: u32 = 0x13_0000;
/// Stages 3 and 4's stack top: inside the memory stage 1 loads stage 2's image into
/// (0x7e00-0x7ffff, zeros from about 0x13000), so the bootloader owns it already, and no code
/// runs there.
const STAGE_3_STACK_TOP: u32 = 0x7_f000;
/// The stage-3 file in the image's FAT partition.
const STAGE_3_FILE: &str = "boot-stage-3";
/// The stub's first part, at the file's start: `jmp` to its second part, padded.
const STUB_HEAD_LEN: usize = 16;

/// Applies both patches to the BIOS (MBR) image at `path`.
fn move_bios_stacks(path: &Path) -> Result<()> {
    let mut disk = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .context("opening the image")?;
    let mut mbr = [0u8; 512];
    disk.read_exact(&mut mbr).context("reading the MBR")?;
    patch_stage_1_stack(&mut mbr)?;
    disk.seek(SeekFrom::Start(0))?;
    disk.write_all(&mbr).context("writing the MBR")?;

    let fs = crate::fat::open(&mut disk, &mbr)?;
    let root = fs.root_dir();
    let mut file = root
        .open_file(STAGE_3_FILE)
        .with_context(|| format!("opening {STAGE_3_FILE}"))?;
    let mut stage_3 = Vec::new();
    file.read_to_end(&mut stage_3)?;
    let patched = stage_3_with_own_stack(&stage_3)?;
    file.seek(SeekFrom::Start(0))?;
    file.truncate()?;
    file.write_all(&patched)?;
    file.flush()?;
    drop(file);
    drop(root);
    fs.unmount().context("closing the image's FAT partition")?;
    Ok(())
}

/// Stage 1's stack top, 0x7c00, becomes [`STAGE_2_STACK_TOP`].
fn patch_stage_1_stack(mbr: &mut [u8; 512]) -> Result<()> {
    let code = &mbr[..446];
    let at: Vec<usize> = (0..code.len() - 2)
        .filter(|&i| code[i..i + 3] == STAGE_1_MOV_SP)
        .collect();
    let [at] = at[..] else {
        anyhow::bail!(
            "the bootloader's stage 1 has {} `mov sp, 0x7c00` instructions where 1 was expected \
             (a new bootloader version? see move_bios_stacks in boot/src/image.rs)",
            at.len()
        );
    };
    mbr[at + 1..at + 3].copy_from_slice(&STAGE_2_STACK_TOP.to_le_bytes());
    Ok(())
}

/// The stage-3 file with a stub that gives stage 3 (and stage 4 after it) the stack at
/// [`STAGE_3_STACK_TOP`]: stage 2 calls the file's start in 32-bit protected mode, flat
/// segments, `[esp]` its return address and `[esp+4]` the `BiosInfo` pointer. Layout: a jump
/// to the stub, stage 3 itself, and the stub on a page of its own; the stub switches stacks,
/// moves stage 3 down to its link address (overwriting the jump) and jumps to it with the same
/// two words on the new stack.
fn stage_3_with_own_stack(stage_3: &[u8]) -> Result<Vec<u8>> {
    let stub_at = (STUB_HEAD_LEN + stage_3.len()).next_multiple_of(4096);
    let len = u32::try_from(stage_3.len())?;
    let mut out = vec![0u8; stub_at];
    out[0] = 0xe9; // jmp rel32
    out[1..5].copy_from_slice(&(u32::try_from(stub_at)? - 5).to_le_bytes());
    out[5..STUB_HEAD_LEN].fill(0xcc); // int3
    out[STUB_HEAD_LEN..STUB_HEAD_LEN + stage_3.len()].copy_from_slice(stage_3);
    let src = STAGE_3_ADDR + STUB_HEAD_LEN as u32;
    #[rustfmt::skip]
    let stub: &[&[u8]] = &[
        &[0x8b, 0x4c, 0x24, 0x04],             // mov ecx, [esp+4]  (BiosInfo pointer)
        &[0x8b, 0x14, 0x24],                   // mov edx, [esp]    (return address)
        &[0xbc], &STAGE_3_STACK_TOP.to_le_bytes(), // mov esp, STAGE_3_STACK_TOP
        &[0x51],                               // push ecx
        &[0x52],                               // push edx
        &[0xbe], &src.to_le_bytes(),           // mov esi, stage 3 in the file
        &[0xbf], &STAGE_3_ADDR.to_le_bytes(),  // mov edi, its link address
        &[0xb9], &len.to_le_bytes(),           // mov ecx, its length
        &[0xfc],                               // cld
        &[0xf3, 0xa4],                         // rep movsb (forward: the regions overlap)
        &[0xb8], &STAGE_3_ADDR.to_le_bytes(),  // mov eax, stage 3's entry
        &[0xff, 0xe0],                         // jmp eax
    ];
    out.extend(stub.iter().copied().flatten());
    let end = STAGE_3_ADDR + u32::try_from(out.len())?;
    if end > STAGE_4_ADDR {
        anyhow::bail!("the stage-3 file would end at {end:#x}, over stage 4 at {STAGE_4_ADDR:#x}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_sets_parse_write_and_refuse_mistakes() {
        assert_eq!(CpuSet::parse("0,2-3"), Ok(CpuSet::List(vec![0, 2, 3])));
        assert_eq!(CpuSet::parse("all"), Ok(CpuSet::All));
        assert_eq!(CpuSet::parse("each-type"), Ok(CpuSet::EachType));
        assert_eq!(CpuSet::parse("0,2-3").unwrap().to_text(), "0,2-3");
        assert_eq!(CpuSet::parse("1,2,3,5").unwrap().to_text(), "1-3,5");
        for (bad, says) in [
            ("", "give `all`, `each-type`"),
            ("x", "`x` is not a CPU index or a range"),
            ("1,", "`` is not a CPU index"),
            ("3-2", "a range goes up (e.g. 2-3)"),
            ("2,1", "in ascending order (CPU 1 comes after 2)"),
            ("0-2,2", "give each CPU once"),
            ("512", "past the kernel's 512 CPUs"),
            ("-1", "`-1` is not a CPU index"),
            ("every", "`every` is not a CPU index"),
        ] {
            let e = CpuSet::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let config = RunConfig {
            cpus: Some(CpuSet::All),
            ..RunConfig::default()
        };
        assert!(config.to_text().contains("\ncpus = all\n"));
    }

    #[test]
    fn background_is_written_and_checked_as_the_kernel_reads_it() {
        let elf = |n: &str| (n.to_string(), vec![1]);
        let mut config = RunConfig {
            payloads: vec![elf("a"), elf("spin"), elf("noise")],
            pins: vec![("a".into(), 1)],
            background: vec![("spin".into(), 2), ("noise".into(), 3)],
            ..RunConfig::default()
        };
        let text = config.to_text();
        assert!(
            text.contains(
                "
background = spin@2,noise@3
"
            ),
            "{text}"
        );
        check_background(&config).unwrap();
        build_ramdisk(&config).unwrap();
        assert!(!RunConfig::default().to_text().contains("background"));
        let refused = |config: &RunConfig| format!("{:#}", check_background(config).unwrap_err());
        let with = |background: Vec<(&str, usize)>, pins: Vec<(&str, usize)>| RunConfig {
            background: background
                .into_iter()
                .map(|(n, c)| (n.to_string(), c))
                .collect(),
            pins: pins.into_iter().map(|(n, c)| (n.to_string(), c)).collect(),
            ..config.clone()
        };
        for (bad, pins, why) in [
            (vec![("c", 2)], vec![], "no payload `c` is packed"),
            (vec![("spin", 0)], vec![], "CPU 1 to 511"),
            (vec![("spin", 512)], vec![], "CPU 1 to 511"),
            (
                vec![("spin", 2), ("spin", 3)],
                vec![],
                "in the background twice",
            ),
            (
                vec![("spin", 2), ("noise", 2)],
                vec![],
                "already runs background payload `spin`",
            ),
            (vec![("a", 2)], vec![("a", 1)], "also pinned to CPU 1"),
            (
                vec![("spin", 1)],
                vec![("a", 1)],
                "payload `a` is pinned to CPU 1 too",
            ),
            (
                vec![("spin", 1)],
                vec![("*", 1)],
                "every payload not named is pinned",
            ),
        ] {
            let e = refused(&with(bad.clone(), pins));
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        config.background = vec![("spin".into(), 1); 65];
        assert!(refused(&config).contains("at most 64"));
        // The ramdisk is not built with a background payload the kernel would refuse.
        config.background = vec![("spin".into(), 0)];
        assert!(build_ramdisk(&config).is_err());
    }

    #[test]
    fn pins_are_written_and_checked_as_the_kernel_reads_them() {
        let mut config = RunConfig {
            payloads: vec![("a".into(), vec![1]), ("b".into(), vec![2])],
            pins: vec![("a".into(), 3), ("*".into(), 1)],
            test_phantom_cpu: Some(9),
            ..RunConfig::default()
        };
        let text = config.to_text();
        assert!(text.contains("\npin = a@3,*@1\n"), "{text}");
        assert!(text.contains("\ntest_phantom_cpu = 9\n"), "{text}");
        check_pins(&config).unwrap();
        assert!(!RunConfig::default().to_text().contains("pin"));
        config.pins = vec![("c".into(), 1)];
        assert!(format!("{:#}", check_pins(&config).unwrap_err()).contains("no payload `c`"));
        config.pins = vec![("a".into(), 1), ("a".into(), 2)];
        assert!(format!("{:#}", check_pins(&config).unwrap_err()).contains("twice"));
        config.pins = vec![("a".into(), 512)];
        assert!(check_pins(&config).is_err());
        config.pins = vec![("*".into(), 0); 65];
        assert!(check_pins(&config).is_err());
    }

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
    fn stage_3_stub_switches_stacks_then_moves_stage_3_home() {
        let stage_3: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let file = stage_3_with_own_stack(&stage_3).unwrap();
        assert_eq!(&file[STUB_HEAD_LEN..STUB_HEAD_LEN + 5000], &stage_3[..]);
        // The jump lands on the stub, on a page after stage 3's end.
        assert_eq!(file[0], 0xe9);
        let stub_at = 5 + u32::from_le_bytes(file[1..5].try_into().unwrap()) as usize;
        assert_eq!(stub_at, 8192);
        let stub = &file[stub_at..];
        let imm = |op: u8| {
            let i = stub.iter().position(|&b| b == op).unwrap();
            u32::from_le_bytes(stub[i + 1..i + 5].try_into().unwrap())
        };
        assert_eq!(imm(0xbc), STAGE_3_STACK_TOP);
        assert_eq!(imm(0xbe), STAGE_3_ADDR + STUB_HEAD_LEN as u32);
        assert_eq!(imm(0xbf), STAGE_3_ADDR);
        assert_eq!(imm(0xb9), 5000);
        assert!(stub.ends_with(&[0xf3, 0xa4, 0xb8, 0x00, 0x00, 0x10, 0x00, 0xff, 0xe0]));
        // Too big to end below stage 4: refused.
        assert!(stage_3_with_own_stack(&vec![0; 0x30000]).is_err());
    }

    #[test]
    fn bios_images_have_both_stacks_moved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bios.img");
        build_image(Firmware::Bios, &RunConfig::default(), &path).unwrap();
        let mut disk = std::fs::File::open(&path).unwrap();
        let mut mbr = [0u8; 512];
        disk.read_exact(&mut mbr).unwrap();
        let has = |pat: &[u8]| mbr[..446].windows(3).any(|w| w == pat);
        assert!(has(&[0xbc, 0x00, 0x70]) && !has(&STAGE_1_MOV_SP));
        // A second pass finds nothing to patch.
        assert!(patch_stage_1_stack(&mut mbr.clone()).is_err());
        let fs = crate::fat::open(&mut disk, &mbr).unwrap();
        let mut stage_3 = Vec::new();
        fs.root_dir()
            .open_file(STAGE_3_FILE)
            .unwrap()
            .read_to_end(&mut stage_3)
            .unwrap();
        assert_eq!(stage_3[0], 0xe9);
        assert!(stage_3.ends_with(&[0xff, 0xe0]));
    }

    #[test]
    fn floor_image_is_a_boot_sector_with_its_line() {
        let sector = floor_image();
        assert_eq!(sector.len(), 512 * 1024);
        assert_eq!(&sector[510..512], &[0x55, 0xaa]);
        // `mov si` points at the line, NUL-terminated before the signature.
        let si = usize::from(u16::from_le_bytes([sector[7], sector[8]])) - 0x7c00;
        let end = si + sector[si..].iter().position(|&b| b == 0).unwrap();
        assert_eq!(&sector[si..end], format!("{FLOOR_LINE}\r\n").as_bytes());
        assert!(end < 510);
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

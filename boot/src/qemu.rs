//! Finding and starting QEMU.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};
use events::cpu::{CpuModel, Vendor};
use events::pmu::PmuCaps;

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

/// A PMU model of baremark's emulated PMU (QEMU's `pmu-model` CPU property, emulator/).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PmuModel {
    /// Intel architectural perfmon v2: 4 GP and 3 fixed counters, 48 bits.
    IntelV2,
    /// Intel v4 with PDCM and full-width counter writes (the default).
    IntelV4,
    /// Intel v5: v4 plus the fixed-counter bitmap.
    IntelV5,
    /// AMD: 4 legacy counters at the K7 MSRs.
    AmdLegacy,
    /// AMD PerfCtrExtCore: 6 counters.
    AmdCore,
    /// AMD PerfMonV2: 6 counters with global control and status.
    AmdV2,
}

impl PmuModel {
    /// The `pmu-model` property value.
    pub fn name(self) -> &'static str {
        match self {
            PmuModel::IntelV2 => "intel-v2",
            PmuModel::IntelV4 => "intel-v4",
            PmuModel::IntelV5 => "intel-v5",
            PmuModel::AmdLegacy => "amd-legacy",
            PmuModel::AmdCore => "amd-core",
            PmuModel::AmdV2 => "amd-v2",
        }
    }

    /// The QEMU CPU model it goes with when none is named: an Intel model's vendor must be
    /// Intel (Skylake client, whose perfmon tables Intel publishes), an AMD one's AMD.
    pub fn default_cpu(self) -> &'static str {
        match self {
            // without the features TCG cannot do (QEMU would warn about each)
            PmuModel::IntelV2 | PmuModel::IntelV4 | PmuModel::IntelV5 => {
                "Skylake-Client,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm,-rdseed,-3dnowprefetch,-xsavec"
            }
            PmuModel::AmdLegacy | PmuModel::AmdCore | PmuModel::AmdV2 => "max",
        }
    }

    /// Its PMU, as the CPU model it runs with shows it (Skylake client for Intel; TCG's `max`,
    /// an AMD family 0xf part, for AMD).
    pub fn caps(self) -> PmuCaps {
        let amd = Some(CpuModel::new(Vendor::Amd, 0xf, 0x6b));
        match self {
            PmuModel::IntelV2 | PmuModel::IntelV4 | PmuModel::IntelV5 => {
                let mut caps = PmuCaps::nominal(CpuModel::new(Vendor::Intel, 6, 0x5e));
                // Every Intel model of the emulator has 4 GP counters (docs/emulated-pmu.md).
                caps.gp_counters = 4;
                caps
            }
            PmuModel::AmdLegacy => PmuCaps::amd(false, None, amd),
            PmuModel::AmdCore => PmuCaps::amd(true, None, amd),
            PmuModel::AmdV2 => PmuCaps::amd(true, Some(6), amd),
        }
    }
}

/// The QEMU with baremark's emulated PMU: `$BAREMARK_QEMU_PMU`, else what `emulator/build.sh`
/// builds (or finds in its cache, `~/.cache/baremark/qemu-pmu-*`). The build's progress goes
/// to stderr.
pub fn emulated_pmu_qemu() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("BAREMARK_QEMU_PMU") {
        return Ok(PathBuf::from(p));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../emulator/build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("running {}: {e}", script.display()))?;
    if !out.status.success() {
        bail!(
            "building QEMU with the emulated PMU failed ({}); see its messages above, and docs/emulated-pmu.md",
            out.status
        );
    }
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if path.is_empty() || !Path::new(&path).is_file() {
        bail!("{} printed no QEMU binary path", script.display());
    }
    Ok(PathBuf::from(path))
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
    /// The QEMU binary; `None`: [`qemu_binary`].
    pub binary: Option<PathBuf>,
    /// The emulated PMU's model (TCG only; the binary must be the emulator's).
    pub pmu_model: Option<PmuModel>,
    /// The emulated PMU's micro-architecture model (QEMU's `pmu-uarch=on`, with `pmu_model`):
    /// data caches, a branch predictor, cycles with their stalls.
    pub pmu_uarch: bool,
    /// The cycle model's latencies to set (`pmu-lat-<key>=<cycles>`), from [`parse_uarch_latency`].
    pub pmu_uarch_latencies: Vec<(&'static str, u32)>,
    /// CPUs (`-smp N`, 1..=[`SMP_MAX`]); 1 leaves `-smp` out (QEMU's default, one CPU).
    pub smp: u32,
}

/// The most CPUs `--smp` gives QEMU's q35 machine (its limit in the QEMU versions baremark
/// runs on; docs/platforms.md has the 288-CPU row).
pub use crate::image::SMP_MAX;

/// The cycle model's latencies `--uarch-latency` sets (the emulator's `pmu-lat-*`).
pub const UARCH_LATENCIES: [&str; 4] = ["l2", "llc", "mem", "mispredict"];

/// One `--uarch-latency KEY=CYCLES`: stall cycles of a load line from L2, from the last
/// level, from memory, or of a mispredicted branch.
pub fn parse_uarch_latency(item: &str) -> Result<(&'static str, u32), String> {
    let (key, value) = item.split_once('=').ok_or_else(|| {
        format!("`{item}`: give KEY=CYCLES, e.g. mem=250 (keys: l2, llc, mem, mispredict)")
    })?;
    let key = UARCH_LATENCIES
        .iter()
        .find(|k| **k == key.trim())
        .ok_or_else(|| {
            format!("`{key}` is not a latency of the model: l2, llc, mem or mispredict")
        })?;
    let cycles = value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|c| *c <= 65535)
        .ok_or_else(|| format!("`{value}`: the {key} latency is a number of cycles, 0 to 65535"))?;
    Ok((*key, cycles))
}

/// `--smp N`: 1 to [`SMP_MAX`] CPUs.
pub fn parse_smp(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=SMP_MAX).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "{n} CPUs: QEMU's q35 machine takes 1 to {SMP_MAX} (e.g. --smp 4)"
        )),
        Err(_) => Err(format!(
            "`{s}` is not a number of CPUs: give 1 to {SMP_MAX} (e.g. --smp 4)"
        )),
    }
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
            binary: None,
            pmu_model: None,
            pmu_uarch: false,
            pmu_uarch_latencies: Vec::new(),
            smp: 1,
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
    if opts.smp > 1 {
        cmd.arg("-smp").arg(opts.smp.to_string());
    }
    match opts.accel {
        Accel::Kvm => {
            cmd.args(["-accel", "kvm", "-cpu"])
                .arg(opts.cpu.as_deref().unwrap_or("host"));
        }
        Accel::Tcg | Accel::Auto => {
            let model = match (&opts.cpu, opts.pmu_model) {
                (Some(cpu), _) => cpu.clone(),
                (None, Some(m)) => m.default_cpu().into(),
                (None, None) => "max".into(),
            };
            // TCG's `max` is an AMD CPU with 40 physical address bits, for which QEMU's memory
            // map reserves AMD's HyperTransport range at 1012-1024 GiB; the bootloader maps all
            // physical memory up to the highest address in that map, 1 TiB in 2 MiB pages:
            // 75 ms of a 250 ms boot under TCG. With 39 bits the range is not listed. Nothing
            // in the kernel reads the width; a CPU the user names is left as it is.
            // QEMU 9.0 to 10.0 (at least) stop with "Bad icount read" when a guest in x2APIC
            // mode reads the APIC timer's count (an RDMSR) under -icount: without a PMU model
            // (whose emulator/ build fixes that, patch 0007), `max` runs xAPIC there.
            let model = if opts.cpu.is_none() && model == "max" {
                if opts.icount.is_some() && opts.pmu_model.is_none() {
                    format!("{model},phys-bits=39,-x2apic")
                } else {
                    format!("{model},phys-bits=39")
                }
            } else {
                model
            };
            let cpu = match opts.pmu_model {
                Some(m) if opts.pmu_uarch => {
                    let mut cpu = format!("{model},pmu-model={},pmu-uarch=on", m.name());
                    for (key, cycles) in &opts.pmu_uarch_latencies {
                        cpu += &format!(",pmu-lat-{key}={cycles}");
                    }
                    cpu
                }
                Some(m) => format!("{model},pmu-model={}", m.name()),
                None => model,
            };
            cmd.args(["-accel", "tcg", "-cpu"]).arg(cpu);
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
        // None of QEMU's default devices but the VGA card (the bootloaders' framebuffer): no
        // empty CD-ROM drive, which OVMF tries to boot from first (60 ms), no floppy or
        // parallel port; and no network card, whose option ROM costs boot time.
        "-nodefaults",
        "-vga",
        "std",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(opts: &QemuOptions) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let cmd = command(Path::new("qemu"), Path::new("x.img"), opts, dir.path()).unwrap();
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn after<'a>(args: &'a [String], flag: &str) -> &'a str {
        let i = args.iter().position(|a| a == flag).unwrap();
        &args[i + 1]
    }

    #[test]
    fn the_emulated_pmu_gets_its_model_on_a_cpu_of_the_right_vendor() {
        let mut opts = QemuOptions::new(Firmware::Bios, Accel::Tcg);
        opts.icount = Some(0);
        opts.pmu_model = Some(PmuModel::IntelV5);
        let a = args(&opts);
        let cpu = after(&a, "-cpu");
        assert!(cpu.starts_with("Skylake-Client,"), "{cpu}");
        assert!(cpu.ends_with(",pmu-model=intel-v5"), "{cpu}");
        assert_eq!(after(&a, "-icount"), "shift=0");

        opts.pmu_model = Some(PmuModel::AmdV2);
        assert_eq!(
            after(&args(&opts), "-cpu"),
            "max,phys-bits=39,pmu-model=amd-v2"
        );

        // A CPU the user names is kept, with the model added.
        opts.cpu = Some("EPYC".into());
        assert_eq!(after(&args(&opts), "-cpu"), "EPYC,pmu-model=amd-v2");
        // The micro-architecture model goes after the model it needs.
        opts.pmu_uarch = true;
        assert_eq!(
            after(&args(&opts), "-cpu"),
            "EPYC,pmu-model=amd-v2,pmu-uarch=on"
        );
        opts.pmu_uarch_latencies = ["mem=250", "l2= 12"]
            .iter()
            .map(|i| parse_uarch_latency(i).unwrap())
            .collect();
        assert_eq!(
            after(&args(&opts), "-cpu"),
            "EPYC,pmu-model=amd-v2,pmu-uarch=on,pmu-lat-mem=250,pmu-lat-l2=12"
        );
        for bad in ["mem", "l3=4", "mem=-1", "mem=70000", "mem=x"] {
            let e = parse_uarch_latency(bad).unwrap_err();
            assert!(e.contains('`'), "{bad}: {e}");
        }
        opts.pmu_uarch = false;
        opts.pmu_uarch_latencies.clear();

        opts.pmu_model = None;
        assert_eq!(after(&args(&opts), "-cpu"), "EPYC");
        // Named, `max` stays as it is.
        opts.cpu = Some("max".into());
        assert_eq!(after(&args(&opts), "-cpu"), "max");
        opts.cpu = None;
        // Plain TCG under -icount: xAPIC (QEMU 10's x2APIC timer reads stop QEMU there).
        assert_eq!(after(&args(&opts), "-cpu"), "max,phys-bits=39,-x2apic");
        opts.icount = None;
        assert_eq!(after(&args(&opts), "-cpu"), "max,phys-bits=39");
    }

    #[test]
    fn smp_is_passed_on_and_checked() {
        let mut opts = QemuOptions::new(Firmware::Bios, Accel::Tcg);
        assert!(
            !args(&opts).contains(&"-smp".to_string()),
            "1: QEMU's default"
        );
        opts.smp = 4;
        assert_eq!(after(&args(&opts), "-smp"), "4");
        assert_eq!(parse_smp("1"), Ok(1));
        assert_eq!(parse_smp("288"), Ok(288));
        for bad in ["0", "289", "-1", "four", ""] {
            let e = parse_smp(bad).unwrap_err();
            assert!(e.contains("1 to 288"), "{bad}: {e}");
        }
    }
}

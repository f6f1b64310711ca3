//! The Linux guest (docs/linux-guest.md): Debian 12's Linux 6.1 with Debian's perf and the
//! programs of `tests/linux`, built and cached outside the clone by `scripts/linux-guest.sh`,
//! booted on baremark's emulated PMU. Tests and benchmarks boot it with [`boot_linux`] and
//! read what its init printed with [`LinuxRun`]'s accessors.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use baremark::qemu::{PmuModel, emulated_pmu_qemu};

/// The kernel command line: the serial console, no KASLR (addresses in the log are the
/// same every boot), no NMI watchdog (it would take a counter), the TSC trusted as the clock
/// (under `-icount` it is exact and the kernel's checks of it are slow), and a panic ends
/// the run (with `-no-reboot`) instead of hanging it.
pub const APPEND: &str =
    "console=ttyS0 quiet nokaslr nmi_watchdog=0 tsc=reliable clocksource=tsc panic=-1";

/// The init's markers around everything it prints (tests/linux/init).
pub const BEGIN: &str = "=== baremark-linux-guest begin ===";
pub const END: &str = "=== baremark-linux-guest end ===";

/// The guest's directory (vmlinuz, initrd.gz, bin/, packages.txt): `scripts/linux-guest.sh`
/// run once per process, which builds it the first time (downloading Debian's packages,
/// about 20 s) and otherwise prints its cache directory at once.
pub fn guest_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/linux-guest.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("running {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}); its messages are above (docs/linux-guest.md)",
                script.display(),
                out.status
            ));
        }
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        for file in ["vmlinuz", "initrd.gz"] {
            if !dir.join(file).is_file() {
                return Err(format!(
                    "{} printed {}, which has no {file}",
                    script.display(),
                    dir.display()
                ));
            }
        }
        Ok(dir)
    })
    .clone()
}

/// The QEMU command line of a boot of the guest in `dir` on `model`: the emulated PMU's
/// QEMU, `-icount shift=0` (exact counts, one TSC tick per instruction), the model's CPU
/// (`PmuModel::default_cpu`) with `pmu-model`, 512 MiB, no network card (q35's default
/// e1000e is not in the emulator's build) and the serial port on stdio.
/// `cpu_props` are added to `-cpu` (e.g. `,x-pmu-defect=no-pmi`; empty for none).
pub fn command(qemu: &Path, dir: &Path, model: PmuModel, cpu_props: &str) -> Command {
    let mut cmd = Command::new(qemu);
    cmd.args(["-machine", "q35", "-accel", "tcg", "-icount", "shift=0"])
        .arg("-cpu")
        .arg(format!(
            "{},pmu-model={}{cpu_props}",
            model.default_cpu(),
            model.name()
        ))
        .args(["-m", "512", "-kernel"])
        .arg(dir.join("vmlinuz"))
        .arg("-initrd")
        .arg(dir.join("initrd.gz"))
        .args(["-append", APPEND])
        .args(["-nic", "none", "-display", "none", "-monitor", "none"])
        .args(["-serial", "stdio", "-no-reboot"]);
    cmd
}

/// One boot of the guest: its serial text (QEMU's stdout and stderr), how QEMU ended and
/// how long it took.
#[derive(Clone, Debug)]
pub struct LinuxRun {
    pub model: PmuModel,
    pub serial: String,
    /// QEMU's exit status; `None` when it was killed at the timeout or by a signal.
    pub status: Option<i32>,
    pub timed_out: bool,
    pub elapsed: Duration,
}

/// Boots the guest on `model` and returns what it printed; QEMU is killed after `timeout`.
/// Errors say why it could not start (no guest, no emulator).
pub fn boot_linux(model: PmuModel, timeout: Duration) -> Result<LinuxRun, String> {
    boot_linux_cpu(model, "", timeout)
}

/// As [`boot_linux`], with `cpu_props` added to QEMU's `-cpu` (see [`command`]).
pub fn boot_linux_cpu(
    model: PmuModel,
    cpu_props: &str,
    timeout: Duration,
) -> Result<LinuxRun, String> {
    let dir = guest_dir()?;
    let qemu = emulated_pmu_qemu().map_err(|e| format!("no QEMU with the emulated PMU: {e:#}"))?;
    let start = Instant::now();
    let mut child = command(&qemu, &dir, model, cpu_props)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", qemu.display()))?;
    // Read both pipes while QEMU runs: the kernel log is larger than a pipe's buffer.
    let readers: Vec<_> = [
        Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("piped")),
    ]
    .into_iter()
    .map(|mut pipe| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    })
    .collect();
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child
            .try_wait()
            .map_err(|e| format!("waiting for QEMU: {e}"))?
        {
            break s.code();
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = start.elapsed();
    let mut serial = String::new();
    for reader in readers {
        serial.push_str(&String::from_utf8_lossy(&reader.join().unwrap_or_default()));
    }
    Ok(LinuxRun {
        model,
        serial: serial.replace('\r', ""),
        status,
        timed_out,
        elapsed,
    })
}

impl LinuxRun {
    /// The init's output between its markers, once it printed both.
    pub fn section(&self) -> Option<&str> {
        let begin = self.serial.find(BEGIN)? + BEGIN.len();
        let end = begin + self.serial[begin..].find(END)?;
        Some(&self.serial[begin..end])
    }

    /// Whether the guest ran its init to the end and QEMU exited by itself with status 0.
    pub fn completed(&self) -> bool {
        !self.timed_out && self.status == Some(0) && self.section().is_some()
    }

    /// The last 60 lines of the serial text, for failure messages.
    pub fn tail(&self) -> String {
        let lines: Vec<&str> = self.serial.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    /// The `result` lines of the init's section as key-value maps (`program`, `method` and
    /// the values docs/linux-guest.md lists).
    pub fn results(&self) -> Vec<BTreeMap<String, String>> {
        self.section()
            .unwrap_or("")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("result "))
            .map(parse_pairs)
            .collect()
    }

    /// The `result` line of `program` (and `method`, when given).
    pub fn result(&self, program: &str, method: Option<&str>) -> Option<BTreeMap<String, String>> {
        self.results().into_iter().find(|r| {
            r.get("program").map(String::as_str) == Some(program)
                && method.is_none_or(|m| r.get("method").map(String::as_str) == Some(m))
        })
    }

    /// `perf stat`'s count of `event` (e.g. `instructions:u`) on the known loop, as perf
    /// printed it (a number, or `<not-counted>` / `<not-supported>`: the init joins perf's
    /// two words).
    pub fn perf_stat(&self, event: &str) -> Option<String> {
        self.results()
            .into_iter()
            .find(|r| {
                r.get("program").map(String::as_str) == Some("perf-stat")
                    && r.get("event").map(String::as_str) == Some(event)
            })
            .and_then(|r| r.get("count").cloned())
    }

    /// The `error program=...` lines the programs and init printed.
    pub fn errors(&self) -> Vec<&str> {
        self.section()
            .unwrap_or("")
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("error "))
            .collect()
    }

    /// The PMU driver's line, after "Performance Events: ", from the kernel log.
    pub fn performance_events(&self) -> Option<&str> {
        self.serial.lines().find_map(|l| {
            l.split_once("Performance Events: ")
                .map(|(_, rest)| rest.trim())
        })
    }

    /// Kernel log lines containing `needle`.
    pub fn log_lines(&self, needle: &str) -> Vec<&str> {
        self.serial.lines().filter(|l| l.contains(needle)).collect()
    }
}

/// `key=value key=value ...` as a map; a word without `=` is skipped.
pub fn parse_pairs(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(serial: &str) -> LinuxRun {
        LinuxRun {
            model: PmuModel::IntelV4,
            serial: serial.into(),
            status: Some(0),
            timed_out: false,
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn the_init_section_is_parsed_into_results() {
        let r = run(&format!(
            "[    0.39] Performance Events: core perfctr, AMD PMU driver.\n{BEGIN}\n\
             result program=perf-stat event=instructions:u count=10000004\n\
             result program=perf-stat event=branches:u count=<not-supported>\n\
             result program=selfmon method=read loop_net_min=10000001\n\
             error program=overflow method=sigio: exit status 1\n{END}\n\
             result program=selfmon method=mmap loop_net_min=1\n"
        ));
        assert!(r.completed());
        assert_eq!(
            r.performance_events(),
            Some("core perfctr, AMD PMU driver.")
        );
        assert_eq!(r.perf_stat("instructions:u").as_deref(), Some("10000004"));
        assert_eq!(
            r.perf_stat("branches:u").as_deref(),
            Some("<not-supported>")
        );
        assert_eq!(
            r.result("selfmon", Some("read")).unwrap()["loop_net_min"],
            "10000001"
        );
        // Only what lies between the markers counts.
        assert!(r.result("selfmon", Some("mmap")).is_none());
        assert_eq!(
            r.errors(),
            ["error program=overflow method=sigio: exit status 1"]
        );
    }

    #[test]
    fn a_run_without_its_end_marker_is_not_complete() {
        let r = run(&format!(
            "{BEGIN}\nresult program=perf-stat event=x count=1\n"
        ));
        assert!(!r.completed());
        assert!(r.results().is_empty());
    }
}

//! The options of `baremark c2c` and `baremark bandwidth`, the payload argument text they
//! make, and the files they write.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Measurement options of `baremark c2c`.
#[derive(clap::Args, Debug)]
pub struct C2cOptions {
    /// The CPUs to measure between: `all` (every CPU online) or a list like `0,2-5`; every
    /// ordered pair of them is measured.
    #[arg(long, default_value = "all", value_name = "all|LIST")]
    pub cpus: String,
    /// Round trips per repetition.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub rounds: u64,
    /// Round trips before the timed ones (they also wait for the other side to arrive).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub warmup: u64,
    /// Repetitions per pair (median and spread; at most 31).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..=31))]
    pub reps: u64,
    /// Variants: `cas` (one line, compare-and-swap ping-pong), `rw` (two lines, one writer and
    /// one reader each), or both.
    #[arg(long, default_value = "cas,rw", value_parser = ["cas", "rw", "cas,rw", "rw,cas"])]
    pub variants: String,
    /// How a side waits: `busy` polls (bare metal), `pause` executes PAUSE between polls (in a
    /// VM, and what lets QEMU's round-robin TCG run the other side); `auto`: pause when the
    /// CPU says it is virtual.
    #[arg(long, default_value = "auto", value_parser = ["auto", "pause", "busy"])]
    pub spin: String,
    #[command(flatten)]
    pub events: EventOptions,
    #[command(flatten)]
    pub files: FileOptions,
}

/// Events each side counts.
#[derive(clap::Args, Debug)]
pub struct EventOptions {
    /// An event each side counts on its own CPU, as its raw encoding: NAME=0xHEX (repeatable,
    /// at most 4; `baremark events encode --cpu ... EVENT` prints encodings, e.g. a snoop or
    /// HITM event). Default: instructions:u and cycles:u for the CPU's vendor.
    #[arg(long = "event", value_name = "NAME=0xHEX")]
    pub events: Vec<String>,
    /// Count no events (only the TSC).
    #[arg(long, conflicts_with = "events")]
    pub no_counters: bool,
}

impl EventOptions {
    /// The payload's `events=` word, if any.
    fn arg(&self) -> Result<Option<String>> {
        if self.no_counters {
            return Ok(Some("events=none".into()));
        }
        if self.events.is_empty() {
            return Ok(None);
        }
        if self.events.len() > 4 {
            bail!("--event: at most 4 events (each side counts them on its own counters)");
        }
        for e in &self.events {
            let ok = e.split_once('=').is_some_and(|(name, code)| {
                !name.is_empty()
                    && name.len() <= 32
                    && name.bytes().all(|b| b.is_ascii_graphic() && b != b',')
                    && code
                        .strip_prefix("0x")
                        .is_some_and(|h| u64::from_str_radix(h, 16).is_ok())
            });
            if !ok {
                bail!(
                    "--event {e}: give NAME=0xHEX, the raw encoding `baremark events encode` \
                     prints (e.g. --event l3-hitm=0x1004d2)"
                );
            }
        }
        Ok(Some(format!("events={}", self.events.join(","))))
    }
}

/// What `c2c` and `bandwidth` write besides the table.
#[derive(clap::Args, Debug)]
pub struct FileOptions {
    /// Write the chart as SVG to FILE (c2c: a heatmap per variant; with both, `-cas` and
    /// `-rw` go before the extension).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Render a saved serial log (a run of the payload, e.g. from real hardware) instead of
    /// booting.
    #[arg(long, value_name = "LOG")]
    pub from_log: Option<PathBuf>,
}

/// Measurement options of `baremark bandwidth`.
#[derive(clap::Args, Debug)]
pub struct BandwidthOptions {
    /// The CPUs: `all` (every CPU online) or a list like `0,2-5`; the first k of them stream
    /// together for k = 1, 2, ...; the first is the chase's in the loaded-latency run.
    #[arg(long, default_value = "all", value_name = "all|LIST")]
    pub cpus: String,
    /// Kernels: read, write, copy, or a list of them.
    #[arg(long, default_value = "read,write,copy", value_parser = parse_kernels)]
    pub kernels: String,
    /// Each core's buffer in bytes (a multiple of 4096; at most 48 MiB / the number of CPUs;
    /// default that, up to 16 MiB). Suffixes K and M (KiB, MiB) are accepted.
    #[arg(long, value_parser = parse_bytes)]
    pub bytes: Option<u64>,
    /// Passes over the buffer per window.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub passes: u64,
    /// Repetitions (median and spread; at most 31).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=31))]
    pub reps: u64,
    /// Skip the loaded-latency run.
    #[arg(long)]
    pub no_loaded: bool,
    /// Dependent loads of the loaded-latency chase per window.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub loads: u64,
    #[command(flatten)]
    pub events: EventOptions,
    #[command(flatten)]
    pub files: FileOptions,
}

fn parse_kernels(s: &str) -> Result<String, String> {
    if !s.is_empty() && s.split(',').all(|k| matches!(k, "read" | "write" | "copy")) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{s}`: give read, write, copy or a comma-separated list of them"
        ))
    }
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    let (digits, mult) = match s.strip_suffix(['K', 'k']) {
        Some(d) => (d, 1024),
        None => match s.strip_suffix(['M', 'm']) {
            Some(d) => (d, 1 << 20),
            None => (s, 1),
        },
    };
    match digits.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)) {
        Some(n) if n >= 4096 && n % 4096 == 0 => Ok(n),
        _ => Err(format!(
            "`{s}`: give a multiple of 4096 bytes (e.g. 1M, 256K)"
        )),
    }
}

impl BandwidthOptions {
    /// The `bandwidth` payload's argument text.
    pub fn payload_args(&self, smp: u32) -> Result<String> {
        let cpus = match self.cpus.as_str() {
            "all" => "all".to_string(),
            text => {
                // One CPU is a valid run (bandwidth of one core).
                cpu_list(text, smp, 1)?
                    .unwrap_or_default()
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            }
        };
        let n = if cpus == "all" {
            smp as u64
        } else {
            cpus.split(',').count() as u64
        };
        if let Some(b) = self.bytes
            && b * n > 48 << 20
        {
            bail!(
                "--bytes {b}: {n} CPUs x {b} bytes is more than the payload's 48 MiB of buffers \
                 (give at most {} per CPU)",
                (48u64 << 20) / n / 4096 * 4096
            );
        }
        let mut words = vec![
            format!("cpus={cpus}"),
            format!("kernels={}", self.kernels),
            format!("passes={}", self.passes),
            format!("reps={}", self.reps),
            format!("loads={}", self.loads),
            format!("loaded={}", if self.no_loaded { "off" } else { "on" }),
        ];
        words.extend(self.bytes.map(|b| format!("bytes={b}")));
        words.extend(self.events.arg()?);
        Ok(words.join(" "))
    }
}

/// Parses `all` or `0,2-5` against the CPUs QEMU gets (`smp`), at least two; `None` for
/// `all`.
pub fn parse_cpus(text: &str, smp: u32) -> Result<Option<Vec<usize>>> {
    cpu_list(text, smp, 2)
}

fn cpu_list(text: &str, smp: u32, least: usize) -> Result<Option<Vec<usize>>> {
    if text == "all" {
        return Ok(None);
    }
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let one = |s: &str| -> Result<usize> {
            s.trim()
                .parse::<usize>()
                .with_context(|| format!("--cpus {text}: `{s}` is not a CPU index"))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (one(a)?, one(b)?),
            None => (one(part)?, one(part)?),
        };
        if lo > hi {
            bail!("--cpus {text}: `{part}` runs backwards (give LOW-HIGH)");
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    if let Some(&c) = cpus.iter().find(|&&c| c >= smp as usize) {
        bail!(
            "--cpus {text}: CPU {c} is not there: QEMU gets {smp} CPU{} (--smp N)",
            if smp == 1 { "" } else { "s" }
        );
    }
    if cpus.len() < least {
        bail!("--cpus {text}: name at least two CPUs (latency is between a pair)");
    }
    Ok(Some(cpus))
}

impl C2cOptions {
    /// The `c2c` payload's argument text.
    pub fn payload_args(&self, smp: u32) -> Result<String> {
        if smp < 2 && self.files.from_log.is_none() {
            bail!("c2c measures between CPUs: give QEMU at least two with --smp N");
        }
        let cpus = parse_cpus(&self.cpus, smp)?;
        let mut words = vec![
            format!(
                "cpus={}",
                cpus.map_or("all".into(), |c| c
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(","))
            ),
            format!("rounds={}", self.rounds),
            format!("warmup={}", self.warmup),
            format!("reps={}", self.reps),
            format!("variants={}", self.variants),
            format!("spin={}", self.spin),
        ];
        words.extend(self.events.arg()?);
        Ok(words.join(" "))
    }
}

/// `path` for one of several variants: `-VARIANT` before the extension when there are more.
pub fn variant_path(path: &Path, variant: &str, several: bool) -> PathBuf {
    if !several {
        return path.to_path_buf();
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("c2c");
    let name = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}-{variant}.{ext}"),
        None => format!("{stem}-{variant}"),
    };
    path.with_file_name(name)
}

/// Writes `text` to `path`, saying so.
pub fn write_file(path: &Path, text: &str) -> Result<String> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(format!("wrote {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_checked_against_the_cpus_qemu_gets() {
        assert_eq!(parse_cpus("all", 4).unwrap(), None);
        assert_eq!(parse_cpus("0,2-3", 4).unwrap(), Some(vec![0, 2, 3]));
        let e = parse_cpus("0-4", 4).unwrap_err().to_string();
        assert!(e.contains("CPU 4 is not there: QEMU gets 4 CPUs"), "{e}");
        assert!(
            parse_cpus("3-1", 4)
                .unwrap_err()
                .to_string()
                .contains("backwards")
        );
        assert!(
            parse_cpus("1", 4)
                .unwrap_err()
                .to_string()
                .contains("two CPUs")
        );
        assert!(
            parse_cpus("x", 4)
                .unwrap_err()
                .to_string()
                .contains("not a CPU index")
        );
    }

    #[test]
    fn raw_events_are_checked() {
        let ev = |v: &[&str]| EventOptions {
            events: v.iter().map(|s| s.to_string()).collect(),
            no_counters: false,
        };
        assert_eq!(
            ev(&["hitm=0x1004d2"]).arg().unwrap().as_deref(),
            Some("events=hitm=0x1004d2")
        );
        assert!(ev(&["hitm=1004d2"]).arg().is_err());
        assert!(
            ev(&["a=0x1", "b=0x1", "c=0x1", "d=0x1", "e=0x1"])
                .arg()
                .is_err()
        );
        assert_eq!(ev(&[]).arg().unwrap(), None);
    }

    #[test]
    fn several_variants_get_their_own_files() {
        let p = Path::new("/tmp/x/heat.svg");
        assert_eq!(variant_path(p, "cas", false), p);
        assert_eq!(variant_path(p, "rw", true), Path::new("/tmp/x/heat-rw.svg"));
    }
}

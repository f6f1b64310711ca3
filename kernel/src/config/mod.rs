//! The run configuration, read from the ramdisk the host tool packs into the boot image.
//!
//! The ramdisk is a POSIX ustar archive (inspect it with `tar tvf`). This kernel reads
//! one member, `run.cfg`: UTF-8 text, one `key = value` per line, `#` starts a comment. Unknown
//! keys and bad values are reported (one `config_error` record each) and skipped; the kernel
//! goes on with the defaults for them. See docs/run-config.md.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::harness::stats::Overhead;
use crate::output::results_file::ResultsFile;
use crate::task::settings::{
    CounterPermission, CpuChoice, MUX_INTERVAL_US_DEFAULT, Pins, SAMPLE_MAX, SampleSpec,
};
use crate::traps::OnEnd;

/// Name of the configuration member in the ramdisk archive.
pub const CONFIG_MEMBER: &str = "run.cfg";

/// Test-only behaviours that prove the harness catches failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestAction {
    None,
    /// Read an unmapped address: page fault in kernel mode.
    PageFault,
    /// Call `panic!`.
    Panic,
    /// Execute `ud2`: invalid opcode.
    InvalidOpcode,
    /// Recurse until the stack guard page is hit: the page fault cannot be delivered on the
    /// broken stack, so it becomes a double fault, handled on its IST stack.
    StackOverflow,
    /// Spin forever with interrupts off (the host must time out).
    Hang,
    /// Run the ring-3 smoke test (`task::smoke`): payloads that exit, write, and fault in ring
    /// 3; the run still ends with status ok.
    Ring3,
    /// Find every USB mass-storage disk (`usb`) and report each with a digest of its first
    /// sectors (`usb_disk` records).
    UsbDisks,
    /// Write a test pattern to 64 sectors at `usb_test_lba` of every USB disk found, read them
    /// back and report (`usb_write` records). Test images only: it overwrites those sectors.
    UsbWrite,
}

impl TestAction {
    pub const ALL: [(&'static str, TestAction); 9] = [
        ("none", TestAction::None),
        ("page-fault", TestAction::PageFault),
        ("panic", TestAction::Panic),
        ("invalid-opcode", TestAction::InvalidOpcode),
        ("stack-overflow", TestAction::StackOverflow),
        ("hang", TestAction::Hang),
        ("ring3", TestAction::Ring3),
        ("usb-disks", TestAction::UsbDisks),
        ("usb-write", TestAction::UsbWrite),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("none", |(n, _)| n)
    }
}

/// Where the configuration came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `run.cfg` from the ramdisk.
    Ramdisk,
    /// No ramdisk, or no `run.cfg` in it: defaults.
    Defaults,
}

/// The run configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    pub source: ConfigSource,
    pub on_end: OnEnd,
    pub test: TestAction,
    /// Check the APIC timer modes at boot.
    pub timer_checks: bool,
    /// Run the PMU selftest after the boot report.
    pub selftest: bool,
    /// Run the payloads concurrently, round-robin, preempted by the APIC timer every this many
    /// microseconds; 0: one after the other, never preempted.
    pub quantum_us: u32,
    /// The watchdog: a task that has run this many milliseconds (its own virtual TSC) is
    /// killed; 0: no budget (and no timer interrupt at all for a task running alone).
    pub task_budget_ms: u32,
    /// The harness's events (perf syntax, resolved at boot for this CPU by `harness::plan`);
    /// `None`: only the virtual TSC.
    pub events: Option<String>,
    /// Measured repetitions per benchmark and kind (1..=[`REPS_MAX`]).
    pub reps: u32,
    /// Warm-up repetitions before them (0..=[`REPS_MAX`]).
    pub warmup: u32,
    /// How the harness removes the measurement's own cost.
    pub overhead: Overhead,
    /// Test-only: preset every task hardware counter this many events below its wrap at each
    /// switch-in (0: never; `task::run::hw`).
    pub counter_preset: u64,
    /// Test-only: the N-th switch-in of task hardware counters fails (0: never).
    pub test_pmu_fault: u32,
    /// Test-only: SMIs the kernel raises after each `bench_begin` (0: none).
    pub test_smis: u32,
    /// Plant the canary (`canary` module) in free kernel memory before the payloads run, so a
    /// payload (`fuzz-syscalls`) can tell whether any kernel byte reaches it.
    pub canary: bool,
    /// Test-only: the first sector `test = usb-write` writes on every USB disk.
    pub usb_test_lba: u64,
    /// The results file on the boot stick (`results_file`, `disk_signature`, `results_id`),
    /// written by `baremark image --usb`; `None`: no results file (docs/results-file.md).
    pub results_file: Option<ResultsFile>,
    /// Sampling (`sample = WORD@PERIOD,...`): every task counts these `counters_configure`
    /// entries and records its RIP every PERIOD events (docs/syscall-abi.md, "Sampling").
    pub sample: Vec<SampleSpec>,
    /// Which payloads may program counters (`counters = all | none | NAME,NAME`): the others
    /// get `EPERM`.
    pub counters: CounterPermission,
    /// A multiplexed configuration's group turn, in microseconds of the task's virtual TSC
    /// (`mux_interval_us`).
    pub mux_interval_us: u32,
    /// System-wide counters for the whole run (`system = WORD,...`, `counters_configure`
    /// entries): empty: none.
    pub system: Vec<u64>,
    /// Which CPU each payload runs on (`pin = NAME@CPU,...`; docs/run-config.md).
    pub pins: Pins,
    /// Payloads that run in the background on their CPU while the others run (`background =
    /// NAME@CPU,...`, CPU 1 or more), stopped when the others are done: a noisy neighbour.
    pub background: Pins,
    /// The CPUs the foreground payloads run on, each in turn (`cpus = all | each-type |
    /// 0,2-3`); `None`: each payload once, on its pinned CPU or the boot CPU.
    pub cpus: Option<CpuChoice>,
    /// Test-only: an APIC ID with no CPU behind it, started like a MADT entry, to prove that a
    /// CPU that does not answer is reported and the run goes on.
    pub test_phantom_cpu: Option<u32>,
}

/// `WORD@PERIOD[,WORD@PERIOD...]` (WORD hex with 0x, PERIOD decimal).
fn parse_samples(value: &str) -> Option<Vec<SampleSpec>> {
    let specs: Option<Vec<SampleSpec>> = value
        .split(',')
        .map(|part| {
            let (word, period) = part.trim().split_once('@')?;
            let word = u64::from_str_radix(word.trim().strip_prefix("0x")?, 16).ok()?;
            let period = period.trim().parse::<u64>().ok()?;
            (crate::task::threshold::PERIOD_MIN..=crate::task::threshold::PERIOD_MAX)
                .contains(&period)
                .then_some(SampleSpec { word, period })
        })
        .collect();
    specs.filter(|s| !s.is_empty() && s.len() <= SAMPLE_MAX)
}

/// `0xWORD[,0xWORD...]`, at most 16.
fn parse_words(value: &str) -> Option<Vec<u64>> {
    let words: Option<Vec<u64>> = value
        .split(',')
        .map(|w| u64::from_str_radix(w.trim().strip_prefix("0x")?, 16).ok())
        .collect();
    words.filter(|w| !w.is_empty() && w.len() <= 16)
}

/// `all`, `none` or a comma-separated list of payload names.
fn parse_permission(value: &str) -> Option<CounterPermission> {
    match value {
        "all" => Some(CounterPermission::All),
        "none" => Some(CounterPermission::None),
        list => {
            let names: Vec<String> = list.split(',').map(|n| String::from(n.trim())).collect();
            let valid = names.iter().all(|n| {
                !n.is_empty()
                    && n.len() <= crate::task::abi::NAME_MAX
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
            });
            valid.then_some(CounterPermission::Only(names))
        }
    }
}

/// The most repetitions (and warm-ups) per benchmark and kind (the SDK's sample buffer).
pub const REPS_MAX: u32 = 1000;
/// The default `reps`.
pub const REPS_DEFAULT: u32 = 20;
/// The default `warmup`.
pub const WARMUP_DEFAULT: u32 = 5;
/// The longest `events` value.
pub const EVENTS_MAX: usize = 1024;

/// The largest `counter_preset`: 2^32 - 1, below the wrap of any counter with a width of more
/// than 32 bits (and a legacy Intel write's sign-extended 32-bit range).
pub const COUNTER_PRESET_MAX: u64 = (1 << 32) - 1;

/// The largest `quantum_us` (one second).
pub const QUANTUM_US_MAX: u32 = 1_000_000;

/// The default `task_budget_ms`.
pub const TASK_BUDGET_MS_DEFAULT: u32 = 10_000;

/// The largest `task_budget_ms` (one hour).
pub const TASK_BUDGET_MS_MAX: u32 = 3_600_000;

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            source: ConfigSource::Defaults,
            on_end: OnEnd::Halt,
            test: TestAction::None,
            timer_checks: true,
            selftest: false,
            quantum_us: 0,
            task_budget_ms: TASK_BUDGET_MS_DEFAULT,
            events: None,
            reps: REPS_DEFAULT,
            warmup: WARMUP_DEFAULT,
            overhead: Overhead::Empty,
            counter_preset: 0,
            test_pmu_fault: 0,
            test_smis: 0,
            canary: false,
            usb_test_lba: 0,
            results_file: None,
            sample: Vec::new(),
            counters: CounterPermission::All,
            mux_interval_us: MUX_INTERVAL_US_DEFAULT,
            system: Vec::new(),
            pins: Pins::default(),
            background: Pins::default(),
            cpus: None,
            test_phantom_cpu: None,
        }
    }
}

/// A problem with the ramdisk or one configuration line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError<'a> {
    /// The ramdisk is not a valid ustar archive (members before the damage are still used).
    CorruptArchive(crate::devices::ramdisk::TarError),
    /// `run.cfg` is not UTF-8.
    NotUtf8,
    /// A line without `=`.
    MissingEquals {
        line: usize,
    },
    UnknownKey {
        line: usize,
        key: &'a str,
    },
    BadValue {
        line: usize,
        key: &'a str,
        value: &'a str,
        expected: &'static str,
    },
    DuplicateKey {
        line: usize,
        key: &'a str,
    },
    /// Keys that only work together, not all given (`line`: the last of them).
    Incomplete {
        line: usize,
        what: &'static str,
    },
}

impl ConfigError<'_> {
    /// The 1-based line, when the problem is on one line.
    pub fn line(&self) -> Option<usize> {
        match *self {
            ConfigError::MissingEquals { line }
            | ConfigError::UnknownKey { line, .. }
            | ConfigError::BadValue { line, .. }
            | ConfigError::DuplicateKey { line, .. }
            | ConfigError::Incomplete { line, .. } => Some(line),
            _ => None,
        }
    }
}

impl fmt::Display for ConfigError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::CorruptArchive(e) => {
                write!(
                    f,
                    "the ramdisk is not a valid ustar archive ({e}); members before it are used"
                )
            }
            ConfigError::NotUtf8 => write!(f, "{CONFIG_MEMBER} is not UTF-8 text; using defaults"),
            ConfigError::MissingEquals { .. } => write!(f, "expected `key = value`"),
            ConfigError::UnknownKey { key, .. } => write!(f, "unknown key `{key}` (ignored)"),
            ConfigError::BadValue {
                key,
                value,
                expected,
                ..
            } => {
                write!(
                    f,
                    "bad value `{value}` for `{key}`: expected {expected} (default kept)"
                )
            }
            ConfigError::DuplicateKey { key, .. } => {
                write!(f, "`{key}` given again (last one wins)")
            }
            ConfigError::Incomplete { what, .. } => f.write_str(what),
        }
    }
}

/// Reads the configuration from the ramdisk bytes. Problems are passed to `report` and the
/// affected settings keep their defaults. Returns the configuration and the number of archive
/// members (0 without a ramdisk).
pub fn from_ramdisk<'a>(
    ramdisk: &'a [u8],
    report: &mut dyn FnMut(ConfigError<'a>),
) -> (RunConfig, usize) {
    if ramdisk.is_empty() {
        return (RunConfig::default(), 0);
    }
    let mut members = 0;
    let mut config = None;
    for entry in crate::devices::ramdisk::entries(ramdisk) {
        match entry {
            Ok(entry) => {
                members += 1;
                if entry.is(CONFIG_MEMBER) {
                    config = Some(entry.data);
                }
            }
            Err(e) => {
                report(ConfigError::CorruptArchive(e));
                break;
            }
        }
    }
    match config {
        None => (RunConfig::default(), members),
        Some(bytes) => match core::str::from_utf8(bytes) {
            Ok(text) => (parse(text, report), members),
            Err(_) => {
                report(ConfigError::NotUtf8);
                (RunConfig::default(), members)
            }
        },
    }
}

/// Parses `run.cfg` text.
pub fn parse<'a>(text: &'a str, report: &mut dyn FnMut(ConfigError<'a>)) -> RunConfig {
    let mut config = RunConfig {
        source: ConfigSource::Ramdisk,
        ..RunConfig::default()
    };
    let mut seen = [false; 26];
    // The results file's three keys, checked together after the last line.
    let mut results_place: Option<(u64, u64)> = None;
    let mut disk_signature: Option<u32> = None;
    let mut results_id: Option<[u8; 16]> = None;
    let mut results_line = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let Some((key, value)) = content.split_once('=') else {
            report(ConfigError::MissingEquals { line });
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let slot = match key {
            "on_end" => 0,
            "test" => 1,
            "timer_checks" => 2,
            "selftest" => 3,
            "quantum_us" => 4,
            "task_budget_ms" => 5,
            "events" => 6,
            "reps" => 7,
            "warmup" => 8,
            "overhead" => 9,
            "counter_preset" => 10,
            "test_pmu_fault" => 11,
            "canary" => 12,
            "usb_test_lba" => 13,
            "results_file" => 14,
            "disk_signature" => 15,
            "results_id" => 16,
            "sample" => 17,
            "counters" => 18,
            "mux_interval_us" => 19,
            "system" => 20,
            "test_smis" => 21,
            "pin" => 22,
            "test_phantom_cpu" => 23,
            "background" => 24,
            "cpus" => 25,
            _ => {
                report(ConfigError::UnknownKey { line, key });
                continue;
            }
        };
        if seen[slot] {
            report(ConfigError::DuplicateKey { line, key });
        }
        seen[slot] = true;
        let bad = |expected| ConfigError::BadValue {
            line,
            key,
            value,
            expected,
        };
        match slot {
            0 => match value {
                "qemu-exit" => config.on_end = OnEnd::QemuExit,
                "halt" => config.on_end = OnEnd::Halt,
                _ => report(bad("`qemu-exit` or `halt`")),
            },
            1 => match TestAction::ALL.iter().find(|(name, _)| *name == value) {
                Some((_, action)) => config.test = *action,
                None => report(bad(
                    "one of none, page-fault, panic, invalid-opcode, stack-overflow, hang, ring3, \
                     usb-disks, usb-write",
                )),
            },
            4 => match value.parse::<u32>() {
                Ok(us) if us <= QUANTUM_US_MAX => config.quantum_us = us,
                _ => report(bad("microseconds, 0 (off) to 1000000")),
            },
            5 => match value.parse::<u32>() {
                Ok(ms) if ms <= TASK_BUDGET_MS_MAX => config.task_budget_ms = ms,
                _ => report(bad("milliseconds, 0 (no budget) to 3600000")),
            },
            // Syntax and names are checked when the harness resolves them for this CPU (a bad
            // list is reported there, with the column); here only its size.
            6 => match value {
                "" | "none" => config.events = None,
                v if v.len() <= EVENTS_MAX => config.events = Some(String::from(v)),
                _ => report(bad("an event list of at most 1024 bytes")),
            },
            7 => match value.parse::<u32>() {
                Ok(n) if (1..=REPS_MAX).contains(&n) => config.reps = n,
                _ => report(bad("repetitions, 1 to 1000")),
            },
            8 => match value.parse::<u32>() {
                Ok(n) if n <= REPS_MAX => config.warmup = n,
                _ => report(bad("warm-up repetitions, 0 to 1000")),
            },
            9 => match Overhead::parse(value) {
                Some(o) => config.overhead = o,
                None => report(bad("`empty`, `diff` or `none`")),
            },
            10 => match value.parse::<u64>() {
                Ok(n) if n <= COUNTER_PRESET_MAX => config.counter_preset = n,
                _ => report(bad("events below the wrap, 0 (off) to 4294967295")),
            },
            11 => match value.parse::<u32>() {
                Ok(n) => config.test_pmu_fault = n,
                _ => report(bad("a switch-in number, 0 (off) or more")),
            },
            22 => match Pins::parse(value, crate::task::settings::PIN_CPU_MAX) {
                Some(p) => config.pins = p,
                None => report(bad(
                    "NAME@CPU or *@CPU, separated by commas (CPU an index from 0; at most 64)",
                )),
            },
            24 => match Pins::parse(value, crate::task::settings::PIN_CPU_MAX) {
                Some(p) if p.pins.iter().all(|(n, cpu)| n != "*" && *cpu >= 1) => {
                    config.background = p
                }
                _ => report(bad(
                    "NAME@CPU separated by commas (CPU 1 or more: the boot CPU runs the others)",
                )),
            },
            25 => match CpuChoice::parse(value, crate::task::settings::PIN_CPU_MAX) {
                Some(c) => config.cpus = Some(c),
                None => report(bad(
                    "`all`, `each-type` or CPU indexes and ranges in ascending order, e.g. 0,2-3",
                )),
            },
            23 => match value.parse::<u32>() {
                Ok(id) => config.test_phantom_cpu = Some(id),
                _ => report(bad("an APIC ID")),
            },
            21 => match value.parse::<u32>() {
                Ok(n) if n <= 100 => config.test_smis = n,
                _ => report(bad("SMIs per benchmark, 0 (off) to 100")),
            },
            13 => match value.parse::<u64>() {
                Ok(lba) => config.usb_test_lba = lba,
                _ => report(bad("a sector number")),
            },
            14 => {
                results_line = line;
                match value.split_once(':').and_then(|(a, b)| {
                    Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?))
                }) {
                    Some((lba, sectors))
                        if lba > 0 && sectors >= 2 && lba.checked_add(sectors).is_some() =>
                    {
                        results_place = Some((lba, sectors))
                    }
                    _ => report(bad(
                        "FIRST_SECTOR:SECTORS, at least 2 sectors after sector 0",
                    )),
                }
            }
            15 => {
                results_line = line;
                match value
                    .strip_prefix("0x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                {
                    Some(sig) => disk_signature = Some(sig),
                    None => report(bad("0x and 8 hex digits")),
                }
            }
            16 => {
                results_line = line;
                match parse_id(value) {
                    Some(id) => results_id = Some(id),
                    None => report(bad("32 hex digits")),
                }
            }
            17 => match parse_samples(value) {
                Some(specs) => config.sample = specs,
                None => report(bad(
                    "WORD@PERIOD[,WORD@PERIOD...]: a 0x-hex counters_configure entry and 1000 to \
                     2147483647 events, at most 8",
                )),
            },
            20 => match parse_words(value) {
                Some(words) => config.system = words,
                None => report(bad(
                    "counters_configure entries, 0x-hex, separated by commas, at most 16",
                )),
            },
            19 => match value.parse::<u32>() {
                Ok(us) if (10..=QUANTUM_US_MAX).contains(&us) => config.mux_interval_us = us,
                _ => report(bad("microseconds, 10 to 1000000")),
            },
            18 => match parse_permission(value) {
                Some(p) => config.counters = p,
                None => report(bad("`all`, `none` or payload names separated by commas")),
            },
            _ => match value {
                "on" | "true" | "yes" | "off" | "false" | "no" => {
                    let on = matches!(value, "on" | "true" | "yes");
                    match slot {
                        2 => config.timer_checks = on,
                        12 => config.canary = on,
                        _ => config.selftest = on,
                    }
                }
                _ => report(bad("`on` or `off`")),
            },
        }
    }
    match (results_place, disk_signature, results_id) {
        (Some((lba, sectors)), Some(disk_signature), Some(id)) => {
            config.results_file = Some(ResultsFile {
                lba,
                sectors,
                disk_signature,
                id,
            })
        }
        (None, None, None) => {}
        _ => report(ConfigError::Incomplete {
            line: results_line,
            what: "the results file needs all of results_file, disk_signature and results_id; \
                   it is not written",
        }),
    }
    config
}

/// 32 hex digits as 16 bytes.
fn parse_id(text: &str) -> Option<[u8; 16]> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut id = [0u8; 16];
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn parse_collect(text: &str) -> (RunConfig, Vec<std::string::String>) {
        let mut errors = Vec::new();
        let c = parse(text, &mut |e| {
            errors.push(std::format!("{:?}: {e}", e.line()))
        });
        (c, errors)
    }

    #[test]
    fn sample_and_counters_keys() {
        let (c, errors) =
            parse_collect("sample = 0x5100c0@10007, 0x51003c@100003\ncounters = a,b-2\n");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            c.sample,
            [
                SampleSpec {
                    word: 0x5100c0,
                    period: 10007
                },
                SampleSpec {
                    word: 0x51003c,
                    period: 100003
                }
            ]
        );
        assert!(c.counters.allows("a") && c.counters.allows("b-2") && !c.counters.allows("c"));
        let (c, errors) = parse_collect("system = 0x100c0, 0x200c0\nmux_interval_us = 200\n");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            (c.system.as_slice(), c.mux_interval_us),
            (&[0x100c0, 0x200c0][..], 200)
        );
        for bad in ["system = 100c0", "system = ", "mux_interval_us = 5"] {
            assert_eq!(parse_collect(bad).1.len(), 1, "{bad}");
        }
        let (c, _) = parse_collect("counters = none\n");
        assert!(!c.counters.allows("a"));
        assert!(RunConfig::default().counters.allows("a"));
        for bad in [
            "sample = 0x5100c0@0",
            "sample = 0x5100c0@999",
            "sample = 0x5100c0@2147483648",
            "sample = 5100c0@10",
            "sample = 0x5100c0",
            "sample = ",
            "sample = 0x1@1,0x1@1,0x1@1,0x1@1,0x1@1,0x1@1,0x1@1,0x1@1,0x1@1",
            "counters = a,,b",
            "counters = a b",
        ] {
            let (c, errors) = parse_collect(bad);
            assert_eq!(errors.len(), 1, "{bad}: {errors:?}");
            assert!(
                c.sample.is_empty() && c.counters == CounterPermission::All,
                "{bad}"
            );
        }
    }

    #[test]
    fn results_file_needs_all_three_keys() {
        let (c, errors) = parse_collect(
            "results_file = 2048:8192\ndisk_signature = 0x1234abcd\nresults_id = 000102030405060708090a0b0c0d0e0f\n",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let f = c.results_file.unwrap();
        assert_eq!(
            (f.lba, f.sectors, f.disk_signature),
            (2048, 8192, 0x1234_abcd)
        );
        assert_eq!(f.id[15], 15);
        let (c, errors) = parse_collect("results_file = 2048:8192\ndisk_signature = 0x1234abcd\n");
        assert!(c.results_file.is_none());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("Some(2)") && errors[0].contains("not written"));
        for bad in [
            "results_file = 0:10",
            "results_file = 5:1",
            "results_file = 18446744073709551615:2",
            "results_file = x",
            "disk_signature = 1234",
            "results_id = 00",
            "results_id = zz0102030405060708090a0b0c0d0e0f",
        ] {
            let (_, errors) = parse_collect(bad);
            assert!(
                errors.iter().any(|e| e.contains("bad value")),
                "{bad}: {errors:?}"
            );
        }
    }

    #[test]
    fn parses_keys_comments_and_blank_lines() {
        let (c, errors) = parse_collect(
            "# run\n\non_end = qemu-exit  # comment\ntest=page-fault\ntimer_checks = off\nselftest=on\n",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert!(c.selftest);
        assert_eq!(c.on_end, OnEnd::QemuExit);
        assert_eq!(c.test, TestAction::PageFault);
        assert!(!c.timer_checks);
        assert_eq!(c.source, ConfigSource::Ramdisk);
    }

    #[test]
    fn harness_keys() {
        let (c, errors) = parse_collect(
            "events = cycles,instructions:u\nreps = 100\nwarmup=0\noverhead = diff\n",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.events.as_deref(), Some("cycles,instructions:u"));
        assert_eq!((c.reps, c.warmup, c.overhead), (100, 0, Overhead::Diff));
        let (c, errors) =
            parse_collect("reps = 0\nwarmup = 1001\noverhead = some\nevents = none\n");
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert_eq!((c.reps, c.warmup), (REPS_DEFAULT, WARMUP_DEFAULT));
        assert_eq!(c.overhead, Overhead::Empty);
        assert_eq!(c.events, None);
    }

    #[test]
    fn the_test_only_counter_keys_parse_and_are_bounded() {
        let (c, errors) = parse_collect("counter_preset = 1000\ntest_pmu_fault = 3\n");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((c.counter_preset, c.test_pmu_fault), (1000, 3));
        for bad in [
            "counter_preset = 4294967296",
            "counter_preset = -1",
            "test_pmu_fault = x",
        ] {
            let (c, errors) = parse_collect(&std::format!("{bad}\n"));
            assert_eq!((c.counter_preset, c.test_pmu_fault), (0, 0), "{bad}");
            assert_eq!(errors.len(), 1, "{bad}");
        }
    }

    #[test]
    fn quantum_us_is_a_bounded_integer() {
        let (c, errors) = parse_collect("quantum_us = 250\n");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.quantum_us, 250);
        for bad in ["-1", "1000001", "1ms", ""] {
            let (c, errors) = parse_collect(&std::format!("quantum_us = {bad}\n"));
            assert_eq!(c.quantum_us, 0, "{bad}");
            assert_eq!(errors.len(), 1, "{bad}: {errors:?}");
        }
    }

    #[test]
    fn task_budget_ms_defaults_to_two_seconds_and_is_bounded() {
        let (c, errors) = parse_collect("");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.task_budget_ms, TASK_BUDGET_MS_DEFAULT);
        for (text, ms) in [("0", 0), ("20", 20), ("3600000", 3_600_000)] {
            let (c, errors) = parse_collect(&std::format!("task_budget_ms = {text}\n"));
            assert!(errors.is_empty(), "{errors:?}");
            assert_eq!(c.task_budget_ms, ms);
        }
        for bad in ["-1", "3600001", "2s", ""] {
            let (c, errors) = parse_collect(&std::format!("task_budget_ms = {bad}\n"));
            assert_eq!(c.task_budget_ms, TASK_BUDGET_MS_DEFAULT, "{bad}");
            assert_eq!(errors.len(), 1, "{bad}: {errors:?}");
        }
    }

    #[test]
    fn bad_lines_are_reported_with_line_numbers_and_defaults_kept() {
        let (c, errors) = parse_collect(
            "bogus\ncolour = red\ntest = explode\non_end = halt\non_end = qemu-exit\n",
        );
        assert_eq!(c.test, TestAction::None);
        assert_eq!(c.on_end, OnEnd::QemuExit);
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].starts_with("Some(1)") && errors[0].contains("key = value"));
        assert!(errors[1].starts_with("Some(2)") && errors[1].contains("unknown key `colour`"));
        assert!(errors[2].starts_with("Some(3)") && errors[2].contains("explode"));
        assert!(errors[3].starts_with("Some(5)") && errors[3].contains("again"));
    }

    #[test]
    fn every_test_action_name_round_trips() {
        for (name, action) in TestAction::ALL {
            let (c, errors) = parse_collect(&std::format!("test = {name}"));
            assert!(errors.is_empty());
            assert_eq!(c.test, action);
            assert_eq!(action.name(), name);
        }
    }

    #[test]
    fn empty_ramdisk_means_defaults() {
        let (c, members) = from_ramdisk(&[], &mut |_| panic!("no error expected"));
        assert_eq!(c, RunConfig::default());
        assert_eq!(members, 0);
    }

    #[test]
    fn garbage_ramdisk_is_reported_not_fatal() {
        let garbage = [0x5au8; 1024];
        let mut errors = Vec::new();
        let (c, _) = from_ramdisk(&garbage, &mut |e| errors.push(std::format!("{e}")));
        assert_eq!(c, RunConfig::default());
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    proptest::proptest! {
        #[test]
        fn no_text_panics(text in ".*") {
            let _ = parse(&text, &mut |_| {});
        }

        #[test]
        fn config_like_text_never_panics(
            lines in proptest::collection::vec("(on_end|test|timer_checks|x)? *=? *(qemu-exit|halt|panic|on|off|\\PC*)? *(#.*)?", 0..8)
        ) {
            let text = lines.join("\n");
            let _ = parse(&text, &mut |_| {});
        }
    }

    #[test]
    fn reads_a_real_tar_archive() {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, data) in [
            ("payloads/a.elf", &b"\x7fELF"[..]),
            (CONFIG_MEMBER, b"test = panic\non_end = qemu-exit\n"),
        ] {
            let mut header = tar::Header::new_ustar();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, data).unwrap();
        }
        let bytes = builder.into_inner().unwrap();
        let (c, members) = from_ramdisk(&bytes, &mut |e| panic!("unexpected error {e}"));
        assert_eq!(members, 2);
        assert_eq!(c.test, TestAction::Panic);
        assert_eq!(c.on_end, OnEnd::QemuExit);
        assert_eq!(c.source, ConfigSource::Ramdisk);
    }
}

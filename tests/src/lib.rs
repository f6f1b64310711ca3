//! Shared helpers for the QEMU integration tests in `tests/`.

pub mod cachesim;
pub mod linux;
pub mod stick;

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::{Accel, QemuOptions};
use baremark::records::Record;
use baremark::session::{self, BootRequest, RunOutcome};

/// Boots under TCG and returns everything observed. Panics (failing the test) if QEMU cannot
/// be started at all, with the reason.
pub fn boot(
    firmware: Firmware,
    config: RunConfig,
    timeout: Duration,
    icount: Option<u32>,
) -> RunOutcome {
    let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
    qemu.timeout = timeout;
    qemu.icount = icount;
    boot_with(qemu, config)
}

/// Boots with these QEMU options and returns everything observed; panics (failing the test)
/// if QEMU cannot be started, with the reason.
pub fn boot_with(qemu: QemuOptions, config: RunConfig) -> RunOutcome {
    let request = BootRequest {
        config,
        qemu,
        log: None,
    };
    session::boot(&request, &mut |_| {}).unwrap_or_else(|e| panic!("could not boot: {e:#}"))
}

/// The whole default suite with few repetitions (5, after 1 warm-up), `overhead` and `events`.
pub fn suite_config(overhead: baremark::image::Overhead, events: Option<&str>) -> RunConfig {
    let payloads = baremark::payloads::suite_payloads("default").expect("the default suite");
    RunConfig {
        timer_checks: false,
        payloads: payloads
            .iter()
            .map(|p| (p.name.to_string(), p.elf.to_vec()))
            .collect(),
        events: events.map(str::to_string),
        reps: Some(5),
        warmup: Some(1),
        overhead: Some(overhead),
        ..RunConfig::default()
    }
}

/// Boots a test configuration (`test = action`) under TCG with BIOS.
pub fn boot_test_action(action: &str, timeout: Duration) -> RunOutcome {
    let config = RunConfig {
        test: Some(action.to_string()),
        ..RunConfig::default()
    };
    boot(Firmware::Bios, config, timeout, None)
}

/// The record of type `kind`, or a panic that shows the serial tail.
pub fn expect_record<'a>(outcome: &'a RunOutcome, kind: &str) -> &'a Record {
    outcome.record(kind).unwrap_or_else(|| {
        panic!(
            "no `{kind}` record; verdict {:?}; serial tail:\n{}",
            outcome.verdict(),
            outcome.tail_text()
        )
    })
}

/// A hex-string field of a record as a number, or a panic naming it.
pub fn hex(record: &Record, key: &str) -> u64 {
    record.hex(key).unwrap_or_else(|| {
        panic!(
            "`{}` has no hex field `{key}`: {}",
            record.kind, record.value
        )
    })
}

/// The run succeeded, or a panic that shows the serial tail.
pub fn expect_success(outcome: &RunOutcome) {
    expect_success_in(outcome, "");
}

/// As [`expect_success`], the panic led by `context` (which of several runs it was, e.g.
/// `"IntelV5: "`).
pub fn expect_success_in(outcome: &RunOutcome, context: impl std::fmt::Display) {
    assert_eq!(
        outcome.verdict(),
        session::Verdict::Success,
        "{context}serial tail:\n{}",
        outcome.tail_text()
    );
}

/// The `end` record, checked to say the run ended `ok` with no unexpected interrupt.
pub fn expect_ok_end(outcome: &RunOutcome) -> &Record {
    let end = expect_record(outcome, "end");
    assert_eq!(end.str("status"), Some("ok"), "{}", end.value);
    assert_eq!(end.get("interrupts")["unexpected"], 0, "{}", end.value);
    end
}

/// The one record of `kind` for the task named `task` (its ramdisk name), or a panic that
/// shows the serial tail.
pub fn task_record<'a>(outcome: &'a RunOutcome, kind: &str, task: &str) -> &'a Record {
    let mut found = outcome
        .records
        .iter()
        .filter(|r| r.kind == kind && r.str("task") == Some(task));
    let record = found.next().unwrap_or_else(|| {
        panic!(
            "no `{kind}` record for `{task}`; serial tail:\n{}",
            outcome.tail_text()
        )
    });
    assert!(found.next().is_none(), "two `{kind}` records for `{task}`");
    record
}

/// The records of `kind` for the task with `task_index` `index`.
pub fn indexed_records<'a>(
    outcome: &'a RunOutcome,
    kind: &str,
    index: u64,
) -> impl Iterator<Item = &'a Record> + use<'a> {
    let kind = kind.to_string();
    outcome
        .records
        .iter()
        .filter(move |r| r.kind == kind && r.u64("task_index") == Some(index))
}

/// The one record of `kind` for the task with `task_index` `index`, or a panic that shows the
/// serial tail.
pub fn indexed_record<'a>(outcome: &'a RunOutcome, kind: &str, index: u64) -> &'a Record {
    let found: Vec<&Record> = indexed_records(outcome, kind, index).collect();
    assert_eq!(
        found.len(),
        1,
        "`{kind}` records of task_index {index}: {found:?}\nserial tail:\n{}",
        outcome.tail_text()
    );
    found[0]
}

/// A `fault` record's page-fault flags (`present`, `write`, `user`, ...); panics if it has none.
pub fn page_fault_flags(fault: &Record) -> Vec<&str> {
    fault
        .get("page_fault")
        .as_array()
        .unwrap_or_else(|| panic!("no page_fault flags: {}", fault.value))
        .iter()
        .filter_map(|v| v.as_str())
        .collect()
}

/// The `result` record of `bench` for `event`, or a panic that shows the serial tail.
pub fn bench_result<'a>(outcome: &'a RunOutcome, bench: &str, event: &str) -> &'a Record {
    outcome
        .records_of("result")
        .find(|r| r.str("bench") == Some(bench) && r.str("event") == Some(event))
        .unwrap_or_else(|| {
            panic!(
                "no result for {bench}/{event}; tail:\n{}",
                outcome.tail_text()
            )
        })
}

/// A statistic `s` (`min`, `median`, `stddev`, ...) of a `result` record's `object` (`raw`,
/// `per_iteration`, ...), or a panic naming it.
pub fn stat(r: &Record, object: &str, s: &str) -> f64 {
    r.get(object)[s]
        .as_f64()
        .unwrap_or_else(|| panic!("{object}.{s} missing: {}", r.value))
}

/// A `result` measured with `overhead` at exactly `expected` per iteration in every
/// repetition: every statistic of `per_iteration` is `expected`, `per_iteration` and `raw`
/// have no spread, and there was no outlier and no interrupt.
pub fn expect_exact_per_iteration(r: &Record, expected: f64, overhead: baremark::image::Overhead) {
    assert_eq!(r.str("overhead"), Some(overhead.name()), "{}", r.value);
    for s in ["min", "median", "mean", "max", "mean_20_80"] {
        assert_eq!(
            stat(r, "per_iteration", s),
            expected,
            "{overhead:?} {s}: {}",
            r.value
        );
    }
    assert_eq!(stat(r, "per_iteration", "stddev"), 0.0, "{}", r.value);
    assert_eq!(stat(r, "raw", "stddev"), 0.0, "{}", r.value);
    assert_eq!(r.u64("outliers"), Some(0), "{}", r.value);
    assert_eq!(r.u64("interrupts"), Some(0), "{}", r.value);
}

/// What the task named `task` states one iteration of its benchmark executes: the
/// `instructions_per_iteration` of its first `report`, as written (a number, or words where
/// the count is not one).
pub fn stated_instructions<'a>(outcome: &'a RunOutcome, task: &str) -> &'a str {
    outcome
        .records_of("report")
        .find(|r| r.str("task") == Some(task))
        .unwrap_or_else(|| panic!("{task}: no report"))
        .get("values")["instructions_per_iteration"]
        .as_str()
        .unwrap_or_else(|| panic!("{task}: no instructions_per_iteration"))
}

/// [`stated_instructions`] as a number.
pub fn instructions_per_iteration(outcome: &RunOutcome, task: &str) -> f64 {
    let stated = stated_instructions(outcome, task);
    stated
        .parse()
        .unwrap_or_else(|_| panic!("{task}: `{stated}` is not a number"))
}

/// The built-in payloads `names`, each under its own name, as [`RunConfig::payloads`] takes
/// them.
pub fn builtin_payloads(names: &[&str]) -> Vec<(String, Vec<u8>)> {
    names
        .iter()
        .map(|&name| {
            let p = baremark::payloads::builtin(name)
                .unwrap_or_else(|| panic!("no built-in payload `{name}`"));
            (name.to_string(), p.elf.to_vec())
        })
        .collect()
}

/// Plans the payload ELF `elf` as the kernel's loader does (`task::elf::plan`, default limits)
/// and checks the plan is one of a payload: its entry in an executable segment, no segment both
/// writable and executable (W^X), none below 0x400000. Panics naming `name` otherwise.
pub fn expect_loadable_payload(name: &str, elf: &[u8]) -> baremark_kernel::task::elf::LoadPlan {
    use baremark_kernel::task::elf::{Limits, plan};
    let load = plan(elf, &Limits::default()).unwrap_or_else(|e| panic!("payload {name}: {e}"));
    assert!(
        load.segments
            .iter()
            .any(|s| s.executable && s.contains(load.entry)),
        "{name}: the entry is in an executable segment"
    );
    assert!(
        load.segments.iter().all(|s| !(s.writable && s.executable)),
        "{name}: W^X"
    );
    assert!(
        load.segments.iter().all(|s| s.page_start >= 0x40_0000),
        "{name}: no segment below 0x400000"
    );
    load
}

/// Boots under TCG on baremark's emulated PMU (QEMU built from `emulator/`, cached; the first
/// call builds it) with `-icount shift=0`. Panics with the reason if that QEMU cannot be had.
pub fn boot_emulated(
    firmware: Firmware,
    config: RunConfig,
    timeout: Duration,
    model: baremark::qemu::PmuModel,
) -> RunOutcome {
    let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
    qemu.timeout = timeout;
    qemu.icount = Some(0);
    qemu.pmu_model = Some(model);
    qemu.binary = Some(
        baremark::qemu::emulated_pmu_qemu()
            .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}")),
    );
    boot_with(qemu, config)
}

/// A BIOS boot of `payloads` (built-in payloads by name: `(ramdisk name, built-in)`) with
/// `extra` run.cfg lines on the emulated PMU `model`, no timer checks, 180 s; panics with the
/// serial tail unless the run succeeded.
pub fn boot_payloads_emulated(
    model: baremark::qemu::PmuModel,
    payloads: &[(&str, &str)],
    extra: &[&str],
    budget_ms: Option<u32>,
) -> RunOutcome {
    let config = RunConfig {
        timer_checks: false,
        task_budget_ms: budget_ms,
        extra_lines: extra.iter().map(|l| l.to_string()).collect(),
        payloads: payloads
            .iter()
            .map(|&(name, elf)| {
                let p = baremark::payloads::builtin(elf)
                    .unwrap_or_else(|| panic!("no built-in payload {elf}"));
                (name.to_string(), p.elf.to_vec())
            })
            .collect(),
        ..RunConfig::default()
    };
    boot_emulated_ok(config, Duration::from_secs(180), model)
}

/// A BIOS boot of `config` on the emulated PMU `model` ([`boot_emulated`]); panics with the
/// serial tail unless the run succeeded.
pub fn boot_emulated_ok(
    config: RunConfig,
    timeout: Duration,
    model: baremark::qemu::PmuModel,
) -> RunOutcome {
    let outcome = boot_emulated(Firmware::Bios, config, timeout, model);
    expect_success_in(&outcome, format_args!("{model:?}: "));
    outcome
}

/// Every `key=value` the task with `task_index` `index` reported (`report` records with
/// `values`); panics if it reported none.
pub fn reported_values(
    outcome: &RunOutcome,
    index: u64,
) -> std::collections::BTreeMap<String, String> {
    let mut values = std::collections::BTreeMap::new();
    for r in outcome
        .records_of("report")
        .filter(|r| r.u64("task_index") == Some(index))
    {
        let obj = r
            .get("values")
            .as_object()
            .unwrap_or_else(|| panic!("a report of text, not values: {}", r.value));
        for (k, v) in obj {
            let v = v
                .as_str()
                .unwrap_or_else(|| panic!("`{k}` is not a string: {}", r.value));
            values.insert(k.clone(), v.to_string());
        }
    }
    assert!(
        !values.is_empty(),
        "no report of task #{index}: {}",
        outcome.tail_text()
    );
    values
}

/// A reported value (`reported_values`) as a number; panics if it is missing or not one.
pub fn num(values: &std::collections::BTreeMap<String, String>, key: &str) -> u64 {
    values
        .get(key)
        .unwrap_or_else(|| panic!("no `{key}` in {values:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("`{key}` is not a number: {values:?}"))
}

/// The run succeeded and the harness refused nothing, or a panic that shows the serial tail.
pub fn expect_clean_harness_run(outcome: &RunOutcome) {
    expect_success(outcome);
    assert_eq!(outcome.records_of("harness_error").count(), 0);
}

/// As [`boot_emulated`], with extra properties on the QEMU CPU, after the model's (e.g.
/// `x-pmu-defect=no-pmi`, the emulator's deliberately broken PMU).
pub fn boot_emulated_cpu_props(
    firmware: Firmware,
    config: RunConfig,
    timeout: Duration,
    model: baremark::qemu::PmuModel,
    props: &str,
) -> RunOutcome {
    let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
    qemu.timeout = timeout;
    qemu.icount = Some(0);
    qemu.pmu_model = Some(model);
    qemu.cpu = Some(format!("{},{props}", model.default_cpu()));
    qemu.binary = Some(
        baremark::qemu::emulated_pmu_qemu()
            .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}")),
    );
    boot_with(qemu, config)
}

/// Boots `config` on the emulated PMU `model` with its micro-architecture model
/// (`--uarch`: QEMU's `pmu-uarch=on`), `props` added to the CPU model's properties when given
/// (e.g. the access trace); fails with the serial tail unless the run succeeded.
pub fn boot_emulated_uarch(
    config: RunConfig,
    timeout: Duration,
    model: baremark::qemu::PmuModel,
    props: Option<&str>,
) -> RunOutcome {
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = timeout;
    qemu.icount = Some(0);
    qemu.pmu_model = Some(model);
    qemu.pmu_uarch = true;
    if let Some(props) = props {
        qemu.cpu = Some(format!("{},{props}", model.default_cpu()));
    }
    qemu.binary = Some(
        baremark::qemu::emulated_pmu_qemu()
            .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}")),
    );
    let outcome = boot_with(qemu, config);
    expect_success_in(&outcome, format_args!("{model:?} with --uarch: "));
    outcome
}

/// The median of some timings (the upper middle one of an even count).
pub fn median_duration(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

/// One boot of the floor image ([`baremark::image::floor_image`]).
#[derive(Clone, Copy, Debug)]
pub struct FloorBoot {
    /// From QEMU's start to the floor's line on the serial port.
    pub line_after: Duration,
    /// From QEMU's start to its exit.
    pub exit_after: Duration,
}

/// Boots the floor image with the QEMU binary and command line of a BIOS boot under TCG (as
/// [`boot`] builds them), timed as `session::boot` times records: from just before QEMU's
/// start to the line's arrival on its stdout. Errors say what went wrong.
pub fn boot_floor(timeout: Duration) -> Result<FloorBoot, String> {
    use std::io::BufRead;
    use std::process::Stdio;
    use std::time::Instant;

    let image = std::env::temp_dir().join(format!("baremark-floor-{}.img", std::process::id()));
    std::fs::write(&image, baremark::image::floor_image())
        .map_err(|e| format!("writing {}: {e}", image.display()))?;
    let qemu = baremark::qemu::qemu_binary().map_err(|e| format!("{e:#}"))?;
    let opts = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    let mut cmd = baremark::qemu::command(&qemu, &image, &opts, &std::env::temp_dir())
        .map_err(|e| format!("{e:#}"))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {}: {e}", qemu.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send((line, start.elapsed())).is_err() {
                break;
            }
        }
    });
    let deadline = start + timeout;
    let mut line_after = None;
    let result = loop {
        if let Ok(Some(status)) = child.try_wait() {
            let exit_after = start.elapsed();
            // The reader may not have read QEMU's last output yet (under load it lags the
            // exit): take every line until it reaches the end of the pipe, within a bound.
            let drain_until = Instant::now() + Duration::from_secs(10);
            while let Ok((line, at)) =
                rx.recv_timeout(drain_until.saturating_duration_since(Instant::now()))
            {
                if line.trim_end() == baremark::image::FLOOR_LINE {
                    line_after.get_or_insert(at);
                }
            }
            break match (line_after, status.code()) {
                (Some(line_after), Some(baremark::qemu::QEMU_EXIT_SUCCESS)) => Ok(FloorBoot {
                    line_after,
                    exit_after,
                }),
                (line, _) => Err(format!(
                    "the floor image ended with {status}, its line {}",
                    if line.is_some() { "seen" } else { "not seen" }
                )),
            };
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break Err(format!("the floor image did not end within {timeout:?}"));
        }
        match rx.recv_timeout(Duration::from_millis(1)) {
            Ok((line, at)) if line.trim_end() == baremark::image::FLOOR_LINE => {
                line_after.get_or_insert(at);
            }
            _ => {}
        }
    };
    let _ = std::fs::remove_file(&image);
    result
}

/// As [`boot`], also returning when (from QEMU's start) the first serial line containing
/// `needle` that is not a record arrived, e.g. OVMF's `BdsDxe: starting Boot0001` when it
/// hands over to the bootloader. Text lines carry no time of their own: theirs is taken
/// against the first record's, both seen as they arrive.
pub fn boot_with_text_time(
    firmware: Firmware,
    config: RunConfig,
    timeout: Duration,
    needle: &str,
) -> (RunOutcome, Option<Duration>) {
    use std::time::Instant;
    let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
    qemu.timeout = timeout;
    let request = BootRequest {
        config,
        qemu,
        log: None,
    };
    let mut text_seen: Option<Instant> = None;
    let mut first_record: Option<(Instant, Duration)> = None;
    let outcome = session::boot(&request, &mut |event| match event {
        session::Event::Text(t) if text_seen.is_none() && t.contains(needle) => {
            text_seen = Some(Instant::now());
        }
        session::Event::Record(_, at) if first_record.is_none() => {
            first_record = Some((Instant::now(), at));
        }
        _ => {}
    })
    .unwrap_or_else(|e| panic!("could not boot: {e:#}"));
    let at = match (text_seen, first_record) {
        (Some(seen), Some((record_seen, record_at))) if seen <= record_seen => {
            record_at.checked_sub(record_seen - seen)
        }
        _ => None,
    };
    (outcome, at)
}

/// The fuzzer's result counts, as its report names them: values, then each ABI error code.
pub const FUZZ_RESULTS: [&str; 13] = [
    "ok",
    "einval",
    "efault",
    "enosys",
    "enoent",
    "ebusy",
    "enospc",
    "eaborted",
    "ecounters",
    "enomem",
    "elimit",
    "enodev",
    "eperm",
];

/// One run of the syscall fuzzer (`fuzz-syscalls`, docs/reliability.md).
pub struct FuzzRun {
    pub outcome: RunOutcome,
    /// The raw serial stream, every byte (scanned for the canary).
    pub serial: Vec<u8>,
    /// The fuzzer's final `report` values.
    pub report: std::collections::BTreeMap<String, String>,
}

/// Boots `fuzz-syscalls` with `seed=SEED calls=CALLS`, the kernel's canary planted, no
/// watchdog, under TCG (BIOS), keeping the whole serial stream; with `pmu`, on that emulated
/// PMU model (so the task's hardware counters are programmed by the calls too).
pub fn fuzz_syscalls(
    seed: u64,
    calls: u64,
    timeout: Duration,
    pmu: Option<baremark::qemu::PmuModel>,
) -> FuzzRun {
    let elf = baremark::payloads::builtin("fuzz-syscalls").expect("the fuzzer is built in");
    let config = RunConfig {
        timer_checks: false,
        canary: true,
        task_budget_ms: Some(0),
        payloads: vec![("fuzz-syscalls".to_string(), elf.elf.to_vec())],
        extra_members: vec![(
            "args/fuzz-syscalls".to_string(),
            format!("seed={seed} calls={calls}").into_bytes(),
        )],
        ..RunConfig::default()
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let log = dir.path().join("serial.log");
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = timeout;
    if let Some(model) = pmu {
        qemu.icount = Some(0);
        qemu.pmu_model = Some(model);
        qemu.binary = Some(
            baremark::qemu::emulated_pmu_qemu()
                .unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}")),
        );
    }
    let request = BootRequest {
        config,
        qemu,
        log: Some(log.clone()),
    };
    let outcome =
        session::boot(&request, &mut |_| {}).unwrap_or_else(|e| panic!("could not boot: {e:#}"));
    let serial = std::fs::read(&log).expect("the serial log");
    let report = outcome
        .records_of("report")
        .filter(|r| r.str("task") == Some("fuzz-syscalls"))
        .filter_map(|r| r.get("values").as_object().cloned())
        .filter(|v| v.contains_key("calls"))
        .last()
        .map(|v| {
            v.into_iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    FuzzRun {
        outcome,
        serial,
        report,
    }
}

/// Where 8 bytes of the kernel's repeating canary (`task::abi::CANARY_PATTERN`, at any phase)
/// appear in `bytes`.
pub fn find_canary(bytes: &[u8]) -> Option<usize> {
    let p = baremark_kernel::task::abi::CANARY_PATTERN;
    let windows: Vec<[u8; 8]> = (0..16)
        .map(|k| std::array::from_fn(|j| p[(k + j) % 16]))
        .collect();
    bytes
        .windows(8)
        .position(|w| windows.iter().any(|c| c[..] == *w))
}

/// The `baremark` command-line tool, as users run it: built by cargo (a no-op when `cargo test
/// --workspace` already built it), found where cargo says it put it.
pub fn baremark_cli() -> std::process::Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["build", "-q", "-p", "baremark", "--bin", "baremark"])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("running cargo to build the baremark tool");
    assert!(out.status.success(), "building the baremark tool failed");
    let exe = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "baremark")
        .find_map(|m| m["executable"].as_str().map(std::path::PathBuf::from))
        .expect("cargo named the baremark executable");
    std::process::Command::new(exe)
}

/// A QMP connection to a running QEMU (started with [`qmp_args`]): screendumps for tests that
/// read the screen (tests/tests/screen.rs; any test booting without a serial port).
pub struct Qmp {
    reader: std::io::BufReader<std::os::unix::net::UnixStream>,
    writer: std::os::unix::net::UnixStream,
}

/// QEMU arguments for a QMP server on the unix socket `socket` (QEMU does not wait for it).
pub fn qmp_args(socket: &std::path::Path) -> Vec<String> {
    vec![
        "-qmp".into(),
        format!("unix:{},server=on,wait=off", socket.display()),
    ]
}

impl Qmp {
    /// Connects (retrying until `timeout`: QEMU creates the socket as it starts) and leaves
    /// the greeting's capability negotiation done.
    pub fn connect(socket: &std::path::Path, timeout: Duration) -> Result<Self, String> {
        use std::time::Instant;
        let until = Instant::now() + timeout;
        let stream = loop {
            match std::os::unix::net::UnixStream::connect(socket) {
                Ok(s) => break s,
                Err(e) if Instant::now() >= until => {
                    return Err(format!("connecting to QMP at {}: {e}", socket.display()));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        let mut qmp = Qmp {
            reader: std::io::BufReader::new(stream),
            writer,
        };
        let greeting = qmp.read()?;
        if greeting.get("QMP").is_none() {
            return Err(format!("not a QMP greeting: {greeting}"));
        }
        qmp.execute("qmp_capabilities", serde_json::json!({}))?;
        Ok(qmp)
    }

    fn read(&mut self) -> Result<serde_json::Value, String> {
        use std::io::BufRead;
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err("QMP connection closed".into()),
            Ok(_) => serde_json::from_str(&line).map_err(|e| format!("QMP sent {line:?}: {e}")),
            Err(e) => Err(format!("reading QMP: {e}")),
        }
    }

    /// Runs one command; returns its `return` value (events in between are skipped).
    pub fn execute(
        &mut self,
        command: &str,
        arguments: serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        use std::io::Write;
        let request = serde_json::json!({"execute": command, "arguments": arguments});
        writeln!(self.writer, "{request}").map_err(|e| format!("writing to QMP: {e}"))?;
        loop {
            let reply = self.read()?;
            if let Some(r) = reply.get("return") {
                return Ok(r.clone());
            }
            if let Some(e) = reply.get("error") {
                return Err(format!("QMP {command}: {e}"));
            }
        }
    }

    /// The screen now, as QEMU's `screendump` writes it (PPM), through a file in `scratch`.
    pub fn screendump(
        &mut self,
        scratch: &std::path::Path,
    ) -> Result<baremark_screen::host::Frame, String> {
        let file = scratch.join("screen.ppm");
        let _ = std::fs::remove_file(&file);
        self.execute(
            "screendump",
            serde_json::json!({"filename": file.to_string_lossy()}),
        )?;
        let bytes = std::fs::read(&file).map_err(|e| format!("reading the screendump: {e}"))?;
        baremark_screen::host::parse_ppm(&bytes)
    }

    /// Takes screendumps until one decodes and `done` accepts it, or `timeout` passes (then
    /// the last decoding error, or the last screen's text, says why).
    pub fn wait_for_screen(
        &mut self,
        scratch: &std::path::Path,
        timeout: Duration,
        mut done: impl FnMut(&baremark_screen::host::Decoded) -> bool,
    ) -> Result<(baremark_screen::host::Frame, baremark_screen::host::Decoded), String> {
        let until = std::time::Instant::now() + timeout;
        loop {
            let frame = self.screendump(scratch)?;
            let why = match baremark_screen::host::decode(&frame) {
                Ok(d) if done(&d) => return Ok((frame, d)),
                Ok(d) => format!(
                    "the screen did not settle; it shows:\n{}",
                    d.lines().join("\n")
                ),
                Err(e) => format!("the screen does not decode: {e}"),
            };
            if std::time::Instant::now() >= until {
                let keep = scratch.join("last-screen.ppm");
                let _ = std::fs::write(&keep, frame.to_ppm());
                return Err(format!("{why}\n(screen kept in {})", keep.display()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Boots under TCG with a QMP socket and, once the `end` record arrived, waits (up to 30 s)
/// for a screen that decodes and that `done` accepts (the kernel draws its final screen
/// after `end`; `on_end = halt` keeps it there). `extra_args` go to QEMU.
pub fn boot_with_screen(
    firmware: Firmware,
    config: RunConfig,
    timeout: Duration,
    icount: Option<u32>,
    extra_args: &[&str],
    mut done: impl FnMut(&baremark_screen::host::Decoded) -> bool,
) -> (
    RunOutcome,
    Result<(baremark_screen::host::Frame, baremark_screen::host::Decoded), String>,
) {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let socket = scratch.path().join("qmp.sock");
    let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
    qemu.timeout = timeout;
    qemu.icount = icount;
    qemu.extra_args = qmp_args(&socket);
    qemu.extra_args
        .extend(extra_args.iter().map(|a| a.to_string()));
    let request = BootRequest {
        config,
        qemu,
        log: None,
    };
    let mut screen = Err("no end record arrived".to_string());
    let outcome = session::boot(&request, &mut |event| {
        if let session::Event::Record(r, _) = event
            && r.kind == "end"
        {
            screen = Qmp::connect(&socket, Duration::from_secs(10)).and_then(|mut q| {
                q.wait_for_screen(scratch.path(), Duration::from_secs(30), &mut done)
            });
        }
    })
    .unwrap_or_else(|e| panic!("could not boot: {e:#}"));
    // To look at the screen: BAREMARK_SCREEN_KEEP=FILE.ppm keeps the last screendump.
    if let (Some(keep), Ok((frame, _))) = (std::env::var_os("BAREMARK_SCREEN_KEEP"), &screen) {
        let _ = std::fs::write(keep, frame.to_ppm());
    }
    if let Err(e) = &mut screen
        && e.contains("kept in")
    {
        // Keep the failed screen past the temporary directory.
        let keep = std::env::temp_dir().join(format!("baremark-screen-{}.ppm", std::process::id()));
        let _ = std::fs::copy(scratch.path().join("last-screen.ppm"), &keep);
        e.push_str(&format!(" -> {}", keep.display()));
    }
    (outcome, screen)
}

/// Each `result` record's median per iteration, as the kernel collects it for its final
/// screen (`screen::median`): the summary the screen must show.
pub fn screen_summary<'a>(
    records: impl IntoIterator<Item = &'a Record>,
) -> baremark_screen::Summary {
    let mut s = baremark_screen::Summary::new();
    for r in records.into_iter().filter(|r| r.kind == "result") {
        let stats = match r.get("per_iteration") {
            serde_json::Value::Null => r.get("value"),
            v => v,
        };
        let median = stats.get("median").and_then(serde_json::Value::as_f64);
        let supported = r.get("supported").as_bool() == Some(true);
        s.add(
            r.str("bench").unwrap_or(""),
            r.str("event").unwrap_or(""),
            median.filter(|_| supported),
        );
    }
    s
}

/// A harness result's statistic (`raw`, `per_iteration`, ...): its median, for benchmark
/// `bench` and `event` (the benchmarks, harness-costs and linux-vs-baremark, read them so).
pub fn figure(outcome: &RunOutcome, bench: &str, event: &str, object: &str) -> Option<f64> {
    outcome
        .records_of("result")
        .find(|r| r.str("bench") == Some(bench) && r.str("event") == Some(event))
        .and_then(|r| r.get(object)["median"].as_f64())
}

/// A number a payload declared in its report for benchmark `bench` (`key=value`).
pub fn declared(outcome: &RunOutcome, bench: &str, key: &str) -> Option<f64> {
    outcome.records_of("report").find_map(|r| {
        let values = r.get("values");
        if values["bench"].as_str() != Some(bench) {
            return None;
        }
        values[key].as_str().and_then(|v| v.trim().parse().ok())
    })
}

/// One operation of a suite payload's loop: per iteration, less the loop's own instructions and
/// its once-per-region prologue (both as the payload declares them), as harness-costs and
/// linux-vs-baremark take them.
pub fn per_op(outcome: &RunOutcome, bench: &str, event: &str) -> Option<f64> {
    let per_iteration = figure(outcome, bench, event, "per_iteration")?;
    let iterations = outcome
        .records_of("bench_start")
        .find(|r| r.str("bench") == Some(bench))
        .and_then(|r| r.get("iterations").as_f64())?;
    let prologue = declared(outcome, bench, "prologue_instructions").unwrap_or(0.0);
    Some(
        per_iteration
            - declared(outcome, bench, "loop_instructions").unwrap_or(3.0)
            - prologue / iterations,
    )
}

//! One boot: build the image, start QEMU, stream and parse the serial records as they arrive,
//! and decide the outcome from the `end` record and QEMU's exit status.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::image::{self, Firmware, RunConfig};
use crate::qemu::{self, Accel, QEMU_EXIT_FAILURE, QEMU_EXIT_SUCCESS, QemuOptions};
use crate::records::{Line, Record, parse_line};
use crate::render::label;

/// How many raw lines to keep for error messages.
const TAIL_LINES: usize = 40;

/// What one boot asks for.
#[derive(Clone, Debug)]
pub struct BootRequest {
    pub config: RunConfig,
    pub qemu: QemuOptions,
    /// Keep the raw serial stream here.
    pub log: Option<PathBuf>,
}

/// Something that happened during a boot, for live display.
#[derive(Debug)]
pub enum Event<'a> {
    /// A record arrived, this long after QEMU started.
    Record(&'a Record, Duration),
    /// A non-record line arrived.
    Text(&'a str),
}

/// How a boot ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `end` record with status ok, and QEMU exited with 33 (or the kernel halts by config).
    Success,
    /// The kernel reported failure (`end` with status fail).
    KernelFailure(String),
    /// No `end` record: QEMU died or the kernel crashed without reporting.
    NoEndRecord(String),
    /// The timeout passed first.
    Timeout,
}

/// Everything observed during one boot.
#[derive(Debug)]
pub struct RunOutcome {
    pub firmware: Firmware,
    pub accel: Accel,
    pub records: Vec<Record>,
    pub text: Vec<String>,
    /// QEMU's exit status (`None` if it did not exit by itself).
    pub qemu_status: Option<i32>,
    /// The signal that ended QEMU, if one did (QEMU aborts on some KVM errors).
    pub qemu_signal: Option<i32>,
    /// The time limit that applied.
    pub timeout: Duration,
    pub timed_out: bool,
    pub first_record_after: Option<Duration>,
    pub end_record_after: Option<Duration>,
    pub total: Duration,
    /// The last raw lines of the serial stream.
    pub tail: Vec<String>,
    /// QEMU's standard error.
    pub qemu_stderr: String,
    pub command_line: String,
}

impl RunOutcome {
    /// The first record of type `kind`.
    pub fn record(&self, kind: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.kind == kind)
    }
    /// All records of type `kind`.
    pub fn records_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
        self.records.iter().filter(move |r| r.kind == kind)
    }
    /// The verdict of the run.
    pub fn verdict(&self) -> Verdict {
        if self.timed_out {
            return Verdict::Timeout;
        }
        match self.record("end") {
            Some(end) if end.str("status") == Some("ok") => match self.qemu_status {
                Some(QEMU_EXIT_SUCCESS) => Verdict::Success,
                // A kernel told to halt keeps QEMU running; that is its normal end.
                None if end.str("on_end") == Some("halt") => Verdict::Success,
                None => {
                    Verdict::KernelFailure("the kernel asked QEMU to exit, but QEMU did not".into())
                }
                Some(other) => Verdict::KernelFailure(format!(
                    "end record says ok but QEMU exited with {other}"
                )),
            },
            Some(end) => {
                Verdict::KernelFailure(end.str("reason").unwrap_or("no reason given").to_string())
            }
            None => Verdict::NoEndRecord(match (self.qemu_status, self.qemu_signal) {
                (Some(QEMU_EXIT_FAILURE), _) => {
                    "QEMU exited with the failure status but no end record arrived".into()
                }
                (Some(s), _) => {
                    format!(
                        "QEMU exited with status {s} before an end record (crash, triple fault or QEMU error)"
                    )
                }
                (None, Some(sig)) => format!("QEMU died from signal {sig} before an end record"),
                (None, None) => "QEMU was stopped before an end record".into(),
            }),
        }
    }
    /// The tail of the serial log, for error messages.
    pub fn tail_text(&self) -> String {
        let mut s = String::new();
        for line in &self.tail {
            s.push_str("  | ");
            s.push_str(line);
            s.push('\n');
        }
        if !self.qemu_stderr.trim().is_empty() {
            s.push_str("  qemu stderr:\n");
            for line in self.qemu_stderr.lines().take(20) {
                s.push_str("  ! ");
                s.push_str(line);
                s.push('\n');
            }
        }
        s
    }
}

/// The closing lines of `baremark run`: how QEMU ran and the verdict.
pub fn outcome_lines(outcome: &RunOutcome, accel_reason: &str) -> String {
    let secs = |d: Option<Duration>| {
        d.map_or("never".to_string(), |d| format!("{:.2} s", d.as_secs_f64()))
    };
    let mut out = format!(
        "{}{} ({accel_reason}) | {} firmware\n{}first record after {} | end record after {} | QEMU exit status {} | total {:.2} s",
        label("qemu"),
        outcome.accel.name(),
        outcome.firmware.name(),
        label(""),
        secs(outcome.first_record_after),
        secs(outcome.end_record_after),
        match (outcome.qemu_status, outcome.qemu_signal) {
            (Some(status), _) => status.to_string(),
            (None, Some(signal)) => format!("none (signal {signal})"),
            (None, None) => "none (stopped by baremark)".to_string(),
        },
        outcome.total.as_secs_f64()
    );
    match outcome.verdict() {
        Verdict::Success => {}
        Verdict::KernelFailure(reason) => {
            let _ = write!(
                out,
                "\n{}the kernel reported failure: {reason}",
                label("result")
            );
        }
        Verdict::NoEndRecord(reason) => {
            let _ = write!(
                out,
                "\n{}no end record: {reason}\n{}last serial lines:\n{}",
                label("result"),
                label(""),
                outcome.tail_text()
            );
        }
        Verdict::Timeout => {
            let _ = write!(
                out,
                "\n{}timed out: no end record within the {} s limit (the kernel hangs?)\n{}last serial lines:\n{}",
                label("result"),
                outcome.timeout.as_secs(),
                label(""),
                outcome.tail_text()
            );
        }
    }
    out
}

/// Builds the image for `request` and boots it, calling `on_event` for each line as it arrives.
pub fn boot(request: &BootRequest, on_event: &mut dyn FnMut(Event<'_>)) -> Result<RunOutcome> {
    assert!(
        request.qemu.accel != Accel::Auto,
        "resolve the accelerator first (resolve_accel)"
    );
    let scratch = tempfile::tempdir().context("creating a temporary directory")?;
    let image = scratch
        .path()
        .join(format!("baremark-{}.img", request.qemu.firmware.name()));
    image::build_image(request.qemu.firmware, &request.config, &image)?;
    let qemu_bin = match &request.qemu.binary {
        Some(b) => b.clone(),
        None => qemu::qemu_binary()?,
    };
    let mut cmd = qemu::command(&qemu_bin, &image, &request.qemu, scratch.path())?;
    let command_line = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut log = match &request.log {
        Some(path) => Some(
            std::fs::File::create(path)
                .with_context(|| format!("creating log file {}", path.display()))?,
        ),
        None => None,
    };

    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", qemu_bin.display()))?;
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut reader = BufReader::new(&mut stdout);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    let deadline = start + request.qemu.timeout;
    let mut outcome = RunOutcome {
        firmware: request.qemu.firmware,
        accel: request.qemu.accel,
        records: Vec::new(),
        text: Vec::new(),
        qemu_status: None,
        qemu_signal: None,
        timeout: request.qemu.timeout,
        timed_out: false,
        first_record_after: None,
        end_record_after: None,
        total: Duration::ZERO,
        tail: Vec::new(),
        qemu_stderr: String::new(),
        command_line,
    };
    let mut tail = VecDeque::with_capacity(TAIL_LINES);
    // After the end record QEMU should exit at once (isa-debug-exit); give it a moment, then
    // stop waiting (a kernel configured to halt keeps QEMU running).
    let mut grace_deadline: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if now >= deadline {
            // Past the deadline without an end record is a timeout; with one, QEMU merely
            // did not exit (the kernel halts), which the verdict judges from the record.
            outcome.timed_out = outcome.end_record_after.is_none();
            break;
        }
        if grace_deadline.is_some_and(|g| now >= g) {
            break;
        }
        let wait_until = grace_deadline.map_or(deadline, |g| g.min(deadline));
        match rx.recv_timeout(wait_until - now) {
            Ok(bytes) => {
                let at = start.elapsed();
                if let Some(log) = log.as_mut() {
                    log.write_all(&bytes).context("writing the serial log")?;
                }
                let raw = String::from_utf8_lossy(&bytes).into_owned();
                let line = raw.trim_end_matches(['\r', '\n']).to_string();
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line.clone());
                match parse_line(&line) {
                    Line::Record(record) => {
                        outcome.first_record_after.get_or_insert(at);
                        let is_end = record.kind == "end";
                        on_event(Event::Record(&record, at));
                        outcome.records.push(record);
                        if is_end && outcome.end_record_after.is_none() {
                            outcome.end_record_after = Some(at);
                            grace_deadline = Some(Instant::now() + Duration::from_secs(5));
                        }
                    }
                    Line::Text(text) => {
                        if !text.trim().is_empty() {
                            on_event(Event::Text(&text));
                            outcome.text.push(text);
                        }
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    (outcome.qemu_status, outcome.qemu_signal) = finish(&mut child, Duration::from_secs(2));
    let _ = reader.join();
    outcome.qemu_stderr = err_reader.join().unwrap_or_default();
    outcome.total = start.elapsed();
    outcome.tail = tail.into_iter().collect();
    Ok(outcome)
}

/// Waits up to `grace` for QEMU to exit, then kills it. Returns its exit status and the signal
/// that ended it, if it ended by itself.
fn finish(child: &mut Child, grace: Duration) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    let until = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (status.code(), status.signal()),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return (None, None);
            }
        }
    }
}

/// Decides between KVM and TCG for `Accel::Auto`: KVM when /dev/kvm opens and a quick probe
/// boot with `-cpu host` reaches a successful end record; otherwise TCG. Returns the choice
/// and the reason, for the user.
pub fn resolve_accel(requested: Accel, base: &QemuOptions) -> (Accel, String) {
    match requested {
        Accel::Kvm => (Accel::Kvm, "requested with --accel kvm".into()),
        Accel::Tcg => (Accel::Tcg, "requested with --accel tcg".into()),
        Accel::Auto => {
            if let Err(why) = qemu::kvm_device_usable() {
                return (Accel::Tcg, format!("KVM not usable: {why}"));
            }
            let mut probe_opts = base.clone();
            probe_opts.accel = Accel::Kvm;
            probe_opts.firmware = Firmware::Bios;
            probe_opts.icount = None;
            probe_opts.timeout = Duration::from_secs(15);
            let probe = BootRequest {
                config: RunConfig {
                    timer_checks: false,
                    ..RunConfig::default()
                },
                qemu: probe_opts,
                log: None,
            };
            match boot(&probe, &mut |_| {}) {
                Ok(outcome) => match outcome.verdict() {
                    Verdict::Success => (
                        Accel::Kvm,
                        format!(
                            "/dev/kvm works and a probe boot succeeded in {:.2} s",
                            outcome.total.as_secs_f64()
                        ),
                    ),
                    verdict => {
                        let detail = outcome
                            .qemu_stderr
                            .lines()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("")
                            .trim()
                            .to_string();
                        let why = match verdict {
                            Verdict::Timeout => "the probe boot timed out after 15 s".to_string(),
                            Verdict::KernelFailure(r) | Verdict::NoEndRecord(r) => r,
                            Verdict::Success => unreachable!(),
                        };
                        let detail = if detail.is_empty() {
                            String::new()
                        } else {
                            format!(" ({detail})")
                        };
                        (
                            Accel::Tcg,
                            format!("/dev/kvm exists but a KVM probe boot failed: {why}{detail}"),
                        )
                    }
                },
                Err(e) => (
                    Accel::Tcg,
                    format!("/dev/kvm exists but the KVM probe could not run: {e:#}"),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Line, parse_line};

    fn outcome(lines: &[&str], status: Option<i32>, timed_out: bool) -> RunOutcome {
        let records = lines
            .iter()
            .filter_map(|l| match parse_line(l) {
                Line::Record(r) => Some(r),
                Line::Text(_) => None,
            })
            .collect();
        RunOutcome {
            firmware: Firmware::Bios,
            accel: Accel::Tcg,
            records,
            text: Vec::new(),
            qemu_status: status,
            qemu_signal: None,
            timeout: Duration::from_secs(1),
            timed_out,
            first_record_after: None,
            end_record_after: None,
            total: Duration::ZERO,
            tail: Vec::new(),
            qemu_stderr: String::new(),
            command_line: String::new(),
        }
    }

    const OK_EXIT: &str = r#"{"type":"end","v":1,"status":"ok","on_end":"qemu-exit"}"#;
    const OK_HALT: &str = r#"{"type":"end","v":1,"status":"ok","on_end":"halt"}"#;
    const FAIL: &str =
        r#"{"type":"end","v":1,"status":"fail","reason":"kernel panic","on_end":"qemu-exit"}"#;

    #[test]
    fn verdicts() {
        assert_eq!(
            outcome(&[OK_EXIT], Some(33), false).verdict(),
            Verdict::Success
        );
        assert_eq!(outcome(&[OK_HALT], None, false).verdict(), Verdict::Success);
        // Asked QEMU to exit, but it did not: the exit path is broken.
        assert!(matches!(
            outcome(&[OK_EXIT], None, false).verdict(),
            Verdict::KernelFailure(_)
        ));
        // Said ok, but QEMU reported failure.
        assert!(matches!(
            outcome(&[OK_EXIT], Some(35), false).verdict(),
            Verdict::KernelFailure(_)
        ));
        assert_eq!(
            outcome(&[FAIL], Some(35), false).verdict(),
            Verdict::KernelFailure("kernel panic".into())
        );
        assert!(
            matches!(outcome(&[], Some(0), false).verdict(), Verdict::NoEndRecord(r) if r.contains("status 0"))
        );
        assert_eq!(outcome(&[], None, true).verdict(), Verdict::Timeout);
    }
}

//! The results and records of a run: the [`Summary`] of the ramdisk's payloads, the harness's
//! counts and console sink, `harness_error` and `error` records, and a task's `task_exit`.

use core::sync::atomic::{AtomicU64, Ordering};

use super::super::ring3::Task;
use super::{Ended, Running};
use crate::harness::session::Sink;
use crate::output::console::record;
use crate::output::record::Record;
use crate::say;

/// What happened to the payloads of the ramdisk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    /// Payload members found.
    pub payloads: u64,
    /// Tasks that ran (a `task_start` record).
    pub started: u64,
    /// Tasks that called `exit`.
    pub exited: u64,
    /// Tasks that faulted.
    pub faulted: u64,
    /// Payloads that could not be loaded (`task_error`).
    pub rejected: u64,
    /// Tasks the watchdog killed (`task_killed`).
    pub killed: u64,
    /// Background tasks stopped when the others were done (`task_stopped`).
    pub stopped: u64,
    /// Tasks started by `spawn` (also counted in `started` and in how they ended).
    pub spawned: u64,
    /// Harness: benchmarks begun, `result` records, of them not supported, harness errors.
    pub benchmarks: u64,
    pub results: u64,
    pub unsupported: u64,
    pub harness_errors: u64,
}

impl Summary {
    pub(super) const fn new() -> Summary {
        Summary {
            payloads: 0,
            started: 0,
            exited: 0,
            faulted: 0,
            rejected: 0,
            killed: 0,
            stopped: 0,
            spawned: 0,
            benchmarks: 0,
            results: 0,
            unsupported: 0,
            harness_errors: 0,
        }
    }

    /// Adds another CPU's counts (a payload run there, `run_on`).
    pub(super) fn add(&mut self, other: &Summary) {
        self.payloads += other.payloads;
        self.started += other.started;
        self.exited += other.exited;
        self.faulted += other.faulted;
        self.rejected += other.rejected;
        self.killed += other.killed;
        self.stopped += other.stopped;
        self.spawned += other.spawned;
        self.benchmarks += other.benchmarks;
        self.results += other.results;
        self.unsupported += other.unsupported;
        self.harness_errors += other.harness_errors;
    }

    pub(super) fn count(&mut self, ended: Ended) {
        match ended {
            Ended::Exited(_) => self.exited += 1,
            Ended::Faulted => self.faulted += 1,
            Ended::Killed => self.killed += 1,
            Ended::Stopped => self.stopped += 1,
        }
    }
}

/// The harness's counts for the `summary` record: benchmarks begun, `result` records, of
/// them not supported, and harness errors (refused calls, benchmarks never ended, events
/// not measured).
pub(super) static BENCHES: AtomicU64 = AtomicU64::new(0);
pub(super) static RESULTS: AtomicU64 = AtomicU64::new(0);
pub(super) static UNSUPPORTED: AtomicU64 = AtomicU64::new(0);
pub(super) static HARNESS_ERRORS: AtomicU64 = AtomicU64::new(0);

/// The harness's records and table go to the serial console.
pub(super) struct Console;

impl Sink for Console {
    fn record(&mut self, kind: &str, build: &mut dyn FnMut(Record<'_>) -> Record<'_>) {
        record(kind, build);
    }
    fn text(&mut self, line: core::fmt::Arguments<'_>) {
        crate::output::console::text(line);
    }
    fn median(&mut self, bench: &str, event: &str, median: Option<f64>) {
        crate::output::screen::median(bench, event, median);
    }
}

/// Refused harness calls of one task that become `harness_error` records (`Running::refuse`).
pub(super) const REFUSALS_REPORTED: u64 = 64;

/// A `harness_error` record (the task goes on; its call returns an error code).
pub(super) fn harness_error(task: Task, bench: Option<&str>, message: &str) {
    HARNESS_ERRORS.fetch_add(1, Ordering::Relaxed);
    record("harness_error", |r| {
        r.str("payload", task.name)
            .u64("task_index", task.index)
            .opt_str("bench", bench)
            .str("message", message)
    });
    say!("bench  {}: {message}", task.name);
}

/// An `error` record about one task (`source: tasks`); the task goes on.
pub(super) fn task_error(task: Task, message: &str) {
    record("error", |r| {
        r.str("source", "tasks")
            .str("task", task.name)
            .u64("task_index", task.index)
            .str("message", message)
    });
}

impl Running {
    pub(super) fn report_exit(&self, code: i64) {
        let task = self.task;
        let entries = self.ctx.entries();
        let vtsc = self.vc.values().tsc;
        let cpu = crate::platform::cpus::current();
        record("task_exit", |r| {
            r.str("task", task.name)
                .u64("task_index", task.index)
                .u64("cpu", cpu as u64)
                .str("core_type", crate::platform::cpus::core_type_name(cpu))
                .i64("code", code)
                .u64("virtual_tsc", vtsc)
                .u64("syscalls", self.syscalls)
                .u64("service_tsc", self.service_tsc)
                .u64("interrupts", self.interrupts)
                .u64("rdpmc_emulated", self.rdpmc_emulated)
                .bool("pce", self.pce_entries > 0)
                .opt_str("counters_lost", self.hw_lost.as_deref())
                .u64("pce_entries", self.pce_entries)
                .u64("harness_refusals", self.refusals)
                .u64("notifications", self.notify.delivered)
                .u64("notifications_late", self.notify.late)
                .object("entries", |r| {
                    r.u64("iretq", entries.iretq)
                        .u64("sysretq", entries.sysretq)
                })
        });
        say!(
            "task   {}: exit {code} | virtual tsc {vtsc} | {} syscalls | {} interrupts",
            task.name,
            self.syscalls,
            self.interrupts
        );
    }
}

/// A payload that does not run: its `task_error` record (with the CPU it was meant for, if
/// that is why) and its line.
pub(super) fn not_run(task: Task, cpu: Option<usize>, message: &str) {
    record("task_error", |r| {
        let r = r.str("task", task.name).u64("task_index", task.index);
        let r = match cpu {
            Some(c) => r.u64("cpu", c as u64),
            None => r,
        };
        r.str("message", message)
    });
    say!("task   {}: not run: {message}", task.name);
}

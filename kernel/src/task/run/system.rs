//! System mode in the task runner (docs/syscall-abi.md, "System mode"; the rules are
//! `crate::system_mode`): run.cfg `system` counts the whole machine over the run, read at every
//! payload's start and end (`system_counts` records), and the `system_configure` /
//! `system_read` syscalls of a task.

use alloc::vec::Vec;

use super::super::abi::{
    CpuRow, EBUSY, EFAULT, EINVAL, ENOENT, EPERM, SYSTEM_READ_PER_CPU, system_cpus_buffer,
};
use super::super::system::Holder;
use super::Running;
use super::policy::system_events;
use crate::output::console::record;
use crate::output::record::Record;
use crate::say;
use crate::task::system_mode;

/// The system counters' 64-bit counts at a moment, per CPU and their sum.
pub(super) type Reading = system_mode::Reading;

fn reading() -> Option<Reading> {
    system_mode::read()
}

/// Before the payloads: run.cfg `system` takes the system counters (an `error` record if it
/// cannot; the payloads run anyway).
pub(super) fn start_run() -> Option<Reading> {
    let words = system_events();
    if words.is_empty() {
        return None;
    }
    match system_mode::configure(&words, Holder::Run) {
        Ok(_) => reading(),
        Err(code) => {
            let message = alloc::format!(
                "run.cfg system: the system counters could not be configured ({}): the run \
                 has none",
                match code {
                    super::super::abi::ENODEV => "ENODEV: no programmable counters",
                    EBUSY => "EBUSY",
                    _ => "EINVAL: an entry counters_configure would refuse",
                }
            );
            record("error", |r| {
                r.str("source", "system").str("message", &message)
            });
            say!("system {message}");
            None
        }
    }
}

/// A `system_counts` record: what the system counters counted between `from` and now, for
/// `scope` (`payload`, with its task, or `run`), summed over the CPUs, then a
/// `system_cpu_counts` record per CPU. Returns the reading now.
pub(super) fn report(scope: &str, task: Option<super::Task>, from: &Reading) -> Option<Reading> {
    let now = reading()?;
    let delta = |now: &[u64], then: Option<&[u64]>| -> Vec<u64> {
        now.iter()
            .enumerate()
            .map(|(i, n)| n.wrapping_sub(then.and_then(|t| t.get(i)).copied().unwrap_or(0)))
            .collect()
    };
    let deltas = delta(&now.total, Some(&from.total));
    let same = now.generation == from.generation;
    let cpu_list: Vec<u64> = now.cpus.iter().map(|c| c.cpu as u64).collect();
    record("system_counts", |r| {
        let r = r
            .str("scope", scope)
            .u64("cpu", crate::platform::cpus::current() as u64);
        with_task(r, task)
            .u64("generation", now.generation)
            .bool("same_generation", same)
            .u64_array("events", &now.words)
            .u64_array("counts", &deltas)
            .u64("tsc", now.tsc.wrapping_sub(from.tsc))
            .u64_array("cpus", &cpu_list)
    });
    for row in &now.cpus {
        let before = from.cpus.iter().find(|c| c.cpu == row.cpu);
        let counts = delta(&row.counts, before.map(|b| &b.counts[..]));
        let tsc = row.tsc.wrapping_sub(before.map_or(0, |b| b.tsc));
        record("system_cpu_counts", |r| {
            let r = r.str("scope", scope);
            with_task(r, task)
                .u64("cpu", row.cpu as u64)
                .str("core_type", crate::platform::cpus::core_type_name(row.cpu))
                .u64("generation", now.generation)
                .u64_array("counts", &counts)
                .u64("tsc", tsc)
                .bool("stale", row.stale || before.is_some_and(|b| b.stale))
        });
    }
    let what = task.map_or(alloc::string::String::from("the run"), |t| {
        alloc::format!("{} (#{})", t.name, t.index)
    });
    let list: Vec<alloc::string::String> = now
        .words
        .iter()
        .zip(&deltas)
        .map(|(w, d)| alloc::format!("{w:#x} {d}"))
        .collect();
    say!(
        "system {what}: {} ({} CPUs)",
        list.join(" | "),
        now.cpus.len()
    );
    Some(now)
}

/// The record's `task` and `task_index` (null for the run).
fn with_task(r: Record<'_>, task: Option<super::Task>) -> Record<'_> {
    match task {
        Some(t) => r.str("task", t.name).u64("task_index", t.index),
        None => r.null("task").null("task_index"),
    }
}

/// After the payloads: the run's total, and the counters given back.
pub(super) fn end_run(start: &Reading) {
    report("run", None, start);
    let _ = system_mode::release(Holder::Run);
}

impl Running {
    /// Keeps its [`CounterHold`](system_mode::CounterHold) in step with its counter slots.
    pub(super) fn sync_hold(&mut self) {
        match (self.hw.is_empty(), self.hold.is_some()) {
            (false, false) => self.hold = Some(system_mode::CounterHold::new()),
            (true, true) => self.hold = None,
            _ => {}
        }
    }

    /// `system_configure(ptr, count)`: the system counters for this task (`count` 0: given
    /// back). The generation, or `EPERM`, `EBUSY`, `EFAULT`, `EINVAL`, `ENODEV`, `ENOENT`
    /// (docs/syscall-abi.md).
    pub(super) fn system_configure(&mut self, ptr: u64, count: u64) -> i64 {
        if !self.counters_permitted() {
            return EPERM;
        }
        let holder = Holder::Task(self.task.index);
        if count == 0 {
            return match system_mode::release(holder) {
                Ok(g) => g as i64,
                Err(e) => e,
            };
        }
        if count > 16 {
            return EINVAL;
        }
        let Some(words) = self.read_u64s(ptr, count as usize) else {
            return EFAULT;
        };
        match system_mode::configure(&words, holder) {
            Ok(g) => g as i64,
            Err(e) => e,
        }
    }

    /// `system_read(ptr, len, flags)`: `{generation, tsc, n, counts[n]}` (the sum over the
    /// CPUs), or with [`SYSTEM_READ_PER_CPU`] the per-CPU form; `ENOENT` without system
    /// counters, `EINVAL` for other flags.
    pub(super) fn system_read(&mut self, ptr: u64, len: u64, flags: u64) -> i64 {
        if flags & !SYSTEM_READ_PER_CPU != 0 {
            return EINVAL;
        }
        let Some(now) = reading() else {
            return ENOENT;
        };
        let buf = if flags & SYSTEM_READ_PER_CPU != 0 {
            let rows: Vec<CpuRow<'_>> = now
                .cpus
                .iter()
                .map(|c| (c.cpu as u64, c.stale, &c.counts[..]))
                .collect();
            system_cpus_buffer(now.generation, now.tsc, &now.total, &rows, len)
        } else {
            super::super::abi::counters_buffer(now.generation, now.tsc, &now.total, len)
        };
        match buf {
            Ok(buf) => match self.copy_out(ptr, &buf) {
                0 => now.total.len() as i64,
                e => e,
            },
            Err(e) => e,
        }
    }
}

//! System mode in the task runner (docs/syscall-abi.md, "System mode"; the rules are
//! `crate::system_mode`): run.cfg `system` counts the whole machine over the run, read at every
//! payload's start and end (`system_counts` records), and the `system_configure` /
//! `system_read` syscalls of a task.

use alloc::vec::Vec;

use super::super::abi::{EBUSY, EFAULT, EINVAL, ENOENT, EPERM};
use super::super::system::Holder;
use super::Running;
use super::policy::system_events;
use crate::output::console::record;
use crate::say;
use crate::task::system_mode;

/// The system counters' 64-bit counts at a moment: `(generation, entries, counts, tsc)`.
pub(super) type Reading = (u64, Vec<u64>, Vec<u64>, u64);

fn reading() -> Option<Reading> {
    system_mode::read().map(|(g, words, v)| (g, words, v.counters().to_vec(), v.tsc))
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
/// `scope` (`payload`, with its task, or `run`). Returns the reading now.
pub(super) fn report(scope: &str, task: Option<super::Task>, from: &Reading) -> Option<Reading> {
    let now = reading()?;
    let (generation, words, counts, tsc) = &now;
    let deltas: Vec<u64> = counts
        .iter()
        .zip(&from.2)
        .map(|(n, b)| n.wrapping_sub(*b))
        .collect();
    let same = *generation == from.0;
    record("system_counts", |r| {
        let r = r
            .str("scope", scope)
            .u64("cpu", crate::platform::cpus::current() as u64);
        let r = match task {
            Some(t) => r.str("task", t.name).u64("task_index", t.index),
            None => r.null("task").null("task_index"),
        };
        r.u64("generation", *generation)
            .bool("same_generation", same)
            .u64_array("events", words)
            .u64_array("counts", &deltas)
            .u64("tsc", tsc.wrapping_sub(from.3))
    });
    let what = task.map_or(alloc::string::String::from("the run"), |t| {
        alloc::format!("{} (#{})", t.name, t.index)
    });
    let list: Vec<alloc::string::String> = words
        .iter()
        .zip(&deltas)
        .map(|(w, d)| alloc::format!("{w:#x} {d}"))
        .collect();
    say!("system {what}: {}", list.join(" | "));
    Some(now)
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

    /// `system_read(ptr, len)`: `{generation, tsc, n, counts[n]}`; `ENOENT` without system
    /// counters.
    pub(super) fn system_read(&mut self, ptr: u64, len: u64) -> i64 {
        let Some((generation, _, counts, tsc)) = reading() else {
            return ENOENT;
        };
        match super::super::abi::counters_buffer(generation, tsc, &counts, len) {
            Ok(buf) => match self.copy_out(ptr, &buf) {
                0 => counts.len() as i64,
                e => e,
            },
            Err(e) => e,
        }
    }
}

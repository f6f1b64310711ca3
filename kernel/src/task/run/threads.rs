//! Threads (`thread_start`, `thread_join`; docs/syscall-abi.md "Threads"): a task starts a
//! function on another CPU in its own address space. Each thread is a task of its own to the
//! kernel (its registers, virtual counters, counter page at its own address, its CPU's PMU),
//! sharing the task's memory as it is. Its stack and counter page are mapped by the task before
//! the thread runs; nothing is unmapped while a thread runs: the tables are freed only when the
//! task and every thread have ended (the last handle of the address space), and a task that
//! ends without joining a thread has it stopped first (`task_stopped`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use super::super::abi::{
    EABORTED, EBUSY, EINVAL, ELIMIT, ENODEV, ENOENT, ENOMEM, EPERM, STACK_PAGES, THREADS_MAX,
    thread_page_addr, thread_stack_top,
};
use super::super::ring3::Task;
use super::records::Summary;
use super::{BACKGROUND_SUMMARY, Ended, NEXT_TASK_INDEX, Running};
use crate::output::console::record;
use crate::platform::cpus::{self, RunOnError};

/// What a thread's CPU tells its task: done, and its exit code (or `EABORTED`).
#[derive(Default)]
struct Outcome {
    done: AtomicBool,
    code: AtomicI64,
}

/// One thread of a task.
struct Thread {
    /// Its id: its `task_index`.
    id: u64,
    cpu: usize,
    outcome: Arc<Outcome>,
    joined: bool,
}

/// A task's threads; dropping it stops the ones not joined and waits for them.
#[derive(Default)]
pub(super) struct Threads {
    started: u64,
    list: Vec<Thread>,
}

impl Drop for Threads {
    fn drop(&mut self) {
        for t in self.list.iter_mut().filter(|t| !t.joined) {
            cpus::stop_job(t.cpu);
            t.joined = true;
        }
    }
}

impl Running {
    /// `thread_start(cpu, entry, arg0, arg1)`: runs `entry` on CPU `cpu` in this task's address
    /// space, with RDI = `arg0`, RSI = `arg1`, its own stack and counter page; returns its id.
    pub(super) fn thread_start(&mut self, cpu: u64, entry: u64, arg0: u64, arg1: u64) -> i64 {
        if self.thread_slot != 0 {
            return EPERM;
        }
        let Ok(cpu) = usize::try_from(cpu) else {
            return EINVAL;
        };
        if cpu == cpus::current() {
            return EINVAL;
        }
        if cpus::online(cpu).is_none() {
            return ENODEV;
        }
        if self.threads.started >= THREADS_MAX {
            return ELIMIT;
        }
        let k = self.threads.started + 1;
        let (stack_top, page_addr) = (thread_stack_top(k), thread_page_addr(k));
        // Mapped now, by the task, before the thread runs (no one else maps in this space).
        if self.space.map_stack(stack_top, STACK_PAGES).is_err()
            || self.space.map(page_addr, false, false).is_err()
        {
            return ENOMEM;
        }
        self.threads.started = k;
        let index = NEXT_TASK_INDEX.fetch_add(1, Ordering::Relaxed);
        let task = Task {
            name: self.task.name,
            index,
        };
        let parent = self.task;
        let outcome = Arc::new(Outcome::default());
        let mut space = Some(self.space.share());
        let (tsc_hz, ramdisk, harness) = (self.tsc_hz, self.ramdisk, self.harness);
        let result = outcome.clone();
        let job = move || {
            let Some(space) = space.take() else {
                return;
            };
            let mut summary = Summary::default();
            summary.started += 1;
            let mut t = Running::new_at(task, space, entry, stack_top, page_addr, tsc_hz);
            t.thread_slot = k;
            t.ramdisk = ramdisk;
            t.harness = harness;
            t.ctx.rdi = arg0;
            t.ctx.rsi = arg1;
            record("thread_start", |r| {
                r.str("task", task.name)
                    .u64("task_index", task.index)
                    .u64("parent_index", parent.index)
                    .u64("thread", k)
                    .u64("cpu", cpus::current() as u64)
                    .str("core_type", cpus::core_type_name(cpus::current()))
                    .hex("entry", entry)
                    .hex("stack_top", stack_top)
                    .hex("user_page", page_addr)
            });
            let ended = loop {
                // A thread spawns nothing, so it never waits for a child.
                if let Some(ended) = t.run_watched(None) {
                    break ended;
                }
            };
            summary.count(ended);
            drop(t);
            BACKGROUND_SUMMARY.lock().add(&summary);
            let code = match ended {
                Ended::Exited(c) => c,
                _ => EABORTED,
            };
            result.code.store(code, Ordering::Relaxed);
            result.done.store(true, Ordering::Release);
        };
        match cpus::start_job(cpu, job) {
            Ok(()) => {
                self.threads.list.push(Thread {
                    id: index,
                    cpu,
                    outcome,
                    joined: false,
                });
                index as i64
            }
            Err(RunOnError::Busy) => EBUSY,
            Err(RunOnError::NotOnline) => ENODEV,
        }
    }

    /// `thread_join(id)`: waits for thread `id` of this task to end; its exit code, or
    /// `EABORTED` (it faulted or was killed), or `ENOENT` (not a thread of this task, or
    /// joined already).
    pub(super) fn thread_join(&mut self, id: u64) -> i64 {
        let Some(index) = self
            .threads
            .list
            .iter()
            .position(|t| t.id == id && !t.joined)
        else {
            return ENOENT;
        };
        // This CPU waits in the kernel (interrupts off); the thread's CPU runs on. The wait is
        // bounded by what is left of the task's budget (its watchdog cannot fire meanwhile): a
        // thread still running then is stopped, and the join says it was aborted.
        let start = baremark_hw::cpu::rdtsc();
        let limit = self.remaining_budget();
        let t = &mut self.threads.list[index];
        while !t.outcome.done.load(Ordering::Acquire) {
            if limit.is_some_and(|l| baremark_hw::cpu::rdtsc().wrapping_sub(start) > l) {
                cpus::stop_job(t.cpu);
                break;
            }
            core::hint::spin_loop();
        }
        // Its CPU is free again once the job has returned (it drops the thread first).
        cpus::wait_job(t.cpu);
        self.waited_tsc = baremark_hw::cpu::rdtsc().wrapping_sub(start);
        let t = &mut self.threads.list[index];
        t.joined = true;
        if t.outcome.done.load(Ordering::Acquire) {
            t.outcome.code.load(Ordering::Relaxed)
        } else {
            EABORTED
        }
    }
}

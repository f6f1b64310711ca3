//! The syscalls a ring-3 task makes (`Running::syscall`, the one dispatch of `SYSCALL` from
//! ring 3) and RDPMC emulation (`Running::try_rdpmc`, for the #GP/#UD a task's RDPMC raises):
//! the ways a task enters the kernel on purpose. docs/syscall-abi.md is their contract.

use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use baremark_hw::cpu as hwcpu;

use super::super::abi::{
    CONFIGURE_MULTIPLEX, EABORTED, EBUSY, ECOUNTERS, EFAULT, EINVAL, ELIMIT, ENOENT, ENOMEM,
    ENOSPC, ENOSYS, EPERM, NAME_MAX, REPORT_MAX, SPAWN_ADD_CHILD, VIRTUAL_TSC_INDEX, nr,
    spawn_limit,
};
use super::super::hwslots;
use super::super::ring3::{self, Task, sys_write};
use super::super::user_page;
use super::super::vcounter::MAX_SLOTS;
use super::load::{find_payload, load};
use super::records::{
    BENCHES, Console, HARNESS_ERRORS, REFUSALS_REPORTED, RESULTS, UNSUPPORTED, harness_error,
    task_error,
};
use super::{Child, ChildState, Ended, NEXT_TASK_INDEX, Running, SPAWNED_LIVE};
use crate::harness::session::{self, Bench, PLAN_WORDS, RunPlan};
use crate::output::console::record;
use crate::pmu::backend::Counter;
use crate::say;

/// The RDPMC instruction.
const RDPMC: [u8; 2] = [0x0f, 0x33];

/// The RDPMC ECX that names `counter` to the emulation: GP n is n, fixed n is `(1 << 30) | n`.
fn rdpmc_ecx(counter: Counter) -> u32 {
    match counter {
        Counter::Gp(n) => u32::from(n),
        Counter::Fixed(n) => (1 << 30) | u32::from(n),
    }
}

/// What serving a syscall led to.
pub(super) enum Served {
    Done,
    Yield,
    Wait,
    Exit(i64),
}

impl Running {
    /// Writes a syscall's result into the task: `EFAULT` unless `[ptr, ptr + len)` is memory
    /// the task itself may write.
    pub(super) fn copy_out(&mut self, ptr: u64, bytes: &[u8]) -> i64 {
        if self.space.check_writable(ptr, bytes.len() as u64).is_err()
            || self.space.write(ptr, bytes).is_err()
        {
            return EFAULT;
        }
        0
    }

    /// Serves the syscall in the context.
    pub(super) fn syscall(&mut self) -> Served {
        self.syscalls += 1;
        let (a, b) = (self.ctx.rdi, self.ctx.rsi);
        // Back from an overflow handler: every register is the interrupted code's (RAX too).
        if self.ctx.rax == nr::NOTIFY_RETURN && self.notify_return() {
            return Served::Done;
        }
        let in_handler = self.in_notify_handler();
        let mut served = Served::Done;
        let result: i64 = match self.ctx.rax {
            nr::EXIT => return Served::Exit(a as i64),
            nr::WRITE => sys_write(self.task, &self.space, a, b),
            nr::REPORT => self.report(a, b),
            nr::TIME => {
                let (buf, status) = super::super::abi::time_reply(hwcpu::rdtsc(), self.tsc_hz);
                match self.copy_out(a, &buf) {
                    0 => status,
                    e => e,
                }
            }
            nr::COUNTERS_READ if self.hw_lost.is_some() => ECOUNTERS,
            nr::COUNTERS_READ if self.mux.is_some() => {
                match self.mux_read_buffer(b).unwrap_or(Err(EINVAL)) {
                    Ok(buf) => match self.copy_out(a, &buf) {
                        0 => (buf.len() as i64 - 24) / 8,
                        e => e,
                    },
                    Err(e) => e,
                }
            }
            nr::COUNTERS_READ_SCALED if self.hw_lost.is_some() => ECOUNTERS,
            nr::COUNTERS_READ_SCALED => self.counters_read_scaled(a, b),
            nr::COUNTERS_READ => {
                match super::super::abi::counters_read_buffer(&self.vc.values(), b) {
                    Ok(buf) => match self.copy_out(a, &buf) {
                        0 => self.vc.len() as i64,
                        e => e,
                    },
                    Err(e) => e,
                }
            }
            // A handler runs with the interrupted code's counters stopped and unchanged.
            nr::COUNTERS_CONFIGURE
            | nr::COUNTERS_START
            | nr::COUNTERS_STOP
            | nr::COUNTERS_RESET
            | nr::COUNTERS_THRESHOLD
            | nr::COUNTERS_NOTIFY
                if in_handler =>
            {
                EBUSY
            }
            nr::COUNTERS_CONFIGURE if self.bench.is_some() => {
                self.refuse_counters_in_bench("counters_configure")
            }
            nr::COUNTERS_CONFIGURE => match self.counters_refusal() {
                Some(code) if b != 0 || self.notify.sampling => code,
                _ => self.configure(a, b, self.ctx.rdx),
            },
            nr::COUNTERS_START => {
                self.counting = true;
                0
            }
            nr::COUNTERS_STOP => {
                self.counting = false;
                0
            }
            nr::COUNTERS_RESET if self.bench.is_some() => {
                self.refuse_counters_in_bench("counters_reset")
            }
            nr::COUNTERS_RESET => match self.vc.reset() {
                Ok(()) => {
                    // Counting from 0 again: nothing lost is in the new counts.
                    self.hw_lost = None;
                    self.thresholds_restarted();
                    if let Some(m) = self.mux.as_deref_mut() {
                        m.restart();
                    }
                    self.vc.generation() as i64
                }
                Err(_) => EINVAL,
            },
            nr::COUNTERS_NOTIFY => self.counters_notify(a, b),
            nr::SYSTEM_CONFIGURE => self.system_configure(a, b),
            nr::SYSTEM_READ => self.system_read(a, b, self.ctx.rdx),
            nr::COUNTERS_THRESHOLD => self.counters_threshold(a, b),
            // Outside a handler (inside, it returned above).
            nr::NOTIFY_RETURN => EINVAL,
            nr::YIELD => {
                served = Served::Yield;
                0
            }
            nr::USER_PAGE => self.page_addr as i64,
            nr::THREAD_START => self.thread_start(a, b, self.ctx.rdx, self.ctx.r10),
            nr::THREAD_JOIN => self.thread_join(a),
            nr::CPUS => {
                let online = crate::platform::cpus::online_list();
                match super::super::abi::cpus_reply(crate::platform::cpus::current(), &online, b) {
                    Ok(buf) => match self.copy_out(a, &buf) {
                        0 => online.len() as i64,
                        e => e,
                    },
                    Err(e) => e,
                }
            }
            nr::READ_WINDOW => self.set_read_window(a, b, self.ctx.rdx, self.ctx.r10),
            nr::BENCH_PLAN => self.bench_plan(a, b),
            nr::BENCH_BEGIN => self.bench_begin(a, b, self.ctx.rdx, self.ctx.r10),
            nr::BENCH_GROUP => match self.check_bench_id("bench_group", b) {
                Ok(()) => self.bench_group(a),
                Err(e) => e,
            },
            nr::BENCH_SAMPLES => match self.check_bench_id("bench_samples", self.ctx.rdx >> 8) {
                Ok(()) => self.bench_samples(a, b, self.ctx.rdx & 0xff),
                Err(e) => e,
            },
            nr::BENCH_END => match self.check_bench_id("bench_end", a) {
                Ok(()) => self.bench_end(),
                Err(e) => e,
            },
            // A thread spawns no tasks (its task does; docs/syscall-abi.md "Threads").
            nr::SPAWN if self.thread_slot != 0 => EPERM,
            nr::SPAWN => self.spawn(a, b, self.ctx.rdx, self.ctx.r10),
            nr::ARGS => self.args(a, b),
            nr::WAIT => match self.wait(a) {
                Some(result) => result,
                None => {
                    // Answered when the child ends (`child_ended` writes RAX).
                    served = Served::Wait;
                    0
                }
            },
            _ => ENOSYS,
        };
        self.ctx.rax = result as u64;
        served
    }

    /// The harness settings, or `ENOSYS` for a task without them.
    fn harness(&self) -> Result<&'static RunPlan, i64> {
        self.harness.ok_or(ENOSYS)
    }

    /// Reports a refused harness call and returns `code`. Only the task's first
    /// [`REFUSALS_REPORTED`] refusals become records (the last of them says so): a task that
    /// calls wrongly in a loop must not flood the serial line (at 115200 baud a record is about
    /// 10 ms); `task_exit` counts them all.
    fn refuse(&mut self, code: i64, message: &str) -> i64 {
        self.refusals += 1;
        if self.refusals > REFUSALS_REPORTED {
            return code;
        }
        let bench = self.bench.as_ref().map(|b| b.name.as_str());
        if self.refusals == REFUSALS_REPORTED {
            let message = format!(
                "{message} (the task's {REFUSALS_REPORTED}th refused harness call: further ones are counted in task_exit, not reported)"
            );
            harness_error(self.task, bench, &message);
        } else {
            harness_error(self.task, bench, message);
        }
        code
    }

    /// `counters_configure` or `counters_reset` while a benchmark is open: refused (`EBUSY`),
    /// since a new generation restarts the virtual TSC and the counters the harness's regions
    /// read (their deltas would span the restart). The first refusal in a benchmark sends a
    /// `harness_error`; the benchmark goes on, measured as if the call had not been made.
    fn refuse_counters_in_bench(&mut self, call: &str) -> i64 {
        if core::mem::replace(&mut self.bench_counters_refused, true) {
            return EBUSY;
        }
        self.refuse(
            EBUSY,
            &format!(
                "{call} refused (EBUSY) while a benchmark is open: the harness owns the task's \
                counters from bench_begin to bench_end (a new generation would restart the \
                virtual TSC under the measured regions); later refusals in this benchmark are \
                not reported"
            ),
        )
    }

    /// A harness call that names benchmark `id` (0: whichever is open): `Err` (`EINVAL`, a
    /// `harness_error`) unless that is the open one. So a payload whose measured code ends its
    /// benchmark and begins another (zoo-syscall-storm) cannot hand the first one's samples to
    /// the second.
    fn check_bench_id(&mut self, call: &str, id: u64) -> Result<(), i64> {
        match session::addressed_bench(
            self.bench
                .as_ref()
                .map(|b| (self.bench_id, b.name.as_str())),
            id,
        ) {
            Ok(()) => Ok(()),
            Err(why) => Err(self.refuse(EINVAL, &format!("{call}: {why}"))),
        }
    }

    /// `bench_plan(ptr, len)`: the plan's words (docs/harness.md) into the task's buffer.
    fn bench_plan(&mut self, ptr: u64, len: u64) -> i64 {
        let plan = match self.harness() {
            Ok(p) => p,
            Err(e) => return e,
        };
        if len < (PLAN_WORDS * 8) as u64 {
            return ENOSPC;
        }
        let mut bytes = [0u8; PLAN_WORDS * 8];
        for (out, w) in bytes.chunks_mut(8).zip(plan.words()) {
            out.copy_from_slice(&w.to_le_bytes());
        }
        self.copy_out(ptr, &bytes)
    }

    /// `bench_begin(name_ptr, name_len, iterations, bytes_per_iteration)`: starts a benchmark
    /// (`bench_start`).
    fn bench_begin(&mut self, ptr: u64, len: u64, iterations: u64, bytes: u64) -> i64 {
        let plan = match self.harness() {
            Ok(p) => p,
            Err(e) => return e,
        };
        if self.bench.is_some() {
            return self.refuse(EBUSY, "bench_begin while a benchmark is open");
        }
        let begun = ring3::with_user_text(&self.space, ptr, len, NAME_MAX, |name| {
            Bench::begin(name, iterations, plan).map(|b| b.with_bytes(bytes))
        });
        match begun {
            Ok(Ok(mut b)) => {
                session::emit_start(self.task.name, &b, plan, &mut Console);
                b.smi_start = baremark_hw::msr::smi_count();
                super::hw::raise_test_smis();
                BENCHES.fetch_add(1, Ordering::Relaxed);
                self.bench = Some(b);
                self.benches_begun += 1;
                self.bench_id = self.benches_begun;
                self.bench_counters_refused = false;
                self.bench_id as i64
            }
            Ok(Err(message)) => self.refuse(EINVAL, &message),
            Err(e) => self.refuse(e, "bench_begin: the name is not readable text of the task"),
        }
    }

    /// `bench_group(g)`: configures the task's counters with group `g` of the plan and returns
    /// its counter slots.
    fn bench_group(&mut self, g: u64) -> i64 {
        let plan = match self.harness() {
            Ok(p) => p,
            Err(e) => return e,
        };
        let Some(mut b) = self.bench.take() else {
            return self.refuse(EINVAL, "bench_group outside a benchmark");
        };
        let result = match b.enter_group(g, plan) {
            Ok(slots) => {
                let config = plan.group_config(g as usize);
                // TSC only: nothing to configure (keeps the task's virtual TSC running on).
                let refusal = self
                    .counters_refusal()
                    .filter(|_| !config.is_empty() || self.notify.sampling);
                let code = if let Some(code) = refusal {
                    code
                } else if config.is_empty() && self.hw.is_empty() {
                    0
                } else if config.is_empty() {
                    self.configure(0, 0, 0)
                } else {
                    self.configure_events(config, plan.group_msrs(g as usize))
                };
                if code < 0 {
                    let message =
                        format!("the counters of group {g} could not be configured ({code})");
                    self.bench = Some(b);
                    return self.refuse(code, &message);
                }
                slots as i64
            }
            Err(message) => {
                self.bench = Some(b);
                return self.refuse(EINVAL, &message);
            }
        };
        self.bench = Some(b);
        result
    }

    /// `bench_samples(ptr, count, kind)`: `count` rows of the current group's samples.
    fn bench_samples(&mut self, ptr: u64, count: u64, kind: u64) -> i64 {
        let plan = match self.harness() {
            Ok(p) => p,
            Err(e) => return e,
        };
        let Some(b) = self.bench.as_ref() else {
            return self.refuse(EINVAL, "bench_samples outside a benchmark");
        };
        let words = match b.expected_words(count, plan) {
            Ok(w) => w,
            Err(message) => return self.refuse(EINVAL, &message),
        };
        let Some(values) = self.read_u64s(ptr, words) else {
            return self.refuse(EFAULT, "bench_samples: the buffer is not the task's memory");
        };
        let Some(b) = self.bench.as_mut() else {
            return EINVAL;
        };
        // Samples taken since the counts were lost hold no counts of the group's events.
        if let Some(lost) = &self.hw_lost {
            b.lose_counts(lost);
        }
        match b.add_samples(kind, values, plan) {
            Ok(()) => 0,
            Err(message) => self.refuse(EINVAL, &message),
        }
    }

    /// `bench_end()`: the benchmark's statistics, records and table.
    fn bench_end(&mut self) -> i64 {
        let plan = match self.harness() {
            Ok(p) => p,
            Err(e) => return e,
        };
        let Some(mut b) = self.bench.take() else {
            return self.refuse(EINVAL, "bench_end outside a benchmark");
        };
        // Ended early because the counts were lost (the SDK ends a benchmark it cannot finish):
        // the reason of the group's missing samples.
        if let Some(lost) = &self.hw_lost {
            b.lose_counts_if_incomplete(lost, plan);
        }
        b.smis = b
            .smi_start
            .zip(baremark_hw::msr::smi_count())
            .map(|(start, end)| end.wrapping_sub(start));
        let report = b.finish(plan);
        let (results, unsupported, errors) =
            session::emit_report(self.task.name, &b, plan, &report, &mut Console);
        RESULTS.fetch_add(results, Ordering::Relaxed);
        UNSUPPORTED.fetch_add(unsupported, Ordering::Relaxed);
        HARNESS_ERRORS.fetch_add(errors, Ordering::Relaxed);
        0
    }

    /// `read_window(lo, hi, kind, abort)`: registers a retry-free reader's window (`user_page`
    /// module docs): kind 0 the virtual TSC reader, kind 1 the slot reader, which also names
    /// its abort path, kind 2 the harness region (its abort path too); `(0, 0)` removes the
    /// kind's window. `EINVAL` unless `lo <= hi`, the window spans at most 15 bytes (the
    /// region's: [`user_page::REGION_WINDOW_MAX`]) and lies in the task's memory, the kind is
    /// known, and the abort address is in the task's memory (the region's outside its window).
    fn set_read_window(&mut self, lo: u64, hi: u64, kind: u64, abort: u64) -> i64 {
        const NONE: (u64, u64) = (u64::MAX, u64::MAX);
        let span = if kind == 2 {
            user_page::REGION_WINDOW_MAX
        } else {
            15
        };
        let window = if lo == 0 && hi == 0 {
            NONE
        } else if hi < lo || hi - lo > span || self.space.check(lo, hi - lo + 1).is_err() {
            return EINVAL;
        } else {
            (lo, hi)
        };
        match kind {
            0 => self.read_window = window,
            1 | 2 if window == NONE => {
                if kind == 1 {
                    self.slot_window = NONE;
                } else {
                    self.region_window = NONE;
                }
            }
            1 if self.space.check(abort, 1).is_ok() => {
                (self.slot_window, self.slot_abort) = (window, abort);
            }
            2 if self.space.check(abort, 1).is_ok() && !(lo <= abort && abort <= hi) => {
                (self.region_window, self.region_abort) = (window, abort);
            }
            _ => return EINVAL,
        }
        0
    }

    /// `args(ptr, len)`: the task's argument text (the ramdisk's `args/<name>`, packed by the
    /// host's `--args NAME=TEXT`): its first `min(len, n)` bytes into the buffer; returns `n`
    /// (0: no arguments), so a caller with too small a buffer sees it.
    fn args(&mut self, ptr: u64, len: u64) -> i64 {
        let text = crate::devices::ramdisk::entries(self.ramdisk)
            .map_while(Result::ok)
            .find(|e| super::super::abi::args_name(e.prefix, e.name) == Some(self.task.name))
            .map_or(&[][..], |e| e.data);
        let n = text.len().min(super::super::abi::ARGS_MAX);
        let take = n.min(usize::try_from(len).unwrap_or(usize::MAX));
        match self.copy_out(ptr, &text[..take]) {
            0 => n as i64,
            e => e,
        }
    }

    /// `spawn(name_ptr, name_len, flags, arg)`: loads `payloads/<name>.elf` from the ramdisk as
    /// a child task (pending until the scheduler takes it) with the parent's counter
    /// configuration and zero counts, starting with `arg` in RDI. Returns its id (its
    /// `task_index`).
    fn spawn(&mut self, ptr: u64, len: u64, flags: u64, arg: u64) -> i64 {
        if flags & !SPAWN_ADD_CHILD != 0 {
            return EINVAL;
        }
        let name = ring3::with_user_text(&self.space, ptr, len, NAME_MAX, |text| {
            find_payload(self.ramdisk, text)
        });
        let (name, bytes) = match name {
            Ok(Some(found)) => found,
            Ok(None) => return ENOENT,
            // A name longer than any payload name, or not UTF-8: there is no such payload.
            Err(EINVAL) => return ENOENT,
            Err(e) => return e,
        };
        let limit = spawn_limit(
            self.depth,
            self.family.borrow().spawned,
            self.children.len(),
            SPAWNED_LIVE.load(Ordering::Relaxed),
        );
        if let Some(limit) = limit {
            // Said once per family and limit (a spawn bomb hits them thousands of times).
            let first = {
                let mut family = self.family.borrow_mut();
                let first = !family.reported.contains(&limit);
                if first {
                    family.reported.push(limit);
                }
                first
            };
            if first {
                task_error(
                    self.task,
                    &format!(
                        "spawn refused ({}): {} (reported once per family and limit)",
                        if limit.code() == ELIMIT {
                            "ELIMIT"
                        } else {
                            "EBUSY"
                        },
                        limit.describe()
                    ),
                );
            }
            return limit.code();
        }
        let index = NEXT_TASK_INDEX.fetch_add(1, Ordering::Relaxed);
        let task = Task { name, index };
        let add = flags & SPAWN_ADD_CHILD != 0;
        let parent = self.task;
        record("task_spawn", |r| {
            r.str("task", name)
                .u64("task_index", index)
                .str("parent", parent.name)
                .u64("parent_index", parent.index)
                .bool("add_to_parent", add)
                .hex("arg", arg)
        });
        let (plan, space) = match load(task, bytes) {
            Ok(loaded) => loaded,
            Err(e) => {
                super::records::not_run(task, None, &e.message);
                return if e.out_of_memory { ENOMEM } else { ENOENT };
            }
        };
        SPAWNED_LIVE.fetch_add(1, Ordering::Relaxed);
        self.family.borrow_mut().spawned += 1;
        let mut child = Running::start(task, &plan, space, self.tsc_hz, self.cpu);
        child.harness = self.harness;
        child.spawned = true;
        child.vc = self.vc.inherit();
        child.hw = self.hw.clone();
        child.hw_rdpmc = self.hw_rdpmc.clone();
        child.hw_msrs = self.hw_msrs.clone();
        child.hw_switch = self.hw_switch.as_ref().map(|s| s.copy());
        child.drop_inherited_thresholds();
        child.sync_hold();
        child.mux = self.mux.as_deref().map(|m| Box::new(m.for_child()));
        child.start_sampling();
        child.budget = self.budget;
        child.ramdisk = self.ramdisk;
        child.parent = Some(parent.index);
        child.add_to_parent = add;
        child.ctx.rdi = arg;
        child.family = Rc::clone(&self.family);
        child.depth = self.depth + 1;
        self.children.push(Child {
            index,
            state: ChildState::Pending(Box::new(child)),
        });
        index as i64
    }

    /// `wait(id)`: `Some(result)` at once (the child already ended: its exit code, or
    /// `EABORTED`; not a child: `ENOENT`), or `None`: the task waits.
    fn wait(&mut self, id: u64) -> Option<i64> {
        let at = self.children.iter().position(|c| c.index == id);
        let Some(at) = at else {
            return Some(ENOENT);
        };
        if let ChildState::Ended(result) = self.children[at].state {
            self.children.remove(at);
            return Some(result);
        }
        self.blocked_on = Some(id);
        None
    }

    /// The pending child `id`, for the scheduler to run (it stays a child: `Live`).
    pub(super) fn take_pending(&mut self, id: u64) -> Option<Box<Running>> {
        let child = self.children.iter_mut().find(|c| c.index == id)?;
        match core::mem::replace(&mut child.state, ChildState::Live) {
            ChildState::Pending(t) => Some(t),
            other => {
                child.state = other;
                None
            }
        }
    }

    /// Every pending child, in spawn order, for the scheduler to run (`Live` from now on).
    pub(super) fn take_all_pending(&mut self) -> Vec<Running> {
        let mut out = Vec::new();
        for child in &mut self.children {
            if matches!(child.state, ChildState::Pending(_))
                && let ChildState::Pending(t) =
                    core::mem::replace(&mut child.state, ChildState::Live)
            {
                out.push(*t);
            }
        }
        out
    }

    /// The child `done` ended: its counts are added to this task's if it asked for that, and
    /// a `wait` for it is answered (now, or later from its `Ended` entry).
    pub(super) fn child_ended(&mut self, done: &Running, ended: Ended) {
        let result = match ended {
            Ended::Exited(code) => code,
            Ended::Faulted | Ended::Killed | Ended::Stopped => EABORTED,
        };
        if done.add_to_parent
            && let Some(lost) = &done.hw_lost
        {
            // The child's sums miss what it lost, so the parent's would too.
            self.hw_lost = Some(format!(
                "the counts of child {} (task_index {}), added to this task's, were lost: {lost}",
                done.task.name, done.task.index
            ));
        }
        if done.add_to_parent && (self.mux.is_some() || done.mux.is_some()) {
            let child = done.task;
            task_error(
                self.task,
                &format!(
                    "the counts of child {} (task_index {}) were not added: multiplexed counts \
                     (raw counts of different turns) do not add up",
                    child.name, child.index
                ),
            );
        } else if done.add_to_parent
            && hwslots::add_child_counts(&mut self.vc, &self.hw, &done.vc, &done.hw).is_err()
        {
            let child = done.task;
            task_error(
                self.task,
                &format!(
                    "the counts of child {} (task_index {}) were not added: it reconfigured its \
                     counters (other counters or other events)",
                    child.name, child.index
                ),
            );
        }
        let Some(at) = self
            .children
            .iter()
            .position(|c| c.index == done.task.index)
        else {
            return;
        };
        if self.blocked_on == Some(done.task.index) {
            self.blocked_on = None;
            self.ctx.rax = result as u64;
            self.children.remove(at);
        } else {
            self.children[at].state = ChildState::Ended(result);
        }
    }

    /// `counters_configure(ptr, count)`: `count` GP event-select encodings, counted on GP
    /// counters 0..count (`hwslots::parse_counter_config`: any event is `EINVAL` on the
    /// TSC-only backend). Starts a new generation (every count and the virtual TSC from 0);
    /// returns it. On an error the old configuration stays.
    pub(super) fn configure(&mut self, ptr: u64, count: u64, flags: u64) -> i64 {
        if flags & !CONFIGURE_MULTIPLEX != 0 {
            return EINVAL;
        }
        if count == 0 {
            self.report_mux();
            self.mux = None;
            let old = self.vc.clone();
            return match self.vc.configure(&[]) {
                Ok(()) => {
                    self.release_hw();
                    self.hw.clear();
                    self.hw_rdpmc.clear();
                    self.hw_msrs.clear();
                    self.hw_lost = None;
                    self.thresholds_cleared();
                    self.sync_hold();
                    self.vc.generation() as i64
                }
                Err(_) => {
                    self.vc = old;
                    EINVAL
                }
            };
        }
        let in_memory = count
            .checked_mul(8)
            .is_some_and(|len| self.space.check(ptr, len).is_ok());
        if !in_memory {
            return EFAULT;
        }
        if count > MAX_SLOTS as u64 {
            return EINVAL;
        }
        match self.read_u64s(ptr, count as usize) {
            Some(raw) if flags & CONFIGURE_MULTIPLEX != 0 => self.configure_multiplexed(&raw),
            Some(raw) => self.configure_events(&raw, &[]),
            None => EFAULT,
        }
    }

    /// `count` little-endian u64s from the task's memory at `ptr`; `None` unless all of them
    /// are mapped user memory of the task.
    pub(super) fn read_u64s(&self, ptr: u64, count: usize) -> Option<Vec<u64>> {
        let len = count.checked_mul(8)?;
        let mut bytes = alloc::vec![0u8; len];
        self.space.read(ptr, &mut bytes).ok()?;
        Some(
            bytes
                .as_chunks::<8>()
                .0
                .iter()
                .map(|c| u64::from_le_bytes(*c))
                .collect(),
        )
    }

    /// Configures the task's counters with one event select per GP counter (`raw` not empty)
    /// and the extra MSRs those events need (`msrs`, from the harness plan): the generation or
    /// an error code; on an error the old configuration stays. An extra MSR the CPU refuses
    /// (#GP: e.g. reserved bits in an offcore-response value) configures the events but loses
    /// their counts (`hw` module docs), so they are reported not measured, with the reason.
    pub(super) fn configure_events(&mut self, raw: &[u64], msrs: &[(u32, u64)]) -> i64 {
        // System counters count the whole machine: a task's switches would stop them.
        if crate::task::system_mode::active() {
            return EBUSY;
        }
        let mut vc = self.vc.clone();
        let old = core::mem::take(&mut self.hw);
        let old_msrs = core::mem::take(&mut self.hw_msrs);
        super::hw::forget_programming();
        let result = crate::pmu::machine::with_pmu(|pmu, msr| {
            let backend = pmu.backend.as_mut();
            let caps = *backend.caps();
            let slots = hwslots::slots_of(hwslots::parse_counter_config(caps.vendor, &caps, raw)?);
            let _ = hwslots::release(backend, msr, &old);
            let _ = hwslots::clear_msrs(msr, &old_msrs);
            if hwslots::program(backend, msr, &slots, &mut vc).is_err() {
                let _ = hwslots::release(backend, msr, &slots);
                return Err(EINVAL);
            }
            let refused = hwslots::write_msrs(msr, msrs).err();
            let rdpmc: Vec<Option<u32>> = slots
                .iter()
                .map(|s| hwslots::rdpmc_index(backend, &slots, s.counter))
                .collect();
            Ok((slots, rdpmc, refused))
        });
        match result.unwrap_or(Err(super::super::abi::ENODEV)) {
            Ok((slots, rdpmc, refused)) => {
                // A multiplexed configuration ends here: its counts go out first.
                self.report_mux();
                self.hw = slots;
                self.hw_rdpmc = rdpmc;
                self.hw_msrs = msrs.to_vec();
                self.hw_lost = None;
                self.vc = vc;
                // A new configuration: not multiplexed (unless the caller makes it so).
                self.mux = None;
                self.thresholds_cleared();
                self.sync_hold();
                self.make_switch();
                if let Some(e) = refused {
                    self.lose_counts_because(format!(
                        "programming an extra MSR of its events failed: {e}"
                    ));
                }
                self.vc.generation() as i64
            }
            Err(e) => {
                // The old configuration stays (its counters are loaded again at switch-in).
                self.hw = old;
                self.hw_msrs = old_msrs;
                e
            }
        }
    }

    /// `report(ptr, len)`: a `report` record, with `values` when the text is `key=value` lines,
    /// else the raw `text`.
    fn report(&mut self, ptr: u64, len: u64) -> i64 {
        let task = self.task;
        let result = ring3::with_user_text(&self.space, ptr, len, REPORT_MAX, |text| {
            match super::super::abi::parse_report(text) {
                Some(pairs) => {
                    record("report", |r| {
                        r.str("task", task.name)
                            .u64("task_index", task.index)
                            .u64("cpu", crate::platform::cpus::current() as u64)
                            .object("values", |mut r| {
                                for (k, v) in &pairs {
                                    r = r.str(k, v);
                                }
                                r
                            })
                    });
                    for (k, v) in &pairs {
                        say!("report {}: {k} = {v}", task.name);
                    }
                }
                None => {
                    record("report", |r| {
                        r.str("task", task.name)
                            .u64("task_index", task.index)
                            .u64("cpu", crate::platform::cpus::current() as u64)
                            .str("text", text)
                    });
                    say!("report {}: {}", task.name, text.trim_end());
                }
            }
        });
        match result {
            Ok(()) => 0,
            Err(e) => e,
        }
    }

    /// A trap that may be RDPMC: emulates it (`Ok`), or says why the task must end (`Err`
    /// with a detail; `None` when it is not RDPMC at all).
    pub(super) fn try_rdpmc(&mut self) -> Result<(), Option<alloc::string::String>> {
        let mut insn = [0u8; 2];
        if self.space.read(self.ctx.rip, &mut insn).is_err() || insn != RDPMC {
            return Err(None);
        }
        let index = self.ctx.rcx as u32;
        // The slot reader's RDPMC: a slot the page says is not readable now (ECX all ones), or
        // a counter read with CR4.PCE clear (the emulation gives 64-bit values, not the raw
        // reading the reader expects), goes to the reader's abort path, which asks
        // `counters_read` (`user_page` module docs, "The retry-free slot read").
        if self.ctx.rip == self.slot_window.1 && index != VIRTUAL_TSC_INDEX {
            self.ctx.rip = self.slot_abort;
            return Ok(());
        }
        // The harness region's RDPMCs likewise go to its abort path, whose repetition the SDK
        // measures again or with `counters_read` ("The harness region's window").
        if let Some(abort) =
            user_page::fix_up_region(self.ctx.rip, self.region_window, self.region_abort)
        {
            self.ctx.rip = abort;
            return Ok(());
        }
        let slot = self.hw.iter().position(|s| rdpmc_ecx(s.counter) == index);
        let value = if index == VIRTUAL_TSC_INDEX {
            self.vc.values().tsc
        } else if let (Some(_), Some(lost)) = (slot, &self.hw_lost) {
            return Err(Some(format!(
                "rdpmc index {index:#x}: the counts of this counter were lost ({lost}); \
                 counters_configure or counters_reset starts them again"
            )));
        } else if let Some(v) = slot.and_then(|i| self.vc.values().get(i)) {
            v
        } else {
            return Err(Some(format!(
                "rdpmc index {index:#x}: the task has no counter with this index (its virtual \
                 TSC is index {VIRTUAL_TSC_INDEX:#x}; {} hardware counters are configured)",
                self.hw.len()
            )));
        };
        self.ctx.rax = value & 0xffff_ffff;
        self.ctx.rdx = value >> 32;
        self.ctx.rip += 2;
        self.rdpmc_emulated += 1;
        Ok(())
    }
}

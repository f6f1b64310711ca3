//! The crew: a worker thread on every CPU of the run but the task's own (which works inline),
//! each waiting on its mailbox for a job: one side of a ping-pong, a stream, a chase. Each
//! worker counts the run's events on its own CPU (its own counters), so every side reports
//! what it executed.
//!
//! Waits for the next job always PAUSE: a worker idles between jobs, and under QEMU's
//! round-robin TCG the PAUSE hands the turn to the CPUs doing work.

use core::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use core::fmt::Write as _;

use baremark_sdk::{Buf, CpuEntry, Error, thread};

use crate::{CpuSet, Events, MAX_CPUS, MAX_EVENTS};

/// Result words of a job: two of the job's own (e.g. TSC ticks, a checksum), then one count
/// per event.
pub const OUT_WORDS: usize = 2 + MAX_EVENTS;

/// One CPU's mailbox, on its own cache lines (no false sharing between workers).
#[repr(align(128))]
pub struct Mailbox {
    /// Bumped by the task to post a job; the worker takes the job when it changes.
    seq: AtomicU64,
    op: AtomicU64,
    a: AtomicU64,
    b: AtomicU64,
    /// The `seq` of the last job the worker finished.
    done: AtomicU64,
    /// Set by the worker once its counters are configured (and its status recorded).
    ready: AtomicU64,
    pub out: [AtomicU64; OUT_WORDS],
}

impl Mailbox {
    const fn new() -> Mailbox {
        Mailbox {
            seq: AtomicU64::new(0),
            op: AtomicU64::new(0),
            a: AtomicU64::new(0),
            b: AtomicU64::new(0),
            done: AtomicU64::new(0),
            ready: AtomicU64::new(0),
            out: [const { AtomicU64::new(0) }; OUT_WORDS],
        }
    }
}

pub static MAIL: [Mailbox; MAX_CPUS] = [const { Mailbox::new() }; MAX_CPUS];

/// What a worker does with a job: `(op, a, b)` as posted; it writes its results into `out`.
pub type Job = fn(op: u64, a: u64, b: u64, out: &[AtomicU64; OUT_WORDS]);

/// The job function (a `Job` as an address), set before any worker starts.
static JOB: AtomicUsize = AtomicUsize::new(0);
/// The events every side counts (`counters_configure` entries).
static EVENT_CODES: [AtomicU64; MAX_EVENTS] = [const { AtomicU64::new(0) }; MAX_EVENTS];
static EVENT_N: AtomicUsize = AtomicUsize::new(0);
/// Per CPU: 0 when its counters count the events, else `counters_configure`'s error.
pub static COUNTER_STATUS: [AtomicI64; MAX_CPUS] = [const { AtomicI64::new(0) }; MAX_CPUS];
/// Per CPU: its worker's thread id.
static THREAD_ID: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

const QUIT: u64 = u64::MAX;

/// PAUSE: a spin-wait hint (`core::hint::spin_loop` emits nothing on this SSE-less target).
#[inline(always)]
pub fn pause() {
    // SAFETY: PAUSE only delays the next instruction; no memory, stack or flags.
    unsafe { core::arch::asm!("pause", options(nomem, nostack, preserves_flags)) };
}

/// The CPU's events counted now, into `out`; zeros when its counters could not count them.
#[inline(always)]
pub fn counts(out: &mut [u64; MAX_EVENTS]) {
    let n = EVENT_N.load(Ordering::Relaxed);
    if n > 0 && baremark_sdk::counters_read(&mut out[..n]).is_err() {
        *out = [0; MAX_EVENTS];
    }
}

/// Programs this CPU's counters with the run's events; records the outcome for `cpu`.
fn configure(cpu: usize) {
    let n = EVENT_N.load(Ordering::Relaxed);
    if n == 0 {
        return;
    }
    let mut codes = [0u64; MAX_EVENTS];
    for (c, e) in codes.iter_mut().zip(&EVENT_CODES) {
        *c = e.load(Ordering::Relaxed);
    }
    let status = match baremark_sdk::counters_configure(&codes[..n]) {
        Ok(_) => 0,
        Err(e) => code_of(e),
    };
    COUNTER_STATUS[cpu].store(status, Ordering::Relaxed);
}

fn code_of(e: Error) -> i64 {
    match e {
        Error::Invalid => -1,
        Error::Fault => -2,
        Error::NoSys => -3,
        Error::NoEnt => -4,
        Error::Busy => -5,
        Error::NoSpace => -6,
        Error::Counters => -8,
        Error::NoMem => -9,
        Error::Limit => -10,
        Error::NoDev => -11,
        Error::Perm => -12,
        Error::Other(c) => c,
    }
}

fn run_job(op: u64, a: u64, b: u64, out: &[AtomicU64; OUT_WORDS]) {
    let addr = JOB.load(Ordering::Acquire);
    // SAFETY: `Crew::start` stored a `Job` (a function pointer's address) before any worker
    // started, and nothing stores anything else.
    let job: Job = unsafe { core::mem::transmute::<usize, Job>(addr) };
    job(op, a, b, out);
}

/// A worker: configures its CPU's counters, then runs posted jobs until told to quit.
fn worker(cpu: u64) -> i64 {
    let cpu = cpu as usize;
    configure(cpu);
    let m = &MAIL[cpu];
    m.ready.store(1, Ordering::Release);
    let mut seen = 0;
    loop {
        let seq = loop {
            let s = m.seq.load(Ordering::Acquire);
            if s != seen {
                break s;
            }
            pause();
        };
        seen = seq;
        let op = m.op.load(Ordering::Relaxed);
        if op == QUIT {
            m.done.store(seq, Ordering::Release);
            return 0;
        }
        run_job(
            op,
            m.a.load(Ordering::Relaxed),
            m.b.load(Ordering::Relaxed),
            &m.out,
        );
        m.done.store(seq, Ordering::Release);
    }
}

/// The workers of a run.
pub struct Crew {
    pub cpus: CpuSet,
    /// The task's own CPU (it works inline).
    pub me: usize,
}

/// Why the crew could not start: the CPU and the error.
pub struct StartError {
    pub cpu: usize,
    pub error: Error,
}

impl Crew {
    /// Starts a worker on every CPU of `cpus` but `me`; counts `events` on every side.
    /// A CPU that cannot take a worker stops the start (the workers started are told to quit).
    pub fn start(
        cpus: CpuSet,
        me: usize,
        job: Job,
        events: &Events<'_>,
    ) -> Result<Crew, StartError> {
        for (slot, code) in EVENT_CODES.iter().zip(events.codes) {
            slot.store(code, Ordering::Relaxed);
        }
        EVENT_N.store(events.n, Ordering::Relaxed);
        JOB.store(job as usize, Ordering::Release);
        configure(me);
        let mut crew = Crew {
            cpus: CpuSet::EMPTY,
            me,
        };
        crew.cpus.insert(me);
        for cpu in cpus.iter().filter(|&c| c != me) {
            match thread::start(cpu as u64, worker, cpu as u64) {
                Ok(id) => {
                    THREAD_ID[cpu].store(id, Ordering::Relaxed);
                    crew.cpus.insert(cpu);
                }
                Err(error) => {
                    crew.finish();
                    return Err(StartError { cpu, error });
                }
            }
        }
        // Every worker has configured its counters before the run says how they went.
        for cpu in crew.cpus.iter().filter(|&c| c != me) {
            while MAIL[cpu].ready.load(Ordering::Acquire) == 0 {
                pause();
            }
        }
        Ok(crew)
    }

    fn post(&self, cpu: usize, op: u64, a: u64, b: u64) {
        let m = &MAIL[cpu];
        m.op.store(op, Ordering::Relaxed);
        m.a.store(a, Ordering::Relaxed);
        m.b.store(b, Ordering::Relaxed);
        m.seq.fetch_add(1, Ordering::Release);
    }

    fn wait(&self, cpu: usize) {
        let m = &MAIL[cpu];
        let seq = m.seq.load(Ordering::Relaxed);
        while m.done.load(Ordering::Acquire) != seq {
            pause();
        }
    }

    /// Runs the jobs together, one per CPU (`(cpu, op, a, b)`): posts the other CPUs' jobs,
    /// runs the task's own inline, and waits for all. Results are in `MAIL[cpu].out`.
    pub fn run(&self, jobs: &[(usize, u64, u64, u64)]) {
        for &(cpu, op, a, b) in jobs.iter().filter(|j| j.0 != self.me) {
            self.post(cpu, op, a, b);
        }
        for &(_, op, a, b) in jobs.iter().filter(|j| j.0 == self.me) {
            run_job(op, a, b, &MAIL[self.me].out);
        }
        for &(cpu, ..) in jobs.iter().filter(|j| j.0 != self.me) {
            self.wait(cpu);
        }
    }

    /// Tells every worker to quit and joins it.
    pub fn finish(&self) {
        for cpu in self.cpus.iter().filter(|&c| c != self.me) {
            self.post(cpu, QUIT, 0, 0);
        }
        for cpu in self.cpus.iter().filter(|&c| c != self.me) {
            let _ = thread::join(THREAD_ID[cpu].load(Ordering::Relaxed));
        }
    }
}

/// Whether this runs in a virtual machine (CPUID.1:ECX[31]).
pub fn hypervisor() -> bool {
    let ecx = core::arch::x86_64::__cpuid(1).ecx;
    ecx & (1 << 31) != 0
}

/// Whether the CPU is AMD's (CPUID.0 vendor "AuthenticAMD"; its EBX is "Auth").
pub fn amd() -> bool {
    let ebx = core::arch::x86_64::__cpuid(0).ebx;
    ebx == u32::from_le_bytes(*b"Auth")
}

/// What both payloads begin with: their argument text (checked against `known`), the CPU the
/// task runs on, the online CPUs and the set `cpus=` names (default all), each named CPU
/// online. `Err` is the message for the payload's error report.
pub struct Start<'a> {
    pub text: &'a str,
    pub me: usize,
    pub cpus: CpuSet,
    pub online: [CpuEntry; MAX_CPUS],
    pub n_online: usize,
}

/// Reads the arguments into `buf` and the CPUs; see [`Start`]. The error is the message itself
/// (payloads have no allocator to box it; it is returned once, at start-up).
#[allow(clippy::result_large_err)]
pub fn start<'a>(buf: &'a mut [u8; 1024], known: &[&str]) -> Result<Start<'a>, Buf<256>> {
    let mut msg = Buf::<256>::new();
    let n = baremark_sdk::args(buf).unwrap_or(0).min(buf.len());
    let text = core::str::from_utf8(&buf[..n]).unwrap_or("");
    if let Some(bad) = crate::unknown_arg(text, known) {
        let _ = write!(msg, "unknown argument `{bad}` (known:");
        for k in known {
            let _ = write!(msg, " {k}=");
        }
        let _ = write!(msg, ")");
        return Err(msg);
    }
    let mut online = [CpuEntry::default(); MAX_CPUS];
    let Ok((me, n_online)) = baremark_sdk::cpus(&mut online) else {
        let _ = write!(msg, "the cpus syscall failed");
        return Err(msg);
    };
    let mut all = CpuSet::EMPTY;
    online[..n_online]
        .iter()
        .for_each(|c| all.insert(c.index as usize));
    let cpus = match CpuSet::parse(crate::arg(text, "cpus").unwrap_or("all"), &all) {
        Ok(c) => c,
        Err(e) => {
            let _ = write!(msg, "{e}");
            return Err(msg);
        }
    };
    if let Some(off) = cpus.iter().find(|&c| !all.contains(c)) {
        let _ = write!(msg, "cpus: CPU {off} is not online ({n_online} are)");
        return Err(msg);
    }
    Ok(Start {
        text,
        me: me as usize,
        cpus,
        online,
        n_online,
    })
}

/// The setup report's `events=` and `counters=` lines: the events' names, then `ok` or
/// `CPU:ERROR,...` for the CPUs of `cpus` whose counters could not count them.
pub fn write_events_and_counters<const N: usize>(
    buf: &mut Buf<N>,
    events: &Events<'_>,
    cpus: impl Iterator<Item = usize>,
) {
    let _ = write!(buf, "\nevents=");
    for (i, name) in events.names[..events.n].iter().enumerate() {
        let _ = write!(buf, "{}{name}", if i > 0 { "," } else { "" });
    }
    let _ = write!(buf, "\ncounters=");
    let mut first = true;
    for c in cpus {
        let s = COUNTER_STATUS[c].load(Ordering::Relaxed);
        if let Err(e) = Error::check(s) {
            let _ = write!(
                buf,
                "{}{c}:{}",
                if first { "" } else { "," },
                crate::error_name(e)
            );
            first = false;
        }
    }
    if first {
        let _ = write!(buf, "ok");
    }
}

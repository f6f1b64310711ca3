//! `bandwidth`: memory bandwidth as cores are added, and latency under load (Intel MLC
//! `--max_bandwidth` and `--loaded_latency`; docs/cores.md).
//!
//! - Bandwidth: for k = 1, 2, ... N of the CPUs named, the first k start a kernel together (a
//!   common start: each waits at a barrier until all k are there) over a buffer of their own,
//!   each timing its own window with its TSC: `read` (8-byte loads summed), `write` (8-byte
//!   stores), `copy` (the first half of the buffer to the second: as many bytes read as
//!   written). Each core reports the bytes it moved, its ticks and its counts; the data is
//!   checked after each window (the loads' sum, the stores' and the copy's values), so the bytes
//!   reported are bytes moved.
//! - Loaded latency: a pointer chase through a random cycle of 64-byte lines on the first CPU,
//!   while k = 0, 1, ... N-1 others stream (`read`) until it is done; a streamer's ticks and
//!   counts are per pass over its buffer (its window holds as many passes as the chase took).
//!
//! The kernels use 8-byte scalar loads and stores (payloads are built without SSE), one line
//! (8 words) per loop iteration: `read` and `write` 11 instructions per 64 bytes, `copy` 20.
//!
//! Arguments (`--args bandwidth="..."`): `cpus=all|LIST` (default all online), `kernels=
//! read,write,copy`, `bytes=N` (each core's buffer: a multiple of 4096, at most 48 MiB / the
//! number of CPUs; default that, at most 16 MiB), `passes=N` over the buffer per window (1),
//! `reps=N` (5, at most 31), `loaded=on|off`, `loads=N` (chase loads per window, 100000),
//! `events=NAME=0xHEX,...|none`.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(body::run);

#[cfg(target_os = "none")]
mod body {
    use core::cell::UnsafeCell;
    use core::fmt::Write as _;
    use core::sync::atomic::{AtomicU64, Ordering};

    use baremark_payload_cores::workers::{self, Crew, MAIL, OUT_WORDS, pause};
    use baremark_payload_cores::{
        Events, MAX_EVENTS, MAX_REPS, arg, error_name, median_min_max, num_arg,
    };
    use baremark_sdk::Buf;

    const KNOWN: &[&str] = &[
        "cpus", "kernels", "bytes", "passes", "reps", "loaded", "loads", "events",
    ];

    /// The streams' memory, split evenly among the CPUs of the run.
    const STREAM_BYTES: usize = 48 << 20;
    /// The chase's memory.
    const CHASE_BYTES: usize = 8 << 20;
    const LINE: usize = 64;

    #[repr(C, align(4096))]
    struct Pool<const N: usize>(UnsafeCell<[u64; N]>);
    // SAFETY: each CPU touches only its own slice of the stream pool while it runs a job, the
    // task writes the pools only while no job runs (before posting, which orders the writes
    // with Release/Acquire), and the chase pool is only read by jobs.
    unsafe impl<const N: usize> Sync for Pool<N> {}

    static STREAMS: Pool<{ STREAM_BYTES / 8 }> = Pool(UnsafeCell::new([0; STREAM_BYTES / 8]));
    static CHASE: Pool<{ CHASE_BYTES / 8 }> = Pool(UnsafeCell::new([0; CHASE_BYTES / 8]));

    const OP_READ: u64 = 1;
    const OP_WRITE: u64 = 2;
    const OP_COPY: u64 = 3;
    const OP_CHASE: u64 = 4;
    const OP_STREAM_UNTIL_STOP: u64 = 5;

    /// The common start: jobs arrive here and go when `WANTED` have.
    static ARRIVED: AtomicU64 = AtomicU64::new(0);
    static WANTED: AtomicU64 = AtomicU64::new(0);
    /// Set when the chase is done: the streamers stop after their current pass.
    static STOP: AtomicU64 = AtomicU64::new(0);
    /// The per-core buffer size in bytes and passes per window (set before any job).
    static BYTES: AtomicU64 = AtomicU64::new(0);
    static PASSES: AtomicU64 = AtomicU64::new(1);
    /// Each CPU's slot in the stream pool (its position in the run's CPU list).
    static SLOT: [AtomicU64; baremark_payload_cores::MAX_CPUS] =
        [const { AtomicU64::new(0) }; baremark_payload_cores::MAX_CPUS];
    /// What the write kernel stores (changes every window, so a stale buffer is caught).
    static TOKEN: AtomicU64 = AtomicU64::new(0);

    fn barrier() {
        ARRIVED.fetch_add(1, Ordering::AcqRel);
        let want = WANTED.load(Ordering::Acquire);
        while ARRIVED.load(Ordering::Acquire) < want {
            pause();
        }
    }

    fn slice(cpu_slot: u64) -> *mut u64 {
        let words = BYTES.load(Ordering::Relaxed) as usize / 8;
        // SAFETY: the slot's slice lies inside the pool (`bytes * cpus <= STREAM_BYTES` was
        // checked), so the offset stays in the allocation.
        unsafe { (STREAMS.0.get() as *mut u64).add(cpu_slot as usize * words) }
    }

    /// `read`: adds every word of `lines` 64-byte lines at `p`; 11 instructions per line.
    #[inline(never)]
    fn read_lines(p: *const u64, lines: u64) -> u64 {
        let mut sum = 0u64;
        // SAFETY: reads `lines * 64` bytes from `p`, all inside the caller's slice.
        unsafe {
            core::arch::asm!(
                "2:",
                "add {s}, [{p}]", "add {s}, [{p} + 8]", "add {s}, [{p} + 16]", "add {s}, [{p} + 24]",
                "add {s}, [{p} + 32]", "add {s}, [{p} + 40]", "add {s}, [{p} + 48]", "add {s}, [{p} + 56]",
                "add {p}, 64", "dec {n}", "jnz 2b",
                p = inout(reg) p => _, n = inout(reg) lines => _, s = inout(reg) sum,
                options(nostack, readonly),
            );
        }
        sum
    }

    /// `write`: stores `v` to every word of `lines` lines at `p`; 11 instructions per line.
    #[inline(never)]
    fn write_lines(p: *mut u64, lines: u64, v: u64) {
        // SAFETY: writes `lines * 64` bytes at `p`, all inside the caller's slice, which only
        // this CPU uses while the job runs.
        unsafe {
            core::arch::asm!(
                "2:",
                "mov [{p}], {v}", "mov [{p} + 8], {v}", "mov [{p} + 16], {v}", "mov [{p} + 24], {v}",
                "mov [{p} + 32], {v}", "mov [{p} + 40], {v}", "mov [{p} + 48], {v}", "mov [{p} + 56], {v}",
                "add {p}, 64", "dec {n}", "jnz 2b",
                p = inout(reg) p => _, n = inout(reg) lines => _, v = in(reg) v,
                options(nostack),
            );
        }
    }

    /// `copy`: `lines` lines from `s` to `d`; 20 instructions per line.
    #[inline(never)]
    fn copy_lines(s: *const u64, d: *mut u64, lines: u64) {
        // SAFETY: reads `lines * 64` bytes at `s` and writes as many at `d`, both halves of the
        // caller's own slice (disjoint).
        unsafe {
            core::arch::asm!(
                "2:",
                "mov {t}, [{s}]", "mov [{d}], {t}", "mov {t}, [{s} + 8]", "mov [{d} + 8], {t}",
                "mov {t}, [{s} + 16]", "mov [{d} + 16], {t}", "mov {t}, [{s} + 24]", "mov [{d} + 24], {t}",
                "mov {t}, [{s} + 32]", "mov [{d} + 32], {t}", "mov {t}, [{s} + 40]", "mov [{d} + 40], {t}",
                "mov {t}, [{s} + 48]", "mov [{d} + 48], {t}", "mov {t}, [{s} + 56]", "mov [{d} + 56], {t}",
                "add {s}, 64", "add {d}, 64", "dec {n}", "jnz 2b",
                s = inout(reg) s => _, d = inout(reg) d => _, n = inout(reg) lines => _, t = out(reg) _,
                options(nostack),
            );
        }
    }

    /// `loads` dependent loads along the chain from `p`; 3 instructions per load.
    #[inline(never)]
    fn chase(p: *const u64, loads: u64) -> u64 {
        let mut p = p as u64;
        // SAFETY: every node of the chain holds the address of another node of the chase pool.
        unsafe {
            core::arch::asm!(
                "2:", "mov {p}, [{p}]", "dec {n}", "jnz 2b",
                p = inout(reg) p, n = inout(reg) loads => _,
                options(nostack, readonly),
            );
        }
        p
    }

    /// The expected sum of a slice filled by [`fill`] (wrapping): word i of slot s holds
    /// `s << 40 | i`.
    fn expected_sum(slot: u64, words: u64) -> u64 {
        (slot << 40)
            .wrapping_mul(words)
            .wrapping_add(words.wrapping_mul(words.wrapping_sub(1)) / 2)
    }

    fn fill(slot: u64) {
        let words = BYTES.load(Ordering::Relaxed) / 8;
        let p = slice(slot);
        for i in 0..words {
            // SAFETY: `i` < the slice's words.
            unsafe { p.add(i as usize).write_volatile((slot << 40) | i) };
        }
    }

    /// A job. `a` = the CPU's stream slot, or the chase's loads; `b` unused. Results: out[0]
    /// ticks, out[1] 1 when the data checked out (the chase: the node it ended on), counts.
    fn job(op: u64, a: u64, _b: u64, out: &[AtomicU64; OUT_WORDS]) {
        let bytes = BYTES.load(Ordering::Relaxed);
        let passes = PASSES.load(Ordering::Relaxed);
        let lines = bytes / LINE as u64;
        let p = slice(a);
        let (mut e0, mut e1, mut c0, mut c1) = (
            [0u64; MAX_EVENTS],
            [0; MAX_EVENTS],
            [0; MAX_EVENTS],
            [0; MAX_EVENTS],
        );
        workers::counts(&mut e0);
        let t0 = baremark_sdk::rdtsc();
        let t1 = baremark_sdk::rdtsc();
        workers::counts(&mut e1);
        core::hint::black_box((t0, t1));
        let token = TOKEN.load(Ordering::Relaxed);
        barrier();
        workers::counts(&mut c0);
        let t0 = baremark_sdk::rdtsc();
        let mut sum = 0u64;
        let mut end = 0u64;
        let mut done_passes = 0u64;
        match op {
            OP_READ => (0..passes).for_each(|_| sum = sum.wrapping_add(read_lines(p, lines))),
            OP_WRITE => (0..passes).for_each(|_| write_lines(p, lines, token)),
            OP_COPY => {
                // SAFETY: the second half of the CPU's own slice.
                let d = unsafe { p.add(bytes as usize / 16) };
                (0..passes).for_each(|_| copy_lines(p, d, lines / 2));
            }
            OP_CHASE => {
                end = chase(CHASE.0.get() as *const u64, a);
                STOP.store(1, Ordering::Release);
            }
            _ => {
                // Stream until the chase is done (at least one pass).
                loop {
                    sum = sum.wrapping_add(read_lines(p, lines));
                    done_passes += 1;
                    if STOP.load(Ordering::Acquire) != 0 {
                        break;
                    }
                }
            }
        }
        let t1 = baremark_sdk::rdtsc();
        workers::counts(&mut c1);
        let words = bytes / 8;
        let ok = match op {
            OP_READ => sum == expected_sum(a, words).wrapping_mul(passes),
            OP_STREAM_UNTIL_STOP => sum == expected_sum(a, words).wrapping_mul(done_passes),
            OP_WRITE => (0..words).all(|i| {
                // SAFETY: word i < words of the CPU's own slice, read after its window.
                unsafe { p.add(i as usize).read_volatile() == token }
            }),
            OP_COPY => (0..words / 2).all(|i| {
                // SAFETY: words i and words/2 + i of the CPU's own slice, after its window.
                unsafe {
                    p.add(i as usize).read_volatile()
                        == p.add((words / 2 + i) as usize).read_volatile()
                }
            }),
            _ => end != 0,
        };
        // A streamer's window holds however many passes fit the chase: its figures are per
        // pass.
        let per = if op == OP_STREAM_UNTIL_STOP {
            done_passes.max(1)
        } else {
            1
        };
        out[0].store(t1.wrapping_sub(t0) / per, Ordering::Relaxed);
        out[1].store(done_passes << 1 | ok as u64, Ordering::Relaxed);
        for (i, o) in out[2..].iter().enumerate() {
            let empty = e1[i].wrapping_sub(e0[i]);
            o.store(
                c1[i].wrapping_sub(c0[i]).saturating_sub(empty) / per,
                Ordering::Relaxed,
            );
        }
    }

    /// A random cycle through the chase pool's lines (Sattolo's shuffle, xorshift64: the same
    /// on every run); each line's first word holds the next line's address.
    fn build_chase() {
        let base = CHASE.0.get() as *mut u64;
        let n = CHASE_BYTES / LINE;
        let words_per_line = LINE / 8;
        // order[i]: a permutation of the lines, built in place in each line's second word.
        for i in 0..n {
            // SAFETY: line i's second word is in the pool.
            unsafe { base.add(i * words_per_line + 1).write(i as u64) };
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let j = (x % i as u64) as usize;
            // SAFETY: i and j < n.
            unsafe {
                let (a, b) = (
                    base.add(i * words_per_line + 1),
                    base.add(j * words_per_line + 1),
                );
                let t = a.read();
                a.write(b.read());
                b.write(t);
            }
        }
        for i in 0..n {
            // SAFETY: as above; the cycle visits order[0], order[1], ... order[n-1], order[0].
            unsafe {
                let from = base.add(i * words_per_line + 1).read() as usize;
                let to = base.add(((i + 1) % n) * words_per_line + 1).read() as usize;
                base.add(from * words_per_line)
                    .write(base.add(to * words_per_line) as u64);
            }
        }
    }

    fn fail(what: &str) -> i64 {
        let mut buf = Buf::<256>::new();
        let _ = write!(buf, "bw_error={what}");
        let _ = baremark_sdk::report(buf.as_str());
        2
    }

    /// One report per CPU of a window run `reps` times.
    fn report_cores(
        head: &str,
        cpus: &[usize],
        reps: usize,
        results: &mut [[[u64; MAX_REPS]; OUT_WORDS]],
    ) -> u64 {
        let mut lost = 0;
        for (k, &cpu) in cpus.iter().enumerate() {
            let mut buf = Buf::<512>::new();
            let _ = write!(buf, "{head}\ncpu={cpu}");
            let r = &mut results[k];
            let all_ok = r[1][..reps].iter().all(|v| v & 1 == 1);
            let passes_min = r[1][..reps].iter().map(|v| v >> 1).min().unwrap_or(0);
            let _ = write!(buf, "\nok={}", all_ok as u8);
            if head.starts_with("ll=stream") {
                let _ = write!(buf, "\npasses_min={passes_min}");
            }
            for (w, key) in [(0, "tsc")]
                .into_iter()
                .chain((2..OUT_WORDS).map(|w| (w, "")))
            {
                if w >= 2 && w - 2 >= EVENTS_N.load(Ordering::Relaxed) as usize {
                    break;
                }
                if let Some((m, lo, hi)) = median_min_max(&mut r[w][..reps]) {
                    if w == 0 {
                        let _ = write!(buf, "\n{key}={m}/{lo}/{hi}");
                    } else {
                        let _ = write!(buf, "\ne.{}={m}/{lo}/{hi}", w - 2);
                    }
                }
            }
            if baremark_sdk::report(buf.as_str()).is_err() {
                lost += 1;
            }
        }
        lost
    }

    static EVENTS_N: AtomicU64 = AtomicU64::new(0);

    /// Per CPU (of at most 64 at a time), per result word, per repetition; and the jobs of
    /// one window. Static: a task's stack is 64 KiB.
    type Table = [[[u64; MAX_REPS]; OUT_WORDS]; 64];
    type Jobs = [(usize, u64, u64, u64); baremark_payload_cores::MAX_CPUS];
    static RESULTS: Pool2<Table> = Pool2(UnsafeCell::new([[[0; MAX_REPS]; OUT_WORDS]; 64]));
    static JOBS: Pool2<Jobs> = Pool2(UnsafeCell::new(
        [(0, 0, 0, 0); baremark_payload_cores::MAX_CPUS],
    ));

    struct Pool2<T>(UnsafeCell<T>);
    // SAFETY: only the task (one thread: the coordinator) touches these.
    unsafe impl<T> Sync for Pool2<T> {}

    pub fn run() -> i64 {
        let mut args = [0u8; 1024];
        let start = match workers::start(&mut args, KNOWN) {
            Ok(s) => s,
            Err(msg) => return fail(msg.as_str()),
        };
        let (text, me, set) = (start.text, start.me, start.cpus);
        let mut cpus = [0usize; baremark_payload_cores::MAX_CPUS];
        let ncpu = set.len();
        for (slot, c) in set.iter().enumerate() {
            cpus[slot] = c;
            SLOT[c].store(slot as u64, Ordering::Relaxed);
        }
        let cpus = &cpus[..ncpu];
        let most = (STREAM_BYTES / ncpu) as u64 / 4096 * 4096;
        let default_bytes = most.min(16 << 20);
        let (bytes, passes, reps, loads) = match (
            num_arg(text, "bytes", default_bytes, 4096, most),
            num_arg(text, "passes", 1, 1, 1_000_000),
            num_arg(text, "reps", 5, 1, MAX_REPS as u64),
            num_arg(text, "loads", 100_000, 1, 1_000_000_000),
        ) {
            (Ok(b), Ok(p), Ok(r), Ok(l)) => (b, p, r as usize, l),
            (Err(k), ..) | (_, Err(k), ..) | (_, _, Err(k), _) | (.., Err(k)) => return fail(k),
        };
        if bytes % 4096 != 0 {
            return fail("bytes: give a multiple of 4096");
        }
        let kernels = arg(text, "kernels").unwrap_or("read,write,copy");
        if kernels
            .split(',')
            .any(|k| !matches!(k, "read" | "write" | "copy"))
        {
            return fail("kernels: give read, write, copy or a list of them");
        }
        let loaded = match arg(text, "loaded") {
            None | Some("on") => true,
            Some("off") => false,
            Some(_) => return fail("loaded: give on or off"),
        };
        let events = match arg(text, "events").map(Events::parse) {
            None => Events::default_for(workers::amd()),
            Some(Ok(e)) => e,
            Some(Err(_)) => return fail("events: give NAME=0xHEX,... (at most 4) or none"),
        };
        EVENTS_N.store(events.n as u64, Ordering::Relaxed);
        BYTES.store(bytes, Ordering::Relaxed);
        PASSES.store(passes, Ordering::Relaxed);
        if loaded {
            build_chase();
        }
        let crew = match Crew::start(set, me, job, &events) {
            Ok(c) => c,
            Err(e) => {
                let mut buf = Buf::<128>::new();
                let _ = write!(
                    buf,
                    "thread_start on CPU {}: {}",
                    e.cpu,
                    error_name(e.error)
                );
                return fail(buf.as_str());
            }
        };
        let mut buf = Buf::<1024>::new();
        let _ = write!(buf, "bw_setup=1\ncpus=");
        for (i, c) in cpus.iter().enumerate() {
            let _ = write!(buf, "{}{c}", if i > 0 { "," } else { "" });
        }
        let _ = write!(
            buf,
            "\nbytes={bytes}\npasses={passes}\nreps={reps}\nkernels={kernels}\nloaded={}\nloads={loads}",
            if loaded { "on" } else { "off" }
        );
        workers::write_events_and_counters(&mut buf, &events, cpus.iter().copied());
        let _ = baremark_sdk::report(buf.as_str());

        // SAFETY: the task alone uses these, and only here (see `Pool2`).
        let (results, jobs) = unsafe { (&mut *RESULTS.0.get(), &mut *JOBS.0.get()) };
        let mut lost = 0;
        for kernel in kernels.split(',') {
            let op = match kernel {
                "read" => OP_READ,
                "write" => OP_WRITE,
                _ => OP_COPY,
            };
            // The known pattern again (the write and copy kernels change it), outside any
            // window: the read kernel's sum is checked against it.
            for slot in 0..ncpu as u64 {
                fill(slot);
            }
            for k in 1..=ncpu {
                // Per-core results are kept for at most 64 cores at a time (the rest report
                // through the same loop in chunks).
                for chunk_start in (0..k).step_by(64) {
                    let chunk = chunk_start..k.min(chunk_start + 64);
                    for r in 0..reps {
                        TOKEN.store(((k as u64) << 32) | (r as u64 + 1), Ordering::Relaxed);
                        ARRIVED.store(0, Ordering::Relaxed);
                        WANTED.store(k as u64, Ordering::Relaxed);
                        for (j, &c) in cpus[..k].iter().enumerate() {
                            jobs[j] = (c, op, SLOT[c].load(Ordering::Relaxed), 0);
                        }
                        crew.run(&jobs[..k]);
                        for (row, &c) in results.iter_mut().zip(&cpus[chunk.clone()]) {
                            for (w, word) in row.iter_mut().zip(&MAIL[c].out) {
                                w[r] = word.load(Ordering::Relaxed);
                            }
                        }
                    }
                    let mut head = Buf::<64>::new();
                    let _ = write!(head, "bw={kernel}\ncores={k}\nbytes={}", bytes * passes);
                    lost += report_cores(head.as_str(), &cpus[chunk.clone()], reps, results);
                }
            }
        }
        if loaded {
            for slot in 0..ncpu as u64 {
                fill(slot);
            }
            for k in 0..ncpu {
                for r in 0..reps {
                    ARRIVED.store(0, Ordering::Relaxed);
                    WANTED.store(k as u64 + 1, Ordering::Relaxed);
                    STOP.store(0, Ordering::Relaxed);
                    jobs[0] = (cpus[0], OP_CHASE, loads, 0);
                    for (j, &c) in cpus[1..=k].iter().enumerate() {
                        jobs[j + 1] = (c, OP_STREAM_UNTIL_STOP, SLOT[c].load(Ordering::Relaxed), 0);
                    }
                    crew.run(&jobs[..=k]);
                    for (row, &c) in results.iter_mut().zip(&cpus[..=k.min(63)]) {
                        for (w, word) in row.iter_mut().zip(&MAIL[c].out) {
                            w[r] = word.load(Ordering::Relaxed);
                        }
                    }
                }
                let mut head = Buf::<64>::new();
                let _ = write!(head, "ll=chase\nstreamers={k}\nloads={loads}");
                lost += report_cores(head.as_str(), &cpus[..1], reps, &mut results[..1]);
                if k > 0 {
                    let mut head = Buf::<64>::new();
                    let _ = write!(head, "ll=stream\nstreamers={k}\nbytes_per_pass={bytes}");
                    let shown = k.min(63);
                    lost += report_cores(
                        head.as_str(),
                        &cpus[1..=shown],
                        reps,
                        &mut results[1..=shown],
                    );
                }
            }
        }
        crew.finish();
        let mut buf = Buf::<128>::new();
        let _ = write!(buf, "bw_done=1\nreports_lost={lost}");
        let _ = baremark_sdk::report(buf.as_str());
        if lost == 0 { 0 } else { 1 }
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

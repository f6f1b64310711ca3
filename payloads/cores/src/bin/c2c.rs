//! `c2c`: core-to-core latency, the time a cache line takes to move from one core to another
//! (nviennot/core-to-core-latency, Intel MLC `--c2c_latency`; docs/cores.md). For every
//! ordered pair of the CPUs named (`from` starts, `to` answers), two variants:
//!
//! - `cas`: one line; `from` turns it from PING to PONG with a compare-and-swap, `to` turns it
//!   back: a round trip is two moves of the line, so one-way latency = round trip / 2.
//! - `rw`: two lines; `from` writes sequence number k to its line and waits for it on `to`'s,
//!   `to` waits for k on `from`'s and writes it to its own: each line has one writer and one
//!   reader.
//!
//! Each pair runs `warmup` round trips, then `reps` repetitions of `rounds` round trips, each
//! timed by `from` (its TSC) and counted by both sides (each its own CPU's counters, less an
//! empty window's counts, so the counter reads' own cost is not in them). One
//! `report` per pair and variant; the host (`baremark c2c`, or `report` on a saved log)
//! makes the matrix, the heatmap, JSON and CSV.
//!
//! Arguments (`--args c2c="..."`): `cpus=all|LIST` (default all online), `rounds=N` (1000),
//! `warmup=N` (100), `reps=N` (7, at most 31), `variants=cas,rw`, `spin=auto|pause|busy`,
//! `events=NAME=0xHEX,...` (at most 4; default instructions:u and cycles:u; `none`).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(body::run);

#[cfg(target_os = "none")]
mod body {
    use core::fmt::Write as _;
    use core::sync::atomic::{AtomicU64, Ordering};

    use baremark_payload_cores::workers::{self, Crew, MAIL, OUT_WORDS, pause};
    use baremark_payload_cores::{
        CpuSet, Events, MAX_EVENTS, MAX_REPS, Spin, arg, error_name, median_min_max, num_arg,
    };
    use baremark_sdk::Buf;

    const KNOWN: &[&str] = &[
        "cpus", "rounds", "warmup", "reps", "variants", "spin", "events",
    ];

    const CAS_PING: u64 = 1;
    const CAS_PONG: u64 = 2;
    const RW_PING: u64 = 3;
    const RW_PONG: u64 = 4;

    const PING: u64 = 0;
    const PONG: u64 = 1;

    /// The lines, each alone on its own 128 bytes (adjacent-line prefetch pairs 64-byte lines).
    #[repr(align(128))]
    struct Line(AtomicU64);
    static CAS_LINE: Line = Line(AtomicU64::new(PING));
    static FROM_LINE: Line = Line(AtomicU64::new(0));
    static TO_LINE: Line = Line(AtomicU64::new(0));

    /// `n` CAS round-trip halves: each a compare-and-swap of the line from `want` to `next`,
    /// retried until the other side has turned it.
    #[inline(always)]
    fn cas<const P: bool>(want: u64, next: u64, n: u64) {
        for _ in 0..n {
            while CAS_LINE
                .0
                .compare_exchange(want, next, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                if P {
                    pause();
                }
            }
        }
    }

    /// `from`'s side of `rw`: writes k, waits for k to come back, for k in `first..first+n`.
    #[inline(always)]
    fn rw_from<const P: bool>(first: u64, n: u64) {
        for k in first..first + n {
            FROM_LINE.0.store(k, Ordering::Release);
            while TO_LINE.0.load(Ordering::Acquire) != k {
                if P {
                    pause();
                }
            }
        }
    }

    /// `to`'s side of `rw`: waits for k, writes it back.
    #[inline(always)]
    fn rw_to<const P: bool>(first: u64, n: u64) {
        for k in first..first + n {
            while FROM_LINE.0.load(Ordering::Acquire) != k {
                if P {
                    pause();
                }
            }
            TO_LINE.0.store(k, Ordering::Release);
        }
    }

    /// One side: `warmup` round trips (which also wait for the other side to arrive), then
    /// `rounds` timed and counted. `a` = rounds, `b` = warmup | pause << 63.
    fn side(op: u64, a: u64, b: u64, out: &[AtomicU64; OUT_WORDS]) {
        if b >> 63 != 0 {
            side_with::<true>(op, a, b & !(1 << 63), out)
        } else {
            side_with::<false>(op, a, b, out)
        }
    }

    #[inline(never)]
    fn side_with<const P: bool>(op: u64, rounds: u64, warmup: u64, out: &[AtomicU64; OUT_WORDS]) {
        let run = |first: u64, n: u64| match op {
            CAS_PING => cas::<P>(PING, PONG, n),
            CAS_PONG => cas::<P>(PONG, PING, n),
            RW_PING => rw_from::<P>(first, n),
            _ => rw_to::<P>(first, n),
        };
        run(1, warmup);
        // An empty window read the same way: its counts (the counter reads' own) are taken
        // off the window's, so the counts are the round trips' (and their loop's entry).
        let (mut e0, mut e1) = ([0u64; MAX_EVENTS], [0u64; MAX_EVENTS]);
        workers::counts(&mut e0);
        let t0 = baremark_sdk::rdtsc();
        let t1 = baremark_sdk::rdtsc();
        workers::counts(&mut e1);
        core::hint::black_box((t0, t1));
        let (mut c0, mut c1) = ([0u64; MAX_EVENTS], [0u64; MAX_EVENTS]);
        workers::counts(&mut c0);
        let t0 = baremark_sdk::rdtsc();
        run(1 + warmup, rounds);
        let t1 = baremark_sdk::rdtsc();
        workers::counts(&mut c1);
        out[0].store(t1.wrapping_sub(t0), Ordering::Relaxed);
        for (i, o) in out[2..].iter().enumerate() {
            let empty = e1[i].wrapping_sub(e0[i]);
            o.store(
                c1[i].wrapping_sub(c0[i]).saturating_sub(empty),
                Ordering::Relaxed,
            );
        }
    }

    fn fail(what: &str) -> i64 {
        let mut buf = Buf::<256>::new();
        let _ = write!(buf, "c2c_error={what}");
        let _ = baremark_sdk::report(buf.as_str());
        2
    }

    pub fn run() -> i64 {
        let mut args = [0u8; 1024];
        let start = match workers::start(&mut args, KNOWN) {
            Ok(s) => s,
            Err(msg) => return fail(msg.as_str()),
        };
        let (text, me, cpus) = (start.text, start.me, start.cpus);
        let online = &start.online[..start.n_online];
        if cpus.len() < 2 {
            return fail("cpus: name at least two CPUs (a pair)");
        }
        let (rounds, warmup, reps) = match (
            num_arg(text, "rounds", 1000, 1, 100_000_000),
            num_arg(text, "warmup", 100, 1, 100_000_000),
            num_arg(text, "reps", 7, 1, MAX_REPS as u64),
        ) {
            (Ok(r), Ok(w), Ok(p)) => (r, w, p as usize),
            (Err(k), ..) | (_, Err(k), _) | (.., Err(k)) => return fail(k),
        };
        let variants = arg(text, "variants").unwrap_or("cas,rw");
        let (do_cas, do_rw) = (variants.contains("cas"), variants.contains("rw"));
        if !(do_cas || do_rw) || variants.split(',').any(|v| v != "cas" && v != "rw") {
            return fail("variants: give cas, rw or cas,rw");
        }
        let Ok(spin) = Spin::parse(arg(text, "spin"), workers::hypervisor()) else {
            return fail("spin: give auto, pause or busy");
        };
        let default_events = Events::default_for(workers::amd());
        let events = match arg(text, "events").map(Events::parse) {
            None => default_events,
            Some(Ok(e)) => e,
            Some(Err(_)) => return fail("events: give NAME=0xHEX,... (at most 4) or none"),
        };
        let crew = match Crew::start(cpus, me, side, &events) {
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
        // The setup: what every pair's report refers to.
        let mut buf = Buf::<1024>::new();
        let _ = write!(
            buf,
            "c2c_setup=1\ncpus={}\nrounds={rounds}\nwarmup={warmup}\nreps={reps}\nspin={}\nvariants={variants}",
            List(&cpus),
            spin.name()
        );
        workers::write_events_and_counters(&mut buf, &events, cpus.iter());
        // On a hybrid part, each CPU's core type (CPUID.1AH), for the matrix's labels.
        if online.iter().any(|c| c.core_type != 0) {
            let _ = write!(buf, "\ncore_types=");
            for (i, c) in cpus.iter().enumerate() {
                let t = online
                    .iter()
                    .find(|e| e.index as usize == c)
                    .map_or(0, |e| e.core_type);
                let _ = write!(buf, "{}{t:#x}", if i > 0 { "," } else { "" });
            }
        }
        let _ = baremark_sdk::report(buf.as_str());

        let pause_bit = if spin == Spin::Pause { 1 << 63 } else { 0 };
        let mut lost = 0u64;
        for from in cpus.iter() {
            for to in cpus.iter().filter(|&t| t != from) {
                for (variant, ping, pong) in [("cas", CAS_PING, CAS_PONG), ("rw", RW_PING, RW_PONG)]
                {
                    if (variant == "cas" && !do_cas) || (variant == "rw" && !do_rw) {
                        continue;
                    }
                    let mut tsc = [0u64; MAX_REPS];
                    let mut from_c = [[0u64; MAX_REPS]; MAX_EVENTS];
                    let mut to_c = [[0u64; MAX_REPS]; MAX_EVENTS];
                    for r in 0..reps {
                        CAS_LINE.0.store(PING, Ordering::Relaxed);
                        FROM_LINE.0.store(0, Ordering::Relaxed);
                        TO_LINE.0.store(0, Ordering::Relaxed);
                        crew.run(&[
                            (to, pong, rounds, warmup | pause_bit),
                            (from, ping, rounds, warmup | pause_bit),
                        ]);
                        tsc[r] = MAIL[from].out[0].load(Ordering::Relaxed);
                        for e in 0..events.n {
                            from_c[e][r] = MAIL[from].out[2 + e].load(Ordering::Relaxed);
                            to_c[e][r] = MAIL[to].out[2 + e].load(Ordering::Relaxed);
                        }
                    }
                    let mut buf = Buf::<1024>::new();
                    let _ = write!(buf, "c2c={variant}\nfrom={from}\nto={to}\ntsc=");
                    for (i, t) in tsc[..reps].iter().enumerate() {
                        let _ = write!(buf, "{}{t}", if i > 0 { "," } else { "" });
                    }
                    for (side, counts) in [("from", &mut from_c), ("to", &mut to_c)] {
                        for (e, c) in counts[..events.n].iter_mut().enumerate() {
                            if let Some((med, min, max)) = median_min_max(&mut c[..reps]) {
                                let _ = write!(buf, "\n{side}.{e}={med}/{min}/{max}");
                            }
                        }
                    }
                    if baremark_sdk::report(buf.as_str()).is_err() {
                        lost += 1;
                    }
                }
            }
        }
        crew.finish();
        let mut buf = Buf::<128>::new();
        let _ = write!(buf, "c2c_done=1\nreports_lost={lost}");
        let _ = baremark_sdk::report(buf.as_str());
        if lost == 0 { 0 } else { 1 }
    }

    /// A CPU set as `0,1,2`.
    struct List<'a>(&'a CpuSet);

    impl core::fmt::Display for List<'_> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            for (i, c) in self.0.iter().enumerate() {
                write!(f, "{}{c}", if i > 0 { "," } else { "" })?;
            }
            Ok(())
        }
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}

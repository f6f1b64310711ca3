//! The reference cache simulator (tests/src/cachesim.rs), which issue 32's cache model in the
//! emulated PMU will be checked against, checked itself against cachegrind: the C program
//! tests/cachesim/loads.c makes random loads over a buffer (warm-up loads, then measured ones, on
//! source lines of their own), cachegrind simulates an L1D and an LL of a given geometry, and the
//! simulator, fed the same addresses (the same LCG, the buffer's address the program prints),
//! must count exactly the measured line's misses at each level. The warm-up gives every set many
//! more distinct lines than it has ways, so whatever the program touched before (the loader,
//! libc, the buffer's initialisation) is gone from both caches by the time the measured loads
//! start, and the simulator may start cold.
//!
//! Needs `cc` and valgrind (scripts/provision.sh installs them); the test fails, saying so,
//! without them.

use std::path::Path;
use std::process::Command;

use baremark_tests::cachesim::{Geometry, Hierarchy, lcg_lines};

const D1: Geometry = Geometry {
    size: 32 * 1024,
    ways: 8,
    line: 64,
};
const LL: Geometry = Geometry {
    size: 2 * 1024 * 1024,
    ways: 16,
    line: 64,
};
const SEED: u64 = 42;

/// Compiles tests/cachesim/loads.c into `dir`.
fn build(dir: &Path) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cachesim/loads.c");
    let exe = dir.join("loads");
    let out = Command::new("cc")
        .args(["-O2", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cc (a C compiler) is needed for this test: {e}"));
    assert!(
        out.status.success(),
        "cc {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The source line of `loads.c` marked `/* MEASURED */`.
fn measured_line() -> u64 {
    let src = include_str!("../cachesim/loads.c");
    src.lines()
        .position(|l| l.contains("/* MEASURED */"))
        .expect("the MEASURED line") as u64
        + 1
}

/// What cachegrind counts on the MEASURED line: (buffer address, Dr, D1mr, DLmr).
fn cachegrind(exe: &Path, dir: &Path, lines: u64, warm: u64, measured: u64) -> [u64; 4] {
    let out_file = dir.join(format!("cachegrind.out.{lines}"));
    let geometry = |g: Geometry| format!("{},{},{}", g.size, g.ways, g.line);
    let out = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes"])
        .arg(format!("--D1={}", geometry(D1)))
        .arg(format!("--LL={}", geometry(LL)))
        .arg(format!("--cachegrind-out-file={}", out_file.display()))
        .arg(exe)
        .args([lines, SEED, warm, measured].map(|v| v.to_string()))
        .output()
        .unwrap_or_else(|e| {
            panic!("valgrind is needed for this test (apt-get install valgrind): {e}")
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "valgrind: {}{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let base: u64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("base="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no base= in {stdout}"));
    let text = std::fs::read_to_string(&out_file).unwrap();
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .expect("cachegrind's events line")
        .split_whitespace()
        .collect();
    let col = |name: &str| {
        events
            .iter()
            .position(|e| *e == name)
            .unwrap_or_else(|| panic!("no {name} in {events:?}"))
    };
    let (dr, d1mr, dlmr) = (col("Dr"), col("D1mr"), col("DLmr"));
    let line = measured_line();
    let (mut file, mut func) = ("", "");
    let mut found = None;
    for l in text.lines() {
        if let Some(f) = l.strip_prefix("fl=") {
            file = f;
        } else if let Some(f) = l.strip_prefix("fn=") {
            func = f;
        } else if file.ends_with("loads.c") && func.ends_with("loads") {
            let v: Vec<u64> = l
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            if v.first() == Some(&line) {
                let at = |c: usize| v.get(c + 1).copied().unwrap_or(0);
                found = Some([base, at(dr), at(d1mr), at(dlmr)]);
            }
        }
    }
    found.unwrap_or_else(|| panic!("cachegrind has no counts for loads.c line {line}"))
}

/// The simulator's misses for the measured loads: (D1, LL).
fn simulate(base: u64, lines: u64, warm: u64, measured: u64) -> (u64, u64) {
    let mut h = Hierarchy::new(&[D1, LL]).unwrap();
    let (warm_lines, x) = lcg_lines(lines, SEED, warm);
    for l in warm_lines {
        h.access(base + 64 * l, 8);
    }
    h.reset_stats();
    for l in lcg_lines(lines, x, measured).0 {
        h.access(base + 64 * l, 8);
    }
    (h.stats()[0].misses, h.stats()[1].misses)
}

#[test]
fn the_simulator_counts_what_cachegrind_counts() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path());
    const MEASURED: u64 = 20_000;
    // Half of L1D (no misses once warm), 4x L1D inside LL, 2x LL.
    for lines in [256u64, 2048, 65536] {
        let warm = 10 * lines;
        let [base, dr, d1mr, dlmr] = cachegrind(&exe, dir.path(), lines, warm, MEASURED);
        assert_eq!(
            dr, MEASURED,
            "{lines} lines: cachegrind saw every measured load"
        );
        let (sim_d1, sim_ll) = simulate(base, lines, warm, MEASURED);
        eprintln!(
            "{lines} lines: cachegrind D1 {d1mr}, LL {dlmr}; simulator D1 {sim_d1}, LL {sim_ll}"
        );
        assert_eq!((sim_d1, sim_ll), (d1mr, dlmr), "{lines} lines");
        // The cases are the ones they mean to be.
        match lines {
            256 => assert_eq!(d1mr, 0),
            2048 => assert!(d1mr > MEASURED / 2 && dlmr == 0, "{d1mr} {dlmr}"),
            _ => assert!(dlmr > MEASURED / 4, "{dlmr}"),
        }
    }
}

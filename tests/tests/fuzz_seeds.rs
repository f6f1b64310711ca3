//! The fuzz targets' bodies (fuzz/src/targets.rs) over their committed seeds
//! (fuzz/seeds/<target>/), without libFuzzer: `cargo test` checks every target still builds
//! and its invariants hold on real inputs. The fuzzing itself is `scripts/fuzz.sh`.

// The targets name the host tool's modules `crate::records` and `crate::results` (in the fuzz
// crate they are compiled from boot/src; here they are the `baremark` crate's).
use baremark::{records, results};

#[path = "../../fuzz/src/targets.rs"]
#[allow(dead_code)]
mod targets;

use std::path::Path;

/// Runs `body` on every seed of `target`; there must be some.
fn over_seeds(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    for seed in seeds {
        let data = std::fs::read(&seed).unwrap_or_else(|e| panic!("{}: {e}", seed.display()));
        // Name the seed if the body panics.
        let run = std::panic::catch_unwind(|| body(&data));
        assert!(run.is_ok(), "{target}: fails on {}", seed.display());
    }
}

#[test]
fn event_spec() {
    over_seeds("event_spec", targets::event_spec);
}

#[test]
fn perfmon_json() {
    over_seeds("perfmon_json", targets::perfmon_json);
}

#[test]
fn perfmon_mapfile() {
    over_seeds("perfmon_mapfile", targets::perfmon_mapfile);
}

#[test]
fn event_table() {
    over_seeds("event_table", targets::event_table);
}

#[test]
fn nanobench_config() {
    over_seeds("nanobench_config", targets::nanobench_config);
}

#[test]
fn elf_plan() {
    over_seeds("elf_plan", targets::elf_plan);
}

#[test]
fn run_config() {
    over_seeds("run_config", targets::run_config);
}

#[test]
fn ramdisk() {
    over_seeds("ramdisk", targets::ramdisk);
}

#[test]
fn serial_records() {
    over_seeds("serial_records", targets::serial_records);
}

#[test]
fn results() {
    over_seeds("results", targets::results);
}

/// A seed set that is all rejected inputs would fuzz only the error paths: each binary-format
/// target has at least one seed its parser accepts.
#[test]
fn binary_seeds_include_valid_inputs() {
    use baremark_kernel::task::elf::{Limits, plan};
    use events::table::EventTable;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds");
    let read = |p: &str| std::fs::read(dir.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert!(plan(&read("elf_plan/text-data-bss.elf"), &Limits::default()).is_ok());
    assert_eq!(
        EventTable::from_bytes(&read("event_table/skx.tab"))
            .expect("skx.tab decodes")
            .len(),
        4
    );
    let tar = read("ramdisk/events.tar");
    let names: Vec<&str> = baremark_kernel::devices::ramdisk::entries(&tar)
        .map(|e| e.expect("a valid member").name)
        .collect();
    assert_eq!(
        names,
        [
            "run.cfg",
            "events/GenuineIntel-6-55.tab",
            "events/nanobench.cfg"
        ]
    );
    let recs =
        records::records_of_log(&String::from_utf8_lossy(&read("results/suite-excerpt.log")));
    let res = results::Results::from_records(&recs);
    assert!(!res.benchmarks.is_empty());
}

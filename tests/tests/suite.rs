//! The whole default suite under TCG with `-icount shift=0` (one TSC tick per instruction) and
//! `overhead = diff`, which takes every fixed part out: each benchmark whose instruction count
//! per iteration is a number it states in its `report` must measure exactly that, with no
//! spread and no interrupt. The few whose count the icount TSC cannot show are checked for
//! what they do show (QEMU counts each byte `rep movsb` moves; a syscall or an emulated RDPMC
//! also pays the kernel's fixed entry and exit path).

use std::time::Duration;

use baremark::image::{Firmware, Overhead};
use baremark::payloads::suite_payloads;
use baremark_tests::{
    bench_result, boot, expect_clean_harness_run, stated_instructions, suite_config,
};

#[test]
fn every_suite_benchmark_measures_its_stated_instruction_count_exactly() {
    let payloads = suite_payloads("default").expect("the default suite");
    assert_eq!(payloads.len(), 16, "the default suite's benchmarks");
    let config = suite_config(Overhead::Diff, None);
    let outcome = boot(Firmware::Bios, config, Duration::from_secs(300), Some(0));
    expect_clean_harness_run(&outcome);
    for p in &payloads {
        let name = p.name;
        let stated = stated_instructions(&outcome, name);
        let result = bench_result(&outcome, name, "tsc");
        let per = result.get("per_iteration");
        let median = per["median"].as_f64().unwrap();
        assert_eq!(per["stddev"].as_f64(), Some(0.0), "{name}: {per}");
        assert_eq!(per["min"], per["max"], "{name}: {per}");
        assert_eq!(result.u64("interrupts"), Some(0), "{name}");
        match name {
            // QEMU executes `rep movsb` one byte at a time and counts each: 4096 moved plus
            // the loop's 8 instructions.
            "rep-movsb" => assert_eq!(median, 4096.0 + 8.0, "{name}"),
            // The user side plus the kernel's fixed path around its TSC reads: more than the
            // 4 user instructions, less than a thousand.
            "syscall" | "read-rdpmc" => {
                assert_eq!(stated, "4");
                assert!(median > 4.0 && median < 1000.0, "{name}: {median}");
            }
            // A Rust loop around the SDK's reader: its count depends on the compiler.
            "read-fast" => assert!(median > 5.0 && median < 100.0, "{name}: {median}"),
            _ => {
                let stated: f64 = stated
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}: `{stated}` is not a number"));
                assert_eq!(median, stated, "{name}: {per}");
            }
        }
    }
}

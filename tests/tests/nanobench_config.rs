//! A nanoBench event config (`--config`, the ramdisk's `events/nanobench.cfg`) counted end to
//! end on the emulated Intel PMU (emulator/, exact under `-icount shift=0`): the kernel parses
//! the file, plans its lines after the `events` list, honours `CTR=` and `TakenAlone`, and the
//! results carry the config's names; lines the model cannot count are `<not supported>` with
//! the reason, never 0. Like every emulated-PMU test, it fails with the reason when that QEMU
//! cannot be built, rather than passing without having run.

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::payloads::builtin;
use baremark::qemu::PmuModel;
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_tests::{boot_emulated, expect_clean_harness_run};

const CONFIG: &str = "\
# nanoBench's format: EvtSel.UMASK(.options) Name; counted in user mode as nanoBench.sh does
C0.00 INST_RETIRED.ANY_P
C4.00 BR_INST_RETIRED.ALL_BRANCHES
C0.00.CTR=2 INST_RETIRED.ANY_P.CTR2
C4.00.TakenAlone BR_INST_RETIRED.ALONE
0E.01 UOPS_ISSUED.ANY
B7.01.MSR_RSP0=0x10001 OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE
";

fn run() -> RunOutcome {
    let payload = builtin("add-latency").expect("the suite's add-latency");
    let config = RunConfig {
        timer_checks: false,
        payloads: vec![(payload.name.to_string(), payload.elf.to_vec())],
        // perf's name= term, counted beside the config.
        events: Some("cpu/event=0xc0,umask=0x0,name=INST_RETIRED.NAMED/u".to_string()),
        nanobench_config: Some(CONFIG.to_string()),
        reps: Some(5),
        warmup: Some(1),
        ..RunConfig::default()
    };
    let outcome = boot_emulated(
        Firmware::Bios,
        config,
        Duration::from_secs(120),
        PmuModel::IntelV4,
    );
    expect_clean_harness_run(&outcome);
    outcome
}

fn result<'a>(outcome: &'a RunOutcome, event: &str) -> &'a Record {
    outcome
        .records_of("result")
        .find(|r| r.str("event") == Some(event))
        .unwrap_or_else(|| panic!("no result for {event}: {}", outcome.tail_text()))
}

/// A counted result: its per-iteration median (exact: no spread), counter and group.
fn counted(outcome: &RunOutcome, event: &str) -> (f64, String, u64) {
    let r = result(outcome, event);
    assert_eq!(r.get("supported").as_bool(), Some(true), "{}", r.value);
    assert_eq!(r.get("emulated").as_bool(), Some(true), "{}", r.value);
    let per = r.get("per_iteration");
    assert_eq!(per["stddev"].as_f64(), Some(0.0), "{event}: {per}");
    (
        per["median"].as_f64().unwrap(),
        r.str("counter").unwrap().to_string(),
        r.u64("group").unwrap(),
    )
}

#[test]
fn a_nanobench_config_is_counted_under_its_names() {
    let outcome = run();
    let stated: f64 = outcome
        .records_of("report")
        .find(|r| r.str("task") == Some("add-latency"))
        .expect("add-latency's report")
        .get("values")["instructions_per_iteration"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(stated, 10.0);
    let start = outcome
        .records_of("bench_start")
        .next()
        .expect("bench_start");
    let names: Vec<&str> = start
        .get("events")
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "INST_RETIRED.NAMED",
            "INST_RETIRED.ANY_P",
            "BR_INST_RETIRED.ALL_BRANCHES",
            "INST_RETIRED.ANY_P.CTR2",
            "BR_INST_RETIRED.ALONE",
            "UOPS_ISSUED.ANY",
            "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE",
        ]
    );
    // Exact counts per iteration: the loop's instructions, and its one branch.
    for name in [
        "INST_RETIRED.NAMED",
        "INST_RETIRED.ANY_P",
        "INST_RETIRED.ANY_P.CTR2",
    ] {
        assert_eq!(counted(&outcome, name).0, stated, "{name}");
    }
    for name in ["BR_INST_RETIRED.ALL_BRANCHES", "BR_INST_RETIRED.ALONE"] {
        assert_eq!(counted(&outcome, name).0, 1.0, "{name}");
    }
    // CTR=2: GP counter 2. TakenAlone: alone in its group.
    assert_eq!(counted(&outcome, "INST_RETIRED.ANY_P.CTR2").1, "gp2");
    let (_, _, alone) = counted(&outcome, "BR_INST_RETIRED.ALONE");
    let with_it = outcome
        .records_of("result")
        .filter(|r| r.u64("group") == Some(alone) && r.str("counter") != Some("tsc"))
        .count();
    assert_eq!(with_it, 1, "taken alone");
    assert_eq!(
        result(&outcome, "INST_RETIRED.ANY_P").u64("groups"),
        Some(2)
    );
    // What the model cannot count is not supported, with the reason; never a count of 0.
    for (name, why) in [
        ("UOPS_ISSUED.ANY", "does not model `UOPS_ISSUED.ANY`"),
        (
            "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE",
            "has no MSR 0x1a6 (MSR_OFFCORE_RSP_0)",
        ),
    ] {
        let r = result(&outcome, name);
        assert_eq!(r.get("supported").as_bool(), Some(false), "{}", r.value);
        assert!(r.str("reason").unwrap().contains(why), "{}", r.value);
        assert!(r.get("value").is_null(), "{}", r.value);
    }
}

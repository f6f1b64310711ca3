//! Machines unlike the default q35: no PIT, no HPET, neither (modern platforms gate the 8254),
//! and what ACPI says about each. Every row boots a short run (a payload under the watchdog,
//! which needs the TSC rate and the APIC timer) and asserts `end ok`, a plausible TSC rate, the
//! source it came from, and the sources that are absent. Under `-icount shift=0` the TSC counts
//! one per instruction, one instruction per ns of QEMU's virtual clock, which the HPET, the PM
//! timer and the PIT follow: each must then give 1 GHz within its own stated uncertainty.

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::{Accel, QemuOptions};
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_tests::{boot_with, expect_ok_end, expect_record};
use serde_json::Value;

/// Boots `payloads` with `-machine` options `machine` (merged with q35's), `icount`.
fn boot(firmware: Firmware, machine: Option<&str>, icount: Option<u32>) -> RunOutcome {
    let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
    qemu.timeout = Duration::from_secs(120);
    qemu.icount = icount;
    if let Some(m) = machine {
        qemu.extra_args = vec!["-machine".into(), m.into()];
    }
    let config = RunConfig {
        payloads: ["hello", "loop1000"]
            .iter()
            .map(|n| {
                let p = baremark::payloads::builtin(n).unwrap();
                (n.to_string(), p.elf.to_vec())
            })
            .collect(),
        task_budget_ms: Some(5000),
        ..RunConfig::default()
    };
    boot_with(qemu, config)
}

fn source<'a>(tsc: &'a Record, name: &str) -> &'a Value {
    &tsc.get("sources")[name]
}

/// The run ended ok, both payloads exited, the watchdog was armed (the rate was known).
fn expect_short_run_ok(outcome: &RunOutcome, row: &str) {
    expect_ok_end(outcome);
    let exits: Vec<&Record> = outcome.records_of("task_exit").collect();
    assert_eq!(exits.len(), 2, "{row}: {:#?}", outcome.tail);
    assert!(
        outcome
            .records_of("error")
            .all(|e| e.str("source") != Some("tasks")),
        "{row}: the watchdog was not armed: {:#?}",
        outcome.tail
    );
}

/// The chosen rate, checked plausible (50 MHz to 20 GHz) and with its method.
fn expect_rate(tsc: &Record, method: &str, row: &str) -> u64 {
    assert_eq!(tsc.str("method"), Some(method), "{row}: {:?}", tsc.value);
    let hz = tsc.u64("hz").unwrap();
    assert!((50_000_000..=20_000_000_000).contains(&hz), "{row}: {hz}");
    assert!(
        tsc.u64("uncertainty_hz").is_some(),
        "{row}: a calibration states its uncertainty"
    );
    hz
}

/// Under icount: every source that gave a rate gives 1 GHz within its stated uncertainty.
fn expect_one_ghz_within_uncertainty(tsc: &Record, row: &str) {
    let mut measured = 0;
    for name in ["hpet", "pm_timer", "pit"] {
        let s = source(tsc, name);
        if let Some(hz) = s.get("hz").and_then(Value::as_u64) {
            let u = s["uncertainty_hz"].as_u64().unwrap();
            assert!(
                hz.abs_diff(1_000_000_000) <= u,
                "{row}: {name} says {hz} +/- {u} Hz; the TSC is exactly 1 GHz under icount"
            );
            measured += 1;
        }
    }
    assert!(measured >= 1, "{row}: {:?}", tsc.value);
}

#[test]
fn default_q35_has_three_clocks_that_agree_bios_and_uefi() {
    for firmware in [Firmware::Bios, Firmware::Uefi] {
        let row = format!("q35 {firmware:?} icount");
        let outcome = boot(firmware, None, Some(0));
        expect_short_run_ok(&outcome, &row);
        let acpi = expect_record(&outcome, "acpi");
        assert!(
            matches!(acpi.str("state"), Some("ok")),
            "{row}: {:?}",
            acpi.value
        );
        assert_eq!(acpi.u64("cpus"), Some(1), "{row}");
        assert!(
            acpi.str("hpet").is_some() && acpi.get("pm_timer").is_object(),
            "{row}"
        );
        let tsc = expect_record(&outcome, "tsc");
        expect_rate(tsc, "hpet-calibration", &row);
        expect_one_ghz_within_uncertainty(tsc, &row);
        for name in ["hpet", "pm_timer", "pit"] {
            assert!(
                source(tsc, name)["hz"].is_u64(),
                "{row}: {name}: {:?}",
                tsc.value
            );
        }
        let check = tsc.get("cross_check");
        assert_eq!(check["method"], "pm-timer-calibration", "{row}");
        assert_eq!(check["agrees"], true, "{row}: {:?}", tsc.value);
    }
}

#[test]
fn without_a_pit_the_rate_comes_from_the_hpet_and_the_gated_pit_is_refused() {
    let row = "pit=off icount";
    let outcome = boot(Firmware::Bios, Some("pit=off"), Some(0));
    expect_short_run_ok(&outcome, row);
    let tsc = expect_record(&outcome, "tsc");
    expect_rate(tsc, "hpet-calibration", row);
    expect_one_ghz_within_uncertainty(tsc, row);
    let pit = source(tsc, "pit");
    assert!(pit["hz"].is_null(), "{row}: {pit:?}");
    assert!(
        pit["error"]
            .as_str()
            .unwrap()
            .contains("not a plausible TSC rate"),
        "{pit:?}"
    );
    assert_eq!(tsc.get("pit_present"), &Value::Bool(false));
}

#[test]
fn without_an_hpet_the_rate_comes_from_the_pm_timer() {
    let row = "hpet=off icount";
    let outcome = boot(Firmware::Bios, Some("hpet=off"), Some(0));
    expect_short_run_ok(&outcome, row);
    assert!(expect_record(&outcome, "acpi").get("hpet").is_null());
    let tsc = expect_record(&outcome, "tsc");
    assert!(source(tsc, "hpet").is_null(), "no HPET table: not tried");
    expect_rate(tsc, "pm-timer-calibration", row);
    expect_one_ghz_within_uncertainty(tsc, row);
    assert_eq!(tsc.get("cross_check")["method"], "pit-calibration");
}

#[test]
fn without_pit_and_hpet_the_pm_timer_alone_gives_the_rate_and_nothing_hangs() {
    for icount in [Some(0), None] {
        let row = format!("pit=off,hpet=off icount {icount:?}");
        let outcome = boot(Firmware::Bios, Some("pit=off,hpet=off"), icount);
        expect_short_run_ok(&outcome, &row);
        let tsc = expect_record(&outcome, "tsc");
        expect_rate(tsc, "pm-timer-calibration", &row);
        assert!(tsc.get("cross_check").is_null(), "{row}: no second source");
        if icount.is_some() {
            expect_one_ghz_within_uncertainty(tsc, &row);
        }
        let apic = expect_record(&outcome, "apic");
        assert!(
            apic.u64("timer_hz").is_some(),
            "{row}: the APIC timer was calibrated"
        );
    }
}

#[test]
fn every_usb_controller_is_taken_from_the_firmware_at_boot_without_a_results_file() {
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(60);
    qemu.extra_args = ["-device", "qemu-xhci", "-device", "ich9-usb-ehci1"]
        .map(String::from)
        .to_vec();
    let outcome = boot_with(qemu, RunConfig::default());
    expect_ok_end(&outcome);
    let h = expect_record(&outcome, "usb_handoff");
    assert_eq!(h.u64("controllers"), Some(2), "{:?}", h.value);
    let results: Vec<&str> = h
        .get("results")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // QEMU's xHCI has no legacy support capability; ICH9's EHCI has one, not firmware-owned
    // under SeaBIOS: its SMI enables are cleared all the same.
    assert!(
        results[0].starts_with("xHCI ")
            && results[0].ends_with(": no USB legacy support capability"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("EHCI ")
            && results[1].ends_with(": not owned by the firmware; its SMIs off"),
        "{results:?}"
    );
}

#[test]
fn an_intel_iommu_is_found_in_the_dmar_and_dma_passes() {
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(60);
    qemu.extra_args = ["-device", "intel-iommu"].map(String::from).to_vec();
    let outcome = boot_with(qemu, RunConfig::default());
    expect_ok_end(&outcome);
    let acpi = expect_record(&outcome, "acpi");
    assert!(
        acpi.get("tables")
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "DMAR"),
        "{:?}",
        acpi.value
    );
    assert_eq!(acpi.get("dmar")["units"], 1);
    let iommu = expect_record(&outcome, "iommu");
    assert_eq!(iommu.u64("units"), Some(1));
    // SeaBIOS leaves QEMU's VT-d unit off: nothing to turn off, and the record says so.
    assert_eq!(
        (
            iommu.u64("translation_was_on"),
            iommu.u64("protection_was_on")
        ),
        (Some(0), Some(0))
    );
    let result = iommu.get("results")[0].as_str().unwrap();
    assert!(result.starts_with("unit at 0xfed90000 (VT-d"), "{result}");
    assert!(
        result.ends_with("translation and protected memory off: DMA passes"),
        "{result}"
    );
}

/// A short harness run of `add-latency` with extra run.cfg `lines`.
fn harness_run(lines: &[&str]) -> RunOutcome {
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(120);
    let p = baremark::payloads::builtin("add-latency").unwrap();
    let config = RunConfig {
        payloads: vec![("add-latency".to_string(), p.elf.to_vec())],
        reps: Some(3),
        warmup: Some(1),
        extra_lines: lines.iter().map(|l| l.to_string()).collect(),
        ..RunConfig::default()
    };
    boot_with(qemu, config)
}

#[test]
fn smis_during_a_benchmark_are_counted_and_marked() {
    // TCG reads MSR_SMI_COUNT (QEMU counts its SMM entries): none in a quiet run ...
    let quiet = harness_run(&[]);
    expect_ok_end(&quiet);
    let results: Vec<&Record> = quiet.records_of("result").collect();
    assert!(!results.is_empty());
    for r in &results {
        assert_eq!(r.u64("smis"), Some(0), "{:?}", r.value);
    }
    // ... and exactly the SMIs the kernel raises through the APM port after bench_begin (the
    // firmware, SeaBIOS, enables APM SMIs on q35).
    let noisy = harness_run(&["test_smis = 3"]);
    expect_ok_end(&noisy);
    for r in noisy.records_of("result") {
        assert_eq!(r.u64("smis"), Some(3), "{:?}", r.value);
    }
    let res = baremark::results::Results::from_records(&noisy.records);
    let table = baremark::table::summary(&res);
    assert!(
        table.contains(
            "SMIs during (System Management Mode, firmware time in the values): add-latency (3)"
        ),
        "{table}"
    );
}

#[test]
fn pci_configuration_goes_through_ecam_from_the_mcfg_after_a_check_against_the_ports() {
    for firmware in [Firmware::Bios, Firmware::Uefi] {
        let mut qemu = QemuOptions::new(firmware, Accel::Tcg);
        qemu.timeout = Duration::from_secs(90);
        qemu.extra_args = ["-device", "qemu-xhci"].map(String::from).to_vec();
        let outcome = boot_with(qemu, RunConfig::default());
        expect_ok_end(&outcome);
        let pci = expect_record(&outcome, "pci");
        assert_eq!(
            pci.str("access"),
            Some("ecam"),
            "{firmware:?}: {:?}",
            pci.value
        );
        let functions = pci.u64("functions").unwrap();
        assert!(functions >= 5, "{firmware:?}: {functions}");
        assert_eq!(
            pci.u64("ecam_agree"),
            Some(functions),
            "{firmware:?}: every function agrees"
        );
        let acpi = expect_record(&outcome, "acpi");
        let window = acpi.get("mcfg")[0].as_str().unwrap();
        assert!(
            window.ends_with(pci.get("ecam")["base"].as_str().unwrap()),
            "{window}"
        );
        // The xHCI is enabled through ECAM (its command register), and still answers.
        let handoff = expect_record(&outcome, "usb_handoff");
        assert!(
            handoff.get("results")[0]
                .as_str()
                .unwrap()
                .starts_with("xHCI"),
            "{:?}",
            handoff.value
        );
    }
}

//! Boots the real images in QEMU (TCG), BIOS and UEFI, and checks the boot report records.

use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::QEMU_EXIT_SUCCESS;
use baremark::records::SCHEMA_VERSION;
use baremark::session::RunOutcome;
use baremark_tests::{boot, expect_record, expect_success, hex};

const REPORT_TYPES: [&str; 15] = [
    "boot",
    "screen",
    "cpu",
    "checks",
    "acpi",
    "tsc",
    "apic",
    "pmu",
    "processor",
    "cpus",
    "pci",
    "usb_handoff",
    "screen_cost",
    "outputs",
    "end",
];

fn bios() -> &'static RunOutcome {
    static OUTCOME: OnceLock<RunOutcome> = OnceLock::new();
    OUTCOME.get_or_init(|| {
        boot(
            Firmware::Bios,
            RunConfig::default(),
            Duration::from_secs(60),
            None,
        )
    })
}

fn uefi() -> &'static RunOutcome {
    static OUTCOME: OnceLock<RunOutcome> = OnceLock::new();
    OUTCOME.get_or_init(|| {
        boot(
            Firmware::Uefi,
            RunConfig::default(),
            Duration::from_secs(90),
            None,
        )
    })
}

fn assert_successful_report(outcome: &RunOutcome, firmware: &str) {
    expect_success(outcome);
    assert_eq!(outcome.qemu_status, Some(QEMU_EXIT_SUCCESS));
    let kinds: Vec<&str> = outcome.records.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, REPORT_TYPES, "record sequence");
    for r in &outcome.records {
        assert_eq!(
            r.version(),
            Some(SCHEMA_VERSION),
            "schema version of {}",
            r.value
        );
    }

    let boot = expect_record(outcome, "boot");
    assert_eq!(boot.str("kernel"), Some("baremark"));
    assert_eq!(boot.str("firmware"), Some(firmware));
    assert_eq!(boot.str("serial"), Some("ready"));
    let mem = boot.get("memory");
    let usable = mem["usable_bytes"].as_u64().unwrap();
    // QEMU has 256 MiB; the firmware and bootloader keep some.
    assert!(
        (128 << 20..=256 << 20).contains(&usable),
        "usable memory {usable}"
    );
    assert_eq!(mem["heap_bytes"].as_u64(), Some(8 << 20));
    assert_eq!(boot.get("config")["source"], "ramdisk");
    assert_eq!(boot.get("config")["on_end"], "qemu-exit");

    let cpu = expect_record(outcome, "cpu");
    let vendor = cpu.str("vendor").unwrap();
    assert!(
        ["GenuineIntel", "AuthenticAMD", "HygonGenuine"].contains(&vendor),
        "vendor {vendor}"
    );
    assert!(cpu.u64("family").unwrap() >= 6, "family");
    assert!(
        cpu.str("brand").unwrap().contains("QEMU"),
        "brand {:?}",
        cpu.str("brand")
    );
    assert_eq!(cpu.str("hypervisor"), Some("tcg"));
    let features = cpu.get("features").as_object().unwrap();
    for f in [
        "x2apic",
        "tsc_deadline",
        "invariant_tsc",
        "pdcm",
        "smep",
        "smap",
        "umip",
        "pcid",
        "nx",
    ] {
        assert!(features[f].is_boolean(), "feature {f} missing");
    }
    // QEMU's `max` CPU has these, so the kernel must have turned them on.
    let prot = cpu.get("protections");
    assert_eq!(prot["smep"], "enabled");
    assert_eq!(prot["smap"], "enabled");
    assert!(["enabled", "already-on"].contains(&prot["nx"].as_str().unwrap()));
    let cr4 = hex(cpu, "cr4");
    assert_ne!(cr4 & (1 << 20), 0, "CR4.SMEP set");
    assert_ne!(cr4 & (1 << 21), 0, "CR4.SMAP set");

    let checks = expect_record(outcome, "checks");
    assert_eq!(checks.str("breakpoint_resume"), Some("ok"));
    assert_eq!(checks.str("gp_recovery"), Some("ok"));
    assert_eq!(checks.str("msr_write_allow_list"), Some("ok"));

    let tsc = expect_record(outcome, "tsc");
    let hz = tsc.u64("hz").expect("TSC frequency");
    assert!(hz > 100_000_000, "TSC {hz} Hz");
    // TCG has no CPUID frequency leaf; q35 has an HPET, which comes first of the clocks.
    assert_eq!(
        tsc.str("method"),
        Some("hpet-calibration"),
        "{:?}",
        tsc.value
    );
    assert!(tsc.u64("uncertainty_hz").is_some() && tsc.u64("samples") == Some(3));
    let acpi = expect_record(outcome, "acpi");
    assert!(
        ["ok", "problems"].contains(&acpi.str("state").unwrap()),
        "{:?}",
        acpi.value
    );
    assert_eq!(acpi.u64("cpus"), Some(1));

    let apic = expect_record(outcome, "apic");
    assert!(["xapic", "x2apic"].contains(&apic.str("mode").unwrap()));
    assert!(apic.u64("timer_hz").unwrap() > 0);
    let timer = apic.get("timer_checks");
    assert_eq!(timer["one_shot"], "ok", "{timer}");
    assert_eq!(timer["periodic"], "ok", "{timer}");
    assert!(
        ["ok", "unsupported"].contains(&timer["tsc_deadline"].as_str().unwrap()),
        "{timer}"
    );

    let pmu = expect_record(outcome, "pmu");
    assert_eq!(pmu.get("intel")["version"], 0, "TCG emulates no PMU");
    assert_eq!(pmu.str("backend"), Some("tsc-only"));
    assert_eq!(pmu.str("kind"), Some("tsc-only"));
    assert_eq!(pmu.u64("gp_counters"), Some(0));
    // QEMU's `max` CPU is AuthenticAMD under TCG: the legacy counters have no CPUID bit, so the
    // kernel finds out by a write that does not stick; an Intel model says version 0.
    let reason = pmu.str("reason").unwrap();
    assert!(
        reason.contains("version 0") || reason.contains("does not keep a written value"),
        "{reason}"
    );

    let end = expect_record(outcome, "end");
    assert_eq!(end.str("status"), Some("ok"));
    assert_eq!(end.str("on_end"), Some("qemu-exit"));
    let irq = end.get("interrupts");
    // One-shot (1) + periodic (5), + TSC deadline (1) where supported.
    let expected_ticks = if timer["tsc_deadline"] == "ok" { 7 } else { 6 };
    assert_eq!(irq["timer"], expected_ticks, "{irq}");
    assert_eq!(irq["unexpected"], 0);
    assert_eq!(irq["breakpoints"], 1);
    assert_eq!(irq["pmi"], 0, "no counters, no PMIs");
}

#[test]
fn bios_boot_reports_every_subsystem() {
    let outcome = bios();
    assert_successful_report(outcome, "bios");
    let first = outcome.first_record_after.unwrap();
    assert!(first < outcome.end_record_after.unwrap());
    eprintln!(
        "BIOS/TCG: first record after {first:?}, end after {:?}",
        outcome.end_record_after.unwrap()
    );
}

#[test]
fn uefi_boot_gives_the_same_records() {
    let outcome = uefi();
    assert_successful_report(outcome, "uefi");
    // Same machine, other firmware: the CPU facts agree.
    let (a, b) = (expect_record(bios(), "cpu"), expect_record(outcome, "cpu"));
    for key in ["vendor", "family", "model", "stepping", "brand", "features"] {
        assert_eq!(
            a.get(key),
            b.get(key),
            "cpu.{key} differs between BIOS and UEFI"
        );
    }
}

#[test]
fn icount_makes_the_tsc_count_instructions_at_one_ghz() {
    // With -icount shift=0 every instruction is 1 ns of virtual time and one TSC tick, and the
    // PIT runs on the same virtual clock: the calibration must find 1 GHz.
    let outcome = boot(
        Firmware::Bios,
        RunConfig::default(),
        Duration::from_secs(90),
        Some(0),
    );
    expect_success(&outcome);
    let tsc = expect_record(&outcome, "tsc");
    let hz = tsc.u64("hz").unwrap();
    let bound = tsc.u64("uncertainty_hz").unwrap();
    assert!(
        hz.abs_diff(1_000_000_000) <= bound,
        "{hz} Hz +/- {bound} is not 1 GHz"
    );
    assert!(
        bound <= 1_000_000,
        "uncertainty {bound} Hz is too wide for a deterministic clock"
    );
}

#[test]
fn bad_configuration_lines_are_reported_and_the_run_goes_on() {
    let config = RunConfig {
        extra_lines: vec![
            "colour = red".into(),
            "test = explode".into(),
            "no equals sign".into(),
        ],
        ..RunConfig::default()
    };
    let outcome = boot(Firmware::Bios, config, Duration::from_secs(60), None);
    expect_success(&outcome);
    let errors: Vec<_> = outcome.records_of("config_error").collect();
    let summary: Vec<(u64, &str)> = errors
        .iter()
        .map(|e| (e.u64("line").unwrap(), e.str("message").unwrap()))
        .collect();
    assert_eq!(errors.len(), 4, "{summary:?}");
    // run.cfg has a comment line and three keys before the extra lines.
    assert_eq!(summary[0].0, 5);
    assert!(summary[0].1.contains("unknown key `colour`"));
    assert_eq!(summary[1], (6, "`test` given again (last one wins)"));
    assert_eq!(summary[2].0, 6);
    assert!(summary[2].1.contains("bad value `explode`"));
    assert_eq!(summary[3], (7, "expected `key = value`"));
    // The bad `test` value kept the default: nothing was provoked.
    assert_eq!(
        expect_record(&outcome, "boot").get("config")["test"],
        "none"
    );
}

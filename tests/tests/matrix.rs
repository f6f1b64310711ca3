//! The platform matrix: a short run (`hello`, and `add-latency` under the harness counting
//! `instructions:u`) on each row, a machine users boot: CPU models of recent Intel and AMD
//! generations (on the emulated PMU, whose model goes with the vendor), platforms without a PIT
//! or an HPET, more memory, an IOMMU, BIOS and UEFI. Each row must end `end ok` with a plausible
//! TSC rate and its source, the PMU found (emulated rows: the event counted) or honestly absent
//! (plain TCG: `<not supported>` with the reason), the APIC mode and the memory size the row
//! implies.
//!
//! `matrix_subset` (in the test command) runs a representative few; `matrix_full` (ignored
//! here; `scripts/matrix.sh` runs it) every row, and prints the table docs/platforms.md holds.
//! A row this QEMU cannot run (a CPU model it lacks, x2APIC under TCG before QEMU 9.0) is
//! printed as a SKIP with the reason, never passed silently.

use std::process::Command;
use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::{Accel, PmuModel, QemuOptions};
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_tests::{boot_with, expect_ok_end, expect_record};

/// One machine of the matrix.
#[derive(Clone, Copy, Debug)]
struct Row {
    name: &'static str,
    firmware: Firmware,
    /// `-cpu` model (None: the default for the PMU model, or `max`).
    cpu: Option<&'static str>,
    /// The emulated PMU's model (None: plain TCG, no counters).
    pmu: Option<PmuModel>,
    /// Extra `-machine` options.
    machine: Option<&'static str>,
    memory_mib: u32,
    extra: &'static [&'static str],
    /// The APIC mode the kernel must report.
    apic: &'static str,
    /// Under `-icount shift=0` (stock QEMU 9-10 stop with "Bad icount read" when an x2APIC
    /// guest reads its timer under icount; the emulator's patch 0007 fixes it there only).
    icount: bool,
}

const fn row(name: &'static str) -> Row {
    Row {
        name,
        firmware: Firmware::Bios,
        cpu: None,
        pmu: None,
        machine: None,
        memory_mib: 256,
        extra: &[],
        apic: "xapic",
        icount: true,
    }
}

/// Intel models under TCG without the features TCG lacks (QEMU warns about each otherwise).
const TCG_OFF: &str =
    "-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm,-rdseed,-3dnowprefetch,-xsavec";

const ROWS: &[Row] = &[
    Row {
        cpu: Some("Skylake-Client"),
        pmu: Some(PmuModel::IntelV4),
        ..row("Skylake-Client, emulated intel-v4")
    },
    Row {
        cpu: Some("Cascadelake-Server"),
        pmu: Some(PmuModel::IntelV4),
        ..row("Cascadelake-Server, emulated intel-v4")
    },
    Row {
        cpu: Some("Icelake-Server"),
        pmu: Some(PmuModel::IntelV5),
        firmware: Firmware::Uefi,
        ..row("Icelake-Server, emulated intel-v5, UEFI")
    },
    Row {
        cpu: Some("SapphireRapids"),
        pmu: Some(PmuModel::IntelV5),
        ..row("SapphireRapids, emulated intel-v5")
    },
    Row {
        cpu: Some("EPYC-Rome"),
        pmu: Some(PmuModel::AmdCore),
        ..row("EPYC-Rome, emulated amd-core")
    },
    Row {
        cpu: Some("EPYC-Milan"),
        pmu: Some(PmuModel::AmdV2),
        firmware: Firmware::Uefi,
        ..row("EPYC-Milan, emulated amd-v2, UEFI")
    },
    Row {
        cpu: Some("EPYC-Genoa"),
        pmu: Some(PmuModel::AmdV2),
        ..row("EPYC-Genoa, emulated amd-v2")
    },
    Row {
        machine: Some("pit=off"),
        ..row("no PIT")
    },
    Row {
        machine: Some("hpet=off"),
        firmware: Firmware::Uefi,
        ..row("no HPET, UEFI")
    },
    Row {
        machine: Some("pit=off,hpet=off"),
        ..row("neither PIT nor HPET")
    },
    Row {
        cpu: Some("max,+x2apic"),
        apic: "x2apic",
        icount: false,
        ..row("x2APIC enabled by the kernel")
    },
    Row {
        firmware: Firmware::Uefi,
        apic: "x2apic",
        icount: false,
        // OVMF turns x2APIC on itself with more than 255 CPUs (APIC IDs past 255); QEMU then
        // wants interrupt remapping with extended interrupt mode.
        extra: &[
            "-smp",
            "288",
            "-device",
            "intel-iommu,intremap=on,eim=on",
            "-machine",
            "kernel-irqchip=split",
        ],
        memory_mib: 1024,
        ..row("x2APIC already enabled by the firmware (288 CPUs, UEFI)")
    },
    Row {
        memory_mib: 4096,
        ..row("4 GiB")
    },
    Row {
        memory_mib: 8192,
        firmware: Firmware::Uefi,
        ..row("8 GiB, UEFI")
    },
    Row {
        memory_mib: 65536,
        // A 64 GiB guest on a 24 GiB machine: a file mapping (sparse, in the temporary
        // directory) is not charged against the host's overcommit limit as anonymous memory is.
        extra: &[
            "-object",
            "memory-backend-file,id=ram64,size=64G,mem-path=TMPDIR,share=on",
            "-machine",
            "memory-backend=ram64",
        ],
        ..row("64 GiB")
    },
    Row {
        extra: &["-device", "intel-iommu"],
        ..row("Intel IOMMU (VT-d)")
    },
];

/// What a QEMU binary offers: its `-cpu help` text and its major version.
struct Qemu {
    cpu_help: String,
    major: u32,
}

fn qemu_facts(pmu: bool) -> Qemu {
    let bin = if pmu {
        baremark::qemu::emulated_pmu_qemu().expect("the emulated PMU's QEMU")
    } else {
        baremark::qemu::qemu_binary().expect("QEMU")
    };
    let text = |args: &[&str]| {
        let out = Command::new(&bin).args(args).output().expect("qemu runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // "QEMU emulator version 7.2.19 (Debian ...)"
    let version = text(&["--version"]);
    let major = version
        .split_whitespace()
        .nth(3)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no version in {version:?}"));
    Qemu {
        cpu_help: text(&["-cpu", "help"]),
        major,
    }
}

/// Why this QEMU cannot run `row`, if it cannot.
fn cannot_run(row: &Row, qemu: &Qemu) -> Option<String> {
    if row.apic == "x2apic" && qemu.major < 9 {
        return Some(format!(
            "TCG has no x2APIC before QEMU 9.0 (this is {})",
            qemu.major
        ));
    }
    let model = row.cpu?.split(',').next()?;
    let listed = qemu
        .cpu_help
        .lines()
        .any(|l| l.split_whitespace().any(|w| w == model));
    if model != "max" && !listed {
        return Some(format!("this QEMU has no CPU model {model} (QEMU 10 does)"));
    }
    None
}

fn boot(row: &Row) -> RunOutcome {
    let mut qemu = QemuOptions::new(row.firmware, Accel::Tcg);
    qemu.timeout = Duration::from_secs(300);
    qemu.memory_mib = row.memory_mib;
    qemu.icount = row.icount.then_some(0);
    qemu.pmu_model = row.pmu;
    qemu.cpu = row.cpu.map(|c| match (c, row.pmu) {
        (c, Some(m)) if m.name().starts_with("intel") && !c.contains(',') => {
            format!("{c},{TCG_OFF}")
        }
        (c, _) => c.to_string(),
    });
    if row.pmu.is_some() {
        qemu.binary = Some(baremark::qemu::emulated_pmu_qemu().expect("the emulated PMU's QEMU"));
    }
    if let Some(m) = row.machine {
        qemu.extra_args
            .extend(["-machine".to_string(), m.to_string()]);
    }
    // The memory file of the 64 GiB row goes to the temporary directory (QEMU makes and
    // unlinks a file there), never the working directory.
    let tmp = std::env::temp_dir().display().to_string();
    qemu.extra_args
        .extend(row.extra.iter().map(|s| s.replace("TMPDIR", &tmp)));
    let payloads = ["hello", "add-latency"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                baremark::payloads::builtin(n).unwrap().elf.to_vec(),
            )
        })
        .collect();
    let config = RunConfig {
        payloads,
        events: Some("instructions:u".into()),
        reps: Some(3),
        warmup: Some(1),
        ..RunConfig::default()
    };
    boot_with(qemu, config)
}

/// Checks one row's run; returns its line for the table.
fn check(row: &Row, outcome: &RunOutcome) -> String {
    let name = row.name;
    expect_ok_end(outcome);
    let tsc = expect_record(outcome, "tsc");
    let hz = tsc
        .u64("hz")
        .unwrap_or_else(|| panic!("{name}: no TSC rate: {:?}", tsc.value));
    assert!((50_000_000..=20_000_000_000).contains(&hz), "{name}: {hz}");
    let method = tsc.str("method").unwrap();
    assert_ne!(method, "none", "{name}");
    let apic = expect_record(outcome, "apic");
    assert_eq!(apic.str("mode"), Some(row.apic), "{name}: {:?}", apic.value);
    let by_firmware = row.extra.contains(&"288");
    assert_eq!(
        apic.get("x2apic_at_entry").as_bool(),
        Some(by_firmware),
        "{name}: {:?}",
        apic.value
    );
    // Every CPU started: all 288 where the firmware handed over in x2APIC mode.
    let cpus = expect_record(outcome, "cpus");
    let want = if by_firmware { 288 } else { 1 };
    assert_eq!(
        (cpus.u64("online"), cpus.u64("failed")),
        (Some(want), Some(0)),
        "{name}: {:?}",
        cpus.value
    );
    let boot = expect_record(outcome, "boot");
    let usable = boot.get("memory")["usable_bytes"].as_u64().unwrap();
    let asked = u64::from(row.memory_mib) << 20;
    assert!(
        usable > asked * 3 / 4 && usable <= asked,
        "{name}: {usable} bytes usable of {asked}"
    );
    let pmu = expect_record(outcome, "pmu");
    let result: &Record = outcome
        .records_of("result")
        .find(|r| r.str("event") == Some("instructions:u"))
        .unwrap_or_else(|| panic!("{name}: no instructions:u result"));
    let counted = if row.pmu.is_some() {
        assert_ne!(
            pmu.str("backend"),
            Some("tsc-only"),
            "{name}: {:?}",
            pmu.value
        );
        assert_eq!(
            result.get("supported"),
            &serde_json::Value::Bool(true),
            "{name}"
        );
        let per = result.get("per_iteration")["median"].as_f64().unwrap();
        assert_eq!(
            per, 10.0,
            "{name}: add-latency is 10 instructions per iteration"
        );
        format!(
            "{} counted: 10 instructions per iteration (emulated)",
            pmu.str("backend").unwrap()
        )
    } else {
        assert_eq!(pmu.str("backend"), Some("tsc-only"), "{name}");
        assert_eq!(
            result.get("supported"),
            &serde_json::Value::Bool(false),
            "{name}"
        );
        assert!(
            result.str("reason").is_some_and(|r| !r.is_empty()),
            "{name}"
        );
        String::from("no counters (plain TCG): not supported, with the reason")
    };
    format!(
        "| {name} | {:?} | ok | {:.3} MHz ({method}) | {} | {} MiB | {counted} |",
        row.firmware,
        hz as f64 / 1e6,
        row.apic,
        usable >> 20
    )
}

fn run(rows: &[Row]) {
    let plain = qemu_facts(false);
    let emulated = rows
        .iter()
        .any(|r| r.pmu.is_some())
        .then(|| qemu_facts(true));
    println!("| row | firmware | end | TSC | APIC | memory | PMU |");
    println!("|---|---|---|---|---|---|---|");
    let mut skipped = 0;
    for row in rows {
        let qemu = match (row.pmu, &emulated) {
            (Some(_), Some(e)) => e,
            _ => &plain,
        };
        if let Some(why) = cannot_run(row, qemu) {
            println!(
                "| {} | {:?} | SKIP: {why} | | | | |",
                row.name, row.firmware
            );
            skipped += 1;
            continue;
        }
        let outcome = boot(row);
        println!("{}", check(row, &outcome));
    }
    println!("{} rows, {skipped} skipped (reasons above)", rows.len());
}

#[test]
fn matrix_subset() {
    let names = [
        "Cascadelake-Server, emulated intel-v4",
        "EPYC-Milan, emulated amd-v2, UEFI",
        "8 GiB, UEFI",
    ];
    let rows: Vec<Row> = ROWS
        .iter()
        .copied()
        .filter(|r| names.contains(&r.name))
        .collect();
    assert_eq!(rows.len(), names.len());
    run(&rows);
}

#[test]
#[ignore = "the whole platform matrix: scripts/matrix.sh"]
fn matrix_full() {
    run(ROWS);
}

/// Intel's perfmon tables split model 0x55 by stepping: Skylake-SP 0-4, Cascade Lake 5-F. The
/// host packs one table per stepping, as `pack_perfmon` does from the mapfile; a Cascade Lake
/// boot must use the Cascade Lake table (its stepping), not Skylake-SP's. The tables here are
/// made for the test (../shared/perfmon has no SKX or CLX files), each naming the instructions
/// event under its own name.
#[test]
fn cascadelake_server_uses_the_table_of_its_stepping() {
    use events::event::{EventDesc, EventSelect, Source};
    use events::table::EventTable;
    let table = |name: &str, stepping: u32| {
        let mut e = EventDesc::gp(name, EventSelect::new(0xc0, 0), Source::Perfmon);
        e.gp_counters = Some(0b1111);
        let cpu = events::cpu::CpuModel {
            stepping: Some(stepping),
            ..events::cpu::CpuModel::new(events::cpu::Vendor::Intel, 6, 0x55)
        };
        let t = EventTable::new(vec![e])
            .unwrap()
            .with_target(Some(cpu), None);
        (
            format!("events/{cpu}.tab"),
            t.to_bytes_without_descriptions(),
        )
    };
    let mut members = vec![table("SKX_ONLY.INSTRUCTIONS", 4)];
    members.extend((5..=15).map(|s| table("CLX_ONLY.INSTRUCTIONS", s)));
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(180);
    qemu.icount = Some(0);
    qemu.pmu_model = Some(PmuModel::IntelV4);
    qemu.cpu = Some(format!("Cascadelake-Server,{TCG_OFF}"));
    qemu.binary = Some(baremark::qemu::emulated_pmu_qemu().expect("the emulated PMU's QEMU"));
    let config = RunConfig {
        payloads: vec![(
            "add-latency".into(),
            baremark::payloads::builtin("add-latency")
                .unwrap()
                .elf
                .to_vec(),
        )],
        events: Some("CLX_ONLY.INSTRUCTIONS:u,SKX_ONLY.INSTRUCTIONS:u".into()),
        extra_members: members,
        reps: Some(3),
        warmup: Some(1),
        ..RunConfig::default()
    };
    let outcome = boot_with(qemu, config);
    expect_ok_end(&outcome);
    let cpu = expect_record(&outcome, "cpu");
    assert_eq!(cpu.u64("model"), Some(0x55));
    assert!(
        cpu.u64("stepping").unwrap() >= 5,
        "QEMU's Cascade Lake: {:?}",
        cpu.value
    );
    let result = |event: &str| {
        outcome
            .records_of("result")
            .find(|r| r.str("event") == Some(event))
            .unwrap_or_else(|| panic!("no result for {event}"))
    };
    let clx = result("CLX_ONLY.INSTRUCTIONS:u");
    assert_eq!(
        clx.get("supported"),
        &serde_json::Value::Bool(true),
        "{:?}",
        clx.value
    );
    assert_eq!(clx.get("per_iteration")["median"].as_f64(), Some(10.0));
    let skx = result("SKX_ONLY.INSTRUCTIONS:u");
    assert_eq!(skx.get("supported"), &serde_json::Value::Bool(false));
    assert!(
        skx.str("reason").unwrap().contains("unknown event name"),
        "{:?}",
        skx.value
    );
}

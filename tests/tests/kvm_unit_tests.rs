//! Conformance of baremark's emulated PMU (emulator/: a PMU model in QEMU's TCG) with
//! kvm-unit-tests' `x86/pmu.flat`, the suite hypervisors validate their virtual PMUs with.
//! The suite lives in `../shared/kvm-unit-tests` (GPL-2; built from there, never copied into
//! the project). Each model must report 0 unexpected failures, exit through isa-debug-exit
//! with "all passed", and run the exact-count cases (instructions and branches of a precise
//! loop, overflow status and PMI, RDPMC, full-width writes) it claims to support.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use baremark::qemu::{PmuModel, emulated_pmu_qemu};

/// kvm-unit-tests' source beside the clone.
fn suite_source() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/kvm-unit-tests");
    assert!(
        dir.join("x86/pmu.c").is_file(),
        "kvm-unit-tests is missing: expected it at {} (../shared beside the clone); this test cannot run without it",
        dir.display()
    );
    dir
}

/// `x86/pmu.flat`, built once per test run in a copy under the target directory.
fn pmu_flat() -> &'static Path {
    static FLAT: OnceLock<PathBuf> = OnceLock::new();
    FLAT.get_or_init(|| {
        let build = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kvm-unit-tests");
        let _ = std::fs::remove_dir_all(&build);
        std::fs::create_dir_all(&build).unwrap();
        let status = Command::new("cp")
            .arg("-r")
            .arg(suite_source().join("."))
            .arg(&build)
            .status()
            .expect("cp");
        assert!(status.success(), "copying kvm-unit-tests failed");
        for step in [
            vec!["./configure", "--arch=x86_64"],
            vec!["make", "-j2", "x86/pmu.flat"],
        ] {
            let out = Command::new(step[0])
                .args(&step[1..])
                .current_dir(&build)
                .output()
                .unwrap_or_else(|e| {
                    panic!("running {step:?} for kvm-unit-tests: {e} (gcc and make are needed)")
                });
            assert!(
                out.status.success(),
                "{step:?} failed for kvm-unit-tests:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        build.join("x86/pmu.flat")
    })
}

/// What one run of pmu.flat printed.
struct Run {
    status: Option<i32>,
    output: String,
    tests: u64,
    failures: u64,
    skipped: u64,
}

fn run(cpu: &str, smp: u32) -> Run {
    let qemu =
        emulated_pmu_qemu().unwrap_or_else(|e| panic!("no QEMU with the emulated PMU: {e:#}"));
    let mut child = Command::new(qemu)
        .args([
            "-accel", "tcg", "-icount", "shift=0", "-cpu", cpu, "-m", "256",
        ])
        .args(["-smp", &smp.to_string()])
        .args(["-nodefaults", "-display", "none", "-serial", "stdio"])
        .args([
            "-device",
            "isa-debug-exit,iobase=0xf4,iosize=0x4",
            "-kernel",
        ])
        .arg(pmu_flat())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting QEMU");
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = child.wait_with_output().unwrap();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // "SUMMARY: 119 tests, 14 skipped" or "SUMMARY: 58 tests, 2 unexpected failures, 7 skipped"
    let summary = output
        .lines()
        .find(|l| l.starts_with("SUMMARY:"))
        .unwrap_or_else(|| panic!("{cpu}: no SUMMARY line (status {status:?}):\n{output}"))
        .to_string();
    let number_before = |word: &str| -> u64 {
        summary
            .split(',')
            .find(|part| part.contains(word))
            .and_then(|part| part.split_whitespace().find_map(|w| w.parse().ok()))
            .unwrap_or(0)
    };
    Run {
        status,
        tests: number_before("tests"),
        failures: number_before("unexpected failures"),
        skipped: number_before("skipped"),
        output,
    }
}

/// Runs pmu.flat on `cpu` with one and with two vCPUs (each counts its own instructions,
/// emulator patch 0009) and checks it as described at the top; `passes` must all appear.
fn conforms(cpu: &str, version: &str, gp: u32, min_tests: u64, passes: &[&str]) {
    for smp in [1, 2] {
        conforms_smp(cpu, smp, version, gp, min_tests, passes);
    }
}

fn conforms_smp(
    cpu: &str,
    smp: u32,
    version: &str,
    gp: u32,
    min_tests: u64,
    passes: &[&str],
) -> Run {
    let r = run(cpu, smp);
    let cpu = &format!("{cpu} -smp {smp}");
    let fails: Vec<&str> = r.output.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(
        (r.failures, fails.len()),
        (0, 0),
        "{cpu}: unexpected failures: {fails:#?}\n{}",
        r.output
    );
    // isa-debug-exit: (0 << 1) | 1 when every test passed
    assert_eq!(r.status, Some(1), "{cpu}: QEMU status\n{}", r.output);
    assert!(
        r.tests >= min_tests,
        "{cpu}: only {} tests ran\n{}",
        r.tests,
        r.output
    );
    assert!(
        r.output
            .contains(&format!("PMU version:         {version}")),
        "{cpu}\n{}",
        r.output
    );
    assert!(
        r.output.contains(&format!("GP counters:         {gp}")),
        "{cpu}\n{}",
        r.output
    );
    for p in passes {
        assert!(
            r.output.lines().any(|l| l == format!("PASS: {p}")),
            "{cpu}: `PASS: {p}` missing\n{}",
            r.output
        );
    }
    // Only the "fast" RDPMC reads skip (KVM rejects them on architectural PMUs too).
    let skips: Vec<&str> = r.output.lines().filter(|l| l.starts_with("SKIP")).collect();
    assert!(
        skips.iter().all(|l| l.contains("fast-")),
        "{cpu}: unexpected skips {skips:#?}"
    );
    assert_eq!(skips.len() as u64, r.skipped, "{cpu}");
    eprintln!(
        "{cpu}: {} tests, 0 unexpected failures, {} skipped",
        r.tests, r.skipped
    );
    r
}

fn cpu(model: PmuModel) -> String {
    format!("{},pmu-model={}", model.default_cpu(), model.name())
}

const INTEL_EXACT: &[&str] = &[
    "Intel: instructions-0",
    "Intel: branches-0",
    "Intel: core cycles-0",
    "Intel: ref cycles-0",
    "Intel: fixed-0",
    "Intel: fixed-2",
    "Intel: rdpmc: cntr-0",
    "Intel: all counters",
    "Intel: overflow: status-0",
    "Intel: overflow: irq-0",
    "Intel: overflow: irq-1",
    "Intel: overflow: status clear-4",
    "Intel: cmask",
    "Intel: running counter wrmsr: status msr bit",
];

#[test]
fn intel_v2() {
    conforms(&cpu(PmuModel::IntelV2), "2", 4, 50, INTEL_EXACT);
}

#[test]
fn intel_v4_with_full_width_writes() {
    let mut passes = INTEL_EXACT.to_vec();
    passes.extend([
        "Intel: full-width writes: instructions-0",
        "Intel: full-width writes: overflow: irq-1",
        "Intel: full-width writes: writing unsupported width to MSR_IA32_PMC0 raises #GP",
    ]);
    conforms(&cpu(PmuModel::IntelV4), "4", 4, 110, &passes);
}

#[test]
fn intel_v5_with_eight_gp_counters() {
    let cpu = format!("{},pmu-gp-counters=8", cpu(PmuModel::IntelV5));
    let mut passes = INTEL_EXACT.to_vec();
    passes.extend([
        "Intel: instructions-7",
        "Intel: full-width writes: writing unsupported width to MSR_IA32_PMC7 raises #GP",
    ]);
    conforms(&cpu, "5", 8, 190, &passes);
}

/// The hybrid mode (`pmu-hybrid-from=K`, emulator patch 0010): pmu.flat runs on CPU 0, a Core
/// (P) CPU with K = 1 and an Atom (E) CPU with K = 0, each with its own counter set.
#[test]
fn intel_v5_hybrid_core_and_atom() {
    let core = format!("{},pmu-hybrid-from=1", cpu(PmuModel::IntelV5));
    let mut passes = INTEL_EXACT.to_vec();
    passes.push("Intel: instructions-7");
    conforms_smp(&core, 2, "5", 8, 190, &passes);
    let atom = format!("{},pmu-hybrid-from=0", cpu(PmuModel::IntelV5));
    let passes: Vec<&str> = INTEL_EXACT
        .iter()
        .copied()
        .filter(|p| *p != "Intel: fixed-2")
        .collect();
    conforms_smp(&atom, 2, "5", 6, 150, &passes);
}

/// With the micro-architecture model (`pmu-uarch=on`) CPUID.0AH:EBX marks LLC references,
/// LLC misses and branch misses available, and pmu.flat checks them on every GP counter
/// instead of printing "GP event ... is disabled": its loop of N = 1,000,000 loads of fresh
/// lines (after a CLFLUSH) must miss the LLC at least once and at most N times (the model's
/// adjacent-line prefetch halves them; without one a `call`'s stack push makes N + 1), refer to
/// it at most 2.5 N times, and mispredict at most 0.1 N of its branches.
#[test]
fn intel_v4_with_the_uarch_model() {
    let cpu = format!("{},pmu-uarch=on", cpu(PmuModel::IntelV4));
    let mut passes = INTEL_EXACT.to_vec();
    for event in ["llc references", "llc misses", "branch misses"] {
        for counter in 0..4 {
            passes.push(Box::leak(
                format!("Intel: {event}-{counter}").into_boxed_str(),
            ));
        }
    }
    let r = conforms_smp(&cpu, 1, "4", 4, 120, &passes);
    assert!(
        !r.output.contains("is disabled"),
        "every architectural event is available:\n{}",
        r.output
    );
}

/// AMD with the model: its branch misses (0xC3) now count mispredictions; pmu.flat's range for
/// them starts at 0 on a CPU without IBPB, so it PASSes as before, now with counts.
#[test]
fn amd_v2_with_the_uarch_model() {
    let cpu = format!("{},pmu-uarch=on", cpu(PmuModel::AmdV2));
    conforms_smp(
        &cpu,
        1,
        "2",
        6,
        100,
        &[
            "AMD: instructions-0",
            "AMD: branch misses-0",
            "AMD: overflow: irq-1",
        ],
    );
}

#[test]
fn amd_legacy() {
    conforms(
        &cpu(PmuModel::AmdLegacy),
        "0",
        4,
        50,
        &[
            "AMD: instructions-0",
            "AMD: branches-3",
            "AMD: overflow: cntr-0",
            "AMD: cmask",
        ],
    );
}

#[test]
fn amd_perfctr_core() {
    conforms(
        &cpu(PmuModel::AmdCore),
        "0",
        6,
        70,
        &[
            "AMD: instructions-5",
            "AMD: K7: instructions-3",
            "AMD: all counters",
        ],
    );
}

#[test]
fn amd_perfmon_v2() {
    conforms(
        &cpu(PmuModel::AmdV2),
        "2",
        6,
        100,
        &[
            "AMD: instructions-0",
            "AMD: overflow: status-0",
            "AMD: overflow: irq-1",
            "AMD: overflow: status clear-5",
            "AMD: running counter wrmsr: status msr bit",
        ],
    );
}

//! `baremark asm` end to end, as a user runs it: the code assembled by the system's GNU as,
//! linked with the runner, booted in QEMU, and read back from `--json`. Exact figures come
//! from `-icount shift=0` (the TSC counts instructions) and from the emulated PMU (exact
//! instructions, cycles and branches; `BAREMARK_QEMU_PMU` or emulator/build.sh, as `./test.sh`
//! provides). Errors (a bad instruction, an undefined symbol, a fault in the code) are checked
//! without and with QEMU. Fails with the reason where GNU binutils are missing.

mod common;

use common::baremark;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// The subject needs GNU as and ld: without them the test fails with the reason.
fn require_binutils() {
    for tool in ["as", "ld", "nm"] {
        let ok = Command::new(tool).arg("--version").output().is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("GNU")
        });
        assert!(
            ok,
            "`{tool}` (GNU binutils) is needed by `baremark asm`: apt-get install binutils"
        );
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `baremark asm ARGS --json FILE` and returns the results JSON.
fn measure(args: &[&str]) -> Value {
    require_binutils();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.json");
    let out = baremark()
        .arg("asm")
        .args(args)
        .args(["--reps", "8", "--warmup", "2", "--timeout", "120", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

/// The per-copy median of `event` in the only benchmark (`None`: not supported).
fn per_copy(results: &Value, event: &str) -> Option<f64> {
    let benchmarks = results["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 1, "{results}");
    let r = benchmarks[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["event"] == event)
        .unwrap_or_else(|| panic!("no result for {event}: {results}"));
    if r["supported"] != true {
        return None;
    }
    assert_eq!(
        r["overhead"], "diff",
        "asm removes the fixed part as 2U - U"
    );
    let p = &r["per_iteration"];
    // Exact: every repetition alike.
    assert_eq!(p["min"], p["max"], "{event} varies: {r}");
    Some(p["median"].as_f64().unwrap())
}

fn emulated(code: &[&str], events: &str) -> Value {
    let mut args = code.to_vec();
    args.extend(["--pmu", "emulated", "--events", events]);
    let r = measure(&args);
    assert_eq!(r["machine"]["pmu_emulated"], true);
    r
}

#[test]
fn add_unrolled_100_times_is_exactly_one_instruction_per_copy_under_icount() {
    let r = measure(&["add rax, rbx", "--unroll", "100", "--icount", "0"]);
    assert_eq!(r["benchmarks"][0]["iterations"], 100);
    // Under -icount shift=0 the virtual TSC counts instructions.
    assert_eq!(per_copy(&r, "tsc"), Some(1.0));
}

#[test]
fn add_unrolled_100_times_is_exactly_one_instruction_per_copy_on_the_emulated_pmu() {
    let r = emulated(
        &["add rax, rbx", "--unroll", "100"],
        "instructions,cycles,branches",
    );
    assert_eq!(per_copy(&r, "instructions"), Some(1.0));
    assert_eq!(per_copy(&r, "branches"), Some(0.0));
    assert_eq!(per_copy(&r, "tsc"), Some(1.0));
}

#[test]
fn an_imul_latency_chain_and_a_throughput_set_count_exactly() {
    // One dependent chain: one instruction per copy.
    let chain = emulated(&["imul rax, rax", "--unroll", "100"], "instructions");
    assert_eq!(per_copy(&chain, "instructions"), Some(1.0));
    // Four independent chains per copy (the throughput form): four instructions per copy,
    // also in AT&T syntax and inside a loop (whose dec/jnz are the same in U and 2U).
    let set = emulated(
        &[
            "--syntax",
            "att",
            "imulq %rax, %rax; imulq %rbx, %rbx; imulq %rcx, %rcx; imulq %rdx, %rdx",
            "--unroll",
            "25",
            "--loop",
            "4",
        ],
        "instructions,branches",
    );
    assert_eq!(set["benchmarks"][0]["iterations"], 100);
    assert_eq!(per_copy(&set, "instructions"), Some(4.0));
    assert_eq!(
        per_copy(&set, "branches"),
        Some(0.0),
        "the loop cancels out"
    );
}

#[test]
fn init_prepares_the_state_the_code_starts_from_outside_the_window() {
    // nanoBench's load-latency example: --init makes RAX point at itself (in R14's scratch
    // area); each copy is one load. --late-init (inside the window) cancels out in 2U - U,
    // and |15 is a 15-byte NOP: two instructions per copy.
    let r = emulated(
        &[
            "--init",
            "mov rax, r14; sub rax, 8; mov [rax], rax; push rax; pop rcx",
            "--late-init",
            "add rbx, 1; add rbx, 1",
            "--one-time-init",
            "mov qword ptr [rsi], 1",
            "mov rax, [rax]; |15",
            "--unroll",
            "50",
            "--align",
            "7",
        ],
        "instructions,branches",
    );
    assert_eq!(per_copy(&r, "instructions"), Some(2.0));
    assert_eq!(per_copy(&r, "branches"), Some(0.0));
}

#[test]
fn a_bad_instruction_is_reported_at_its_line_and_column_without_booting() {
    require_binutils();
    let out = baremark()
        .args(["asm", "add rax, rbx; foo rax\nmov rax, [rbx+"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr.contains("CODE:1:15: error: no such instruction: `foo rax'"),
        "{stderr}"
    );
    // The line quoted, a caret under the column.
    assert!(
        stderr.contains("    add rax, rbx; foo rax\n                  ^\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("CODE:2:11: error: junk `rbx+' after expression"),
        "{stderr}"
    );
    assert!(!stderr.contains("booting"), "nothing is booted: {stderr}");

    // A named label is defined again in every copy: said so, with the way out.
    let out = baremark().args(["asm", "x: nop"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr.contains("CODE:1:1: error: symbol `x' is already defined"));
    assert!(stderr.contains("use numeric local labels"), "{stderr}");

    // Errors in --init name the option; a file names the file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("init.s");
    std::fs::write(&file, "mov rax, r14\n  bogus\n").unwrap();
    let out = baremark()
        .args(["asm", "nop", "--init"])
        .arg(format!("@{}", file.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr.contains(&format!(
            "{}:2:3: error: no such instruction: `bogus'",
            file.display()
        )),
        "{stderr}"
    );

    // Symbols the code does not define, and NOPs of an impossible length.
    let out = baremark().args(["asm", "call foo"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr.contains("the code refers to a symbol it does not define: `foo`"),
        "{stderr}"
    );
    let out = baremark().args(["asm", "nop; |16"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr.contains("CODE:1:6: error: `|16`"), "{stderr}");
}

#[test]
fn the_copies_start_at_the_requested_offset_from_a_64_byte_boundary() {
    require_binutils();
    let dir = tempfile::tempdir().unwrap();
    for align in [0u64, 13, 100] {
        let out = baremark()
            .args(["asm", "add rax, rbx", "--unroll", "10", "--build-only"])
            .args(["--align", &align.to_string(), "--keep"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let nm = Command::new("nm")
            .arg(dir.path().join("asm.elf"))
            .output()
            .unwrap();
        let symbols = String::from_utf8_lossy(&nm.stdout);
        for body in ["baremark_asm_code_1x", "baremark_asm_code_2x"] {
            let addr = symbols
                .lines()
                .find(|l| l.ends_with(&format!(" {body}")))
                .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
                .unwrap_or_else(|| panic!("no {body} in\n{symbols}"));
            // `align` bytes past a boundary (nanoBench's alignment_offset may exceed 64).
            assert_eq!((addr - align) % 64, 0, "{body} at {addr:#x}");
        }
        assert!(Path::new(&dir.path().join("asm.s")).is_file());
    }
}

#[test]
fn a_faulting_instruction_is_placed_in_the_code_and_fails_the_run() {
    require_binutils();
    // HLT is privileged: #GP in ring 3. The kernel survives and says so; so does asm.
    let out = baremark()
        .args(["asm", "nop; hlt", "--unroll", "10", "--icount", "0"])
        .args(["--events", "none", "--timeout", "120"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stdout.contains("[fault] asm: #GP"), "{stdout}");
    assert!(
        stderr.contains("in the benchmarked code: copy 1 of 10 (the 1x region), byte 1 of 2"),
        "{stderr}"
    );
}

#[test]
fn sse_and_avx_instructions_run_and_count() {
    // The kernel turns on SSE and AVX for ring 3 (hw::fpu); QEMU's TCG has both.
    let r = emulated(
        &[
            "addps xmm0, xmm1; vaddps ymm2, ymm3, ymm4; fadd st(0), st(1)",
            "--unroll",
            "50",
        ],
        "instructions",
    );
    assert_eq!(per_copy(&r, "instructions"), Some(3.0));
}

#[test]
fn tasks_preempted_round_robin_keep_their_own_vector_registers() {
    require_binutils();
    let dir = tempfile::tempdir().unwrap();
    // Each payload puts its own value in XMM0 and in YMM1's upper half before every repetition,
    // and every copy checks both (UD2, a fault, on a mismatch). Preempted every 20 us while the
    // other one runs, each sees only its own values if the kernel switches the registers.
    let mut elfs = Vec::new();
    for value in ["0x1111", "0x2222"] {
        let name = format!("vec-{}", &value[2..]);
        let out = baremark()
            .args(["asm", "--name", &name, "--init"])
            .arg(format!(
                "mov rax, {value}; movq xmm0, rax; vpbroadcastq ymm1, xmm0"
            ))
            .arg(format!(
                "movq rbx, xmm0; cmp rbx, {value}; je 1f; ud2; 1: vextracti128 xmm2, ymm1, 1; movq rcx, xmm2; cmp rcx, {value}; je 2f; ud2; 2:"
            ))
            .args(["--unroll", "200", "--build-only", "--keep"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        elfs.push(dir.path().join(format!("{name}.elf")));
    }
    let json = dir.path().join("results.json");
    let out = baremark()
        .args([
            "run",
            "--quantum-us",
            "20",
            "--icount",
            "0",
            "--events",
            "none",
        ])
        .args(["--reps", "100", "--timeout", "120", "--payload"])
        .arg(&elfs[0])
        .arg("--payload")
        .arg(&elfs[1])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    let benchmarks = r["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 2, "{r}");
    for b in benchmarks {
        // Preempted inside measured regions, i.e. while its values were in the registers.
        let interrupts = b["results"][0]["interrupts"].as_u64().unwrap();
        assert!(
            interrupts > 0,
            "{} was never preempted mid-region: {b}",
            b["bench"]
        );
    }
}

#[test]
fn a_nanobench_config_counts_the_code_under_its_names() {
    // nanoBench's own pairing: -asm with -config.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg.txt");
    std::fs::write(
        &cfg,
        "# nanoBench format\nC0.00 INST_RETIRED.ANY_P\nC4.00 BR_INST_RETIRED.ALL_BRANCHES\n",
    )
    .unwrap();
    let r = emulated(
        &[
            "add rax, rbx; add rbx, rax",
            "--unroll",
            "100",
            "--config",
            cfg.to_str().unwrap(),
        ],
        "none",
    );
    assert_eq!(per_copy(&r, "INST_RETIRED.ANY_P"), Some(2.0));
    assert_eq!(per_copy(&r, "BR_INST_RETIRED.ALL_BRANCHES"), Some(0.0));
}

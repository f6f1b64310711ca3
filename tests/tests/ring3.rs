//! The ring-3 smoke test (`test = ring3`, kernel/src/task/smoke.rs): payloads of raw machine
//! code run in ring 3 and come back to the kernel through SYSCALL, exceptions and interrupts.
//! Every fault ends only its payload (a `fault` record with `mode: "user"`), the next payload
//! still runs, and the boot ends normally.

use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::QEMU_EXIT_SUCCESS;
use baremark::records::{Record, parse_hex};
use baremark::session::RunOutcome;
use baremark_tests::{
    boot, boot_test_action, expect_ok_end, expect_record, expect_success, hex, page_fault_flags,
    task_record,
};

/// The payloads in the order the kernel runs them.
const PAYLOADS: [&str; 19] = [
    "hello",
    "ud2",
    "write-unmapped",
    "hlt",
    "cli",
    "int3",
    "divide-by-zero",
    "write-kernel-pointer",
    "write-unmapped-pointer",
    "write-overflowing-length",
    "read-kernel-memory",
    "unknown-syscall",
    "registers-preserved",
    "timer-interrupt",
    "syscall-at-end-of-user-half",
    "stack-overflow",
    "execute-stack",
    "write-code",
    "hello-again",
];

const CODE_BASE: u64 = 0x40_0000;
const STACK_TOP: u64 = 0x7fff_0000_0000;
const STACK_PAGES: u64 = 4;

fn outcome() -> &'static RunOutcome {
    static OUTCOME: OnceLock<RunOutcome> = OnceLock::new();
    OUTCOME.get_or_init(|| boot_test_action("ring3", Duration::from_secs(90)))
}

fn exit_code(task: &str) -> i64 {
    let exit = task_record(outcome(), "task_exit", task);
    exit.get("code").as_i64().unwrap_or_else(|| {
        panic!(
            "`task_exit` of `{task}` has no integer code: {}",
            exit.value
        )
    })
}

/// Checks a user-mode fault of `task` and returns its record.
fn user_fault(task: &str, vector: u64, mnemonic: &str) -> &'static Record {
    let outcome = outcome();
    let fault = task_record(outcome, "fault", task);
    assert_eq!(fault.str("mode"), Some("user"), "{}", fault.value);
    assert_eq!(fault.u64("vector"), Some(vector), "{}", fault.value);
    assert_eq!(fault.str("mnemonic"), Some(mnemonic), "{}", fault.value);
    assert_eq!(hex(fault, "cs"), 0x23, "user code selector");
    assert_eq!(hex(fault, "ss"), 0x1b, "user data selector");
    let index = PAYLOADS.iter().position(|p| *p == task).unwrap() as u64;
    assert_eq!(fault.u64("task_index"), Some(index));
    assert!(fault.get("registers")["rax"].is_string());
    assert!(
        outcome
            .records_of("task_exit")
            .all(|r| r.str("task") != Some(task)),
        "a faulting payload does not also exit"
    );
    fault
}

#[test]
fn the_boot_ends_normally_after_the_payloads() {
    let outcome = outcome();
    expect_success(outcome);
    assert_eq!(outcome.qemu_status, Some(QEMU_EXIT_SUCCESS));
    expect_ok_end(outcome);
    assert_eq!(
        expect_record(outcome, "boot").get("config")["test"],
        "ring3"
    );
    assert!(
        outcome.record("error").is_none(),
        "no payload failed to load: {:?}",
        outcome.record("error").map(|r| &r.value)
    );
    assert!(outcome.record("panic").is_none());
    // Every payload ended exactly once, in order, with `task_exit` or `fault`, and after the
    // boot report.
    let ends: Vec<&str> = outcome
        .records
        .iter()
        .filter(|r| r.kind == "task_exit" || r.kind == "fault")
        .map(|r| r.str("task").unwrap_or("<none>"))
        .collect();
    assert_eq!(ends, PAYLOADS);
    let position = |kind: &str| outcome.records.iter().position(|r| r.kind == kind);
    assert!(position("pmu") < position("task_output"));
    assert!(position("task_exit") < position("end"));
}

#[test]
fn write_and_exit() {
    let outcome = outcome();
    for task in ["hello", "hello-again"] {
        let output: Vec<&Record> = outcome
            .records_of("task_output")
            .filter(|r| r.str("task") == Some(task))
            .collect();
        assert_eq!(output.len(), 1, "{task}");
        assert_eq!(output[0].str("text"), Some("hello from ring 3\n"));
        assert_eq!(output[0].u64("part"), Some(0));
        // 42 only if `write` returned 18, the length.
        assert_eq!(exit_code(task), 42, "{task}");
        let exit = task_record(outcome, "task_exit", task);
        assert_eq!(exit.u64("syscalls"), Some(2));
        // Entered with IRETQ first, resumed after `write` with SYSRETQ.
        assert_eq!(exit.get("entries")["iretq"], 1, "{}", exit.value);
        assert_eq!(exit.get("entries")["sysretq"], 1, "{}", exit.value);
    }
    // Only those two wrote anything: the rejected writes produced no output.
    assert_eq!(outcome.records_of("task_output").count(), 2);
}

#[test]
fn invalid_opcode_in_ring3() {
    let fault = user_fault("ud2", 6, "#UD");
    assert_eq!(hex(fault, "rip"), CODE_BASE);
    assert!(fault.get("cr2").is_null());
}

#[test]
fn write_to_an_unmapped_address_is_a_user_page_fault() {
    let fault = user_fault("write-unmapped", 14, "#PF");
    assert_eq!(hex(fault, "cr2"), 0x1000_0000);
    assert_eq!(hex(fault, "error_code"), 0b110, "not present, write, user");
    assert_eq!(page_fault_flags(fault), ["not-present", "write", "user"]);
    assert_eq!(hex(fault, "rip"), CODE_BASE);
}

#[test]
fn privileged_instructions_raise_general_protection() {
    for task in ["hlt", "cli"] {
        let fault = user_fault(task, 13, "#GP");
        assert_eq!(hex(fault, "error_code"), 0, "{task}");
        assert_eq!(hex(fault, "rip"), CODE_BASE, "{task}");
        assert!(fault.get("detail").is_null(), "raised by the CPU");
    }
}

#[test]
fn breakpoint_in_ring3_ends_the_task() {
    let fault = user_fault("int3", 3, "#BP");
    // A trap: RIP is past the one-byte int3.
    assert_eq!(hex(fault, "rip"), CODE_BASE + 1);
}

#[test]
fn divide_by_zero_in_ring3() {
    let fault = user_fault("divide-by-zero", 0, "#DE");
    assert_eq!(hex(fault, "rip"), CODE_BASE + 6);
}

#[test]
fn bad_write_pointers_return_efault() {
    for task in [
        "write-kernel-pointer",
        "write-unmapped-pointer",
        "write-overflowing-length",
    ] {
        assert_eq!(exit_code(task), -2, "{task}: EFAULT");
    }
}

#[test]
fn unknown_syscall_returns_enosys() {
    assert_eq!(exit_code("unknown-syscall"), -3);
}

#[test]
fn reading_kernel_memory_faults_in_user_mode() {
    let fault = user_fault("read-kernel-memory", 14, "#PF");
    assert_eq!(hex(fault, "cr2"), 0xffff_8000_0000_0000);
    let flags = page_fault_flags(fault);
    assert!(
        flags.contains(&"user") && flags.contains(&"read"),
        "{flags:?}"
    );
}

#[test]
fn syscall_preserves_registers() {
    // 0: rax was -3 and rbx, rbp, rdi, rsi, rdx, r8-r10, r12-r15, rsp and the stack held.
    assert_eq!(exit_code("registers-preserved"), 0);
}

#[test]
fn timer_interrupt_in_ring3_returns_to_the_kernel() {
    // The payload spins on `jmp $`; the kernel got the timer interrupt as an exit, acknowledged
    // it, moved RIP past the jump and resumed the payload, which then exited with 7.
    assert_eq!(exit_code("timer-interrupt"), 7);
    let exit = task_record(outcome(), "task_exit", "timer-interrupt");
    assert!(exit.u64("interrupts").unwrap() >= 1, "{}", exit.value);
    // Resumed after the interrupt (RIP moved by the kernel) with IRETQ, never SYSRETQ.
    assert_eq!(exit.get("entries")["sysretq"], 0, "{}", exit.value);
    assert!(exit.get("entries")["iretq"].as_u64().unwrap() >= 2);
    assert!(
        expect_record(outcome(), "end").get("interrupts")["timer"]
            .as_u64()
            .unwrap()
            >= 1
    );
}

#[test]
fn a_non_canonical_return_address_is_never_resumed() {
    // SYSCALL as the last instruction below 0x0000800000000000: SYSRETQ there would #GP in
    // ring 0 on Intel. The kernel refuses to resume and reports the task.
    let fault = user_fault("syscall-at-end-of-user-half", 13, "#GP");
    assert_eq!(hex(fault, "rip"), 0x0000_8000_0000_0000);
    assert!(fault.str("detail").unwrap().contains("canonical"));
    // The unknown syscall was answered before: rax = -3.
    assert_eq!(
        parse_hex(&fault.get("registers")["rax"]),
        Some((-3i64) as u64)
    );
}

#[test]
fn stack_overflow_hits_the_guard_page() {
    let fault = user_fault("stack-overflow", 14, "#PF");
    let guard_top = STACK_TOP - STACK_PAGES * 4096;
    assert_eq!(hex(fault, "cr2"), guard_top - 8);
    assert_eq!(page_fault_flags(fault), ["not-present", "write", "user"]);
}

#[test]
fn the_stack_is_not_executable() {
    let fault = user_fault("execute-stack", 14, "#PF");
    assert_eq!(hex(fault, "cr2"), STACK_TOP - 64);
    assert_eq!(hex(fault, "rip"), STACK_TOP - 64);
    let flags = page_fault_flags(fault);
    assert!(
        flags.contains(&"present") && flags.contains(&"instruction-fetch"),
        "{flags:?}"
    );
}

#[test]
fn code_is_read_only() {
    let fault = user_fault("write-code", 14, "#PF");
    assert_eq!(hex(fault, "cr2"), CODE_BASE + 7);
    assert_eq!(page_fault_flags(fault), ["present", "write", "user"]);
}

#[test]
fn ring3_under_uefi_too() {
    // The UEFI loader builds different page tables; the user half must still start empty and
    // the kernel half stay out of reach.
    let config = RunConfig {
        test: Some("ring3".to_string()),
        ..RunConfig::default()
    };
    let outcome = boot(Firmware::Uefi, config, Duration::from_secs(120), None);
    expect_success(&outcome);
    let ends = outcome
        .records
        .iter()
        .filter(|r| r.kind == "task_exit" || r.kind == "fault")
        .count();
    assert_eq!(ends, PAYLOADS.len());
    assert!(
        outcome
            .records_of("fault")
            .all(|r| r.str("mode") == Some("user"))
    );
    let hello = outcome
        .records_of("task_exit")
        .find(|r| r.str("task") == Some("hello"))
        .expect("hello exited");
    assert_eq!(hello.get("code"), 42);
}

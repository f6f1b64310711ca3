//! Negative tests: test-only boot configurations make the kernel fail on purpose, and the
//! harness must see each failure in the records, the end status and QEMU's exit code.

use std::time::Duration;

use baremark::qemu::QEMU_EXIT_FAILURE;
use baremark::session::{RunOutcome, Verdict};
use baremark_tests::{boot_test_action, expect_record, hex};

fn assert_failed(outcome: &RunOutcome, reason: &str) {
    assert_eq!(
        outcome.verdict(),
        Verdict::KernelFailure(reason.into()),
        "serial tail:\n{}",
        outcome.tail_text()
    );
    assert_eq!(outcome.qemu_status, Some(QEMU_EXIT_FAILURE));
    let end = expect_record(outcome, "end");
    assert_eq!(end.str("status"), Some("fail"));
    // The boot report before the failure is intact.
    for kind in ["boot", "cpu", "tsc", "apic", "pmu"] {
        expect_record(outcome, kind);
    }
}

#[test]
fn kernel_page_fault_is_reported_with_its_registers() {
    let outcome = boot_test_action("page-fault", Duration::from_secs(60));
    assert_failed(&outcome, "kernel-mode page-fault exception");
    let fault = expect_record(&outcome, "fault");
    assert_eq!(fault.str("mode"), Some("kernel"));
    assert_eq!(fault.u64("vector"), Some(14));
    assert_eq!(fault.str("mnemonic"), Some("#PF"));
    assert_eq!(fault.str("name"), Some("page-fault"));
    assert_eq!(
        hex(fault, "cr2"),
        0x0000_0dea_d000_0000,
        "the address the test reads"
    );
    // Not present, read, supervisor: error code 0.
    assert_eq!(hex(fault, "error_code"), 0);
    let flags: Vec<&str> = fault
        .get("page_fault")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(flags, ["not-present", "read", "supervisor"]);
    assert_eq!(hex(fault, "cs"), 0x08, "kernel code selector");
    assert!(
        hex(fault, "rip") >= 0xffff_8000_0000_0000,
        "RIP in the kernel's upper half"
    );
    assert!(fault.get("registers")["rax"].is_string());
}

#[test]
fn kernel_panic_is_reported_with_location_and_message() {
    let outcome = boot_test_action("panic", Duration::from_secs(60));
    assert_failed(&outcome, "kernel panic");
    let panic = expect_record(&outcome, "panic");
    assert_eq!(panic.str("file"), Some("kernel/src/boot/actions.rs"));
    assert!(panic.u64("line").unwrap() > 0);
    assert_eq!(
        panic.str("message"),
        Some("test panic requested by the run configuration")
    );
}

#[test]
fn invalid_opcode_is_reported() {
    let outcome = boot_test_action("invalid-opcode", Duration::from_secs(60));
    assert_failed(&outcome, "kernel-mode invalid-opcode exception");
    let fault = expect_record(&outcome, "fault");
    assert_eq!(fault.u64("vector"), Some(6));
    assert!(fault.get("cr2").is_null(), "cr2 only for page faults");
}

#[test]
fn stack_overflow_becomes_a_double_fault_on_its_own_stack() {
    let outcome = boot_test_action("stack-overflow", Duration::from_secs(60));
    assert_failed(&outcome, "kernel-mode double-fault exception");
    let fault = expect_record(&outcome, "fault");
    assert_eq!(fault.u64("vector"), Some(8));
    assert_eq!(fault.str("mnemonic"), Some("#DF"));
}

#[test]
fn a_hung_kernel_becomes_a_timeout_with_the_serial_tail() {
    let outcome = boot_test_action("hang", Duration::from_secs(10));
    assert_eq!(outcome.verdict(), Verdict::Timeout);
    assert!(outcome.record("end").is_none());
    assert!(
        outcome.tail.iter().any(|l| l.contains("test   hang")),
        "tail: {:?}",
        outcome.tail
    );
    assert!(
        outcome
            .tail_text()
            .contains("hang: spinning with interrupts off")
    );
}

//! The misbehaving payloads (payloads/zoo, docs/reliability.md "Misbehaving payloads"), each
//! contained: a record says what happened, the kernel goes on to the next payload, nothing
//! measured before is lost, and the run ends `ok`.
//!
//! One image runs them all in sequence under TCG with `-icount shift=0`, with the suite's
//! `add-latency` first and last (its result exact both times, so nothing the zoo did disturbed
//! the measurement or was left behind), and five crafted ELFs that the loader must refuse
//! (overlapping segments, a huge `p_memsz`, a huge `p_filesz`, a segment in the kernel's half,
//! more segments than allowed: also checked on the host with `task::elf::plan`). Two more
//! boots: `zoo-syscall-flood` with a small watchdog budget (the kernel's service of a task is
//! budgeted too), and `zoo-rdpmc` on the emulated PMU (RDPMC executed by the hardware, with a
//! counter of the task's own).

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use baremark::image::{Firmware, Overhead, RunConfig};
use baremark::payloads::builtin;
use baremark::qemu::PmuModel;
use baremark::records::Record;
use baremark::session::RunOutcome;
use baremark_kernel::task::abi::{
    EBUSY, ELIMIT, ENOMEM, MAX_FAMILY_SPAWNS, MAX_SPAWN_DEPTH, STACK_PAGES, STACK_TOP,
    USER_PAGE_ADDR,
};
use baremark_kernel::task::elf::{ElfPart, Limits, PayloadError, plan};
use baremark_tests::{
    boot, boot_emulated_ok, expect_ok_end, expect_record, expect_success, hex, indexed_record,
    indexed_records, page_fault_flags,
};

/// Where a crafted ELF's code goes (the file offset of its first segment).
const CODE_OFFSET: u64 = 0x1000;
/// `mov eax, 0; xor edi, edi; syscall` (exit 0), then `jmp $`.
const CODE: [u8; 11] = [0xb8, 0, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05, 0xeb, 0xfe];
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;

/// A `PT_LOAD` program header.
#[derive(Clone, Copy)]
struct Load {
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
}

/// The code segment every crafted ELF starts with: [`CODE`] at 0x400000.
const TEXT: Load = Load {
    flags: PF_R | PF_X,
    offset: CODE_OFFSET,
    vaddr: 0x40_0000,
    filesz: CODE.len() as u64,
    memsz: CODE.len() as u64,
};

/// An ELF64 x86_64 `ET_EXEC` with these program headers and [`CODE`] at [`CODE_OFFSET`], bytes
/// by hand.
fn crafted(entry: u64, loads: &[Load]) -> Vec<u8> {
    let mut f = vec![0u8; CODE_OFFSET as usize];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2; // ELFCLASS64
    f[5] = 1; // little-endian
    f[6] = 1; // EV_CURRENT
    f[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    f[20..24].copy_from_slice(&1u32.to_le_bytes());
    f[24..32].copy_from_slice(&entry.to_le_bytes());
    f[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
    f[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    f[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
    f[56..58].copy_from_slice(&(loads.len() as u16).to_le_bytes());
    for (i, l) in loads.iter().enumerate() {
        let at = 64 + 56 * i;
        let ph = &mut f[at..at + 56];
        ph[0..4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        ph[4..8].copy_from_slice(&l.flags.to_le_bytes());
        ph[8..16].copy_from_slice(&l.offset.to_le_bytes());
        ph[16..24].copy_from_slice(&l.vaddr.to_le_bytes());
        ph[24..32].copy_from_slice(&l.vaddr.to_le_bytes());
        ph[32..40].copy_from_slice(&l.filesz.to_le_bytes());
        ph[40..48].copy_from_slice(&l.memsz.to_le_bytes());
        ph[48..56].copy_from_slice(&0x1000u64.to_le_bytes());
    }
    f.extend_from_slice(&CODE);
    f
}

/// The crafted ELFs, their ramdisk names and the error the loader must give.
fn crafted_elfs() -> Vec<(&'static str, Vec<u8>, PayloadError)> {
    let data = |vaddr, filesz, memsz| Load {
        flags: PF_R | PF_W,
        offset: 0x2000,
        vaddr,
        filesz,
        memsz,
    };
    let upper = 0xffff_8000_0000_0000u64;
    vec![
        (
            // A data segment over the code's page: one page cannot be both.
            "elf-overlapping",
            crafted(0x40_0000, &[TEXT, data(0x40_0000, 0, 0x2000)]),
            PayloadError::SegmentsOverlap { a: 0, b: 1 },
        ),
        (
            // 1 TiB of bss (no file bytes): over the 64 MiB a payload may map.
            "elf-huge-memsz",
            crafted(0x40_0000, &[TEXT, data(0x60_0000, 0, 1 << 40)]),
            PayloadError::TooLarge {
                bytes: 0x1000 + (1 << 40),
                max: Limits::DEFAULT_MAX_BYTES,
            },
        ),
        (
            // 1 TiB of file bytes in a file of a few KiB.
            "elf-huge-filesz",
            crafted(0x40_0000, &[TEXT, data(0x60_0000, 1 << 40, 1 << 40)]),
            PayloadError::Truncated {
                what: ElfPart::SegmentData { index: 1 },
                offset: 0x2000 + (1 << 40),
            },
        ),
        (
            // The code in the kernel's half, the entry there too.
            "elf-kernel-half",
            crafted(
                upper,
                &[Load {
                    vaddr: upper,
                    ..TEXT
                }],
            ),
            PayloadError::SegmentOutOfRange {
                index: 0,
                vaddr: upper,
                end: upper + CODE.len() as u64,
            },
        ),
        (
            // 17 loadable segments, one page each.
            "elf-too-many-segments",
            crafted(
                0x40_0000,
                &(0..17u64)
                    .map(|i| Load {
                        vaddr: 0x40_0000 + i * 0x1000,
                        ..TEXT
                    })
                    .collect::<Vec<_>>(),
            ),
            PayloadError::TooManySegments {
                max: Limits::DEFAULT_MAX_SEGMENTS,
            },
        ),
    ]
}

/// The control: a crafted ELF with only its code segment loads (so the refusals above are the
/// headers' doing, not the builder's).
#[test]
fn crafted_elfs_are_refused_by_the_loader_on_the_host() {
    let ok = plan(&crafted(0x40_0000, &[TEXT]), &Limits::default()).expect("the plain one");
    assert_eq!(ok.entry, 0x40_0000);
    assert_eq!(ok.segments.len(), 1);
    for (name, bytes, expected) in crafted_elfs() {
        assert_eq!(plan(&bytes, &Limits::default()), Err(expected), "{name}");
    }
    // Past the user range in the lower half too: where the stack and the counter page live,
    // and page 0.
    for vaddr in [Limits::DEFAULT_USER_END, USER_PAGE_ADDR, 0] {
        let bytes = crafted(vaddr, &[Load { vaddr, ..TEXT }]);
        assert_eq!(
            plan(&bytes, &Limits::default()),
            Err(PayloadError::SegmentOutOfRange {
                index: 0,
                vaddr,
                end: vaddr + CODE.len() as u64
            }),
            "{vaddr:#x}"
        );
    }
    // 16 segments are allowed: the 17th is what is refused.
    let sixteen: Vec<Load> = (0..16u64)
        .map(|i| Load {
            vaddr: 0x40_0000 + i * 0x1000,
            ..TEXT
        })
        .collect();
    assert!(plan(&crafted(0x40_0000, &sixteen), &Limits::default()).is_ok());
}

/// The main image's payloads in run order: (ramdisk name, built-in name), `None` for the
/// crafted ELFs (in `crafted_elfs` order).
const ORDER: &[(&str, Option<&str>)] = &[
    ("add-latency", Some("add-latency")),
    ("zoo-memory-elf", Some("zoo-memory-elf")),
    ("elf-overlapping", None),
    ("elf-huge-memsz", None),
    ("elf-huge-filesz", None),
    ("elf-kernel-half", None),
    ("elf-too-many-segments", None),
    ("zoo-page-write", Some("zoo-page-write")),
    ("zoo-stack", Some("zoo-stack")),
    ("zoo-rdpmc", Some("zoo-rdpmc")),
    ("zoo-syscall-storm", Some("zoo-syscall-storm")),
    ("zoo-smc", Some("zoo-smc")),
    ("zoo-port-io", Some("zoo-port-io")),
    ("zoo-spawn-bomb", Some("zoo-spawn-bomb")),
    ("zoo-memory", Some("zoo-memory")),
    ("add-latency-again", Some("add-latency")),
];

fn payloads(order: &[(&str, Option<&str>)]) -> Vec<(String, Vec<u8>)> {
    let mut crafted = crafted_elfs().into_iter();
    order
        .iter()
        .map(|&(name, b)| {
            let elf = match b {
                Some(b) => builtin(b)
                    .unwrap_or_else(|| panic!("no built-in `{b}`"))
                    .elf
                    .to_vec(),
                None => {
                    let (n, bytes, _) = crafted.next().unwrap();
                    assert_eq!(n, name, "ORDER and crafted_elfs agree");
                    bytes
                }
            };
            (name.to_string(), elf)
        })
        .collect()
}

/// The main image, booted once for every test that reads it.
fn zoo() -> &'static RunOutcome {
    static RUN: OnceLock<RunOutcome> = OnceLock::new();
    RUN.get_or_init(|| {
        let config = RunConfig {
            timer_checks: false,
            payloads: payloads(ORDER),
            reps: Some(5),
            warmup: Some(1),
            overhead: Some(Overhead::Empty),
            ..RunConfig::default()
        };
        boot(Firmware::Bios, config, Duration::from_secs(120), Some(0))
    })
}

/// The task index of the ramdisk payload `name`.
fn index(name: &str) -> u64 {
    ORDER.iter().position(|(n, _)| *n == name).unwrap() as u64
}

/// A `report` value of a task (the first report that has `key`), as a string.
fn reported<'a>(outcome: &'a RunOutcome, index: u64, key: &str) -> &'a str {
    indexed_records(outcome, "report", index)
        .find_map(|r| r.get("values")[key].as_str())
        .unwrap_or_else(|| panic!("task {index} reported no `{key}`"))
}

fn reported_i64(outcome: &RunOutcome, index: u64, key: &str) -> i64 {
    reported(outcome, index, key)
        .parse()
        .unwrap_or_else(|e| panic!("task {index}: `{key}`: {e}"))
}

/// The children `parent` spawned: task index -> `arg`.
fn children(outcome: &RunOutcome, parent: u64) -> BTreeMap<u64, u64> {
    outcome
        .records_of("task_spawn")
        .filter(|r| r.u64("parent_index") == Some(parent))
        .map(|r| (r.u64("task_index").unwrap(), hex(r, "arg")))
        .collect()
}

/// The user-mode fault that ended task `index`, checked to be one.
fn user_fault(outcome: &RunOutcome, index: u64, vector: u64) -> &Record {
    let fault = indexed_record(outcome, "fault", index);
    assert_eq!(fault.str("mode"), Some("user"), "{}", fault.value);
    assert_eq!(fault.u64("vector"), Some(vector), "{}", fault.value);
    assert_eq!(hex(fault, "cs"), 0x23, "{}", fault.value);
    assert_eq!(
        indexed_records(outcome, "task_exit", index).count(),
        0,
        "a fault ends it"
    );
    fault
}

/// The parent's `wait` results (`case_<k>`) are all `EABORTED` (-7), `n` of them.
fn every_case_aborted(outcome: &RunOutcome, parent: u64, n: usize) {
    let report = indexed_records(outcome, "report", parent)
        .find(|r| r.get("values").get("aborted").is_some())
        .expect("the parent's report of its cases");
    let values = report.get("values").as_object().unwrap();
    let cases: Vec<_> = values
        .iter()
        .filter(|(k, _)| k.starts_with("case_"))
        .collect();
    assert_eq!(cases.len(), n, "{}", report.value);
    assert!(
        cases.iter().all(|(_, v)| v.as_str() == Some("-7")),
        "{}",
        report.value
    );
    assert_eq!(values["aborted"].as_str(), Some(n.to_string().as_str()));
    assert_eq!(
        indexed_record(outcome, "task_exit", parent)
            .get("code")
            .as_i64(),
        Some(0)
    );
}

#[test]
fn the_run_goes_on_to_the_end_and_ends_ok() {
    let outcome = zoo();
    expect_success(outcome);
    expect_ok_end(outcome);
    // Not one fault in the kernel, no panic.
    assert!(
        outcome
            .records_of("fault")
            .all(|f| f.str("mode") == Some("user"))
    );
    assert_eq!(outcome.records_of("panic").count(), 0);
    // Every ramdisk payload was taken in turn: a task_start or a task_error each.
    for (i, (name, _)) in ORDER.iter().enumerate() {
        let started = indexed_records(outcome, "task_start", i as u64).count();
        let refused = indexed_records(outcome, "task_error", i as u64).count();
        assert_eq!(started + refused, 1, "{name}");
    }
    // Every task's memory came back: the frames in use after the payloads are those in use
    // before them, though zoo-memory took all there was.
    let summary = expect_record(outcome, "summary");
    let frames = summary.get("frames");
    assert_eq!(frames["before"], frames["after"], "{}", summary.value);
    assert_eq!(frames["peak"], frames["usable"], "zoo-memory used it all");
    assert_eq!(summary.u64("payloads"), Some(ORDER.len() as u64));
}

/// The normal payload before the zoo and after it: exact, and the same.
#[test]
fn the_measurements_around_the_zoo_are_intact_and_exact() {
    let outcome = zoo();
    let results: Vec<&Record> = outcome
        .records_of("result")
        .filter(|r| r.str("bench") == Some("add-latency"))
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].str("payload"), Some("add-latency"));
    assert_eq!(results[1].str("payload"), Some("add-latency-again"));
    for r in &results {
        assert_eq!(r.get("supported"), true, "{}", r.value);
        // 8 adds, dec, jnz: exactly 10 instructions per iteration under icount.
        let per = r.get("per_iteration");
        assert_eq!(per["min"], 10, "{}", r.value);
        assert_eq!(per["max"], 10, "{}", r.value);
        assert_eq!(r.get("value")["median"], 10_000);
    }
    assert_eq!(results[0].get("raw"), results[1].get("raw"));
    // The first one's result came before the zoo ran.
    let first = outcome
        .records
        .iter()
        .position(|r| std::ptr::eq(r, results[0]));
    let zoo_start = outcome
        .records
        .iter()
        .position(|r| r.kind == "task_error" && r.str("task") == Some("zoo-memory-elf"));
    assert!(first < zoo_start);
}

#[test]
fn elfs_over_the_loaders_limits_are_not_run() {
    let outcome = zoo();
    // zoo-memory-elf: 65 MiB of bss, built by rustc.
    let memory = indexed_record(outcome, "task_error", index("zoo-memory-elf"));
    let expected = plan(builtin("zoo-memory-elf").unwrap().elf, &Limits::default()).unwrap_err();
    assert!(matches!(expected, PayloadError::TooLarge { .. }));
    assert_eq!(memory.str("message"), Some(expected.to_string().as_str()));
    for (name, _, error) in crafted_elfs() {
        let record = indexed_record(outcome, "task_error", index(name));
        assert_eq!(
            record.str("message"),
            Some(error.to_string().as_str()),
            "{name}"
        );
        assert_eq!(
            indexed_records(outcome, "task_start", index(name)).count(),
            0
        );
    }
}

#[test]
fn writing_the_counter_page_is_refused_and_faults() {
    let outcome = zoo();
    let i = index("zoo-page-write");
    assert_eq!(reported(outcome, i, "page"), "0x7fffc0000000");
    for call in ["time", "counters_read", "bench_plan"] {
        assert_eq!(reported_i64(outcome, i, call), -2, "{call}: EFAULT");
    }
    let fault = user_fault(outcome, i, 14);
    assert_eq!(page_fault_flags(fault), ["present", "write", "user"]);
    assert_eq!(hex(fault, "cr2"), USER_PAGE_ADDR + 8);
}

#[test]
fn a_stack_that_grows_without_end_hits_its_guard_page() {
    let outcome = zoo();
    let fault = user_fault(outcome, index("zoo-stack"), 14);
    assert_eq!(page_fault_flags(fault), ["not-present", "write", "user"]);
    let guard = STACK_TOP - (STACK_PAGES + 1) * 4096;
    let cr2 = hex(fault, "cr2");
    assert!(
        (guard..guard + 4096).contains(&cr2),
        "{cr2:#x} not in the guard page"
    );
}

#[test]
fn rdpmc_with_indices_of_no_counter_ends_only_the_task() {
    let outcome = zoo();
    let parent = index("zoo-rdpmc");
    // RCX's upper half is ignored: the virtual TSC is read, twice, in order.
    assert_eq!(reported(outcome, parent, "monotonic"), "1");
    assert_eq!(
        indexed_record(outcome, "task_exit", parent).u64("rdpmc_emulated"),
        Some(2)
    );
    // No PMU under plain TCG: no round with a counter.
    assert_eq!(reported(outcome, parent, "counters_configure"), "ENODEV");
    let kids = children(outcome, parent);
    assert_eq!(kids.len(), 14);
    for (&child, &case) in &kids {
        let index = reported(outcome, child, "index");
        let fault = indexed_record(outcome, "fault", child);
        assert!(
            matches!(fault.u64("vector"), Some(6 | 13)),
            "{}",
            fault.value
        );
        let detail = fault.str("detail").unwrap_or_default();
        assert!(
            detail.starts_with(&format!("rdpmc index {index}: the task has no counter")),
            "case {case}: {detail}"
        );
    }
    // The special indices, then random ones, none of them twice.
    let indices: Vec<&str> = kids
        .keys()
        .map(|&c| reported(outcome, c, "index"))
        .collect();
    assert_eq!(&indices[..3], ["0x0", "0x1", "0x7"]);
    assert!(indices.contains(&"0xffffffff") && indices.contains(&"0x80000000"));
    let mut unique = indices.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), indices.len());
    every_case_aborted(outcome, parent, 14);
}

#[test]
fn a_syscall_storm_in_measured_regions_is_measured_or_refused_never_garbage() {
    let outcome = zoo();
    let i = index("zoo-syscall-storm");
    let result = |bench: &str| {
        outcome
            .records_of("result")
            .find(|r| {
                r.str("payload") == Some("zoo-syscall-storm") && r.str("bench") == Some(bench)
            })
            .unwrap_or_else(|| panic!("no result for `{bench}`"))
    };
    // 800 syscalls per region: measured, the same in every repetition.
    let storm = result("storm");
    assert_eq!(storm.get("supported"), true);
    assert_eq!(
        storm.get("raw")["min"],
        storm.get("raw")["max"],
        "{}",
        storm.value
    );
    let per = storm.get("per_iteration")["median"].as_f64().unwrap();
    assert!(
        (8.0 * 10.0..8.0 * 100.0).contains(&per),
        "{per} per 8 syscalls"
    );
    let exit = indexed_record(outcome, "task_exit", i);
    assert!(
        exit.u64("syscalls").unwrap() > 6 * 100 * 8,
        "{}",
        exit.value
    );
    // counters_reset inside the regions is refused, said once, and the regions stay sane (it
    // used to restart the virtual TSC under them: 1.8e19 ticks).
    let refusals: Vec<_> = outcome
        .records_of("harness_error")
        .filter(|r| r.str("bench") == Some("storm-reset"))
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(
        refusals[0]
            .str("message")
            .unwrap()
            .starts_with("counters_reset refused (EBUSY) while a benchmark is open")
    );
    let reset = result("storm-reset");
    assert_eq!(reset.get("supported"), true);
    assert_eq!(reset.get("raw")["min"], reset.get("raw")["max"]);
    assert!(
        reset.get("raw")["max"].as_f64().unwrap() < 1e6,
        "{}",
        reset.value
    );
    // Harness calls inside the regions: the benchmark ended by its own body is "not measured",
    // and the SDK's samples are refused rather than reported under the other one's name.
    let harness = result("storm-harness");
    assert_eq!(harness.get("supported"), false);
    assert!(harness.str("reason").unwrap().starts_with("not measured"));
    assert!(
        outcome
            .records_of("result")
            .filter(|r| r.str("bench") == Some("another"))
            .all(|r| r.get("supported") == false)
    );
    assert!(outcome.records_of("harness_error").any(|r| {
        r.str("message")
            .unwrap()
            .starts_with("bench_samples: it names benchmark")
    }));
    assert_eq!(reported(outcome, i, "storm"), "ok");
    assert_eq!(reported(outcome, i, "storm_reset"), "ok");
    assert_eq!(reported(outcome, i, "storm_harness"), "EINVAL");
    assert_eq!(exit.get("code").as_i64(), Some(0));
}

#[test]
fn code_is_never_writable_and_data_never_executable() {
    let outcome = zoo();
    let parent = index("zoo-smc");
    // The kernel does not write the task's code for it either.
    assert_eq!(reported_i64(outcome, parent, "time_into_code"), -2);
    assert_eq!(reported_i64(outcome, parent, "counters_read_into_code"), -2);
    assert_eq!(reported(outcome, parent, "code_unchanged"), "1");
    let code = u64::from_str_radix(
        reported(outcome, parent, "code").trim_start_matches("0x"),
        16,
    )
    .unwrap();
    let kids = children(outcome, parent);
    assert_eq!(kids.values().copied().collect::<Vec<_>>(), [1, 2, 3, 4]);
    for (&child, &case) in &kids {
        let fault = user_fault(outcome, child, 14);
        let flags = page_fault_flags(fault);
        let (rip, cr2) = (hex(fault, "rip"), hex(fault, "cr2"));
        match case {
            1 => {
                assert_eq!(flags, ["present", "write", "user"]);
                assert_eq!(cr2, code, "the write hit its own function");
            }
            _ => {
                assert_eq!(flags, ["present", "read", "user", "instruction-fetch"]);
                assert_eq!(cr2, rip, "the fetch itself faulted");
            }
        }
        if case == 3 {
            assert!((STACK_TOP - STACK_PAGES * 4096..STACK_TOP).contains(&rip));
        }
        if case == 4 {
            assert_eq!(rip, USER_PAGE_ADDR);
        }
    }
    every_case_aborted(outcome, parent, 4);
}

#[test]
fn port_io_in_ring3_is_a_general_protection_fault() {
    let outcome = zoo();
    let parent = index("zoo-port-io");
    let kids = children(outcome, parent);
    assert_eq!(kids.values().copied().collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    for &child in kids.keys() {
        let fault = user_fault(outcome, child, 13);
        assert_eq!(hex(fault, "error_code"), 0, "{}", fault.value);
        assert!(fault.get("detail").is_null(), "the CPU's, not the kernel's");
    }
    every_case_aborted(outcome, parent, 5);
}

#[test]
fn a_spawn_bomb_is_stopped_by_its_familys_limits() {
    let outcome = zoo();
    let root = index("zoo-spawn-bomb");
    let tasks: Vec<u64> = outcome
        .records_of("task_start")
        .filter(|r| r.str("task") == Some("zoo-spawn-bomb"))
        .map(|r| r.u64("task_index").unwrap())
        .collect();
    assert_eq!(tasks.len() as u64, 1 + u64::from(MAX_FAMILY_SPAWNS));
    // Each task exits with why it stopped (EBUSY or ELIMIT) and how many it spawned; the
    // counts add up to the family's.
    let mut spawned = 0;
    for &t in &tasks {
        let code = indexed_record(outcome, "task_exit", t)
            .get("code")
            .as_i64()
            .unwrap();
        let (n, refusal) = baremark_payload_zoo::bomb_exit_parts(code);
        assert!(refusal == EBUSY || refusal == ELIMIT, "task {t}: {code}");
        spawned += n;
    }
    assert_eq!(spawned, u64::from(MAX_FAMILY_SPAWNS));
    // No generation deeper than the limit, and the limit was reached.
    let depths: Vec<u64> = outcome
        .records_of("task_spawn")
        .filter(|r| r.str("task") == Some("zoo-spawn-bomb"))
        .map(|r| hex(r, "arg"))
        .collect();
    assert_eq!(depths.iter().max(), Some(&u64::from(MAX_SPAWN_DEPTH)));
    // One error record per limit the family met, naming it.
    let errors: Vec<&str> = outcome
        .records_of("error")
        .filter(|r| r.str("task") == Some("zoo-spawn-bomb"))
        .filter_map(|r| r.str("message"))
        .collect();
    for limit in [
        "MAX_FAMILY_SPAWNS",
        "MAX_SPAWN_DEPTH",
        "MAX_CHILDREN",
        "MAX_SPAWNED",
    ] {
        assert_eq!(
            errors.iter().filter(|m| m.contains(limit)).count(),
            1,
            "{limit}: {errors:?}"
        );
    }
    assert_eq!(reported(outcome, root, "spawned"), "16");
    assert_eq!(reported_i64(outcome, root, "refused"), EBUSY);
}

#[test]
fn running_out_of_memory_refuses_the_spawn_and_gives_it_all_back() {
    let outcome = zoo();
    let root = index("zoo-memory");
    let spawned = reported_i64(outcome, root, "spawned");
    assert!(spawned >= 1, "at least one 60 MiB copy fits in 256 MiB");
    assert_eq!(reported_i64(outcome, root, "refused"), ENOMEM);
    let kids = children(outcome, root);
    // The refused one has its task_error, the others ran: each found its 60 MiB zeroed.
    assert_eq!(kids.len() as i64, spawned + 1);
    let refused: Vec<_> = kids
        .keys()
        .filter(|&&k| indexed_records(outcome, "task_error", k).count() == 1)
        .collect();
    assert_eq!(refused.len(), 1);
    let message = indexed_record(outcome, "task_error", *refused[0])
        .str("message")
        .unwrap();
    assert!(message.starts_with("not enough free memory"), "{message}");
    for &k in kids.keys().filter(|k| !refused.contains(k)) {
        assert_eq!(
            indexed_record(outcome, "task_exit", k).get("code").as_i64(),
            Some(0),
            "task {k}"
        );
    }
    assert_eq!(
        indexed_record(outcome, "task_exit", root)
            .get("code")
            .as_i64(),
        Some(0)
    );
    // And the payload after it ran (the_measurements_around_the_zoo_are_intact_and_exact).
    assert_eq!(
        indexed_records(outcome, "task_start", index("add-latency-again")).count(),
        1
    );
}

/// `zoo-syscall-flood` (with its `args`, if any) under a 20 ms watchdog budget, then
/// `add-latency`.
fn flood(args: Option<&str>) -> RunOutcome {
    let order = [
        ("zoo-syscall-flood", Some("zoo-syscall-flood")),
        ("add-latency", Some("add-latency")),
    ];
    let config = RunConfig {
        timer_checks: false,
        payloads: payloads(&order),
        extra_members: args
            .map(|a| ("args/zoo-syscall-flood".into(), a.as_bytes().to_vec()))
            .into_iter()
            .collect(),
        task_budget_ms: Some(20),
        reps: Some(5),
        warmup: Some(1),
        ..RunConfig::default()
    };
    boot(Firmware::Bios, config, Duration::from_secs(120), Some(0))
}

/// The kernel's service of a task is budgeted too: `zoo-syscall-flood` (a `write` per loop)
/// is killed once its syscalls had the budget's worth of kernel time, though its own time is far
/// below it; the payload after it runs.
#[test]
fn a_flood_of_syscalls_is_stopped_by_the_watchdog() {
    let outcome = flood(None);
    expect_success(&outcome);
    let killed = indexed_record(&outcome, "task_killed", 0);
    assert_eq!(killed.str("exceeded"), Some("service"), "{}", killed.value);
    let budget = killed.u64("budget_tsc").unwrap();
    let service = killed.u64("service_tsc").unwrap();
    let own = killed.u64("virtual_tsc").unwrap();
    assert!(service >= budget, "{}", killed.value);
    assert!(
        service - budget < budget / 10,
        "killed promptly: {}",
        killed.value
    );
    assert!(
        own < budget / 2,
        "its own time is not what ran out: {}",
        killed.value
    );
    assert!(killed.u64("syscalls").unwrap() > 100);
    assert_eq!(
        indexed_records(&outcome, "task_output", 0).count() as u64 + 1,
        killed.u64("syscalls").unwrap(),
        "one record per write (and the `args` call)"
    );
    let result = outcome
        .records_of("result")
        .find(|r| r.str("payload") == Some("add-latency"))
        .expect("the next payload ran");
    assert_eq!(result.get("per_iteration")["median"], 10);
}

/// The same with light syscalls (`zoo-syscall-flood=light`: an unknown number, answered by the
/// SYSCALL entry without returning to the task runner): their kernel time is still the task's
/// service, folded in at the next return to the runner (the timer's), and the watchdog ends the
/// task on it as promptly.
#[test]
fn a_flood_of_light_syscalls_is_stopped_by_the_watchdog() {
    let outcome = flood(Some("light"));
    expect_success(&outcome);
    let killed = indexed_record(&outcome, "task_killed", 0);
    let budget = killed.u64("budget_tsc").unwrap();
    let service = killed.u64("service_tsc").unwrap();
    let own = killed.u64("virtual_tsc").unwrap();
    let calls = killed.u64("syscalls").unwrap();
    // A light syscall's kernel part is as short as the task's own loop around it, so either
    // budget may run out first; whichever did, promptly.
    let spent = match killed.str("exceeded") {
        Some("service") => service,
        Some("ring3") => own,
        other => panic!("exceeded {other:?}: {}", killed.value),
    };
    assert!(spent >= budget, "{}", killed.value);
    assert!(
        spent - budget < budget / 10,
        "killed promptly: {}",
        killed.value
    );
    // Far more calls than the general path's writes get in the same budget, none of them
    // output, and every one's kernel time in the service (the light path is over 20
    // instructions between its two TSC readings).
    assert!(calls > 100_000, "{}", killed.value);
    assert!(service >= calls * 20, "{}", killed.value);
    assert_eq!(indexed_records(&outcome, "task_output", 0).count(), 0);
    let result = outcome
        .records_of("result")
        .find(|r| r.str("payload") == Some("add-latency"))
        .expect("the next payload ran");
    assert_eq!(result.get("per_iteration")["median"], 10);
}

/// On the emulated PMU, `zoo-rdpmc`'s second round runs with a counter of its own (GP 0) and
/// CR4.PCE set, so every RDPMC runs in hardware: its own counter reads its count, counters the
/// CPU has but the child does not own (GP 1, fixed 0) read 0, never the parent's counts, and an
/// index the CPU has no counter for faults.
#[test]
fn rdpmc_with_a_counter_of_its_own_reads_only_its_own_counts() {
    let config = RunConfig {
        timer_checks: false,
        payloads: payloads(&[("zoo-rdpmc", Some("zoo-rdpmc"))]),
        ..RunConfig::default()
    };
    let outcome = boot_emulated_ok(config, Duration::from_secs(120), PmuModel::IntelV4);
    assert_eq!(reported(&outcome, 0, "counters_configure"), "ok");
    assert_eq!(reported(&outcome, 0, "counted"), "3");
    let parent_gp1: u64 = reported(&outcome, 0, "gp1").parse().unwrap();
    let parent_fixed0: u64 = reported(&outcome, 0, "fixed0").parse().unwrap();
    assert!(parent_gp1 > 10_000 && parent_fixed0 > 10_000);
    let kids = children(&outcome, 0);
    assert_eq!(kids.len(), 28);
    let mut faulted = 0;
    for (&child, &arg) in kids.iter().filter(|(_, a)| **a & 0x100 != 0) {
        let index = reported(&outcome, child, "index");
        assert_eq!(reported(&outcome, child, "counters"), "1");
        let exit = indexed_records(&outcome, "task_exit", child).next();
        match index {
            "0x0" | "0x1" | "0x40000000" => {
                let exit = exit.unwrap_or_else(|| panic!("{index}: read in hardware"));
                assert_eq!(exit.get("pce"), true);
                assert_eq!(exit.u64("rdpmc_emulated"), Some(0));
                let value: u64 = indexed_records(&outcome, "report", child)
                    .find_map(|r| r.get("values")["value"].as_str())
                    .unwrap()
                    .parse()
                    .unwrap();
                if index == "0x0" {
                    assert!(value > 0 && value < 10_000, "its own count: {value}");
                } else {
                    assert_eq!(value, 0, "{index}: not the parent's {parent_gp1}");
                }
            }
            _ => {
                assert!(exit.is_none(), "case {arg:#x}, {index}");
                let fault = user_fault(&outcome, child, 13);
                let detail = fault.str("detail").unwrap();
                assert!(
                    detail.starts_with(&format!("rdpmc index {index}:")),
                    "{detail}"
                );
                faulted += 1;
            }
        }
    }
    assert_eq!(faulted, 11);
    assert_eq!(
        indexed_record(&outcome, "task_exit", 0)
            .get("code")
            .as_i64(),
        Some(0)
    );
}

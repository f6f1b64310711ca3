//! The built-in payloads, as the kernel's loader will see them: each must be a static ELF64
//! executable that `task::elf::plan` accepts, with its entry in an executable segment.

use baremark::payloads::{BUILTIN, ZOO};
use baremark_kernel::task::elf::{Limits, PayloadError, plan};
use baremark_tests::expect_loadable_payload;

#[test]
fn every_builtin_payload_is_accepted_by_the_kernels_loader() {
    assert!(!BUILTIN.is_empty());
    for p in BUILTIN {
        let load = expect_loadable_payload(p.name, p.elf);
        assert_eq!(
            load.entry & !0xfff_ffff,
            0,
            "{}: linked low, at 0x400000",
            p.name
        );
    }
}

/// The misbehaving payloads load too (their misbehaviour is at run time), except the one whose
/// misbehaviour is its ELF: `zoo-memory-elf` asks for more memory than a payload may have.
#[test]
fn the_zoo_loads_except_the_payload_over_the_memory_limit() {
    assert!(ZOO.len() >= 9);
    for p in ZOO {
        assert!(p.name.starts_with("zoo-"), "{}", p.name);
        let load = plan(p.elf, &Limits::default());
        if p.name == "zoo-memory-elf" {
            let max = Limits::DEFAULT_MAX_BYTES;
            match load {
                Err(PayloadError::TooLarge { bytes, max: m }) => {
                    assert_eq!(m, max);
                    assert!(bytes > max && bytes < max + (2 << 20), "{bytes}");
                }
                other => panic!("zoo-memory-elf: expected TooLarge, got {other:?}"),
            }
        } else {
            let load = load.unwrap_or_else(|e| panic!("payload {}: {e}", p.name));
            assert!(
                load.mapped_bytes() <= Limits::DEFAULT_MAX_BYTES,
                "{}",
                p.name
            );
        }
    }
    // zoo-memory is the largest a payload may be, nearly: 60 MiB of bss.
    let memory = ZOO.iter().find(|p| p.name == "zoo-memory").unwrap();
    let load = plan(memory.elf, &Limits::default()).unwrap();
    assert!(load.mapped_bytes() >= 60 << 20);
    assert!(memory.elf.len() < 64 << 10, "the bss takes no file bytes");
}

/// The SDK's copy of the counter page layout (payloads/sdk/src/lib.rs, `page`) agrees with the
/// kernel's (kernel/src/task/user_page.rs), and so does the RDPMC pseudo-index.
#[test]
fn the_sdk_reads_the_kernels_counter_page_layout() {
    use baremark_kernel::task::abi::VIRTUAL_TSC_INDEX;
    use baremark_kernel::task::user_page::{MAGIC, PageSlot, UserPage, VERSION};
    use baremark_kernel::task::vcounter::MAX_SLOTS;
    use baremark_sdk::page as sdk;
    use std::mem::{offset_of, size_of};

    assert_eq!(
        baremark_sdk::TIME_HZ_UNKNOWN as i64,
        baremark_kernel::task::abi::TIME_HZ_UNKNOWN
    );
    assert_eq!(
        baremark_sdk::ECOUNTERS,
        baremark_kernel::task::abi::ECOUNTERS
    );
    assert_eq!(
        baremark_sdk::Error::check(baremark_sdk::ECOUNTERS),
        Err(baremark_sdk::Error::Counters)
    );
    assert_eq!(baremark_sdk::ENOMEM, baremark_kernel::task::abi::ENOMEM);
    assert_eq!(baremark_sdk::ELIMIT, baremark_kernel::task::abi::ELIMIT);
    {
        use baremark_kernel::task::hwslots::{FIXED_ENTRY, fixed_entry};
        use events::event::Modifiers;
        assert_eq!(baremark_sdk::FIXED_ENTRY, FIXED_ENTRY);
        for (usr, os) in [(true, false), (false, true), (true, true)] {
            let m = Modifiers {
                usr,
                os,
                ..Modifiers::default()
            };
            assert_eq!(baremark_sdk::fixed_entry(2, usr, os), fixed_entry(2, &m));
        }
    }
    assert_eq!(sdk::MAGIC, MAGIC);
    assert_eq!(sdk::VERSION, VERSION);
    assert_eq!(sdk::MAGIC_OFFSET, offset_of!(UserPage, magic));
    assert_eq!(sdk::VERSION_OFFSET, offset_of!(UserPage, version));
    assert_eq!(sdk::SEQ_OFFSET, offset_of!(UserPage, seq));
    assert_eq!(sdk::GENERATION_OFFSET, offset_of!(UserPage, generation));
    assert_eq!(sdk::NR_SLOTS_OFFSET, offset_of!(UserPage, nr_slots));
    assert_eq!(sdk::SIZE_OFFSET, offset_of!(UserPage, size));
    assert_eq!(sdk::TSC_OFFSET, offset_of!(UserPage, tsc));
    assert_eq!(sdk::SLOTS_OFFSET, offset_of!(UserPage, slots));
    assert_eq!(sdk::INTERRUPTS_OFFSET, offset_of!(UserPage, interrupts));
    assert_eq!(sdk::TSC_ADD_OFFSET, offset_of!(UserPage, tsc_offset));
    assert_eq!(sdk::TSC_MASK_OFFSET, offset_of!(UserPage, tsc_mask));
    assert_eq!(sdk::MAX_SLOTS, MAX_SLOTS);
    assert_eq!(sdk::SIZE, size_of::<UserPage>());
    assert_eq!(sdk::SLOT_SIZE, size_of::<PageSlot>());
    assert_eq!(sdk::SLOT_INDEX_OFFSET, offset_of!(PageSlot, index));
    assert_eq!(sdk::SLOT_WIDTH_OFFSET, offset_of!(PageSlot, width));
    assert_eq!(sdk::SLOT_BASE_OFFSET, offset_of!(PageSlot, base));
    assert_eq!(sdk::SLOT_START_OFFSET, offset_of!(PageSlot, start));
    assert_eq!(sdk::VIRTUAL_TSC_INDEX, VIRTUAL_TSC_INDEX);
    for (prev, now, w) in [(10u64, 15u64, 64u8), ((1 << 48) - 2, 3, 48), (5, 4, 32)] {
        assert_eq!(
            sdk::widen(prev, now, u32::from(w)),
            baremark_kernel::task::vcounter::widen(prev, now, w)
        );
    }
}

/// The SDK cannot depend on the kernel, so it carries its own copy of the syscall numbers:
/// they must be the kernel's.
#[test]
fn the_sdk_and_the_kernel_agree_on_syscall_numbers() {
    use baremark_kernel::task::abi::nr as k;
    use baremark_sdk::nr as s;
    let pairs = [
        (s::EXIT, k::EXIT),
        (s::WRITE, k::WRITE),
        (s::COUNTERS_CONFIGURE, k::COUNTERS_CONFIGURE),
        (s::COUNTERS_START, k::COUNTERS_START),
        (s::COUNTERS_STOP, k::COUNTERS_STOP),
        (s::COUNTERS_RESET, k::COUNTERS_RESET),
        (s::COUNTERS_READ, k::COUNTERS_READ),
        (s::YIELD, k::YIELD),
        (s::SPAWN, k::SPAWN),
        (s::WAIT, k::WAIT),
        (s::REPORT, k::REPORT),
        (s::TIME, k::TIME),
        (s::USER_PAGE, k::USER_PAGE),
        (s::READ_WINDOW, k::READ_WINDOW),
        (s::BENCH_PLAN, k::BENCH_PLAN),
        (s::BENCH_BEGIN, k::BENCH_BEGIN),
        (s::BENCH_GROUP, k::BENCH_GROUP),
        (s::BENCH_SAMPLES, k::BENCH_SAMPLES),
        (s::BENCH_END, k::BENCH_END),
    ];
    for (i, (sdk, kernel)) in pairs.into_iter().enumerate() {
        assert_eq!(sdk, kernel, "syscall pair {i}");
    }
}

/// The SDK's harness loop and the kernel's harness speak one protocol: the plan the kernel
/// writes is the plan the SDK reads, sample kinds and row layout agree, and the SDK's sample
/// buffer holds the most repetitions the kernel allows.
#[test]
fn the_sdk_and_the_kernel_agree_on_the_harness_protocol() {
    use baremark_kernel::harness::plan::Plan as EventPlan;
    use baremark_kernel::harness::session::{self as k, RunPlan};
    use baremark_kernel::harness::stats::Overhead;
    use baremark_sdk::bench as s;
    assert_eq!(s::PLAN_VERSION, k::PLAN_VERSION);
    assert_eq!(s::PLAN_WORDS, k::PLAN_WORDS);
    assert_eq!(
        s::MAX_REPS,
        baremark_kernel::config::REPS_MAX as usize,
        "the SDK's buffer holds the most repetitions run.cfg allows"
    );
    assert_eq!(
        s::MAX_STRIDE,
        k::SAMPLE_HEAD + baremark_kernel::task::vcounter::MAX_SLOTS
    );
    for (sdk, kernel) in [
        (s::Kind::Region, k::Kind::Region),
        (s::Kind::Empty, k::Kind::Empty),
        (s::Kind::Region2x, k::Kind::Region2x),
    ] {
        assert_eq!(sdk as u64, kernel as u64);
    }
    for (overhead, sdk) in [
        (Overhead::None, s::Overhead::None),
        (Overhead::Empty, s::Overhead::Empty),
        (Overhead::Diff, s::Overhead::Diff),
    ] {
        let plan = RunPlan {
            reps: 37,
            warmup: 4,
            overhead,
            events: EventPlan::default(),
            tsc_hz: None,
            emulated: false,
        };
        let decoded = s::Plan::decode(&plan.words()).expect("the SDK reads the kernel's plan");
        assert_eq!((decoded.reps, decoded.warmup, decoded.groups), (37, 4, 1));
        assert_eq!(decoded.overhead, sdk);
        // The kinds the SDK measures are the kinds the kernel expects.
        let sdk_kinds: Vec<u64> = s::Kind::for_overhead(sdk)
            .iter()
            .map(|&k| k as u64)
            .collect();
        let kernel_kinds: Vec<u64> = plan.kinds().iter().map(|&k| k as u64).collect();
        assert_eq!(sdk_kinds, kernel_kinds);
    }
}

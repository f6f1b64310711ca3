//! The built-in payloads, as the kernel's loader will see them: each must be a static ELF64
//! executable that `task::elf::plan` accepts, with its entry in an executable segment.

use baremark::payloads::BUILTIN;
use baremark_kernel::task::elf::{Limits, plan};

#[test]
fn every_builtin_payload_is_accepted_by_the_kernels_loader() {
    assert!(!BUILTIN.is_empty());
    for p in BUILTIN {
        let load =
            plan(p.elf, &Limits::default()).unwrap_or_else(|e| panic!("payload {}: {e}", p.name));
        assert_eq!(
            load.entry & !0xfff_ffff,
            0,
            "{}: linked low, at 0x400000",
            p.name
        );
        assert!(
            load.segments
                .iter()
                .any(|s| s.executable && s.contains(load.entry))
        );
        assert!(
            load.segments.iter().all(|s| !(s.writable && s.executable)),
            "{}: W^X",
            p.name
        );
        assert!(
            load.segments.iter().all(|s| s.page_start >= 0x40_0000),
            "{}",
            p.name
        );
    }
}

//! The test actions of run.cfg `test`: boots that fault, panic, overflow the stack or hang on
//! purpose (to prove the harness catches each failure), the ring-3 smoke test, and the USB
//! driver's checks (`usb-disks`, `usb-write`), reported here.

use alloc::string::String;

use baremark_hw::{cpu as hwcpu, paging, trap};

use crate::config::TestAction;
use crate::devices::blockdev::BlockDevice;
use crate::devices::usb::{self, DIGEST_SECTORS, WRITE_SECTORS};
use crate::output::console::record;
use crate::say;

pub(super) fn run_test_action(action: TestAction, usb_test_lba: u64) {
    match action {
        TestAction::None => {}
        TestAction::PageFault => {
            say!("test   page-fault: reading an unmapped address");
            // An address in the lower half that nothing maps.
            let value = paging::read_unmapped(0x0000_0dea_d000_0000);
            say!("test   page-fault: the read returned {value:?} without faulting");
        }
        TestAction::Panic => panic!("test panic requested by the run configuration"),
        TestAction::InvalidOpcode => {
            say!("test   invalid-opcode: executing ud2");
            trap::raise_invalid_opcode();
        }
        TestAction::StackOverflow => {
            say!("test   stack-overflow: recursing into the guard page");
            let depth = recurse(0);
            say!("test   stack-overflow: returned at depth {depth}");
        }
        TestAction::Hang => {
            say!("test   hang: spinning with interrupts off");
            hwcpu::disable_interrupts();
            loop {
                core::hint::spin_loop();
            }
        }
        TestAction::Ring3 => crate::task::smoke::run(),
        TestAction::UsbDisks => test_disks(),
        TestAction::UsbWrite => test_write(usb_test_lba),
    }
}

/// Unbounded recursion with a frame the optimiser cannot remove.
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let pad = core::hint::black_box([depth; 64]);
    core::hint::black_box(recurse(depth + 1)) + pad[depth as usize % 64]
}

fn report_notes(notes: &[String]) {
    for note in notes {
        record("usb_note", |r| r.str("message", note));
        say!("usb    {note}");
    }
}

/// `test = usb-disks`: reports every disk found (`usb_disk` records) and the notes
/// (`usb_note`).
fn test_disks() {
    let (disks, notes) = usb::probe_disks();
    report_notes(&notes);
    for mut d in disks {
        let digest = usb::digest(&mut d);
        let described = d.describe();
        let loc = d.location.clone();
        record("usb_disk", |r| {
            let r = r
                .str("controller", &loc.controller)
                .u64("port", u64::from(loc.port))
                .str("speed", loc.speed)
                .str("vendor", &d.inquiry.vendor)
                .str("product", &d.inquiry.product)
                .str("revision", &d.inquiry.revision)
                .u64("block_size", u64::from(d.block_size()))
                .u64("blocks", d.blocks())
                .u64("digest_sectors", DIGEST_SECTORS as u64);
            match &digest {
                Ok(h) => r.fmt("digest", format_args!("{h:016x}")),
                Err(e) => r.null("digest").str("error", &e.0),
            }
        });
        match digest {
            Ok(h) => say!(
                "usb    {described}: {} blocks of {} bytes | fnv1a64 of sectors 0..{DIGEST_SECTORS} {h:016x}",
                d.blocks(),
                d.block_size()
            ),
            Err(e) => say!("usb    {described}: reading failed: {e}"),
        }
    }
}

/// `test = usb-write`: writes a pattern to 64 sectors at `lba` of every disk, reads it back
/// (`usb_write` records).
fn test_write(lba: u64) {
    let (disks, notes) = usb::probe_disks();
    report_notes(&notes);
    for mut d in disks {
        let described = d.describe();
        let outcome = usb::write_and_check(&mut d, lba);
        record("usb_write", |r| {
            let r = r
                .str("controller", &d.location.controller)
                .u64("port", u64::from(d.location.port))
                .str("disk", &described)
                .u64("lba", lba)
                .u64("sectors", WRITE_SECTORS);
            match &outcome {
                Ok(()) => r.str("result", "ok"),
                Err(e) => r.str("result", "failed").str("message", e),
            }
        });
        match outcome {
            Ok(()) => say!(
                "usb    {described}: wrote and read back sectors {lba}..{}: ok",
                lba + WRITE_SECTORS
            ),
            Err(e) => say!("usb    {described}: write test failed: {e}"),
        }
    }
}

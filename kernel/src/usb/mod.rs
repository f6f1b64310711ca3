//! USB: the xHCI host controller driver and USB mass storage (bulk-only transport, SCSI), used
//! to find the boot stick and write the results file to it (docs/usb.md).
//!
//! PLACEHOLDER: the driver is being written; until then `probe` finds nothing and says so.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::blockdev::BlockDevice;

/// What a probe found: every USB mass-storage disk that answered, and one line per controller
/// or device that could not be used (for the records and the screen).
#[derive(Default)]
pub struct Probe {
    pub disks: Vec<Box<dyn BlockDevice>>,
    pub notes: Vec<String>,
}

/// Finds every xHCI controller on PCI, brings it up, and opens every USB mass-storage device on
/// its ports. Never panics on odd hardware: what cannot be used is a note.
pub fn probe() -> Probe {
    Probe {
        disks: Vec::new(),
        notes: alloc::vec![String::from("the USB driver is not built yet")],
    }
}

/// `test = usb-disks`: reports every disk found (`usb_disk` records).
pub fn test_disks() {
    let probe = probe();
    for note in &probe.notes {
        crate::say!("usb    {note}");
    }
}

/// `test = usb-write`: writes a pattern to 64 sectors at `lba` of every disk, reads it back
/// (`usb_write` records).
pub fn test_write(lba: u64) {
    let _ = lba;
    test_disks();
}

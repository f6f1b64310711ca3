//! Finding USB disks: every xHCI controller on PCI, every connected root-hub port, every
//! mass-storage device; and what the test actions (`usb-disks`, `usb-write`, reported by
//! `boot::actions`) do with them. Whatever cannot be used becomes a note, never a panic.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use baremark_hw::pci;
use spin::Mutex;

use super::check;
use super::descriptors;
use super::device::Device;
use super::ports;
use super::storage::UsbDisk;
use super::xhci::Controller;
use crate::devices::blockdev::{BlockDevice, BlockError};

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
    let (disks, notes) = probe_disks();
    Probe {
        disks: disks
            .into_iter()
            .map(|d| Box::new(d) as Box<dyn BlockDevice>)
            .collect(),
        notes,
    }
}

/// Every USB mass-storage disk that answered, and a note for each controller or device that
/// could not be used.
pub fn probe_disks() -> (Vec<UsbDisk>, Vec<String>) {
    let mut disks = Vec::new();
    let mut notes = Vec::new();
    let functions = pci::enumerate();
    let usb: Vec<_> = functions
        .iter()
        .filter(|f| f.class == 0x0c && f.subclass == 0x03)
        .collect();
    for f in &usb {
        let kind = match f.prog_if {
            0x30 => continue,
            0x00 => "UHCI",
            0x10 => "OHCI",
            0x20 => "EHCI",
            _ => "unknown USB",
        };
        notes.push(format!(
            "{kind} controller at {} ({:04x}:{:04x}) is not supported (only xHCI is)",
            f.address, f.vendor, f.device
        ));
    }
    let xhcis: Vec<_> = usb.iter().filter(|f| f.prog_if == 0x30).collect();
    if xhcis.is_empty() {
        notes.push(String::from(
            "no xHCI controller on PCI (class 0c/03/30): no USB disks",
        ));
    }
    for f in xhcis {
        let name = format!("xHCI {} ({:04x}:{:04x})", f.address, f.vendor, f.device);
        let mut c = match Controller::bring_up(**f) {
            Ok(c) => c,
            Err(e) => {
                notes.push(format!("{name}: {e}"));
                continue;
            }
        };
        for n in c.notes.drain(..) {
            notes.push(format!("{name}: {n}"));
        }
        ports::power_all(&mut c);
        ports::settle(&mut c);
        let ports = c.ports;
        let ctrl = Arc::new(Mutex::new(c));
        for port in 1..=ports {
            if !ports::connected(&mut ctrl.lock(), port) {
                continue;
            }
            match open_port(&ctrl, port) {
                Ok(disk) => disks.push(disk),
                Err(e) => notes.push(format!("{name} port {port}: {e}")),
            }
        }
        let c = ctrl.lock();
        if c.out_of_range_accesses() > 0 {
            notes.push(format!(
                "{name}: {} register accesses fell outside the BAR and were dropped",
                c.out_of_range_accesses()
            ));
        }
    }
    (disks, notes)
}

/// Opens the device on `port` as a disk, or says why not.
fn open_port(ctrl: &Arc<Mutex<Controller>>, port: u8) -> Result<UsbDisk, String> {
    let mut c = ctrl.lock();
    let speed = ports::enable(&mut c, port)?;
    let mut dev = Device::address(&mut c, port, speed)?;
    let (device, config) = dev.describe(&mut c)?;
    drop(c);
    let id = format!("device {:04x}:{:04x}", device.vendor, device.product);
    if device.class == 0x09 {
        return Err(format!(
            "{id} is a hub: devices behind hubs are not supported"
        ));
    }
    if config.malformed {
        return Err(format!("{id}: malformed configuration descriptor"));
    }
    let Some(iface) = config.storage.iter().find(|s| s.usable()).copied() else {
        return Err(match config.storage.first() {
            Some(s) if s.protocol == descriptors::PROTOCOL_UAS => format!(
                "{id}: mass storage with UAS only (protocol 0x62): only bulk-only is supported"
            ),
            Some(s) => format!(
                "{id}: mass storage subclass {:#04x} protocol {:#04x}: only SCSI bulk-only (0x06/0x50) is supported",
                s.subclass, s.protocol
            ),
            None => format!(
                "{id} is not mass storage (interface classes {:02x?})",
                config.other_classes
            ),
        });
    };
    UsbDisk::open(ctrl.clone(), dev, config.value, iface).map_err(|e| format!("{id}: {e}"))
}

/// Sectors whose digest `usb-disks` reports.
pub const DIGEST_SECTORS: usize = 8;
/// Sectors `usb-write` writes.
pub const WRITE_SECTORS: u64 = 64;

/// The FNV-1a digest of the first [`DIGEST_SECTORS`] sectors of `d` (`test = usb-disks`).
pub fn digest(d: &mut UsbDisk) -> Result<u64, BlockError> {
    let mut buf = vec![0u8; DIGEST_SECTORS * d.block_size() as usize];
    d.read(0, &mut buf).map(|()| check::fnv1a64(&buf))
}

/// Writes a pattern to [`WRITE_SECTORS`] sectors at `lba` of `d` and reads it back
/// (`test = usb-write`).
pub fn write_and_check(d: &mut UsbDisk, lba: u64) -> Result<(), String> {
    let bs = d.block_size() as usize;
    let data: Vec<u8> = (0..WRITE_SECTORS as usize * bs)
        .map(|i| check::pattern_byte(lba + (i / bs) as u64, i % bs))
        .collect();
    d.write(lba, &data).map_err(|e| format!("write: {e}"))?;
    let mut back = vec![0u8; data.len()];
    d.read(lba, &mut back).map_err(|e| format!("read: {e}"))?;
    match data.iter().zip(&back).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "mismatch at sector {} offset {}: wrote {:#04x}, read {:#04x}",
            lba + (i / bs) as u64,
            i % bs,
            data[i],
            back[i]
        )),
    }
}

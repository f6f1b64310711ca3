//! The firmware's hands off the USB controllers, at boot, whether or not a results file is
//! written: a firmware that emulates a PS/2 keyboard or a boot disk over USB keeps taking SMIs
//! for it (invisible to the kernel, and counted in whatever region they land in) until the OS
//! takes the controller over. xHCI: the USB Legacy Support extended capability (xHCI 1.2 §7.1);
//! EHCI: the same in PCI configuration space (EHCI 1.0 §5.1). UHCI and OHCI legacy support
//! (port 0x60/0x64 trapping) is not handled: said in the result.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use baremark_hw::mmio::Mmio;
use baremark_hw::pci::{self, EhciHandoff};

use super::xhci;
use crate::devices::clock;

/// One controller and what its handoff did.
pub struct Handoff {
    /// `xHCI 00:04.0 (1b36:000d)`.
    pub controller: String,
    /// What was done, or why nothing could be.
    pub outcome: String,
}

/// Takes every USB controller on PCI from the firmware and turns its legacy SMIs off.
pub fn handoff_all() -> Vec<Handoff> {
    let mut out = Vec::new();
    for f in pci::enumerate()
        .into_iter()
        .filter(|f| f.class == 0x0c && f.subclass == 0x03)
    {
        let (kind, outcome) = match f.prog_if {
            0x30 => ("xHCI", xhci_handoff(f.address)),
            0x20 => ("EHCI", ehci_handoff(f.address)),
            0x00 => ("UHCI", String::from("legacy support not handled (UHCI)")),
            0x10 => ("OHCI", String::from("legacy support not handled (OHCI)")),
            _ => (
                "USB",
                String::from("unknown programming interface: left alone"),
            ),
        };
        out.push(Handoff {
            controller: format!("{kind} {} ({:04x}:{:04x})", f.address, f.vendor, f.device),
            outcome,
        });
    }
    out
}

fn xhci_handoff(address: pci::PciAddress) -> String {
    pci::enable_memory_and_dma(address);
    let mut mmio = match Mmio::map_pci_bar(address, 0, xhci::MMIO_MAX) {
        Ok(m) => m,
        Err(e) => return format!("BAR0 cannot be mapped ({e:?}): left to the firmware"),
    };
    let outcome = match xhci::hccparams1(&mut mmio) {
        Some(hcc1) => String::from(xhci::firmware_handoff(&mut mmio, hcc1)),
        None => String::from("no controller answers at BAR0: left alone"),
    };
    // The results file's probe maps it again later.
    mmio.release();
    outcome
}

fn ehci_handoff(address: pci::PciAddress) -> String {
    pci::enable_memory_and_dma(address);
    let mut mmio = match Mmio::map_pci_bar(address, 0, 0x1000) {
        Ok(m) => m,
        Err(e) => return format!("BAR0 cannot be mapped ({e:?}): left to the firmware"),
    };
    // HCCPARAMS (capability offset 8), bits 15:8: the EHCI extended capabilities pointer.
    let hccparams = mmio.read32(8);
    mmio.release();
    if hccparams == u32::MAX {
        return String::from("no controller answers at BAR0: left alone");
    }
    let eecp = (hccparams >> 8) as u8;
    match pci::ehci_handoff(address, eecp, clock::Deadline::after_ms(1000).tsc()) {
        EhciHandoff::NoCapability => String::from("no USB legacy support capability"),
        EhciHandoff::NotOwned => String::from("not owned by the firmware; its SMIs off"),
        EhciHandoff::Released => String::from("taken over from the firmware, its SMIs off"),
        EhciHandoff::Forced => String::from(
            "the firmware did not release the controller within 1 s: taken over anyway, its SMIs off",
        ),
    }
}

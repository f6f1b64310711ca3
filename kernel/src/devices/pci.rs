//! PCI configuration at boot: segment 0's ECAM window from the ACPI MCFG, used for every
//! configuration access of a function once it has been checked against the ports on every
//! function found (vendor and device IDs must read the same both ways, else the ports stay).
//! Without an MCFG, or where ECAM disagrees, ports 0xCF8/0xCFC as before.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use baremark_hw::pci::{self, Ecam};

use crate::platform::acpi::McfgEntry;

/// What the boot found and chose.
pub struct PciReport {
    /// `ecam` or `ports`.
    pub access: &'static str,
    pub ecam: Option<Ecam>,
    pub functions: usize,
    /// Functions whose IDs read the same through ECAM and the ports.
    pub agree: usize,
    /// Functions with a PCI Express extended capability at 0x100 (readable through ECAM only).
    pub extended: usize,
    /// Why ECAM is not used, if it is not.
    pub problems: Vec<String>,
}

/// Chooses ECAM for segment 0 where the MCFG has it and it agrees with the ports.
pub fn configure(mcfg: &[McfgEntry]) -> PciReport {
    let functions = pci::enumerate();
    let mut report = PciReport {
        access: "ports",
        ecam: None,
        functions: functions.len(),
        agree: 0,
        extended: 0,
        problems: Vec::new(),
    };
    let Some(entry) = mcfg.iter().find(|e| e.segment == 0) else {
        if !mcfg.is_empty() {
            report
                .problems
                .push(String::from("the MCFG has no window for segment 0"));
        }
        return report;
    };
    if mcfg.iter().any(|e| e.segment != 0) {
        report.problems.push(String::from(
            "segments other than 0 in the MCFG: their functions are not reached",
        ));
    }
    let ecam = Ecam {
        base: entry.base,
        bus_start: entry.bus_start,
        bus_end: entry.bus_end,
    };
    if let Err(e) = pci::use_ecam(ecam) {
        report.problems.push(format!(
            "ECAM window at {:#x}: {e:?}: ports used",
            entry.base
        ));
        return report;
    }
    let mut mismatches = Vec::new();
    for f in &functions {
        let by_ports = pci::read_config_ports(f.address, 0);
        match pci::read_config_ecam(f.address, 0) {
            Some(v) if v == by_ports => report.agree += 1,
            Some(v) => mismatches.push(format!(
                "{} reads {v:#010x} through ECAM, {by_ports:#010x} through the ports",
                f.address
            )),
            None => {}
        }
        if pci::read_config_ecam(f.address, 0x100).is_some_and(|h| h != 0 && h != u32::MAX) {
            report.extended += 1;
        }
    }
    if mismatches.is_empty() {
        report.access = "ecam";
        report.ecam = Some(ecam);
    } else {
        pci::stop_ecam();
        report.problems.push(format!(
            "ECAM disagrees with the ports ({}): ports used",
            mismatches.join("; ")
        ));
    }
    report
}

//! ACPI: the firmware's description of the machine, read from the RSDP the bootloader found.
//!
//! A small checked parser of the tables baremark uses (docs/design.md, "ACPI: a checked parser"
//! says why not the `acpi` crate): the RSDP, the RSDT or XSDT, and of the tables it lists the
//! MADT (the CPUs and their APIC IDs), the FADT (the PM timer), the HPET, the MCFG (PCI Express
//! configuration space) and the DMAR (the IOMMU). Every length, offset and checksum is checked
//! before a byte is read; a table that fails a check is reported and ignored, and the rest is
//! still used. Nothing here reads memory itself: it asks a [`PhysMem`] for byte ranges, the
//! firmware's memory on the machine (`baremark_hw::firmware`), byte arrays in the tests.

mod tables;
#[cfg(test)]
mod tests;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

pub use tables::{Dmar, DmarUnit, Fadt, Hpet, Madt, MadtCpu, McfgEntry, PmTimerBlock, Reserved};

/// Physical memory as the parser reads it.
pub trait PhysMem {
    /// `len` bytes at physical address `phys`, or why they cannot be read.
    fn read(&self, phys: u64, len: usize) -> Result<&[u8], String>;
}

/// The largest table read (a real MADT of 1,024 CPUs is about 16 KiB, a DSDT up to a few
/// hundred; baremark reads no DSDT).
pub const TABLE_MAX: u32 = 1 << 20;
/// The most tables an RSDT or XSDT may list.
pub const ENTRIES_MAX: usize = 256;

/// One table the root table lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    pub signature: String,
    pub phys: u64,
    pub length: u32,
    pub revision: u8,
    /// `Err` with the reason: the table was ignored.
    pub status: Result<(), String>,
}

/// What the ACPI tables say, and what was wrong with them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acpi {
    /// RSDP revision (0: ACPI 1.0, RSDT only; 2: ACPI 2.0 and later, XSDT).
    pub revision: u8,
    pub oem_id: String,
    /// `XSDT` or `RSDT`: the root table used.
    pub root: String,
    pub tables: Vec<TableInfo>,
    pub madt: Option<Madt>,
    pub fadt: Option<Fadt>,
    pub hpet: Option<Hpet>,
    pub mcfg: Vec<McfgEntry>,
    pub dmar: Option<Dmar>,
    /// Every problem found, in order: a table that failed a check, a malformed entry.
    pub problems: Vec<String>,
}

/// A four-byte signature as text (non-ASCII bytes as `?`).
fn signature(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}

/// Whether `bytes` sum to 0 modulo 256 (every ACPI checksum).
fn checksum_ok(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b)) == 0
}

fn le(bytes: &[u8], at: usize, n: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(n)?)?;
    Some(b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}

/// Reads the tables from the RSDP at `rsdp`. `Err` only when the RSDP or the root table is
/// unusable (nothing else can be found then); a bad table otherwise is a problem in the result.
pub fn parse(mem: &dyn PhysMem, rsdp: u64) -> Result<Acpi, String> {
    let head = mem
        .read(rsdp, 20)
        .map_err(|e| format!("RSDP at {rsdp:#x}: {e}"))?;
    if &head[..8] != b"RSD PTR " {
        return Err(format!("RSDP at {rsdp:#x}: no `RSD PTR ` signature"));
    }
    if !checksum_ok(head) {
        return Err(format!(
            "RSDP at {rsdp:#x}: checksum of the first 20 bytes is wrong"
        ));
    }
    let mut acpi = Acpi {
        revision: head[15],
        oem_id: String::from(signature(&head[9..15]).trim_end()),
        ..Acpi::default()
    };
    let rsdt = le(head, 16, 4).unwrap_or(0);
    let mut xsdt = 0;
    if acpi.revision >= 2 {
        match mem.read(rsdp, 36) {
            Ok(full) if le(full, 20, 4).is_some_and(|l| l >= 36) => {
                if checksum_ok(full) {
                    xsdt = le(full, 24, 8).unwrap_or(0);
                } else {
                    acpi.problems.push(String::from(
                        "RSDP: the extended checksum is wrong: the XSDT is not used",
                    ));
                }
            }
            Ok(_) => acpi.problems.push(String::from(
                "RSDP: length below 36 for revision 2: the XSDT is not used",
            )),
            Err(e) => acpi.problems.push(format!("RSDP: extended part: {e}")),
        }
    }
    let (root_sig, root, entry_size) = if xsdt != 0 {
        ("XSDT", xsdt, 8)
    } else {
        ("RSDT", rsdt, 4)
    };
    acpi.root = String::from(root_sig);
    let table = read_table(mem, root)
        .and_then(|t| {
            if &t[..4] == root_sig.as_bytes() {
                Ok(t)
            } else {
                Err(format!("signature `{}`", signature(&t[..4])))
            }
        })
        .map_err(|e| format!("{root_sig} at {root:#x}: {e}"))?;
    let entries = &table[36..];
    let count = entries.len() / entry_size;
    if count > ENTRIES_MAX {
        acpi.problems.push(format!(
            "{root_sig}: {count} entries, only the first {ENTRIES_MAX} are read"
        ));
    }
    for i in 0..count.min(ENTRIES_MAX) {
        let phys = le(entries, i * entry_size, entry_size).unwrap_or(0);
        add_table(mem, &mut acpi, phys);
    }
    Ok(acpi)
}

/// Reads a whole table at `phys` with its header checked: length in 36..=TABLE_MAX, checksum.
fn read_table(mem: &dyn PhysMem, phys: u64) -> Result<&[u8], String> {
    if phys == 0 {
        return Err(String::from("a null address"));
    }
    let header = mem.read(phys, 36)?;
    let length = le(header, 4, 4).unwrap_or(0) as u32;
    if !(36..=TABLE_MAX).contains(&length) {
        return Err(format!(
            "length {length} (a table is 36 to {TABLE_MAX} bytes)"
        ));
    }
    let table = mem.read(phys, length as usize)?;
    if !checksum_ok(table) {
        return Err(String::from("checksum is wrong"));
    }
    Ok(table)
}

/// One entry of the root table: checked, listed, and parsed if baremark uses it.
fn add_table(mem: &dyn PhysMem, acpi: &mut Acpi, phys: u64) {
    let peek = mem.read(phys, 36).ok();
    let sig = peek.map_or_else(|| String::from("????"), |h| signature(&h[..4]));
    let mut info = TableInfo {
        signature: sig.clone(),
        phys,
        length: peek.and_then(|h| le(h, 4, 4)).unwrap_or(0) as u32,
        revision: peek.map_or(0, |h| h[8]),
        status: Ok(()),
    };
    let table = match read_table(mem, phys) {
        Ok(t) => t,
        Err(e) => {
            acpi.problems
                .push(format!("{sig} at {phys:#x}: {e}: the table is ignored"));
            info.status = Err(e);
            acpi.tables.push(info);
            return;
        }
    };
    let seen = |acpi: &Acpi| {
        acpi.tables
            .iter()
            .any(|t| t.signature == sig && t.status.is_ok())
    };
    let duplicate =
        matches!(sig.as_str(), "APIC" | "FACP" | "HPET" | "MCFG" | "DMAR") && seen(acpi);
    let parsed: Result<(), String> = if duplicate {
        Err(String::from(
            "a second table of this kind: the first one is used",
        ))
    } else {
        match sig.as_str() {
            "APIC" => tables::madt(table, &mut acpi.problems).map(|m| acpi.madt = Some(m)),
            "FACP" => tables::fadt(table).map(|f| acpi.fadt = Some(f)),
            "HPET" => tables::hpet(table).map(|h| acpi.hpet = Some(h)),
            "MCFG" => tables::mcfg(table, &mut acpi.problems).map(|m| acpi.mcfg = m),
            "DMAR" => tables::dmar(table, &mut acpi.problems).map(|d| acpi.dmar = Some(d)),
            _ => Ok(()),
        }
    };
    if let Err(e) = parsed {
        acpi.problems
            .push(format!("{sig} at {phys:#x}: {e}: the table is ignored"));
        info.status = Err(e);
    }
    acpi.tables.push(info);
}

/// The firmware's memory on the machine.
#[cfg(target_os = "none")]
pub struct FirmwareMem;

#[cfg(target_os = "none")]
impl PhysMem for FirmwareMem {
    fn read(&self, phys: u64, len: usize) -> Result<&[u8], String> {
        baremark_hw::firmware::read(phys, len).map_err(|e| format!("not readable: {e}"))
    }
}

//! The tables baremark reads, each from its checked bytes (header included): field offsets as
//! the ACPI 6.5 specification (MADT 5.2.12, FADT 5.2.9, MCFG: PCI Firmware 3.3 4.1.2) and the
//! IA-PC HPET 1.0a (3.2.4) and Intel VT-d 4.1 (8.1) specifications give them. A malformed entry
//! stops the walk of its table (a zero length would loop forever, a short one read its
//! neighbour) and is a problem; the entries before it are kept.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::le;

/// The MADT: the CPUs' local APICs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Madt {
    /// The local APIC's physical address (an address-override entry replaces the 32-bit one).
    pub local_apic_address: u64,
    /// PCAT_COMPAT: the machine also has 8259 PICs.
    pub pcat_compat: bool,
    pub cpus: Vec<MadtCpu>,
    pub io_apics: u32,
}

/// One CPU of the MADT (a Processor Local APIC or Local x2APIC entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MadtCpu {
    pub apic_id: u32,
    pub uid: u32,
    /// Usable now.
    pub enabled: bool,
    /// Not enabled, but may be brought online (ACPI 6.3 and later).
    pub online_capable: bool,
    /// From a Local x2APIC entry (an ID that may not fit in 8 bits).
    pub x2apic: bool,
}

/// The FADT's fields baremark uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fadt {
    pub pm_timer: Option<PmTimerBlock>,
    /// HW_REDUCED_ACPI: no fixed hardware (no PM timer).
    pub hw_reduced: bool,
    /// IA-PC boot architecture flags (bit 0 LEGACY_DEVICES, bit 1 8042, ...).
    pub boot_arch: u16,
}

/// The PM timer's I/O port and width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmTimerBlock {
    pub port: u16,
    /// TMR_VAL_EXT: 32 bits wide (else 24).
    pub wide: bool,
}

/// The HPET table: where the timer block's registers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hpet {
    pub base: u64,
    pub number: u8,
    /// The minimum clock tick in periodic mode.
    pub min_tick: u16,
}

/// One PCI Express configuration-space window (ECAM) of the MCFG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McfgEntry {
    pub base: u64,
    pub segment: u16,
    pub bus_start: u8,
    pub bus_end: u8,
}

/// The DMAR: the IOMMUs (VT-d remapping units) and what they must keep mapped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dmar {
    /// DMA physical address width (host address width + 1).
    pub address_width: u8,
    /// INTR_REMAP (bit 0), X2APIC_OPT_OUT (bit 1), DMA_CTRL_PLATFORM_OPT_IN (bit 2).
    pub flags: u8,
    pub units: Vec<DmarUnit>,
    /// Reserved memory regions (RMRR): memory devices keep using DMA to (USB legacy buffers).
    pub reserved: Vec<Reserved>,
}

/// One remapping hardware unit (DRHD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmarUnit {
    pub base: u64,
    pub segment: u16,
    /// INCLUDE_PCI_ALL: the unit covers every device of its segment not named by another.
    pub include_all: bool,
}

/// One reserved memory region (RMRR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserved {
    pub segment: u16,
    pub base: u64,
    pub limit: u64,
}

/// The entries of a table from `start`: `(type, bytes)`, each entry's header being a type and a
/// length (`wide`: 16-bit type and length, DMAR's; else 8-bit, MADT's).
fn entries<'t>(
    table: &'t [u8],
    start: usize,
    wide: bool,
    what: &str,
    problems: &mut Vec<String>,
) -> Vec<(u16, &'t [u8])> {
    let mut out = Vec::new();
    let mut at = start;
    let head = if wide { 4 } else { 2 };
    while at < table.len() {
        let (kind, len) = if wide {
            (le(table, at, 2), le(table, at + 2, 2))
        } else {
            (le(table, at, 1), le(table, at + 1, 1))
        };
        let (Some(kind), Some(len)) = (kind, len) else {
            problems.push(format!(
                "{what}: {} bytes left at offset {at}, too few for an entry: ignored",
                table.len() - at
            ));
            break;
        };
        let len = len as usize;
        if len < head || at + len > table.len() {
            problems.push(format!(
                "{what}: entry of type {kind} at offset {at} has length {len} ({} bytes left): \
                 the entries from here are ignored",
                table.len() - at
            ));
            break;
        }
        out.push((kind as u16, &table[at..at + len]));
        at += len;
    }
    out
}

/// Reads the fields of a fixed-size entry, or says it is too short.
fn need(entry: &[u8], len: usize, what: &str, problems: &mut Vec<String>) -> bool {
    if entry.len() < len {
        problems.push(format!(
            "{what}: an entry of {} bytes, {len} expected: ignored",
            entry.len()
        ));
        false
    } else {
        true
    }
}

pub fn madt(t: &[u8], problems: &mut Vec<String>) -> Result<Madt, String> {
    let (Some(lapic), Some(flags)) = (le(t, 36, 4), le(t, 40, 4)) else {
        return Err(String::from("shorter than its fixed fields (44 bytes)"));
    };
    let mut m = Madt {
        local_apic_address: lapic,
        pcat_compat: flags & 1 != 0,
        ..Madt::default()
    };
    for (kind, e) in entries(t, 44, false, "MADT", problems) {
        let f = |at, n| le(e, at, n).unwrap_or(0);
        match kind {
            0 if need(e, 8, "MADT local APIC", problems) => m.cpus.push(MadtCpu {
                uid: f(2, 1) as u32,
                apic_id: f(3, 1) as u32,
                enabled: f(4, 4) & 1 != 0,
                online_capable: f(4, 4) & 2 != 0,
                x2apic: false,
            }),
            1 if need(e, 12, "MADT I/O APIC", problems) => m.io_apics += 1,
            5 if need(e, 12, "MADT local APIC address override", problems) => {
                m.local_apic_address = f(4, 8);
            }
            9 if need(e, 16, "MADT local x2APIC", problems) => m.cpus.push(MadtCpu {
                apic_id: f(4, 4) as u32,
                enabled: f(8, 4) & 1 != 0,
                online_capable: f(8, 4) & 2 != 0,
                uid: f(12, 4) as u32,
                x2apic: true,
            }),
            _ => {}
        }
    }
    Ok(m)
}

pub fn fadt(t: &[u8]) -> Result<Fadt, String> {
    let (Some(pm_tmr_blk), Some(pm_tmr_len), Some(flags)) =
        (le(t, 76, 4), le(t, 91, 1), le(t, 112, 4))
    else {
        return Err(format!("{} bytes, shorter than ACPI 1.0's 116", t.len()));
    };
    let hw_reduced = flags & (1 << 20) != 0;
    let wide = flags & (1 << 8) != 0;
    // X_PM_TMR_BLK (ACPI 2.0+, a Generic Address Structure at 208): used when it is in system
    // I/O space and set, as Linux does; else the 32-bit PM_TMR_BLK.
    let x_port = match (le(t, 208, 1), le(t, 212, 8)) {
        (Some(1), Some(addr)) if addr != 0 && addr <= 0xffff => Some(addr as u16),
        _ => None,
    };
    let port = x_port
        .or((pm_tmr_len == 4 && pm_tmr_blk != 0 && pm_tmr_blk <= 0xffff)
            .then_some(pm_tmr_blk as u16));
    Ok(Fadt {
        pm_timer: port
            .filter(|_| !hw_reduced)
            .map(|port| PmTimerBlock { port, wide }),
        hw_reduced,
        boot_arch: le(t, 109, 2).unwrap_or(0) as u16,
    })
}

pub fn hpet(t: &[u8]) -> Result<Hpet, String> {
    let (Some(space), Some(base), Some(number), Some(min_tick)) =
        (le(t, 40, 1), le(t, 44, 8), le(t, 52, 1), le(t, 53, 2))
    else {
        return Err(format!("{} bytes, 56 expected", t.len()));
    };
    if space != 0 {
        return Err(format!("registers in address space {space}, not memory"));
    }
    if base == 0 || !base.is_multiple_of(1024) {
        return Err(format!(
            "base address {base:#x} is not a 1 KiB-aligned block"
        ));
    }
    Ok(Hpet {
        base,
        number: number as u8,
        min_tick: min_tick as u16,
    })
}

pub fn mcfg(t: &[u8], problems: &mut Vec<String>) -> Result<Vec<McfgEntry>, String> {
    if t.len() < 44 {
        return Err(format!("{} bytes, shorter than its header (44)", t.len()));
    }
    if !(t.len() - 44).is_multiple_of(16) {
        problems.push(format!(
            "MCFG: {} bytes after the header, not a multiple of 16: the rest is ignored",
            t.len() - 44
        ));
    }
    let mut out = Vec::new();
    for e in t[44..].as_chunks::<16>().0 {
        let f = |at, n| le(e, at, n).unwrap_or(0);
        let entry = McfgEntry {
            base: f(0, 8),
            segment: f(8, 2) as u16,
            bus_start: f(10, 1) as u8,
            bus_end: f(11, 1) as u8,
        };
        if entry.base == 0 || entry.bus_end < entry.bus_start || !entry.base.is_multiple_of(1 << 20)
        {
            problems.push(format!(
                "MCFG: segment {} buses {}..={} at {:#x} is not a valid window: ignored",
                entry.segment, entry.bus_start, entry.bus_end, entry.base
            ));
            continue;
        }
        out.push(entry);
    }
    Ok(out)
}

pub fn dmar(t: &[u8], problems: &mut Vec<String>) -> Result<Dmar, String> {
    let (Some(width), Some(flags)) = (le(t, 36, 1), le(t, 37, 1)) else {
        return Err(String::from("shorter than its fixed fields (48 bytes)"));
    };
    if t.len() < 48 {
        return Err(String::from("shorter than its fixed fields (48 bytes)"));
    }
    let mut d = Dmar {
        address_width: width as u8 + 1,
        flags: flags as u8,
        ..Dmar::default()
    };
    for (kind, e) in entries(t, 48, true, "DMAR", problems) {
        let f = |at, n| le(e, at, n).unwrap_or(0);
        match kind {
            0 if need(e, 16, "DMAR remapping unit", problems) => d.units.push(DmarUnit {
                include_all: f(4, 1) & 1 != 0,
                segment: f(6, 2) as u16,
                base: f(8, 8),
            }),
            1 if need(e, 24, "DMAR reserved memory region", problems) => {
                d.reserved.push(Reserved {
                    segment: f(6, 2) as u16,
                    base: f(8, 8),
                    limit: f(16, 8),
                })
            }
            _ => {}
        }
    }
    Ok(d)
}

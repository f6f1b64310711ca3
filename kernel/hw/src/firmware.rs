//! The firmware's memory: reading its tables (ACPI) read-only, and telling device memory from
//! RAM before a device window is mapped.
//!
//! The kernel parses ACPI tables itself (kernel/src/platform/acpi): it asks for a range of
//! physical memory by address and length, as found in the RSDP and the tables, and gets a byte
//! slice, or an error when the range is not firmware memory. A firmware pointer is untrusted
//! input: a range that overlaps RAM the kernel uses (the regions the bootloader marked usable,
//! its own and the kernel's) or lies beyond the physical-memory mapping is refused, so a bad
//! table can neither make the kernel read its own changing memory nor fault.

use bootloader_api::info::{MemoryRegionKind, MemoryRegions};
use spin::Once;

/// Regions of the memory map kept (more are merged into the last "in use" range).
const MAX_IN_USE: usize = 256;

/// Physical ranges the kernel owns or may hand out: never firmware memory.
struct InUse {
    ranges: [(u64, u64); MAX_IN_USE],
    len: usize,
    /// The end of the highest region: the physical-memory mapping covers `0..mapped_end`.
    mapped_end: u64,
}

static IN_USE: Once<InUse> = Once::new();

/// Why a range of firmware memory was not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirmwareMemError {
    /// Called before boot set up the memory map.
    NotReady,
    /// The range wraps around or is empty.
    BadRange,
    /// The range overlaps RAM the kernel uses or hands out.
    OverlapsRam { start: u64, end: u64 },
    /// The range lies beyond the physical-memory mapping.
    Unmapped { mapped_end: u64 },
}

impl core::fmt::Display for FirmwareMemError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FirmwareMemError::NotReady => write!(f, "the memory map is not known yet"),
            FirmwareMemError::BadRange => write!(f, "an empty or wrapping range"),
            FirmwareMemError::OverlapsRam { start, end } => {
                write!(f, "it overlaps RAM in use ({start:#x}..{end:#x})")
            }
            FirmwareMemError::Unmapped { mapped_end } => write!(
                f,
                "it lies beyond the physical memory mapped ({mapped_end:#x})"
            ),
        }
    }
}

/// Keeps the ranges of the memory map that are RAM in use (called once by `boot::init`).
pub(crate) fn init(regions: &MemoryRegions) {
    IN_USE.call_once(|| {
        let mut in_use = InUse {
            ranges: [(0, 0); MAX_IN_USE],
            len: 0,
            mapped_end: regions.iter().map(|r| r.end).max().unwrap_or(0),
        };
        for r in regions.iter() {
            if matches!(
                r.kind,
                MemoryRegionKind::Usable | MemoryRegionKind::Bootloader
            ) {
                if in_use.len < MAX_IN_USE {
                    in_use.ranges[in_use.len] = (r.start, r.end);
                    in_use.len += 1;
                } else {
                    // Merged into the last one: refuses more than needed, never less.
                    let last = &mut in_use.ranges[MAX_IN_USE - 1];
                    *last = (last.0.min(r.start), last.1.max(r.end));
                }
            }
        }
        in_use
    });
}

/// Checks that `phys..phys + len` is neither RAM in use nor beyond the mapping.
fn check(phys: u64, len: u64) -> Result<(), FirmwareMemError> {
    is_not_ram(phys, len)?;
    let mapped_end = IN_USE.get().ok_or(FirmwareMemError::NotReady)?.mapped_end;
    if phys + len <= mapped_end {
        Ok(())
    } else {
        Err(FirmwareMemError::Unmapped { mapped_end })
    }
}

/// The firmware memory at `phys..phys + len` (an ACPI table), read-only.
pub fn read(phys: u64, len: usize) -> Result<&'static [u8], FirmwareMemError> {
    check(phys, len as u64)?;
    let virt = crate::paging::phys_to_virt(phys).ok_or(FirmwareMemError::NotReady)?;
    // SAFETY: the range lies inside the bootloader's mapping of all physical memory (checked
    // against the highest region's end), and outside every range of RAM the kernel uses or
    // hands out (usable and bootloader regions), so no Rust object lives there and nothing in
    // the kernel writes it: it is the firmware's, and stays as it is for the whole run.
    Ok(unsafe { core::slice::from_raw_parts(virt as *const u8, len) })
}

/// Whether `phys..phys + len` may be device memory (not RAM in use), before it is mapped
/// uncached for a device the firmware described (the HPET).
pub fn is_not_ram(phys: u64, len: u64) -> Result<(), FirmwareMemError> {
    let in_use = IN_USE.get().ok_or(FirmwareMemError::NotReady)?;
    let end = phys
        .checked_add(len)
        .filter(|_| len > 0)
        .ok_or(FirmwareMemError::BadRange)?;
    match in_use.ranges[..in_use.len]
        .iter()
        .find(|&&(s, e)| phys < e && s < end)
    {
        Some(&(start, end)) => Err(FirmwareMemError::OverlapsRam { start, end }),
        None => Ok(()),
    }
}

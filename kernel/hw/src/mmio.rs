//! Device registers: a PCI memory BAR (or a range the firmware's tables name) mapped uncached into the kernel's device window, with
//! bounds-checked volatile accessors, so drivers in the safe kernel read and write registers
//! by offset and never hold a pointer.
//!
//! Every device register access of the kernel goes through [`Mmio`] (search `Mmio::write`).
//! An offset outside the window (a driver computing it from a broken register value) reads as
//! all ones, as a missing device does, and writes nothing: the access is counted instead of
//! faulting.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use spin::Mutex;

use crate::layout::{DEVICE_MMIO_SIZE, DEVICE_MMIO_START};
use crate::paging::{self, MapError};
use crate::pci::{self, BarError, PciAddress};

/// The next free address of the device window.
static NEXT_VIRT: AtomicU64 = AtomicU64::new(DEVICE_MMIO_START);
/// The BARs already handed out: each is mapped once and has one owner.
static CLAIMED: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Why a BAR could not be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmioError {
    Bar(BarError),
    Map(MapError),
    /// This BAR is already mapped for another owner.
    AlreadyClaimed,
    /// The device window is full.
    NoVirtualSpace,
    /// The firmware named RAM (or nonsense) as a device's registers.
    NotDevice(crate::firmware::FirmwareMemError),
}

/// One device's registers.
#[derive(Debug)]
pub struct Mmio {
    virt: u64,
    phys: u64,
    len: u64,
    out_of_range: u64,
}

impl Mmio {
    /// Maps the first `max_len` bytes (at most; the BAR's size if smaller) of memory BAR
    /// `index` of the function at `pci`, uncached. Each BAR can be claimed once.
    pub fn map_pci_bar(pci: PciAddress, index: u8, max_len: u64) -> Result<Mmio, MmioError> {
        let bar = pci::memory_bar(pci, index).map_err(MmioError::Bar)?;
        let mut claimed = CLAIMED.lock();
        if claimed.contains(&bar.phys) {
            return Err(MmioError::AlreadyClaimed);
        }
        let len = bar.size.min(max_len).next_multiple_of(4096);
        let virt = NEXT_VIRT.fetch_add(len, Relaxed);
        if virt + len > DEVICE_MMIO_START + DEVICE_MMIO_SIZE {
            return Err(MmioError::NoVirtualSpace);
        }
        for page in (0..len).step_by(4096) {
            // SAFETY: `virt..virt + len` is a fresh part of the device window (reserved in
            // `layout`, handed out once by NEXT_VIRT); `bar.phys` is what the PCI function
            // decodes, device memory and not RAM, and no one else maps it (CLAIMED).
            unsafe { paging::map_device_page(virt + page, bar.phys + page) }
                .map_err(MmioError::Map)?;
        }
        claimed.push(bar.phys);
        Ok(Mmio {
            virt,
            phys: bar.phys,
            len,
            out_of_range: 0,
        })
    }

    /// Maps `len` bytes of registers at `phys` that the firmware's tables describe (the
    /// HPET's), uncached. Refused where the range is RAM in use; each range is claimed once.
    pub fn map_firmware_device(phys: u64, len: u64) -> Result<Mmio, MmioError> {
        crate::firmware::is_not_ram(phys, len).map_err(MmioError::NotDevice)?;
        let mut claimed = CLAIMED.lock();
        if claimed.contains(&phys) {
            return Err(MmioError::AlreadyClaimed);
        }
        let page = phys & !0xfff;
        let offset = phys - page;
        let pages_len = (offset + len).next_multiple_of(4096);
        let virt = NEXT_VIRT.fetch_add(pages_len, Relaxed);
        if virt + pages_len > DEVICE_MMIO_START + DEVICE_MMIO_SIZE {
            return Err(MmioError::NoVirtualSpace);
        }
        for p in (0..pages_len).step_by(4096) {
            // SAFETY: `virt..virt + pages_len` is a fresh part of the device window (reserved
            // in `layout`, handed out once by NEXT_VIRT); `page..page + pages_len` is not RAM
            // the kernel uses (checked above: the firmware names it as device registers), and
            // no one else maps it (CLAIMED).
            unsafe { paging::map_device_page(virt + p, page + p) }.map_err(MmioError::Map)?;
        }
        claimed.push(phys);
        Ok(Mmio {
            virt: virt + offset,
            phys,
            len,
            out_of_range: 0,
        })
    }

    /// Gives the registers up, so another owner may map them (a driver that only had a look:
    /// the firmware handoff at boot). The window stays reserved, unused.
    pub fn release(self) {
        CLAIMED.lock().retain(|&p| p != self.phys);
    }

    /// The registers' physical address.
    pub fn phys(&self) -> u64 {
        self.phys
    }

    /// Bytes mapped.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is mapped (never, for a window that was created).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Accesses at offsets outside the window so far (none for a sane device and driver).
    pub fn out_of_range(&self) -> u64 {
        self.out_of_range
    }

    fn checked(&mut self, offset: u64, size: u64) -> Option<u64> {
        if offset.is_multiple_of(size) && offset.checked_add(size).is_some_and(|e| e <= self.len) {
            Some(self.virt + offset)
        } else {
            self.out_of_range += 1;
            None
        }
    }

    /// Reads the 32-bit register at `offset`.
    pub fn read32(&mut self, offset: u64) -> u32 {
        match self.checked(offset, 4) {
            // SAFETY: `addr` is inside the mapped, uncached window and 4-byte aligned.
            Some(addr) => unsafe { core::ptr::read_volatile(addr as *const u32) },
            None => u32::MAX,
        }
    }

    /// Writes the 32-bit register at `offset`.
    pub fn write32(&mut self, offset: u64, value: u32) {
        if let Some(addr) = self.checked(offset, 4) {
            // SAFETY: as in `read32`; the window is device memory no Rust object lives in.
            unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
        }
    }

    /// Reads a 64-bit register as two dwords, low first (some controllers take no qword
    /// accesses; Linux reads xHCI registers this way too).
    pub fn read64(&mut self, offset: u64) -> u64 {
        let low = self.read32(offset);
        let high = self.read32(offset + 4);
        u64::from(high) << 32 | u64::from(low)
    }

    /// Writes a 64-bit register as two dwords, low first.
    pub fn write64(&mut self, offset: u64, value: u64) {
        self.write32(offset, value as u32);
        self.write32(offset + 4, (value >> 32) as u32);
    }
}

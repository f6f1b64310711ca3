//! PCI configuration space: finding functions by class, and preparing a function for
//! memory-mapped access and DMA.
//!
//! Two ways in. The legacy mechanism #1 (ports 0xCF8/0xCFC) reaches the first 256 bytes of
//! every function of segment 0 on every PC: enumeration always uses it. Where the ACPI MCFG
//! gives segment 0's ECAM window ([`use_ecam`]), the accesses to a function go through ECAM
//! instead (memory-mapped, all 4 KiB, one function's page mapped when it is first used), as
//! PCI Express intends; functions of other segments are not reached yet. Reads are
//! public (they have no side effect on the standard header); writes stay in this module, which
//! only ever sets the command register's enable bits and sizes BARs, because a wrong write could
//! move a device's registers over RAM.

use alloc::vec::Vec;
use core::fmt;

use crate::port::{inl, outl};

const CONFIG_ADDRESS: u16 = 0xcf8;
const CONFIG_DATA: u16 = 0xcfc;

/// Configuration-space offsets of the standard (type 0) header.
const VENDOR_DEVICE: u8 = 0x00;
const COMMAND: u8 = 0x04;
const CLASS: u8 = 0x08;
const HEADER_TYPE: u8 = 0x0c;
const BAR0: u8 = 0x10;

/// Command register bits.
const COMMAND_MEMORY: u32 = 1 << 1;
const COMMAND_BUS_MASTER: u32 = 1 << 2;
/// The device must not raise legacy interrupts: the kernel polls.
const COMMAND_INTX_DISABLE: u32 = 1 << 10;

/// Serialises the two-step address/data access.
static LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// A function's bus/device/function address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PciAddress {
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x}:{:02x}.{}", self.bus, self.device, self.function)
    }
}

/// What the standard header says about a function.
#[derive(Clone, Copy, Debug)]
pub struct PciFunction {
    pub address: PciAddress,
    pub vendor: u16,
    pub device: u16,
    pub class: u8,
    pub subclass: u8,
    pub prog_if: u8,
    pub header_type: u8,
}

/// A memory BAR: where the device decodes its registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBar {
    pub phys: u64,
    pub size: u64,
    pub is_64bit: bool,
}

/// Why a BAR cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarError {
    /// The BAR decodes I/O ports, not memory.
    IoSpace,
    /// The BAR is not implemented (sizes to 0) or is unassigned (address 0).
    Unassigned,
}

fn address_word(a: PciAddress, offset: u8) -> u32 {
    0x8000_0000
        | u32::from(a.bus) << 16
        | u32::from(a.device & 0x1f) << 11
        | u32::from(a.function & 0x7) << 8
        | u32::from(offset & 0xfc)
}

/// Segment 0's ECAM window: its physical base and the buses it decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ecam {
    pub base: u64,
    pub bus_start: u8,
    pub bus_end: u8,
}

static ECAM: spin::RwLock<Option<Ecam>> = spin::RwLock::new(None);
/// Function pages of the ECAM mirror already mapped, one bit per bus/device/function.
static ECAM_MAPPED: spin::Mutex<[u64; 1024]> = spin::Mutex::new([0; 1024]);

/// Why the ECAM window is not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcamError {
    /// The MCFG names RAM (or nonsense) as the window.
    NotDevice(crate::firmware::FirmwareMemError),
}

/// Sends the configuration accesses of segment 0's functions through ECAM from now on (the
/// window from the ACPI MCFG). Refused where the window overlaps RAM.
pub fn use_ecam(ecam: Ecam) -> Result<(), EcamError> {
    let buses = u64::from(ecam.bus_end.saturating_sub(ecam.bus_start)) + 1;
    crate::firmware::is_not_ram(ecam.base + (u64::from(ecam.bus_start) << 20), buses << 20)
        .map_err(EcamError::NotDevice)?;
    *ECAM.write() = Some(ecam);
    Ok(())
}

/// Goes back to the ports for every access (ECAM disagreed with them).
pub fn stop_ecam() {
    *ECAM.write() = None;
}

/// The ECAM window in use, if any.
pub fn ecam() -> Option<Ecam> {
    *ECAM.read()
}

/// The virtual address of `a`'s configuration page in the ECAM mirror, mapped on first use;
/// `None` without ECAM, for a bus outside the window, or when mapping failed (ports then).
fn ecam_page(a: PciAddress) -> Option<u64> {
    let e = (*ECAM.read())?;
    if a.bus < e.bus_start || a.bus > e.bus_end {
        return None;
    }
    let index = (usize::from(a.bus) << 8)
        | (usize::from(a.device & 0x1f) << 3)
        | usize::from(a.function & 7);
    let offset = (index as u64) << 12;
    let virt = crate::layout::ECAM_VIRT + offset;
    let mut mapped = ECAM_MAPPED.lock();
    if mapped[index / 64] & (1 << (index % 64)) == 0 {
        // SAFETY: `virt` is this function's page of the ECAM mirror, reserved in `layout` and
        // mapped only here, once (the bitmap under its lock); `e.base + offset` lies in the
        // ECAM window, which `use_ecam` checked is not RAM: device memory the firmware names.
        unsafe { crate::paging::map_device_page(virt, e.base + offset) }.ok()?;
        mapped[index / 64] |= 1 << (index % 64);
    }
    Some(virt)
}

/// Reads the dword at `offset` (0-4095, rounded down to a multiple of 4) of `a`'s
/// configuration space through ECAM: `None` without ECAM for this function.
pub fn read_config_ecam(a: PciAddress, offset: u16) -> Option<u32> {
    let virt = ecam_page(a)? + u64::from(offset & 0xffc);
    // SAFETY: inside the function's mapped, uncached ECAM page, 4-byte aligned; a
    // configuration read has no side effect on the registers the kernel reads.
    Some(unsafe { core::ptr::read_volatile(virt as *const u32) })
}

/// Reads the configuration dword at `offset` (rounded down to a multiple of 4): through ECAM
/// where it is in use for this function, else the ports.
pub fn read_config(a: PciAddress, offset: u8) -> u32 {
    if let Some(v) = read_config_ecam(a, u16::from(offset)) {
        return v;
    }
    read_config_ports(a, offset)
}

/// Reads the configuration dword at `offset` through ports 0xCF8/0xCFC (enumeration, and the
/// cross-check of ECAM at boot).
pub fn read_config_ports(a: PciAddress, offset: u8) -> u32 {
    let _guard = LOCK.lock();
    // SAFETY: 0xCF8/0xCFC are the PCI configuration mechanism on every PC and only this module
    // uses them (under LOCK); reading the standard header has no side effect.
    unsafe {
        outl(CONFIG_ADDRESS, address_word(a, offset));
        inl(CONFIG_DATA)
    }
}

/// Writes a configuration dword. Crate-private: see the module comment.
fn write_config(a: PciAddress, offset: u8, value: u32) {
    if let Some(page) = ecam_page(a) {
        let virt = page + u64::from(offset & 0xfc);
        // SAFETY: inside the function's mapped, uncached ECAM page, aligned; what is written
        // is what the callers below write through the ports otherwise (see there).
        unsafe { core::ptr::write_volatile(virt as *mut u32, value) };
        return;
    }
    let _guard = LOCK.lock();
    // SAFETY: as in `read_config`; the callers in this module only write the command register
    // and BARs of a function they were asked to prepare, restoring what they size, and an EHCI
    // controller's USB legacy support capability (ownership and SMI enables, never an address).
    unsafe {
        outl(CONFIG_ADDRESS, address_word(a, offset));
        outl(CONFIG_DATA, value);
    }
}

fn function_at(address: PciAddress) -> Option<PciFunction> {
    // Enumeration probes every slot: through the ports, so ECAM's pages are mapped only for
    // the functions that exist.
    let id = read_config_ports(address, VENDOR_DEVICE);
    if id & 0xffff == 0xffff {
        return None;
    }
    let class = read_config_ports(address, CLASS);
    let header = read_config_ports(address, HEADER_TYPE);
    Some(PciFunction {
        address,
        vendor: id as u16,
        device: (id >> 16) as u16,
        class: (class >> 24) as u8,
        subclass: (class >> 16) as u8,
        prog_if: (class >> 8) as u8,
        header_type: (header >> 16) as u8,
    })
}

/// Every function on every bus (brute force over all 256 buses: it needs no bridge walking and
/// costs a few milliseconds even where each port access traps to a hypervisor).
pub fn enumerate() -> Vec<PciFunction> {
    let mut found = Vec::new();
    for bus in 0..=255u8 {
        for device in 0..32u8 {
            let Some(f0) = function_at(PciAddress {
                bus,
                device,
                function: 0,
            }) else {
                continue;
            };
            let multi = f0.header_type & 0x80 != 0;
            found.push(f0);
            if multi {
                for function in 1..8u8 {
                    if let Some(f) = function_at(PciAddress {
                        bus,
                        device,
                        function,
                    }) {
                        found.push(f);
                    }
                }
            }
        }
    }
    found
}

/// Every function with this class, subclass and programming interface.
pub fn find_class(class: u8, subclass: u8, prog_if: u8) -> Vec<PciFunction> {
    enumerate()
        .into_iter()
        .filter(|f| f.class == class && f.subclass == subclass && f.prog_if == prog_if)
        .collect()
}

/// Reads memory BAR `index` (0-5; a 64-bit BAR takes `index` and `index + 1`) and its size.
/// Sizing writes all ones to the BAR with memory decoding off and restores it.
pub fn memory_bar(a: PciAddress, index: u8) -> Result<MemoryBar, BarError> {
    let offset = BAR0 + 4 * index;
    let low = read_config(a, offset);
    if low & 1 != 0 {
        return Err(BarError::IoSpace);
    }
    let is_64bit = (low >> 1) & 0b11 == 0b10;
    let high = if is_64bit {
        read_config(a, offset + 4)
    } else {
        0
    };
    let command = read_config(a, COMMAND) & 0xffff;
    write_config(a, COMMAND, command & !COMMAND_MEMORY);
    write_config(a, offset, 0xffff_ffff);
    let size_low = read_config(a, offset) & !0xf;
    write_config(a, offset, low);
    let size_high = if is_64bit {
        write_config(a, offset + 4, 0xffff_ffff);
        let s = read_config(a, offset + 4);
        write_config(a, offset + 4, high);
        s
    } else {
        0xffff_ffff
    };
    write_config(a, COMMAND, command);
    let mask = u64::from(size_high) << 32 | u64::from(size_low);
    let size = (!mask).wrapping_add(1);
    let phys = u64::from(high) << 32 | u64::from(low & !0xf);
    if size_low == 0 || phys == 0 {
        return Err(BarError::Unassigned);
    }
    Ok(MemoryBar {
        phys,
        size,
        is_64bit,
    })
}

/// Lets the function decode its memory BARs and master the bus (DMA), with legacy interrupts
/// off (drivers poll). Returns the command register before and after.
pub fn enable_memory_and_dma(a: PciAddress) -> (u16, u16) {
    let before = read_config(a, COMMAND) & 0xffff;
    // Only the low 16 bits are written; the status half (RW1C) is written as zeros.
    write_config(
        a,
        COMMAND,
        before | COMMAND_MEMORY | COMMAND_BUS_MASTER | COMMAND_INTX_DISABLE,
    );
    let after = read_config(a, COMMAND) & 0xffff;
    (before as u16, after as u16)
}

/// What the EHCI legacy handoff did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EhciHandoff {
    /// No USB legacy support capability at `eecp`.
    NoCapability,
    /// The firmware did not own the controller; its SMIs were turned off.
    NotOwned,
    /// The firmware let go when asked; its SMIs were turned off.
    Released,
    /// The firmware kept ownership past the deadline: taken anyway, its SMIs turned off.
    Forced,
}

/// Takes an EHCI controller from the firmware (EHCI 1.0 §5.1 and §2.1.7): at configuration
/// offset `eecp` (HCCPARAMS' EHCI Extended Capabilities Pointer) there must be the USB Legacy
/// Support capability (ID 1), else nothing is written. Sets OS-owned, waits until
/// `deadline_tsc` for BIOS-owned to clear, then disables every legacy SMI and clears their
/// status, so the firmware's USB emulation no longer interrupts the machine.
pub fn ehci_handoff(a: PciAddress, eecp: u8, deadline_tsc: u64) -> EhciHandoff {
    const BIOS_OWNED: u32 = 1 << 16;
    const OS_OWNED: u32 = 1 << 24;
    if eecp < 0x40 || !eecp.is_multiple_of(4) || read_config(a, eecp) & 0xff != 1 {
        return EhciHandoff::NoCapability;
    }
    let legsup = read_config(a, eecp);
    let outcome = if legsup & BIOS_OWNED == 0 {
        EhciHandoff::NotOwned
    } else {
        write_config(a, eecp, legsup | OS_OWNED);
        loop {
            if read_config(a, eecp) & BIOS_OWNED == 0 {
                break EhciHandoff::Released;
            }
            if crate::cpu::rdtsc() > deadline_tsc {
                // As Linux does: take it anyway.
                write_config(a, eecp, (read_config(a, eecp) & !BIOS_OWNED) | OS_OWNED);
                break EhciHandoff::Forced;
            }
            core::hint::spin_loop();
        }
    };
    // USBLEGCTLSTS: SMI enables (bits 15:0) off, the write-1-to-clear status bits 31:29 cleared.
    write_config(a, eecp + 4, 0xe000_0000);
    outcome
}

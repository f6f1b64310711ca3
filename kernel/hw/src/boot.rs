//! Taking over from the bootloader: brings the machine up in a fixed order and returns what it
//! found, as plain data, to the (safe) kernel.
//!
//! Order: serial first (so everything after can be reported), then GDT/TSS and IDT (so every
//! exception is caught and reported), then memory (frames, page tables, heap).

use bootloader_api::BootInfo;
use bootloader_api::info::{FrameBufferInfo, MemoryRegionKind};
use spin::Mutex;

use crate::frames::RegionFrameAllocator;
use crate::paging::{FrameStats, MapError};
use crate::serial::SerialStatus;

/// Which firmware loaded the bootloader, as the memory map shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firmware {
    Bios,
    Uefi,
    Unknown,
}

/// Facts about the hand-off, for the boot report.
#[derive(Clone, Copy, Debug)]
pub struct BootFacts {
    pub serial: SerialStatus,
    /// Bootloader API version (major, minor, patch).
    pub bootloader_api: (u16, u16, u16),
    pub firmware: Firmware,
    pub physical_memory_offset: u64,
    pub memory_regions: usize,
    pub frames: FrameStats,
    /// Heap bytes mapped, or why the heap could not be mapped.
    pub heap: Result<u64, MapError>,
    pub kernel_phys: u64,
    pub kernel_len: u64,
    pub kernel_virt: u64,
    pub rsdp: Option<u64>,
    pub framebuffer: Option<(usize, usize)>,
    /// The ramdisk the bootloader loaded (run configuration and payloads); empty if none.
    pub ramdisk: &'static [u8],
}

/// The frame buffer the bootloader set up: its pixels (mapped for the whole run) and layout.
/// Not in [`BootFacts`], which is plain copyable data: the screen takes it once.
pub struct Framebuffer {
    pub buffer: &'static mut [u8],
    pub info: FrameBufferInfo,
}

static FRAMEBUFFER: Mutex<Option<Framebuffer>> = Mutex::new(None);

/// The frame buffer, the first time (after [`init`]); `None` if there is none.
pub fn take_framebuffer() -> Option<Framebuffer> {
    FRAMEBUFFER.lock().take()
}

/// Why the hand-off cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootError {
    /// The bootloader did not map physical memory (the kernel's bootloader config asks for it).
    NoPhysicalMemoryMapping,
}

/// Brings up serial, descriptor tables, traps and memory.
pub fn init(boot_info: &'static mut BootInfo) -> Result<BootFacts, BootError> {
    let serial = crate::serial::init();
    crate::gdt::init();
    crate::trap::init();

    let version = &boot_info.api_version;
    let bootloader_api = (
        version.version_major(),
        version.version_minor(),
        version.version_patch(),
    );
    let regions = &boot_info.memory_regions;
    let firmware = if regions
        .iter()
        .any(|r| matches!(r.kind, MemoryRegionKind::UnknownUefi(_)))
    {
        Firmware::Uefi
    } else if regions
        .iter()
        .any(|r| matches!(r.kind, MemoryRegionKind::UnknownBios(_)))
    {
        Firmware::Bios
    } else {
        Firmware::Unknown
    };

    let phys_offset = boot_info
        .physical_memory_offset
        .into_option()
        .ok_or(BootError::NoPhysicalMemoryMapping)?;
    crate::firmware::init(regions);
    // Before anything is allocated: low memory for the other CPUs' start-up code (`smp`).
    crate::smp::reserve_low_memory(
        regions
            .iter()
            .filter(|r| r.kind == MemoryRegionKind::Usable)
            .map(|r| (r.start, r.end)),
    );
    let allocator = RegionFrameAllocator::new(
        regions
            .iter()
            .filter(|r| r.kind == MemoryRegionKind::Usable)
            .map(|r| (r.start, r.end)),
    );
    // SAFETY: the bootloader mapped all physical memory at `phys_offset` (checked present
    // above), CR3 holds its page tables, and regions it marks `Usable` are free.
    unsafe { crate::paging::init(phys_offset, allocator) };
    let heap = crate::heap::init();

    let ramdisk = match boot_info.ramdisk_addr.into_option() {
        Some(addr) if boot_info.ramdisk_len > 0 => {
            // SAFETY: the bootloader mapped the ramdisk read-only at `addr` for `ramdisk_len`
            // bytes and nothing writes to it; it stays mapped for the whole run.
            unsafe {
                core::slice::from_raw_parts(addr as *const u8, boot_info.ramdisk_len as usize)
            }
        }
        _ => &[],
    };

    let facts = BootFacts {
        serial,
        bootloader_api,
        firmware,
        physical_memory_offset: phys_offset,
        memory_regions: regions.len(),
        frames: crate::paging::frame_stats(),
        heap,
        kernel_phys: boot_info.kernel_addr,
        kernel_len: boot_info.kernel_len,
        kernel_virt: boot_info.kernel_image_offset,
        rsdp: boot_info.rsdp_addr.into_option(),
        framebuffer: boot_info
            .framebuffer
            .as_ref()
            .map(|fb| (fb.info().width, fb.info().height)),
        ramdisk,
    };
    // Last: the buffer borrows the boot information for the rest of the run.
    if let Some(fb) = boot_info.framebuffer.as_mut() {
        let info = fb.info();
        *FRAMEBUFFER.lock() = Some(Framebuffer {
            buffer: fb.buffer_mut(),
            info,
        });
    }
    Ok(facts)
}

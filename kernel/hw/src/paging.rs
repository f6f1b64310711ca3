//! Page tables: helpers over the bootloader's page tables, reached through its mapping of all
//! physical memory at a fixed offset.

use spin::Mutex;
use x86_64::structures::paging::mapper::{MapToError, Translate};
use x86_64::structures::paging::{
    FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame, Size4KiB,
};
use x86_64::{PhysAddr, VirtAddr};

use crate::frames::{FrameLinks, RegionFrameAllocator};

static PAGE_TABLE: Mutex<Option<OffsetPageTable<'static>>> = Mutex::new(None);
static FRAMES: Mutex<Option<RegionFrameAllocator>> = Mutex::new(None);
static PHYS_OFFSET: spin::Once<u64> = spin::Once::new();

/// Why a mapping failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// Out of physical memory (for the page or its page tables).
    OutOfFrames,
    /// The virtual page is already mapped.
    AlreadyMapped,
    /// Paging was not initialised.
    NotInitialised,
}

/// Memory facts for the boot report and the run's summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameStats {
    pub usable_bytes: u64,
    pub usable_regions: usize,
    pub dropped_regions: usize,
    /// Usable bytes in the regions given up past the allocator's limit.
    pub dropped_bytes: u64,
    /// Frames in use (handed out, not freed).
    pub allocated_frames: u64,
    /// The most frames in use at once.
    pub peak_frames: u64,
    pub free_frames: u64,
}

/// The free list's links, in the free frames themselves, through the mapping of all physical
/// memory at `offset`.
struct PhysLinks {
    offset: u64,
}

impl FrameLinks for PhysLinks {
    fn link(&self, frame: u64) -> u64 {
        // SAFETY: `frame` is on the allocator's free list (it passes only such frames): free
        // memory no Rust object lives in, mapped at `offset + frame`, 8-byte aligned.
        unsafe { core::ptr::read_volatile((self.offset + frame) as *const u64) }
    }
    fn set_link(&mut self, frame: u64, next: u64) {
        // SAFETY: as in `link`: the frame is being freed, its owner gave it up.
        unsafe { core::ptr::write_volatile((self.offset + frame) as *mut u64, next) }
    }
}

/// Adapter so the x86_64 crate's mapper can take frames from the region allocator.
struct Frames<'a>(&'a mut RegionFrameAllocator, PhysLinks);

// SAFETY: `RegionFrameAllocator` only returns frame-aligned frames from regions the bootloader
// reported as usable (free), and never returns a frame in use (unit-tested in `frames`; freed
// frames are handed out again only after their owner gave them up).
unsafe impl FrameAllocator<Size4KiB> for Frames<'_> {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size4KiB>> {
        self.0
            .allocate(&self.1)
            .map(|a| PhysFrame::containing_address(PhysAddr::new(a)))
    }
}

/// Takes over the active page tables and the usable memory.
///
/// # Safety
/// `phys_offset` must be the offset at which the bootloader mapped all physical memory, the
/// active CR3 must be the bootloader's tables, and `frames` must contain only free memory.
pub(crate) unsafe fn init(phys_offset: u64, frames: RegionFrameAllocator) {
    PHYS_OFFSET.call_once(|| phys_offset);
    let (l4_frame, _) = x86_64::registers::control::Cr3::read();
    let l4_virt = phys_offset + l4_frame.start_address().as_u64();
    // SAFETY: the caller guarantees that physical memory is mapped at `phys_offset`, so the
    // level-4 table is reachable there; this is the only reference to it from now on.
    let l4: &'static mut PageTable = unsafe { &mut *(l4_virt as *mut PageTable) };
    // SAFETY: as above, all physical memory is mapped at `phys_offset`.
    let table = unsafe { OffsetPageTable::new(l4, VirtAddr::new(phys_offset)) };
    *PAGE_TABLE.lock() = Some(table);
    *FRAMES.lock() = Some(frames);
}

/// The virtual address at which physical address `phys` is mapped.
pub fn phys_to_virt(phys: u64) -> Option<u64> {
    PHYS_OFFSET.get().map(|off| off + phys)
}

/// The physical address `virt` maps to, if any.
pub fn translate(virt: u64) -> Option<u64> {
    let guard = PAGE_TABLE.lock();
    let table = guard.as_ref()?;
    table
        .translate_addr(VirtAddr::try_new(virt).ok()?)
        .map(|p| p.as_u64())
}

/// Statistics of the frame allocator.
pub fn frame_stats() -> FrameStats {
    match FRAMES.lock().as_ref() {
        Some(f) => FrameStats {
            usable_bytes: f.usable_bytes(),
            usable_regions: f.regions().len(),
            dropped_regions: f.dropped_regions(),
            dropped_bytes: f.dropped_bytes(),
            allocated_frames: f.allocated_frames(),
            peak_frames: f.peak_frames(),
            free_frames: f.free_frames(),
        },
        None => FrameStats::default(),
    }
}

/// Maps `count` fresh frames at `virt` (page-aligned) with `flags`, zeroed when `zero` (memory
/// that will be handed to ring 3 must be; the heap need not be). Returns how many pages were
/// mapped before memory ran out.
///
/// # Safety
/// The virtual range must be reserved for the caller (see `layout`) so the new mapping cannot
/// alias memory Rust already references.
pub(crate) unsafe fn map_fresh(
    virt: u64,
    count: u64,
    flags: PageTableFlags,
    zero: bool,
) -> Result<u64, MapError> {
    let mut table = PAGE_TABLE.lock();
    let table = table.as_mut().ok_or(MapError::NotInitialised)?;
    let mut frames = FRAMES.lock();
    let frames = frames.as_mut().ok_or(MapError::NotInitialised)?;
    let offset = *PHYS_OFFSET.get().ok_or(MapError::NotInitialised)?;
    for i in 0..count {
        let Some(phys) = frames.allocate(&PhysLinks { offset }) else {
            return Ok(i);
        };
        if zero {
            // SAFETY: the frame is free memory, mapped at `offset + phys`; zeroing it touches
            // no live object.
            unsafe { core::ptr::write_bytes((offset + phys) as *mut u8, 0, 4096) };
        }
        let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt + i * 4096));
        let frame = PhysFrame::containing_address(PhysAddr::new(phys));
        // SAFETY: the caller reserved the virtual range; the frame is fresh.
        let flush = unsafe {
            table.map_to(
                page,
                frame,
                flags,
                &mut Frames(frames, PhysLinks { offset }),
            )
        }
        .map_err(map_err)?;
        flush.flush();
    }
    Ok(count)
}

/// Maps the physical page `phys` at `virt` uncached (for device registers).
///
/// # Safety
/// `virt` must be reserved for this device (see `layout`) and `phys` must be device memory,
/// not RAM that Rust owns.
pub(crate) unsafe fn map_device_page(virt: u64, phys: u64) -> Result<(), MapError> {
    let mut table = PAGE_TABLE.lock();
    let table = table.as_mut().ok_or(MapError::NotInitialised)?;
    let mut frames = FRAMES.lock();
    let frames = frames.as_mut().ok_or(MapError::NotInitialised)?;
    let offset = *PHYS_OFFSET.get().ok_or(MapError::NotInitialised)?;
    let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt));
    let frame = PhysFrame::containing_address(PhysAddr::new(phys));
    let flags = PageTableFlags::PRESENT
        | PageTableFlags::WRITABLE
        | PageTableFlags::NO_CACHE
        | PageTableFlags::WRITE_THROUGH
        | PageTableFlags::NO_EXECUTE;
    // SAFETY: the caller reserved `virt` and vouches that `phys` is device memory.
    let flush = unsafe {
        table.map_to(
            page,
            frame,
            flags,
            &mut Frames(frames, PhysLinks { offset }),
        )
    }
    .map_err(map_err)?;
    flush.flush();
    Ok(())
}

fn map_err(e: MapToError<Size4KiB>) -> MapError {
    match e {
        MapToError::FrameAllocationFailed => MapError::OutOfFrames,
        MapToError::PageAlreadyMapped(_) | MapToError::ParentEntryHugePage => {
            MapError::AlreadyMapped
        }
    }
}

/// Reads one byte from `addr` after checking that no page is mapped there, to provoke a page
/// fault on purpose (test boot configurations prove the fault report with it). Returns `None`
/// without touching memory if `addr` is mapped or not canonical.
pub fn read_unmapped(addr: u64) -> Option<u8> {
    if VirtAddr::try_new(addr).is_err() || translate(addr).is_some() {
        return None;
    }
    // SAFETY: no page is mapped at `addr` (checked just above), so the read cannot observe or
    // alias any Rust object; it raises #PF, which the trap handler reports.
    Some(unsafe { core::ptr::read_volatile(addr as *const u8) })
}

// --- Helpers for user address spaces (`user.rs`) ---------------------------------------------

/// Allocates one frame and zeroes it through the physical-memory mapping. Returns its physical
/// address.
pub(crate) fn allocate_zeroed_frame() -> Result<u64, MapError> {
    let offset = *PHYS_OFFSET.get().ok_or(MapError::NotInitialised)?;
    let phys = FRAMES
        .lock()
        .as_mut()
        .ok_or(MapError::NotInitialised)?
        .allocate(&PhysLinks { offset })
        .ok_or(MapError::OutOfFrames)?;
    // SAFETY: the frame is free memory (from the allocator: never handed out, or freed by its
    // last owner), mapped at `offset + phys`; zeroing it touches no live object.
    unsafe { core::ptr::write_bytes((offset + phys) as *mut u8, 0, 4096) };
    Ok(phys)
}

/// Allocates `count` physically contiguous frames and zeroes them through the physical-memory
/// mapping. Returns the first one's physical address.
pub(crate) fn allocate_contiguous_zeroed(count: u64) -> Result<u64, MapError> {
    allocate_contiguous_zeroed_in(count, false)
}

/// Like [`allocate_contiguous_zeroed`], every frame below 4 GiB (for a device that reaches
/// only 32-bit addresses).
pub(crate) fn allocate_contiguous_zeroed_dma32(count: u64) -> Result<u64, MapError> {
    allocate_contiguous_zeroed_in(count, true)
}

fn allocate_contiguous_zeroed_in(count: u64, dma32: bool) -> Result<u64, MapError> {
    let offset = *PHYS_OFFSET.get().ok_or(MapError::NotInitialised)?;
    let mut guard = FRAMES.lock();
    let frames = guard.as_mut().ok_or(MapError::NotInitialised)?;
    let phys = if dma32 {
        frames.allocate_contiguous_dma32(count)
    } else {
        frames.allocate_contiguous(count)
    }
    .ok_or(MapError::OutOfFrames)?;
    drop(guard);
    // SAFETY: the frames are fresh (never handed out), mapped at `offset + phys`; zeroing them
    // touches no live object.
    unsafe { core::ptr::write_bytes((offset + phys) as *mut u8, 0, (count * 4096) as usize) };
    Ok(phys)
}

/// Copies the upper half (entries 256-511) of the kernel's level-4 table into the level-4 table
/// at `dst_l4_phys`, with `USER_ACCESSIBLE` cleared on every copied entry, so the kernel stays
/// mapped in the new tree but nothing under it is reachable from ring 3. The lower-half entries
/// of the destination are not touched.
///
/// # Safety
/// `dst_l4_phys` must be a page-table frame owned by the caller that no Rust reference points
/// to (a fresh frame from [`allocate_zeroed_frame`]).
pub(crate) unsafe fn copy_kernel_half(dst_l4_phys: u64) -> Result<(), MapError> {
    let offset = *PHYS_OFFSET.get().ok_or(MapError::NotInitialised)?;
    let guard = PAGE_TABLE.lock();
    let src = guard
        .as_ref()
        .ok_or(MapError::NotInitialised)?
        .level_4_table();
    // SAFETY: the caller owns the frame and nothing else references it; all physical memory is
    // mapped at `offset`. It is distinct from the kernel's level-4 table (`src`), which is only
    // read, through the mapper that owns it.
    let dst = unsafe { &mut *((offset + dst_l4_phys) as *mut PageTable) };
    for i in 256..512 {
        let mut entry = src[i].clone();
        if !entry.is_unused() {
            let flags = entry.flags() - PageTableFlags::USER_ACCESSIBLE;
            entry.set_flags(flags);
        }
        dst[i] = entry;
    }
    Ok(())
}

/// Maps the page at `virt` to the frame `phys` in the page-table tree whose level-4 table is at
/// `l4_phys`, with `flags` on the last level and `table_flags` on new or existing intermediate
/// entries. No TLB flush is done: the entry was not present, and non-present entries are never
/// cached.
///
/// # Safety
/// `l4_phys` must be the level-4 table of a tree the caller owns exclusively (no Rust reference
/// to any of its lower-half tables exists), and `virt` must be a lower-half page, which the
/// tree shares with no other tree.
pub(crate) unsafe fn map_in(
    l4_phys: u64,
    virt: u64,
    phys: u64,
    flags: PageTableFlags,
    table_flags: PageTableFlags,
) -> Result<(), MapError> {
    let offset = *PHYS_OFFSET.get().ok_or(MapError::NotInitialised)?;
    let mut frames = FRAMES.lock();
    let frames = frames.as_mut().ok_or(MapError::NotInitialised)?;
    // SAFETY: the caller owns the tree exclusively; all physical memory is mapped at `offset`.
    let l4 = unsafe { &mut *((offset + l4_phys) as *mut PageTable) };
    // SAFETY: as above.
    let mut table = unsafe { OffsetPageTable::new(l4, VirtAddr::new(offset)) };
    let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt));
    let frame = PhysFrame::containing_address(PhysAddr::new(phys));
    // SAFETY: the caller guarantees `virt` is a page of its own lower half; `phys` is a frame
    // the caller owns (fresh from the allocator).
    let flush = unsafe {
        table.map_to_with_table_flags(
            page,
            frame,
            flags,
            table_flags,
            &mut Frames(frames, PhysLinks { offset }),
        )
    }
    .map_err(map_err)?;
    flush.ignore();
    Ok(())
}

/// Gives the frame `phys` back to the allocator.
///
/// # Safety
/// The caller must own the frame (from [`allocate_zeroed_frame`], not freed since) and hold no
/// reference into it or use it afterwards.
pub(crate) unsafe fn free_frame(phys: u64) {
    let Some(&offset) = PHYS_OFFSET.get() else {
        return;
    };
    if let Some(frames) = FRAMES.lock().as_mut() {
        // A frame the allocator never handed out is refused and stays where it is.
        let _ = frames.free(phys, &mut PhysLinks { offset });
    }
}

/// Frees the lower half of the page-table tree whose level-4 table is at `l4_phys`: every page
/// mapped there, every page table under its entries 0-255, then the level-4 table itself.
/// Entries 256-511 (the kernel's half, copied by [`copy_kernel_half`]) are not followed.
/// Returns the frames freed.
///
/// # Safety
/// The tree must be one the caller owns exclusively and built only by [`copy_kernel_half`] and
/// [`map_in`] with frames from [`allocate_zeroed_frame`] (so every lower-half frame of it is
/// its own, mapped once), it must not be the active one (CR3), no reference into any of its
/// frames may exist, and it must never be used again.
pub(crate) unsafe fn free_user_tree(l4_phys: u64) -> u64 {
    const PRESENT: u64 = 1;
    const HUGE: u64 = 1 << 7;
    const ADDR: u64 = 0x000f_ffff_ffff_f000;
    let Some(&offset) = PHYS_OFFSET.get() else {
        return 0;
    };
    let mut guard = FRAMES.lock();
    let Some(frames) = guard.as_mut() else {
        return 0;
    };
    let mut links = PhysLinks { offset };
    let mut freed = 0u64;
    // The entries of the table at `table` (read before any frame of the tree is freed: a
    // table is freed only after everything under it).
    let entries = |table: u64, n: usize| -> [u64; 512] {
        let mut out = [0u64; 512];
        for (i, e) in out.iter_mut().enumerate().take(n) {
            // SAFETY: `table` is a page-table frame of the tree (the caller owns it; it is not
            // freed yet), mapped at `offset + table`; an aligned u64 read.
            *e = unsafe { core::ptr::read_volatile((offset + table + 8 * i as u64) as *const u64) };
        }
        out
    };
    let mut free = |frame: u64, freed: &mut u64| {
        if frames.free(frame, &mut links).is_ok() {
            *freed += 1;
        }
    };
    for l4e in entries(l4_phys, 256) {
        if l4e & PRESENT == 0 {
            continue;
        }
        let l3 = l4e & ADDR;
        for l3e in entries(l3, 512) {
            // The user half never has huge pages; one would not be the tree's own frame.
            if l3e & PRESENT == 0 || l3e & HUGE != 0 {
                continue;
            }
            let l2 = l3e & ADDR;
            for l2e in entries(l2, 512) {
                if l2e & PRESENT == 0 || l2e & HUGE != 0 {
                    continue;
                }
                let l1 = l2e & ADDR;
                for l1e in entries(l1, 512) {
                    if l1e & PRESENT != 0 {
                        free(l1e & ADDR, &mut freed);
                    }
                }
                free(l1, &mut freed);
            }
            free(l2, &mut freed);
        }
        free(l3, &mut freed);
    }
    free(l4_phys, &mut freed);
    freed
}

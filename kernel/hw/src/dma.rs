//! DMA memory: physically contiguous, zeroed, page-aligned buffers that a device reads and
//! writes by physical address, with volatile accessors so the safe kernel fills and reads them
//! by offset (the device changes them behind the compiler's back).
//!
//! Buffers are never freed: once a device has been given a buffer's address it may write it
//! until the device is stopped, and a driver that lost track of a device cannot prove that.
//! Drivers allocate their buffers once per device, so this costs a few pages per disk.
//!
//! x86 keeps DMA coherent with the caches, so the buffers are reached through the ordinary
//! (write-back) mapping of physical memory; volatile accesses keep the compiler from caching or
//! reordering them against the register writes that hand them to the device.

use crate::paging::{self, MapError};

/// A DMA buffer.
#[derive(Debug)]
pub struct DmaBuffer {
    phys: u64,
    virt: u64,
    len: usize,
}

impl DmaBuffer {
    /// Allocates a zeroed buffer of at least `bytes` bytes (whole pages).
    pub fn new(bytes: usize) -> Result<DmaBuffer, MapError> {
        Self::alloc(bytes, false)
    }

    /// Like [`DmaBuffer::new`], wholly below 4 GiB: for a device that reaches only 32-bit
    /// addresses (from the frame allocator's reserve once ordinary memory there is gone).
    pub fn new_dma32(bytes: usize) -> Result<DmaBuffer, MapError> {
        Self::alloc(bytes, true)
    }

    fn alloc(bytes: usize, dma32: bool) -> Result<DmaBuffer, MapError> {
        let pages = bytes.div_ceil(4096).max(1) as u64;
        let phys = if dma32 {
            paging::allocate_contiguous_zeroed_dma32(pages)?
        } else {
            paging::allocate_contiguous_zeroed(pages)?
        };
        let virt = paging::phys_to_virt(phys).ok_or(MapError::NotInitialised)?;
        Ok(DmaBuffer {
            phys,
            virt,
            len: pages as usize * 4096,
        })
    }

    /// The buffer's physical address (page-aligned), for the device.
    pub fn phys(&self) -> u64 {
        self.phys
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: buffers have at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of `size` bytes at `offset`, which must lie inside the buffer and be
    /// aligned to `align`. A violation is a driver bug, so it panics.
    fn at(&self, offset: usize, size: usize, align: usize) -> u64 {
        assert!(
            offset.checked_add(size).is_some_and(|e| e <= self.len) && offset.is_multiple_of(align),
            "DMA access of {size} bytes at {offset} outside a {}-byte buffer or misaligned",
            self.len
        );
        self.virt + offset as u64
    }

    pub fn read_u32(&self, offset: usize) -> u32 {
        let addr = self.at(offset, 4, 4);
        // SAFETY: inside the buffer (checked), aligned; the buffer is memory this struct owns.
        unsafe { core::ptr::read_volatile(addr as *const u32) }
    }

    pub fn write_u32(&mut self, offset: usize, value: u32) {
        let addr = self.at(offset, 4, 4);
        // SAFETY: as in `read_u32`.
        unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
    }

    pub fn read_u64(&self, offset: usize) -> u64 {
        let addr = self.at(offset, 8, 8);
        // SAFETY: as in `read_u32`.
        unsafe { core::ptr::read_volatile(addr as *const u64) }
    }

    pub fn write_u64(&mut self, offset: usize, value: u64) {
        let addr = self.at(offset, 8, 8);
        // SAFETY: as in `read_u32`.
        unsafe { core::ptr::write_volatile(addr as *mut u64, value) }
    }

    /// Copies `out.len()` bytes from `offset` into `out`.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        let addr = self.at(offset, out.len(), 1);
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: inside the buffer (checked for the whole range above).
            *b = unsafe { core::ptr::read_volatile((addr + i as u64) as *const u8) };
        }
    }

    /// Copies `data` to `offset`.
    pub fn write_bytes(&mut self, offset: usize, data: &[u8]) {
        let addr = self.at(offset, data.len(), 1);
        for (i, &b) in data.iter().enumerate() {
            // SAFETY: inside the buffer (checked for the whole range above).
            unsafe { core::ptr::write_volatile((addr + i as u64) as *mut u8, b) };
        }
    }

    /// Zeroes `len` bytes from `offset`.
    pub fn zero(&mut self, offset: usize, len: usize) {
        let addr = self.at(offset, len, 1);
        for i in 0..len as u64 {
            // SAFETY: inside the buffer (checked for the whole range above).
            unsafe { core::ptr::write_volatile((addr + i) as *mut u8, 0) };
        }
    }
}

//! The kernel heap: a linked-list allocator over pages mapped at `layout::HEAP_START`.

use linked_list_allocator::LockedHeap;
use x86_64::structures::paging::PageTableFlags;

use crate::layout::{HEAP_SIZE, HEAP_START};

#[global_allocator]
static HEAP: LockedHeap = LockedHeap::empty();

/// Maps the heap and hands it to the allocator. Returns the heap size in bytes (smaller than
/// `HEAP_SIZE` when memory is short).
pub(crate) fn init() -> Result<u64, crate::paging::MapError> {
    let flags = PageTableFlags::PRESENT | PageTableFlags::WRITABLE | PageTableFlags::NO_EXECUTE;
    // SAFETY: HEAP_START..HEAP_START+HEAP_SIZE is reserved for the heap by `layout` and mapped
    // nowhere else. The allocator never assumes zeroed memory, so the pages are not cleared
    // (that would cost boot time under emulation for nothing).
    let pages = unsafe { crate::paging::map_fresh(HEAP_START, HEAP_SIZE / 4096, flags, false)? };
    let size = pages * 4096;
    // SAFETY: the range was just mapped, is writable, and is used by nothing but the
    // allocator; `init` is called once.
    unsafe { HEAP.lock().init(HEAP_START as *mut u8, size as usize) };
    Ok(size)
}

/// Bytes in use and free on the heap.
pub fn usage() -> (usize, usize) {
    let heap = HEAP.lock();
    (heap.used(), heap.free())
}

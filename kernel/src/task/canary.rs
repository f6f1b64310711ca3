//! The canary: a pattern planted in the kernel's free memory (most of the free heap, the
//! unused part of the kernel stack) and in a block of its data, before the payloads run, when
//! run.cfg says `canary = on`. Memory the kernel has not written since holds the pattern, so a
//! syscall that hands a task uninitialised kernel memory (a stale heap buffer, a stack slot, a
//! read past a kernel object) hands it the pattern. The `fuzz-syscalls` payload scans everything
//! the kernel writes for it, and its test scans every record (docs/reliability.md).
//!
//! The kernel never prints or copies the pattern on purpose: the `canary` record gives only the
//! bytes painted.

use alloc::vec::Vec;

use crate::output::console::record;

use crate::task::abi::CANARY_PATTERN as PATTERN;

/// Heap left unpainted, for the allocations the runner makes before the first task.
const HEAP_MARGIN: usize = 256 * 1024;
/// Stack painted below the caller's frame (of the 256 KiB kernel stack).
const STACK_BYTES: usize = 96 * 1024;
/// The block in the kernel's data.
const BLOCK_BYTES: usize = 4096;

const fn block() -> [u8; BLOCK_BYTES] {
    let mut b = [0u8; BLOCK_BYTES];
    let mut i = 0;
    while i < BLOCK_BYTES {
        b[i] = PATTERN[i % PATTERN.len()];
        i += 1;
    }
    b
}

/// In the kernel's .data: kernel memory that is never free, and always holds the pattern.
#[used]
static BLOCK: [u8; BLOCK_BYTES] = block();

fn fill(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = PATTERN[i % PATTERN.len()];
    }
}

/// Paints most of the free heap: allocated, filled, freed (the allocator then writes only its
/// own small header into the block). Returns the bytes painted (0 if the allocation failed).
fn paint_heap() -> usize {
    let (_, free) = baremark_hw::heap::usage();
    let n = free.saturating_sub(HEAP_MARGIN);
    let mut v: Vec<u8> = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        return 0;
    }
    v.resize(n, 0);
    fill(&mut v);
    core::hint::black_box(&v);
    n
}

/// Paints the stack below the caller: a frame this large, filled and left. The syscalls and
/// traps that run later use this memory for their own frames.
#[inline(never)]
fn paint_stack() -> usize {
    let mut frame = [0u8; STACK_BYTES];
    fill(&mut frame);
    core::hint::black_box(&frame);
    STACK_BYTES
}

/// Plants the canary and says so (a `canary` record).
pub fn plant() {
    let heap = paint_heap();
    let stack = paint_stack();
    let block = core::hint::black_box(&BLOCK).len();
    record("canary", |r| {
        r.u64("pattern_bytes", PATTERN.len() as u64)
            .u64("heap_bytes", heap as u64)
            .u64("stack_bytes", stack as u64)
            .u64("data_bytes", block as u64)
    });
}

//! Payload ELF validation and the load plan for a ring-3 task.
//!
//! A payload is a static, non-position-independent ELF64 executable for x86_64 (`ET_EXEC`,
//! linked e.g. with `cc -static -no-pie`). It is user input, so [`plan`] checks everything the
//! loader relies on and never panics: whatever the bytes, it returns either a [`LoadPlan`] the
//! loader can follow blindly (map the page ranges, copy the file bytes, zero the rest) or a
//! [`PayloadError`] whose `Display` says what is wrong (the kernel reports it in an `error`
//! record).
//!
//! The ELF header and program headers are decoded with the `elf` crate (cole14/rust-elf, no
//! dependencies, `no_std` without its default features, safe code with checked reads); every
//! semantic check is here. Only the fixed-layout pieces of the crate are used (identification,
//! header tail, program header table), not `ElfBytes::minimal_parse`: that also parses the
//! section header table, which a loader does not need, and it would blur which structure is
//! truncated.
//!
//! # Rules
//!
//! - ELF64, little-endian, `EM_X86_64`, ELF version 1 (both `e_ident[EI_VERSION]` and
//!   `e_version`), type `ET_EXEC`. `ET_DYN` (a PIE or static-pie) is rejected for now: it would
//!   need a load bias and the loader applying its own relocations. `ET_REL`/`ET_CORE` are
//!   rejected too. The OS ABI byte is not checked.
//! - A `PT_INTERP` header means dynamic linking: rejected ([`PayloadError::NeedsInterpreter`]).
//! - A `PT_GNU_STACK` header with `PF_X` (an executable stack) is rejected
//!   ([`PayloadError::ExecutableStack`]); without `PT_GNU_STACK` the stack is not executable
//!   either way. Every other non-`PT_LOAD` header (`PT_NOTE`, `PT_TLS`, `PT_GNU_RELRO`,
//!   `PT_DYNAMIC`, ...) is ignored, and section headers are never read.
//! - `PT_LOAD` with `p_memsz == 0` (so also `p_filesz == 0`) maps nothing and is ignored: it is
//!   not in the plan and does not count against [`Limits::max_segments`].
//! - For every other `PT_LOAD`: `p_filesz <= p_memsz`; not both `PF_W` and `PF_X` (W^X);
//!   `p_align` is 0, 1 or a power of two of at least a page, and `p_vaddr ≡ p_offset`
//!   (mod 4096; the loader copies, so the page is what matters even when `p_align` is larger);
//!   `[p_offset, p_offset + p_filesz)` inside the file (not checked when `p_filesz == 0`, whose
//!   `file_range` is then `0..0`); the page-rounded range `[p_vaddr & !0xfff,
//!   align_up(p_vaddr + p_memsz))` inside the user range; all arithmetic checked.
//! - Segments may not share a page (their page-rounded ranges must be disjoint): one page has one
//!   set of permissions, and a loader that copied two segments into one page would have to merge
//!   them. Linkers put each segment on its own pages (GNU ld's `DATA_SEGMENT_ALIGN`, lld's
//!   default), so real payloads are not affected.
//! - At most [`Limits::max_segments`] loadable segments; the page-rounded total of all of them
//!   (what the loader allocates) at most [`Limits::max_bytes`]. The file bytes copied are part of
//!   that total (`p_filesz <= p_memsz`), so they are bounded by it too.
//! - The entry point lies in `[p_vaddr, p_vaddr + p_memsz)` of an executable segment.
//!
//! Segment indices in errors are program header indices (as `readelf -l` counts them). The
//! plan's segments are sorted by address. Every segment is readable: x86 page tables cannot
//! express write-only or execute-only memory (short of protection keys), so `PF_R` is not
//! looked at.

use alloc::vec::Vec;
use core::ops::Range;

mod check;
mod error;
#[cfg(test)]
mod tests;

pub use check::plan;
pub use error::{ElfPart, PayloadError};

/// The page size the loader maps with.
pub const PAGE_SIZE: u64 = 4096;

/// The end of the canonical lower half: no user range reaches past it, whatever [`Limits`] say.
pub const LOWER_HALF_END: u64 = 0x0000_8000_0000_0000;

/// What a payload may occupy.
///
/// Limits can only narrow what is safe: [`plan`] never accepts page 0 (a `user_start` below
/// [`PAGE_SIZE`] counts as [`PAGE_SIZE`]) nor anything at or above [`LOWER_HALF_END`] (a larger
/// `user_end` counts as [`LOWER_HALF_END`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The lowest user address a segment's pages may start at.
    pub user_start: u64,
    /// The end (exclusive) of the user range a segment's pages must stay below.
    pub user_end: u64,
    /// The most memory, in bytes (page-rounded, all segments together), a payload may map.
    pub max_bytes: u64,
    /// The most loadable (non-empty `PT_LOAD`) segments a payload may have.
    pub max_segments: usize,
}

impl Limits {
    /// The default user range start: 4 MiB, where `ld` links x86_64 executables
    /// (`0x40_0000`), far above page 0.
    pub const DEFAULT_USER_START: u64 = 0x40_0000;
    /// The default user range end: the lower half less its top 64 KiB (which stays free for
    /// the task's own mappings, stack and counter page, should they go there).
    pub const DEFAULT_USER_END: u64 = 0x0000_7fff_0000_0000;
    /// The default memory budget: 64 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;
    /// The default segment budget.
    pub const DEFAULT_MAX_SEGMENTS: usize = 16;

    fn effective_range(&self) -> (u64, u64) {
        (
            self.user_start.max(PAGE_SIZE),
            self.user_end.min(LOWER_HALF_END),
        )
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            user_start: Self::DEFAULT_USER_START,
            user_end: Self::DEFAULT_USER_END,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_segments: Self::DEFAULT_MAX_SEGMENTS,
        }
    }
}

/// What the loader does with a payload: map each segment's pages, copy its file bytes, zero the
/// rest, then enter ring 3 at `entry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadPlan {
    /// The entry point (inside an executable segment).
    pub entry: u64,
    /// The loadable segments, sorted by address, on disjoint pages.
    pub segments: Vec<Segment>,
}

impl LoadPlan {
    /// The bytes the loader maps: the page-rounded sizes of all segments.
    pub fn mapped_bytes(&self) -> u64 {
        self.segments.iter().map(Segment::mapped_bytes).sum()
    }
}

/// One loadable segment.
///
/// The loader maps `[page_start, page_end)` (user, writable if `writable`, no-execute unless
/// `executable`), copies `bytes[file_range]` to `vaddr`, and zeroes the rest of the pages
/// (the bss from `vaddr + file_range.len()` to `vaddr + mem_size`, and the page-rounding slack).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Where the segment starts (`p_vaddr`).
    pub vaddr: u64,
    /// Its size in memory (`p_memsz`, > 0).
    pub mem_size: u64,
    /// Its bytes in the file (`p_offset..p_offset + p_filesz`, `0..0` if `p_filesz` is 0);
    /// always inside the input and never longer than `mem_size`.
    pub file_range: Range<usize>,
    /// `PF_W`.
    pub writable: bool,
    /// `PF_X` (never together with `writable`).
    pub executable: bool,
    /// `vaddr` rounded down to a page.
    pub page_start: u64,
    /// `vaddr + mem_size` rounded up to a page.
    pub page_end: u64,
}

impl Segment {
    /// The page-rounded size of the segment.
    pub fn mapped_bytes(&self) -> u64 {
        self.page_end.saturating_sub(self.page_start)
    }

    /// The number of bytes copied from the file (the rest of `mem_size` is zeroed).
    pub fn file_size(&self) -> usize {
        self.file_range.len()
    }

    /// Whether `addr` lies in `[vaddr, vaddr + mem_size)`.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.vaddr && addr - self.vaddr < self.mem_size
    }
}

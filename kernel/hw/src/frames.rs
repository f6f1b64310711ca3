//! Physical frame allocator over the firmware memory map.
//!
//! A bump allocator: baremark never frees physical frames (address spaces of finished tasks are
//! few and small, and a run is short), so the simplest allocator that cannot hand out a frame
//! twice is the right one. It only sees the regions the bootloader reported as usable, which
//! already exclude the frames the bootloader used for the kernel, its stack and page tables.
//!
//! Pure logic: compiled and tested on the host.

/// Size of a physical frame.
pub const FRAME_SIZE: u64 = 4096;

/// Frames below 1 MiB are never handed out: they hold real-mode structures on BIOS machines and
/// will hold the trampoline if application processors are ever started.
pub const LOW_MEMORY_END: u64 = 0x10_0000;

/// How many usable regions the allocator can remember; more are counted in `dropped_regions`.
pub const MAX_REGIONS: usize = 128;

/// A half-open range of physical addresses, `start..end`, both frame-aligned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameRange {
    pub start: u64,
    pub end: u64,
}

impl FrameRange {
    pub fn frames(&self) -> u64 {
        (self.end - self.start) / FRAME_SIZE
    }
}

/// Bump allocator over up to [`MAX_REGIONS`] usable physical ranges.
#[derive(Debug)]
pub struct RegionFrameAllocator {
    regions: [FrameRange; MAX_REGIONS],
    len: usize,
    dropped_regions: usize,
    current: usize,
    next: u64,
    allocated: u64,
}

impl RegionFrameAllocator {
    /// Builds the allocator from `(start, end)` pairs of usable physical memory (half-open).
    /// Starts are rounded up and ends down to frame boundaries; memory below 1 MiB and empty
    /// ranges are ignored; ranges are sorted and overlapping ones merged, so a malformed map
    /// can never make the allocator hand out the same frame twice.
    pub fn new(usable: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut this = Self {
            regions: [FrameRange::default(); MAX_REGIONS],
            len: 0,
            dropped_regions: 0,
            current: 0,
            next: 0,
            allocated: 0,
        };
        for (start, end) in usable {
            let start = align_up(start.max(LOW_MEMORY_END));
            let end = end & !(FRAME_SIZE - 1);
            if start >= end {
                continue;
            }
            if this.len == MAX_REGIONS {
                this.dropped_regions += 1;
                continue;
            }
            this.regions[this.len] = FrameRange { start, end };
            this.len += 1;
        }
        let regions = &mut this.regions[..this.len];
        regions.sort_unstable_by_key(|r| r.start);
        // Merge overlapping or touching ranges in place.
        let mut merged = 0;
        for i in 0..this.len {
            let r = this.regions[i];
            if merged > 0 && r.start <= this.regions[merged - 1].end {
                let last = &mut this.regions[merged - 1];
                last.end = last.end.max(r.end);
            } else {
                this.regions[merged] = r;
                merged += 1;
            }
        }
        this.len = merged;
        this.next = this.regions.first().map_or(0, |r| r.start);
        this
    }

    /// Hands out the next free frame's physical address, or `None` when memory is exhausted.
    pub fn allocate(&mut self) -> Option<u64> {
        while self.current < self.len {
            let region = self.regions[self.current];
            if self.next < region.start {
                self.next = region.start;
            }
            if self.next < region.end {
                let frame = self.next;
                self.next += FRAME_SIZE;
                self.allocated += 1;
                return Some(frame);
            }
            self.current += 1;
        }
        None
    }

    /// The usable ranges, sorted and merged.
    pub fn regions(&self) -> &[FrameRange] {
        &self.regions[..self.len]
    }

    /// Total usable memory in bytes (at construction).
    pub fn usable_bytes(&self) -> u64 {
        self.regions().iter().map(|r| r.end - r.start).sum()
    }

    /// Frames handed out so far.
    pub fn allocated_frames(&self) -> u64 {
        self.allocated
    }

    /// Frames still free.
    pub fn free_frames(&self) -> u64 {
        self.usable_bytes() / FRAME_SIZE - self.allocated
    }

    /// Usable regions ignored because the table was full.
    pub fn dropped_regions(&self) -> usize {
        self.dropped_regions
    }
}

fn align_up(addr: u64) -> u64 {
    addr.checked_add(FRAME_SIZE - 1)
        .map_or(!(FRAME_SIZE - 1), |a| a & !(FRAME_SIZE - 1))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::BTreeSet;
    use std::vec::Vec;

    #[test]
    fn skips_low_memory_and_aligns() {
        let mut a = RegionFrameAllocator::new([(0, 0x9f000), (0x10_0123, 0x10_3fff)]);
        assert_eq!(
            a.regions(),
            &[FrameRange {
                start: 0x10_1000,
                end: 0x10_3000
            }]
        );
        assert_eq!(a.allocate(), Some(0x10_1000));
        assert_eq!(a.allocate(), Some(0x10_2000));
        assert_eq!(a.allocate(), None);
        assert_eq!(a.allocated_frames(), 2);
        assert_eq!(a.free_frames(), 0);
    }

    #[test]
    fn walks_regions_in_order_and_merges_overlaps() {
        let mut a = RegionFrameAllocator::new([
            (0x40_0000, 0x40_2000),
            (0x20_0000, 0x20_1000),
            (0x40_1000, 0x40_3000), // overlaps the first one
        ]);
        assert_eq!(a.regions().len(), 2);
        let got: Vec<u64> = core::iter::from_fn(|| a.allocate()).collect();
        assert_eq!(got, [0x20_0000, 0x40_0000, 0x40_1000, 0x40_2000]);
    }

    #[test]
    fn never_hands_out_a_frame_twice_even_for_a_messy_map() {
        // Deterministic pseudo-random maps with overlaps, unaligned edges and empty ranges.
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let ranges: Vec<(u64, u64)> = (0..(rnd() % 20))
                .map(|_| {
                    let s = rnd() % 0x80_0000;
                    (s, s + rnd() % 0x2_0000)
                })
                .collect();
            let mut a = RegionFrameAllocator::new(ranges.iter().copied());
            let mut seen = BTreeSet::new();
            while let Some(f) = a.allocate() {
                assert_eq!(f % FRAME_SIZE, 0);
                assert!(f >= LOW_MEMORY_END);
                assert!(ranges.iter().any(|&(s, e)| f >= s && f + FRAME_SIZE <= e));
                assert!(seen.insert(f), "frame {f:#x} handed out twice");
            }
            assert_eq!(a.free_frames(), 0);
        }
    }

    #[test]
    fn counts_dropped_regions() {
        let ranges = (0..(MAX_REGIONS as u64 + 3)).map(|i| {
            let s = 0x100_0000 + i * 0x2000;
            (s, s + 0x1000)
        });
        let a = RegionFrameAllocator::new(ranges);
        assert_eq!(a.regions().len(), MAX_REGIONS);
        assert_eq!(a.dropped_regions(), 3);
    }
}

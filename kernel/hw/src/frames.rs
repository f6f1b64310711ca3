//! Physical frame allocator over the firmware memory map.
//!
//! A bump allocator with a free list: frames are handed out in address order from the regions
//! the bootloader reported as usable (which already exclude the frames the bootloader used for
//! the kernel, its stack and page tables), and frames given back ([`RegionFrameAllocator::free`]:
//! the address spaces of tasks that ended) are kept on a list and handed out again first. The
//! list is intrusive: each free frame's first 8 bytes hold the next one's address, read and
//! written through [`FrameLinks`] (the kernel's mapping of physical memory; a map in the host
//! tests), so it needs no memory of its own however many frames come back.
//!
//! Frames were never freed before the misbehaving payloads (docs/reliability.md): a spawn bomb
//! or a payload family that took all memory left none for the payloads after it, since every
//! task's address space stayed allocated to the end of the run.
//!
//! Pure logic: compiled and tested on the host.

/// Size of a physical frame.
pub const FRAME_SIZE: u64 = 4096;

/// Frames below 1 MiB are never handed out: they hold real-mode structures on BIOS machines and
/// will hold the trampoline if application processors are ever started.
pub const LOW_MEMORY_END: u64 = 0x10_0000;

/// How many separate usable regions the allocator can remember (after adjacent ones are merged:
/// UEFI maps list conventional memory in many touching pieces). Past that the smallest are
/// given up, counted in `dropped_regions` and `dropped_bytes`.
pub const MAX_REGIONS: usize = 512;

/// Frames kept below 4 GiB for devices that reach only 32-bit addresses (an xHCI without
/// AC64): 1 MiB, carved from the top of the highest usable region below 4 GiB when that region
/// has at least [`DMA32_MIN_REGION`] bytes there.
pub const DMA32_RESERVE_FRAMES: u64 = 256;
/// The smallest region the reserve is carved from.
pub const DMA32_MIN_REGION: u64 = 16 << 20;
/// 4 GiB: the first address a 32-bit DMA engine cannot reach.
pub const DMA32_LIMIT: u64 = 1 << 32;

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

/// Where the list of freed frames keeps its links: the first 8 bytes of each free frame.
pub trait FrameLinks {
    /// The link stored in the free frame `frame`.
    fn link(&self, frame: u64) -> u64;
    /// Stores `next` as the link of the free frame `frame`.
    fn set_link(&mut self, frame: u64, next: u64);
}

/// Why [`RegionFrameAllocator::free`] refused a frame (nothing was changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// Not frame-aligned, not in a usable region, or not handed out yet.
    NotAllocated(u64),
}

/// Bump allocator over up to [`MAX_REGIONS`] usable physical ranges, with a free list.
#[derive(Debug)]
pub struct RegionFrameAllocator {
    regions: [FrameRange; MAX_REGIONS],
    len: usize,
    dropped_regions: usize,
    dropped_bytes: u64,
    /// The reserve below 4 GiB (empty without one) and its next free frame.
    dma32: FrameRange,
    dma32_next: u64,
    current: usize,
    next: u64,
    /// Frames in use (handed out and not freed).
    allocated: u64,
    /// The most frames in use at once.
    peak: u64,
    /// The first free frame (0: the list is empty; frame 0 is below [`LOW_MEMORY_END`], so never
    /// a usable frame).
    free_head: u64,
    /// Frames on the free list.
    free_listed: u64,
    /// Frames given up because a link on the free list was not a frame this allocator handed
    /// out (the list was overwritten after a free): the rest of the list is dropped, never used.
    lost: u64,
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
            dropped_bytes: 0,
            dma32: FrameRange::default(),
            dma32_next: 0,
            current: 0,
            next: 0,
            allocated: 0,
            peak: 0,
            free_head: 0,
            free_listed: 0,
            lost: 0,
        };
        for (start, end) in usable {
            let start = align_up(start.max(LOW_MEMORY_END));
            let end = end & !(FRAME_SIZE - 1);
            if start >= end {
                continue;
            }
            this.insert(FrameRange { start, end });
        }
        this.carve_dma32_reserve();
        this.next = this.regions.first().map_or(0, |r| r.start);
        this
    }

    /// Takes [`DMA32_RESERVE_FRAMES`] off the top of the highest usable region below 4 GiB.
    fn carve_dma32_reserve(&mut self) {
        let Some(i) = self.regions[..self.len]
            .iter()
            .rposition(|r| r.start < DMA32_LIMIT)
        else {
            return;
        };
        let r = self.regions[i];
        let top = r.end.min(DMA32_LIMIT);
        if top - r.start < DMA32_MIN_REGION {
            return;
        }
        let reserve = FrameRange {
            start: top - DMA32_RESERVE_FRAMES * FRAME_SIZE,
            end: top,
        };
        self.regions[i].end = reserve.start;
        if r.end > top {
            // The region runs past 4 GiB: its part above the reserve stays usable.
            self.insert(FrameRange {
                start: top,
                end: r.end,
            });
        }
        self.dma32 = reserve;
        self.dma32_next = reserve.start;
    }

    /// Like [`RegionFrameAllocator::allocate_contiguous`], but every frame below 4 GiB: from the
    /// ordinary memory when it is still there, else from the reserve (never freed: DMA
    /// buffers live for the run). `None` when neither has room.
    pub fn allocate_contiguous_dma32(&mut self, count: u64) -> Option<u64> {
        let bytes = count.checked_mul(FRAME_SIZE)?;
        let saved = (
            self.current,
            self.next,
            self.lost,
            self.allocated,
            self.peak,
        );
        match self.allocate_contiguous(count) {
            Some(p) if p + bytes <= DMA32_LIMIT => return Some(p),
            _ => {
                (
                    self.current,
                    self.next,
                    self.lost,
                    self.allocated,
                    self.peak,
                ) = saved
            }
        }
        if count == 0 || self.dma32.end.saturating_sub(self.dma32_next) < bytes {
            return None;
        }
        let p = self.dma32_next;
        self.dma32_next += bytes;
        self.allocated += count;
        self.peak = self.peak.max(self.allocated);
        Some(p)
    }

    /// The reserve below 4 GiB (empty without one).
    pub fn dma32_reserve(&self) -> FrameRange {
        self.dma32
    }

    /// Adds a range to the sorted, merged list: merged with every range it overlaps or touches;
    /// when the list is full, the smallest range (this one or a listed one) is given up.
    fn insert(&mut self, mut r: FrameRange) {
        let at = self.regions[..self.len].partition_point(|x| x.end < r.start);
        // Every listed range from `at` on that overlaps or touches `r` is merged into it.
        let mut upto = at;
        while upto < self.len && self.regions[upto].start <= r.end {
            r.start = r.start.min(self.regions[upto].start);
            r.end = r.end.max(self.regions[upto].end);
            upto += 1;
        }
        if upto > at {
            self.regions[at] = r;
            self.regions.copy_within(upto..self.len, at + 1);
            self.len -= upto - at - 1;
            return;
        }
        if self.len == MAX_REGIONS {
            let (smallest, small) = self.regions[..self.len]
                .iter()
                .enumerate()
                .min_by_key(|(_, x)| x.end - x.start)
                .map(|(i, x)| (i, *x))
                .unwrap_or_default();
            self.dropped_regions += 1;
            if small.end - small.start >= r.end - r.start {
                self.dropped_bytes += r.end - r.start;
                return;
            }
            self.dropped_bytes += small.end - small.start;
            self.regions.copy_within(smallest + 1..self.len, smallest);
            self.len -= 1;
            return self.insert(r);
        }
        self.regions.copy_within(at..self.len, at + 1);
        self.regions[at] = r;
        self.len += 1;
    }

    /// Hands out a free frame's physical address (the most recently freed one, else the next
    /// never used one), or `None` when memory is exhausted. `links` reads the free list.
    pub fn allocate(&mut self, links: &impl FrameLinks) -> Option<u64> {
        let frame = self.pop_freed(links).or_else(|| self.bump())?;
        self.allocated += 1;
        self.peak = self.peak.max(self.allocated);
        Some(frame)
    }

    /// Hands out `count` physically contiguous frames (for DMA buffers a device reads as one
    /// piece) and returns the first one's address. They come from the never-used part only (the
    /// free list is not ordered); a region too short for them is skipped, and its rest counted
    /// as lost, so the frames are never handed out twice.
    pub fn allocate_contiguous(&mut self, count: u64) -> Option<u64> {
        if count == 0 {
            return None;
        }
        let bytes = count.checked_mul(FRAME_SIZE)?;
        while self.current < self.len {
            let region = self.regions[self.current];
            if self.next < region.start {
                self.next = region.start;
            }
            if region.end.saturating_sub(self.next) >= bytes {
                let first = self.next;
                self.next += bytes;
                self.allocated += count;
                self.peak = self.peak.max(self.allocated);
                return Some(first);
            }
            self.lost += region.end.saturating_sub(self.next) / FRAME_SIZE;
            self.next = region.end;
            self.current += 1;
        }
        None
    }

    /// The first frame of the free list, if any. A link that is not a frame this allocator
    /// handed out (only possible if a freed frame was written after it was freed) drops the
    /// rest of the list instead of handing out memory it does not own.
    fn pop_freed(&mut self, links: &impl FrameLinks) -> Option<u64> {
        if self.free_head == 0 {
            return None;
        }
        let frame = self.free_head;
        let next = links.link(frame);
        self.free_listed -= 1;
        if next == 0 || self.handed_out(next) {
            self.free_head = next;
        } else {
            self.lost += self.free_listed;
            self.free_head = 0;
            self.free_listed = 0;
        }
        Some(frame)
    }

    /// The next frame no one has used yet.
    fn bump(&mut self) -> Option<u64> {
        while self.current < self.len {
            let region = self.regions[self.current];
            if self.next < region.start {
                self.next = region.start;
            }
            if self.next < region.end {
                let frame = self.next;
                self.next += FRAME_SIZE;
                return Some(frame);
            }
            self.current += 1;
        }
        None
    }

    /// Whether `frame` is a frame-aligned address in a usable region that the bump part has
    /// handed out (regions are sorted and handed out in order, so: below the bump position).
    fn handed_out(&self, frame: u64) -> bool {
        let in_region = self
            .regions()
            .iter()
            .any(|r| r.start <= frame && frame < r.end);
        let bumped = self.current >= self.len || frame < self.next;
        frame.is_multiple_of(FRAME_SIZE) && in_region && bumped
    }

    /// Gives `frame` back: it is handed out again by a later [`RegionFrameAllocator::allocate`].
    /// The caller must own it (handed out and not freed since: a frame freed twice would be
    /// handed out twice) and must not touch it afterwards; `links` stores the list's link in
    /// it. Refused, with nothing changed, for an address this allocator never handed out.
    pub fn free(&mut self, frame: u64, links: &mut impl FrameLinks) -> Result<(), FreeError> {
        if !self.handed_out(frame) || self.allocated == 0 {
            return Err(FreeError::NotAllocated(frame));
        }
        links.set_link(frame, self.free_head);
        self.free_head = frame;
        self.free_listed += 1;
        self.allocated -= 1;
        Ok(())
    }

    /// The usable ranges, sorted and merged.
    pub fn regions(&self) -> &[FrameRange] {
        &self.regions[..self.len]
    }

    /// Usable memory in bytes (at construction) for ordinary allocations: the reserve below
    /// 4 GiB ([`RegionFrameAllocator::dma32_reserve`]) is not in it.
    pub fn usable_bytes(&self) -> u64 {
        self.regions().iter().map(|r| r.end - r.start).sum::<u64>()
    }

    /// Frames in use: handed out and not freed.
    pub fn allocated_frames(&self) -> u64 {
        self.allocated
    }

    /// The most frames that were in use at once.
    pub fn peak_frames(&self) -> u64 {
        self.peak
    }

    /// Frames that can still be handed out (never used, or freed).
    pub fn free_frames(&self) -> u64 {
        (self.usable_bytes() / FRAME_SIZE).saturating_sub(self.allocated + self.lost)
    }

    /// Frames given up with a damaged free list (0 unless freed memory was overwritten).
    pub fn lost_frames(&self) -> u64 {
        self.lost
    }

    /// Usable regions ignored because the table was full.
    pub fn dropped_regions(&self) -> usize {
        self.dropped_regions
    }

    /// Bytes of usable memory in the regions given up.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
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
    use std::collections::{BTreeMap, BTreeSet};
    use std::vec::Vec;

    /// The free frames' links, as a map (the kernel keeps them in the frames).
    #[derive(Default)]
    struct Links(BTreeMap<u64, u64>);

    impl FrameLinks for Links {
        fn link(&self, frame: u64) -> u64 {
            self.0.get(&frame).copied().unwrap_or(0xdead_0000)
        }
        fn set_link(&mut self, frame: u64, next: u64) {
            self.0.insert(frame, next);
        }
    }

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
        assert_eq!(a.allocate(&Links::default()), Some(0x10_1000));
        assert_eq!(a.allocate(&Links::default()), Some(0x10_2000));
        assert_eq!(a.allocate(&Links::default()), None);
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
        let got: Vec<u64> = core::iter::from_fn(|| a.allocate(&Links::default())).collect();
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
            while let Some(f) = a.allocate(&Links::default()) {
                assert_eq!(f % FRAME_SIZE, 0);
                assert!(f >= LOW_MEMORY_END);
                assert!(ranges.iter().any(|&(s, e)| f >= s && f + FRAME_SIZE <= e));
                assert!(seen.insert(f), "frame {f:#x} handed out twice");
            }
            assert_eq!(a.free_frames(), 0);
        }
    }

    #[test]
    fn freed_frames_are_handed_out_again_first() {
        let mut links = Links::default();
        let mut a = RegionFrameAllocator::new([(0x20_0000, 0x20_4000)]);
        let f: Vec<u64> = (0..3).map(|_| a.allocate(&links).unwrap()).collect();
        assert_eq!(f, [0x20_0000, 0x20_1000, 0x20_2000]);
        assert_eq!(
            (a.allocated_frames(), a.free_frames(), a.peak_frames()),
            (3, 1, 3)
        );
        a.free(f[0], &mut links).unwrap();
        a.free(f[2], &mut links).unwrap();
        assert_eq!(
            (a.allocated_frames(), a.free_frames(), a.peak_frames()),
            (1, 3, 3)
        );
        // Last freed first, then the never-used frame, then nothing.
        assert_eq!(a.allocate(&links), Some(f[2]));
        assert_eq!(a.allocate(&links), Some(f[0]));
        assert_eq!(a.allocate(&links), Some(0x20_3000));
        assert_eq!(a.allocate(&links), None);
        assert_eq!(
            (a.allocated_frames(), a.free_frames(), a.peak_frames()),
            (4, 0, 4)
        );
    }

    #[test]
    fn frees_of_frames_it_never_handed_out_are_refused() {
        let mut links = Links::default();
        let mut a = RegionFrameAllocator::new([(0x20_0000, 0x20_4000), (0x40_0000, 0x40_1000)]);
        let f = a.allocate(&links).unwrap();
        for bad in [
            0,
            0x1000,    // below 1 MiB
            f + 8,     // not aligned
            0x20_1000, // in the region, not handed out yet
            0x40_0000, // a later region, not reached yet
            0x30_0000, // between the regions
            !0xfff,
        ] {
            assert_eq!(a.free(bad, &mut links), Err(FreeError::NotAllocated(bad)));
        }
        assert_eq!(a.allocated_frames(), 1);
        assert!(links.0.is_empty(), "a refused free writes nothing");
        a.free(f, &mut links).unwrap();
    }

    #[test]
    fn a_damaged_free_list_is_dropped_not_followed() {
        let mut links = Links::default();
        let mut a = RegionFrameAllocator::new([(0x20_0000, 0x20_8000)]);
        let f: Vec<u64> = (0..4).map(|_| a.allocate(&links).unwrap()).collect();
        for &x in &f {
            a.free(x, &mut links).unwrap();
        }
        // Someone wrote into the frame at the head of the list after it was freed.
        links.0.insert(f[3], 0x1234_5000);
        assert_eq!(a.allocate(&links), Some(f[3]));
        assert_eq!(a.lost_frames(), 3);
        // The rest comes from the never-used frames; the dropped ones are never handed out.
        let rest: Vec<u64> = core::iter::from_fn(|| a.allocate(&links)).collect();
        assert_eq!(rest, [0x20_4000, 0x20_5000, 0x20_6000, 0x20_7000]);
        assert_eq!(a.free_frames(), 0);
    }

    #[test]
    fn never_hands_out_a_frame_in_use_whatever_the_order_of_frees() {
        let mut seed = 0x0bad_cafe_1234_5678u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..50 {
            let mut links = Links::default();
            let mut a = RegionFrameAllocator::new([
                (0x10_0000, 0x10_0000 + (rnd() % 64) * 0x1000),
                (0x80_0000, 0x80_0000 + (rnd() % 64) * 0x1000),
            ]);
            let total = a.free_frames();
            let mut in_use: BTreeSet<u64> = BTreeSet::new();
            for _ in 0..2000 {
                if rnd() % 3 != 0 {
                    match a.allocate(&links) {
                        Some(f) => assert!(in_use.insert(f), "frame {f:#x} handed out twice"),
                        None => assert_eq!(in_use.len() as u64, total, "None with frames free"),
                    }
                } else if let Some(&f) = in_use.iter().nth((rnd() % 64) as usize) {
                    in_use.remove(&f);
                    a.free(f, &mut links).unwrap();
                }
                assert_eq!(a.allocated_frames(), in_use.len() as u64);
                assert_eq!(a.free_frames(), total - in_use.len() as u64);
                assert!(a.peak_frames() >= a.allocated_frames());
            }
            assert_eq!(a.lost_frames(), 0);
        }
    }

    #[test]
    fn contiguous_runs_skip_short_regions_and_never_overlap() {
        let mut links = Links::default();
        let mut a = RegionFrameAllocator::new([(0x20_0000, 0x20_3000), (0x40_0000, 0x40_8000)]);
        let single = a.allocate(&links).unwrap();
        assert_eq!(single, 0x20_0000);
        // Two frames are left in the first region: four do not fit, so the second is used.
        assert_eq!(a.allocate_contiguous(4), Some(0x40_0000));
        assert_eq!(a.lost_frames(), 2);
        assert_eq!(a.allocate_contiguous(4), Some(0x40_4000));
        assert_eq!(a.allocate_contiguous(1), None);
        assert_eq!(a.allocate_contiguous(0), None);
        assert_eq!(a.allocated_frames(), 9);
        assert_eq!(a.free_frames(), 0);
        a.free(single, &mut links).unwrap();
        assert_eq!(a.allocate(&links), Some(single));
    }

    #[test]
    fn past_the_limit_the_smallest_regions_are_given_up_and_counted() {
        // MAX_REGIONS + 3 separate ranges; the three of one frame go, the two-frame ones stay.
        let ranges = (0..(MAX_REGIONS as u64 + 3)).map(|i| {
            let s = 0x100_0000 + i * 0x4000;
            let frames = if i % 100 == 7 { 1 } else { 2 };
            (s, s + frames * 0x1000)
        });
        let a = RegionFrameAllocator::new(ranges);
        assert_eq!(a.regions().len(), MAX_REGIONS);
        assert_eq!(a.dropped_regions(), 3);
        assert_eq!(a.dropped_bytes(), 3 * 0x1000);
        assert!(
            a.regions()
                .iter()
                .all(|r| r.frames() == 2 || r.frames() == 1)
        );
        assert_eq!(a.regions().iter().filter(|r| r.frames() == 1).count(), 3);
        assert!(
            a.regions().windows(2).all(|w| w[0].end < w[1].start),
            "sorted, disjoint"
        );
    }

    #[test]
    fn a_32_bit_dma_engine_gets_memory_below_4_gib_when_the_rest_is_above() {
        // 64 MiB low, 8 GiB high: the reserve is the top MiB of the low region.
        let mut a = RegionFrameAllocator::new([(0x10_0000, 0x410_0000), (1 << 32, 3 << 32)]);
        let reserve = a.dma32_reserve();
        assert_eq!(
            reserve,
            FrameRange {
                start: 0x400_0000,
                end: 0x410_0000
            }
        );
        assert_eq!(
            a.usable_bytes(),
            0x3f0_0000 + (2 << 32),
            "the reserve is not in it"
        );
        // While ordinary memory below 4 GiB lasts, it is used first.
        assert_eq!(a.allocate_contiguous_dma32(4), Some(0x10_0000));
        // Use up the low region: ordinary allocations now come from above 4 GiB.
        while a.allocate_contiguous(1).is_some_and(|p| p < 1 << 32) {}
        assert!(a.allocate_contiguous(1).unwrap() >= 1 << 32);
        // A 32-bit engine still gets low memory, from the reserve, until it is used up.
        let p = a.allocate_contiguous_dma32(16).unwrap();
        assert_eq!(p, 0x400_0000);
        let q = a
            .allocate_contiguous_dma32(DMA32_RESERVE_FRAMES - 16)
            .unwrap();
        assert_eq!(q + (DMA32_RESERVE_FRAMES - 16) * FRAME_SIZE, 0x410_0000);
        assert_eq!(
            a.allocate_contiguous_dma32(1),
            None,
            "the reserve is used up"
        );
        assert!(
            a.allocate_contiguous(1).unwrap() >= 1 << 32,
            "ordinary allocations go on"
        );
        // A region crossing 4 GiB keeps its part above the reserve.
        let b = RegionFrameAllocator::new([(0x8000_0000, 0x1_4000_0000)]);
        assert_eq!(b.dma32_reserve().end, 1 << 32);
        assert!(b.regions().contains(&FrameRange {
            start: 1 << 32,
            end: 0x1_4000_0000
        }));
    }

    #[test]
    fn a_uefi_map_of_many_touching_pieces_is_kept_whole() {
        // 4 * MAX_REGIONS touching one-frame pieces, in a scrambled order (UEFI lists
        // conventional memory in pieces): one region, nothing dropped. Dropping past the limit
        // before merging used to lose three quarters of it.
        let n = 4 * MAX_REGIONS as u64;
        let ranges = (0..n).map(|i| {
            let k = (i * 7919) % n;
            let s = 0x100_0000 + k * 0x1000;
            (s, s + 0x1000)
        });
        let a = RegionFrameAllocator::new(ranges);
        assert_eq!(
            a.regions(),
            &[FrameRange {
                start: 0x100_0000,
                end: 0x100_0000 + n * 0x1000
            }]
        );
        assert_eq!((a.dropped_regions(), a.dropped_bytes()), (0, 0));
        assert_eq!(a.usable_bytes(), n * 0x1000);
    }
}

//! The per-task counter page: a read-only page mapped into the task, from which ring 3 reads its
//! 64-bit virtual counters (and virtual TSC) with RDPMC / RDTSC and no system call.
//!
//! The protocol is Linux's perf mmap page (`struct perf_event_mmap_page`: `lock`, `index`,
//! `offset`, `pmc_width`; ../shared/reference/pmu-facts.md §5), adapted to the perfctr model of
//! [`super::vcounter`]: for every slot the page holds the virtual value at the last update
//! (`base`) and the raw counter reading it corresponds to (`start`), and the reader adds the
//! events since then, widened exactly like the kernel does.
//!
//! # Layout (version 1, little-endian, `#[repr(C)]`, 600 bytes; the rest of the page is zero)
//!
//! [`UserPage`]:
//!
//! | offset | size | field        | meaning                                                       |
//! |--------|------|--------------|---------------------------------------------------------------|
//! | 0      | 4    | `magic`      | [`MAGIC`], the bytes `"BMVC"`                                 |
//! | 4      | 4    | `version`    | [`VERSION`] (1)                                               |
//! | 8      | 8    | `seq`        | sequence count: odd while the kernel updates the page; every update adds 2 |
//! | 16     | 8    | `generation` | the task's counter generation ([`VirtualCounters::generation`]) |
//! | 24     | 4    | `nr_slots`   | configured counter slots (0..=16)                             |
//! | 28     | 4    | `size`       | `size_of::<UserPage>()` (600): fields beyond it do not exist  |
//! | 32     | 32   | `tsc`        | the virtual TSC, a [`PageSlot`] read with RDTSC               |
//! | 64     | 512  | `slots[16]`  | counter slots 0..16, [`PageSlot`] each; those from `nr_slots` on are zero |
//! | 576    | 8    | `interrupts` | interrupts the task took while it ran in ring 3 (the harness reads it around each repetition) |
//! | 584    | 8    | `tsc_offset` | retry-free virtual TSC: `base - start` while counting, `base` while stopped |
//! | 592    | 8    | `tsc_mask`   | all ones while counting, 0 while stopped: virtual TSC = `(rdtsc & tsc_mask) + tsc_offset` |
//!
//! [`PageSlot`] (32 bytes):
//!
//! | offset | size | field      | meaning                                                         |
//! |--------|------|------------|-----------------------------------------------------------------|
//! | 0      | 4    | `index`    | counter slot: RDPMC ECX + 1, or 0 when the slot is not readable with RDPMC while the task runs (its counting stopped, counter not readable from ring 3, counts lost). TSC slot: 1 while the task counts, else 0. The page describes the task as it runs: only the task reads it, and only while it runs. A counter slot at 0 while the TSC slot is not: `base` misses the current run, so the reader calls `counters_read` instead |
//! | 4      | 4    | `width`    | counter width in bits (1..=64; 64 for the TSC)                  |
//! | 8      | 8    | `base`     | the 64-bit virtual value at the last update                     |
//! | 16     | 8    | `start`    | the raw counter (RDTSC) reading at the last update, masked to the width; meaningful only when `index != 0` |
//! | 24     | 8    | `mask`     | `2^width - 1` (all ones for the TSC): the retry-free slot reader's `((raw - start) & mask) + base`; 0 in unused slots |
//!
//! # Reading (ring 3)
//!
//! ```text
//! loop {
//!     s = volatile_load(seq); compiler_fence
//!     if s is odd { pause; continue }                // the kernel is updating it (another CPU)
//!     idx = slot.index; w = slot.width; b = slot.base; st = slot.start
//!     value = b
//!     if idx == 0 and this is a counter slot and tsc.index != 0 {
//!         return counters_read()                     // not on the page while running
//!     }
//!     if idx != 0 { raw = rdpmc(idx - 1)             // TSC slot: rdtsc()
//!                   value = b + widen(st, raw, w) }   // mod 2^64
//!     compiler_fence
//!     if volatile_load(seq) == s { return value }    // else: updated meanwhile, retry
//! }
//! ```
//!
//! with `widen(st, raw, w) = ((raw << (64 - w)) - (st << (64 - w))) >> (64 - w)` (logical shift,
//! wrapping subtraction; [`super::vcounter::widen`]). The value is exactly what
//! [`VirtualCounters::read_running`] gives for the same raw reading. The ring-3 reader loops until
//! it gets a stable read (an update takes a bounded time); [`read`] here, the reference
//! implementation tested on the host where nothing runs concurrently, gives up after
//! [`READ_RETRIES`] attempts.
//!
//! Why a retry is needed even on one CPU: the reader can be interrupted anywhere in the loop, and
//! the kernel may then sample the task (new `base` and `start`) or switch it out and back in
//! (others count on the counter meanwhile; new `start`). A reader that combined the old `start`
//! with a new RDPMC value would count the other tasks' events; the changed `seq` sends it round
//! again. On one CPU the reader never sees an odd `seq` (the kernel finishes the update before
//! returning to ring 3); odd values matter for observers on other CPUs, for which the kernel stores
//! `seq`, then the fields, then `seq` (x86 does not reorder stores with stores: compiler ordering
//! is enough).
//!
//! # The retry-free virtual TSC read
//!
//! A seqlock reader that is preempted inside its read window retries, and the retry's own
//! instructions land in the task's virtual TSC: a measurement taken across a preemption comes out
//! a few dozen ticks long, where a task that was not preempted reads the exact count. The virtual
//! TSC therefore has a second reader with no retry at all, in the spirit of Linux's restartable
//! sequences: the SDK's `baremark_read_vtsc` is
//!
//! ```text
//!         mov rsi, [page + 584]      ; tsc_offset
//! lo:     mov rcx, [page + 592]      ; tsc_mask
//! hi:     rdtsc
//!         (edx:eax & rcx) + rsi
//! ```
//!
//! and the task registers `[lo, hi]` with the `read_window` syscall. Whenever the kernel resumes
//! the task with RIP in `[lo, hi]` (it was interrupted after loading the offset and before RDTSC),
//! it sets RSI to the offset it has just published, so the loaded offset always belongs to the
//! same run as the RDTSC after it. No other interleaving needs help: interrupted before the first
//! load, the task loads the new offset; interrupted after RDTSC, offset and reading are both from
//! before the interrupt. The mask cannot change across a preemption (only the task's own
//! `counters_start` / `counters_stop` change it). The fix-up is branch-free, so it costs the same
//! number of instructions whether it applies or not, and the preemption compensation (a constant)
//! stays exact.
//!
//! # The retry-free slot read
//!
//! Hardware slots have the same kind of reader (the SDK's `baremark_read_slot`, RDI = the slot):
//!
//! ```text
//!         mov rsi, [slot + 8]        ; base
//! lo:     mov r8, [slot + 16]        ; start
//!         mov ecx, [slot + 0]        ; index
//!         dec ecx                    ; RDPMC ECX; all ones when index is 0
//! hi:     rdpmc
//!         ((edx:eax - r8) & [slot + 24]) + rsi
//! ```
//!
//! registered with `read_window(lo, hi, 1, abort)`. Resumed with RIP in `[lo, hi]`, the task
//! gets RSI, R8 and RCX from the slot as just published ([`fix_up_slot_reader`]; a switch
//! changes `base` and `start`, and a slot can become unreadable). A slot that is not readable
//! now (switched out, stopped, counts lost) has index 0, so the reader's RDPMC faults with ECX
//! all ones; the kernel then resumes the task at `abort` instead of reporting a fault, and the
//! SDK's abort path asks `counters_read`. So the fast path has no branch: eleven instructions
//! and the call.
//!
//! # The harness region's window
//!
//! The SDK's harness region with hardware slots (docs/harness.md, "The region") reads all its
//! slots back to back, four instructions each (`mov ecx, [copy]; rdpmc; store; store`), and
//! combines each reading with a copy of the slot (`index`, `base`, `start`, `mask`) it took just
//! before the first read (before the body) or just after the last (after it). It registers the
//! whole stretch, from the first copy to the last, with `read_window(lo, hi, 2, abort)`. Resumed
//! with RIP in `[lo, hi]` (after an interrupt or an exception), or trapping at an RDPMC there
//! (a slot not readable now), the task goes to `abort` ([`fix_up_region`]), and the SDK measures
//! that repetition again (or, for a slot not readable, with `counters_read`). So a reading and
//! its copy always belong to one run of the task, whatever a switch, a sample or a fold changed
//! in between, with no retry in the read; the body it calls runs outside the window (its code is
//! elsewhere), so preempting the body costs nothing.
//!
//! # Why not perf's `offset + sign_extend(raw)`
//!
//! perf publishes one field, `offset = count - prev_raw`, and the reader computes
//! `offset + sext(raw, pmc_width)`. Take `offset = base - sext(start)` (mod 2^64). Then
//! `offset + sext(raw) = base + (sext(raw) - sext(start))`, and since `sext(x) ≡ x (mod 2^w)` the
//! difference is congruent to the true delta modulo 2^w; the addition modulo 2^64 is harmless
//! (everything is modulo 2^64 anyway). But it equals the delta itself only while
//! `sext(start) + delta < 2^(w-1)`: passing the real wrap (2^w - 1 -> 0, i.e. -1 -> 0 after sign
//! extension) is fine, passing the sign boundary (2^(w-1) - 1 -> 2^(w-1)) makes the result short
//! by 2^w. Linux never lets that happen: it arms every counter at `-period` with
//! `period < 2^(w-1)`, so a counter stays in the negative half until it wraps through 0 and the
//! overflow PMI re-arms it. Virtual counters here are free-running (the kernel reads, not rewrites,
//! them at switches and samples), so a counter crosses 2^(w-1) once every 2^w events, at any
//! point of a run. Publishing `start` instead makes the reader exact for any delta below 2^w, the
//! same condition the kernel's own accounting needs (a test below shows the perf formula failing).
//!
//! # Writing (the kernel)
//!
//! The page is updated from a [`VirtualCounters`] with [`UserPage::publish`] (or
//! [`UserPage::begin_update`], [`UserPage::set`], [`UserPage::end_update`]) **after every
//! operation that changes a slot's `sum` or `start`** (`VirtualCounters::slots_version`): the
//! general protocol's `resume` and `suspend`, `sample`, `fold_wrapped`, `rebase`, `configure`,
//! `reset`, `add_child`. The fast switch (`task::hwswitch`) changes neither: it writes each
//! counter back to where the task left it, so the page stays right across switches; the exit
//! assembly writes the virtual TSC's fields, `seq` and `interrupts` at every entry. The kernel builds the page in a plain [`UserPage`] and copies it into the task's
//! page: `seq` first (odd), then the body, then `seq` (even), or all of it at once while the task
//! cannot run on another CPU.

use core::mem::size_of;

use super::vcounter::{MAX_SLOTS, VirtualCounters, widen};
use crate::pmu::backend::Counter;

/// `magic`: the bytes "BMVC" (baremark virtual counters) in memory order.
pub const MAGIC: u32 = u32::from_le_bytes(*b"BMVC");
/// `version` of the layout described in the module documentation.
pub const VERSION: u32 = 1;
/// The page the layout must fit in.
pub const PAGE_SIZE: usize = 4096;
/// Offsets in the page of `seq`, the TSC slot, the counter slots and the tail
/// (`interrupts`, `tsc_offset`, `tsc_mask`).
pub const SEQ_AT: usize = 8;
pub const TSC_AT: usize = 32;
pub const SLOTS_AT: usize = 64;
pub const TAIL_AT: usize = 576;
// The exit assembly writes the virtual TSC slot's `start` and `tsc_offset` itself (`hw::user`,
// "The virtual TSC's boundary"): its offsets must be this layout's.
#[cfg(target_os = "none")]
const _: () = assert!(
    baremark_hw::user::VTSC_START_AT as usize == TSC_AT + core::mem::offset_of!(PageSlot, start)
);
#[cfg(target_os = "none")]
const _: () = assert!(
    baremark_hw::user::VTSC_OFFSET_AT as usize == core::mem::offset_of!(UserPage, tsc_offset)
);
#[cfg(target_os = "none")]
const _: () = assert!(baremark_hw::user::PAGE_SEQ_AT as usize == SEQ_AT);
#[cfg(target_os = "none")]
const _: () = assert!(
    baremark_hw::user::VTSC_BASE_AT as usize == TSC_AT + core::mem::offset_of!(PageSlot, base)
);
#[cfg(target_os = "none")]
const _: () = assert!(baremark_hw::user::PAGE_INTERRUPTS_AT as usize == TAIL_AT);
/// Attempts of the host reader [`read`] before it reports [`ReadError::Unstable`].
pub const READ_RETRIES: u32 = 16;

/// One counter (or the TSC) on the page. See the module documentation for the fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageSlot {
    /// Counter slot: RDPMC ECX + 1, 0 when not readable now. TSC slot: 1 while the task runs.
    pub index: u32,
    /// Width in bits.
    pub width: u32,
    /// The virtual value at the last update.
    pub base: u64,
    /// The raw reading at the last update (masked to the width).
    pub start: u64,
    /// `2^width - 1` (all ones for 64 bits): the retry-free slot reader computes
    /// `((raw - start) & mask) + base` (the `widen` below, without shifts).
    pub mask: u64,
}

impl PageSlot {
    /// The slot's 32 bytes as ring 3 sees them.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[0..4].copy_from_slice(&self.index.to_le_bytes());
        out[4..8].copy_from_slice(&self.width.to_le_bytes());
        out[8..16].copy_from_slice(&self.base.to_le_bytes());
        out[16..24].copy_from_slice(&self.start.to_le_bytes());
        out[24..32].copy_from_slice(&self.mask.to_le_bytes());
        out
    }
}

/// `2^width - 1`, all ones for 64 bits and more.
pub const fn width_mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The page. See the module documentation for the layout.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserPage {
    pub magic: u32,
    pub version: u32,
    pub seq: u64,
    pub generation: u64,
    pub nr_slots: u32,
    pub size: u32,
    pub tsc: PageSlot,
    pub slots: [PageSlot; MAX_SLOTS],
    /// Interrupts the task has taken while it ran in ring 3 (all of its life).
    pub interrupts: u64,
    /// The virtual TSC as `(rdtsc & tsc_mask) + tsc_offset`: `base - start` and all ones while
    /// the task counts, `base` and 0 while its counting is stopped. The retry-free reader's two
    /// fields (see "The retry-free virtual TSC read").
    pub tsc_offset: u64,
    pub tsc_mask: u64,
}

const _: () = assert!(size_of::<UserPage>() <= PAGE_SIZE);
const _: () = assert!(size_of::<UserPage>() == 600);
const _: () = assert!(size_of::<PageSlot>() == 32);

impl Default for UserPage {
    fn default() -> Self {
        Self::new()
    }
}

impl UserPage {
    /// A page for a task that has no counters yet: header filled in, `seq` 0, everything else
    /// zero.
    pub const fn new() -> UserPage {
        const EMPTY: PageSlot = PageSlot {
            index: 0,
            width: 0,
            base: 0,
            start: 0,
            mask: 0,
        };
        UserPage {
            magic: MAGIC,
            version: VERSION,
            seq: 0,
            generation: 0,
            nr_slots: 0,
            size: size_of::<UserPage>() as u32,
            tsc: PageSlot { width: 64, ..EMPTY },
            slots: [EMPTY; MAX_SLOTS],
            interrupts: 0,
            tsc_offset: 0,
            tsc_mask: 0,
        }
    }

    /// Whether the header is one this code understands (what the SDK checks once, at start).
    pub fn is_valid(&self) -> bool {
        self.magic == MAGIC && self.version == VERSION
    }

    /// Starts an update: `seq` becomes odd. (If it already is, an update was begun and not
    /// ended: it stays odd.)
    pub fn begin_update(&mut self) {
        if self.seq & 1 == 0 {
            self.seq = self.seq.wrapping_add(1);
        }
    }

    /// Ends an update: `seq` becomes even and differs from its value before `begin_update` (+2
    /// in all). Without a `begin_update` it still advances by 2, so that readers retry.
    pub fn end_update(&mut self) {
        self.seq = if self.seq & 1 == 1 {
            self.seq.wrapping_add(1)
        } else {
            self.seq.wrapping_add(2)
        };
    }

    /// Sets every field but `seq` and `interrupts` from `vc`. `rdpmc_index` gives the RDPMC ECX of a hardware
    /// counter, if ring 3 can read it with RDPMC (the backend's
    /// [`crate::pmu::backend::PmuBackend::rdpmc_index`], or `None` for every counter when CR4.PCE
    /// is clear). A slot gets `index` = ECX + 1 while the task runs and its counter is readable,
    /// else 0 (the reader then gets `base`, the value at this update).
    pub fn set(&mut self, vc: &VirtualCounters, rdpmc_index: impl Fn(Counter) -> Option<u32>) {
        let running = vc.is_running();
        self.magic = MAGIC;
        self.version = VERSION;
        self.generation = vc.generation();
        self.size = size_of::<UserPage>() as u32;
        let tsc = vc.tsc();
        self.tsc = PageSlot {
            index: u32::from(running),
            width: 64,
            base: tsc.sum,
            start: tsc.start,
            mask: u64::MAX,
        };
        (self.tsc_offset, self.tsc_mask) = if running {
            (tsc.sum.wrapping_sub(tsc.start), u64::MAX)
        } else {
            (tsc.sum, 0)
        };
        // Switched out, a slot's value is `sum + widen(start, held)` (`vcounter`): published as
        // `base` with the reading it belongs to.
        // Per slot, not `vc.values()`: its array of every slot's value is copied whole, which
        // under icount costs a count per byte at every switch that publishes.
        let held = vc.held();
        let mut slots = vc.slots().iter().enumerate();
        // Slots beyond both the old and the new count are zero already.
        let used = (self.nr_slots as usize).max(vc.len()).min(MAX_SLOTS);
        self.nr_slots = vc.len() as u32;
        for page_slot in &mut self.slots[..used] {
            *page_slot = match slots.next() {
                Some((i, s)) => PageSlot {
                    index: if running {
                        rdpmc_index(s.counter)
                            .and_then(|ecx| ecx.checked_add(1))
                            .unwrap_or(0)
                    } else {
                        0
                    },
                    width: u32::from(s.width),
                    base: if running {
                        s.sum
                    } else {
                        vc.value(i).unwrap_or(s.sum)
                    },
                    start: if running {
                        s.start
                    } else {
                        held.get(i).copied().unwrap_or(s.start) & width_mask(s.width)
                    },
                    mask: width_mask(s.width),
                },
                None => PageSlot::default(),
            };
        }
    }

    /// The page's bytes as ring 3 sees them (the layout above, little-endian): what the kernel
    /// copies into the task's page.
    pub fn to_bytes(&self) -> [u8; size_of::<UserPage>()] {
        let mut out = [0u8; size_of::<UserPage>()];
        out[0..4].copy_from_slice(&self.magic.to_le_bytes());
        out[4..8].copy_from_slice(&self.version.to_le_bytes());
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.generation.to_le_bytes());
        out[24..28].copy_from_slice(&self.nr_slots.to_le_bytes());
        out[28..32].copy_from_slice(&self.size.to_le_bytes());
        out[TSC_AT..TSC_AT + 32].copy_from_slice(&self.tsc.to_bytes());
        for (i, s) in self.slots.iter().enumerate() {
            out[SLOTS_AT + 32 * i..SLOTS_AT + 32 * (i + 1)].copy_from_slice(&s.to_bytes());
        }
        out[TAIL_AT..].copy_from_slice(&self.tail_bytes());
        out
    }

    /// `interrupts`, `tsc_offset`, `tsc_mask`: the bytes at [`TAIL_AT`].
    pub fn tail_bytes(&self) -> [u8; 24] {
        let mut out = [0u8; 24];
        out[0..8].copy_from_slice(&self.interrupts.to_le_bytes());
        out[8..16].copy_from_slice(&self.tsc_offset.to_le_bytes());
        out[16..24].copy_from_slice(&self.tsc_mask.to_le_bytes());
        out
    }

    /// What anything but a new configuration (`counters_start`, `stop`, `reset`, a fold,
    /// added child counts, interrupts) changes, as `(offset, words)` pieces of
    /// [`UserPage::to_bytes`] (little-endian u64s at 8-byte aligned offsets): `seq` to the end
    /// of the TSC slot, counter slots `0..nr_slots` and the tail. The kernel writes the whole
    /// page when the configuration (generation) changed, and only these otherwise: whole words,
    /// as stores, because under icount a byte copy (or zeroing a buffer) costs one count per
    /// byte, and this runs at every switch that changes what the page says.
    pub fn changing_words(&self, mut write: impl FnMut(usize, &[u64])) {
        let slot = |s: &PageSlot| {
            [
                u64::from(s.index) | u64::from(s.width) << 32,
                s.base,
                s.start,
                s.mask,
            ]
        };
        let t = slot(&self.tsc);
        write(
            SEQ_AT,
            &[
                self.seq,
                self.generation,
                u64::from(self.nr_slots) | u64::from(self.size) << 32,
                t[0],
                t[1],
                t[2],
                t[3],
            ],
        );
        let n = (self.nr_slots as usize).min(MAX_SLOTS);
        for (i, s) in self.slots.iter().take(n).enumerate() {
            write(SLOTS_AT + 32 * i, &slot(s));
        }
        write(TAIL_AT, &[self.interrupts, self.tsc_offset, self.tsc_mask]);
    }

    /// `begin_update`, `set`, `end_update`.
    pub fn publish(&mut self, vc: &VirtualCounters, rdpmc_index: impl Fn(Counter) -> Option<u32>) {
        self.begin_update();
        self.set(vc, rdpmc_index);
        self.end_update();
    }
}

/// Which counter of the page to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageCounter {
    /// Counter slot n.
    Slot(usize),
    /// The virtual TSC.
    Tsc,
}

/// How the reader loads the page's fields: plain loads from a [`UserPage`] here, volatile loads
/// from the mapped page in ring 3 (and, in tests, a page the "kernel" changes between loads).
/// Each method is one load (or one group of loads) of the reader loop.
pub trait PageSource {
    fn load_seq(&self) -> u64;
    fn load_generation(&self) -> u64;
    fn load_nr_slots(&self) -> u32;
    /// The slot (`None` beyond the page's 16 slots).
    fn load_slot(&self, which: PageCounter) -> Option<PageSlot>;
}

impl PageSource for UserPage {
    fn load_seq(&self) -> u64 {
        self.seq
    }
    fn load_generation(&self) -> u64 {
        self.generation
    }
    fn load_nr_slots(&self) -> u32 {
        self.nr_slots
    }
    fn load_slot(&self, which: PageCounter) -> Option<PageSlot> {
        match which {
            PageCounter::Tsc => Some(self.tsc),
            PageCounter::Slot(i) => self.slots.get(i).copied(),
        }
    }
}

/// A consistent read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// The 64-bit virtual value.
    pub value: u64,
    /// The generation it belongs to (a cached configuration with another generation is stale).
    pub generation: u64,
}

/// Why a read gave no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The slot is not configured (at or beyond `nr_slots`).
    NoSuchSlot,
    /// `seq` was odd or changed during every attempt.
    Unstable,
    /// A counter slot with `index` 0 while the task runs (the TSC slot's `index` is not 0):
    /// ring 3 cannot read that counter now (not readable with RDPMC, or its counts were lost)
    /// and `base` misses the current run; the reader asks the kernel (`counters_read`).
    NotOnPage,
}

fn value_of(slot: &PageSlot, hw: &mut impl FnMut(u32) -> u64) -> u64 {
    if slot.index == 0 {
        return slot.base;
    }
    let raw = hw(slot.index - 1);
    // Widths above 64 (a corrupt page) are treated as 64 by `widen`.
    let width = u8::try_from(slot.width).unwrap_or(u8::MAX);
    slot.base.wrapping_add(widen(slot.start, raw, width))
}

/// The seqlock reader loop, at most `attempts` times. `hw` reads the hardware: for a counter slot
/// it gets the RDPMC ECX (`index - 1`); for [`PageCounter::Tsc`] it is called with 0 and must
/// return RDTSC. It is called only when the slot's `index` is not 0.
pub fn read_with<S: PageSource + ?Sized>(
    src: &S,
    which: PageCounter,
    mut hw: impl FnMut(u32) -> u64,
    attempts: u32,
) -> Result<Reading, ReadError> {
    for _ in 0..attempts {
        let seq = src.load_seq();
        if seq & 1 != 0 {
            // The kernel is in the middle of an update (on another CPU): try again.
            continue;
        }
        let generation = src.load_generation();
        let slot = match which {
            PageCounter::Tsc => src.load_slot(which),
            PageCounter::Slot(i) => {
                if i < src.load_nr_slots() as usize {
                    src.load_slot(which)
                } else {
                    None
                }
            }
        };
        let running = src
            .load_slot(PageCounter::Tsc)
            .is_some_and(|t| t.index != 0);
        let not_on_page =
            matches!(which, PageCounter::Slot(_)) && running && slot.is_some_and(|s| s.index == 0);
        let value = slot.map(|s| value_of(&s, &mut hw));
        if src.load_seq() == seq {
            return match value {
                _ if not_on_page => Err(ReadError::NotOnPage),
                Some(value) => Ok(Reading { value, generation }),
                None => Err(ReadError::NoSuchSlot),
            };
        }
    }
    Err(ReadError::Unstable)
}

/// The value of counter slot `slot` (`None`: no such slot, or no stable read within
/// [`READ_RETRIES`] attempts). `rdpmc` executes RDPMC with the ECX it is given.
pub fn read(page: &UserPage, slot: usize, rdpmc: impl FnMut(u32) -> u64) -> Option<u64> {
    read_with(page, PageCounter::Slot(slot), rdpmc, READ_RETRIES)
        .ok()
        .map(|r| r.value)
}

/// The virtual TSC (`None`: no stable read within [`READ_RETRIES`] attempts). `rdtsc` executes
/// RDTSC.
pub fn read_tsc(page: &UserPage, mut rdtsc: impl FnMut() -> u64) -> Option<u64> {
    read_with(page, PageCounter::Tsc, |_| rdtsc(), READ_RETRIES)
        .ok()
        .map(|r| r.value)
}

/// The retry-free read of the virtual TSC (module docs): `(rdtsc & tsc_mask) + tsc_offset`.
/// `loaded_offset` is what the reader loaded before its RDTSC: the kernel's fix-up makes it the
/// page's current `tsc_offset` whenever the task was interrupted between the two.
pub fn read_tsc_exact(page: &UserPage, loaded_offset: u64, raw: u64) -> u64 {
    (raw & page.tsc_mask).wrapping_add(loaded_offset)
}

/// The fix-up when a task resumes (module docs): the register the retry-free reader loaded
/// `tsc_offset` into gets the published value when `rip` is inside `[lo, hi]`, else stays.
/// The kernel does it in the exit assembly (`hw::user`, `BAREMARK_VTSC_PUBLISH`: the offset is
/// only known after its last TSC reading), with the same branch-free comparison; this is the
/// reference the host tests check the protocol with.
pub fn fix_up_offset(rip: u64, window: (u64, u64), register: u64, page: &UserPage) -> u64 {
    let (lo, hi) = window;
    let inside = rip.wrapping_sub(lo) <= hi.wrapping_sub(lo);
    core::hint::select_unpredictable(inside, page.tsc_offset, register)
}

/// The retry-free slot reader's value from what it loaded (`base`, `start`) and its RDPMC
/// reading (module docs, "The retry-free slot read"): `((raw - start) & mask) + base`, which is
/// `base + widen(start, raw, width)`.
pub fn read_slot_exact(slot: &PageSlot, base: u64, start: u64, raw: u64) -> u64 {
    (raw.wrapping_sub(start) & slot.mask).wrapping_add(base)
}

/// The registers the slot reader gets when the task resumes inside its window (module docs):
/// `(rsi, r8, rcx)` = the slot's current `base`, `start` and RDPMC ECX (`index - 1`: all ones
/// when the slot is not readable now, so the reader's RDPMC faults and the kernel sends it to
/// its abort path). `None`: RIP is outside `[lo, hi]`, or RDI does not point at a configured
/// slot of the page at `page_addr` (the reader was called wrongly; nothing is changed).
pub fn fix_up_slot_reader(
    rip: u64,
    window: (u64, u64),
    rdi: u64,
    page_addr: u64,
    page: &UserPage,
) -> Option<(u64, u64, u64)> {
    let (lo, hi) = window;
    if rip.wrapping_sub(lo) > hi.wrapping_sub(lo) {
        return None;
    }
    let at = rdi.checked_sub(page_addr + SLOTS_AT as u64)?;
    let i = usize::try_from(at / 32).ok()?;
    if !at.is_multiple_of(32) || i >= (page.nr_slots as usize).min(MAX_SLOTS) {
        return None;
    }
    let slot = &page.slots[i];
    Some((slot.base, slot.start, u64::from(slot.index.wrapping_sub(1))))
}

/// The widest harness region window `read_window` kind 2 takes, in bytes (the SDK's is about
/// 1,100: two unrolled reads of 16 slots and the copies around them).
pub const REGION_WINDOW_MAX: u64 = 4095;

/// The harness region's fix-up ("The harness region's window"): the address to resume the task
/// at instead of `rip` (its abort path), when `rip` is inside the registered `window`; `None`
/// otherwise (no window: `(u64::MAX, u64::MAX)`, which no RIP is inside since `abort` is).
pub fn fix_up_region(rip: u64, window: (u64, u64), abort: u64) -> Option<u64> {
    let (lo, hi) = window;
    (lo != u64::MAX && rip.wrapping_sub(lo) <= hi.wrapping_sub(lo)).then_some(abort)
}

#[cfg(test)]
mod tests {
    use core::cell::Cell;
    use core::mem::offset_of;

    use alloc::vec::Vec;

    use events::event::{EventSelect, Modifiers};
    use proptest::prelude::*;

    use super::*;
    use crate::pmu::backend::{CounterSet, PmuBackend};
    use crate::pmu::intel::IntelArchPmu;
    use crate::pmu::msr::Msr;
    use crate::pmu::sim::{IntelConfig, SimPmu};

    fn m(width: u8) -> u64 {
        if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        }
    }

    /// Intel's RDPMC numbering.
    fn ecx_of(c: Counter) -> Option<u32> {
        Some(match c {
            Counter::Gp(n) => u32::from(n),
            Counter::Fixed(i) => (1 << 30) | u32::from(i),
        })
    }

    #[test]
    fn layout() {
        assert_eq!(size_of::<UserPage>(), 600);
        assert_eq!(core::mem::align_of::<UserPage>(), 8);
        assert_eq!(offset_of!(UserPage, magic), 0);
        assert_eq!(offset_of!(UserPage, version), 4);
        assert_eq!(offset_of!(UserPage, seq), 8);
        assert_eq!(offset_of!(UserPage, generation), 16);
        assert_eq!(offset_of!(UserPage, nr_slots), 24);
        assert_eq!(offset_of!(UserPage, size), 28);
        assert_eq!(offset_of!(UserPage, tsc), 32);
        assert_eq!(offset_of!(UserPage, slots), 64);
        assert_eq!(offset_of!(UserPage, interrupts), 576);
        assert_eq!(offset_of!(UserPage, tsc_offset), 584);
        assert_eq!(offset_of!(UserPage, tsc_mask), 592);
        assert_eq!(size_of::<PageSlot>(), 32);
        assert_eq!(offset_of!(PageSlot, index), 0);
        assert_eq!(offset_of!(PageSlot, width), 4);
        assert_eq!(offset_of!(PageSlot, base), 8);
        assert_eq!(offset_of!(PageSlot, start), 16);
        assert_eq!(offset_of!(PageSlot, mask), 24);
        assert_eq!(MAGIC.to_le_bytes(), *b"BMVC");
        let page = UserPage::new();
        assert!(page.is_valid());
        assert_eq!(page.size, 600);
        assert_eq!(read(&page, 0, |_| 0), None, "no slots yet");
        assert_eq!(read_tsc(&page, || 99), Some(0), "not running: the base");
    }

    /// A counter slot the page cannot give while the task runs (index 0: not readable with
    /// RDPMC, or its counts lost) is not its stale `base`: the reader is sent to the kernel.
    /// Switched out, `base` is the value.
    #[test]
    fn an_unreadable_counter_of_a_running_task_is_not_read_from_its_base() {
        let mut vc = VirtualCounters::new();
        vc.configure(&[(Counter::Gp(0), 48), (Counter::Gp(1), 48)])
            .unwrap();
        vc.resume(&[100, 200], 1_000).unwrap();
        vc.suspend(&[150, 260], 1_100).unwrap();
        let mut page = UserPage::new();
        page.publish(&vc, |_| None);
        assert_eq!(read(&page, 0, |_| 0), Some(50), "switched out: the base");
        assert_eq!(read(&page, 1, |_| 0), Some(60));
        vc.resume(&[150, 260], 2_000).unwrap();
        // GP 1 readable with RDPMC, GP 0 not.
        page.publish(&vc, |c| (c == Counter::Gp(1)).then_some(1));
        assert_eq!(
            read_with(&page, PageCounter::Slot(0), |_| 999, READ_RETRIES),
            Err(ReadError::NotOnPage)
        );
        assert_eq!(read(&page, 1, |_| 300), Some(100));
        assert_eq!(read_tsc(&page, || 2_010), Some(110));
    }

    /// The retry-free read gives what the kernel's accounting gives, running or stopped, and a
    /// reader interrupted between its load and its RDTSC (others run meanwhile) gets the exact
    /// value only with the fix-up.
    #[test]
    fn the_region_resumes_inside_its_window_at_its_abort_path() {
        let w = (0x40_1000, 0x40_1400);
        assert_eq!(fix_up_region(0x40_1000, w, 0x40_2000), Some(0x40_2000));
        assert_eq!(fix_up_region(0x40_1400, w, 0x40_2000), Some(0x40_2000));
        assert_eq!(fix_up_region(0x40_0fff, w, 0x40_2000), None);
        assert_eq!(fix_up_region(0x40_1401, w, 0x40_2000), None);
        // No window registered: nothing moves, whatever RIP is.
        for rip in [0, 0x40_1000, u64::MAX - 1, u64::MAX] {
            assert_eq!(
                fix_up_region(rip, (u64::MAX, u64::MAX), 0x40_2000),
                None,
                "{rip:#x}"
            );
        }
    }

    #[test]
    fn retry_free_read_with_fix_up() {
        let mut vc = VirtualCounters::new();
        vc.configure(&[]).unwrap();
        let mut page = UserPage::new();
        vc.resume(&[], 1_000).unwrap();
        page.publish(&vc, |_| None);
        assert_eq!(page.tsc_mask, u64::MAX);
        assert_eq!(read_tsc_exact(&page, page.tsc_offset, 1_250), 250);
        // Interrupted after loading the offset: 100 ticks of its own, then 5000 of others.
        let loaded = page.tsc_offset;
        vc.suspend(&[], 1_350).unwrap();
        page.publish(&vc, |_| None);
        vc.resume(&[], 6_350).unwrap();
        page.publish(&vc, |_| None);
        let window = (0x40_1000, 0x40_1004);
        // Without the fix-up the other tasks' 5000 ticks would be counted.
        assert_eq!(read_tsc_exact(&page, loaded, 6_360), 5_360);
        let fixed = fix_up_offset(0x40_1004, window, loaded, &page);
        assert_eq!(read_tsc_exact(&page, fixed, 6_360), 360);
        assert_eq!(
            fix_up_offset(0x40_1000, window, loaded, &page),
            page.tsc_offset
        );
        // Outside the window the register is the task's own business.
        assert_eq!(fix_up_offset(0x40_0fff, window, 7, &page), 7);
        assert_eq!(fix_up_offset(0x40_1005, window, 7, &page), 7);
        assert_eq!(fix_up_offset(0, (u64::MAX, u64::MAX), 7, &page), 7);
        // Stopped: the frozen value whatever RDTSC says.
        vc.suspend(&[], 6_400).unwrap();
        page.publish(&vc, |_| None);
        assert_eq!(page.tsc_mask, 0);
        assert_eq!(read_tsc_exact(&page, page.tsc_offset, 99_999), 400);
        assert_eq!(vc.values().tsc, 400);
    }

    fn write_words(bytes: &mut [u8], at: usize, words: &[u64]) {
        assert_eq!(at % 8, 0);
        for (k, w) in words.iter().enumerate() {
            bytes[at + 8 * k..at + 8 * k + 8].copy_from_slice(&w.to_le_bytes());
        }
    }

    /// The switch-in words, written over the bytes of the switched-out page, give the bytes of
    /// the switched-in page.
    #[test]
    fn changing_words_complete_the_page() {
        let mut vc = VirtualCounters::new();
        vc.configure(&[(Counter::Gp(0), 48), (Counter::Gp(1), 48)])
            .unwrap();
        let mut page = UserPage::new();
        page.interrupts = 3;
        page.publish(&vc, ecx_of);
        let mut bytes = page.to_bytes();
        vc.resume(&[10, 20], 1_000).unwrap();
        page.interrupts = 4;
        page.publish(&vc, ecx_of);
        page.changing_words(|at, words| write_words(&mut bytes, at, words));
        assert_eq!(bytes, page.to_bytes());
        // And out again, stopped.
        vc.suspend(&[15, 29], 1_400).unwrap();
        page.interrupts = 5;
        page.publish(&vc, ecx_of);
        page.changing_words(|at, words| write_words(&mut bytes, at, words));
        assert_eq!(bytes, page.to_bytes());
        assert_eq!(offset_of!(UserPage, seq), SEQ_AT);
        assert_eq!(offset_of!(UserPage, interrupts), TAIL_AT);
    }

    #[test]
    fn to_bytes_follows_the_layout() {
        let mut page = UserPage::new();
        page.seq = 0x0102_0304_0506_0708;
        page.generation = 9;
        page.nr_slots = 2;
        page.tsc = PageSlot {
            index: 1,
            width: 64,
            base: 0x1111,
            start: 0x2222,
            mask: u64::MAX,
        };
        page.slots[15].base = 0x3333;
        let b = page.to_bytes();
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        assert_eq!(u32_at(offset_of!(UserPage, magic)), MAGIC);
        assert_eq!(u32_at(offset_of!(UserPage, version)), VERSION);
        assert_eq!(u64_at(offset_of!(UserPage, seq)), page.seq);
        assert_eq!(u64_at(offset_of!(UserPage, generation)), 9);
        assert_eq!(u32_at(offset_of!(UserPage, nr_slots)), 2);
        assert_eq!(u32_at(offset_of!(UserPage, size)), 600);
        let tsc = offset_of!(UserPage, tsc);
        assert_eq!(u32_at(tsc + offset_of!(PageSlot, index)), 1);
        assert_eq!(u32_at(tsc + offset_of!(PageSlot, width)), 64);
        assert_eq!(u64_at(tsc + offset_of!(PageSlot, base)), 0x1111);
        assert_eq!(u64_at(tsc + offset_of!(PageSlot, start)), 0x2222);
        let last = offset_of!(UserPage, slots) + 15 * size_of::<PageSlot>();
        assert_eq!(u64_at(last + offset_of!(PageSlot, base)), 0x3333);
    }

    #[test]
    fn seq_is_odd_during_an_update_and_advances_by_two() {
        let mut page = UserPage::new();
        page.begin_update();
        assert_eq!(page.seq, 1);
        page.begin_update();
        assert_eq!(page.seq, 1, "stays odd");
        page.end_update();
        assert_eq!(page.seq, 2);
        page.end_update();
        assert_eq!(page.seq, 4, "without begin: still changes, still even");
        page.seq = u64::MAX - 1;
        page.publish(&VirtualCounters::new(), ecx_of);
        assert_eq!(page.seq, 0, "wraps to an even value");
    }

    /// The state of a task, built through its operations.
    fn running_task(
        widths: &[u8],
        starts: &[u64],
        samples: &[u64],
        tsc0: u64,
    ) -> (VirtualCounters, Vec<u64>) {
        let config: Vec<(Counter, u8)> = widths
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let c = if i % 2 == 0 {
                    Counter::Gp(i as u8)
                } else {
                    Counter::Fixed(i as u8)
                };
                (c, w)
            })
            .collect();
        let mut vc = VirtualCounters::new();
        vc.configure(&config).unwrap();
        let mut raw: Vec<u64> = starts.iter().zip(widths).map(|(&s, &w)| s & m(w)).collect();
        vc.resume(&raw, tsc0).unwrap();
        // A few samples: the sums grow by arbitrary amounts below 2^width each time.
        for (k, &d) in samples.iter().enumerate() {
            for (r, &w) in raw.iter_mut().zip(widths) {
                *r = r.wrapping_add(d.rotate_left(k as u32 * 7)) & m(w);
            }
            vc.sample(&raw, tsc0.wrapping_add(d)).unwrap();
        }
        (vc, raw)
    }

    fn rdpmc_from(vc: &VirtualCounters, raw: &[u64]) -> impl Fn(u32) -> u64 + use<> {
        let map: Vec<(u32, u64)> = vc
            .slots()
            .iter()
            .zip(raw)
            .map(|(s, &r)| (ecx_of(s.counter).unwrap(), r))
            .collect();
        move |ecx| {
            map.iter()
                .find(|(e, _)| *e == ecx)
                .map(|&(_, r)| r)
                .unwrap_or(0)
        }
    }

    fn width() -> impl Strategy<Value = u8> {
        prop_oneof![Just(32u8), Just(40), Just(48), Just(64), 1u8..=64]
    }

    /// A raw starting value: anything, or just below the wrap.
    fn start_for(w: u8) -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            (0u64..64).prop_map(move |d| m(w).wrapping_sub(d) & m(w))
        ]
    }

    proptest! {
        /// The page reader gives exactly `read_running`, at every width, for random states and
        /// random progress since the last update, wraps of the raw counter included.
        #[test]
        fn reader_equals_read_running(
            (widths, starts) in prop::collection::vec(width(), 1..=MAX_SLOTS)
                .prop_flat_map(|ws| {
                    let starts: Vec<_> = ws.iter().map(|&w| start_for(w)).collect();
                    (Just(ws), starts)
                }),
            samples in prop::collection::vec(any::<u64>(), 0..4),
            deltas in prop::collection::vec(prop_oneof![0u64..100, any::<u64>()], MAX_SLOTS),
            tsc0 in any::<u64>(),
            tsc_delta in any::<u64>(),
        ) {
            let (vc, mut raw) = running_task(&widths, &starts, &samples, tsc0);
            let mut page = UserPage::new();
            page.publish(&vc, ecx_of);
            prop_assert_eq!(page.generation, vc.generation());
            // The counters go on counting (each less than 2^width events: see widen).
            for ((r, &w), &d) in raw.iter_mut().zip(&widths).zip(&deltas) {
                *r = r.wrapping_add(d & m(w)) & m(w);
            }
            let tsc_now = vc.tsc().start.wrapping_add(tsc_delta);
            let expected = vc.read_running(&raw, tsc_now).unwrap();
            let rdpmc = rdpmc_from(&vc, &raw);
            for (i, &e) in expected.counters().iter().enumerate() {
                prop_assert_eq!(read(&page, i, &rdpmc), Some(e), "slot {}", i);
                let r = read_with(&page, PageCounter::Slot(i), &rdpmc, 1).unwrap();
                prop_assert_eq!(r.generation, vc.generation());
            }
            prop_assert_eq!(read(&page, widths.len(), &rdpmc), None);
            prop_assert_eq!(read_tsc(&page, || tsc_now), Some(expected.tsc));

            // Switched out: index 0, the reader gets the values folded in by suspend and never
            // touches the hardware.
            let mut vc = vc;
            vc.suspend(&raw, tsc_now).unwrap();
            page.publish(&vc, ecx_of);
            for (i, &e) in expected.counters().iter().enumerate() {
                prop_assert_eq!(page.slots[i].index, 0);
                prop_assert_eq!(read(&page, i, |_| u64::MAX), Some(e));
            }
            prop_assert_eq!(read_tsc(&page, || 12345), Some(expected.tsc));
        }
    }

    #[test]
    fn just_after_a_wrap() {
        for w in [32u8, 40, 48, 64] {
            let (vc, _) = running_task(&[w], &[m(w) - 2], &[], 0);
            let mut page = UserPage::new();
            page.publish(&vc, ecx_of);
            assert_eq!(page.slots[0].start, m(w) - 2);
            // Three events: the counter reads 0; ten: 7.
            assert_eq!(read(&page, 0, |_| 0), Some(3), "width {w}");
            assert_eq!(read(&page, 0, |_| 7), Some(10), "width {w}");
            assert_eq!(vc.read_running(&[7], 0).unwrap().get(0), Some(10));
            // Across the sign boundary too.
            let (vc, _) = running_task(&[w], &[m(w) >> 1], &[], 0);
            page.publish(&vc, ecx_of);
            assert_eq!(read(&page, 0, |_| (m(w) >> 1) + 1), Some(1), "width {w}");
        }
    }

    /// What perf's reader would compute: `offset + sext(raw)` with `offset = sum - sext(start)`.
    fn perf_value(sum: u64, start: u64, raw: u64, w: u8) -> u64 {
        let sext = |x: u64| (((x << (64 - u32::from(w))) as i64) >> (64 - u32::from(w))) as u64;
        sum.wrapping_sub(sext(start)).wrapping_add(sext(raw))
    }

    #[test]
    fn perf_sign_extension_is_short_by_2_pow_width_across_the_sign_boundary() {
        let w = 40u8;
        let sum = 1_000_000u64;
        // Across the wrap (-1 -> 0 sign-extended): perf's formula is right.
        assert_eq!(perf_value(sum, m(w) - 2, 7, w), sum + 10);
        // Across 2^(w-1) - 1 -> 2^(w-1): short by 2^w.
        let start = (1u64 << (w - 1)) - 5;
        let raw = (1u64 << (w - 1)) + 5;
        assert_eq!(
            perf_value(sum, start, raw, w),
            sum.wrapping_add(10).wrapping_sub(1 << w)
        );
        // The page's base + widen(start, raw) is right in both cases.
        let (mut vc, _) = running_task(&[w], &[start], &[], 0);
        vc.sample(&[start], 0).unwrap();
        let mut page = UserPage::new();
        page.publish(&vc, ecx_of);
        assert_eq!(read(&page, 0, |_| raw), Some(10));
    }

    #[test]
    fn index_zero_of_a_running_task_sends_the_reader_to_the_kernel() {
        let (mut vc, raw) = running_task(&[48, 48], &[100, 200], &[], 0);
        let later: Vec<u64> = raw.iter().map(|r| r + 50).collect();
        vc.sample(&later, 10).unwrap();
        let mut page = UserPage::new();
        // Counter 1 is not readable with RDPMC (e.g. CR4.PCE clear for it, or no such index).
        page.publish(&vc, |c| (c == Counter::Gp(0)).then_some(0));
        assert_eq!(page.slots[0].index, 1);
        assert_eq!(page.slots[1].index, 0);
        let called = Cell::new(0u32);
        let rdpmc = |ecx: u32| {
            called.set(called.get() + 1);
            assert_eq!(ecx, 0);
            100 + 50 + 7
        };
        assert_eq!(read(&page, 0, rdpmc), Some(57));
        assert_eq!(called.get(), 1);
        // The task runs: the value as of the last update would miss the events since then.
        assert_eq!(
            read_with(&page, PageCounter::Slot(1), rdpmc, READ_RETRIES),
            Err(ReadError::NotOnPage),
        );
        assert_eq!(called.get(), 1, "no RDPMC for index 0");
        // An ECX of u32::MAX cannot be published (index would overflow): 0.
        page.publish(&vc, |_| Some(u32::MAX));
        assert_eq!(page.slots[0].index, 0);
    }

    #[test]
    fn an_odd_seq_is_retried_and_a_page_that_never_settles_gives_up() {
        let (vc, raw) = running_task(&[48], &[1000], &[], 0);
        let mut page = UserPage::new();
        page.publish(&vc, ecx_of);
        page.begin_update();
        assert_eq!(read(&page, 0, |_| raw[0] + 1), None, "odd forever");
        assert_eq!(
            read_with(&page, PageCounter::Slot(0), |_| 0, 3),
            Err(ReadError::Unstable)
        );
        assert_eq!(read_tsc(&page, || 0), None);
        page.end_update();
        assert_eq!(read(&page, 0, |_| raw[0] + 1), Some(1));
    }

    /// A page the "kernel" replaces after the reader's `switch_at`-th access (loads and RDPMC /
    /// RDTSC), as when the reader is interrupted there; the clock is shared with the hardware.
    struct Interrupted<'a> {
        before: UserPage,
        after: UserPage,
        clock: &'a Cell<u32>,
        switch_at: u32,
    }

    impl Interrupted<'_> {
        fn tick(&self) -> bool {
            let t = self.clock.get();
            self.clock.set(t + 1);
            t < self.switch_at
        }
        fn page(&self) -> &UserPage {
            if self.tick() {
                &self.before
            } else {
                &self.after
            }
        }
    }

    impl PageSource for Interrupted<'_> {
        fn load_seq(&self) -> u64 {
            self.page().seq
        }
        fn load_generation(&self) -> u64 {
            self.page().generation
        }
        fn load_nr_slots(&self) -> u32 {
            self.page().nr_slots
        }
        fn load_slot(&self, which: PageCounter) -> Option<PageSlot> {
            self.page().load_slot(which)
        }
    }

    /// For every point at which the reader can be interrupted, with the kernel sampling or
    /// switching the task out and back in (another task counting meanwhile) there: the result is
    /// the value at the time of a consistent read, never a mix (which would count the other
    /// task's events, or lose the task's own).
    #[test]
    fn a_read_torn_by_an_interrupt_is_detected_and_retried() {
        for w in [32u8, 40, 48, 64] {
            for switch_out in [false, true] {
                let (mut vc, raw) = running_task(&[w, 48], &[m(w) - 20, 5], &[], 1000);
                let mut page = UserPage::new();
                page.publish(&vc, ecx_of);
                let before = page;
                // Until the interrupt the counters read `rb` (30 own events, across the wrap).
                let rb: Vec<u64> = raw.iter().map(|r| r.wrapping_add(30) & m(w)).collect();
                let tsc_b = 1100;
                let value_before = vc.read_running(&rb, tsc_b).unwrap();
                // The interrupt.
                let ra: Vec<u64>;
                let tsc_a;
                if switch_out {
                    vc.suspend(&rb, tsc_b).unwrap();
                    page.publish(&vc, ecx_of);
                    // Another task counts a lot; the task comes back.
                    let back: Vec<u64> =
                        rb.iter().map(|r| r.wrapping_add(1 << 31) & m(w)).collect();
                    vc.resume(&back, 5000).unwrap();
                    page.publish(&vc, ecx_of);
                    ra = back.iter().map(|r| r.wrapping_add(4) & m(w)).collect();
                    tsc_a = 5040;
                } else {
                    vc.sample(&rb, tsc_b).unwrap();
                    page.publish(&vc, ecx_of);
                    ra = rb.iter().map(|r| r.wrapping_add(4) & m(w)).collect();
                    tsc_a = 1140;
                }
                let value_after = vc.read_running(&ra, tsc_a).unwrap();
                assert_eq!(value_after.get(0), Some(34), "30 before, 4 after");
                assert_eq!(value_after.tsc, 140);
                let after = page;
                assert_ne!(before.seq, after.seq);

                for which in [PageCounter::Slot(0), PageCounter::Slot(1), PageCounter::Tsc] {
                    let expect = |v: &crate::task::vcounter::Values| match which {
                        PageCounter::Slot(i) => v.get(i).unwrap(),
                        PageCounter::Tsc => v.tsc,
                    };
                    let mut accesses_of_one_read = None;
                    for switch_at in 0..16 {
                        let clock = Cell::new(0);
                        let src = Interrupted {
                            before,
                            after,
                            clock: &clock,
                            switch_at,
                        };
                        let hw = |ecx: u32| {
                            let t = clock.get();
                            clock.set(t + 1);
                            let (r, tsc) = if t < switch_at {
                                (&rb, tsc_b)
                            } else {
                                (&ra, tsc_a)
                            };
                            match which {
                                PageCounter::Tsc => tsc,
                                _ => rdpmc_from(&vc, r)(ecx),
                            }
                        };
                        let got = read_with(&src, which, hw, 4).unwrap().value;
                        let one = *accesses_of_one_read.get_or_insert_with(|| {
                            // switch_at 0: the first attempt already sees `after` only.
                            clock.get()
                        });
                        let want = if switch_at >= one {
                            expect(&value_before)
                        } else {
                            expect(&value_after)
                        };
                        assert_eq!(
                            got, want,
                            "width {w}, switch_out {switch_out}, {which:?}, interrupted after \
                             access {switch_at}"
                        );
                    }
                }
            }
        }
    }

    /// End to end on the simulated Intel PMU: the page of a task running on a GP and a fixed
    /// counter, read with the simulated RDPMC, follows the task across a switch during which
    /// another task counts.
    #[test]
    fn reads_through_the_simulated_rdpmc() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        pmu.reset(&mut sim).unwrap();
        let (gp, fixed) = (Counter::Gp(2), Counter::Fixed(1));
        pmu.program(
            &mut sim,
            gp,
            &EventSelect::new(0xc0, 0),
            &Modifiers::default(),
        )
        .unwrap();
        pmu.program(
            &mut sim,
            fixed,
            &EventSelect::new(0, 2),
            &Modifiers::default(),
        )
        .unwrap();
        pmu.write(&mut sim, gp, m(48) - 3).unwrap();
        let set = CounterSet::one(gp).union(CounterSet::one(fixed));
        pmu.enable(&mut sim, set).unwrap();

        let mut a = VirtualCounters::new();
        a.configure(&[(gp, pmu.width(gp)), (fixed, pmu.width(fixed))])
            .unwrap();
        let mut b = a.inherit();
        let mut page = UserPage::new();
        let read_all = |pmu: &mut IntelArchPmu, sim: &mut SimPmu| -> [u64; 2] {
            [pmu.read(sim, gp).unwrap(), pmu.read(sim, fixed).unwrap()]
        };

        let raw = read_all(&mut pmu, &mut sim);
        a.resume(&raw, 0).unwrap();
        page.publish(&a, |c| pmu.rdpmc_index(c));
        sim.count(gp, 10);
        sim.count(fixed, 20);
        assert_eq!(read(&page, 0, |ecx| sim.rdpmc(ecx).unwrap()), Some(10));
        assert_eq!(read(&page, 1, |ecx| sim.rdpmc(ecx).unwrap()), Some(20));

        let raw = read_all(&mut pmu, &mut sim);
        a.suspend(&raw, 100).unwrap();
        page.publish(&a, |c| pmu.rdpmc_index(c));
        b.resume(&raw, 100).unwrap();
        sim.count(gp, 1_000_000);
        sim.count(fixed, 1_000_000);
        let raw = read_all(&mut pmu, &mut sim);
        b.suspend(&raw, 200).unwrap();
        assert_eq!(
            read(&page, 0, |_| 0),
            Some(10),
            "switched out: as of the switch"
        );

        a.resume(&raw, 200).unwrap();
        page.publish(&a, |c| pmu.rdpmc_index(c));
        sim.count(gp, 5);
        sim.count(fixed, 6);
        assert_eq!(read(&page, 0, |ecx| sim.rdpmc(ecx).unwrap()), Some(15));
        assert_eq!(read(&page, 1, |ecx| sim.rdpmc(ecx).unwrap()), Some(26));
        assert_eq!(read_tsc(&page, || 250), Some(150));
        let raw = read_all(&mut pmu, &mut sim);
        assert_eq!(a.read_running(&raw, 250).unwrap().counters(), &[15, 26]);
        assert_eq!(b.values().counters(), &[1_000_000, 1_000_000]);
    }
}

//! Per-task virtual 64-bit counters (the perfctr / IRIX model).
//!
//! A task owns up to [`MAX_SLOTS`] counter slots, each running on one hardware counter while the
//! task is switched in, plus a virtual TSC. For every slot the kernel keeps
//!
//! - `sum`: the task's 64-bit virtual count, folded in at every switch-out and sample;
//! - `start`: the raw counter reading at the last switch-in or sample.
//!
//! While the task runs, its value is `sum + widen(start, now, width)`; while it is switched out,
//! it is `sum + widen(start, held, width)`, where `held` is the raw reading at the switch-out.
//! Events that happen on the counter while the task is switched out (other tasks, the kernel)
//! never reach the task: either the next switch-in records a new `start` (the general protocol
//! below), or it writes `held` back into the counter, which then goes on from where the task
//! left it (the task switch's fast protocol, `task::hwswitch`).
//!
//! # The fast protocol (restore instead of fold)
//!
//! | when                         | call                                    |
//! |------------------------------|-----------------------------------------|
//! | switch-in                    | the counters are set to [`held`](VirtualCounters::held) (or still hold it), then [`VirtualCounters::resume_held`] |
//! | switch-out                   | the raw readings go into [`held_mut`](VirtualCounters::held_mut), then [`VirtualCounters::suspend_held`] |
//! | a counter wrapped in the run | [`VirtualCounters::fold_wrapped`] (after `suspend_held`) |
//! | a counter cannot take `held` | [`VirtualCounters::rebase`] to a value it can take |
//!
//! Nothing is folded at a switch: `sum` and `start` (what the counter page publishes) stay as
//! they are, so a switch rewrites nothing but the counters. The one condition is the one every
//! widening has: a counter must not pass `start` again unnoticed. The switch-out sees every
//! wrap of the raw counter (its overflow status bit, or a reading below `held`) and folds the
//! slot then, so fewer than 2^width events per run in ring 3 is enough (module section
//! "Wrap-around").
//!
//! # The scheduler's protocol
//!
//! | when                         | call                                    |
//! |------------------------------|-----------------------------------------|
//! | task created                 | [`VirtualCounters::new`] (no slots, all zero) |
//! | task asks for counters       | [`VirtualCounters::configure`] (while switched out) |
//! | switch-in, counters started  | [`VirtualCounters::resume`] with the raw readings and RDTSC |
//! | switch-out, before stopping  | [`VirtualCounters::suspend`] with the raw readings and RDTSC |
//! | timer tick / overflow PMI    | [`VirtualCounters::sample`] (folds in, keeps running) |
//! | task reads its counters      | [`VirtualCounters::read_running`] / [`VirtualCounters::values`] |
//! | fork / spawn                 | [`VirtualCounters::inherit`] for the child |
//! | child exits                  | [`VirtualCounters::add_child`] on the parent |
//!
//! Raw readings are passed as a slice with one entry per configured slot, in slot order (the
//! order given to `configure`). Every operation validates its input before changing anything:
//! on an error the state is exactly as before. Nothing here panics.
//!
//! # Wrap-around
//!
//! [`widen`] turns two raw readings of a `width`-bit counter into the number of events between
//! them, modulo 2^width. It is exact as long as fewer than 2^width events happen between two
//! readings of a running counter. The kernel guarantees this by sampling (a timer tick or the
//! counter's overflow PMI) often enough: 2^48 events take hours even at 5 GHz, 2^40 (Intel v1/v2)
//! about 3.7 minutes, 2^32 under a second. While the task is switched out the raw counter may do
//! anything (count for others, be rewritten, wrap many times): its value then is not used.
//!
//! The same applies to the TSC (64 bits: readings are subtracted modulo 2^64).
//!
//! # Generation
//!
//! `generation` changes whenever the counter configuration or the counts are restarted
//! ([`VirtualCounters::configure`], [`VirtualCounters::reset`]), and a child made by
//! [`VirtualCounters::inherit`] gets `parent + 1`, so code that cached a task's counter state
//! (the ring-3 SDK, through the user page) can tell that its cache is stale. Generations are per
//! task: two tasks may have the same one.

use core::fmt;

use crate::pmu::backend::{Counter, CounterSet};

/// At most this many counter slots per task (the virtual TSC is extra): as many as one
/// `counters_configure` request has entries.
pub use crate::pmu::request::MAX_SLOTS;

/// The number of events between two raw readings `prev` and `now` of a `width`-bit counter,
/// modulo 2^width (Linux's widening: with `shift = 64 - width`,
/// `((now << shift) - (prev << shift)) >> shift`). Bits of `prev` and `now` above the width are
/// ignored.
///
/// - `width` 1..=64: as above; 64 gives `now - prev` modulo 2^64 (no shift overflow).
/// - `width` above 64 is treated as 64 (no counter is wider than its 64-bit register).
/// - `width` 0 (a counter that does not exist: [`crate::pmu::backend::PmuBackend::width`]
///   returns 0 for it) counts nothing: the result is 0.
pub fn widen(prev: u64, now: u64, width: u8) -> u64 {
    if width == 0 {
        return 0;
    }
    let shift = 64 - u32::from(width.min(64));
    (now << shift).wrapping_sub(prev << shift) >> shift
}

/// `2^width - 1` (all ones for 64 and above, 0 for 0).
fn mask(width: u8) -> u64 {
    match width {
        0 => 0,
        w if w >= 64 => u64::MAX,
        w => (1u64 << w) - 1,
    }
}

/// Why an operation on [`VirtualCounters`] was refused (nothing was changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcError {
    /// More slots than [`MAX_SLOTS`].
    TooManySlots { requested: usize, max: usize },
    /// A slot width outside 1..=64.
    BadWidth { slot: usize, width: u8 },
    /// Two slots on the same hardware counter (each event would be counted twice).
    DuplicateCounter(Counter),
    /// The readings slice does not have one entry per configured slot.
    Readings { expected: usize, got: usize },
    /// The operation needs the task switched out (configure, reset, a second resume, or a
    /// child that is still switched in for `add_child`).
    Running,
    /// The operation needs the task switched in (suspend, sample).
    NotRunning,
    /// `add_child`: the child's slots are not the parent's (same counters and widths, in the same
    /// order).
    ConfigMismatch,
}

impl fmt::Display for VcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            VcError::TooManySlots { requested, max } => {
                write!(f, "{requested} counter slots requested, at most {max}")
            }
            VcError::BadWidth { slot, width } => {
                write!(f, "slot {slot}: counter width {width} is not in 1..=64")
            }
            VcError::DuplicateCounter(c) => write!(f, "{c} is used by two slots"),
            VcError::Readings { expected, got } => {
                write!(f, "{got} counter readings for {expected} slots")
            }
            VcError::Running => write!(f, "the task's counters are running"),
            VcError::NotRunning => write!(f, "the task's counters are not running"),
            VcError::ConfigMismatch => {
                write!(
                    f,
                    "the child's counter configuration differs from the parent's"
                )
            }
        }
    }
}

/// One counter slot of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The hardware counter the slot runs on while the task is switched in.
    pub counter: Counter,
    /// Its width in bits (1..=64).
    pub width: u8,
    /// The task's 64-bit virtual count, as of the last switch-out or sample.
    pub sum: u64,
    /// The raw counter reading (masked to the width) from which `sum` misses the events: the
    /// last switch-in, sample, fold or rebase.
    pub start: u64,
}

impl Slot {
    const EMPTY: Slot = Slot {
        counter: Counter::Gp(0),
        width: 0,
        sum: 0,
        start: 0,
    };

    /// `sum + widen(start, raw)`.
    fn value_at(&self, raw: u64) -> u64 {
        self.sum.wrapping_add(widen(self.start, raw, self.width))
    }
}

/// The virtual TSC of a task: the sum of the TSC deltas while the task ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VirtualTsc {
    /// As of the last switch-out or sample.
    pub sum: u64,
    /// RDTSC at the last switch-in or sample; meaningful only while the task runs.
    pub start: u64,
}

/// The 64-bit virtual values of a task, at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Values {
    len: u8,
    counters: [u64; MAX_SLOTS],
    /// The virtual TSC.
    pub tsc: u64,
    /// The task's generation when the values were taken.
    pub generation: u64,
}

impl Values {
    /// One value per configured slot, in slot order.
    pub fn counters(&self) -> &[u64] {
        self.counters.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// The value of slot `slot`, if it exists.
    pub fn get(&self, slot: usize) -> Option<u64> {
        self.counters().get(slot).copied()
    }
}

/// The virtual counters of one task. See the module documentation for the protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualCounters {
    /// `slots[..len]` are configured; the rest are [`Slot::EMPTY`].
    slots: [Slot; MAX_SLOTS],
    len: u8,
    /// The raw reading of each slot's counter when the task was last switched out (or its
    /// `start`, after any operation that folds): a switched-out slot's value is
    /// `sum + widen(start, held)`. An array of its own, so the switch's RDPMC list writes it
    /// directly ([`VirtualCounters::held_mut`]).
    held: [u64; MAX_SLOTS],
    tsc: VirtualTsc,
    /// Switched in: `start` values are live.
    running: bool,
    generation: u64,
    /// Bumped by every change of a slot's `sum` or `start` (what the counter page publishes for
    /// the slots), so the runner republishes the page only when it changed.
    published: u64,
}

impl Default for VirtualCounters {
    fn default() -> Self {
        Self::new()
    }
}

impl VirtualCounters {
    /// A new task: no counter slots, virtual TSC 0, switched out, generation 0.
    pub const fn new() -> VirtualCounters {
        VirtualCounters {
            slots: [Slot::EMPTY; MAX_SLOTS],
            len: 0,
            held: [0; MAX_SLOTS],
            tsc: VirtualTsc { sum: 0, start: 0 },
            running: false,
            generation: 0,
            published: 0,
        }
    }

    /// The configured slots, in order.
    pub fn slots(&self) -> &[Slot] {
        self.slots.get(..usize::from(self.len)).unwrap_or(&[])
    }

    fn slots_mut(&mut self) -> &mut [Slot] {
        self.slots
            .get_mut(..usize::from(self.len))
            .unwrap_or(&mut [])
    }

    /// The number of configured slots.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// No counter slots (the virtual TSC still counts).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn tsc(&self) -> VirtualTsc {
        self.tsc
    }

    /// Whether the task is switched in (between `resume` and `suspend`).
    pub fn is_running(&self) -> bool {
        self.running
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Changes whenever a slot's `sum` or `start` changes (module docs: what the counter page
    /// publishes); equal values mean the page's slots are still right.
    pub fn slots_version(&self) -> u64 {
        self.published
    }

    fn slots_changed(&mut self) {
        self.published = self.published.wrapping_add(1);
    }

    /// The raw reading of each slot's counter at the last switch-out, in slot order (the fast
    /// protocol's values to write back at the switch-in).
    pub fn held(&self) -> &[u64] {
        &self.held[..self.len()]
    }

    /// Where the switch-out's readings go (the fast protocol): one per slot, in slot order;
    /// then [`suspend_held`](Self::suspend_held).
    pub fn held_mut(&mut self) -> &mut [u64] {
        let n = self.len();
        &mut self.held[..n]
    }

    /// The hardware counters the slots run on (what the scheduler enables at switch-in and
    /// disables at switch-out).
    pub fn counter_set(&self) -> CounterSet {
        self.slots().iter().fold(CounterSet::EMPTY, |set, s| {
            set.union(CounterSet::one(s.counter))
        })
    }

    /// Replaces the counter configuration: one slot per `(counter, width)` pair, in order, every
    /// count (and the virtual TSC) zero, generation bumped. The task must be switched out (the
    /// scheduler suspends it, configures, reprograms the PMU and resumes it).
    ///
    /// Refused: more than [`MAX_SLOTS`] slots, a width outside 1..=64 (a counter the PMU does not
    /// have has width 0), two slots on one counter.
    pub fn configure(&mut self, slots: &[(Counter, u8)]) -> Result<(), VcError> {
        if self.running {
            return Err(VcError::Running);
        }
        if slots.len() > MAX_SLOTS {
            return Err(VcError::TooManySlots {
                requested: slots.len(),
                max: MAX_SLOTS,
            });
        }
        for (i, &(counter, width)) in slots.iter().enumerate() {
            if width == 0 || width > 64 {
                return Err(VcError::BadWidth { slot: i, width });
            }
            if slots.iter().take(i).any(|&(c, _)| c == counter) {
                return Err(VcError::DuplicateCounter(counter));
            }
        }
        let mut new = [Slot::EMPTY; MAX_SLOTS];
        for (slot, &(counter, width)) in new.iter_mut().zip(slots) {
            *slot = Slot {
                counter,
                width,
                sum: 0,
                start: 0,
            };
        }
        self.slots = new;
        self.held = [0; MAX_SLOTS];
        // At most MAX_SLOTS (16): fits.
        self.len = u8::try_from(slots.len()).unwrap_or(0);
        self.tsc = VirtualTsc::default();
        self.generation = self.generation.wrapping_add(1);
        self.slots_changed();
        Ok(())
    }

    /// Replaces the slots as [`configure`](Self::configure) does (every slot's count zero),
    /// but keeps the virtual TSC and the generation: time-multiplexing loads the next group of
    /// a configuration, whose counts the caller keeps (`task::mux`). The task must be switched
    /// out.
    pub fn regroup(&mut self, slots: &[(Counter, u8)]) -> Result<(), VcError> {
        let (tsc, generation) = (self.tsc, self.generation);
        self.configure(slots)?;
        self.tsc = tsc;
        self.generation = generation;
        Ok(())
    }

    /// Zeroes every count and the virtual TSC, keeping the configuration; bumps the generation.
    /// The task must be switched out (a reset while running would need fresh readings: the
    /// scheduler suspends, resets, resumes).
    pub fn reset(&mut self) -> Result<(), VcError> {
        if self.running {
            return Err(VcError::Running);
        }
        // The counters hold `held`: counting goes on from there.
        let held = self.held;
        for (s, &h) in self.slots_mut().iter_mut().zip(&held) {
            s.sum = 0;
            s.start = h;
        }
        self.tsc = VirtualTsc::default();
        self.generation = self.generation.wrapping_add(1);
        self.slots_changed();
        Ok(())
    }

    fn check_readings(&self, raw: &[u64]) -> Result<(), VcError> {
        if raw.len() == self.len() {
            Ok(())
        } else {
            Err(VcError::Readings {
                expected: self.len(),
                got: raw.len(),
            })
        }
    }

    /// The readings that make [`resume`](Self::resume) and [`suspend`](Self::suspend) leave
    /// every slot as it is (each slot's own `start`): for a task whose slots do not count while
    /// its virtual TSC does (its hardware counts were lost).
    pub fn held_readings(&self) -> alloc::vec::Vec<u64> {
        self.held().to_vec()
    }

    /// Switch-in: the counters now count for this task. `raw` holds the raw reading of every
    /// slot's counter (after programming it, right before or after starting it), `tsc` the TSC.
    pub fn resume(&mut self, raw: &[u64], tsc: u64) -> Result<(), VcError> {
        if self.running {
            return Err(VcError::Running);
        }
        self.check_readings(raw)?;
        // The counters may hold anything now: what the last run left (`held`) is folded in,
        // and counting goes on from `raw`.
        let len = self.len();
        for ((s, &now), h) in self.slots[..len].iter_mut().zip(raw).zip(&mut self.held) {
            s.sum = s.value_at(*h);
            s.start = now & mask(s.width);
            *h = s.start;
        }
        self.tsc.start = tsc;
        self.running = true;
        self.slots_changed();
        Ok(())
    }

    /// Switch-in, fast protocol: every slot's counter holds exactly [`held`](Self::held) (it
    /// was written back, or nobody touched it since the switch-out), so counting goes on from
    /// `start` as it was; `tsc` starts the virtual TSC. Nothing the page publishes changes.
    pub fn resume_held(&mut self, tsc: u64) -> Result<(), VcError> {
        if self.running {
            return Err(VcError::Running);
        }
        self.tsc.start = tsc;
        self.running = true;
        Ok(())
    }

    /// Switch-out, fast protocol: the readings are in [`held_mut`](Self::held_mut) already;
    /// nothing is folded (`sum` and `start` stay), the virtual TSC adds the run up to `tsc`.
    /// Then the caller folds every slot whose counter wrapped during the run
    /// ([`fold_wrapped`](Self::fold_wrapped)).
    pub fn suspend_held(&mut self, tsc: u64) -> Result<(), VcError> {
        if !self.running {
            return Err(VcError::NotRunning);
        }
        self.tsc.sum = self.tsc.sum.wrapping_add(tsc.wrapping_sub(self.tsc.start));
        self.tsc.start = tsc;
        self.running = false;
        Ok(())
    }

    /// Slot `i`'s counter wrapped (passed 2^width - 1 -> 0) once since `start` was last set,
    /// and the task is switched out with the reading in `held`: the events since `start` are
    /// folded into `sum` exactly (a wrap with `held >= start` means a full turn more than
    /// `widen` sees) and `held` becomes the new `start`. Exact when fewer than 2^width events
    /// happened since the last check (one per switch-out).
    pub fn fold_wrapped(&mut self, i: usize) -> Result<(), VcError> {
        if self.running {
            return Err(VcError::Running);
        }
        let Some(&h) = self.held.get(i).filter(|_| i < self.len()) else {
            return Err(VcError::Readings {
                expected: self.len(),
                got: i,
            });
        };
        let s = &mut self.slots[i];
        let h = h & mask(s.width);
        let turn = if h >= s.start {
            mask(s.width).wrapping_add(1)
        } else {
            0
        };
        s.sum = s.value_at(h).wrapping_add(turn);
        s.start = h;
        self.slots_changed();
        Ok(())
    }

    /// Slot `i`'s counter will be set to `raw` instead of `held` (it cannot take `held`, or a
    /// diagnostic presets it): the value so far is folded into `sum`, and `start` and `held`
    /// become `raw`. The task must be switched out.
    pub fn rebase(&mut self, i: usize, raw: u64) -> Result<(), VcError> {
        if self.running {
            return Err(VcError::Running);
        }
        if i >= self.len() {
            return Err(VcError::Readings {
                expected: self.len(),
                got: i,
            });
        }
        let h = self.held[i];
        let s = &mut self.slots[i];
        s.sum = s.value_at(h);
        s.start = raw & mask(s.width);
        self.held[i] = s.start;
        self.slots_changed();
        Ok(())
    }

    /// Moves the running virtual TSC's starting point to `tsc`: [`resume`](Self::resume) is
    /// given a provisional reading, and the run really starts at the TSC the exit assembly
    /// reads right before entering ring 3 (`hw::user`, "The virtual TSC's boundary").
    pub fn restart_tsc(&mut self, tsc: u64) -> Result<(), VcError> {
        if !self.running {
            return Err(VcError::NotRunning);
        }
        self.tsc.start = tsc;
        Ok(())
    }

    /// Folds the events since the last reading into the sums and makes `raw` / `tsc` the new
    /// starting point.
    fn fold(&mut self, raw: &[u64], tsc: u64) {
        let len = self.len();
        for ((s, &now), h) in self.slots[..len].iter_mut().zip(raw).zip(&mut self.held) {
            s.sum = s.sum.wrapping_add(widen(s.start, now, s.width));
            s.start = now & mask(s.width);
            *h = s.start;
        }
        self.tsc.sum = self.tsc.sum.wrapping_add(tsc.wrapping_sub(self.tsc.start));
        self.tsc.start = tsc;
        self.slots_changed();
    }

    /// Switch-out: adds the events since the last switch-in or sample to the sums. `raw` and
    /// `tsc` are read before the counters count for anyone else.
    pub fn suspend(&mut self, raw: &[u64], tsc: u64) -> Result<(), VcError> {
        if !self.running {
            return Err(VcError::NotRunning);
        }
        self.check_readings(raw)?;
        self.fold(raw, tsc);
        self.running = false;
        Ok(())
    }

    /// Folds the events so far into the sums without stopping: `sum += widen(start, now)`,
    /// `start = now`. The kernel calls it often enough that fewer than 2^width events happen
    /// between two readings (module documentation, "Wrap-around").
    pub fn sample(&mut self, raw: &[u64], tsc: u64) -> Result<(), VcError> {
        if !self.running {
            return Err(VcError::NotRunning);
        }
        self.check_readings(raw)?;
        self.fold(raw, tsc);
        Ok(())
    }

    /// Slot `i`'s counter reads `raw` now (running or not; `wrapped`: its overflow status says
    /// it wrapped since `start`): the events up to it are folded into `sum`, as
    /// [`fold_wrapped`](Self::fold_wrapped) and [`sample`](Self::sample) do, and `start` and
    /// `held` become the reading. The slot's value and width, `None` beyond the slots.
    pub fn fold_reading(&mut self, i: usize, raw: u64, wrapped: bool) -> Option<(u64, u8)> {
        let len = self.len();
        let s = self.slots.get_mut(i).filter(|_| i < len)?;
        let h = raw & mask(s.width);
        let turn = if wrapped && h >= s.start {
            mask(s.width).wrapping_add(1)
        } else {
            0
        };
        s.sum = s.value_at(h).wrapping_add(turn);
        s.start = h;
        let (value, width) = (s.sum, s.width);
        self.held[i] = h;
        self.slots_changed();
        Some((value, width))
    }

    /// Slot `i`'s counter is set to `raw` right after [`fold_reading`](Self::fold_reading)
    /// (nothing counted in between): counting goes on from there, the value unchanged.
    pub fn set_start(&mut self, i: usize, raw: u64) {
        let len = self.len();
        if let Some(s) = self.slots.get_mut(i).filter(|_| i < len) {
            s.start = raw & mask(s.width);
            self.held[i] = s.start;
            self.slots_changed();
        }
    }

    /// The running virtual TSC's time up to `tsc` is added and it goes on from there (what
    /// [`suspend_held`](Self::suspend_held) and [`resume_held`](Self::resume_held) at `tsc`
    /// would do together).
    pub fn fold_tsc(&mut self, tsc: u64) -> Result<(), VcError> {
        if !self.running {
            return Err(VcError::NotRunning);
        }
        self.tsc.sum = self.tsc.sum.wrapping_add(tsc.wrapping_sub(self.tsc.start));
        self.tsc.start = tsc;
        Ok(())
    }

    /// Slot `i`'s value as of the last switch-out or sample ([`values`](Self::values) for one
    /// slot, without the copy of them all).
    pub fn value(&self, i: usize) -> Option<u64> {
        let s = self.slots().get(i)?;
        Some(s.value_at(*self.held.get(i)?))
    }

    /// The values as of the last switch-out or sample (while the task runs, the current run
    /// since then is not included: see [`VirtualCounters::read_running`]).
    pub fn values(&self) -> Values {
        let mut counters = [0; MAX_SLOTS];
        for ((v, s), &h) in counters.iter_mut().zip(self.slots()).zip(&self.held) {
            *v = s.value_at(h);
        }
        Values {
            len: self.len,
            counters,
            tsc: self.tsc.sum,
            generation: self.generation,
        }
    }

    /// The values now: while the task runs, `sum + widen(start, raw)` for every slot (and the
    /// same for the TSC), without changing anything; while it is switched out, the sums
    /// (`raw` and `tsc` are then ignored, and may be empty / anything).
    pub fn read_running(&self, raw: &[u64], tsc: u64) -> Result<Values, VcError> {
        let mut values = self.values();
        if !self.running {
            return Ok(values);
        }
        self.check_readings(raw)?;
        for ((v, s), &now) in values.counters.iter_mut().zip(self.slots()).zip(raw) {
            *v = s.value_at(now);
        }
        values.tsc = self.tsc.sum.wrapping_add(tsc.wrapping_sub(self.tsc.start));
        Ok(values)
    }

    /// IRIX: when a child exits, its counts are added to its parent's, slot by slot (and the
    /// virtual TSC). The configurations must match: the same counters with the same widths in
    /// the same order (what [`VirtualCounters::inherit`] gives, unless the child reconfigured).
    /// The child must be switched out. The parent may be running; its generation is unchanged.
    ///
    /// Only counters and widths are compared: this module does not know which event a counter
    /// was programmed with, so a child that reprogrammed the same counter for another event must
    /// be caught by the caller.
    pub fn add_child(&mut self, child: &VirtualCounters) -> Result<(), VcError> {
        if child.running {
            return Err(VcError::Running);
        }
        let same = self.len == child.len
            && self
                .slots()
                .iter()
                .zip(child.slots())
                .all(|(p, c)| p.counter == c.counter && p.width == c.width);
        if !same {
            return Err(VcError::ConfigMismatch);
        }
        let counts = child.values();
        for (p, c) in self.slots_mut().iter_mut().zip(counts.counters()) {
            p.sum = p.sum.wrapping_add(*c);
        }
        self.tsc.sum = self.tsc.sum.wrapping_add(child.tsc.sum);
        self.slots_changed();
        Ok(())
    }

    /// The counters of a new child: the same configuration, every count zero, switched out, and
    /// generation `self.generation + 1` (so a copy of the parent's cached state in the child is
    /// seen as stale).
    pub fn inherit(&self) -> VirtualCounters {
        let mut child = VirtualCounters::new();
        for (c, p) in child.slots.iter_mut().zip(self.slots()) {
            *c = Slot {
                counter: p.counter,
                width: p.width,
                sum: 0,
                start: 0,
            };
        }
        child.len = self.len;
        child.generation = self.generation.wrapping_add(1);
        child
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use events::event::{EventSelect, Modifiers};
    use proptest::prelude::*;

    use super::*;
    use crate::pmu::backend::PmuBackend;
    use crate::pmu::intel::IntelArchPmu;
    use crate::pmu::sim::{IntelConfig, SimPmu};

    const WIDTHS: [u8; 4] = [32, 40, 48, 64];

    fn m(width: u8) -> u64 {
        mask(width)
    }

    // ---- widen ----

    #[test]
    fn widen_without_wrap() {
        for w in WIDTHS {
            assert_eq!(widen(0, 0, w), 0);
            assert_eq!(widen(5, 5, w), 0);
            assert_eq!(widen(100, 350, w), 250);
            assert_eq!(widen(0, m(w), w), m(w), "max delta from 0, width {w}");
        }
    }

    #[test]
    fn widen_across_the_wrap() {
        for w in WIDTHS {
            let top = m(w);
            assert_eq!(widen(top, 0, w), 1, "width {w}");
            assert_eq!(widen(top - 9, 10, w), 20, "width {w}");
            // The largest delta: one event short of a full turn.
            assert_eq!(widen(1, 0, w), top, "width {w}");
            assert_eq!(widen(top, top - 1, w), top, "width {w}");
            // A full turn is indistinguishable from nothing.
            assert_eq!(widen(12345, 12345, w), 0);
        }
        assert_eq!(widen(0xffff_fff0, 0x10, 32), 0x20);
        assert_eq!(widen(0xff_ffff_fff0, 0x10, 40), 0x20);
        assert_eq!(widen(0xffff_ffff_fff0, 0x10, 48), 0x20);
        assert_eq!(widen(u64::MAX - 0xf, 0x10, 64), 0x20);
        // Across the sign boundary (bit width-1): no special case.
        assert_eq!(widen(0x7fff_ffff, 0x8000_0000, 32), 1);
        assert_eq!(widen(0x7fff_ffff_ffff, 0x8000_0000_0000, 48), 1);
        assert_eq!(widen(i64::MAX as u64, 1 << 63, 64), 1);
    }

    #[test]
    fn widen_ignores_bits_above_the_width_and_odd_widths() {
        assert_eq!(widen(0xdead_0000_0000_0005, 0xbeef_0000_0000_0007, 32), 2);
        assert_eq!(widen(0xffff_0000_0000_0000, 3, 48), 3);
        assert_eq!(widen(0, 7, 0), 0, "width 0 counts nothing");
        assert_eq!(widen(u64::MAX, 0, 200), 1, "above 64 is 64");
        assert_eq!(widen(u64::MAX, 0, 255), 1);
        assert_eq!(widen(1, 0, 1), 1);
        assert_eq!(widen(0, 1, 1), 1);
        assert_eq!(widen(1, 1, 1), 0);
        assert_eq!(widen(0, u64::MAX, 63), (1 << 63) - 1);
    }

    proptest! {
        #[test]
        fn widen_matches_the_reference(prev in any::<u64>(), delta in any::<u64>(), w in 1u8..=64) {
            let now = prev.wrapping_add(delta) & m(w);
            prop_assert_eq!(widen(prev & m(w), now, w), delta & m(w));
            // Garbage above the width changes nothing.
            prop_assert_eq!(widen(prev, now | !m(w), w), delta & m(w));
        }
    }

    // ---- operations ----

    #[test]
    fn a_new_task_starts_at_zero() {
        let vc = VirtualCounters::new();
        assert!(vc.is_empty() && !vc.is_running());
        assert_eq!(vc.generation(), 0);
        let v = vc.values();
        assert_eq!(v.counters(), &[] as &[u64]);
        assert_eq!(v.tsc, 0);
        assert_eq!(vc, VirtualCounters::default());
    }

    #[test]
    fn configure_validates_and_bumps_the_generation() {
        let mut vc = VirtualCounters::new();
        let too_many: Vec<(Counter, u8)> = (0..17u8).map(|i| (Counter::Gp(i), 48)).collect();
        assert_eq!(
            vc.configure(&too_many),
            Err(VcError::TooManySlots {
                requested: 17,
                max: 16
            })
        );
        assert_eq!(
            vc.configure(&[(Counter::Gp(0), 48), (Counter::Gp(1), 0)]),
            Err(VcError::BadWidth { slot: 1, width: 0 })
        );
        assert_eq!(
            vc.configure(&[(Counter::Gp(0), 65)]),
            Err(VcError::BadWidth { slot: 0, width: 65 })
        );
        assert_eq!(
            vc.configure(&[(Counter::Fixed(1), 48), (Counter::Fixed(1), 48)]),
            Err(VcError::DuplicateCounter(Counter::Fixed(1)))
        );
        assert_eq!(vc, VirtualCounters::new(), "refusals change nothing");
        vc.configure(&too_many[..16]).unwrap();
        assert_eq!(vc.len(), 16);
        assert_eq!(vc.generation(), 1);
        vc.configure(&[(Counter::Gp(0), 48), (Counter::Fixed(0), 48)])
            .unwrap();
        assert_eq!(vc.generation(), 2);
        assert_eq!(
            vc.counter_set(),
            CounterSet { gp: 1, fixed: 1 },
            "the scheduler's enable mask"
        );
        vc.resume(&[0, 0], 0).unwrap();
        assert_eq!(vc.configure(&[]), Err(VcError::Running));
        assert_eq!(vc.reset(), Err(VcError::Running));
    }

    #[test]
    fn regroup_keeps_the_virtual_tsc_and_generation() {
        let mut vc = VirtualCounters::new();
        vc.configure(&[(Counter::Gp(0), 48)]).unwrap();
        vc.resume(&[100], 1000).unwrap();
        vc.suspend(&[150], 1600).unwrap();
        assert_eq!(vc.values().get(0), Some(50));
        vc.regroup(&[(Counter::Gp(0), 48), (Counter::Gp(1), 48)])
            .unwrap();
        assert_eq!(vc.generation(), 1);
        assert_eq!(vc.values().tsc, 600);
        assert_eq!(vc.values().counters(), &[0, 0]);
        vc.resume(&[7, 9], 2000).unwrap();
        assert_eq!(vc.regroup(&[]), Err(VcError::Running));
    }

    #[test]
    fn operations_check_state_and_lengths_without_changing_anything() {
        let mut vc = VirtualCounters::new();
        vc.configure(&[(Counter::Gp(0), 48), (Counter::Gp(1), 48)])
            .unwrap();
        let before = vc.clone();
        assert_eq!(vc.suspend(&[0, 0], 0), Err(VcError::NotRunning));
        assert_eq!(vc.sample(&[0, 0], 0), Err(VcError::NotRunning));
        assert_eq!(
            vc.resume(&[1], 0),
            Err(VcError::Readings {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(vc, before);
        vc.resume(&[10, 20], 100).unwrap();
        let before = vc.clone();
        assert_eq!(vc.resume(&[10, 20], 100), Err(VcError::Running));
        assert_eq!(
            vc.sample(&[1, 2, 3], 0),
            Err(VcError::Readings {
                expected: 2,
                got: 3
            })
        );
        assert_eq!(
            vc.suspend(&[], 0),
            Err(VcError::Readings {
                expected: 2,
                got: 0
            })
        );
        assert!(vc.read_running(&[1], 0).is_err());
        assert_eq!(vc, before);
    }

    #[test]
    fn resume_sample_suspend_read() {
        let mut vc = VirtualCounters::new();
        vc.configure(&[(Counter::Gp(0), 48), (Counter::Fixed(1), 40)])
            .unwrap();
        vc.resume(&[1000, m(40) - 4], 50).unwrap();
        let now = vc.read_running(&[1500, 5], 80).unwrap();
        assert_eq!(now.counters(), &[500, 10]);
        assert_eq!(now.tsc, 30);
        assert_eq!(vc.values().counters(), &[0, 0], "nothing folded yet");
        vc.sample(&[1500, 5], 80).unwrap();
        assert_eq!(vc.values().counters(), &[500, 10]);
        assert_eq!(vc.values().tsc, 30);
        vc.suspend(&[1600, 6], 100).unwrap();
        assert_eq!(vc.values().counters(), &[600, 11]);
        assert_eq!(vc.values().tsc, 50);
        // Switched out: the readings are ignored.
        assert_eq!(vc.read_running(&[], 0).unwrap(), vc.values());
        // Others count meanwhile; back in at a different point.
        vc.resume(&[9_000_000, 0], 10_000).unwrap();
        vc.suspend(&[9_000_001, 2], 10_005).unwrap();
        assert_eq!(vc.values().counters(), &[601, 13]);
        assert_eq!(vc.values().tsc, 55);
        let g = vc.generation();
        vc.reset().unwrap();
        assert_eq!(vc.values().counters(), &[0, 0]);
        assert_eq!(vc.values().tsc, 0);
        assert_eq!(vc.generation(), g + 1);
        assert_eq!(vc.len(), 2, "configuration kept");
    }

    #[test]
    fn a_task_without_slots_still_has_a_virtual_tsc() {
        let mut vc = VirtualCounters::new();
        vc.resume(&[], u64::MAX - 5).unwrap();
        assert_eq!(vc.read_running(&[], 4).unwrap().tsc, 10);
        vc.suspend(&[], 4).unwrap();
        assert_eq!(vc.values().tsc, 10);
    }

    #[test]
    fn inherit_and_add_child() {
        let mut parent = VirtualCounters::new();
        parent
            .configure(&[(Counter::Gp(0), 48), (Counter::Gp(1), 48)])
            .unwrap();
        parent.resume(&[0, 0], 0).unwrap();
        parent.sample(&[7, 9], 100).unwrap();
        let mut child = parent.inherit();
        assert_eq!(child.values().counters(), &[0, 0]);
        assert_eq!(child.values().tsc, 0);
        assert!(!child.is_running());
        assert_eq!(child.generation(), parent.generation() + 1);
        assert_eq!(child.slots()[0].counter, Counter::Gp(0));

        child.resume(&[100, 200], 1000).unwrap();
        assert_eq!(parent.add_child(&child), Err(VcError::Running));
        child.suspend(&[130, 250], 1040).unwrap();
        // The parent is running: add_child only touches the sums.
        parent.add_child(&child).unwrap();
        assert_eq!(parent.values().counters(), &[37, 59]);
        assert_eq!(parent.values().tsc, 140);
        assert_eq!(
            parent.read_running(&[10, 10], 150).unwrap().counters(),
            &[40, 60]
        );

        let mut other = VirtualCounters::new();
        other.configure(&[(Counter::Gp(0), 48)]).unwrap();
        assert_eq!(parent.add_child(&other), Err(VcError::ConfigMismatch));
        other
            .configure(&[(Counter::Gp(1), 48), (Counter::Gp(0), 48)])
            .unwrap();
        assert_eq!(parent.add_child(&other), Err(VcError::ConfigMismatch));
        other
            .configure(&[(Counter::Gp(0), 48), (Counter::Gp(1), 40)])
            .unwrap();
        assert_eq!(parent.add_child(&other), Err(VcError::ConfigMismatch));
        assert_eq!(parent.values().counters(), &[37, 59]);
    }

    // ---- the reference model ----

    /// What happens next in the model.
    #[derive(Clone, Debug)]
    enum Op {
        /// `k` events on the hardware counter of slot `slot` (masked to the counter's width):
        /// they belong to the running task, or to nobody (the kernel) when none runs.
        Count { slot: usize, k: u64 },
        /// The TSC advances.
        Tick(u64),
        /// Switch to task `to` (the running one, if any, is switched out first); `None`: switch
        /// out to the idle kernel.
        Switch(Option<usize>),
        /// A timer tick: the running task's counters are sampled.
        Sample,
        /// While no task runs, the kernel rewrites a counter.
        Write { slot: usize, value: u64 },
    }

    const TASKS: usize = 2;
    const SLOTS: [(Counter, u8); 4] = [
        (Counter::Gp(0), 32),
        (Counter::Gp(1), 40),
        (Counter::Gp(2), 48),
        (Counter::Fixed(0), 64),
    ];

    fn op() -> impl Strategy<Value = Op> {
        let slot = 0..SLOTS.len();
        prop_oneof![
            4 => (slot.clone(), 0u64..1000).prop_map(|(slot, k)| Op::Count { slot, k }),
            // Masked to the width later: mostly huge, forcing wraps.
            3 => (slot.clone(), any::<u64>()).prop_map(|(slot, k)| Op::Count { slot, k }),
            2 => prop_oneof![0u64..1000, any::<u64>()].prop_map(Op::Tick),
            4 => prop_oneof![Just(None), (0..TASKS).prop_map(Some)].prop_map(Op::Switch),
            1 => Just(Op::Sample),
            1 => (slot, any::<u64>()).prop_map(|(slot, value)| Op::Write { slot, value }),
        ]
    }

    /// The model: the hardware (raw counters, TSC), the tasks, and for every task the exact
    /// count of its own events in 128 bits.
    struct Model {
        raw: [u64; 4],
        tsc: u64,
        tasks: [VirtualCounters; TASKS],
        running: Option<usize>,
        own: [[u128; 4]; TASKS],
        own_tsc: [u128; TASKS],
        /// Events (TSC ticks) since the running task's last reading: the kernel samples before
        /// they could reach 2^width (as the overflow PMI or a tick would).
        pending: [u128; 4],
        pending_tsc: u128,
        switches: usize,
    }

    impl Model {
        fn new(raw: [u64; 4], tsc: u64) -> Model {
            let mut task = VirtualCounters::new();
            task.configure(&SLOTS).unwrap();
            Model {
                raw: core::array::from_fn(|i| raw[i] & m(SLOTS[i].1)),
                tsc,
                tasks: [task.clone(), task.inherit()],
                running: None,
                own: [[0; 4]; TASKS],
                own_tsc: [0; TASKS],
                pending: [0; 4],
                pending_tsc: 0,
                switches: 0,
            }
        }

        fn sample(&mut self) {
            if let Some(t) = self.running {
                self.tasks[t].sample(&self.raw, self.tsc).unwrap();
                self.pending = [0; 4];
                self.pending_tsc = 0;
            }
        }

        fn apply(&mut self, op: &Op) {
            match *op {
                Op::Count { slot, k } => {
                    let width = SLOTS[slot].1;
                    let k = k & m(width);
                    if let Some(t) = self.running {
                        if self.pending[slot] + u128::from(k) > u128::from(m(width)) {
                            self.sample();
                        }
                        self.pending[slot] += u128::from(k);
                        self.own[t][slot] += u128::from(k);
                    }
                    self.raw[slot] = self.raw[slot].wrapping_add(k) & m(width);
                }
                Op::Tick(t) => {
                    if let Some(task) = self.running {
                        if self.pending_tsc + u128::from(t) > u128::from(u64::MAX) {
                            self.sample();
                        }
                        self.pending_tsc += u128::from(t);
                        self.own_tsc[task] += u128::from(t);
                    }
                    self.tsc = self.tsc.wrapping_add(t);
                }
                Op::Switch(to) => {
                    if let Some(t) = self.running.take() {
                        self.tasks[t].suspend(&self.raw, self.tsc).unwrap();
                    }
                    if let Some(t) = to {
                        self.tasks[t].resume(&self.raw, self.tsc).unwrap();
                        self.running = Some(t);
                        self.pending = [0; 4];
                        self.pending_tsc = 0;
                    }
                    self.switches += 1;
                }
                Op::Sample => self.sample(),
                Op::Write { slot, value } => {
                    if self.running.is_none() {
                        self.raw[slot] = value & m(SLOTS[slot].1);
                    }
                }
            }
        }

        fn check(&self) -> Result<(), TestCaseError> {
            for t in 0..TASKS {
                let task = &self.tasks[t];
                prop_assert_eq!(task.is_running(), self.running == Some(t));
                let v = task.read_running(&self.raw, self.tsc).unwrap();
                for (s, &value) in v.counters().iter().enumerate() {
                    prop_assert_eq!(value, self.own[t][s] as u64, "task {} slot {}", t, s);
                }
                prop_assert_eq!(v.tsc, self.own_tsc[t] as u64, "task {} tsc", t);
                if self.running != Some(t) {
                    prop_assert_eq!(v, task.values());
                }
            }
            Ok(())
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        /// Two tasks time-share four counters of widths 32, 40, 48 and 64 (and the TSC) through
        /// thousands of switches; the kernel and rewrites happen in between. Every task's
        /// virtual values always equal its own events exactly (mod 2^64).
        #[test]
        fn virtual_counters_match_the_reference_model(
            raw in any::<[u64; 4]>(),
            tsc in any::<u64>(),
            ops in prop::collection::vec(op(), 3000..6000),
        ) {
            let mut model = Model::new(raw, tsc);
            model.check()?;
            for op in &ops {
                model.apply(op);
                model.check()?;
            }
            model.apply(&Op::Switch(None));
            model.check()?;
            prop_assert!(model.switches >= 500, "{} switches", model.switches);
        }

        /// The same with few, huge event counts: many counter wraps per run.
        #[test]
        fn virtual_counters_survive_many_wraps(
            raw in any::<[u64; 4]>(),
            ops in prop::collection::vec(
                prop_oneof![
                    3 => (0..SLOTS.len(), any::<u64>()).prop_map(|(slot, k)| Op::Count { slot, k }),
                    1 => (0..TASKS).prop_map(|t| Op::Switch(Some(t))),
                ],
                500..1500,
            ),
        ) {
            let mut model = Model::new(raw, 0);
            for op in &ops {
                model.apply(op);
                model.check()?;
            }
        }
    }

    // ---- end to end, through the Intel backend on the simulated PMU ----

    #[test]
    fn two_tasks_time_share_one_simulated_counter() {
        let mut sim = SimPmu::intel(IntelConfig::V4_SKYLAKE);
        let mut pmu = IntelArchPmu::new(sim.caps());
        pmu.reset(&mut sim).unwrap();
        let c = Counter::Gp(0);
        let width = pmu.width(c);
        assert_eq!(width, 48);
        pmu.program(
            &mut sim,
            c,
            &EventSelect::new(0xc0, 0),
            &Modifiers::default(),
        )
        .unwrap();
        // Start close to the wrap so that both tasks see it.
        pmu.write(&mut sim, c, m(width) - 1000).unwrap();
        pmu.enable(&mut sim, CounterSet::one(c)).unwrap();

        let mut tasks = [VirtualCounters::new(), VirtualCounters::new()];
        for t in &mut tasks {
            t.configure(&[(c, width)]).unwrap();
        }
        let mut own = [0u64; 2];
        let mut tsc = 1u64 << 40;
        let mut kernel_events = 0u64;
        for round in 0..500u64 {
            let t = (round % 2) as usize;
            // The scheduler: switch in (the kernel's own events before the reading are not the
            // task's), count, maybe sample, switch out.
            sim.count(c, 13);
            kernel_events += 13;
            let raw = pmu.read(&mut sim, c).unwrap();
            tasks[t].resume(&[raw], tsc).unwrap();
            let k = 1 + (round * 7919) % 600;
            sim.count(c, k);
            own[t] += k;
            if round % 3 == 0 {
                let raw = pmu.read(&mut sim, c).unwrap();
                tasks[t].sample(&[raw], tsc + 5).unwrap();
                sim.count(c, 2);
                own[t] += 2;
            }
            tsc += 100;
            let raw = pmu.read(&mut sim, c).unwrap();
            assert_eq!(
                tasks[t].read_running(&[raw], tsc).unwrap().get(0),
                Some(own[t])
            );
            tasks[t].suspend(&[raw], tsc).unwrap();
            sim.count(c, 5);
            kernel_events += 5;
            tsc += 10;
        }
        assert_eq!(tasks[0].values().get(0), Some(own[0]));
        assert_eq!(tasks[1].values().get(0), Some(own[1]));
        assert_eq!(tasks[0].values().tsc, 250 * 100);
        // Everything that happened on the counter, accounted for once.
        let total = own[0] + own[1] + kernel_events;
        assert_eq!(
            widen(m(width) - 1000, pmu.read(&mut sim, c).unwrap(), width),
            total
        );
        assert!(total > 1000, "the counter wrapped during the run");
    }
}

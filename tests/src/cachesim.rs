//! A reference data-cache simulator: the independent check that issue 32's cache model in the
//! emulated PMU must agree with (the same address trace and geometry give the same misses).
//!
//! The semantics are cachegrind's (valgrind's `cg_sim.c`), so that cachegrind can check this
//! simulator in turn (tests/tests/cachesim_cachegrind.rs): every level is set-associative with
//! true LRU replacement; an access is split at line boundaries and each line it touches is
//! looked up; a line that misses one level is looked up in the next and filled into every level
//! it missed (write-allocate: stores too); levels are neither inclusive nor exclusive of each
//! other (a line evicted from one level stays where else it is).
//!
//! The emulated PMU adds one thing cachegrind has not: an adjacent-line prefetch at the last
//! level (a line that misses it brings its 128-byte buddy into it, uncounted;
//! docs/emulated-pmu.md). [`Hierarchy::with_adjacent_prefetch`] models it the same way, and
//! [`Trace`] reads the emulator's record of every data access it fed its hierarchy.

/// One level's geometry: total bytes, ways, line bytes (all powers of two; `size / (ways * line)`
/// sets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub size: u64,
    pub ways: u32,
    pub line: u32,
}

impl Geometry {
    /// The number of sets.
    pub fn sets(&self) -> u64 {
        self.size / (u64::from(self.ways) * u64::from(self.line))
    }

    fn check(&self) -> Result<(), String> {
        let pow2 = |v: u64| v != 0 && v.is_power_of_two();
        if !pow2(u64::from(self.line))
            || self.ways == 0
            || !self
                .size
                .is_multiple_of(u64::from(self.ways) * u64::from(self.line))
        {
            return Err(format!(
                "{self:?}: the line must be a power of two and the size a whole number of sets"
            ));
        }
        if self.size < u64::from(self.ways) * u64::from(self.line) {
            return Err(format!("{self:?}: smaller than one set"));
        }
        Ok(())
    }

    /// A CPU model's cache as CPUID leaf 4 / 0x8000001D describes it: any number of ways and
    /// sets (an 11-way LLC exists), a power-of-two line.
    pub fn from_cpuid(sets: u64, ways: u32, line: u32) -> Result<Geometry, String> {
        if sets == 0 || ways == 0 || !line.is_power_of_two() {
            return Err(format!(
                "{sets} sets of {ways} ways of {line}-byte lines: not a cache"
            ));
        }
        Ok(Geometry {
            size: sets * u64::from(ways) * u64::from(line),
            ways,
            line,
        })
    }
}

/// One set-associative level with LRU replacement.
#[derive(Clone, Debug)]
pub struct Cache {
    geometry: Geometry,
    /// Per set, the tags it holds, most recently used first.
    sets: Vec<Vec<u64>>,
}

impl Cache {
    pub fn new(geometry: Geometry) -> Result<Cache, String> {
        geometry.check()?;
        Ok(Cache {
            geometry,
            sets: vec![Vec::with_capacity(geometry.ways as usize); geometry.sets() as usize],
        })
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Looks up the line with number `line` (address / line size) and makes it the set's most
    /// recently used, filling it (and evicting the least recently used) on a miss. Whether it
    /// hit.
    pub fn access_line(&mut self, line: u64) -> bool {
        let sets = self.geometry.sets();
        let set = &mut self.sets[(line % sets) as usize];
        let tag = line / sets;
        match set.iter().position(|&t| t == tag) {
            Some(i) => {
                set[..=i].rotate_right(1);
                true
            }
            None => {
                if set.len() == self.geometry.ways as usize {
                    set.pop();
                }
                set.insert(0, tag);
                false
            }
        }
    }

    /// Fills the line as its set's most recently used if it is absent; a present line keeps
    /// its place (a prefetch that finds its line does nothing).
    pub fn fill_if_absent(&mut self, line: u64) {
        let sets = self.geometry.sets();
        let tag = line / sets;
        if !self.sets[(line % sets) as usize].contains(&tag) {
            self.access_line(line);
        }
    }
}

/// Accesses and misses at one level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Line lookups that reached the level.
    pub accesses: u64,
    pub misses: u64,
}

/// Levels from the closest (L1D) out; a line reaches a level only if it missed every level
/// before it.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    levels: Vec<Cache>,
    stats: Vec<LevelStats>,
    adjacent_prefetch: bool,
}

impl Hierarchy {
    /// The levels, closest first; they must share one line size (as cachegrind requires).
    pub fn new(levels: &[Geometry]) -> Result<Hierarchy, String> {
        if levels.is_empty() {
            return Err("no cache level".into());
        }
        if levels.iter().any(|g| g.line != levels[0].line) {
            return Err(format!("the levels' line sizes differ: {levels:?}"));
        }
        Ok(Hierarchy {
            levels: levels
                .iter()
                .map(|&g| Cache::new(g))
                .collect::<Result<_, _>>()?,
            stats: vec![LevelStats::default(); levels.len()],
            adjacent_prefetch: false,
        })
    }

    /// The emulated PMU's prefetch: a line that misses the last level has its buddy (`line ^ 1`,
    /// the other half of its 128-byte pair) filled into the last level if absent, after it,
    /// with no statistics.
    pub fn with_adjacent_prefetch(mut self) -> Hierarchy {
        self.adjacent_prefetch = true;
        self
    }

    /// An access of `size` bytes (at least 1) at `addr`: each line it touches is looked up.
    /// Returns the farthest level any of its lines reached: `levels()` means memory.
    pub fn access(&mut self, addr: u64, size: u64) -> usize {
        let line = u64::from(self.levels[0].geometry().line);
        let (first, last) = (addr / line, (addr + size.max(1) - 1) / line);
        (first..=last)
            .map(|l| self.access_line(l))
            .max()
            .unwrap_or(0)
    }

    fn access_line(&mut self, line: u64) -> usize {
        for (i, (cache, stats)) in self.levels.iter_mut().zip(&mut self.stats).enumerate() {
            stats.accesses += 1;
            if cache.access_line(line) {
                return i;
            }
            stats.misses += 1;
        }
        if self.adjacent_prefetch {
            let last = self.levels.len() - 1;
            self.levels[last].fill_if_absent(line ^ 1);
        }
        self.levels.len()
    }

    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Per level, closest first.
    pub fn stats(&self) -> &[LevelStats] {
        &self.stats
    }

    /// Zeroes the statistics (the contents stay): what comes next is measured alone.
    pub fn reset_stats(&mut self) {
        self.stats
            .iter_mut()
            .for_each(|s| *s = LevelStats::default());
    }
}

/// One record of the emulator's data-access trace (QEMU's `x-pmu-uarch-trace=PATH`,
/// docs/emulated-pmu.md): an access as its cache model got it, and what the model made of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub paddr: u64,
    pub size: u16,
    pub store: bool,
    /// The privilege level the access was made at.
    pub cpl: u8,
    pub vcpu: u8,
    /// Lines of the access that missed L1D, L2 and the last level (with two levels, the
    /// second and third are the same), as the emulator's model counted them.
    pub misses: [u8; 3],
}

/// The trace file's records: 16 bytes each, little-endian: u64 physical address, u16 size, u8
/// flags (bit 0: store), u8 CPL, u8 vCPU, u8 L1D, L2 and last-level missed lines.
pub struct Trace;

impl Trace {
    pub const RECORD: usize = 16;

    /// Reads the records from `reader` one after the other (a trace of a whole boot holds tens
    /// of millions: they are not all kept), calling `f` with each and its index; the first error
    /// of `f` stops the reading. Returns the number of records.
    pub fn for_each(
        mut reader: impl std::io::Read,
        mut f: impl FnMut(usize, TraceRecord) -> Result<(), String>,
    ) -> Result<usize, String> {
        let mut buf = vec![0u8; Self::RECORD << 16];
        let (mut n, mut held) = (0, 0);
        loop {
            let got = reader
                .read(&mut buf[held..])
                .map_err(|e| format!("reading the trace: {e}"))?;
            if got == 0 {
                if held != 0 {
                    return Err(format!(
                        "{held} bytes after record {n}: not a whole record (a trace cut short?)"
                    ));
                }
                return Ok(n);
            }
            held += got;
            let whole = held - held % Self::RECORD;
            for r in Self::parse(&buf[..whole])? {
                f(n, r)?;
                n += 1;
            }
            buf.copy_within(whole..held, 0);
            held -= whole;
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<Vec<TraceRecord>, String> {
        if !bytes.len().is_multiple_of(Self::RECORD) {
            return Err(format!(
                "{} bytes: not a whole number of {}-byte records (a trace cut short?)",
                bytes.len(),
                Self::RECORD
            ));
        }
        let (records, _) = bytes.as_chunks::<{ Self::RECORD }>();
        Ok(records
            .iter()
            .map(|r| TraceRecord {
                paddr: u64::from_le_bytes(r[..8].try_into().unwrap()),
                size: u16::from_le_bytes([r[8], r[9]]),
                store: r[10] & 1 != 0,
                cpl: r[11],
                vcpu: r[12],
                misses: [r[13], r[14], r[15]],
            })
            .collect())
    }
}

/// The line numbers tests/cachesim/loads.c loads, in order: `n` draws of `(x >> 33) % lines`
/// from a 64-bit LCG started at `seed` (`lines` a power of two), continuing from `x` when given
/// the state a previous call ended at. Returns the indexes and the LCG's state after them.
pub fn lcg_lines(lines: u64, seed: u64, n: u64) -> (Vec<u64>, u64) {
    let mut x = seed;
    let v = (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) & (lines - 1)
        })
        .collect();
    (v, x)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L1: Geometry = Geometry {
        size: 256,
        ways: 2,
        line: 64,
    };

    #[test]
    fn lru_evicts_the_least_recently_used_way() {
        // 2 sets of 2 ways: lines 0, 2, 4 share set 0.
        let mut c = Cache::new(L1).unwrap();
        assert!(!c.access_line(0));
        assert!(!c.access_line(2));
        assert!(c.access_line(0)); // 0 most recent, 2 least
        assert!(!c.access_line(4)); // evicts 2
        assert!(c.access_line(0));
        assert!(!c.access_line(2)); // evicts 4
        assert!(!c.access_line(4)); // evicts 0
        assert!(!c.access_line(0));
        // The other set is untouched by all that.
        assert!(!c.access_line(1));
        assert!(c.access_line(1));
    }

    #[test]
    fn accesses_split_at_line_boundaries_and_go_out_only_on_a_miss() {
        let l2 = Geometry {
            size: 1024,
            ways: 4,
            line: 64,
        };
        let mut h = Hierarchy::new(&[L1, l2]).unwrap();
        // 8 bytes at 60: lines 0 and 1, both cold: memory.
        assert_eq!(h.access(60, 8), 2);
        assert_eq!(
            h.stats(),
            &[
                LevelStats {
                    accesses: 2,
                    misses: 2
                },
                LevelStats {
                    accesses: 2,
                    misses: 2
                }
            ]
        );
        h.reset_stats();
        assert_eq!(h.access(64, 8), 0, "line 1 is in L1 now");
        assert_eq!(h.stats()[1].accesses, 0, "an L1 hit never reaches L2");
        // Evict line 0 from L1 (set 0 gets 2 and 4): it is still in L2.
        h.access(128, 1);
        h.access(256, 1);
        h.reset_stats();
        assert_eq!(h.access(0, 1), 1);
        assert_eq!(h.stats()[0].misses, 1);
        assert_eq!(h.stats()[1].misses, 0);
    }

    #[test]
    fn geometry_is_checked() {
        assert!(
            Cache::new(Geometry {
                size: 3000,
                ways: 2,
                line: 64
            })
            .is_err()
        );
        assert!(
            Cache::new(Geometry {
                size: 64,
                ways: 2,
                line: 64
            })
            .is_err()
        );
        assert!(
            Hierarchy::new(&[
                L1,
                Geometry {
                    size: 1024,
                    ways: 4,
                    line: 128
                }
            ])
            .is_err()
        );
    }

    #[test]
    fn a_last_level_miss_prefetches_its_buddy_line_uncounted() {
        let llc = Geometry {
            size: 1024,
            ways: 4,
            line: 64,
        };
        let mut h = Hierarchy::new(&[L1, llc]).unwrap().with_adjacent_prefetch();
        assert_eq!(h.access(0, 1), 2, "line 0 from memory");
        assert_eq!(
            h.access(64, 1),
            1,
            "line 1 was prefetched into the last level"
        );
        assert_eq!(h.stats()[1].accesses, 2);
        assert_eq!(h.stats()[1].misses, 1, "the prefetch is not a miss");
        // A prefetch that finds its line leaves it where it is in the LRU order.
        let mut c = Cache::new(llc).unwrap();
        for l in [0u64, 4, 8, 12] {
            c.access_line(l);
        }
        c.fill_if_absent(0);
        c.access_line(16);
        assert!(!c.access_line(0), "line 0 stayed the least recently used");
        assert!(c.access_line(8));
        // Without the prefetch, line 1 misses everything.
        let mut plain = Hierarchy::new(&[L1, llc]).unwrap();
        plain.access(0, 1);
        assert_eq!(plain.access(64, 1), 2);
    }

    #[test]
    fn trace_records_are_read_as_the_emulator_writes_them() {
        let mut r = Vec::new();
        r.extend_from_slice(&0x1234_5678u64.to_le_bytes());
        r.extend_from_slice(&8u16.to_le_bytes());
        r.extend_from_slice(&[1, 3, 2, 1, 1, 0]);
        let t = Trace::parse(&r).unwrap();
        assert_eq!(
            t,
            [TraceRecord {
                paddr: 0x1234_5678,
                size: 8,
                store: true,
                cpl: 3,
                vcpu: 2,
                misses: [1, 1, 0]
            }]
        );
        assert!(Trace::parse(&r[..15]).is_err());
        // Read in pieces: the same record; a cut-short trace is an error.
        let two = [r.clone(), r.clone()].concat();
        let mut seen = Vec::new();
        let n = Trace::for_each(&two[..], |i, rec| {
            seen.push((i, rec));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(seen[1], (1, t[0]));
        assert!(Trace::for_each(&two[..20], |_, _| Ok(())).is_err());
    }

    #[test]
    fn the_draws_continue_from_the_state_they_end_at() {
        let (all, end) = lcg_lines(256, 7, 10);
        let (first, x) = lcg_lines(256, 7, 4);
        let (rest, end2) = lcg_lines(256, x, 6);
        assert_eq!([first, rest].concat(), all);
        assert_eq!(end, end2);
        assert!(all.iter().all(|&l| l < 256));
    }
}

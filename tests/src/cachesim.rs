//! A reference data-cache simulator: the independent check that issue 32's cache model in the
//! emulated PMU must agree with (the same address trace and geometry give the same misses).
//!
//! The semantics are cachegrind's (valgrind's `cg_sim.c`), so that cachegrind can check this
//! simulator in turn (tests/tests/cachesim_cachegrind.rs): every level is set-associative with
//! true LRU replacement; an access is split at line boundaries and each line it touches is
//! looked up; a line that misses one level is looked up in the next and filled into every level
//! it missed (write-allocate: stores too); levels are neither inclusive nor exclusive of each
//! other (a line evicted from one level stays where else it is).

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
        if !pow2(u64::from(self.line)) || !pow2(u64::from(self.ways)) || !pow2(self.size) {
            return Err(format!(
                "{self:?}: size, ways and line must be powers of two"
            ));
        }
        if self.size < u64::from(self.ways) * u64::from(self.line) {
            return Err(format!("{self:?}: smaller than one set"));
        }
        Ok(())
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
        })
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
    fn the_draws_continue_from_the_state_they_end_at() {
        let (all, end) = lcg_lines(256, 7, 10);
        let (first, x) = lcg_lines(256, 7, 4);
        let (rest, end2) = lcg_lines(256, x, 6);
        assert_eq!([first, rest].concat(), all);
        assert_eq!(end, end2);
        assert!(all.iter().all(|&l| l < 256));
    }
}

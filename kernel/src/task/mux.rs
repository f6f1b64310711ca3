//! Time-multiplexing of a task's events (docs/syscall-abi.md, "Multiplexing"): the pure parts.
//! A configuration with more GP events than GP counters (`counters_configure` with
//! `CONFIGURE_MULTIPLEX`) is split into groups that take turns on the counters; each event
//! counts only while its group is loaded, and the kernel keeps per event its *raw* count, the
//! time it was *running* (on a counter) and, for the whole configuration, the time *enabled*
//! (the task's virtual TSC since the configuration). The estimate of the full count is
//! `raw * enabled / running`, as perf scales (`perf stat` prints `running / enabled` as a
//! percentage). Host-tested; the runner's use is `task::run::mux`.

use alloc::vec::Vec;

/// Splits entries into groups: every fixed-counter entry (`fixed[i]`) is in every group (it
/// has its own counter); the GP entries, in order, `gp_counters` per group.
pub fn split_groups(fixed: &[bool], gp_counters: usize) -> Vec<Vec<usize>> {
    let gp: Vec<usize> = (0..fixed.len()).filter(|&i| !fixed[i]).collect();
    let always: Vec<usize> = (0..fixed.len()).filter(|&i| fixed[i]).collect();
    if gp.is_empty() || gp_counters == 0 {
        return alloc::vec![always];
    }
    gp.chunks(gp_counters)
        .map(|chunk| {
            let mut g: Vec<usize> = chunk.to_vec();
            g.extend_from_slice(&always);
            g.sort_unstable();
            g
        })
        .collect()
}

/// Per event: the raw count and the time it ran; the groups and which one is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mux {
    /// The `counters_configure` entries.
    pub words: Vec<u64>,
    pub groups: Vec<Vec<usize>>,
    /// The group on the counters.
    pub active: usize,
    /// Per entry: events counted while its group was loaded (folded at each rotation).
    pub raw: Vec<u64>,
    /// Per entry: virtual TSC ticks its group was loaded (folded at each rotation).
    pub running: Vec<u64>,
    /// The virtual TSC when the active group was loaded.
    pub loaded_at: u64,
    /// Rotations so far.
    pub rotations: u64,
}

impl Mux {
    pub fn new(words: Vec<u64>, groups: Vec<Vec<usize>>) -> Mux {
        let n = words.len();
        Mux {
            words,
            groups,
            active: 0,
            raw: alloc::vec![0; n],
            running: alloc::vec![0; n],
            loaded_at: 0,
            rotations: 0,
        }
    }

    /// The active group's entries.
    pub fn active_entries(&self) -> &[usize] {
        &self.groups[self.active]
    }

    /// The active group's counts so far (`values[j]` for its j-th entry) at virtual TSC `vtsc`:
    /// each entry's raw count and running time with the current stretch included.
    pub fn totals(&self, values: &[u64], vtsc: u64) -> (Vec<u64>, Vec<u64>) {
        let mut raw = self.raw.clone();
        let mut running = self.running.clone();
        let ran = vtsc.saturating_sub(self.loaded_at);
        for (j, &e) in self.active_entries().iter().enumerate() {
            raw[e] = raw[e].wrapping_add(values.get(j).copied().unwrap_or(0));
            running[e] = running[e].saturating_add(ran);
        }
        (raw, running)
    }

    /// The active group ends at `vtsc` with `values`: folded in, the next group is active
    /// (loaded from `vtsc` on). Returns its index.
    pub fn rotate(&mut self, values: &[u64], vtsc: u64) -> usize {
        let (raw, running) = self.totals(values, vtsc);
        self.raw = raw;
        self.running = running;
        self.active = (self.active + 1) % self.groups.len();
        self.loaded_at = vtsc;
        self.rotations += 1;
        self.active
    }

    /// A spawned child's: the same groups, the same one active, every count zero.
    pub fn for_child(&self) -> Mux {
        let mut m = Mux::new(self.words.clone(), self.groups.clone());
        m.active = self.active;
        m
    }

    /// The counts restart from 0 (`counters_reset`: the virtual TSC restarts too).
    pub fn restart(&mut self) {
        self.raw.iter_mut().for_each(|v| *v = 0);
        self.running.iter_mut().for_each(|v| *v = 0);
        self.loaded_at = 0;
    }
}

/// perf's estimate: `raw * enabled / running` (rounded down), `None` when the event never ran.
pub fn scaled(raw: u64, enabled: u64, running: u64) -> Option<u64> {
    if running == 0 {
        return None;
    }
    let v = u128::from(raw) * u128::from(enabled) / u128::from(running);
    Some(u64::try_from(v).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_share_the_fixed_counters() {
        assert_eq!(
            split_groups(&[false; 8], 4),
            [[0, 1, 2, 3].to_vec(), [4, 5, 6, 7].to_vec()]
        );
        assert_eq!(
            split_groups(&[false, true, false, false, false, false, false], 4),
            [[0, 1, 2, 3, 4].to_vec(), [1, 5, 6].to_vec()]
        );
        assert_eq!(split_groups(&[false; 8], 6).len(), 2);
        assert_eq!(split_groups(&[true, true], 4), [[0, 1].to_vec()]);
    }

    #[test]
    fn rotation_folds_counts_and_times() {
        let mut m = Mux::new(alloc::vec![1, 2, 3], split_groups(&[false; 3], 2));
        assert_eq!(m.active_entries(), &[0, 1]);
        assert_eq!(m.rotate(&[100, 10], 1000), 1);
        assert_eq!(m.active_entries(), &[2]);
        assert_eq!(m.rotate(&[30], 1500), 0);
        let (raw, running) = m.totals(&[50, 5], 2000);
        assert_eq!(raw, [150, 15, 30]);
        assert_eq!(running, [1500, 1500, 500]);
        assert_eq!(scaled(raw[2], 2000, running[2]), Some(120));
        assert_eq!(scaled(5, 10, 0), None);
        assert_eq!(scaled(u64::MAX, u64::MAX, 1), Some(u64::MAX));
        m.restart();
        assert_eq!(m.totals(&[0, 0], 0), (alloc::vec![0; 3], alloc::vec![0; 3]));
    }
}

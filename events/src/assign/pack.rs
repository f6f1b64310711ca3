//! Slicing: `{}` groups merged into items, and items packed into the fewest slices that each
//! fit (first-fit decreasing, a lower bound, a bounded branch-and-bound search).

use alloc::vec;
use alloc::vec::Vec;

use super::fit::fit;
use super::{EXACT_SEARCH_MAX_ITEMS, Info};

/// A free event or a `{}` group: events that go into the same slice.
#[derive(Clone, Debug)]
pub(super) struct Item {
    /// Sorted, non-empty.
    events: Vec<usize>,
    taken_alone: bool,
    /// The fewest counters any of its events may use.
    pub(super) scarcity: u32,
}

impl Item {
    pub(super) fn new(events: Vec<usize>, infos: &[Info]) -> Item {
        Item {
            taken_alone: events.iter().any(|&e| infos[e].taken_alone),
            scarcity: events
                .iter()
                .map(|&e| infos[e].allowed.count_ones())
                .min()
                .unwrap_or(0),
            events,
        }
    }

    fn first(&self) -> usize {
        self.events.first().copied().unwrap_or(usize::MAX)
    }
}

/// Merges overlapping groups (union-find); returns `(label, members)` with label the first
/// group naming any member, members sorted, sorted by label. Out-of-range indices are ignored.
pub(super) fn merge_groups(groups: &[Vec<usize>], n: usize) -> Vec<(usize, Vec<usize>)> {
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut parent: Vec<usize> = (0..n).collect();
    let mut label: Vec<Option<usize>> = vec![None; n];
    for (g, members) in groups.iter().enumerate() {
        let mut first = None;
        for &e in members.iter().filter(|&&e| e < n) {
            label[e].get_or_insert(g);
            match first {
                None => first = Some(e),
                Some(f) => {
                    let (a, b) = (find(&mut parent, f), find(&mut parent, e));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
    }
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut slot: Vec<Option<usize>> = vec![None; n];
    for (e, l) in label.iter().enumerate() {
        let Some(l) = *l else { continue };
        let root = find(&mut parent, e);
        match slot[root] {
            Some(k) => {
                out[k].0 = out[k].0.min(l);
                out[k].1.push(e);
            }
            None => {
                slot[root] = Some(out.len());
                out.push((l, vec![e]));
            }
        }
    }
    out.sort_by_key(|(l, _)| *l);
    out
}

pub(super) struct Packed {
    /// Event sets, each sorted.
    pub(super) slices: Vec<Vec<usize>>,
    pub(super) count: usize,
    pub(super) optimal: bool,
    pub(super) lower_bound: usize,
}

pub(super) fn pack(items: &[Item], infos: &[Info], budget: u32) -> Packed {
    let mut slices: Vec<Vec<usize>> = items
        .iter()
        .filter(|it| it.taken_alone)
        .map(|it| it.events.clone())
        .collect();
    let alone = slices.len();
    let mut rest: Vec<&Item> = items.iter().filter(|it| !it.taken_alone).collect();
    rest.sort_by(|a, b| {
        a.scarcity
            .cmp(&b.scarcity)
            .then(b.events.len().cmp(&a.events.len()))
            .then(a.first().cmp(&b.first()))
    });
    let lb = lower_bound(&rest, infos);

    let mut best = first_fit(&rest, infos);
    let mut optimal = best.len() <= lb;
    if !optimal && rest.len() <= EXACT_SEARCH_MAX_ITEMS {
        let mut search = Search {
            items: &rest,
            infos,
            lower_bound: lb,
            best,
            budget,
            exhausted: false,
        };
        search.dfs(0, &mut Vec::new());
        optimal = !search.exhausted;
        best = search.best;
    }
    slices.extend(best);
    Packed {
        count: slices.len(),
        slices,
        optimal,
        lower_bound: alone + lb,
    }
}

/// Merges two sorted, disjoint event lists.
fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    out.extend_from_slice(a);
    out.extend_from_slice(b);
    out.sort_unstable();
    out
}

pub(super) fn first_fit(items: &[&Item], infos: &[Info]) -> Vec<Vec<usize>> {
    let mut slices: Vec<Vec<usize>> = Vec::new();
    for item in items {
        let placed = slices.iter_mut().any(|slice| {
            let merged = union(slice, &item.events);
            let fits = fit(&merged, infos).is_ok();
            if fits {
                *slice = merged;
            }
            fits
        });
        if !placed {
            slices.push(item.events.clone());
        }
    }
    slices
}

/// A lower bound on the number of slices for `items` (none taken-alone).
fn lower_bound(items: &[&Item], infos: &[Info]) -> usize {
    let events: Vec<usize> = items
        .iter()
        .flat_map(|it| it.events.iter().copied())
        .collect();
    if events.is_empty() {
        return 0;
    }
    let mut bound = 1;
    // Events limited to a counter set S need ceil(n / |S|) slices.
    let mut sets: Vec<u64> = events.iter().map(|&e| infos[e].allowed).collect();
    sets.push(sets.iter().fold(0, |acc, s| acc | s));
    sets.sort_unstable();
    sets.dedup();
    for s in sets {
        let size = s.count_ones() as usize;
        if size == 0 {
            continue;
        }
        let n = events
            .iter()
            .filter(|&&e| infos[e].allowed & !s == 0)
            .count();
        bound = bound.max(n.div_ceil(size));
    }
    // Events without an alternative that need one MSR with different values.
    let mut fixed_msrs: Vec<(u32, u64)> = events
        .iter()
        .filter_map(|&e| match infos[e].msr {
            Some((m, None)) => Some((m.msr, m.value)),
            _ => None,
        })
        .collect();
    fixed_msrs.sort_unstable();
    fixed_msrs.dedup();
    for chunk in fixed_msrs.chunk_by(|a, b| a.0 == b.0) {
        bound = bound.max(chunk.len());
    }
    bound
}

/// Branch and bound over the ways to pack items into slices.
struct Search<'a> {
    items: &'a [&'a Item],
    infos: &'a [Info],
    lower_bound: usize,
    /// The best packing found (starts as first-fit's).
    best: Vec<Vec<usize>>,
    budget: u32,
    exhausted: bool,
}

impl Search<'_> {
    fn dfs(&mut self, i: usize, slices: &mut Vec<Vec<usize>>) {
        // Slices never go away, so a partial packing with as many slices as the best cannot
        // beat it.
        if self.exhausted || self.best.len() <= self.lower_bound || slices.len() >= self.best.len()
        {
            return;
        }
        let Some(item) = self.items.get(i) else {
            self.best = slices.clone();
            return;
        };
        for j in 0..slices.len() {
            if self.budget == 0 {
                self.exhausted = true;
                return;
            }
            self.budget -= 1;
            let merged = union(&slices[j], &item.events);
            if fit(&merged, self.infos).is_ok() {
                let old = core::mem::replace(&mut slices[j], merged);
                self.dfs(i + 1, slices);
                slices[j] = old;
                if self.exhausted || self.best.len() <= self.lower_bound {
                    return;
                }
            }
        }
        if slices.len() + 1 < self.best.len() {
            slices.push(item.events.clone());
            self.dfs(i + 1, slices);
            slices.pop();
        }
    }
}

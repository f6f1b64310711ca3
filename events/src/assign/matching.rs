//! Events onto counters in one slice: a bipartite matching (Kuhn's augmenting paths), fixed
//! counters tried first and free counters before displacing another event.

use alloc::vec;
use alloc::vec::Vec;

/// Counter bits in the order an event tries them: fixed counters first, then GP counters.
fn candidates(allowed: u64) -> impl Iterator<Item = u32> {
    (32..64)
        .chain(0..32)
        .filter(move |&b| allowed & (1u64 << b) != 0)
}

/// A counter bit for each event (indices as in `allowed`) with no counter used twice, or
/// `None` when no such matching exists. Kuhn's augmenting paths.
pub(super) fn match_counters(allowed: &[u64]) -> Option<Vec<u32>> {
    let mut owner: [Option<usize>; 64] = [None; 64];
    for e in 0..allowed.len() {
        let mut visited = [false; 64];
        if !augment(e, allowed, &mut owner, &mut visited) {
            return None;
        }
    }
    let mut bits = vec![0u32; allowed.len()];
    for (bit, o) in owner.iter().enumerate() {
        if let Some(e) = *o {
            bits[e] = bit as u32;
        }
    }
    Some(bits)
}

fn augment(
    e: usize,
    allowed: &[u64],
    owner: &mut [Option<usize>; 64],
    visited: &mut [bool; 64],
) -> bool {
    // A free counter first, so events keep the counters they got (the first event wanting a
    // fixed counter keeps it).
    if let Some(b) = candidates(allowed[e]).find(|&b| owner[b as usize].is_none()) {
        owner[b as usize] = Some(e);
        return true;
    }
    for b in candidates(allowed[e]) {
        let b = b as usize;
        if visited[b] {
            continue;
        }
        visited[b] = true;
        if let Some(other) = owner[b]
            && augment(other, allowed, owner, visited)
        {
            owner[b] = Some(e);
            return true;
        }
    }
    false
}

//! Extra MSRs in one slice: each event with one picks its primary or alternative encoding so
//! that no MSR needs two values (exact 2-SAT, primary encodings first).

use alloc::vec;
use alloc::vec::Vec;

use crate::event::ExtraMsr;

/// The MSR of option `choice` (0 primary, 1 alternative) of an event.
fn msr_option(o: &(ExtraMsr, Option<ExtraMsr>), choice: usize) -> Option<ExtraMsr> {
    if choice == 0 { Some(o.0) } else { o.1 }
}

pub(super) fn msrs_conflict(a: ExtraMsr, b: ExtraMsr) -> bool {
    a.msr == b.msr && a.value != b.value
}

/// Picks primary or alternative for each event so that no MSR needs two values: `Ok(uses_alt)`
/// per event, or `Err(msr)` naming an MSR that cannot be settled. Exact 2-SAT (see the module
/// documentation), preferring primary encodings in input order.
pub(super) fn choose_msrs(options: &[(ExtraMsr, Option<ExtraMsr>)]) -> Result<Vec<bool>, u32> {
    let mut chosen: Vec<Option<usize>> = vec![None; options.len()];
    // Events without an alternative have no choice: settle them first.
    for v in 0..options.len() {
        if chosen[v].is_none() && options[v].1.is_none() && !propagate(options, v, 0, &mut chosen) {
            return Err(options[v].0.msr);
        }
    }
    for v in 0..options.len() {
        if chosen[v].is_some() {
            continue;
        }
        let mut settled = false;
        for choice in 0..2 {
            let mut trial = chosen.clone();
            if propagate(options, v, choice, &mut trial) {
                chosen = trial;
                settled = true;
                break;
            }
        }
        if !settled {
            return Err(options[v].0.msr);
        }
    }
    Ok(chosen.iter().map(|c| *c == Some(1)).collect())
}

/// Sets event `v` to `choice` and forces every choice that follows; false on a conflict.
/// Invariant kept: every unassigned event can still take either encoding.
fn propagate(
    options: &[(ExtraMsr, Option<ExtraMsr>)],
    v: usize,
    choice: usize,
    chosen: &mut [Option<usize>],
) -> bool {
    chosen[v] = Some(choice);
    let mut stack = vec![v];
    while let Some(u) = stack.pop() {
        let Some(mu) = chosen[u].and_then(|c| msr_option(&options[u], c)) else {
            return false;
        };
        for w in 0..options.len() {
            if w == u {
                continue;
            }
            match chosen[w] {
                Some(c) => {
                    if msr_option(&options[w], c).is_none_or(|mw| msrs_conflict(mu, mw)) {
                        return false;
                    }
                }
                None => {
                    let ok: Vec<usize> = (0..2)
                        .filter(|&c| {
                            msr_option(&options[w], c).is_some_and(|mw| !msrs_conflict(mu, mw))
                        })
                        .collect();
                    match ok.as_slice() {
                        [] => return false,
                        [only] => {
                            chosen[w] = Some(*only);
                            stack.push(w);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    true
}

//! Whether a set of events fits in one slice (steps 1 to 3 of the module documentation): the
//! taken-alone rule, the extra MSRs, the counters; the placements when it does.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::matching::match_counters;
use super::msrs::choose_msrs;
use super::{Counter, Info, Placement};
use crate::event::ExtraMsr;
use crate::pmu::PmuCaps;

/// Why a set of events does not fit in one slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Misfit {
    TakenAlone,
    /// Some MSR would need two values (its address).
    Msr(u32),
    Counters,
}

impl Misfit {
    pub(super) fn describe(self, caps: &PmuCaps) -> String {
        match self {
            Misfit::TakenAlone => String::from("it holds a taken-alone event"),
            Misfit::Msr(msr) => {
                format!("its events need MSR {msr:#x} programmed with different values at once")
            }
            Misfit::Counters => format!(
                "its events need more counters, or other counters, than this PMU has ({} GP, fixed mask {:#x})",
                caps.gp_counters, caps.fixed_mask
            ),
        }
    }
}

/// Places the events of `set` (sorted, distinct) together, or says why they do not fit.
pub(super) fn fit(set: &[usize], infos: &[Info]) -> Result<Vec<Placement>, Misfit> {
    if set.len() > 1 && set.iter().any(|&e| infos[e].taken_alone) {
        return Err(Misfit::TakenAlone);
    }
    let with_msr: Vec<(usize, (ExtraMsr, Option<ExtraMsr>))> = set
        .iter()
        .filter_map(|&e| infos[e].msr.map(|m| (e, m)))
        .collect();
    let options: Vec<(ExtraMsr, Option<ExtraMsr>)> = with_msr.iter().map(|&(_, m)| m).collect();
    let alt = choose_msrs(&options).map_err(Misfit::Msr)?;
    let allowed: Vec<u64> = set.iter().map(|&e| infos[e].allowed).collect();
    let counters = match_counters(&allowed).ok_or(Misfit::Counters)?;
    Ok(set
        .iter()
        .zip(counters)
        .map(|(&event, bit)| Placement {
            event,
            counter: counter_of_bit(bit),
            uses_alt: with_msr
                .iter()
                .zip(&alt)
                .any(|(&(e, _), &uses_alt)| e == event && uses_alt),
        })
        .collect())
}

fn counter_of_bit(bit: u32) -> Counter {
    if bit >= 32 {
        Counter::Fixed((bit - 32) as u8)
    } else {
        Counter::Gp(bit as u8)
    }
}

//! `counters_configure` requests: the words a task (or the harness's plan, or run.cfg `system`
//! and `sample`) gives for its counters, checked against what the PMU has (docs/syscall-abi.md).
//! The task's syscalls turn a [`RequestError`] into the ABI's error code.

use alloc::vec::Vec;

use events::cpu::Vendor;
use events::encode::decode_gp_event_select;
use events::event::{EventSelect, Modifiers};
use events::pmu::{PmuCaps, PmuKind};

use super::backend::Counter;

/// The most entries in one request: a task's counter slots (`task::vcounter`).
pub const MAX_SLOTS: usize = 16;

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// An event on a PMU without programmable counters (`ENODEV`).
    NoCounters,
    /// Anything else the request gets wrong (`EINVAL`).
    Invalid,
}

/// `counters_configure` entry flag: this entry is Intel fixed counter `bits & 0xff`, counting in
/// ring 3 if bit 16 is set and in ring 0 if bit 17 is (the PERFEVTSEL USR and OS positions);
/// every other bit must be clear (docs/syscall-abi.md).
pub const FIXED_ENTRY: u64 = 1 << 63;
const ENTRY_USR: u64 = 1 << 16;
const ENTRY_OS: u64 = 1 << 17;

/// The `counters_configure` entry for fixed counter `index`.
pub fn fixed_entry(index: u8, modifiers: &Modifiers) -> u64 {
    FIXED_ENTRY
        | u64::from(index)
        | if modifiers.usr { ENTRY_USR } else { 0 }
        | if modifiers.os { ENTRY_OS } else { 0 }
}

/// The slots for a `counters_configure` request, slot `i` for `raw[i]`: a GP event-select
/// encoding of `vendor` is counted on the next GP counter (the first GP entry on GP 0, the
/// second on GP 1, ...), with the PMU's GP width; a [`FIXED_ENTRY`] on its fixed counter, with
/// the fixed width. [`RequestError::NoCounters`] for any event on a PMU without counters (the TSC-only
/// backend); [`RequestError::Invalid`] for more GP entries than GP counters, more entries than [`MAX_SLOTS`], a fixed counter the PMU
/// lacks or given twice, reserved bits in a fixed entry, a GP encoding that does not decode
/// (reserved bits), one with EN or INT set (the kernel starts the counters, and sets INT itself for a threshold or sampling), or
/// AnyThread where the PMU does not allow it. The empty request is always valid (no slots).
pub fn parse_request(
    vendor: Vendor,
    caps: &PmuCaps,
    raw: &[u64],
) -> Result<Vec<(Counter, EventSelect, Modifiers, u8)>, RequestError> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    if caps.kind == PmuKind::TscOnly {
        return Err(RequestError::NoCounters);
    }
    if raw.len() > MAX_SLOTS {
        return Err(RequestError::Invalid);
    }
    let mut gp = 0u8;
    let mut fixed_seen = 0u32;
    raw.iter()
        .map(|&bits| {
            if bits & FIXED_ENTRY != 0 {
                let index = (bits & 0xff) as u8;
                let known = FIXED_ENTRY | 0xff | ENTRY_USR | ENTRY_OS;
                if bits & !known != 0
                    || index >= 32
                    || !caps.has_fixed(index)
                    || fixed_seen & (1 << index) != 0
                    || caps.fixed_width == 0
                {
                    return Err(RequestError::Invalid);
                }
                // counting at no privilege level counts 0 forever: not a count to report
                if bits & (ENTRY_USR | ENTRY_OS) == 0 {
                    return Err(RequestError::Invalid);
                }
                fixed_seen |= 1 << index;
                // The perfmon pseudo encoding every fixed counter answers to.
                let select = EventSelect::new(0, index + 1);
                let modifiers = Modifiers {
                    usr: bits & ENTRY_USR != 0,
                    os: bits & ENTRY_OS != 0,
                    ..Modifiers::default()
                };
                return Ok((Counter::Fixed(index), select, modifiers, caps.fixed_width));
            }
            if gp >= caps.gp_counters || caps.gp_width == 0 {
                return Err(RequestError::Invalid);
            }
            let d = decode_gp_event_select(vendor, bits).map_err(|_| RequestError::Invalid)?;
            if d.enable || d.modifiers.int || (d.select.any_thread && !caps.any_thread) {
                return Err(RequestError::Invalid);
            }
            // Neither USR nor OS counts 0 forever; an all-zero entry is an unused counter.
            if bits != 0 && !d.modifiers.usr && !d.modifiers.os {
                return Err(RequestError::Invalid);
            }
            let counter = Counter::Gp(gp);
            gp += 1;
            Ok((counter, d.select, d.modifiers, caps.gp_width))
        })
        .collect()
}

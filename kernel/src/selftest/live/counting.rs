//! Counting checks: every available event on every GP counter, the fixed counters and (v5)
//! their bitmap, all counters at once, and the counter mask.

use alloc::format;
use alloc::vec::Vec;

use events::event::EventSelect;

use super::{Ctx, Items, N, Slot, known_loop, locked, measure_once};
use crate::pmu::backend::{Counter, PmuError};
use crate::pmu::msr::Msr;
use crate::pmu::regs;
use crate::selftest::{self, Check, EventSpec, Expect, Outcome};

/// The memory walk's buffer: larger than the L2 of current parts, so its lines come from the
/// LLC or memory; halved until the heap has room.
const WALK_BYTES: [usize; 3] = [4 << 20, 2 << 20, 1 << 20];
const LINE: usize = 64;

/// Reads one byte of every cache line of `buf` (the LLC events' workload).
fn walk(buf: &[u8]) {
    let buf = core::hint::black_box(buf);
    let mut acc = 0u8;
    let mut i = 0;
    while i < buf.len() {
        acc ^= core::hint::black_box(buf[i]);
        i += LINE;
    }
    core::hint::black_box(acc);
}

fn walk_buffer() -> Option<Vec<u8>> {
    WALK_BYTES.iter().find_map(|&bytes| {
        let mut v = Vec::new();
        v.try_reserve_exact(bytes).ok()?;
        v.resize(bytes, 1u8);
        Some(v)
    })
}

fn event_label(spec: &EventSpec) -> alloc::string::String {
    format!(
        "{} (event {:#04x} umask {:#04x})",
        spec.name, spec.select.code, spec.select.umask
    )
}

/// One available event on every GP counter, each judged by its range.
pub(super) fn gp_event(ctx: &Ctx, check: Check) -> Result<Outcome, PmuError> {
    let Some(spec) = selftest::gp_event(check, &ctx.caps) else {
        return Ok(Outcome::Skip("no such event on this PMU".into()));
    };
    let buffer = match spec.expect {
        Expect::Walk { .. } => match walk_buffer() {
            Some(b) => Some(b),
            None => {
                return Ok(Outcome::Skip(
                    "no heap for the memory walk (1 MiB at least)".into(),
                ));
            }
        },
        _ => None,
    };
    let lines = buffer.as_ref().map_or(0, |b| (b.len() / LINE) as u64);
    let work = || match &buffer {
        Some(b) => walk(b),
        None => known_loop(),
    };
    let mut counts = Items::default();
    let mut ok = true;
    let mut range = (0, 0);
    for counter in ctx.gp_counters() {
        let (values, tsc) = measure_once(&[Slot::new(counter, spec.select)], &work)?;
        let v = values[0];
        range = selftest::expected_range(spec.expect, N, tsc, lines);
        ok &= selftest::in_range(v, range.0, range.1);
        match spec.expect {
            Expect::RefCycles => {
                counts.add(format_args!("{counter}={v} (tsc {tsc})"));
            }
            _ => counts.add(format_args!("{counter}={v}")),
        }
    }
    let over = match spec.expect {
        Expect::Loop { .. } => format!("a {N}-iteration loop, expected [{}, {}]", range.0, range.1),
        Expect::RefCycles => {
            format!("a {N}-iteration loop, expected [tsc/1000, tsc] of the TSC ticks around it")
        }
        Expect::Walk { .. } => format!(
            "a walk of {lines} cache lines, expected [{}, {}]",
            range.0, range.1
        ),
    };
    Ok(Outcome::verdict(
        ok,
        format!("{} over {over}: {}", event_label(&spec), counts.0),
    ))
}

/// Fixed counters 0-2, each alone, judged by kvm-unit-tests' ranges.
pub(super) fn fixed_counters(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let mut counts = Items::default();
    let mut ok = true;
    let mut unjudged = Items::default();
    for counter in ctx.fixed_counters() {
        let Counter::Fixed(i) = counter else { continue };
        let Some((name, lo, hi)) = selftest::fixed_range(i, N) else {
            unjudged.add(format_args!("{counter}"));
            continue;
        };
        let (values, _) = measure_once(
            &[Slot::new(counter, selftest::fixed_select(i))],
            &known_loop,
        )?;
        let v = values[0];
        ok &= selftest::in_range(v, lo, hi);
        counts.add(format_args!("{counter} {name}={v} [{lo}, {hi}]"));
    }
    let mut detail = format!("over a {N}-iteration loop: {}", counts.0);
    if !unjudged.0.is_empty() {
        detail.push_str(&format!(
            "; not judged (no architectural range): {}",
            unjudged.0
        ));
    }
    Ok(Outcome::verdict(ok, detail))
}

/// v5: every fixed counter the bitmap lists is readable (RDMSR and RDPMC) and counts; the
/// first it does not list faults on both.
pub(super) fn fixed_bitmap(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let listed = selftest::fixed_bitmap(ctx.leaf_0a);
    let mut ok = listed == ctx.caps.fixed_mask;
    let mut items = Items::default();
    items.add(format_args!(
        "CPUID.0AH ECX {:#x} EDX[4:0] {}: counters {listed:#x} (in use {:#x})",
        ctx.leaf_0a[2],
        ctx.leaf_0a[3] & 0x1f,
        ctx.caps.fixed_mask
    ));
    for i in (0..16u8).filter(|i| listed & (1 << i) != 0) {
        let counter = Counter::Fixed(i);
        let (values, _) = measure_once(
            &[Slot::new(counter, selftest::fixed_select(i))],
            &known_loop,
        )?;
        let readable = locked(|_, msr| {
            Ok((
                msr.read(regs::intel::FIXED_CTR0 + u32::from(i)).ok(),
                msr.rdpmc(regs::intel::RDPMC_FIXED | u32::from(i)).ok(),
            ))
        })?;
        let good = values[0] > 0 && readable.0.is_some() && readable.1.is_some();
        ok &= good;
        items.add(format_args!(
            "fixed{i}: counted {}, RDMSR {}, RDPMC {};",
            values[0],
            if readable.0.is_some() {
                "ok"
            } else {
                "faulted"
            },
            if readable.1.is_some() {
                "ok"
            } else {
                "faulted"
            },
        ));
    }
    if let Some(m) = selftest::first_missing_fixed(listed) {
        let (rd, pmc) = locked(|_, msr| {
            Ok((
                msr.read(regs::intel::FIXED_CTR0 + u32::from(m)),
                msr.rdpmc(regs::intel::RDPMC_FIXED | u32::from(m)),
            ))
        })?;
        ok &= rd.is_err() && pmc.is_err();
        items.add(format_args!(
            "fixed{m} (not listed): RDMSR {}, RDPMC {}",
            if rd.is_err() {
                "#GP"
            } else {
                "read (expected #GP)"
            },
            if pmc.is_err() {
                "faulted"
            } else {
                "read (expected #GP)"
            },
        ));
    }
    Ok(Outcome::verdict(ok, items.0))
}

/// Every GP counter (each an available loop event, round robin) and every fixed counter, all
/// enabled together over one loop.
pub(super) fn all_counters(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let events: Vec<EventSpec> = Check::GP_EVENTS
        .iter()
        .filter(|&&c| selftest::skip_reason(c, &ctx.caps, "").is_none())
        .filter_map(|&c| selftest::gp_event(c, &ctx.caps))
        .filter(|e| !matches!(e.expect, Expect::Walk { .. }))
        .collect();
    if events.is_empty() {
        return Ok(Outcome::Fail("no available event to count".into()));
    }
    let mut slots = Vec::new();
    let mut expects = Vec::new();
    for (k, counter) in ctx.gp_counters().enumerate() {
        let e = events[k % events.len()];
        slots.push(Slot::new(counter, e.select));
        expects.push((e.name, Some(e.expect), None));
    }
    for counter in ctx.fixed_counters() {
        let Counter::Fixed(i) = counter else { continue };
        if let Some((name, lo, hi)) = selftest::fixed_range(i, N) {
            slots.push(Slot::new(counter, selftest::fixed_select(i)));
            expects.push((name, None, Some((lo, hi))));
        }
    }
    let (values, tsc) = measure_once(&slots, &known_loop)?;
    let mut ok = true;
    let mut items = Items::default();
    for ((slot, (name, expect, fixed)), v) in slots.iter().zip(&expects).zip(&values) {
        let (lo, hi) = match (expect, fixed) {
            (Some(e), _) => selftest::expected_range(*e, N, tsc, 0),
            (None, Some(r)) => *r,
            (None, None) => (0, u64::MAX),
        };
        let good = selftest::in_range(*v, lo, hi);
        ok &= good;
        items.add(format_args!(
            "{} {name}={v}{}",
            slot.counter,
            if good { "" } else { " (out of range)" }
        ));
    }
    Ok(Outcome::verdict(
        ok,
        format!(
            "{} counters at once over a {N}-iteration loop (tsc {tsc}): {}",
            slots.len(),
            items.0
        ),
    ))
}

/// cmask = 2 on instructions: a core retiring fewer than 2 instructions in most cycles counts
/// fewer than the instructions (kvm-unit-tests: below 10N).
pub(super) fn counter_mask(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let Some(sel) = selftest::instructions(&ctx.caps) else {
        return Ok(Outcome::Fail("no instructions event".into()));
    };
    let counter = Counter::Gp(0);
    let (plain, _) = measure_once(&[Slot::new(counter, sel)], &known_loop)?;
    let masked_sel = EventSelect { cmask: 2, ..sel };
    let (masked, _) = measure_once(&[Slot::new(counter, masked_sel)], &known_loop)?;
    let limit = N * 10;
    Ok(Outcome::verdict(
        masked[0] < limit,
        format!(
            "instructions {}, with cmask=2 {} (expected below {limit})",
            plain[0], masked[0]
        ),
    ))
}

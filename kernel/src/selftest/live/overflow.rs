//! Overflow on every counter, and the PMI through the kernel's own handler.
//!
//! Both leave the PMU lock free while a PMI can arrive, so `pmu::machine::on_pmi` takes it as in a
//! measured payload: it finds and acknowledges the overflow (counted `handled`, never `busy`),
//! and unmasks LVTPC. The counts of PMIs are exact.

use alloc::format;

use super::{
    Ctx, Items, N, Pmis, Slot, known_loop, locked, lvtpc_unmasked, measure, measure_once, release,
    take_pending_pmis,
};
use crate::pmu::backend::{Counter, CounterSet, PmuError};
use baremark_hw::cpu;
use events::event::{EventSelect, Modifiers};

use crate::selftest::{self, Outcome};

/// The event and whether its count repeats exactly (instructions do; cycles do not).
fn event_of(ctx: &Ctx, counter: Counter) -> Option<(EventSelect, bool)> {
    match counter {
        Counter::Gp(_) => selftest::instructions(&ctx.caps).map(|s| (s, true)),
        Counter::Fixed(i) => Some((selftest::fixed_select(i), i == 0)),
    }
}

/// What one overflow run saw.
struct Run {
    value: u64,
    /// Status bit of the counter right after the loop (`None`: no status register).
    status: Option<bool>,
    /// The status bit once cleared (by the selftest through the clear MSR without INT, by the
    /// kernel's handler with INT).
    cleared: Option<bool>,
    pmis: Pmis,
    lvtpc_unmasked: bool,
}

/// Presets `counter` so that the loop overflows it, counts the loop with interrupts off, reads
/// the status and (without INT) clears it, then opens an interrupt window with the PMU free.
fn overflow_run(
    ctx: &Ctx,
    counter: Counter,
    select: EventSelect,
    preset: u64,
    int: bool,
) -> Result<Run, PmuError> {
    let status_reg = selftest::has_status(&ctx.caps);
    let one = CounterSet::one(counter);
    let slots = [Slot {
        counter,
        select,
        preset,
        int,
    }];
    let (value, status, cleared_by_us) = locked(|pmu, msr| {
        if status_reg {
            let all = pmu.backend.all_counters();
            pmu.backend.ack_overflow(msr, all)?;
        }
        let (values, _) = measure(pmu, msr, &slots, &known_loop)?;
        let mut status = None;
        let mut cleared = None;
        if status_reg {
            status = Some(pmu.backend.overflow_status(msr)?.contains(counter));
            if !int {
                pmu.backend.ack_overflow(msr, one)?;
                cleared = Some(!pmu.backend.overflow_status(msr)?.contains(counter));
            }
        }
        if !int {
            release(pmu, msr, &slots)?;
        }
        Ok((values[0], status, cleared))
    })?;
    // With INT the counter stays programmed until its PMI was handled: without a status
    // register the handler finds the overflow by the counter the backend armed.
    let pmis = take_pending_pmis();
    let lvt = lvtpc_unmasked();
    let cleared = locked(|pmu, msr| {
        let cleared = if int && status_reg {
            let set = pmu.backend.overflow_status(msr)?.contains(counter);
            if set {
                // No handler acknowledged it: clear it for the next run.
                pmu.backend.ack_overflow(msr, one)?;
            }
            Some(!set)
        } else {
            cleared_by_us
        };
        if int {
            release(pmu, msr, &slots)?;
        }
        Ok(cleared)
    })?;
    Ok(Run {
        value,
        status,
        cleared,
        pmis,
        lvtpc_unmasked: lvt,
    })
}

/// Overflow on every GP and fixed counter, INT clear then set (kvm-unit-tests'
/// `check_counter_overflow`, on every counter both ways). Instruction counters are preset to
/// 1 - N, N being the count of the same loop just measured, and must read exactly 1 (Intel; on
/// AMD all ones or below 7); cycle counters, whose counts do not repeat, are preset to overflow
/// halfway and must have wrapped. The status bit must be set and then cleared (through the
/// clear MSR: by this check without INT, by the kernel's handler with INT), and a PMI must
/// arrive exactly when INT is set and the counter wrapped.
pub(super) fn overflow(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let mut problems = Items::default();
    let mut counts = Items::default();
    let mut pmis_handled = 0;
    let mut runs = 0;
    for counter in ctx.gp_counters().chain(ctx.fixed_counters()) {
        let Some((select, exact)) = event_of(ctx, counter) else {
            return Ok(Outcome::Fail("no instructions event".into()));
        };
        let width = ctx.width(counter);
        let (measured, _) = measure_once(&[Slot::new(counter, select)], &known_loop)?;
        let events = measured[0];
        if events < 2 {
            problems.add(format_args!("{counter} counted {events} over the loop;"));
            continue;
        }
        let preset = selftest::overflow_preset(if exact { events } else { events / 2 }, width);
        let mut values = [0u64; 2];
        for (k, int) in [false, true].into_iter().enumerate() {
            let run = overflow_run(ctx, counter, select, preset, int)?;
            runs += 1;
            values[k] = run.value;
            // Counts are far below 2^(width-1): past the wrap the value is below the preset.
            let wrapped = run.value < preset;
            let what = if int { "INT set" } else { "INT clear" };
            let count_ok = if exact {
                selftest::overflow_count_ok(&ctx.caps, run.value, width)
            } else {
                wrapped && run.value < events
            };
            if !count_ok {
                problems.add(format_args!(
                    "{counter} {what}: counted to {:#x} from {preset:#x} ({});",
                    run.value,
                    if exact {
                        "expected 1"
                    } else {
                        "expected a wrap"
                    }
                ));
            }
            if run.status.is_some_and(|s| s != wrapped) {
                problems.add(format_args!(
                    "{counter} {what}: {};",
                    if wrapped {
                        "status bit clear after the overflow"
                    } else {
                        "status bit set, but the counter did not wrap"
                    }
                ));
            }
            if run.cleared == Some(false) && !(int && run.pmis.handled == 0) {
                problems.add(format_args!(
                    "{counter} {what}: status bit still set after {};",
                    if int {
                        "the PMI handler acknowledged it"
                    } else {
                        "writing it to the clear MSR"
                    }
                ));
            }
            let want_pmi = int && wrapped;
            let pmi_ok = if want_pmi {
                run.pmis
                    == Pmis {
                        handled: 1,
                        busy: 0,
                        spurious: 0,
                    }
            } else {
                run.pmis.total() == 0
            };
            if !pmi_ok {
                problems.add(format_args!(
                    "{counter} {what}: PMIs {} (expected {});",
                    run.pmis,
                    if want_pmi { "1 handled" } else { "none" }
                ));
            }
            if want_pmi && !run.lvtpc_unmasked {
                problems.add(format_args!("{counter}: LVTPC masked after the PMI;"));
            }
            pmis_handled += run.pmis.handled;
        }
        counts.add(format_args!("{counter} {}/{}", values[0], values[1]));
    }
    let status = if selftest::has_status(&ctx.caps) {
        "status set and cleared each time"
    } else {
        "no status register: the value and the PMI tell"
    };
    let detail = format!(
        "{runs} runs, INT clear/set, counts after the overflow: {}; {status}; {pmis_handled} PMIs handled by the kernel's handler",
        counts.0
    );
    Ok(if problems.0.is_empty() {
        Outcome::Pass(detail)
    } else {
        Outcome::Fail(format!("{}; {detail}", problems.0))
    })
}

/// The PMI while the measured loop runs with interrupts on and the PMU lock free: the counter
/// is armed to overflow halfway through the loop; the kernel's handler must take exactly one
/// PMI (handled, not busy), acknowledge the status and unmask LVTPC, and the counter must go on
/// counting. Twice: a second PMI only arrives if the first left LVTPC unmasked.
pub(super) fn pmi_handler(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let Some(instructions) = selftest::instructions(&ctx.caps) else {
        return Ok(Outcome::Fail("no instructions event".into()));
    };
    let second = if ctx.caps.has_fixed(0) {
        (Counter::Fixed(0), selftest::fixed_select(0))
    } else {
        (Counter::Gp(0), instructions)
    };
    let period = 5 * N;
    let (lo, hi) = (10 * N - period, 10 * N + N / 5 - period);
    let mut ok = true;
    let mut items = Items::default();
    for (counter, select) in [(Counter::Gp(0), instructions), second] {
        let mods = Modifiers {
            int: true,
            ..Modifiers::default()
        };
        let one = CounterSet::one(counter);
        locked(|pmu, msr| {
            let all = pmu.backend.all_counters();
            pmu.backend.ack_overflow(msr, all)?;
            pmu.backend.program(msr, counter, &select, &mods)?;
            pmu.backend.arm_period(msr, counter, period)?;
            pmu.backend.enable(msr, one)
        })?;
        let before = Pmis::now();
        cpu::enable_interrupts();
        known_loop();
        cpu::disable_interrupts();
        let pmis = Pmis::now().since(before);
        let lvt = lvtpc_unmasked();
        let (value, pending) = locked(|pmu, msr| {
            pmu.backend.disable(msr, one)?;
            let value = pmu.backend.read(msr, counter)?;
            let pending = pmu.backend.overflow_status(msr)?.contains(counter);
            pmu.backend.release(msr, counter)?;
            Ok((value, pending))
        })?;
        let exact = pmis
            == Pmis {
                handled: 1,
                busy: 0,
                spurious: 0,
            };
        let counted = selftest::in_range(value, lo, hi);
        ok &= exact && counted && !pending && lvt;
        items.add(format_args!(
            "{counter}: PMIs {pmis}{}; then counted to {value} (expected [{lo}, {hi}]); status {}; LVTPC {};",
            if exact { "" } else { " (expected 1 handled)" },
            if pending {
                "still set (expected acknowledged)"
            } else {
                "acknowledged"
            },
            if lvt { "unmasked" } else { "masked" }
        ));
    }
    Ok(Outcome::verdict(
        ok,
        format!(
            "period {period} in a {N}-iteration loop run with interrupts on and the PMU free: {}",
            items.0
        ),
    ))
}

//! Running the PMU selftest on the machine (see `selftest` for the plan and the records).
//!
//! Each check programs counters through the active backend, runs a loop whose instruction and
//! branch counts are known (`baremark_hw::cpu::known_loop`: 10 instructions and 1 branch per
//! iteration), and compares. The counters count user and kernel mode, so the few hundred
//! instructions of the enable/disable calls around the loop fall inside the tolerance (as in
//! kvm-unit-tests: [10N, 10.2N] for instructions).

use alloc::format;
use alloc::string::String;
use core::sync::atomic::Ordering::Relaxed;

use baremark_hw::cpu;
use events::catalog::{self, Generic};
use events::event::{EventSelect, Modifiers};

use crate::console::record;
use crate::counters::{self, HwMsr, PMI_COUNTS, Pmu};
use crate::pmu::backend::{Counter, CounterSet, PmuError};
use crate::pmu::msr::Msr;
use crate::pmu::regs;
use crate::selftest::{self, Check, Outcome, Summary};

/// Loop iterations for the counting checks: 1 million instructions.
const N: u64 = 100_000;

/// Runs every check and emits the records. Returns the totals.
pub fn run() -> Summary {
    let mut summary = Summary::default();
    let plan =
        counters::with_pmu(|pmu, _| selftest::plan(pmu.backend.caps(), &pmu.discovery.reason));
    let Some(plan) = plan else {
        record("error", |r| {
            r.str("source", "selftest")
                .str("message", "the PMU was not initialised")
        });
        return summary;
    };
    for (check, skip) in plan {
        let outcome = match skip {
            Some(reason) => Outcome::Skip(reason),
            None => counters::with_pmu(|pmu, msr| run_check(check, pmu, msr))
                .unwrap_or_else(|| Outcome::Fail("the PMU was not initialised".into())),
        };
        summary.add(&outcome);
        record("selftest", |r| {
            r.str("check", check.name())
                .str("result", outcome.result())
                .str("detail", outcome.detail())
        });
        crate::say!(
            "selftest {:<18} {:<4} {}",
            check.name(),
            outcome.result().to_uppercase(),
            outcome.detail()
        );
    }
    record("selftest_summary", |r| {
        r.u64("checks", summary.total() as u64)
            .u64("passed", summary.passed as u64)
            .u64("failed", summary.failed as u64)
            .u64("skipped", summary.skipped as u64)
    });
    crate::say!(
        "SUMMARY: {} tests, {} unexpected failures, {} skipped",
        summary.total(),
        summary.failed,
        summary.skipped
    );
    summary
}

fn run_check(check: Check, pmu: &mut Pmu, msr: &mut HwMsr) -> Outcome {
    let result = match check {
        Check::GpInstructions => gp_loop(pmu, msr, Generic::Instructions, N * 10, N * 10 + N / 5),
        Check::GpBranches => gp_loop(pmu, msr, Generic::BranchInstructions, N, N + N / 50),
        Check::FixedCounters => fixed_counters(pmu, msr),
        Check::RdpmcGp => rdpmc_agrees(pmu, msr, Counter::Gp(0)),
        Check::RdpmcFixed => rdpmc_agrees(pmu, msr, Counter::Fixed(0)),
        Check::RdpmcFast => rdpmc_fast(pmu, msr),
        Check::LegacyWrite => legacy_write(pmu, msr),
        Check::FullWidthWrite => full_width_write(pmu, msr),
        Check::OverflowStatus => overflow(pmu, msr, false),
        Check::OverflowPmi => overflow(pmu, msr, true),
        Check::CounterMask => counter_mask(pmu, msr),
        Check::RdpmcRing3 => Ok(Outcome::Skip("needs ring-3 tasks".into())),
    };
    result.unwrap_or_else(|e| Outcome::Fail(format!("PMU error: {e}")))
}

fn select(pmu: &Pmu, g: Generic) -> Result<EventSelect, PmuError> {
    catalog::generic(g, pmu.backend.caps())
        .map(|e| e.select)
        .map_err(|_| PmuError::NotSupported("the event is not available on this PMU"))
}

/// Programs `counter`, zeroes it, counts `iterations` of the known loop, and returns the count.
fn count_loop(
    pmu: &mut Pmu,
    msr: &mut dyn Msr,
    counter: Counter,
    sel: &EventSelect,
    iterations: u64,
) -> Result<u64, PmuError> {
    let b = &mut pmu.backend;
    b.program(msr, counter, sel, &Modifiers::default())?;
    b.write(msr, counter, 0)?;
    let set = CounterSet::one(counter);
    b.enable(msr, set)?;
    cpu::known_loop(iterations);
    b.disable(msr, set)?;
    let value = b.read(msr, counter)?;
    b.release(msr, counter)?;
    Ok(value)
}

fn gp_loop(
    pmu: &mut Pmu,
    msr: &mut dyn Msr,
    g: Generic,
    lo: u64,
    hi: u64,
) -> Result<Outcome, PmuError> {
    let sel = select(pmu, g)?;
    let mut counts = String::new();
    let mut ok = true;
    for i in 0..pmu.backend.caps().gp_counters {
        let v = count_loop(pmu, msr, Counter::Gp(i), &sel, N)?;
        ok &= selftest::in_range(v, lo, hi);
        counts.push_str(&format!("{}gp{i}={v}", if i > 0 { " " } else { "" }));
    }
    let detail = format!(
        "{} of a {N}-iteration loop, expected [{lo}, {hi}]: {counts}",
        g.name()
    );
    Ok(if ok {
        Outcome::Pass(detail)
    } else {
        Outcome::Fail(detail)
    })
}

fn fixed_counters(pmu: &mut Pmu, msr: &mut dyn Msr) -> Result<Outcome, PmuError> {
    let caps = *pmu.backend.caps();
    let mut detail = String::new();
    let mut ok = true;
    if caps.has_fixed(0) {
        let v = count_loop(pmu, msr, Counter::Fixed(0), &EventSelect::new(0xc0, 0), N)?;
        let (lo, hi) = (N * 10, N * 10 + N / 5);
        ok &= selftest::in_range(v, lo, hi);
        detail.push_str(&format!("fixed0 instructions={v} expected [{lo}, {hi}]"));
    }
    if caps.has_fixed(1) {
        let v = count_loop(pmu, msr, Counter::Fixed(1), &EventSelect::new(0x3c, 0), N)?;
        ok &= v > 0;
        detail.push_str(&format!("; fixed1 cycles={v} expected > 0"));
    }
    Ok(if ok {
        Outcome::Pass(detail)
    } else {
        Outcome::Fail(detail)
    })
}

fn rdpmc_agrees(pmu: &mut Pmu, msr: &mut dyn Msr, counter: Counter) -> Result<Outcome, PmuError> {
    let sel = match counter {
        Counter::Fixed(_) => EventSelect::new(0xc0, 0),
        Counter::Gp(_) => select(pmu, Generic::Instructions)?,
    };
    let b = &mut pmu.backend;
    let Some(index) = b.rdpmc_index(counter) else {
        return Ok(Outcome::Skip(format!(
            "{counter} is not readable with RDPMC"
        )));
    };
    b.program(msr, counter, &sel, &Modifiers::default())?;
    b.write(msr, counter, 0)?;
    b.enable(msr, CounterSet::one(counter))?;
    cpu::known_loop(N);
    b.disable(msr, CounterSet::one(counter))?;
    let by_msr = b.read(msr, counter)?;
    let by_rdpmc = msr.rdpmc(index);
    b.release(msr, counter)?;
    Ok(match by_rdpmc {
        Ok(v) if v == by_msr => Outcome::Pass(format!("RDPMC({index:#x}) = MSR read = {v}")),
        Ok(v) => Outcome::Fail(format!("RDPMC({index:#x}) = {v}, MSR read = {by_msr}")),
        Err(f) => Outcome::Fail(format!("RDPMC({index:#x}) faulted ({f:?})")),
    })
}

fn rdpmc_fast(pmu: &mut Pmu, msr: &mut dyn Msr) -> Result<Outcome, PmuError> {
    let sel = select(pmu, Generic::Instructions)?;
    let b = &mut pmu.backend;
    let counter = Counter::Gp(0);
    b.program(msr, counter, &sel, &Modifiers::default())?;
    // 0x7654_3210 is writable through both aliases (bit 31 clear), so the check works without
    // full-width writes too.
    b.write(msr, counter, 0x7654_3210)?;
    let full = b.read(msr, counter)?;
    let fast = msr.rdpmc(regs::intel::RDPMC_FAST);
    b.release(msr, counter)?;
    Ok(match fast {
        Ok(v) if v == full & 0xffff_ffff => {
            Outcome::Pass(format!("fast RDPMC = {v:#x} = low 32 bits of {full:#x}"))
        }
        Ok(v) => Outcome::Fail(format!("fast RDPMC = {v:#x}, counter = {full:#x}")),
        Err(_) => {
            Outcome::Skip("fast RDPMC raises #GP on this CPU (allowed on newer parts)".into())
        }
    })
}

/// The kvm-unit-tests value: 0xff0123456789.
const WIDE: u64 = 0xff01_2345_6789;

fn stop_gp0(pmu: &mut Pmu, msr: &mut dyn Msr) -> Result<(), PmuError> {
    let sel = select(pmu, Generic::Instructions)?;
    pmu.backend
        .program(msr, Counter::Gp(0), &sel, &Modifiers::default())
}

fn legacy_write(pmu: &mut Pmu, msr: &mut dyn Msr) -> Result<Outcome, PmuError> {
    stop_gp0(pmu, msr)?;
    let width = pmu.backend.width(Counter::Gp(0));
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let pmc0 = regs::intel::PMC0;
    let written = msr.write(pmc0, WIDE);
    let read = msr.read(pmc0);
    pmu.backend.release(msr, Counter::Gp(0))?;
    // Bits 31:0 kept, sign-extended from bit 31 (clear here), masked to the width.
    let expected = ((WIDE as u32 as i32) as i64 as u64) & mask;
    Ok(match (written, read) {
        (Ok(()), Ok(v)) if v == expected => {
            Outcome::Pass(format!("wrote {WIDE:#x} via IA32_PMC0, read {v:#x}"))
        }
        (Ok(()), Ok(v)) => Outcome::Fail(format!(
            "wrote {WIDE:#x} via IA32_PMC0, read {v:#x}, expected {expected:#x}"
        )),
        (w, r) => Outcome::Fail(format!("IA32_PMC0 access faulted: write {w:?}, read {r:?}")),
    })
}

fn full_width_write(pmu: &mut Pmu, msr: &mut dyn Msr) -> Result<Outcome, PmuError> {
    stop_gp0(pmu, msr)?;
    let width = pmu.backend.width(Counter::Gp(0));
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let value = WIDE & mask;
    let result = pmu.backend.write(msr, Counter::Gp(0), value);
    let read = pmu.backend.read(msr, Counter::Gp(0));
    pmu.backend.release(msr, Counter::Gp(0))?;
    result?;
    let v = read?;
    Ok(if v == value {
        Outcome::Pass(format!(
            "wrote {value:#x} at full width ({width} bits), read it back"
        ))
    } else {
        Outcome::Fail(format!("wrote {value:#x}, read {v:#x}"))
    })
}

fn overflow(pmu: &mut Pmu, msr: &mut dyn Msr, with_int: bool) -> Result<Outcome, PmuError> {
    let sel = select(pmu, Generic::Instructions)?;
    let counter = Counter::Gp(0);
    let set = CounterSet::one(counter);
    let mods = Modifiers {
        int: with_int,
        ..Modifiers::default()
    };
    let period = 1000;
    let before = PMI_COUNTS.handled.load(Relaxed) + PMI_COUNTS.busy.load(Relaxed);
    let b = &mut pmu.backend;
    b.program(msr, counter, &sel, &mods)?;
    b.arm_period(msr, counter, period)?;
    b.enable(msr, set)?;
    // Interrupts on while counting, so a PMI can arrive; the loop is 10x the period.
    cpu::enable_interrupts();
    cpu::known_loop(period);
    b.disable(msr, set)?;
    for _ in 0..1000 {
        core::hint::spin_loop();
    }
    cpu::disable_interrupts();
    let status = b.overflow_status(msr)?;
    b.ack_overflow(msr, status)?;
    let after_ack = b.overflow_status(msr)?;
    b.release(msr, counter)?;
    let pmis = PMI_COUNTS.handled.load(Relaxed) + PMI_COUNTS.busy.load(Relaxed) - before;
    let detail = format!(
        "period {period}, INT {}: status before ack {:?}, after ack {:?}, PMIs {pmis}",
        if with_int { "set" } else { "clear" },
        status,
        after_ack
    );
    let ok = if with_int {
        // The PMI handler acknowledged the overflow itself.
        pmis >= 1
    } else {
        status.contains(counter) && after_ack.is_empty() && pmis == 0
    };
    Ok(if ok {
        Outcome::Pass(detail)
    } else {
        Outcome::Fail(detail)
    })
}

fn counter_mask(pmu: &mut Pmu, msr: &mut dyn Msr) -> Result<Outcome, PmuError> {
    let sel = select(pmu, Generic::Instructions)?;
    let plain = count_loop(pmu, msr, Counter::Gp(0), &sel, N)?;
    let masked_sel = EventSelect { cmask: 2, ..sel };
    let masked = count_loop(pmu, msr, Counter::Gp(0), &masked_sel, N)?;
    let detail = format!("instructions {plain}, with cmask=2 {masked}");
    Ok(if masked < plain {
        Outcome::Pass(detail)
    } else {
        Outcome::Fail(detail)
    })
}

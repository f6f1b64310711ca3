//! Running the PMU selftest on the machine (see `selftest` for the plan, the events, the ranges
//! and the verdict rules, and docs/pmu.md for the table of checks).
//!
//! The checks program counters through the active backend, or through the MSR door directly
//! where the check is about the hardware's own behaviour (write widths, a write to a running
//! counter, RDPMC forms), run a loop whose instruction and branch counts are known
//! (`baremark_hw::cpu::known_loop`: 10 instructions and 1 branch per iteration, N iterations)
//! and compare with kvm-unit-tests' ranges. The counters count user and kernel mode, so the few
//! hundred instructions of the enable/disable calls around the loop fall inside the tolerance.
//!
//! Interrupts are off while checks measure, as in kvm-unit-tests, so a count is the same every
//! time the same code runs. The PMU lock is held only while a check programs or reads the PMU:
//! a PMI is taken with the lock free, by the kernel's real handler (`pmu::machine::on_pmi`).
//!
//! - `counting`: the GP events, the fixed counters and their bitmap, all counters at once, cmask;
//! - `access`: RDPMC forms, write widths, a write to a running counter, writes to the global
//!   registers;
//! - `overflow`: overflow on every counter, and the PMI through the kernel's handler;
//! - `ring3`: RDPMC from ring 3 with and without CR4.PCE.

mod access;
mod counting;
mod overflow;
mod ring3;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering::Relaxed;

use baremark_hw::cpu;
use events::event::{EventSelect, Modifiers};
use events::pmu::PmuCaps;

use crate::output::console::record;
use crate::pmu::backend::{Counter, CounterSet, PmuError};
use crate::pmu::machine::{self as counters, HwMsr, PMI_COUNTS, Pmu};
use crate::selftest::{self, Check, Outcome, Summary};

/// Iterations of the known loop in a counting check: 1 million instructions.
const N: u64 = 100_000;

/// What every check may need to know about the PMU, read once.
struct Ctx {
    caps: PmuCaps,
    /// Raw CPUID 0x0A (zeros on AMD).
    leaf_0a: [u32; 4],
}

impl Ctx {
    fn gp_counters(&self) -> impl Iterator<Item = Counter> + use<> {
        (0..self.caps.gp_counters.min(32)).map(Counter::Gp)
    }
    fn fixed_counters(&self) -> impl Iterator<Item = Counter> + use<> {
        let mask = self.caps.fixed_mask;
        (0..32u8)
            .filter(move |i| mask & (1 << i) != 0)
            .map(Counter::Fixed)
    }
    fn width(&self, counter: Counter) -> u8 {
        match counter {
            Counter::Gp(_) => self.caps.gp_width,
            Counter::Fixed(_) => self.caps.fixed_width,
        }
    }
}

/// Runs every check and emits the records. Returns the totals.
pub fn run() -> Summary {
    let mut summary = Summary::default();
    let setup = counters::with_pmu(|pmu, _| {
        (
            selftest::plan(pmu.backend.caps(), &pmu.discovery.reason),
            Ctx {
                caps: *pmu.backend.caps(),
                leaf_0a: pmu.discovery.leaf_0a,
            },
        )
    });
    let Some((plan, ctx)) = setup else {
        record("error", |r| {
            r.str("source", "selftest")
                .str("message", "the PMU was not initialised")
        });
        return summary;
    };
    let interrupts_were_on = cpu::interrupts_enabled();
    cpu::disable_interrupts();
    if plan.iter().any(|(_, skip)| skip.is_none()) {
        // As kvm-unit-tests' warm_up: the first loops would otherwise pay for cold caches.
        for _ in 0..10 {
            cpu::known_loop(N);
        }
    }
    for (check, skip) in plan {
        let outcome = match skip {
            Some(reason) => Outcome::Skip(reason),
            None => run_check(check, &ctx),
        };
        // A check never leaves interrupts on, but a failed one must not spoil the next.
        cpu::disable_interrupts();
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
    if interrupts_were_on {
        cpu::enable_interrupts();
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

fn run_check(check: Check, ctx: &Ctx) -> Outcome {
    let result = match check {
        Check::RdpmcInvalid => access::rdpmc_invalid(ctx),
        Check::GpCycles
        | Check::GpInstructions
        | Check::GpRefCycles
        | Check::GpLlcReferences
        | Check::GpLlcMisses
        | Check::GpBranches
        | Check::GpBranchMisses => counting::gp_event(ctx, check),
        Check::FixedCounters => counting::fixed_counters(ctx),
        Check::FixedBitmap => counting::fixed_bitmap(ctx),
        Check::RdpmcGp => access::rdpmc_gp(ctx),
        Check::RdpmcFixed => access::rdpmc_fixed(ctx),
        Check::RdpmcFast => access::rdpmc_fast(ctx),
        Check::AllCounters => counting::all_counters(ctx),
        Check::Overflow => overflow::overflow(ctx),
        Check::CounterMask => counting::counter_mask(ctx),
        Check::RunningWrite => access::running_write(ctx),
        Check::LegacyWrite => access::legacy_write(ctx),
        Check::FullWidthWrite => access::full_width_write(ctx),
        Check::GlobalWrites => access::global_writes(ctx),
        Check::PmiHandler => overflow::pmi_handler(ctx),
        Check::RdpmcRing3 => ring3::rdpmc_ring3(ctx),
    };
    result.unwrap_or_else(|e| Outcome::Fail(format!("PMU error: {e}")))
}

/// Runs `f` with the PMU locked; the lock is free again when it returns.
fn locked<R>(f: impl FnOnce(&mut Pmu, &mut HwMsr) -> Result<R, PmuError>) -> Result<R, PmuError> {
    counters::with_pmu(f).unwrap_or(Err(PmuError::NotSupported("the PMU was not initialised")))
}

/// One counter of a measurement: what it counts, its preset, and whether it interrupts.
#[derive(Clone, Copy)]
struct Slot {
    counter: Counter,
    select: EventSelect,
    preset: u64,
    int: bool,
}

impl Slot {
    fn new(counter: Counter, select: EventSelect) -> Slot {
        Slot {
            counter,
            select,
            preset: 0,
            int: false,
        }
    }
}

/// Programs the slots, starts them together, runs `work`, stops them, and returns their values
/// and the TSC ticks from just before the start to just after the stop. The counters stay
/// programmed (see [`release`]), so an overflow can still be handled.
fn measure(
    pmu: &mut Pmu,
    msr: &mut HwMsr,
    slots: &[Slot],
    work: &dyn Fn(),
) -> Result<(Vec<u64>, u64), PmuError> {
    let b = &mut pmu.backend;
    let mut set = CounterSet::EMPTY;
    for s in slots {
        let mods = Modifiers {
            int: s.int,
            ..Modifiers::default()
        };
        b.program(msr, s.counter, &s.select, &mods)?;
        b.write(msr, s.counter, s.preset)?;
        set = set.union(CounterSet::one(s.counter));
    }
    let t0 = cpu::rdtsc_ordered();
    b.enable(msr, set)?;
    work();
    b.disable(msr, set)?;
    let t1 = cpu::rdtsc_ordered();
    let values = slots
        .iter()
        .map(|s| b.read(msr, s.counter))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((values, t1.wrapping_sub(t0)))
}

/// Releases the slots' counters (every one, even if one fails).
fn release(pmu: &mut Pmu, msr: &mut HwMsr, slots: &[Slot]) -> Result<(), PmuError> {
    let mut result = Ok(());
    for s in slots {
        let r = pmu.backend.release(msr, s.counter);
        if result.is_ok() {
            result = r;
        }
    }
    result
}

/// [`measure`] then [`release`], with the PMU locked.
fn measure_once(slots: &[Slot], work: &dyn Fn()) -> Result<(Vec<u64>, u64), PmuError> {
    locked(|pmu, msr| {
        let measured = measure(pmu, msr, slots, work);
        let released = release(pmu, msr, slots);
        let m = measured?;
        released?;
        Ok(m)
    })
}

/// The known loop of N iterations.
fn known_loop() {
    cpu::known_loop(N);
}

/// The kernel's PMI counters at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pmis {
    handled: u64,
    busy: u64,
    spurious: u64,
}

impl Pmis {
    fn now() -> Pmis {
        Pmis {
            handled: PMI_COUNTS.handled.load(Relaxed),
            busy: PMI_COUNTS.busy.load(Relaxed),
            spurious: PMI_COUNTS.spurious.load(Relaxed),
        }
    }
    fn since(self, before: Pmis) -> Pmis {
        Pmis {
            handled: self.handled - before.handled,
            busy: self.busy - before.busy,
            spurious: self.spurious - before.spurious,
        }
    }
    fn total(self) -> u64 {
        self.handled + self.busy + self.spurious
    }
}

impl core::fmt::Display for Pmis {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} handled, {} busy, {} spurious",
            self.handled, self.busy, self.spurious
        )
    }
}

/// Opens the interrupt window kvm-unit-tests' `check_irq` opens: interrupts on, with the PMU
/// lock free, for up to 100 000 PAUSEs or until a PMI was counted. Returns the PMIs taken.
fn take_pending_pmis() -> Pmis {
    let before = Pmis::now();
    cpu::enable_interrupts();
    for _ in 0..100_000 {
        if Pmis::now() != before {
            break;
        }
        core::hint::spin_loop();
    }
    cpu::disable_interrupts();
    Pmis::now().since(before)
}

/// Whether LVTPC is unmasked (the handler unmasks it after Intel masked it on delivery).
fn lvtpc_unmasked() -> bool {
    use baremark_hw::apic;
    apic::read(apic::reg::LVT_PERF) & apic::LVT_MASKED == 0
}

/// A list of `name=value` items, space separated.
#[derive(Default)]
struct Items(String);

impl Items {
    fn add(&mut self, item: core::fmt::Arguments<'_>) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        let _ = self.0.write_fmt(item);
    }
}

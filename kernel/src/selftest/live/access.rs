//! Access checks: RDPMC forms, write widths, a write to a running counter and writes to the
//! global registers. They write the counter MSRs with real WRMSRs through the MSR door (`HwMsr`),
//! not through the backend, so what is checked is the PMU's behaviour, #GP included: the door
//! catches the fault.

use alloc::format;
use core::cell::Cell;

use super::{Ctx, Items, N, Slot, known_loop, locked, measure, release};
use crate::pmu::backend::{Counter, CounterSet, PmuError};
use crate::pmu::intel::{legacy_write_result, width_mask};
use crate::pmu::machine::HwMsr;
use crate::pmu::msr::{Msr, MsrFault};
use crate::pmu::regs;
use crate::selftest::{self, Outcome};

/// kvm-unit-tests' value: 0xff0123456789 (wider than 32 bits, within 48).
const WIDE: u64 = 0xff01_2345_6789;
/// kvm-unit-tests' too-wide value: 0xffffff0123456789.
const TOO_WIDE: u64 = 0xffff_ff01_2345_6789;
/// ECX of a counter no PMU has (kvm-unit-tests' `check_invalid_rdpmc_gp`).
const RDPMC_INVALID: u32 = 64;

fn fault_name(f: MsrFault) -> &'static str {
    match f {
        MsrFault::GeneralProtection => "#GP",
        MsrFault::InvalidOpcode => "#UD",
        MsrFault::Protected => "refused by the door (not a counter MSR)",
    }
}

/// RDPMC(64) faults while RDPMC(0) reads. The door reports #GP and #UD alike; as RDPMC(0)
/// works, the instruction exists and the fault of index 64 is the #GP for a bad index.
pub(super) fn rdpmc_invalid(_ctx: &Ctx) -> Result<Outcome, PmuError> {
    let (bad, good) = locked(|_, msr| Ok((msr.rdpmc(RDPMC_INVALID), msr.rdpmc(0))))?;
    let detail = format!(
        "RDPMC({RDPMC_INVALID:#x}) {}; RDPMC(0) {}",
        match bad {
            Ok(v) => format!("returned {v:#x} (expected #GP)"),
            Err(_) => "faulted (#GP)".into(),
        },
        match good {
            Ok(v) => format!("read {v:#x}"),
            Err(_) => "faulted too: RDPMC itself does not work".into(),
        }
    );
    Ok(Outcome::verdict(bad.is_err() && good.is_ok(), detail))
}

/// Writes `value` to `counter` through its plain write MSR, then reads it back with RDPMC at
/// `ecx_extra | index`. Returns (expected, RDPMC result).
fn write_then_rdpmc(
    ctx: &Ctx,
    counter: Counter,
    value: u64,
    ecx_extra: u32,
) -> Result<(u64, u32, Result<u64, MsrFault>), PmuError> {
    let width = ctx.width(counter);
    let addr = selftest::write_msr(&ctx.caps, counter);
    let expected = selftest::written_value(&ctx.caps, counter, value, width);
    locked(|pmu, msr| {
        let index = pmu
            .backend
            .rdpmc_index(counter)
            .ok_or(PmuError::NoSuchCounter(counter))?;
        msr.write(addr, value)
            .map_err(|fault| PmuError::Msr { msr: addr, fault })?;
        let read = msr.rdpmc(index | ecx_extra);
        msr.write(addr, 0)
            .map_err(|fault| PmuError::Msr { msr: addr, fault })?;
        Ok((expected, index | ecx_extra, read))
    })
}

fn rdpmc_all(ctx: &Ctx, counters: &mut dyn Iterator<Item = Counter>) -> Result<Outcome, PmuError> {
    let mut ok = true;
    let mut items = Items::default();
    for counter in counters {
        let (expected, ecx, read) = write_then_rdpmc(ctx, counter, WIDE, 0)?;
        let good = read == Ok(expected);
        ok &= good;
        match read {
            Ok(v) if good => items.add(format_args!("{counter}: RDPMC({ecx:#x})={v:#x}")),
            Ok(v) => items.add(format_args!(
                "{counter}: RDPMC({ecx:#x})={v:#x}, expected {expected:#x}"
            )),
            Err(f) => items.add(format_args!("{counter}: RDPMC({ecx:#x}) {}", fault_name(f))),
        }
    }
    Ok(Outcome::verdict(
        ok,
        format!(
            "wrote {WIDE:#x} (as each alias keeps it), read back: {}",
            items.0
        ),
    ))
}

/// RDPMC of every GP counter returns what was written (kvm-unit-tests' `check_rdpmc`).
pub(super) fn rdpmc_gp(ctx: &Ctx) -> Result<Outcome, PmuError> {
    rdpmc_all(ctx, &mut ctx.gp_counters())
}

/// RDPMC of every fixed counter (ECX bit 30) returns what was written.
pub(super) fn rdpmc_fixed(ctx: &Ctx) -> Result<Outcome, PmuError> {
    rdpmc_all(ctx, &mut ctx.fixed_counters())
}

/// The "fast" RDPMC (ECX bit 31) of every GP and fixed counter. Older Intel parts return the
/// low 32 bits; parts without the fast read treat bit 31 as a reserved counter type and raise
/// #GP, as KVM's vPMU does (kvm-unit-tests skips then). Either is right; a value that is not
/// the low 32 bits is wrong.
pub(super) fn rdpmc_fast(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let mut returned = 0;
    let mut faulted = 0;
    let mut wrong = Items::default();
    for counter in ctx.gp_counters().chain(ctx.fixed_counters()) {
        let (expected, ecx, read) = write_then_rdpmc(ctx, counter, WIDE, regs::intel::RDPMC_FAST)?;
        match read {
            Ok(v) if v == expected & 0xffff_ffff => returned += 1,
            Ok(v) => wrong.add(format_args!(
                "{counter}: RDPMC({ecx:#x})={v:#x}, expected the low 32 bits {:#x}",
                expected & 0xffff_ffff
            )),
            Err(_) => faulted += 1,
        }
    }
    let mut detail = format!(
        "fast RDPMC (ECX bit 31): {returned} returned the low 32 bits, {faulted} raised #GP (the fast read is reserved on this part)"
    );
    if !wrong.0.is_empty() {
        detail.push_str(&format!("; wrong values: {}", wrong.0));
    }
    Ok(Outcome::verdict(wrong.0.is_empty(), detail))
}

/// Reads `addr`, naming it in the error.
fn rd(msr: &mut dyn Msr, addr: u32) -> Result<u64, PmuError> {
    msr.read(addr)
        .map_err(|fault| PmuError::Msr { msr: addr, fault })
}

/// Legacy writes through IA32_PMCx on every GP counter: bits 31:0 kept and sign-extended from
/// bit 31 to the width, whatever the upper bits written, on both aliases.
pub(super) fn legacy_write(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let values = [0x2345_6789, WIDE, TOO_WIDE, 0x8000_0000];
    let full = ctx.caps.full_width_write;
    let mut bad = Items::default();
    let mut writes = 0;
    for counter in ctx.gp_counters() {
        let Counter::Gp(n) = counter else { continue };
        let width = ctx.width(counter);
        let legacy = regs::intel::PMC0 + u32::from(n);
        let full_alias = regs::intel::A_PMC0 + u32::from(n);
        locked(|_, msr| {
            for &v in &values {
                let expected = legacy_write_result(v, width);
                writes += 1;
                if let Err(f) = msr.write(legacy, v) {
                    bad.add(format_args!(
                        "{counter}: WRMSR {legacy:#x} {v:#x} {}",
                        fault_name(f)
                    ));
                    continue;
                }
                let read = rd(msr, legacy)?;
                let read_full = if full {
                    Some(rd(msr, full_alias)?)
                } else {
                    None
                };
                if read != expected || read_full.is_some_and(|r| r != expected) {
                    bad.add(format_args!(
                        "{counter}: wrote {v:#x}, read {read:#x}{}, expected {expected:#x}",
                        read_full
                            .map(|r| format!(" ({r:#x} via IA32_A_PMC{n})"))
                            .unwrap_or_default()
                    ));
                }
            }
            msr.write(legacy, 0)
                .map_err(|fault| PmuError::Msr { msr: legacy, fault })
        })?;
    }
    let detail = format!(
        "{writes} writes through IA32_PMCx ({} GP counters x {:#x}, {WIDE:#x}, {TOO_WIDE:#x}, 0x80000000): bits 31:0 sign-extended{}",
        ctx.caps.gp_counters,
        values[0],
        if full {
            ", the same on IA32_A_PMCx"
        } else {
            ""
        }
    );
    Ok(if bad.0.is_empty() {
        Outcome::Pass(format!(
            "{detail}, e.g. 0x80000000 -> {:#x}",
            legacy_write_result(0x8000_0000, ctx.caps.gp_width)
        ))
    } else {
        Outcome::Fail(format!("{detail}: {}", bad.0))
    })
}

/// Full-width writes: Intel through IA32_A_PMCx (the legacy alias reads the same), AMD through
/// the counter register (the K7 alias of counters 0-3 reads the same with PerfCtrExtCore); the
/// value kept to the width. On Intel a value wider than the counter raises #GP, caught by the
/// MSR door (kvm-unit-tests' `check_gp_counters_write_width`); AMD does not specify one.
pub(super) fn full_width_write(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let intel = ctx.caps.intel_version().is_some();
    let ext_amd = matches!(
        ctx.caps.kind,
        events::pmu::PmuKind::AmdExtCore | events::pmu::PmuKind::AmdPerfMonV2
    );
    let mut bad = Items::default();
    let mut gp_faults = 0;
    for counter in ctx.gp_counters() {
        let Counter::Gp(n) = counter else { continue };
        let mask = width_mask(ctx.width(counter));
        let addr = selftest::write_msr(&ctx.caps, counter);
        // The other register of the same counter, if it has one.
        let alias = if intel {
            Some(regs::intel::PMC0 + u32::from(n))
        } else if ext_amd && n < 4 {
            Some(regs::amd::PERF_CTR0 + u32::from(n))
        } else {
            None
        };
        locked(|_, msr| {
            for v in [0x2345_6789, WIDE & mask] {
                if let Err(f) = msr.write(addr, v) {
                    bad.add(format_args!(
                        "{counter}: WRMSR {addr:#x} {v:#x} {}",
                        fault_name(f)
                    ));
                    continue;
                }
                let read = rd(msr, addr)?;
                let read_alias = alias.map(|a| rd(msr, a)).transpose()?;
                if read != v || read_alias.is_some_and(|r| r != v) {
                    bad.add(format_args!(
                        "{counter}: wrote {v:#x}, read {read:#x}{}",
                        read_alias
                            .map(|r| format!(" ({r:#x} via the alias)"))
                            .unwrap_or_default()
                    ));
                }
            }
            if intel {
                match msr.write(addr, TOO_WIDE) {
                    Err(MsrFault::GeneralProtection) => gp_faults += 1,
                    Err(f) => bad.add(format_args!(
                        "{counter}: WRMSR {addr:#x} {TOO_WIDE:#x}: {} (expected #GP)",
                        fault_name(f)
                    )),
                    Ok(()) => bad.add(format_args!(
                        "{counter}: WRMSR {addr:#x} {TOO_WIDE:#x} took (expected #GP), read {:#x}",
                        rd(msr, addr)?
                    )),
                }
            }
            msr.write(addr, 0)
                .map_err(|fault| PmuError::Msr { msr: addr, fault })
        })?;
    }
    let detail = if intel {
        format!(
            "{} GP counters through IA32_A_PMCx: {WIDE:#x} kept at {} bits, read the same through IA32_PMCx; {TOO_WIDE:#x} raised #GP {gp_faults} times, caught by the MSR door",
            ctx.caps.gp_counters, ctx.caps.gp_width
        )
    } else {
        format!(
            "{} counters: {WIDE:#x} kept at {} bits{}",
            ctx.caps.gp_counters,
            ctx.caps.gp_width,
            if ext_amd {
                ", the same through the K7 PERF_CTR0-3 aliases"
            } else {
                ""
            }
        )
    };
    Ok(if bad.0.is_empty() {
        Outcome::Pass(detail)
    } else {
        Outcome::Fail(format!("{detail}; but: {}", bad.0))
    })
}

/// A WRMSR to a running counter: the value takes and counting goes on from it; a write of all
/// ones makes the next events overflow it (kvm-unit-tests' `check_running_counter_wrmsr`).
pub(super) fn running_write(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let Some(sel) = selftest::instructions(&ctx.caps) else {
        return Ok(Outcome::Fail("no instructions event".into()));
    };
    let counter = Counter::Gp(0);
    let width = ctx.width(counter);
    let addr = selftest::write_msr(&ctx.caps, counter);
    let status_reg = selftest::has_status(&ctx.caps);
    let slots = [Slot::new(counter, sel)];
    const VALUE: u64 = 0x4000_0000;
    let all_ones = width_mask(width);
    // The writes happen inside the measured work, with the backend's counter running; the
    // door is stateless, so a fresh `HwMsr` does them.
    let fault = Cell::new(None);
    let (took, wrapped, status) = locked(|pmu, msr| {
        let took = measure(pmu, msr, &slots, &|| {
            known_loop();
            if let Err(f) = HwMsr.write(addr, VALUE) {
                fault.set(Some(f));
            }
            known_loop();
        })?
        .0[0];
        if status_reg {
            pmu.backend.ack_overflow(msr, CounterSet::one(counter))?;
        }
        let wrapped = measure(pmu, msr, &slots, &|| {
            if let Err(f) = HwMsr.write(addr, all_ones) {
                fault.set(Some(f));
            }
            known_loop();
        })?
        .0[0];
        let status = if status_reg {
            let s = pmu.backend.overflow_status(msr)?;
            pmu.backend.ack_overflow(msr, CounterSet::one(counter))?;
            Some(s.contains(counter))
        } else {
            None
        };
        release(pmu, msr, &slots)?;
        Ok((took, wrapped, status))
    })?;
    if let Some(f) = fault.get() {
        return Ok(Outcome::Fail(format!(
            "WRMSR {addr:#x} to the running counter: {}",
            fault_name(f)
        )));
    }
    let (lo, hi) = (VALUE + 10 * N, VALUE + 10 * N + N / 5);
    let took_ok = selftest::in_range(took, lo, hi);
    let (wlo, whi) = (10 * N - 1, 10 * N + N / 5);
    let wrapped_ok = selftest::in_range(wrapped, wlo, whi);
    let status_ok = status.unwrap_or(true);
    Ok(Outcome::verdict(
        took_ok && wrapped_ok && status_ok,
        format!(
            "wrote {VALUE:#x} to gp0 between two {N}-iteration loops: {took} (expected [{lo}, {hi}]); wrote {all_ones:#x} before one: {wrapped} (expected [{wlo}, {whi}], wrapped){}",
            match status {
                Some(true) => ", overflow status set",
                Some(false) => ", overflow status NOT set",
                None => " (no status register)",
            }
        ),
    ))
}

/// Writes to the global control and status registers (`selftest::global_writes`): AMD
/// PerfMonV2 must drop reserved bits and ignore writes to GlobalStatus (no #GP: Linux's driver
/// writes LbrFreeze to StatusClr at start-up and `~status` after every PMI); Intel must raise
/// #GP for GLOBAL_STATUS and for a reserved GLOBAL_CTRL bit. The global control is put back
/// and the counters' status bits cleared whatever happened.
pub(super) fn global_writes(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let amd = ctx.caps.intel_version().is_none();
    let (ctl_reg, clear_reg) = if amd {
        (regs::amd::GLOBAL_CTL, regs::amd::GLOBAL_STATUS_CLR)
    } else {
        (
            regs::intel::PERF_GLOBAL_CTRL,
            regs::intel::PERF_GLOBAL_OVF_CTRL,
        )
    };
    let counters = u64::from(ctx.caps.gp_mask());
    let mut bad = Items::default();
    let mut done = Items::default();
    let ctl = locked(|_, msr| {
        let ctl = rd(msr, ctl_reg)?;
        for w in selftest::global_writes(&ctx.caps, ctl) {
            let wrote = msr.write(w.msr, w.value);
            match (wrote, w.faults) {
                (Err(MsrFault::GeneralProtection), true) | (Ok(()), false) => {}
                (Err(f), _) => {
                    bad.add(format_args!(
                        "WRMSR {:#x} {:#x}: {}{}",
                        w.msr,
                        w.value,
                        fault_name(f),
                        if w.faults { "" } else { " (expected none)" }
                    ));
                    continue;
                }
                (Ok(()), true) => bad.add(format_args!(
                    "WRMSR {:#x} {:#x} took (expected #GP)",
                    w.msr, w.value
                )),
            }
            let read = rd(msr, w.read)? & w.mask;
            if read == w.expect {
                done.add(format_args!(
                    "{:#x}<-{:#x}{} {:#x}={read:#x}",
                    w.msr,
                    w.value,
                    if w.faults { " #GP," } else { "," },
                    w.read
                ));
            } else {
                bad.add(format_args!(
                    "after WRMSR {:#x} {:#x}: {:#x} reads {read:#x} (masked {:#x}), expected {:#x}",
                    w.msr, w.value, w.read, w.mask, w.expect
                ));
            }
        }
        // Leave the PMU as the check found it, whatever went wrong above.
        msr.write(ctl_reg, ctl).map_err(|fault| PmuError::Msr {
            msr: ctl_reg,
            fault,
        })?;
        msr.write(clear_reg, counters)
            .map_err(|fault| PmuError::Msr {
                msr: clear_reg,
                fault,
            })?;
        Ok(ctl)
    })?;
    let rule = if amd {
        "AMD PerfMonV2: reserved bits dropped, GlobalStatus writes ignored, no #GP"
    } else {
        "Intel: #GP for GLOBAL_STATUS and a reserved GLOBAL_CTRL bit, nothing changed"
    };
    let detail = format!("{rule}; global control {ctl:#x}; {}", done.0);
    Ok(if bad.0.is_empty() {
        Outcome::Pass(detail)
    } else {
        Outcome::Fail(format!("{detail}; but: {}", bad.0))
    })
}

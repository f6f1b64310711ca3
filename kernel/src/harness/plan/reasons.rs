//! The reasons an event is unsupported: nothing to count on a TSC-only PMU, what QEMU's
//! emulated PMU does not model, and what no task's counters can take (missing MSRs, counters).

use alloc::format;
use alloc::string::String;

use events::cpu::Vendor;
use events::event::EventSpec;
use events::pmu::PmuCaps;

use super::Platform;
use crate::pmu::regs::EXTRA_MSRS;

fn msr_name(msr: u32) -> String {
    match EXTRA_MSRS.iter().find(|&&(m, _)| m == msr) {
        Some((_, name)) => format!("MSR {msr:#x} ({name})"),
        None => format!("MSR {msr:#x}"),
    }
}

/// Why nothing is counted on a TSC-only PMU (what `caps` says, nothing more).
pub(super) fn tsc_only_reason(caps: &PmuCaps) -> String {
    let cpu = caps.cpu.map(|c| format!(" ({c})")).unwrap_or_default();
    format!(
        "no programmable counters: the PMU{cpu} is {}, so only the TSC is measured",
        caps.kind
    )
}

/// Why QEMU's emulated PMU (docs/emulated-pmu.md) cannot count `spec`, if it cannot. The model
/// counts instructions, core and reference cycles and branch instructions (Intel's
/// architectural encodings and fixed counters, AMD's 0x76/0xC0/0xC2); with its
/// micro-architecture model (`uarch`: the emulator's `pmu-uarch=on`) also the events of its
/// data caches and branch predictor, plain (no CMASK, INV or EDGE).
pub(super) fn emulated_blocker(spec: &EventSpec, caps: &PmuCaps, uarch: bool) -> Option<String> {
    let d = &spec.event;
    let s = &d.select;
    if let Some(x) = d.extra {
        return Some(format!(
            "the emulated PMU (QEMU TCG model) has no {}: `{}` needs it",
            msr_name(x.msr),
            d.name
        ));
    }
    let plain = s.cmask == 0 && !s.inv && !s.edge;
    let modelled = if d.has_gp_encoding() {
        if s.umask2 != 0 || s.in_tx || s.any_thread {
            false
        } else {
            match caps.vendor {
                Vendor::Intel => {
                    matches!((s.code, s.umask), (0xc0 | 0xc4, 0) | (0x3c, 0 | 1))
                        // LLC references and misses, L1D.REPLACEMENT, branch misses retired.
                        || (uarch
                            && plain
                            && matches!(
                                (s.code, s.umask),
                                (0x2e, 0x4f | 0x41) | (0x51, 0x01) | (0xc5, 0)
                            ))
                }
                Vendor::Amd => {
                    (s.umask == 0 && matches!(s.code, 0x76 | 0xc0 | 0xc2))
                        // L2 requests (all; from data-cache misses), L2 misses (from data-cache
                        // misses), the K8-era L2 requests and misses, mispredicted branches.
                        || (uarch
                            && plain
                            && matches!(
                                (s.code, s.umask),
                                (0x60, 0xff | 0xc8) | (0x64, 0x09) | (0x7d | 0x7e, 0x07) | (0xc3, 0)
                            ))
                }
            }
        }
    } else {
        d.fixed.is_some_and(|i| i < 3)
    };
    (!modelled).then(|| {
        let counts = if uarch {
            "it counts instructions, cycles, ref-cycles, branches and, with its micro-architecture model, LLC/L2 references and misses, L1D misses and branch misses only"
        } else {
            "it counts instructions, cycles, ref-cycles and branches only (caches and branch misses need its micro-architecture model: `--uarch`)"
        };
        format!(
            "the emulated PMU (QEMU TCG model) does not model `{}`: {counts}",
            d.name
        )
    })
}

/// Why an event cannot go on a task's counters whatever else is counted, if it cannot.
pub(super) fn task_blocker(
    spec: &EventSpec,
    caps: &PmuCaps,
    platform: &Platform,
) -> Option<String> {
    let d = &spec.event;
    if let Some(x) = d.extra {
        let what = msr_name(x.msr);
        if !EXTRA_MSRS.iter().any(|&(m, _)| m == x.msr) {
            return Some(format!(
                "it needs {what} programmed with its event select, which baremark does not write"
            ));
        }
        if caps.vendor != Vendor::Intel {
            return Some(format!(
                "it needs {what} programmed with its event select, an Intel MSR this AMD PMU does not have"
            ));
        }
        if !platform.has_msr(x.msr) {
            return Some(format!(
                "it needs {what} programmed with its event select, and this CPU does not have it (reading it raised #GP)"
            ));
        }
    }
    if !d.has_gp_encoding() {
        return match d.fixed {
            Some(i) if caps.has_fixed(i) => None,
            Some(i) => Some(format!(
                "it counts only on fixed counter {i}, which this PMU does not have"
            )),
            None => Some(String::from("it has no GP encoding")),
        };
    }
    if caps.gp_counters == 0 && !d.fixed.is_some_and(|i| caps.has_fixed(i)) {
        return Some(String::from("this PMU has no GP counters"));
    }
    None
}

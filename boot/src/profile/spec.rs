//! `--sample EVENT@PERIOD`: the event named as perf names it, encoded for the PMU the run will
//! have, as a `counters_configure` entry (a GP event select without EN and INT), and the
//! run.cfg `sample` key (docs/run-config.md, docs/profiling.md).

use anyhow::{Result, bail};
use events::cpu::{CpuModel, Vendor};
use events::encode::gp_event_select;
use events::pmu::PmuCaps;

/// The largest period the kernel takes (2^31 - 1: Intel's legacy counter writes are
/// sign-extended 32-bit values).
pub const PERIOD_MAX: u64 = (1 << 31) - 1;
/// The smallest (every period costs the task a PMI and a kernel round trip:
/// `task::threshold::PERIOD_MIN` in the kernel).
pub const PERIOD_MIN: u64 = 1000;

/// One sampled event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleSpec {
    /// The event as typed (`instructions:u`).
    pub event: String,
    /// Its `counters_configure` entry.
    pub word: u64,
    /// Events between two samples.
    pub period: u64,
}

/// `EVENT@PERIOD` split and checked (the period only; the event needs a PMU).
pub fn split(arg: &str) -> Result<(&str, u64)> {
    let Some((event, period)) = arg.rsplit_once('@') else {
        bail!(
            "--sample {arg}: give EVENT@PERIOD, e.g. instructions:u@10007 (a sample every \
             PERIOD events)"
        );
    };
    let event = event.trim();
    if event.is_empty() {
        bail!("--sample {arg}: no event before `@`");
    }
    let period = period.trim();
    if period.is_empty() {
        bail!(
            "--sample {arg}: no period after `@` (events between two samples, {PERIOD_MIN} to {PERIOD_MAX})"
        );
    }
    match period.parse::<u64>() {
        Ok(p) if (PERIOD_MIN..=PERIOD_MAX).contains(&p) => Ok((event, p)),
        Ok(0) => {
            bail!("--sample {arg}: the period is 0; it is {PERIOD_MIN} to {PERIOD_MAX} events")
        }
        Ok(p) if p < PERIOD_MIN => bail!(
            "--sample {arg}: the period {p} is too small: at least {PERIOD_MIN} events (every \
             period costs the task a PMI and a kernel round trip)"
        ),
        Ok(_) => bail!(
            "--sample {arg}: the period {period} is too large: at most {PERIOD_MAX} events \
             (2^31 - 1)"
        ),
        Err(_) => bail!(
            "--sample {arg}: the period `{period}` is not a whole number of events (1 to \
             {PERIOD_MAX})"
        ),
    }
}

/// Encodes every `--sample` argument for `caps`: one event each, with a GP encoding, at most
/// as many as the PMU has GP counters. `what` names the PMU in errors.
pub fn encode(args: &[String], caps: &PmuCaps, what: &str) -> Result<Vec<SampleSpec>> {
    if caps.gp_counters == 0 {
        bail!("--sample needs programmable counters, and {what} has none");
    }
    if args.len() > usize::from(caps.gp_counters) {
        bail!(
            "--sample is given {} times, but {what} has {} GP counters (one per sampled event)",
            args.len(),
            caps.gp_counters
        );
    }
    let mut out = Vec::new();
    for arg in args {
        let (text, period) = split(arg)?;
        let list = events::parse::parse(text, caps, None).map_err(|e| {
            anyhow::anyhow!(
                "--sample {arg}: {e}\n    {}",
                e.caret_line(text).replace('\n', "\n    ")
            )
        })?;
        let mut specs = list.specs();
        let (Some(spec), None) = (specs.next(), specs.next()) else {
            bail!("--sample {arg}: one event per --sample (repeat the option for more)");
        };
        if !spec.event.has_gp_encoding() {
            bail!(
                "--sample {arg}: {} has no GP counter encoding on {what}",
                spec.event.name
            );
        }
        if spec.event.extra.is_some() {
            bail!(
                "--sample {arg}: {} needs an extra MSR, which sampling does not program",
                spec.event.name
            );
        }
        // The kernel sets INT itself and EN while the task runs: the entry has neither.
        let mut m = spec.modifiers;
        m.int = false;
        let word = gp_event_select(caps.vendor, &spec.event.select, &m, false)
            .map_err(|e| anyhow::anyhow!("--sample {arg}: {e}"))?;
        out.push(SampleSpec {
            event: text.to_string(),
            word,
            period,
        });
    }
    Ok(out)
}

/// The run.cfg `sample` value: `WORD@PERIOD[,WORD@PERIOD...]`.
pub fn config_value(specs: &[SampleSpec]) -> String {
    specs
        .iter()
        .map(|s| format!("{:#x}@{}", s.word, s.period))
        .collect::<Vec<_>>()
        .join(",")
}

/// A name for a sampled event word, for a log that does not say what was typed: the generic
/// event (with `:u` or `:k`) whose encoding on `vendor` it is, else the word in hex.
pub fn name_of_word(word: u64, vendor: Option<Vendor>) -> String {
    use events::catalog::{Generic, generic};
    use events::event::Modifiers;
    let vendors: &[Vendor] = match vendor {
        Some(Vendor::Intel) => &[Vendor::Intel],
        Some(Vendor::Amd) => &[Vendor::Amd],
        None => &[Vendor::Intel, Vendor::Amd],
    };
    for &v in vendors {
        let caps = match v {
            Vendor::Intel => PmuCaps::nominal(CpuModel::new(Vendor::Intel, 6, 0x5e)),
            Vendor::Amd => PmuCaps::amd(true, None, Some(CpuModel::new(Vendor::Amd, 0x17, 0x31))),
        };
        for g in Generic::ALL {
            let Ok(desc) = generic(g, &caps) else {
                continue;
            };
            for (usr, os, suffix) in [(true, true, ""), (true, false, ":u"), (false, true, ":k")] {
                let m = Modifiers {
                    usr,
                    os,
                    ..Modifiers::default()
                };
                if gp_event_select(v, &desc.select, &m, false).ok() == Some(word) {
                    return format!("{}{suffix}", g.name());
                }
            }
        }
    }
    format!("{word:#x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skylake client's PMU: 4 GP counters.
    fn intel() -> PmuCaps {
        PmuCaps::nominal(CpuModel::new(Vendor::Intel, 6, 0x5e))
    }

    #[test]
    fn instructions_user_is_the_gp_select_without_en_and_int() {
        let s = encode(&["instructions:u@10007".into()], &intel(), "the PMU").unwrap();
        // event 0xc0, umask 0, USR (bit 16); no EN (bit 22), no INT (bit 20).
        assert_eq!(s[0].word, 0x1_00c0);
        assert_eq!(s[0].period, 10007);
        assert_eq!(s[0].event, "instructions:u");
        let amd = encode(
            &["cycles@100003".into(), "instructions:k@7001".into()],
            &PmuCaps::amd(true, None, Some(CpuModel::new(Vendor::Amd, 0xf, 0x6b))),
            "the PMU",
        )
        .unwrap();
        assert_eq!(config_value(&amd), "0x30076@100003,0x200c0@7001");
        assert_eq!(
            name_of_word(0x1_00c0, Some(Vendor::Intel)),
            "instructions:u"
        );
        assert_eq!(name_of_word(0x3_0076, Some(Vendor::Amd)), "cycles");
        assert_eq!(name_of_word(0x1234_5678, None), "0x12345678");
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let err = |a: &str| {
            format!(
                "{:#}",
                encode(&[a.into()], &intel(), "the PMU").unwrap_err()
            )
        };
        assert!(
            err("instructions:u").contains("EVENT@PERIOD"),
            "{}",
            err("instructions:u")
        );
        assert!(err("instructions@").contains("no period"));
        assert!(err("@100").contains("no event"));
        assert!(err("instructions@0").contains("the period is 0"));
        assert!(err("instructions@999").contains("too small"));
        assert!(err("instructions@2147483648").contains("too large"));
        assert!(err("instructions@1e4").contains("not a whole number"));
        let unknown = err("instrucions@1000");
        assert!(
            unknown.contains("instrucions") && unknown.contains('^'),
            "{unknown}"
        );
        assert!(err("{cycles,instructions}@1000").contains("one event per --sample"));
        let five: Vec<String> = (0..5).map(|_| "cycles@1000".to_string()).collect();
        let many = format!("{:#}", encode(&five, &intel(), "the PMU").unwrap_err());
        assert!(
            many.contains("5 times") && many.contains("4 GP counters"),
            "{many}"
        );
        let none = PmuCaps::tsc_only(Vendor::Intel, None);
        let tsc = format!(
            "{:#}",
            encode(&["cycles@10".into()], &none, "plain TCG").unwrap_err()
        );
        assert!(tsc.contains("plain TCG has none"), "{tsc}");
    }
}

//! Derived metrics: ratios and rates computed from counted events and the measurement's
//! context (elapsed time, clock frequencies).
//!
//! The list follows the classic derived metrics of PAPI / pmcCount-style tools (as in the ISI
//! study's list) plus common practice (perf's per-1000-instruction rates):
//!
//! | name | formula | unit |
//! |------|---------|------|
//! | `ipc` | instructions / cycles | instructions/cycle |
//! | `cpi` | cycles / instructions | cycles/instruction |
//! | `branch-miss-ratio` | branch-misses / branches | ratio (0-1) |
//! | `branch-misses-per-instruction` | branch-misses / instructions | misses/instruction |
//! | `branch-mpki` | 1000 × branch-misses / instructions | misses/1000 instructions |
//! | `cache-miss-ratio` | cache-misses / cache-references | ratio (0-1) |
//! | `cache-mpki` | 1000 × cache-misses / instructions | misses/1000 instructions |
//! | `l1d-hit-rate` | (L1-dcache-loads − L1-dcache-load-misses) / L1-dcache-loads | ratio (0-1) |
//! | `l1d-miss-ratio` | L1-dcache-load-misses / L1-dcache-loads | ratio (0-1) |
//! | `l2-hit-rate` | (L2-accesses − L2-misses) / L2-accesses | ratio (0-1) |
//! | `l2-miss-ratio` | L2-misses / L2-accesses | ratio (0-1) |
//! | `mem-fp-ratio` | (mem-loads + mem-stores) / fp-ops | memory ops/FP op |
//! | `mflops` | fp-ops / seconds / 10^6 | MFLOP/s |
//! | `mips` | instructions / seconds / 10^6 | MIPS (10^6 instructions/s) |
//! | `bandwidth` | bytes / seconds / 10^6 | MB/s (10^6 bytes/s) |
//!
//! Inputs are named (see [`INPUTS`]); perf's aliases `cpu-cycles` and `branch-instructions`
//! are accepted for `cycles` and `branches`. `seconds` is the elapsed time: given directly,
//! or derived as `tsc_ticks / tsc_hz` (the TSC runs at a constant rate, so this is wall time),
//! or else as `cycles / frequency_hz` (exact only at a fixed core clock: turbo, frequency
//! scaling and halts make it approximate).
//!
//! A metric is evaluated only when all its inputs are present ([`evaluate`]); the others are
//! listed with what they lack ([`skipped`], [`missing_inputs`]). A zero denominator, a
//! negative or non-finite input, more misses than accesses, or a result that is not finite
//! (overflow) gives [`MetricValue::NotAvailable`] with the reason: never NaN, infinity or a
//! panic.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// The input names metrics use, with what each means.
pub const INPUTS: &[(&str, &str)] = &[
    ("cycles", "core cycles while not halted"),
    ("instructions", "instructions retired"),
    ("branches", "branch instructions retired"),
    ("branch-misses", "mispredicted branches retired"),
    (
        "cache-references",
        "cache references (last-level cache on Intel)",
    ),
    ("cache-misses", "cache misses (last-level cache on Intel)"),
    ("L1-dcache-loads", "L1 data-cache loads"),
    ("L1-dcache-load-misses", "L1 data-cache load misses"),
    ("L2-accesses", "L2 cache accesses"),
    ("L2-misses", "L2 cache misses"),
    ("fp-ops", "floating-point operations (FLOPs)"),
    ("mem-loads", "memory load operations"),
    ("mem-stores", "memory store operations"),
    ("bytes", "bytes moved to or from memory"),
    (
        "seconds",
        "elapsed time in s; if not given, tsc_ticks / tsc_hz or cycles / frequency_hz",
    ),
    (
        "frequency_hz",
        "core clock frequency in Hz (to derive seconds from cycles)",
    ),
    ("tsc_ticks", "TSC ticks elapsed"),
    ("tsc_hz", "TSC frequency in Hz"),
];

/// Other names accepted by [`Inputs::set`] and [`Inputs::get`] (perf's aliases).
const ALIASES: &[(&str, &str)] = &[
    ("cpu-cycles", "cycles"),
    ("branch-instructions", "branches"),
];

fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, canonical)| canonical)
}

/// Values by input name: counted events and context values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    values: Vec<(String, f64)>,
}

impl Inputs {
    pub fn new() -> Inputs {
        Inputs::default()
    }

    /// Sets `name` (replacing an earlier value).
    pub fn set(&mut self, name: &str, value: f64) -> &mut Inputs {
        let name = canonical(name);
        match self.values.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.values.push((String::from(name), value)),
        }
        self
    }

    /// Builder form of [`Inputs::set`].
    pub fn with(mut self, name: &str, value: f64) -> Inputs {
        self.set(name, value);
        self
    }

    /// The value set for `name` (not derived: see [`Inputs::seconds`]).
    pub fn get(&self, name: &str) -> Option<f64> {
        let name = canonical(name);
        self.values.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// Whether `name` is available: set, or for `seconds` derivable.
    pub fn has(&self, name: &str) -> bool {
        match canonical(name) {
            "seconds" => self.seconds().is_some(),
            name => self.get(name).is_some(),
        }
    }

    /// The elapsed time: `seconds` if set, else `tsc_ticks / tsc_hz`, else
    /// `cycles / frequency_hz`; `None` when none of these is available, `Err` with the reason
    /// when the one available gives no positive finite time.
    pub fn seconds(&self) -> Option<Result<f64, &'static str>> {
        if let Some(s) = self.get("seconds") {
            return Some(checked(s).and_then(|s| positive(s, "zero elapsed time")));
        }
        let derive = |ticks: &str, hz: &str, zero_hz: &'static str| {
            let (t, f) = (self.get(ticks)?, self.get(hz)?);
            Some(
                checked(t)
                    .and_then(|t| Ok((t, checked(f)?)))
                    .and_then(|(t, f)| finite(t / positive(f, zero_hz)?))
                    .and_then(|s| positive(s, "zero elapsed time")),
            )
        };
        derive("tsc_ticks", "tsc_hz", "zero TSC frequency")
            .or_else(|| derive("cycles", "frequency_hz", "zero clock frequency"))
    }

    /// The values set, in the order first set.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.values.iter().map(|(n, v)| (n.as_str(), *v))
    }
}

/// A metric's value, or why it has none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricValue {
    /// Always finite.
    Value(f64),
    /// "n/a", with the reason.
    NotAvailable(&'static str),
}

impl MetricValue {
    pub fn value(self) -> Option<f64> {
        match self {
            MetricValue::Value(v) => Some(v),
            MetricValue::NotAvailable(_) => None,
        }
    }
}

impl fmt::Display for MetricValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricValue::Value(v) => write!(f, "{v}"),
            MetricValue::NotAvailable(reason) => write!(f, "n/a ({reason})"),
        }
    }
}

/// A derived metric.
#[derive(Debug)]
pub struct Metric {
    pub name: &'static str,
    pub description: &'static str,
    pub unit: &'static str,
    /// Names from [`INPUTS`].
    pub inputs: &'static [&'static str],
    compute: fn(&Inputs) -> Result<f64, &'static str>,
}

impl Metric {
    /// The metric's value; `NotAvailable("missing input")` if an input is missing.
    pub fn evaluate(&self, inputs: &Inputs) -> MetricValue {
        if !missing_inputs(self, inputs).is_empty() {
            return MetricValue::NotAvailable("missing input");
        }
        match (self.compute)(inputs).and_then(finite) {
            Ok(v) => MetricValue::Value(v),
            Err(reason) => MetricValue::NotAvailable(reason),
        }
    }
}

/// An input's value, if usable: present, finite, not negative (counts and times never are).
fn input(inputs: &Inputs, name: &str) -> Result<f64, &'static str> {
    checked(inputs.get(name).ok_or("missing input")?)
}

fn checked(v: f64) -> Result<f64, &'static str> {
    if !v.is_finite() {
        Err("an input is not finite")
    } else if v < 0.0 {
        Err("an input is negative")
    } else {
        Ok(v)
    }
}

fn finite(v: f64) -> Result<f64, &'static str> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err("result is not finite (overflow)")
    }
}

fn positive(v: f64, zero: &'static str) -> Result<f64, &'static str> {
    if v > 0.0 { Ok(v) } else { Err(zero) }
}

/// `numerator / denominator` of two inputs, with the reason to give for a zero denominator.
fn ratio(i: &Inputs, num: &str, den: &str, zero: &'static str) -> Result<f64, &'static str> {
    let n = input(i, num)?;
    finite(n / positive(input(i, den)?, zero)?)
}

/// `(accesses - misses) / accesses`: misses beyond accesses mean the inputs do not belong
/// together (counted in different slices or scopes), so no rate.
fn hit_rate(
    i: &Inputs,
    accesses: &str,
    misses: &str,
    zero: &'static str,
) -> Result<f64, &'static str> {
    let a = positive(input(i, accesses)?, zero)?;
    let m = input(i, misses)?;
    if m > a {
        return Err("more misses than accesses");
    }
    finite((a - m) / a)
}

/// `count / seconds / 10^6`.
fn per_second_millions(i: &Inputs, count: &str) -> Result<f64, &'static str> {
    let n = input(i, count)?;
    let s = i.seconds().ok_or("missing input")??;
    finite(finite(n / s)? / 1e6)
}

fn ipc(i: &Inputs) -> Result<f64, &'static str> {
    ratio(i, "instructions", "cycles", "no cycles counted")
}
fn cpi(i: &Inputs) -> Result<f64, &'static str> {
    ratio(i, "cycles", "instructions", "no instructions counted")
}
fn branch_miss_ratio(i: &Inputs) -> Result<f64, &'static str> {
    ratio(i, "branch-misses", "branches", "no branches counted")
}
fn branch_misses_per_instruction(i: &Inputs) -> Result<f64, &'static str> {
    ratio(
        i,
        "branch-misses",
        "instructions",
        "no instructions counted",
    )
}
fn branch_mpki(i: &Inputs) -> Result<f64, &'static str> {
    finite(branch_misses_per_instruction(i)? * 1000.0)
}
fn cache_miss_ratio(i: &Inputs) -> Result<f64, &'static str> {
    ratio(
        i,
        "cache-misses",
        "cache-references",
        "no cache references counted",
    )
}
fn cache_mpki(i: &Inputs) -> Result<f64, &'static str> {
    finite(ratio(i, "cache-misses", "instructions", "no instructions counted")? * 1000.0)
}
fn l1d_hit_rate(i: &Inputs) -> Result<f64, &'static str> {
    hit_rate(
        i,
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "no L1 data-cache loads counted",
    )
}
fn l1d_miss_ratio(i: &Inputs) -> Result<f64, &'static str> {
    // 1 - hit rate, so that both refuse the same inconsistent inputs.
    l1d_hit_rate(i).map(|h| 1.0 - h)
}
fn l2_hit_rate(i: &Inputs) -> Result<f64, &'static str> {
    hit_rate(i, "L2-accesses", "L2-misses", "no L2 accesses counted")
}
fn l2_miss_ratio(i: &Inputs) -> Result<f64, &'static str> {
    l2_hit_rate(i).map(|h| 1.0 - h)
}
fn mem_fp_ratio(i: &Inputs) -> Result<f64, &'static str> {
    let mem = finite(input(i, "mem-loads")? + input(i, "mem-stores")?)?;
    finite(mem / positive(input(i, "fp-ops")?, "no floating-point operations counted")?)
}
fn mflops(i: &Inputs) -> Result<f64, &'static str> {
    per_second_millions(i, "fp-ops")
}
fn mips(i: &Inputs) -> Result<f64, &'static str> {
    per_second_millions(i, "instructions")
}
fn bandwidth(i: &Inputs) -> Result<f64, &'static str> {
    per_second_millions(i, "bytes")
}

static METRICS: [Metric; 15] = [
    Metric {
        name: "ipc",
        description: "Instructions per cycle",
        unit: "instructions/cycle",
        inputs: &["instructions", "cycles"],
        compute: ipc,
    },
    Metric {
        name: "cpi",
        description: "Cycles per instruction",
        unit: "cycles/instruction",
        inputs: &["cycles", "instructions"],
        compute: cpi,
    },
    Metric {
        name: "branch-miss-ratio",
        description: "Fraction of branches mispredicted",
        unit: "ratio (0-1)",
        inputs: &["branch-misses", "branches"],
        compute: branch_miss_ratio,
    },
    Metric {
        name: "branch-misses-per-instruction",
        description: "Mispredicted branches per instruction retired",
        unit: "misses/instruction",
        inputs: &["branch-misses", "instructions"],
        compute: branch_misses_per_instruction,
    },
    Metric {
        name: "branch-mpki",
        description: "Mispredicted branches per 1000 instructions retired",
        unit: "misses/1000 instructions",
        inputs: &["branch-misses", "instructions"],
        compute: branch_mpki,
    },
    Metric {
        name: "cache-miss-ratio",
        description: "Fraction of cache references that missed",
        unit: "ratio (0-1)",
        inputs: &["cache-misses", "cache-references"],
        compute: cache_miss_ratio,
    },
    Metric {
        name: "cache-mpki",
        description: "Cache misses per 1000 instructions retired",
        unit: "misses/1000 instructions",
        inputs: &["cache-misses", "instructions"],
        compute: cache_mpki,
    },
    Metric {
        name: "l1d-hit-rate",
        description: "Fraction of L1 data-cache loads that hit",
        unit: "ratio (0-1)",
        inputs: &["L1-dcache-loads", "L1-dcache-load-misses"],
        compute: l1d_hit_rate,
    },
    Metric {
        name: "l1d-miss-ratio",
        description: "Fraction of L1 data-cache loads that missed",
        unit: "ratio (0-1)",
        inputs: &["L1-dcache-loads", "L1-dcache-load-misses"],
        compute: l1d_miss_ratio,
    },
    Metric {
        name: "l2-hit-rate",
        description: "Fraction of L2 accesses that hit",
        unit: "ratio (0-1)",
        inputs: &["L2-accesses", "L2-misses"],
        compute: l2_hit_rate,
    },
    Metric {
        name: "l2-miss-ratio",
        description: "Fraction of L2 accesses that missed",
        unit: "ratio (0-1)",
        inputs: &["L2-accesses", "L2-misses"],
        compute: l2_miss_ratio,
    },
    Metric {
        name: "mem-fp-ratio",
        description: "Memory operations (loads + stores) per floating-point operation",
        unit: "memory ops/FP op",
        inputs: &["mem-loads", "mem-stores", "fp-ops"],
        compute: mem_fp_ratio,
    },
    Metric {
        name: "mflops",
        description: "Millions of floating-point operations per second",
        unit: "MFLOP/s",
        inputs: &["fp-ops", "seconds"],
        compute: mflops,
    },
    Metric {
        name: "mips",
        description: "Millions of instructions retired per second",
        unit: "MIPS (10^6 instructions/s)",
        inputs: &["instructions", "seconds"],
        compute: mips,
    },
    Metric {
        name: "bandwidth",
        description: "Memory bandwidth",
        unit: "MB/s (10^6 bytes/s)",
        inputs: &["bytes", "seconds"],
        compute: bandwidth,
    },
];

/// Every metric, in the order of the table in the module documentation.
pub fn all() -> &'static [Metric] {
    &METRICS
}

/// The metric called `name`.
pub fn by_name(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// The metrics whose inputs are all available, with their values.
pub fn evaluate(inputs: &Inputs) -> Vec<(&'static Metric, MetricValue)> {
    METRICS
        .iter()
        .filter(|m| missing_inputs(m, inputs).is_empty())
        .map(|m| (m, m.evaluate(inputs)))
        .collect()
}

/// The inputs of `metric` that are not available (`seconds` counts as available when it can
/// be derived, see [`Inputs::seconds`]).
pub fn missing_inputs(metric: &Metric, inputs: &Inputs) -> Vec<&'static str> {
    metric
        .inputs
        .iter()
        .copied()
        .filter(|name| !inputs.has(name))
        .collect()
}

/// The metrics left out of [`evaluate`], each with its missing inputs.
pub fn skipped(inputs: &Inputs) -> Vec<(&'static Metric, Vec<&'static str>)> {
    METRICS
        .iter()
        .map(|m| (m, missing_inputs(m, inputs)))
        .filter(|(_, missing)| !missing.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use proptest::prelude::*;

    fn value(name: &str, inputs: &Inputs) -> MetricValue {
        by_name(name).unwrap().evaluate(inputs)
    }

    fn close(v: MetricValue, expected: f64) -> bool {
        match v {
            MetricValue::Value(x) => {
                let diff = if x > expected {
                    x - expected
                } else {
                    expected - x
                };
                diff <= 1e-12 * if expected > 1.0 { expected } else { 1.0 }
            }
            MetricValue::NotAvailable(_) => false,
        }
    }

    fn full() -> Inputs {
        Inputs::new()
            .with("cycles", 2_000_000.0)
            .with("instructions", 3_000_000.0)
            .with("branches", 500_000.0)
            .with("branch-misses", 6_000.0)
            .with("cache-references", 40_000.0)
            .with("cache-misses", 10_000.0)
            .with("L1-dcache-loads", 1_000_000.0)
            .with("L1-dcache-load-misses", 50_000.0)
            .with("L2-accesses", 50_000.0)
            .with("L2-misses", 12_500.0)
            .with("fp-ops", 800_000.0)
            .with("mem-loads", 1_000_000.0)
            .with("mem-stores", 200_000.0)
            .with("bytes", 64_000_000.0)
            .with("tsc_ticks", 3_000_000.0)
            .with("tsc_hz", 3_000_000_000.0)
    }

    #[test]
    fn each_metric_with_known_numbers() {
        let i = full();
        let expected = [
            ("ipc", 1.5),
            ("cpi", 2.0 / 3.0),
            ("branch-miss-ratio", 0.012),
            ("branch-misses-per-instruction", 0.002),
            ("branch-mpki", 2.0),
            ("cache-miss-ratio", 0.25),
            ("cache-mpki", 10.0 / 3.0),
            ("l1d-hit-rate", 0.95),
            ("l1d-miss-ratio", 0.05),
            ("l2-hit-rate", 0.75),
            ("l2-miss-ratio", 0.25),
            ("mem-fp-ratio", 1.5),
            // 1 ms of TSC time.
            ("mflops", 800.0),
            ("mips", 3000.0),
            ("bandwidth", 64_000.0),
        ];
        assert_eq!(expected.len(), all().len());
        for (name, want) in expected {
            let got = value(name, &i);
            assert!(close(got, want), "{name}: {got} != {want}");
        }
        assert_eq!(evaluate(&i).len(), all().len());
        assert!(skipped(&i).is_empty());
    }

    #[test]
    fn time_sources() {
        // Explicit seconds win over the TSC, which wins over cycles / frequency.
        let base = Inputs::new().with("fp-ops", 1e9);
        let s = base
            .clone()
            .with("seconds", 2.0)
            .with("tsc_ticks", 1.0)
            .with("tsc_hz", 1.0);
        assert!(close(value("mflops", &s), 500.0));
        let t = base
            .clone()
            .with("tsc_ticks", 4e9)
            .with("tsc_hz", 2e9)
            .with("cycles", 1.0)
            .with("frequency_hz", 1.0);
        assert!(close(value("mflops", &t), 500.0));
        let c = base.clone().with("cycles", 3e9).with("frequency_hz", 3e9);
        assert!(close(value("mflops", &c), 1000.0));
        assert_eq!(base.seconds(), None);
        assert_eq!(c.seconds(), Some(Ok(1.0)));
        // Half a pair is not a source.
        assert!(!base.clone().with("tsc_hz", 1e9).has("seconds"));
    }

    #[test]
    fn aliases() {
        let i = Inputs::new()
            .with("cpu-cycles", 10.0)
            .with("instructions", 20.0);
        assert!(close(value("ipc", &i), 2.0));
        let i = i
            .with("branch-instructions", 4.0)
            .with("branch-misses", 1.0);
        assert_eq!(i.get("branches"), Some(4.0));
        assert!(close(value("branch-miss-ratio", &i), 0.25));
        // set replaces.
        let mut i = i;
        i.set("cycles", 5.0);
        assert!(close(value("ipc", &i), 4.0));
        assert_eq!(i.iter().count(), 4);
    }

    #[test]
    fn metrics_with_missing_inputs_are_skipped() {
        let i = Inputs::new()
            .with("cycles", 100.0)
            .with("instructions", 50.0);
        let names: Vec<&str> = evaluate(&i).iter().map(|(m, _)| m.name).collect();
        assert_eq!(names, ["ipc", "cpi"]);
        let skipped = skipped(&i);
        assert_eq!(skipped.len(), all().len() - 2);
        let (m, missing) = skipped
            .iter()
            .find(|(m, _)| m.name == "branch-mpki")
            .unwrap();
        assert_eq!(missing.as_slice(), ["branch-misses"], "{}", m.name);
        let mflops = by_name("mflops").unwrap();
        assert_eq!(missing_inputs(mflops, &i), ["fp-ops", "seconds"]);
        // cycles + frequency make seconds available.
        let i = i.with("frequency_hz", 1e9);
        assert_eq!(missing_inputs(mflops, &i), ["fp-ops"]);
        assert_eq!(
            value("mflops", &i),
            MetricValue::NotAvailable("missing input")
        );
        assert!(evaluate(&Inputs::new()).is_empty());
    }

    #[test]
    fn zero_denominators_are_not_available() {
        let zero = |name: &str, inputs: Inputs| match value(name, &inputs) {
            MetricValue::NotAvailable(reason) => reason,
            v => panic!("{name}: {v}"),
        };
        let i = Inputs::new().with("cycles", 0.0).with("instructions", 0.0);
        assert_eq!(zero("ipc", i.clone()), "no cycles counted");
        assert_eq!(zero("cpi", i.clone()), "no instructions counted");
        let b = Inputs::new()
            .with("branches", 0.0)
            .with("branch-misses", 0.0)
            .with("instructions", 0.0);
        assert_eq!(zero("branch-miss-ratio", b.clone()), "no branches counted");
        assert_eq!(zero("branch-mpki", b.clone()), "no instructions counted");
        assert_eq!(
            zero("branch-misses-per-instruction", b),
            "no instructions counted"
        );
        let c = Inputs::new()
            .with("cache-references", 0.0)
            .with("cache-misses", 3.0)
            .with("instructions", 0.0);
        assert_eq!(
            zero("cache-miss-ratio", c.clone()),
            "no cache references counted"
        );
        assert_eq!(zero("cache-mpki", c), "no instructions counted");
        let l = Inputs::new()
            .with("L1-dcache-loads", 0.0)
            .with("L1-dcache-load-misses", 0.0)
            .with("L2-accesses", 0.0)
            .with("L2-misses", 0.0);
        assert_eq!(
            zero("l1d-hit-rate", l.clone()),
            "no L1 data-cache loads counted"
        );
        assert_eq!(
            zero("l1d-miss-ratio", l.clone()),
            "no L1 data-cache loads counted"
        );
        assert_eq!(zero("l2-hit-rate", l.clone()), "no L2 accesses counted");
        assert_eq!(zero("l2-miss-ratio", l), "no L2 accesses counted");
        let m = Inputs::new()
            .with("mem-loads", 1.0)
            .with("mem-stores", 1.0)
            .with("fp-ops", 0.0);
        assert_eq!(
            zero("mem-fp-ratio", m),
            "no floating-point operations counted"
        );
        let t = Inputs::new()
            .with("fp-ops", 1.0)
            .with("bytes", 1.0)
            .with("instructions", 1.0);
        assert_eq!(
            zero("mflops", t.clone().with("seconds", 0.0)),
            "zero elapsed time"
        );
        assert_eq!(
            zero(
                "bandwidth",
                t.clone().with("tsc_ticks", 5.0).with("tsc_hz", 0.0)
            ),
            "zero TSC frequency"
        );
        assert_eq!(
            zero("mips", t.clone().with("tsc_ticks", 0.0).with("tsc_hz", 1e9)),
            "zero elapsed time"
        );
        assert_eq!(
            zero("mips", t.with("cycles", 5.0).with("frequency_hz", 0.0)),
            "zero clock frequency"
        );
    }

    #[test]
    fn bad_inputs_are_not_available() {
        let i = Inputs::new()
            .with("cycles", 10.0)
            .with("instructions", -1.0);
        assert_eq!(
            value("ipc", &i),
            MetricValue::NotAvailable("an input is negative")
        );
        let i = Inputs::new()
            .with("cycles", f64::NAN)
            .with("instructions", 1.0);
        assert_eq!(
            value("ipc", &i),
            MetricValue::NotAvailable("an input is not finite")
        );
        let i = Inputs::new()
            .with("cycles", f64::INFINITY)
            .with("instructions", 1.0);
        assert_eq!(
            value("cpi", &i),
            MetricValue::NotAvailable("an input is not finite")
        );
        let i = Inputs::new()
            .with("cycles", f64::MIN_POSITIVE)
            .with("instructions", f64::MAX);
        assert_eq!(
            value("ipc", &i),
            MetricValue::NotAvailable("result is not finite (overflow)")
        );
        let i = Inputs::new()
            .with("mem-loads", f64::MAX)
            .with("mem-stores", f64::MAX)
            .with("fp-ops", 1.0);
        assert!(value("mem-fp-ratio", &i).value().is_none());
        let i = Inputs::new()
            .with("L2-accesses", 10.0)
            .with("L2-misses", 11.0);
        assert_eq!(
            value("l2-hit-rate", &i),
            MetricValue::NotAvailable("more misses than accesses")
        );
        assert_eq!(
            format!("{}", value("l2-miss-ratio", &i)),
            "n/a (more misses than accesses)"
        );
    }

    #[test]
    fn metrics_are_documented() {
        let known: Vec<&str> = INPUTS.iter().map(|(n, _)| *n).collect();
        for (k, m) in all().iter().enumerate() {
            assert!(!m.name.is_empty() && !m.description.is_empty() && !m.unit.is_empty());
            assert!(!m.inputs.is_empty());
            assert!(m.inputs.iter().all(|i| known.contains(i)), "{}", m.name);
            assert!(
                all()[..k].iter().all(|o| o.name != m.name),
                "duplicate {}",
                m.name
            );
            assert!(core::ptr::eq(by_name(m.name).unwrap(), m));
        }
        assert!(by_name("nope").is_none());
    }

    fn non_negative() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(f64::MAX),
            Just(f64::MIN_POSITIVE),
            Just(5e-324),
            0.0..1e12f64,
            proptest::num::f64::POSITIVE
                | proptest::num::f64::ZERO
                | proptest::num::f64::NORMAL
                | proptest::num::f64::SUBNORMAL,
        ]
    }

    proptest! {
        #[test]
        fn values_are_always_finite(values in prop::collection::vec(prop::option::of(non_negative()), INPUTS.len())) {
            let mut inputs = Inputs::new();
            for ((name, _), v) in INPUTS.iter().zip(&values) {
                if let Some(v) = v {
                    prop_assert!(v.is_finite() && *v >= 0.0);
                    inputs.set(name, *v);
                }
            }
            for (m, v) in evaluate(&inputs) {
                prop_assert!(missing_inputs(m, &inputs).is_empty());
                if let MetricValue::Value(x) = v {
                    prop_assert!(x.is_finite(), "{} = {}", m.name, x);
                    prop_assert!(x >= 0.0, "{} = {}", m.name, x);
                }
            }
            prop_assert_eq!(evaluate(&inputs).len() + skipped(&inputs).len(), all().len());
        }
    }
}

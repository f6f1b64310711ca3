//! Statistics of measured repetitions, overhead removal and outlier flags (docs/harness.md,
//! "Statistics" and "Overhead removal").
//!
//! Samples are counter deltas (`u64`, up to `u64::MAX`). Sums are taken in `u128` and the
//! variance from integer sums of squares of `x - min` whenever they fit, so equal samples give
//! a standard deviation of exactly 0 and integer means and medians are exact (below 2^53).
//! Everything is deterministic: no platform maths, the square root is computed here
//! ([`sqrt`]), correctly rounded.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Statistics of one kind and one event over the measured repetitions. After [`subtract`] or
/// [`scale`] the fields are differences or per-iteration values, and may be negative.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Number of samples.
    pub n: usize,
    pub min: f64,
    /// Middle value; mean of the two middle values for an even count.
    pub median: f64,
    pub mean: f64,
    /// Population standard deviation.
    pub stddev: f64,
    pub max: f64,
    /// Mean of the sorted samples without the lowest and highest `floor(n / 5)`.
    pub mean_20_80: f64,
}

impl Stats {
    /// The statistics of `samples`; `None` when there are none.
    pub fn of(samples: &[u64]) -> Option<Stats> {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let n = sorted.len();
        let mid = n / 2;
        let median = if n % 2 == 1 {
            sorted[mid] as f64
        } else {
            // The sum is exact in u128 and halving is exact, so one rounding in all.
            (u128::from(sorted[mid - 1]) + u128::from(sorted[mid])) as f64 / 2.0
        };
        let cut = n / 5;
        Some(Stats {
            n,
            min: min as f64,
            median,
            mean: mean(&sorted),
            stddev: sqrt(variance(&sorted, min)),
            max: max as f64,
            mean_20_80: mean(&sorted[cut..n - cut]),
        })
    }

    /// The population variance (`stddev` squared).
    pub fn variance(&self) -> f64 {
        self.stddev * self.stddev
    }
}

/// The mean of a non-empty slice: `u128` sum, integer quotient plus the remainder's fraction,
/// so an integer mean is exact.
fn mean(xs: &[u64]) -> f64 {
    let n = xs.len() as u128;
    let sum: u128 = xs.iter().map(|&x| u128::from(x)).sum();
    (sum / n) as f64 + (sum % n) as f64 / n as f64
}

/// Population variance of a non-empty slice whose smallest value is `min`.
fn variance(xs: &[u64], min: u64) -> f64 {
    let n = xs.len() as u128;
    let d = |x: u64| u128::from(x - min);
    let s1: u128 = xs.iter().map(|&x| d(x)).sum();
    // Exact: n * sum(d^2) - (sum d)^2 = sum over pairs of (d_i - d_j)^2, never negative.
    let exact = xs
        .iter()
        .try_fold(0u128, |acc, &x| acc.checked_add(d(x).checked_mul(d(x))?))
        .and_then(|s2| s2.checked_mul(n))
        .zip(s1.checked_mul(s1))
        .map(|(a, b)| a - b);
    match exact {
        Some(num) => num as f64 / (n as f64 * n as f64),
        // Spreads near 2^64 overflow even u128: two passes in f64 about the exact mean.
        None => {
            let m = (s1 / n) as f64 + (s1 % n) as f64 / n as f64;
            let sum: f64 = xs
                .iter()
                .map(|&x| {
                    let e = (x - min) as f64 - m;
                    e * e
                })
                .sum();
            sum / n as f64
        }
    }
}

/// `a - b`: `a`'s repetitions each less `b`'s median, so every location statistic of `a` is
/// shifted by the same amount and they stay in order (min <= median <= max; subtracting min
/// from min and max from max would not keep that); the standard deviation of the difference of
/// independent measurements (`sqrt(var(a) + var(b))`), and `a`'s count.
pub fn subtract(a: &Stats, b: &Stats) -> Stats {
    let c = b.median;
    Stats {
        n: a.n,
        min: a.min - c,
        median: a.median - c,
        mean: a.mean - c,
        stddev: sqrt(a.variance() + b.variance()),
        max: a.max - c,
        mean_20_80: a.mean_20_80 - c,
    }
}

/// Every field (the standard deviation too) divided by `by`: per-iteration values.
pub fn scale(s: &Stats, by: f64) -> Stats {
    Stats {
        n: s.n,
        min: s.min / by,
        median: s.median / by,
        mean: s.mean / by,
        stddev: s.stddev / by,
        max: s.max / by,
        mean_20_80: s.mean_20_80 / by,
    }
}

/// The correctly rounded square root (IEEE 754 `sqrt`, round to nearest even), because `core`
/// has no `f64::sqrt` on this toolchain. NaN for negative numbers and NaN.
pub fn sqrt(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 || x.is_infinite() {
        return x;
    }
    // x = m * 2^e with m an integer of at most 53 bits.
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), biased - 1075)
    };
    // Shift m to 109 or 110 bits with an even exponent left: the integer root then has 55
    // bits, more than the 53 kept, so rounding below is decided by the root and the sticky bit.
    let mut s = 110 - (64 - m.leading_zeros() as i32);
    if (e - s) % 2 != 0 {
        s -= 1;
    }
    let big = u128::from(m) << s;
    let r = big.isqrt();
    let sticky = u128::from(r * r != big);
    // (2r + sticky) keeps "above r" visible to the u128 -> f64 rounding (nearest even).
    let y = ((r << 1) | sticky) as f64;
    // sqrt(x) = y * 2^((e - s) / 2 - 1); the root of a finite double is a normal number and
    // the exponent is within [-600, 500], so this power of two is exact and so is the product.
    let k = (e - s) / 2 - 1;
    y * f64::from_bits(((k + 1023) as u64) << 52)
}

/// How the fixed cost of a measurement (the SDK's loop, the counter reads) is removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overhead {
    /// Nothing removed: value = raw.
    None,
    /// value = region - empty region (the default).
    #[default]
    Empty,
    /// value = region run with 2U iterations - region run with U: the cost of U iterations.
    Diff,
}

impl Overhead {
    /// The name in `run.cfg` and records.
    pub fn name(self) -> &'static str {
        match self {
            Overhead::None => "none",
            Overhead::Empty => "empty",
            Overhead::Diff => "diff",
        }
    }

    /// From its name (`none`, `empty`, `diff`).
    pub fn parse(s: &str) -> Option<Overhead> {
        [Overhead::None, Overhead::Empty, Overhead::Diff]
            .into_iter()
            .find(|o| o.name() == s)
    }
}

/// The samples of one event submitted for each kind of run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Samples<'a> {
    /// The measured region (with `U = iterations` in diff mode).
    pub region: &'a [u64],
    /// The empty region (overhead `empty`).
    pub empty: Option<&'a [u64]>,
    /// The region with `2U` iterations (overhead `diff`).
    pub region2x: Option<&'a [u64]>,
}

/// The result for one event of one benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The region's samples (the `U` run in diff mode).
    pub raw: Stats,
    /// Diff mode: the `2U` run.
    pub raw2x: Option<Stats>,
    /// Empty mode: the empty region's samples.
    pub overhead: Option<Stats>,
    /// The measurement with the overhead removed (diff mode: the cost of `U` iterations).
    pub value: Stats,
    /// `value / iterations`, when iterations were declared (> 0).
    pub per_iteration: Option<Stats>,
    /// Region samples outside the Tukey fences ([`outliers`]).
    pub outliers: usize,
}

/// The summary of one event: raw statistics, overhead removal by `mode`, per-iteration values.
/// An error when the samples do not fit the mode: no region samples, a kind the mode needs
/// missing (or one it does not use given), different sample counts, diff without iterations.
pub fn summarize(
    mode: Overhead,
    samples: &Samples<'_>,
    iterations: Option<u64>,
) -> Result<Summary, String> {
    let raw = Stats::of(samples.region).ok_or("no region samples")?;
    let n = samples.region.len();
    let other = |kind: &str, s: Option<&[u64]>| -> Result<Stats, String> {
        let s = s.ok_or_else(|| {
            format!(
                "overhead `{}` needs the {kind} samples, and none were given",
                mode.name()
            )
        })?;
        if s.len() != n {
            return Err(format!("{n} region samples but {} {kind} samples", s.len()));
        }
        Stats::of(s).ok_or_else(|| format!("no {kind} samples"))
    };
    let unused = |kind: &str, s: Option<&[u64]>| match s {
        Some(_) => Err(format!(
            "overhead `{}` does not use {kind} samples, but they were given",
            mode.name()
        )),
        None => Ok(()),
    };
    let (raw2x, overhead, value) = match mode {
        Overhead::None => {
            unused("empty-region", samples.empty)?;
            unused("2x-region", samples.region2x)?;
            (None, None, raw)
        }
        Overhead::Empty => {
            unused("2x-region", samples.region2x)?;
            let empty = other("empty-region", samples.empty)?;
            (None, Some(empty), subtract(&raw, &empty))
        }
        Overhead::Diff => {
            unused("empty-region", samples.empty)?;
            if !iterations.is_some_and(|u| u > 0) {
                return Err(String::from(
                    "overhead `diff` needs a declared iteration count (> 0)",
                ));
            }
            let twice = other("2x-region", samples.region2x)?;
            (Some(twice), None, subtract(&twice, &raw))
        }
    };
    Ok(Summary {
        raw,
        raw2x,
        overhead,
        value,
        // In diff mode value is the cost of U = iterations iterations, so the same division.
        per_iteration: iterations
            .filter(|&u| u > 0)
            .map(|u| scale(&value, u as f64)),
        outliers: outliers(samples.region).iter().filter(|&&o| o).count(),
    })
}

/// Per sample, in input order: whether it lies outside the Tukey fences
/// `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]`, quartiles by linear interpolation between order statistics
/// (R-7, numpy's default). Decided exactly in integers, whatever the magnitudes.
pub fn outliers(samples: &[u64]) -> Vec<bool> {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    // 4 * the quantile at p = num / 4: position h = (n - 1) * num / 4, whose fraction is a
    // multiple of 1/4, so four times the interpolated value is an integer.
    let quantile4 = |num: usize| -> i128 {
        let h4 = (n - 1) * num;
        let (lo, quarters) = (h4 / 4, (h4 % 4) as i128);
        let a = i128::from(sorted[lo]);
        let b = sorted.get(lo + 1).map_or(a, |&b| i128::from(b));
        4 * a + quarters * (b - a)
    };
    let (q1, q3) = (quantile4(1), quantile4(3));
    // Times 8: lower = Q1 - 1.5 (Q3 - Q1) -> (5 q1 - 3 q3) / 4 with q = 4Q; upper likewise.
    let (lower8, upper8) = (5 * q1 - 3 * q3, 5 * q3 - 3 * q1);
    samples
        .iter()
        .map(|&x| {
            let x8 = 8 * i128::from(x);
            x8 < lower8 || x8 > upper8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn st(xs: &[u64]) -> Stats {
        Stats::of(xs).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn empty_input_has_no_stats() {
        assert_eq!(Stats::of(&[]), None);
        assert!(outliers(&[]).is_empty());
    }

    #[test]
    fn one_sample() {
        let s = st(&[7]);
        assert_eq!(
            s,
            Stats {
                n: 1,
                min: 7.0,
                median: 7.0,
                mean: 7.0,
                stddev: 0.0,
                max: 7.0,
                mean_20_80: 7.0
            }
        );
    }

    #[test]
    fn two_samples() {
        let s = st(&[10, 3]);
        assert_eq!((s.n, s.min, s.max), (2, 3.0, 10.0));
        assert_eq!((s.median, s.mean, s.mean_20_80), (6.5, 6.5, 6.5));
        assert_eq!(s.stddev, 3.5);
    }

    #[test]
    fn five_samples_odd() {
        // Sorted 1 2 3 4 10: mean 4, variance (9+4+1+0+36)/5 = 10, 20-80 drops 1 and 10.
        let s = st(&[4, 10, 1, 3, 2]);
        assert_eq!((s.min, s.median, s.mean, s.max), (1.0, 3.0, 4.0, 10.0));
        assert_eq!(s.stddev, sqrt(10.0));
        assert_eq!(s.mean_20_80, 3.0);
    }

    #[test]
    fn ten_samples_even() {
        // Sorted 1..=9, 100: median (5+6)/2, mean 145/10, 20-80 drops 1, 2 and 9, 100.
        let s = st(&[100, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!((s.median, s.mean, s.mean_20_80), (5.5, 14.5, 5.5));
        // Variance: sum of squares 285 + 10000 = 10285, / 10 - 14.5^2 = 818.25.
        assert_eq!(s.stddev, sqrt(818.25));
    }

    #[test]
    fn equal_samples_have_zero_spread_and_equal_stats() {
        for x in [0, 1, 1 << 40, (1 << 53) + 1, u64::MAX] {
            for n in [1, 2, 3, 10, 101] {
                let s = st(&vec![x; n]);
                assert_eq!(s.stddev.to_bits(), 0.0f64.to_bits(), "{x} x {n}");
                let v = x as f64;
                assert_eq!(
                    (s.min, s.median, s.mean, s.max, s.mean_20_80),
                    (v, v, v, v, v)
                );
            }
        }
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let m = u64::MAX;
        let s = st(&[m, m - 2, m - 4]);
        assert_eq!(s.mean, (m - 2) as f64);
        assert!(close(s.stddev, sqrt(8.0 / 3.0)), "{}", s.stddev);
        // Spread across the whole range (the f64 fallback).
        let s = st(&[0, m, 0, m]);
        assert_eq!((s.median, s.mean), (m as f64 / 2.0, m as f64 / 2.0));
        assert!(close(s.stddev, m as f64 / 2.0));
        assert_eq!(outliers(&[0, m, 0, m]), vec![false; 4]);
    }

    #[test]
    fn sqrt_known_values() {
        assert_eq!(sqrt(4.0), 2.0);
        assert_eq!(sqrt(2.0), core::f64::consts::SQRT_2);
        assert_eq!(sqrt(0.0), 0.0);
        assert_eq!(sqrt(-0.0).to_bits(), (-0.0f64).to_bits());
        assert!(sqrt(-1.0).is_nan() && sqrt(f64::NAN).is_nan());
        assert_eq!(sqrt(f64::INFINITY), f64::INFINITY);
        for x in [
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            1e-300,
            3.0,
            1e300,
        ] {
            assert_eq!(sqrt(x).to_bits(), x.sqrt().to_bits(), "{x:e}");
        }
    }

    #[test]
    fn overhead_names() {
        for o in [Overhead::None, Overhead::Empty, Overhead::Diff] {
            assert_eq!(Overhead::parse(o.name()), Some(o));
        }
        assert_eq!(Overhead::parse("Empty"), None);
        assert_eq!(Overhead::default(), Overhead::Empty);
    }

    #[test]
    fn subtract_and_scale() {
        let v = subtract(&st(&[104, 104, 104]), &st(&[4, 4, 4]));
        assert_eq!(
            v,
            Stats {
                n: 3,
                min: 100.0,
                median: 100.0,
                mean: 100.0,
                stddev: 0.0,
                max: 100.0,
                mean_20_80: 100.0
            }
        );
        // stddev 3 and 4 -> 5.
        let a = st(&[7, 13]);
        let b = st(&[0, 8]);
        let d = subtract(&a, &b);
        // b's median is 4: everything of a less 4, in order.
        assert_eq!((d.mean, d.stddev, d.min, d.max), (6.0, 5.0, 3.0, 9.0));
        let p = scale(&d, 2.0);
        assert_eq!((p.n, p.mean, p.stddev, p.min), (2, 3.0, 2.5, 1.5));
    }

    #[test]
    fn summary_empty_mode() {
        let s = Samples {
            region: &[104, 104, 104],
            empty: Some(&[4, 4, 4]),
            region2x: None,
        };
        let r = summarize(Overhead::Empty, &s, Some(10)).unwrap();
        assert_eq!(r.raw, st(&[104, 104, 104]));
        assert_eq!(r.overhead, Some(st(&[4, 4, 4])));
        assert_eq!((r.value.mean, r.value.stddev), (100.0, 0.0));
        assert_eq!(r.per_iteration.map(|p| p.median), Some(10.0));
        assert_eq!((r.raw2x, r.outliers), (None, 0));
        // No per-iteration values without a (positive) iteration count.
        for it in [None, Some(0)] {
            assert_eq!(
                summarize(Overhead::Empty, &s, it).unwrap().per_iteration,
                None
            );
        }
    }

    #[test]
    fn summary_diff_mode() {
        let s = Samples {
            region: &[50, 50],
            empty: None,
            region2x: Some(&[90, 90]),
        };
        let r = summarize(Overhead::Diff, &s, Some(10)).unwrap();
        assert_eq!(r.raw, st(&[50, 50]));
        assert_eq!(r.raw2x, Some(st(&[90, 90])));
        assert_eq!(r.overhead, None);
        assert_eq!(
            (r.value.mean, r.value.min, r.value.stddev),
            (40.0, 40.0, 0.0)
        );
        let p = r.per_iteration.unwrap();
        assert_eq!((p.mean, p.median, p.max, p.n), (4.0, 4.0, 4.0, 2));
    }

    #[test]
    fn summary_none_mode_is_raw() {
        let s = Samples {
            region: &[1, 2, 3],
            ..Samples::default()
        };
        let r = summarize(Overhead::None, &s, Some(2)).unwrap();
        assert_eq!(r.value, r.raw);
        assert_eq!(r.per_iteration.unwrap().mean, 1.0);
        assert_eq!((r.overhead, r.raw2x), (None, None));
    }

    #[test]
    fn summary_errors() {
        let region: &[u64] = &[1, 2, 3];
        let e = |mode, empty, region2x, it| {
            summarize(
                mode,
                &Samples {
                    region,
                    empty,
                    region2x,
                },
                it,
            )
            .unwrap_err()
        };
        let no_region = Samples::default();
        assert!(summarize(Overhead::None, &no_region, None).is_err());
        assert!(e(Overhead::Empty, None, None, None).contains("needs the empty-region"));
        assert!(e(Overhead::Empty, Some(&[1, 2]), None, None).contains("3 region samples but 2"));
        assert!(e(Overhead::Diff, None, Some(&[1, 2, 3]), None).contains("iteration count"));
        assert!(e(Overhead::Diff, None, Some(&[1, 2, 3]), Some(0)).contains("iteration count"));
        assert!(e(Overhead::Diff, None, None, Some(5)).contains("needs the 2x-region"));
        assert!(e(Overhead::Diff, None, Some(&[1]), Some(5)).contains("but 1 2x-region"));
        assert!(e(Overhead::None, Some(&[1, 2, 3]), None, None).contains("does not use"));
        assert!(
            e(Overhead::Empty, Some(&[1, 2, 3]), Some(&[1, 2, 3]), None).contains("does not use")
        );
    }

    #[test]
    fn outlier_examples() {
        // Sorted 1..=9, 100: Q1 = 3.25, Q3 = 7.75, IQR 4.5, fences [-3.5, 14.5].
        let xs = [100, 9, 8, 7, 6, 5, 4, 3, 2, 1];
        let flags = outliers(&xs);
        assert_eq!(flags, xs.map(|x| x == 100).to_vec());
        let s = Samples {
            region: &xs,
            ..Samples::default()
        };
        assert_eq!(summarize(Overhead::None, &s, None).unwrap().outliers, 1);
        // n = 6: Q1 = 1.25, Q3 = 3.75 (positions 1.25 and 3.75), upper fence 7.5.
        assert_eq!(outliers(&[0, 1, 2, 3, 4, 7]), vec![false; 6]);
        assert!(outliers(&[0, 1, 2, 3, 4, 8])[5]);
        // On a fence is inside: 1 2 3 4 7 has Q1 = 2, Q3 = 4, fences [-1, 7].
        assert_eq!(outliers(&[7, 1, 2, 3, 4]), vec![false; 5]);
        assert!(outliers(&[8, 1, 2, 3, 4])[0]);
        // IQR 0: everything off the common value is out.
        assert_eq!(
            outliers(&[4, 4, 0, 4, 4]),
            vec![false, false, true, false, false]
        );
        assert_eq!(outliers(&[5]), vec![false]);
    }

    /// numpy-style R-7 quantile in f64, for the reference.
    fn quantile_ref(sorted: &[u64], p: f64) -> f64 {
        let h = (sorted.len() - 1) as f64 * p;
        let lo = h.floor() as usize;
        let a = sorted[lo] as f64;
        let b = sorted.get(lo + 1).map_or(a, |&b| b as f64);
        a + (h - lo as f64) * (b - a)
    }

    proptest! {
        #[test]
        fn matches_a_straightforward_reference(xs in prop::collection::vec(0u64..(1 << 40), 1..60)) {
            let s = st(&xs);
            let mut sorted = xs.clone();
            sorted.sort_unstable();
            let n = xs.len();
            let sum: u128 = xs.iter().map(|&x| u128::from(x)).sum();
            let mean = sum as f64 / n as f64;
            let var = xs.iter().map(|&x| (x as f64 - mean) * (x as f64 - mean)).sum::<f64>() / n as f64;
            let median = if n % 2 == 1 {
                sorted[n / 2] as f64
            } else {
                (sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0
            };
            let k = n / 5;
            let mid = &sorted[k..n - k];
            let m2080 = mid.iter().map(|&x| x as f64).sum::<f64>() / mid.len() as f64;
            prop_assert_eq!(s.n, n);
            prop_assert_eq!(s.min, sorted[0] as f64);
            prop_assert_eq!(s.max, sorted[n - 1] as f64);
            prop_assert_eq!(s.median, median);
            prop_assert!(close(s.mean, mean), "{} {}", s.mean, mean);
            prop_assert!(close(s.mean_20_80, m2080));
            prop_assert!((s.stddev - var.sqrt()).abs() <= 1e-9 * var.sqrt().max(1.0), "{} {}", s.stddev, var.sqrt());
            // Outliers: the same fences in f64 (exact here: values below 2^40, quarters).
            let (q1, q3) = (quantile_ref(&sorted, 0.25), quantile_ref(&sorted, 0.75));
            let iqr = q3 - q1;
            let want: Vec<bool> = xs.iter().map(|&x| (x as f64) < q1 - 1.5 * iqr || (x as f64) > q3 + 1.5 * iqr).collect();
            prop_assert_eq!(outliers(&xs), want);
        }

        #[test]
        fn large_values_keep_exact_integer_means(base in (u64::MAX / 2)..u64::MAX, d in prop::collection::vec(0u64..1000, 1..20)) {
            let xs: Vec<u64> = d.iter().map(|&x| base.saturating_sub(x)).collect();
            let s = st(&xs);
            let sum: u128 = xs.iter().map(|&x| u128::from(x)).sum();
            let n = xs.len() as u128;
            // Within one unit in the last place of the exact rational mean.
            let exact = (sum / n) as f64;
            prop_assert!((s.mean - exact).abs() <= exact * f64::EPSILON);
            // The spread is computed from the exact small differences.
            let m = xs.iter().min().copied().unwrap();
            let dm: Vec<f64> = xs.iter().map(|&x| (x - m) as f64).collect();
            let mu = dm.iter().sum::<f64>() / dm.len() as f64;
            let sd = (dm.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / dm.len() as f64).sqrt();
            prop_assert!((s.stddev - sd).abs() <= 1e-9 * sd.max(1.0), "{} {}", s.stddev, sd);
        }

        #[test]
        fn sqrt_is_correctly_rounded(bits in 0u64..0x7ff0_0000_0000_0000) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(sqrt(x).to_bits(), x.sqrt().to_bits(), "{:e}", x);
        }

        #[test]
        fn sqrt_of_small_integers(x in 0u64..(1 << 53)) {
            let x = x as f64;
            prop_assert_eq!(sqrt(x).to_bits(), x.sqrt().to_bits());
        }
    }
}

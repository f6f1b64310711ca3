//! How the report writes numbers: counts with thousands grouped, measurements with as many
//! decimals as their size deserves, frequencies in MHz (the tables, the report, plots, diff).

/// A measurement: thousands grouped, as many decimals as its size deserves.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    let decimals = if a == 0.0 || (a >= 100.0 && x.fract() == 0.0) || a >= 100_000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else {
        4
    };
    let s = format!("{a:.decimals$}");
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(i, f)| (i, f));
    let grouped = group(int);
    let sign = if x < 0.0 && s.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        "-"
    } else {
        ""
    };
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

/// A count, thousands grouped.
pub fn count(n: u64) -> String {
    group(&n.to_string())
}

/// Digits with a comma every three from the right.
fn group(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Formats Hz as MHz with three decimals.
pub fn mhz(hz: u64) -> String {
    let khz = (hz + 500) / 1000;
    format!("{}.{:03} MHz", khz / 1000, khz % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_and_sized() {
        assert_eq!(count(50), "50");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1.00234), "1.002");
        assert_eq!(num(0.25), "0.2500");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(1004.0), "1,004");
        assert_eq!(num(1003.56), "1,003.6");
        assert_eq!(num(12_345_678.4), "12,345,678");
        assert_eq!(num(-52.5), "-52.50");
        assert_eq!(num(-0.00001), "0.0000");
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(mhz(2_400_000_000), "2400.000 MHz");
        assert_eq!(mhz(1_999_999_500), "2000.000 MHz");
    }
}

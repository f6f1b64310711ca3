//! The SVG charts of the cross-core runs, written by hand: a heatmap (a coloured cell per
//! ordered pair with its value written in it) and a line chart (a line per series over a
//! numbered axis). Plain SVG 1.1: every value is also text in the file, so tests and people
//! can read it back.

use std::fmt::Write as _;

use crate::numbers;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Blue (low) to red (high) for `t` in 0..=1.
fn colour(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let (r, g, b) = (
        (40.0 + 215.0 * t) as u8,
        (90.0 + 110.0 * (1.0 - (2.0 * t - 1.0).abs())) as u8,
        (255.0 - 215.0 * t) as u8,
    );
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// A heatmap: `cells[row][col]` (`None`: not measured, shown as a grey cell, e.g. the
/// diagonal), rows and columns labelled `labels`.
pub fn heatmap(
    title: &str,
    row_axis: &str,
    col_axis: &str,
    labels: &[String],
    cells: &[Vec<Option<f64>>],
) -> String {
    let n = labels.len().max(1);
    let cell = if n > 32 { 24.0 } else { 56.0 };
    let (left, top) = (90.0, 80.0);
    let size = cell * n as f64;
    let (w, h) = (left + size + 140.0, top + size + 40.0);
    let values: Vec<f64> = cells.iter().flatten().flatten().copied().collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text class="title" x="{left}" y="24" font-size="14">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        s,
        r#"<text class="axis" x="{}" y="52" text-anchor="middle">{}</text>"#,
        left + size / 2.0,
        escape(col_axis)
    );
    let _ = writeln!(
        s,
        r#"<text class="axis" x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{}</text>"#,
        top + size / 2.0,
        top + size / 2.0,
        escape(row_axis)
    );
    for (i, l) in labels.iter().enumerate() {
        let c = left + cell * i as f64 + cell / 2.0;
        let _ = writeln!(
            s,
            r#"<text class="col-label" x="{c}" y="{}" text-anchor="middle">{}</text>"#,
            top - 8.0,
            escape(l)
        );
        let _ = writeln!(
            s,
            r#"<text class="row-label" x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 8.0,
            top + cell * i as f64 + cell / 2.0 + 4.0,
            escape(l)
        );
    }
    for (r, row) in cells.iter().enumerate() {
        for (c, v) in row.iter().enumerate() {
            let (x, y) = (left + cell * c as f64, top + cell * r as f64);
            match v {
                Some(v) => {
                    let _ = writeln!(
                        s,
                        r##"<rect class="cell" data-row="{}" data-col="{}" data-value="{v}" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{}" stroke="white"/>"##,
                        escape(&labels[r]),
                        escape(&labels[c]),
                        colour((v - lo) / span)
                    );
                    if n <= 32 {
                        let _ = writeln!(
                            s,
                            r#"<text class="value" x="{}" y="{}" text-anchor="middle" fill="white">{}</text>"#,
                            x + cell / 2.0,
                            y + cell / 2.0 + 4.0,
                            numbers::num(*v)
                        );
                    }
                }
                None => {
                    let _ = writeln!(
                        s,
                        r##"<rect class="empty" x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#dddddd" stroke="white"/>"##
                    );
                }
            }
        }
    }
    // The scale: low and high, with their colours.
    if !values.is_empty() {
        let x = left + size + 20.0;
        for (i, (v, t)) in [(lo, 0.0), (hi, 1.0)].iter().enumerate() {
            let y = top + i as f64 * 30.0;
            let _ = writeln!(
                s,
                r#"<rect x="{x}" y="{y}" width="20" height="20" fill="{}"/><text class="scale" x="{}" y="{}">{}</text>"#,
                colour(*t),
                x + 26.0,
                y + 14.0,
                numbers::num(*v)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A line chart: `x` values (e.g. cores), and per series its name and a y value per x
/// (`None`: not measured).
pub fn lines(
    title: &str,
    x_axis: &str,
    y_axis: &str,
    x: &[u64],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let (left, top, pw, ph) = (90.0, 50.0, 560.0, 320.0);
    let (w, h) = (left + pw + 200.0, top + ph + 60.0);
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .copied()
        .fold(0.0, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let (x0, x1) = (
        x.iter().copied().min().unwrap_or(0) as f64,
        x.iter().copied().max().unwrap_or(1) as f64,
    );
    let xspan = if x1 > x0 { x1 - x0 } else { 1.0 };
    let px = |v: f64| left + (v - x0) / xspan * pw;
    let py = |v: f64| top + ph - v / ymax * ph;
    let palette = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
    ];
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text class="title" x="{left}" y="24" font-size="14">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>"#,
        top + ph,
        left + pw,
        top + ph,
        top + ph
    );
    for &xv in x {
        let _ = writeln!(
            s,
            r#"<text class="x-label" x="{}" y="{}" text-anchor="middle">{xv}</text>"#,
            px(xv as f64),
            top + ph + 18.0
        );
    }
    for i in 0..=4 {
        let v = ymax * i as f64 / 4.0;
        let _ = writeln!(
            s,
            r#"<text class="y-label" x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 6.0,
            py(v) + 4.0,
            numbers::num(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        top + ph + 42.0,
        escape(x_axis)
    );
    let _ = writeln!(
        s,
        r#"<text class="axis" x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{}</text>"#,
        top + ph / 2.0,
        top + ph / 2.0,
        escape(y_axis)
    );
    for (k, (name, ys)) in series.iter().enumerate() {
        let colour = palette[k % palette.len()];
        let pts: Vec<String> = x
            .iter()
            .zip(ys)
            .filter_map(|(&xv, y)| y.map(|y| format!("{},{}", px(xv as f64), py(y))))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline class="series" data-name="{}" points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            escape(name),
            pts.join(" ")
        );
        for (&xv, y) in x.iter().zip(ys) {
            if let Some(y) = y {
                let _ = writeln!(
                    s,
                    r#"<circle class="point" data-series="{}" data-x="{xv}" data-y="{y}" cx="{}" cy="{}" r="3" fill="{colour}"/>"#,
                    escape(name),
                    px(xv as f64),
                    py(*y)
                );
            }
        }
        let ly = top + 16.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{colour}"/><text class="legend" x="{}" y="{}">{}</text>"#,
            left + pw + 20.0,
            ly,
            left + pw + 38.0,
            ly + 10.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

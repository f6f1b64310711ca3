//! The SVG of a profile: a horizontal bar per function, longest first. A flat profile (RIPs,
//! no call stacks) has no parent/child relation for a flame graph to show, so bars it is.

use std::fmt::Write as _;

use super::{Profile, TaskSamples, pct};

/// Bars shown; the rest are summed into one "other" bar.
const BARS: usize = 20;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart of `p` (title: task, event, period, counts; lost samples in red).
pub fn bar_chart(t: &TaskSamples, p: &Profile, event_name: &str) -> String {
    let mut bars: Vec<(String, u64)> = p.functions.iter().take(BARS).cloned().collect();
    let rest: u64 = p.functions.iter().skip(BARS).map(|(_, n)| n).sum();
    if rest > 0 {
        bars.push((
            format!("{} other functions", p.functions.len() - BARS),
            rest,
        ));
    }
    // Monospace at 13 px is about 8 px a character: the labels' column fits the longest name.
    let longest = bars
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let label_w = (longest as f64 * 8.0 + 20.0).max(160.0);
    let (bar_w, row_h, top) = (480.0, 24.0, 70.0);
    let width = label_w + bar_w + 160.0;
    let height = top + row_h * bars.len().max(1) as f64 + 20.0;
    let max = bars.iter().map(|(_, n)| *n).max().unwrap_or(1).max(1) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="13">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="15">{}</text>"#,
        escape(&super::heading(t, event_name))
    );
    let sub = if t.lost() > 0 {
        format!(
            r##"<text x="10" y="44" fill="#c00000">{} samples LOST (periods without a RIP of their own): the bars may be skewed</text>"##,
            t.lost()
        )
    } else {
        r##"<text x="10" y="44" fill="#555">samples per function (flat profile: the RIP at each overflow)</text>"##.to_string()
    };
    let _ = writeln!(s, "{sub}");
    for (i, (name, n)) in bars.iter().enumerate() {
        let y = top + row_h * i as f64;
        let w = (bar_w * *n as f64 / max).max(1.0);
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{label_w}" y="{}" width="{w:.1}" height="{}" fill="#4a7ebb"><title>{} samples</title></rect><text x="{:.1}" y="{}">{} ({:.2}%)</text>"##,
            label_w - 8.0,
            y + 15.0,
            escape(name),
            y + 3.0,
            row_h - 6.0,
            n,
            label_w + w + 6.0,
            y + 15.0,
            n,
            pct(*n, p.total)
        );
    }
    s.push_str("</svg>\n");
    s
}

//! SVG plots of the per-repetition distributions: one panel per benchmark (a grid when there
//! are several), the virtual TSC of every measured repetition as a strip of points per kind
//! (region, empty region, 2U region) with a line at each kind's median.

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use crate::results::{Benchmark, Results};

/// Panel size in pixels.
const PANEL: (u32, u32) = (480, 360);
/// Panels per row, at most.
const MAX_COLUMNS: usize = 4;
const TITLE_HEIGHT: u32 = 40;
const MIN_WIDTH: u32 = 720;

/// The kinds of a benchmark's samples: record name, label, colour, and the iteration multiple
/// they ran with (None: drawn per region, in the lower strip).
const KINDS: [(&str, &str, RGBColor, Option<f64>); 3] = [
    ("region", "region", RGBColor(31, 119, 180), Some(1.0)),
    (
        "region2x",
        "region, 2U iterations",
        RGBColor(44, 160, 44),
        Some(2.0),
    ),
    ("empty", "empty region", RGBColor(255, 127, 14), None),
];

/// One kind's points: label, colour, (repetition, value).
type Series = (&'static str, RGBColor, Vec<(f64, f64)>);

/// The points of a benchmark's strip: the measured regions per iteration (when the benchmark
/// declared iterations; the 2U run divided by 2U), or the empty region per region.
fn series(b: &Benchmark, empty: bool) -> Vec<Series> {
    KINDS
        .iter()
        .filter(|(_, _, _, multiple)| multiple.is_none() == empty)
        .filter_map(|&(kind, label, color, multiple)| {
            let values = b.sample_values("tsc", kind);
            if values.is_empty() {
                return None;
            }
            let divisor = match (multiple, b.iterations) {
                (Some(m), Some(n)) if n > 0 => n as f64 * m,
                _ => 1.0,
            };
            let points = values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, v / divisor))
                .collect();
            Some((label, color, points))
        })
        .collect()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The y range of some series, padded; a flat series gets a band around its value.
fn y_range(series: &[Series], legend: bool) -> (f64, f64) {
    let all = series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|&(_, y)| y));
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    if !lo.is_finite() {
        (0.0, 1.0)
    } else {
        let span = if hi - lo <= 1e-9 * hi.abs().max(1.0) {
            (lo.abs() * 0.02).max(1.0)
        } else {
            hi - lo
        };
        // Room at the top for the legend, so it hides no point.
        let legend_room = if legend {
            0.12 + 0.3 * series.len() as f64
        } else {
            0.08
        };
        (lo - span * 0.08, hi + span * legend_room)
    }
}

/// One strip chart: the points of every series and a line at each one's median; with
/// `legend`, a legend naming each series and its median.
fn strip<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    series: &[Series],
    reps: usize,
    y_desc: &str,
    x_desc: &str,
    legend: bool,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (lo, hi) = y_range(series, legend);
    let x_end = reps as f64 - 0.5;
    let mut chart = ChartBuilder::on(area)
        .margin_left(6)
        .margin_right(12)
        .margin_top(4)
        .x_label_area_size(if x_desc.is_empty() { 18 } else { 30 })
        .y_label_area_size(66)
        .build_cartesian_2d(-0.5..x_end, lo..hi)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(("sans-serif", 11))
        .axis_desc_style(("sans-serif", 12))
        .x_labels(reps.clamp(2, 11))
        // Repetitions are whole numbers; the axis runs from -0.5 so points clear it.
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 && *x >= 0.0 {
                format!("{:.0}", x.round())
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| crate::numbers::num(*y))
        .y_labels(5)
        .light_line_style(WHITE)
        .draw()?;
    for (label, color, points) in series {
        let mut ys: Vec<f64> = points.iter().map(|&(_, y)| y).collect();
        let m = median(&mut ys);
        let color = *color;
        chart.draw_series(LineSeries::new(
            [(-0.5, m), (x_end, m)],
            color.stroke_width(1),
        ))?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(move |&p| Circle::new(p, 2, color.filled())),
            )?
            .label(format!("{label}: median {}", crate::numbers::num(m)))
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
    }
    if !legend {
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 11))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
}

/// One benchmark's panel: its title, the measured regions above, the empty region below.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    b: &Benchmark,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let area = area.margin(6, 6, 6, 6);
    let body = area.titled(&b.title(), ("sans-serif", 16))?;
    let regions = series(b, false);
    let empty = series(b, true);
    let reps = regions
        .iter()
        .chain(&empty)
        .map(|(_, _, p)| p.len())
        .max()
        .unwrap_or(1)
        .max(1);
    if regions.is_empty() && empty.is_empty() {
        body.draw(&Text::new("no TSC samples", (20, 20), ("sans-serif", 14)))?;
        return Ok(());
    }
    // As measured: the overhead is still in (the table's values have it removed).
    let per = if b.iterations.is_some_and(|n| n > 0) {
        "raw ticks / iteration"
    } else {
        "raw ticks / region"
    };
    if empty.is_empty() {
        return strip(&body, &regions, reps, per, "repetition", true);
    }
    // The empty region is a fixed cost per region, far from the per-iteration values: its own
    // strip and axis keep both readable. Too short for a legend, its axis says what it is.
    let (_, h) = body.dim_in_pixel();
    let (upper, lower) = body.split_vertically(h * 62 / 100);
    strip(&upper, &regions, reps, per, "", true)?;
    let mut ys: Vec<f64> = empty[0].2.iter().map(|&(_, y)| y).collect();
    let desc = format!("empty, median {}", crate::numbers::num(median(&mut ys)));
    strip(&lower, &empty, reps, &desc, "repetition", false)
}

/// The SVG document for the results.
pub fn svg(res: &Results) -> Result<String> {
    let n = res.benchmarks.len().max(1);
    let cols = (n as f64).sqrt().ceil().clamp(1.0, MAX_COLUMNS as f64) as usize;
    let rows = n.div_ceil(cols);
    // At least wide enough for the title line.
    let size = (
        (PANEL.0 * cols as u32).max(MIN_WIDTH),
        PANEL.1 * rows as u32 + TITLE_HEIGHT,
    );
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| anyhow!("drawing the plot: {e}");
        root.fill(&WHITE).map_err(err)?;
        let title = format!(
            "baremark: virtual TSC per repetition{}{}",
            res.machine
                .cpu
                .as_deref()
                .map(|c| format!(" | {c}"))
                .unwrap_or_default(),
            res.machine
                .hypervisor
                .as_deref()
                .map(|h| format!(" ({h})"))
                .unwrap_or_default()
        );
        let (top, body) = root.split_vertically(TITLE_HEIGHT);
        top.titled(&title, ("sans-serif", 20)).map_err(err)?;
        if res.benchmarks.is_empty() {
            body.draw(&Text::new(
                "no benchmarks in these records",
                (20, 40),
                ("sans-serif", 16),
            ))
            .map_err(err)?;
        }
        for (area, b) in body.split_evenly((rows, cols)).iter().zip(&res.benchmarks) {
            draw_panel(area, b).map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(out)
}

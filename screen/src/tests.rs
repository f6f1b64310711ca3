//! Host tests: the grid, scrolling and wrapping, flushes against a full redraw, and the
//! render/decode round trip in every pixel format.

use alloc::string::String;
use alloc::vec::Vec;
use std::collections::HashMap;

use crate::font::{self, CELL_H, CELL_W};
use crate::grid::Grid;
use crate::host::{self, DecodeError};
use crate::pixels::{Layout, LayoutError, PixelFormat};
use crate::summary::{Summary, format_median};
use crate::{Console, Style};

fn layout(cols: usize, rows: usize, format: PixelFormat, bpp: usize, pad: usize) -> Layout {
    // A few pixels more than the grid needs, so the margins are checked too.
    let width = cols * CELL_W + 3;
    Layout {
        width,
        height: rows * CELL_H + 5,
        stride: width + pad,
        bytes_per_pixel: bpp,
        format,
    }
}

const FORMATS: [(PixelFormat, usize); 5] = [
    (PixelFormat::Rgb, 3),
    (PixelFormat::Rgb, 4),
    (PixelFormat::Bgr, 3),
    (PixelFormat::Bgr, 4),
    (PixelFormat::Grey, 1),
];

fn texts(g: &Grid) -> Vec<String> {
    (0..g.rows()).map(|r| g.row_text(r)).collect()
}

#[test]
fn lines_fill_the_region_then_scroll() {
    let mut g = Grid::new(10, 4);
    g.set_status("st");
    for l in ["a", "b", "c"] {
        g.push_line(l, Style::Normal);
    }
    assert_eq!(texts(&g), ["st", "a", "b", "c"]);
    let c = g.take_changes();
    assert_eq!((c.shift, c.rows), (0, vec![0, 1, 2, 3]));
    g.push_line("d", Style::Normal);
    assert_eq!(texts(&g), ["st", "b", "c", "d"]);
    let c = g.take_changes();
    assert_eq!((c.shift, c.rows), (1, vec![3]));
    // Nothing changed: nothing to do.
    let c = g.take_changes();
    assert_eq!((c.shift, c.rows), (0, vec![]));
    // A status that stays the same is not redrawn.
    g.set_status("st");
    assert!(g.take_changes().rows.is_empty());
}

#[test]
fn long_lines_wrap_and_a_full_region_of_scrolling_redraws_all() {
    let mut g = Grid::new(4, 4);
    g.push_line("abcdefghij", Style::Normal);
    assert_eq!(texts(&g), ["", "abcd", "efgh", "ij"]);
    g.take_changes();
    g.push_line("", Style::Normal);
    g.push_line("k\tl\u{7}", Style::Normal);
    assert_eq!(texts(&g), ["", "ij", "", "k l?"]);
    let c = g.take_changes();
    assert_eq!((c.shift, c.rows), (2, vec![2, 3]));
    for _ in 0..3 {
        g.push_line("x", Style::Normal);
    }
    let c = g.take_changes();
    assert_eq!((c.shift, c.rows), (0, vec![1, 2, 3]));
}

#[test]
fn a_line_exactly_as_wide_as_the_screen_takes_one_row() {
    let mut g = Grid::new(4, 3);
    g.push_line("abcd", Style::Normal);
    g.push_line("e", Style::Normal);
    assert_eq!(texts(&g), ["", "abcd", "e"]);
}

/// Random text and flushes: after every flush the frame buffer is exactly what a full redraw
/// of the grid gives (shifting pixels instead of redrawing loses nothing).
#[test]
fn incremental_flushes_equal_a_full_redraw() {
    for (format, bpp) in FORMATS {
        let l = layout(9, 6, format, bpp, 2);
        let mut fb = vec![0x55; l.height * l.line_bytes()];
        let mut con = Console::new(l, fb.len()).unwrap();
        let mut seed = 12345u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for step in 0..300 {
            let n = next();
            let len = (n % 23) as usize;
            let line: String = (0..len)
                .map(|i| char::from(b'!' + ((n >> (i % 8)) as u8).wrapping_add(i as u8) % 90))
                .collect();
            con.text(&line);
            if n % 5 == 0 {
                con.set_status(&alloc::format!("step {step}"));
            }
            if n % 3 == 0 || step == 299 {
                con.flush(&mut fb);
                let expected = host::render_expected(con.grid(), l);
                let got = host::Frame {
                    layout: l,
                    bytes: fb.clone(),
                };
                assert_eq!(
                    first_difference(&got, &expected),
                    None,
                    "{format:?}/{bpp} after step {step}"
                );
            }
        }
    }
}

/// The first visible pixel (x, y) where two frames of one layout differ.
fn first_difference(a: &host::Frame, b: &host::Frame) -> Option<(usize, usize)> {
    let l = a.layout;
    (0..l.height)
        .flat_map(|y| (0..l.width).map(move |x| (x, y)))
        .find(|&(x, y)| a.pixel(x, y) != b.pixel(x, y))
}

#[test]
fn every_glyph_is_distinct_and_blank_only_for_a_space() {
    let l = Layout {
        width: CELL_W,
        height: CELL_H,
        stride: CELL_W,
        bytes_per_pixel: 3,
        format: PixelFormat::Rgb,
    };
    let mut seen: HashMap<Vec<u8>, char> = HashMap::new();
    let r = crate::render::Renderer::new(l);
    for c in font::charset() {
        let mut cell = vec![0; CELL_W * CELL_H * 3];
        r.draw_cell(&mut cell, 0, 0, c, Style::Normal);
        if let Some(other) = seen.insert(cell, c) {
            panic!("{c:?} and {other:?} look the same");
        }
    }
    assert!(font::charset().count() > 180);
}

fn sample_console(l: Layout) -> Console {
    let len = l.height * l.line_bytes();
    let mut con = Console::new(l, len).unwrap();
    con.set_status(" baremark | payload 3 of 16 | 1.2 s");
    con.text("boot     baremark 0.1.0 | firmware bios");
    con.text("±µ ÄÖÜ é ~ {}[]|\\ \"quotes\" `tick` 100%");
    con.text("a line long enough to wrap around the right edge of this small screen");
    con
}

#[test]
fn render_and_decode_round_trip_in_every_format() {
    for (format, bpp) in FORMATS {
        let l = layout(30, 8, format, bpp, 7);
        let con = sample_console(l);
        let frame = host::render_expected(con.grid(), l);
        let d = host::decode(&frame).unwrap_or_else(|e| panic!("{format:?}/{bpp}: {e}"));
        assert_eq!(d.lines(), texts(con.grid()), "{format:?}/{bpp}");
        assert_eq!(d.styles(0), [Style::Status]);
        assert_eq!(d.styles(1), [Style::Normal]);
        // Through a PPM file (what QEMU's screendump writes) for the colour formats.
        if format != PixelFormat::Grey {
            let back = host::parse_ppm(&frame.to_ppm()).unwrap();
            assert_eq!(host::decode(&back).unwrap(), d);
        }
    }
}

#[test]
fn decoding_names_the_cell_that_does_not_match() {
    let l = layout(30, 8, PixelFormat::Bgr, 4, 0);
    let con = sample_console(l);
    let mut frame = host::render_expected(con.grid(), l);
    // One pixel of row 2, column 5 a little off.
    let at = (2 * CELL_H + 7) * l.line_bytes() + (5 * CELL_W + 3) * 4;
    frame.bytes[at] ^= 1;
    assert_eq!(
        host::decode(&frame),
        Err(DecodeError::NoMatch { row: 2, col: 5 })
    );
    frame.bytes[at] ^= 1;
    // A stray pixel in the right margin.
    let at = 3 * l.line_bytes() + (30 * CELL_W + 1) * 4;
    frame.bytes[at] = 9;
    assert_eq!(
        host::decode(&frame),
        Err(DecodeError::Margin {
            x: 30 * CELL_W + 1,
            y: 3
        })
    );
}

#[test]
fn ppm_headers_with_comments_parse_and_bad_ones_do_not() {
    let f = host::parse_ppm(b"P6\n# qemu\n2 1\n255\n\x01\x02\x03\x04\x05\x06").unwrap();
    assert_eq!((f.layout.width, f.layout.height), (2, 1));
    assert_eq!(f.pixel(1, 0), [4, 5, 6]);
    assert!(host::parse_ppm(b"P5\n2 1\n255\n").is_err());
    assert!(host::parse_ppm(b"P6\n2 1\n255\n\x01").is_err());
    assert!(host::parse_ppm(b"P6\n2 1\n65535\n").is_err());
}

#[test]
fn layouts_that_cannot_hold_a_console_are_refused() {
    let mut l = layout(10, 2, PixelFormat::Rgb, 4, 0);
    let len = l.height * l.line_bytes();
    assert!(Console::new(l, len).is_ok());
    assert_eq!(
        Console::new(l, len - 1).err(),
        Some(LayoutError::BufferTooShort)
    );
    l.bytes_per_pixel = 2;
    assert_eq!(Console::new(l, len).err(), Some(LayoutError::BadGeometry));
    l.bytes_per_pixel = 4;
    l.height = CELL_H + 3;
    assert_eq!(Console::new(l, len).err(), Some(LayoutError::TooSmall));
}

#[test]
fn medians_are_shown_with_about_four_digits() {
    let cases = [
        (0.0, "0"),
        (-0.00001, "0.0000"),
        (0.12345, "0.1235"),
        (6.2968, "6.297"),
        (12.3, "12.30"),
        (98.0, "98.00"),
        (100.0, "100"),
        (123.45, "123.5"),
        (-5.0, "-5.000"),
        (123456.7, "123457"),
        (f64::NAN, "n/a"),
    ];
    for (x, s) in cases {
        assert_eq!(format_median(x), s, "{x}");
    }
}

#[test]
fn the_summary_has_a_column_per_counted_event() {
    let mut s = Summary::new();
    s.add("empty", "tsc", Some(0.0));
    s.add("empty", "cycles", None);
    s.add("add-latency", "tsc", Some(6.2968));
    s.add("add-latency", "cycles", None);
    s.add("add-latency", "instructions", Some(1.0));
    assert_eq!(s.benchmarks(), 2);
    assert_eq!(
        s.table(80),
        [
            " benchmark      tsc  instructions",
            " empty            0             -",
            " add-latency  6.297         1.000",
        ]
    );
    // Too narrow for the second column.
    assert_eq!(
        s.table(24),
        [
            " benchmark      tsc",
            " empty            0",
            " add-latency  6.297",
            " (1 more events do not fit: see the serial log)",
        ]
    );
}

#[test]
fn the_final_screen_keeps_status_and_last_line_even_when_the_table_is_long() {
    let l = layout(64, 10, PixelFormat::Rgb, 4, 0);
    let mut con = Console::new(l, l.height * l.line_bytes()).unwrap();
    con.text("log");
    let mut s = Summary::new();
    for i in 0..20 {
        s.add(&alloc::format!("bench-{i}"), "tsc", Some(i as f64));
    }
    con.final_screen(&s, &[], "run complete: status ok", false, "halted");
    let t = texts(con.grid());
    assert_eq!(
        t[1],
        " Summary of 20 benchmarks: median per iteration; tsc in ticks"
    );
    assert_eq!(t[3], " benchmark    tsc");
    assert_eq!(t[4], " bench-0        0");
    assert_eq!(t[5], " bench-1    1.000");
    assert_eq!(t[6], " ... 18 more lines: `baremark report` shows them");
    assert_eq!(t[7], "");
    assert_eq!(t[8], " run complete: status ok");
    assert_eq!(t[9], " halted");

    con.final_screen(
        &Summary::new(),
        &["results: on the stick"],
        "boom",
        true,
        "halted",
    );
    let frame = host::render_expected(con.grid(), l);
    let d = host::decode(&frame).unwrap();
    assert_eq!(d.text(1), " No benchmark results.");
    assert_eq!(d.text(7), " results: on the stick");
    assert_eq!(d.styles(8), [Style::Fail]);
    assert_eq!(d.styles(9), [Style::Heading]);
}

#[test]
fn the_status_line_says_the_time_when_known() {
    assert_eq!(
        crate::console::status_line("payload 1 of 2: x", Some(12_345)),
        " baremark | payload 1 of 2: x | 12.3 s"
    );
    assert_eq!(crate::console::status_line("s", None), " baremark | s");
}

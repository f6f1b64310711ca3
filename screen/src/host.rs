//! The host side (feature `std`): the screen a grid should produce, QEMU's screendumps (PPM),
//! and decoding a frame back into text by exact per-cell glyph match, so tests can check
//! the screen character by character.

use std::collections::HashMap;
use std::fmt;

use crate::font::{self, CELL_H, CELL_W};
use crate::grid::Grid;
use crate::pixels::{Layout, PixelFormat};
use crate::render::Renderer;
use crate::style::{MARGIN, Style};

/// A frame buffer's contents and layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub layout: Layout,
    pub bytes: Vec<u8>,
}

impl Frame {
    /// An RGB layout (3 bytes per pixel, no padding), as in a PPM file.
    pub fn rgb_layout(width: usize, height: usize) -> Layout {
        Layout {
            width,
            height,
            stride: width,
            bytes_per_pixel: 3,
            format: PixelFormat::Rgb,
        }
    }

    /// The bytes of pixel (`x`, `y`).
    pub fn pixel(&self, x: usize, y: usize) -> &[u8] {
        let bpp = self.layout.bytes_per_pixel;
        let at = y * self.layout.line_bytes() + x * bpp;
        &self.bytes[at..at + bpp]
    }

    /// As a binary PPM (P6): for saving a screen that failed a check. Grey shows as grey.
    pub fn to_ppm(&self) -> Vec<u8> {
        let Layout { width, height, .. } = self.layout;
        let mut out = format!("P6\n{width} {height}\n255\n").into_bytes();
        for y in 0..height {
            for x in 0..width {
                let p = self.pixel(x, y);
                out.extend_from_slice(&match self.layout.format {
                    PixelFormat::Rgb => [p[0], p[1], p[2]],
                    PixelFormat::Bgr => [p[2], p[1], p[0]],
                    PixelFormat::Grey => [p[0]; 3],
                });
            }
        }
        out
    }
}

/// Reads a binary PPM (P6, maxval 255), what QEMU's `screendump` writes.
pub fn parse_ppm(data: &[u8]) -> Result<Frame, String> {
    let mut at = 0;
    let mut fields = [0usize; 3];
    let magic = data.get(..2).ok_or("empty file")?;
    if magic != b"P6" {
        return Err(format!("not a binary PPM (magic {magic:?})"));
    }
    at += 2;
    for field in &mut fields {
        // Whitespace and comments, then digits.
        loop {
            match data.get(at) {
                Some(b) if b.is_ascii_whitespace() => at += 1,
                Some(b'#') => {
                    while data.get(at).is_some_and(|&b| b != b'\n') {
                        at += 1;
                    }
                }
                _ => break,
            }
        }
        let start = at;
        while data.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        *field = std::str::from_utf8(&data[start..at])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad PPM header at byte {start}"))?;
    }
    let [width, height, maxval] = fields;
    if maxval != 255 {
        return Err(format!("PPM maxval {maxval}, expected 255"));
    }
    // Exactly one whitespace byte before the pixels.
    at += 1;
    let need = width * height * 3;
    let pixels = data
        .get(at..at + need)
        .ok_or_else(|| format!("PPM has {} pixel bytes, {need} expected", data.len() - at))?;
    Ok(Frame {
        layout: Frame::rgb_layout(width, height),
        bytes: pixels.to_vec(),
    })
}

/// The frame a console shows once `grid` is fully drawn on a cleared frame buffer of `layout`.
pub fn render_expected(grid: &Grid, layout: Layout) -> Frame {
    let mut bytes = vec![0; layout.height * layout.line_bytes()];
    let r = Renderer::new(layout);
    r.clear(&mut bytes);
    for row in 0..grid.rows() {
        for (col, cell) in grid.row(row).iter().enumerate() {
            r.draw_cell(&mut bytes, row, col, cell.ch, cell.style);
        }
    }
    Frame { layout, bytes }
}

/// A decoded screen: each cell's character and style. A blank cell's style is the first in
/// [`Style::ALL`] with its background.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub rows: Vec<Vec<(char, Style)>>,
}

impl Decoded {
    /// Row `row` as text, trailing blanks removed.
    pub fn text(&self, row: usize) -> String {
        let s: String = self.rows[row].iter().map(|c| c.0).collect();
        s.trim_end().to_string()
    }

    /// Every row as text.
    pub fn lines(&self) -> Vec<String> {
        (0..self.rows.len()).map(|r| self.text(r)).collect()
    }

    /// The styles of the non-blank cells of `row`.
    pub fn styles(&self, row: usize) -> Vec<Style> {
        let mut v: Vec<Style> = Vec::new();
        for &(c, s) in &self.rows[row] {
            if c != ' ' && !v.contains(&s) {
                v.push(s);
            }
        }
        v
    }
}

/// Why a frame does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// No glyph in any style matches the cell exactly.
    NoMatch { row: usize, col: usize },
    /// Several characters match (the font draws them alike).
    Ambiguous {
        row: usize,
        col: usize,
        chars: Vec<char>,
    },
    /// A pixel outside the grid is not the margin colour.
    Margin { x: usize, y: usize },
    /// The frame is too small for a console.
    TooSmall,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NoMatch { row, col } => write!(
                f,
                "cell at row {row}, column {col}: no glyph in any style matches it exactly"
            ),
            DecodeError::Ambiguous { row, col, chars } => {
                write!(f, "cell at row {row}, column {col}: matches {chars:?}")
            }
            DecodeError::Margin { x, y } => {
                write!(
                    f,
                    "pixel ({x}, {y}) outside the text grid is not the margin colour"
                )
            }
            DecodeError::TooSmall => write!(f, "the frame is too small for a console"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Every glyph in every style, by its exact pixels in one format.
struct Glyphs {
    by_pixels: HashMap<Vec<u8>, Vec<(char, Style)>>,
}

impl Glyphs {
    fn new(format: PixelFormat, bytes_per_pixel: usize) -> Self {
        let layout = Layout {
            width: CELL_W,
            height: CELL_H,
            stride: CELL_W,
            bytes_per_pixel,
            format,
        };
        let r = Renderer::new(layout);
        let mut by_pixels: HashMap<Vec<u8>, Vec<(char, Style)>> = HashMap::new();
        for style in Style::ALL {
            for c in font::charset() {
                let mut cell = vec![0; CELL_W * CELL_H * bytes_per_pixel];
                r.draw_cell(&mut cell, 0, 0, c, style);
                by_pixels.entry(cell).or_default().push((c, style));
            }
        }
        Self { by_pixels }
    }
}

/// Decodes `frame` into text: every cell of the grid a console of its layout has must be
/// exactly one glyph in one of the styles (a blank cell is a space in any style with that
/// background), and every pixel outside the grid the margin colour.
pub fn decode(frame: &Frame) -> Result<Decoded, DecodeError> {
    let layout = frame.layout;
    layout
        .check(frame.bytes.len())
        .map_err(|_| DecodeError::TooSmall)?;
    let glyphs = Glyphs::new(layout.format, layout.bytes_per_pixel);
    let bpp = layout.bytes_per_pixel;
    let (cols, rows) = (layout.columns(), layout.rows());
    let mut out = Vec::with_capacity(rows);
    let mut key = Vec::with_capacity(CELL_W * CELL_H * bpp);
    for row in 0..rows {
        let mut cells = Vec::with_capacity(cols);
        for col in 0..cols {
            key.clear();
            for y in 0..CELL_H {
                let at = (row * CELL_H + y) * layout.line_bytes() + col * CELL_W * bpp;
                key.extend_from_slice(&frame.bytes[at..at + CELL_W * bpp]);
            }
            let found = glyphs
                .by_pixels
                .get(&key)
                .ok_or(DecodeError::NoMatch { row, col })?;
            let first = found[0];
            if found.iter().any(|&(c, _)| c != first.0) {
                let mut chars: Vec<char> = found.iter().map(|&(c, _)| c).collect();
                chars.dedup();
                return Err(DecodeError::Ambiguous { row, col, chars });
            }
            cells.push(first);
        }
        out.push(cells);
    }
    let margin = layout.format.encode(MARGIN);
    for y in 0..layout.height {
        let x_from = if y < rows * CELL_H { cols * CELL_W } else { 0 };
        for x in x_from..layout.width {
            if frame.pixel(x, y) != &margin[..bpp] {
                return Err(DecodeError::Margin { x, y });
            }
        }
    }
    Ok(Decoded { rows: out })
}

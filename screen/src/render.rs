//! Drawing cells into a frame buffer, and shifting pixel rows (scrolling without redrawing).

use crate::font::{self, CELL_H, CELL_W};
use crate::pixels::Layout;
use crate::style::{MARGIN, Style};

/// Draws cells in one layout. Holds each style's 256 blended pixels, so a glyph pixel is one
/// table look-up and a copy.
pub struct Renderer {
    layout: Layout,
    /// `[style][intensity]`: the encoded pixel.
    table: [[[u8; 4]; 256]; Style::ALL.len()],
}

impl Renderer {
    /// A renderer for `layout` (checked by the caller with [`Layout::check`]).
    pub fn new(layout: Layout) -> Self {
        let mut table = [[[0; 4]; 256]; Style::ALL.len()];
        for style in Style::ALL {
            for (i, px) in table[style.index()].iter_mut().enumerate() {
                *px = layout.format.encode(style.blend(i as u8));
            }
        }
        Self { layout, table }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Draws `c` (already [`font::displayable`]) in `style` at text cell (`row`, `col`).
    pub fn draw_cell(&self, fb: &mut [u8], row: usize, col: usize, c: char, style: Style) {
        // A constant pixel size makes each pixel a few moves instead of a memcpy call.
        match self.layout.bytes_per_pixel {
            1 => self.draw::<1>(fb, row, col, c, style),
            3 => self.draw::<3>(fb, row, col, c, style),
            _ => self.draw::<4>(fb, row, col, c, style),
        }
    }

    fn draw<const N: usize>(&self, fb: &mut [u8], row: usize, col: usize, c: char, style: Style) {
        let line = self.layout.line_bytes();
        let table = &self.table[style.index()];
        let raster = font::raster(c).or_else(|| font::raster(font::REPLACEMENT));
        let x0 = col * CELL_W * N;
        for y in 0..CELL_H {
            let start = (row * CELL_H + y) * line + x0;
            let out = &mut fb[start..start + CELL_W * N];
            match raster.and_then(|r| r.get(y)) {
                Some(intensities) => {
                    for (px, &i) in out.as_chunks_mut::<N>().0.iter_mut().zip(*intensities) {
                        px.copy_from_slice(&table[usize::from(i)][..N]);
                    }
                }
                None => {
                    for px in out.as_chunks_mut::<N>().0 {
                        px.copy_from_slice(&table[0][..N]);
                    }
                }
            }
        }
    }

    /// Paints cells `from..to` of text row `row` blank (the `Normal` background): trailing
    /// blanks, most of a typical row, cost a memset instead of a glyph each.
    pub fn blank_cells(&self, fb: &mut [u8], row: usize, from: usize, to: usize) {
        if from >= to {
            return;
        }
        let bpp = self.layout.bytes_per_pixel;
        let px = &self.table[Style::Normal.index()][0][..bpp];
        let line = self.layout.line_bytes();
        for y in 0..CELL_H {
            let start = (row * CELL_H + y) * line;
            let span = &mut fb[start + from * CELL_W * bpp..start + to * CELL_W * bpp];
            if px.iter().all(|&b| b == px[0]) {
                span.fill(px[0]);
            } else {
                for out in span.chunks_exact_mut(bpp) {
                    out.copy_from_slice(px);
                }
            }
        }
    }

    /// Moves text rows `first + by .. end` up to `first ..` (pixels only; the rows left at the
    /// bottom keep their old pixels until drawn).
    pub fn shift_up(&self, fb: &mut [u8], first: usize, end: usize, by: usize) {
        if by == 0 || first + by >= end {
            return;
        }
        let row_bytes = CELL_H * self.layout.line_bytes();
        fb.copy_within((first + by) * row_bytes..end * row_bytes, first * row_bytes);
    }

    /// Paints the whole frame buffer in the margin colour (once, before the first draw: the
    /// firmware's and bootloader's pixels go).
    pub fn clear(&self, fb: &mut [u8]) {
        match self.layout.bytes_per_pixel {
            1 => self.clear_n::<1>(fb),
            3 => self.clear_n::<3>(fb),
            _ => self.clear_n::<4>(fb),
        }
    }

    fn clear_n<const N: usize>(&self, fb: &mut [u8]) {
        let px = self.layout.format.encode(MARGIN);
        let line = self.layout.line_bytes();
        for y in 0..self.layout.height {
            let span = &mut fb[y * line..y * line + self.layout.width * N];
            if px[..N].iter().all(|&b| b == px[0]) {
                // Black: a memset.
                span.fill(px[0]);
            } else {
                for out in span.as_chunks_mut::<N>().0 {
                    out.copy_from_slice(&px[..N]);
                }
            }
        }
    }
}

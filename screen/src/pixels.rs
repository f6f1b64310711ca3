//! The frame buffer's layout and pixel formats, as the bootloader reports them.

use crate::font::{CELL_H, CELL_W};
use crate::style::Rgb;

/// How a pixel's colour is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PixelFormat {
    /// Red, green, blue in byte order (then padding up to `bytes_per_pixel`).
    Rgb,
    /// Blue, green, red in byte order (then padding); what QEMU's VGA and most GOPs give.
    Bgr,
    /// One grey byte (luminance).
    Grey,
}

impl PixelFormat {
    pub fn name(self) -> &'static str {
        match self {
            PixelFormat::Rgb => "rgb",
            PixelFormat::Bgr => "bgr",
            PixelFormat::Grey => "grey",
        }
    }

    /// The bytes of `c` (the first `bytes_per_pixel` are used; padding is 0).
    pub fn encode(self, c: Rgb) -> [u8; 4] {
        match self {
            PixelFormat::Rgb => [c.0, c.1, c.2, 0],
            PixelFormat::Bgr => [c.2, c.1, c.0, 0],
            // ITU-R BT.601 luma, integer and rounded.
            PixelFormat::Grey => {
                let y = (299 * u32::from(c.0) + 587 * u32::from(c.1) + 114 * u32::from(c.2) + 500)
                    / 1000;
                [y as u8, 0, 0, 0]
            }
        }
    }
}

/// A frame buffer's geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Visible pixels per line.
    pub width: usize,
    /// Lines.
    pub height: usize,
    /// Pixels from one line's start to the next's (>= width).
    pub stride: usize,
    pub bytes_per_pixel: usize,
    pub format: PixelFormat,
}

/// Why a frame buffer cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// Fewer than two text rows or one column fit.
    TooSmall,
    /// `bytes_per_pixel` is 0 or more than 4, too small for the format, or stride < width.
    BadGeometry,
    /// The buffer is shorter than the layout says.
    BufferTooShort,
}

impl LayoutError {
    pub fn message(self) -> &'static str {
        match self {
            LayoutError::TooSmall => "the frame buffer holds fewer than 2 rows of text",
            LayoutError::BadGeometry => "the frame buffer's geometry is inconsistent",
            LayoutError::BufferTooShort => "the frame buffer is shorter than its geometry",
        }
    }
}

impl Layout {
    /// Text columns that fit.
    pub fn columns(&self) -> usize {
        self.width / CELL_W
    }

    /// Text rows that fit.
    pub fn rows(&self) -> usize {
        self.height / CELL_H
    }

    /// Bytes from one line's start to the next's.
    pub fn line_bytes(&self) -> usize {
        self.stride * self.bytes_per_pixel
    }

    /// Bytes the layout needs (the last line counts only its visible pixels).
    pub fn needed_bytes(&self) -> usize {
        match self.height {
            0 => 0,
            h => (h - 1) * self.line_bytes() + self.width * self.bytes_per_pixel,
        }
    }

    /// Checks the layout against a buffer of `len` bytes.
    pub fn check(&self, len: usize) -> Result<(), LayoutError> {
        let min_bpp = if self.format == PixelFormat::Grey {
            1
        } else {
            3
        };
        if !(min_bpp..=4).contains(&self.bytes_per_pixel) || self.stride < self.width {
            return Err(LayoutError::BadGeometry);
        }
        if self.columns() < 1 || self.rows() < 2 {
            return Err(LayoutError::TooSmall);
        }
        if len < self.needed_bytes() {
            return Err(LayoutError::BufferTooShort);
        }
        Ok(())
    }
}

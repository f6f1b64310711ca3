//! The glyphs: Noto Sans Mono, 16 px, regular (the crate the bootloader draws its own log
//! with). Every glyph is a fixed 7x16 raster of intensities (0 = background, 255 = full
//! foreground).

use noto_sans_mono_bitmap::{FontWeight, RasterHeight, get_raster, get_raster_width};

/// Cell height in pixels.
pub const CELL_H: usize = 16;
/// Cell width in pixels.
pub const CELL_W: usize = get_raster_width(FontWeight::Regular, RasterHeight::Size16);

/// Shown for a character the font does not have.
pub const REPLACEMENT: char = '?';

/// The character a cell shows for `c`: a tab is a space, anything the font lacks (control
/// characters, most of Unicode) is [`REPLACEMENT`].
pub fn displayable(c: char) -> char {
    match c {
        // Drawn exactly like a space and a hyphen: one glyph per look keeps decoding exact.
        '\t' | '\u{a0}' => ' ',
        '\u{ad}' => '-',
        c if c.is_control() => REPLACEMENT,
        c if raster(c).is_some() => c,
        _ => REPLACEMENT,
    }
}

/// The raster of `c` (rows of intensities), if the font has it.
pub fn raster(c: char) -> Option<&'static [&'static [u8]]> {
    get_raster(c, FontWeight::Regular, RasterHeight::Size16).map(|r| r.raster())
}

/// Every character a cell can show (printable ASCII and Latin-1), for decoding.
pub fn charset() -> impl Iterator<Item = char> {
    (' '..='~')
        .chain('\u{a0}'..='\u{ff}')
        .filter(|&c| displayable(c) == c)
}

//! The colours of a cell. A few fixed styles, so a screendump can be decoded by trying each.

/// A colour, 8 bits per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// What a cell is drawn as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Style {
    /// The log and the table: light grey on black.
    #[default]
    Normal,
    /// The status line: black on cyan.
    Status,
    /// Headings and the last line: white on black.
    Heading,
    /// A failed run's status: light red on black.
    Fail,
}

impl Style {
    /// Every style, in the order a decoder prefers them (a blank cell on black decodes as
    /// `Normal`).
    pub const ALL: [Style; 4] = [Style::Normal, Style::Status, Style::Heading, Style::Fail];

    /// (foreground, background).
    pub const fn colours(self) -> (Rgb, Rgb) {
        const BLACK: Rgb = Rgb(0, 0, 0);
        match self {
            Style::Normal => (Rgb(0xc0, 0xc0, 0xc0), BLACK),
            Style::Status => (BLACK, Rgb(0x00, 0xa8, 0xa8)),
            Style::Heading => (Rgb(0xff, 0xff, 0xff), BLACK),
            Style::Fail => (Rgb(0xff, 0x60, 0x60), BLACK),
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// Foreground and background blended by a glyph intensity (0 = background), rounded.
    pub fn blend(self, intensity: u8) -> Rgb {
        let (fg, bg) = self.colours();
        let i = u32::from(intensity);
        let mix = |f: u8, b: u8| ((u32::from(f) * i + u32::from(b) * (255 - i) + 127) / 255) as u8;
        Rgb(mix(fg.0, bg.0), mix(fg.1, bg.1), mix(fg.2, bg.2))
    }
}

/// The margin around the grid (right and bottom leftovers of the frame buffer).
pub const MARGIN: Rgb = Rgb(0, 0, 0);

//! The framebuffer console's logic, shared by the kernel (which draws) and the host tests (which
//! read the screen back), docs/screen.md.
//!
//! | module    | job                                                                  |
//! |-----------|----------------------------------------------------------------------|
//! | `font`    | the glyphs (noto-sans-mono-bitmap, 16 px) and which characters show  |
//! | `style`   | the colours of a cell                                                 |
//! | `pixels`  | the frame buffer's layout and pixel formats (RGB, BGR, grey)          |
//! | `render`  | drawing cells and shifting pixel rows                                 |
//! | `grid`    | the text grid: status line, scrolling region, dirty rows              |
//! | `console` | grid + renderer: appending text, flushing what changed, the final screen |
//! | `summary` | the results table of the final screen                                 |
//! | `host`    | (feature `std`) expected screens, PPM screendumps, exact decoding     |
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod console;
pub mod font;
pub mod grid;
pub mod pixels;
pub mod render;
pub mod style;
pub mod summary;

#[cfg(any(test, feature = "std"))]
pub mod host;

#[cfg(test)]
mod tests;

pub use console::{Console, FlushStats};
pub use grid::Grid;
pub use pixels::{Layout, PixelFormat};
pub use style::{Rgb, Style};
pub use summary::Summary;

//! The bootloader's frame buffer description as the console's layout.

use baremark_screen::{Layout, PixelFormat};
use bootloader_api::info::{FrameBufferInfo, PixelFormat as BootFormat};

/// The font, as the `screen` record names it.
pub const FONT: &str = "noto-sans-mono-bitmap regular 16 px (7x16 cells)";

/// The layout of `info`, or why the console cannot draw on it.
pub fn layout(info: &FrameBufferInfo) -> Result<Layout, &'static str> {
    let format = match info.pixel_format {
        BootFormat::Rgb => PixelFormat::Rgb,
        BootFormat::Bgr => PixelFormat::Bgr,
        BootFormat::U8 => PixelFormat::Grey,
        _ => return Err("unsupported pixel format (bit masks)"),
    };
    Ok(Layout {
        width: info.width,
        height: info.height,
        stride: info.stride,
        bytes_per_pixel: info.bytes_per_pixel,
        format,
    })
}

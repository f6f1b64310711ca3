//! The framebuffer console: the human-readable report on the screen (docs/screen.md).
//!
//! PLACEHOLDER: being written. The hooks below are called by `outputs`.

/// A human-readable text line (without line ending), as sent to the serial port.
pub fn text(line: &[u8]) {
    let _ = line;
}

/// Draws what is pending (between payloads and at the end, never inside a measured region).
/// `status`: the status line's text.
pub fn flush(status: &str) {
    let _ = status;
}

//! Serial output: records (one JSON object per line) and human-readable text lines.
//!
//! Lines end in "\r\n" so a terminal on a real serial cable shows them properly; the host
//! parser accepts both line endings. Anything that is not a record line is text for people.
//!
//! This is the record API every producer uses. Every line goes to the fan-out (`fanout`): the
//! serial port, the stream kept for the results file on the boot stick, and, for text lines,
//! the screen.

use core::fmt::{self, Write};

use super::fanout;
use super::record::{LineBuf, MAX_RECORD_LEN, Record};

/// Emits one record, built by `build`. If it does not fit in [`MAX_RECORD_LEN`], an `error`
/// record saying so goes out instead, so the stream never carries a broken line.
pub fn record(kind: &str, build: impl for<'a> FnOnce(Record<'a>) -> Record<'a>) {
    let mut buf = LineBuf::<MAX_RECORD_LEN>::new();
    if build(Record::new(&mut buf, kind)).finish().is_ok() {
        write_line(buf.as_bytes());
    } else {
        buf.clear();
        let _ = Record::new(&mut buf, "error")
            .str("source", "console")
            .fmt(
                "message",
                format_args!("a `{kind}` record exceeded {MAX_RECORD_LEN} bytes and was dropped"),
            )
            .finish();
        write_line(buf.as_bytes());
    }
}

/// Emits a record from a fault or panic path: no lock is waited for, and the record starts on
/// a fresh line in case the interrupted code was in the middle of one.
pub fn record_fatal(kind: &str, build: impl for<'a> FnOnce(Record<'a>) -> Record<'a>) {
    let mut buf = LineBuf::<MAX_RECORD_LEN>::new();
    let complete = build(Record::new(&mut buf, kind)).finish().is_ok();
    fanout::fatal(b"\r\n");
    if complete {
        fanout::fatal(buf.as_bytes());
    } else {
        fanout::fatal(
            br#"{"type":"error","v":1,"source":"console","message":"a fatal record was too long"}"#,
        );
    }
    fanout::fatal(b"\r\n");
}

/// Writes one line (adds the line ending) under the serial lock.
pub fn write_line(bytes: &[u8]) {
    fanout::line(bytes);
}

/// Writes a human-readable text line.
pub fn text(args: fmt::Arguments<'_>) {
    let mut buf = LineBuf::<512>::new();
    let _ = buf.write_fmt(args);
    write_line(buf.as_bytes());
    fanout::text(buf.as_bytes());
}

/// Prints a human-readable line on the serial console.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::output::console::text(format_args!($($arg)*)) };
}

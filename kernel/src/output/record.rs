//! Records: every fact the kernel reports is one JSON object on one line, with a `type` and
//! the schema version `v`. The host tool, the tests and users parse these lines; the schema is
//! documented in docs/records.md.
//!
//! The writer needs no heap, so the fault and panic paths can use it: a record is formatted
//! into a fixed buffer on the stack ([`LineBuf`]) and sent in one piece. Numbers that can exceed
//! 2^53 (addresses, register values) are written as hex strings so no JSON reader loses bits.

use core::fmt::{self, Write};

/// Version of the record schema. Bump it when a field changes meaning or disappears;
/// adding fields or record types keeps the version.
pub const SCHEMA_VERSION: u32 = 1;

/// Longest record line (bytes, without the newline).
pub const MAX_RECORD_LEN: usize = 4096;

/// A fixed-capacity line buffer. Writing past the capacity sets `overflowed` and drops the rest.
pub struct LineBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
    overflowed: bool,
}

impl<const N: usize> Default for LineBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> LineBuf<N> {
    pub const fn new() -> Self {
        Self {
            buf: [0; N],
            len: 0,
            overflowed: false,
        }
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    pub fn as_str(&self) -> &str {
        // Only whole `&str`s are ever appended, and overflow drops whole strings, so the
        // contents are always valid UTF-8.
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
    pub fn clear(&mut self) {
        self.len = 0;
        self.overflowed = false;
    }
}

impl<const N: usize> Write for LineBuf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.overflowed || self.len + s.len() > N {
            self.overflowed = true;
            return Err(fmt::Error);
        }
        self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

/// Writes `s` as JSON string contents (without the quotes), escaping as RFC 8259 requires.
pub fn write_escaped(w: &mut dyn Write, s: &str) -> fmt::Result {
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escape: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => None,
            _ => continue,
        };
        w.write_str(&s[start..i])?;
        match escape {
            Some(e) => w.write_str(e)?,
            None => write!(w, "\\u{:04x}", c as u32)?,
        }
        start = i + c.len_utf8();
    }
    w.write_str(&s[start..])
}

/// Adapter that escapes everything written through it (for `format_args!` values such as a
/// panic message).
pub struct Escaper<'a>(pub &'a mut dyn Write);

impl Write for Escaper<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_escaped(self.0, s)
    }
}

/// Builds one record: `Record::new(w, "cpu").u64("family", 6).str("vendor", v).finish()`.
///
/// Errors from the sink are remembered and returned by [`Record::finish`]; the builder methods
/// can be chained without checking each one.
pub struct Record<'a> {
    w: &'a mut dyn Write,
    // Whether the next field of the innermost open object is its first (no comma).
    first: [bool; 8],
    depth: usize,
    result: fmt::Result,
}

impl<'a> Record<'a> {
    /// Starts a record of type `kind` with the schema version.
    pub fn new(w: &'a mut dyn Write, kind: &str) -> Self {
        let mut r = Record {
            w,
            first: [true; 8],
            depth: 0,
            result: Ok(()),
        };
        r.raw("{");
        r.str("type", kind).u64("v", u64::from(SCHEMA_VERSION))
    }

    fn raw(&mut self, s: &str) {
        if self.result.is_ok() {
            self.result = self.w.write_str(s);
        }
    }

    fn key(&mut self, key: &str) {
        if !self.first[self.depth] {
            self.raw(",");
        }
        self.first[self.depth] = false;
        self.raw("\"");
        if self.result.is_ok() {
            self.result = write_escaped(self.w, key);
        }
        self.raw("\":");
    }

    /// A string field.
    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        self.raw("\"");
        if self.result.is_ok() {
            self.result = write_escaped(self.w, value);
        }
        self.raw("\"");
        self
    }

    /// A string field formatted from arguments (escaped).
    pub fn fmt(mut self, key: &str, args: fmt::Arguments<'_>) -> Self {
        self.key(key);
        self.raw("\"");
        if self.result.is_ok() {
            self.result = Escaper(self.w).write_fmt(args);
        }
        self.raw("\"");
        self
    }

    /// An unsigned integer field (use [`Record::hex`] for addresses and register values).
    pub fn u64(mut self, key: &str, value: u64) -> Self {
        self.key(key);
        if self.result.is_ok() {
            self.result = write!(self.w, "{value}");
        }
        self
    }

    /// A signed integer field.
    pub fn i64(mut self, key: &str, value: i64) -> Self {
        self.key(key);
        if self.result.is_ok() {
            self.result = write!(self.w, "{value}");
        }
        self
    }

    /// A number with a fraction (statistics). Rust's shortest round-trip formatting, never an
    /// exponent; NaN and infinities, which JSON cannot carry, become `null`.
    pub fn f64(mut self, key: &str, value: f64) -> Self {
        if !value.is_finite() {
            return self.null(key);
        }
        self.key(key);
        if self.result.is_ok() {
            // -0.0 prints as "-0": fine JSON, but say 0.
            let value = if value == 0.0 { 0.0 } else { value };
            self.result = write!(self.w, "{value}");
        }
        self
    }

    /// An optional number: the value or `null`.
    pub fn opt_f64(self, key: &str, value: Option<f64>) -> Self {
        match value {
            Some(v) => self.f64(key, v),
            None => self.null(key),
        }
    }

    /// An array of unsigned integers.
    pub fn u64_array(mut self, key: &str, values: &[u64]) -> Self {
        self.key(key);
        self.raw("[");
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                self.raw(",");
            }
            if self.result.is_ok() {
                self.result = write!(self.w, "{v}");
            }
        }
        self.raw("]");
        self
    }

    /// A value as a hex string, `"0x1f"`.
    pub fn hex(mut self, key: &str, value: u64) -> Self {
        self.key(key);
        if self.result.is_ok() {
            self.result = write!(self.w, "\"{value:#x}\"");
        }
        self
    }

    /// A boolean field.
    pub fn bool(mut self, key: &str, value: bool) -> Self {
        self.key(key);
        self.raw(if value { "true" } else { "false" });
        self
    }

    /// A `null` field: the fact does not exist or was not measured.
    pub fn null(mut self, key: &str) -> Self {
        self.key(key);
        self.raw("null");
        self
    }

    /// An optional unsigned integer: the value or `null`.
    pub fn opt_u64(self, key: &str, value: Option<u64>) -> Self {
        match value {
            Some(v) => self.u64(key, v),
            None => self.null(key),
        }
    }

    /// An optional string: the value or `null`.
    pub fn opt_str(self, key: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.str(key, v),
            None => self.null(key),
        }
    }

    /// A nested object, filled by `f`.
    pub fn object(mut self, key: &str, f: impl FnOnce(Self) -> Self) -> Self {
        self.key(key);
        self.raw("{");
        if self.depth + 1 >= self.first.len() {
            self.result = Err(fmt::Error);
            return self;
        }
        self.depth += 1;
        self.first[self.depth] = true;
        let mut this = f(self);
        this.depth -= 1;
        this.raw("}");
        this
    }

    /// An array of strings.
    pub fn str_array<'s>(mut self, key: &str, values: impl IntoIterator<Item = &'s str>) -> Self {
        self.key(key);
        self.raw("[");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.raw(",");
            }
            self.raw("\"");
            if self.result.is_ok() {
                self.result = write_escaped(self.w, v);
            }
            self.raw("\"");
        }
        self.raw("]");
        self
    }

    /// Closes the record (without the line ending; the console adds it).
    pub fn finish(mut self) -> fmt::Result {
        self.raw("}");
        self.result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::String;

    fn parse(s: &str) -> serde_json::Value {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
    }

    #[test]
    fn numbers_with_fractions_and_integer_arrays() {
        let mut out = String::new();
        Record::new(&mut out, "result")
            .f64("a", 4.0)
            .f64("b", 0.1)
            .f64("c", -2.5)
            .f64("d", f64::NAN)
            .f64("e", f64::INFINITY)
            .f64("f", -0.0)
            .f64("g", 1e21)
            .opt_f64("h", None)
            .u64_array("v", &[1, u64::MAX])
            .u64_array("w", &[])
            .finish()
            .unwrap();
        let v = parse(&out);
        assert_eq!(v["a"], 4.0);
        assert_eq!(v["b"], 0.1);
        assert_eq!(v["c"], -2.5);
        assert!(v["d"].is_null() && v["e"].is_null() && v["h"].is_null());
        assert_eq!(out.matches("\"f\":0,").count(), 1, "{out}");
        assert_eq!(v["g"], 1e21);
        assert_eq!(v["v"][1], u64::MAX);
        assert_eq!(v["w"].as_array().map(|a| a.len()), Some(0));
    }

    #[test]
    fn record_is_one_json_object_with_type_and_version() {
        let mut out = String::new();
        Record::new(&mut out, "cpu")
            .str("vendor", "GenuineIntel")
            .u64("family", 6)
            .hex("rip", 0xffff_8000_0000_1234)
            .bool("x2apic", true)
            .null("hypervisor")
            .opt_u64("max", Some(3))
            .object("features", |r| {
                r.bool("nx", true).object("deep", |r| r.i64("n", -5))
            })
            .str_array("list", ["a", "b\"c"])
            .finish()
            .unwrap();
        assert!(!out.contains('\n'));
        let v = parse(&out);
        assert_eq!(v["type"], "cpu");
        assert_eq!(v["v"], SCHEMA_VERSION);
        assert_eq!(v["vendor"], "GenuineIntel");
        assert_eq!(v["family"], 6);
        assert_eq!(v["rip"], "0xffff800000001234");
        assert_eq!(v["x2apic"], true);
        assert!(v["hypervisor"].is_null());
        assert_eq!(v["max"], 3);
        assert_eq!(v["features"]["nx"], true);
        assert_eq!(v["features"]["deep"]["n"], -5);
        assert_eq!(v["list"][1], "b\"c");
    }

    #[test]
    fn strings_are_escaped() {
        let nasty = "quote\" back\\ nl\n cr\r tab\t bell\u{7} del\u{7f} é 漢";
        let mut out = String::new();
        Record::new(&mut out, "panic")
            .str("message", nasty)
            .fmt("f", format_args!("{}", nasty))
            .finish()
            .unwrap();
        let v = parse(&out);
        assert_eq!(v["message"], nasty);
        assert_eq!(v["f"], nasty);
        assert!(!out.contains('\n') && !out.contains('\r'));
    }

    #[test]
    fn linebuf_reports_overflow_instead_of_cutting_a_record() {
        let mut buf = LineBuf::<32>::new();
        let r = Record::new(&mut buf, "x")
            .str("long", "0123456789012345678901234567890")
            .finish();
        assert!(r.is_err());
        assert!(buf.overflowed());
        let mut ok = LineBuf::<64>::new();
        Record::new(&mut ok, "x").u64("n", 1).finish().unwrap();
        parse(ok.as_str());
    }

    proptest::proptest! {
        #[test]
        fn any_string_round_trips(s in "\\PC*|[\"\\\\\n\r\t\u{0}-\u{1f}\u{7f}é漢😀]*", key in "[a-z_]{1,12}") {
            let key = std::format!("k_{key}"); // never "type" or "v"
            let mut out = String::new();
            Record::new(&mut out, "t").str(&key, &s).finish().unwrap();
            let v = parse(&out);
            proptest::prop_assert_eq!(v[&key].as_str().unwrap(), s.as_str());
        }
    }
}

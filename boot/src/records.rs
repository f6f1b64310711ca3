//! Parsing the kernel's serial stream: JSON-lines records mixed with human-readable text.
//!
//! A line is a record when it is a JSON object with a string `type` field; anything else
//! (the kernel's text lines, firmware noise, a line cut by a crash) is text. The schema is in
//! docs/records.md.

use serde_json::Value;

/// The record schema version this tool understands.
pub const SCHEMA_VERSION: u64 = 1;

/// One record from the kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The `type` field.
    pub kind: String,
    /// The whole object.
    pub value: Value,
}

impl Record {
    /// The schema version the record declares.
    pub fn version(&self) -> Option<u64> {
        self.value.get("v").and_then(Value::as_u64)
    }
    /// A field, or `Value::Null`.
    pub fn get(&self, key: &str) -> &Value {
        self.value.get(key).unwrap_or(&Value::Null)
    }
    /// A string field.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).as_str()
    }
    /// An unsigned integer field.
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).as_u64()
    }
    /// A field holding a hex string such as "0x1f".
    pub fn hex(&self, key: &str) -> Option<u64> {
        parse_hex(self.get(key))
    }
}

/// Parses a hex string value ("0x1f").
pub fn parse_hex(value: &Value) -> Option<u64> {
    value
        .as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|s| u64::from_str_radix(s, 16).ok())
}

/// The sampling profile's records (docs/records.md): a task's sampled RIPs (up to 64 per
/// record, in order), and the record closing a task's samples of one slot (how many were sent
/// and how many lost).
pub const PROFILE_SAMPLES: &str = "profile_samples";
pub const PROFILE_SUMMARY: &str = "profile_summary";

/// Whether `r` is a profile record.
pub fn is_profile_record(r: &Record) -> bool {
    r.kind == PROFILE_SAMPLES || r.kind == PROFILE_SUMMARY
}

/// A RIP as a profile record gives it: a JSON integer, or a hex string as other addresses are.
pub fn parse_rip(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| parse_hex(v))
}

/// One line of the serial stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    Record(Record),
    Text(String),
}

/// Classifies one line (without its line ending; a trailing `\r` is removed).
pub fn parse_line(raw: &str) -> Line {
    let line = raw.trim_end_matches(['\r', '\n']);
    let trimmed = line.trim_start();
    if trimmed.starts_with('{')
        && let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed)
        && let Some(kind) = value.get("type").and_then(Value::as_str)
    {
        return Line::Record(Record {
            kind: kind.to_string(),
            value,
        });
    }
    Line::Text(line.to_string())
}

/// Parses a whole saved log (e.g. captured from real hardware).
pub fn parse_log(text: &str) -> Vec<Line> {
    text.lines().map(parse_line).collect()
}

/// The records of a saved log, its other lines dropped.
pub fn records_of_log(text: &str) -> Vec<Record> {
    text.lines()
        .filter_map(|l| match parse_line(l) {
            Line::Record(r) => Some(r),
            Line::Text(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_text_are_told_apart() {
        let rec = parse_line("{\"type\":\"cpu\",\"v\":1,\"family\":6}\r");
        let Line::Record(r) = rec else {
            panic!("not a record")
        };
        assert_eq!(r.kind, "cpu");
        assert_eq!(r.version(), Some(1));
        assert_eq!(r.u64("family"), Some(6));
        assert_eq!(
            parse_line("INFO : Jumping to kernel entry point"),
            Line::Text("INFO : Jumping to kernel entry point".into())
        );
        // A record cut off by a crash is text, not an error.
        assert!(matches!(
            parse_line("{\"type\":\"cpu\",\"v\":1,\"fam"),
            Line::Text(_)
        ));
        // JSON without a type is text.
        assert!(matches!(parse_line("{\"a\":1}"), Line::Text(_)));
        assert!(matches!(parse_line("[1,2]"), Line::Text(_)));
    }

    #[test]
    fn hex_fields() {
        let Line::Record(r) =
            parse_line(r#"{"type":"fault","v":1,"rip":"0xffff800000001234","bad":"12"}"#)
        else {
            panic!()
        };
        assert_eq!(r.hex("rip"), Some(0xffff_8000_0000_1234));
        assert_eq!(r.hex("bad"), None);
        assert_eq!(r.hex("missing"), None);
    }
}

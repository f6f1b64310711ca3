//! Event files (`*_core.json`): each perfmon event converted to an event description, or left
//! out, with the field and the reason; what was dropped from an imported one.

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{PerfmonError, parse_num};
use crate::cpu::CpuModel;
use crate::event::{EventDesc, EventSelect, ExtraMsr, Source};
use crate::pmu::CoreType;
use crate::table::EventTable;

/// The `Header` object of an event file (informational).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Header {
    #[serde(rename = "Info", default)]
    pub info: Option<String>,
    #[serde(rename = "Version", default)]
    pub version: Option<String>,
    #[serde(rename = "DatePublished", default)]
    pub date_published: Option<String>,
}

/// An event left out of the import, or a part of one that was dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventIssue {
    pub file: String,
    /// The event's name, or `#index` if it has none.
    pub event: String,
    /// The perfmon field at fault, if one.
    pub field: Option<String>,
    pub reason: String,
}

impl fmt::Display for EventIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.event)?;
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// What one event file gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub header: Option<Header>,
    /// Converted events, in file order.
    pub events: Vec<EventDesc>,
    /// Events left out, with the reason.
    pub skipped: Vec<EventIssue>,
    /// Events imported with something dropped (a second encoding `alt` cannot hold).
    pub notes: Vec<EventIssue>,
}

impl Imported {
    /// The events as a table for `cpu` / `core_type`.
    pub fn to_table(
        &self,
        file: &str,
        cpu: Option<CpuModel>,
        core_type: Option<CoreType>,
    ) -> Result<EventTable, PerfmonError> {
        EventTable::new(self.events.clone())
            .map(|t| t.with_target(cpu, core_type))
            .map_err(|error| PerfmonError::Table {
                file: file.to_string(),
                error,
            })
    }
}

/// Parses an event file's text; `file` names it in errors and issues.
pub fn parse_events_json(file: &str, text: &str) -> Result<Imported, PerfmonError> {
    let top: Value = serde_json::from_str(text).map_err(|e| PerfmonError::Json {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        reason: e.to_string(),
    })?;
    let shape = |reason: &str| PerfmonError::Shape {
        file: file.to_string(),
        reason: reason.to_string(),
    };
    let (header, list) = match top {
        Value::Array(list) => (None, list),
        Value::Object(mut obj) => {
            let header = obj.get("Header").and_then(|h| Header::deserialize(h).ok());
            match obj.remove("Events") {
                Some(Value::Array(list)) => (header, list),
                Some(_) => return Err(shape("\"Events\" is not an array")),
                None => return Err(shape("an object without \"Events\"")),
            }
        }
        _ => {
            return Err(shape(
                "expected an array of events or {\"Header\": ..., \"Events\": [...]}",
            ));
        }
    };

    let mut out = Imported {
        header,
        ..Imported::default()
    };
    // Lower-cased names seen so far, for the case-insensitive duplicate check.
    let mut names = BTreeSet::new();
    for (i, v) in list.iter().enumerate() {
        let issue = |event: String, field: Option<&str>, reason: String| EventIssue {
            file: file.to_string(),
            event,
            field: field.map(str::to_string),
            reason,
        };
        let Value::Object(obj) = v else {
            out.skipped.push(issue(
                format!("#{i}"),
                None,
                "not a JSON object".to_string(),
            ));
            continue;
        };
        let name = match field_text(obj, "EventName") {
            Ok(Some(n)) if !n.is_empty() => n,
            Ok(_) => {
                out.skipped.push(issue(
                    format!("#{i}"),
                    Some("EventName"),
                    "missing or empty".to_string(),
                ));
                continue;
            }
            Err(reason) => {
                out.skipped
                    .push(issue(format!("#{i}"), Some("EventName"), reason));
                continue;
            }
        };
        match convert(&name, obj) {
            Ok((event, notes)) => {
                if !names.insert(name.to_ascii_lowercase()) {
                    out.skipped.push(issue(
                        name,
                        Some("EventName"),
                        "duplicate of an earlier event (names are case-insensitive)".to_string(),
                    ));
                    continue;
                }
                for (field, reason) in notes {
                    out.notes.push(issue(name.clone(), Some(field), reason));
                }
                out.events.push(event);
            }
            Err((field, reason)) => out.skipped.push(issue(name, Some(field), reason)),
        }
    }
    Ok(out)
}

/// A field's text: strings as they are, numbers and booleans spelled out, `null` as absent.
fn field_text(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(if *b { "1" } else { "0" }.to_string())),
        Some(_) => Err("expected a string".to_string()),
    }
}

/// A perfmon field and what is wrong with it (or what was dropped from it).
type FieldError = (&'static str, String);

/// A converted event and notes on what was dropped.
type Converted = (EventDesc, Vec<FieldError>);

/// A comma-separated list of numbers, each at most `max`; `None` when the field is absent or
/// empty.
fn nums(
    obj: &Map<String, Value>,
    field: &'static str,
    max: u64,
) -> Result<Option<Vec<u64>>, FieldError> {
    let Some(text) = field_text(obj, field).map_err(|r| (field, r))? else {
        return Ok(None);
    };
    if text.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for part in text.split(',') {
        let v = parse_num(part).map_err(|r| (field, r))?;
        if v > max {
            return Err((field, format!("{v:#x} is out of range (at most {max:#x})")));
        }
        out.push(v);
    }
    Ok(Some(out))
}

/// A single number field, at most `max`; 0 when absent.
fn num(obj: &Map<String, Value>, field: &'static str, max: u64) -> Result<u64, FieldError> {
    match nums(obj, field, max)? {
        None => Ok(0),
        Some(v) if v.len() == 1 => Ok(v[0]),
        Some(_) => Err((field, "expected one value, found a list".to_string())),
    }
}

/// A `"0"`/`"1"` flag; false when absent.
fn flag(obj: &Map<String, Value>, field: &'static str) -> Result<bool, FieldError> {
    match field_text(obj, field).map_err(|r| (field, r))?.as_deref() {
        None | Some("") | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err((field, format!("\"{other}\" is neither 0 nor 1"))),
    }
}

/// `Counter`: GP counter mask and fixed counter.
fn counters(obj: &Map<String, Value>) -> Result<(Option<u32>, Option<u8>), FieldError> {
    const F: &str = "Counter";
    let Some(text) = field_text(obj, F).map_err(|r| (F, r))? else {
        // No restriction given: any GP counter.
        return Ok((Some(u32::MAX), None));
    };
    let index = |t: &str| -> Result<u32, FieldError> {
        let v = parse_num(t).map_err(|r| (F, r))?;
        if v >= 32 {
            return Err((F, format!("counter {v} is beyond 31")));
        }
        Ok(v as u32)
    };
    let (mut gp, mut fixed) = (0u32, None);
    for tok in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let lower = tok.to_ascii_lowercase();
        if let Some(n) = lower
            .strip_prefix("fixed counter")
            .or_else(|| lower.strip_prefix("fixedcounter"))
        {
            let n = index(n.trim())?;
            if fixed.is_some_and(|f| f != n as u8) {
                return Err((F, "lists two fixed counters".to_string()));
            }
            fixed = Some(n as u8);
        } else if let Some((lo, hi)) = tok.split_once('-') {
            let (lo, hi) = (index(lo)?, index(hi)?);
            if lo > hi {
                return Err((F, format!("empty range \"{tok}\"")));
            }
            for i in lo..=hi {
                gp |= 1 << i;
            }
        } else {
            gp |= 1 << index(tok)?;
        }
    }
    if gp == 0 && fixed.is_none() {
        return Err((F, format!("\"{text}\" names no counter")));
    }
    Ok(((gp != 0).then_some(gp), fixed))
}

/// Converts one event; the notes say what was dropped.
fn convert(name: &str, obj: &Map<String, Value>) -> Result<Converted, FieldError> {
    let mut notes = Vec::new();
    let codes = nums(obj, "EventCode", 0xff)?.ok_or(("EventCode", "missing".to_string()))?;
    let umasks = nums(obj, "UMask", 0xff)?.unwrap_or_else(|| vec![0]);
    let umask2 = num(obj, "UMaskExt", 0xff)? as u8;
    let cmask = num(obj, "CounterMask", 0xff)? as u8;
    // Bits baremark's event select cannot express: refuse rather than count something else.
    if num(obj, "ExtSel", u64::MAX)? != 0 {
        return Err(("ExtSel", "extended event select is not supported".into()));
    }
    if flag(obj, "Equal")? {
        return Err((
            "Equal",
            "the cmask equality (EQ) bit is not supported".into(),
        ));
    }
    let msrs: Vec<u64> = nums(obj, "MSRIndex", u64::from(u32::MAX))?.unwrap_or_default();
    // "0" / "0x00" mean no MSR.
    let msrs: Vec<u64> = if msrs.iter().all(|&m| m == 0) {
        Vec::new()
    } else {
        msrs
    };
    let values = nums(obj, "MSRValue", u64::MAX)?.unwrap_or_else(|| vec![0]);
    for (field, len) in [
        ("EventCode", codes.len()),
        ("UMask", umasks.len()),
        ("MSRIndex", msrs.len()),
        ("MSRValue", values.len()),
    ] {
        if len > 2 {
            return Err((field, format!("lists {len} values; at most two encodings")));
        }
    }
    if msrs.len() == 1 && values.len() == 2 {
        return Err(("MSRValue", "two values for one MSR".into()));
    }
    let value_for = |i: usize| values.get(i).or(values.first()).copied().unwrap_or(0);
    let extra_for = |i: usize| {
        msrs.get(i).filter(|&&m| m != 0).map(|&m| ExtraMsr {
            msr: m as u32,
            value: value_for(i),
        })
    };

    let (gp, counter_fixed) = counters(obj)?;
    let mut select = EventSelect::new(codes[0] as u16, umasks[0] as u8);
    select.umask2 = umask2;
    select.cmask = cmask;
    select.inv = flag(obj, "Invert")?;
    select.edge = flag(obj, "EdgeDetect")?;
    select.any_thread = flag(obj, "AnyThread")?;

    let mut e = EventDesc::gp(name, select, Source::Perfmon);
    e.taken_alone = flag(obj, "TakenAlone")?;
    e.deprecated = flag(obj, "Deprecated")?;
    e.description = [("BriefDescription"), ("PublicDescription")]
        .iter()
        .find_map(|f| field_text(obj, f).ok().flatten().filter(|d| !d.is_empty()));

    if codes == [0] {
        // The fixed-counter pseudo encoding: event 0x00, umask N+1.
        let Some(index) = umasks[0].checked_sub(1) else {
            return Err((
                "UMask",
                "event code 0x00 with umask 0 is neither a GP event nor a fixed counter".into(),
            ));
        };
        if index >= 32 {
            return Err(("UMask", format!("fixed counter {index} is beyond 31")));
        }
        if let Some(c) = counter_fixed.filter(|&c| u64::from(c) != index) {
            return Err((
                "Counter",
                format!(
                    "\"Fixed counter {c}\" disagrees with the pseudo encoding umask {:#04x}",
                    umasks[0]
                ),
            ));
        }
        if umasks.len() > 1 || !msrs.is_empty() {
            return Err((
                "EventCode",
                "a fixed-counter event with a second encoding or an MSR".into(),
            ));
        }
        e.fixed = Some(index as u8);
        e.gp_counters = None;
        return Ok((e, notes));
    }

    e.fixed = counter_fixed;
    e.gp_counters = gp;
    e.extra = extra_for(0);
    let pairs = codes.len().max(umasks.len()).max(msrs.len());
    if pairs == 2 {
        let code2 = codes.get(1).copied().unwrap_or(codes[0]);
        let umask2nd = umasks.get(1).copied().unwrap_or(umasks[0]);
        let extra2 = extra_for(1);
        // `alt` is another event code with the same umask and its own MSR (core offcore
        // events); anything else cannot be said and is reported.
        match extra2 {
            Some(x) if code2 != codes[0] && umask2nd == umasks[0] && e.extra.is_some() => {
                e.alt = Some((code2 as u16, x));
            }
            _ => {
                let msr = match extra2 {
                    Some(x) => format!(", MSR {:#x}", x.msr),
                    None => ", no MSR".to_string(),
                };
                let field = match (codes.len(), umasks.len()) {
                    (_, 2) => "UMask",
                    (2, _) => "EventCode",
                    _ => "MSRIndex",
                };
                notes.push((
                    field,
                    format!(
                        "second encoding (event {code2:#04x}, umask {umask2nd:#04x}{msr}) dropped: \
                         only a second event code with its own MSR can be kept; using event \
                         {:#04x}, umask {:#04x}",
                        codes[0], umasks[0]
                    ),
                ));
            }
        }
    }
    if let Err((field, reason)) = crate::table::check_event(&e) {
        return Err((field, reason.to_string()));
    }
    Ok((e, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(json: &str) -> Result<EventDesc, EventIssue> {
        let text = format!("[{json}]");
        let imp = parse_events_json("t.json", &text).unwrap();
        match (imp.events.first(), imp.skipped.first()) {
            (Some(e), None) => Ok(e.clone()),
            (None, Some(s)) => Err(s.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn counter_field() {
        let e = one(r#"{"EventName":"A","EventCode":"0x3c","Counter":"0-3"}"#).unwrap();
        assert_eq!(e.gp_counters, Some(0b1111));
        let e = one(r#"{"EventName":"A","EventCode":"0x3c","Counter":"0,2,3,"}"#).unwrap();
        assert_eq!(e.gp_counters, Some(0b1101));
        let e = one(r#"{"EventName":"A","EventCode":"0x3c"}"#).unwrap();
        assert_eq!(e.gp_counters, Some(u32::MAX));
        let e =
            one(r#"{"EventName":"A","EventCode":"0x3c","Counter":"0,1,Fixed counter 1"}"#).unwrap();
        assert_eq!((e.gp_counters, e.fixed), (Some(0b11), Some(1)));
        for bad in ["32", "3-1", "x", "", "Fixed counter 0,Fixed counter 1"] {
            let s = one(&format!(
                r#"{{"EventName":"A","EventCode":"0x3c","Counter":"{bad}"}}"#
            ))
            .unwrap_err();
            assert_eq!(s.field.as_deref(), Some("Counter"), "{bad}: {s}");
        }
    }

    #[test]
    fn numbers_as_json_numbers_and_wrong_types() {
        let e = one(r#"{"EventName":"A","EventCode":60,"UMask":1,"CounterMask":2}"#).unwrap();
        assert_eq!((e.select.code, e.select.umask, e.select.cmask), (60, 1, 2));
        let s = one(r#"{"EventName":"A","EventCode":["0x3c"]}"#).unwrap_err();
        assert_eq!(s.field.as_deref(), Some("EventCode"));
        let s = one(r#"{"EventName":"A"}"#).unwrap_err();
        assert_eq!(
            (s.field.as_deref(), s.reason.as_str()),
            (Some("EventCode"), "missing")
        );
        let s = one(r#"{"EventCode":"0x3c"}"#).unwrap_err();
        assert_eq!(
            (s.event.as_str(), s.field.as_deref()),
            ("#0", Some("EventName"))
        );
        let s = one(r#"{"EventName":"A","EventCode":"0x3c","Invert":"2"}"#).unwrap_err();
        assert_eq!(s.field.as_deref(), Some("Invert"));
        let s = one(r#"{"EventName":"A","EventCode":"0x3c","ExtSel":"1"}"#).unwrap_err();
        assert_eq!(s.field.as_deref(), Some("ExtSel"));
        let s = one(r#""just a string""#).unwrap_err();
        assert_eq!(s.reason, "not a JSON object");
    }

    #[test]
    fn whole_file_errors() {
        assert!(matches!(
            parse_events_json("f.json", "{\"Events\": [1,"),
            Err(PerfmonError::Json { line: 1, .. })
        ));
        assert!(matches!(
            parse_events_json("f.json", "{\"Header\": {}}"),
            Err(PerfmonError::Shape { .. })
        ));
        assert!(matches!(
            parse_events_json("f.json", "{\"Events\": {}}"),
            Err(PerfmonError::Shape { .. })
        ));
        assert!(matches!(
            parse_events_json("f.json", "42"),
            Err(PerfmonError::Shape { .. })
        ));
        let e = parse_events_json("f.json", "{\"Events\": []}").unwrap();
        assert!(e.events.is_empty() && e.header.is_none());
        let msg = parse_events_json("dir/f.json", "[")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("dir/f.json:1:"), "{msg}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_event_fields_never_panic(
            fields in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "EventName", "EventCode", "UMask", "UMaskExt", "Counter", "MSRIndex",
                        "MSRValue", "CounterMask", "Invert", "EdgeDetect", "AnyThread",
                        "TakenAlone", "Deprecated", "Equal", "ExtSel", "BriefDescription",
                    ]),
                    "(0x[0-9a-fA-F]{0,20}|[0-9]{0,22}|Fixed counter [0-9]{1,3}|[0-9x, -]{0,12})",
                ),
                0..12,
            )
        ) {
            let obj: Map<String, Value> = fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::String(v)))
                .collect();
            let text = Value::Array(vec![Value::Object(obj)]).to_string();
            let imp = parse_events_json("f.json", &text).unwrap();
            proptest::prop_assert_eq!(imp.events.len() + imp.skipped.len(), 1);
            // Whatever imports fits the table.
            proptest::prop_assert!(imp.to_table("f.json", None, None).is_ok());
        }
    }
}

//! Line scanning: the file cut into lines with their noise removed (NUL bytes, stray carriage
//! returns), each split into records, broken records and text; records split over lines joined.

use serde_json::Value;

use super::Repairs;
use super::schema::one_off;
use super::summary::plural;
use crate::records::Record;

/// The kernel writes the `type` field first: `{"type":` is where a record begins.
const START: &[u8] = b"{\"type\":";
/// At most this many lines are joined back into one record.
const MAX_JOIN: usize = 8;
/// A record line is at most 4096 bytes (docs/records.md); joins stop well past that.
const MAX_JOINED_BYTES: usize = 3 * 4096;

/// A line of the file with its noise removed.
pub(super) struct Line {
    /// 1-based.
    number: usize,
    /// Offset of its first byte in the file.
    start: usize,
    /// The bytes without NULs, stray CRs and the line ending.
    text: Vec<u8>,
    /// The offset within the raw line of each byte of `text` (`None`: the same).
    map: Option<Vec<usize>>,
    /// Ends with a line feed (the last line of a cut capture does not).
    terminated: bool,
}

impl Line {
    /// The file offset of byte `i` of `text`.
    fn offset(&self, i: usize) -> usize {
        self.start
            + match &self.map {
                None => i,
                Some(map) => map
                    .get(i)
                    .copied()
                    .unwrap_or_else(|| map.last().map_or(0, |m| m + 1)),
            }
    }
}

pub(super) fn split_lines(bytes: &[u8], repairs: &mut Repairs) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let (raw, terminated, next) = match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(n) => (&bytes[start..start + n], true, start + n + 1),
            None => (&bytes[start..], false, bytes.len()),
        };
        // One CR before the LF is the kernel's own line ending; any other CR is noise.
        let body = raw.strip_suffix(b"\r").unwrap_or(raw);
        let (text, map) = if body.iter().any(|&b| b == 0 || b == b'\r') {
            let mut text = Vec::with_capacity(body.len());
            let mut map = Vec::with_capacity(body.len());
            for (i, &b) in body.iter().enumerate() {
                match b {
                    0 => repairs.nul_bytes += 1,
                    b'\r' => repairs.stray_cr += 1,
                    _ => {
                        text.push(b);
                        map.push(i);
                    }
                }
            }
            (text, Some(map))
        } else {
            (body.to_vec(), None)
        };
        lines.push(Line {
            number: lines.len() + 1,
            start,
            text,
            map,
            terminated,
        });
        start = next;
    }
    lines
}

/// Why a record could not be read.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Broken {
    /// The text ended before the record closed.
    Eof,
    /// Another record begins inside it.
    CutBy,
    /// Not valid JSON: the parser's message and the column.
    Syntax(String, usize),
    /// Valid JSON, or nearly, but its `type` cannot be read.
    Damaged(String),
}

#[derive(Debug)]
enum Piece {
    Record(usize, usize, Record),
    Broken(usize, usize, Broken),
    Text(usize, usize),
}

impl Piece {
    fn span(&self) -> (usize, usize) {
        match self {
            Piece::Record(s, e, _) | Piece::Broken(s, e, _) | Piece::Text(s, e) => (*s, *e),
        }
    }
}

pub(super) fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn is_blank(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_whitespace)
}

/// A JSON object with a string `type`.
fn as_record(value: Value) -> Option<Record> {
    let kind = value.get("type")?.as_str()?.to_string();
    value.is_object().then_some(Record { kind, value })
}

/// A JSON object without a string `type` that is a record all the same: it has the schema
/// version, or a key one character off `type`.
fn typeless_record(value: &Value) -> bool {
    value.as_object().is_some_and(|o| {
        o.contains_key("v")
            || o.contains_key("type")
            || o.keys().any(|k| one_off(k, ["type"]).is_some())
    })
}

/// Splits a line into records, broken records and text. A record begins at `{"type":`, or at
/// the start of a line that opens a JSON object (`{"`).
fn split(s: &[u8]) -> Vec<Piece> {
    let lead = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let tail = s.len()
        - s.iter()
            .rev()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(0);
    // The usual case: the whole line is one record.
    if s.get(lead) == Some(&b'{')
        && let Ok(value) = serde_json::from_slice::<Value>(&s[lead..tail])
    {
        let typeless = typeless_record(&value);
        return vec![match as_record(value) {
            Some(r) => Piece::Record(lead, tail, r),
            None if typeless => Piece::Broken(
                lead,
                tail,
                Broken::Damaged("its `type` field is damaged".into()),
            ),
            None => Piece::Text(lead, tail),
        }];
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < s.len() {
        // A line that opens an object begins with a record (its `type` may be damaged, or on
        // the next line).
        let next = if pos == 0 && s.get(lead) == Some(&b'{') {
            Some(lead)
        } else {
            find(s, START, pos)
        };
        let Some(at) = next else {
            if !is_blank(&s[pos..]) {
                out.push(Piece::Text(pos, s.len()));
            }
            break;
        };
        if !is_blank(&s[pos..at]) {
            out.push(Piece::Text(pos, at));
        }
        let mut stream = serde_json::Deserializer::from_slice(&s[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                let end = (at + stream.byte_offset()).max(at + 1);
                let typeless = typeless_record(&value);
                out.push(match as_record(value) {
                    Some(r) => Piece::Record(at, end, r),
                    None if typeless => Piece::Broken(
                        at,
                        end,
                        Broken::Damaged("its `type` field is damaged".into()),
                    ),
                    None => Piece::Text(at, end),
                });
                pos = end;
            }
            Some(Err(e)) => {
                let error_at = at + e.column().saturating_sub(1);
                let later = find(s, START, at + 1);
                let (end, why) = match later {
                    // Intact up to where the next record begins: cut short by it.
                    Some(j) if e.is_eof() || error_at >= j => (j, Broken::CutBy),
                    Some(j) => (j, syntax(&e, error_at - at)),
                    None if e.is_eof() => (s.len(), Broken::Eof),
                    None => (s.len(), syntax(&e, error_at - at)),
                };
                out.push(Piece::Broken(at, end, why));
                pos = end;
            }
            None => break,
        }
    }
    out
}

fn syntax(e: &serde_json::Error, column: usize) -> Broken {
    let msg = e.to_string();
    let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]);
    Broken::Syntax(msg.to_string(), column + 1)
}

/// A name read from a broken record's text, `"key":"value"`, if it is one the kernel could
/// have written (a damaged one is no guide).
pub(super) fn field_in(raw: &[u8], key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let at = find(raw, pat.as_bytes(), 0)? + pat.len();
    let len = raw[at..].iter().take(128).position(|&b| b == b'"')?;
    let v = std::str::from_utf8(&raw[at..at + len]).ok()?;
    let name = |c: char| c.is_ascii_alphanumeric() || "_-.+".contains(c);
    (!v.is_empty() && v.chars().all(name)).then(|| v.to_string())
}

/// Why a text line is not the kernel's, if it is not: the kernel writes UTF-8 without control
/// characters (a task's echoed output, `task   NAME: ...`, may hold any).
pub(super) fn garbage(raw: &[u8]) -> Option<String> {
    if raw.starts_with(b"task ") {
        return None;
    }
    if let Err(e) = std::str::from_utf8(raw) {
        return Some(format!(
            "{} the kernel never writes (not UTF-8 at column {})",
            plural(raw.len(), "byte"),
            e.valid_up_to() + 1
        ));
    }
    raw.iter()
        .position(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
        .map(|i| {
            format!(
                "{} the kernel never writes (control character 0x{:02x} at column {})",
                plural(raw.len(), "byte"),
                raw[i],
                i + 1
            )
        })
}

/// A logical line: one line of the file, or several joined back into one record.
struct Logical {
    text: Vec<u8>,
    /// (index into the lines, offset in `text` where it begins)
    members: Vec<(usize, usize)>,
}

impl Logical {
    fn member(&self, pos: usize) -> (usize, usize) {
        let i = self
            .members
            .iter()
            .rposition(|&(_, off)| off <= pos)
            .unwrap_or(0);
        self.members[i]
    }
}

/// An item of the log in order: a record, a broken record, or text.
pub(super) struct Item {
    /// First and last line.
    pub(super) lines: (usize, usize),
    /// File offset of its first byte.
    pub(super) byte: usize,
    pub(super) body: Body,
}

pub(super) enum Body {
    Record(Record, Vec<u8>),
    /// Why, the bytes, whether the log ends inside it.
    Broken(Broken, Vec<u8>, bool),
    Text(Vec<u8>),
}

/// Where the pieces of a logical line are, in the file.
fn items_of(logical: &Logical, lines: &[Line], pieces: Vec<Piece>, out: &mut Vec<Item>) {
    for piece in pieces {
        let (start, end) = piece.span();
        let (first, off) = logical.member(start);
        let (last, _) = logical.member(end.saturating_sub(1).max(start));
        let byte = lines[first].offset(start - off);
        let raw = logical.text[start..end].to_vec();
        let body = match piece {
            Piece::Record(_, _, r) => Body::Record(r, raw),
            Piece::Broken(_, _, why) => {
                // The end of an unterminated last line: the capture stopped there.
                let at_eof =
                    end == logical.text.len() && last + 1 == lines.len() && !lines[last].terminated;
                Body::Broken(why, raw, at_eof)
            }
            Piece::Text(..) => Body::Text(raw),
        };
        out.push(Item {
            lines: (lines[first].number, lines[last].number),
            byte,
            body,
        });
    }
}

/// The items of the log; records split over lines are joined again.
pub(super) fn items(lines: &[Line], repairs: &mut Repairs) -> Vec<Item> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut logical = Logical {
            text: lines[i].text.clone(),
            members: vec![(i, 0)],
        };
        let mut pieces = split(&logical.text);
        // A record broken at the end of its line whose rest is on the next lines (a line break
        // inserted into it): join them while that makes it whole. A line that begins with a
        // record of its own is never taken.
        if let Some(Piece::Broken(at, _, Broken::Eof)) = pieces.last() {
            let at = *at;
            let mut text = logical.text.clone();
            let mut members = logical.members.clone();
            let mut k = i;
            while k + 1 < lines.len() && members.len() < MAX_JOIN && text.len() < MAX_JOINED_BYTES {
                // The rest of a split record holds no record start of its own. A line of noise
                // alone (NULs, carriage returns: blank once they are removed) between its parts
                // is passed over: two line breaks with noise between them split it once.
                let next = &lines[k + 1];
                if find(&next.text, START, 0).is_some() {
                    break;
                }
                if is_blank(&next.text) {
                    members.push((k + 1, text.len()));
                    k += 1;
                    continue;
                }
                members.push((k + 1, text.len()));
                text.extend_from_slice(&next.text);
                k += 1;
                let joined = split(&text);
                match joined.iter().find(|p| p.span().0 == at) {
                    Some(Piece::Record(..)) => {
                        repairs.rejoined.push((lines[i].number, lines[k].number));
                        logical = Logical { text, members };
                        pieces = joined;
                        i = k;
                        break;
                    }
                    Some(Piece::Broken(_, _, Broken::Eof)) => continue,
                    _ => break,
                }
            }
        }
        let records = pieces
            .iter()
            .filter(|p| matches!(p, Piece::Record(..)))
            .count();
        if records > 1 {
            repairs.glued.push(lines[logical.members[0].0].number);
        }
        items_of(&logical, lines, pieces, &mut out);
        i += 1;
    }
    out
}

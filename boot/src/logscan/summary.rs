//! The summary for people: the runs, the damage by kind and place, what was repaired; and the
//! wording the findings share.

use std::fmt::Write as _;

use super::{Damage, Kind, Run, Scan};

/// "a `result` record", "an `end` record".
pub(super) fn a_record(kind: &str) -> String {
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} `{kind}` record")
}

/// Lines as "line 12" or "lines 12, 40-42, 90".
fn line_list(mut lines: Vec<usize>) -> String {
    lines.sort_unstable();
    lines.dedup();
    let mut out = String::from(if lines.len() == 1 { "line " } else { "lines " });
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        if i > 0 {
            out.push_str(", ");
        }
        if j > i {
            let _ = write!(out, "{}-{}", lines[i], lines[j]);
        } else {
            let _ = write!(out, "{}", lines[i]);
        }
        i = j + 1;
    }
    out
}

pub(super) fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A benchmark as the summary names it: `payload/bench`, or one name when they are the same.
pub(super) fn title(payload: &str, bench: &str) -> String {
    if payload == bench {
        payload.to_string()
    } else {
        format!("{payload}/{bench}")
    }
}

/// At most this many places of each kind of damage are shown one a line.
pub const SHOWN_PER_KIND: usize = 5;

/// One damage item as a line.
fn damage_line(d: &Damage) -> String {
    let lines = if d.lines.0 == d.lines.1 {
        format!("line {}", d.lines.0)
    } else {
        format!("lines {}-{}", d.lines.0, d.lines.1)
    };
    let at = d.byte.map(|b| format!(" (byte {b})")).unwrap_or_default();
    let record = d.record.as_deref().map_or("a record".to_string(), a_record);
    let what = match &d.bench {
        // Found by the protocol checks: the detail names what.
        _ if d.byte.is_none() => String::new(),
        _ if d.kind == Kind::Garbage => String::new(),
        Some((p, b)) => format!("{record} of {}: ", title(p, b)),
        None => format!("{record}: "),
    };
    format!(
        "DAMAGE   [{}] {lines}{at}: {what}{}",
        d.kind.name(),
        d.detail
    )
}

/// The log section of `report`: the runs (when more than one), what was lost or is doubtful
/// and where, what was repaired. Empty for a clean log of one run.
pub fn render(scan: &Scan, name: &str) -> String {
    let mut out = String::new();
    let shown: Vec<&Run> = scan.runs.iter().collect();
    if shown.len() > 1 {
        let _ = writeln!(
            out,
            "log      {name}: {} lines, {} runs",
            scan.lines,
            shown.len()
        );
        for run in &shown {
            let ending = match run.end_status() {
                Some("ok") => "ended ok".to_string(),
                Some(s) => format!("ended {s}"),
                None => "no end record".to_string(),
            };
            let copy = run
                .copy_of
                .map(|c| format!("; an exact copy of run {c}, not shown again"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "         run {} (lines {}-{}): {}{ending}{copy}",
                run.number,
                run.lines.0,
                run.lines.1,
                if run.booted { "" } else { "no boot record, " }
            );
        }
    }
    if !scan.damage.is_empty() {
        let mut counts: Vec<String> = Vec::new();
        for kind in Kind::ALL {
            let n = scan.damage.iter().filter(|d| d.kind == kind).count();
            if n > 0 {
                counts.push(format!("{} {n}", kind.name()));
            }
        }
        let _ = writeln!(
            out,
            "log      {name} {} ({} lines, {} bytes): {}",
            if scan.damaged() {
                "is damaged"
            } else {
                "ends inside a record"
            },
            scan.lines,
            scan.bytes,
            counts.join(", ")
        );
        for kind in Kind::ALL {
            let of_kind: Vec<&Damage> = scan.damage.iter().filter(|d| d.kind == kind).collect();
            for d in of_kind.iter().take(SHOWN_PER_KIND) {
                let _ = writeln!(out, "{}", damage_line(d));
            }
            if of_kind.len() > SHOWN_PER_KIND {
                let rest: Vec<usize> = of_kind[SHOWN_PER_KIND..]
                    .iter()
                    .map(|d| d.lines.0)
                    .collect();
                let _ = writeln!(
                    out,
                    "DAMAGE   [{}] {} more at {}",
                    kind.name(),
                    rest.len(),
                    line_list(rest)
                );
            }
        }
        let incomplete: Vec<String> = scan
            .runs
            .iter()
            .flat_map(|r| &r.incomplete)
            .map(|(p, b, _)| {
                if p == b {
                    p.clone()
                } else {
                    format!("{p}/{b}")
                }
            })
            .collect();
        if !incomplete.is_empty() {
            let _ = writeln!(
                out,
                "         incomplete benchmarks (marked in the table): {}",
                incomplete.join(", ")
            );
        }
    }
    let r = &scan.repairs;
    if r.any() {
        let mut parts = Vec::new();
        if r.nul_bytes > 0 {
            parts.push(format!("removed {}", plural(r.nul_bytes, "NUL byte")));
        }
        if r.stray_cr > 0 {
            parts.push(format!(
                "removed {}",
                plural(r.stray_cr, "stray carriage return")
            ));
        }
        if !r.rejoined.is_empty() {
            let spans: Vec<String> = r.rejoined.iter().map(|(a, b)| format!("{a}-{b}")).collect();
            parts.push(format!(
                "joined {} split over lines {}",
                plural(r.rejoined.len(), "record"),
                spans.join(", ")
            ));
        }
        if !r.glued.is_empty() {
            parts.push(format!(
                "separated the records sharing {} (a line break lost)",
                line_list(r.glued.clone())
            ));
        }
        if !r.duplicates.is_empty() {
            let copies: Vec<usize> = r.duplicates.iter().map(|(c, _)| *c).collect();
            let example = r.duplicates[0];
            parts.push(format!(
                "dropped {} at {} (line {} repeats line {})",
                plural(r.duplicates.len(), "repeated record"),
                line_list(copies),
                example.0,
                example.1
            ));
        }
        let _ = writeln!(
            out,
            "note     {name}: cleaned up, nothing lost: {}",
            parts.join("; ")
        );
    }
    out
}

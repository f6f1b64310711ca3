//! nanoBench's performance-counter config files, so uops.info-style configs work unchanged.
//!
//! One event a line, as nanoBench's README defines it:
//!
//! ```text
//! EvtSel.UMASK(.CMSK=...)(.AnyT)(.EDG)(.INV)(.TakenAlone)(.CTR=...)(.MSR_3F6H=...)(.MSR_PF=...)(.MSR_RSP0=...)(.MSR_RSP1=...) Name
//! ```
//!
//! Read as nanoBench's `parse_counter_configs` (common/nanoBench.c) reads it:
//!
//! - Empty lines and lines starting with `#` are skipped.
//! - The config is everything up to the first space or tab; the name is the rest. A line without
//!   a name is named by its config, as nanoBench does (`cfg_Zen_all.txt` has such lines).
//! - `EvtSel` and `UMASK` are hex (`strtoul(.., 16)`); `CMSK=`, `CTR=` and the `MSR_...=` values
//!   are C literals (`strtoul(.., 0)`): decimal, `0x` hex, or octal after a leading `0`. So
//!   `CMSK=10` is ten, not sixteen.
//! - Options are case-sensitive and may come in any order.
//!
//! The register value is what nanoBench's `configure_perf_ctrs_programmable` writes: EN always,
//! INT never, USR/OS from its `-usr`/`-os` options ([`NANOBENCH_USER`] for `nanoBench.sh`,
//! [`NANOBENCH_KERNEL`] for `kernel-nanoBench.sh`). Encoding goes through
//! [`encode::gp_event_select`], so a parsed line programs exactly what any other baremark event
//! with the same fields programs.
//!
//! Stricter than nanoBench, which prints a message and carries on (or silently truncates): a bad
//! number, an unknown or repeated option, a field too wide for its register bits, `CTR=` beyond
//! 31 and two extra MSRs on one line are errors naming the line and column. Also different:
//! surrounding whitespace (and a CR from CRLF files) is trimmed from lines and names, and indented
//! comments and whitespace-only lines are skipped rather than reported. See
//! docs/nanobench-configs.md.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::cpu::Vendor;
use crate::encode::{self, EncodeError};
use crate::event::{EventDesc, EventSelect, EventSpec, ExtraMsr, Modifiers, Source};

/// What `nanoBench.sh` counts by default (`-usr 1 -os 0`): user mode only.
pub const NANOBENCH_USER: Modifiers = Modifiers::USER;

/// What `kernel-nanoBench.sh` counts (it passes `usr = os = true`): user and kernel mode.
pub const NANOBENCH_KERNEL: Modifiers = Modifiers {
    usr: true,
    os: true,
    int: false,
    host_only: false,
    guest_only: false,
};

/// MSRs behind the `MSR_...=` options (nanoBench.h; Intel SDM vol. 4).
const MSR_OPTIONS: [(&str, u32); 4] = [
    ("MSR_3F6H", 0x3f6), // MSR_PEBS_LD_LAT_THRESHOLD
    ("MSR_PF", 0x3f7),   // MSR_PEBS_FRONTEND
    ("MSR_RSP0", 0x1a6), // MSR_OFFCORE_RSP0
    ("MSR_RSP1", 0x1a7), // MSR_OFFCORE_RSP1
];

const OPTIONS_ACCEPTED: &str =
    "CMSK=, AnyT, EDG, INV, TakenAlone, CTR=, MSR_3F6H=, MSR_PF=, MSR_RSP0=, MSR_RSP1=";

/// One event line of a nanoBench config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NanoBenchEvent {
    /// 1-based line number in the file.
    pub line: usize,
    /// The config as written (`D1.01.CMSK=1`).
    pub config: String,
    /// The display name (the config itself when the line has none).
    pub name: String,
    /// Event code (up to 12 bits, for AMD), umask, CMSK, AnyT, EDG, INV.
    pub select: EventSelect,
    /// `CTR=n`: the event must use GP counter n.
    pub counter: Option<u8>,
    /// `TakenAlone`: no other programmable event may count with it.
    pub taken_alone: bool,
    /// The `MSR_...=` setting; `None` also when its value is 0, which nanoBench does not write.
    pub extra: Option<ExtraMsr>,
}

impl NanoBenchEvent {
    /// The IA32_PERFEVTSELx (Intel) or PERF_CTLx (AMD) value nanoBench programs for this line,
    /// enable bit set, with the privilege filter of `modifiers` (see [`NANOBENCH_USER`]).
    pub fn perfevtsel(&self, vendor: Vendor, modifiers: &Modifiers) -> Result<u64, EncodeError> {
        encode::gp_event_select(vendor, &self.select, modifiers, true)
    }

    /// The event as the rest of baremark describes events, named by the line's name.
    pub fn event_desc(&self) -> EventDesc {
        let mut d = EventDesc::gp(&self.name, self.select, Source::Raw);
        d.gp_counters = Some(self.counter.map_or(u32::MAX, |c| 1 << c));
        d.taken_alone = self.taken_alone;
        d.extra = self.extra;
        d.description = Some(format!(
            "nanoBench config `{}` (line {})",
            self.config, self.line
        ));
        d
    }

    /// The event with the per-use `modifiers`, as the counter assignment takes it.
    pub fn event_spec(&self, modifiers: Modifiers) -> EventSpec {
        EventSpec {
            event: self.event_desc(),
            modifiers,
        }
    }

    /// The event in baremark's event syntax (`parse`):
    /// `cpu/event=0xd1,umask=0x1,cmask=0x1,inv,name='NAME'/:u`. `TakenAlone`, `CTR=` and the
    /// `MSR_...=` options have no term there, so a line using them is an error rather than an
    /// event that counts something else; use [`NanoBenchEvent::event_spec`] for those.
    pub fn spec_string(&self, modifiers: &Modifiers) -> Result<String, ConfigError> {
        let at_option = |option: &str, what: &str| {
            let column = self
                .config
                .find(option)
                .map_or(1, |i| self.config[..i].chars().count() + 1);
            ConfigError {
                line: self.line,
                column,
                message: format!(
                    "{what} cannot be written in baremark's event syntax; take the event as an EventSpec (nanobench::NanoBenchEvent::event_spec) instead"
                ),
            }
        };
        if self.taken_alone {
            return Err(at_option("TakenAlone", "`TakenAlone`"));
        }
        if self.counter.is_some() {
            return Err(at_option("CTR=", "`CTR=` (pinning to one counter)"));
        }
        if let Some(x) = self.extra {
            let option = MSR_OPTIONS
                .iter()
                .find(|&&(_, msr)| msr == x.msr)
                .map_or("MSR_", |&(name, _)| name);
            return Err(at_option(option, &format!("`{option}=` (an extra MSR)")));
        }
        let whole_line = |message: String| ConfigError {
            line: self.line,
            column: 1,
            message,
        };
        if modifiers.int || modifiers.host_only || modifiers.guest_only {
            return Err(whole_line(String::from(
                "nanoBench events take only the user/kernel filter (no interrupt, host or guest modifier)",
            )));
        }
        let mods = match (modifiers.usr, modifiers.os) {
            (true, true) => ":uk",
            (true, false) => ":u",
            (false, true) => ":k",
            (false, false) => {
                return Err(whole_line(String::from(
                    "neither user nor kernel mode is counted: the event would count nothing",
                )));
            }
        };
        let quote = if !self.name.contains('\'') {
            '\''
        } else if !self.name.contains('"') {
            '"'
        } else {
            return Err(whole_line(format!(
                "the name `{}` has both quote characters and cannot be quoted in baremark's event syntax",
                self.name
            )));
        };
        let s = &self.select;
        let mut out = format!("cpu/event={:#x},umask={:#x}", s.code, s.umask);
        if s.cmask != 0 {
            out.push_str(&format!(",cmask={:#x}", s.cmask));
        }
        for (on, flag) in [(s.inv, ",inv"), (s.edge, ",edge"), (s.any_thread, ",any")] {
            if on {
                out.push_str(flag);
            }
        }
        out.push_str(&format!(",name={quote}{}{quote}/{mods}", self.name));
        Ok(out)
    }
}

/// A whole config in baremark's event syntax, events separated by `, ` (for `--events`).
/// The first line that cannot be written there is the error.
pub fn config_to_spec_string(
    events: &[NanoBenchEvent],
    modifiers: &Modifiers,
) -> Result<String, ConfigError> {
    let specs = events
        .iter()
        .map(|e| e.spec_string(modifiers))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(specs.join(", "))
}

/// What is wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters, of the offending text (or of where something is missing).
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl core::error::Error for ConfigError {}

/// Parses a nanoBench config file; the first bad line is the error.
pub fn parse_config(text: &str) -> Result<Vec<NanoBenchEvent>, ConfigError> {
    let mut events = Vec::new();
    for (index, raw) in text.split('\n').enumerate() {
        if let Some(e) = parse_line(index + 1, raw)? {
            events.push(e);
        }
    }
    Ok(events)
}

/// One line: `None` for blank lines and comments.
fn parse_line(line: usize, raw: &str) -> Result<Option<NanoBenchEvent>, ConfigError> {
    let content = raw.trim_end();
    let body = content.trim_start();
    if body.is_empty() || body.starts_with('#') {
        return Ok(None);
    }
    let start = content.len() - body.len();
    // Byte offset in the line -> 1-based character column.
    let column = |offset: usize| raw[..offset].chars().count() + 1;
    let error = |offset: usize, message: String| ConfigError {
        line,
        column: column(offset),
        message,
    };

    // nanoBench splits at the first space or tab only.
    let config_len = body.find([' ', '\t']).unwrap_or(body.len());
    let config = &body[..config_len];
    let name = body[config_len..].trim();
    let name = if name.is_empty() { config } else { name };

    // The config's '.'-separated parts with their offsets in the line.
    let mut parts = config.split('.').scan(start, |offset, part| {
        let at = *offset;
        *offset += part.len() + 1;
        Some((at, part))
    });

    let (code_at, code_text) = parts.next().unwrap_or((start, ""));
    let code = parse_hex(code_text)
        .map_err(|why| error(code_at, format!("bad event code `{code_text}`: {why}")))?;
    // 12 bits: AMD's event select is that wide; Intel's 8 bits are checked when encoding.
    if code > 0xfff {
        return Err(error(
            code_at,
            format!("event code {code:#x} is wider than 12 bits"),
        ));
    }
    let (umask_at, umask_text) = parts.next().ok_or_else(|| {
        error(
            start + config.len(),
            format!("expected `.UMASK` (hex) after the event code in `{config}`"),
        )
    })?;
    let umask = parse_hex(umask_text)
        .map_err(|why| error(umask_at, format!("bad unit mask `{umask_text}`: {why}")))?;
    if umask > 0xff {
        return Err(error(
            umask_at,
            format!("unit mask {umask:#x} is wider than 8 bits"),
        ));
    }

    let mut select = EventSelect::new(code as u16, umask as u8);
    let mut event = NanoBenchEvent {
        line,
        config: String::from(config),
        name: String::from(name),
        select,
        counter: None,
        taken_alone: false,
        extra: None,
    };
    let mut seen: Vec<&str> = Vec::new();
    // The option that set `event.extra`, for the error when a second one does.
    let mut extra_from: Option<&str> = None;
    for (at, option) in parts {
        let (key, value) = match option.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (option, None),
        };
        if key.is_empty() {
            return Err(error(
                at,
                format!("empty option in `{config}` (two dots, or a dot at the end)"),
            ));
        }
        if seen.contains(&key) {
            return Err(error(at, format!("option `{key}` is given twice")));
        }
        seen.push(key);
        let flag = |on: &mut bool| match value {
            None => {
                *on = true;
                Ok(())
            }
            Some(_) => Err(error(at, format!("option `{key}` takes no value"))),
        };
        // The value of `KEY=value`, as C's strtoul(.., 0) reads it.
        let number = || -> Result<u64, ConfigError> {
            let v = value.ok_or_else(|| {
                error(
                    at + key.len(),
                    format!("option `{key}` needs a value: `{key}=N`"),
                )
            })?;
            parse_c_number(v).map_err(|why| {
                error(
                    at + key.len() + 1,
                    format!("bad `{key}` value `{v}`: {why}"),
                )
            })
        };
        match key {
            "AnyT" => flag(&mut select.any_thread)?,
            "EDG" => flag(&mut select.edge)?,
            "INV" => flag(&mut select.inv)?,
            "TakenAlone" => flag(&mut event.taken_alone)?,
            "CMSK" => {
                let n = number()?;
                // nanoBench keeps the low 8 bits; a wider value is a typo, not a request.
                if n > 0xff {
                    return Err(error(
                        at,
                        format!("counter mask {n} does not fit its 8 bits (at most 255)"),
                    ));
                }
                select.cmask = n as u8;
            }
            "CTR" => {
                let n = number()?;
                // Counter sets are 32-bit masks. nanoBench too rejects counters it does not
                // have (CTR=37 in some Atom configs names a fixed counter; it ignores the pin).
                if n > 31 {
                    return Err(error(
                        at,
                        format!(
                            "CTR={n} is not a programmable counter (0 to 31; nanoBench rejects it too and counts the event anywhere)"
                        ),
                    ));
                }
                event.counter = Some(n as u8);
            }
            _ => {
                let Some(&(_, msr)) = MSR_OPTIONS.iter().find(|&&(k, _)| k == key) else {
                    return Err(error(at, unknown_option(key)));
                };
                let n = number()?;
                // nanoBench writes the MSR only when the value is not 0.
                if n != 0 {
                    if let Some(first) = extra_from {
                        return Err(error(
                            at,
                            format!(
                                "`{key}=` after `{first}=`: baremark programs one extra MSR per event"
                            ),
                        ));
                    }
                    extra_from = Some(key);
                    event.extra = Some(ExtraMsr { msr, value: n });
                }
            }
        }
    }
    event.select = select;
    Ok(Some(event))
}

fn unknown_option(key: &str) -> String {
    let hint = ["AnyT", "EDG", "INV", "TakenAlone", "CMSK", "CTR"]
        .into_iter()
        .chain(MSR_OPTIONS.iter().map(|&(k, _)| k))
        .find(|k| k.eq_ignore_ascii_case(key))
        .map(|k| format!("; options are case-sensitive: did you mean `{k}`?"))
        .unwrap_or_default();
    format!("unknown option `{key}` (accepted: {OPTIONS_ACCEPTED}){hint}")
}

/// Hex digits, optionally after `0x` (strtoul base 16 takes the prefix too).
fn parse_hex(t: &str) -> Result<u64, &'static str> {
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if digits.is_empty() {
        return Err("expected hex digits");
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("not a hex number");
    }
    u64::from_str_radix(digits, 16).map_err(|_| "more than 64 bits")
}

/// A C integer literal as strtoul(.., 0) reads it: `0x` hex, a leading `0` octal, else decimal.
/// Unlike strtoul, trailing text, signs and spaces are errors.
fn parse_c_number(t: &str) -> Result<u64, &'static str> {
    let (digits, radix, what) =
        if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            (h, 16, "not a hex number")
        } else if t.len() > 1 && t.starts_with('0') {
            (
                &t[1..],
                8,
                "not an octal number (a leading 0 means octal, as in C)",
            )
        } else {
            (t, 10, "not a number (decimal, 0x hex or 0-prefixed octal)")
        };
    if digits.is_empty() {
        return Err("expected digits");
    }
    if !digits.bytes().all(|b| (b as char).is_digit(radix)) {
        return Err(what);
    }
    u64::from_str_radix(digits, radix).map_err(|_| "more than 64 bits")
}

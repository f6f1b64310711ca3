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

/// The ramdisk member baremark packs a nanoBench config as (`--config FILE`); the kernel reads
/// it with [`parse_config`] and counts its events beside the `events` list of `run.cfg`
/// (docs/run-config.md). Here because the host tool and the kernel must agree on it.
pub const CONFIG_MEMBER: &str = "events/nanobench.cfg";

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
    /// 1-based column where the config starts (lines may be indented).
    pub column: usize,
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
                .map_or(0, |i| self.config[..i].chars().count())
                + self.column;
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
            column: self.column,
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
        column: column(start),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuModel;
    use crate::parse;
    use crate::pmu::PmuCaps;
    use alloc::vec;

    // Expected values are built from the SDM's IA32_PERFEVTSELx layout, not from the encoder:
    // event 7:0, umask 15:8, USR 16, OS 17, E 18, INT 20, AnyThread 21, EN 22, INV 23,
    // CMASK 31:24. nanoBench always sets EN, never INT; nanoBench.sh counts user mode only.
    const USR: u64 = 1 << 16;
    const OS: u64 = 1 << 17;
    const EDGE: u64 = 1 << 18;
    const ANY: u64 = 1 << 21;
    const EN: u64 = 1 << 22;
    const INV: u64 = 1 << 23;
    const fn cmask(n: u64) -> u64 {
        n << 24
    }
    const fn ev(code: u64, umask: u64) -> u64 {
        code | (umask << 8)
    }

    /// Lines in the form of nanoBench's configs/cfg_Skylake_*.txt.
    const SKYLAKE: &str = "\
# Based on https://download.01.org/perfmon/SKL/skylake_core_v52.json
# Applies to processors with family-model in {6-4E, 6-5E}

3C.00 CORE_CYCLES
C0.00 INST_RETIRED
A1.01 UOPS_DISPATCHED_PORT.PORT_0
0D.03.CMSK=1.AnyT INT_MISC.RECOVERY_CYCLES_ANY
48.02.CMSK=1.EDG L1D_PEND_MISS.FB_FULL_PERIODS
B1.01.CMSK=1.INV UOPS_EXECUTED.STALL_CYCLES
A3.14.CMSK=20 CYCLE_ACTIVITY.STALLS_MEM_ANY
CD.01.MSR_3F6H=0x10.CTR=1.TakenAlone MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16
B7.01.MSR_RSP0=0x10003C0002.TakenAlone OCR.DEMAND_RFO.L3_HIT.SNOOP_HITM
A4.04.CTR=0 TOPDOWN.BAD_SPEC_SLOTS
";

    fn skylake() -> Vec<NanoBenchEvent> {
        parse_config(SKYLAKE).unwrap()
    }

    fn err(text: &str) -> ConfigError {
        parse_config(text).unwrap_err()
    }

    #[test]
    fn a_skylake_config_encodes_to_what_nanobench_programs() {
        let events = skylake();
        let got: Vec<(usize, &str, u64)> = events
            .iter()
            .map(|e| {
                let v = e.perfevtsel(Vendor::Intel, &NANOBENCH_USER).unwrap();
                (e.line, e.name.as_str(), v)
            })
            .collect();
        let base = EN | USR;
        assert_eq!(
            got,
            vec![
                (4, "CORE_CYCLES", base | ev(0x3c, 0x00)),
                (5, "INST_RETIRED", base | ev(0xc0, 0x00)),
                (6, "UOPS_DISPATCHED_PORT.PORT_0", base | ev(0xa1, 0x01)),
                (
                    7,
                    "INT_MISC.RECOVERY_CYCLES_ANY",
                    base | ANY | cmask(1) | ev(0x0d, 0x03)
                ),
                (
                    8,
                    "L1D_PEND_MISS.FB_FULL_PERIODS",
                    base | EDGE | cmask(1) | ev(0x48, 0x02)
                ),
                (
                    9,
                    "UOPS_EXECUTED.STALL_CYCLES",
                    base | INV | cmask(1) | ev(0xb1, 0x01)
                ),
                // CMSK is decimal (strtoul base 0): 20 = 0x14.
                (
                    10,
                    "CYCLE_ACTIVITY.STALLS_MEM_ANY",
                    base | cmask(0x14) | ev(0xa3, 0x14)
                ),
                (
                    11,
                    "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16",
                    base | ev(0xcd, 0x01)
                ),
                (
                    12,
                    "OCR.DEMAND_RFO.L3_HIT.SNOOP_HITM",
                    base | ev(0xb7, 0x01)
                ),
                (13, "TOPDOWN.BAD_SPEC_SLOTS", base | ev(0xa4, 0x04)),
            ]
        );
        assert_eq!(got[3].2, 0x0161_030d);
        assert_eq!(got[5].2, 0x01c1_01b1);
    }

    #[test]
    fn kernel_nanobench_counts_user_and_kernel_mode() {
        let e = &skylake()[5]; // B1.01.CMSK=1.INV
        assert_eq!(
            e.perfevtsel(Vendor::Intel, &NANOBENCH_KERNEL).unwrap(),
            EN | USR | OS | INV | cmask(1) | ev(0xb1, 0x01)
        );
        assert_eq!(
            e.perfevtsel(Vendor::Intel, &NANOBENCH_KERNEL).unwrap(),
            0x01c3_01b1
        );
    }

    #[test]
    fn placement_and_extra_msr_options_become_the_event_description() {
        let events = skylake();
        let load_latency = &events[7];
        assert_eq!(load_latency.counter, Some(1));
        assert!(load_latency.taken_alone);
        assert_eq!(
            load_latency.extra,
            Some(ExtraMsr {
                msr: 0x3f6,
                value: 0x10
            })
        );
        let d = load_latency.event_desc();
        assert_eq!(d.name, "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16");
        assert_eq!(d.select, EventSelect::new(0xcd, 0x01));
        assert_eq!(d.gp_counters, Some(1 << 1));
        assert!(d.taken_alone);
        assert_eq!(d.extra, load_latency.extra);
        assert_eq!(d.alt, None);
        assert_eq!(d.fixed, None);

        let offcore = events[8].event_desc();
        assert_eq!(
            offcore.extra,
            Some(ExtraMsr {
                msr: 0x1a6,
                value: 0x10_003c_0002
            })
        );
        assert_eq!(offcore.gp_counters, Some(u32::MAX));
        assert_eq!(events[9].event_desc().gp_counters, Some(1 << 0));

        let spec = events[0].event_spec(NANOBENCH_USER);
        assert_eq!(spec.modifiers, Modifiers::USER);
        assert_eq!(spec.event.name, "CORE_CYCLES");
        assert!(!spec.event.taken_alone);
        assert_eq!(spec.event.extra, None);
    }

    #[test]
    fn every_msr_option_names_its_msr() {
        let events = parse_config(
            "D0.05.MSR_3F6H=0x100 A\nC6.01.MSR_PF=0x11 B\nB7.01.MSR_RSP0=0x10001 C\nBB.01.MSR_RSP1=16 D\n",
        )
        .unwrap();
        let msrs: Vec<Option<ExtraMsr>> = events.iter().map(|e| e.extra).collect();
        assert_eq!(
            msrs,
            vec![
                Some(ExtraMsr {
                    msr: 0x3f6,
                    value: 0x100
                }),
                Some(ExtraMsr {
                    msr: 0x3f7,
                    value: 0x11
                }),
                Some(ExtraMsr {
                    msr: 0x1a6,
                    value: 0x10001
                }),
                Some(ExtraMsr {
                    msr: 0x1a7,
                    value: 16
                }),
            ]
        );
    }

    #[test]
    fn an_msr_value_of_zero_is_not_written_as_in_nanobench() {
        let e = &parse_config("B7.01.MSR_RSP0=0 X").unwrap()[0];
        assert_eq!(e.extra, None);
        // So a zero setting does not count as the line's one extra MSR.
        let e = &parse_config("B7.01.MSR_RSP1=0.MSR_RSP0=0x1 X").unwrap()[0];
        assert_eq!(
            e.extra,
            Some(ExtraMsr {
                msr: 0x1a6,
                value: 1
            })
        );
    }

    #[test]
    fn numbers_follow_nanobench_radixes() {
        let sel = |line: &str| parse_config(line).unwrap()[0].select;
        // EvtSel and UMASK are hex whatever they look like.
        assert_eq!(sel("10.10 X"), EventSelect::new(0x10, 0x10));
        assert_eq!(sel("0x3c.0x1 X"), EventSelect::new(0x3c, 0x01));
        assert_eq!(sel("c0.aB X"), EventSelect::new(0xc0, 0xab));
        // CMSK=, CTR= are C literals: decimal, 0x hex, 0-prefixed octal.
        assert_eq!(sel("A3.14.CMSK=10 X").cmask, 10);
        assert_eq!(sel("A3.14.CMSK=0x10 X").cmask, 0x10);
        assert_eq!(sel("A3.14.CMSK=010 X").cmask, 8);
        assert_eq!(sel("A3.14.CMSK=0 X").cmask, 0);
        assert_eq!(sel("A3.14.CMSK=255 X").cmask, 0xff);
        assert_eq!(parse_config("A3.14.CTR=0x3 X").unwrap()[0].counter, Some(3));
    }

    #[test]
    fn options_in_any_order_set_the_same_bits() {
        let a = parse_config("79.20.CMSK=1.EDG.INV.AnyT A").unwrap();
        let b = parse_config("79.20.AnyT.INV.EDG.CMSK=1 B").unwrap();
        assert_eq!(a[0].select, b[0].select);
        assert_eq!(
            a[0].perfevtsel(Vendor::Intel, &NANOBENCH_USER).unwrap(),
            EN | USR | EDGE | INV | ANY | cmask(1) | ev(0x79, 0x20)
        );
    }

    #[test]
    fn comments_blank_lines_separators_and_line_endings() {
        let text = "# comment\n\n   \n  # indented comment\r\nC0.00\tINST_RETIRED\r\n3C.00   CORE CYCLES  \n\t0E.01 UOPS_ISSUED\nC4.00 BR # not a comment after the config\n";
        let events = parse_config(text).unwrap();
        let got: Vec<(usize, &str, &str)> = events
            .iter()
            .map(|e| (e.line, e.config.as_str(), e.name.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (5, "C0.00", "INST_RETIRED"),
                (6, "3C.00", "CORE CYCLES"),
                (7, "0E.01", "UOPS_ISSUED"),
                (8, "C4.00", "BR # not a comment after the config"),
            ]
        );
        assert!(parse_config("").unwrap().is_empty());
        assert!(parse_config("# only\n# comments").unwrap().is_empty());
    }

    #[test]
    fn a_line_without_a_name_is_named_by_its_config_as_in_nanobench() {
        // cfg_Zen_all.txt has such lines; AMD's event bits 11:8 go to PERF_CTL bits 35:32.
        let events = parse_config("076.00 LsNotHaltedCyc\n28A.01\n1CF.04   \n").unwrap();
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["LsNotHaltedCyc", "28A.01", "1CF.04"]);
        let amd: Vec<u64> = events
            .iter()
            .map(|e| e.perfevtsel(Vendor::Amd, &NANOBENCH_USER).unwrap())
            .collect();
        assert_eq!(
            amd,
            vec![
                EN | USR | ev(0x76, 0x00),
                EN | USR | (0x2 << 32) | ev(0x8a, 0x01),
                EN | USR | (0x1 << 32) | ev(0xcf, 0x04),
            ]
        );
        // Intel's event select has 8 bits: the encoder refuses rather than truncating.
        assert!(matches!(
            events[1].perfevtsel(Vendor::Intel, &NANOBENCH_USER),
            Err(EncodeError::OutOfRange { .. })
        ));
    }

    #[test]
    fn anythread_does_not_exist_on_amd() {
        let e = &parse_config("076.00.AnyT X").unwrap()[0];
        assert!(e.perfevtsel(Vendor::Amd, &NANOBENCH_USER).is_err());
    }

    fn where_(e: &ConfigError) -> (usize, usize) {
        (e.line, e.column)
    }

    #[test]
    fn bad_hex_is_reported_at_its_field() {
        let e = err("# header\n\nC0.00 OK\nC0.0G BAD_UMASK\n");
        assert_eq!(where_(&e), (4, 4));
        assert!(e.message.contains("bad unit mask `0G`"), "{e}");
        let e = err("ZZ.00 BAD_CODE");
        assert_eq!(where_(&e), (1, 1));
        assert!(e.message.contains("bad event code `ZZ`"), "{e}");
        let e = err("  -1.00 SIGNED");
        assert_eq!(where_(&e), (1, 3));
        let e = err("C0.100 WIDE");
        assert_eq!(where_(&e), (1, 4));
        assert!(e.message.contains("wider than 8 bits"), "{e}");
        let e = err("1000.00 WIDE");
        assert!(e.message.contains("wider than 12 bits"), "{e}");
        assert_eq!(
            err("C0.00.CMSK=0x1G X").to_string(),
            "line 1, column 12: bad `CMSK` value `0x1G`: not a hex number"
        );
        let e = err("C0.00.CMSK=09 X");
        assert_eq!(where_(&e), (1, 12));
        assert!(e.message.contains("octal"), "{e}");
        let e = err("C0.00.CMSK=1a X");
        assert!(e.message.contains("not a number"), "{e}");
    }

    #[test]
    fn unknown_options_are_errors_with_a_hint() {
        let e = err("C0.00 A\n\tC0.00.EDGE B");
        assert_eq!(where_(&e), (2, 8));
        assert!(
            e.message
                .starts_with("unknown option `EDGE` (accepted: CMSK=, AnyT,"),
            "{e}"
        );
        let e = err("C0.00.edg X");
        assert_eq!(where_(&e), (1, 7));
        assert!(e.message.contains("did you mean `EDG`?"), "{e}");
        let e = err("B7.01.msr_rsp0=0x1 X");
        assert!(e.message.contains("did you mean `MSR_RSP0`?"), "{e}");
        let e = err("B7.01.MSR_RSP2=0x1 X");
        assert!(e.message.starts_with("unknown option `MSR_RSP2`"), "{e}");
    }

    #[test]
    fn a_missing_umask_or_value_is_reported_where_it_belongs() {
        let e = err("C0 INST_RETIRED");
        assert_eq!(where_(&e), (1, 3));
        assert!(e.message.contains("expected `.UMASK`"), "{e}");
        let e = err(".00 X");
        assert_eq!(where_(&e), (1, 1));
        assert!(e.message.contains("expected hex digits"), "{e}");
        let e = err("C0. X");
        assert_eq!(where_(&e), (1, 4));
        let e = err("C0.00.CMSK X");
        assert_eq!(where_(&e), (1, 11));
        assert!(e.message.contains("needs a value"), "{e}");
        let e = err("C0.00.CMSK= X");
        assert_eq!(where_(&e), (1, 12));
        assert!(e.message.contains("expected digits"), "{e}");
    }

    #[test]
    fn malformed_options_are_errors() {
        let e = err("C0.00..EDG X");
        assert_eq!(where_(&e), (1, 7));
        assert!(e.message.contains("empty option"), "{e}");
        let e = err("C0.00.EDG. X");
        assert_eq!(where_(&e), (1, 11));
        let e = err("C0.00.EDG.EDG X");
        assert_eq!(where_(&e), (1, 11));
        assert!(e.message.contains("`EDG` is given twice"), "{e}");
        let e = err("C0.00.INV=1 X");
        assert!(e.message.contains("takes no value"), "{e}");
        let e = err("C0.00.CMSK=256 X");
        assert_eq!(where_(&e), (1, 7));
        assert!(e.message.contains("does not fit its 8 bits"), "{e}");
        let e = err("00.06.CTR=37 TOPDOWN_FE_BOUND.ALL");
        assert_eq!(where_(&e), (1, 7));
        assert!(
            e.message.contains("CTR=37 is not a programmable counter"),
            "{e}"
        );
        let e = err("B7.01.MSR_RSP0=0x1.MSR_RSP1=0x2 X");
        assert_eq!(where_(&e), (1, 20));
        assert!(e.message.contains("one extra MSR per event"), "{e}");
        let e = err("B7.01.MSR_RSP0=0x1FFFFFFFFFFFFFFFF X");
        assert!(e.message.contains("more than 64 bits"), "{e}");
    }

    fn skylake_caps() -> PmuCaps {
        PmuCaps::nominal(CpuModel::parse("GenuineIntel-6-5E").unwrap())
    }

    #[test]
    fn lines_become_baremark_event_syntax_that_parses_to_the_same_encoding() {
        let events: Vec<NanoBenchEvent> = skylake().into_iter().take(7).collect();
        let text = config_to_spec_string(&events, &NANOBENCH_USER).unwrap();
        assert!(text.starts_with(
            "cpu/event=0x3c,umask=0x0,name='CORE_CYCLES'/:u, cpu/event=0xc0,umask=0x0,name='INST_RETIRED'/:u, "
        ), "{text}");
        assert!(
            text.contains(
                "cpu/event=0xb1,umask=0x1,cmask=0x1,inv,name='UOPS_EXECUTED.STALL_CYCLES'/:u"
            ),
            "{text}"
        );
        let list = parse::parse(&text, &skylake_caps(), None).unwrap();
        assert_eq!(list.len(), events.len());
        for (nb, spec) in events.iter().zip(list.specs()) {
            assert_eq!(spec.event.name, nb.name);
            assert_eq!(spec.modifiers, NANOBENCH_USER);
            assert_eq!(
                encode::gp_event_select(Vendor::Intel, &spec.event.select, &spec.modifiers, true),
                nb.perfevtsel(Vendor::Intel, &NANOBENCH_USER)
            );
        }
        let kernel = events[0].spec_string(&NANOBENCH_KERNEL).unwrap();
        assert!(kernel.ends_with("/:uk"), "{kernel}");
        let quoted = parse_config("C0.00 it's").unwrap()[0]
            .spec_string(&NANOBENCH_USER)
            .unwrap();
        assert!(quoted.ends_with(",name=\"it's\"/:u"), "{quoted}");
    }

    #[test]
    fn options_without_a_term_refuse_the_event_syntax() {
        let events = skylake();
        let e = events[7].spec_string(&NANOBENCH_USER).unwrap_err();
        // CD.01.MSR_3F6H=0x10.CTR=1.TakenAlone: TakenAlone is checked first.
        assert_eq!((e.line, e.column), (11, 27));
        assert!(e.message.contains("`TakenAlone` cannot be written"), "{e}");
        let e = events[9].spec_string(&NANOBENCH_USER).unwrap_err();
        assert_eq!((e.line, e.column), (13, 7));
        let e = parse_config("B7.01.MSR_RSP0=0x1 X").unwrap()[0]
            .spec_string(&NANOBENCH_USER)
            .unwrap_err();
        assert_eq!(e.column, 7);
        assert!(e.message.contains("`MSR_RSP0=` (an extra MSR)"), "{e}");
        // Columns count from the line, not the config.
        let e = parse_config("  C0.00.TakenAlone X").unwrap()[0]
            .spec_string(&NANOBENCH_USER)
            .unwrap_err();
        assert_eq!(e.column, 9);
        let err = config_to_spec_string(&events, &NANOBENCH_USER).unwrap_err();
        assert_eq!(err.line, 11);
        let none = Modifiers {
            usr: false,
            os: false,
            ..NANOBENCH_USER
        };
        assert!(events[0].spec_string(&none).is_err());
        let both_quotes = parse_config("C0.00 a'b\"c").unwrap();
        assert!(both_quotes[0].spec_string(&NANOBENCH_USER).is_err());
    }
}

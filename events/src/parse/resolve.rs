//! Resolution against a PMU: names through the catalogue, then the optional table; raw configs
//! and `pmu/terms/` into event selects; each checked so that its encoding cannot fail later.

use alloc::format;
use alloc::string::{String, ToString};

use super::Spec;
use super::ast::{Ev, Item, Key, PmuName, Term, Value};
use super::error::{ErrorKind, ParseError, err};
use super::lexer::looks_like_raw;
use crate::catalog;
use crate::cpu::Vendor;
use crate::encode::{self, EncodeError, FixedCtrl, bits};
use crate::event::{EventDesc, EventSelect, NamedEvents, Source};
use crate::pmu::{CoreType, PmuCaps, PmuKind};

pub(super) const NO_COUNTERS: &str = "no programmable counters";

pub(super) struct Resolver<'a> {
    pub(super) caps: &'a PmuCaps,
    pub(super) named: Option<&'a dyn NamedEvents>,
    pub(super) input: &'a str,
}

fn encode_kind(e: EncodeError) -> ErrorKind {
    match e {
        EncodeError::OutOfRange { field, value, max } => ErrorKind::OutOfRange {
            field: field.name(),
            value,
            max,
        },
        EncodeError::NotOnVendor { field, vendor } => ErrorKind::NotOnVendor {
            field: field.name(),
            vendor,
        },
    }
}

fn fit(field: &'static str, value: u64, max: u64) -> Result<u64, ErrorKind> {
    if value > max {
        Err(ErrorKind::OutOfRange { field, value, max })
    } else {
        Ok(value)
    }
}

impl Resolver<'_> {
    fn tsc_only(&self) -> bool {
        self.caps.kind == PmuKind::TscOnly
    }

    pub(super) fn item(&self, item: &Item<'_>) -> Result<Spec, ParseError> {
        let mods = item.mods.unwrap_or_default();
        let modifiers = mods.modifiers();
        // Span for errors about the event itself (without modifiers).
        let (event, at, len) = match &item.ev {
            Ev::Name { text, pos } => (self.named(text, *pos)?, *pos, text.len()),
            Ev::Raw { text, pos, config } => {
                let e = |k| err(*pos, text.len(), k);
                if self.tsc_only() {
                    return Err(e(ErrorKind::NotAvailable(String::from(NO_COUNTERS))));
                }
                let select = self.decode_config(*config).map_err(e)?;
                (self.raw_desc(text, select).map_err(e)?, *pos, text.len())
            }
            Ev::Pmu {
                pmu,
                pos,
                len,
                terms,
            } => {
                let e = |k| err(*pos, *len, k);
                if self.tsc_only() {
                    return Err(e(ErrorKind::NotAvailable(String::from(NO_COUNTERS))));
                }
                self.check_pmu(*pmu).map_err(e)?;
                let (select, name) = self.terms_select(terms)?;
                let text = self.input.get(*pos..*pos + *len).unwrap_or_default();
                let desc = self.raw_desc(name.unwrap_or(text), select).map_err(e)?;
                (desc, *pos, *len)
            }
        };
        if self.caps.vendor == Vendor::Intel {
            for (letter, field) in [
                (mods.host, ":H (host-only counting)"),
                (mods.guest, ":G (guest-only counting)"),
            ] {
                if let Some(p) = letter {
                    return Err(err(
                        p,
                        1,
                        ErrorKind::NotOnVendor {
                            field,
                            vendor: Vendor::Intel,
                        },
                    ));
                }
            }
        }
        // The encoding must be possible now, not fail later when counters are programmed.
        let check = if event.has_gp_encoding() {
            encode::gp_event_select(self.caps.vendor, &event.select, &modifiers, true).map(drop)
        } else {
            FixedCtrl::from_modifiers(&modifiers, false).map(drop)
        };
        check.map_err(|e| err(at, len, encode_kind(e)))?;
        Ok(Spec {
            text: self
                .input
                .get(item.start..item.end)
                .unwrap_or_default()
                .to_string(),
            position: item.start,
            event,
            modifiers,
        })
    }

    fn named(&self, text: &str, pos: usize) -> Result<EventDesc, ParseError> {
        let e = |k| err(pos, text.len(), k);
        // Catalogue first: perf's generic names win over a table's.
        let found = catalog::by_name(text, self.caps).or_else(|| self.table(text).map(Ok));
        match found {
            None if looks_like_raw(text) => Err(e(ErrorKind::BadRaw(text.to_string()))),
            None => Err(e(ErrorKind::UnknownName(text.to_string()))),
            Some(_) if self.tsc_only() => {
                Err(e(ErrorKind::NotAvailable(String::from(NO_COUNTERS))))
            }
            Some(Err(u)) => Err(e(ErrorKind::NotAvailable(u.reason))),
            Some(Ok(d)) => Ok(d),
        }
    }

    fn table(&self, name: &str) -> Option<EventDesc> {
        let t = self.named?;
        t.event(name).or_else(|| {
            // perfmon names are upper case; do not rely on every table matching case-blind.
            let upper = name.to_ascii_uppercase();
            (upper != name).then(|| t.event(&upper)).flatten()
        })
    }

    fn check_pmu(&self, pmu: PmuName) -> Result<(), ErrorKind> {
        let want = match pmu {
            PmuName::Cpu => return Ok(()),
            PmuName::CpuCore => CoreType::Core,
            PmuName::CpuAtom => CoreType::Atom,
        };
        let name = if want == CoreType::Core {
            "cpu_core"
        } else {
            "cpu_atom"
        };
        if self.caps.vendor != Vendor::Intel {
            return Err(ErrorKind::NotAvailable(format!(
                "{name} is a PMU of Intel hybrid parts; use cpu"
            )));
        }
        match self.caps.core_type {
            Some(have) if have != want => Err(ErrorKind::NotAvailable(format!(
                "{name} events, but these capabilities describe the {} cores",
                have.perfmon_name()
            ))),
            _ => Ok(()),
        }
    }

    fn raw_desc(&self, name: &str, select: EventSelect) -> Result<EventDesc, ErrorKind> {
        let mut d = EventDesc::gp(name, select, Source::Raw);
        if select.in_txcp {
            // IN_TXCP works only on GP counter 2 (Intel SDM, TSX performance monitoring).
            if self.caps.gp_counters <= 2 {
                return Err(ErrorKind::NotAvailable(format!(
                    "in_txcp counts only on GP counter 2 and this PMU has {} GP counters",
                    self.caps.gp_counters
                )));
            }
            d.gp_counters = Some(1 << 2);
        }
        Ok(d)
    }

    /// A raw config (`rNNN`, `config=`) in register layout.
    fn decode_config(&self, config: u64) -> Result<EventSelect, ErrorKind> {
        let raw_bits = |bits, reason| Err(ErrorKind::RawBits { bits, reason });
        let privilege = config & (bits::USR | bits::OS);
        if privilege != 0 {
            return raw_bits(
                privilege,
                "USR/OS (bits 16, 17) are the privilege filter: set it with :u / :k",
            );
        }
        if config & bits::INT != 0 {
            return raw_bits(
                bits::INT,
                "INT (bit 20) raises sampling interrupts, which baremark does not use",
            );
        }
        if config & bits::EN != 0 {
            return raw_bits(
                bits::EN,
                "EN (bit 22) is set by baremark when counting starts",
            );
        }
        match self.caps.vendor {
            Vendor::Intel => {
                if config & bits::ANY_THREAD != 0 && !self.caps.any_thread {
                    return Err(ErrorKind::NotAvailable(String::from(
                        "AnyThread (bit 21) needs an Intel v3/v4 PMU that has not deprecated it",
                    )));
                }
                let reserved = config & !(encode::INTEL_VALID_BITS & !bits::PIN_CONTROL);
                if reserved != 0 {
                    return raw_bits(
                        reserved,
                        "not event bits on Intel (reserved, or pin control which baremark never sets)",
                    );
                }
                encode::decode_intel_perfevtsel(config)
                    .map(|d| d.select)
                    .map_err(|e| ErrorKind::RawBits {
                        bits: e.reserved,
                        reason: "reserved on Intel",
                    })
            }
            Vendor::Amd => {
                let host_guest = config & (bits::AMD_HOST_ONLY | bits::AMD_GUEST_ONLY);
                if host_guest != 0 {
                    return raw_bits(
                        host_guest,
                        "HostOnly/GuestOnly (bits 41, 40) are set with :H / :G",
                    );
                }
                let reserved = config & !encode::AMD_VALID_BITS;
                if reserved != 0 {
                    return raw_bits(reserved, "reserved on AMD");
                }
                encode::decode_amd_perf_ctl(config)
                    .map(|d| d.select)
                    .map_err(|e| ErrorKind::RawBits {
                        bits: e.reserved,
                        reason: "reserved on AMD",
                    })
            }
        }
    }

    /// The select and the `name=` of `pmu/terms/`.
    fn terms_select<'t>(
        &self,
        terms: &[Term<'t>],
    ) -> Result<(EventSelect, Option<&'t str>), ParseError> {
        let intel = self.caps.vendor == Vendor::Intel;
        let mut sel = EventSelect::default();
        let mut name = None;
        for t in terms {
            let e = |k| err(t.pos, t.len, k);
            let n = match t.value {
                Value::Str(s) => {
                    name = Some(s);
                    continue;
                }
                Value::Num(n) => n,
            };
            let intel_only = |field| {
                if intel {
                    Ok(())
                } else {
                    Err(e(ErrorKind::NotOnVendor {
                        field,
                        vendor: self.caps.vendor,
                    }))
                }
            };
            let flag = |field| fit(field, n, 1).map(|v| v == 1).map_err(e);
            let byte = |field| fit(field, n, 0xff).map(|v| v as u8).map_err(e);
            match t.key {
                Key::Config => sel = self.decode_config(n).map_err(e)?,
                Key::Event => {
                    let max = if intel { 0xff } else { 0xfff };
                    sel.code = fit("event", n, max).map_err(e)? as u16;
                }
                Key::Umask => sel.umask = byte("umask")?,
                Key::Umask2 => {
                    intel_only("umask2")?;
                    sel.umask2 = byte("umask2")?;
                }
                Key::Cmask => sel.cmask = byte("cmask")?,
                Key::Inv => sel.inv = flag("inv")?,
                Key::Edge => sel.edge = flag("edge")?,
                Key::Any => {
                    intel_only("any")?;
                    sel.any_thread = flag("any")?;
                    if sel.any_thread && !self.caps.any_thread {
                        return Err(e(ErrorKind::NotAvailable(String::from(
                            "any (AnyThread) needs an Intel v3/v4 PMU that has not deprecated it",
                        ))));
                    }
                }
                Key::InTx => {
                    intel_only("in_tx")?;
                    sel.in_tx = flag("in_tx")?;
                }
                Key::InTxcp => {
                    intel_only("in_txcp")?;
                    sel.in_txcp = flag("in_txcp")?;
                }
                // The parser stores `name=` as a string; nothing to do for a number.
                Key::Name => {}
            }
        }
        Ok((sel, name))
    }
}

//! Exact register encodings, both ways.
//!
//! Intel IA32_PERFEVTSELx (SDM vol. 3B, "Architectural Performance Monitoring"):
//!
//! | bits  | field  | bits  | field |
//! |-------|--------|-------|-------|
//! | 7:0   | event  | 21    | AnyThread (v3/v4) |
//! | 15:8  | umask  | 22    | EN |
//! | 16    | USR    | 23    | INV |
//! | 17    | OS     | 31:24 | CMASK |
//! | 18    | E (edge) | 32  | IN_TX |
//! | 19    | PC (pin control, always 0 here) | 33 | IN_TXCP |
//! | 20    | INT    | 47:40 | UMASK2 |
//!
//! IA32_FIXED_CTR_CTRL: four bits per fixed counter i at bit 4i: OS (bit 0), USR (bit 1),
//! AnyThread (bit 2), PMI (bit 3).
//!
//! AMD PERF_CTLx (APM vol. 2, "Performance Monitoring Counters"): event bits 7:0 at 7:0 and
//! 11:8 at 35:32, umask 15:8, USR 16, OS 17, edge 18, INT 20, EN 22, INV 23, CMASK 31:24,
//! GuestOnly 40, HostOnly 41.
//!
//! A field that does not fit or does not exist on the vendor is an error, never truncated; a
//! register value with reserved bits set does not decode.

use core::fmt;

use crate::cpu::Vendor;
use crate::event::{EventSelect, Modifiers};

/// A field of an event-select register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Event,
    Umask,
    Umask2,
    Cmask,
    AnyThread,
    InTx,
    InTxcp,
    HostOnly,
    GuestOnly,
    FixedIndex,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::Event => "event",
            Field::Umask => "umask",
            Field::Umask2 => "umask2",
            Field::Cmask => "cmask",
            Field::AnyThread => "any",
            Field::InTx => "in_tx",
            Field::InTxcp => "in_txcp",
            Field::HostOnly => "host",
            Field::GuestOnly => "guest",
            Field::FixedIndex => "fixed counter",
        }
    }
}

/// Why an event cannot be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The value does not fit the field.
    OutOfRange { field: Field, value: u64, max: u64 },
    /// The field does not exist on this vendor's registers.
    NotOnVendor { field: Field, vendor: Vendor },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeError::OutOfRange { field, value, max } => {
                write!(
                    f,
                    "{} = {value:#x} is out of range (at most {max:#x})",
                    field.name()
                )
            }
            EncodeError::NotOnVendor { field, vendor } => {
                write!(
                    f,
                    "{} does not exist on {} event selects",
                    field.name(),
                    vendor.cpuid_name()
                )
            }
        }
    }
}

/// Why a register value does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The reserved bits that were set.
    pub reserved: u64,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reserved bits {:#x} are set", self.reserved)
    }
}

/// Bit positions shared by Intel and AMD.
pub mod bits {
    pub const USR: u64 = 1 << 16;
    pub const OS: u64 = 1 << 17;
    pub const EDGE: u64 = 1 << 18;
    pub const PIN_CONTROL: u64 = 1 << 19;
    pub const INT: u64 = 1 << 20;
    pub const ANY_THREAD: u64 = 1 << 21;
    pub const EN: u64 = 1 << 22;
    pub const INV: u64 = 1 << 23;
    pub const IN_TX: u64 = 1 << 32;
    pub const IN_TXCP: u64 = 1 << 33;
    pub const AMD_GUEST_ONLY: u64 = 1 << 40;
    pub const AMD_HOST_ONLY: u64 = 1 << 41;
}

/// Every bit an Intel PERFEVTSEL may have set (PC, bit 19, is never used but decodes).
pub const INTEL_VALID_BITS: u64 = 0xffff_ffff | bits::IN_TX | bits::IN_TXCP | (0xff << 40);
/// Every bit an AMD PERF_CTL may have set.
pub const AMD_VALID_BITS: u64 = 0xffff_ffff & !(1 << 19) & !(1 << 21)
    | (0xf << 32)
    | bits::AMD_GUEST_ONLY
    | bits::AMD_HOST_ONLY;

/// A decoded event-select register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub select: EventSelect,
    pub modifiers: Modifiers,
    pub enable: bool,
}

fn check(field: Field, value: u64, max: u64) -> Result<(), EncodeError> {
    if value > max {
        Err(EncodeError::OutOfRange { field, value, max })
    } else {
        Ok(())
    }
}

/// The first of `fields` that is set is an error: `vendor`'s registers do not have it.
fn not_on_vendor<const N: usize>(
    vendor: Vendor,
    fields: [(bool, Field); N],
) -> Result<(), EncodeError> {
    match fields.into_iter().find(|&(on, _)| on) {
        Some((_, field)) => Err(EncodeError::NotOnVendor { field, vendor }),
        None => Ok(()),
    }
}

/// Intel counters (GP and fixed) count host and guest alike: host/guest-only are AMD's.
fn intel_host_guest(m: &Modifiers) -> Result<(), EncodeError> {
    not_on_vendor(
        Vendor::Intel,
        [
            (m.host_only, Field::HostOnly),
            (m.guest_only, Field::GuestOnly),
        ],
    )
}

fn common_low(sel: &EventSelect, m: &Modifiers, enable: bool) -> u64 {
    let mut v =
        u64::from(sel.code & 0xff) | (u64::from(sel.umask) << 8) | (u64::from(sel.cmask) << 24);
    for (on, bit) in [
        (m.usr, bits::USR),
        (m.os, bits::OS),
        (sel.edge, bits::EDGE),
        (m.int, bits::INT),
        (enable, bits::EN),
        (sel.inv, bits::INV),
    ] {
        if on {
            v |= bit;
        }
    }
    v
}

/// Encodes an Intel IA32_PERFEVTSELx value.
pub fn intel_perfevtsel(
    sel: &EventSelect,
    m: &Modifiers,
    enable: bool,
) -> Result<u64, EncodeError> {
    check(Field::Event, u64::from(sel.code), 0xff)?;
    intel_host_guest(m)?;
    let mut v = common_low(sel, m, enable) | (u64::from(sel.umask2) << 40);
    for (on, bit) in [
        (sel.any_thread, bits::ANY_THREAD),
        (sel.in_tx, bits::IN_TX),
        (sel.in_txcp, bits::IN_TXCP),
    ] {
        if on {
            v |= bit;
        }
    }
    Ok(v)
}

/// Decodes an Intel IA32_PERFEVTSELx value. Pin control (bit 19) is reserved here: baremark
/// never sets it.
pub fn decode_intel_perfevtsel(raw: u64) -> Result<Decoded, DecodeError> {
    let reserved = raw & !(INTEL_VALID_BITS & !bits::PIN_CONTROL);
    if reserved != 0 {
        return Err(DecodeError { reserved });
    }
    Ok(Decoded {
        select: EventSelect {
            code: (raw & 0xff) as u16,
            umask: (raw >> 8) as u8,
            umask2: (raw >> 40) as u8,
            cmask: (raw >> 24) as u8,
            inv: raw & bits::INV != 0,
            edge: raw & bits::EDGE != 0,
            any_thread: raw & bits::ANY_THREAD != 0,
            in_tx: raw & bits::IN_TX != 0,
            in_txcp: raw & bits::IN_TXCP != 0,
        },
        modifiers: Modifiers {
            usr: raw & bits::USR != 0,
            os: raw & bits::OS != 0,
            int: raw & bits::INT != 0,
            host_only: false,
            guest_only: false,
        },
        enable: raw & bits::EN != 0,
    })
}

/// Encodes an AMD PERF_CTLx value.
pub fn amd_perf_ctl(sel: &EventSelect, m: &Modifiers, enable: bool) -> Result<u64, EncodeError> {
    check(Field::Event, u64::from(sel.code), 0xfff)?;
    not_on_vendor(
        Vendor::Amd,
        [
            (sel.umask2 != 0, Field::Umask2),
            (sel.any_thread, Field::AnyThread),
            (sel.in_tx, Field::InTx),
            (sel.in_txcp, Field::InTxcp),
        ],
    )?;
    let mut v = common_low(sel, m, enable) | (u64::from(sel.code >> 8) << 32);
    if m.host_only {
        v |= bits::AMD_HOST_ONLY;
    }
    if m.guest_only {
        v |= bits::AMD_GUEST_ONLY;
    }
    Ok(v)
}

/// Decodes an AMD PERF_CTLx value.
pub fn decode_amd_perf_ctl(raw: u64) -> Result<Decoded, DecodeError> {
    let reserved = raw & !AMD_VALID_BITS;
    if reserved != 0 {
        return Err(DecodeError { reserved });
    }
    Ok(Decoded {
        select: EventSelect {
            code: ((raw & 0xff) | (((raw >> 32) & 0xf) << 8)) as u16,
            umask: (raw >> 8) as u8,
            umask2: 0,
            cmask: (raw >> 24) as u8,
            inv: raw & bits::INV != 0,
            edge: raw & bits::EDGE != 0,
            any_thread: false,
            in_tx: false,
            in_txcp: false,
        },
        modifiers: Modifiers {
            usr: raw & bits::USR != 0,
            os: raw & bits::OS != 0,
            int: raw & bits::INT != 0,
            host_only: raw & bits::AMD_HOST_ONLY != 0,
            guest_only: raw & bits::AMD_GUEST_ONLY != 0,
        },
        enable: raw & bits::EN != 0,
    })
}

/// Encodes the event-select value for a GP counter of `vendor`.
pub fn gp_event_select(
    vendor: Vendor,
    sel: &EventSelect,
    m: &Modifiers,
    enable: bool,
) -> Result<u64, EncodeError> {
    match vendor {
        Vendor::Intel => intel_perfevtsel(sel, m, enable),
        Vendor::Amd => amd_perf_ctl(sel, m, enable),
    }
}

/// Decodes a GP event-select value of `vendor`.
pub fn decode_gp_event_select(vendor: Vendor, raw: u64) -> Result<Decoded, DecodeError> {
    match vendor {
        Vendor::Intel => decode_intel_perfevtsel(raw),
        Vendor::Amd => decode_amd_perf_ctl(raw),
    }
}

/// The 4-bit IA32_FIXED_CTR_CTRL field of a fixed counter: OS (bit 0), USR (bit 1), AnyThread
/// (bit 2), PMI (bit 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedCtrl {
    pub os: bool,
    pub usr: bool,
    pub any_thread: bool,
    pub pmi: bool,
}

impl FixedCtrl {
    /// The field for the given modifiers.
    pub fn from_modifiers(m: &Modifiers, any_thread: bool) -> Result<FixedCtrl, EncodeError> {
        intel_host_guest(m)?;
        Ok(FixedCtrl {
            os: m.os,
            usr: m.usr,
            any_thread,
            pmi: m.int,
        })
    }

    /// The 4-bit field value.
    pub fn bits(&self) -> u8 {
        u8::from(self.os)
            | (u8::from(self.usr) << 1)
            | (u8::from(self.any_thread) << 2)
            | (u8::from(self.pmi) << 3)
    }

    /// From a 4-bit field value; bits above 3 are an error.
    pub fn from_bits(field: u8) -> Result<FixedCtrl, DecodeError> {
        if field > 0xf {
            return Err(DecodeError {
                reserved: u64::from(field & 0xf0),
            });
        }
        Ok(FixedCtrl {
            os: field & 1 != 0,
            usr: field & 2 != 0,
            any_thread: field & 4 != 0,
            pmi: field & 8 != 0,
        })
    }

    /// Where the field of fixed counter `index` sits in IA32_FIXED_CTR_CTRL.
    pub fn shift(index: u8) -> Result<u32, EncodeError> {
        check(Field::FixedIndex, u64::from(index), 15)?;
        Ok(4 * u32::from(index))
    }

    /// The IA32_FIXED_CTR_CTRL bits of this field for fixed counter `index` (to OR in after
    /// clearing `0xf << shift`).
    pub fn register_bits(&self, index: u8) -> Result<u64, EncodeError> {
        Ok(u64::from(self.bits()) << Self::shift(index)?)
    }

    /// The field of fixed counter `index` in an IA32_FIXED_CTR_CTRL value.
    pub fn from_register(raw: u64, index: u8) -> Result<FixedCtrl, EncodeError> {
        let shift = Self::shift(index)?;
        Ok(
            FixedCtrl::from_bits(((raw >> shift) & 0xf) as u8).unwrap_or(FixedCtrl {
                os: false,
                usr: false,
                any_thread: false,
                pmi: false,
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        // pmu-facts: instructions retired, user only = 0x004100C0; user+kernel = 0x004300C0.
        let inst = EventSelect::new(0xc0, 0);
        assert_eq!(
            intel_perfevtsel(&inst, &Modifiers::USER, true),
            Ok(0x0041_00c0)
        );
        assert_eq!(
            intel_perfevtsel(&inst, &Modifiers::default(), true),
            Ok(0x0043_00c0)
        );
        // MACHINE_CLEARS.COUNT on Skylake: event 0xC3 umask 0x01 cmask 1 edge.
        let mc = EventSelect {
            cmask: 1,
            edge: true,
            ..EventSelect::new(0xc3, 0x01)
        };
        assert_eq!(
            intel_perfevtsel(&mc, &Modifiers::default(), true),
            Ok(0x0147_01c3)
        );
        // AMD: event 0x120 (Zen 4 ref cycles) umask 1 puts event bits 11:8 at 35:32.
        let amd = EventSelect::new(0x120, 0x01);
        assert_eq!(
            amd_perf_ctl(&amd, &Modifiers::default(), true),
            Ok(0x1_0043_0120)
        );
        let host = Modifiers {
            host_only: true,
            ..Modifiers::USER
        };
        assert_eq!(
            amd_perf_ctl(&EventSelect::new(0x76, 0), &host, true),
            Ok(0x200_0041_0076)
        );
        // umask2 goes to bits 47:40.
        let ext = EventSelect {
            umask2: 0x12,
            ..EventSelect::new(0xd0, 0x81)
        };
        assert_eq!(
            intel_perfevtsel(&ext, &Modifiers::USER, false),
            Ok(0x1200_0001_81d0)
        );
    }

    #[test]
    fn out_of_range_and_foreign_fields_are_errors() {
        let wide = EventSelect::new(0x1c2, 0);
        assert_eq!(
            intel_perfevtsel(&wide, &Modifiers::default(), true),
            Err(EncodeError::OutOfRange {
                field: Field::Event,
                value: 0x1c2,
                max: 0xff
            })
        );
        assert!(amd_perf_ctl(&wide, &Modifiers::default(), true).is_ok());
        assert!(matches!(
            amd_perf_ctl(&EventSelect::new(0x1000, 0), &Modifiers::default(), true),
            Err(EncodeError::OutOfRange { max: 0xfff, .. })
        ));
        let tx = EventSelect {
            in_tx: true,
            ..EventSelect::new(0xc0, 0)
        };
        assert_eq!(
            amd_perf_ctl(&tx, &Modifiers::default(), true),
            Err(EncodeError::NotOnVendor {
                field: Field::InTx,
                vendor: Vendor::Amd
            })
        );
        let guest = Modifiers {
            guest_only: true,
            ..Modifiers::default()
        };
        assert!(matches!(
            intel_perfevtsel(&EventSelect::new(0xc0, 0), &guest, true),
            Err(EncodeError::NotOnVendor {
                field: Field::GuestOnly,
                ..
            })
        ));
        assert_eq!(
            FixedCtrl::shift(16),
            Err(EncodeError::OutOfRange {
                field: Field::FixedIndex,
                value: 16,
                max: 15
            })
        );
    }

    #[test]
    fn reserved_bits_do_not_decode() {
        assert_eq!(
            decode_intel_perfevtsel(1 << 34),
            Err(DecodeError { reserved: 1 << 34 })
        );
        assert_eq!(
            decode_intel_perfevtsel(bits::PIN_CONTROL),
            Err(DecodeError {
                reserved: bits::PIN_CONTROL
            })
        );
        assert_eq!(
            decode_amd_perf_ctl(1 << 21),
            Err(DecodeError { reserved: 1 << 21 })
        );
        assert_eq!(
            decode_amd_perf_ctl(1 << 36),
            Err(DecodeError { reserved: 1 << 36 })
        );
    }

    #[test]
    fn fixed_control_field() {
        // Instructions on fixed counter 0, user only, no PMI: field 0b0010 at bits 3:0.
        let ctl = FixedCtrl::from_modifiers(&Modifiers::USER, false).unwrap();
        assert_eq!(ctl.bits(), 0b0010);
        assert_eq!(ctl.register_bits(0), Ok(0x2));
        // Cycles on FC1, user+kernel with PMI: 0b1011 at bits 7:4.
        let pmi = Modifiers {
            int: true,
            ..Modifiers::default()
        };
        assert_eq!(
            FixedCtrl::from_modifiers(&pmi, false)
                .unwrap()
                .register_bits(1),
            Ok(0xb0)
        );
        assert_eq!(
            FixedCtrl::from_register(0xb2, 1).unwrap(),
            FixedCtrl::from_bits(0xb).unwrap()
        );
        assert!(FixedCtrl::from_bits(0x10).is_err());
    }

    fn any_select(amd: bool) -> impl Strategy<Value = EventSelect> {
        let code_max = if amd { 0xfffu16 } else { 0xff };
        (
            0..=code_max,
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            any::<[bool; 5]>(),
        )
            .prop_map(move |(code, umask, umask2, cmask, f)| EventSelect {
                code,
                umask,
                umask2: if amd { 0 } else { umask2 },
                cmask,
                inv: f[0],
                edge: f[1],
                any_thread: !amd && f[2],
                in_tx: !amd && f[3],
                in_txcp: !amd && f[4],
            })
    }

    fn any_modifiers(amd: bool) -> impl Strategy<Value = Modifiers> {
        any::<[bool; 5]>().prop_map(move |f| Modifiers {
            usr: f[0],
            os: f[1],
            int: f[2],
            host_only: amd && f[3],
            guest_only: amd && f[4],
        })
    }

    proptest! {
        #[test]
        fn intel_round_trip(sel in any_select(false), m in any_modifiers(false), en: bool) {
            let raw = intel_perfevtsel(&sel, &m, en).unwrap();
            prop_assert_eq!(decode_intel_perfevtsel(raw), Ok(Decoded { select: sel, modifiers: m, enable: en }));
        }

        #[test]
        fn amd_round_trip(sel in any_select(true), m in any_modifiers(true), en: bool) {
            let raw = amd_perf_ctl(&sel, &m, en).unwrap();
            prop_assert_eq!(decode_amd_perf_ctl(raw), Ok(Decoded { select: sel, modifiers: m, enable: en }));
        }

        #[test]
        fn every_valid_register_value_round_trips(raw: u64) {
            // decode then encode gives back the same bits, for every value without reserved bits.
            if let Ok(d) = decode_intel_perfevtsel(raw) {
                prop_assert_eq!(intel_perfevtsel(&d.select, &d.modifiers, d.enable), Ok(raw));
            }
            if let Ok(d) = decode_amd_perf_ctl(raw) {
                prop_assert_eq!(amd_perf_ctl(&d.select, &d.modifiers, d.enable), Ok(raw));
            }
            let intel_valid = raw & !(INTEL_VALID_BITS & !bits::PIN_CONTROL);
            let masked = raw & !intel_valid;
            prop_assert!(decode_intel_perfevtsel(masked).is_ok());
        }

        #[test]
        fn fixed_field_round_trip(field in 0u8..16, index in 0u8..16) {
            let ctl = FixedCtrl::from_bits(field).unwrap();
            prop_assert_eq!(ctl.bits(), field);
            let reg = ctl.register_bits(index).unwrap();
            prop_assert_eq!(FixedCtrl::from_register(reg, index).unwrap(), ctl);
        }
    }
}

//! The compact event table the kernel reads from the ramdisk.
//!
//! The host imports Intel's perfmon JSON (module `perfmon`, feature `std`) and writes the result
//! in this binary form; the kernel only reads it back, so it never parses JSON. The format is
//! small, versioned and little-endian, and [`EventTable::from_bytes`] validates every byte: any
//! input either decodes to a table that re-encodes to the same events or is an error, never a
//! panic.
//!
//! # Layout (version 1, all integers little-endian)
//!
//! | offset | size | header field                                                       |
//! |--------|------|--------------------------------------------------------------------|
//! | 0      | 8    | magic `b"BMEVTAB1"`                                                 |
//! | 8      | 2    | format version (1)                                                  |
//! | 10     | 2    | header length (48)                                                  |
//! | 12     | 2    | record length (56)                                                  |
//! | 14     | 2    | flags: bit 0 CPU model present, bit 1 stepping present, bit 2 core type present |
//! | 16     | 1    | vendor (0 Intel, 1 AMD)                                             |
//! | 17     | 1    | core type as CPUID 0x1A EAX\[31:24\] reports it (0x20 Atom, 0x40 Core) |
//! | 18     | 2    | reserved, 0                                                         |
//! | 20     | 4    | family                                                              |
//! | 24     | 4    | model                                                               |
//! | 28     | 4    | stepping                                                            |
//! | 32     | 4    | number of event records N                                           |
//! | 36     | 4    | string pool length P                                                |
//! | 40     | 8    | reserved, 0                                                         |
//!
//! Then N records of 56 bytes, then the string pool of P bytes (UTF-8 names and descriptions,
//! not NUL-terminated). The file is exactly `48 + 56 * N + P` bytes long.
//!
//! | offset | size | record field                                                        |
//! |--------|------|---------------------------------------------------------------------|
//! | 0      | 4    | name offset in the pool                                             |
//! | 4      | 2    | name length (1..=65535)                                             |
//! | 6      | 2    | flags (below)                                                       |
//! | 8      | 2    | event code                                                          |
//! | 10     | 1    | umask                                                               |
//! | 11     | 1    | umask2 (perfmon "UMaskExt")                                         |
//! | 12     | 1    | cmask                                                               |
//! | 13     | 1    | fixed counter index (< 32)                                          |
//! | 14     | 1    | architectural event bit (< 32)                                      |
//! | 15     | 1    | source: 0 generic, 1 architectural, 2 built-in, 3 raw, 4 perfmon    |
//! | 16     | 4    | GP counter mask                                                     |
//! | 20     | 4    | extra MSR address                                                   |
//! | 24     | 8    | extra MSR value                                                     |
//! | 32     | 2    | alternative event code                                              |
//! | 34     | 2    | reserved, 0                                                         |
//! | 36     | 4    | alternative extra MSR address                                       |
//! | 40     | 8    | alternative extra MSR value                                         |
//! | 48     | 4    | description offset in the pool                                      |
//! | 52     | 4    | description length                                                  |
//!
//! Record flags: bit 0 inv, 1 edge, 2 any_thread, 3 in_tx, 4 in_txcp, 5 taken_alone,
//! 6 deprecated, 7 GP counter mask present, 8 fixed counter present, 9 extra MSR present,
//! 10 alternative encoding present, 11 architectural bit present, 12 description present.
//! Bits 13-15 are reserved.
//!
//! Canonical form: reserved bits and bytes are 0, and a field whose "present" flag is clear is 0
//! (the reader rejects anything else, so a corrupted flag cannot silently revive stale bytes).
//! Names are unique under ASCII case folding (perfmon names are matched case-insensitively).
//! Descriptions are optional: [`EventTable::to_bytes_without_descriptions`] drops them to keep
//! the ramdisk small.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;

use crate::cpu::{CpuModel, Vendor};
use crate::event::{EventDesc, EventSelect, ExtraMsr, NamedEvents, Source};
use crate::pmu::CoreType;

/// The first eight bytes of every table.
pub const MAGIC: [u8; 8] = *b"BMEVTAB1";
/// The layout version this code reads and writes.
pub const VERSION: u16 = 1;
/// Header length in version 1.
pub const HEADER_LEN: usize = 48;
/// Record length in version 1.
pub const RECORD_LEN: usize = 56;

const HDR_CPU: u16 = 1 << 0;
const HDR_STEPPING: u16 = 1 << 1;
const HDR_CORE_TYPE: u16 = 1 << 2;
const HDR_KNOWN: u16 = HDR_CPU | HDR_STEPPING | HDR_CORE_TYPE;

const F_INV: u16 = 1 << 0;
const F_EDGE: u16 = 1 << 1;
const F_ANY_THREAD: u16 = 1 << 2;
const F_IN_TX: u16 = 1 << 3;
const F_IN_TXCP: u16 = 1 << 4;
const F_TAKEN_ALONE: u16 = 1 << 5;
const F_DEPRECATED: u16 = 1 << 6;
const F_GP: u16 = 1 << 7;
const F_FIXED: u16 = 1 << 8;
const F_EXTRA: u16 = 1 << 9;
const F_ALT: u16 = 1 << 10;
const F_ARCH_BIT: u16 = 1 << 11;
const F_DESCRIPTION: u16 = 1 << 12;
const F_KNOWN: u16 = (1 << 13) - 1;

/// Why a table cannot be built or read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableError {
    /// The data does not start with [`MAGIC`].
    BadMagic,
    /// A layout version this code does not read.
    UnsupportedVersion(u16),
    /// The data ends before `needed` bytes.
    Truncated { needed: u64, have: u64 },
    /// Bytes after the string pool.
    TrailingBytes { expected: u64, have: u64 },
    /// A header field holds a value the format does not allow.
    Header { field: &'static str, value: u64 },
    /// Event record `index` (and its name, when known) is invalid.
    Event {
        index: usize,
        name: Option<String>,
        field: &'static str,
        reason: &'static str,
    },
    /// A string of record `index` lies outside the string pool.
    StringOutOfBounds {
        index: usize,
        field: &'static str,
        offset: u32,
        len: u32,
        pool_len: u32,
    },
    /// A string of record `index` is not UTF-8.
    InvalidUtf8 { index: usize, field: &'static str },
    /// Two events have the same name (ignoring ASCII case).
    DuplicateName { first: String, second: String },
    /// More events or string bytes than the 32-bit counts and offsets can address.
    TooLarge { what: &'static str },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::BadMagic => write!(f, "not an event table (magic is not BMEVTAB1)"),
            TableError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "event table version {v} is not supported (this reads {VERSION})"
                )
            }
            TableError::Truncated { needed, have } => {
                write!(f, "event table truncated: needs {needed} bytes, has {have}")
            }
            TableError::TrailingBytes { expected, have } => write!(
                f,
                "event table has trailing bytes: expected {expected} bytes, has {have}"
            ),
            TableError::Header { field, value } => {
                write!(f, "event table header: {field} = {value:#x} is invalid")
            }
            TableError::Event {
                index,
                name,
                field,
                reason,
            } => {
                write!(f, "event #{index}")?;
                if let Some(n) = name {
                    write!(f, " ({n})")?;
                }
                write!(f, ": {field}: {reason}")
            }
            TableError::StringOutOfBounds {
                index,
                field,
                offset,
                len,
                pool_len,
            } => write!(
                f,
                "event #{index}: {field} at {offset}+{len} lies outside the {pool_len}-byte string pool"
            ),
            TableError::InvalidUtf8 { index, field } => {
                write!(f, "event #{index}: {field} is not valid UTF-8")
            }
            TableError::DuplicateName { first, second } => {
                write!(f, "duplicate event name: {first} and {second}")
            }
            TableError::TooLarge { what } => write!(f, "event table too large: {what}"),
        }
    }
}

/// A set of named events for one CPU model (and core type, on hybrid parts), looked up by name
/// case-insensitively.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventTable {
    cpu: Option<CpuModel>,
    core_type: Option<CoreType>,
    events: Vec<EventDesc>,
    /// Indices into `events`, sorted by ASCII-lowercased name (derived from `events`).
    index: Vec<u32>,
}

/// Compares two names ignoring ASCII case, without allocating.
fn cmp_ignore_case(a: &str, b: &str) -> Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

/// Checks what the binary format cannot hold or forbids; shared by the builder and the reader
/// so every table that can be built can be written and read back.
pub(crate) fn check_event(e: &EventDesc) -> Result<(), (&'static str, &'static str)> {
    if e.name.is_empty() {
        return Err(("name", "empty"));
    }
    if e.name.len() > usize::from(u16::MAX) {
        return Err(("name", "longer than 65535 bytes"));
    }
    if e.fixed.is_some_and(|i| i >= 32) {
        return Err(("fixed", "fixed counter index beyond 31"));
    }
    if e.arch_bit.is_some_and(|b| b >= 32) {
        return Err(("arch_bit", "architectural event bit beyond 31"));
    }
    if e.description
        .as_ref()
        .is_some_and(|d| u32::try_from(d.len()).is_err())
    {
        return Err(("description", "longer than 4 GiB"));
    }
    Ok(())
}

impl EventTable {
    /// A table of `events`, for no particular CPU. Fails on an empty or over-long name, a fixed
    /// counter or architectural bit beyond 31, or two names equal but for ASCII case.
    pub fn new(events: Vec<EventDesc>) -> Result<EventTable, TableError> {
        if u32::try_from(events.len()).is_err() {
            return Err(TableError::TooLarge {
                what: "more than 2^32 events",
            });
        }
        let mut pool: u64 = 0;
        for (index, e) in events.iter().enumerate() {
            check_event(e).map_err(|(field, reason)| TableError::Event {
                index,
                name: Some(e.name.clone()),
                field,
                reason,
            })?;
            pool += e.name.len() as u64 + e.description.as_ref().map_or(0, |d| d.len() as u64);
        }
        if pool > u64::from(u32::MAX) {
            return Err(TableError::TooLarge {
                what: "names and descriptions exceed 4 GiB",
            });
        }
        // Fits: the length was checked against u32 above.
        let mut index: Vec<u32> = (0..events.len() as u32).collect();
        index.sort_by(|&a, &b| cmp_ignore_case(&events[a as usize].name, &events[b as usize].name));
        for w in index.windows(2) {
            let (a, b) = (&events[w[0] as usize], &events[w[1] as usize]);
            if cmp_ignore_case(&a.name, &b.name) == Ordering::Equal {
                // Report them in table order.
                let (first, second) = if w[0] < w[1] { (a, b) } else { (b, a) };
                return Err(TableError::DuplicateName {
                    first: first.name.clone(),
                    second: second.name.clone(),
                });
            }
        }
        Ok(EventTable {
            cpu: None,
            core_type: None,
            events,
            index,
        })
    }

    /// Records which CPU model and core type the table describes.
    pub fn with_target(mut self, cpu: Option<CpuModel>, core_type: Option<CoreType>) -> Self {
        self.cpu = cpu;
        self.core_type = core_type;
        self
    }

    /// The CPU model the table is for, if recorded.
    pub fn cpu(&self) -> Option<CpuModel> {
        self.cpu
    }

    /// The core type the table is for (hybrid parts), if recorded.
    pub fn core_type(&self) -> Option<CoreType> {
        self.core_type
    }

    /// Every event, in table order.
    pub fn events(&self) -> &[EventDesc] {
        &self.events
    }

    /// The events, in table order.
    pub fn into_events(self) -> Vec<EventDesc> {
        self.events
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The event called `name`, ignoring ASCII case.
    pub fn get(&self, name: &str) -> Option<&EventDesc> {
        let pos = self
            .index
            .binary_search_by(|&i| cmp_ignore_case(&self.events[i as usize].name, name))
            .ok()?;
        self.events.get(self.index[pos] as usize)
    }

    /// The table in the binary format, with descriptions.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.write(true)
    }

    /// The table in the binary format, without descriptions (what the kernel needs).
    pub fn to_bytes_without_descriptions(&self) -> Vec<u8> {
        self.write(false)
    }

    fn write(&self, descriptions: bool) -> Vec<u8> {
        // Sizes were checked to fit u32 when the table was built, so the casts below are exact.
        let mut pool: Vec<u8> = Vec::new();
        let mut records: Vec<u8> = Vec::with_capacity(self.events.len() * RECORD_LEN);
        for e in &self.events {
            let name_off = pool.len() as u32;
            pool.extend_from_slice(e.name.as_bytes());
            let desc = e.description.as_ref().filter(|_| descriptions);
            let (desc_off, desc_len) = match desc {
                Some(d) => {
                    let off = pool.len() as u32;
                    pool.extend_from_slice(d.as_bytes());
                    (off, d.len() as u32)
                }
                None => (0, 0),
            };
            let s = &e.select;
            let mut flags = 0u16;
            for (on, bit) in [
                (s.inv, F_INV),
                (s.edge, F_EDGE),
                (s.any_thread, F_ANY_THREAD),
                (s.in_tx, F_IN_TX),
                (s.in_txcp, F_IN_TXCP),
                (e.taken_alone, F_TAKEN_ALONE),
                (e.deprecated, F_DEPRECATED),
                (e.gp_counters.is_some(), F_GP),
                (e.fixed.is_some(), F_FIXED),
                (e.extra.is_some(), F_EXTRA),
                (e.alt.is_some(), F_ALT),
                (e.arch_bit.is_some(), F_ARCH_BIT),
                (desc.is_some(), F_DESCRIPTION),
            ] {
                if on {
                    flags |= bit;
                }
            }
            let extra = e.extra.unwrap_or(ExtraMsr { msr: 0, value: 0 });
            let (alt_code, alt) = e.alt.unwrap_or((0, ExtraMsr { msr: 0, value: 0 }));
            let r = &mut records;
            r.extend_from_slice(&name_off.to_le_bytes());
            r.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
            r.extend_from_slice(&flags.to_le_bytes());
            r.extend_from_slice(&s.code.to_le_bytes());
            r.extend_from_slice(&[
                s.umask,
                s.umask2,
                s.cmask,
                e.fixed.unwrap_or(0),
                e.arch_bit.unwrap_or(0),
                source_code(e.source),
            ]);
            r.extend_from_slice(&e.gp_counters.unwrap_or(0).to_le_bytes());
            r.extend_from_slice(&extra.msr.to_le_bytes());
            r.extend_from_slice(&extra.value.to_le_bytes());
            r.extend_from_slice(&alt_code.to_le_bytes());
            r.extend_from_slice(&[0, 0]);
            r.extend_from_slice(&alt.msr.to_le_bytes());
            r.extend_from_slice(&alt.value.to_le_bytes());
            r.extend_from_slice(&desc_off.to_le_bytes());
            r.extend_from_slice(&desc_len.to_le_bytes());
        }

        let mut flags = 0u16;
        let (mut vendor, mut family, mut model, mut stepping) = (0u8, 0u32, 0u32, 0u32);
        if let Some(cpu) = self.cpu {
            flags |= HDR_CPU;
            vendor = vendor_code(cpu.vendor);
            family = cpu.family;
            model = cpu.model;
            if let Some(s) = cpu.stepping {
                flags |= HDR_STEPPING;
                stepping = s;
            }
        }
        let core_type = match self.core_type {
            Some(ct) => {
                flags |= HDR_CORE_TYPE;
                core_type_code(ct)
            }
            None => 0,
        };
        let mut out = Vec::with_capacity(HEADER_LEN + records.len() + pool.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        out.extend_from_slice(&(RECORD_LEN as u16).to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&[vendor, core_type, 0, 0]);
        out.extend_from_slice(&family.to_le_bytes());
        out.extend_from_slice(&model.to_le_bytes());
        out.extend_from_slice(&stepping.to_le_bytes());
        out.extend_from_slice(&(self.events.len() as u32).to_le_bytes());
        out.extend_from_slice(&(pool.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&records);
        out.extend_from_slice(&pool);
        out
    }

    /// Reads a table written by [`EventTable::to_bytes`], checking every field.
    pub fn from_bytes(data: &[u8]) -> Result<EventTable, TableError> {
        let have = data.len() as u64;
        let header = data.get(..HEADER_LEN).ok_or(TableError::Truncated {
            needed: HEADER_LEN as u64,
            have,
        })?;
        if header[..8] != MAGIC {
            return Err(TableError::BadMagic);
        }
        let h = Reader(header);
        let version = h.u16(8);
        if version != VERSION {
            return Err(TableError::UnsupportedVersion(version));
        }
        let bad = |field: &'static str, value: u64| Err(TableError::Header { field, value });
        let header_len = h.u16(10);
        if usize::from(header_len) != HEADER_LEN {
            return bad("header length", header_len.into());
        }
        let record_len = h.u16(12);
        if usize::from(record_len) != RECORD_LEN {
            return bad("record length", record_len.into());
        }
        let flags = h.u16(14);
        if flags & !HDR_KNOWN != 0 || (flags & HDR_STEPPING != 0 && flags & HDR_CPU == 0) {
            return bad("flags", flags.into());
        }
        let (vendor, core_type) = (h.u8(16), h.u8(17));
        let (family, model, stepping) = (h.u32(20), h.u32(24), h.u32(28));
        if h.u16(18) != 0 {
            return bad("reserved (18)", h.u16(18).into());
        }
        if h.u64(40) != 0 {
            return bad("reserved (40)", h.u64(40));
        }
        let cpu = if flags & HDR_CPU != 0 {
            let Some(vendor) = vendor_from_code(vendor) else {
                return bad("vendor", vendor.into());
            };
            let stepping = (flags & HDR_STEPPING != 0).then_some(stepping);
            if stepping.is_none() && h.u32(28) != 0 {
                return bad("stepping (absent)", h.u32(28).into());
            }
            Some(CpuModel {
                vendor,
                family,
                model,
                stepping,
            })
        } else {
            for (field, value) in [
                ("vendor (absent)", u64::from(vendor)),
                ("family (absent)", family.into()),
                ("model (absent)", model.into()),
                ("stepping (absent)", stepping.into()),
            ] {
                if value != 0 {
                    return bad(field, value);
                }
            }
            None
        };
        let core_type = if flags & HDR_CORE_TYPE != 0 {
            match CoreType::from_cpuid(core_type) {
                Some(ct) => Some(ct),
                None => return bad("core type", core_type.into()),
            }
        } else if core_type != 0 {
            return bad("core type (absent)", core_type.into());
        } else {
            None
        };

        let count = h.u32(32);
        let pool_len = h.u32(36);
        let records_end = HEADER_LEN as u64 + u64::from(count) * RECORD_LEN as u64;
        let total = records_end + u64::from(pool_len);
        if have < total {
            return Err(TableError::Truncated {
                needed: total,
                have,
            });
        }
        if have > total {
            return Err(TableError::TrailingBytes {
                expected: total,
                have,
            });
        }
        // Both fit: they are at most data.len().
        let records = &data[HEADER_LEN..records_end as usize];
        let pool = &data[records_end as usize..];

        let mut events = Vec::new();
        for (index, raw) in records.as_chunks::<RECORD_LEN>().0.iter().enumerate() {
            events.push(read_record(index, Reader(raw), pool)?);
        }
        let table = EventTable::new(events)?;
        Ok(table.with_target(cpu, core_type))
    }
}

fn read_record(index: usize, r: Reader<'_>, pool: &[u8]) -> Result<EventDesc, TableError> {
    let invalid = |name: Option<&str>, field, reason| TableError::Event {
        index,
        name: name.map(String::from),
        field,
        reason,
    };
    let string = |field: &'static str, offset: u32, len: u32| -> Result<String, TableError> {
        let out_of_bounds = TableError::StringOutOfBounds {
            index,
            field,
            offset,
            len,
            pool_len: pool.len() as u32,
        };
        let end = u64::from(offset) + u64::from(len);
        if end > pool.len() as u64 {
            return Err(out_of_bounds);
        }
        let bytes = &pool[offset as usize..end as usize];
        core::str::from_utf8(bytes)
            .map(String::from)
            .map_err(|_| TableError::InvalidUtf8 { index, field })
    };

    let flags = r.u16(6);
    let name = string("name", r.u32(0), r.u16(4).into())?;
    let n = Some(name.as_str());
    if flags & !F_KNOWN != 0 {
        return Err(invalid(n, "flags", "unknown flag bits set"));
    }
    if r.u16(34) != 0 {
        return Err(invalid(n, "reserved", "reserved bytes not zero"));
    }
    let has = |bit: u16| flags & bit != 0;
    // A field whose flag is clear must be zero (canonical form).
    let optional = |bit: u16, field: &'static str, zero: bool| {
        if !has(bit) && !zero {
            Err(invalid(n, field, "set although its present flag is clear"))
        } else {
            Ok(has(bit))
        }
    };
    let gp = optional(F_GP, "gp_counters", r.u32(16) == 0)?.then(|| r.u32(16));
    let fixed = optional(F_FIXED, "fixed", r.u8(13) == 0)?.then(|| r.u8(13));
    let arch_bit = optional(F_ARCH_BIT, "arch_bit", r.u8(14) == 0)?.then(|| r.u8(14));
    let extra = optional(F_EXTRA, "extra", r.u32(20) == 0 && r.u64(24) == 0)?.then(|| ExtraMsr {
        msr: r.u32(20),
        value: r.u64(24),
    });
    let alt = optional(
        F_ALT,
        "alt",
        r.u16(32) == 0 && r.u32(36) == 0 && r.u64(40) == 0,
    )?
    .then(|| {
        (
            r.u16(32),
            ExtraMsr {
                msr: r.u32(36),
                value: r.u64(40),
            },
        )
    });
    let description = if optional(
        F_DESCRIPTION,
        "description",
        r.u32(48) == 0 && r.u32(52) == 0,
    )? {
        Some(string("description", r.u32(48), r.u32(52))?)
    } else {
        None
    };
    let Some(source) = source_from_code(r.u8(15)) else {
        return Err(invalid(n, "source", "unknown source"));
    };
    let e = EventDesc {
        select: EventSelect {
            code: r.u16(8),
            umask: r.u8(10),
            umask2: r.u8(11),
            cmask: r.u8(12),
            inv: has(F_INV),
            edge: has(F_EDGE),
            any_thread: has(F_ANY_THREAD),
            in_tx: has(F_IN_TX),
            in_txcp: has(F_IN_TXCP),
        },
        gp_counters: gp,
        fixed,
        taken_alone: has(F_TAKEN_ALONE),
        extra,
        alt,
        arch_bit,
        source,
        description,
        deprecated: has(F_DEPRECATED),
        name,
    };
    check_event(&e).map_err(|(field, reason)| invalid(Some(&e.name), field, reason))?;
    Ok(e)
}

/// Little-endian reads at fixed offsets of a slice whose length the caller has checked.
#[derive(Clone, Copy)]
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut b = [0; N];
        // Offsets are constants within HEADER_LEN / RECORD_LEN; a short slice reads as zeros
        // rather than panicking.
        if let Some(s) = self.0.get(at..at + N) {
            b.copy_from_slice(s);
        }
        b
    }
    fn u8(&self, at: usize) -> u8 {
        self.bytes::<1>(at)[0]
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.bytes(at))
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.bytes(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.bytes(at))
    }
}

fn source_code(s: Source) -> u8 {
    match s {
        Source::Generic => 0,
        Source::Architectural => 1,
        Source::BuiltIn => 2,
        Source::Raw => 3,
        Source::Perfmon => 4,
    }
}

fn source_from_code(c: u8) -> Option<Source> {
    Some(match c {
        0 => Source::Generic,
        1 => Source::Architectural,
        2 => Source::BuiltIn,
        3 => Source::Raw,
        4 => Source::Perfmon,
        _ => return None,
    })
}

fn vendor_code(v: Vendor) -> u8 {
    match v {
        Vendor::Intel => 0,
        Vendor::Amd => 1,
    }
}

fn vendor_from_code(c: u8) -> Option<Vendor> {
    match c {
        0 => Some(Vendor::Intel),
        1 => Some(Vendor::Amd),
        _ => None,
    }
}

fn core_type_code(ct: CoreType) -> u8 {
    match ct {
        CoreType::Atom => 0x20,
        CoreType::Core => 0x40,
    }
}

impl NamedEvents for EventTable {
    fn event(&self, name: &str) -> Option<EventDesc> {
        self.get(name).cloned()
    }

    fn all(&self) -> Vec<EventDesc> {
        self.events.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec;
    use proptest::prelude::*;

    fn sample() -> EventTable {
        let mut offcore = EventDesc::gp(
            "OCR.DEMAND_DATA_RD.ANY_RESPONSE",
            EventSelect::new(0xb7, 0x01),
            Source::Perfmon,
        );
        offcore.gp_counters = Some(0b1111);
        offcore.extra = Some(ExtraMsr {
            msr: 0x1a6,
            value: 0x10001,
        });
        offcore.alt = Some((
            0xbb,
            ExtraMsr {
                msr: 0x1a7,
                value: 0x10001,
            },
        ));
        let mut fixed = EventDesc::gp("INST_RETIRED.ANY", EventSelect::new(0, 1), Source::Perfmon)
            .with_fixed(0)
            .describe("Instructions retired");
        fixed.gp_counters = None;
        let mut mc = EventDesc::gp(
            "MACHINE_CLEARS.COUNT",
            EventSelect {
                cmask: 1,
                edge: true,
                ..EventSelect::new(0xc3, 0x01)
            },
            Source::Perfmon,
        );
        mc.deprecated = true;
        mc.taken_alone = true;
        let mut arch = EventDesc::gp(
            "instructions-retired",
            EventSelect {
                umask2: 0x03,
                inv: true,
                any_thread: true,
                in_tx: true,
                in_txcp: true,
                ..EventSelect::new(0xc0, 0)
            },
            Source::Architectural,
        )
        .describe("ünïcode description");
        arch.arch_bit = Some(1);
        EventTable::new(vec![offcore, fixed, mc, arch])
            .unwrap()
            .with_target(
                Some(CpuModel::parse("GenuineIntel-6-55-4").unwrap()),
                Some(CoreType::Core),
            )
    }

    #[test]
    fn round_trip() {
        let t = sample();
        let bytes = t.to_bytes();
        assert_eq!(&bytes[..8], b"BMEVTAB1");
        assert_eq!(
            bytes.len(),
            HEADER_LEN
                + 4 * RECORD_LEN
                + t.events.iter().map(|e| e.name.len()).sum::<usize>()
                + "Instructions retired".len()
                + "ünïcode description".len()
        );
        assert_eq!(EventTable::from_bytes(&bytes), Ok(t.clone()));
        // A table for no CPU round-trips too.
        let bare = EventTable::new(t.events.clone()).unwrap();
        assert_eq!(EventTable::from_bytes(&bare.to_bytes()), Ok(bare));
    }

    #[test]
    fn descriptions_can_be_left_out() {
        let t = sample();
        let compact = t.to_bytes_without_descriptions();
        assert!(compact.len() < t.to_bytes().len());
        let back = EventTable::from_bytes(&compact).unwrap();
        assert!(back.events().iter().all(|e| e.description.is_none()));
        let mut expected = t.events.clone();
        for e in &mut expected {
            e.description = None;
        }
        assert_eq!(back.events(), &expected[..]);
        assert_eq!(back.cpu(), t.cpu());
        assert_eq!(back.core_type(), Some(CoreType::Core));
    }

    #[test]
    fn lookup_ignores_case() {
        let t = sample();
        assert_eq!(
            t.get("machine_clears.count").map(|e| e.select.code),
            Some(0xc3)
        );
        assert_eq!(
            t.event("Ocr.Demand_Data_Rd.Any_Response")
                .unwrap()
                .select
                .code,
            0xb7
        );
        assert!(t.get("MACHINE_CLEARS").is_none());
        assert!(t.get("").is_none());
        assert_eq!(t.all().len(), 4);
        assert_eq!(
            t.all()[0].name,
            "OCR.DEMAND_DATA_RD.ANY_RESPONSE",
            "table order"
        );
    }

    #[test]
    fn builder_rejects_what_the_format_cannot_hold() {
        let e = |name: &str| EventDesc::gp(name, EventSelect::new(1, 2), Source::Perfmon);
        assert_eq!(
            EventTable::new(vec![e("A.B"), e("x"), e("a.b")]),
            Err(TableError::DuplicateName {
                first: "A.B".to_string(),
                second: "a.b".to_string()
            })
        );
        assert!(matches!(
            EventTable::new(vec![e("")]),
            Err(TableError::Event { field: "name", .. })
        ));
        assert!(matches!(
            EventTable::new(vec![e("x").with_fixed(32)]),
            Err(TableError::Event { field: "fixed", .. })
        ));
        let long = "x".repeat(65536);
        assert!(matches!(
            EventTable::new(vec![e(&long)]),
            Err(TableError::Event { field: "name", .. })
        ));
    }

    fn put(b: &mut [u8], at: usize, v: &[u8]) {
        b[at..at + v.len()].copy_from_slice(v);
    }

    #[test]
    fn reader_rejects_bad_input() {
        let t = sample();
        let good = t.to_bytes();
        let rec = |i: usize| HEADER_LEN + i * RECORD_LEN;

        assert!(matches!(
            EventTable::from_bytes(&[]),
            Err(TableError::Truncated {
                needed: 48,
                have: 0
            })
        ));
        let mut b = good.clone();
        b[0] = b'X';
        assert_eq!(EventTable::from_bytes(&b), Err(TableError::BadMagic));
        let mut b = good.clone();
        put(&mut b, 8, &2u16.to_le_bytes());
        assert_eq!(
            EventTable::from_bytes(&b),
            Err(TableError::UnsupportedVersion(2))
        );
        assert!(matches!(
            EventTable::from_bytes(&good[..good.len() - 1]),
            Err(TableError::Truncated { .. })
        ));
        let mut b = good.clone();
        b.push(0);
        assert!(matches!(
            EventTable::from_bytes(&b),
            Err(TableError::TrailingBytes { .. })
        ));
        // Event count far beyond the data.
        let mut b = good.clone();
        put(&mut b, 32, &u32::MAX.to_le_bytes());
        assert!(matches!(
            EventTable::from_bytes(&b),
            Err(TableError::Truncated { .. })
        ));
        // Header fields.
        for (at, value, field) in [
            (10usize, &[49u8, 0][..], "header length"),
            (12, &[57, 0], "record length"),
            (14, &[0x08, 0], "flags"),
            (16, &[7], "vendor"),
            (17, &[0x30], "core type"),
            (18, &[1], "reserved (18)"),
            (47, &[1], "reserved (40)"),
        ] {
            let mut b = good.clone();
            put(&mut b, at, value);
            match EventTable::from_bytes(&b) {
                Err(TableError::Header { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        // Name outside the pool.
        let mut b = good.clone();
        put(&mut b, rec(1), &0xffff_fff0u32.to_le_bytes());
        assert!(matches!(
            EventTable::from_bytes(&b),
            Err(TableError::StringOutOfBounds {
                index: 1,
                field: "name",
                ..
            })
        ));
        // Invalid UTF-8 in a name.
        let mut b = good.clone();
        let pool = HEADER_LEN + 4 * RECORD_LEN;
        b[pool] = 0xff;
        assert_eq!(
            EventTable::from_bytes(&b),
            Err(TableError::InvalidUtf8 {
                index: 0,
                field: "name"
            })
        );
        // Empty name.
        let mut b = good.clone();
        put(&mut b, rec(2) + 4, &0u16.to_le_bytes());
        assert!(matches!(
            EventTable::from_bytes(&b),
            Err(TableError::Event {
                index: 2,
                field: "name",
                ..
            })
        ));
        // Record fields.
        for (at, value, field) in [
            (6usize, &[0x00u8, 0x20][..], "flags"),
            (15, &[9], "source"),
            (34, &[1], "reserved"),
            (13, &[40], "fixed"),
        ] {
            let mut b = good.clone();
            put(&mut b, rec(1) + at, value);
            match EventTable::from_bytes(&b) {
                Err(TableError::Event {
                    field: f, index, ..
                }) => {
                    assert_eq!((f, index), (field, 1))
                }
                other => panic!("{field}: {other:?}"),
            }
        }
        // A value behind a clear flag: record 2 has no extra MSR.
        let mut b = good.clone();
        put(&mut b, rec(2) + 20, &0x1a6u32.to_le_bytes());
        assert!(matches!(
            EventTable::from_bytes(&b),
            Err(TableError::Event { field: "extra", .. })
        ));
        // Duplicate names after renaming record 1 to record 0's name in other case.
        let dup = EventTable::new(vec![
            EventDesc::gp("ab", EventSelect::new(1, 0), Source::Raw),
            EventDesc::gp("cd", EventSelect::new(1, 0), Source::Raw),
        ])
        .unwrap()
        .to_bytes();
        let mut b = dup.clone();
        let pool = HEADER_LEN + 2 * RECORD_LEN;
        put(&mut b, pool + 2, b"AB");
        assert!(matches!(
            EventTable::from_bytes(&b),
            Err(TableError::DuplicateName { .. })
        ));
        // Every error displays something useful.
        assert!(format!("{}", EventTable::from_bytes(&b).unwrap_err()).contains("ab and AB"));
    }

    fn any_event() -> impl Strategy<Value = EventDesc> {
        (
            "[A-Za-z0-9_.]{1,24}",
            (any::<u16>(), any::<u8>(), any::<u8>(), any::<u8>()),
            proptest::collection::vec(any::<bool>(), 7),
            proptest::option::of(any::<u32>()),
            proptest::option::of(0u8..32),
            proptest::option::of((any::<u32>(), any::<u64>())),
            proptest::option::of((any::<u16>(), any::<u32>(), any::<u64>())),
            proptest::option::of(0u8..32),
            0u8..5,
            proptest::option::of(".{0,40}"),
        )
            .prop_map(
                |(name, (code, umask, umask2, cmask), f, gp, fixed, extra, alt, arch, src, d)| {
                    EventDesc {
                        name,
                        select: EventSelect {
                            code,
                            umask,
                            umask2,
                            cmask,
                            inv: f[0],
                            edge: f[1],
                            any_thread: f[2],
                            in_tx: f[3],
                            in_txcp: f[4],
                        },
                        gp_counters: gp,
                        fixed,
                        taken_alone: f[5],
                        extra: extra.map(|(msr, value)| ExtraMsr { msr, value }),
                        alt: alt.map(|(c, msr, value)| (c, ExtraMsr { msr, value })),
                        arch_bit: arch,
                        source: source_from_code(src).unwrap(),
                        description: d,
                        deprecated: f[6],
                    }
                },
            )
    }

    fn any_table() -> impl Strategy<Value = EventTable> {
        (
            proptest::collection::vec(any_event(), 0..12),
            proptest::option::of((
                0u8..2,
                any::<u32>(),
                any::<u32>(),
                proptest::option::of(any::<u32>()),
            )),
            proptest::option::of(any::<bool>()),
        )
            .prop_map(|(mut events, cpu, ct)| {
                // Make names unique under case folding.
                for (i, e) in events.iter_mut().enumerate() {
                    e.name = format!("{}#{i}", e.name);
                }
                let cpu = cpu.map(|(v, family, model, stepping)| CpuModel {
                    vendor: vendor_from_code(v).unwrap(),
                    family,
                    model,
                    stepping,
                });
                let ct = ct.map(|atom| if atom { CoreType::Atom } else { CoreType::Core });
                EventTable::new(events).unwrap().with_target(cpu, ct)
            })
    }

    proptest! {
        #[test]
        fn every_table_round_trips(t in any_table()) {
            let bytes = t.to_bytes();
            prop_assert_eq!(EventTable::from_bytes(&bytes), Ok(t.clone()));
            let compact = EventTable::from_bytes(&t.to_bytes_without_descriptions()).unwrap();
            prop_assert_eq!(compact.len(), t.len());
            for e in t.events() {
                prop_assert_eq!(&t.get(&e.name.to_ascii_uppercase()).unwrap().name, &e.name);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = EventTable::from_bytes(&data);
            // And with a valid magic and version, to get past the first checks.
            let mut d = data.clone();
            if d.len() >= 10 {
                d[..8].copy_from_slice(&MAGIC);
                d[8..10].copy_from_slice(&VERSION.to_le_bytes());
            }
            let _ = EventTable::from_bytes(&d);
        }

        #[test]
        fn corrupted_tables_never_panic_and_decode_consistently(
            t in any_table(),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in any::<usize>(),
        ) {
            let mut bytes = t.to_bytes();
            for (at, v) in edits {
                if !bytes.is_empty() {
                    let i = at % bytes.len();
                    bytes[i] = v;
                }
            }
            if let Ok(back) = EventTable::from_bytes(&bytes) {
                // Whatever decodes re-encodes to the same events.
                prop_assert_eq!(EventTable::from_bytes(&back.to_bytes()), Ok(back));
            }
            let cut = cut % (bytes.len() + 1);
            let _ = EventTable::from_bytes(&bytes[..cut]);
        }
    }
}

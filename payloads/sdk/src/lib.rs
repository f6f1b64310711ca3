//! The baremark payload SDK: what a benchmark payload running in ring 3 uses to talk to the kernel.
//!
//! ```ignore
//! #![cfg_attr(target_os = "none", no_std, no_main)]
//! baremark_sdk::entry!(main);
//! fn main() -> i64 {
//!     baremark_sdk::write("hello from ring 3\n");
//!     baremark_sdk::report("result=42");
//!     0
//! }
//! ```
//!
//! A payload is a static ELF64 executable for `x86_64-unknown-none`, linked at 0x400000 without
//! PIE (see `payloads/hello/build.rs`). The syscall ABI is in docs/syscall-abi.md.
//!
//! The task's virtual TSC (and, later, counters) can be read without a system call:
//! `counters::read_tsc_fast()` and `counters::read_values(&mut [u64])` follow the seqlock protocol
//! of the kernel's counter page (layout in [`page`]); `rdpmc(page::VIRTUAL_TSC_INDEX)` gives the
//! same value through the kernel's RDPMC emulation, and `counters_read` through a syscall.
//!
//! On the host (`cargo test --workspace`) the syscall wrappers do not exist; only the pure parts
//! (error codes, argument packing) build.
#![no_std]

/// Syscall numbers (docs/syscall-abi.md).
pub mod nr {
    pub const EXIT: u64 = 0;
    pub const WRITE: u64 = 1;
    pub const COUNTERS_CONFIGURE: u64 = 2;
    pub const COUNTERS_START: u64 = 3;
    pub const COUNTERS_STOP: u64 = 4;
    pub const COUNTERS_RESET: u64 = 5;
    pub const COUNTERS_READ: u64 = 6;
    pub const YIELD: u64 = 7;
    pub const SPAWN: u64 = 8;
    pub const WAIT: u64 = 9;
    pub const REPORT: u64 = 10;
    pub const TIME: u64 = 11;
    pub const USER_PAGE: u64 = 12;
    pub const READ_WINDOW: u64 = 13;
    /// `read_window` kinds: the virtual TSC reader, the slot reader, the harness region.
    pub const READ_WINDOW_TSC: u64 = 0;
    pub const READ_WINDOW_SLOT: u64 = 1;
    pub const READ_WINDOW_REGION: u64 = 2;
    pub const BENCH_PLAN: u64 = 14;
    pub const BENCH_BEGIN: u64 = 15;
    pub const BENCH_GROUP: u64 = 16;
    pub const BENCH_SAMPLES: u64 = 17;
    pub const BENCH_END: u64 = 18;
    pub const ARGS: u64 = 19;
    pub const COUNTERS_NOTIFY: u64 = 20;
    pub const COUNTERS_THRESHOLD: u64 = 21;
    pub const NOTIFY_RETURN: u64 = 22;
    pub const COUNTERS_READ_SCALED: u64 = 23;
    pub const SYSTEM_CONFIGURE: u64 = 24;
    pub const SYSTEM_READ: u64 = 25;
    pub const THREAD_START: u64 = 26;
    pub const THREAD_JOIN: u64 = 27;
    pub const CPUS: u64 = 28;
}

/// `counters_configure` flag: more GP events than GP counters take turns on the counters
/// (time-multiplexed; docs/syscall-abi.md "Multiplexing").
pub const CONFIGURE_MULTIPLEX: u64 = 1;

/// `system_read` flag: the per-CPU form ([`system_read_cpus`](crate::system_read_cpus)).
pub const SYSTEM_READ_PER_CPU: u64 = 1;

/// One event of [`counters_read_scaled`](crate::counters_read_scaled): what it counted while on
/// a counter, and for how long of the time it was enabled (virtual TSC ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scaled {
    pub raw: u64,
    pub enabled: u64,
    pub running: u64,
}

impl Scaled {
    /// perf's estimate of the full count, `raw * enabled / running`; `None` if it never ran.
    pub fn estimate(&self) -> Option<u64> {
        if self.running == 0 {
            return None;
        }
        let v = u128::from(self.raw) * u128::from(self.enabled) / u128::from(self.running);
        Some(u64::try_from(v).unwrap_or(u64::MAX))
    }
}

/// A syscall error (the negative result codes of docs/syscall-abi.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Invalid,
    Fault,
    NoSys,
    NoEnt,
    Busy,
    NoSpace,
    /// `ECOUNTERS`: the task's hardware counts were lost (a PMU error switching its counters;
    /// `counters_configure` or `counters_reset` starts them again).
    Counters,
    /// `ENOMEM`: `spawn`: not enough free memory for the child.
    NoMem,
    /// `ELIMIT`: `spawn`: a limit of the caller's family is reached for good (its depth, or the
    /// tasks it may start).
    Limit,
    /// `ENODEV`: counters were asked for on a machine without programmable counters.
    NoDev,
    /// `EPERM`: the run configuration does not let this payload program counters.
    Perm,
    Other(i64),
}

impl Error {
    /// Turns a raw syscall result into `Ok(value)` or the error.
    pub fn check(raw: i64) -> Result<u64, Error> {
        match raw {
            r if r >= 0 => Ok(r as u64),
            -1 => Err(Error::Invalid),
            -2 => Err(Error::Fault),
            -3 => Err(Error::NoSys),
            -4 => Err(Error::NoEnt),
            -5 => Err(Error::Busy),
            -6 => Err(Error::NoSpace),
            ECOUNTERS => Err(Error::Counters),
            ENOMEM => Err(Error::NoMem),
            ELIMIT => Err(Error::Limit),
            ENODEV => Err(Error::NoDev),
            EPERM => Err(Error::Perm),
            r => Err(Error::Other(r)),
        }
    }
}

/// The layout of the read-only counter page (the `user_page` syscall returns its address).
///
/// Copied from the kernel's `kernel/src/task/user_page.rs` (layout version 1), which is the
/// reference; the SDK does not depend on the kernel crate. A host test
/// (`tests/tests/payloads.rs`) checks that these constants agree with the kernel's structs.
pub mod page {
    /// `magic`: the bytes "BMVC".
    pub const MAGIC: u32 = u32::from_le_bytes(*b"BMVC");
    /// The layout version this SDK reads.
    pub const VERSION: u32 = 1;
    /// Offsets of the header fields.
    pub const MAGIC_OFFSET: usize = 0;
    pub const VERSION_OFFSET: usize = 4;
    pub const SEQ_OFFSET: usize = 8;
    pub const GENERATION_OFFSET: usize = 16;
    pub const NR_SLOTS_OFFSET: usize = 24;
    pub const SIZE_OFFSET: usize = 28;
    /// The virtual TSC's slot.
    pub const TSC_OFFSET: usize = 32;
    /// Counter slot 0; slot `i` is at `SLOTS_OFFSET + i * SLOT_SIZE`.
    pub const SLOTS_OFFSET: usize = 64;
    /// Counter slots on the page.
    pub const MAX_SLOTS: usize = 16;
    /// Interrupts the task took while it ran (u64).
    pub const INTERRUPTS_OFFSET: usize = 576;
    /// The retry-free virtual TSC read: `(rdtsc & tsc_mask) + tsc_offset` (u64 each).
    pub const TSC_ADD_OFFSET: usize = 584;
    pub const TSC_MASK_OFFSET: usize = 592;
    /// The size of the page structure.
    pub const SIZE: usize = 600;
    /// One slot: size and field offsets.
    pub const SLOT_SIZE: usize = 32;
    pub const SLOT_INDEX_OFFSET: usize = 0;
    pub const SLOT_WIDTH_OFFSET: usize = 4;
    pub const SLOT_BASE_OFFSET: usize = 8;
    pub const SLOT_START_OFFSET: usize = 16;
    /// `2^width - 1` (u64): the retry-free slot reader's mask.
    pub const SLOT_MASK_OFFSET: usize = 24;

    /// The RDPMC index (ECX) the kernel's emulation answers with the task's virtual TSC
    /// (docs/syscall-abi.md).
    pub const VIRTUAL_TSC_INDEX: u32 = 0x1000_0000;

    /// The events between two raw readings of a `width`-bit counter (the kernel's
    /// `task::vcounter::widen`).
    pub fn widen(prev: u64, now: u64, width: u32) -> u64 {
        if width == 0 {
            return 0;
        }
        let shift = 64 - width.min(64);
        (now << shift).wrapping_sub(prev << shift) >> shift
    }
}

/// `counters_configure` entry flag: the entry is Intel fixed counter `n` (`fixed_entry`).
pub const FIXED_ENTRY: u64 = 1 << 63;

/// The `counters_configure` entry for Intel fixed counter `n`, counting in ring 3 (`usr`)
/// and/or ring 0 (`os`).
pub const fn fixed_entry(n: u8, usr: bool, os: bool) -> u64 {
    FIXED_ENTRY | n as u64 | if usr { 1 << 16 } else { 0 } | if os { 1 << 17 } else { 0 }
}

/// `counters_read`'s error when the task's hardware counts were lost ([`Error::Counters`]).
pub const ECOUNTERS: i64 = -8;
/// `spawn`'s error when there is not enough free memory for the child ([`Error::NoMem`]).
pub const ENOMEM: i64 = -9;
/// `spawn`'s error when a limit of the caller's family is reached ([`Error::Limit`]).
pub const ELIMIT: i64 = -10;
/// Counters asked for on a machine without programmable counters ([`Error::NoDev`]).
pub const ENODEV: i64 = -11;
/// The run configuration does not let this payload program counters ([`Error::Perm`]).
pub const EPERM: i64 = -12;

/// `time`'s return value when the kernel does not know the TSC frequency.
pub const TIME_HZ_UNKNOWN: u64 = 1;

/// The most text one `report` may carry, in bytes (the kernel's limit, docs/syscall-abi.md).
pub const REPORT_MAX: usize = 1024;

/// Why [`report_fmt`](crate::report_fmt) sent no report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFmtError {
    /// The formatted text is longer than [`REPORT_MAX`] bytes: nothing was sent.
    TooLong,
    /// The kernel refused the report.
    Refused(Error),
}

pub mod bench;
#[cfg(target_os = "none")]
mod sys;
#[cfg(target_os = "none")]
pub mod thread;
#[cfg(target_os = "none")]
pub use sys::*;

/// The `main` of a payload binary built for the host, where it cannot run (payloads run in ring
/// 3 under the baremark kernel): it says so. One place for every payload crate's host stub.
#[cfg(not(target_os = "none"))]
pub fn host_main() {
    extern crate std;
    std::eprintln!(
        "baremark payloads run in ring 3 under the baremark kernel; build them for \
         x86_64-unknown-none."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_map_to_errors() {
        assert_eq!(Error::check(5), Ok(5));
        assert_eq!(Error::check(0), Ok(0));
        assert_eq!(Error::check(-2), Err(Error::Fault));
        assert_eq!(Error::check(-3), Err(Error::NoSys));
        assert_eq!(Error::check(-9), Err(Error::NoMem));
        assert_eq!(Error::check(-10), Err(Error::Limit));
        assert_eq!(Error::check(-11), Err(Error::NoDev));
        assert_eq!(Error::check(-12), Err(Error::Perm));
        assert_eq!(Error::check(-99), Err(Error::Other(-99)));
    }

    #[test]
    fn widen_wraps_at_the_width() {
        assert_eq!(page::widen(10, 15, 64), 5);
        assert_eq!(page::widen((1 << 48) - 2, 3, 48), 5);
        assert_eq!(page::widen(1, 2, 0), 0);
    }
}

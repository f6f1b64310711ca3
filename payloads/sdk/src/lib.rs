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
            r => Err(Error::Other(r)),
        }
    }
}

#[cfg(target_os = "none")]
mod sys;
#[cfg(target_os = "none")]
pub use sys::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_map_to_errors() {
        assert_eq!(Error::check(5), Ok(5));
        assert_eq!(Error::check(0), Ok(0));
        assert_eq!(Error::check(-2), Err(Error::Fault));
        assert_eq!(Error::check(-3), Err(Error::NoSys));
        assert_eq!(Error::check(-99), Err(Error::Other(-99)));
    }
}

//! The runner of `baremark asm` (docs/asm.md): `_start`, the harness loop and the report; the
//! measured code comes from the host.
//!
//! `baremark asm` assembles the user's instructions (GNU as) into an object that defines the
//! symbols below, and links it with this library (GNU ld) into a payload ELF. The object's
//! layout (the generated source) is `boot/src/asm/source.rs`:
//!
//! - `baremark_asm_params`: [`Params`], the benchmark's name, iterations and report text;
//! - `baremark_asm_setup(arg)`: before every repetition, outside the measured window: loads the
//!   scratch pointers, runs the `--init` code and keeps the registers it leaves;
//! - `baremark_asm_body_1x(n, arg)` / `baremark_asm_body_2x(n, arg)`: the measured code with
//!   `unroll` and `2 * unroll` copies (each in the `--loop`, if any), starting from the registers
//!   the setup kept; `n` is ignored: the copies are fixed at assembly time;
//! - `baremark_asm_one_time_init()`: the `--one-time-init` code, once before the benchmark.
//!
//! Overhead mode `diff` (the default `baremark asm` sets) measures `body_1x` as the region and
//! `body_2x` as its doubled kind, so `2U - U` leaves exactly `unroll * max(loop, 1)` copies.
#![cfg_attr(target_os = "none", no_std)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(runner::main);

/// What the generated object tells the runner (`baremark_asm_params`), version 1.
#[repr(C)]
#[derive(Debug)]
pub struct Params {
    /// [`PARAMS_VERSION`].
    pub version: u64,
    /// Copies of the code in one measured region: `unroll * max(loop, 1)` (>= 1).
    pub iterations: u64,
    pub name: *const u8,
    pub name_len: u64,
    /// `key=value` lines for the `report` record (at most 1024 bytes with the first lines).
    pub report: *const u8,
    pub report_len: u64,
}

/// The layout version of [`Params`] this runner reads.
pub const PARAMS_VERSION: u64 = 1;

#[cfg(target_os = "none")]
mod runner {
    use core::fmt::Write as _;

    use baremark_sdk::bench::{self, Bench, Body, Setup};

    use super::{PARAMS_VERSION, Params};

    unsafe extern "C" {
        static baremark_asm_params: Params;
        fn baremark_asm_setup(arg: u64);
        fn baremark_asm_body_1x(n: u64, arg: u64);
        fn baremark_asm_body_2x(n: u64, arg: u64);
        fn baremark_asm_one_time_init();
    }

    fn fail(what: core::fmt::Arguments<'_>) -> i64 {
        let mut text = baremark_sdk::Buf::<256>::new();
        let _ = write!(text, "error={what}");
        let _ = baremark_sdk::report(text.as_str());
        1
    }

    pub fn main() -> i64 {
        // SAFETY: the generated object defines the symbol as `Params` (read-only data).
        let p = unsafe { &baremark_asm_params };
        if p.version != PARAMS_VERSION {
            return fail(format_args!(
                "the generated code's parameters are version {}, this runner reads {PARAMS_VERSION}",
                p.version
            ));
        }
        // SAFETY: the generated object points these at `len` bytes of its read-only data.
        let (name, report) = unsafe {
            (
                core::slice::from_raw_parts(p.name, p.name_len as usize),
                core::slice::from_raw_parts(p.report, p.report_len as usize),
            )
        };
        let (Ok(name), Ok(report)) = (core::str::from_utf8(name), core::str::from_utf8(report))
        else {
            return fail(format_args!("the generated name or report is not UTF-8"));
        };
        if let Err(e) = baremark_sdk::report(report) {
            return fail(format_args!("report refused: {e:?}"));
        }
        // SAFETY: the generated functions follow the C ABI: each saves the
        // callee-saved registers and RSP before running the user's code on its own stack and
        // scratch memory, and restores them (and clears DF) before returning.
        let (setup, body_1x, body_2x) = unsafe {
            (
                core::mem::transmute::<unsafe extern "C" fn(u64), Setup>(baremark_asm_setup),
                core::mem::transmute::<unsafe extern "C" fn(u64, u64), Body>(baremark_asm_body_1x),
                core::mem::transmute::<unsafe extern "C" fn(u64, u64), Body>(baremark_asm_body_2x),
            )
        };
        // SAFETY: as above.
        unsafe { baremark_asm_one_time_init() };
        let b = Bench::new(name, p.iterations, body_1x)
            .with_body2x(body_2x)
            .with_setup(setup);
        match bench::run(&b) {
            Ok(()) => 0,
            Err(e) => fail(format_args!("bench::run: {e:?}")),
        }
    }
}

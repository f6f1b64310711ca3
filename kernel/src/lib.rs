//! The baremark kernel.
//!
//! This crate holds the kernel's logic and contains no `unsafe`: every hardware access goes
//! through `baremark-hw` (kernel/hw). Modules that only make sense on the machine are compiled
//! for `target_os = "none"`; the rest is plain logic that is unit-tested on the host.
//!
//! The folders are the kernel's subsystems, listed from the top (the boot sequence, which uses
//! everything) to the bottom (the platform, which uses nothing of the kernel). A folder may use
//! only the folders its line in docs/design.md ("The kernel's map") names, all of them below it;
//! `tests/tests/architecture.rs` checks every import against that map.
//!
//! | folder     | what it owns                                                                  |
//! |------------|-------------------------------------------------------------------------------|
//! | `boot`     | the boot sequence, the boot report, the test actions                          |
//! | `config`   | run.cfg, parsed into the settings of the subsystems below                     |
//! | `selftest` | the PMU selftest: the plan (host-tested) and the live checks                  |
//! | `task`     | ring-3 tasks: ELF loading, the syscall ABI, virtual counters, the runner, system mode |
//! | `harness`  | the measurement harness: event plan, statistics, a benchmark's session        |
//! | `traps`    | the handler of every interrupt and exception; fault and panic reports; the end of a run |
//! | `pmu`      | the PMU: discovery, backends, the machine's PMU and its PMI, counter requests |
//! | `output`   | records, the console, the fan-out to the serial port, the screen and the results file |
//! | `devices`  | USB (xHCI, mass storage), block devices, the boot ramdisk                     |
//! | `platform` | CPU identification, the TSC, the local APIC timer, interrupt vectors and counts |
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]

extern crate alloc;

#[cfg(target_os = "none")]
pub mod boot;
pub mod config;
pub mod devices;
pub mod harness;
pub mod output;
pub mod platform;
pub mod pmu;
pub mod selftest;
pub mod task;
pub mod traps;

/// The kernel's version, reported in the `boot` record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

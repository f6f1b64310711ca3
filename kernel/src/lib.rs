//! The baremark kernel.
//!
//! This crate holds the kernel's logic and contains no `unsafe`: every hardware access goes
//! through `baremark-hw` (kernel/hw). Modules that only make sense on the machine are compiled
//! for `target_os = "none"`; the rest is plain logic that is unit-tested on the host.
//!
//! | module        | job                                                           | host-tested |
//! |---------------|---------------------------------------------------------------|-------------|
//! | `record`      | JSON-lines records (the contract with the host tool)          | yes         |
//! | `config`      | the run configuration from the ramdisk                        | yes         |
//! | `ramdisk`     | the ustar archive reader                                       | yes         |
//! | `cpu`         | CPU identification (CPUID)                                    | yes         |
//! | `tsc`         | TSC frequency from CPUID or PIT calibration                   | yes         |
//! | `pmu`         | PMU discovery, backends (Intel, AMD, TSC-only), PMI handling  | yes (simulated PMU) |
//! | `pmu_info`    | what CPUID says about performance counters                    | yes         |
//! | `exceptions`  | exception vector names                                        | yes         |
//! | `selftest`    | the PMU selftest plan and records                             | yes         |
//! | `harness`     | the measurement harness: event plan, statistics, results and table | yes         |
//! | `task`        | ring-3 tasks: payload ELF load plans, virtual counters, the user counter page, the syscall ABI; running payloads (bare metal) | yes (except the runners) |
//! | `counters`    | the machine's PMU: hardware `Msr`, discovery at boot, PMI      | no          |
//! | `selftest_live` | running the PMU selftest checks                             | no          |
//! | `console`     | serial output of records and text                             | no          |
//! | `traps`       | the kernel's handler for every interrupt and exception        | no          |
//! | `fatal`       | fault and panic reports, the end of a run                     | no          |
//! | `timer`       | local APIC bring-up, timer calibration and checks             | no          |
//! | `machine`     | the boot sequence and the boot report                         | no          |
//! | `blockdev`    | the block-device interface (disk drivers to disk writers)     | -           |
//! | `results_file`| the results file on the boot stick: recognising it, writing it | yes         |
//! | `usb`         | the xHCI driver and USB mass storage (docs/usb.md)             | the TRB rings, contexts, descriptors, BOT/SCSI |
//! | `screen`      | the framebuffer console: text and medians kept in memory, drawn in flushes (logic in `baremark-screen`, host-tested) | no (the crate: yes) |
//! | `outputs`     | the stream's other outputs: screen and results file, flushed between payloads | no |
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]

extern crate alloc;

pub mod blockdev;
pub mod config;
pub mod cpu;
pub mod exceptions;
pub mod harness;
pub mod pmu;
pub mod pmu_info;
pub mod ramdisk;
pub mod record;
pub mod results_file;
pub mod selftest;
pub mod task;
pub mod tsc;
pub mod usb;

#[cfg(target_os = "none")]
pub mod canary;
#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod counters;
#[cfg(target_os = "none")]
pub mod fatal;
#[cfg(target_os = "none")]
pub mod machine;
#[cfg(target_os = "none")]
pub mod outputs;
#[cfg(target_os = "none")]
pub mod screen;
#[cfg(target_os = "none")]
pub mod selftest_live;
#[cfg(target_os = "none")]
pub mod system_mode;
#[cfg(target_os = "none")]
pub mod timer;
#[cfg(target_os = "none")]
pub mod trap_counts;
#[cfg(target_os = "none")]
pub mod traps;

/// The kernel's version, reported in the `boot` record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

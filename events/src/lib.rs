//! events: how baremark users name what to count.
//!
//! `#![no_std]` + `alloc`, shared by the kernel (which programs counters from the encodings) and
//! the host tool (which parses what users type and imports Intel's perfmon tables). Pure logic,
//! tested on the host.
//!
//! | module    | job                                                                          |
//! |-----------|------------------------------------------------------------------------------|
//! | `cpu`     | vendor / family / model, perfmon-style CPU strings (`GenuineIntel-6-55`)       |
//! | `pmu`     | what a PMU offers: kind (Intel v1-v5, AMD legacy/ext-core/PerfMonV2, TSC-only), counters, widths |
//! | `event`   | an event description: select fields, counters it may use, extra MSRs          |
//! | `encode`  | exact register values both ways: PERFEVTSEL, fixed-counter control, AMD PERF_CTL |
//! | `catalog` | built-in events: generic (Linux's maps), Intel architectural, fixed, AMD Zen  |
//! | `parse`   | the perf-style event syntax                                                   |
//! | `table`   | the compact event table the kernel reads from the ramdisk                    |
//! | `perfmon` | (feature `std`) Intel perfmon JSON and mapfile.csv import                    |
//! | `assign`  | placing events on counters, splitting into groups for multiplexing            |
//! | `metrics` | derived metrics (IPC, miss ratios, bandwidth, ...)                            |
//! | `nanobench` | nanoBench config files (`EvtSel.UMASK(.CMSK=N)... Name`)                     |
//!
//! Facts behind the encodings and catalogues: Intel SDM vol. 3B ch. 20, AMD APM vol. 2 ch. 13,
//! Linux `arch/x86/events/` (see ../shared/reference/pmu-facts.md).
#![cfg_attr(not(all(feature = "std", not(target_os = "none"))), no_std)]

extern crate alloc;

pub mod assign;
pub mod catalog;
pub mod cpu;
pub mod encode;
pub mod event;
pub mod metrics;
pub mod nanobench;
pub mod parse;
pub mod pmu;
pub mod table;

#[cfg(all(feature = "std", not(target_os = "none")))]
pub mod perfmon;

//! The baremark host tool: builds boot images around the kernel, boots them in QEMU, parses
//! the kernel's serial records and renders the report.
//!
//! The modules, from the top (`main.rs` uses them all) down: a module uses only the ones
//! its row names, all further down, so every flow is one way (tests/layers.rs checks it).
//!
//! | module        | uses | job |
//! |---------------|------|-----|
//! | `asm`         | - | `baremark asm`: instructions assembled into a payload |
//! | `events_cli`  | - | `baremark events list/encode`; the host's PMU |
//! | `session`     | image, qemu, records, render | one boot: stream, parse, time, judge; KVM or TCG |
//! | `content`     | image, payloads | payload selection, harness settings, `--events` |
//! | `qemu`        | image | QEMU and OVMF found, the command line, PMU models |
//! | `image`       | stick, fat | ramdisk (run configuration), BIOS/UEFI/USB images |
//! | `stick`       | fat | the results file on a USB stick |
//! | `fat`         | - | the FAT partition of a BIOS disk image |
//! | `output`      | perf_format, plot, results, records | the end of run/report/count: table, files |
//! | `diff`        | logscan, results, numbers | `baremark diff`: two runs compared |
//! | `render`      | profile, results, records, numbers | the human-readable report |
//! | `table`       | results, records, numbers | the results as tables |
//! | `perf_format` | results, records | `perf stat -x SEP` CSV and `-j` JSON lines |
//! | `plot`        | results, numbers | SVG plots of the repetitions |
//! | `profile`     | records, payloads | sampling profiles: `--sample`, symbols, SVG |
//! | `progress`    | records | the progress bar while results arrive |
//! | `logscan`     | results, records | a saved log read robustly: damage, runs |
//! | `results`     | records | the measurement results; JSON, CSV |
//! | `records`     | - | the record parser (docs/records.md) |
//! | `numbers`     | - | numbers as the report writes them |
//! | `payloads`    | - | the built-in payload ELFs and suites |

pub mod asm;
pub mod content;
pub mod diff;
pub mod events_cli;
mod fat;
pub mod image;
pub mod logscan;
pub mod numbers;
pub mod output;
pub mod payloads;
pub mod perf_format;
pub mod plot;
pub mod profile;
pub mod progress;
pub mod qemu;
pub mod records;
pub mod render;
pub mod results;
pub mod session;
pub mod stick;
pub mod table;

//! The baremark host tool: builds boot images around the kernel, boots them in QEMU, parses
//! the kernel's serial records and renders the report.
//!
//! The modules, from the top (the CLI, `src/bin/baremark/`, uses them all) down. A module uses only modules below
//! it: docs/design.md's "The host tool's map" names which, and tests/tests/architecture.rs
//! checks every import against it.
//!
//! | module        | job |
//! |---------------|-----|
//! | `asm`           | `baremark asm`: instructions assembled into a payload |
//! | `events_cli`    | `baremark events list/encode`; the host's PMU |
//! | `session`       | one boot: stream, parse, time, judge; KVM or TCG |
//! | `content`       | payload selection, harness settings, `--events` |
//! | `qemu`          | QEMU and OVMF found, the command line, PMU models |
//! | `image`         | ramdisk (run configuration), BIOS/UEFI/USB images |
//! | `stick`         | the results file on a USB stick |
//! | `fat`           | the FAT partition of a BIOS disk image |
//! | `cores`         | core-to-core latency, bandwidth: tables, SVG |
//! | `expect`        | CI gates: expectations, baselines, JUnit, Markdown |
//! | `output`        | the end of run/report/count: table, files |
//! | `diff`          | `baremark diff`: two runs compared |
//! | `render`        | the human-readable report |
//! | `table`         | the results as tables |
//! | `perf_format`   | `perf stat -x SEP` CSV and `-j` JSON lines |
//! | `system_table`  | system mode per CPU: `perf stat -a -A` and STAT tables |
//! | `plot`          | SVG plots of the repetitions |
//! | `profile`       | sampling profiles: `--sample`, symbols, SVG |
//! | `progress`      | the progress bar while results arrive |
//! | `logscan`       | a saved log read robustly: damage, runs |
//! | `results`       | the measurement results; JSON, CSV |
//! | `records`       | the record parser (docs/records.md) |
//! | `numbers`       | numbers as the report writes them |
//! | `payloads`      | the built-in payload ELFs and suites |

pub mod asm;
pub mod content;
pub mod cores;
pub mod diff;
pub mod events_cli;
pub mod expect;
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
pub mod system_table;
pub mod table;

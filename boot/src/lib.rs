//! The baremark host tool: builds boot images around the kernel, boots them in QEMU, parses
//! the kernel's serial records and renders the report.
//!
//! | module    | job                                                          |
//! |-----------|--------------------------------------------------------------|
//! | `asm`     | `baremark asm`: an instruction sequence assembled into a payload |
//! | `events_cli` | `baremark events list/encode`                         |
//! | `payloads` | the built-in payload ELFs (ring-3 programs) and the suites  |
//! | `content` | payload selection, harness settings, `--events` check, perfmon tables |
//! | `image`   | ramdisk (run configuration) and BIOS/UEFI disk images         |
//! | `qemu`    | finding QEMU and OVMF, the QEMU command line                  |
//! | `session` | one boot: stream, parse, time, judge; KVM/TCG choice          |
//! | `records` | the record parser (schema: docs/records.md)                   |
//! | `logscan` | a saved log read robustly: damage found, runs told apart      |
//! | `render`  | the human-readable report                                     |
//! | `results` | the measurement results, assembled from the records; JSON, CSV |
//! | `table`   | the results as a summary table or perf-stat-like tables       |
//! | `diff`    | `baremark diff`: two runs compared, Mann-Whitney U per event  |
//! | `plot`    | SVG plots of the per-repetition distributions                 |
//! | `profile` | sampling profiles: `--sample`, symbols, table, annotation, SVG |
//! | `output`  | the shared end of run/report/count: table and files           |
//! | `perf_format` | the results as `perf stat -x SEP` CSV and `perf stat -j` JSON lines |
//! | `progress` | the progress bar while results arrive                        |

pub mod asm;
pub mod content;
pub mod diff;
pub mod events_cli;
pub mod image;
pub mod logscan;
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

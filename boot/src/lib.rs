//! The baremark host tool: builds boot images around the kernel, boots them in QEMU, parses
//! the kernel's serial records and renders the report.
//!
//! | module    | job                                                          |
//! |-----------|--------------------------------------------------------------|
//! | `events_cli` | `baremark events list/encode`                         |
//! | `payloads` | the built-in payload ELFs (ring-3 programs)                 |
//! | `image`   | ramdisk (run configuration) and BIOS/UEFI disk images         |
//! | `qemu`    | finding QEMU and OVMF, the QEMU command line                  |
//! | `session` | one boot: stream, parse, time, judge; KVM/TCG choice          |
//! | `records` | the record parser (schema: docs/records.md)                   |
//! | `render`  | the human-readable report                                     |

pub mod events_cli;
pub mod image;
pub mod payloads;
pub mod qemu;
pub mod records;
pub mod render;
pub mod session;

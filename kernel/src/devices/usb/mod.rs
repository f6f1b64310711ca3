//! USB: the xHCI host controller driver and USB mass storage (bulk-only transport, SCSI), used
//! to find the boot stick and write the results file to it (docs/usb.md).
//!
//! | module        | job                                                              | host-tested |
//! |---------------|------------------------------------------------------------------|-------------|
//! | `trb`         | TRBs, producer rings (cycle bit, link TRB), the event ring       | yes |
//! | `context`     | input contexts (slot, endpoints) for 32- and 64-byte contexts    | yes |
//! | `descriptors` | standard requests, device and configuration descriptors          | yes |
//! | `bot`         | bulk-only transport (CBW/CSW) and the SCSI commands              | yes |
//! | `check`       | the test actions' digest and write pattern (shared with host tests) | yes |
//! | `regs`        | xHCI register offsets and bits                                   | -   |
//! | `xhci`        | controller bring-up, the command and event rings, doorbells      | no  |
//! | `ports`       | root-hub ports: power, reset, speed                              | no  |
//! | `device`      | enumeration: slot, address, descriptors, configuration, endpoints | no |
//! | `storage`     | a mass-storage disk: BOT commands, recovery, `BlockDevice`       | no  |
//! | `legacy`      | the firmware's hands off every USB controller at boot (xHCI, EHCI) | no  |
//! | `probe`       | every controller, port and disk; what the test actions do with them | no  |

pub mod bot;
pub mod check;
pub mod context;
pub mod descriptors;
pub mod trb;

#[cfg(target_os = "none")]
mod device;
#[cfg(target_os = "none")]
pub mod legacy;
#[cfg(target_os = "none")]
mod ports;
#[cfg(target_os = "none")]
mod probe;
#[cfg(target_os = "none")]
mod regs;
#[cfg(target_os = "none")]
mod storage;
#[cfg(target_os = "none")]
mod xhci;

#[cfg(target_os = "none")]
pub use probe::{
    DIGEST_SECTORS, Probe, WRITE_SECTORS, digest, probe, probe_disks, write_and_check,
};
#[cfg(target_os = "none")]
pub use storage::UsbDisk;

//! Devices: where data comes from and goes to, below the output that uses them.
//!
//! | module     | job                                                               | host-tested |
//! |------------|-------------------------------------------------------------------|-------------|
//! | `ramdisk`  | the boot ramdisk's ustar archive (run.cfg, payloads, event tables) | yes |
//! | `blockdev` | the block-device interface (disk drivers to disk writers)         | -   |
//! | `usb`      | the xHCI driver and USB mass storage (docs/usb.md)                | the TRB rings, contexts, descriptors, BOT/SCSI |

pub mod blockdev;
pub mod ramdisk;
pub mod usb;

//! Devices: where data comes from and goes to, below the output that uses them.
//!
//! | module     | job                                                               | host-tested |
//! |------------|-------------------------------------------------------------------|-------------|
//! | `ramdisk`  | the boot ramdisk's ustar archive (run.cfg, payloads, event tables) | yes |
//! | `blockdev` | the block-device interface (disk drivers to disk writers)         | -   |
//! | `clock`    | timeouts and delays on the TSC for the drivers                    | no  |
//! | `iommu`    | the VT-d units the DMAR lists: DMA translation and protection off  | no  |
//! | `pci`      | configuration access: ECAM from the MCFG, checked against the ports | no  |
//! | `usb`      | the xHCI driver and USB mass storage (docs/usb.md)                | the TRB rings, contexts, descriptors, BOT/SCSI |

pub mod blockdev;
pub mod ramdisk;
pub mod usb;

#[cfg(target_os = "none")]
pub mod clock;
#[cfg(target_os = "none")]
pub mod iommu;
#[cfg(target_os = "none")]
pub mod pci;

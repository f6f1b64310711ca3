//! Block devices: the interface between a disk driver (`usb::storage`) and what writes to a
//! disk (`results_file`). Sectors are addressed by LBA in units of [`BlockDevice::block_size`].

use alloc::string::String;

/// A disk the kernel can read and write whole blocks of (`Send`: the kernel keeps the open
/// results file's disk in a static).
pub trait BlockDevice: Send {
    /// Bytes per block (512 for USB sticks; 4096 on some disks).
    fn block_size(&self) -> u32;
    /// Number of blocks.
    fn blocks(&self) -> u64;
    /// Reads `buf.len() / block_size` blocks from `lba` on. `buf.len()` is a multiple of the
    /// block size.
    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), BlockError>;
    /// Writes `data` (a multiple of the block size) to the blocks from `lba` on; returns once
    /// the device has acknowledged the data.
    fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), BlockError>;
    /// One line for records and the screen, e.g. `QEMU QEMU HARDDISK 2.5+ (xHCI 00:04.0
    /// port 5, high speed)`.
    fn describe(&self) -> String;
}

/// Why a block operation failed, in words for the `results_file` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockError(pub String);

impl core::fmt::Display for BlockError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

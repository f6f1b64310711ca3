//! The FAT partition of a bootloader BIOS (MBR) disk image, found as the bootloader's stage 2
//! finds it and opened with `fatfs`: `image` patches a file in it, `stick` reads the results file.

use std::io::{Read, Seek, SeekFrom, Write};

use anyhow::{Context, Result};

/// The image's FAT partition (the one [`partition`] names) as a file system.
pub(crate) fn open<'a>(
    disk: &'a mut std::fs::File,
    mbr: &[u8; 512],
) -> Result<fatfs::FileSystem<Partition<'a>>> {
    let (start, len) = partition(mbr)?;
    fatfs::FileSystem::new(
        Partition {
            disk,
            start,
            len,
            pos: 0,
        },
        fatfs::FsOptions::new(),
    )
    .context("opening the image's FAT partition")
}

/// Byte offset and length of the FAT partition: the entry after stage 2's (type 0x20), as
/// stage 2 finds it.
pub(crate) fn partition(mbr: &[u8; 512]) -> Result<(u64, u64)> {
    let entry = |i: usize| &mbr[446 + 16 * i..446 + 16 * (i + 1)];
    let stage_2 = (0..3)
        .find(|&i| entry(i)[4] == 0x20)
        .context("the image has no stage-2 partition")?;
    let e = entry(stage_2 + 1);
    let lba = u32::from_le_bytes([e[8], e[9], e[10], e[11]]);
    let sectors = u32::from_le_bytes([e[12], e[13], e[14], e[15]]);
    Ok((u64::from(lba) * 512, u64::from(sectors) * 512))
}

/// A byte range of the image file, for `fatfs`.
pub(crate) struct Partition<'a> {
    disk: &'a mut std::fs::File,
    start: u64,
    len: u64,
    pos: u64,
}

impl Read for Partition<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(usize::try_from(self.len.saturating_sub(self.pos)).unwrap_or(usize::MAX));
        self.disk.seek(SeekFrom::Start(self.start + self.pos))?;
        let n = self.disk.read(&mut buf[..n])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for Partition<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(usize::try_from(self.len.saturating_sub(self.pos)).unwrap_or(usize::MAX));
        self.disk.seek(SeekFrom::Start(self.start + self.pos))?;
        let n = self.disk.write(&buf[..n])?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.disk.flush()
    }
}

impl Seek for Partition<'_> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let to = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        };
        self.pos = to.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the partition",
            )
        })?;
        Ok(self.pos)
    }
}

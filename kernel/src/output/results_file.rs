//! The results file on the boot stick (`BAREMARK/RESULTS.LOG`, docs/results-file.md): finding
//! the stick among the disks, and writing the serial byte stream into the file's sectors.
//!
//! The file is contiguous (the host checks when it builds the image) and starts with a header
//! sector; the stream follows from the file's second sector on. Every write stays inside the
//! file's sectors: [`Writer`] computes every LBA from the file's place and refuses anything
//! past its end. Order of a flush: the data sectors first, then the header with the new byte
//! count, so the header never counts bytes that are not on the disk.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write as _;

use crate::devices::blockdev::{BlockDevice, BlockError};

/// Where the results file lies on the boot stick and how to recognise the stick
/// (`results_file = LBA:SECTORS`, `disk_signature = 0xXXXXXXXX`, `results_id = 32 hex digits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultsFile {
    /// The file's first sector (512-byte sectors from the start of the disk).
    pub lba: u64,
    /// Its length in sectors (contiguous).
    pub sectors: u64,
    /// The MBR disk signature (bytes 440..444 of sector 0, little-endian).
    pub disk_signature: u32,
    /// The image's random identity, also in the file's header sector.
    pub id: [u8; 16],
}

/// The results file's sector size: the host lays the file out in 512-byte sectors.
pub const SECTOR: usize = 512;

/// The header's first line (the host writes it; the kernel checks it before writing).
pub const MAGIC: &str = "baremark results file v1";

/// The state a header records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// As the host made it: no run has written it.
    Empty,
    /// A run is writing it (or died while it was).
    Running,
    /// The run ended and everything is in it.
    Complete,
    /// The stream outgrew the file: the first `bytes` of it are there, the rest was dropped.
    Full,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "empty",
            State::Running => "running",
            State::Complete => "complete",
            State::Full => "full",
        }
    }
}

/// The header sector: text lines, `key value`, padded with NUL bytes.
pub fn header(id: &[u8; 16], sectors: u64, bytes: u64, state: State) -> [u8; SECTOR] {
    let mut text = String::new();
    let _ = write!(
        text,
        "{MAGIC}\nid {}\nsectors {sectors}\nbytes {bytes}\nstate {}\n\
         # the serial stream of one baremark run follows from the next sector; \
         read it with `baremark report` (docs/results-file.md)\n",
        hex(id),
        state.name()
    );
    let mut sector = [0u8; SECTOR];
    sector[..text.len()].copy_from_slice(text.as_bytes());
    sector
}

/// The id as 32 lowercase hex digits.
pub fn hex(id: &[u8; 16]) -> String {
    let mut s = String::with_capacity(32);
    for b in id {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Whether `sector` is a results-file header with this `id`.
pub fn header_matches(sector: &[u8], id: &[u8; 16]) -> bool {
    let text = sector.split(|&b| b == 0).next().unwrap_or(&[]);
    let Ok(text) = core::str::from_utf8(text) else {
        return false;
    };
    let mut lines = text.lines();
    lines.next() == Some(MAGIC) && lines.any(|l| l.strip_prefix("id ") == Some(hex(id).as_str()))
}

/// Why a disk is not the boot stick.
pub fn check_disk(disk: &mut dyn BlockDevice, file: &ResultsFile) -> Result<(), String> {
    if disk.block_size() as usize != SECTOR {
        return Err(format!(
            "{} byte blocks (the results file is laid out in {SECTOR} byte sectors)",
            disk.block_size()
        ));
    }
    let Some(end) = file.lba.checked_add(file.sectors) else {
        return Err(String::from("the results file's place overflows"));
    };
    if end > disk.blocks() {
        return Err(format!(
            "{} sectors, smaller than the results file's end (sector {end})",
            disk.blocks()
        ));
    }
    let mut mbr = vec![0u8; SECTOR];
    disk.read(0, &mut mbr)
        .map_err(|e| format!("reading sector 0: {e}"))?;
    if mbr[510..512] != [0x55, 0xaa] {
        return Err(String::from("no MBR on sector 0"));
    }
    let signature = u32::from_le_bytes([mbr[440], mbr[441], mbr[442], mbr[443]]);
    if signature != file.disk_signature {
        return Err(format!(
            "disk signature {signature:#010x}, not {:#010x}",
            file.disk_signature
        ));
    }
    let mut head = vec![0u8; SECTOR];
    disk.read(file.lba, &mut head).map_err(|e| {
        format!(
            "reading the results file's header (sector {}): {e}",
            file.lba
        )
    })?;
    if !header_matches(&head, &file.id) {
        return Err(format!(
            "sector {} is not this image's results file header (id {})",
            file.lba,
            hex(&file.id)
        ));
    }
    Ok(())
}

/// Writes the stream into the file: appends, zero-pads the last sector, updates the header.
pub struct Writer {
    file: ResultsFile,
    /// Stream bytes on the disk.
    written: u64,
    /// The stream's bytes in its last, partly written sector (`written % SECTOR` of them).
    tail: Vec<u8>,
    state: State,
    /// Stream bytes that did not fit in the file.
    pub dropped: u64,
}

impl Writer {
    pub fn new(file: ResultsFile) -> Self {
        Self {
            file,
            written: 0,
            tail: Vec::new(),
            state: State::Running,
            dropped: 0,
        }
    }

    /// The stream's room in bytes (all sectors after the header).
    pub fn capacity(&self) -> u64 {
        (self.file.sectors - 1) * SECTOR as u64
    }

    /// Stream bytes on the disk.
    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// Appends `bytes` (what fits) and updates the header. With `complete`, the header says the
    /// run ended (unless the file is full). On a device error nothing is counted as written
    /// that the header does not already count.
    pub fn append(
        &mut self,
        disk: &mut dyn BlockDevice,
        bytes: &[u8],
        complete: bool,
    ) -> Result<(), BlockError> {
        let room = self.capacity() - self.written;
        let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if take < bytes.len() {
            self.dropped += (bytes.len() - take) as u64;
            self.state = State::Full;
        }
        if take > 0 {
            let mut data = core::mem::take(&mut self.tail);
            data.extend_from_slice(&bytes[..take]);
            let first = self.file.lba + 1 + self.written / SECTOR as u64;
            let whole = data.len() / SECTOR * SECTOR;
            let tail = data[whole..].to_vec();
            data.resize(data.len().div_ceil(SECTOR) * SECTOR, 0);
            debug_assert!(
                first + (data.len() / SECTOR) as u64 <= self.file.lba + self.file.sectors
            );
            if let Err(e) = disk.write(first, &data) {
                // Keep what the header counts; the caller stops writing.
                self.tail = data[..self.written as usize % SECTOR].to_vec();
                return Err(e);
            }
            self.written += take as u64;
            self.tail = tail;
        }
        if complete && self.state != State::Full {
            self.state = State::Complete;
        }
        let head = header(&self.file.id, self.file.sectors, self.written, self.state);
        disk.write(self.file.lba, &head)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// A disk in memory that records every sector written.
    struct MemDisk {
        bytes: Vec<u8>,
        writes: Vec<(u64, usize)>,
        fail: bool,
    }

    impl BlockDevice for MemDisk {
        fn block_size(&self) -> u32 {
            512
        }
        fn blocks(&self) -> u64 {
            (self.bytes.len() / 512) as u64
        }
        fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), BlockError> {
            let at = lba as usize * 512;
            buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
            Ok(())
        }
        fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), BlockError> {
            if self.fail {
                return Err(BlockError(String::from("stall")));
            }
            let at = lba as usize * 512;
            self.bytes[at..at + data.len()].copy_from_slice(data);
            self.writes.push((lba, data.len() / 512));
            Ok(())
        }
        fn describe(&self) -> String {
            String::from("memory")
        }
    }

    fn file() -> ResultsFile {
        ResultsFile {
            lba: 100,
            sectors: 4,
            disk_signature: 0xdead_beef,
            id: [7; 16],
        }
    }

    fn disk() -> MemDisk {
        let mut bytes = vec![0xeeu8; 200 * 512];
        bytes[440..444].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        bytes[510] = 0x55;
        bytes[511] = 0xaa;
        bytes[100 * 512..101 * 512].copy_from_slice(&header(&[7; 16], 4, 0, State::Empty));
        MemDisk {
            bytes,
            writes: Vec::new(),
            fail: false,
        }
    }

    fn stream_of(d: &MemDisk) -> (std::string::String, Vec<u8>) {
        let head = &d.bytes[100 * 512..101 * 512];
        let text = std::str::from_utf8(head.split(|&b| b == 0).next().unwrap()).unwrap();
        let bytes: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("bytes "))
            .unwrap()
            .parse()
            .unwrap();
        (text.into(), d.bytes[101 * 512..101 * 512 + bytes].to_vec())
    }

    /// The host's `stick::header` test pins the same text: the two sides must agree.
    #[test]
    fn header_text_is_the_hosts() {
        let h = header(&[7; 16], 4, 0, State::Empty);
        let text = std::str::from_utf8(h.split(|&b| b == 0).next().unwrap()).unwrap();
        assert_eq!(
            text,
            "baremark results file v1\nid 07070707070707070707070707070707\nsectors 4\nbytes 0\n\
             state empty\n# the serial stream of one baremark run follows from the next sector; \
             read it with `baremark report` (docs/results-file.md)\n"
        );
        assert!(header_matches(&h, &[7; 16]));
        assert!(!header_matches(&h, &[8; 16]));
    }

    #[test]
    fn the_right_disk_is_recognised_and_others_are_named() {
        let mut d = disk();
        assert_eq!(check_disk(&mut d, &file()), Ok(()));
        let mut other = file();
        other.disk_signature = 1;
        assert!(
            check_disk(&mut d, &other)
                .unwrap_err()
                .contains("0xdeadbeef, not 0x00000001")
        );
        other = file();
        other.id = [8; 16];
        assert!(
            check_disk(&mut d, &other)
                .unwrap_err()
                .contains("not this image's")
        );
        other = file();
        other.lba = 199;
        assert!(check_disk(&mut d, &other).unwrap_err().contains("smaller"));
        d.bytes[510] = 0;
        assert!(check_disk(&mut d, &file()).unwrap_err().contains("no MBR"));
    }

    #[test]
    fn appends_stay_in_the_file_and_the_header_counts_them() {
        let mut d = disk();
        let mut w = Writer::new(file());
        w.append(&mut d, b"hello\r\n", false).unwrap();
        w.append(&mut d, &[b'x'; 600], false).unwrap();
        let (text, stream) = stream_of(&d);
        assert!(text.contains("state running"), "{text}");
        assert_eq!(stream.len(), 607);
        assert!(stream.starts_with(b"hello\r\nxxx"));
        // The padding after the stream is zeros, not the disk's old bytes.
        assert!(d.bytes[101 * 512 + 607..103 * 512].iter().all(|&b| b == 0));
        // Fill the file: 3 data sectors hold 1536 bytes.
        w.append(&mut d, &[b'y'; 2000], true).unwrap();
        let (text, stream) = stream_of(&d);
        assert!(
            text.contains("state full") && text.contains("bytes 1536"),
            "{text}"
        );
        assert_eq!(stream.len(), 1536);
        assert_eq!(w.dropped, 2000 - (1536 - 607));
        // Nothing outside sectors 100..104 changed.
        assert!(
            d.writes
                .iter()
                .all(|&(lba, n)| lba >= 100 && lba + n as u64 <= 104)
        );
        assert!(d.bytes[104 * 512..].iter().all(|&b| b == 0xee));
        assert!(d.bytes[512..100 * 512].iter().all(|&b| b == 0xee));
    }

    #[test]
    fn a_failed_write_counts_nothing_new() {
        let mut d = disk();
        let mut w = Writer::new(file());
        w.append(&mut d, b"abc", false).unwrap();
        d.fail = true;
        assert!(w.append(&mut d, b"def", false).is_err());
        assert_eq!(w.written(), 3);
        d.fail = false;
        w.append(&mut d, b"ghi", true).unwrap();
        let (text, stream) = stream_of(&d);
        assert_eq!(stream, b"abcghi");
        assert!(text.contains("state complete"));
    }
}

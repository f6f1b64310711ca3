//! The results file on a USB stick (`BAREMARK/RESULTS.LOG`, docs/results-file.md): laying it
//! out when `image --usb` builds the stick, and reading it back for `report`.
//!
//! The file is contiguous: the kernel writes its sectors by LBA through its own USB driver,
//! with no file system code. `image --usb` proves the contiguity instead of trusting the FAT
//! writer: it fills the file with stamped sectors, finds every stamp in the finished image,
//! and requires them in order at consecutive sectors. Then it writes the header sector, zeros,
//! a random disk signature into the MBR, and the file's place into `run.cfg`.

use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The file's path in the stick's FAT partition.
pub const RESULTS_LOG: &str = "BAREMARK/RESULTS.LOG";
/// Its default size.
pub const DEFAULT_MIB: u64 = 8;
/// Bounds of `--results-mib`.
pub const MIB_RANGE: std::ops::RangeInclusive<u64> = 1..=1024;
/// The header's first line (the kernel's `results_file::MAGIC`).
pub const MAGIC: &str = "baremark results file v1";
const SECTOR: usize = 512;
/// A stamp: this, the image id, the sector's index (u64 LE).
const STAMP: &[u8; 8] = b"BMSTAMP!";

/// Where the results file lies and how the kernel recognises the stick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The file's first sector on the disk.
    pub lba: u64,
    pub sectors: u64,
    /// The MBR disk signature (bytes 440..444 of sector 0).
    pub disk_signature: u32,
    /// The image's random identity (in the header and `run.cfg`).
    pub id: [u8; 16],
}

impl Place {
    /// A new identity: a random id and disk signature.
    pub fn new_identity() -> Result<([u8; 16], u32)> {
        let mut bytes = [0u8; 20];
        getrandom::fill(&mut bytes)
            .map_err(|e| anyhow::anyhow!("no random numbers for the stick's identity: {e}"))?;
        let mut id = [0u8; 16];
        id.copy_from_slice(&bytes[..16]);
        // 0 means "no signature" to some tools; never use it.
        let signature = u32::from_le_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]).max(1);
        Ok((id, signature))
    }
}

/// The id as 32 lowercase hex digits.
pub fn hex(id: &[u8; 16]) -> String {
    id.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The `run.cfg` lines naming the file's place. Before the image exists the place is unknown:
/// the `results_file` value is a placeholder of [`PLACE_WIDTH`] characters that
/// [`patch_place`] overwrites in the image with the same number of bytes.
pub fn config_lines(id: &[u8; 16], disk_signature: u32) -> Vec<String> {
    vec![
        placeholder_line(id),
        format!("disk_signature = {disk_signature:#010x}"),
        format!("results_id = {}", hex(id)),
    ]
}

/// Room for `LBA:SECTORS` (two 20-digit numbers and the colon).
const PLACE_WIDTH: usize = 41;

fn placeholder_line(id: &[u8; 16]) -> String {
    format!(
        "results_file = {} # placed by image --usb {}",
        "?".repeat(PLACE_WIDTH),
        hex(id)
    )
}

/// The file's contents before the image is built: every sector stamped, so [`locate`] can
/// find them in the image.
pub fn stamped_file(id: &[u8; 16], sectors: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; sectors as usize * SECTOR];
    for (i, sector) in bytes.as_chunks_mut::<SECTOR>().0.iter_mut().enumerate() {
        sector[..8].copy_from_slice(STAMP);
        sector[8..24].copy_from_slice(id);
        sector[24..32].copy_from_slice(&(i as u64).to_le_bytes());
    }
    bytes
}

/// The header sector (the kernel's `results_file::header`; both sides test the same text).
pub fn header(id: &[u8; 16], sectors: u64, bytes: u64, state: &str) -> [u8; SECTOR] {
    let text = format!(
        "{MAGIC}\nid {}\nsectors {sectors}\nbytes {bytes}\nstate {state}\n\
         # the serial stream of one baremark run follows from the next sector; \
         read it with `baremark report` (docs/results-file.md)\n",
        hex(id)
    );
    let mut sector = [0u8; SECTOR];
    sector[..text.len()].copy_from_slice(text.as_bytes());
    sector
}

/// Finds the stamped file in `image`: its first LBA, after checking that all `sectors` stamps
/// are there, once each, in order, at consecutive sectors (the file is contiguous).
pub fn locate(image: &[u8], id: &[u8; 16], sectors: u64) -> Result<u64> {
    let mut found: Vec<(u64, u64)> = Vec::new(); // (lba, index)
    for (lba, sector) in image.as_chunks::<SECTOR>().0.iter().enumerate() {
        if &sector[..8] == STAMP && &sector[8..24] == id {
            let index = u64::from_le_bytes(sector[24..32].try_into().expect("8 bytes"));
            found.push((lba as u64, index));
        }
    }
    let Some(&(first, 0)) = found.first() else {
        bail!("the results file's first sector is not in the image");
    };
    if found.len() as u64 != sectors {
        bail!(
            "the image holds {} of the results file's {sectors} sectors",
            found.len()
        );
    }
    if let Some(&(lba, index)) = found
        .iter()
        .enumerate()
        .map(|(k, f)| (k as u64, f))
        .find(|&(k, &(lba, index))| lba != first + k || index != k)
        .map(|(_, f)| f)
    {
        bail!(
            "the results file is not contiguous in the image (its sector {index} is at \
             sector {lba}); the kernel writes it by sector number and needs one run of sectors"
        );
    }
    Ok(first)
}

/// Overwrites the placeholder in `run.cfg` (inside the ramdisk file in the image) with the
/// file's place, padded with spaces to the same length.
pub fn patch_place(image: &mut [u8], id: &[u8; 16], lba: u64, sectors: u64) -> Result<()> {
    let needle = placeholder_line(id);
    let needle = needle.as_bytes();
    let at: Vec<usize> = image
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    let [at] = at[..] else {
        bail!(
            "run.cfg's results_file placeholder appears {} times in the image (expected once)",
            at.len()
        );
    };
    let value = format!("{lba}:{sectors}");
    let padded = format!("{value:<PLACE_WIDTH$}");
    let start = at + "results_file = ".len();
    image[start..start + PLACE_WIDTH].copy_from_slice(padded.as_bytes());
    Ok(())
}

/// Lays the file out in a built image (its bytes): finds it, writes the header and zeros over
/// the stamps, the disk signature into the MBR, the place into `run.cfg`.
pub fn finish_image(
    image: &mut [u8],
    id: &[u8; 16],
    disk_signature: u32,
    sectors: u64,
) -> Result<Place> {
    let lba = locate(image, id, sectors)?;
    let start = lba as usize * SECTOR;
    let end = start + sectors as usize * SECTOR;
    image[start..end].fill(0);
    image[start..start + SECTOR].copy_from_slice(&header(id, sectors, 0, "empty"));
    if image[510..512] != [0x55, 0xaa] || image[440..446].iter().any(|&b| b != 0) {
        bail!(
            "the image's MBR has no free disk-signature field (bytes 440..446 not zero: a new \
             bootloader version?)"
        );
    }
    image[440..444].copy_from_slice(&disk_signature.to_le_bytes());
    patch_place(image, id, lba, sectors)?;
    Ok(Place {
        lba,
        sectors,
        disk_signature,
        id: *id,
    })
}

/// A results file's header, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub id: String,
    pub sectors: u64,
    pub bytes: u64,
    pub state: String,
}

/// Parses a header sector; `None` if it is not one.
pub fn parse_header(sector: &[u8]) -> Option<Header> {
    let text = sector.split(|&b| b == 0).next()?;
    let text = std::str::from_utf8(text).ok()?;
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let mut header = Header {
        id: String::new(),
        sectors: 0,
        bytes: 0,
        state: String::new(),
    };
    for line in lines {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "id" => header.id = value.to_string(),
            "sectors" => header.sectors = value.parse().ok()?,
            "bytes" => header.bytes = value.parse().ok()?,
            "state" => header.state = value.to_string(),
            _ => {}
        }
    }
    Some(header)
}

/// What `report` was given, once read.
pub struct Input {
    /// The serial byte stream.
    pub stream: Vec<u8>,
    /// Where it came from, and what a results file's header says (for the report's notes).
    pub notes: Vec<String>,
    /// The stream's source, for messages.
    pub source: String,
}

/// Reads a serial log, a results file, a mounted stick (its root folder) or the stick itself
/// (a raw device or an image file): the serial stream in it.
pub fn read_input(path: &Path) -> Result<Input> {
    if path.is_dir() {
        let file = find_in_dir(path)?;
        return read_results_file_path(&file);
    }
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut first = [0u8; SECTOR];
    let n = read_up_to(&mut f, &mut first)?;
    if parse_header(&first[..n]).is_some() {
        return read_results_file_path(path);
    }
    if n == SECTOR && first[510..512] == [0x55, 0xaa] && looks_like_stick(&first) {
        return read_from_disk(path, f);
    }
    let mut stream = first[..n].to_vec();
    f.read_to_end(&mut stream)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(Input {
        stream,
        notes: Vec::new(),
        source: path.display().to_string(),
    })
}

fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let got = f.read(&mut buf[n..])?;
        if got == 0 {
            break;
        }
        n += got;
    }
    Ok(n)
}

/// An MBR whose partition table has the bootloader's stage-2 partition (type 0x20) followed by
/// a FAT partition: a baremark stick.
fn looks_like_stick(mbr: &[u8]) -> bool {
    let mbr: &[u8; SECTOR] = mbr.try_into().expect("one sector");
    crate::fat::partition(mbr).is_ok()
}

/// `BAREMARK/RESULTS.LOG` under a mounted stick, whatever case the mount shows.
fn find_in_dir(root: &Path) -> Result<PathBuf> {
    let mut at = root.to_path_buf();
    for part in RESULTS_LOG.split('/') {
        let entry = std::fs::read_dir(&at)
            .with_context(|| format!("reading the folder {}", at.display()))?
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(part));
        match entry {
            Some(e) => at = e.path(),
            None => bail!(
                "{} has no {RESULTS_LOG} (is it the baremark stick's mount point? the file \
                 exists on sticks written from `baremark image --usb` images)",
                root.display()
            ),
        }
    }
    Ok(at)
}

fn read_results_file_path(path: &Path) -> Result<Input> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    results_stream(&bytes, &path.display().to_string())
}

/// Reads the results file out of the stick's FAT partition (device or image).
fn read_from_disk(path: &Path, mut f: std::fs::File) -> Result<Input> {
    f.seek(SeekFrom::Start(0))?;
    let mut mbr = [0u8; SECTOR];
    f.read_exact(&mut mbr)?;
    let fs = crate::fat::open(&mut f, &mbr)
        .with_context(|| format!("{} looks like a baremark stick", path.display()))?;
    let root = fs.root_dir();
    let mut file = root.open_file(RESULTS_LOG).with_context(|| {
        format!(
            "{} is a baremark stick without {RESULTS_LOG} (written from an image older than \
             results files?)",
            path.display()
        )
    })?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    results_stream(&bytes, &format!("{}:{RESULTS_LOG}", path.display()))
}

/// The stream a results file holds, with what its header says.
pub fn results_stream(file: &[u8], source: &str) -> Result<Input> {
    let header = parse_header(&file[..file.len().min(SECTOR)])
        .with_context(|| format!("{source} has no results-file header"))?;
    let room = file.len().saturating_sub(SECTOR) as u64;
    let bytes = header.bytes.min(room);
    let mut notes = vec![format!(
        "results file {source}: {} bytes of {} KiB, state {}",
        bytes,
        room / 1024,
        header.state
    )];
    match header.state.as_str() {
        "empty" => bail!(
            "{source} is empty: no run has written it (was the stick booted? did the kernel \
             find it? without a matching stick the results go to the serial port only)"
        ),
        "running" => notes.push(String::from(
            "the run did not finish: the machine stopped (or was switched off) while it ran; \
             what was written before is shown",
        )),
        "full" => notes.push(String::from(
            "the results file filled up: the end of the stream is missing (a larger file: \
             image --usb --results-mib N)",
        )),
        _ => {}
    }
    if header.bytes > room {
        notes.push(format!(
            "the header counts {} bytes but the file holds {room}: the file was cut",
            header.bytes
        ));
    }
    Ok(Input {
        stream: file[SECTOR..SECTOR + bytes as usize].to_vec(),
        notes,
        source: source.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same text the kernel's `results_file::header` writes (its test pins it too).
    #[test]
    fn header_text_is_the_kernels() {
        let h = header(&[7; 16], 4, 0, "empty");
        let text = std::str::from_utf8(h.split(|&b| b == 0).next().unwrap()).unwrap();
        assert_eq!(
            text,
            "baremark results file v1\nid 07070707070707070707070707070707\nsectors 4\nbytes 0\n\
             state empty\n# the serial stream of one baremark run follows from the next sector; \
             read it with `baremark report` (docs/results-file.md)\n"
        );
        let parsed = parse_header(&h).unwrap();
        assert_eq!((parsed.sectors, parsed.bytes), (4, 0));
        assert_eq!(parsed.state, "empty");
    }

    fn image_with_file_at(lba: usize, sectors: u64, id: &[u8; 16]) -> Vec<u8> {
        let mut image = vec![0u8; (lba + sectors as usize + 10) * SECTOR];
        image[510] = 0x55;
        image[511] = 0xaa;
        let cfg = placeholder_line(id);
        image[2 * SECTOR..2 * SECTOR + cfg.len()].copy_from_slice(cfg.as_bytes());
        let file = stamped_file(id, sectors);
        image[lba * SECTOR..lba * SECTOR + file.len()].copy_from_slice(&file);
        image
    }

    #[test]
    fn a_contiguous_file_is_laid_out() {
        let id = [3; 16];
        let mut image = image_with_file_at(20, 8, &id);
        let place = finish_image(&mut image, &id, 0x1234_5678, 8).unwrap();
        assert_eq!((place.lba, place.sectors), (20, 8));
        assert_eq!(&image[440..444], &0x1234_5678u32.to_le_bytes());
        let cfg = std::str::from_utf8(&image[2 * SECTOR..3 * SECTOR]).unwrap();
        assert!(cfg.starts_with("results_file = 20:8     "), "{cfg}");
        let header = parse_header(&image[20 * SECTOR..21 * SECTOR]).unwrap();
        assert_eq!((header.bytes, header.state.as_str()), (0, "empty"));
        assert!(image[21 * SECTOR..28 * SECTOR].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_fragmented_or_missing_file_is_refused() {
        let id = [3; 16];
        let mut image = image_with_file_at(20, 8, &id);
        // Move sector 5 of the file elsewhere.
        let s5: Vec<u8> = image[25 * SECTOR..26 * SECTOR].to_vec();
        image[25 * SECTOR..26 * SECTOR].fill(0);
        image[30 * SECTOR..31 * SECTOR].copy_from_slice(&s5);
        let e = locate(&image, &id, 8).unwrap_err().to_string();
        assert!(e.contains("not contiguous"), "{e}");
        let image = image_with_file_at(20, 8, &id);
        let e = locate(&image, &[4; 16], 8).unwrap_err().to_string();
        assert!(e.contains("not in the image"), "{e}");
        let e = locate(&image, &id, 9).unwrap_err().to_string();
        assert!(e.contains("8 of the results file's 9"), "{e}");
    }

    #[test]
    fn the_stream_is_what_the_header_counts() {
        let id = [1; 16];
        let mut file = vec![0u8; 4 * SECTOR];
        file[..SECTOR].copy_from_slice(&header(&id, 4, 5, "running"));
        file[SECTOR..SECTOR + 9].copy_from_slice(b"abcdefgh\n");
        let input = results_stream(&file, "f").unwrap();
        assert_eq!(input.stream, b"abcde");
        assert!(input.notes[1].contains("did not finish"));
        file[..SECTOR].copy_from_slice(&header(&id, 4, 0, "empty"));
        assert!(
            results_stream(&file, "f")
                .err()
                .unwrap()
                .to_string()
                .contains("empty")
        );
        file[..SECTOR].copy_from_slice(&header(&id, 4, 99_999, "complete"));
        let input = results_stream(&file, "f").unwrap();
        assert_eq!(input.stream.len(), 3 * SECTOR);
        assert!(input.notes.iter().any(|n| n.contains("cut")));
    }
}

//! USB mass storage, bulk-only transport (USB MSC BOT 1.0) and the SCSI commands the driver
//! sends through it: the Command Block Wrapper, the Command Status Wrapper and its checks
//! (§6.3: valid and meaningful), and the command blocks and replies of INQUIRY, TEST UNIT
//! READY, REQUEST SENSE, READ CAPACITY(10), READ(10) and WRITE(10).
//!
//! Pure logic, host-tested.

use alloc::string::String;

pub const CBW_LEN: usize = 31;
pub const CSW_LEN: usize = 13;
const CBW_SIGNATURE: u32 = 0x4342_5355;
const CSW_SIGNATURE: u32 = 0x5342_5355;

/// A SCSI command block (at most 16 bytes) and its data phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub block: [u8; 16],
    pub len: u8,
    /// Bytes of the data phase.
    pub data_len: u32,
    /// Direction of the data phase (device to host).
    pub data_in: bool,
}

/// The 31-byte CBW for `cmd` with `tag`, for logical unit `lun`.
pub fn cbw(tag: u32, lun: u8, cmd: &Command) -> [u8; CBW_LEN] {
    let mut b = [0u8; CBW_LEN];
    b[0..4].copy_from_slice(&CBW_SIGNATURE.to_le_bytes());
    b[4..8].copy_from_slice(&tag.to_le_bytes());
    b[8..12].copy_from_slice(&cmd.data_len.to_le_bytes());
    b[12] = if cmd.data_in { 0x80 } else { 0 };
    b[13] = lun & 0x0f;
    b[14] = cmd.len & 0x1f;
    b[15..31].copy_from_slice(&cmd.block);
    b
}

/// The CSW's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CswStatus {
    Passed,
    /// The command failed: REQUEST SENSE says why.
    Failed,
    /// The device lost track: only a reset recovery helps.
    PhaseError,
}

/// Why a CSW is not valid or not meaningful (each calls for a reset recovery).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CswError {
    Length(usize),
    Signature(u32),
    Tag {
        expected: u32,
        got: u32,
    },
    Status(u8),
    /// The residue claims more bytes untransferred than the command had.
    Residue {
        residue: u32,
        data_len: u32,
    },
}

impl core::fmt::Display for CswError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            CswError::Length(n) => write!(f, "CSW of {n} bytes, not 13"),
            CswError::Signature(s) => write!(f, "CSW signature {s:#010x}"),
            CswError::Tag { expected, got } => {
                write!(f, "CSW tag {got:#x} for the command tagged {expected:#x}")
            }
            CswError::Status(s) => write!(f, "CSW status {s}"),
            CswError::Residue { residue, data_len } => {
                write!(f, "CSW residue {residue} for a {data_len}-byte command")
            }
        }
    }
}

/// A checked CSW.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Csw {
    pub residue: u32,
    pub status: CswStatus,
}

/// Checks the CSW `bytes` (as received: its length counts) against the command sent with
/// `tag` and `data_len`.
pub fn parse_csw(bytes: &[u8], tag: u32, data_len: u32) -> Result<Csw, CswError> {
    if bytes.len() != CSW_LEN {
        return Err(CswError::Length(bytes.len()));
    }
    let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    if word(0) != CSW_SIGNATURE {
        return Err(CswError::Signature(word(0)));
    }
    if word(4) != tag {
        return Err(CswError::Tag {
            expected: tag,
            got: word(4),
        });
    }
    let residue = word(8);
    let status = match bytes[12] {
        0 => CswStatus::Passed,
        1 => CswStatus::Failed,
        2 => CswStatus::PhaseError,
        s => return Err(CswError::Status(s)),
    };
    if residue > data_len {
        return Err(CswError::Residue { residue, data_len });
    }
    Ok(Csw { residue, status })
}

fn command(bytes: &[u8], data_len: u32, data_in: bool) -> Command {
    let mut block = [0u8; 16];
    block[..bytes.len()].copy_from_slice(bytes);
    Command {
        block,
        len: bytes.len() as u8,
        data_len,
        data_in,
    }
}

pub const INQUIRY_LEN: u32 = 36;
pub const SENSE_LEN: u32 = 18;

pub fn inquiry() -> Command {
    command(&[0x12, 0, 0, 0, INQUIRY_LEN as u8, 0], INQUIRY_LEN, true)
}

pub fn test_unit_ready() -> Command {
    command(&[0; 6], 0, false)
}

pub fn request_sense() -> Command {
    command(&[0x03, 0, 0, 0, SENSE_LEN as u8, 0], SENSE_LEN, true)
}

pub fn read_capacity10() -> Command {
    command(&[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0], 8, true)
}

/// READ(10) or WRITE(10) of `blocks` blocks at `lba` (the caller keeps `lba` below 2^32).
pub fn read_write10(write: bool, lba: u32, blocks: u16, block_size: u32) -> Command {
    let l = lba.to_be_bytes();
    let n = blocks.to_be_bytes();
    let op = if write { 0x2a } else { 0x28 };
    command(
        &[op, 0, l[0], l[1], l[2], l[3], 0, n[0], n[1], 0],
        u32::from(blocks) * block_size,
        !write,
    )
}

/// What INQUIRY says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inquiry {
    /// Peripheral device type (0: direct-access block device).
    pub device_type: u8,
    pub removable: bool,
    pub vendor: String,
    pub product: String,
    pub revision: String,
}

fn ascii(bytes: &[u8]) -> String {
    let s: String = bytes
        .iter()
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                ' '
            }
        })
        .collect();
    String::from(s.trim())
}

/// Parses standard INQUIRY data (36 bytes; fewer leave fields empty).
pub fn parse_inquiry(b: &[u8]) -> Option<Inquiry> {
    if b.len() < 5 {
        return None;
    }
    let field =
        |r: core::ops::Range<usize>| ascii(b.get(r.start..r.end.min(b.len())).unwrap_or(&[]));
    Some(Inquiry {
        device_type: b[0] & 0x1f,
        removable: b[1] & 0x80 != 0,
        vendor: field(8..16),
        product: field(16..32),
        revision: field(32..36),
    })
}

/// READ CAPACITY(10): (number of blocks, block size). A last LBA of 0xffffffff means the disk
/// is too large for the 10-byte commands.
pub fn parse_capacity10(b: &[u8]) -> Option<(u64, u32)> {
    if b.len() < 8 {
        return None;
    }
    let last = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let size = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    Some((u64::from(last) + 1, size))
}

/// Fixed-format sense data: (sense key, additional sense code, qualifier).
pub fn parse_sense(b: &[u8]) -> Option<(u8, u8, u8)> {
    if b.len() < 14 || b[0] & 0x7e != 0x70 {
        return None;
    }
    Some((b[2] & 0x0f, b[12], b[13]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbw_layout() {
        let c = read_write10(false, 0x0102_0304, 8, 512);
        let b = cbw(0xdead_beef, 0, &c);
        assert_eq!(&b[0..4], b"USBC");
        assert_eq!(&b[4..8], &0xdead_beefu32.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 4096);
        assert_eq!((b[12], b[13], b[14]), (0x80, 0, 10));
        assert_eq!(&b[15..25], &[0x28, 0, 1, 2, 3, 4, 0, 0, 8, 0]);
        assert!(b[25..].iter().all(|&x| x == 0));
        let w = cbw(1, 0, &read_write10(true, 5, 1, 512));
        assert_eq!((w[12], w[15]), (0, 0x2a));
        let t = cbw(2, 0, &test_unit_ready());
        assert_eq!((t[8], t[14]), (0, 6));
    }

    fn csw(tag: u32, residue: u32, status: u8) -> [u8; CSW_LEN] {
        let mut b = [0u8; CSW_LEN];
        b[0..4].copy_from_slice(b"USBS");
        b[4..8].copy_from_slice(&tag.to_le_bytes());
        b[8..12].copy_from_slice(&residue.to_le_bytes());
        b[12] = status;
        b
    }

    #[test]
    fn csw_checks() {
        assert_eq!(
            parse_csw(&csw(7, 0, 0), 7, 512),
            Ok(Csw {
                residue: 0,
                status: CswStatus::Passed
            })
        );
        assert_eq!(
            parse_csw(&csw(7, 12, 1), 7, 512).unwrap().status,
            CswStatus::Failed
        );
        assert_eq!(
            parse_csw(&csw(7, 0, 2), 7, 0).unwrap().status,
            CswStatus::PhaseError
        );
        assert_eq!(
            parse_csw(&csw(8, 0, 0), 7, 0),
            Err(CswError::Tag {
                expected: 7,
                got: 8
            })
        );
        assert_eq!(parse_csw(&csw(7, 0, 3), 7, 0), Err(CswError::Status(3)));
        assert_eq!(
            parse_csw(&csw(7, 513, 0), 7, 512),
            Err(CswError::Residue {
                residue: 513,
                data_len: 512
            })
        );
        assert_eq!(
            parse_csw(&csw(7, 0, 0)[..12], 7, 0),
            Err(CswError::Length(12))
        );
        let mut bad = csw(7, 0, 0);
        bad[0] = b'X';
        assert!(matches!(parse_csw(&bad, 7, 0), Err(CswError::Signature(_))));
    }

    #[test]
    fn scsi_replies() {
        let mut inq = [0u8; 36];
        inq[1] = 0x80;
        inq[8..16].copy_from_slice(b"QEMU    ");
        inq[16..32].copy_from_slice(b"QEMU HARDDISK   ");
        inq[32..36].copy_from_slice(b"2.5+");
        let i = parse_inquiry(&inq).unwrap();
        assert_eq!(
            (i.vendor.as_str(), i.product.as_str(), i.revision.as_str()),
            ("QEMU", "QEMU HARDDISK", "2.5+")
        );
        assert!(i.removable);
        assert_eq!(i.device_type, 0);
        assert_eq!(
            parse_capacity10(&[0, 0, 0x0f, 0xff, 0, 0, 2, 0]),
            Some((4096, 512))
        );
        let mut sense = [0u8; 18];
        sense[0] = 0x70;
        sense[2] = 6;
        sense[12] = 0x29;
        assert_eq!(parse_sense(&sense), Some((6, 0x29, 0)));
        assert_eq!(parse_sense(&[0u8; 18]), None);
    }
}

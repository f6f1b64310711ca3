//! The checks: [`plan`] reads the ELF header and program headers and checks every rule of the
//! module docs, turning a payload into a [`LoadPlan`] or a [`PayloadError`].

use alloc::vec::Vec;

use elf::abi;
use elf::endian::LittleEndian;
use elf::file::{Class, FileHeader};
use elf::parse::ParseError;
use elf::segment::{ProgramHeader, SegmentTable};

use super::error::{ElfPart, PayloadError};
use super::{Limits, LoadPlan, PAGE_SIZE, Segment};

/// The size of an ELF64 file header.
const EHDR_SIZE: usize = 64;
/// The size of an ELF64 program header.
const PHDR_SIZE: u16 = 56;

/// Checks a payload ELF and says how to load it. Never panics, whatever `bytes` hold.
pub fn plan(bytes: &[u8], limits: &Limits) -> Result<LoadPlan, PayloadError> {
    let header = parse_header(bytes)?;
    let (user_start, user_end) = limits.effective_range();

    if header.e_phoff == 0 || header.e_phnum == 0 {
        return Err(PayloadError::NoLoadableSegment);
    }
    if header.e_phnum == abi::PN_XNUM {
        return Err(PayloadError::ExtendedProgramHeaderCount);
    }
    if header.e_phentsize != PHDR_SIZE {
        return Err(PayloadError::BadProgramHeaderSize(header.e_phentsize));
    }
    let table_len = u64::from(header.e_phnum) * u64::from(PHDR_SIZE);
    let table_end = header.e_phoff.saturating_add(table_len);
    let truncated_table = PayloadError::Truncated {
        what: ElfPart::ProgramHeaders,
        offset: table_end,
    };
    let table_bytes = match (usize::try_from(header.e_phoff), usize::try_from(table_end)) {
        (Ok(start), Ok(end)) => bytes.get(start..end).ok_or(truncated_table)?,
        _ => return Err(truncated_table),
    };
    let table = SegmentTable::new(LittleEndian, Class::ELF64, table_bytes);

    let mut segments: Vec<(usize, Segment)> = Vec::new();
    let mut total: u64 = 0;
    for index in 0..usize::from(header.e_phnum) {
        // The table slice holds exactly e_phnum entries, so this cannot fail; map it anyway.
        let phdr = table.get(index).map_err(|_| truncated_table)?;
        match phdr.p_type {
            abi::PT_LOAD => {}
            abi::PT_INTERP => return Err(PayloadError::NeedsInterpreter),
            abi::PT_GNU_STACK if phdr.p_flags & abi::PF_X != 0 => {
                return Err(PayloadError::ExecutableStack);
            }
            _ => continue,
        }
        let Some(segment) = load_segment(index, &phdr, bytes.len(), user_start, user_end)? else {
            continue;
        };
        if segments.len() >= limits.max_segments {
            return Err(PayloadError::TooManySegments {
                max: limits.max_segments,
            });
        }
        total = total.saturating_add(segment.mapped_bytes());
        if total > limits.max_bytes {
            return Err(PayloadError::TooLarge {
                bytes: total,
                max: limits.max_bytes,
            });
        }
        segments.push((index, segment));
    }
    if segments.is_empty() {
        return Err(PayloadError::NoLoadableSegment);
    }

    segments.sort_by_key(|(_, segment)| segment.page_start);
    // Sorted by first page, the ranges are disjoint iff each ends before the next starts.
    for pair in segments.windows(2) {
        if let [(a, first), (b, second)] = pair
            && first.page_end > second.page_start
        {
            return Err(PayloadError::SegmentsOverlap {
                a: (*a).min(*b),
                b: (*a).max(*b),
            });
        }
    }

    let entry = header.e_entry;
    if !segments
        .iter()
        .any(|(_, segment)| segment.executable && segment.contains(entry))
    {
        return Err(PayloadError::EntryNotExecutable { entry });
    }

    Ok(LoadPlan {
        entry,
        segments: segments.into_iter().map(|(_, segment)| segment).collect(),
    })
}

/// Reads and checks the identification and the file header.
fn parse_header(bytes: &[u8]) -> Result<FileHeader<LittleEndian>, PayloadError> {
    if !bytes.starts_with(&abi::ELFMAGIC) {
        return Err(PayloadError::NotElf);
    }
    let ident_bytes = bytes.get(..abi::EI_NIDENT).ok_or(PayloadError::Truncated {
        what: ElfPart::Identification,
        offset: abi::EI_NIDENT as u64,
    })?;
    // Checks, in this order: magic, EI_VERSION, EI_CLASS (32 or 64), EI_DATA (LittleEndian
    // accepts only ELFDATA2LSB).
    let ident = elf::file::parse_ident::<LittleEndian>(ident_bytes)
        .map_err(|error| header_error(error, ElfPart::Identification))?;
    if ident.1 != Class::ELF64 {
        return Err(PayloadError::Not64Bit);
    }
    let tail = bytes
        .get(abi::EI_NIDENT..EHDR_SIZE)
        .ok_or(PayloadError::Truncated {
            what: ElfPart::Header,
            offset: EHDR_SIZE as u64,
        })?;
    let header = FileHeader::parse_tail(ident, tail)
        .map_err(|error| header_error(error, ElfPart::Header))?;
    if header.e_machine != abi::EM_X86_64 {
        return Err(PayloadError::WrongMachine(header.e_machine));
    }
    if header.version != u32::from(abi::EV_CURRENT) {
        return Err(PayloadError::UnsupportedVersion);
    }
    if header.e_type != abi::ET_EXEC {
        return Err(PayloadError::WrongType(header.e_type));
    }
    Ok(header)
}

/// Maps the `elf` crate's errors for the identification and header (whose slices have been
/// checked for length already, so only the first four can occur).
fn header_error(error: ParseError, part: ElfPart) -> PayloadError {
    match error {
        ParseError::BadMagic(_) => PayloadError::NotElf,
        ParseError::UnsupportedElfClass(_) => PayloadError::Not64Bit,
        ParseError::UnsupportedElfEndianness(_) => PayloadError::NotLittleEndian,
        ParseError::UnsupportedVersion(_) => PayloadError::UnsupportedVersion,
        _ => PayloadError::Truncated {
            what: part,
            offset: EHDR_SIZE as u64,
        },
    }
}

/// Checks one `PT_LOAD`; `None` for an empty one (`p_memsz == 0`), which is ignored.
fn load_segment(
    index: usize,
    phdr: &ProgramHeader,
    file_len: usize,
    user_start: u64,
    user_end: u64,
) -> Result<Option<Segment>, PayloadError> {
    if phdr.p_filesz > phdr.p_memsz {
        return Err(PayloadError::FileSizeExceedsMemSize { index });
    }
    if phdr.p_memsz == 0 {
        return Ok(None);
    }
    let writable = phdr.p_flags & abi::PF_W != 0;
    let executable = phdr.p_flags & abi::PF_X != 0;
    if writable && executable {
        return Err(PayloadError::WritableAndExecutable { index });
    }
    let align_ok =
        phdr.p_align <= 1 || (phdr.p_align.is_power_of_two() && phdr.p_align >= PAGE_SIZE);
    if !align_ok || phdr.p_vaddr % PAGE_SIZE != phdr.p_offset % PAGE_SIZE {
        return Err(PayloadError::BadAlignment { index });
    }

    let file_range = if phdr.p_filesz == 0 {
        0..0
    } else {
        let end = phdr.p_offset.saturating_add(phdr.p_filesz);
        let truncated = PayloadError::Truncated {
            what: ElfPart::SegmentData { index },
            offset: end,
        };
        match (usize::try_from(phdr.p_offset), usize::try_from(end)) {
            (Ok(start), Ok(end)) if end <= file_len => start..end,
            _ => return Err(truncated),
        }
    };

    let overflow = PayloadError::AddressOverflow {
        index,
        vaddr: phdr.p_vaddr,
        mem_size: phdr.p_memsz,
    };
    let end = phdr.p_vaddr.checked_add(phdr.p_memsz).ok_or(overflow)?;
    let page_start = phdr.p_vaddr & !(PAGE_SIZE - 1);
    let page_end = end.checked_next_multiple_of(PAGE_SIZE).ok_or(overflow)?;
    if page_start < user_start || page_end > user_end {
        return Err(PayloadError::SegmentOutOfRange {
            index,
            vaddr: phdr.p_vaddr,
            end,
        });
    }

    Ok(Some(Segment {
        vaddr: phdr.p_vaddr,
        mem_size: phdr.p_memsz,
        file_range,
        writable,
        executable,
        page_start,
        page_end,
    }))
}

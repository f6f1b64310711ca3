//! Why a payload cannot be loaded: [`PayloadError`] (and the [`ElfPart`] a truncation is in),
//! whose `Display` is the message of the kernel's `task_error` record.

use core::fmt;

use elf::abi;

/// The part of the file a [`PayloadError::Truncated`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfPart {
    /// The 16-byte `e_ident`.
    Identification,
    /// The 64-byte ELF64 file header.
    Header,
    /// The program header table (`e_phoff`, `e_phnum` entries).
    ProgramHeaders,
    /// A segment's file bytes (`p_offset..p_offset + p_filesz`); the program header index.
    SegmentData { index: usize },
}

impl fmt::Display for ElfPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfPart::Identification => f.write_str("the ELF identification"),
            ElfPart::Header => f.write_str("the ELF header"),
            ElfPart::ProgramHeaders => f.write_str("the program header table"),
            ElfPart::SegmentData { index } => write!(f, "the file data of segment {index}"),
        }
    }
}

/// Why a payload cannot be loaded. Segment indices are program header indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadError {
    /// The file does not start with `\x7fELF`.
    NotElf,
    /// `EI_CLASS` is not `ELFCLASS64`.
    Not64Bit,
    /// `EI_DATA` is not `ELFDATA2LSB`.
    NotLittleEndian,
    /// `e_machine` is not `EM_X86_64` (62).
    WrongMachine(u16),
    /// `e_type` is not `ET_EXEC` (2); `ET_DYN` (3) is a PIE or static-pie.
    WrongType(u16),
    /// `e_ident[EI_VERSION]` or `e_version` is not 1.
    UnsupportedVersion,
    /// The file ends before `what` does; `offset` is where `what` ends (saturated at
    /// `u64::MAX` if that overflows).
    Truncated { what: ElfPart, offset: u64 },
    /// `e_phentsize` is not 56, the size of an ELF64 program header.
    BadProgramHeaderSize(u16),
    /// `e_phnum` is `PN_XNUM` (0xffff): extended numbering, which a payload has no use for.
    ExtendedProgramHeaderCount,
    /// A `PT_INTERP` header: the payload is dynamically linked.
    NeedsInterpreter,
    /// A `PT_GNU_STACK` header asks for an executable stack.
    ExecutableStack,
    /// No `PT_LOAD` header with a non-zero `p_memsz`.
    NoLoadableSegment,
    /// More loadable segments than [`Limits::max_segments`](super::Limits::max_segments).
    TooManySegments { max: usize },
    /// `p_align` is not 0, 1 or a power of two >= 4096, or `p_vaddr` and `p_offset` differ
    /// modulo the page size.
    BadAlignment { index: usize },
    /// `p_filesz > p_memsz`.
    FileSizeExceedsMemSize { index: usize },
    /// Both `PF_W` and `PF_X`.
    WritableAndExecutable { index: usize },
    /// `p_vaddr + p_memsz`, or that rounded up to a page, overflows 64 bits.
    AddressOverflow {
        index: usize,
        vaddr: u64,
        mem_size: u64,
    },
    /// The segment's pages are not all inside the user range; `end` is `p_vaddr + p_memsz`.
    SegmentOutOfRange { index: usize, vaddr: u64, end: u64 },
    /// Two segments share at least one page.
    SegmentsOverlap { a: usize, b: usize },
    /// The segments need more than [`Limits::max_bytes`](super::Limits::max_bytes) of memory
    /// (page-rounded; `bytes` is the total up to and including the segment that went over).
    TooLarge { bytes: u64, max: u64 },
    /// The entry point is not inside any executable segment.
    EntryNotExecutable { entry: u64 },
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PayloadError::NotElf => f.write_str("payload is not an ELF file (no \\x7fELF magic)"),
            PayloadError::Not64Bit => f.write_str("payload ELF is not 64-bit (EI_CLASS)"),
            PayloadError::NotLittleEndian => {
                f.write_str("payload ELF is not little-endian (EI_DATA)")
            }
            PayloadError::WrongMachine(machine) => write!(
                f,
                "payload ELF is for machine {machine}, not x86_64 (EM_X86_64 = 62)"
            ),
            PayloadError::WrongType(abi::ET_DYN) => f.write_str(
                "payload ELF is ET_DYN (position-independent or static-pie), which is not \
                 supported yet: link a static non-PIE executable (-static -no-pie)",
            ),
            PayloadError::WrongType(ty) => write!(
                f,
                "payload ELF has type {ty}, not an executable (ET_EXEC = 2; link with -static \
                 -no-pie)"
            ),
            PayloadError::UnsupportedVersion => {
                f.write_str("payload ELF has an unsupported ELF version (not 1)")
            }
            PayloadError::Truncated { what, offset } => write!(
                f,
                "payload ELF is truncated: {what} ends at offset {offset:#x}, past the end of \
                 the file"
            ),
            PayloadError::BadProgramHeaderSize(size) => write!(
                f,
                "payload ELF has program headers of {size} bytes (e_phentsize), not 56"
            ),
            PayloadError::ExtendedProgramHeaderCount => f.write_str(
                "payload ELF uses extended program header numbering (e_phnum = PN_XNUM), \
                 which is not supported",
            ),
            PayloadError::NeedsInterpreter => {
                f.write_str("payload ELF is dynamically linked (has PT_INTERP): link it statically")
            }
            PayloadError::ExecutableStack => f.write_str(
                "payload ELF asks for an executable stack (PT_GNU_STACK with PF_X), which is \
                 not allowed",
            ),
            PayloadError::NoLoadableSegment => {
                f.write_str("payload ELF has no loadable segment (non-empty PT_LOAD)")
            }
            PayloadError::TooManySegments { max } => {
                write!(f, "payload ELF has more than {max} loadable segments")
            }
            PayloadError::BadAlignment { index } => write!(
                f,
                "payload ELF segment {index} is badly aligned (p_align must be 0, 1 or a power \
                 of two >= 4096, and p_vaddr and p_offset must agree modulo 4096)"
            ),
            PayloadError::FileSizeExceedsMemSize { index } => write!(
                f,
                "payload ELF segment {index} has more file bytes than memory (p_filesz > \
                 p_memsz)"
            ),
            PayloadError::WritableAndExecutable { index } => write!(
                f,
                "payload ELF segment {index} is both writable and executable (W^X)"
            ),
            PayloadError::AddressOverflow {
                index,
                vaddr,
                mem_size,
            } => write!(
                f,
                "payload ELF segment {index} at {vaddr:#x} with {mem_size:#x} bytes overflows \
                 the address space"
            ),
            PayloadError::SegmentOutOfRange { index, vaddr, end } => write!(
                f,
                "payload ELF segment {index} [{vaddr:#x}, {end:#x}) is outside the user address \
                 range"
            ),
            PayloadError::SegmentsOverlap { a, b } => {
                write!(f, "payload ELF segments {a} and {b} overlap (share a page)")
            }
            PayloadError::TooLarge { bytes, max } => write!(
                f,
                "payload ELF needs at least {bytes} bytes of memory, more than the limit of \
                 {max}"
            ),
            PayloadError::EntryNotExecutable { entry } => write!(
                f,
                "payload ELF entry point {entry:#x} is not inside an executable segment"
            ),
        }
    }
}

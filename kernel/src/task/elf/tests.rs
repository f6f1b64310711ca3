//! The tests of [`plan`](super::plan): hand-written ELF images, each rule's rejection, a real
//! static executable from the host's `cc`, and property tests that nothing panics.

use super::*;
use alloc::vec;
use elf::abi;
use proptest::prelude::*;

const PF_R: u32 = 4;
const PF_W: u32 = 2;
const PF_X: u32 = 1;
const RX: u32 = PF_R | PF_X;
const RW: u32 = PF_R | PF_W;

/// A program header as the tests write it.
#[derive(Clone, Copy, Debug)]
struct Ph {
    p_type: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

impl Ph {
    fn load(flags: u32, offset: u64, vaddr: u64, filesz: u64, memsz: u64) -> Ph {
        Ph {
            p_type: abi::PT_LOAD,
            flags,
            offset,
            vaddr,
            filesz,
            memsz,
            align: 0x1000,
        }
    }

    fn other(p_type: u32, flags: u32) -> Ph {
        Ph {
            p_type,
            flags,
            offset: 0,
            vaddr: 0,
            filesz: 0,
            memsz: 0,
            align: 0x10,
        }
    }
}

/// An ELF image written by hand: header, program headers right after it (at 64), then
/// zero padding (with a recognisable byte pattern) up to `len`.
#[derive(Clone, Debug)]
struct Image {
    class: u8,
    data: u8,
    ident_version: u8,
    e_type: u16,
    machine: u16,
    version: u32,
    entry: u64,
    phoff: u64,
    phentsize: u16,
    phnum: Option<u16>,
    phs: Vec<Ph>,
    len: usize,
}

impl Image {
    fn new(entry: u64, phs: Vec<Ph>, len: usize) -> Image {
        Image {
            class: abi::ELFCLASS64,
            data: abi::ELFDATA2LSB,
            ident_version: 1,
            e_type: abi::ET_EXEC,
            machine: abi::EM_X86_64,
            version: 1,
            entry,
            phoff: 64,
            phentsize: 56,
            phnum: None,
            phs,
            len,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&abi::ELFMAGIC);
        out.extend_from_slice(&[self.class, self.data, self.ident_version, 0, 0]);
        out.resize(16, 0);
        let phnum = self.phnum.unwrap_or(self.phs.len() as u16);
        let big = self.data == abi::ELFDATA2MSB;
        let u16b = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u64b = |v: u64| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        out.extend_from_slice(&u16b(self.e_type));
        out.extend_from_slice(&u16b(self.machine));
        out.extend_from_slice(&u32b(self.version));
        out.extend_from_slice(&u64b(self.entry));
        out.extend_from_slice(&u64b(self.phoff));
        out.extend_from_slice(&u64b(0)); // e_shoff
        out.extend_from_slice(&u32b(0)); // e_flags
        out.extend_from_slice(&u16b(64)); // e_ehsize
        out.extend_from_slice(&u16b(self.phentsize));
        out.extend_from_slice(&u16b(phnum));
        out.extend_from_slice(&u16b(64)); // e_shentsize
        out.extend_from_slice(&u16b(0)); // e_shnum
        out.extend_from_slice(&u16b(0)); // e_shstrndx
        assert_eq!(out.len(), 64);
        for ph in &self.phs {
            out.extend_from_slice(&u32b(ph.p_type));
            out.extend_from_slice(&u32b(ph.flags));
            out.extend_from_slice(&u64b(ph.offset));
            out.extend_from_slice(&u64b(ph.vaddr));
            out.extend_from_slice(&u64b(ph.vaddr)); // p_paddr
            out.extend_from_slice(&u64b(ph.filesz));
            out.extend_from_slice(&u64b(ph.memsz));
            out.extend_from_slice(&u64b(ph.align));
        }
        let start = out.len();
        out.extend((start..self.len.max(start)).map(|i| (i % 251) as u8));
        out
    }
}

/// R-X text at 0x401000 (file 0x1000..0x1080), RW- data at 0x403010 (file 0x2010..0x2030)
/// with bss up to 0x404110, plus PT_NOTE and a non-executable PT_GNU_STACK.
fn valid() -> Image {
    Image::new(
        0x401000,
        vec![
            Ph::load(RX, 0x1000, 0x401000, 0x80, 0x80),
            Ph::load(RW, 0x2010, 0x403010, 0x20, 0x1100),
            Ph::other(abi::PT_NOTE, PF_R),
            Ph::other(abi::PT_GNU_STACK, RW),
        ],
        0x2030,
    )
}

fn plan_of(image: &Image) -> Result<LoadPlan, PayloadError> {
    plan(&image.bytes(), &Limits::default())
}

#[test]
fn plans_a_two_segment_payload_exactly() {
    let plan = plan_of(&valid()).unwrap();
    assert_eq!(
        plan,
        LoadPlan {
            entry: 0x401000,
            segments: vec![
                Segment {
                    vaddr: 0x401000,
                    mem_size: 0x80,
                    file_range: 0x1000..0x1080,
                    writable: false,
                    executable: true,
                    page_start: 0x401000,
                    page_end: 0x402000,
                },
                Segment {
                    vaddr: 0x403010,
                    mem_size: 0x1100,
                    file_range: 0x2010..0x2030,
                    writable: true,
                    executable: false,
                    page_start: 0x403000,
                    page_end: 0x405000,
                },
            ],
        }
    );
    assert_eq!(plan.mapped_bytes(), 0x3000);
    assert_eq!(plan.segments[1].file_size(), 0x20);
}

#[test]
fn segments_come_out_sorted_and_empty_ones_are_ignored() {
    let mut image = valid();
    image.phs.swap(0, 1);
    // An empty PT_LOAD anywhere (even at page 0, W+X, odd alignment) maps nothing.
    image.phs.push(Ph {
        align: 3,
        ..Ph::load(RW | PF_X, 0x7777, 0, 0, 0)
    });
    let plan = plan_of(&image).unwrap();
    assert_eq!(plan, plan_of(&valid()).unwrap());
}

#[test]
fn accepts_alignment_variants_and_bss_only_segments() {
    let mut image = valid();
    image.phs[0].align = 0x20_0000; // ld's old max-page-size
    image.phs[1].align = 0;
    // A bss-only segment whose p_offset lies past the end of the file.
    image.phs.push(Ph::load(RW, 0x9_9000, 0x50_0000, 0, 0x10));
    let plan = plan_of(&image).unwrap();
    assert_eq!(plan.segments.len(), 3);
    assert_eq!(plan.segments[2].file_range, 0..0);
    assert_eq!(plan.segments[2].page_end, 0x50_1000);
}

#[test]
fn rejects_what_is_not_a_64_bit_little_endian_x86_64_elf() {
    type Edit = fn(&mut Image);
    let cases: [(Edit, PayloadError); 7] = [
        (|i| i.class = abi::ELFCLASS32, PayloadError::Not64Bit),
        (|i| i.class = 7, PayloadError::Not64Bit),
        (|i| i.data = abi::ELFDATA2MSB, PayloadError::NotLittleEndian),
        (
            |i| i.machine = abi::EM_AARCH64,
            PayloadError::WrongMachine(183),
        ),
        (|i| i.ident_version = 2, PayloadError::UnsupportedVersion),
        (|i| i.version = 0, PayloadError::UnsupportedVersion),
        (|i| i.e_type = abi::ET_REL, PayloadError::WrongType(1)),
    ];
    for (edit, expected) in cases {
        let mut image = valid();
        edit(&mut image);
        assert_eq!(plan_of(&image), Err(expected), "{image:?}");
    }
    for bytes in [&b""[..], b"\x7fEL", b"MZ\x90\x00", b"#!/bin/sh\necho hi\n"] {
        assert_eq!(plan(bytes, &Limits::default()), Err(PayloadError::NotElf));
    }
    let mut bytes = valid().bytes();
    bytes[1] = b'e';
    assert_eq!(plan(&bytes, &Limits::default()), Err(PayloadError::NotElf));
}

#[test]
fn rejects_position_independent_payloads() {
    let mut image = valid();
    image.e_type = abi::ET_DYN;
    let error = plan_of(&image).unwrap_err();
    assert_eq!(error, PayloadError::WrongType(3));
    assert!(error.to_string().contains("static-pie"), "{error}");
}

#[test]
fn rejects_truncated_headers() {
    let bytes = valid().bytes();
    for len in [4, 15] {
        assert_eq!(
            plan(&bytes[..len], &Limits::default()),
            Err(PayloadError::Truncated {
                what: ElfPart::Identification,
                offset: 16
            })
        );
    }
    for len in [16, 40, 63] {
        assert_eq!(
            plan(&bytes[..len], &Limits::default()),
            Err(PayloadError::Truncated {
                what: ElfPart::Header,
                offset: 64
            })
        );
    }
    // The table is 4 * 56 bytes from offset 64.
    for len in [64, 100, 64 + 4 * 56 - 1] {
        assert_eq!(
            plan(&bytes[..len], &Limits::default()),
            Err(PayloadError::Truncated {
                what: ElfPart::ProgramHeaders,
                offset: 64 + 4 * 56
            })
        );
    }
    let mut image = valid();
    image.phoff = u64::MAX - 8;
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::Truncated {
            what: ElfPart::ProgramHeaders,
            offset: u64::MAX
        })
    );
    let mut image = valid();
    image.phnum = Some(200);
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::Truncated {
            what: ElfPart::ProgramHeaders,
            offset: 64 + 200 * 56
        })
    );
}

#[test]
fn rejects_odd_program_header_tables() {
    let mut image = valid();
    image.phentsize = 32;
    assert_eq!(plan_of(&image), Err(PayloadError::BadProgramHeaderSize(32)));
    let mut image = valid();
    image.phnum = Some(0xffff);
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::ExtendedProgramHeaderCount)
    );
    for edit in [
        |i: &mut Image| i.phnum = Some(0),
        |i: &mut Image| i.phoff = 0,
        |i: &mut Image| i.phs.retain(|ph| ph.p_type != abi::PT_LOAD),
        |i: &mut Image| i.phs.iter_mut().for_each(|ph| ph.p_type = abi::PT_NOTE),
        |i: &mut Image| {
            for ph in &mut i.phs {
                ph.filesz = 0;
                ph.memsz = 0;
            }
        },
    ] {
        let mut image = valid();
        edit(&mut image);
        assert_eq!(plan_of(&image), Err(PayloadError::NoLoadableSegment));
    }
}

#[test]
fn rejects_segment_data_beyond_the_end_of_the_file() {
    let mut image = valid();
    image.len = 0x202f;
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::Truncated {
            what: ElfPart::SegmentData { index: 1 },
            offset: 0x2030
        })
    );
    let mut image = valid();
    image.phs[1].offset = u64::MAX - 0xfef; // still ≡ vaddr (mod 4096)
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::Truncated {
            what: ElfPart::SegmentData { index: 1 },
            offset: u64::MAX - 0xfef + 0x20
        })
    );
    // p_offset + p_filesz overflows: the offset saturates.
    let mut image = valid();
    image.phs[1].filesz = u64::MAX;
    image.phs[1].memsz = u64::MAX;
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::Truncated {
            what: ElfPart::SegmentData { index: 1 },
            offset: u64::MAX
        })
    );
}

#[test]
fn rejects_overlapping_segments() {
    // Data starting inside the text's page.
    let mut image = valid();
    image.phs[1].vaddr = 0x401010;
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::SegmentsOverlap { a: 0, b: 1 })
    );
    // Text's last page is data's first page (sharing a page is refused too).
    let mut image = valid();
    image.phs[0].memsz = 0x2011;
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::SegmentsOverlap { a: 0, b: 1 })
    );
    // One segment inside another, listed after a third.
    let mut image = valid();
    image.phs[0].memsz = 0x10_0000;
    image.phs[1].vaddr = 0x480010;
    image
        .phs
        .insert(0, Ph::load(PF_R, 0, 0x40_0000, 0x40, 0x40));
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::SegmentsOverlap { a: 1, b: 2 })
    );
}

#[test]
fn rejects_addresses_outside_the_user_range() {
    let cases = [
        (0xffff_8000_0000_0010, 0xffff_8000_0000_1110),
        (0x0000_8000_0000_0010, 0x0000_8000_0000_1110),
        (0x0000_7fff_0000_0010, 0x0000_7fff_0000_1110),
        (0x0000_7ffe_ffff_f010, 0x0000_7fff_0000_0110),
        (0x10, 0x1110),
        (0x3f_f010, 0x40_0110),
    ];
    for (vaddr, end) in cases {
        let mut image = valid();
        image.phs[1].vaddr = vaddr;
        assert_eq!(
            plan_of(&image),
            Err(PayloadError::SegmentOutOfRange {
                index: 1,
                vaddr,
                end
            }),
            "{vaddr:#x}"
        );
    }
    // Ending exactly at the limit is fine.
    let mut image = valid();
    image.phs[1].vaddr = Limits::DEFAULT_USER_END - 0x1100;
    image.phs[1].offset = 0x2000 - 0x100;
    assert!(plan_of(&image).is_ok());
}

#[test]
fn limits_cannot_open_page_zero_or_the_upper_half() {
    let wide = Limits {
        user_start: 0,
        user_end: u64::MAX,
        ..Limits::default()
    };
    let mut image = valid();
    image.phs[1].vaddr = 0x10;
    assert!(matches!(
        plan(&image.bytes(), &wide),
        Err(PayloadError::SegmentOutOfRange { index: 1, .. })
    ));
    image.phs[1].vaddr = 0x1010;
    assert!(plan(&image.bytes(), &wide).is_ok());
    image.phs[1].vaddr = LOWER_HALF_END - 0x1000 + 0x10;
    assert!(matches!(
        plan(&image.bytes(), &wide),
        Err(PayloadError::SegmentOutOfRange { index: 1, .. })
    ));
    // And narrower limits are honoured.
    let narrow = Limits {
        user_start: 0x40_2000,
        ..Limits::default()
    };
    assert!(matches!(
        plan(&valid().bytes(), &narrow),
        Err(PayloadError::SegmentOutOfRange { index: 0, .. })
    ));
}

#[test]
fn rejects_address_overflow() {
    for (vaddr, memsz) in [
        (u64::MAX - 0xfff, 0x1100),
        (u64::MAX - 0xfff, 0x10),
        (0x401000, u64::MAX),
    ] {
        let mut image = valid();
        image.phs[0].vaddr = vaddr;
        image.phs[0].memsz = memsz;
        image.phs[0].filesz = 0x10;
        assert_eq!(
            plan_of(&image),
            Err(PayloadError::AddressOverflow {
                index: 0,
                vaddr,
                mem_size: memsz
            }),
            "{vaddr:#x} {memsz:#x}"
        );
    }
}

#[test]
fn rejects_writable_and_executable_segments() {
    let mut image = valid();
    image.phs[1].flags = PF_R | PF_W | PF_X;
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::WritableAndExecutable { index: 1 })
    );
}

#[test]
fn rejects_an_entry_outside_executable_segments() {
    for entry in [0, 0x400fff, 0x401080, 0x403010, 0x404000, u64::MAX] {
        let mut image = valid();
        image.entry = entry;
        assert_eq!(
            plan_of(&image),
            Err(PayloadError::EntryNotExecutable { entry }),
            "{entry:#x}"
        );
    }
    let mut image = valid();
    image.entry = 0x40107f;
    assert_eq!(plan_of(&image).unwrap().entry, 0x40107f);
}

#[test]
fn rejects_more_file_bytes_than_memory() {
    let mut image = valid();
    image.phs[0].memsz = 0x7f;
    image.entry = 0x401000;
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::FileSizeExceedsMemSize { index: 0 })
    );
}

#[test]
fn rejects_bad_alignment() {
    for edit in [
        |i: &mut Image| i.phs[0].align = 0x800,
        |i: &mut Image| i.phs[0].align = 0x3000,
        |i: &mut Image| i.phs[0].align = 2,
        |i: &mut Image| i.phs[0].offset = 0x1008,
        |i: &mut Image| i.phs[0].vaddr = 0x401008,
    ] {
        let mut image = valid();
        edit(&mut image);
        assert_eq!(
            plan_of(&image),
            Err(PayloadError::BadAlignment { index: 0 })
        );
    }
}

#[test]
fn rejects_payloads_over_the_memory_budget() {
    let mut image = valid();
    image.phs[1].memsz = 64 << 20; // 0x403010 + 64 MiB: 64 MiB + 1 page for data
    assert_eq!(
        plan_of(&image),
        Err(PayloadError::TooLarge {
            bytes: 0x1000 + (64 << 20) + 0x1000,
            max: 64 << 20
        })
    );
    let small = Limits {
        max_bytes: 0x2fff,
        ..Limits::default()
    };
    assert_eq!(
        plan(&valid().bytes(), &small),
        Err(PayloadError::TooLarge {
            bytes: 0x3000,
            max: 0x2fff
        })
    );
    let exact = Limits {
        max_bytes: 0x3000,
        ..Limits::default()
    };
    assert!(plan(&valid().bytes(), &exact).is_ok());
}

#[test]
fn rejects_too_many_segments() {
    let segments = |n: u64| {
        let phs = (0..n)
            .map(|i| Ph::load(RX, 0x1000, 0x40_1000 + i * 0x1000, 0x10, 0x10))
            .collect();
        Image::new(0x40_1000, phs, 0x1010)
    };
    assert_eq!(plan_of(&segments(16)).unwrap().segments.len(), 16);
    assert_eq!(
        plan_of(&segments(17)),
        Err(PayloadError::TooManySegments { max: 16 })
    );
    let one = Limits {
        max_segments: 1,
        ..Limits::default()
    };
    assert_eq!(
        plan(&valid().bytes(), &one),
        Err(PayloadError::TooManySegments { max: 1 })
    );
}

#[test]
fn rejects_interpreters_and_executable_stacks() {
    let mut image = valid();
    image.phs.push(Ph::other(abi::PT_INTERP, PF_R));
    assert_eq!(plan_of(&image), Err(PayloadError::NeedsInterpreter));
    let mut image = valid();
    image.phs[3].flags = RW | PF_X;
    assert_eq!(plan_of(&image), Err(PayloadError::ExecutableStack));
    // Other headers, whatever their contents, are ignored.
    let mut image = valid();
    for p_type in [abi::PT_DYNAMIC, abi::PT_TLS, abi::PT_GNU_RELRO, 0x6fff_ffff] {
        image.phs.push(Ph {
            vaddr: u64::MAX,
            memsz: u64::MAX,
            ..Ph::other(p_type, RW | PF_X)
        });
    }
    assert!(plan_of(&image).is_ok());
}

#[test]
fn messages_name_the_problem() {
    let cases = [
        (PayloadError::NotElf, "not an ELF"),
        (PayloadError::WrongMachine(40), "machine 40"),
        (
            PayloadError::Truncated {
                what: ElfPart::SegmentData { index: 2 },
                offset: 0x2030,
            },
            "file data of segment 2 ends at offset 0x2030",
        ),
        (
            PayloadError::SegmentOutOfRange {
                index: 1,
                vaddr: 0x10,
                end: 0x20,
            },
            "segment 1 [0x10, 0x20) is outside",
        ),
        (
            PayloadError::SegmentsOverlap { a: 0, b: 3 },
            "segments 0 and 3 overlap",
        ),
        (PayloadError::WritableAndExecutable { index: 4 }, "W^X"),
        (
            PayloadError::EntryNotExecutable { entry: 0x1234 },
            "entry point 0x1234",
        ),
        (PayloadError::TooLarge { bytes: 9, max: 8 }, "limit of 8"),
    ];
    for (error, needle) in cases {
        let message = error.to_string();
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }
}

/// Everything the loader relies on, checked against the input.
fn assert_invariants(bytes: &[u8], limits: &Limits, plan: &LoadPlan) {
    let (start, end) = limits.effective_range();
    assert!(!plan.segments.is_empty());
    assert!(plan.segments.len() <= limits.max_segments);
    assert!(plan.mapped_bytes() <= limits.max_bytes);
    for segment in &plan.segments {
        assert!(segment.mem_size > 0);
        assert!(start >= PAGE_SIZE && end <= LOWER_HALF_END);
        assert!(segment.page_start >= start && segment.page_end <= end);
        assert_eq!(segment.page_start % PAGE_SIZE, 0);
        assert_eq!(segment.page_end % PAGE_SIZE, 0);
        assert!(segment.page_start <= segment.vaddr);
        assert!(segment.vaddr + segment.mem_size <= segment.page_end);
        assert!(segment.page_end - (segment.vaddr + segment.mem_size) < PAGE_SIZE);
        assert!(!(segment.writable && segment.executable));
        assert!(segment.file_range.start <= segment.file_range.end);
        assert!(segment.file_range.end <= bytes.len());
        assert!(segment.file_size() as u64 <= segment.mem_size);
    }
    for pair in plan.segments.windows(2) {
        assert!(pair[0].page_end <= pair[1].page_start);
    }
    assert!(
        plan.segments
            .iter()
            .any(|s| s.executable && s.contains(plan.entry))
    );
}

#[test]
fn invariants_hold_for_the_fixtures() {
    let limits = Limits::default();
    let bytes = valid().bytes();
    assert_invariants(&bytes, &limits, &plan(&bytes, &limits).unwrap());
}

/// A real static executable built by the host's C compiler, if it has one; skipped
/// (with a note) when `cc` is missing or cannot link static executables.
#[test]
fn plans_a_real_static_executable() {
    use std::process::Command;
    let dir = std::env::temp_dir().join(format!("baremark-elf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("payload.c");
    std::fs::write(
        &source,
        "int data = 3; int bss[4096];\n\
         void _start(void) { bss[data] = data; for (;;) {} }\n",
    )
    .unwrap();
    let build = |out: &str, flags: &[&str]| -> Option<Vec<u8>> {
        let path = dir.join(out);
        let status = Command::new("cc")
            .args(["-static", "-nostdlib", "-O2", "-o"])
            .arg(&path)
            .args(flags)
            .arg(&source)
            .output()
            .ok()?;
        if !status.status.success() {
            return None;
        }
        std::fs::read(&path).ok()
    };
    let Some(exec) = build("exec", &["-no-pie"]) else {
        std::println!("skipped: no `cc` that links static executables");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let limits = Limits::default();
    let plan = plan(&exec, &limits).unwrap();
    assert_invariants(&exec, &limits, &plan);
    assert_eq!(
        plan.entry,
        u64::from_le_bytes(exec[24..32].try_into().unwrap())
    );
    assert!(
        plan.segments
            .iter()
            .any(|s| s.writable && s.mem_size > s.file_size() as u64 + 4096 * 4 - 1),
        "{plan:?}"
    );
    if let Some(merged) = build("merged", &["-no-pie", "-Wl,-z,noseparate-code"]) {
        let merged_plan = super::plan(&merged, &limits).unwrap();
        assert_invariants(&merged, &limits, &merged_plan);
    }
    if let Some(pie) = build("pie", &["-static-pie"]) {
        assert_eq!(
            super::plan(&pie, &limits),
            Err(PayloadError::WrongType(abi::ET_DYN))
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Program headers that are mostly well-formed (so that many images are accepted and the
/// invariants are exercised), now and then with a wild field.
fn arbitrary_ph() -> impl Strategy<Value = Ph> {
    (
        prop_oneof![
            12 => Just(abi::PT_LOAD),
            1 => Just(abi::PT_NOTE),
            1 => Just(abi::PT_GNU_STACK),
            1 => any::<u32>(),
        ],
        prop_oneof![4 => Just(RX), 4 => Just(RW), 2 => Just(PF_R), 1 => 0u32..8],
        // File page and in-page offset; the address page.
        0u64..3,
        0u64..0x1000,
        prop_oneof![
            12 => (0x400u64..0x500).prop_map(|page| page * 0x1000),
            1 => (0u64..0x10_0000).prop_map(|page| page * 0x1000),
            1 => any::<u64>(),
        ],
        prop_oneof![12 => 0u64..0x400, 1 => any::<u64>()],
        prop_oneof![12 => 0u64..0x2000, 1 => any::<u64>()],
        prop_oneof![
            12 => Just(0x1000u64),
            1 => Just(0),
            1 => Just(0x20_0000),
            1 => any::<u64>(),
        ],
        prop_oneof![20 => Just(0u64), 1 => any::<u64>()],
    )
        .prop_map(
            |(p_type, flags, file_page, in_page, page, filesz, extra, align, skew)| Ph {
                p_type,
                flags,
                offset: file_page * 0x1000 + in_page,
                vaddr: page.wrapping_add(in_page).wrapping_add(skew),
                filesz,
                memsz: filesz.wrapping_add(extra),
                align,
            },
        )
}

/// An image from [`arbitrary_ph`] headers, its entry point most of the time inside one of
/// them, and limits (mostly the defaults).
fn arbitrary_image() -> impl Strategy<Value = (Image, Limits)> {
    (
        proptest::collection::vec(arbitrary_ph(), 1..8),
        prop_oneof![8 => any::<(usize, u64)>().prop_map(Some), 1 => Just(None)],
        any::<u64>(),
        prop_oneof![8 => Just(0x3400usize), 1 => 0usize..0x3400],
        prop_oneof![8 => Just(16usize), 1 => 0usize..20],
        prop_oneof![8 => Just(64u64 << 20), 1 => 0u64..0x20000],
    )
        .prop_map(|(phs, pick, wild_entry, len, max_segments, max_bytes)| {
            let entry = match pick {
                Some((which, offset)) => {
                    // Prefer an executable PT_LOAD, as a linker would.
                    let text: Vec<&Ph> = phs
                        .iter()
                        .filter(|ph| ph.p_type == abi::PT_LOAD && ph.flags & PF_X != 0)
                        .collect();
                    let ph = match text.is_empty() {
                        true => &phs[which % phs.len()],
                        false => text[which % text.len()],
                    };
                    ph.vaddr.wrapping_add(offset % ph.memsz.max(1))
                }
                None => wild_entry,
            };
            let limits = Limits {
                max_segments,
                max_bytes,
                ..Limits::default()
            };
            (Image::new(entry, phs, len), limits)
        })
}

/// The generator is only worth its name if it also makes payloads that are accepted.
#[test]
fn arbitrary_images_are_often_accepted() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arbitrary_image();
    let (mut accepted, mut several) = (0, 0);
    for _ in 0..1000 {
        let (image, limits) = strategy.new_tree(&mut runner).unwrap().current();
        let bytes = image.bytes();
        if let Ok(plan) = plan(&bytes, &limits) {
            assert_invariants(&bytes, &limits, &plan);
            accepted += 1;
            several += usize::from(plan.segments.len() > 1);
        }
    }
    assert!(accepted >= 50 && several >= 25, "{accepted} {several}");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let limits = Limits::default();
        if let Ok(plan) = plan(&bytes, &limits) {
            assert_invariants(&bytes, &limits, &plan);
        }
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_header_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..2048),
        phnum in 0u16..40,
    ) {
        let mut image = Image::new(0x401000, Vec::new(), 0);
        image.phnum = Some(phnum);
        let mut bytes = image.bytes();
        bytes.extend_from_slice(&tail);
        let limits = Limits::default();
        if let Ok(plan) = plan(&bytes, &limits) {
            assert_invariants(&bytes, &limits, &plan);
        }
    }

    #[test]
    fn damaged_valid_images_never_panic(
        cut in 0usize..0x2100,
        flips in proptest::collection::vec((0usize..0x200, any::<u8>()), 0..6),
    ) {
        let mut bytes = valid().bytes();
        for (at, xor) in flips {
            bytes[at] ^= xor;
        }
        bytes.truncate(cut);
        let limits = Limits::default();
        if let Ok(plan) = plan(&bytes, &limits) {
            assert_invariants(&bytes, &limits, &plan);
        }
    }

    #[test]
    fn generated_images_satisfy_the_invariants_when_accepted(
        (image, limits) in arbitrary_image(),
    ) {
        let bytes = image.bytes();
        if let Ok(plan) = plan(&bytes, &limits) {
            assert_invariants(&bytes, &limits, &plan);
        }
    }
}

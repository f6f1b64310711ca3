//! Loading a payload: its `payloads/<name>.elf` member found in the ramdisk, its ELF planned
//! (`task::elf`) and mapped into a fresh address space with its stack and counter page.

use alloc::format;

use baremark_hw::user::{self, AddressSpace};

use super::super::abi::{self, STACK_PAGES, STACK_TOP, USER_PAGE_ADDR};
use super::super::elf::{self, Limits, LoadPlan};
use super::super::ring3::Task;
use crate::say;

/// The `payloads/<name>.elf` member called `name` in `ramdisk`: its name (borrowed from the
/// ramdisk) and bytes.
pub(super) fn find_payload(
    ramdisk: &'static [u8],
    name: &str,
) -> Option<(&'static str, &'static [u8])> {
    crate::devices::ramdisk::entries(ramdisk)
        .map_while(Result::ok)
        .find_map(|e| match abi::payload_name(e.prefix, e.name) {
            Some(n) if n == name => Some((n, e.data)),
            _ => None,
        })
}

/// Why a payload could not be loaded.
pub(super) struct LoadError {
    pub(super) message: alloc::string::String,
    /// The machine ran out of free memory (the ELF itself was fine): `spawn` says `ENOMEM`.
    pub(super) out_of_memory: bool,
}

impl LoadError {
    fn new(message: alloc::string::String) -> LoadError {
        LoadError {
            message,
            out_of_memory: false,
        }
    }

    /// A mapping failed: out of memory if that is why.
    fn mapping(e: user::MapError, what: core::fmt::Arguments<'_>) -> LoadError {
        let out_of_memory = e == user::MapError::OutOfFrames;
        let message = if out_of_memory {
            let free = baremark_hw::paging::frame_stats().free_frames;
            format!("not enough free memory: {what} ({free} frames of 4 KiB free)")
        } else {
            format!("{what}: {e:?}")
        };
        LoadError {
            message,
            out_of_memory,
        }
    }
}

/// Plans and maps a payload: its segments, its stack, its counter page. `Err` says why not (an
/// address space mapped in part is dropped, so its frames go back).
pub(super) fn load(task: Task, bytes: &[u8]) -> Result<(LoadPlan, AddressSpace), LoadError> {
    let plan = elf::plan(bytes, &Limits::default()).map_err(|e| LoadError::new(format!("{e}")))?;
    let mut space =
        AddressSpace::new().map_err(|e| LoadError::mapping(e, format_args!("no address space")))?;
    for (i, seg) in plan.segments.iter().enumerate() {
        let mut page = seg.page_start;
        while page < seg.page_end {
            space.map(page, seg.writable, seg.executable).map_err(|e| {
                LoadError::mapping(e, format_args!("mapping segment {i} at {page:#x}"))
            })?;
            page += user::PAGE_SIZE;
        }
        let file = bytes.get(seg.file_range.clone()).ok_or_else(|| {
            LoadError::new(format!("segment {i}: file range outside the payload"))
        })?;
        space
            .write(seg.vaddr, file)
            .map_err(|e| LoadError::new(format!("copying segment {i}: {e:?}")))?;
        // The frames are fresh and zeroed; zero the bss explicitly all the same (the loader's
        // contract, whatever the frame allocator does).
        let bss = seg.mem_size - file.len() as u64;
        space
            .zero(seg.vaddr + file.len() as u64, bss)
            .map_err(|e| LoadError::new(format!("zeroing the bss of segment {i}: {e:?}")))?;
    }
    space
        .map_stack(STACK_TOP, STACK_PAGES)
        .map_err(|e| LoadError::mapping(e, format_args!("mapping the stack")))?;
    space
        .map(USER_PAGE_ADDR, false, false)
        .map_err(|e| LoadError::mapping(e, format_args!("mapping the counter page")))?;
    say!(
        "task   {}: entry {:#x}, {} segments, {} KiB",
        task.name,
        plan.entry,
        plan.segments.len(),
        plan.mapped_bytes() >> 10
    );
    Ok((plan, space))
}

//! The vector registers of ring 3: x87, SSE and AVX (and AVX-512 where the CPU has it) turned
//! on at boot ([`enable`]) and switched between tasks lazily ([`VectorState`]).
//!
//! The kernel is built soft-float (`x86_64-unknown-none`) and never executes a vector
//! instruction, so a task's vector registers stay in the CPU across all its kernel entries;
//! only another task's run can change them. Each task owns a [`VectorState`] (an XSAVE area,
//! or an FXSAVE area on a CPU without XSAVE). [`VectorState::load`], called before every run,
//! does nothing when the task already owns the registers; otherwise it saves them into the
//! previous owner's area and loads the task's. So one task at a time (the default) never pays
//! for a save, and round-robin pays one save and one restore per switch between two tasks, all
//! in kernel time (never in a task's counts). A new task's area holds the init state, so
//! nothing an earlier task left in the registers is visible to it.

use alloc::boxed::Box;
use core::arch::asm;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, Ordering};

use raw_cpuid::native_cpuid::cpuid_count;
use x86_64::registers::control::{Cr0, Cr0Flags, Cr4, Cr4Flags};
use x86_64::registers::xcontrol::XCr0;

/// XCR0 state components: x87, SSE, AVX, and AVX-512's three (opmask, ZMM_Hi256, Hi16_ZMM).
const XCR0_X87: u64 = 1 << 0;
const XCR0_SSE: u64 = 1 << 1;
const XCR0_AVX: u64 = 1 << 2;
const XCR0_AVX512: u64 = 0b111 << 5;

/// The save area's size: the XSAVE standard format with AVX-512 is 2,688 bytes. Components
/// that would not fit (AMX's tile data) are never enabled.
const AREA_BYTES: usize = 4096;

/// How the registers are saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No SSE (or no FXSAVE): nothing enabled, nothing switched.
    None = 0,
    /// FXSAVE / FXRSTOR: x87 and SSE.
    Fxsave = 1,
    /// XSAVE / XRSTOR of the components in XCR0.
    Xsave = 2,
}

static MODE: AtomicU8 = AtomicU8::new(Mode::None as u8);
static XCR0: AtomicU64 = AtomicU64::new(0);
/// The area of the task whose state is in the registers (null: none; the registers then
/// hold nothing anyone needs).
/// Per CPU: whose state the vector registers hold (null: no one's). A task never migrates, so
/// its area is only ever an owner on the CPU it runs on.
static OWNER: [AtomicPtr<Area>; crate::layout::MAX_CPUS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; crate::layout::MAX_CPUS];

/// This CPU's owner slot.
#[inline]
fn owner() -> &'static AtomicPtr<Area> {
    &OWNER[crate::percpu::index()]
}

/// Clears `me` as an owner on every CPU (a task's state is gone or reset).
fn disown(me: *mut Area) {
    for slot in &OWNER {
        let _ = slot.compare_exchange(me, ptr::null_mut(), Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// What [`enable`] turned on, for the boot report.
#[derive(Clone, Copy, Debug)]
pub struct VectorSupport {
    pub mode: Mode,
    /// XCR0 as written (0 without XSAVE).
    pub xcr0: u64,
    pub avx: bool,
    pub avx512: bool,
    /// Bytes of one task's saved state.
    pub area_bytes: u32,
}

fn mode() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        1 => Mode::Fxsave,
        2 => Mode::Xsave,
        _ => Mode::None,
    }
}

/// Lets ring 3 use x87, SSE and, with XSAVE, AVX and AVX-512: CR0.EM clear and CR0.MP set,
/// CR4.OSFXSR and OSXMMEXCPT, CR4.OSXSAVE and XCR0. Call once at boot, before any task.
pub fn enable() -> VectorSupport {
    let leaf1 = cpuid_count(1, 0);
    let fxsr = leaf1.edx & (1 << 24) != 0;
    let sse = leaf1.edx & (1 << 25) != 0;
    let xsave = leaf1.ecx & (1 << 26) != 0;
    let avx = leaf1.ecx & (1 << 28) != 0;
    let mut support = VectorSupport {
        mode: Mode::None,
        xcr0: 0,
        avx: false,
        avx512: false,
        area_bytes: 0,
    };
    if !(fxsr && sse) {
        return support;
    }
    // SAFETY: the CPU has FXSR and SSE (CPUID.1:EDX). These bits only decide which vector
    // instructions may run and how their exceptions are reported; the kernel itself executes
    // none (soft-float), so nothing the kernel does changes. EM clear: x87 is not emulated;
    // MP with TS clear: WAIT/FWAIT never trap.
    unsafe {
        Cr0::update(|f| {
            f.remove(Cr0Flags::EMULATE_COPROCESSOR | Cr0Flags::TASK_SWITCHED);
            f.insert(Cr0Flags::MONITOR_COPROCESSOR);
        });
        Cr4::update(|f| f.insert(Cr4Flags::OSFXSR | Cr4Flags::OSXMMEXCPT_ENABLE));
    }
    support.mode = Mode::Fxsave;
    support.area_bytes = 512;
    if xsave {
        let leaf_d = cpuid_count(0xd, 0);
        let supported = u64::from(leaf_d.eax) | (u64::from(leaf_d.edx) << 32);
        let avx512 = cpuid_count(7, 0).ebx & (1 << 16) != 0;
        let mut want = XCR0_X87 | XCR0_SSE;
        if avx && supported & XCR0_AVX != 0 {
            want |= XCR0_AVX;
            if avx512 && supported & XCR0_AVX512 == XCR0_AVX512 {
                want |= XCR0_AVX512;
            }
        }
        // SAFETY: the CPU has XSAVE (CPUID.1:ECX bit 26); `want` holds only components CPUID
        // leaf 0DH reports as supported, with x87 set and AVX-512's three together, as XSETBV
        // requires. Like the bits above, this only widens what ring 3 may execute.
        unsafe {
            Cr4::update(|f| f.insert(Cr4Flags::OSXSAVE));
            XCr0::write_raw(want);
        }
        // EBX: the save area's size for the components now enabled.
        let mut bytes = cpuid_count(0xd, 0).ebx;
        if bytes as usize > AREA_BYTES {
            want &= XCR0_X87 | XCR0_SSE | XCR0_AVX;
            // SAFETY: as above, with fewer components.
            unsafe { XCr0::write_raw(want) };
            bytes = cpuid_count(0xd, 0).ebx;
        }
        support.mode = Mode::Xsave;
        support.xcr0 = want;
        support.avx = want & XCR0_AVX != 0;
        support.avx512 = want & XCR0_AVX512 != 0;
        support.area_bytes = bytes;
        XCR0.store(want, Ordering::Relaxed);
    }
    MODE.store(support.mode as u8, Ordering::Relaxed);
    support
}

/// An XSAVE (or FXSAVE) area: 64-byte aligned, as XSAVE requires.
#[repr(C, align(64))]
struct Area([u8; AREA_BYTES]);

/// One task's vector registers while another task has the CPU's.
pub struct VectorState(Box<Area>);

impl Default for VectorState {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for VectorState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("VectorState")
    }
}

impl VectorState {
    /// The init state: x87 control word 0x37F (all exceptions masked, 64-bit precision), MXCSR
    /// 0x1F80 (all masked, round to nearest), every register 0, and an XSAVE header with no
    /// component present (XRSTOR puts each in its init state; MXCSR it loads from here).
    pub fn new() -> VectorState {
        let mut area = Box::new(Area([0; AREA_BYTES]));
        area.0[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
        area.0[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
        VectorState(area)
    }

    /// Puts this area back in the init state of [`VectorState::new`] without rewriting all of
    /// it (a notification handler gets fresh registers at every call, and 4 KiB of stores cost
    /// more than the rest of its entry): with XSAVE, the header's XSTATE_BV 0 (no component
    /// present: XRSTOR puts each in its init state) and MXCSR (which XRSTOR loads from the area
    /// anyway); with FXSAVE, which loads every register from the area, the 512-byte legacy
    /// area. The header's other bytes are still 0, as `new` made them: standard-form XSAVE
    /// never writes them. If the CPU's registers are this area's they are no one's now, so the
    /// next [`load`](Self::load) restores the init state instead of keeping or saving them.
    pub fn reset(&mut self) {
        let me: *mut Area = &mut *self.0;
        // Only this CPU's slot: a task runs on one CPU (a notification's reset is a hot path;
        // the scan of every CPU's slot is for `drop`).
        let _ = owner().compare_exchange(me, ptr::null_mut(), Ordering::Relaxed, Ordering::Relaxed);
        let area = &mut self.0.0;
        if mode() == Mode::Xsave {
            area[512..520].fill(0);
        } else {
            area[..512].fill(0);
        }
        area[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
        area[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
    }

    /// Makes the CPU's vector registers this task's: saves them into the owner's area and loads
    /// this one's, unless this task owns them already.
    #[inline]
    pub fn load(&mut self) {
        let me: *mut Area = &mut *self.0;
        let slot = owner();
        let owner = slot.load(Ordering::Relaxed);
        if owner == me {
            return;
        }
        let mode = mode();
        if mode == Mode::None {
            return;
        }
        if !owner.is_null() {
            // SAFETY: a non-null OWNER is the area of a live VectorState (its Drop clears
            // OWNER), boxed so it does not move, 64-byte aligned and AREA_BYTES long, which
            // holds the state of every component enabled (`enable`).
            unsafe { save(owner, mode) };
        }
        // SAFETY: our own area, aligned and large enough as above; it holds either the init
        // state (`new`) or what `save` wrote, so XRSTOR / FXRSTOR accept it.
        unsafe { restore(me, mode) };
        slot.store(me, Ordering::Relaxed);
    }
}

impl Drop for VectorState {
    fn drop(&mut self) {
        let me: *mut Area = &mut *self.0;
        // The registers hold a task that is gone: no one's state, nothing to save later.
        disown(me);
    }
}

/// XSAVE / FXSAVE of the registers into `area`.
///
/// # Safety
/// `area` must be valid for writes of `AREA_BYTES`, 64-byte aligned, and `mode` what
/// [`enable`] turned on.
unsafe fn save(area: *mut Area, mode: Mode) {
    let xcr0 = XCR0.load(Ordering::Relaxed);
    // SAFETY: the caller's contract; the instructions write only the area.
    unsafe {
        match mode {
            Mode::Xsave => asm!(
                "xsave64 [{}]",
                in(reg) area,
                in("eax") xcr0 as u32,
                in("edx") (xcr0 >> 32) as u32,
                options(nostack, preserves_flags),
            ),
            Mode::Fxsave => asm!("fxsave64 [{}]", in(reg) area, options(nostack, preserves_flags)),
            Mode::None => {}
        }
    }
}

/// XRSTOR / FXRSTOR of the registers from `area`.
///
/// # Safety
/// `area` must be valid for reads of `AREA_BYTES`, 64-byte aligned, hold a valid image (the
/// init state of [`VectorState::new`] or what [`save`] wrote), and `mode` what [`enable`]
/// turned on.
unsafe fn restore(area: *const Area, mode: Mode) {
    let xcr0 = XCR0.load(Ordering::Relaxed);
    // SAFETY: the caller's contract; the instructions read only the area.
    unsafe {
        match mode {
            Mode::Xsave => asm!(
                "xrstor64 [{}]",
                in(reg) area,
                in("eax") xcr0 as u32,
                in("edx") (xcr0 >> 32) as u32,
                options(nostack, preserves_flags, readonly),
            ),
            Mode::Fxsave => asm!(
                "fxrstor64 [{}]",
                in(reg) area,
                options(nostack, preserves_flags, readonly)
            ),
            Mode::None => {}
        }
    }
}

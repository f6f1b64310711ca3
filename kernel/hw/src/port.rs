//! Port I/O.
//!
//! The raw `in`/`out` helpers are crate-private: writing an arbitrary I/O port can reset the
//! machine or start DMA, so the kernel only gets the device-specific safe functions built on
//! them (here, `serial`, `pic`, `pit`, `pci`).

use x86_64::instructions::port::Port;

/// Reads a byte from an I/O port.
///
/// # Safety
/// The port must belong to a device this crate drives, and reading it must not break an
/// invariant another part of the kernel relies on.
pub(crate) unsafe fn inb(port: u16) -> u8 {
    // SAFETY: forwarded to the caller.
    unsafe { Port::<u8>::new(port).read() }
}

/// Writes a byte to an I/O port.
///
/// # Safety
/// As for [`inb`]; the value must be meaningful for the device.
pub(crate) unsafe fn outb(port: u16, value: u8) {
    // SAFETY: forwarded to the caller.
    unsafe { Port::<u8>::new(port).write(value) }
}

/// Writes a double word to an I/O port.
///
/// # Safety
/// As for [`outb`].
pub(crate) unsafe fn outl(port: u16, value: u32) {
    // SAFETY: forwarded to the caller.
    unsafe { Port::<u32>::new(port).write(value) }
}

/// Reads a double word from an I/O port.
///
/// # Safety
/// As for [`inb`].
pub(crate) unsafe fn inl(port: u16) -> u32 {
    // SAFETY: forwarded to the caller.
    unsafe { Port::<u32>::new(port).read() }
}

/// I/O port of QEMU's `isa-debug-exit` device (`-device isa-debug-exit,iobase=0xf4,iosize=0x04`).
pub const QEMU_DEBUG_EXIT_PORT: u16 = 0xf4;

/// Asks QEMU to exit with status `(code << 1) | 1` through the isa-debug-exit device.
///
/// On a machine without that device nothing is at port 0xf4 (it is unassigned on PCs) and the
/// write is ignored; callers halt afterwards.
pub fn qemu_debug_exit(code: u8) {
    // SAFETY: port 0xf4 is either QEMU's isa-debug-exit device, whose only effect is ending the
    // emulator, or unassigned (the kernel only calls this when the run configuration says it
    // runs under QEMU).
    unsafe { outl(QEMU_DEBUG_EXIT_PORT, u32::from(code)) }
}

/// Test-only (run.cfg `test_smis`): writes `command` to the APM control port (0xB2), which
/// makes the chipset raise an SMI when the firmware enabled APM SMIs (SeaBIOS and OVMF do on
/// QEMU's q35). Proves that SMIs landing in a benchmark are counted.
pub fn raise_apm_smi(command: u8) {
    // SAFETY: port 0xB2 is the ICH's APM control port; a write hands `command` to the
    // firmware's SMI handler, which ignores commands it does not know and returns (no memory
    // the kernel owns is touched by SMM code on these machines).
    unsafe { outb(0xb2, command) }
}

//! baremark-hw: the hardware layer of the baremark kernel.
//!
//! This is the only crate of the kernel that may contain `unsafe`. Everything that touches the
//! machine directly lives here, one module per job, and offers a safe interface to the kernel
//! crate (which is `#![deny(unsafe_code)]`):
//!
//! | module    | job                                                                      |
//! |-----------|--------------------------------------------------------------------------|
//! | `boot`    | takes the bootloader's hand-off and brings the machine up in order        |
//! | `serial`  | COM1 (16550 UART) output, with a lock-free path for fatal reports         |
//! | `port`    | raw port I/O (crate-private) and the QEMU isa-debug-exit device           |
//! | `msr`     | **every** RDMSR/WRMSR of the kernel, all #GP-safe                         |
//! | `msr_allow` | the write allow-list: the counters discovery found (pure; host-tested)  |
//! | `cpu`     | control registers, CPU protections (NX/SMEP/SMAP/UMIP), TSC, halting      |
//! | `firmware`| firmware memory (ACPI tables) read-only, checked against RAM in use       |
//! | `fpu`     | x87/SSE/AVX for ring 3: enabled at boot, switched between tasks lazily    |
//! | `gdt`     | per CPU: GDT with kernel and user segments, TSS with IST stacks           |
//! | `percpu`  | per-CPU blocks behind the GS base (SWAPGS on every entry from ring 3)     |
//! | `trap`    | IDT, the 256 entry stubs and `trap_common`: every way into the kernel     |
//! |           | through an interrupt or exception                                         |
//! | `paging`  | page-table helpers over the bootloader's physical-memory mapping          |
//! | `user`    | ring 3: user address spaces, `run` (enter ring 3, come back on SYSCALL or |
//! |           | trap), the SYSCALL entry                                                  |
//! | `smp`     | starting the other CPUs (trampoline, INIT-SIPI-SIPI) and handing them jobs |
//! | `syscall` | the SYSCALL MSRs (EFER.SCE, STAR, LSTAR, SFMASK)                          |
//! | `drain`   | bounded sends to a device that may stop draining (pure; host-tested)     |
//! | `frames`  | physical frame allocator over the memory map (pure; host-tested)          |
//! | `heap`    | the kernel heap (linked_list_allocator)                                   |
//! | `apic`    | the local APIC, x2APIC or xAPIC                                           |
//! | `pic`     | the legacy 8259 pair: remapped and masked                                 |
//! | `pit`     | the 8254 PIT channel 2, the reference clock for TSC calibration           |
//! | `pmtimer` | the ACPI PM timer (a port the FADT names), another reference clock        |
//! | `layout`  | the kernel's virtual-memory layout and the bootloader configuration       |
//! | `pci`     | PCI configuration space (ports 0xCF8/0xCFC): enumeration, BARs, enables   |
//! | `mmio`    | device registers: a PCI BAR mapped uncached, volatile accessors by offset |
//! | `dma`     | DMA buffers: contiguous, zeroed, with their physical address              |
//!
//! To find every MSR write: search for `wrmsr` (`msr.rs`, and the other CPUs' start-up code in
//! `smp.rs`, which sets EFER before paging, where no Rust runs).
//! To find every kernel entry from ring 3: search for `KERNEL ENTRY` (the trap stubs in `trap.rs`,
//! the SYSCALL entry in `user.rs`).
//!
//! On the host (`cargo test`), only the hardware-independent parts (`frames`, `layout`
//! constants) are compiled, so they can be unit-tested.
#![no_std]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(target_os = "none")]
extern crate alloc;

pub mod drain;
pub mod frames;
pub mod layout;
pub mod msr_allow;

#[cfg(target_os = "none")]
pub mod apic;
#[cfg(target_os = "none")]
pub mod boot;
#[cfg(target_os = "none")]
pub mod cpu;
#[cfg(target_os = "none")]
pub mod dma;
#[cfg(target_os = "none")]
pub mod firmware;
#[cfg(target_os = "none")]
pub mod fpu;
#[cfg(target_os = "none")]
pub mod gdt;
#[cfg(target_os = "none")]
pub mod heap;
#[cfg(target_os = "none")]
pub mod mmio;
#[cfg(target_os = "none")]
pub mod msr;
#[cfg(target_os = "none")]
pub mod paging;
#[cfg(target_os = "none")]
pub mod pci;
#[cfg(target_os = "none")]
pub mod percpu;
#[cfg(target_os = "none")]
pub mod pic;
#[cfg(target_os = "none")]
pub mod pit;
#[cfg(target_os = "none")]
pub mod pmtimer;
#[cfg(target_os = "none")]
pub mod port;
#[cfg(target_os = "none")]
pub mod serial;
#[cfg(target_os = "none")]
pub mod smp;
#[cfg(target_os = "none")]
pub mod syscall;
#[cfg(target_os = "none")]
pub mod trap;
#[cfg(target_os = "none")]
pub mod user;

//! The kernel's virtual-memory layout.
//!
//! The lower half (below 0x0000_8000_0000_0000) is left for ring-3 tasks. The bootloader is told
//! to place everything it maps dynamically (kernel image, kernel stack, boot info, physical
//! memory mapping, ramdisk, framebuffer) in the first quarter of the upper half; the kernel keeps
//! the rest of the upper half for the mappings it makes itself.

/// Lowest address the bootloader may use for its dynamic mappings.
pub const BOOTLOADER_DYNAMIC_START: u64 = 0xffff_8000_0000_0000;
/// Highest address the bootloader may use for its dynamic mappings.
pub const BOOTLOADER_DYNAMIC_END: u64 = 0xffff_bfff_ffff_f000;

/// Start of the kernel heap.
pub const HEAP_START: u64 = 0xffff_c000_0000_0000;
/// Size of the kernel heap the kernel tries to map (it maps less if memory is short).
pub const HEAP_SIZE: u64 = 8 * 1024 * 1024;

/// Where the xAPIC register page is mapped (uncached), when the APIC runs in xAPIC mode.
pub const APIC_MMIO: u64 = 0xffff_c800_0000_0000;

/// Where device register windows (PCI BARs, `mmio`) are mapped, uncached, one after another.
pub const DEVICE_MMIO_START: u64 = 0xffff_c900_0000_0000;
/// Size of the device register window area.
pub const DEVICE_MMIO_SIZE: u64 = 1 << 30;

/// Where PCI Express configuration space (ECAM, from the ACPI MCFG) is mirrored: the function
/// at bus/device/function has its 4 KiB at `ECAM_VIRT + (bus << 20 | device << 15 |
/// function << 12)`, mapped uncached when it is first used. 256 MiB for the 256 buses.
pub const ECAM_VIRT: u64 = 0xffff_ca00_0000_0000;

/// Size of the kernel stack the bootloader allocates (the first page below it is a guard page).
pub const KERNEL_STACK_SIZE: u64 = 256 * 1024;

/// The most CPUs the kernel runs on (more are reported, not started; docs/design.md).
pub const MAX_CPUS: usize = 512;

/// Size of each interrupt stack (IST) used for double fault, NMI and machine check.
pub const IST_STACK_SIZE: usize = 16 * 1024;

#[cfg(target_os = "none")]
mod config {
    use bootloader_api::config::{BootloaderConfig, Mapping};

    /// The bootloader configuration embedded in the kernel ELF by `entry_point!`.
    pub const BOOTLOADER_CONFIG: BootloaderConfig = {
        let mut config = BootloaderConfig::new_default();
        config.mappings.physical_memory = Some(Mapping::Dynamic);
        config.mappings.dynamic_range_start = Some(super::BOOTLOADER_DYNAMIC_START);
        config.mappings.dynamic_range_end = Some(super::BOOTLOADER_DYNAMIC_END);
        config.kernel_stack_size = super::KERNEL_STACK_SIZE;
        config
    };
}
#[cfg(target_os = "none")]
pub use config::BOOTLOADER_CONFIG;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_regions_are_upper_half_and_disjoint() {
        const { assert!(BOOTLOADER_DYNAMIC_START >= 0xffff_8000_0000_0000) };
        const { assert!(BOOTLOADER_DYNAMIC_END < HEAP_START) };
        const { assert!(HEAP_START + HEAP_SIZE <= APIC_MMIO) };
        assert_eq!(HEAP_START % 4096, 0);
        assert_eq!(APIC_MMIO % 4096, 0);
        const { assert!(APIC_MMIO < DEVICE_MMIO_START) };
        const { assert!(DEVICE_MMIO_START + DEVICE_MMIO_SIZE <= ECAM_VIRT) };
        assert_eq!(DEVICE_MMIO_START % 4096, 0);
    }
}

//! The platform: what the kernel learns about the machine and the clocks it keeps time with.
//! It uses nothing else of the kernel.
//!
//! | module       | job                                                                 | host-tested |
//! |--------------|---------------------------------------------------------------------|-------------|
//! | `acpi`       | the ACPI tables: a checked parser (MADT, FADT, HPET, MCFG, DMAR)     | yes |
//! | `cpu`        | CPU identification (CPUID)                                          | yes |
//! | `tsc`        | TSC frequency from CPUID or PIT calibration: the arithmetic          | yes |
//! | `interrupts` | the interrupt vectors the kernel uses and the counts of those taken | -   |
//! | `clocks`     | the reference clocks (HPET, PM timer, PIT) timed with the TSC         | no  |
//! | `timer`      | the TSC rate and local APIC bring-up, timer calibration and checks  | no  |
//! | `cpus`       | the CPUs started: core type, PMU leaf, timer; `run_on` another CPU   | -   |

pub mod acpi;
pub mod cpu;
pub mod interrupts;
pub mod tsc;

#[cfg(target_os = "none")]
pub mod clocks;
#[cfg(target_os = "none")]
pub mod cpus;
/// The host build (unit tests of the harness and the runner's pure parts) has one CPU.
#[cfg(not(target_os = "none"))]
pub mod cpus {
    pub fn current() -> usize {
        0
    }
    pub fn core_type_name(_index: usize) -> &'static str {
        "uniform"
    }
    pub fn stop_requested() -> bool {
        false
    }
    pub fn online_list() -> alloc::vec::Vec<(usize, u8)> {
        alloc::vec![(0, 0)]
    }
}
#[cfg(target_os = "none")]
pub mod timer;

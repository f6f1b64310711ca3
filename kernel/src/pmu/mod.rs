//! Performance monitoring: discovery, the backends behind one trait, and the PMI.
//!
//! The kernel owns every counter MSR, CR4.PCE and the local APIC performance-counter interrupt.
//! Everything here is written against the [`msr::Msr`] trait, so it runs unchanged on the
//! machine (through `baremark-hw`'s MSR door) and on the host against the simulated PMU
//! (`sim`), where the tests live.
//!
//! | module      | job                                                                   |
//! |-------------|-----------------------------------------------------------------------|
//! | `regs`      | MSR addresses and bit layouts (Intel, AMD)                            |
//! | `msr`       | the `Msr` trait, and a recorder for golden-sequence tests              |
//! | `backend`   | the `PmuBackend` trait and its types                                  |
//! | `intel`     | Intel architectural PMU, versions 1-5                                 |
//! | `amd`       | AMD legacy, PerfCtrExtCore and PerfMonV2                              |
//! | `switch`    | a task switch's PMU work as MSR lists, replayed without the backend   |
//! | `tsc_only`  | no programmable counters: only the TSC                                |
//! | `discovery` | CPUID + probing -> capabilities and the backend to use, with reasons  |
//! | `cpuid`     | what CPUID says about performance counters, for the boot report        |
//! | `request`   | `counters_configure` request words: fixed entries, checks against the PMU |
//! | `machine`   | (bare metal) the machine's PMU: the hardware `Msr`, discovery at boot, the PMI |
//! | `sim`       | (tests) a simulated PMU with the documented semantics                 |

pub mod amd;
pub mod backend;
pub mod cpuid;
pub mod discovery;
pub mod intel;
pub mod msr;
pub mod regs;
pub mod request;
pub mod switch;
pub mod tsc_only;

#[cfg(target_os = "none")]
pub mod machine;

#[cfg(test)]
pub mod sim;

#[cfg(test)]
mod golden_tests;

#[cfg(test)]
mod behaviour_tests;

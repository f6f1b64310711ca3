//! Ring-3 tasks: payload loading, per-task virtual counters, the user counter page, the syscall
//! ABI, the runner and system mode. The host-tested parts:
//! - `elf`: validates a payload ELF and plans its pages (every rejection is a clear error);
//! - `vcounter`: per-task 64-bit virtual counters (the perfctr model), exact at any width;
//! - `user_page`: the read-only page a task reads its counters from without a system call;
//! - `hwslots`: a task's hardware counters around its runs (program, switch in / out) on any
//!   PMU backend, host-tested on the simulated PMU, and the validation of `counters_configure`
//!   (wired into `run`);
//! - `hwswitch`: the fast switch of a task's hardware counters (save and restore from MSR lists
//!   the backend made once), host-tested on the simulated PMU;
//! - `mux`: time-multiplexing of more events than counters (groups, raw / running / enabled,
//!   perf's scaling);
//! - `system`: system-wide counters (the whole machine, kernel and tasks) on any backend;
//! - `threshold`: overflow thresholds of counter slots (when a notification or sample is due,
//!   the raw value that arms the counter) and the sample buffer;
//! - `abi`: syscall numbers, error codes, fixed user addresses, the pure parts of the syscalls;
//! - `settings`: what the run configuration gives the tasks (counter permission, sampling, the
//!   multiplexing interval);
//! - `ring3` (bare metal only): what the runners share (`write`, user-mode `fault` records,
//!   interrupts taken in ring 3);
//! - `run` (bare metal only): runs the ramdisk's payload ELFs as ring-3 tasks with a virtual
//!   TSC, the counter page and RDPMC emulation;
//! - `smoke` (bare metal only): the ring-3 smoke test (`test = ring3`), raw machine-code
//!   payloads run with `baremark_hw::user::run`;
//! - `system_mode` (bare metal only): who holds the system-wide counters, and the IRIX rules;
//! - `canary` (bare metal only): the pattern planted in free kernel memory for the syscall
//!   fuzzer.

pub mod abi;
#[cfg(target_os = "none")]
pub mod canary;
pub mod elf;
pub mod hwslots;
pub mod hwswitch;
pub mod mux;
#[cfg(target_os = "none")]
pub mod ring3;
#[cfg(target_os = "none")]
pub mod run;
pub mod settings;
#[cfg(target_os = "none")]
pub mod smoke;
pub mod system;
#[cfg(target_os = "none")]
pub mod system_mode;
pub mod threshold;
pub mod user_page;
pub mod vcounter;

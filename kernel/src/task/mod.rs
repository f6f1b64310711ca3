//! Ring-3 tasks: payload loading, per-task virtual counters, the user counter page.
//!
//! Work in progress for the ring-3 tasks issue; the host-tested parts come first:
//! - `elf`: validates a payload ELF and plans its pages (every rejection is a clear error);
//! - `vcounter`: per-task 64-bit virtual counters (the perfctr model), exact at any width;
//! - `user_page`: the read-only page a task reads its counters from without a system call;
//! - `smoke` (bare metal only): the ring-3 smoke test (`test = ring3`), raw machine-code
//!   payloads run with `baremark_hw::user::run`.

pub mod elf;
#[cfg(target_os = "none")]
pub mod smoke;
pub mod user_page;
pub mod vcounter;

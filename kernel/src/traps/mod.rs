//! Traps and the end of a run: the kernel's handler for every interrupt and exception, fault
//! and panic reports, the `end` record and the exit.
//!
//! | module       | job                                                                    | host-tested |
//! |--------------|------------------------------------------------------------------------|-------------|
//! | `exceptions` | exception vector names                                                 | yes |
//! | `dispatch`   | the handler installed into `baremark-hw`'s trap dispatcher             | no  |
//! | `fatal`      | fault and panic reports, the `end` record, the exit (QEMU or halt)     | no  |

pub mod exceptions;

#[cfg(target_os = "none")]
mod dispatch;
#[cfg(target_os = "none")]
pub mod fatal;

#[cfg(target_os = "none")]
pub use dispatch::{handle, interrupt};

/// What to do after the `end` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnEnd {
    /// Write the status to QEMU's isa-debug-exit device (port 0xf4), then halt.
    QemuExit,
    /// Halt (real hardware: the report is complete, the machine stays as it is).
    Halt,
}

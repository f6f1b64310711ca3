//! The ring-3 side shared by the zoo's bins: reports and the children a payload runs its cases
//! in.

use core::fmt::{self, Write as _};

use baremark_sdk::{Buf, REPORT_MAX, ReportFmtError, nr, syscall4};

/// Sends `key=value` lines as a `report` record (at most the kernel's 1024 bytes; a longer one
/// is an `error=` report instead).
pub fn report(lines: fmt::Arguments<'_>) {
    if let Err(ReportFmtError::TooLong) = baremark_sdk::report_fmt(lines) {
        let _ = baremark_sdk::report("error=the report does not fit in 1024 bytes");
    }
}

/// `spawn(name, flags, arg)` as the raw result: the child's id, or the (negative) error code.
pub fn spawn_raw(name: &str, flags: u64, arg: u64) -> i64 {
    syscall4(
        nr::SPAWN,
        name.as_ptr() as u64,
        name.len() as u64,
        flags,
        arg,
    )
}

/// Runs each of `cases` in a child of the payload `name` (itself) started with the case as its
/// `arg`, one after the other (spawn, then wait), and reports `case_<k>=<wait result>` for each
/// (`spawn_<k>=<error>` when the spawn itself was refused). Returns how many children ended
/// with `EABORTED` (a fault: the kernel contained the misbehaviour).
pub fn run_cases(name: &str, cases: impl Iterator<Item = u64>) -> u64 {
    let mut buf = Buf::<REPORT_MAX>::new();
    let mut aborted = 0;
    for case in cases {
        let id = spawn_raw(name, 0, case);
        if id < 0 {
            let _ = writeln!(buf, "spawn_{case}={id}");
            continue;
        }
        let code = baremark_sdk::wait(id as u64);
        aborted += u64::from(code == crate::codes::EABORTED);
        let _ = writeln!(buf, "case_{case}={code}");
    }
    let _ = writeln!(buf, "aborted={aborted}");
    let _ = baremark_sdk::report(buf.as_str());
    aborted
}

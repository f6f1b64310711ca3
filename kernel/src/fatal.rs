//! The end of a run: fault and panic reports, the `end` record, and the exit.
//!
//! After the `end` record the kernel either asks QEMU to exit through isa-debug-exit
//! (status 0x10 -> QEMU exit code 33 for success, 0x11 -> 35 for failure) or halts, as the run
//! configuration says.

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};

use baremark_hw::trap::TrapFrame;
use baremark_hw::{cpu, port};

use crate::config::OnEnd;
use crate::console;
use crate::exceptions;
use crate::traps::COUNTS;

/// isa-debug-exit value for a successful run (QEMU exits with 33).
pub const EXIT_SUCCESS: u8 = 0x10;
/// isa-debug-exit value for a failed run (QEMU exits with 35).
pub const EXIT_FAILURE: u8 = 0x11;

const ON_END_HALT: u8 = 0;
const ON_END_QEMU_EXIT: u8 = 1;
static ON_END: AtomicU8 = AtomicU8::new(ON_END_HALT);
static ENDING: AtomicBool = AtomicBool::new(false);

/// Records what to do after the `end` record (from the run configuration).
pub fn set_on_end(on_end: OnEnd) {
    ON_END.store(
        if on_end == OnEnd::QemuExit {
            ON_END_QEMU_EXIT
        } else {
            ON_END_HALT
        },
        Relaxed,
    );
}

/// Outcome of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Fail,
}

/// Emits the `end` record and exits (or halts). Never returns.
pub fn end(status: Status, reason: Option<&str>) -> ! {
    if ENDING.swap(true, Relaxed) {
        // A fault while ending: the end record may be out already; stop here.
        stop(Status::Fail);
    }
    let on_end = ON_END.load(Relaxed);
    console::record_fatal("end", |r| {
        r.str("status", if status == Status::Ok { "ok" } else { "fail" })
            .opt_str("reason", reason)
            .u64("tsc", cpu::rdtsc())
            .str(
                "on_end",
                if on_end == ON_END_QEMU_EXIT {
                    "qemu-exit"
                } else {
                    "halt"
                },
            )
            .object("interrupts", |r| {
                r.u64("timer", COUNTS.timer_ticks.load(Relaxed))
                    .u64("breakpoints", COUNTS.breakpoints.load(Relaxed))
                    .u64("nmi", COUNTS.nmis.load(Relaxed))
                    .u64("spurious_apic", COUNTS.spurious_apic.load(Relaxed))
                    .u64("spurious_pic", COUNTS.spurious_pic.load(Relaxed))
                    .u64("unexpected", COUNTS.unexpected.load(Relaxed))
                    .u64("pmi", crate::counters::PMI_COUNTS.handled.load(Relaxed))
                    .u64(
                        "pmi_spurious",
                        crate::counters::PMI_COUNTS.spurious.load(Relaxed),
                    )
            })
    });
    stop(status)
}

fn stop(status: Status) -> ! {
    if ON_END.load(Relaxed) == ON_END_QEMU_EXIT {
        port::qemu_debug_exit(if status == Status::Ok {
            EXIT_SUCCESS
        } else {
            EXIT_FAILURE
        });
    }
    cpu::halt_forever()
}

/// Reports an exception the kernel cannot recover from, then ends the run with failure.
pub fn fault(frame: &TrapFrame) -> ! {
    let (mnemonic, name) = exceptions::describe(frame.vector).unwrap_or(("?", "unknown"));
    let page_fault = frame.vector == 14;
    let cr2 = cpu::cr2();
    console::record_fatal("fault", |r| {
        let r = r
            .str("mode", if frame.from_user() { "user" } else { "kernel" })
            .u64("vector", frame.vector)
            .str("mnemonic", mnemonic)
            .str("name", name)
            .hex("error_code", frame.error_code)
            .hex("rip", frame.rip)
            .hex("cs", frame.cs)
            .hex("rflags", frame.rflags)
            .hex("rsp", frame.rsp)
            .hex("ss", frame.ss);
        let r = if page_fault {
            r.hex("cr2", cr2)
                .str_array("page_fault", exceptions::page_fault_flags(frame.error_code))
        } else {
            r
        };
        r.object("registers", |r| {
            r.hex("rax", frame.rax)
                .hex("rbx", frame.rbx)
                .hex("rcx", frame.rcx)
                .hex("rdx", frame.rdx)
                .hex("rsi", frame.rsi)
                .hex("rdi", frame.rdi)
                .hex("rbp", frame.rbp)
                .hex("r8", frame.r8)
                .hex("r9", frame.r9)
                .hex("r10", frame.r10)
                .hex("r11", frame.r11)
                .hex("r12", frame.r12)
                .hex("r13", frame.r13)
                .hex("r14", frame.r14)
                .hex("r15", frame.r15)
        })
    });
    let mut reason = crate::record::LineBuf::<64>::new();
    let _ = core::fmt::Write::write_fmt(&mut reason, format_args!("kernel-mode {name} exception"));
    end(Status::Fail, Some(reason.as_str()))
}

static PANICKING: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    if PANICKING.swap(true, Relaxed) {
        // A panic while reporting a panic: nothing more can be said safely.
        stop(Status::Fail);
    }
    console::record_fatal("panic", |r| {
        let r = match info.location() {
            Some(l) => r
                .str("file", l.file())
                .u64("line", u64::from(l.line()))
                .u64("column", u64::from(l.column())),
            None => r.null("file").null("line").null("column"),
        };
        r.fmt("message", format_args!("{}", info.message()))
    });
    end(Status::Fail, Some("kernel panic"))
}

//! The end of a run: fault and panic reports, the `end` record, and the exit.
//!
//! After the `end` record the kernel either asks QEMU to exit through isa-debug-exit
//! (status 0x10 -> QEMU exit code 33 for success, 0x11 -> 35 for failure) or halts, as the run
//! configuration says.

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};

use baremark_hw::trap::TrapFrame;
use baremark_hw::{cpu, port};

use super::OnEnd;
use crate::output::console;
use crate::platform::interrupts::COUNTS;
use crate::traps::exceptions;

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
    crate::output::sinks::report_costs();
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
                    .u64("wake_ipi", COUNTS.wakes.load(Relaxed))
                    .u64("pmi", crate::pmu::machine::PMI_COUNTS.handled.load(Relaxed))
                    .u64(
                        "pmi_busy",
                        crate::pmu::machine::PMI_COUNTS.busy.load(Relaxed),
                    )
                    .u64(
                        "pmi_spurious",
                        crate::pmu::machine::PMI_COUNTS.spurious.load(Relaxed),
                    )
            })
    });
    crate::output::screen::prepare_end(status == Status::Ok, on_end != ON_END_QEMU_EXIT);
    crate::output::sinks::at_end(match (status, reason) {
        (Status::Ok, _) => "run complete: status ok",
        (Status::Fail, Some(reason)) => reason,
        (Status::Fail, None) => "run failed",
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

/// The CPU state a `fault` record shows: a kernel trap frame, or a ring-3 task's context.
pub struct FaultState {
    /// `kernel` or `user`.
    pub mode: &'static str,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
    /// Page faults: the faulting address.
    pub cr2: Option<u64>,
    /// RAX, RBX, RCX, RDX, RSI, RDI, RBP, R8-R15, in that order.
    pub gprs: [u64; 15],
}

const GPR_NAMES: [&str; 15] = [
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
    "r15",
];

/// Adds the fields of a `fault` record (docs/records.md) for `s` to `r`.
pub fn fault_fields<'a>(
    r: crate::output::record::Record<'a>,
    s: &FaultState,
) -> crate::output::record::Record<'a> {
    let (mnemonic, name) = exceptions::describe(s.vector).unwrap_or(("?", "unknown"));
    let r = r
        .str("mode", s.mode)
        .u64("vector", s.vector)
        .str("mnemonic", mnemonic)
        .str("name", name)
        .hex("error_code", s.error_code)
        .hex("rip", s.rip)
        .hex("cs", s.cs)
        .hex("rflags", s.rflags)
        .hex("rsp", s.rsp)
        .hex("ss", s.ss);
    let r = match s.cr2 {
        Some(cr2) => r
            .hex("cr2", cr2)
            .str_array("page_fault", exceptions::page_fault_flags(s.error_code)),
        None => r,
    };
    r.object("registers", |mut r| {
        for (name, value) in GPR_NAMES.iter().zip(s.gprs) {
            r = r.hex(name, value);
        }
        r
    })
}

/// Reports an exception the kernel cannot recover from, then ends the run with failure.
pub fn fault(frame: &TrapFrame) -> ! {
    let (_, name) = exceptions::describe(frame.vector).unwrap_or(("?", "unknown"));
    let state = FaultState {
        mode: if frame.from_user() { "user" } else { "kernel" },
        vector: frame.vector,
        error_code: frame.error_code,
        rip: frame.rip,
        cs: frame.cs,
        rflags: frame.rflags,
        rsp: frame.rsp,
        ss: frame.ss,
        cr2: (frame.vector == 14).then(cpu::cr2),
        gprs: [
            frame.rax, frame.rbx, frame.rcx, frame.rdx, frame.rsi, frame.rdi, frame.rbp, frame.r8,
            frame.r9, frame.r10, frame.r11, frame.r12, frame.r13, frame.r14, frame.r15,
        ],
    };
    console::record_fatal("fault", |r| fault_fields(r, &state));
    let mut reason = crate::output::record::LineBuf::<64>::new();
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

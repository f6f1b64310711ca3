//! The ring-3 smoke test (`test = ring3`): tiny payloads of raw machine code, each in a fresh
//! address space, run with `baremark_hw::user::run`, proving every way back from ring 3:
//! SYSCALL (`exit`, `write`, its pointer checks, an unknown number, registers preserved), each
//! kind of fault (reported as a `fault` record with `mode: "user"`, ending only that payload),
//! an interrupt (the APIC timer) in ring 3, and a context that cannot be resumed (a SYSCALL at
//! the very end of the lower half). The boot then goes on to its normal `end` record: a task's
//! fault is not a kernel failure.
//!
//! The syscall dispatcher here implements only `exit` and `write` of docs/syscall-abi.md (with
//! `task::ring3`, shared with the payload runner `task::run`, which implements the rest), and
//! answers `ENOSYS` for every other number.

use baremark_hw::apic::{self, TimerMode};
use baremark_hw::cpu as hwcpu;
use baremark_hw::user::{self, AddressSpace, Exit, UserContext};

use super::abi::{ENOSYS, nr};
use super::ring3::{self, Task, report_fault, sys_write};
use crate::output::console::record;
use crate::say;

/// Where payload code is loaded (unless a payload says otherwise).
const CODE_BASE: u64 = 0x40_0000;
/// The top of each payload's stack.
const STACK_TOP: u64 = 0x7fff_0000_0000;
/// Stack pages (the page below them is the unmapped guard page).
const STACK_PAGES: u64 = 4;
/// Kernel entries after which a payload is stopped (it would otherwise loop forever).
const MAX_ENTRIES: u64 = 1000;
/// APIC timer count for the timer payload (divide 16): about 1 ms under QEMU.
const TIMER_COUNT: u32 = 50_000;

struct Payload {
    name: &'static str,
    /// Machine code; the first byte is the entry point.
    code: &'static [u8],
    /// Address of the first byte.
    at: u64,
    /// Arm the APIC timer before the run; on the timer interrupt, skip the 2-byte `jmp $` the
    /// payload spins on (as RDPMC emulation will skip an instruction).
    timer: bool,
}

const fn payload(name: &'static str, code: &'static [u8]) -> Payload {
    Payload {
        name,
        code,
        at: CODE_BASE,
        timer: false,
    }
}

/// The payloads, in order. The assembly is in the comments (Intel syntax).
const PAYLOADS: [Payload; 19] = [
    // lea rdi, [rip + msg]; mov esi, 18; mov eax, 1; syscall       write(msg, 18)
    // cmp rax, 18; jne 1f; mov edi, 42; jmp 2f; 1: mov rdi, rax     42 if it wrote 18 bytes
    // 2: xor eax, eax; syscall; ud2                                  exit
    // msg: "hello from ring 3\n"
    payload(
        "hello",
        &[
            0x48, 0x8d, 0x3d, 0x22, 0x00, 0x00, 0x00, 0xbe, 0x12, 0x00, 0x00, 0x00, 0xb8, 0x01,
            0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x83, 0xf8, 0x12, 0x75, 0x07, 0xbf, 0x2a, 0x00,
            0x00, 0x00, 0xeb, 0x03, 0x48, 0x89, 0xc7, 0x31, 0xc0, 0x0f, 0x05, 0x0f, 0x0b, b'h',
            b'e', b'l', b'l', b'o', b' ', b'f', b'r', b'o', b'm', b' ', b'r', b'i', b'n', b'g',
            b' ', b'3', b'\n',
        ],
    ),
    // ud2
    payload("ud2", &[0x0f, 0x0b]),
    // mov byte ptr [0x10000000], 1   (unmapped)
    payload(
        "write-unmapped",
        &[0xc6, 0x04, 0x25, 0x00, 0x00, 0x00, 0x10, 0x01],
    ),
    // hlt
    payload("hlt", &[0xf4]),
    // cli
    payload("cli", &[0xfa]),
    // int3; ud2
    payload("int3", &[0xcc, 0x0f, 0x0b]),
    // xor ecx, ecx; xor eax, eax; xor edx, edx; div ecx
    payload(
        "divide-by-zero",
        &[0x31, 0xc9, 0x31, 0xc0, 0x31, 0xd2, 0xf7, 0xf1],
    ),
    // movabs rdi, 0xffff800000000000; mov esi, 5; mov eax, 1; syscall    write(kernel, 5)
    // mov rdi, rax; xor eax, eax; syscall                                  exit(result)
    payload(
        "write-kernel-pointer",
        &[
            0x48, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xff, 0xff, 0xbe, 0x05, 0x00, 0x00,
            0x00, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0x31, 0xc0, 0x0f,
            0x05,
        ],
    ),
    // mov edi, 0x10000000; mov esi, 5; mov eax, 1; syscall                write(unmapped, 5)
    // mov rdi, rax; xor eax, eax; syscall                                  exit(result)
    payload(
        "write-unmapped-pointer",
        &[
            0xbf, 0x00, 0x00, 0x00, 0x10, 0xbe, 0x05, 0x00, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00,
            0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0x31, 0xc0, 0x0f, 0x05,
        ],
    ),
    // mov edi, 0x400000; mov rsi, -1; mov eax, 1; syscall                 write(code, u64::MAX)
    // mov rdi, rax; xor eax, eax; syscall                                  exit(result)
    payload(
        "write-overflowing-length",
        &[
            0xbf, 0x00, 0x00, 0x40, 0x00, 0x48, 0xc7, 0xc6, 0xff, 0xff, 0xff, 0xff, 0xb8, 0x01,
            0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0x31, 0xc0, 0x0f, 0x05,
        ],
    ),
    // movabs rax, [0xffff800000000000]   (kernel memory)
    payload(
        "read-kernel-memory",
        &[0x48, 0xa1, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xff, 0xff],
    ),
    // mov eax, 999; syscall; mov rdi, rax; xor eax, eax; syscall           exit(syscall 999)
    payload(
        "unknown-syscall",
        &[
            0xb8, 0xe7, 0x03, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0x31, 0xc0, 0x0f, 0x05,
        ],
    ),
    // push 0x5a5a; rbx, rbp, r12-r15, rdi, rsi, rdx, r8-r10 = 0x1001..0x100c;
    // mov eax, 999; syscall; check rax = -3 and every register, then pop and check 0x5a5a:
    // exit(0) if all held, else exit(1).
    payload(
        "registers-preserved",
        &[
            0x68, 0x5a, 0x5a, 0x00, 0x00, 0xbb, 0x01, 0x10, 0x00, 0x00, 0xbd, 0x02, 0x10, 0x00,
            0x00, 0x41, 0xbc, 0x03, 0x10, 0x00, 0x00, 0x41, 0xbd, 0x04, 0x10, 0x00, 0x00, 0x41,
            0xbe, 0x05, 0x10, 0x00, 0x00, 0x41, 0xbf, 0x06, 0x10, 0x00, 0x00, 0xbf, 0x07, 0x10,
            0x00, 0x00, 0xbe, 0x08, 0x10, 0x00, 0x00, 0xba, 0x09, 0x10, 0x00, 0x00, 0x41, 0xb8,
            0x0a, 0x10, 0x00, 0x00, 0x41, 0xb9, 0x0b, 0x10, 0x00, 0x00, 0x41, 0xba, 0x0c, 0x10,
            0x00, 0x00, 0xb8, 0xe7, 0x03, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x83, 0xf8, 0xfd, 0x75,
            0x7b, 0x48, 0x81, 0xfb, 0x01, 0x10, 0x00, 0x00, 0x75, 0x72, 0x48, 0x81, 0xfd, 0x02,
            0x10, 0x00, 0x00, 0x75, 0x69, 0x49, 0x81, 0xfc, 0x03, 0x10, 0x00, 0x00, 0x75, 0x60,
            0x49, 0x81, 0xfd, 0x04, 0x10, 0x00, 0x00, 0x75, 0x57, 0x49, 0x81, 0xfe, 0x05, 0x10,
            0x00, 0x00, 0x75, 0x4e, 0x49, 0x81, 0xff, 0x06, 0x10, 0x00, 0x00, 0x75, 0x45, 0x48,
            0x81, 0xff, 0x07, 0x10, 0x00, 0x00, 0x75, 0x3c, 0x48, 0x81, 0xfe, 0x08, 0x10, 0x00,
            0x00, 0x75, 0x33, 0x48, 0x81, 0xfa, 0x09, 0x10, 0x00, 0x00, 0x75, 0x2a, 0x49, 0x81,
            0xf8, 0x0a, 0x10, 0x00, 0x00, 0x75, 0x21, 0x49, 0x81, 0xf9, 0x0b, 0x10, 0x00, 0x00,
            0x75, 0x18, 0x49, 0x81, 0xfa, 0x0c, 0x10, 0x00, 0x00, 0x75, 0x0f, 0x58, 0x48, 0x3d,
            0x5a, 0x5a, 0x00, 0x00, 0x75, 0x06, 0x31, 0xff, 0x31, 0xc0, 0x0f, 0x05, 0xbf, 0x01,
            0x00, 0x00, 0x00, 0x31, 0xc0, 0x0f, 0x05,
        ],
    ),
    // spin: jmp spin; mov edi, 7; xor eax, eax; syscall    (the kernel skips the jmp on the
    // timer interrupt, so the payload exits with 7)
    Payload {
        name: "timer-interrupt",
        code: &[
            0xeb, 0xfe, 0xbf, 0x07, 0x00, 0x00, 0x00, 0x31, 0xc0, 0x0f, 0x05,
        ],
        at: CODE_BASE,
        timer: true,
    },
    // At 0x7ffffffffff9: mov eax, 999; syscall. The SYSCALL is the last instruction of the
    // lower half, so the return address is 0x0000800000000000: not canonical. Returning there
    // with SYSRETQ would #GP in ring 0 on Intel; the kernel must refuse to resume it.
    Payload {
        name: "syscall-at-end-of-user-half",
        code: &[0xb8, 0xe7, 0x03, 0x00, 0x00, 0x0f, 0x05],
        at: user::USER_END - 7,
        timer: false,
    },
    // 1: push rax; jmp 1b      (runs into the stack's guard page)
    payload("stack-overflow", &[0x50, 0xeb, 0xfd]),
    // sub rsp, 64; jmp rsp     (the stack is not executable)
    payload("execute-stack", &[0x48, 0x83, 0xec, 0x40, 0xff, 0xe4]),
    // lea rax, [rip]; mov byte ptr [rax], 0     (code pages are read-only)
    payload(
        "write-code",
        &[0x48, 0x8d, 0x05, 0x00, 0x00, 0x00, 0x00, 0xc6, 0x00, 0x00],
    ),
    // mov eax, 1 ... as `hello`, once more after all the faults.
    payload(
        "hello-again",
        &[
            0x48, 0x8d, 0x3d, 0x22, 0x00, 0x00, 0x00, 0xbe, 0x12, 0x00, 0x00, 0x00, 0xb8, 0x01,
            0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x83, 0xf8, 0x12, 0x75, 0x07, 0xbf, 0x2a, 0x00,
            0x00, 0x00, 0xeb, 0x03, 0x48, 0x89, 0xc7, 0x31, 0xc0, 0x0f, 0x05, 0x0f, 0x0b, b'h',
            b'e', b'l', b'l', b'o', b' ', b'f', b'r', b'o', b'm', b' ', b'r', b'i', b'n', b'g',
            b' ', b'3', b'\n',
        ],
    ),
];

/// Runs every payload in order. Each ends with a `task_exit` or a `fault` record (or an `error`
/// record if it could not be set up); the integration test (tests/tests/ring3.rs) checks them.
pub fn run() {
    say!(
        "test   ring3: running {} payloads in ring 3",
        PAYLOADS.len()
    );
    for (index, payload) in PAYLOADS.iter().enumerate() {
        let task = Task {
            name: payload.name,
            index: index as u64,
        };
        if let Err(message) = run_payload(task, payload) {
            record("error", |r| {
                r.str("source", "ring3").fmt(
                    "message",
                    format_args!("payload `{}`: {message}", task.name),
                )
            });
            say!("task   {}: {message}", task.name);
        }
    }
    say!("test   ring3: done");
}

/// Loads and runs one payload until it exits or faults. `Err` when it could not be set up.
fn run_payload(task: Task, payload: &Payload) -> Result<(), &'static str> {
    let mut space = AddressSpace::new().map_err(|_| "no memory for an address space")?;
    let start = payload.at & !(user::PAGE_SIZE - 1);
    let end = payload.at + payload.code.len() as u64;
    let mut page = start;
    while page < end {
        space
            .map(page, false, true)
            .map_err(|_| "could not map the code")?;
        page += user::PAGE_SIZE;
    }
    space
        .write(payload.at, payload.code)
        .map_err(|_| "could not copy the code")?;
    let rsp = space
        .map_stack(STACK_TOP, STACK_PAGES)
        .map_err(|_| "could not map the stack")?;
    let mut ctx = UserContext::new(&space, payload.at, rsp);

    // The timer payload runs with the kernel's interrupts off, so the interrupt cannot arrive
    // before ring 3: it is delivered there, the moment IRETQ sets IF.
    let interrupts_were_on = hwcpu::interrupts_enabled();
    if payload.timer {
        hwcpu::disable_interrupts();
        apic::timer_arm(
            TimerMode::OneShot,
            crate::platform::interrupts::TIMER_VECTOR,
            crate::platform::timer::TIMER_DIVIDE,
            TIMER_COUNT,
            false,
        );
        if apic::timer_current() == 0 {
            apic::timer_stop();
            if interrupts_were_on {
                hwcpu::enable_interrupts();
            }
            return Err("skipped: the APIC timer does not count");
        }
    }
    let result = supervise(task, payload, &space, &mut ctx);
    if payload.timer {
        apic::timer_stop();
        if interrupts_were_on {
            hwcpu::enable_interrupts();
        }
    }
    result
}

/// The kernel side of one payload: runs it, serves its syscalls and interrupts, reports how it
/// ended.
fn supervise(
    task: Task,
    payload: &Payload,
    space: &AddressSpace,
    ctx: &mut UserContext,
) -> Result<(), &'static str> {
    let mut syscalls = 0u64;
    let mut interrupts = 0u64;
    let entries_before = user::entry_counts();
    for _ in 0..MAX_ENTRIES {
        match user::run(ctx, space) {
            Exit::Syscall => {
                syscalls += 1;
                match ctx.rax {
                    nr::EXIT => {
                        let code = ctx.rdi as i64;
                        let entries = user::entry_counts();
                        record("task_exit", |r| {
                            r.str("task", task.name)
                                .u64("task_index", task.index)
                                .i64("code", code)
                                .u64("syscalls", syscalls)
                                .u64("interrupts", interrupts)
                                .object("entries", |r| {
                                    r.u64("iretq", entries.iretq - entries_before.iretq)
                                        .u64("sysretq", entries.sysretq - entries_before.sysretq)
                                })
                        });
                        say!("task   {}: exit {code}", task.name);
                        return Ok(());
                    }
                    nr::WRITE => ctx.rax = sys_write(task, space, ctx.rdi, ctx.rsi) as u64,
                    _ => ctx.rax = ENOSYS as u64,
                }
            }
            Exit::Trap { vector, .. } if ring3::is_interrupt(vector) => {
                // An interrupt (or NMI) in ring 3: the kernel's handler counts and acknowledges
                // it, as in kernel mode; then the task goes on.
                interrupts += 1;
                ring3::forward_interrupt(vector);
                if payload.timer && vector == crate::platform::interrupts::TIMER_VECTOR {
                    ctx.rip += 2;
                }
            }
            Exit::Trap {
                vector,
                error_code,
                cr2,
            } => {
                report_fault(task, ctx, vector, error_code, cr2, None);
                return Ok(());
            }
            Exit::InvalidContext(e) => {
                // What the CPU would raise if the task went on: #GP(0).
                report_fault(
                    task,
                    ctx,
                    13,
                    0,
                    None,
                    Some(ring3::invalid_context_detail(e)),
                );
                return Ok(());
            }
        }
    }
    Err("stopped after too many kernel entries")
}

//! What every ring-3 runner shares (the smoke test in [`super::smoke`] and the payload runner
//! in [`super::run`]): the task's identity in records, the `write` syscall, user-mode `fault`
//! records, and handing an interrupt taken in ring 3 to the kernel's handler.

use baremark_hw::gdt::{USER_CODE_SELECTOR, USER_DATA_SELECTOR};
use baremark_hw::user::{self, AddressSpace, ContextError, UserContext};

use super::abi::{EFAULT, EINVAL, WRITE_MAX};
use crate::output::console::record;
use crate::say;
use crate::traps;
use crate::traps::exceptions;

/// Text bytes per `task_output` record (escaping can grow text up to six times; a record line
/// is at most 4096 bytes).
const OUTPUT_CHUNK: usize = 512;

/// The identity of a running task, for its records.
#[derive(Clone, Copy)]
pub struct Task {
    pub name: &'static str,
    pub index: u64,
}

/// Whether a trap vector from ring 3 is an interrupt (NMI or an external vector), not an
/// exception of the task.
pub fn is_interrupt(vector: u8) -> bool {
    vector == 2 || vector >= 32
}

/// Hands an interrupt (or NMI) taken in ring 3 to the kernel's handler, which counts and
/// acknowledges it as in kernel mode; the task then goes on.
#[inline]
pub fn forward_interrupt(vector: u8) {
    traps::interrupt(vector);
}

/// The `detail` of the fault a task gets when its context cannot be resumed.
pub fn invalid_context_detail(e: ContextError) -> &'static str {
    match e {
        ContextError::NonCanonicalRip => {
            "rip is not a canonical user address: the task cannot be resumed"
        }
        ContextError::NonCanonicalRsp => {
            "rsp is not a canonical user address: the task cannot be resumed"
        }
    }
}

/// Copies `len` bytes at `ptr` out of the task, with the checks of `write` and `report`: the
/// range must lie in the lower half without wrapping (else `EFAULT`), `len` at most `max` (else
/// `EINVAL`), every byte mapped user memory (else `EFAULT`), the bytes UTF-8 (else `EINVAL`).
/// The text is handed to `f`.
pub fn with_user_text<R>(
    space: &AddressSpace,
    ptr: u64,
    len: u64,
    max: usize,
    f: impl FnOnce(&str) -> R,
) -> Result<R, i64> {
    if ptr.checked_add(len).is_none_or(|end| end > user::USER_END) {
        return Err(EFAULT);
    }
    let Some(len) = usize::try_from(len)
        .ok()
        .filter(|&l| l <= max.min(WRITE_MAX))
    else {
        return Err(EINVAL);
    };
    let mut buf = [0u8; WRITE_MAX];
    let buf = &mut buf[..len];
    if space.read(ptr, buf).is_err() {
        return Err(EFAULT);
    }
    let Ok(text) = core::str::from_utf8(buf) else {
        return Err(EINVAL);
    };
    Ok(f(text))
}

/// `write(ptr, len)`: the text goes out as `task_output` records (checks: [`with_user_text`]
/// with [`WRITE_MAX`]). Returns `len` or the error code.
pub fn sys_write(task: Task, space: &AddressSpace, ptr: u64, len: u64) -> i64 {
    let result = with_user_text(space, ptr, len, WRITE_MAX, |text| {
        let mut rest = text;
        let mut part = 0u64;
        loop {
            let mut cut = rest.len().min(OUTPUT_CHUNK);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let (chunk, tail) = rest.split_at(cut);
            record("task_output", |r| {
                r.str("task", task.name)
                    .u64("task_index", task.index)
                    .u64("part", part)
                    .str("text", chunk)
            });
            say!("task   {}: {}", task.name, chunk.trim_end());
            rest = tail;
            part += 1;
            if rest.is_empty() {
                break;
            }
        }
        text.len() as i64
    });
    result.unwrap_or_else(|e| e)
}

/// A `fault` record for a task: the fields of a kernel fault (docs/records.md), `mode: "user"`,
/// and the task. `detail` is set when the kernel, not the CPU, raised it.
pub fn report_fault(
    task: Task,
    ctx: &UserContext,
    vector: u8,
    error_code: u64,
    cr2: Option<u64>,
    detail: Option<&str>,
) {
    let (mnemonic, name) = exceptions::describe(u64::from(vector)).unwrap_or(("?", "unknown"));
    let state = crate::traps::fatal::FaultState {
        mode: "user",
        vector: u64::from(vector),
        error_code,
        rip: ctx.rip,
        cs: u64::from(USER_CODE_SELECTOR),
        rflags: ctx.rflags,
        rsp: ctx.rsp,
        ss: u64::from(USER_DATA_SELECTOR),
        cr2,
        gprs: [
            ctx.rax, ctx.rbx, ctx.rcx, ctx.rdx, ctx.rsi, ctx.rdi, ctx.rbp, ctx.r8, ctx.r9, ctx.r10,
            ctx.r11, ctx.r12, ctx.r13, ctx.r14, ctx.r15,
        ],
    };
    record("fault", |r| {
        crate::traps::fatal::fault_fields(
            r.str("task", task.name)
                .u64("task_index", task.index)
                .u64("cpu", crate::platform::cpus::current() as u64),
            &state,
        )
        .opt_str("detail", detail)
    });
    match (cr2, detail) {
        (Some(cr2), _) => say!(
            "task   {}: user-mode {mnemonic} {name} at rip {:#x}, cr2 {cr2:#x}",
            task.name,
            ctx.rip
        ),
        (None, Some(detail)) => say!(
            "task   {}: user-mode {mnemonic} {name} at rip {:#x}: {detail}",
            task.name,
            ctx.rip
        ),
        (None, None) => say!(
            "task   {}: user-mode {mnemonic} {name} at rip {:#x}",
            task.name,
            ctx.rip
        ),
    }
}

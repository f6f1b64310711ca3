//! The ring-3 side shared by the bins: running a benchmark with its report, and the bodies more
//! than one bin measures.

use core::fmt::{self, Write as _};

use baremark_sdk::ReportFmtError;
use baremark_sdk::bench::{self, Bench, Body};

/// Reports the benchmark's expected shape (`bench`, `iterations`, then `shape`: `key=value`
/// lines) once, then runs it under the harness. The exit code: 0, or 1 (after an `error=`
/// report) when the report does not fit or the kernel refused the benchmark.
pub fn run(b: &Bench<'_>, shape: fmt::Arguments<'_>) -> i64 {
    let (name, iterations) = (b.name, b.iterations);
    match baremark_sdk::report_fmt(format_args!(
        "bench={name}\niterations={iterations}\n{shape}"
    )) {
        Ok(_) => {}
        Err(ReportFmtError::TooLong) => {
            let _ = baremark_sdk::report("error=the expected shape does not fit in a report");
            return 1;
        }
        Err(ReportFmtError::Refused(e)) => return fail(format_args!("report refused: {e:?}")),
    }
    match bench::run(b) {
        Ok(()) => 0,
        Err(e) => fail(format_args!("bench::run: {e:?}")),
    }
}

/// Reports `error=<what>` (at most 128 bytes of it); the exit code of a failed benchmark, 1.
fn fail(what: fmt::Arguments<'_>) -> i64 {
    let mut err = baremark_sdk::Buf::<128>::new();
    let _ = write!(err, "error={what}");
    let _ = baremark_sdk::report(err.as_str());
    1
}

/// An assembly body as the harness's [`Body`].
///
/// # Safety
///
/// `f` must be sound to call with the `n` the harness passes (`iterations` or twice that, never
/// 0) and the benchmark's `arg`.
pub unsafe fn body(f: unsafe extern "C" fn(u64, u64)) -> Body {
    // SAFETY: the same ABI and signature; the caller vouches for every call the harness makes.
    unsafe { core::mem::transmute::<unsafe extern "C" fn(u64, u64), Body>(f) }
}

// The pointer chase: `n` dependent loads, `rsi` (arg) the first node. The code is the loop and
// `ret` only, so the count is exactly 3 instructions per load.
//
// The resuming chase (`chase-llc`, `chase-dram`): the same loop, but it starts from and leaves
// its position in the cursor `rsi` points to, so successive repetitions walk on through the chain
// instead of re-walking the same stretch, which a repetition short enough for emulation would
// otherwise keep in a smaller cache (L2, the LLC). Two instructions outside the loop (the cursor
// load and store): region - empty is 3n + 2 under icount, exactly 3n in `diff` mode.
//
// The branch body: one byte of the array at `rsi` (arg) per iteration and one conditional
// branch on it; both ways run the same number of instructions (the taken way a `nop`, the other
// an unconditional `jmp`), so any pattern costs the same 8 instructions per byte.
core::arch::global_asm!(
    ".pushsection .text.bm_chase, \"ax\", @progbits",
    ".p2align 6",
    ".global bm_chase",
    ".type bm_chase, @function",
    "bm_chase:",
    "2:  mov rsi, [rsi]",
    "    dec rdi",
    "    jnz 2b",
    "    ret",
    ".size bm_chase, . - bm_chase",
    ".popsection",
    ".pushsection .text.bm_chase_resume, \"ax\", @progbits",
    ".p2align 6",
    ".global bm_chase_resume",
    ".type bm_chase_resume, @function",
    "bm_chase_resume:",
    "    mov rax, [rsi]",
    "2:  mov rax, [rax]",
    "    dec rdi",
    "    jnz 2b",
    "    mov [rsi], rax",
    "    ret",
    ".size bm_chase_resume, . - bm_chase_resume",
    ".popsection",
    ".pushsection .text.bm_branch, \"ax\", @progbits",
    ".p2align 6",
    ".global bm_branch",
    ".type bm_branch, @function",
    "bm_branch:",
    "2:  movzx eax, byte ptr [rsi]",
    "    inc rsi",
    "    test al, 1",
    "    jnz 3f",
    "    add rdx, 1",
    "    jmp 4f",
    "3:  add r8, 1",
    "    nop",
    "4:  dec rdi",
    "    jnz 2b",
    "    ret",
    ".size bm_branch, . - bm_branch",
    ".popsection",
);

unsafe extern "C" {
    /// `n` (>= 1) loads `rsi = [rsi]`; `arg` a node of a closed chain.
    pub fn bm_chase(n: u64, arg: u64);
    /// `n` (>= 1) loads from the node in `*arg`, then the node reached into `*arg`.
    pub fn bm_chase_resume(n: u64, arg: u64);
    /// One branch on each of `n` (>= 1) bytes from `arg`.
    pub fn bm_branch(n: u64, arg: u64);
}

/// Instructions per load of [`bm_chase`] and [`bm_chase_resume`].
pub const CHASE_INSTRUCTIONS: u64 = 3;
/// Instructions per byte of [`bm_branch`].
pub const BRANCH_INSTRUCTIONS: u64 = 8;

/// A `chase-*` payload: links `lines` into one random cycle (one pass, before measuring) and
/// chases `iterations` loads through it; with `cursor`, the resuming chase (the cursor starts
/// at the first node).
pub fn chase<const N: usize>(
    name: &str,
    lines: &'static crate::Buffer<[crate::Line; N]>,
    cursor: Option<&'static crate::Buffer<u64>>,
    iterations: u64,
    expect: &str,
) -> i64 {
    const SEED: u64 = 0x6261_7265_6d61_726b; // "baremark"
    // SAFETY: called once, before the benchmark runs; nothing else refers to the buffer.
    let start = crate::build_chain(unsafe { lines.get_mut() }, lines.addr(), SEED);
    let (f, arg, fixed) = match cursor {
        Some(c) => {
            // SAFETY: as above, for the cursor.
            unsafe { *c.get_mut() = start };
            (
                bm_chase_resume as unsafe extern "C" fn(u64, u64),
                c.addr(),
                2,
            )
        }
        None => (bm_chase as unsafe extern "C" fn(u64, u64), start, 0),
    };
    // SAFETY: both chases follow a closed chain of valid nodes from `arg` (the first node, or
    // the cursor that always holds a node) for any n >= 1.
    let f = unsafe { body(f) };
    run(
        &Bench::new(name, iterations, f).with_arg(arg),
        format_args!(
            "buffer_bytes={}\nnodes={N}\nnode_bytes=64\ninstructions_per_iteration={CHASE_INSTRUCTIONS}\n\
             instructions_fixed={fixed}\nexpect={expect}",
            N * 64
        ),
    )
}

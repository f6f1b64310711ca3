//! The syscall ABI's numbers, codes and fixed addresses (docs/syscall-abi.md), and the pure
//! parts of the syscalls: payload member names, `report` text, the `counters_read` and `time`
//! buffers. Host-tested; the bare-metal dispatcher is in [`super::run`].

use alloc::vec::Vec;

use super::vcounter::Values;

/// Syscall numbers.
pub mod nr {
    pub const EXIT: u64 = 0;
    pub const WRITE: u64 = 1;
    pub const COUNTERS_CONFIGURE: u64 = 2;
    pub const COUNTERS_START: u64 = 3;
    pub const COUNTERS_STOP: u64 = 4;
    pub const COUNTERS_RESET: u64 = 5;
    pub const COUNTERS_READ: u64 = 6;
    pub const YIELD: u64 = 7;
    pub const SPAWN: u64 = 8;
    pub const WAIT: u64 = 9;
    pub const REPORT: u64 = 10;
    pub const TIME: u64 = 11;
    pub const USER_PAGE: u64 = 12;
    pub const READ_WINDOW: u64 = 13;
    pub const BENCH_PLAN: u64 = 14;
    pub const BENCH_BEGIN: u64 = 15;
    pub const BENCH_GROUP: u64 = 16;
    pub const BENCH_SAMPLES: u64 = 17;
    pub const BENCH_END: u64 = 18;
    pub const ARGS: u64 = 19;
    pub const COUNTERS_NOTIFY: u64 = 20;
    pub const COUNTERS_THRESHOLD: u64 = 21;
    pub const NOTIFY_RETURN: u64 = 22;
    pub const COUNTERS_READ_SCALED: u64 = 23;
    pub const SYSTEM_CONFIGURE: u64 = 24;
    pub const SYSTEM_READ: u64 = 25;
    pub const THREAD_START: u64 = 26;
    pub const THREAD_JOIN: u64 = 27;
    pub const CPUS: u64 = 28;
    /// One past the last number: every number from here up is unknown (ENOSYS), which the
    /// SYSCALL entry may answer itself (`hw::user`, "Light syscalls").
    pub const COUNT: u64 = 29;
    const _: () = assert!(CPUS + 1 == COUNT);
}

/// `counters_configure` flag (RDX): more GP events than GP counters are time-multiplexed.
pub const CONFIGURE_MULTIPLEX: u64 = 1;

/// `system_read` flag (RDX): the per-CPU form ([`system_cpus_buffer`]).
pub const SYSTEM_READ_PER_CPU: u64 = 1;

/// A bad argument.
pub const EINVAL: i64 = -1;
/// A pointer or length outside the task's (writable, for results) user memory.
pub const EFAULT: i64 = -2;
/// No such syscall.
pub const ENOSYS: i64 = -3;
/// No such payload / child.
pub const ENOENT: i64 = -4;
/// Not possible now.
pub const EBUSY: i64 = -5;
/// A buffer is too small.
pub const ENOSPC: i64 = -6;
/// `wait`: the child ended without an exit code (a fault, or killed by the watchdog).
pub const EABORTED: i64 = -7;
/// `counters_read`: the task's hardware counts were lost (a PMU error switching its counters;
/// `counters_configure` or `counters_reset` starts them again).
pub const ECOUNTERS: i64 = -8;

/// `spawn`: not enough free memory for the child (its address space could not be mapped; a
/// `task_error` record says what ran out). Memory comes back as tasks end.
pub const ENOMEM: i64 = -9;
/// `spawn`: a limit of the caller's family is reached for good ([`MAX_SPAWN_DEPTH`],
/// [`MAX_FAMILY_SPAWNS`]; an `error` record says which, once per family and limit).
pub const ELIMIT: i64 = -10;

/// Counters are requested on a machine without programmable counters (the TSC-only backend).
pub const ENODEV: i64 = -11;
/// The run configuration does not allow this payload to program counters (run.cfg `counters`).
pub const EPERM: i64 = -12;

/// `spawn` flag: add the child's counts (and virtual TSC) into the parent's when it ends.
pub const SPAWN_ADD_CHILD: u64 = 1;
/// The children a task may have that it has not waited for yet (spawn beyond: `EBUSY`).
pub const MAX_CHILDREN: usize = 16;
/// The spawned tasks that may exist at once, across all tasks (spawn beyond: `EBUSY`).
pub const MAX_SPAWNED: u32 = 64;
/// The most generations below a ramdisk payload (its children are generation 1): a task of
/// this generation cannot spawn (`ELIMIT`).
pub const MAX_SPAWN_DEPTH: u32 = 8;
/// The most tasks a ramdisk payload's family (its children, their children, ...) may start in
/// all (`ELIMIT` beyond). With [`MAX_SPAWNED`] alive at once and every task's address space freed
/// when it ends, this bounds what one payload can make the kernel do: without it a family that
/// spawns as its members end (a spawn bomb) would never end.
pub const MAX_FAMILY_SPAWNS: u32 = 256;

/// A limit that refuses a `spawn` (docs/syscall-abi.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnLimit {
    /// The caller is [`MAX_SPAWN_DEPTH`] generations below its ramdisk payload.
    Depth,
    /// The caller's family has started [`MAX_FAMILY_SPAWNS`] tasks.
    Family,
    /// The caller has [`MAX_CHILDREN`] children it has not waited for.
    Children,
    /// [`MAX_SPAWNED`] spawned tasks are alive.
    Alive,
}

impl SpawnLimit {
    /// The error `spawn` returns: `ELIMIT` for the limits that never lift (depth, family),
    /// `EBUSY` for those that do once tasks end or are waited for.
    pub fn code(self) -> i64 {
        match self {
            SpawnLimit::Depth | SpawnLimit::Family => ELIMIT,
            SpawnLimit::Children | SpawnLimit::Alive => EBUSY,
        }
    }

    /// What the limit is, for the record.
    pub fn describe(self) -> alloc::string::String {
        match self {
            SpawnLimit::Depth => alloc::format!(
                "a task {MAX_SPAWN_DEPTH} spawns below its ramdisk payload cannot spawn \
                (MAX_SPAWN_DEPTH)"
            ),
            SpawnLimit::Family => alloc::format!(
                "the family has started {MAX_FAMILY_SPAWNS} tasks, the most one ramdisk payload's \
                family may (MAX_FAMILY_SPAWNS)"
            ),
            SpawnLimit::Children => {
                alloc::format!("{MAX_CHILDREN} children not yet waited for (MAX_CHILDREN)")
            }
            SpawnLimit::Alive => {
                alloc::format!("{MAX_SPAWNED} spawned tasks are alive (MAX_SPAWNED)")
            }
        }
    }
}

/// The limit that refuses a `spawn` now, if any, in the order docs/syscall-abi.md gives: the
/// caller's generation (`depth`, 0 for a ramdisk payload), the tasks its family started, its
/// children not waited for, the spawned tasks alive.
pub fn spawn_limit(
    depth: u32,
    family_spawned: u32,
    children: usize,
    alive: u32,
) -> Option<SpawnLimit> {
    if depth >= MAX_SPAWN_DEPTH {
        Some(SpawnLimit::Depth)
    } else if family_spawned >= MAX_FAMILY_SPAWNS {
        Some(SpawnLimit::Family)
    } else if children >= MAX_CHILDREN {
        Some(SpawnLimit::Children)
    } else if alive >= MAX_SPAWNED {
        Some(SpawnLimit::Alive)
    } else {
        None
    }
}
/// Longest payload name (`spawn`).
pub const NAME_MAX: usize = 64;

/// Longest `write`, in bytes.
pub const WRITE_MAX: usize = 4096;
/// Longest `report`, in bytes (its record must fit a 4096-byte line even with escaping).
pub const REPORT_MAX: usize = 1024;

/// Where every task's read-only counter page is mapped (the `user_page` syscall returns it).
/// Above [`super::elf::Limits::DEFAULT_USER_END`], so no payload segment can collide with it.
pub const USER_PAGE_ADDR: u64 = 0x7fff_c000_0000;
/// The top of every task's stack (the stack grows down from here; the page below it is the
/// unmapped guard page). Also above the payload range.
pub const STACK_TOP: u64 = 0x7fff_8000_0000;
/// Stack pages of a task (64 KiB).
pub const STACK_PAGES: u64 = 16;

// The stack (with its guard page) and the counter page lie above every payload segment
// (`elf::Limits::DEFAULT_USER_END`) and inside the lower half.
const _: () = assert!(
    STACK_TOP - (STACK_PAGES + 1) * 4096 >= super::elf::Limits::DEFAULT_USER_END
        && USER_PAGE_ADDR >= STACK_TOP
        && USER_PAGE_ADDR.is_multiple_of(4096)
        && USER_PAGE_ADDR + 4096 <= super::elf::LOWER_HALF_END
);

/// The most threads one task starts in its life (`thread_start`; slots are not reused): one on
/// every other CPU of the largest machine (`MAX_CPUS` 512), so a task can reach every core.
pub const THREADS_MAX: u64 = 511;
/// Thread stacks are this far apart, below the task's own stack: thread `k` (1..=511) has its
/// stack top at `STACK_TOP - k * THREAD_STACK_STRIDE`, so `(STACK_TOP - rsp) /
/// THREAD_STACK_STRIDE` is the thread's slot (0: the task itself), which the SDK uses to keep
/// each thread's counter page apart.
pub const THREAD_STACK_STRIDE: u64 = 0x10_0000;

/// The stack top of thread `k` (1..=[`THREADS_MAX`]).
pub const fn thread_stack_top(k: u64) -> u64 {
    STACK_TOP - k * THREAD_STACK_STRIDE
}

/// Where thread `k`'s counter page is mapped (its `user_page` returns it).
pub const fn thread_page_addr(k: u64) -> u64 {
    USER_PAGE_ADDR + k * 4096
}

const _: () = assert!(
    thread_stack_top(THREADS_MAX) - (STACK_PAGES + 1) * 4096
        >= super::elf::Limits::DEFAULT_USER_END
        && STACK_PAGES * 4096 < THREAD_STACK_STRIDE
        && thread_page_addr(THREADS_MAX) + 4096 <= super::elf::LOWER_HALF_END
);

/// The RDPMC index (ECX) the kernel's RDPMC emulation answers with the task's virtual TSC.
/// No CPU counter has it (Intel: GP n, fixed `1 << 30 | n`, PERF_METRICS `1 << 29`, bit 31
/// "fast read" on old CPUs; AMD: small indices), so RDPMC with it raises #GP even where ring 3
/// may use RDPMC, and the kernel always gets to emulate it.
pub const VIRTUAL_TSC_INDEX: u32 = 0x1000_0000;

/// The ramdisk folder payloads are packed in (`payloads/<name>.elf`).
pub const PAYLOAD_DIR: &str = "payloads";

/// The canary (`canary` module, run.cfg `canary = on`): 16 bytes, repeated over free kernel
/// memory. ASCII, so that it shows in a record's JSON text as plainly as in a binary buffer.
pub const CANARY_PATTERN: [u8; 16] = *b"BAREMARK-CANARY!";

/// The ramdisk folder of the payloads' argument texts (`args/<name>`, the `args` syscall).
pub const ARGS_DIR: &str = "args";

/// The longest argument text (the host refuses longer ones).
pub const ARGS_MAX: usize = 4096;

/// The file name of a ramdisk member in folder `dir` (`prefix`/`name` as the ustar header
/// splits the path): `dir/<file>` or prefix `dir` with name `<file>`.
fn file_in<'a>(dir: &str, prefix: &str, name: &'a str) -> Option<&'a str> {
    if prefix.is_empty() {
        name.strip_prefix(dir)?.strip_prefix('/')
    } else if prefix == dir {
        Some(name)
    } else {
        None
    }
}

/// The payload name of an argument member (`args/<name>`), if it is one.
pub fn args_name<'a>(prefix: &str, name: &'a str) -> Option<&'a str> {
    let file = file_in(ARGS_DIR, prefix, name)?;
    (!file.is_empty() && !file.contains('/')).then_some(file)
}

/// The payload name of a ramdisk member (`prefix`/`name` as the ustar header splits the path),
/// if it is `payloads/<name>.elf` with a non-empty name without `/`.
pub fn payload_name<'a>(prefix: &str, name: &'a str) -> Option<&'a str> {
    let file = file_in(PAYLOAD_DIR, prefix, name)?;
    let stem = file.strip_suffix(".elf")?;
    (!stem.is_empty() && !stem.contains('/')).then_some(stem)
}

/// A `report` text as `key=value` pairs, if it is well-formed: at least one pair; every line
/// (a trailing `\r` ignored) blank or `key=value`; keys (trimmed) of 1-64 ASCII letters, digits,
/// `_`, `-`, `.`, each once; values trimmed of surrounding whitespace.
pub fn parse_report(text: &str) -> Option<Vec<(&str, &str)>> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let (key, value) = line.split_once('=')?;
        let key = key.trim();
        let key_ok = (1..=64).contains(&key.len())
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !key_ok || pairs.iter().any(|(k, _)| *k == key) {
            return None;
        }
        pairs.push((key, value.trim()));
    }
    (!pairs.is_empty()).then_some(pairs)
}

/// The `counters_read` buffer: `{generation, tsc, n, values[n]}`, little-endian u64s. `Err` with
/// [`ENOSPC`] if `len` bytes cannot hold it.
pub fn counters_read_buffer(values: &Values, len: u64) -> Result<Vec<u8>, i64> {
    counters_buffer(values.generation, values.tsc, values.counters(), len)
}

/// The `counters_read` buffer `{generation, tsc, n, values[n]}`, or `ENOSPC` if `len` is too
/// small for it.
pub fn counters_buffer(
    generation: u64,
    tsc: u64,
    counters: &[u64],
    len: u64,
) -> Result<Vec<u8>, i64> {
    let need = 8 * (3 + counters.len() as u64);
    if len < need {
        return Err(ENOSPC);
    }
    let mut out = Vec::with_capacity(need as usize);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&tsc.to_le_bytes());
    out.extend_from_slice(&(counters.len() as u64).to_le_bytes());
    for v in counters {
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(out)
}

/// One CPU's row of [`system_cpus_buffer`]: `(cpu, stale, counts)`.
pub type CpuRow<'a> = (u64, bool, &'a [u64]);

/// `system_read`'s per-CPU form: `{generation, tsc, n, m, total: [u64; n], m x {cpu, flags,
/// counts: [u64; n]}}` (`flags` bit 0: the CPU did not answer, its counts are its last read's).
/// `ENOSPC` if `len` is shorter.
pub fn system_cpus_buffer(
    generation: u64,
    tsc: u64,
    total: &[u64],
    rows: &[CpuRow<'_>],
    len: u64,
) -> Result<Vec<u8>, i64> {
    let n = total.len() as u64;
    let m = rows.len() as u64;
    let need = 8 * (4 + n + m * (2 + n));
    if len < need {
        return Err(ENOSPC);
    }
    let mut words = Vec::with_capacity(need as usize / 8);
    words.extend_from_slice(&[generation, tsc, n, m]);
    words.extend_from_slice(total);
    for (cpu, stale, counts) in rows {
        words.extend_from_slice(&[*cpu, u64::from(*stale)]);
        words.extend(
            counts
                .iter()
                .copied()
                .chain(core::iter::repeat(0))
                .take(n as usize),
        );
    }
    Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
}

/// `time`'s return value when the TSC frequency is unknown: the buffer's `tsc_hz` is then no
/// frequency (it holds 0), which a payload must not divide by or report as one.
pub const TIME_HZ_UNKNOWN: i64 = 1;

/// The `time` buffer `{tsc, tsc_hz}` and the syscall's return value: 0, or
/// [`TIME_HZ_UNKNOWN`] when the frequency is unknown.
pub fn time_reply(tsc: u64, tsc_hz: Option<u64>) -> ([u8; 16], i64) {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&tsc.to_le_bytes());
    out[8..].copy_from_slice(&tsc_hz.unwrap_or(0).to_le_bytes());
    (out, if tsc_hz.is_some() { 0 } else { TIME_HZ_UNKNOWN })
}

/// The `cpus` buffer: `{current, n, entries[n]}` as u64s, each entry the CPU's index (bits
/// 0-31) and its core type (CPUID.1AH:EAX[31:24], bits 32-39; 0: one kind of core), in index
/// order; `ENOSPC` when `len` bytes do not hold it.
pub fn cpus_reply(current: usize, online: &[(usize, u8)], len: u64) -> Result<Vec<u8>, i64> {
    let need = 16 + 8 * online.len() as u64;
    if len < need {
        return Err(ENOSPC);
    }
    let mut out = Vec::with_capacity(need as usize);
    out.extend_from_slice(&(current as u64).to_le_bytes());
    out.extend_from_slice(&(online.len() as u64).to_le_bytes());
    for &(index, core_type) in online {
        let entry = (index as u64 & 0xffff_ffff) | (u64::from(core_type) << 32);
        out.extend_from_slice(&entry.to_le_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::vcounter::VirtualCounters;

    #[test]
    fn cpus_lists_index_and_core_type_or_says_the_buffer_is_short() {
        let buf = cpus_reply(2, &[(0, 0x40), (1, 0x40), (2, 0x20)], 40).unwrap();
        let words: Vec<u64> = buf
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            words,
            [2, 3, 0x40_0000_0000, 0x40_0000_0001, 0x20_0000_0002]
        );
        assert_eq!(cpus_reply(0, &[(0, 0), (1, 0)], 31), Err(ENOSPC));
    }

    #[test]
    fn system_cpus_buffer_has_every_row() {
        let rows: [CpuRow<'_>; 2] = [(0, false, &[1, 2]), (3, true, &[10, 20])];
        let buf = system_cpus_buffer(7, 99, &[11, 22], &rows, 1024).unwrap();
        let words: Vec<u64> = buf
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, [7, 99, 2, 2, 11, 22, 0, 0, 1, 2, 3, 1, 10, 20]);
        assert_eq!(
            system_cpus_buffer(7, 99, &[11, 22], &rows, 8 * 14 - 1),
            Err(ENOSPC)
        );
    }

    #[test]
    fn time_says_when_the_frequency_is_unknown() {
        let (buf, status) = time_reply(5, Some(1_000_000_000));
        assert_eq!(status, 0);
        assert_eq!(buf[8..], 1_000_000_000u64.to_le_bytes());
        // Unknown is a value of its own, not a frequency of 0 Hz.
        let (buf, status) = time_reply(5, None);
        assert_eq!(status, TIME_HZ_UNKNOWN);
        assert_eq!(buf[..8], 5u64.to_le_bytes());
    }

    #[test]
    fn spawn_limits_in_their_order() {
        assert_eq!(spawn_limit(0, 0, 0, 0), None);
        assert_eq!(
            spawn_limit(
                MAX_SPAWN_DEPTH - 1,
                MAX_FAMILY_SPAWNS - 1,
                MAX_CHILDREN - 1,
                MAX_SPAWNED - 1
            ),
            None
        );
        let l = spawn_limit(
            MAX_SPAWN_DEPTH,
            MAX_FAMILY_SPAWNS,
            MAX_CHILDREN,
            MAX_SPAWNED,
        );
        assert_eq!(l, Some(SpawnLimit::Depth));
        let l = spawn_limit(0, MAX_FAMILY_SPAWNS, MAX_CHILDREN, MAX_SPAWNED);
        assert_eq!(l, Some(SpawnLimit::Family));
        assert_eq!(
            spawn_limit(0, 0, MAX_CHILDREN, MAX_SPAWNED),
            Some(SpawnLimit::Children)
        );
        assert_eq!(spawn_limit(0, 0, 0, MAX_SPAWNED), Some(SpawnLimit::Alive));
        // The permanent limits say so (ELIMIT), the passing ones are EBUSY.
        assert_eq!(SpawnLimit::Depth.code(), ELIMIT);
        assert_eq!(SpawnLimit::Family.code(), ELIMIT);
        assert_eq!(SpawnLimit::Children.code(), EBUSY);
        assert_eq!(SpawnLimit::Alive.code(), EBUSY);
        assert!(SpawnLimit::Family.describe().contains("256"));
        // Error codes stay distinct.
        let codes = [
            EINVAL, EFAULT, ENOSYS, ENOENT, EBUSY, ENOSPC, EABORTED, ECOUNTERS, ENOMEM, ELIMIT,
        ];
        for (i, c) in codes.iter().enumerate() {
            assert_eq!(*c, -(i as i64) - 1);
        }
    }

    #[test]
    fn payload_members() {
        assert_eq!(payload_name("", "payloads/hello.elf"), Some("hello"));
        assert_eq!(payload_name("payloads", "a.b.elf"), Some("a.b"));
        assert_eq!(payload_name("", "run.cfg"), None);
        assert_eq!(payload_name("", "payloads/.elf"), None);
        assert_eq!(payload_name("", "payloads/x/y.elf"), None);
        assert_eq!(payload_name("", "payloads/hello"), None);
        assert_eq!(payload_name("", "payloadsx/hello.elf"), None);
        assert_eq!(payload_name("other", "hello.elf"), None);
    }

    #[test]
    fn reports() {
        assert_eq!(
            parse_report("n=1000\ndelta = 4012\r\n\n"),
            Some(alloc::vec![("n", "1000"), ("delta", "4012")])
        );
        assert_eq!(parse_report("a=b=c"), Some(alloc::vec![("a", "b=c")]));
        assert_eq!(parse_report(""), None);
        assert_eq!(parse_report("just text"), None);
        assert_eq!(parse_report("a=1\na=2"), None, "duplicate key");
        assert_eq!(parse_report("=1"), None, "empty key");
        assert_eq!(parse_report("a b=1"), None, "space in key");
        assert_eq!(parse_report("\"x\"=1"), None);
    }

    #[test]
    fn counters_read_layout() {
        let mut vc = VirtualCounters::new();
        vc.configure(&[]).unwrap();
        vc.resume(&[], 100).unwrap();
        vc.suspend(&[], 142).unwrap();
        let values = vc.values();
        assert_eq!(counters_read_buffer(&values, 23), Err(ENOSPC));
        let buf = counters_read_buffer(&values, 24).unwrap();
        assert_eq!(buf.len(), 24);
        assert_eq!(buf[..8], 1u64.to_le_bytes(), "generation");
        assert_eq!(buf[8..16], 42u64.to_le_bytes(), "virtual tsc");
        assert_eq!(buf[16..24], 0u64.to_le_bytes(), "no counters");
        let (t, _) = time_reply(7, None);
        assert_eq!(t[..8], 7u64.to_le_bytes());
        assert_eq!(t[8..], 0u64.to_le_bytes());
    }
}

//! `zoo-memory`: grows its memory until the kernel refuses. A task has no system call that maps
//! memory at run time (no `mmap`, no `brk`: its memory is its ELF's segments, its stack and its
//! counter page), so the only way a payload can take more memory while it runs is `spawn`: each
//! child is a new address space. This payload is a 60 MiB task (a zeroed static array: its
//! bss, under the loader's 64 MiB limit) that spawns copies of itself without waiting for them
//! until `spawn` fails, then reports how many it got and the error, and exits 0. Each child
//! (`arg` 1) checks that its 60 MiB are zero (the loader's contract), writes every page, and
//! exits 0 (1 if a byte was not zero).
//!
//! On a machine with less memory than the family needs, `spawn` must return an error (not
//! panic, not hang), and once the family has ended its memory must be free again for the
//! payloads after it. How many copies fit depends on the machine's memory.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry_with_arg!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use core::cell::UnsafeCell;

    /// The task's 60 MiB: zero-initialised, so in the bss (no file bytes).
    const BYTES: usize = 60 << 20;
    const PAGE: usize = 4096;

    #[repr(C, align(4096))]
    struct Block(UnsafeCell<[u8; BYTES]>);
    // SAFETY: a task is single-threaded.
    unsafe impl Sync for Block {}
    static BLOCK: Block = Block(UnsafeCell::new([0; BYTES]));

    /// Most copies it asks for (a machine with more memory than that ends the loop here).
    const MAX_COPIES: u64 = 64;

    pub fn main(arg: u64) -> i64 {
        if arg != 0 {
            return touch();
        }
        let mut spawned = 0;
        let refusal = loop {
            if spawned == MAX_COPIES {
                break 0;
            }
            let id = baremark_payload_zoo::spawn_raw("zoo-memory", 0, 1);
            if id < 0 {
                break id;
            }
            spawned += 1;
        };
        baremark_payload_zoo::report(format_args!(
            "bytes_per_task={BYTES}\nspawned={spawned}\nrefused={refusal}"
        ));
        0
    }

    /// Checks that every page is zero and writes it: 0, or 1 if a byte was not zero.
    fn touch() -> i64 {
        let base = BLOCK.0.get().cast::<u8>();
        let mut dirty = 0u64;
        for page in 0..BYTES / PAGE {
            for at in [page * PAGE, page * PAGE + PAGE - 1] {
                // SAFETY: `at < BYTES`: inside the static, which nothing else references.
                let p = unsafe { base.add(at) };
                // SAFETY: as above.
                dirty += u64::from(unsafe { p.read_volatile() } != 0);
                // SAFETY: as above.
                unsafe { p.write_volatile(0xa5) };
            }
        }
        i64::from(dirty != 0)
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

//! `zoo-memory-elf`: a payload whose memory is over the loader's limit before it runs: a 65 MiB
//! zeroed static array (bss, so the file is small) where the kernel allows 64 MiB per payload
//! (`task::elf::Limits::DEFAULT_MAX_BYTES`). The kernel must not run it: a `task_error` record
//! ("needs at least ... bytes of memory, more than the limit of 67108864"), and the next
//! payload runs. If it ever ran, it would report and exit 0.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use core::cell::UnsafeCell;

    const BYTES: usize = 65 << 20;

    #[repr(C, align(4096))]
    struct Block(UnsafeCell<[u8; BYTES]>);
    // SAFETY: a task is single-threaded.
    unsafe impl Sync for Block {}
    static BLOCK: Block = Block(UnsafeCell::new([0; BYTES]));

    pub fn main() -> i64 {
        // Touch the last byte, so the array is kept.
        // SAFETY: inside the static, which nothing else references.
        unsafe { BLOCK.0.get().cast::<u8>().add(BYTES - 1).write_volatile(1) };
        let _ = baremark_sdk::report("ran=1");
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

//! `zoo-stack`: grows its stack without end (a recursion that keeps 1 KiB per call). The stack
//! is the one part of a task's memory that grows while it runs, and it is 64 KiB with an
//! unmapped guard page below (docs/syscall-abi.md): the kernel must end the task with a user
//! `fault` record, vector 14, a write to the guard page (`not-present`, `write`, `user`), and go
//! on. It never exits.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    /// Recurses `depth` times (the caller passes "forever"), each call with 1 KiB on the stack.
    #[inline(never)]
    fn grow(depth: u64) -> u64 {
        let mut frame = [0u8; 1024];
        frame[0] = depth as u8;
        core::hint::black_box(&mut frame);
        if depth == 0 {
            return u64::from(frame[0]);
        }
        grow(depth - 1).wrapping_add(u64::from(frame[1023]))
    }

    pub fn main() -> i64 {
        let _ = baremark_sdk::report("growing=the stack, 1 KiB per call");
        grow(core::hint::black_box(u64::MAX)) as i64
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

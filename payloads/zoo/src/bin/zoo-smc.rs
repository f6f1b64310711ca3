//! `zoo-smc`: self-modifying code and code in data. Payload memory is W^X (the loader maps each
//! segment writable or executable, never both; the stack and the counter page are not
//! executable), so each attempt must end its task with a user `fault`, vector 14. Each runs in
//! a child of this payload (`arg`: the case):
//!
//! 1. writes a `ret` over the start of one of its own functions (`present`, `write`, `user`);
//! 2. calls code it placed in its writable data (`instruction-fetch`);
//! 3. calls code it placed on its stack (`instruction-fetch`);
//! 4. calls its counter page (`instruction-fetch`).
//!
//! Had a write succeeded, the child would call the patched function and exit 2; had a call
//! into data succeeded, it would exit 3. The parent first asks the kernel to write into its
//! code (`time` and `counters_read` with a code address as the buffer: `EFAULT`), then runs the
//! cases and reports what `wait` returned for each (`EABORTED`), and exits 0.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry_with_arg!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_zoo::{report, run_cases};
    use baremark_sdk::{nr, syscall3};

    /// `mov eax, 3; ret`: returns 3 if it ever runs where it should not.
    const CODE: [u8; 6] = [0xb8, 0x03, 0x00, 0x00, 0x00, 0xc3];

    /// Writable data holding code (not executable).
    #[repr(C, align(64))]
    struct Data(core::cell::UnsafeCell<[u8; 64]>);
    // SAFETY: a task is single-threaded.
    unsafe impl Sync for Data {}
    static DATA: Data = Data(core::cell::UnsafeCell::new({
        let mut d = [0xccu8; 64];
        let mut i = 0;
        while i < CODE.len() {
            d[i] = CODE[i];
            i += 1;
        }
        d
    }));

    /// The function case 1 patches: returns 0 unless patched.
    #[inline(never)]
    extern "C" fn victim() -> i64 {
        core::hint::black_box(0)
    }

    /// Calls `addr` as a function returning a value in RAX.
    fn call(addr: u64) -> i64 {
        // SAFETY: not sound on purpose: `addr` is not executable, so the call faults and the
        // kernel ends the task (nothing after it runs).
        let f: extern "C" fn() -> i64 = unsafe { core::mem::transmute(addr as usize) };
        f()
    }

    pub fn main(arg: u64) -> i64 {
        match arg {
            0 => parent(),
            1 => {
                let code = victim as *const () as *mut u8;
                // SAFETY: not sound on purpose: code pages are read-only, so this faults.
                unsafe { code.write_volatile(0xc3) };
                let _ = victim();
                2
            }
            2 => call(DATA.0.get() as u64),
            3 => {
                let mut stack = [0xccu8; 64];
                stack[..CODE.len()].copy_from_slice(&CODE);
                let stack = core::hint::black_box(&mut stack);
                call(stack.as_ptr() as u64)
            }
            4 => call(syscall3(nr::USER_PAGE, 0, 0, 0) as u64),
            _ => 100,
        }
    }

    fn parent() -> i64 {
        let code = victim as *const () as u64;
        let time = syscall3(nr::TIME, code, 0, 0);
        let read = syscall3(nr::COUNTERS_READ, code, 64, 0);
        report(format_args!(
            "code={code:#x}\ntime_into_code={time}\ncounters_read_into_code={read}\n\
             code_unchanged={}",
            u8::from(victim() == 0)
        ));
        run_cases("zoo-smc", 1..=4);
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

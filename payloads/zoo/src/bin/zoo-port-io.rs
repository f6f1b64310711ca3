//! `zoo-port-io`: port I/O in ring 3. Tasks run with IOPL 0 (the kernel sanitises RFLAGS at
//! every entry) and the TSS has no I/O permission bitmap, so every IN, OUT, INS and OUTS must
//! raise #GP(0) and end the task with a user `fault` record, vector 13, error code 0; none may
//! reach a device. Each instruction runs in a child of this payload (`arg`: the case):
//!
//! 1. `in al, 0x80` (immediate port);
//! 2. `in eax, dx` with DX = 0x3f8 (COM1, the kernel's console);
//! 3. `out dx, al` with DX = 0xf4, AL = 0x11 (QEMU's isa-debug-exit: had it worked, QEMU would
//!    have exited at once with "failure", before the `end` record);
//! 4. `insb` from COM1 into the stack;
//! 5. `outsb` from the stack to COM1.
//!
//! Had an instruction not faulted, the child would exit 2. The parent reports what `wait`
//! returned for each case (`EABORTED`) and exits 0.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry_with_arg!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use core::arch::asm;

    pub fn main(arg: u64) -> i64 {
        let mut buf = [0u8; 16];
        match arg {
            0 => {
                baremark_payload_zoo::run_cases("zoo-port-io", 1..=5);
                return 0;
            }
            // Every case below is not sound on purpose: ring 3 has no I/O privilege, so the
            // instruction raises #GP and the kernel ends the task; nothing after it runs.
            // SAFETY: as said.
            1 => unsafe { asm!("in al, 0x80", out("al") _, options(nomem, nostack)) },
            // SAFETY: as above.
            2 => unsafe {
                asm!("in eax, dx", in("dx") 0x3f8u16, out("eax") _, options(nomem, nostack))
            },
            // SAFETY: as above.
            3 => unsafe {
                asm!("out dx, al", in("dx") 0xf4u16, in("al") 0x11u8, options(nomem, nostack))
            },
            // SAFETY: as above.
            4 => unsafe {
                asm!("insb", in("dx") 0x3f8u16, inout("rdi") buf.as_mut_ptr() => _,
                    options(nostack))
            },
            // SAFETY: as above.
            5 => unsafe {
                asm!("outsb", in("dx") 0x3f8u16, inout("rsi") buf.as_ptr() => _,
                    options(nostack))
            },
            _ => return 100,
        }
        core::hint::black_box(&mut buf);
        2
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}

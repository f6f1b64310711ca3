//! The ring-3 side: raw syscalls, wrappers, the entry point and the panic handler.

use core::arch::asm;
use core::fmt::{self, Write};

use crate::{Error, nr};

/// Raw syscall with up to three arguments (RDI, RSI, RDX); RCX and R11 are clobbered by SYSCALL.
#[inline(always)]
pub fn syscall3(number: u64, a: u64, b: u64, c: u64) -> i64 {
    let ret: i64;
    // SAFETY: SYSCALL transfers to the kernel, which validates every argument; it clobbers only
    // RCX and R11 (declared) and returns the result in RAX.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") number as i64 => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Ends the task with `code`.
pub fn exit(code: i64) -> ! {
    syscall3(nr::EXIT, code as u64, 0, 0);
    // The kernel never returns from exit; if it did, stop here without touching anything.
    loop {
        core::hint::spin_loop();
    }
}

/// Writes text to the console (a `task_output` record).
pub fn write(text: &str) -> Result<u64, Error> {
    Error::check(syscall3(
        nr::WRITE,
        text.as_ptr() as u64,
        text.len() as u64,
        0,
    ))
}

/// Reports a structured result: `key=value` lines (a `report` record).
pub fn report(lines: &str) -> Result<u64, Error> {
    Error::check(syscall3(
        nr::REPORT,
        lines.as_ptr() as u64,
        lines.len() as u64,
        0,
    ))
}

/// The TSC, read directly (RDTSC is allowed in ring 3).
#[inline(always)]
pub fn rdtsc() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: RDTSC reads the time-stamp counter into EDX:EAX and has no other effect.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// RDPMC: reads counter `index` (GP n, fixed `(1 << 30) | n`). The kernel emulates it when
/// CR4.PCE is clear, so the same binary works under emulation.
#[inline(always)]
pub fn rdpmc(index: u32) -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: RDPMC reads a counter into EDX:EAX; if the CPU refuses it in ring 3 the kernel
    // emulates it (or ends the task with a fault record).
    unsafe {
        asm!("rdpmc", in("ecx") index, out("eax") lo, out("edx") hi, options(nomem, nostack))
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Formats into a fixed buffer, so payloads need no allocator.
pub struct Buf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Buf<N> {
    pub const fn new() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
        }
    }
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Default for Buf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Write for Buf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let take = s.len().min(N - self.len);
        self.bytes[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        if take < s.len() {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// Exit code of a payload that panicked.
pub const PANIC_EXIT: i64 = 101;

/// Reports the panic as a `report` (`panic=...`) and exits with [`PANIC_EXIT`].
pub fn panic_exit(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut buf = Buf::<512>::new();
    let _ = write!(buf, "panic={}", info.message());
    if let Some(l) = info.location() {
        let _ = write!(buf, "\npanic_location={}:{}", l.file(), l.line());
    }
    let _ = report(buf.as_str());
    exit(PANIC_EXIT)
}

/// Defines the payload's entry point (`_start`) and panic handler around `main() -> i64`; the
/// value `main` returns is the exit code.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn _start() -> ! {
            let f: fn() -> i64 = $main;
            $crate::exit(f())
        }

        #[panic_handler]
        fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
            $crate::panic_exit(info)
        }
    };
}

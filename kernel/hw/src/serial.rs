//! COM1 serial output (16550 UART at I/O port 0x3f8, 115200 8N1).
//!
//! Every report of the kernel goes out here. Normal output takes a spin lock so records from
//! different code paths never interleave. Fatal reports (exceptions, panics) must not wait for
//! a lock the interrupted code may hold, so they use [`write_fatal`], which talks to the UART
//! without it.

use spin::Mutex;
use uart_16550::backend::PioBackend;
use uart_16550::{BaudRate, Config, Uart16550};

const COM1: u16 = 0x3f8;

static PORT: Mutex<Option<Uart16550<PioBackend>>> = Mutex::new(None);

/// Result of probing COM1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerialStatus {
    /// A UART answered and was initialised.
    Ready,
    /// Nothing answered at 0x3f8 (many laptops); output is dropped.
    Absent,
}

/// Initialises COM1. Safe to call more than once.
pub fn init() -> SerialStatus {
    // SAFETY: 0x3f8..0x3ff are COM1's registers on every PC and QEMU machine; this module is
    // their only user.
    let Ok(mut uart) = (unsafe { Uart16550::new_port(COM1) }) else {
        return SerialStatus::Absent;
    };
    // 115200 baud: at the crate's default 9600 a long report would take seconds on real
    // hardware (QEMU ignores the rate). Capture with e.g. `picocom -b 115200 /dev/ttyUSB0`.
    let config = Config {
        baud_rate: BaudRate::Baud115200,
        ..Config::DEFAULT
    };
    if uart.init(config).is_err() {
        return SerialStatus::Absent;
    }
    *PORT.lock() = Some(uart);
    SerialStatus::Ready
}

/// Writes bytes to COM1 under the lock. Does nothing when no UART is present.
pub fn write(bytes: &[u8]) {
    if let Some(uart) = PORT.lock().as_mut() {
        uart.send_bytes_exact(bytes);
    }
}

/// Runs `f` with the serial lock held, so a multi-part write (one record) cannot interleave.
pub fn with_lock<R>(f: impl FnOnce(&mut dyn FnMut(&[u8])) -> R) -> R {
    let mut guard = PORT.lock();
    let mut sink = |bytes: &[u8]| {
        if let Some(uart) = guard.as_mut() {
            uart.send_bytes_exact(bytes);
        }
    };
    f(&mut sink)
}

/// Writes bytes to COM1 without taking the lock: for fatal reports only, after which the
/// kernel never returns to the interrupted code. If the interrupted code was mid-line, the
/// caller starts its report on a new line.
pub fn write_fatal(bytes: &[u8]) {
    if PORT.is_locked() {
        // SAFETY: same port as `init`; the owner of the lock was interrupted and will never
        // run again (the caller ends the run), so no two writers ever drive the UART at once.
        // The UART was already initialised, so no configuration is needed.
        if let Ok(mut uart) = unsafe { Uart16550::new_port(COM1) } {
            uart.send_bytes_exact(bytes);
        }
    } else {
        write(bytes);
    }
}

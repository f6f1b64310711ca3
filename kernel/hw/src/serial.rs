//! COM1 serial output (16550 UART at I/O port 0x3f8, 115200 8N1).
//!
//! Every report of the kernel goes out here. Normal output takes a spin lock so records from
//! different code paths never interleave. Fatal reports (exceptions, panics) must not wait for
//! a lock the interrupted code may hold, so they use [`write_fatal`], which talks to the UART
//! without it.
//!
//! No wait here is unbounded: a UART that passes the probe but never drains (a broken one, or
//! one whose flow control is held) would otherwise hang the kernel in its first record. Sends
//! go through `drain::send_bounded`; after [`STALL_TSC`] ticks without progress the port is
//! given up ([`stalled`] says so, and the kernel says it on the screen) and later output is
//! dropped and counted, at no cost.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use spin::Mutex;
use uart_16550::backend::PioBackend;
use uart_16550::{BaudRate, Config, Uart16550};

use crate::cpu::rdtsc;
use crate::drain::send_bounded;

const COM1: u16 = 0x3f8;
/// The line status register: bit 6, transmitter empty (FIFO and shift register).
const LSR: u16 = COM1 + 5;
const LSR_TEMT: u8 = 0x40;

/// TSC ticks without progress before the port is given up: 2^28 is 27 ms for a 10 GHz TSC and
/// half a second for a 500 MHz one, against 1.4 ms for the 16-byte FIFO to drain at 115200 baud.
pub const STALL_TSC: u64 = 1 << 28;

static PORT: Mutex<Option<Uart16550<PioBackend>>> = Mutex::new(None);
/// Set when the UART stopped draining: nothing is sent any more.
static STALLED: AtomicBool = AtomicBool::new(false);
/// Bytes not sent because the UART stalled.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Result of probing COM1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerialStatus {
    /// A UART answered and was initialised.
    Ready,
    /// Nothing answered at 0x3f8 (many laptops); output is dropped.
    Absent,
    /// A UART answered but did not drain what it held: given up, output is dropped.
    Stalled,
}

/// Whether COM1's transmitter empties within [`STALL_TSC`] ticks.
fn drains() -> bool {
    let start = rdtsc();
    loop {
        // SAFETY: COM1's line status register; reading it has no side effect on output (it
        // clears receive error flags, which nothing here uses).
        if unsafe { crate::port::inb(LSR) } & LSR_TEMT != 0 {
            return true;
        }
        if rdtsc().wrapping_sub(start) > STALL_TSC {
            return false;
        }
        core::hint::spin_loop();
    }
}

/// Initialises COM1. Safe to call more than once.
pub fn init() -> SerialStatus {
    // SAFETY: 0x3f8..0x3ff are COM1's registers on every PC and QEMU machine; this module is
    // their only user.
    let Ok(mut uart) = (unsafe { Uart16550::new_port(COM1) }) else {
        return SerialStatus::Absent;
    };
    // The crate's `init` waits, without a bound, for the transmitter to drain: check first.
    if !drains() {
        STALLED.store(true, Relaxed);
        return SerialStatus::Stalled;
    }
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

/// Sends `bytes` with a bounded wait; a stall gives the port up.
fn send(uart: &mut Uart16550<PioBackend>, bytes: &[u8]) {
    if STALLED.load(Relaxed) {
        DROPPED.fetch_add(bytes.len() as u64, Relaxed);
        return;
    }
    let mut now = rdtsc;
    if let Err(s) = send_bounded(bytes, &mut |b| uart.send_bytes(b), &mut now, STALL_TSC) {
        STALLED.store(true, Relaxed);
        DROPPED.fetch_add((bytes.len() - s.sent) as u64, Relaxed);
    }
}

/// Whether COM1 stopped draining and was given up, and the bytes dropped since.
pub fn stalled() -> Option<u64> {
    STALLED.load(Relaxed).then(|| DROPPED.load(Relaxed))
}

/// Writes bytes to COM1 under the lock. Does nothing when no UART is present.
pub fn write(bytes: &[u8]) {
    if let Some(uart) = PORT.lock().as_mut() {
        send(uart, bytes);
    }
}

/// Runs `f` with the serial lock held, so a multi-part write (one record) cannot interleave.
pub fn with_lock<R>(f: impl FnOnce(&mut dyn FnMut(&[u8])) -> R) -> R {
    let mut guard = PORT.lock();
    let mut sink = |bytes: &[u8]| {
        if let Some(uart) = guard.as_mut() {
            send(uart, bytes);
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
            send(&mut uart, bytes);
        }
    } else {
        write(bytes);
    }
}

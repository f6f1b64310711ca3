//! The fan-out: every line the console makes goes to the serial port at once, into the stream
//! kept for the results file (written out by `sinks` between payloads), and, for text lines,
//! into the screen's queue. Nothing here is drawn or written to a disk: that happens only in
//! `sinks`' flushes, where no measured region is open.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use baremark_hw::serial;
use spin::Mutex;

use super::screen;

/// Bytes of the stream kept between two flushes. A flush empties it; what does not fit before
/// the next flush is counted as dropped (the `outputs` record says how much).
const PENDING_MAX: usize = 1 << 20;

struct Pending {
    bytes: [u8; PENDING_MAX],
    len: usize,
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    bytes: [0; PENDING_MAX],
    len: 0,
});
/// Whether the stream is kept at all (no results file: nothing to keep it for).
static KEEP: AtomicBool = AtomicBool::new(true);
/// Stream bytes that found the pending buffer full (or locked by interrupted code).
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Whether the screen was told that the serial port stalled.
static STALL_SHOWN: AtomicBool = AtomicBool::new(false);

/// Sends one line (adds the line ending) to the serial port under its lock, and keeps it.
pub fn line(bytes: &[u8]) {
    serial::with_lock(|send| {
        send(bytes);
        send(b"\r\n");
        keep(bytes);
        keep(b"\r\n");
    });
    note_stall();
}

/// The first time the serial port is found given up (a UART that stopped draining), says so
/// on the screen: the stream goes on there and into the results file.
fn note_stall() {
    if serial::stalled().is_some() && !STALL_SHOWN.swap(true, Relaxed) {
        screen::text(
            b"serial COM1 stopped taking bytes within a bounded wait: given up; the report goes \
              on here and into the results file",
        );
    }
}

/// Sends bytes from a fault or panic path: the serial lock is not waited for (the interrupted
/// code may hold it), and they are kept.
pub fn fatal(bytes: &[u8]) {
    serial::write_fatal(bytes);
    keep(bytes);
    note_stall();
}

/// A human-readable line (no line ending) for the screen, which queues it.
pub fn text(line: &[u8]) {
    screen::text(line);
}

/// Keeps a piece of the serial stream (called for every byte sent, in order).
fn keep(bytes: &[u8]) {
    if !KEEP.load(Relaxed) {
        return;
    }
    // Never wait: the caller may be a fault report that interrupted a flush.
    let Some(mut p) = PENDING.try_lock() else {
        DROPPED.fetch_add(bytes.len() as u64, Relaxed);
        return;
    };
    let room = PENDING_MAX - p.len;
    let take = bytes.len().min(room);
    let at = p.len;
    p.bytes[at..at + take].copy_from_slice(&bytes[..take]);
    p.len += take;
    if take < bytes.len() {
        DROPPED.fetch_add((bytes.len() - take) as u64, Relaxed);
    }
}

/// Stops keeping the stream (no results file to write it to) and forgets what was kept.
pub fn stop_keeping() {
    KEEP.store(false, Relaxed);
    PENDING.lock().len = 0;
}

/// Takes the stream kept since the last call (`None` if a fault report holds it).
pub fn take_kept() -> Option<Vec<u8>> {
    let mut p = PENDING.try_lock()?;
    let v = p.bytes[..p.len].to_vec();
    p.len = 0;
    Some(v)
}

/// Stream bytes dropped so far (the kept stream was full or busy).
pub fn dropped() -> u64 {
    DROPPED.load(Relaxed)
}

//! The sinks besides the serial port: the screen (`screen`) and the results file on the boot
//! stick (`results_file`, over `devices::usb`): opening them, flushing them, and their records.
//!
//! The fan-out (`fanout`) keeps every line and queues text for the screen. Nothing is drawn and
//! nothing is written to the stick then: that happens only in [`between_payloads`] and
//! [`at_end`], which the task runner and the end of the run call where no measured region is
//! open, and their cost is measured and reported (the `outputs` record). This module reports
//! through the console like any producer; the sinks it drives never emit records.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use baremark_hw::cpu;
use spin::Mutex;

use super::console::record;
use super::fanout;
use super::results_file::{ResultsFile, Writer};
use super::screen;
use crate::devices::blockdev::BlockDevice;

/// The open results file and its disk.
struct Open {
    disk: Box<dyn BlockDevice>,
    writer: Writer,
}

static FILE: Mutex<Option<Open>> = Mutex::new(None);

/// Where the results went, for the final screen (`None`: no results file was asked for).
static RESULTS_NOTE: Mutex<Option<String>> = Mutex::new(None);

fn set_results_note(note: String) {
    if let Some(mut n) = RESULTS_NOTE.try_lock() {
        *n = Some(note);
    }
}

/// Cost of the flushes (TSC ticks), for the `outputs` record.
static FLUSHES: AtomicU64 = AtomicU64::new(0);
static FLUSH_TICKS: AtomicU64 = AtomicU64::new(0);
static FLUSH_TICKS_MAX: AtomicU64 = AtomicU64::new(0);

/// Looks for the boot stick named by the run configuration and opens its results file; says
/// what it found (the `results_file` record and a text line). Without a results file in the
/// configuration the stream is not kept.
pub fn open_results_file(config: Option<ResultsFile>) {
    let Some(file) = config else {
        fanout::stop_keeping();
        return;
    };
    let start = cpu::rdtsc();
    let probe = crate::devices::usb::probe();
    let mut rejected: Vec<String> = probe.notes;
    let mut chosen = None;
    for mut disk in probe.disks {
        match crate::output::results_file::check_disk(disk.as_mut(), &file) {
            Ok(()) if chosen.is_none() => chosen = Some(disk),
            Ok(()) => rejected.push(alloc::format!(
                "{}: also this image's stick; only the first is written",
                disk.describe()
            )),
            Err(why) => rejected.push(alloc::format!("{}: {why}", disk.describe())),
        }
    }
    let ticks = cpu::rdtsc().wrapping_sub(start);
    let described = chosen.as_ref().map(|d| d.describe());
    record("results_file", |r| {
        r.str(
            "state",
            if chosen.is_some() {
                "open"
            } else {
                "not-found"
            },
        )
        .opt_str("disk", described.as_deref())
        .u64("lba", file.lba)
        .u64("sectors", file.sectors)
        .fmt(
            "disk_signature",
            format_args!("{:#010x}", file.disk_signature),
        )
        .str_array("rejected", rejected.iter().map(String::as_str))
        .u64("probe_tsc", ticks)
    });
    for why in &rejected {
        crate::say!("stick  not written: {why}");
    }
    match chosen {
        Some(disk) => {
            crate::say!(
                "stick  results file BAREMARK/RESULTS.LOG on {}: {} KiB",
                described.as_deref().unwrap_or(""),
                file.sectors / 2
            );
            *FILE.lock() = Some(Open {
                disk,
                writer: Writer::new(file),
            });
        }
        None => {
            crate::say!(
                "stick  no USB stick with this image's results file was found: results are on \
                 the serial port only"
            );
            set_results_note(String::from(
                "Results: on the serial port only: no USB stick with this image's results file \
                 was found (the run's log says why)",
            ));
            fanout::stop_keeping();
        }
    }
}

/// Between payloads (no measured region open): draws the screen and writes the stream so far
/// to the stick. `status` is the screen's status line.
pub fn between_payloads(status: &str) {
    flush(status, false);
}

/// After the `end` record: the last write to the stick, and the final screen.
pub fn at_end(status: &str) {
    flush(status, true);
}

fn flush(status: &str, complete: bool) {
    let start = cpu::rdtsc();
    write_file(complete);
    if complete {
        if let Some(Some(open)) = FILE.try_lock().as_deref() {
            set_results_note(alloc::format!(
                "Results: written to BAREMARK/RESULTS.LOG on {}: {} bytes, {}.\n\
                 Plug the stick into a computer and run `baremark report` on it.",
                open.disk.describe(),
                open.writer.written(),
                open.writer.state().name()
            ));
        }
        if let Some(note) = RESULTS_NOTE.try_lock().as_deref().and_then(|n| n.clone()) {
            let lines: Vec<&str> = note.lines().collect();
            screen::set_notes(&lines);
        }
    }
    screen::flush(status);
    let ticks = cpu::rdtsc().wrapping_sub(start);
    FLUSHES.fetch_add(1, Relaxed);
    FLUSH_TICKS.fetch_add(ticks, Relaxed);
    FLUSH_TICKS_MAX.fetch_max(ticks, Relaxed);
}

/// Writes the pending stream to the results file, if one is open. A device error closes the
/// file (said on the screen and, while the serial port works, in an `error` record).
fn write_file(complete: bool) {
    // A fault report that interrupted a flush must not wait for it.
    let Some(mut file) = FILE.try_lock() else {
        return;
    };
    let Some(open) = file.as_mut() else {
        return;
    };
    let Some(bytes) = fanout::take_kept() else {
        return;
    };
    if let Err(e) = open.writer.append(open.disk.as_mut(), &bytes, complete) {
        let disk = open.disk.describe();
        *file = None;
        drop(file);
        fanout::stop_keeping();
        record("error", |r| {
            r.str("source", "results_file").fmt(
                "message",
                format_args!("writing to {disk} failed ({e}); the results file is closed"),
            )
        });
        crate::say!("stick  writing failed ({e}): the results file is closed");
        set_results_note(alloc::format!(
            "Results: writing to the stick failed ({e}); RESULTS.LOG holds the run up to then, \
             the serial port all of it"
        ));
    }
}

/// The `screen` record and its text line: the mode in use, or why there is no screen.
pub fn report_screen() {
    let Some(found) = screen::mode() else { return };
    record("screen", |r| match found {
        Ok(l) => r
            .str("state", "on")
            .u64("width", l.width as u64)
            .u64("height", l.height as u64)
            .u64("stride", l.stride as u64)
            .u64("bytes_per_pixel", l.bytes_per_pixel as u64)
            .str("pixel_format", l.format.name())
            .u64("columns", l.columns() as u64)
            .u64("rows", l.rows() as u64)
            .str("font", screen::FONT),
        Err(why) => r.str("state", "off").str("reason", why),
    });
    match found {
        Ok(l) => crate::say!(
            "screen {}x{} {}, {} bytes per pixel | {}x{} characters",
            l.width,
            l.height,
            l.format.name(),
            l.bytes_per_pixel,
            l.columns(),
            l.rows()
        ),
        Err(why) => crate::say!("screen off: {why}"),
    }
}

/// The cost records, before `end`: `screen_cost` (the screen's flushes so far; the final one
/// is after it) and `outputs` (what the flushes cost and what was dropped).
pub fn report_costs() {
    if let Some(cost) = screen::cost() {
        record("screen_cost", |r| {
            r.u64("flushes", cost.flushes)
                .u64("rows_drawn", cost.rows_drawn)
                .u64("rows_shifted", cost.rows_shifted)
                .u64("tsc_total", cost.tsc_total)
                .u64("tsc_max", cost.tsc_max)
                .u64("lines", cost.lines)
                .u64("dropped_lines", cost.dropped_lines)
        });
    }
    report_outputs();
}

/// The `outputs` record: what the flushes cost and what was dropped.
fn report_outputs() {
    let (written, state, file_dropped) = match FILE.try_lock().as_deref() {
        Some(Some(open)) => (
            Some(open.writer.written()),
            Some(open.writer.state().name()),
            open.writer.dropped,
        ),
        _ => (None, None, 0),
    };
    record("outputs", |r| {
        r.u64("flushes", FLUSHES.load(Relaxed))
            .u64("flush_tsc_total", FLUSH_TICKS.load(Relaxed))
            .u64("flush_tsc_max", FLUSH_TICKS_MAX.load(Relaxed))
            .opt_u64("results_file_bytes", written)
            .opt_str("results_file_state", state)
            .u64("dropped_bytes", fanout::dropped() + file_dropped)
            .opt_u64("serial_dropped_bytes", baremark_hw::serial::stalled())
    });
}

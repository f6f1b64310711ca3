//! The framebuffer console: the human-readable report on the screen (docs/screen.md).
//!
//! [`text`] (every text line sent to the serial port) and [`median`] (every benchmark's
//! medians) only change memory. Pixels change only in [`flush`], which `sinks` calls between
//! payloads and after the `end` record, where no measured region is open; what the flushes
//! cost ([`cost`]) is reported in the `screen_cost` record before `end` (the final draw comes
//! after it and is not in it). Without a frame buffer every hook does nothing. A sink: it never
//! emits records itself.

mod mode;

pub use mode::FONT;

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use baremark_hw::boot::Framebuffer;
use baremark_hw::cpu;
use baremark_screen::console::status_line;
use baremark_screen::{Console, Layout, Summary};
use spin::Mutex;

struct State {
    console: Console,
    buffer: &'static mut [u8],
    summary: Summary,
    /// (TSC at kernel entry, TSC Hz) for the status line's elapsed time.
    clock: Option<(u64, u64)>,
    /// Set by [`prepare_end`]: the next flush draws the final screen.
    ending: Option<Ending>,
    /// Lines for the final screen above the status (where the results went: `sinks`).
    notes: alloc::vec::Vec<alloc::string::String>,
    cost: Cost,
}

#[derive(Clone, Copy)]
struct Ending {
    ok: bool,
    halts: bool,
}

/// What the flushes so far cost (the `screen_cost` record).
#[derive(Clone, Copy, Default)]
struct Cost {
    flushes: u64,
    rows_drawn: u64,
    rows_shifted: u64,
    tsc_total: u64,
    tsc_max: u64,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
/// The mode found at [`init`], or why there is no screen, for the `screen` record.
static MODE: Mutex<Option<Result<Layout, &'static str>>> = Mutex::new(None);
/// Lines that found the console busy (a fault report that interrupted a flush) or not UTF-8.
static DROPPED_LINES: AtomicU64 = AtomicU64::new(0);
static LINES: AtomicU64 = AtomicU64::new(0);

/// Takes the frame buffer (if the bootloader set one up). Draws nothing.
pub fn init(fb: Option<Framebuffer>) {
    let found = match fb {
        None => Err("no frame buffer (none set up by the firmware and bootloader)"),
        Some(fb) => mode::layout(&fb.info).and_then(|layout| {
            let console = Console::new(layout, fb.buffer.len()).map_err(|e| e.message())?;
            *STATE.lock() = Some(State {
                console,
                buffer: fb.buffer,
                summary: Summary::new(),
                clock: None,
                ending: None,
                notes: alloc::vec::Vec::new(),
                cost: Cost::default(),
            });
            Ok(layout)
        }),
    };
    *MODE.lock() = Some(found);
}

/// The mode in use, or why there is no screen (`None` before [`init`]), for the `screen`
/// record (`sinks::report_screen`).
pub fn mode() -> Option<Result<Layout, &'static str>> {
    *MODE.lock()
}

/// Gives the status line its clock (once the TSC frequency is known).
pub fn set_clock(tsc_at_entry: u64, tsc_hz: Option<u64>) {
    if let (Some(hz), Some(s)) = (tsc_hz, STATE.lock().as_mut()) {
        s.clock = Some((tsc_at_entry, hz));
    }
}

/// A human-readable text line (without line ending), as sent to the serial port.
pub fn text(line: &[u8]) {
    // Never wait: the caller may be a fault report that interrupted a flush.
    let Some(mut guard) = STATE.try_lock() else {
        DROPPED_LINES.fetch_add(1, Relaxed);
        return;
    };
    let Some(s) = guard.as_mut() else { return };
    let text = match core::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => core::str::from_utf8(&line[..e.valid_up_to()]).unwrap_or(""),
    };
    s.console.text(text);
    LINES.fetch_add(1, Relaxed);
}

/// A benchmark's median per iteration for one event, for the final summary table.
pub fn median(bench: &str, event: &str, median: Option<f64>) {
    if let Some(s) = STATE.try_lock().as_mut().and_then(|g| g.as_mut()) {
        s.summary.add(bench, event, median);
    }
}

/// Called by `traps::fatal::end` before the last flush: that flush draws the final screen.
pub fn prepare_end(ok: bool, halts: bool) {
    if let Some(s) = STATE.try_lock().as_mut().and_then(|g| g.as_mut()) {
        s.ending = Some(Ending { ok, halts });
    }
}

/// Lines the final screen shows above the run's status (replacing earlier ones).
pub fn set_notes(notes: &[&str]) {
    if let Some(s) = STATE.try_lock().as_mut().and_then(|g| g.as_mut()) {
        s.notes = notes
            .iter()
            .map(|n| alloc::string::String::from(*n))
            .collect();
    }
}

/// Draws what is pending (between payloads and at the end, never inside a measured region).
/// `status`: the status line's text.
pub fn flush(status: &str) {
    let Some(mut guard) = STATE.try_lock() else {
        return;
    };
    let Some(s) = guard.as_mut() else { return };
    let start = cpu::rdtsc();
    let elapsed_ms = s
        .clock
        .map(|(entry, hz)| start.wrapping_sub(entry) as u128 * 1000 / u128::from(hz))
        .map(|ms| ms as u64);
    s.console.set_status(&status_line(status, elapsed_ms));
    if let Some(end) = s.ending {
        let last = if end.halts {
            "The run is over: the machine is halted and can be powered off."
        } else {
            "The run is over: QEMU exits."
        };
        let what = if end.ok {
            alloc::format!("Status: ok ({status})")
        } else {
            alloc::format!("Status: FAILED ({status})")
        };
        let notes: alloc::vec::Vec<&str> = s.notes.iter().map(|n| n.as_str()).collect();
        s.console
            .final_screen(&s.summary, &notes, &what, !end.ok, last);
    }
    let done = s.console.flush(s.buffer);
    let ticks = cpu::rdtsc().wrapping_sub(start);
    let c = &mut s.cost;
    c.flushes += 1;
    c.rows_drawn += done.rows_drawn as u64;
    c.rows_shifted += done.rows_shifted as u64;
    c.tsc_total += ticks;
    c.tsc_max = c.tsc_max.max(ticks);
}

/// What the flushes so far cost, for the `screen_cost` record (`None` without a screen, or
/// while a flush runs).
pub fn cost() -> Option<ScreenCost> {
    let cost = match STATE.try_lock().as_deref() {
        Some(Some(s)) => s.cost,
        _ => return None,
    };
    Some(ScreenCost {
        flushes: cost.flushes,
        rows_drawn: cost.rows_drawn,
        rows_shifted: cost.rows_shifted,
        tsc_total: cost.tsc_total,
        tsc_max: cost.tsc_max,
        lines: LINES.load(Relaxed),
        dropped_lines: DROPPED_LINES.load(Relaxed),
    })
}

/// The `screen_cost` record's figures.
pub struct ScreenCost {
    pub flushes: u64,
    pub rows_drawn: u64,
    pub rows_shifted: u64,
    pub tsc_total: u64,
    pub tsc_max: u64,
    /// Text lines queued.
    pub lines: u64,
    /// Lines that found the console busy or were not UTF-8.
    pub dropped_lines: u64,
}

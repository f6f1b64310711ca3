//! The console: the grid plus a renderer for one frame buffer. Appending text touches only
//! memory; [`Console::flush`] draws what changed.

use alloc::format;
use alloc::string::String;

use crate::grid::{Cell, Grid};
use crate::pixels::{Layout, LayoutError};
use crate::render::Renderer;
use crate::style::Style;
use crate::summary::Summary;

/// What one flush did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushStats {
    /// Text rows drawn (glyph by glyph).
    pub rows_drawn: usize,
    /// Text rows the region's pixels moved up by (a copy, no drawing).
    pub rows_shifted: usize,
    /// Whether the whole frame buffer was painted first (the first flush).
    pub cleared: bool,
}

/// A text console on a frame buffer of a given layout.
pub struct Console {
    grid: Grid,
    renderer: Renderer,
    /// Whether the frame buffer was cleared (the first flush does it).
    cleared: bool,
}

impl Console {
    /// A console for a frame buffer of `len` bytes laid out as `layout`.
    pub fn new(layout: Layout, len: usize) -> Result<Self, LayoutError> {
        layout.check(len)?;
        Ok(Self {
            grid: Grid::new(layout.columns(), layout.rows()),
            renderer: Renderer::new(layout),
            cleared: false,
        })
    }

    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    pub fn layout(&self) -> &Layout {
        self.renderer.layout()
    }

    /// Appends a line of the log (memory only).
    pub fn text(&mut self, line: &str) {
        self.grid.push_line(line, Style::Normal);
    }

    /// Sets the status line (memory only).
    pub fn set_status(&mut self, text: &str) {
        self.grid.set_status(text);
    }

    /// Draws what changed since the last flush into `fb` (the buffer given to [`Console::new`]'s
    /// checks): first shifts the region if it scrolled, then draws the changed rows.
    pub fn flush(&mut self, fb: &mut [u8]) -> FlushStats {
        let mut stats = FlushStats::default();
        if !self.cleared {
            self.renderer.clear(fb);
            self.grid.touch_all();
            self.cleared = true;
            stats.cleared = true;
        }
        let changes = self.grid.take_changes();
        if changes.shift > 0 {
            self.renderer
                .shift_up(fb, 1, self.grid.rows(), changes.shift);
            stats.rows_shifted = changes.shift;
        }
        for &row in &changes.rows {
            let cells = self.grid.row(row);
            let end = cells
                .iter()
                .rposition(|c| *c != Cell::BLANK)
                .map_or(0, |i| i + 1);
            for (col, cell) in cells[..end].iter().enumerate() {
                self.renderer.draw_cell(fb, row, col, cell.ch, cell.style);
            }
            self.renderer.blank_cells(fb, row, end, cells.len());
        }
        stats.rows_drawn = changes.rows.len();
        stats
    }

    /// Replaces the log with the final screen (memory only; a flush draws it): the summary
    /// table from row 1, `notes` (e.g. where the results went) above the run's status
    /// (`failed`: in the failure colour) on the row before last, and `last` on the last row.
    pub fn final_screen(
        &mut self,
        summary: &Summary,
        notes: &[&str],
        status: &str,
        failed: bool,
        last: &str,
    ) {
        let grid = &mut self.grid;
        grid.clear_region();
        let rows = grid.rows();
        let status_row = rows.saturating_sub(2).max(1);
        let last_row = rows - 1;
        // The notes take the rows just above the status, as many as fit below row 1.
        let notes = &notes[..notes.len().min(status_row.saturating_sub(2))];
        let notes_row = status_row - notes.len();
        for (i, note) in notes.iter().enumerate() {
            grid.set_row(notes_row + i, &format!(" {note}"), Style::Normal);
        }
        let table_end = notes_row;
        let mut row = 1;
        let put = |grid: &mut Grid, row: &mut usize, text: &str, style: Style| {
            if *row < table_end {
                grid.set_row(*row, text, style);
                *row += 1;
            }
        };
        if summary.benchmarks() == 0 {
            put(grid, &mut row, " No benchmark results.", Style::Heading);
        } else {
            let title = format!(
                " Summary of {} benchmarks: median per iteration; tsc in ticks",
                summary.benchmarks()
            );
            put(grid, &mut row, &title, Style::Heading);
            put(grid, &mut row, "", Style::Normal);
            let table = summary.table(grid.cols());
            // Keep a blank row above the status; say what did not fit.
            let room = table_end.saturating_sub(row + 1);
            let fits = table.len() <= room;
            for (i, line) in table.iter().enumerate() {
                if !fits && i + 1 >= room {
                    let more = format!(
                        " ... {} more lines: `baremark report` shows them",
                        table.len() - i
                    );
                    put(grid, &mut row, &more, Style::Normal);
                    break;
                }
                let style = if i == 0 {
                    Style::Heading
                } else {
                    Style::Normal
                };
                put(grid, &mut row, line, style);
            }
        }
        let style = if failed { Style::Fail } else { Style::Normal };
        if status_row < last_row {
            grid.set_row(status_row, &format!(" {status}"), style);
        }
        grid.set_row(last_row, &format!(" {last}"), Style::Heading);
    }
}

/// The status line: `baremark | <status> | <seconds since kernel entry> s` (the elapsed part
/// only when the time is known).
pub fn status_line(status: &str, elapsed_ms: Option<u64>) -> String {
    match elapsed_ms {
        Some(ms) => format!(" baremark | {status} | {}.{} s", ms / 1000, ms % 1000 / 100),
        None => format!(" baremark | {status}"),
    }
}

//! The text grid: row 0 is the status line, rows 1.. the scrolling region. Only memory: the
//! grid records which rows changed since the last flush (dirty rows) and how far the region
//! scrolled, so a flush can shift pixels and draw only what is new.
//!
//! The region is a ring of rows: scrolling by a line moves an index and clears one row, so
//! appending text costs about one row's worth of writes however full the screen is.

use alloc::vec;
use alloc::vec::Vec;

use crate::font;
use crate::style::Style;

/// One character cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub ch: char,
    pub style: Style,
}

impl Cell {
    pub const BLANK: Cell = Cell {
        ch: ' ',
        style: Style::Normal,
    };
}

/// What a flush has to do, taken from the grid by [`Grid::take_changes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changes {
    /// Shift the region's pixels up by this many rows first (0: no shift).
    pub shift: usize,
    /// Then draw these screen rows (ascending).
    pub rows: Vec<usize>,
}

/// The text on the screen.
#[derive(Clone, Debug)]
pub struct Grid {
    cols: usize,
    rows: usize,
    status: Vec<Cell>,
    status_dirty: bool,
    /// `rows - 1` region rows of `cols` cells, a ring starting at `top`.
    region: Vec<Cell>,
    /// Per stored region row (ring order): changed since the last flush.
    dirty: Vec<bool>,
    top: usize,
    /// The next region row (0-based) to write; `region_rows()` when the region is full.
    cursor: usize,
    /// Region rows scrolled since the last flush (capped at the region's height).
    shift: usize,
}

impl Grid {
    /// A blank grid of `cols` x `rows` (`rows` >= 2: the status line and at least one row).
    pub fn new(cols: usize, rows: usize) -> Self {
        assert!(
            cols >= 1 && rows >= 2,
            "a grid needs a status line and a row"
        );
        Self {
            cols,
            rows,
            status: vec![
                Cell {
                    ch: ' ',
                    style: Style::Status
                };
                cols
            ],
            status_dirty: true,
            region: vec![Cell::BLANK; cols * (rows - 1)],
            dirty: vec![true; rows - 1],
            top: 0,
            cursor: 0,
            shift: 0,
        }
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Rows including the status line.
    pub fn rows(&self) -> usize {
        self.rows
    }

    fn region_rows(&self) -> usize {
        self.rows - 1
    }

    /// Where screen row `row` (>= 1) is stored.
    fn slot(&self, row: usize) -> usize {
        (self.top + row - 1) % self.region_rows()
    }

    /// The cells of screen row `row` (0: the status line).
    pub fn row(&self, row: usize) -> &[Cell] {
        if row == 0 {
            &self.status
        } else {
            let s = self.slot(row) * self.cols;
            &self.region[s..s + self.cols]
        }
    }

    /// Row `row` as text, trailing blanks removed.
    pub fn row_text(&self, row: usize) -> alloc::string::String {
        let s: alloc::string::String = self.row(row).iter().map(|c| c.ch).collect();
        alloc::string::String::from(s.trim_end())
    }

    /// Writes `text` into screen row `row` from column 0 in `style`, blank after it (cut at
    /// the width). Marks the row changed.
    pub fn set_row(&mut self, row: usize, text: &str, style: Style) {
        let cols = self.cols;
        let (cells, pad) = if row == 0 {
            self.status_dirty = true;
            (&mut self.status[..], Style::Status)
        } else {
            let slot = self.slot(row);
            self.dirty[slot] = true;
            (
                &mut self.region[slot * cols..(slot + 1) * cols],
                Style::Normal,
            )
        };
        fill(cells, text, style, pad);
    }

    /// Sets the status line (marked changed only if it differs).
    pub fn set_status(&mut self, text: &str) {
        let mut cells = vec![Cell::BLANK; self.cols];
        fill(&mut cells, text, Style::Status, Style::Status);
        if cells != self.status {
            self.status = cells;
            self.status_dirty = true;
        }
    }

    /// Appends a line of text to the region, wrapped at the width; scrolls when full.
    pub fn push_line(&mut self, text: &str, style: Style) {
        let mut chars = text.chars().map(font::displayable).peekable();
        loop {
            let row = self.next_row();
            let cols = self.cols;
            let slot = self.slot(row);
            let cells = &mut self.region[slot * cols..(slot + 1) * cols];
            for cell in cells.iter_mut() {
                *cell = match chars.next() {
                    Some(ch) => Cell { ch, style },
                    None => Cell::BLANK,
                };
            }
            self.dirty[slot] = true;
            if chars.peek().is_none() {
                break;
            }
        }
    }

    /// The screen row the next line goes to, scrolling the region if it is full.
    fn next_row(&mut self) -> usize {
        let n = self.region_rows();
        if self.cursor == n {
            // The top row leaves; its storage becomes the new bottom row.
            self.top = (self.top + 1) % n;
            self.shift = (self.shift + 1).min(n);
        } else {
            self.cursor += 1;
        }
        self.cursor
    }

    /// Blanks the region and puts the cursor at its top (the final screen starts so).
    pub fn clear_region(&mut self) {
        self.region.fill(Cell::BLANK);
        self.dirty.fill(true);
        self.top = 0;
        self.cursor = 0;
        self.shift = 0;
    }

    /// Marks every row changed (the first flush draws everything).
    pub fn touch_all(&mut self) {
        self.status_dirty = true;
        self.dirty.fill(true);
        self.shift = 0;
    }

    /// What changed since the last call; the grid is then clean.
    pub fn take_changes(&mut self) -> Changes {
        let n = self.region_rows();
        // A shift of the whole region or more moves nothing that stays: draw all instead.
        let shift = if self.shift >= n { 0 } else { self.shift };
        if self.shift >= n {
            self.dirty.fill(true);
        }
        let mut rows = Vec::new();
        if self.status_dirty {
            rows.push(0);
        }
        for row in 1..self.rows {
            if self.dirty[self.slot(row)] {
                rows.push(row);
            }
        }
        self.status_dirty = false;
        self.dirty.fill(false);
        self.shift = 0;
        Changes { shift, rows }
    }
}

/// Writes `text` in `style` into `cells`, then blanks in `pad` (the status line is a bar).
fn fill(cells: &mut [Cell], text: &str, style: Style, pad: Style) {
    let mut chars = text.chars().map(font::displayable);
    for cell in cells.iter_mut() {
        *cell = match chars.next() {
            Some(ch) => Cell { ch, style },
            None => Cell {
                ch: ' ',
                style: pad,
            },
        };
    }
}

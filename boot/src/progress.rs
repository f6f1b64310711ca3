//! The progress bar while a run's results arrive: payloads done out of payloads packed, with
//! the benchmark being measured and the results so far.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::records::Record;

/// Progress over the payloads of a run.
pub struct Progress {
    bar: ProgressBar,
    payloads: u64,
    benchmarks: u64,
    results: u64,
    current: String,
}

impl Progress {
    /// A bar over `payloads` payloads on stderr; hidden when stderr is not a terminal, when
    /// `quiet` (e.g. `--verbose`, whose raw lines would fight with it), or with no payloads.
    pub fn new(payloads: usize, quiet: bool) -> Progress {
        let payloads = payloads as u64;
        let shown = !quiet && payloads > 0 && std::io::stderr().is_terminal();
        let bar = if shown {
            let bar = ProgressBar::with_draw_target(Some(payloads), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} payloads  {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar.set_message("booting");
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress {
            bar,
            payloads,
            benchmarks: 0,
            results: 0,
            current: String::new(),
        }
    }

    /// Updates the bar from a record.
    pub fn record(&mut self, r: &Record) {
        match r.kind.as_str() {
            "bench_start" => {
                self.benchmarks += 1;
                self.current = format!(
                    "{}/{}",
                    r.str("payload").unwrap_or("?"),
                    r.str("bench").unwrap_or("?")
                );
            }
            "result" => self.results += 1,
            // A top-level payload is done (children spawned later have higher indices).
            "task_exit" | "task_killed" | "task_stopped" | "task_error" | "fault"
                if r.u64("task_index").is_some_and(|i| i < self.payloads) =>
            {
                self.bar.inc(1);
            }
            "end" => self.bar.set_position(self.payloads),
            _ => return,
        }
        self.bar.set_message(format!(
            "{} | {} benchmarks, {} results",
            self.current, self.benchmarks, self.results
        ));
    }

    /// Runs `f` (which prints to stdout) with the bar out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

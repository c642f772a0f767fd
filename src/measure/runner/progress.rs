//! Progress of a measurement on stderr, and the stop check the engines poll between steps.
//!
//! Progress is written only between measured steps (never from a measuring thread while it
//! measures), so it costs the measurement nothing.

use std::io::IsTerminal;

use crate::measure::runner::harness::{self, StopFlag};

/// Whether the run should stop now: the flag was set, or Ctrl-C was pressed (see
/// [`harness::catch_interrupt`]).
pub(crate) fn should_stop(stop: &StopFlag) -> bool {
    stop.is_stopped() || harness::interrupted()
}

/// Counts the steps of a run and reports them on stderr: on a terminal one line redrawn in
/// place, elsewhere a line at every tenth of the run.
pub(crate) struct Progress {
    label: String,
    total: usize,
    done: usize,
    enabled: bool,
    terminal: bool,
}

impl Progress {
    /// Progress of `total` steps labelled `label` (e.g. "c2c"), reported on stderr.
    pub(crate) fn stderr(label: &str, total: usize) -> Self {
        Self {
            label: label.to_string(),
            total,
            done: 0,
            enabled: true,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// Progress that reports nothing (tests).
    #[cfg(test)]
    pub(crate) fn silent() -> Self {
        Self {
            label: String::new(),
            total: 0,
            done: 0,
            enabled: false,
            terminal: false,
        }
    }

    /// Adds `more` steps to the total (for runs whose size is known only phase by phase).
    pub(crate) fn add_total(&mut self, more: usize) {
        self.total += more;
    }

    /// Reports that the step described by `what` starts.
    pub(crate) fn step(&mut self, what: &str) {
        self.done += 1;
        if !self.enabled {
            return;
        }
        let total = self.total.max(self.done);
        let line = format!("{}: [{}/{}] {}", self.label, self.done, total, what);
        if self.terminal {
            show(&format!("\r\x1b[2K{line}"));
        } else if tenth(self.done - 1, total) != tenth(self.done, total) || self.done == 1 {
            show(&format!("{line}\n"));
        }
    }

    /// Ends the progress display (moves past the redrawn line on a terminal).
    pub(crate) fn finish(&mut self) {
        if self.enabled && self.terminal && self.done > 0 {
            show("\n");
        }
        self.enabled = false;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `text` on stderr at once, through the command line's listener
/// ([`crate::text::voice::progress`]).
fn show(text: &str) {
    crate::text::voice::progress(text);
}

/// Which tenth of the run `done` steps out of `total` reach.
fn tenth(done: usize, total: usize) -> usize {
    done * 10 / total.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenths_change_ten_times() {
        let changes = (1..=200)
            .filter(|&d| tenth(d - 1, 200) != tenth(d, 200))
            .count();
        assert_eq!(changes, 10);
        assert_eq!(tenth(3, 0), 30);
    }

    #[test]
    fn stop_flag_is_seen() {
        let stop = StopFlag::new();
        assert!(!should_stop(&stop) || harness::interrupted());
        stop.stop();
        assert!(should_stop(&stop));
    }
}

//! The one stderr voice of the command line: every message lowlat writes to stderr starts with
//! `lowlat: ` and one level word, as STYLE.md says:
//!
//! - [`error!`]: the command could not do (part of) its job;
//! - [`warning!`]: it did, but something the user must know is off;
//! - [`note!`]: something worth knowing that is not wrong (what it measures, what it wrote).
//!
//! A message of several lines has its further lines indented by two spaces under the first.
//! Library code does not write to stderr: it returns its warnings as data, and the command
//! that called it says them here. What it must say while it runs (a `Drop` that fails to
//! restore the machine, a measurement's helper thread, a run's progress notes) reaches this
//! module through [`crate::text::voice`], whose listener [`listen`] installs.

use std::fmt;

pub(crate) use crate::text::voice::Level;

/// Makes this module the listener of what library code says while it runs
/// ([`crate::text::voice`]), so that it reads as every other message; called once, as the
/// command starts.
pub(crate) fn listen() {
    crate::text::voice::listen(emit);
}

/// `message` as stderr lines: `lowlat: LEVEL: ` before the first line, two spaces before each
/// further one; ends with a newline.
pub(crate) fn lines(level: Level, message: &str) -> String {
    let mut out = String::new();
    for (n, line) in message.lines().enumerate() {
        if n == 0 {
            out.push_str("lowlat: ");
            out.push_str(level.word());
            out.push_str(": ");
            out.push_str(line);
        } else {
            out.push_str("  ");
            out.push_str(line.trim_start());
        }
        out.push('\n');
    }
    if out.is_empty() {
        out = format!("lowlat: {}:\n", level.word());
    }
    out
}

/// Writes `message` to stderr at `level`, in one write (lines of threads that write at the
/// same time do not interleave).
/// A progress line ([`Level::Progress`]) is written as it is.
pub(crate) fn emit(level: Level, message: fmt::Arguments<'_>) {
    match level {
        Level::Progress => eprint!("{message}"),
        _ => eprint!("{}", lines(level, &message.to_string())),
    }
}

/// Says on stderr, as `lowlat: error: …`, that the command could not do (part of) its job.
macro_rules! error {
    ($($arg:tt)*) => {
        $crate::cli::messages::emit($crate::cli::messages::Level::Error, format_args!($($arg)*))
    };
}

/// Says on stderr, as `lowlat: warning: …`, something the user must know is off.
macro_rules! warning {
    ($($arg:tt)*) => {
        $crate::cli::messages::emit($crate::cli::messages::Level::Warning, format_args!($($arg)*))
    };
}

/// Says on stderr, as `lowlat: note: …`, something worth knowing that is not wrong.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::cli::messages::emit($crate::cli::messages::Level::Note, format_args!($($arg)*))
    };
}

pub(crate) use {error, note, warning};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_prefix_one_level_word_and_indented_continuations() {
        assert_eq!(lines(Level::Error, "x"), "lowlat: error: x\n");
        assert_eq!(lines(Level::Warning, "x"), "lowlat: warning: x\n");
        assert_eq!(
            lines(
                Level::Note,
                "running in a container\n  judged: a\n    not judged: b"
            ),
            "lowlat: note: running in a container\n  judged: a\n  not judged: b\n"
        );
        assert_eq!(lines(Level::Note, ""), "lowlat: note:\n");
    }
}

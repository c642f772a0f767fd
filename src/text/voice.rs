//! The library's side of the one stderr voice: what library code says on stderr while it
//! runs, when it cannot return it as data, goes to the listener the command line installed
//! at its start (`cli::messages::listen`), which writes it as every other message
//! (`lowlat: warning: …`).
//!
//! Library code returns its warnings as data wherever it can (`machine::Warnings`, a result's
//! notes). This is for the four places where it cannot:
//!
//! - a `Drop` that restores the machine (the trace instances, the osnoise events) and fails:
//!   it has nothing to return to;
//! - a helper thread of a measurement (a load hog, a known-answer injector) that cannot start
//!   on its CPU: the run goes on without it, and the user should know now;
//! - what a measurement says while it runs (what it measures, how far it got), which is worth
//!   nothing once the run has ended;
//! - a warning due before a step that may fail: `bios::pipeline::connect` warns of plain HTTP
//!   before the password goes out, whether the login then succeeds or not.
//!
//! A listener is one function for the whole process, so that a `Drop` deep in the library
//! reaches it without one being passed down to it. Without a listener (the library's own
//! tests) nothing is written.

use std::fmt;
use std::sync::OnceLock;

/// How much a message matters; its word follows the `lowlat: ` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// `error`: the command could not do (part of) its job.
    Error,
    /// `warning`: something the user must know is off.
    Warning,
    /// `note`: worth knowing, not wrong.
    Note,
    /// How far a long step got (a measurement's pairs, a snapshot's unpacking): written as it
    /// is, without prefix or newline, so that a carriage return redraws it in place on a
    /// terminal.
    Progress,
}

impl Level {
    /// The level word (`error`, `warning`, `note`).
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Note => "note",
            Self::Progress => "progress",
        }
    }
}

/// What writes a message: the command line's, installed once.
pub(crate) type Listener = fn(Level, fmt::Arguments<'_>);

static LISTENER: OnceLock<Listener> = OnceLock::new();

/// Installs `listener` for the rest of the process (a second one is ignored).
pub(crate) fn listen(listener: Listener) {
    let _ = LISTENER.set(listener);
}

/// Says `message` at `level` through the listener, if one is installed.
pub(crate) fn say(level: Level, message: fmt::Arguments<'_>) {
    if let Some(listener) = LISTENER.get() {
        listener(level, message);
    }
}

/// Writes `text` as it is through the listener (see [`Level::Progress`]).
pub(crate) fn progress(text: &str) {
    say(Level::Progress, format_args!("{text}"));
}

/// Says a warning through the command line's listener (see the module's doc for when).
macro_rules! warning {
    ($($arg:tt)*) => {
        $crate::text::voice::say($crate::text::voice::Level::Warning, format_args!($($arg)*))
    };
}

/// Says a note through the command line's listener (see the module's doc for when).
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::text::voice::say($crate::text::voice::Level::Note, format_args!($($arg)*))
    };
}

pub(crate) use {note, warning};

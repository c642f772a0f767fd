//! What a command shows, in the order it shows it: lines said on stderr and pages on stdout (a
//! text page or a JSON document), and how it ended (failures found, or stopped part-way). A command's printers build it
//! from its typed result; the command line writes it out as it is (`cli/output.rs`), escaping
//! the text pages and saying the lines through its one stderr voice.

use serde::Serialize;

use crate::text::voice::Level;

/// One piece of what a command shows.
#[derive(Debug, PartialEq)]
pub(crate) enum Out {
    /// A line said on stderr, at this level.
    Say(Level, String),
    /// A text page for stdout (escaped as it is written).
    Text(String),
    /// A JSON document for stdout, pretty-printed, with a final newline.
    Json(String),
}

/// What a command shows, in order, and how it ended.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    /// The pieces, in the order they are written.
    pub out: Vec<Out>,
    /// Whether the command found failures (exit code 1).
    pub failures: bool,
    /// Whether the command stopped part-way (exit code 2, whatever it found).
    pub stopped: bool,
}

impl Shown {
    /// Says `line` on stderr at `level`.
    pub(crate) fn say(&mut self, level: Level, line: String) {
        self.out.push(Out::Say(level, line));
    }

    /// Shows the text page `text`.
    pub(crate) fn text(&mut self, text: String) {
        self.out.push(Out::Text(text));
    }

    /// Shows `document` as pretty JSON.
    pub(crate) fn json<T: Serialize>(&mut self, document: &T) -> Result<(), serde_json::Error> {
        self.out
            .push(Out::Json(serde_json::to_string_pretty(document)? + "\n"));
        Ok(())
    }
}

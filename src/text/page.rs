//! A page of text written line by line: the one writer of lowlat's printers and of the text
//! artifacts the plan renders. Writing to it cannot fail, so a printer neither ignores nor
//! propagates results. (Anchor: ripgrep's printer crate writes through one sink; here the sink
//! is memory.)
//!
//! `writeln!(page, "…{x}")` and `write!(page, …)` work on a `Page` (its own `write_fmt`
//! returns nothing); `line`, `blank` and `text` take text that is already made.

use std::fmt::{self, Display, Write as _};

/// Text under construction, one line after another; [`Page::into_string`] hands it over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Page(String);

impl Page {
    /// An empty page.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// `text` and the end of its line.
    pub(crate) fn line(&mut self, text: impl Display) {
        self.text(text);
        self.0.push('\n');
    }

    /// An empty line (or the end of the line that [`Page::text`] began).
    pub(crate) fn blank(&mut self) {
        self.0.push('\n');
    }

    /// `text` as it is: part of a line, or lines that end in their own newlines.
    pub(crate) fn text(&mut self, text: impl Display) {
        write!(self, "{text}");
    }

    /// `write!(page, …)` and `writeln!(page, …)`: the formatted text, appended.
    pub(crate) fn write_fmt(&mut self, args: fmt::Arguments<'_>) {
        // Writing to a String cannot fail.
        let _ = self.0.write_fmt(args);
    }

    /// The text so far.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The finished text.
    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

impl Display for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Page {
    /// A page that begins with `text` (a header).
    fn from(text: &str) -> Self {
        Self(text.to_string())
    }
}

impl From<String> for Page {
    /// A page that begins with `text` (a header).
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl From<Page> for String {
    fn from(page: Page) -> Self {
        page.into_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_blanks_parts_and_formatted_lines_in_order() {
        let mut page = Page::new();
        page.line("Settings:");
        writeln!(page, "  {:<5}{}", "a", 1);
        page.blank();
        page.text("no newline, ");
        write!(page, "{}", 2);
        page.blank();
        assert_eq!(page.as_str(), "Settings:\n  a    1\n\nno newline, 2\n");
        assert_eq!(String::from(page), "Settings:\n  a    1\n\nno newline, 2\n");
    }
}

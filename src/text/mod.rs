//! Text that came from another machine or from a file, made safe to show on a terminal; the
//! [`Page`] every printer writes its lines to; and the [`voice`] library code speaks through
//! on stderr while it runs.
//!
//! A snapshot, a fixture tree or a damaged file can carry control characters (`ESC ]0;…BEL`
//! retitles a terminal, `ESC [2J` clears it) and bidi overrides (`U+202E` shows the text after
//! it backwards). Every such value is passed through [`escape_controls`] before it is printed,
//! and through [`quote`] before it goes into a file another program reads.

mod page;
mod quote;
pub(crate) mod voice;

pub(crate) use page::Page;
pub(crate) use quote::{comment, host_label, is_host_name, quoted, shell_word, toml_string};
use std::borrow::Cow;

/// `text` with every character that changes how the text around it reads written as an escape:
/// the control characters (C0, DEL and C1, newlines and tabs included) as `\x1b` for C0 and DEL
/// and `\u{9b}` for C1, the bidi formatting characters and the line and paragraph separators
/// (which YAML and other readers take for a line break) as `\u{202e}`. Text without them is
/// returned as it is, without copying.
pub(crate) fn escape_controls(text: &str) -> Cow<'_, str> {
    escape_except(text, &[])
}

/// A whole page of output (lines of a table, a report) made safe for a terminal: as
/// [`escape_controls`], except that the newlines and tabs that lay the page out are kept.
pub(crate) fn escape_page(text: &str) -> Cow<'_, str> {
    escape_except(text, &['\n', '\t'])
}

/// A command line (`lowlat run`'s COMMAND) as one line for messages: its words joined by
/// spaces, each read lossily, the whole escaped.
pub(crate) fn command_line(words: &[std::ffi::OsString]) -> String {
    let words: Vec<_> = words.iter().map(|w| w.to_string_lossy()).collect();
    escape_page(&words.join(" ")).into_owned()
}

/// `text` cut to `max` characters, saying how many were left out (`… (N characters more)`):
/// a string from another machine or a file shown in a message or a page, where its whole
/// length (a 16 MiB host name) would drown the rest. Text within `max` is returned as it is.
pub(crate) fn shorten(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => {
            let more = text[cut..].chars().count();
            Cow::Owned(format!("{}… ({more} characters more)", &text[..cut]))
        }
    }
}

/// Whether `text` holds none of the characters [`escape_controls`] escapes.
pub(crate) fn is_plain(text: &str) -> bool {
    !text.chars().any(hides_text)
}

/// A control character, a bidi formatting character (the marks, embeddings, overrides and
/// isolates of Unicode's bidi algorithm) or a line or paragraph separator.
fn hides_text(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{2028}' | '\u{2029}'
        )
}

fn escape_except<'a>(text: &'a str, kept: &[char]) -> Cow<'a, str> {
    let escaped = |c: char| hides_text(c) && !kept.contains(&c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = Page::new();
    for c in text.chars() {
        if !escaped(c) {
            out.text(c);
            continue;
        }
        match u32::from(c) {
            code @ (0..=0x1f | 0x7f) => write!(out, "\\x{code:02x}"),
            code => write!(out, "\\u{{{code:x}}}"),
        }
    }
    Cow::Owned(out.into_string())
}

/// The text of an error as `lowlat: error:` prints it: the error and its causes joined by `: `,
/// leaving out a cause whose text the message already holds (a library error that names its
/// OS error would otherwise print it twice), with every control character but newline and tab
/// escaped. Errors quote input (a serde "unknown variant" quotes the document's value), and an
/// escape sequence from a file must not reach the terminal.
pub fn error_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    for cause in std::iter::successors(Some(err), |e| e.source()) {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    escape_page(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_says_how_much_was_left_out() {
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(shorten("héllo wörld", 5), "héllo… (6 characters more)");
    }

    #[test]
    fn terminal_sequences_are_escaped() {
        assert_eq!(
            escape_controls("\x1b]0;owned\x07\x1b[2Jhost\n\t\x7f"),
            "\\x1b]0;owned\\x07\\x1b[2Jhost\\x0a\\x09\\x7f"
        );
        assert_eq!(escape_controls("a\u{9b}b"), "a\\u{9b}b");
    }

    #[test]
    fn bidi_overrides_and_line_separators_are_escaped() {
        // R2-1 and R2-11 (issue 44): U+202E from a name shows the rest of a line backwards.
        assert_eq!(
            escape_controls("a\u{202e}b\u{2066}c\u{2028}d\u{200f}"),
            "a\\u{202e}b\\u{2066}c\\u{2028}d\\u{200f}"
        );
        assert!(!is_plain("kworker\u{202e}"));
        assert!(is_plain("kworker/0:1 µs"));
    }

    #[test]
    fn a_page_keeps_its_layout_and_loses_terminal_sequences() {
        assert_eq!(
            escape_page("host\x1b]0;owned\x07\tx\n\x1b[2J"),
            "host\\x1b]0;owned\\x07\tx\n\\x1b[2J"
        );
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "AMD EPYC 7F32 8-Core Processor µs ×";
        assert!(matches!(escape_controls(text), Cow::Borrowed(t) if t == text));
    }
}

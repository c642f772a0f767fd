//! Untrusted text (a host name, a CPU model, a task, interface or IRQ name, a reason quoting a
//! file) made safe in the files lowlat writes for other programs to read: one function per
//! place such text can go, so that every renderer escapes it the same way.
//!
//! - a comment line (`#` in sh, systemd and INI files, udev rules, sysctl.d, YAML, TOML):
//!   [`comment`] escapes what would end the line or hide text (controls, bidi, separators);
//! - a shell word: [`shell_word`];
//! - a TOML string: [`toml_string`] (YAML and JSON are written by their serializers);
//! - a host name where only a host name may go (an INI value, a shell script run as root):
//!   [`is_host_name`] refuses the rest, and [`host_label`] shows them quoted in comments.
//!
//! Nothing here decides what a value means; the renderers decide whether to refuse a value
//! (a task name a shell line would carry, a host name in a TuneD value) or escape it.

use super::{escape_controls, shorten};
use std::borrow::Cow;

/// `text` for inside one comment line: every character that would end the line or change how
/// it reads escaped as [`escape_controls`] writes it (`\x0a`, `\u{202e}`), and a backslash at
/// the end written `\x5c` (udev and systemd join a line ending in one to the next).
pub(crate) fn comment(text: &str) -> Cow<'_, str> {
    let escaped = escape_controls(text);
    match escaped.strip_suffix('\\') {
        Some(rest) => Cow::Owned(format!("{rest}\\x5c")),
        None => escaped,
    }
}

/// `text` shown as a quoted string: at most 64 characters (saying how many more), quotes and
/// backslashes escaped, and nothing that [`escape_controls`] would escape left raw: for a
/// comment or a message naming a value that is refused.
pub(crate) fn quoted(text: &str) -> String {
    let debug = format!("{:?}", shorten(text, 64));
    escape_controls(&debug).into_owned()
}

/// The host name `host` for a comment: as it is when it is a host name ([`is_host_name`]),
/// else [`quoted`] and said to be no host name.
pub(crate) fn host_label(host: &str) -> Cow<'_, str> {
    if is_host_name(host) {
        Cow::Borrowed(host)
    } else {
        Cow::Owned(format!("{} (not a host name)", quoted(host)))
    }
}

/// Whether `name` is a host name by RFC 1123 (section 2.1): dot-separated labels of ASCII
/// letters, digits and hyphens, 1 to 63 characters each, neither starting nor ending with a
/// hyphen; 253 characters in all. Such a name means the same in every format lowlat writes.
pub(crate) fn is_host_name(name: &str) -> bool {
    let label = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    name.len() <= 253 && name.split('.').all(label)
}

/// `word` as one shell word: as it is when it holds only characters the shell leaves alone,
/// else in single quotes (a quote inside written `'\''`). The shell reads nothing inside single
/// quotes, but a caller that writes a script for people to read refuses words holding what
/// [`super::escape_controls`] escapes (an escape sequence or a bidi override shows them another
/// command).
pub(crate) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/+=@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `text` as a TOML basic string. JSON's string escapes (`\"`, `\\`, `\n`, `\uXXXX`, ...) are
/// all TOML escapes, so serde_json writes it.
pub(crate) fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What breaks a line or hides text in some format the plan writes.
    const HOSTILE: &str = "evil\ntouch /tmp/x\r\0#]'\"$(id)`id`\n---\n[Service]\u{202e}\u{2028}\\";

    #[test]
    fn a_comment_is_one_line_without_controls_or_a_trailing_backslash() {
        let c = comment(HOSTILE);
        assert!(!c.chars().any(|c| c.is_control()), "{c}");
        assert!(!c.contains(['\u{202e}', '\u{2028}']), "{c}");
        assert!(c.ends_with("\\u{2028}\\x5c"), "{c}");
        assert!(c.starts_with("evil\\x0atouch /tmp/x\\x0d\\x00#]"), "{c}");
        assert!(matches!(comment("db1 (AMD EPYC)"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_host_name_is_shown_as_it_is_and_anything_else_quoted() {
        assert_eq!(host_label("db-1.example.com"), "db-1.example.com");
        let label = host_label(HOSTILE);
        assert!(
            label.starts_with(r#""evil\ntouch /tmp/x\r\0#]'\"$(id)"#),
            "{label}"
        );
        assert!(label.ends_with(" (not a host name)"), "{label}");
        assert!(!label.chars().any(|c| c.is_control()), "{label}");
        assert!(!label.contains(['\u{202e}', '\u{2028}']), "{label}");
        assert!(host_label(&"x".repeat(300)).contains("(236 characters more)"));
    }

    #[test]
    fn only_rfc_1123_host_names_are_host_names() {
        for good in ["db1", "db-1.example.com", "1a", "x".repeat(63).as_str()] {
            assert!(is_host_name(good), "{good}");
        }
        for bad in [
            "",
            "db1\nevil",
            "../etc",
            "db_1",
            "-db",
            "db-",
            "a..b",
            "db1.",
            "db@PLAN@",
            "\u{1b}[31mdb",
            "x".repeat(64).as_str(),
            vec!["a"; 128].join(".").as_str(),
        ] {
            assert!(!is_host_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn words_are_quoted_only_when_the_shell_would_touch_them() {
        assert_eq!(shell_word("1-7,9-15"), "1-7,9-15");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$(reboot)"), "'$(reboot)'");
    }

    #[test]
    fn toml_strings_escape_quotes_backslashes_and_newlines() {
        assert_eq!(toml_string("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
    }
}

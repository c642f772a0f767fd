//! `KEY=value` configuration files: shell-style environment files (`/etc/sysconfig/*`,
//! `/etc/default/*`, `/etc/os-release`) and TuneD's `key = value` variable files.

use crate::machine::{Warnings, truncate};

/// One assignment of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Var {
    /// The variable name.
    pub key: String,
    /// The value, with quotes and escapes resolved.
    pub value: String,
    /// The 1-based line it was set on.
    pub line: usize,
}

/// The value of the last assignment of `key` (later assignments win, as in the shell).
pub(crate) fn last<'a>(vars: &'a [Var], key: &str) -> Option<&'a Var> {
    vars.iter().rev().find(|var| var.key == key)
}

/// Why a line of an environment file is not an assignment (said in its warning).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum EnvLineError {
    /// No `=` on the line.
    #[error("expected KEY=value")]
    NotAssignment,
    /// The part before `=` is not a shell variable name (shortened).
    #[error("'{0}' is not a variable name")]
    BadName(String),
    /// A quote (`single` or `double`) that the line does not close.
    #[error("unterminated {0} quote")]
    UnterminatedQuote(&'static str),
    /// A space outside quotes, before anything but a comment.
    #[error("unquoted space in the value (quote it)")]
    UnquotedSpace,
}

/// Parses an environment file the way systemd's `EnvironmentFile=` and a POSIX shell agree on:
/// `KEY=value`, `export KEY=value`, single and double quotes, backslash escapes, `#` and `;`
/// comment lines, and `# comment` after a value. Variables are not expanded. Lines that are
/// not assignments are warned about (file and 1-based line) and skipped.
pub(crate) fn parse_env_file(text: &str, path: &str, warnings: &mut Warnings) -> Vec<Var> {
    let mut vars = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let parsed = line
            .split_once('=')
            .ok_or(EnvLineError::NotAssignment)
            .and_then(|(key, value)| {
                if !shell_name(key) {
                    return Err(EnvLineError::BadName(truncate(key, 30)));
                }
                Ok((key, shell_value(value)?))
            });
        match parsed {
            Ok((key, value)) => vars.push(Var {
                key: key.to_string(),
                value,
                line: i + 1,
            }),
            Err(why) => warnings.line(
                path,
                i + 1,
                format!("{why}; line skipped: '{}'", truncate(line, 60)),
            ),
        }
    }
    vars
}

/// Parses TuneD's variable files (`isolated_cores = 2-7`): `key = value` with optional spaces
/// and quotes, `#` comment lines. Lines without `=` are warned about and skipped.
pub(crate) fn parse_key_values(text: &str, path: &str, warnings: &mut Warnings) -> Vec<Var> {
    let mut vars = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        match line.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() && !key.trim().contains(' ') => {
                let value = value.trim();
                let value = unquote(value, '"')
                    .or_else(|| unquote(value, '\''))
                    .unwrap_or(value);
                vars.push(Var {
                    key: key.trim().to_string(),
                    value: value.to_string(),
                    line: i + 1,
                });
            }
            _ => warnings.line(
                path,
                i + 1,
                format!(
                    "expected key = value; line skipped: '{}'",
                    truncate(line, 60)
                ),
            ),
        }
    }
    vars
}

fn unquote(value: &str, quote: char) -> Option<&str> {
    value.strip_prefix(quote)?.strip_suffix(quote)
}

/// Whether `name` is a shell variable name (`[A-Za-z_][A-Za-z0-9_]*`).
fn shell_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Resolves the quoting of a shell word: `"a b"`, `'a b'`, `a\ b`, and concatenations such as
/// `"a"'b'c`; after the word only a `# comment` may follow.
fn shell_value(text: &str) -> Result<String, EnvLineError> {
    let mut value = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(EnvLineError::UnterminatedQuote("single")),
                }
            },
            '"' => loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c @ ('"' | '\\' | '$' | '`')) => value.push(c),
                        Some(c) => {
                            value.push('\\');
                            value.push(c);
                        }
                        None => return Err(EnvLineError::UnterminatedQuote("double")),
                    },
                    Some(c) => value.push(c),
                    None => return Err(EnvLineError::UnterminatedQuote("double")),
                }
            },
            '\\' => {
                if let Some(c) = chars.next() {
                    value.push(c);
                }
            }
            c if c.is_whitespace() => {
                let rest = chars.as_str().trim_start();
                if rest.is_empty() || rest.starts_with('#') {
                    break;
                }
                return Err(EnvLineError::UnquotedSpace);
            }
            c => value.push(c),
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values(text: &str) -> (Vec<(String, String)>, Vec<Option<usize>>) {
        let mut warnings = Warnings::default();
        let vars = parse_env_file(text, "/etc/default/x", &mut warnings);
        let pairs = vars.into_iter().map(|v| (v.key, v.value)).collect();
        let lines = warnings.into_vec().iter().map(|w| w.line).collect();
        (pairs, lines)
    }

    fn pair(key: &str, value: &str) -> (String, String) {
        (key.to_string(), value.to_string())
    }

    #[test]
    fn resolves_shell_quoting() {
        let text = "# comment\n\
            ; also a comment\n\
            A=plain\n\
            B=\"two words\"\n\
            C='single $quoted'\n\
            export D=\"esc \\\"q\\\" \\$x\" # trailing comment\n\
            E=\n\
            F=a\\ b\"c\"'d'\n\
            G=\"0-3,8\"\n";
        let (vars, warnings) = values(text);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            vars,
            vec![
                pair("A", "plain"),
                pair("B", "two words"),
                pair("C", "single $quoted"),
                pair("D", "esc \"q\" $x"),
                pair("E", ""),
                pair("F", "a bcd"),
                pair("G", "0-3,8"),
            ]
        );
    }

    #[test]
    fn warns_about_garbage_with_lines() {
        let text = "A=1\nnot an assignment\n1X=2\nB=\"open\nC=two words\nD=4\n";
        let (vars, warnings) = values(text);
        assert_eq!(vars, vec![pair("A", "1"), pair("D", "4")]);
        assert_eq!(warnings, vec![Some(2), Some(3), Some(4), Some(5)]);
    }

    #[test]
    fn the_last_assignment_wins() {
        let mut warnings = Warnings::default();
        let vars = parse_env_file("A=1\nA=2\n", "/x", &mut warnings);
        assert_eq!(
            last(&vars, "A").map(|v| (v.value.as_str(), v.line)),
            Some(("2", 2))
        );
        assert_eq!(last(&vars, "B"), None);
    }

    #[test]
    fn parses_tuned_variables() {
        let mut warnings = Warnings::default();
        let text = "# Examples:\nisolated_cores = 1-7,9-15\nno_balance_cores=\"5\"\njunk\n";
        let vars = parse_key_values(text, "/etc/tuned/v.conf", &mut warnings);
        assert_eq!(last(&vars, "isolated_cores").unwrap().value, "1-7,9-15");
        assert_eq!(last(&vars, "no_balance_cores").unwrap().value, "5");
        let warnings = warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, Some(4));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(text in "(\\PC{0,30}\n){0,5}") {
            let mut warnings = Warnings::default();
            let _ = parse_env_file(&text, "/x", &mut warnings);
            let _ = parse_key_values(&text, "/x", &mut warnings);
        }
    }
}

//! One site profile file as written: the TOML tables with the span of every value, before any
//! of it is checked against the rules. A key no table has is refused here, with the closest
//! key it does have.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

use super::SiteError;

/// The tables of one file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    /// A built-in profile's name (or TuneD's) or another file, relative to this one.
    pub extends: Spanned<String>,
    /// What the file is for, in one line (shown by `lowlat profile show`).
    #[serde(default)]
    pub description: Option<String>,
    /// Rules whose failure is accepted, each with its reason.
    #[serde(default)]
    pub waive: Vec<RawWaiver>,
    /// Sysctl values expected and planned: key → number or expectation.
    #[serde(default)]
    pub sysctl: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    /// Rule expectations: rule id → the profile table's cell grammar.
    #[serde(default)]
    pub expect: BTreeMap<Spanned<String>, Spanned<String>>,
    /// Rules turned off: rule id → why.
    #[serde(default)]
    pub off: BTreeMap<Spanned<String>, Spanned<String>>,
    /// The CPU partition.
    #[serde(default)]
    pub partition: Option<RawPartition>,
    /// What `lowlat check` measures against.
    #[serde(default)]
    pub check: Option<RawCheck>,
    /// Kernel arguments added to the plan's command line or taken off it.
    #[serde(default)]
    pub kernel: Option<RawKernel>,
}

/// The `[kernel]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKernel {
    /// Arguments to add: `key` or `key=value`, each its own string.
    #[serde(default)]
    pub add: Vec<Spanned<String>>,
    /// Keys whose arguments to take off.
    #[serde(default)]
    pub remove: Vec<Spanned<String>>,
}

/// One `[[waive]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWaiver {
    /// The rule id.
    pub rule: Spanned<String>,
    /// Why the failure is accepted.
    pub reason: Spanned<String>,
    /// The last day the waiver holds (`2099-12-31`, quoted or a TOML date).
    #[serde(default)]
    pub until: Option<Spanned<toml::Value>>,
    /// Who owns the exception.
    #[serde(default)]
    pub owner: Option<Spanned<String>>,
}

/// The `[partition]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPartition {
    /// The isolated CPUs (list form).
    #[serde(default)]
    pub isolate: Option<Spanned<String>>,
    /// The housekeeping CPUs (list form).
    #[serde(default)]
    pub housekeeping: Option<Spanned<String>>,
    /// `keep` or `off`.
    #[serde(default)]
    pub smt: Option<Spanned<String>>,
}

/// The `[check]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheck {
    /// Targets in `--target`'s grammar.
    #[serde(default)]
    pub targets: Option<Vec<Spanned<String>>>,
    /// How long each round measures, in `--duration`'s grammar.
    #[serde(default)]
    pub duration: Option<Spanned<String>>,
}

/// A file's text, for turning byte spans into lines and columns.
pub(super) struct Source<'a> {
    /// The file as named to the user.
    pub file: &'a str,
    /// Its text.
    pub text: &'a str,
}

impl Source<'_> {
    /// The 1-based line and column (in characters) of byte `offset`.
    pub(super) fn line_column(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[start..].chars().count() + 1)
    }

    /// An error at `span`.
    pub(super) fn error(&self, span: Range<usize>, message: impl Into<String>) -> SiteError {
        let (line, column) = self.line_column(span.start);
        SiteError::At {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// Parses the text; an unknown key is refused with the closest known one.
    pub(super) fn parse(&self) -> Result<RawFile, SiteError> {
        toml::from_str(self.text).map_err(|e| {
            let message = explain(e.message().trim_end());
            match e.span() {
                Some(span) => self.error(span, message),
                None => SiteError::At {
                    file: self.file.to_string(),
                    line: 1,
                    column: 1,
                    message,
                },
            }
        })
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`" as lowlat says it: the key, the
/// closest valid one, and the others.
fn explain(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((given, expected)) = rest.split_once('`') else {
        return message.to_string();
    };
    let valid: Vec<&str> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.is_empty())
        .collect();
    match closest(given, valid.iter().copied()) {
        Some(close) => format!(
            "unknown key '{given}' (did you mean '{close}'?); valid keys here: {}",
            valid.join(", ")
        ),
        None => format!(
            "unknown key '{given}'; valid keys here: {}",
            valid.join(", ")
        ),
    }
}

/// The word of `valid` closest to `given` (case aside), if any is close enough to be meant:
/// a Jaro-Winkler similarity of 0.8 or more, as clap's suggestions.
pub(super) fn closest<'a>(
    given: &str,
    valid: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let given = given.to_ascii_lowercase();
    valid
        .into_iter()
        .map(|word| {
            (
                strsim::jaro_winkler(&given, &word.to_ascii_lowercase()),
                word,
            )
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, word)| word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RawFile, String> {
        Source {
            file: "site.toml",
            text,
        }
        .parse()
        .map_err(|e| e.to_string())
    }

    #[test]
    fn an_unknown_key_names_its_place_and_the_closest_key() {
        let error =
            parse("extends = \"low-latency\"\n[partition]\nisolte = \"2-7\"\n").unwrap_err();
        assert_eq!(
            error,
            "site.toml:3:1: unknown key 'isolte' (did you mean 'isolate'?); valid keys here: \
             isolate, housekeeping, smt"
        );
        let error = parse("extends = \"low-latency\"\n[waiver]\n").unwrap_err();
        assert!(error.starts_with("site.toml:2:"), "{error}");
        assert!(error.contains("did you mean 'waive'?"), "{error}");
    }

    #[test]
    fn spans_become_lines_and_columns_in_characters() {
        let source = Source {
            file: "f",
            text: "a\nµs = 1\n",
        };
        assert_eq!(source.line_column(0), (1, 1));
        assert_eq!(source.line_column(2), (2, 1));
        assert_eq!(source.line_column(5), (2, 3));
    }

    #[test]
    fn a_missing_extends_and_bad_toml_are_refused_with_a_place() {
        let error = parse("[sysctl]\n").unwrap_err();
        assert!(error.contains("extends"), "{error}");
        let error = parse("extends = \"low-latency\"\n[sysctl\n").unwrap_err();
        assert!(error.starts_with("site.toml:2:"), "{error}");
    }

    #[test]
    fn closest_needs_a_near_word() {
        assert_eq!(
            closest("LL-PCIE-ASMP", ["LL-PCIE-ASPM", "LL-SMT"]),
            Some("LL-PCIE-ASPM")
        );
        assert_eq!(closest("zzzz", ["LL-PCIE-ASPM", "LL-SMT"]), None);
    }
}

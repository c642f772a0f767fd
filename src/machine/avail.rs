//! Values that may be missing, and the warnings collected while reading a machine.

use serde::{Deserialize, Serialize};

use crate::text::escape_controls;

/// A value read from the machine, or the reason it could not be read.
///
/// Serialized as the value itself, or as `{"unavailable": "reason"}`. (`Unavailable` is listed
/// first so that deserializing tries it first: a struct whose fields are all optional would
/// otherwise swallow `{"unavailable": ...}`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Avail<T> {
    /// The value could not be read; the reason names the file and what to do.
    Unavailable {
        /// Why the value is missing, e.g. "/sys/devices/system/cpu/cpu0/cpufreq does not exist".
        unavailable: String,
    },
    /// The value was read.
    Available(T),
}

impl<T> Avail<T> {
    /// An unavailable value with its reason.
    pub fn missing(reason: impl Into<String>) -> Self {
        Self::Unavailable {
            unavailable: reason.into(),
        }
    }

    /// The value, if available.
    pub fn get(&self) -> Option<&T> {
        match self {
            Self::Available(value) => Some(value),
            Self::Unavailable { .. } => None,
        }
    }

    /// The reason, if unavailable.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Available(_) => None,
            Self::Unavailable { unavailable } => Some(unavailable),
        }
    }

    /// Maps the value, keeping the reason.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Avail<U> {
        match self {
            Self::Available(value) => Avail::Available(f(value)),
            Self::Unavailable { unavailable } => Avail::Unavailable { unavailable },
        }
    }

    /// A reference view.
    pub fn as_ref(&self) -> Avail<&T> {
        match self {
            Self::Available(value) => Avail::Available(value),
            Self::Unavailable { unavailable } => Avail::Unavailable {
                unavailable: unavailable.clone(),
            },
        }
    }
}

impl<T, E: std::fmt::Display> From<Result<T, E>> for Avail<T> {
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(value) => Self::Available(value),
            Err(e) => Self::missing(e.to_string()),
        }
    }
}

/// A problem met while reading the machine that did not stop the read: a garbled line, a
/// truncated file, a value out of range. Displayed with control characters escaped (the
/// message may quote the file).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Warning {
    /// The system path of the file (as on the examined machine).
    pub path: String,
    /// The 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    /// What was wrong and what was done about it.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, message) = (escape_controls(&self.path), escape_controls(&self.message));
        match self.line {
            Some(line) => write!(f, "{path}:{line}: {message}"),
            None => write!(f, "{path}: {message}"),
        }
    }
}

/// The warnings collected while reading one machine.
#[derive(Debug, Default, Clone)]
pub struct Warnings(Vec<Warning>);

impl Warnings {
    /// Records a warning about a whole file.
    pub fn file(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(Warning {
            path: path.to_string(),
            line: None,
            message: message.into(),
        });
    }

    /// Records a warning about one line (1-based) of a file.
    pub fn line(&mut self, path: &str, line: usize, message: impl Into<String>) {
        self.0.push(Warning {
            path: path.to_string(),
            line: Some(line),
            message: message.into(),
        });
    }

    /// Appends warnings met elsewhere (another part of the read), after these.
    pub fn extend(&mut self, warnings: Vec<Warning>) {
        self.0.extend(warnings);
    }

    /// The warnings, in the order met.
    pub fn into_vec(self) -> Vec<Warning> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_show_quoted_file_content_escaped() {
        let warning = Warning {
            path: "/proc/cpuinfo".to_string(),
            line: Some(5),
            message: "cannot parse '\x1b]0;x\x07'".to_string(),
        };
        assert_eq!(
            warning.to_string(),
            "/proc/cpuinfo:5: cannot parse '\\x1b]0;x\\x07'"
        );
    }
}

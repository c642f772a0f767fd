//! Why an input cannot be compared: the file, the line and what to do. The readers of the
//! runs (`report::runs`) and the comparison itself say it alike.

/// Why an input cannot be compared: the file, the line when one is to blame, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct LoadError {
    /// The file (or directory) at fault.
    pub path: String,
    /// The 1-based line at fault, when one is.
    pub line: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

impl LoadError {
    /// An error about the whole of `path`.
    pub fn file(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            line: None,
            message: message.into(),
        }
    }
}

//! The versioned JSON document every hardware engine writes: which tool and version, which
//! engine and method, when, whether it was interrupted, and the engine's result.

use serde::Serialize;

use crate::report::inventory::Tool;

/// The version of the measurement document layout; bumped when a field changes meaning or is
/// removed (adding fields does not bump it).
pub const SCHEMA_VERSION: u32 = 1;

/// One measurement run, as written by `--json`.
#[derive(Debug, Serialize)]
pub struct Document<'a, T: Serialize> {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The lowlat that wrote it.
    pub tool: Tool,
    /// The engine: "membw", "memlat", "c2c", "wakeup" or "freq".
    pub engine: &'static str,
    /// One sentence saying how the numbers were measured.
    pub method: &'static str,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// True when Ctrl-C stopped the run early; the result holds what was measured until then.
    pub interrupted: bool,
    /// Notes about the run that a reader must know (rules bent, sources unavailable).
    pub warnings: &'a [String],
    /// The engine's result; its field names carry the units.
    pub result: &'a T,
}

impl<'a, T: Serialize> Document<'a, T> {
    /// A document for `engine` started at `started_at`.
    pub fn new(
        engine: &'static str,
        method: &'static str,
        started_at: jiff::Timestamp,
        interrupted: bool,
        warnings: &'a [String],
        result: &'a T,
    ) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            engine,
            method,
            started_at: started_at.to_string(),
            interrupted,
            warnings,
            result,
        }
    }

    /// The document as pretty JSON.
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_version_and_engine() {
        let warnings = vec!["a note".to_string()];
        let started = jiff::Timestamp::from_second(0).unwrap();
        let doc = Document::new("c2c", "ping-pong", started, false, &warnings, &42);
        let json: serde_json::Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
        assert_eq!(json["schema_version"], SCHEMA_VERSION);
        assert_eq!(json["tool"]["name"], "lowlat");
        assert_eq!(json["tool"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(json["engine"], "c2c");
        assert_eq!(json["started_at"], "1970-01-01T00:00:00Z");
        assert_eq!(json["warnings"][0], "a note");
        assert_eq!(json["result"], 42);
    }
}

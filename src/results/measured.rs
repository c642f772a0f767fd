//! What every hardware engine's result says besides its figures: how it measured, whether
//! Ctrl-C cut it short, and what the reader must know. The figures follow in the same object.

use serde::Serialize;

/// A hardware engine's result: the notes, then the engine's own fields flattened in.
#[derive(Debug, Serialize)]
pub struct Measured<'a, T: Serialize> {
    /// One sentence saying how the numbers were measured.
    pub method: &'static str,
    /// True when Ctrl-C stopped the run early; the figures hold what was measured until then.
    pub interrupted: bool,
    /// Notes a reader must know (rules bent, sources unavailable).
    pub warnings: &'a [String],
    /// The engine's figures; their field names carry the units.
    #[serde(flatten)]
    pub figures: &'a T,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Figures {
        latency_ns: f64,
    }

    #[test]
    fn notes_and_figures_share_one_object() {
        let warnings = vec!["a note".to_string()];
        let measured = Measured {
            method: "ping-pong",
            interrupted: true,
            warnings: &warnings,
            figures: &Figures { latency_ns: 21.5 },
        };
        let json = serde_json::to_value(&measured).unwrap();
        assert_eq!(json["method"], "ping-pong");
        assert_eq!(json["interrupted"], true);
        assert_eq!(json["warnings"][0], "a note");
        assert_eq!(json["latency_ns"], 21.5);
    }
}

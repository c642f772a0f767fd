//! The measure engines' results: the JSON document every engine writes (its body and the
//! shared result header) and the terminal printers of each engine.

pub(crate) mod explain;
pub(crate) mod hardware;
pub(crate) mod header;
pub(crate) mod jitter;
pub(crate) mod loops;
pub(crate) mod net;
pub(crate) mod timer;

use serde::Serialize;

use crate::document::{Document, Kind};
use crate::measure::runner::env::Environment;

/// A latency for the terminal, in µs with one decimal (the unit every latency table of
/// lowlat uses: jitter, timer, check): `12.3`.
pub(crate) fn micros(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

/// A setting given in ns (a threshold, a period) in µs, without trailing zeros: `1 µs`,
/// `0.2 µs`, `1000 µs`.
pub(crate) fn micros_setting(ns: u64) -> String {
    let text = format!("{:.3}", ns as f64 / 1e3);
    format!("{} µs", text.trim_end_matches('0').trim_end_matches('.'))
}

/// The body of every measurement document.
#[derive(Debug, Serialize)]
pub(crate) struct MeasureBody<T: Serialize> {
    /// The command line, argument by argument.
    pub command: Vec<String>,
    /// The machine when it ran.
    pub environment: Environment,
    /// The engine's result: a [`header::ResultHeader`], then its figures.
    pub result: T,
}

/// The document of a `kind` measurement on `host`, with this process's command line.
pub(crate) fn document<T: Serialize>(
    kind: Kind,
    host: String,
    environment: Environment,
    result: T,
) -> Document<MeasureBody<T>> {
    let body = MeasureBody {
        command: std::env::args().collect(),
        environment,
        result,
    };
    Document::new(kind, host, body)
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn latencies_are_microseconds_and_settings_lose_trailing_zeros() {
        assert_eq!(micros(12_345.0), "12.3");
        assert_eq!(micros_setting(1000), "1 µs");
        assert_eq!(micros_setting(200), "0.2 µs");
        assert_eq!(micros_setting(1_000_000), "1000 µs");
    }
}

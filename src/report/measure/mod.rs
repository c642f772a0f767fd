//! The measure engines' results: the JSON document every engine writes (its body and the
//! shared result header) and the terminal printers of each engine.

pub(crate) mod hardware;
pub(crate) mod header;
pub(crate) mod jitter;
pub(crate) mod loops;
pub(crate) mod timer;

use serde::Serialize;

use crate::document::{Document, Kind};
use crate::measure::runner::env::Environment;

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

//! The measure engines' results: the JSON document every engine writes (its body and the
//! shared result header) and the terminal printers of each engine.

pub(crate) mod explain;
pub(crate) mod hardware;
pub(crate) mod header;
pub(crate) mod jitter;
pub(crate) mod load;
pub(crate) mod loops;
pub(crate) mod net;
pub(crate) mod timer;

use serde::{Deserialize, Serialize};

use crate::document::{self as envelope, Document, Kind};
use crate::measure::runner::env::{self, Environment};
use crate::measure::runner::measurement;
use crate::measure::runner::session::Session;
use header::{Measured, ResultHeader};

/// A latency for the terminal, in µs with one decimal (the unit every latency table of
/// lowlat uses: jitter, timer, check): `12.3`.
pub(crate) fn micros(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

/// The body of every measurement document.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct MeasureBody<T> {
    /// The command line, argument by argument.
    pub command: Vec<String>,
    /// The machine when it ran.
    pub environment: Environment,
    /// The engine's result: a [`header::ResultHeader`], then its figures.
    pub result: T,
}

/// A measurement document's body as it is read back (the report's sections, compare): the
/// command, the environment and the engine's result, figures `T`, after its header.
pub(crate) type Measurement<T> = MeasureBody<Measured<T>>;

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

/// The document of a hardware engine's finished measurement on `session`: the result header
/// it says (method, interrupted, warnings, the CPUs in locality order), `figures` (its figures
/// as the document writes them) after it, and the environment of those CPUs now.
pub(crate) fn finished_document<R, T: Serialize>(
    kind: Kind,
    session: &Session,
    measured: &measurement::Measurement<R>,
    figures: T,
) -> Document<MeasureBody<Measured<T>>> {
    let cpus = session.cpus_by_locality();
    let result = Measured {
        header: ResultHeader {
            method: measured.method.into(),
            interrupted: measured.interrupted,
            warnings: measured.warning_lines(),
            priority: None,
            measured_cpus: cpus.iter().copied().collect(),
        },
        figures,
    };
    let environment = env::capture(session.root(), &session.machine, &cpus);
    document(
        kind,
        envelope::host_name(session.root()),
        environment,
        result,
    )
}

/// A hardware engine's page for the terminal: `page` (its tables), then a `warning:` line for
/// each warning of `measured`.
pub(crate) fn with_warnings<R>(mut page: String, measured: &measurement::Measurement<R>) -> String {
    for warning in &measured.warnings {
        page.push_str(&format!("warning: {warning}\n"));
    }
    page
}

/// A hardware engine's matrix as CSV, `csv`, ended by a `# interrupted` comment line when
/// `measured` was cut short (so that a file of it says so too).
pub(crate) fn csv_page<R>(mut csv: String, measured: &measurement::Measurement<R>) -> String {
    if measured.interrupted {
        csv.push_str("# interrupted: only the pairs measured until then have values\n");
    }
    csv
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn latencies_are_microseconds_with_one_decimal() {
        assert_eq!(micros(12_345.0), "12.3");
    }
}

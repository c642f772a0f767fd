//! Results: the versioned JSON documents, the printers of the peers' formats and the
//! importers of their outputs.

pub mod cyclictest;
pub mod hdr;
pub mod jitter;
pub mod measured;
pub mod oslat;
pub mod sysjitter;
pub mod timer;

use crate::measure::env::Environment;
use serde::Serialize;

/// Version of the measurement JSON documents; bumped when a field changes meaning or goes.
pub const SCHEMA_VERSION: u32 = 1;

/// The envelope of every measurement document.
#[derive(Debug, Serialize)]
pub struct Document<T: Serialize> {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The program that measured.
    pub tool: Tool,
    /// The engine: `jitter`, `timer`.
    pub engine: &'static str,
    /// When the document was made (UTC, RFC 3339).
    pub created: String,
    /// The command line, argument by argument.
    pub command: Vec<String>,
    /// The machine when it ran.
    pub environment: Environment,
    /// The engine's result.
    pub result: T,
}

/// The program that measured.
#[derive(Debug, Serialize)]
pub struct Tool {
    /// Always `lowlat`.
    pub name: &'static str,
    /// Its version.
    pub version: &'static str,
}

impl<T: Serialize> Document<T> {
    /// Wraps `result` with the envelope.
    pub fn new(engine: &'static str, environment: Environment, result: T) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "lowlat",
                version: env!("CARGO_PKG_VERSION"),
            },
            engine,
            created: jiff::Timestamp::now().to_string(),
            command: std::env::args().collect(),
            environment,
            result,
        }
    }
}

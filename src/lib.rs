//! lowlat: take a Linux server from "unknown" to "proven deterministic and fast".
//!
//! The library holds everything; `main.rs` only parses the command line and maps errors to
//! exit codes. See `DESIGN.md` in the shared notes and README.md for the picture.

pub mod apply;
pub mod audit;
pub mod cli;
pub mod machine;
pub mod measure;
pub mod plan;
pub mod report;
pub mod results;
pub mod snapshot;
pub mod sysroot;
pub mod tuning;

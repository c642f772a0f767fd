//! lowlat: take a Linux server from "unknown" to "proven deterministic and fast".
//!
//! The library holds everything; `main.rs` only parses the command line and maps errors to
//! exit codes. See docs/architecture.md for the layers and docs/sources.md for the
//! sources the rules cite (`[S000]`, `[M-STREAM]`, ...).

pub(crate) mod apply;
pub mod audit;
pub(crate) mod bios;
pub(crate) mod bundle;
pub(crate) mod check;
pub mod cli;
pub mod compare;
pub(crate) mod document;
pub(crate) mod fleet;
pub mod machine;
pub(crate) mod manual;
pub mod measure;
pub mod peer;
pub mod plan;
pub(crate) mod prove;
pub mod report;
pub mod snapshot;
pub mod sysroot;
#[cfg(test)]
pub(crate) mod test_tree;
pub(crate) mod text;
pub mod tuning;
pub(crate) mod units;
pub(crate) mod watch;

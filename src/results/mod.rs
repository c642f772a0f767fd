//! Results: the versioned JSON documents, the printers of the peers' formats and the
//! importers of their outputs.

pub mod cyclictest;
pub mod sysjitter;

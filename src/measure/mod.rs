//! Measurement engines and the harness they share.

pub mod harness;

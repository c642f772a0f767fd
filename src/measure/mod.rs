//! Measurement engines and the harness they share.

pub mod clock;
pub mod harness;
pub mod jitter;
pub mod timer;
pub mod tsc;

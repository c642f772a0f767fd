//! Measurement engines and the harness they share.

pub mod attribution;
pub mod clock;
pub mod env;
pub mod harness;
pub mod inject;
pub mod jitter;
pub mod load;
pub mod session;
pub mod timer;
pub mod tsc;

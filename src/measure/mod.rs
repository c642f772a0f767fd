//! Measurement engines and the harness they share.
//!
//! Hardware engines: [`membw`] (STREAM bandwidth), [`memlat`] (pointer-chase latency), [`c2c`]
//! (core-to-core ping-pong), [`wakeup`] (cross-CPU futex wake-up) and [`freq`] (effective
//! frequency). They take plain inputs (CPU lists, sizes) and return serialisable results; the
//! CLI derives the inputs from the machine's topology with [`place`].

pub mod attribution;
pub mod c2c;
pub mod clock;
pub mod env;
pub mod freq;
pub mod harness;
pub mod inject;
pub mod jitter;
pub mod load;
pub mod matrix;
pub mod membw;
pub mod memlat;
pub mod memory;
pub mod place;
pub mod progress;
pub mod region;
pub mod session;
pub mod summary;
pub mod timer;
pub mod tsc;
pub mod wakeup;

//! What every measurement engine shares: CPU selection, the session, the harness (pinning,
//! scheduling, memory locking, Ctrl-C), clocks, progress, memory regions, placement by
//! topology, the environment and the counters read around a run.

pub mod attribution;
pub mod clock;
pub mod cpus;
pub mod env;
pub mod harness;
pub mod inject;
pub mod load;
pub mod memory;
pub mod node_matrix;
pub mod observer;
pub mod pairs;
pub mod place;
pub mod progress;
pub mod region;
pub mod session;
pub mod summary;
pub mod threads;
pub mod tsc;

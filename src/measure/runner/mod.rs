//! What every measurement engine shares: CPU selection, the session, the harness (pinning,
//! scheduling, memory locking, Ctrl-C), clocks, progress, memory regions, placement by
//! topology, the environment, the counters and conditions (steal, frequency, throttling,
//! SMIs, load) read around a run, and a run's slices of time.

pub(crate) mod attribution;
pub(crate) mod clock;
pub(crate) mod conditions;
pub(crate) mod cpus;
pub(crate) mod env;
pub(crate) mod harness;
pub(crate) mod inject;
pub(crate) mod measurement;
pub(crate) mod memory;
pub(crate) mod node_matrix;
pub(crate) mod observer;
pub(crate) mod pairs;
pub(crate) mod place;
pub(crate) mod progress;
pub(crate) mod region;
pub(crate) mod rounds;
pub(crate) mod segments;
pub(crate) mod session;
pub(crate) mod slices;
pub(crate) mod summary;
pub(crate) mod threads;
pub(crate) mod tsc;

//! Measurements: the engines, and the runner they share.
//!
//! - [`engines`]: what each measurement does. Loop engines (`engines::jitter`,
//!   [`engines::timer`]) run one loop per measured CPU for a duration; hardware engines
//!   (`engines::membw`, `engines::memlat`, `engines::c2c`, `engines::wakeup`,
//!   `engines::freq`) take plain inputs (CPU lists, sizes) and return serialisable results.
//!   Each engine is asked with its own request type (`JitterRequest`, `TimerRequest`,
//!   `MembwRequest`, `MemlatRequest`, `C2cRequest`, `WakeupRequest`, `FreqRequest`); the
//!   memory engines' requests plan sizes, threads and nodes from the topology themselves.
//! - `runner`: what every engine shares: choosing the CPUs (`runner::cpus`: online and
//!   in this process's affinity), the one `runner::session::Session` every engine runs
//!   through (memory locking, Ctrl-C), the measuring threads, pinning and scheduling,
//!   clocks, progress, memory regions, placement by topology, the node × node matrix axes,
//!   the environment and the counters read around a run.
//!
//! - `load`: the loads beside a measurement on the housekeeping CPUs; `repeat`: a loop engine
//!   measured in rounds beside them (`--repeat`), each round handed to the caller.
//! - `trace`: `--explain`: the kernel tracepoints recorded during a loop engine's run and
//!   the cause of each gap.
//!
//! Engines import the runner and `trace`; the runner imports no engine.

pub mod engines;
pub(crate) mod load;
pub(crate) mod matrix;
pub(crate) mod repeat;
pub(crate) mod runner;
pub(crate) mod trace;

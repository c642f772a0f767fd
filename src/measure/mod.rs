//! Measurements: the engines, and the runner they share.
//!
//! - [`engines`]: what each measurement does. Loop engines ([`engines::jitter`],
//!   [`engines::timer`]) run one loop per measured CPU for a duration; hardware engines
//!   ([`engines::membw`], [`engines::memlat`], [`engines::c2c`], [`engines::wakeup`],
//!   [`engines::freq`]) take plain inputs (CPU lists, sizes) and return serialisable results.
//! - [`runner`]: what every engine shares: choosing the CPUs, the session (memory locking,
//!   Ctrl-C, the measuring threads), pinning and scheduling, clocks, progress, memory
//!   regions, placement by topology, the environment and the counters read around a run.
//!
//! Engines import the runner; the runner imports no engine.

pub mod engines;
pub mod matrix;
pub mod runner;

// The paths the printers (src/results/, src/report/) import; they move with those printers.
pub use engines::{c2c, freq, jitter, membw, memlat, timer, wakeup};
pub use runner::{attribution, env, inject, session, summary, tsc};

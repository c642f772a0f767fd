//! The choices `lowlat check` makes, which `measure jitter` and `measure timer` take as their
//! defaults, so that a bare `lowlat measure jitter` measures what a check would.

/// Length of a run (each of check's two).
pub(crate) const DURATION: &str = "20s";
/// Gaps of the busy loop from this length are counted (jitter).
pub(crate) const THRESHOLD: &str = "1us";
/// The timer's period: cyclictest's default.
pub(crate) const INTERVAL: &str = "1ms";

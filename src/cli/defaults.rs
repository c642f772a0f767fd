//! The choices `lowlat check` makes, which `measure jitter` and `measure timer` take as their
//! defaults, so that a bare `lowlat measure jitter` measures what a check would.

/// Length of a run: the length of each of the two runs of `check --quick` (`check::QUICK`);
/// a check without it runs as long as its targets need to be proven.
pub(crate) const DURATION: &str = "20s";
/// Gaps of the busy loop from this length are counted (jitter).
pub(crate) const THRESHOLD: &str = "1us";
/// The timer's period: cyclictest's default.
pub(crate) const INTERVAL: &str = "1ms";

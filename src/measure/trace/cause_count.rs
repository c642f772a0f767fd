//! One cause's interruptions on one CPU: what `watch --explain` hands out each interval, and
//! what compare reads of each CPU of an explained run (`measure jitter --explain`).

use super::explain::Class;

/// The interruptions of one cause on one CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CauseCount {
    /// The CPU.
    pub cpu: u32,
    /// The class.
    pub class: Class,
    /// What in the class (`25 virtio0-input.0`, `tick_nohz_handler`, a comm, or `other`: the
    /// sources past the first few that watch sums).
    pub source: String,
    /// The IRQ's number, for a device IRQ (its fix names it).
    pub irq: Option<u32>,
    /// Interruptions (events, or a run's gaps).
    pub count: u64,
}

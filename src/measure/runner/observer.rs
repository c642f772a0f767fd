//! The hook through which the main thread of a run sees the measuring threads start and stop
//! (the counters of [`super::attribution`] are read there).

/// Callbacks of the main thread around the run.
pub(crate) trait Observer {
    /// Called when every thread is set up, before GO, with the measuring threads' ids in
    /// the order of the CPUs.
    fn before(&mut self, tids: &[u32]);
    /// Called when every measuring thread has stopped, before they exit.
    fn after(&mut self, tids: &[u32]);
}

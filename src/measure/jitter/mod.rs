//! `lowlat measure jitter`: a busy loop per measured CPU that reports every gap at or above a
//! threshold, with sysjitter's statistics and oslat's 1 µs buckets from the same loop.

pub mod busy;
pub mod stats;

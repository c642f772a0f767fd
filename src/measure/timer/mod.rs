//! `lowlat measure timer`: an absolute-deadline `clock_nanosleep` loop per measured CPU,
//! cyclictest's measurement, with percentiles and skipped periods.

pub mod cyclic;
pub mod wakeup;

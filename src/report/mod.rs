//! Human and machine renderings of lowlat's results.

pub mod inventory;
pub mod units;

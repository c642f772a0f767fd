//! Human and machine renderings of lowlat's results.

pub mod hardware;
pub mod inventory;
pub mod units;

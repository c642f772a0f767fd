//! Human and machine renderings of lowlat's results.

pub mod apply;
pub mod audit;
pub mod hardware;
pub mod inventory;
pub mod units;

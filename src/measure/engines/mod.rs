//! The measurement engines, one module each; they run through `super::runner`.

pub(crate) mod c2c;
pub(crate) mod freq;
pub(crate) mod hwlat;
pub(crate) mod ipi;
pub(crate) mod jitter;
pub(crate) mod loops;
pub(crate) mod membw;
pub(crate) mod memlat;
pub(crate) mod net;
#[cfg(test)]
pub(crate) mod sizing_tests;
pub mod timer;
pub(crate) mod wakeup;

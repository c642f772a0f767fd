//! Plans: the CPU partition and the desired settings derived from it and from the audit.

pub mod partition;
pub mod setting;

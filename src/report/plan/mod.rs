//! Renderings of a plan: the terminal summary and the diff against the machine.

pub mod diff;
pub(crate) mod summary;

//! The shared vocabulary of audit, plan and apply: what a setting is ([`setting::Setting`], its
//! [`setting::Layer`]) and how the CPUs are split ([`partition::Partition`]).
//!
//! It sits below audit, plan and apply and imports only the machine model, so each of them can
//! use these words without importing another.

pub mod partition;
pub mod setting;

//! The shared vocabulary of audit, plan and apply: what a setting is ([`setting::Setting`], its
//! [`setting::Layer`], its [`setting_id::SettingId`]) and how the CPUs are split ([`partition::Partition`]).
//!
//! It sits below audit, plan and apply and imports only the machine model, so each of them can
//! use these words without importing another.

pub mod partition;
pub mod setting;
pub mod setting_id;

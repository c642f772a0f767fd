//! The shared vocabulary of audit, plan and apply: the profiles by name
//! ([`profile_name::ProfileName`]), what a setting is ([`setting::Setting`], its
//! [`setting::Layer`], its `setting_id::SettingId`) how the CPUs are split (`partition::Partition`), and the kernel arguments
//! of boot settings (`kernel_args::Args`) with the GRUB block that carries them
//! (`grub_block::render_block`), the housekeeping CPUs near a NUMA node
//! (`nearby::NearHousekeeping`), which kernel threads lowlat moves and where (`kthreads`), the grouped form in which plan.json and the audit document
//! write runs of like settings (`grouping`), and the paths of files lowlat installs that the
//! audit and the plan both name ([`installed_files`]).
//!
//! It sits below audit, plan and apply and imports only the machine model, so each of them can
//! use these words without importing another.

pub(crate) mod commands;
pub(crate) mod grouping;
pub(crate) mod grub_block;
pub mod installed_files;
pub(crate) mod kernel_args;
pub(crate) mod kthreads;
pub(crate) mod nearby;
pub(crate) mod partition;
pub mod profile_name;
pub(crate) mod runtime_isolation;
pub mod setting;
pub mod setting_id;

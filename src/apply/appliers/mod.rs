//! From a setting to the changes that make it: kernel knobs, NIC knobs, files, tasks, services, and the
//! kernel command line (all boot settings together, see [`boot`]).

pub(crate) mod boot;
pub(crate) mod cpuset;
pub(crate) mod file;
pub(crate) mod kernel;
pub(crate) mod nic;
pub(crate) mod service;
pub(crate) mod tasks;

use super::change::{ApplyContext, Change};
use crate::tuning::setting::{Layer, Setting};
use crate::tuning::setting_id::{SettingId, SettingIdError};

/// What a setting turns into on this machine.
pub(crate) enum Expansion {
    /// The changes that make it (one per knob, file, thread or service).
    Changes(Vec<Box<dyn Change>>),
    /// It cannot be applied here, and why (no such knob on this kernel, a directory tree).
    Unsupported(String),
    /// It is done by hand (BIOS, hardware), with what to do.
    Manual(String),
    /// The plan's value or id is malformed: apply refuses the plan before changing anything.
    Invalid(String),
}

/// The changes of one setting that is not a boot argument.
pub(crate) fn expand(ctx: &ApplyContext, setting: &Setting) -> Expansion {
    if matches!(setting.layer, Layer::Firmware | Layer::Hardware) {
        return Expansion::Manual(format!(
            "a {} setting: set {} to {} by hand",
            setting.layer.name(),
            setting.id,
            setting.value
        ));
    }
    let target = &setting.id;
    let value = setting.value.as_str();
    if let SettingId::Cmdline(_) = target {
        return Expansion::Invalid(format!(
            "{} is a kernel argument but its layer is {}, not boot",
            setting.id,
            setting.layer.name()
        ));
    }
    kernel::expand(ctx.root, &ctx.machine_cpus(), target, value)
        .or_else(|| nic::expand(target, value))
        .or_else(|| file::expand(target, value))
        .or_else(|| tasks::expand(ctx, target, value))
        .or_else(|| service::expand(ctx, target, value))
        .or_else(|| cpuset::expand(ctx, target, value))
        .unwrap_or_else(|| Expansion::Unsupported(SettingIdError::Unknown.to_string()))
}

//! Kernel command-line arguments (`cmdline:<key>` settings), installed with the distribution's
//! own tooling and never by patching `grub.cfg`:
//!
//! * **grubby** (RHEL, Fedora, SUSE with BLS), on the live machine when it is installed: the
//!   arguments of every boot entry are changed with `grubby --update-kernel=ALL`; the journal
//!   keeps each entry's prior arguments and the files grubby may also edit
//!   (`/etc/default/grub`, `/etc/kernel/cmdline`).
//! * otherwise a **GRUB defaults block**: `/etc/default/grub.d/99-lowlat.cfg` where that
//!   directory exists (Debian, Ubuntu: sourced last, so it wins over cloud-image drop-ins),
//!   else a block appended to `/etc/default/grub` (the journal keeps the whole prior file).
//!   The block drops every argument whose key lowlat owns from `GRUB_CMDLINE_LINUX` and
//!   `GRUB_CMDLINE_LINUX_DEFAULT` and appends the plan's, so that no argument is repeated or
//!   glued to another; then the GRUB configuration is regenerated (`update-grub`,
//!   `grub2-mkconfig -o ...`), or the command is printed for a directory tree.
//! * on **systemd-boot** (its `loader.conf` found; `machine::kernel::boot_loader`) without
//!   grubby, nothing: GRUB's files are not read there, so the arguments to add to
//!   `/etc/kernel/cmdline` are printed instead, as where no boot loader is known.
//!
//! A setting owns its key and every key in its value; an empty value means "no argument with
//! this key". Arguments take effect at the next boot: until `/proc/cmdline` shows them, verify
//! reports them as pending a reboot.

pub(crate) mod grub;
pub(crate) mod grubby;

use super::Expansion;
use crate::apply::change::{ApplyContext, ChangeError, Unsupported};
use crate::machine::capabilities::Capabilities;
use crate::tuning::grub_block;
use crate::tuning::kernel_args::{AllArgs, Args, KernelArgError};
use crate::tuning::setting::Setting;
use crate::tuning::setting_id::SettingId;

/// Where a machine's kernel arguments are configured.
pub(crate) enum Backend {
    /// grubby, at this path.
    Grubby(std::path::PathBuf),
    /// A GRUB defaults block in this file.
    GrubFile(&'static str),
}

/// The bootloader tooling of the machine, or why there is none lowlat can use.
pub(crate) fn backend(ctx: &ApplyContext) -> Result<Backend, Unsupported> {
    if let Some(path) = ctx.runner.and_then(|r| r.find("grubby")) {
        return Ok(Backend::Grubby(path));
    }
    if let Some(why) = Capabilities::of(ctx.machine).boot_loader_not_grub() {
        return Err(Unsupported::OtherBootloader(why));
    }
    if ctx.root.is_dir(grub_block::DROPIN_DIR) {
        return Ok(Backend::GrubFile(grub_block::DROPIN_PATH));
    }
    if ctx.root.exists(grub_block::DEFAULTS_PATH) {
        return Ok(Backend::GrubFile(grub_block::DEFAULTS_PATH));
    }
    Err(Unsupported::NoBootloader {
        defaults: grub_block::DEFAULTS_PATH,
    })
}

/// The one change that installs every boot setting's arguments.
pub(crate) fn expand(ctx: &ApplyContext, args: &[Args]) -> Expansion {
    let all = AllArgs::of(args);
    match backend(ctx) {
        Ok(Backend::Grubby(path)) => Expansion::Changes(vec![Box::new(grubby::GrubbyChange {
            grubby: path,
            args: all,
        })]),
        Ok(Backend::GrubFile(path)) => {
            Expansion::Changes(vec![Box::new(grub::GrubBlockChange { path, args: all })])
        }
        Err(why) => Expansion::Unsupported(why.to_string()),
    }
}

/// Whether the bootloader configuration has the arguments of `args` (so that they will be in
/// effect after a reboot).
pub(crate) fn configured(ctx: &ApplyContext, args: &Args) -> Result<bool, ChangeError> {
    match backend(ctx).map_err(|e| ChangeError::Refused(e.to_string()))? {
        Backend::Grubby(path) => grubby::configured(ctx, &path, args),
        Backend::GrubFile(path) => grub::configured(ctx.root, path, args),
    }
}

/// A boot setting whose arguments cannot be written safely into a boot configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{id}: {source}")]
pub(crate) struct BadBootSetting {
    /// The setting's id.
    pub id: SettingId,
    /// What is wrong with its arguments.
    pub source: KernelArgError,
}

/// The boot settings' arguments, checked.
pub(crate) fn args_of(settings: &[&Setting]) -> Result<Vec<Args>, BadBootSetting> {
    settings
        .iter()
        .map(|s| {
            Args::of(s).map_err(|source| BadBootSetting {
                id: s.id.clone(),
                source,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::setting::Layer;
    use std::collections::BTreeSet;

    pub(crate) fn boot(id: &str, value: &str) -> Setting {
        Setting {
            id: id.parse().unwrap(),
            value: value.into(),
            layer: Layer::Boot,
            reboot: true,
            rationale: String::new(),
            source: String::new(),
            security_tradeoff: None,
        }
    }

    #[test]
    fn a_setting_owns_its_key_and_the_keys_of_its_value() {
        let args = Args::of(&boot(
            "cmdline:isolcpus",
            "isolcpus=managed_irq,1-7 isolcpus=domain,2-3",
        ))
        .unwrap();
        assert_eq!(args.keys, BTreeSet::from(["isolcpus".to_string()]));
        let hp = Args::of(&boot(
            "cmdline:hugepages",
            "default_hugepagesz=1G hugepagesz=1G hugepages=16",
        ))
        .unwrap();
        assert_eq!(hp.keys.len(), 3);
        assert!(hp.satisfied_by("ro hugepages=16 quiet hugepagesz=1G default-hugepagesz=1G"));
        assert!(!hp.satisfied_by("ro hugepagesz=1G hugepages=8 default_hugepagesz=1G"));
        assert!(!hp.satisfied_by("hugepagesz=1G hugepages=16 default_hugepagesz=1G hugepages=2"));

        let none = Args::of(&boot("cmdline:idle", "")).unwrap();
        assert!(none.satisfied_by("ro quiet"));
        assert!(!none.satisfied_by("ro idle=poll"));
    }

    #[test]
    fn refuses_arguments_it_cannot_write_safely() {
        for value in ["a=\"b c\"", "x=$(reboot)", "x=`id`", "a|b"] {
            assert!(Args::of(&boot("cmdline:x", value)).is_err(), "{value}");
        }
        assert!(Args::of(&boot("cmdline:a*", "")).is_err());
    }

    #[test]
    fn owned_tokens_are_what_must_go() {
        let all = AllArgs::of(&[
            Args::of(&boot("cmdline:nohz_full", "nohz_full=1-7")).unwrap(),
            Args::of(&boot("cmdline:idle", "")).unwrap(),
        ]);
        assert_eq!(
            all.owned_tokens("ro nohz-full=1-3 quiet idle=poll"),
            ["nohz-full=1-3", "idle=poll"]
        );
        assert!(all.satisfied_by("ro nohz_full=1-7"));
    }
}

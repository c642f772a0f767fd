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
//!
//! A setting owns its key and every key in its value; an empty value means "no argument with
//! this key". Arguments take effect at the next boot: until `/proc/cmdline` shows them, verify
//! reports them as pending a reboot.

pub mod grub;
pub mod grubby;

use std::collections::BTreeSet;

use super::Expansion;
use crate::apply::change::{ChangeError, Ctx, FollowUp};
use crate::machine::kernel::cmdline::{Param, parse_cmdline};
use crate::tuning::setting::Setting;

/// The prefix of boot setting ids.
pub const PREFIX: &str = "cmdline:";

/// A key as the kernel compares it (`-` and `_` are the same).
pub fn normal_key(key: &str) -> String {
    key.replace('-', "_")
}

/// A parameter written back as one token (`key=value` or `key`).
fn token(param: &Param) -> String {
    match &param.value {
        Some(value) => format!("{}={value}", param.key),
        None => param.key.clone(),
    }
}

/// A token in the form compared: key normalised, value as written.
fn normal_token(param: &Param) -> String {
    match &param.value {
        Some(value) => format!("{}={value}", normal_key(&param.key)),
        None => normal_key(&param.key),
    }
}

/// The arguments one boot setting wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The setting id.
    pub id: String,
    /// The keys it owns, normalised.
    pub keys: BTreeSet<String>,
    /// The arguments, as written.
    pub tokens: Vec<String>,
}

impl Args {
    /// Reads a boot setting; the problem when its arguments cannot be written safely into a
    /// boot configuration (quotes, shell characters, keys outside `[A-Za-z0-9_.-]`).
    pub fn of(setting: &Setting) -> Result<Args, String> {
        let key = setting.id.strip_prefix(PREFIX).unwrap_or(&setting.id);
        let key_ok = |k: &str| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        };
        if !key_ok(key) {
            return Err(format!("'{key}' is not a kernel argument key"));
        }
        let mut keys = BTreeSet::from([normal_key(key)]);
        let mut tokens = Vec::new();
        for t in setting.value.split_whitespace() {
            if t.contains(['"', '\'', '$', '`', '\\']) {
                return Err(format!(
                    "'{t}': lowlat does not write arguments with quotes or shell characters"
                ));
            }
            let k = t.split_once('=').map_or(t, |(k, _)| k);
            if !key_ok(k) {
                return Err(format!("'{t}' is not a kernel argument"));
            }
            keys.insert(normal_key(k));
            tokens.push(t.to_string());
        }
        Ok(Args {
            id: setting.id.clone(),
            keys,
            tokens,
        })
    }

    /// Whether an argument string has exactly these arguments for the owned keys (in any
    /// order).
    pub fn satisfied_by(&self, args: &str) -> bool {
        let mut have: Vec<String> = owned_params(args, &self.keys)
            .iter()
            .map(normal_token)
            .collect();
        let mut want: Vec<String> = self
            .tokens
            .iter()
            .flat_map(|t| parse_cmdline(t).params)
            .map(|p| normal_token(&p))
            .collect();
        have.sort();
        want.sort();
        have == want
    }
}

/// The parameters of `args` whose key is in `keys`.
fn owned_params(args: &str, keys: &BTreeSet<String>) -> Vec<Param> {
    parse_cmdline(args)
        .params
        .into_iter()
        .filter(|p| keys.contains(&normal_key(&p.key)))
        .collect()
}

/// The arguments of every boot setting together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllArgs {
    /// Every key owned, normalised.
    pub keys: BTreeSet<String>,
    /// Every argument wanted, in plan order.
    pub tokens: Vec<String>,
}

impl AllArgs {
    /// Joins the settings' arguments.
    pub fn of(args: &[Args]) -> AllArgs {
        AllArgs {
            keys: args.iter().flat_map(|a| a.keys.iter().cloned()).collect(),
            tokens: args.iter().flat_map(|a| a.tokens.iter().cloned()).collect(),
        }
    }

    /// Whether an argument string has exactly the wanted arguments for the owned keys.
    pub fn satisfied_by(&self, args: &str) -> bool {
        Args {
            id: String::new(),
            keys: self.keys.clone(),
            tokens: self.tokens.clone(),
        }
        .satisfied_by(args)
    }

    /// The arguments of `args` with an owned key, as tokens (what must be removed).
    pub fn owned_tokens(&self, args: &str) -> Vec<String> {
        owned_params(args, &self.keys).iter().map(token).collect()
    }
}

/// Where a machine's kernel arguments are configured.
pub enum Backend {
    /// grubby, at this path.
    Grubby(std::path::PathBuf),
    /// A GRUB defaults block in this file.
    GrubFile(&'static str),
}

/// The bootloader tooling of the machine, or why there is none lowlat can use.
pub fn backend(ctx: &Ctx) -> Result<Backend, String> {
    if let Some(path) = ctx.runner.and_then(|r| r.find("grubby")) {
        return Ok(Backend::Grubby(path));
    }
    if ctx.root.is_dir(grub::DROPIN_DIR) {
        return Ok(Backend::GrubFile(grub::DROPIN_PATH));
    }
    if ctx.root.exists(grub::DEFAULTS_PATH) {
        return Ok(Backend::GrubFile(grub::DEFAULTS_PATH));
    }
    Err(format!(
        "no grubby and no {}: add the arguments with your bootloader's own tool (for systemd-boot, /etc/kernel/cmdline and kernel-install)",
        grub::DEFAULTS_PATH
    ))
}

/// The one change that installs every boot setting's arguments.
pub fn expand(ctx: &Ctx, args: &[Args]) -> Expansion {
    let all = AllArgs::of(args);
    match backend(ctx) {
        Ok(Backend::Grubby(path)) => Expansion::Changes(vec![Box::new(grubby::GrubbyChange {
            grubby: path,
            args: all,
        })]),
        Ok(Backend::GrubFile(path)) => {
            Expansion::Changes(vec![Box::new(grub::GrubBlockChange { path, args: all })])
        }
        Err(why) => Expansion::Unsupported(why),
    }
}

/// Whether the bootloader configuration has the arguments of `args` (so that they will be in
/// effect after a reboot).
pub fn configured(ctx: &Ctx, args: &Args) -> Result<bool, ChangeError> {
    match backend(ctx).map_err(ChangeError::Refused)? {
        Backend::Grubby(path) => grubby::configured(ctx, &path, args),
        Backend::GrubFile(path) => grub::configured(ctx.root, path, args),
    }
}

/// Whether `path` is a GRUB defaults file (changing it needs a regeneration).
pub fn is_grub_defaults(path: &str) -> bool {
    path == grub::DEFAULTS_PATH || path.starts_with(&format!("{}/", grub::DROPIN_DIR))
}

/// The command that regenerates the GRUB configuration on this machine.
pub fn regenerate_command(ctx: &Ctx) -> FollowUp {
    let installed = |program: &str| ctx.runner.is_some_and(|r| r.find(program).is_some());
    let debian_like = ctx.machine.services.os_release.get().is_some_and(|os| {
        os.id
            .iter()
            .chain(os.id_like.iter())
            .any(|id| id == "debian" || id == "ubuntu")
    });
    let mkconfig = |program: &str, dir: &str| FollowUp::Regenerate {
        program: program.into(),
        args: vec!["-o".into(), format!("{dir}/grub.cfg")],
    };
    if installed("update-grub") || (ctx.runner.is_none() && debian_like) {
        FollowUp::Regenerate {
            program: "update-grub".into(),
            args: Vec::new(),
        }
    } else if installed("grub2-mkconfig") || ctx.root.is_dir("/boot/grub2") || !debian_like {
        mkconfig("grub2-mkconfig", "/boot/grub2")
    } else {
        mkconfig("grub-mkconfig", "/boot/grub")
    }
}

/// The boot settings' arguments, checked.
pub fn args_of(settings: &[&Setting]) -> Result<Vec<Args>, String> {
    settings
        .iter()
        .map(|s| Args::of(s).map_err(|e| format!("{}: {e}", s.id)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::setting::Layer;

    pub(crate) fn boot(id: &str, value: &str) -> Setting {
        Setting {
            id: id.into(),
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

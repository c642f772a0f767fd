//! Kernel arguments through GRUB's defaults: a block of POSIX shell, sourced by
//! `grub-mkconfig` after `/etc/default/grub`, that drops the arguments whose keys lowlat owns
//! from `GRUB_CMDLINE_LINUX` and `GRUB_CMDLINE_LINUX_DEFAULT` and appends the plan's. It is a
//! drop-in file of its own where `/etc/default/grub.d` exists, else a marked block at the end
//! of `/etc/default/grub`.

use crate::apply::appliers::file;
use crate::apply::change::{
    ApplyContext, Change, ChangeError, FollowUp, Inspection, follow_ups_for_file,
};
use crate::sysroot::SysRoot;
use crate::tuning::grub_block::{
    BY_APPLY, DEFAULTS_PATH, block_args, dropped_keys, render_block, split_block,
};
use crate::tuning::kernel_args::{AllArgs, Args};

/// The content `path` should have, given what it has now.
fn desired(path: &str, current: Option<&str>, args: &AllArgs) -> String {
    let block = render_block(args, BY_APPLY);
    if path == DEFAULTS_PATH {
        let (mut rest, _) = split_block(current.unwrap_or(""));
        if !rest.is_empty() && !rest.ends_with('\n') {
            rest.push('\n');
        }
        rest + &block
    } else {
        format!(
            "# Kernel arguments of the lowlat plan, sourced by grub-mkconfig after {DEFAULTS_PATH}.\n{block}"
        )
    }
}

fn read(root: &SysRoot, path: &str) -> Result<Option<String>, ChangeError> {
    match root.read(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(ChangeError::Failed(e.to_string())),
    }
}

/// Installing the block.
pub(crate) struct GrubBlockChange {
    /// The drop-in, or GRUB's defaults file.
    pub path: &'static str,
    /// The arguments.
    pub args: AllArgs,
}

impl Change for GrubBlockChange {
    fn target(&self) -> String {
        format!("kernel arguments in {}", self.path)
    }

    fn desired(&self) -> String {
        let owned: Vec<&str> = self.args.keys.iter().map(String::as_str).collect();
        format!(
            "{} (replacing any {})",
            if self.args.tokens.is_empty() {
                "nothing".to_string()
            } else {
                self.args.tokens.join(" ")
            },
            owned.join(", ")
        )
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let (_, record) = file::current(ctx.root, self.path)?;
        let current = read(ctx.root, self.path)?;
        let block = current.as_deref().and_then(|t| split_block(t).1);
        let want = desired(self.path, current.as_deref(), &self.args);
        Ok(Inspection {
            in_place: current.as_deref() == Some(want.as_str()),
            current: match block {
                Some(block) => block_args(&block).unwrap_or("a lowlat block").to_string(),
                None => "no lowlat arguments".into(),
            },
            prior: vec![record],
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        let current = read(ctx.root, self.path)?;
        let want = desired(self.path, current.as_deref(), &self.args);
        file::install(ctx.root, self.path, want.as_bytes())
    }

    fn follow_ups(&self, ctx: &ApplyContext) -> Vec<FollowUp> {
        follow_ups_for_file(ctx, self.path)
    }
}

/// Whether the block in `path` installs the arguments of `args`: it drops every key they own
/// and appends every argument they want.
pub(crate) fn configured(root: &SysRoot, path: &str, args: &Args) -> Result<bool, ChangeError> {
    let Some(text) = read(root, path)? else {
        return Ok(false);
    };
    let Some(block) = split_block(&text).1 else {
        return Ok(false);
    };
    let dropped = dropped_keys(&block);
    let appended: Vec<&str> = block_args(&block)
        .map(|a| a.split_whitespace().collect())
        .unwrap_or_default();
    Ok(args.keys.iter().all(|k| dropped.contains(&k.as_str()))
        && args.tokens.iter().all(|t| appended.contains(&t.as_str())))
}

#[cfg(test)]
mod tests {
    use super::super::tests::boot;
    use super::*;

    fn all() -> (Args, Args, AllArgs) {
        let a = Args::of(&boot("cmdline:nohz_full", "nohz_full=1-7")).unwrap();
        let b = Args::of(&boot("cmdline:idle", "")).unwrap();
        let all = AllArgs::of(&[a.clone(), b.clone()]);
        (a, b, all)
    }

    /// Runs the block in a POSIX shell after `defaults` and prints both variables. Every
    /// system lowlat runs on has `sh` (grub's own scripts need it), so a missing one fails.
    fn shell(defaults: &str, block: &str) -> String {
        let script = format!(
            "{defaults}\n{block}\nprintf '%s|%s' \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\"\n"
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .expect("sh runs: a POSIX shell is needed to check the block as grub reads it");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn the_block_replaces_owned_arguments_in_a_real_shell() {
        let (_, _, all) = all();
        let block = render_block(&all, BY_APPLY);
        let defaults = "GRUB_CMDLINE_LINUX=\"ro nohz-full=2 quiet *\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"idle=poll splash\"";
        let out = shell(defaults, &block);
        assert_eq!(out, "ro quiet * nohz_full=1-7|splash");
    }

    #[test]
    fn blocks_are_replaced_not_repeated() {
        let (a, b, all) = all();
        let original = "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"quiet\"";
        let once = desired(DEFAULTS_PATH, Some(original), &all);
        assert!(once.starts_with("GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"quiet\"\n# BEGIN"));
        assert_eq!(desired(DEFAULTS_PATH, Some(&once), &all), once);
        let (rest, block) = split_block(&once);
        assert_eq!(rest, format!("{original}\n"));
        assert_eq!(block_args(&block.unwrap()), Some("nohz_full=1-7"));

        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        root.create_dirs("/etc/default").unwrap();
        assert!(!configured(&root, DEFAULTS_PATH, &a).unwrap());
        root.replace_file(
            DEFAULTS_PATH,
            once.as_bytes(),
            crate::sysroot::Perms::mode(0o644),
        )
        .unwrap();
        assert!(configured(&root, DEFAULTS_PATH, &a).unwrap());
        assert!(configured(&root, DEFAULTS_PATH, &b).unwrap());
        let other = Args::of(&boot("cmdline:nohz_full", "nohz_full=1-3")).unwrap();
        assert!(!configured(&root, DEFAULTS_PATH, &other).unwrap());
    }
}

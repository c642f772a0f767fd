//! Kernel arguments through grubby (`--info`, `--update-kernel`), on the live machine.

use std::path::{Path, PathBuf};

use super::{AllArgs, Args};
use crate::apply::appliers::file;
use crate::apply::change::{ApplyContext, Change, ChangeError, Inspection};
use crate::apply::command::{Runner, shown};
use crate::apply::journal::Record;

/// Files `grubby --update-kernel=ALL` may edit besides the boot entries (the defaults for
/// kernels installed later): journaled so that revert puts them back exactly.
const DEFAULTS_FILES: &[&str] = &["/etc/default/grub", "/etc/kernel/cmdline"];

/// One boot entry as `grubby --info` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The kernel image.
    pub kernel: String,
    /// Its arguments.
    pub args: String,
}

/// Parses `grubby --info=...` output: `key=value` lines (values in double quotes), each entry
/// starting with `index=`. Entries without a kernel are skipped.
pub(crate) fn parse_info(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut kernel: Option<String> = None;
    let mut args = String::new();
    let mut flush = |kernel: &mut Option<String>, args: &mut String| {
        if let Some(k) = kernel.take() {
            entries.push(Entry {
                kernel: k,
                args: std::mem::take(args),
            });
        }
        args.clear();
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        match key.trim() {
            "index" => flush(&mut kernel, &mut args),
            "kernel" => kernel = Some(value.to_string()),
            "args" => args = value.to_string(),
            _ => {}
        }
    }
    flush(&mut kernel, &mut args);
    entries
}

fn run(runner: &dyn Runner, grubby: &Path, args: Vec<String>) -> Result<String, ChangeError> {
    let line = shown("grubby", &args);
    match runner.run(grubby, &args) {
        Ok(out) if out.success() => Ok(out.stdout),
        Ok(out) => Err(ChangeError::Failed(format!(
            "`{line}` failed: {}",
            out.message()
        ))),
        Err(e) => Err(ChangeError::Failed(format!("`{line}` could not run: {e}"))),
    }
}

fn runner<'a>(ctx: &ApplyContext<'a>) -> Result<&'a dyn Runner, ChangeError> {
    ctx.runner
        .ok_or_else(|| ChangeError::Failed("grubby runs only on the live machine".into()))
}

fn entries(runner: &dyn Runner, grubby: &Path, which: &str) -> Result<Vec<Entry>, ChangeError> {
    run(runner, grubby, vec![format!("--info={which}")]).map(|out| parse_info(&out))
}

/// Changes `kernel`'s arguments: removes `remove`, then adds `add` (two calls, so that an
/// argument removed and added again is not lost whatever order grubby applies them in).
fn update(
    runner: &dyn Runner,
    grubby: &Path,
    kernel: &str,
    remove: &[String],
    add: &[String],
) -> Result<(), ChangeError> {
    let target = format!("--update-kernel={kernel}");
    if !remove.is_empty() {
        run(
            runner,
            grubby,
            vec![
                target.clone(),
                format!("--remove-args={}", remove.join(" ")),
            ],
        )?;
    }
    if !add.is_empty() {
        run(
            runner,
            grubby,
            vec![target, format!("--args={}", add.join(" "))],
        )?;
    }
    Ok(())
}

/// Setting the arguments of every boot entry.
pub(crate) struct GrubbyChange {
    /// grubby's path.
    pub grubby: PathBuf,
    /// The arguments.
    pub args: AllArgs,
}

impl Change for GrubbyChange {
    fn target(&self) -> String {
        "kernel arguments of every boot entry (grubby)".into()
    }

    fn desired(&self) -> String {
        self.args.tokens.join(" ")
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let runner = runner(ctx)?;
        let all = entries(runner, &self.grubby, "ALL")?;
        let keys: Vec<String> = self.args.keys.iter().cloned().collect();
        let mut prior = Vec::new();
        for path in DEFAULTS_FILES {
            if ctx.root.exists(path) {
                prior.push(file::current(ctx.root, path)?.1);
            }
        }
        prior.extend(all.iter().map(|e| Record::KernelArgs {
            kernel: e.kernel.clone(),
            prior: e.args.clone(),
            keys: keys.clone(),
        }));
        let current: Vec<String> = all
            .iter()
            .map(|e| self.args.owned_tokens(&e.args).join(" "))
            .collect();
        Ok(Inspection {
            in_place: !all.is_empty() && all.iter().all(|e| self.args.satisfied_by(&e.args)),
            current: current.first().cloned().unwrap_or_default(),
            prior,
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        let runner = runner(ctx)?;
        let all = entries(runner, &self.grubby, "ALL")?;
        let mut remove: Vec<String> = Vec::new();
        for entry in &all {
            for token in self.args.owned_tokens(&entry.args) {
                if !remove.contains(&token) {
                    remove.push(token);
                }
            }
        }
        update(runner, &self.grubby, "ALL", &remove, &self.args.tokens)?;
        let after = entries(runner, &self.grubby, "ALL")?;
        match after.iter().find(|e| !self.args.satisfied_by(&e.args)) {
            None => Ok(()),
            Some(entry) => Err(ChangeError::Refused(format!(
                "grubby left {} with '{}'",
                entry.kernel,
                self.args.owned_tokens(&entry.args).join(" ")
            ))),
        }
    }
}

/// Puts one entry's arguments with the recorded keys back; an entry that is gone (its kernel
/// was removed) is skipped. Returns whether anything changed.
pub(crate) fn restore(
    ctx: &ApplyContext,
    kernel: &str,
    prior: &str,
    keys: &[String],
) -> Result<bool, ChangeError> {
    let runner = runner(ctx)?;
    let Some(grubby) = runner.find("grubby") else {
        return Err(ChangeError::Refused(format!(
            "grubby is gone: put the arguments of {kernel} back by hand: {prior}"
        )));
    };
    let Some(now) = entries(runner, &grubby, kernel)?.into_iter().next() else {
        return Ok(false);
    };
    let owned = AllArgs {
        keys: keys.iter().cloned().collect(),
        tokens: Vec::new(),
    };
    let had = owned.owned_tokens(prior);
    let has = owned.owned_tokens(&now.args);
    let remove: Vec<String> = has.iter().filter(|t| !had.contains(t)).cloned().collect();
    let add: Vec<String> = had.iter().filter(|t| !has.contains(t)).cloned().collect();
    update(runner, &grubby, kernel, &remove, &add)?;
    Ok(!remove.is_empty() || !add.is_empty())
}

/// Whether the default boot entry has the arguments of `args`.
pub(crate) fn configured(
    ctx: &ApplyContext,
    grubby: &Path,
    args: &Args,
) -> Result<bool, ChangeError> {
    let runner = runner(ctx)?;
    Ok(entries(runner, grubby, "DEFAULT")?
        .first()
        .is_some_and(|e| args.satisfied_by(&e.args)))
}

#[cfg(test)]
mod tests {
    use super::super::tests::boot;
    use super::*;
    use crate::apply::command::fake::{FakeRunner, ok, status};
    use crate::machine::Machine;
    use crate::sysroot::SysRoot;
    use std::cell::RefCell;

    const INFO: &str = "index=0\nkernel=\"/boot/vmlinuz-4.18.0-147\"\nargs=\"ro crashkernel=auto nohz_full=1-3 quiet\"\nroot=\"/dev/mapper/rhel-root\"\ninitrd=\"/boot/initramfs-4.18.0-147.img\"\ntitle=\"Red Hat\"\nindex=1\nkernel=\"/boot/vmlinuz-0-rescue\"\nargs=\"ro quiet\"\n";

    #[test]
    fn parses_grubby_info() {
        let entries = parse_info(INFO);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].kernel, "/boot/vmlinuz-4.18.0-147");
        assert_eq!(entries[0].args, "ro crashkernel=auto nohz_full=1-3 quiet");
        assert_eq!(entries[1].args, "ro quiet");
        assert!(parse_info("garbage\n\"=").is_empty());
    }

    /// A pretend grubby over a list of entries.
    fn grubby(
        state: &RefCell<Vec<Entry>>,
    ) -> impl Fn(&str, &[String]) -> crate::apply::command::Output + '_ {
        move |_, args| {
            let mut entries = state.borrow_mut();
            let info = |e: &[Entry]| {
                e.iter()
                    .enumerate()
                    .map(|(i, e)| {
                        format!("index={i}\nkernel=\"{}\"\nargs=\"{}\"\n", e.kernel, e.args)
                    })
                    .collect::<String>()
            };
            let Some(first) = args.first() else {
                return status(1, "");
            };
            if let Some(which) = first.strip_prefix("--info=") {
                return match which {
                    "ALL" => ok(&info(&entries)),
                    "DEFAULT" => ok(&info(&entries[..1])),
                    k => ok(&info(
                        &entries
                            .iter()
                            .filter(|e| e.kernel == k)
                            .cloned()
                            .collect::<Vec<_>>(),
                    )),
                };
            }
            let which = first.strip_prefix("--update-kernel=").unwrap_or("");
            for e in entries
                .iter_mut()
                .filter(|e| which == "ALL" || e.kernel == which)
            {
                let mut tokens: Vec<String> = e.args.split_whitespace().map(String::from).collect();
                if let Some(remove) = args[1].strip_prefix("--remove-args=") {
                    let remove: Vec<&str> = remove.split_whitespace().collect();
                    tokens.retain(|t| !remove.contains(&t.as_str()));
                }
                if let Some(add) = args[1].strip_prefix("--args=") {
                    tokens.extend(add.split_whitespace().map(String::from));
                }
                e.args = tokens.join(" ");
            }
            ok("")
        }
    }

    #[test]
    fn sets_and_restores_every_entry() {
        let state = RefCell::new(parse_info(INFO));
        let original = state.borrow().clone();
        let runner = FakeRunner {
            installed: vec!["grubby"],
            answer: grubby(&state),
            calls: RefCell::new(Vec::new()),
        };
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let machine = Machine::read(&root);
        let ctx = ApplyContext {
            root: &root,
            machine: &machine,
            runner: Some(&runner),
        };
        let wanted = [
            Args::of(&boot("cmdline:nohz_full", "nohz_full=1-7")).unwrap(),
            Args::of(&boot("cmdline:skew_tick", "skew_tick=1")).unwrap(),
        ];
        let change = GrubbyChange {
            grubby: "grubby".into(),
            args: AllArgs::of(&wanted),
        };
        let inspection = change.inspect(&ctx).unwrap();
        assert!(!inspection.in_place);
        assert_eq!(inspection.prior.len(), 2);
        change.apply(&ctx).unwrap();
        assert_eq!(
            state.borrow()[0].args,
            "ro crashkernel=auto quiet nohz_full=1-7 skew_tick=1"
        );
        assert_eq!(state.borrow()[1].args, "ro quiet nohz_full=1-7 skew_tick=1");
        assert!(change.inspect(&ctx).unwrap().in_place);
        assert!(configured(&ctx, Path::new("grubby"), &wanted[0]).unwrap());

        for record in inspection.prior.iter().rev() {
            if let Record::KernelArgs {
                kernel,
                prior,
                keys,
            } = record
            {
                assert!(restore(&ctx, kernel, prior, keys).unwrap());
            }
        }
        let restored: Vec<Vec<String>> = state
            .borrow()
            .iter()
            .map(|e| {
                let mut t: Vec<String> = e.args.split_whitespace().map(String::from).collect();
                t.sort();
                t
            })
            .collect();
        let before: Vec<Vec<String>> = original
            .iter()
            .map(|e| {
                let mut t: Vec<String> = e.args.split_whitespace().map(String::from).collect();
                t.sort();
                t
            })
            .collect();
        assert_eq!(restored, before);
        assert!(!restore(&ctx, "/boot/vmlinuz-gone", "ro", &["nohz_full".into()]).unwrap());
    }
}

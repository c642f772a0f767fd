//! `lowlat apply`.

use anyhow::{Result, bail};
use clap::{ArgGroup, Args};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use super::Cli;
use super::messages::warning;
use super::output::{print, show};
pub(crate) use crate::apply::pipeline::require_root;
use crate::apply::pipeline::{self, ApplyRequest, ApplyRunError};
use crate::apply::{ItemStatus, Scope};
use crate::plan::file::PlanFile;
use crate::report::apply::{apply_header_text, apply_text, shown};
use crate::sysroot::SysRoot;

/// Options of `lowlat apply`.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("scope").args(["runtime", "boot", "all"])),
    after_help = "Examples:\n  lowlat plan --out /tmp/plan && sudo lowlat apply --plan /tmp/plan/plan.json\n  \
lowlat apply --plan plan.json --dry-run\n  \
lowlat apply --plan plan.json --dry-run --json | jq '.changed, .reboot_required'\n  lowlat --root /tmp/copy-of-a-fixture apply --plan plan.json --yes\n\n\
Needs the live machine or --root DIR (--snapshot is refused: a snapshot is read-only).\n\n\
Every prior value is journaled in /var/lib/lowlat/journal.jsonl (under --root) before it \
changes; `lowlat revert` puts them all back. Exit codes: 0 applied (or nothing to do; a dry run \
that could run), 1 some changes were refused by the machine, or the kernel arguments could not \
be configured (no grubby and no GRUB defaults file: the report prints the arguments to add by \
hand), 2 nothing or not everything could be done (the message says \
why; a stopped apply is undone with `lowlat revert`)."
)]
pub struct ApplyArgs {
    /// The plan to apply (plan.json written by `lowlat plan --out DIR`).
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,

    /// Only what takes effect now: sysctls, IRQs, kernel threads, cpufreq, cpuidle, THP,
    /// hugepages, services stopped or masked.
    #[arg(long)]
    pub runtime: bool,

    /// Only what persists: kernel arguments, installed files (sysctl.d, systemd units,
    /// irqbalance, /etc/lowlat/plan.json), services enabled at boot.
    #[arg(long)]
    pub boot: bool,

    /// Both (the default).
    #[arg(long)]
    pub all: bool,

    /// Show what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Apply without asking (needed when standard input is not a terminal).
    #[arg(long, short)]
    pub yes: bool,

    /// Apply a plan made for another machine (other host name or CPUs).
    #[arg(long)]
    pub force: bool,

    /// Print the versioned JSON document (kind `apply`) instead of the table: per setting its
    /// changes with target, before, after and action; `changed` and `reboot_required`. Needs
    /// --yes or --dry-run (no question is asked).
    #[arg(long)]
    pub json: bool,
}

impl ApplyArgs {
    fn scope(&self) -> Scope {
        if self.runtime {
            Scope::Runtime
        } else if self.boot {
            Scope::Boot
        } else {
            Scope::All
        }
    }
}

/// The root `apply` and `revert` may write to: the live machine or a directory tree, not a
/// snapshot.
pub(crate) fn writable_root(cli: &Cli, command: &str) -> Result<SysRoot> {
    if cli.snapshot.is_some() {
        bail!(
            "--snapshot: lowlat {command} changes a machine, and a snapshot is read-only; use --root DIR for a directory tree"
        );
    }
    cli.sysroot()
}

/// Asks on the terminal; `false` unless the answer is yes.
pub(super) fn confirm(question: &str) -> Result<bool> {
    let mut stderr = std::io::stderr().lock();
    write!(stderr, "{question} [y/N] ")?;
    stderr.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// Runs `lowlat apply`.
pub(crate) fn run(cli: &Cli, args: &ApplyArgs) -> Result<u8> {
    let root = writable_root(cli, "apply")?;
    require_root(
        &root,
        args.dry_run,
        rustix::process::geteuid().as_raw(),
        "apply",
    )?;
    let PlanFile { plan, text, .. } = PlanFile::read(&args.plan)
        .map_err(|e| anyhow::anyhow!("{}; nothing was changed", super::error_text(&e)))?;
    let request = ApplyRequest {
        plan,
        text,
        path: (std::fs::canonicalize(&args.plan).unwrap_or_else(|_| args.plan.clone()))
            .display()
            .to_string(),
        scope: args.scope(),
        dry_run: args.dry_run,
        force: args.force,
    };
    let forced = |problem: &_| warning!("--force: {problem}");
    let prepared = pipeline::prepare(&root, request, forced).map_err(|e| match e {
        ApplyRunError::Misfit(problem) => anyhow::anyhow!(
            "--plan {}: the plan does not fit this machine: {problem}. Make a plan here with `lowlat plan`, or add --force; nothing was changed",
            args.plan.display()
        ),
        ApplyRunError::Prepare(problem) => {
            anyhow::anyhow!("--plan {}: {problem}", args.plan.display())
        }
        e => e.into(),
    })?;
    if !args.json {
        print(&apply_header_text(&prepared.request, &root))?;
    }
    let applied = pipeline::run(&root, &prepared, |preview| {
        if args.yes {
            return Ok(true);
        }
        let to_change = preview.count(ItemStatus::WouldChange);
        if args.json || !std::io::stdin().is_terminal() {
            bail!(
                "{} would change: add --yes to apply without a question ({}); nothing was changed",
                crate::units::plural(to_change, "setting", "settings"),
                if args.json {
                    "--json asks nothing"
                } else {
                    "standard input is not a terminal"
                }
            );
        }
        print(&apply_text(preview, &root, true))?;
        confirm(&format!("Apply {to_change} settings?"))
    })?;
    show(shown::applied(
        &applied,
        &prepared.request,
        &root,
        args.json,
    )?)
}

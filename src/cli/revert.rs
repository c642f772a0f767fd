//! `lowlat revert`.

use anyhow::Result;
use clap::Args;

use super::Cli;
use super::apply::{require_root, writable_root};
use super::output::show;
use crate::apply::pipeline;
use crate::report::apply::shown;

/// Options of `lowlat revert`.
#[derive(Debug, Args)]
#[command(
    after_help = "Needs the live machine or --root DIR (--snapshot is refused: a snapshot is \
read-only).\n\nPuts back every value `lowlat apply` journaled in \
/var/lib/lowlat/journal.jsonl (under --root), latest first, then removes the journal. Running it \
again does nothing. Exit codes: 0 reverted (or nothing to revert), 1 some values were refused by \
the machine, 2 the journal is damaged (nothing was changed) or revert stopped (run it again)."
)]
pub struct RevertArgs {
    /// List what would be restored, change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the versioned JSON document (kind `revert`) instead of the table: every journal
    /// record with its action, and `changed`, the number put back (or that would be).
    #[arg(long)]
    pub json: bool,
}

/// Runs `lowlat revert`.
pub(crate) fn run(cli: &Cli, args: &RevertArgs) -> Result<u8> {
    let root = writable_root(cli, "revert")?;
    require_root(
        &root,
        args.dry_run,
        rustix::process::geteuid().as_raw(),
        "revert",
    )?;
    let report = pipeline::revert(&root, args.dry_run)?;
    show(shown::reverted(&report, &root, args.dry_run, args.json)?)
}

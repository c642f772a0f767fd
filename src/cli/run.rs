//! `lowlat run`.

use std::ffi::OsString;

use anyhow::{Result, bail};
use clap::Args;

use super::messages::{error, note};
use super::{Cli, exit};
use crate::apply::run::{enter, exec, placement};
use crate::machine::CpuSet;
use crate::text::command_line;

/// Options of `lowlat run`.
#[derive(Debug, Args)]
#[command(
    after_help = "Starts COMMAND inside the isolated CPUs, so that neither cset nor \
taskset is needed by hand. Where `lowlat apply` made runtime isolation (a plan made with \
`--isolation runtime`), the command joins the /lowlat-isolated cpuset and its affinity is the \
isolated CPUs (or those of --cpus); on a machine isolated at boot (isolcpus=), only its \
affinity is set. One thread per CPU is the application's business: lowlat places the process, \
its threads inherit the place. What lowlat did is said on stderr in one line.\n\nExit codes: \
the command's own; 2 when lowlat could not place it (nothing isolated, --cpus outside the \
isolated CPUs, not permitted); 127 when COMMAND is not found, 126 when it cannot be run.\n\n\
Example: lowlat run --cpus 1 -- ./trader --config prod.toml"
)]
pub struct RunArgs {
    /// The CPUs to run on, a subset of the isolated ones (`1`, `2-5`); all of them when absent.
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
    pub cpus: Option<CpuSet>,

    /// Say where the command would run, and run nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Runs `lowlat run`: places this process, then becomes COMMAND.
pub(crate) fn run(cli: &Cli, args: &RunArgs) -> Result<u8> {
    let root = cli.sysroot()?;
    if !root.is_live() && !args.dry_run {
        bail!(
            "--root/--snapshot: lowlat run starts a command on this machine; with another root only --dry-run (where it would run) makes sense"
        );
    }
    let placement = placement(&root, args.cpus.as_ref())?;
    let shown = command_line(&args.command);
    if args.dry_run {
        note!("would run {shown} {}", placement.describe());
        return Ok(exit::OK);
    }
    enter(&root, &placement)?;
    note!("running {shown} {}", placement.describe());
    let error = exec(&args.command);
    error!("cannot run {shown}: {error}");
    Ok(if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

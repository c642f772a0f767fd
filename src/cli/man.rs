//! `lowlat man --out DIR`: writes the manual pages `manual` renders from this command line.

use anyhow::Result;
use clap::{Args, CommandFactory};
use std::path::PathBuf;

use super::output::print;
use super::{Cli, INPUT_OPTIONS, REFUSE_INPUT, exit};
use crate::manual::{self, Layout};

/// Options of `lowlat man`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat man --out /usr/share/man/man1 --force\n  \
lowlat man --out /tmp/man && man -l /tmp/man/lowlat-audit.1"
)]
pub struct ManArgs {
    /// Write the pages (lowlat.1, lowlat-SUBCOMMAND.1, ...) into DIR, created if missing.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Write into a directory that is not empty, replacing pages of the same name.
    #[arg(long)]
    pub force: bool,
}

/// Runs `lowlat man`: writes every page and lists the files written.
pub(crate) fn run(args: &ManArgs) -> Result<u8> {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let layout = Layout {
        input_options: INPUT_OPTIONS,
        refuse_input: REFUSE_INPUT,
    };
    let pages = manual::pages(&command, &layout)?;
    let written = crate::plan::write::write_out(&args.out, &pages, args.force)?;
    let mut listing = String::new();
    for path in written {
        listing.push_str(&format!("{}\n", path.display()));
    }
    print(&listing)?;
    Ok(exit::OK)
}

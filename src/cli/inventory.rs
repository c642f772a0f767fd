//! `lowlat inventory`.

use super::output::{print, print_json};
use super::{Cli, exit};
use crate::report::inventory::Inventoried;
use anyhow::{Context, Result};
use clap::Args;

/// Options of `lowlat inventory`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat inventory\n  lowlat inventory --json | jq .machine.topology.shape\n  \
lowlat inventory --snapshot host1.lowlat"
)]
pub struct InventoryArgs {
    /// Print the versioned JSON document (schema_version, tool, machine) instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `lowlat inventory`.
pub(crate) fn run(cli: &Cli, args: &InventoryArgs) -> Result<u8> {
    let (root, kind) = cli.source()?;
    let inventory = Inventoried::read(&root, kind).context("--snapshot")?;
    if let Inventoried::Linux(machine) = &inventory {
        super::container::note(&root, &machine.topology);
    }
    if args.json {
        print_json(&inventory.document())?;
    } else {
        print(&inventory.text())?;
    }
    Ok(exit::OK)
}

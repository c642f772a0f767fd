//! `lowlat inventory`.

use super::output::{print, print_json};
use super::{Cli, exit};
use crate::machine::Machine;
use crate::machine::freebsd::FreeBsdMachine;
use crate::report::{freebsd, inventory};
use crate::snapshot::SnapshotKind;
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
    if kind == SnapshotKind::Freebsd {
        let machine = FreeBsdMachine::read(&root).context("--snapshot")?;
        if args.json {
            print_json(&freebsd::inventory_document(&machine))?;
        } else {
            print(&freebsd::inventory_text(&machine))?;
        }
        return Ok(exit::OK);
    }
    let mut machine = Machine::read(&root);
    if root.is_live() {
        crate::machine::time_daemons::ask_time_daemons(&mut machine);
    }
    super::container::note(&root, &machine.topology);
    if args.json {
        print_json(&inventory::document(&machine))?;
    } else {
        print(&inventory::text(&machine))?;
    }
    Ok(exit::OK)
}

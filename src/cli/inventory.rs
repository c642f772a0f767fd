//! `lowlat inventory`.

use anyhow::Result;
use clap::Args;

use super::{Cli, exit};

/// Options of `lowlat inventory`.
#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Print the versioned JSON document instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `lowlat inventory`.
pub fn run(cli: &Cli, args: &InventoryArgs) -> Result<u8> {
    let root = cli.sysroot()?;
    let _ = (root, args.json);
    Ok(exit::OK)
}

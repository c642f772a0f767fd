//! `lowlat measure ENGINE`: the measurement engines.

use anyhow::Result;
use clap::{Args, Subcommand};

use super::Cli;

/// Options of `lowlat measure`.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// Which measurement to run.
    #[command(subcommand)]
    pub engine: MeasureEngine,
}

/// The measurement engines.
#[derive(Debug, Subcommand)]
pub enum MeasureEngine {}

/// Runs `lowlat measure`.
pub fn run(_cli: &Cli, args: &MeasureArgs) -> Result<u8> {
    match args.engine {}
}

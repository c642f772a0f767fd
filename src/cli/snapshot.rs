//! `lowlat snapshot`.

use anyhow::{Result, bail};
use clap::Args;
use std::path::PathBuf;

use super::{Cli, exit};
use crate::machine::Machine;

/// Options of `lowlat snapshot`.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  lowlat snapshot -o $(hostname).lowlat\n  \
lowlat inventory --snapshot host1.lowlat     # on any other machine")]
pub struct SnapshotArgs {
    /// Where to write the snapshot (a zstd-compressed tar with a manifest).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Runs `lowlat snapshot`.
pub fn run(cli: &Cli, args: &SnapshotArgs) -> Result<u8> {
    if cli.snapshot.is_some() {
        bail!("--snapshot: a snapshot cannot be taken of a snapshot; copy the file instead");
    }
    if args.output.exists() && !args.force {
        bail!(
            "-o {}: the file exists; choose another name or add --force",
            args.output.display()
        );
    }
    let root = cli.sysroot()?.recording();
    let machine = Machine::read(&root);
    let manifest = crate::snapshot::write(&root, &args.output)?;
    eprintln!(
        "lowlat: wrote {} ({} files, {} KiB before compression, host {}; {} warnings while reading)",
        args.output.display(),
        manifest.files,
        manifest.bytes.div_ceil(1024),
        manifest.host,
        machine.warnings.len()
    );
    Ok(exit::OK)
}

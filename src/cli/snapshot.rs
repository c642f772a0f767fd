//! `lowlat snapshot`.

use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::PathBuf;

use super::messages::note;
use super::{Cli, exit};
use crate::machine::Machine;
use crate::snapshot::steps;
use crate::text::escape_controls;
use crate::units::plural;

/// Options of `lowlat snapshot`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat snapshot -o $(hostname).lowlat\n  \
lowlat inventory --snapshot host1.lowlat             # on any other machine\n  \
lowlat --snapshot host1.lowlat snapshot --extract DIR   # the captured files as a tree")]
pub struct SnapshotArgs {
    /// Where to write the snapshot (a zstd-compressed tar with a manifest).
    #[arg(short, long, value_name = "FILE", required_unless_present = "extract")]
    pub output: Option<PathBuf>,

    /// With --snapshot FILE: write the captured files as a tree under DIR (usable with --root)
    /// instead of taking a snapshot.
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub extract: Option<PathBuf>,

    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Runs `lowlat snapshot`.
pub(crate) fn run(cli: &Cli, args: &SnapshotArgs) -> Result<u8> {
    if let Some(dir) = &args.extract {
        let Some(file) = &cli.snapshot else {
            bail!("--extract needs --snapshot FILE: the snapshot to extract");
        };
        let manifest = steps::extract(file, dir, args.force)?;
        note!(
            "extracted {} files of host {} (captured {}) into {}",
            manifest.files,
            escape_controls(&manifest.header.host),
            escape_controls(&manifest.header.created),
            dir.display()
        );
        return Ok(exit::OK);
    }
    let Some(output) = &args.output else {
        bail!("-o FILE: say where to write the snapshot");
    };
    steps::check_output(output, args.force, cli.snapshot.is_some())?;
    let root = cli.sysroot()?.recording();
    let machine = Machine::read(&root);
    let manifest = crate::snapshot::write(&root, output).context("-o")?;
    note!(
        "wrote {} ({}, {} KiB before compression, host {}; {} while reading)",
        output.display(),
        plural(manifest.files, "file", "files"),
        manifest.bytes.div_ceil(1024),
        escape_controls(&manifest.header.host),
        plural(machine.warnings.len(), "warning", "warnings")
    );
    Ok(exit::OK)
}

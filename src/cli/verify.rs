//! `lowlat verify`.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

use super::Cli;
use super::output::show;
use crate::apply::pipeline;
use crate::plan::file::PlanFile;
use crate::report::apply::shown as report_shown;

/// Options of `lowlat verify`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat verify\n  lowlat verify --plan plan.json --json | jq '.checks[] | select(.status == \"drift\")'\n\n\
Kernel arguments are judged on /proc/cmdline; on a machine without grubby or a GRUB defaults file, one absent from it is not-configured (nothing could have configured it), and the line to add is printed. One on the command line that the running kernel ignores (nohz_full= on a kernel built without CONFIG_NO_HZ_FULL) is not-in-effect, not ok. A setting that differs from the plan and that no apply in the journal covered (`apply --runtime` leaves the persistent ones out) is not-applied, not drift.\n\n\
Exit codes: 0 every setting ok, pending a reboot or not-applied (or unsupported here), 1 some setting drifted, is not-configured or not-in-effect, 2 the plan could not be read."
)]
pub struct VerifyArgs {
    /// The plan to check against [default: /etc/lowlat/plan.json under the root, installed by
    /// `lowlat apply`].
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// Print the versioned JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `lowlat verify`.
pub(crate) fn run(cli: &Cli, args: &VerifyArgs) -> Result<u8> {
    let root = cli.sysroot()?;
    let PlanFile { plan, shown, .. } = match &args.plan {
        Some(path) => PlanFile::read(path)?,
        None => PlanFile::installed(&root)?,
    };
    let report = pipeline::verify(&root, &plan, &shown);
    show(report_shown::verified(&report, &root, args.json)?)
}

//! The command line: clap definitions and the code that turns them into calls of the library.
//! Nothing below this module sees clap.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

pub use crate::text::error_text;

use crate::snapshot::SnapshotKind;
use crate::snapshot::foreign::Foreign;
use crate::sysroot::SysRoot;

/// Documented exit codes.
pub mod exit {
    /// Success: nothing failed.
    pub const OK: u8 = 0;
    /// The command ran and found failures (audit findings, verify drift, values apply or revert
    /// could not set).
    pub const FAILURES: u8 = 1;
    /// The command could not do its job (bad input, unreadable files, not permitted).
    pub const ERROR: u8 = 2;
    /// `check` only: nothing failed, but the run could not decide: a target it was too short
    /// to prove, or a `--quick` smoke run.
    pub const NOT_PROVEN: u8 = 3;

    /// [`FAILURES`] when the command found failures, else [`OK`].
    pub(crate) fn found(failures: bool) -> u8 {
        if failures { FAILURES } else { OK }
    }
}

/// lowlat: inventory, audit, plan, apply (with exact revert), verify and measure a Linux
/// server for low latency.
#[derive(Debug, Parser)]
#[command(name = "lowlat", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    /// Read the machine from this directory tree instead of `/` (a fixture or a copy of one).
    /// `measure` and `check` run on this machine only, and `compare`, `report` and `fleet`
    /// read only the files given to them: they refuse it.
    #[arg(long, global = true, help_heading = INPUT_OPTIONS, value_name = "DIR", conflicts_with = "snapshot")]
    pub root: Option<PathBuf>,

    /// Read the machine from a file made by `lowlat snapshot`, or a FreeBSD capture made by
    /// packaging/freebsd/lowlat-capture.sh (which `inventory`, `audit` and `plan` read).
    /// `measure` and `check` run on this machine only, and `compare`, `report` and `fleet`
    /// read only the files given to them: they refuse it.
    #[arg(long, global = true, help_heading = INPUT_OPTIONS, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,

    /// Read the machine from a sosreport (the sosreport-* directory, the one that holds it, or
    /// the sosreport-*.tar.xz/.tar.gz sos wrote): its copies of /proc, /sys and /etc, and its
    /// command outputs (uname -a, sysctl -a, ps, tuned-adm active) as the files they stand
    /// for; what the bundle lacks is named on stderr, and the rules that need it are unknown.
    #[arg(long, global = true, help_heading = INPUT_OPTIONS, value_name = "PATH", conflicts_with_all = ["root", "snapshot"])]
    pub sosreport: Option<PathBuf>,

    /// Read the machine from an OpenShift must-gather (the directory `oc adm must-gather`
    /// wrote, or its image directory): a node's `nodes/NODE/sysinfo.tgz`, the ghw snapshot of
    /// its /proc and /sys that the Performance Profile Creator reads, unpacked and checked,
    /// with its kernel release from the Node object; what the snapshot lacks (no sysctls, no
    /// processes) is named on stderr, and the rules that need it are unknown.
    #[arg(long, global = true, help_heading = INPUT_OPTIONS, value_name = "DIR", conflicts_with_all = ["root", "snapshot", "sosreport"])]
    pub must_gather: Option<PathBuf>,

    /// With --must-gather: the node to read (the name of its directory under nodes/);
    /// needed when the must-gather holds several.
    #[arg(long, global = true, help_heading = INPUT_OPTIONS, value_name = "NAME", requires = "must_gather")]
    pub must_gather_node: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The heading of the global options that choose the machine read (`--root`, `--snapshot`,
/// `--sosreport`, `--must-gather`): listed apart from each command's own options.
pub(crate) const INPUT_OPTIONS: &str = "Input options";

/// The commands that refuse the input options: `check` and `measure` run on this machine only,
/// `compare`, `report` and `fleet` read only the files given to them. Their manual pages leave
/// the input options out (tests/it/cli.rs holds each to its refusal).
pub(crate) const REFUSE_INPUT: &[&str] = &["check", "measure", "compare", "report", "fleet"];

const EXIT_CODES: &str = "Exit codes: 0 success; 1 the command found failures (audit, verify drift, apply or revert refusals); \
2 the command could not run (bad input, unreadable files, not permitted); 3 (check only) not proven: nothing failed, but the \
run was too short to prove a target.";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job in one command: audit against a profile, measure jitter and timer
    /// latency on the CPUs that matter, and hold the figures to the profile's targets.
    Check(check::CheckArgs),
    /// Summarise the machine: CPU, topology, NUMA, memory, kernel, isolation, power, IRQs.
    Inventory(inventory::InventoryArgs),
    /// Check the machine against a tuning profile: findings with evidence, sources and exact
    /// fixes.
    Audit(Box<audit::AuditArgs>),
    /// Capture the files lowlat reads into one archive, to inventory or audit elsewhere with
    /// `--snapshot FILE`.
    Snapshot(snapshot::SnapshotArgs),
    /// Measure the machine: jitter, timer latency, memory, core-to-core, wake-up, frequency.
    Measure(measure::MeasureArgs),
    /// Compute the CPU partition and the desired settings, and render every artifact (kernel
    /// command line, sysctl.d, TuneD profile, systemd units, irqbalance, IRQ and kernel-thread
    /// plans, plan.json) from that one plan.
    Plan(plan::PlanArgs),
    /// Make the machine match a plan, journaling every prior value first (needs root on the
    /// live machine).
    Apply(apply::ApplyArgs),
    /// Put back every value `lowlat apply` changed, from its journal.
    Revert(revert::RevertArgs),
    /// Prove a plan on this machine: measure before, apply (rebooting and resuming when the
    /// plan needs it), verify, measure after, compare the arms, write the report, and with
    /// --revert put the machine back.
    Prove(Box<prove::ProveArgs>),
    /// Start a command inside the isolated CPUs: in the isolated cpuset of runtime isolation,
    /// with its affinity set; exits with the command's exit code.
    Run(run::RunArgs),
    /// Check the machine against a plan: ok, drift, pending-reboot or unsupported per setting.
    Verify(verify::VerifyArgs),
    /// Watch the isolated CPUs from the housekeeping ones: what interrupts them, and drift from
    /// the plan, on screen, as JSON lines, or for Prometheus (HTTP or textfile).
    Watch(watch::WatchArgs),
    /// Read, change, check and revert BIOS settings through the server's BMC (Redfish), by
    /// intent (smt=off) resolved through the BMC's own attribute registry.
    Bios(bios::BiosArgs),
    /// Compare runs of a baseline (A) with runs of a candidate (B), runs as the unit: the
    /// settings diff, B/A of a few primary endpoints with its interval and a verdict (better,
    /// worse, no difference, equivalent, inconclusive), what the runs could detect, the
    /// environment of both arms, and the per-CPU detail.
    Compare(compare::CompareArgs),
    /// Print the shell completion script for bash, zsh or fish.
    Completions(completions::CompletionsArgs),
    /// Write the manual pages (lowlat.1 and one per subcommand) into a directory.
    Man(man::ManArgs),
    /// Write one self-contained HTML report (charts, tables, the documents themselves) from
    /// lowlat's JSON documents: machine, audit, plan, verify and every measurement.
    Report(report::ReportArgs),
    /// Many hosts at once, offline, from their snapshots: group them, name the hosts that
    /// differ from their group field by field (`fleet report`), one plan per group (`fleet plan`).
    Fleet(fleet::FleetArgs),
    /// The profiles: list the built-in ones, or show one resolved (a built-in profile or a
    /// site profile file) with where each expectation was set.
    Profile(profile::ProfileArgs),
}

pub(crate) mod apply;
pub(crate) mod audit;
pub(crate) mod bios;
pub(crate) mod bmc;
pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod completions;
mod container;
pub(crate) mod defaults;
pub(crate) mod fleet;
pub(crate) mod inventory;
pub(crate) mod man;
pub(crate) mod measure;
pub(crate) mod measure_common;
pub(crate) mod measure_cpu;
pub(crate) mod measure_jitter;
pub(crate) mod measure_mem;
pub(crate) mod measure_net;
pub(crate) mod measure_timer;
mod messages;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod plan_options;
pub(crate) mod profile;
pub(crate) mod prove;
pub(crate) mod report;
pub(crate) mod revert;
pub(crate) mod run;
pub(crate) mod snapshot;
pub(crate) mod values;
pub(crate) mod verify;
pub(crate) mod watch;

impl Cli {
    /// The SysRoot chosen by `--root` / `--snapshot`, or the live machine: a Linux machine's
    /// files. A FreeBSD capture is refused, naming the commands that read one.
    pub fn sysroot(&self) -> Result<SysRoot> {
        let (root, kind) = self.source()?;
        if kind == SnapshotKind::Freebsd {
            anyhow::bail!(
                "--snapshot {}: a FreeBSD capture (lowlat-capture.sh); `lowlat inventory`, \
                 `audit` and `plan` read it, this command reads Linux machines only",
                self.snapshot
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""))
                    .display()
            );
        }
        Ok(root)
    }

    /// The machine chosen by `--root` / `--snapshot`, or the live machine, with which
    /// system's files it holds (the snapshot manifest's `snapshot_kind`).
    pub(crate) fn source(&self) -> Result<(SysRoot, SnapshotKind)> {
        if let Some(dir) = &self.root {
            let root =
                SysRoot::tree(dir).map_err(|e| anyhow::anyhow!("--root {}: {e}", dir.display()))?;
            return Ok((root, SnapshotKind::Linux));
        }
        if let Some(file) = &self.snapshot {
            let (root, manifest) = crate::snapshot::open(file).context("--snapshot")?;
            return Ok((root, manifest.snapshot_kind));
        }
        Ok((SysRoot::live(), SnapshotKind::Linux))
    }

    /// The machine read, as a fix script's header names it: `--sosreport PATH`,
    /// `--must-gather DIR` (read through a private tree in `--root`), `--root DIR`,
    /// `--snapshot FILE` or the live machine.
    pub(crate) fn input_name(&self) -> String {
        let (sos, gather) = (&self.sosreport, &self.must_gather);
        [("--sosreport", sos), ("--must-gather", gather)]
            .into_iter()
            .chain([("--root", &self.root), ("--snapshot", &self.snapshot)])
            .find_map(|(flag, path)| Some(format!("{flag} {}", path.as_ref()?.display())))
            .unwrap_or_else(|| "the live machine".to_string())
    }

    /// Refuses `--root`/`--snapshot` for a `command` that reads no machine but the files given
    /// as its arguments (`reads`), rather than ignoring them without a word.
    pub(crate) fn no_machine(&self, command: &str, reads: &str) -> Result<()> {
        if self.root.is_some() || self.snapshot.is_some() {
            anyhow::bail!(
                "--root and --snapshot name one machine; `lowlat {command}` reads {reads} given as \
                 its arguments"
            );
        }
        Ok(())
    }
}

/// Runs the parsed command line and returns the exit code.
pub fn run(mut cli: Cli) -> Result<u8> {
    messages::listen();
    // A sosreport or a must-gather's node is made into a private machine tree that lives until
    // the command ends, read as --root reads a tree.
    let foreign = Foreign::open(
        cli.sosreport.as_deref(),
        cli.must_gather.as_deref(),
        cli.must_gather_node.as_deref(),
    )?;
    if let Some(foreign) = &foreign {
        for (level, line) in foreign.said() {
            messages::emit(level, format_args!("{line}"));
        }
        cli.root = Some(foreign.dir().to_path_buf());
    }
    let code = dispatch(cli);
    drop(foreign);
    code
}

fn dispatch(cli: Cli) -> Result<u8> {
    match &cli.command {
        Command::Check(args) => check::run(&cli, args),
        Command::Inventory(args) => inventory::run(&cli, args),
        Command::Audit(args) => audit::run(&cli, args),
        Command::Measure(args) => measure::run(&cli, args),
        Command::Snapshot(args) => snapshot::run(&cli, args),
        Command::Plan(args) => plan::run(&cli, args),
        Command::Apply(args) => apply::run(&cli, args),
        Command::Revert(args) => revert::run(&cli, args),
        Command::Prove(args) => prove::run(&cli, args),
        Command::Run(args) => run::run(&cli, args),
        Command::Verify(args) => verify::run(&cli, args),
        Command::Watch(args) => watch::run(&cli, args),
        Command::Bios(args) => bios::run(&cli, args),
        Command::Compare(args) => {
            cli.no_machine("compare", "the runs (files or bundle directories)")?;
            compare::run(args)
        }
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::Report(args) => report::run(&cli, args),
        Command::Fleet(args) => fleet::run(&cli, args),
        Command::Profile(args) => profile::run(args),
    }
}

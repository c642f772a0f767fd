//! `lowlat fleet report` and `lowlat fleet plan`.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

use super::output::{print, print_json};
use super::profile::ProfileArg;
use super::{Cli, exit};
use crate::fleet::plan;
use crate::report::fleet as printers;

/// Options of `lowlat fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// What to do with the fleet.
    #[command(subcommand)]
    pub action: FleetAction,
}

/// The subcommands of `lowlat fleet`.
#[derive(Debug, Subcommand)]
pub enum FleetAction {
    /// Audit every host's snapshot offline, group the hosts by system model, CPU model and
    /// sockets, and name each host that differs from its group's majority, field by field.
    Report(ReportArgs),
    /// One plan per group of the report, refused for a group whose hosts differ in anything
    /// the plan depends on.
    Plan(PlanArgs),
}

const INPUTS: &str = "Inputs: snapshot files (`lowlat snapshot -o FILE`), or directories holding them: one \
directory per host as the Ansible collection's collect role fetches them (lowlat-collected/<host>/<host>.lowlat), \
or all in one directory; and sosreports: each sosreport-* directory (holding sos_commands/, sos_logs/ or \
sos_reports/) and each *.tar.xz or *.tar.gz archive is one host, named by its hostname (sos_commands/host/hostname, \
else kernel.hostname of its sysctl -a, else the bundle's name). Under a directory, files named *.lowlat or starting \
with zstd's magic number are read as snapshots, three levels deep, and files named *.json as documents: a `bios` document (`lowlat bios read -o \
bios.json`) adds the BIOS attributes to its host's fingerprint (bios:ATTRIBUTE), and the measure-jitter, \
measure-timer and measure-membw documents of a result bundle (`lowlat measure ... --out DIR`) give the host's \
measured figures. A document belongs to the only snapshot in its directory or the one above \
(<host>/bios.json, <host>/bundle/measure-jitter.json), elsewhere to the host its `host` field names. Other \
documents (audit.json) are passed over, as the audit is made again from the snapshot.";

/// Options of `lowlat fleet report`.
#[derive(Debug, Args)]
#[command(after_help = concat!(
    "Examples:\n  lowlat fleet report lowlat-collected/\n  lowlat fleet report lowlat-collected/ --json > fleet.json\n  \
lowlat fleet report lowlat-collected/ --html fleet.html\n  lowlat fleet report --profile realtime-host rack1/ rack2/\n\n\
How hosts are judged: each snapshot is audited offline against the profile and reduced to its fingerprint \
(CPU model, sockets, cores, threads, NPS, memory population, BIOS vendor, version and date, kernel, \
command line, sysctls, power, services) and its rule verdicts. Hosts of the same system model, CPU model \
and number of sockets form a group. In each group every other field, and every rule, has a majority value \
when more than half of the hosts share it; a host with another value is an outlier, listed field by field \
(host-0412: memory.population: 15 of 16 slots ...; group: 16 of 16 slots ...). A field without a majority \
is listed as split and judges no one. Per measured figure (a jitter or timer document's worst CPU's p99 and \
max, ns; a membw document's best rate per kernel, MB/s), its distribution over the group's hosts, and the hosts \
outside Tukey's far-out fences (Q1 - 3 IQR, Q3 + 3 IQR; the IQR taken as at least 5 % of the median; 4 hosts \
or more). Then, per rule, how many hosts pass, warn, fail.\n\n\
Bad input does not stop the report: a damaged or hostile snapshot, one written by a lowlat with another \
snapshot schema, a second snapshot of a host name already read, a directory without snapshots, and a \
document that cannot be read or whose host has no snapshot are left out and listed under Skipped with the file and the reason. Snapshots are read one at a time per CPU \
(fewer when MemAvailable does not hold 1 GiB, the most a snapshot may inflate to, for each) and dropped once \
judged; a snapshot whose first entry is not manifest.json is refused before the rest is inflated.\n\n",
    "Exit codes: 0 every host agrees with its group, no measurement is outside and nothing was skipped; \
1 outliers or measurements outside found, or files skipped; 2 no report (an input cannot be read, no snapshot found or none readable, bad flag)."
))]
pub struct ReportArgs {
    /// Snapshot files, sosreports, or directories of them.
    #[arg(required = true, value_name = "DIR|FILE", long_help = INPUTS)]
    pub inputs: Vec<PathBuf>,

    /// The audit profile every host is judged by: low-latency, realtime-host, realtime-guest or
    /// throughput, TuneD's name for one, or a site profile file (its waivers apply to every
    /// host; waived hosts are counted apart).
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::profile::ProfileParser::ANY)]
    pub profile: ProfileArg,

    /// Print the `fleet` JSON document (schema_version, kind, tool, created, host "fleet", then
    /// profile, hosts, groups with their outliers and measurements, rules, skipped) instead of
    /// the page.
    #[arg(long)]
    pub json: bool,

    /// Also write the report as one self-contained HTML file (the same renderer as `lowlat
    /// report`; `lowlat report FILE` renders it again).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Options of `lowlat fleet plan`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat fleet plan lowlat-collected/ --out plans/\n  \
lowlat fleet plan --profile realtime-host lowlat-collected/ --out plans/ --force\n\n\
Each group of `lowlat fleet report` gets the plan `lowlat plan --out` would make on its first host \
(default partition and options), written to OUT/group-N/ with hosts.txt naming the hosts it is for. \
A group whose hosts differ in anything the plan depends on (every fingerprint field and rule but the \
firmware's identity, the memory population and the microcode) gets no plan: the differing hosts and \
fields are listed; make those hosts agree, or plan them one by one with `lowlat --snapshot FILE plan`.\n\n\
A host whose name is not a host name (RFC 1123: letters, digits, hyphens and dots) is left out of hosts.txt, \
saying so.\n\n\
Exit codes: 0 every group planned; 1 a group refused (the others are written), or a host left out of \
hosts.txt; 2 no plan (an input or \
OUT cannot be used, no snapshot readable, bad flag)."
)]
pub struct PlanArgs {
    /// Snapshot files, sosreports, or directories of them.
    #[arg(required = true, value_name = "DIR|FILE", long_help = INPUTS)]
    pub inputs: Vec<PathBuf>,

    /// The workload to plan for (and the audit profile the hosts are judged by).
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::profile::ProfileParser::PLAN)]
    pub profile: ProfileArg,

    /// Write each group's plan into DIR/group-N/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Write into group directories that are not empty, replacing lowlat's files.
    #[arg(long)]
    pub force: bool,
}

/// Runs `lowlat fleet`.
pub(crate) fn run(cli: &Cli, args: &FleetArgs) -> Result<u8> {
    cli.no_machine("fleet", "the snapshot files and directories")?;
    match &args.action {
        FleetAction::Report(args) => report(args),
        FleetAction::Plan(args) => plan(args),
    }
}

fn report(args: &ReportArgs) -> Result<u8> {
    let report = printers::read(&args.inputs, &args.profile.load()?)?;
    if let Some(file) = &args.html {
        std::fs::write(file, printers::html(&report)?)
            .with_context(|| format!("--html {}: cannot write the report", file.display()))?;
    }
    if args.json {
        print_json(&printers::document(&report))?;
    } else {
        print(&printers::text(&report))?;
    }
    Ok(exit::found(report.flagged()))
}

fn plan(args: &PlanArgs) -> Result<u8> {
    let profile = args.profile.load()?;
    let request = plan::request(&profile, &format!("--profile {}", args.profile))?;
    let report = printers::read(&args.inputs, &profile)?;
    let written = plan::write(&report, &request, &profile, &args.out, args.force)?;
    print(&printers::plans_text(&written, &report.skipped))?;
    let incomplete = written.iter().any(|(group, _)| group.incomplete());
    Ok(exit::found(incomplete || !report.skipped.is_empty()))
}

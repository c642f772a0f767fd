//! `lowlat bios read|apply|verify|revert`: BIOS settings through the server's BMC (Redfish).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::bmc::BmcArgs;
use super::output::{print, print_json};
use super::{Cli, exit};
use crate::bios::pipeline;
use crate::bios::settings;
use crate::machine::Machine;
use crate::report::bios as report;

const BIOS_HELP: &str = "Intents (INTENT=VALUE), resolved through the BMC's own attribute registry: \
smt=on|off, boost=on|off, profile=low-latency|custom, core-cstates=off, package-cstates=off, \
power-regulator=max-perf, energy-perf-bias=max-perf, uncore-frequency=max, \
determinism=performance|power, x2apic=off, llc-prefetch=off, nps=1|2|4. Any attribute may also be named \
directly (ATTRIBUTE=VALUE, as `bios read` lists them).\n\n\
Examples:\n  read -rs LOWLAT_BMC_PASSWORD; export LOWLAT_BMC_PASSWORD\n  \
lowlat bios read --bmc https://bmc1 --user admin --ca-file bmc1.pem -o bios.json\n  \
lowlat bios apply --bmc https://bmc1 --user admin --set smt=off --set boost=off --journal bmc1.journal\n  \
lowlat bios verify --bmc https://bmc1 --user admin --set smt=off --set boost=off --inband   # on the server, after its reset\n  \
lowlat bios revert --bmc https://bmc1 --user admin --journal bmc1.journal\n  \
lowlat plan --bios bios.json --out plan && lowlat bios apply --bmc https://bmc1 --user admin --plan plan/plan.json --journal bmc1.journal\n\n\
Exit codes: 0 done (verify: every value current or staged); 1 verify found drift; 2 could not \
run (bad flag, unreachable or refusing BMC, an attribute or value the BMC does not accept).";

/// Options of `lowlat bios`.
#[derive(Debug, Args)]
#[command(after_help = BIOS_HELP)]
pub struct BiosArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: BiosAction,
}

/// The BIOS actions.
#[derive(Debug, Subcommand)]
pub enum BiosAction {
    /// Read the BIOS attributes, the values pending until the next reset and the attribute
    /// registry from the BMC, and save them as one `bios` document.
    Read(ReadArgs),
    /// Stage attribute changes for the next reset, after journaling the values they replace.
    Apply(ApplyArgs),
    /// Check that each requested value is current, or staged for the next reset.
    Verify(VerifyArgs),
    /// Stage again the values a `bios apply` journal recorded.
    Revert(RevertArgs),
}

/// Options of `lowlat bios read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The BMC.
    #[command(flatten)]
    pub bmc: BmcArgs,

    /// Save the `bios` document here.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Print the `bios` document instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// The values `bios apply` stages and `bios verify` checks: given one by one, from a plan, or
/// both.
#[derive(Debug, Args)]
pub struct Wanted {
    /// A value: INTENT=VALUE (smt=off) or ATTRIBUTE=VALUE (ProcTurboMode=Disabled); repeat
    /// for more.
    #[arg(
        long = "set",
        value_name = "NAME=VALUE",
        required_unless_present = "plan"
    )]
    pub changes: Vec<String>,

    /// The BIOS changes of this plan.json (`lowlat plan --bios FILE`), made from this BMC's
    /// BIOS; with --set, those too.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
}

/// Options of `lowlat bios apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The BMC.
    #[command(flatten)]
    pub bmc: BmcArgs,

    /// The values to stage or check.
    #[command(flatten)]
    pub wanted: Wanted,

    /// Where to write the journal of the values replaced (for `bios revert`); it must not
    /// exist.
    #[arg(long, value_name = "FILE", required_unless_present = "dry_run")]
    pub journal: Option<PathBuf>,

    /// Show what would be staged, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Options of `lowlat bios verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The BMC.
    #[command(flatten)]
    pub bmc: BmcArgs,

    /// The values to stage or check.
    #[command(flatten)]
    pub wanted: Wanted,

    /// Also check what this machine's OS shows (run on the server after its reset, or with
    /// --root/--snapshot): SMT from the threads per core, boost from cpufreq, core C-states
    /// from the cpuidle states, NPS from the NUMA nodes per socket. A value the BMC reports
    /// current that the OS does not show is drift.
    #[arg(long)]
    pub inband: bool,

    /// Print a `bios-verify` document instead of the report.
    #[arg(long)]
    pub json: bool,
}

/// Options of `lowlat bios revert`.
#[derive(Debug, Args)]
pub struct RevertArgs {
    /// The BMC.
    #[command(flatten)]
    pub bmc: BmcArgs,

    /// The journal `bios apply` wrote.
    #[arg(long, value_name = "FILE")]
    pub journal: PathBuf,
}

/// Runs `lowlat bios`.
pub(crate) fn run(cli: &Cli, args: &BiosArgs) -> Result<u8> {
    match &args.action {
        BiosAction::Read(a) => read(a),
        BiosAction::Apply(a) => apply(a),
        BiosAction::Verify(a) => verify(cli, a),
        BiosAction::Revert(a) => revert(a),
    }
}

fn read(args: &ReadArgs) -> Result<u8> {
    let (_, state) = pipeline::connect(&args.bmc.login())?;
    if let Some(path) = &args.output {
        pipeline::save(&state, path)?;
    }
    if args.json {
        print_json(&state.document())?;
    } else {
        print(&report::read_text(&state))?;
    }
    Ok(exit::OK)
}

fn apply(args: &ApplyArgs) -> Result<u8> {
    let login = args.bmc.login();
    let (bmc, state) = pipeline::connect(&login)?;
    let changes = wanted(&args.wanted)?.changes(&state)?;
    let journal = args.journal.as_deref();
    let staged = pipeline::apply(&bmc, &state, &login, &changes, journal, args.dry_run)?;
    print(&report::apply_text(&staged))?;
    Ok(exit::OK)
}

fn verify(cli: &Cli, args: &VerifyArgs) -> Result<u8> {
    let (_, state) = pipeline::connect(&args.bmc.login())?;
    let changes = wanted(&args.wanted)?.changes(&state)?;
    let inband = (args.inband).then(|| cli.sysroot().map(|root| Machine::read(&root)));
    let checks = settings::verify(&state, &changes, inband.transpose()?.as_ref());
    if args.json {
        print_json(&report::verify_document(&state, &checks))?;
    } else {
        print(&report::verify_text(&state, &checks))?;
    }
    Ok(exit::found(settings::drifted(&checks)))
}

fn revert(args: &RevertArgs) -> Result<u8> {
    let values = pipeline::revert(&args.bmc.login(), &args.journal)?;
    print(&report::restaged_text(&values))?;
    Ok(exit::OK)
}

/// The values `--set` and `--plan FILE` ask for; the plan must have a BIOS part.
fn wanted(wanted: &Wanted) -> Result<pipeline::Wanted> {
    Ok(pipeline::Wanted {
        sets: wanted.changes.clone(),
        planned: wanted
            .plan
            .as_deref()
            .map(crate::plan::bios::planned)
            .transpose()?,
    })
}

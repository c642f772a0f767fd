//! `lowlat prove`: the flags as a prove run (a new one, `--resume DIR` or `--status DIR`),
//! `prove`'s state machine, and what it printed.

use anyhow::{Result, anyhow, bail};
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::apply::{confirm, require_root, writable_root};
use super::measure_common::LoadArgs;
use super::messages::note;
use super::output::{print, print_json};
use super::plan_options::PlanOptionArgs;
use super::profile::ProfileArg;
use super::{Cli, exit, values};
use crate::apply::command::SystemRunner;
use crate::plan::file::PlanFile;
use crate::plan::pipeline::Planned;
use crate::prove::arms::CheckArms;
use crate::prove::boot::Resume;
use crate::prove::state::{Rounds, State};
use crate::prove::{self, Outcome, Prove, ProveError, Start};
use crate::snapshot::SnapshotKind::Linux;

/// Rounds of each arm unless `--repeat` says otherwise (as check's default: compare needs
/// several runs per arm).
const DEFAULT_ROUNDS: u32 = 5;

/// Options of `lowlat prove`.
#[derive(Debug, Args)]
#[command(
    after_help = "What it does, step by step (the state is written to DIR/prove.json after each):\n  \
1. plan: the plan the options ask for (as `lowlat plan` makes it; or --plan FILE), held to this machine;\n  \
2. before: N interleaved rounds of check's jitter and timer runs, with their causes, on the CPUs the plan isolates, into DIR/before;\n  \
3. apply: the plan, journaled as `lowlat apply` does (with --revert and no kernel argument, only its run-time part);\n  \
4. reboot, when the plan needs one: lowlat-prove-resume.service (or, without systemd, the command to run) resumes after the boot, waits for the system to settle and checks the machine is the one planned for (--reboot reboots; else reboot yourself);\n  \
5. verify: the plan in effect, or prove stops (the after arm is never measured against a plan that did not take);\n  \
6. after: the same rounds into DIR/after (inside the runtime-isolation cpuset when the plan made one);\n  \
7. verdict: `lowlat compare DIR/before -- DIR/after`, printed and written to DIR/compare.json;\n  \
8. report: DIR/report.html, the verdict first;\n  \
9. revert (--revert): the machine put back, a trial.\n\n\
Ctrl-C or SIGTERM ends the step under way and stops with the machine as before or as planned; \
`--status DIR` says which, and what to do next. One prove runs at a time.\n\n\
Examples:\n  sudo lowlat prove --isolation runtime --isolate 1 --revert --yes --out /tmp/prove\n  \
sudo lowlat prove --isolate 2-7 --reboot --yes --out /var/tmp/prove   # boot isolation: resumes after the reboot\n  \
lowlat prove --status /var/tmp/prove\n\n\
Guide: docs/guide/prove.md.\n\n\
Exit codes: 0 done, and no primary endpoint worse (or waiting for the reboot); 1 done with an \
endpoint worse, or stopped (a plan that did not apply, a reboot that did not take, another \
machine after the reboot, Ctrl-C): the state says what the machine holds; 2 could not run (bad \
flags, another prove running, DIR not empty, not root)."
)]
pub struct ProveArgs {
    /// The plan to prove, as `lowlat plan` takes it.
    #[command(flatten)]
    pub plan: PlanOptionArgs,

    /// Prove this plan (plan.json of `lowlat plan --out DIR`) instead of making one from the
    /// options.
    #[arg(long = "plan", value_name = "FILE", conflicts_with_all = ["isolate", "housekeeping", "housekeeping_cores"])]
    pub plan_file: Option<PathBuf>,

    /// Length of each arm's jitter and of its timer measurement, all rounds together: 20s, 5m.
    #[arg(long, value_name = "D", default_value = "20s", value_parser = values::duration)]
    pub duration: Duration,

    /// The rounds each arm is measured in (jitter, timer, jitter, timer, ...), each a run of
    /// its own for compare.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_ROUNDS, value_parser = values::count(1u32, 1000))]
    pub repeat: u32,

    /// The loads beside the arms (as check's): each arm's rounds alternate idle and loaded,
    /// and the verdict compares loaded rounds with loaded rounds, idle with idle.
    #[command(flatten)]
    pub load: LoadArgs,

    /// Also run `measure net`'s loopback UDP ping-pong on the measured CPUs in each arm, one
    /// run per round, so that the verdict judges the round trips (loopback: no NIC on the way).
    #[arg(long)]
    pub net: bool,

    /// Where the run keeps its state, its plan, both arms, the comparison and the report
    /// (created; refused when it holds anything).
    #[arg(long, value_name = "DIR", default_value = "prove")]
    pub out: PathBuf,

    /// Put the machine back at the end: a trial.
    #[arg(long)]
    pub revert: bool,

    /// Reboot when the plan needs it (kernel arguments); without it prove says to.
    #[arg(long)]
    pub reboot: bool,

    /// Apply without asking (needed when standard input is not a terminal).
    #[arg(long, short)]
    pub yes: bool,

    /// Say where the run in DIR stands (its step, whether the machine is as before or as
    /// planned, why it stopped, the verdict) and change nothing.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub status: Option<PathBuf>,

    /// Continue the run in DIR: after its reboot (what the resume unit runs), or by hand after
    /// it stopped with the plan applied.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,

    /// Print the state as its JSON document (kind `prove`, DIR/prove.json) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `lowlat prove`.
pub(crate) fn run(cli: &Cli, args: &ProveArgs) -> Result<u8> {
    if let Some(dir) = &args.status {
        show(&State::load(dir)?, dir, args.json)?;
        return Ok(exit::OK);
    }
    let root = writable_root(cli, "prove")?;
    require_root(&root, false, rustix::process::geteuid().as_raw(), "prove")?;
    if let Some(dir) = &args.resume {
        let prove = Prove::new(&root, &SystemRunner, dir)?;
        let mut arms = arms(&State::load(&prove.dir)?.rounds, root.is_live())?;
        let outcome = prove::resume(&prove, &mut arms).map_err(|e| anyhow!("--resume {e}"))?;
        return ended(&outcome, &prove.dir, args.json);
    }
    if !root.is_live() {
        bail!(
            "--root: prove measures this machine's CPUs; on a directory tree only --status and --resume (up to the measurement) run"
        );
    }
    if !args.yes && !std::io::stdin().is_terminal() {
        bail!(
            "standard input is not a terminal: add --yes to apply the plan between the arms; nothing was measured or changed"
        );
    }
    let prove = Prove::new(&root, &SystemRunner, &args.out)?;
    let (plan_text, plan) = match &args.plan_file {
        Some(file) => PlanFile::read(file).map(|read| (read.text, read.plan))?,
        None => match super::plan_options::planned(&root, Linux, &args.plan.job()?)? {
            Planned::Linux(linux) => (linux.plan.to_json(), linux.plan),
            Planned::Freebsd(_) => bail!("prove runs on Linux"),
        },
    };
    let profile = args.plan.profile.to_string();
    let (load, net) = (args.load.asked(), args.net);
    let rounds = Rounds::of(&plan, profile, args.duration, args.repeat, load, net)?;
    let mut arms = arms(&rounds, true)?;
    let start = Start {
        plan,
        plan_text,
        rounds,
        revert: args.revert,
        reboot: args.reboot,
    };
    let ask = |preview: &crate::apply::ApplyReport| -> Result<bool, ProveError> {
        let due = preview.count(crate::apply::ItemStatus::WouldChange);
        let question = format!("Apply {due} change(s) of the plan between the arms?");
        Ok(args.yes || confirm(&question).map_err(|e| ProveError::Asked(e.to_string()))?)
    };
    let outcome = prove::start(&prove, start, &mut arms, ask)?;
    ended(&outcome, &prove.dir, args.json)
}

/// The arms `rounds` asks for, with its profile.
fn arms(rounds: &Rounds, live: bool) -> Result<CheckArms> {
    let profile = (rounds.profile.parse::<ProfileArg>())
        .map_err(|e| anyhow!("--profile {}: {e}", rounds.profile))?;
    Ok(CheckArms::of(rounds, profile.load()?, live)?)
}

/// Prints the state (text or JSON).
fn show(state: &State, dir: &Path, json: bool) -> Result<()> {
    if json {
        print_json(&state.document())
    } else {
        print(&prove::text::status(state, dir))
    }
}

/// Prints how the run ended this time (the verdict, the command to resume by hand, the
/// state), and its exit code.
fn ended(outcome: &Outcome, dir: &Path, json: bool) -> Result<u8> {
    match outcome {
        Outcome::Done(_, judged) if !json => print(&prove::verdict::text(judged))?,
        Outcome::RebootPending(_, Resume::ByHand(command)) => {
            note!("after the reboot, run as root: {command}");
        }
        _ => {}
    }
    show(outcome.state(), dir, json)?;
    Ok(exit::found(outcome.failed()))
}

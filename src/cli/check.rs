//! `lowlat check`: inventory, audit, a jitter run and a timer run on the CPUs that matter, and
//! the profile's measured targets, in one command.

use anyhow::Result;
use clap::Args;
use std::path::Path;
use std::time::Duration;

use super::measure_common::{BundleArgs, LoadArgs, hold_idle_limit, live_root, say_not_measured};
use super::messages::{error, note, warning};
use super::output::print;
use super::profile::ProfileArg;
use super::{Cli, exit, values};

use crate::bundle::Bundle;
use crate::check::targets::Target;
use crate::check::{self, Asked, CheckRequest, Step, Verdict};
use crate::document::Kind;
use crate::machine::CpuSet;
use crate::machine::vcpu_sharing::VcpuProbe;
use crate::report::check as printers;
use crate::report::measure::hardware as hardware_printers;

/// Options of `lowlat check`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat check\n  \
lowlat check --quick\n  \
lowlat check --profile realtime-host --duration 60s --out runs/after\n  \
lowlat check --cpus 2-7 --json\n\n\
What it does: reads the machine, audits it against --profile, then measures the CPUs that \
matter: --cpus, else the CPUs the machine isolates (isolcpus=, nohz_full=), else every CPU but \
the first. First a busy loop (gaps of 1 µs or more, as `measure jitter --threshold 1us`), then \
timer wake-ups every 1 ms at SCHED_FIFO 95 (as `measure timer --interval 1ms`), --duration \
each. The figures are held to the profile's measured targets (src/check/targets.table, each \
with its source): low-latency wants fewer than one interruption of 10 µs or more per minute on \
each CPU, realtime-host and realtime-guest a timer maximum below 50 µs; --target gives your own \
in their place. A rate is judged on the exact Poisson 95 % upper bound of each CPU's count, so a \
run must be long enough to prove it: by default each run lasts what proves the targets with no \
interruption seen (200 s each for low-latency; check says how long before it starts), and a \
target whose rate seen is below the limit but whose bound is not is NOT PROVEN, with the busy \
loop it needs; --quick is a 20 s smoke run. A target hwlat.max<LATENCY runs the kernel's hwlat \
tracer once, after the rounds (--hwlat-duration), and holds its largest gap to it. With --out the audit, both measurements, the \
inventory and the check itself are written as one bundle for `lowlat compare` and `lowlat \
report`.\n\n\
Exit codes: 0 PASS: the audit has no failures and every target is met; 1 FAIL: an audit \
failure, a missed target, or an incomplete measurement (Ctrl-C keeps and prints what was \
measured); 2 could not check (bad flag, unknown profile, --root/--snapshot: a check measures \
this machine); 3 NOT PROVEN: nothing failed, but the run was too short to prove a target, \
could not measure one (hwlat.max without the kernel's hwlat tracer), or was --quick.")]
pub struct CheckArgs {
    /// The profile to audit against and whose targets to meet: low-latency, realtime-host,
    /// realtime-guest or throughput (no targets: figures only), TuneD's name for one, or a
    /// site profile file (its `[check]` targets and duration, its waivers and partition).
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::profile::ProfileParser::ANY)]
    pub profile: ProfileArg,

    /// CPUs to measure (list form). Default: the machine's isolated CPUs, else every CPU but
    /// the first.
    #[arg(long, value_name = "LIST", value_parser = CpuSet::parse_some)]
    pub cpus: Option<CpuSet>,

    /// Length of each of the two measurements (jitter, timer): 20s, 5m. With --repeat N it is
    /// split into N rounds of D/N each. Default: what proves the targets on a quiet machine
    /// (the busy loop a rate target needs with no interruption seen, a tenth more: 200 s for
    /// low-latency; 20 s where the targets are maxima), said before the runs.
    #[arg(long, value_name = "D", allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Option<Duration>,

    /// A smoke run of 20 s each: it can find a failure (FAIL) or leave the targets not proven
    /// (NOT PROVEN, exit 3), never PASS.
    #[arg(long, conflicts_with = "duration")]
    pub quick: bool,

    /// Measure in N interleaved rounds (jitter, timer, jitter, timer, ...) of --duration/N
    /// each, every round saved as its own run: `lowlat compare` needs several runs per arm
    /// to tell a change from the machine's run-to-run variation (one run each is
    /// inconclusive). The targets are judged on all rounds together.
    #[arg(long, value_name = "N", default_value_t = check::DEFAULT_ROUNDS, allow_negative_numbers = true, value_parser = values::count(1u32, 1000))]
    pub repeat: u32,

    /// A target of your own instead of the profile's, repeatable: `timer.max<LATENCY`
    /// (`timer.max<20us`), `timer.p99<LATENCY` or `timer.p99.9<LATENCY` (a percentile of
    /// the timer latency), `hwlat.max<LATENCY` (the largest gap of the kernel's hwlat tracer,
    /// machine-wide: see --hwlat-duration), or `jitter.rate(LENGTH)<N/UNIT`, interruptions of
    /// LENGTH or more fewer than N per s, min or h (`jitter.rate(10us)<1/min`). Latencies and
    /// lengths take their unit (us, ms, s). A rate and a percentile are judged on each CPU's
    /// 95 % upper bound (exact Poisson; the binomial order statistic).
    #[arg(long = "target", value_name = "TARGET", value_parser = values::target)]
    pub(crate) targets: Vec<Target>,

    /// How long the kernel's hwlat tracer runs when a target names hwlat (`hwlat.max<LATENCY`):
    /// once, after the rounds, never beside them (it spins one CPU at a time with interrupts
    /// off). Default 60 s, half of hwlatdetect's 120 s: 60 bursts of 0.5 s, enough to see
    /// firmware that interrupts every minute or more often; rarer interruptions need longer
    /// (10m).
    #[arg(long, value_name = "D", allow_hyphen_values = true, value_parser = values::duration)]
    pub hwlat_duration: Option<Duration>,

    /// Do not trace the measured CPUs to give each gap, and each timer wake-up 20 µs late or
    /// more, its cause (by default a check explains where tracing is available: root,
    /// tracefs; see docs/guide/explain.md).
    #[arg(long)]
    pub no_explain: bool,

    /// The loads under which to check (docs/guide/check.md#under-load): each round is
    /// measured idle, then loaded, and the targets are judged on the loaded rounds.
    #[command(flatten)]
    pub load: LoadArgs,

    /// Print the versioned JSON document (kind `check`) instead of the report.
    #[arg(long)]
    pub json: bool,

    /// Also write the HTML report of the check (the machine, the audit, both measurements'
    /// charts) to this file, as `lowlat report` would from the bundle.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,

    /// Where the documents are kept.
    #[command(flatten)]
    pub bundle: BundleArgs,
}

/// Runs `lowlat check`: the flags as a request, check's pipeline (prepared, then measured),
/// then the documents, the bundle, the HTML and the report.
pub(crate) fn run(cli: &Cli, args: &CheckArgs) -> Result<u8> {
    let request = request(args)?;
    let root = live_root(cli)?;
    let no_hwlat = request.hwlat_missing(&root);
    note!(
        "{}",
        printers::before_runs(&request, args.duration.is_some(), no_hwlat.is_none())
    );
    if let Some(e) = no_hwlat {
        warning!("{e}: hwlat.max is not measured, and this check cannot PASS on it");
    }
    let mut check = check::prepare(root, request, say_probe)?;
    super::measure_common::say_session_notes(&check.session);
    // The clock block shows the running daemons' offsets, as inventory does.
    crate::machine::time_daemons::ask_time_daemons(&mut check.machine);
    let bundle = args.bundle.open(&check.session)?;
    note!("{}", printers::audit_said(&check));
    // Held for every round, so that the rounds are alike (the busy loop never idles anyway).
    let _limit = hold_idle_limit(check.session.root(), 0);
    let measured = check::run(&check, |step| match step {
        Step::Round(round, None) if !round.worth_saying() => {}
        step => note!("{}", printers::step_said(step)),
    })?;
    for skipped in (measured.load.iter()).flat_map(|load| &load.skipped) {
        warning!("{skipped}");
    }
    for run in &measured.jitter_runs {
        say_not_measured(&run.session);
    }
    for run in &measured.timer_runs {
        say_not_measured(&run.session);
    }
    let finished = printers::Finished::of(&check, &measured)?;
    let mut report = finished.report(&check, &measured);
    if let Some(bundle) = &bundle {
        report.complete &= save(bundle, &finished.documents);
    }
    if let Some(file) = &args.html {
        report.complete &= write_html(file, &finished.documents);
    }
    if args.json {
        print(&printers::document(&report).to_json()?)?;
    } else {
        print(&printers::text(&report))?;
    }
    Ok(match report.verdict() {
        Verdict::Pass => exit::OK,
        Verdict::Fail => exit::FAILURES,
        Verdict::NotProven => exit::NOT_PROVEN,
    })
}

/// The check the flags ask for (with a site profile's `[check]`); refuses rounds too short for
/// the timer run.
fn request(args: &CheckArgs) -> Result<CheckRequest> {
    let asked = Asked {
        profile: args.profile.load()?,
        cpus: args.cpus.clone(),
        duration: args.duration,
        quick: args.quick,
        rounds: args.repeat,
        targets: args.targets.clone(),
        explain: !args.no_explain,
        load: args.load.asked(),
        hwlat_duration: args.hwlat_duration,
    };
    Ok(asked.request()?)
}

/// Says on stderr what the probe of a guest's vCPUs found.
fn say_probe(probe: &VcpuProbe) {
    let said = hardware_printers::host_sharing_text(probe);
    for line in said.lines().filter(|l| !l.is_empty()) {
        note!("{}", line.trim_start());
    }
}

/// Writes the documents into the bundle of `--out`; says on stderr where, or why not.
/// Returns whether they were saved.
fn save(bundle: &Bundle, documents: &[(Kind, String)]) -> bool {
    match bundle.add_all(documents) {
        Ok(()) => {
            note!("saved the bundle: {}", bundle.dir().display());
            true
        }
        Err(e) => {
            error!(
                "--out {}: {e}; the report below is all there is of this check",
                bundle.dir().display()
            );
            false
        }
    }
}

/// Writes the HTML report of the documents to `--html FILE`; says on stderr where, or why
/// not. Returns whether it was written.
fn write_html(file: &Path, documents: &[(Kind, String)]) -> bool {
    let written = (printers::html_page(documents).map_err(anyhow::Error::from))
        .and_then(|page| Ok(std::fs::write(file, page)?));
    match &written {
        Ok(()) => note!("wrote {}", file.display()),
        Err(e) => error!("--html {}: {e:#}", file.display()),
    }
    written.is_ok()
}

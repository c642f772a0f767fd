//! `lowlat check`: inventory, audit, a jitter run and a timer run on the CPUs that matter, and
//! the profile's measured targets, in one command.

use anyhow::{Context, Result, anyhow};
use clap::Args;
use std::time::Duration;

use super::measure_common::{BundleArgs, hold_idle_limit, live_root, measured_completely};
use super::output::print;
use super::{Cli, exit, values};
use crate::audit::{self, profile};
use crate::check::targets::Target;
use crate::check::{self, targets};
use crate::document::Kind;
use crate::machine::kernel::stat;
use crate::machine::vcpu_sharing::VcpuProbe;
use crate::machine::{CpuSet, Machine, Reader};
use crate::measure::engines::c2c;
use crate::measure::engines::jitter::{self, DEFAULT_MAX_GAPS, JitterRequest};
use crate::measure::engines::timer::{self, DEFAULT_PRIORITY, TimerRequest};
use crate::measure::runner::place;
use crate::measure::runner::segments::Merge;
use crate::measure::runner::session::{Engine, Session};
use crate::measure::runner::threads::LoopSpec;
use crate::report::audit as audit_report;
use crate::report::check::{self as printers, CheckReport};
use crate::report::html::{self, Source};
use crate::report::inventory;
use crate::report::measure::explain;
use crate::report::measure::hardware as hardware_printers;
use crate::report::measure::timer as timer_printers;
use crate::report::measure::{document as measure_document, jitter as jitter_printers};
use crate::tuning::profile_name::ProfileName;

/// The jitter run counts gaps from this length, ns: short enough for the distribution that
/// `compare` and `report` use, far below the 10 µs of the targets.
const JITTER_THRESHOLD_NS: u64 = 1000;
/// The timer run's period, ns (cyclictest's default, 1 ms).
const TIMER_INTERVAL_NS: u64 = 1_000_000;
/// Memory the jitter run's gap buffers may take over all CPUs, bytes.
const GAP_BUFFERS_BYTES: usize = 256 << 20;
/// Rounds of a check unless `--repeat` says otherwise: 5 rounds of 4 s rather than one of
/// 20 s, so that two checks can be compared run by run (docs/statistics.md).
const DEFAULT_ROUNDS: u32 = 5;

/// The most time the c2c probe of a guest's vCPUs may take (two passes).
const VCPU_PROBE_BUDGET: Duration = Duration::from_secs(2);

/// Options of `lowlat check`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  lowlat check\n  \
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
run must be long enough to prove it (the report says how long). With --out the audit, \
both measurements, the inventory and the check itself are written as one bundle for \
`lowlat compare` and `lowlat report`.\n\n\
Exit codes: 0 the audit has no failures and every target is met; 1 a failure, a missed \
target, or an incomplete measurement (Ctrl-C keeps and prints what was measured); 2 could not \
check (bad flag, unknown profile, --root/--snapshot: a check measures this machine).")]
pub struct CheckArgs {
    /// The profile to audit against and whose targets to meet: low-latency, realtime-host,
    /// realtime-guest or throughput (no targets: figures only).
    #[arg(long, value_name = "NAME", value_enum, default_value_t = ProfileName::DEFAULT)]
    pub profile: ProfileName,

    /// CPUs to measure (list form). Default: the machine's isolated CPUs, else every CPU but
    /// the first.
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
    pub cpus: Option<CpuSet>,

    /// Length of each of the two measurements (jitter, timer): 20s, 5m. With --repeat N it is
    /// split into N rounds of D/N each.
    #[arg(long, value_name = "D", default_value = super::defaults::DURATION, allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Duration,

    /// Measure in N interleaved rounds (jitter, timer, jitter, timer, ...) of --duration/N
    /// each, every round saved as its own run: `lowlat compare` needs several runs per arm
    /// to tell a change from the machine's run-to-run variation (one run each is
    /// inconclusive). The targets are judged on all rounds together.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_ROUNDS, allow_negative_numbers = true, value_parser = values::count(1u32, 1000))]
    pub repeat: u32,

    /// A target of your own instead of the profile's, repeatable: `timer.max<LATENCY`
    /// (`timer.max<20us`) or `jitter.rate(LENGTH)<N/UNIT`, interruptions of LENGTH or more
    /// fewer than N per s, min or h (`jitter.rate(10us)<1/min`). Latencies and lengths take
    /// their unit (us, ms, s). A rate is judged on each CPU's 95 % upper bound.
    #[arg(long = "target", value_name = "TARGET", value_parser = target)]
    pub(crate) targets: Vec<Target>,

    /// Do not trace the measured CPUs to give each gap its cause (by default a check explains
    /// where tracing is available: root, tracefs; see docs/guide/explain.md).
    #[arg(long)]
    pub no_explain: bool,

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

/// Reads a `--target` (the grammar is check's, in `check::targets::parse`).
fn target(text: &str) -> Result<Target, String> {
    let length = |t: &str| {
        values::duration_with_unit(t).map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    };
    targets::parse(text, length, JITTER_THRESHOLD_NS)
}

/// Runs `lowlat check`.
pub(crate) fn run(cli: &Cli, args: &CheckArgs) -> Result<u8> {
    let profile = profile::load(args.profile).map_err(|e| anyhow!("--profile {e}"))?;
    let round = args.duration / args.repeat;
    if round < Duration::from_millis(10) {
        anyhow::bail!(
            "--duration {:?} --repeat {}: rounds of {:?} are too short for a timer run at 1 ms; \
             give rounds of at least 10ms",
            args.duration,
            args.repeat,
            round
        );
    }
    let root = live_root(cli)?;
    let machine = Machine::read(&root);
    let partition =
        audit::partition::choose(&machine, None).map_err(|e| anyhow!("the partition: {e}"))?;
    let online = machine.topology.online_cpus();
    // Where the affinity cannot be read, every online CPU: the session says what it refuses.
    let allowed = crate::measure::runner::harness::current_affinity().unwrap_or(online.clone());
    let audited = match machine.hypervisor {
        Some(_) => {
            let probe = vcpu_probe(&machine, &allowed);
            audit::run_probed(&machine, &profile, &partition, &probe)
        }
        None => audit::run(&machine, &profile, &partition),
    };
    let measured =
        crate::audit::partition::measured_cpus(&partition, &online, &allowed, args.cpus.as_ref());
    let session = Session::open(root, Engine::Jitter, Some(&measured.cpus)).with_context(|| {
        match &args.cpus {
            Some(cpus) => format!("--cpus {cpus}"),
            None => format!(
                "CPU {} ({}); choose others with --cpus",
                measured.cpus.to_list(),
                measured.why
            ),
        }
    })?;
    let bundle = args.bundle.open(&session)?;
    let counts = audited.counts();
    eprintln!(
        "lowlat check: audit against {}: {} fail, {} warn, {} pass",
        profile.info.name, counts.fail, counts.warn, counts.pass
    );
    // In a VM, the host's share of the measured vCPUs (steal) is read around both runs.
    let read_stat = || {
        machine
            .hypervisor
            .as_ref()
            .and_then(|_| stat::read(&mut Reader::new(session.root())).get().cloned())
    };
    let stat_before = read_stat();
    let spec = LoopSpec {
        duration: round,
        load: CpuSet::new(),
        inject: None,
    };
    let per_cpu = GAP_BUFFERS_BYTES / 16 / session.cpus.len().max(1);
    let mut jitter_runs = Vec::new();
    let mut timer_runs = Vec::new();
    let mut complete = true;
    // Held for every round, so that the rounds are alike (the busy loop never idles anyway).
    let _limit = hold_idle_limit(session.root(), 0);
    for number in 1..=args.repeat {
        if args.repeat > 1 {
            eprintln!("lowlat check: round {number} of {}", args.repeat);
        }
        let jitter_run = jitter::run(
            &session,
            JitterRequest {
                spec: spec.clone(),
                threshold_ns: JITTER_THRESHOLD_NS,
                priority: None,
                max_gaps: per_cpu.clamp(50_000, DEFAULT_MAX_GAPS),
                explain: !args.no_explain,
            },
        )?;
        complete &= measured_completely(&jitter_run.session, |cpu| cpu.record.full);
        jitter_runs.push(jitter_run);
        if !complete {
            break;
        }
        let timer_run = timer::run(
            &session,
            TimerRequest {
                spec: spec.clone(),
                interval_ns: TIMER_INTERVAL_NS,
                priority: DEFAULT_PRIORITY,
                histogram_buckets: 0,
            },
        )?;
        complete &= measured_completely(&timer_run.session, |_| false);
        timer_runs.push(timer_run);
        if !complete {
            break;
        }
    }
    let all_jitter = merged(&jitter_runs).expect("the first round runs jitter");
    let all_timer = merged(&timer_runs);
    let mut figures = check::figures(Some(&all_jitter), all_timer.as_ref());
    if let (Some(before), Some(after)) = (&stat_before, &read_stat()) {
        check::add_steal(&mut figures, before, after);
    }
    let wanted = if args.targets.is_empty() {
        targets::of_profile(profile.info.name)
    } else {
        args.targets.clone()
    };
    let verdicts = check::evaluate(&wanted, &figures);
    let causes = all_jitter.explanation.as_ref().map(explain::json);
    let report = CheckReport {
        machine: &machine,
        audit: &audited,
        profile: profile.info,
        measured: &measured,
        duration_ns: u64::try_from(args.duration.as_nanos()).unwrap_or(u64::MAX),
        rounds: args.repeat,
        timer_interval_ns: TIMER_INTERVAL_NS,
        figures: &figures,
        targets: &verdicts,
        complete,
        causes: causes.as_ref(),
    };
    let documents = documents(&session, &report, &jitter_runs, &timer_runs)?;
    if let Some(bundle) = &bundle {
        let saved = documents.iter().try_for_each(|(kind, json)| match kind {
            // The bundle's one inventory, replaced (opening the bundle wrote it).
            Kind::Inventory => bundle.put(*kind, json).map(drop),
            _ => bundle.add(*kind, json).map(drop),
        });
        match saved {
            Ok(()) => eprintln!("lowlat check: saved the bundle: {}", bundle.dir().display()),
            Err(e) => {
                eprintln!(
                    "lowlat: error: --out {}: {e}; the report below is all there is of this check",
                    bundle.dir().display()
                );
                complete = false;
            }
        }
    }
    if let Some(file) = &args.html {
        let mut sources = Vec::new();
        for (kind, json) in &documents {
            sources.extend(Source::parse_all(&format!("{kind}.json"), json)?);
        }
        let written = html::render(&sources, &[])
            .map_err(anyhow::Error::from)
            .and_then(|page| Ok(std::fs::write(file, page)?));
        match written {
            Ok(()) => eprintln!("lowlat check: wrote {}", file.display()),
            Err(e) => {
                eprintln!("lowlat: error: --html {}: {e:#}", file.display());
                complete = false;
            }
        }
    }
    let report = CheckReport { complete, ..report };
    if args.json {
        print(&printers::document(&report).to_json()?)?;
    } else {
        print(&printers::render_text(&report))?;
    }
    Ok(if report.failures().is_empty() {
        exit::OK
    } else {
        exit::FAILURES
    })
}

/// The two passes of the short c2c probe of a guest's vCPUs (at most [`VCPU_PROBE_BUDGET`] in
/// all) over the vCPUs this process may run on; a probe that cannot run says why.
fn vcpu_probe(machine: &Machine, allowed: &CpuSet) -> VcpuProbe {
    let places: Vec<_> = (place::places(&machine.topology).into_iter())
        .filter(|p| allowed.contains(p.cpu))
        .collect();
    let probe = c2c::probe(&places, 2, VCPU_PROBE_BUDGET).unwrap_or_else(|e| VcpuProbe {
        probes: Vec::new(),
        no_claim: Some(e.to_string()),
    });
    let said = hardware_printers::host_sharing_text(&probe);
    for line in said.lines().filter(|l| !l.is_empty()) {
        eprintln!("lowlat check: {}", line.trim_start());
    }
    probe
}

/// The rounds of one measurement as one run (the targets are judged on all of them).
fn merged<R: Merge + Clone>(rounds: &[R]) -> Option<R> {
    let (first, rest) = rounds.split_first()?;
    let mut all = first.clone();
    for round in rest {
        all.merge(round.clone());
    }
    Some(all)
}

/// The documents of a check, in bundle order: the inventory, the audit, each round's jitter
/// and timer runs (interleaved, as measured), the check.
fn documents(
    session: &Session,
    report: &CheckReport<'_>,
    jitter_runs: &[jitter::JitterRun],
    timer_runs: &[timer::TimerRun],
) -> Result<Vec<(Kind, String)>> {
    let host = crate::document::host_name(session.root());
    let mut documents = vec![
        (
            Kind::Inventory,
            inventory::document(report.machine).to_json()?,
        ),
        (
            Kind::Audit,
            audit_report::document(
                report.machine,
                report.audit,
                report.profile,
                &audit_report::View::default(),
            )
            .to_json()?,
        ),
    ];
    for (round, jitter_run) in jitter_runs.iter().enumerate() {
        let doc = measure_document(
            Kind::MeasureJitter,
            host.clone(),
            jitter_run.session.environment.clone(),
            jitter_printers::result(jitter_run),
        );
        documents.push((Kind::MeasureJitter, doc.to_json()?));
        if let Some(run) = timer_runs.get(round) {
            let doc = measure_document(
                Kind::MeasureTimer,
                host.clone(),
                run.session.environment.clone(),
                timer_printers::result(run),
            );
            documents.push((Kind::MeasureTimer, doc.to_json()?));
        }
    }
    documents.push((Kind::Check, printers::document(report).to_json()?));
    Ok(documents)
}

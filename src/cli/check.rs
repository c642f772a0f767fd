//! `lowlat check`: inventory, audit, a jitter run and a timer run on the CPUs that matter, and
//! the profile's measured targets, in one command.

use anyhow::{Result, anyhow};
use clap::Args;
use std::path::Path;
use std::time::Duration;

use super::measure_common::{BundleArgs, LoadArgs, hold_idle_limit, live_root, say_not_measured};
use super::messages::{error, note, warning};
use super::output::print;
use super::profile::ProfileArg;
use super::{Cli, exit, values};
use crate::audit::Profile;

use crate::bundle::Bundle;
use crate::check::targets::{self, Target};
use crate::check::{self, CheckError, CheckRequest, Verdict};
use crate::document::Kind;
use crate::machine::CpuSet;
use crate::machine::vcpu_sharing::VcpuProbe;
use crate::report::check as printers;
use crate::report::check_load::LoadBody;
use crate::report::html::{self, Budget, Source};
use crate::report::measure::explain;
use crate::report::measure::hardware as hardware_printers;

/// Rounds of a check unless `--repeat` says otherwise: 5 rounds of 4 s rather than one of
/// 20 s, so that two checks can be compared run by run (docs/statistics.md).
const DEFAULT_ROUNDS: u32 = 5;

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
loop it needs; --quick is a 20 s smoke run. With --out the audit, both measurements, the \
inventory and the check itself are written as one bundle for `lowlat compare` and `lowlat \
report`.\n\n\
Exit codes: 0 PASS: the audit has no failures and every target is met; 1 FAIL: an audit \
failure, a missed target, or an incomplete measurement (Ctrl-C keeps and prints what was \
measured); 2 could not check (bad flag, unknown profile, --root/--snapshot: a check measures \
this machine); 3 NOT PROVEN: nothing failed, but the run was too short to prove a target (or \
was --quick).")]
pub struct CheckArgs {
    /// The profile to audit against and whose targets to meet: low-latency, realtime-host,
    /// realtime-guest or throughput (no targets: figures only), TuneD's name for one, or a
    /// site profile file (its `[check]` targets and duration, its waivers and partition).
    #[arg(long, value_name = "NAME|FILE", default_value = "low-latency", value_parser = super::profile::ProfileParser::ANY)]
    pub profile: ProfileArg,

    /// CPUs to measure (list form). Default: the machine's isolated CPUs, else every CPU but
    /// the first.
    #[arg(long, value_name = "LIST", value_parser = values::cpu_list)]
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
    #[arg(long, value_name = "N", default_value_t = DEFAULT_ROUNDS, allow_negative_numbers = true, value_parser = values::count(1u32, 1000))]
    pub repeat: u32,

    /// A target of your own instead of the profile's, repeatable: `timer.max<LATENCY`
    /// (`timer.max<20us`), `timer.p99<LATENCY` or `timer.p99.9<LATENCY` (a percentile of
    /// the timer latency), or `jitter.rate(LENGTH)<N/UNIT`, interruptions of LENGTH or more
    /// fewer than N per s, min or h (`jitter.rate(10us)<1/min`). Latencies and lengths take
    /// their unit (us, ms, s). A rate and a percentile are judged on each CPU's 95 % upper
    /// bound (exact Poisson; the binomial order statistic).
    #[arg(long = "target", value_name = "TARGET", value_parser = values::target)]
    pub(crate) targets: Vec<Target>,

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
    note!("{}", duration_note(args, &request));
    let mut check = check::prepare(root, request, say_probe).map_err(|e| named(e, args))?;
    super::measure_common::say_session_notes(&check.session);
    // The clock block shows the running daemons' offsets, as inventory does.
    crate::machine::time_daemons::ask_time_daemons(&mut check.machine);
    let bundle = args.bundle.open(&check.session)?;
    let counts = check.audit.counts();
    note!(
        "audit against {}: {} fail, {} warn, {} pass",
        check.profile.info.name,
        counts.fail,
        counts.warn,
        counts.pass
    );
    // Held for every round, so that the rounds are alike (the busy loop never idles anyway).
    let _limit = hold_idle_limit(check.session.root(), 0);
    let measured = check::run(&check, |round, loaded| match loaded {
        Some(true) => note!("{round}: loaded"),
        Some(false) => note!("{round}: idle"),
        None if round.worth_saying() => note!("{round}"),
        None => {}
    })?;
    if let Some(load) = &measured.load {
        for skipped in &load.skipped {
            warning!(
                "--load {}: {}; its rounds were not loaded as asked",
                skipped.kind.name(),
                skipped.why
            );
        }
    }
    for run in &measured.jitter_runs {
        say_not_measured(&run.session);
    }
    for run in &measured.timer_runs {
        say_not_measured(&run.session);
    }
    let causes = measured.explanation.as_ref().map(explain::json);
    let timer_causes = measured.timer_explanation.as_ref().map(explain::json);
    let mut documents = printers::run_documents(&check, &measured)?;
    let load = (measured.load.as_ref()).map(|load| LoadBody::of(load, &documents));
    let mut report = printers::of_run(&check, &measured, causes.as_ref(), timer_causes.as_ref());
    report.load = load.as_ref();
    documents.push((Kind::Check, printers::document(&report).to_json()?));
    if let Some(bundle) = &bundle {
        report.complete &= save(bundle, &documents);
    }
    if let Some(file) = &args.html {
        report.complete &= write_html(file, &documents)?;
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

/// The targets a check holds its figures to: `--target`s, else a site profile's, else the
/// built-in profile's.
fn targets_of(args: &CheckArgs, profile: &Profile) -> Result<Vec<Target>> {
    if !args.targets.is_empty() {
        return Ok(args.targets.clone());
    }
    if let Some(site) = &profile.site {
        let targets = super::profile::site_targets(site).map_err(|e| anyhow!("--profile {e}"))?;
        if !targets.is_empty() {
            return Ok(targets);
        }
    }
    Ok(targets::of_profile(profile.info.name))
}

/// The length of each run: `--duration`, `--quick`'s, a site profile's duration, else what
/// proves the targets.
fn duration_of(args: &CheckArgs, profile: &Profile, targets: &[Target]) -> Result<Duration> {
    let site = match &profile.site {
        Some(site) => super::profile::site_duration(site).map_err(|e| anyhow!("--profile {e}"))?,
        None => None,
    };
    Ok(match (args.duration, args.quick, site) {
        (Some(duration), _, _) => duration,
        (None, true, _) => check::QUICK,
        (None, false, Some(duration)) => duration,
        (None, false, None) => check::duration_to_prove(targets),
    })
}

/// What check says before the runs: how long it takes and, where a rate target needs a longer
/// busy loop than the runs give, that this check cannot pass it.
fn duration_note(args: &CheckArgs, request: &CheckRequest) -> String {
    let each = request.duration.as_secs_f64();
    let targets = &request.targets;
    let mut said = match &request.load {
        None => format!(
            "check takes about {:.0} s: {each:.0} s of busy loop and {each:.0} s of timer \
             wake-ups per CPU{}",
            2.0 * each,
            match request.rounds {
                0 | 1 => String::new(),
                n => format!(", in {n} rounds"),
            }
        ),
        Some(load) => format!(
            "check takes about {:.0} s: {each:.0} s of busy loop and {each:.0} s of timer \
             wake-ups per CPU idle, and as much again under load ({}), in {} idle and {} loaded \
             rounds in turn",
            4.0 * each,
            load.names(),
            request.rounds.max(1),
            request.rounds.max(1)
        ),
    };
    let hardest = (targets.iter())
        .filter_map(|target| Some((target, target.seconds_to_prove()?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((target, needed)) = hardest {
        let proves = format!(
            "{needed:.0} s of busy loop per CPU prove {} below {} with none seen",
            target.metric.describe(),
            target.below
        );
        if needed > each {
            said += &format!(
                "; {proves}: this run can say FAIL or NOT PROVEN, not PASS (without --quick \
                 and --duration: {} s each)",
                check::duration_to_prove(targets).as_secs()
            );
        } else {
            said += &format!(" ({proves})");
            if args.duration.is_none() {
                said += &format!(
                    "; --quick for a {} s smoke run that can only say FAIL or NOT PROVEN",
                    check::QUICK.as_secs()
                );
            }
        }
    }
    said
}

/// The check the flags ask for; refuses rounds too short for the timer run.
fn request(args: &CheckArgs) -> Result<CheckRequest> {
    let profile = args.profile.load()?;
    let targets = targets_of(args, &profile)?;
    let request = CheckRequest {
        cpus: args.cpus.clone(),
        duration: duration_of(args, &profile, &targets)?,
        profile,
        rounds: args.repeat,
        targets,
        explain: !args.no_explain,
        quick: args.quick,
        load: args.load.asked(),
    };
    let round = request.round();
    if round < check::MIN_ROUND {
        anyhow::bail!(
            "--duration {:?} --repeat {}: rounds of {:?} are too short for a timer run at 1 ms; \
             give rounds of at least {:?}",
            request.duration,
            args.repeat,
            round,
            check::MIN_ROUND
        );
    }
    Ok(request)
}

/// A check's error with the flag it comes from.
fn named(error: CheckError, args: &CheckArgs) -> anyhow::Error {
    match error {
        CheckError::Session { measured, source } => {
            anyhow::Error::new(source).context(match &args.cpus {
                Some(cpus) => format!("--cpus {cpus}"),
                None => format!(
                    "CPU {} ({}); choose others with --cpus",
                    measured.cpus.to_list(),
                    measured.why
                ),
            })
        }
        e => e.into(),
    }
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
    let saved = documents.iter().try_for_each(|(kind, json)| match kind {
        // The bundle's one inventory, replaced (opening the bundle wrote it).
        Kind::Inventory => bundle.put(*kind, json).map(drop),
        _ => bundle.add(*kind, json).map(drop),
    });
    match saved {
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
fn write_html(file: &Path, documents: &[(Kind, String)]) -> Result<bool> {
    let mut sources = Vec::new();
    for (kind, json) in documents {
        sources.extend(Source::parse_all(
            &format!("{kind}.json"),
            json.clone(),
            &mut Budget::default(),
        )?);
    }
    let written = html::render(&sources, &[])
        .map_err(anyhow::Error::from)
        .and_then(|page| Ok(std::fs::write(file, page)?));
    Ok(match written {
        Ok(()) => {
            note!("wrote {}", file.display());
            true
        }
        Err(e) => {
            error!("--html {}: {e:#}", file.display());
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::partition::{self, MeasuredCpus};
    use crate::check::CpuFigures;
    use crate::machine::Machine;
    use crate::measure::load::{Kind as LoadKind, KindIntensity, LoadAsked, RoundLoad};
    use crate::report::check::CheckReport;
    use crate::report::check_load::{CauseAdded, LoadEffect};
    use crate::test_tree::TestTree;
    use clap::Parser;

    /// The flags of `lowlat check ARGS…`.
    fn args(line: &[&str]) -> CheckArgs {
        let line = ["lowlat", "check"].iter().chain(line);
        match Cli::try_parse_from(line).unwrap().command {
            super::super::Command::Check(args) => args,
            _ => unreachable!("a check"),
        }
    }

    /// What `lowlat check ARGS…` says on the tuned fixture (epyc7f32-2s-tuned, with the
    /// `isolcpus=managed_irq` its guide lacked and the plan adds: an audit without failure),
    /// its stderr note then its report, with the figures of a quiet CPU given here (not
    /// measured: no 10 µs interruption, a busy loop 2 % shorter than the run, a timer at
    /// 2-4 µs), as the guide's examples show them.
    fn example(line: &[&str]) -> (String, Verdict) {
        let args = args(line);
        let request = request(&args).unwrap();
        let tree = TestTree::fixture("epyc7f32-2s-tuned");
        let cmdline = std::fs::read_to_string(tree.join("/proc/cmdline")).unwrap();
        let cmdline = format!("{} isolcpus=managed_irq,1-7,9-15\n", cmdline.trim_end());
        tree.write("/proc/cmdline", cmdline);
        let machine = Machine::read(&tree.root());
        let profile = request.profile.clone();
        let chosen = partition::choose(&machine, None).unwrap();
        let audit = crate::audit::run(&machine, &profile, &chosen);
        let cpus = args.cpus.clone().unwrap();
        let measured = MeasuredCpus {
            why: format!("--cpus {}", cpus.to_list()),
            cpus,
        };
        let seconds = request.duration.as_secs_f64() * 0.98;
        let figures: Vec<CpuFigures> = (measured.cpus.iter())
            .map(|cpu| CpuFigures {
                cpu,
                jitter_seconds: seconds,
                interruptions: 0,
                long_interruptions: 0,
                max_interruption_ns: 0,
                timer_samples: (seconds * 1000.0) as u64,
                timer_max_ns: 4_100,
                timer_p99_ns: 2_300,
                steal_ms: None,
                gaps_ns: Vec::new(),
                timer_latency: None,
            })
            .collect();
        // Under load (`--load`): the figures above are the idle rounds'; the loaded rounds
        // see four interruptions of 11-12 µs and a timer at 3-7 µs, as the guide's example shows.
        let load = request
            .load
            .as_ref()
            .map(|asked| loaded_example(asked, &figures));
        let figures = match &load {
            Some(_) => (figures.iter())
                .map(|f| CpuFigures {
                    interruptions: 4,
                    long_interruptions: 4,
                    max_interruption_ns: 12_400,
                    timer_max_ns: 7_300,
                    timer_p99_ns: 6_800,
                    gaps_ns: vec![12_100, 12_400, 11_800, 10_900],
                    ..f.clone()
                })
                .collect(),
            None => figures,
        };
        let verdicts = check::evaluate(&request.targets, &figures);
        let report = CheckReport {
            machine: &machine,
            audit: &audit,
            profile: profile.info,
            measured: &measured,
            duration_ns: u64::try_from(request.duration.as_nanos()).unwrap(),
            rounds: request.rounds,
            timer_interval_ns: check::TIMER_INTERVAL_NS,
            figures: &figures,
            targets: &verdicts,
            complete: true,
            quick: request.quick,
            causes: None,
            timer_causes: None,
            load: load.as_ref(),
        };
        let said = format!(
            "$ lowlat check {}\n{}{}",
            line.join(" "),
            super::super::messages::lines(
                super::super::messages::Level::Note,
                &duration_note(&args, &request)
            ),
            printers::text(&report)
        );
        (said, report.verdict())
    }

    /// The load of the guide's example under `asked` (mem and ipi on CPU 0), with the idle
    /// rounds' `idle` figures: each round's intensity and compare's judgement given here.
    fn loaded_example(asked: &LoadAsked, idle: &[CpuFigures]) -> LoadBody {
        let round = |loaded: bool| RoundLoad {
            loaded,
            as_asked: true,
            kinds: (asked.kinds.iter())
                .map(|&kind| KindIntensity {
                    kind,
                    threads: 1,
                    rate: match (loaded, kind) {
                        (false, _) => 0.0,
                        (true, LoadKind::Mem) => 9.84,
                        (true, _) => 212_400.0,
                    },
                    unit: kind.unit().to_string(),
                    over: None,
                    failed: None,
                })
                .collect(),
            ipis_received_per_s: Some(if loaded { 14_200.0 } else { 3.2 }),
        };
        let effect =
            |endpoint: &str, unit: &str, idle: f64, loaded: f64, verdict: &str| LoadEffect {
                measurement: "timer wake-up latencies".into(),
                endpoint: endpoint.into(),
                unit: unit.into(),
                idle,
                loaded,
                ratio: loaded / idle,
                verdict: verdict.into(),
            };
        LoadBody {
            kinds: asked.kinds.clone(),
            level: asked.level,
            cpus: "0".into(),
            skipped: Vec::new(),
            loaded_as_asked: true,
            rounds: vec![round(false), round(true), round(false), round(true)],
            idle_figures: idle.to_vec(),
            effects: vec![
                effect("median of CPUs' medians", "ns", 1_900.0, 3_100.0, "worse"),
                effect("worst CPU's p99", "ns", 2_300.0, 6_800.0, "worse"),
            ],
            causes_added: vec![CauseAdded {
                cause: "IPI: TLB shootdown".into(),
                idle_per_minute: 0.5,
                loaded_per_minute: 41.0,
                verdict: "worse".into(),
            }],
            notes: Vec::new(),
        }
    }

    /// The console block of `file` after the comment `<!-- check-example: NAME`.
    fn block(file: &str, name: &str) -> String {
        let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let marker = format!("<!-- check-example: {name}");
        let (_, after) = text
            .split_once(&marker)
            .unwrap_or_else(|| panic!("{file} has no {marker}"));
        let (_, block) = after.split_once("```console\n").unwrap();
        block.split_once("```").unwrap().0.to_string()
    }

    /// Issue 43 item 5: the README and the guide show a tuned machine reaching PASS with the
    /// default duration, and a --quick run that is NOT PROVEN, byte for byte as check prints
    /// them.
    #[test]
    fn the_readme_and_the_guide_show_a_pass_and_a_run_not_proven() {
        let (pass, verdict) = example(&["--cpus", "3"]);
        assert_eq!(verdict, Verdict::Pass, "{pass}");
        let (quick, verdict) = example(&["--cpus", "3", "--quick"]);
        assert_eq!(verdict, Verdict::NotProven, "{quick}");
        let (short, verdict) = example(&["--cpus", "3", "--duration", "60s"]);
        assert_eq!(verdict, Verdict::NotProven, "{short}");

        assert_eq!(block("README.md", "pass"), pass);
        assert_eq!(block("docs/guide/check.md", "pass"), pass);
        assert_eq!(block("docs/guide/check.md", "not-proven"), short);
    }

    /// Issue 48: the guide shows a check under load as check prints it: each round's
    /// intensity, the idle figures beside the loaded ones, the load's effect, and the targets
    /// judged on the loaded rounds.
    #[test]
    fn the_guide_shows_a_check_under_load() {
        let line = [
            "--cpus",
            "3",
            "--duration",
            "200s",
            "--repeat",
            "2",
            "--load",
            "mem,ipi",
        ];
        let (loaded, verdict) = example(&line);
        assert_eq!(verdict, Verdict::Fail, "{loaded}");
        assert_eq!(block("docs/guide/check.md", "under-load"), loaded);
    }
}

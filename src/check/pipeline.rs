//! The pipeline of `lowlat check`, from a typed request to a typed result, in two steps:
//! [`prepare`] reads the machine, audits it against the profile, chooses the CPUs that matter
//! and opens a measurement session on them; [`run`] measures them in rounds (a jitter run, then
//! a timer run, each round), then, when a target names hwlat, runs the hwlat tracer once
//! (`super::hwlat`), turns the runs into each CPU's figures and holds the figures to the
//! targets. Between the two steps the caller opens what must not cost a measurement when it
//! fails (the bundle of `--out`). Nothing here prints: the caller is told of the steps worth
//! saying, and writes the documents, the bundle, the HTML and the report, whose printers sit
//! above `check`.

use std::time::Duration;
use thiserror::Error;

use super::hwlat::{self as hwlat_phase, HwlatFigures, HwlatPhase};
use super::targets::{self, Target};
use super::{CpuFigures, TargetVerdict};
use crate::audit::partition::{self, AuditPartition, MeasuredCpus};
use crate::audit::profile::Profile;
use crate::audit::{self, Audit};
use crate::machine::kernel::stat;
use crate::machine::vcpu_sharing::VcpuProbe;
use crate::machine::{CpuSet, Machine, Reader};
use crate::measure::engines::c2c;
use crate::measure::engines::hwlat;
use crate::measure::engines::jitter::{self, DEFAULT_MAX_GAPS, JitterRequest, JitterRun};
use crate::measure::engines::loops::LoopError;
use crate::measure::engines::timer::{
    self, DEFAULT_EXPLAIN_ABOVE_NS, DEFAULT_PRIORITY, TimerRequest, TimerRun,
};
use crate::measure::load::{LoadAsked, LoadRefused, LoadRequest, Loads, RoundLoad, Skipped};
use crate::measure::runner::cpus::CpuChoiceError;
use crate::measure::runner::harness;
use crate::measure::runner::place;
use crate::measure::runner::rounds::{self, After, Round};
use crate::measure::runner::segments::Merge;
use crate::measure::runner::session::{Engine, Session};
use crate::measure::runner::threads::LoopSpec;
use crate::measure::trace::Explanation;
use crate::sysroot::SysRoot;
use crate::tuning::partition::PartitionError;

/// The jitter run counts gaps from this length, ns: short enough for the distribution that
/// `compare` and `report` use, far below the 10 µs of the targets.
pub(crate) const JITTER_THRESHOLD_NS: u64 = 1000;
/// The timer run's period, ns (cyclictest's default, 1 ms).
pub(crate) const TIMER_INTERVAL_NS: u64 = 1_000_000;
/// The shortest round a check measures: ten periods of the timer run.
pub(crate) const MIN_ROUND: Duration = Duration::from_millis(10);
/// Memory the jitter run's gap buffers may take over all CPUs, bytes.
const GAP_BUFFERS_BYTES: usize = 256 << 20;
/// The most time the c2c probe of a guest's vCPUs may take (two passes).
const VCPU_PROBE_BUDGET: Duration = Duration::from_secs(2);

/// What a check is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct CheckRequest {
    /// The profile to audit against and whose targets to meet (a built-in one, or a site
    /// profile laid over one).
    pub profile: Profile,
    /// The CPUs to measure; `None`: the rule of the CPUs that matter
    /// (`audit::partition::measured_cpus`).
    pub cpus: Option<CpuSet>,
    /// Length of each of the two measurements (jitter, timer), all rounds together.
    pub duration: Duration,
    /// The rounds the measurements are split into (jitter, timer, jitter, timer, ...), 1 or
    /// more; each round is a run of its own.
    pub rounds: u32,
    /// Targets to meet instead of the profile's; empty: the profile's.
    pub targets: Vec<Target>,
    /// Whether it is a `--quick` smoke run, which can fail a machine but not prove it.
    pub quick: bool,
    /// Whether the runs trace the measured CPUs to give each jitter gap, and each timer
    /// wake-up 20 µs late or more, its cause.
    pub explain: bool,
    /// Loads on the housekeeping CPUs: with them, every round is measured twice, idle then
    /// loaded, and the targets are judged on the loaded rounds.
    pub load: Option<LoadAsked>,
    /// How long the hwlat tracer runs after the rounds when a target names hwlat
    /// ([`super::hwlat::DEFAULT_DURATION`] unless `--hwlat-duration`).
    pub hwlat_duration: Duration,
}

impl CheckRequest {
    /// The length of one round: the duration split over the rounds.
    pub(crate) fn round(&self) -> Duration {
        self.duration / self.rounds.max(1)
    }

    /// Why the hwlat tracer cannot run on the machine under `root` when a target names hwlat
    /// (said before the runs, not after them); `None` when it can, or no target needs it.
    pub(crate) fn hwlat_missing(&self, root: &SysRoot) -> Option<hwlat::HwlatError> {
        let needed = self.targets.iter().any(|t| t.metric.is_machine_wide());
        needed.then(|| hwlat::find_tracefs(root).err()).flatten()
    }

    /// The targets the figures are held to: the request's, else the profile's.
    pub(crate) fn wanted(&self) -> Vec<Target> {
        if self.targets.is_empty() {
            targets::of_profile(self.profile.info.name)
        } else {
            self.targets.clone()
        }
    }
}

/// A step of a check's measurements, told before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A round, and with loads whether it is loaded.
    Round(Round, Option<bool>),
    /// The hwlat phase after the rounds, this long.
    Hwlat(Duration),
}

/// `round 2 of 5`, `the hwlat tracer for 60 s`.
impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Round(round, _) => round.fmt(f),
            Step::Hwlat(duration) => write!(
                f,
                "the hwlat tracer for {} s, machine-wide (one CPU at a time spins with \
                 interrupts off; Ctrl-C ends it)",
                duration.as_secs_f64()
            ),
        }
    }
}

/// Why a check could not run.
#[derive(Debug, Error)]
pub(crate) enum CheckError {
    /// The machine's partition could not be formed.
    #[error("the partition: {0}")]
    Partition(#[from] PartitionError),
    /// The measurement session could not be opened on the CPUs chosen: named by `--cpus`
    /// when they were given, else said as chosen.
    #[error("{}", measured.named())]
    Session {
        /// The CPUs chosen and why.
        measured: MeasuredCpus,
        /// Why the session refused them.
        source: CpuChoiceError,
    },
    /// The loads cannot run.
    #[error(transparent)]
    Load(#[from] LoadRefused),
    /// A jitter or timer run failed.
    #[error(transparent)]
    Loop(#[from] LoopError),
}

/// A check ready to measure: the machine read and audited, the CPUs chosen, the session open.
pub(crate) struct Prepared {
    /// What was asked.
    pub request: CheckRequest,
    /// The profile audited against.
    pub profile: Profile,
    /// The machine, read once before the runs.
    pub machine: Machine,
    /// The audit against the profile.
    pub audit: Audit,
    /// The CPUs measured and why those.
    pub measured: MeasuredCpus,
    /// The session the runs go through (on the measured CPUs).
    pub session: Session,
    /// The loads to run beside the measured CPUs, sized and placed.
    pub load: Option<LoadRequest>,
}

/// What a check's runs measured and how the figures stand against the targets.
pub(crate) struct CheckRun {
    /// Each round's jitter run, in order.
    pub jitter_runs: Vec<JitterRun>,
    /// Each round's timer run, in order (one fewer than the jitter runs when a jitter run
    /// ended the check).
    pub timer_runs: Vec<TimerRun>,
    /// The gaps of all jitter runs by cause, when they were explained.
    pub explanation: Option<Explanation>,
    /// The late wake-ups of all timer runs by cause, when they were explained.
    pub timer_explanation: Option<Explanation>,
    /// Each measured CPU's figures over all rounds, in CPU order.
    pub figures: Vec<CpuFigures>,
    /// The targets (the request's, else the profile's) against the figures.
    pub verdicts: Vec<TargetVerdict>,
    /// Whether every run measured every CPU to its end: not interrupted, every CPU set up,
    /// no gap buffer full. The rounds stop at the first run that did not.
    pub complete: bool,
    /// With loads: the idle rounds beside the loaded ones, and each round's load.
    pub load: Option<LoadedCheck>,
}

/// A check under load: the runs alternate, idle then loaded; [`CheckRun::figures`] and the
/// verdicts are the loaded rounds'.
pub(crate) struct LoadedCheck {
    /// What was asked.
    pub asked: LoadAsked,
    /// The CPUs the loads ran on.
    pub cpus: CpuSet,
    /// The kinds that could not start, with why.
    pub skipped: Vec<Skipped>,
    /// Each round's load, in the order of the runs (idle, loaded, idle, ...).
    pub rounds: Vec<RoundLoad>,
    /// Each measured CPU's figures over the idle rounds.
    pub idle_figures: Vec<CpuFigures>,
}

impl LoadedCheck {
    /// The rounds that were loaded, each with whether it was as asked.
    pub(crate) fn loaded_as_asked(&self) -> bool {
        self.rounds.iter().all(|r| r.as_asked)
    }
}

/// Reads the machine under `root`, audits it against the request's profile (in a guest, with
/// the short probe of its vCPUs, handed to `probed` as soon as it ran), chooses the CPUs to
/// measure and opens the session on them. Fails before anything is measured.
pub(crate) fn prepare(
    root: SysRoot,
    request: CheckRequest,
    probed: impl FnOnce(&VcpuProbe),
) -> Result<Prepared, CheckError> {
    let profile = request.profile.clone();
    let machine = Machine::read(&root);
    let CpusThatMatter {
        partition,
        allowed,
        measured,
    } = cpus_that_matter(&machine, Some(&profile), request.cpus.as_ref())?;
    let audit = match machine.hypervisor {
        Some(_) => {
            let probe = vcpu_probe(&machine, &allowed);
            probed(&probe);
            audit::run_probed(&machine, &profile, &partition, &probe)
        }
        None => audit::run(&machine, &profile, &partition),
    };
    let load = match &request.load {
        Some(asked) => Some(asked.beside(
            &root,
            &allowed,
            &measured.cpus,
            machine.topology.llc_bytes_total(),
        )?),
        None => None,
    };
    let session = match Session::open(root, Engine::Jitter, Some(&measured.cpus)) {
        Ok(session) => session,
        Err(source) => return Err(CheckError::Session { measured, source }),
    };
    Ok(Prepared {
        request,
        profile,
        machine,
        audit,
        measured,
        session,
        load,
    })
}

/// The CPUs a check measures on a machine and what they were chosen from.
pub(crate) struct CpusThatMatter {
    /// The machine's partition.
    pub partition: AuditPartition,
    /// The CPUs this process may run on (every online CPU where the affinity cannot be read:
    /// the session says what it refuses).
    pub allowed: CpuSet,
    /// The CPUs measured and why those: `requested`, else the partition's rule
    /// (`audit::partition::measured_cpus`).
    pub measured: MeasuredCpus,
}

/// The CPUs that matter on `machine`, as `check` and the loop engines without `--cpus`
/// measure them: `requested`, else the isolated CPUs (a site `profile`'s partition, else the
/// machine's), else every CPU but the first.
pub(crate) fn cpus_that_matter(
    machine: &Machine,
    profile: Option<&Profile>,
    requested: Option<&CpuSet>,
) -> Result<CpusThatMatter, PartitionError> {
    // A site profile's partition, else the machine's own.
    let partition = match profile {
        Some(profile) => crate::audit::site::choose_partition(machine, None, profile)?,
        None => partition::choose(machine, None)?,
    };
    let online = machine.topology.online_cpus();
    let allowed = harness::current_affinity().unwrap_or(online.clone());
    let measured = partition::measured_cpus(&partition, &online, &allowed, requested);
    Ok(CpusThatMatter {
        partition,
        allowed,
        measured,
    })
}

/// The CPUs a loop engine measures without `--cpus` on the machine under `root`: those a check
/// would ([`cpus_that_matter`]).
pub(crate) fn measured_cpus(root: &SysRoot) -> Result<MeasuredCpus, PartitionError> {
    Ok(cpus_that_matter(&Machine::read(root), None, None)?.measured)
}

/// Measures a prepared check: its rounds (`step_begins` is told each before it runs, and
/// whether it is loaded), until the last or the first incomplete run; then, when a target
/// names hwlat, the hwlat phase (told too); then each CPU's figures over all rounds (the
/// loaded ones, with loads; with the steal time around them, in a guest) and the targets'
/// verdicts. Loads are started before the first round and stopped after the last (before the
/// hwlat phase), also on an error.
pub(crate) fn run(
    check: &Prepared,
    mut step_begins: impl FnMut(Step),
) -> Result<CheckRun, CheckError> {
    let Prepared {
        request,
        session,
        machine,
        ..
    } = check;
    // In a VM, the host's share of the measured vCPUs (steal) is read around both runs.
    let read_stat = || {
        machine
            .hypervisor
            .as_ref()
            .and_then(|_| stat::read(&mut Reader::new(session.root())).get().cloned())
    };
    let loads = check.load.as_ref().map(Loads::start);
    let stat_before = read_stat();
    let measured = rounds(session, request, loads.as_ref(), |round, loaded| {
        step_begins(Step::Round(round, loaded))
    })?;
    // Which rounds were loaded (all of them count as loaded without loads).
    let loaded: Vec<bool> = (0..measured.jitter_runs.len())
        .map(|i| loads.is_none() || measured.loads.get(i).is_some_and(|r| r.loaded))
        .collect();
    let (jitter_runs, timer_runs) = (&measured.jitter_runs, &measured.timer_runs);
    // Without loads every round counts; with them the loaded ones (none yet, when the first
    // idle round ended the check: then the idle ones, said as not loaded).
    let judged = !of_rounds(jitter_runs, &loaded, true).is_empty();
    let all_jitter =
        merged(&of_rounds(jitter_runs, &loaded, judged)).expect("the first round runs jitter");
    let all_timer = merged(&of_rounds(timer_runs, &loaded, judged));
    let mut figures = super::figures(Some(&all_jitter), all_timer.as_ref());
    if let (Some(before), Some(after)) = (&stat_before, &read_stat()) {
        super::add_steal(&mut figures, before, after);
    }
    let wanted = request.wanted();
    let load = match (loads, &request.load) {
        (Some(loads), Some(asked)) => {
            let idle_jitter = merged(&of_rounds(jitter_runs, &loaded, false));
            let idle_timer = merged(&of_rounds(timer_runs, &loaded, false));
            Some(LoadedCheck {
                asked: asked.clone(),
                cpus: loads.cpus.clone(),
                skipped: loads.skipped.clone(),
                rounds: measured.loads,
                idle_figures: super::figures(idle_jitter.as_ref(), idle_timer.as_ref()),
            })
        }
        _ => None,
    };
    // The loads were dropped with the match above, which stops and joins their threads: the
    // tracer runs alone.
    let mut complete = measured.complete;
    let hwlat = hwlat_phase::request(&wanted, request.hwlat_duration).map(|asked| {
        if !complete {
            return Err("the check stopped before its hwlat phase".to_string());
        }
        let phase = hwlat_run(session, asked, &mut step_begins);
        complete &= !session.interrupted();
        phase
    });
    let verdicts = super::evaluate(&wanted, &figures, hwlat.as_ref());
    Ok(CheckRun {
        jitter_runs: measured.jitter_runs,
        timer_runs: measured.timer_runs,
        explanation: all_jitter.explanation,
        timer_explanation: all_timer.and_then(|run| run.explanation),
        figures,
        verdicts,
        complete,
        load,
    })
}

/// The hwlat phase: the tracer run as `asked` on the session's machine (told to `step_begins`
/// when the kernel has the tracer), or why it could not run.
fn hwlat_run(
    session: &Session,
    asked: hwlat::HwlatRequest,
    step_begins: &mut impl FnMut(Step),
) -> HwlatPhase {
    hwlat::find_tracefs(session.root()).map_err(|e| e.to_string())?;
    step_begins(Step::Hwlat(Duration::from_nanos(asked.duration_ns)));
    let measured = hwlat::run(session, asked).map_err(|e| e.to_string())?;
    Ok(HwlatFigures::of(&measured.figures))
}

/// What the rounds of a check measured.
struct Rounds {
    jitter_runs: Vec<JitterRun>,
    timer_runs: Vec<TimerRun>,
    /// With loads, each round's (one per jitter run).
    loads: Vec<RoundLoad>,
    complete: bool,
}

/// The rounds of a check on `session`: a jitter run, then a timer run, each round, until the
/// last or the first run that did not measure every CPU to its end; with whether every run did.
/// With `loads`, twice as many rounds, idle and loaded in turn, the loads running in the
/// loaded ones only.
fn rounds(
    session: &Session,
    request: &CheckRequest,
    loads: Option<&Loads>,
    mut round_begins: impl FnMut(Round, Option<bool>),
) -> Result<Rounds, CheckError> {
    let spec = LoopSpec {
        duration: request.round(),
        inject: None,
    };
    let per_cpu = GAP_BUFFERS_BYTES / 16 / session.cpus.len().max(1);
    let mut jitter_runs = Vec::new();
    let mut timer_runs = Vec::new();
    let mut round_loads = Vec::new();
    let mut complete = true;
    let (root, measured) = (session.root(), &session.cpus);
    let of = request.rounds.max(1) * if loads.is_some() { 2 } else { 1 };
    rounds::run(of, |round| {
        let loaded = loads.map(|_| round.number % 2 == 0);
        round_begins(round, loaded);
        let measure = || measure_round(session, request, &spec, per_cpu);
        let measured_round = match loads {
            Some(loads) => {
                let (measured_round, load) =
                    loads.in_round((root, measured), loaded == Some(true), measure);
                loads.set_running(false);
                round_loads.push(load);
                measured_round
            }
            None => measure(),
        };
        let (jitter_run, timer_run) = measured_round?;
        complete &= jitter_run.complete();
        jitter_runs.push(jitter_run);
        let Some(timer_run) = timer_run else {
            return Ok(After::Stop);
        };
        complete &= timer_run.complete();
        timer_runs.push(timer_run);
        Ok::<_, CheckError>(if complete { After::Next } else { After::Stop })
    })?;
    Ok(Rounds {
        jitter_runs,
        timer_runs,
        loads: round_loads,
        complete,
    })
}

/// One round: a jitter run, then, when it measured every CPU to its end, a timer run.
fn measure_round(
    session: &Session,
    request: &CheckRequest,
    spec: &LoopSpec,
    per_cpu: usize,
) -> Result<(JitterRun, Option<TimerRun>), CheckError> {
    let jitter_run = jitter::run(
        session,
        JitterRequest {
            spec: spec.clone(),
            threshold_ns: JITTER_THRESHOLD_NS,
            priority: None,
            max_gaps: per_cpu.clamp(50_000, DEFAULT_MAX_GAPS),
            explain: request.explain,
        },
    )?;
    if !jitter_run.complete() {
        return Ok((jitter_run, None));
    }
    let timer_run = timer::run(
        session,
        TimerRequest {
            spec: spec.clone(),
            interval_ns: TIMER_INTERVAL_NS,
            priority: DEFAULT_PRIORITY,
            histogram_buckets: 0,
            explain_above_ns: request.explain.then_some(DEFAULT_EXPLAIN_ABOVE_NS),
        },
    )?;
    Ok((jitter_run, Some(timer_run)))
}

/// The two passes of the short c2c probe of a guest's vCPUs (at most [`VCPU_PROBE_BUDGET`] in
/// all) over the vCPUs this process may run on; a probe that cannot run says why.
fn vcpu_probe(machine: &Machine, allowed: &CpuSet) -> VcpuProbe {
    let places: Vec<_> = (place::places(&machine.topology).into_iter())
        .filter(|p| allowed.contains(p.cpu))
        .collect();
    c2c::probe(&places, 2, VCPU_PROBE_BUDGET).unwrap_or_else(|e| VcpuProbe {
        probes: Vec::new(),
        no_claim: Some(e.to_string()),
    })
}

/// The runs of `runs` whose round's entry in `loaded` is `want`.
fn of_rounds<R: Clone>(runs: &[R], loaded: &[bool], want: bool) -> Vec<R> {
    (runs.iter().zip(loaded))
        .filter(|(_, l)| **l == want)
        .map(|(run, _)| run.clone())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::TargetOutcome;
    use crate::measure::engines::hwlat::fake_tracefs;
    use crate::test_tree::TestTree;

    /// A target as `--target` reads it (latencies in whole µs).
    fn target(text: &str) -> Target {
        let micros = |t: &str| {
            (t.strip_suffix("us"))
                .and_then(|n| n.parse::<u64>().ok())
                .map(|n| n * 1000)
                .ok_or("not NNus")
        };
        targets::parse(text, micros, JITTER_THRESHOLD_NS).unwrap()
    }

    /// The tracefs files a run touches, as they read.
    fn tracefs_state(tree: &TestTree) -> Vec<String> {
        [
            "tracing_on",
            "current_tracer",
            "tracing_thresh",
            "hwlat_detector/window",
        ]
        .iter()
        .map(|f| std::fs::read_to_string(tree.join(&format!("/sys/kernel/tracing/{f}"))))
        .map(|r| r.unwrap().trim().to_string())
        .collect()
    }

    /// The hwlat phase of a check on a machine whose tracefs is `tree`'s, as asked by
    /// `targets`; `recorded` stands for what the kernel writes into `trace` while the tracer
    /// runs (a thread writes it once the tracer is set, then stops the run). With the steps
    /// told.
    fn phase(tree: &TestTree, targets: &[Target], recorded: &str) -> (HwlatPhase, Vec<Step>) {
        let session = Session::open(tree.root(), Engine::Hwlat, None).unwrap();
        let asked = hwlat_phase::request(targets, hwlat_phase::DEFAULT_DURATION).unwrap();
        let mut steps = Vec::new();
        let phase = std::thread::scope(|scope| {
            scope.spawn(|| {
                let tracer = tree.join("/sys/kernel/tracing/current_tracer");
                let started = std::time::Instant::now();
                while std::fs::read_to_string(&tracer).unwrap().trim() != "hwlat"
                    && started.elapsed() < Duration::from_secs(30)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                tree.write("/sys/kernel/tracing/trace", recorded);
                session.stop.stop();
            });
            hwlat_run(&session, asked, &mut |step| steps.push(step))
        });
        (phase, steps)
    }

    /// A trace line of a gap of `inner`/`outer` µs on `cpu`, as the kernel writes it.
    fn gap(seq: u32, cpu: u32, inner: u32, outer: u32) -> String {
        format!(
            "           <...>-1729    [{cpu:03}] d...   678.47: #{seq}     inner/outer(us):   \
             {inner}/{outer}    ts:1581527483.343962693 count:1\n"
        )
    }

    /// Issue 45 item 5: the hwlat phase runs the tracer through tracefs with a threshold below
    /// the limit and holds the largest gap, machine-wide, to it: a gap at or above the limit is
    /// missed, none above the threshold proves the limit; every tracefs file is put back.
    #[test]
    fn the_hwlat_phase_holds_the_largest_gap_to_the_target() {
        let recorded = format!("# tracer: hwlat\n{}{}", gap(1, 1, 11, 12), gap(2, 0, 9, 27));
        for (limit, trace, outcome, max) in [
            (
                "hwlat.max<20us",
                recorded.as_str(),
                TargetOutcome::Missed,
                Some(27),
            ),
            (
                "hwlat.max<27us",
                recorded.as_str(),
                TargetOutcome::Missed,
                Some(27),
            ),
            (
                "hwlat.max<28us",
                recorded.as_str(),
                TargetOutcome::Met,
                Some(27),
            ),
            (
                "hwlat.max<20us",
                "# tracer: hwlat\n",
                TargetOutcome::Met,
                None,
            ),
        ] {
            let tree = TestTree::fixture("kvm-guest-2vcpu");
            fake_tracefs(&tree, "hwlat function nop\n");
            let before = tracefs_state(&tree);
            let targets = [target(limit)];
            let (phase, steps) = phase(&tree, &targets, trace);
            let figures = phase.clone().unwrap();
            assert_eq!(figures.max_us, max, "{limit}");
            assert_eq!(figures.max_cpu, max.map(|_| 0), "{limit}");
            assert_eq!(figures.threshold_us, 10, "{limit}");
            assert_eq!(steps, [Step::Hwlat(hwlat_phase::DEFAULT_DURATION)]);
            assert_eq!(tracefs_state(&tree), before, "{limit}");
            let verdicts = crate::check::evaluate(&targets, &[], Some(&phase));
            assert_eq!(verdicts[0].outcome, outcome, "{limit}: {verdicts:?}");
            assert_eq!(verdicts[0].hwlat.as_ref(), Some(&figures));
        }
        // A limit of 5 µs: the tracer records gaps above 4 µs, so none recorded proves < 5 µs.
        let tree = TestTree::fixture("kvm-guest-2vcpu");
        fake_tracefs(&tree, "hwlat function nop\n");
        let targets = [target("hwlat.max<5us")];
        let (phase, _) = phase(&tree, &targets, "");
        assert_eq!(phase.as_ref().unwrap().threshold_us, 4);
        let verdicts = crate::check::evaluate(&targets, &[], Some(&phase));
        assert_eq!(verdicts[0].outcome, TargetOutcome::Met);
    }

    /// Issue 45 item 5: where the kernel has no hwlat tracer the target is not measured, with
    /// why, and not proven (never met); the phase is not announced and tracefs is untouched.
    #[test]
    fn without_the_hwlat_tracer_the_target_is_not_measured_and_not_proven() {
        let tree = TestTree::fixture("kvm-guest-2vcpu");
        fake_tracefs(&tree, "blk function nop\n");
        let before = tracefs_state(&tree);
        let targets = [target("hwlat.max<50us")];
        let session = Session::open(tree.root(), Engine::Hwlat, None).unwrap();
        let asked = hwlat_phase::request(&targets, Duration::from_secs(1)).unwrap();
        let mut steps = Vec::new();
        let phase = hwlat_run(&session, asked, &mut |step| steps.push(step));
        let why = phase.clone().unwrap_err();
        assert!(why.contains("CONFIG_HWLAT_TRACER not set"), "{why}");
        assert!(steps.is_empty());
        assert_eq!(tracefs_state(&tree), before);
        let verdicts = crate::check::evaluate(&targets, &[], Some(&phase));
        assert_eq!(verdicts[0].outcome, TargetOutcome::NotProven);
        assert_eq!(verdicts[0].not_measured.as_deref(), Some(why.as_str()));
        assert_eq!(verdicts[0].hwlat, None);
    }
}

//! The two arms of a prove run, each measured as `lowlat check --out DIR/ARM` measures: check's
//! pipeline (the audit, then N interleaved rounds of a jitter run and a timer run, with their
//! causes, on the plan's isolated CPUs) and check's documents, written as one bundle. The after
//! arm runs where the workload would: in the runtime-isolation cpuset when the plan made one
//! (as `lowlat run` places a command), so that the isolated CPUs can be measured at all.
//! With loads (`--load`) the rounds alternate idle and loaded as `check --load`'s do, each
//! run's document recording its round's load; with `--net` each arm also runs `measure net`'s
//! loopback ping-pong, one run per round, client on the first measured CPU and echo on the
//! second (on the first when only one is measured: the two then share it, which the run says).

use std::fmt;
use std::path::Path;

use std::time::Duration;

use crate::apply::run::{BOOT_ISOLATED, enter, place};
use crate::audit::profile::Profile;
use crate::bundle::Bundle;
use crate::check::{self, CheckRequest};
use crate::document::Kind;
use crate::machine::cgroup_cpuset::{self, CgroupVersion};
use crate::machine::{CpuSet, Reader};
use crate::measure::engines::net::socket::Proto;
use crate::measure::engines::net::{self, NetPath, NetRequest};
use crate::measure::load::{self, LoadAsked};
use crate::measure::runner::harness::{self, DmaLatencyLimit};
use crate::measure::runner::session::{Engine, Session};
use crate::plan::Plan;
use crate::report::check as check_report;
use crate::report::measure::{finished_document, net as net_report};
use crate::sysroot::SysRoot;
use crate::text::voice::note;

use super::ProveError;
use super::state::Rounds;

/// Which arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arm {
    /// Before the plan is applied.
    Before,
    /// With the plan in effect.
    After,
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arm::Before => "before",
            Arm::After => "after",
        })
    }
}

/// What measuring an arm gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Measured {
    /// Whether every run measured every CPU to its end (not interrupted, nothing lost).
    pub complete: bool,
}

/// Measures an arm into a bundle directory: check's rounds on the live machine, or (in tests)
/// recorded bundles.
pub(crate) trait Measure {
    /// Measures `arm` into the bundle `dir` (created by the caller).
    fn measure(&mut self, arm: Arm, dir: &Path) -> Result<Measured, ProveError>;
}

impl Rounds {
    /// The rounds of a new prove of `plan`, on its isolated CPUs, explained: each arm's jitter
    /// and timer `duration` long in `rounds` rounds, with `load` beside them and `net`'s
    /// ping-pong. Refused before anything is measured or changed when the plan isolates no CPU,
    /// or when loads have no CPU this process may run on beside the measured ones (check's
    /// error).
    pub(crate) fn of(
        plan: &Plan,
        profile: String,
        duration: Duration,
        rounds: u32,
        load: Option<LoadAsked>,
        net: bool,
    ) -> Result<Rounds, ProveError> {
        let cpus = plan.partition.isolated.clone();
        if cpus.is_empty() {
            return Err(ProveError::NoCpu);
        }
        if let Some(asked) = &load {
            let allowed = harness::current_affinity()
                .map_err(|e| ProveError::Measure(format!("sched_getaffinity: {e}")))?;
            load::housekeeping(&allowed, &cpus)
                .map_err(|e| ProveError::Measure(format!("--load {}: {e}", asked.names())))?;
        }
        Ok(Rounds {
            profile,
            cpus,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            rounds,
            explain: true,
            load,
            net,
        })
    }
}

/// The arms measured by check's pipeline on the live machine, as `request` asks.
pub(crate) struct CheckArms {
    /// The check of each arm (its CPUs: the plan's isolated ones).
    pub request: CheckRequest,
    /// Whether each arm also runs the loopback ping-pong (`--net`).
    pub net: bool,
    /// Whether the machine is the live one: under a directory tree (`--root`) no arm can be
    /// measured, and the run stops before one.
    pub live: bool,
}

impl CheckArms {
    /// The arms `rounds` asks for, audited against `profile`; refuses rounds too short for a
    /// timer run.
    pub(crate) fn of(rounds: &Rounds, profile: Profile, live: bool) -> Result<Self, ProveError> {
        let request = CheckRequest {
            profile,
            cpus: Some(rounds.cpus.clone()),
            duration: Duration::from_millis(rounds.duration_ms),
            rounds: rounds.rounds,
            targets: Vec::new(),
            quick: false,
            explain: rounds.explain,
            load: rounds.load.clone(),
            hwlat_duration: check::hwlat::DEFAULT_DURATION,
        };
        if request.round() < check::MIN_ROUND {
            return Err(ProveError::Measure(format!(
                "--duration {:?} --repeat {}: rounds of {:?} are too short for a timer run at 1 ms; give rounds of at least {:?}",
                request.duration,
                request.rounds,
                request.round(),
                check::MIN_ROUND
            )));
        }
        Ok(CheckArms {
            request,
            net: rounds.net,
            live,
        })
    }

    /// The loopback ping-pong's rounds of `arm` into `bundle`, each as long as a check round;
    /// whether every one measured to its end.
    fn net_rounds(&self, arm: Arm, bundle: &Bundle) -> Result<bool, ProveError> {
        let failed = |e: &dyn fmt::Display| ProveError::Measure(format!("{arm} arm, net: {e}"));
        let cpus: Vec<u32> = (self.request.cpus.iter().flat_map(|c| c.iter())).collect();
        let client = *cpus.first().ok_or_else(|| failed(&"no CPU to measure"))?;
        let session = Session::open(
            SysRoot::live(),
            Engine::Net,
            Some(&CpuSet::from_iter([client])),
        )
        .map_err(|e| failed(&e))?;
        let request = NetRequest {
            proto: Proto::Udp,
            path: NetPath::Loopback,
            size_bytes: 64,
            duration_ns: u64::try_from(self.request.round().as_nanos()).unwrap_or(u64::MAX),
            count: None,
            timeout_ns: 1_000_000_000,
            echo_cpu: Some(cpus.get(1).copied().unwrap_or(client)),
            busy_poll_us: None,
            timestamps: false,
            explain: false,
            explain_above_ns: None,
        };
        let mut complete = true;
        for round in 1..=self.request.rounds {
            note!("{arm} arm: net round {round} of {}", self.request.rounds);
            let measured = net::run(&session, request).map_err(|e| failed(&e))?;
            let result = net_report::result(&measured.figures);
            let json = finished_document(Kind::MeasureNet, &session, &measured, result)
                .to_json()
                .map_err(|e| failed(&e))?;
            bundle
                .add(Kind::MeasureNet, &json)
                .map_err(|e| failed(&e))?;
            complete &= measured.complete;
            if harness::interrupted() || !complete {
                break;
            }
        }
        Ok(complete)
    }

    /// Puts this process where the workload of the plan in effect runs: in the runtime
    /// isolation cpuset when there is one (its CPUs are exclusive: nothing outside it may run
    /// there), else allowed on every online CPU (a boot-time resume may have started on the
    /// housekeeping CPUs only; check pins its loops itself). With `loads` the load threads
    /// must reach the housekeeping CPUs, which the isolated cpuset holds none of: on cgroup v1
    /// the process joins the hierarchy's root cpuset (every CPU; the measured loops are pinned
    /// to the isolated CPUs, the loads to the others), on v2 (whose isolated partition no
    /// other cgroup may use) the arm is refused.
    fn enter_isolation(root: &SysRoot, loads: bool) -> Result<(), ProveError> {
        let mut reader = Reader::new(root);
        let tree = cgroup_cpuset::read(&mut reader);
        let boot = reader.cpulist(BOOT_ISOLATED);
        let Ok(mut placement) = place(&tree, &boot, None) else {
            return Ok(());
        };
        let online: CpuSet = crate::machine::Machine::read(root).topology.online_cpus();
        match (&mut placement.cpuset, tree.get()) {
            (None, _) => placement.cpus = online,
            (Some(joined), Some(tree)) if loads => {
                if joined.version == CgroupVersion::V2 {
                    return Err(ProveError::Measure(format!(
                        "after arm: --load: the isolated CPUs are the cgroup v2 partition {}'s alone, so no process can run loads beside them; prove --load a plan that isolates at boot (--isolation boot), or prove without --load",
                        joined.path
                    )));
                }
                joined.path = "/".to_string();
                joined.procs_file = tree.file("/", "cgroup.procs");
                placement.cpus = online;
            }
            _ => {}
        }
        enter(root, &placement).map_err(|e| ProveError::Measure(e.to_string()))?;
        note!("after arm: {}", placement.describe());
        Ok(())
    }
}

impl Measure for CheckArms {
    fn measure(&mut self, arm: Arm, dir: &Path) -> Result<Measured, ProveError> {
        if !self.live {
            return Err(ProveError::Measure(format!(
                "the {arm} arm measures this machine's CPUs, not a directory tree (--root): the run stopped before it"
            )));
        }
        let root = SysRoot::live();
        if arm == Arm::After {
            Self::enter_isolation(&root, self.request.load.is_some())?;
        }
        let failed = |e: &dyn fmt::Display| ProveError::Measure(format!("{arm} arm: {e}"));
        // check's runs keep this thread off the measured CPUs; the net rounds need them back.
        let allowed = harness::current_affinity().map_err(|e| failed(&e))?;
        let prepared =
            check::prepare(root, self.request.clone(), |_| {}).map_err(|e| failed(&e))?;
        let bundle = Bundle::open(dir).map_err(|e| failed(&e))?;
        // Held for every round, as check holds it.
        let _limit = DmaLatencyLimit::hold(prepared.session.root(), 0).ok();
        let measured = check::run(&prepared, |step| {
            note!("{arm} arm: {}", check_report::step_said(step));
        })
        .map_err(|e| failed(&e))?;
        for skipped in (measured.load.iter()).flat_map(|load| &load.skipped) {
            note!("{arm} arm: {skipped}");
        }
        // As check writes them: the runs, the load's effect judged on them, the check.
        let documents = (check_report::Finished::of(&prepared, &measured))
            .map_err(|e| failed(&e))?
            .documents;
        bundle.add_all(&documents).map_err(|e| failed(&e))?;
        let mut complete = measured.complete;
        if self.net && complete && !harness::interrupted() {
            harness::pin_current_thread_to(&allowed).map_err(|e| failed(&e))?;
            complete &= self.net_rounds(arm, &bundle)?;
        }
        note!("{arm} arm: saved the bundle {}", dir.display());
        Ok(Measured { complete })
    }
}

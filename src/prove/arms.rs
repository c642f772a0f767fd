//! The two arms of a prove run, each measured as `lowlat check --out DIR/ARM` measures: check's
//! pipeline (the audit, then N interleaved rounds of a jitter run and a timer run, with their
//! causes, on the plan's isolated CPUs) and check's documents, written as one bundle. The after
//! arm runs where the workload would: in the runtime-isolation cpuset when the plan made one
//! (as `lowlat run` places a command), so that the isolated CPUs can be measured at all.

use std::fmt;
use std::path::Path;

use crate::apply::run::{BOOT_ISOLATED, enter, place};
use crate::bundle::Bundle;
use crate::check::{self, CheckRequest};
use crate::document::Kind;
use crate::machine::{CpuSet, Reader, cgroup_cpuset};
use crate::measure::runner::harness::DmaLatencyLimit;
use crate::report::check as check_report;
use crate::report::measure::explain;
use crate::sysroot::SysRoot;
use crate::text::voice::note;

use super::ProveError;

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

/// The arms measured by check's pipeline on the live machine, as `request` asks.
pub(crate) struct CheckArms {
    /// The check of each arm (its CPUs: the plan's isolated ones).
    pub request: CheckRequest,
}

impl CheckArms {
    /// Puts this process where the workload of the plan in effect runs: in the runtime
    /// isolation cpuset when there is one (its CPUs are exclusive: nothing outside it may run
    /// there), else allowed on every online CPU (a boot-time resume may have started on the
    /// housekeeping CPUs only; check pins its loops itself).
    fn enter_isolation(root: &SysRoot) -> Result<(), ProveError> {
        let mut reader = Reader::new(root);
        let tree = cgroup_cpuset::read(&mut reader);
        let boot = reader.cpulist(BOOT_ISOLATED);
        let Ok(mut placement) = place(&tree, &boot, None) else {
            return Ok(());
        };
        if placement.cpuset.is_none() {
            let online: CpuSet = crate::machine::Machine::read(root).topology.online_cpus();
            placement.cpus = online;
        }
        enter(root, &placement).map_err(|e| ProveError::Measure(e.to_string()))?;
        note!("after arm: {}", placement.describe());
        Ok(())
    }
}

impl Measure for CheckArms {
    fn measure(&mut self, arm: Arm, dir: &Path) -> Result<Measured, ProveError> {
        let root = SysRoot::live();
        if arm == Arm::After {
            Self::enter_isolation(&root)?;
        }
        let failed = |e: &dyn fmt::Display| ProveError::Measure(format!("{arm} arm: {e}"));
        let prepared =
            check::prepare(root, self.request.clone(), |_| {}).map_err(|e| failed(&e))?;
        let bundle = Bundle::open(dir).map_err(|e| failed(&e))?;
        // Held for every round, as check holds it.
        let _limit = DmaLatencyLimit::hold(prepared.session.root(), 0).ok();
        let measured =
            check::run(&prepared, |step| note!("{arm} arm: {step}")).map_err(|e| failed(&e))?;
        let causes = measured.explanation.as_ref().map(explain::json);
        let timer_causes = measured.timer_explanation.as_ref().map(explain::json);
        let report =
            check_report::of_run(&prepared, &measured, causes.as_ref(), timer_causes.as_ref());
        let documents =
            check_report::documents(&prepared, &report, &measured).map_err(|e| failed(&e))?;
        for (kind, json) in &documents {
            match kind {
                Kind::Inventory => bundle.put(*kind, json),
                _ => bundle.add(*kind, json),
            }
            .map_err(|e| failed(&e))?;
        }
        note!("{arm} arm: saved the bundle {}", dir.display());
        Ok(Measured {
            complete: measured.complete,
        })
    }
}

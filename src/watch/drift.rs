//! The full checks, run every drift interval rather than every sample: the machine against
//! the watched plan (the comparisons of `lowlat verify`, by the kind of setting), and the
//! movable tasks allowed on isolated CPUs.

use std::collections::BTreeMap;

use crate::apply::change::ApplyContext;
use crate::apply::verify::{Status, verify};
use crate::machine::{CpuSet, Machine};
use crate::plan::Plan;
use crate::sysroot::SysRoot;

/// What the full checks found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Drift {
    /// Per kind of setting (the setting id's first part: `sysctl`, `irq`, `cmdline`,
    /// `service`...): how many of the plan's settings of that kind differ. Every kind the plan
    /// has is present, with 0 when none differs.
    pub by_check: BTreeMap<String, usize>,
    /// The first differing settings (id, expected, actual), for people.
    pub examples: Vec<(String, String, String)>,
    /// Movable user tasks allowed on an isolated CPU and a housekeeping one.
    pub user_tasks_on_isolated: usize,
    /// Movable kernel threads allowed on an isolated CPU and a housekeeping one.
    pub kernel_threads_on_isolated: usize,
}

/// How many differing settings are kept as examples.
const EXAMPLES: usize = 5;

impl Drift {
    /// Reads the machine under `root`, less its interrupt table (the settings do not need it),
    /// and compares it with `plan`.
    pub(crate) fn check(root: &SysRoot, plan: &Plan, isolated: &CpuSet) -> Drift {
        let machine = Machine::read_without_interrupts(root);
        let ctx = ApplyContext {
            root,
            machine: &machine,
            runner: None,
        };
        let report = verify(&ctx, plan, "");
        let mut drift = Drift::default();
        for check in &report.checks {
            let kind = check.id.split(':').next().unwrap_or_default().to_string();
            let differs = check.status == Status::Drift;
            *drift.by_check.entry(kind).or_default() += usize::from(differs);
            if differs && drift.examples.len() < EXAMPLES {
                drift.examples.push((
                    check.id.clone(),
                    check.expected.clone(),
                    check.actual.clone(),
                ));
            }
        }
        if let Some(tasks) = machine.tasks.get() {
            for task in tasks.tasks.iter().filter(|t| t.movable) {
                let Some(allowed) = task.cpus_allowed.get() else {
                    continue;
                };
                if allowed.intersects(isolated) && !allowed.is_subset(isolated) {
                    if task.kernel_thread {
                        drift.kernel_threads_on_isolated += 1;
                    } else {
                        drift.user_tasks_on_isolated += 1;
                    }
                }
            }
        }
        drift
    }

    /// Settings that differ, over every kind.
    pub(crate) fn settings(&self) -> usize {
        self.by_check.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn a_changed_sysctl_is_drift_of_the_sysctl_check() {
        let tree = TestTree::fixture("rt-guest-4vcpu");
        let machine = Machine::read(&tree.root());
        let request = crate::plan::request::PlanRequest::default();
        let profile = crate::plan::findings::audit_profile(request.profile).unwrap();
        let mut plan = crate::plan::build(&machine, &request, |partition| {
            crate::plan::findings::audit_remediations(&machine, &profile, partition)
        })
        .unwrap();
        plan.settings.retain(|s| s.id.starts_with("sysctl:"));
        // Make the machine match the plan, then change one value.
        for setting in &plan.settings {
            let key = setting.id.trim_start_matches("sysctl:").replace('.', "/");
            tree.write(&format!("/proc/sys/{key}"), format!("{}\n", setting.value));
        }
        let isolated = plan.partition.isolated.clone();
        let clean = Drift::check(&tree.root(), &plan, &isolated);
        assert_eq!(clean.settings(), 0, "{clean:?}");
        let first = &plan.settings[0];
        let key = first.id.trim_start_matches("sysctl:").replace('.', "/");
        tree.write(&format!("/proc/sys/{key}"), "12345\n");
        let drifted = Drift::check(&tree.root(), &plan, &isolated);
        assert_eq!(drifted.by_check["sysctl"], 1);
        assert_eq!(drifted.examples[0].0, first.id);
    }
}

//! The machine against the watched plan, with `lowlat verify`'s comparisons, at two costs:
//!
//! - **every interval**, the settings whose check reads one small file the plan names (a
//!   sysctl, an IRQ's affinity, the default IRQ affinity, a workqueue mask, irqbalance's
//!   environment files and lowlat's drop-in for its unit) or `/proc/cmdline` (kernel
//!   arguments): only those files are read, never the machine model;
//! - **every drift interval** (a minute by default), every setting, services and tasks
//!   included, and the movable tasks allowed on isolated CPUs: the processes are read anew,
//!   the rest of the model is the one read at the start (the CPUs a value may name, the OS
//!   release), which no setting changes.
//!
//! Both keep the latest verdict on each setting, so a cheap check updates its settings between
//! two full checks.

use std::collections::BTreeMap;

use crate::apply::change::ApplyContext;
use crate::apply::command::{Runner, SystemRunner};
use crate::apply::verify::{Check, Status, check};
use crate::machine::kernel::parse_cmdline;
use crate::machine::services::irqbalance;
use crate::machine::{Avail, CpuSet, Machine, Reader, tasks};
use crate::plan::{Plan, irqbalance as planned_irqbalance};
use crate::sysroot::SysRoot;
use crate::tuning::setting::{Layer, Setting};
use crate::tuning::setting_id::SettingId;

/// What the checks found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Drift {
    /// The latest verdict on every setting of the plan, in plan order: from the last full
    /// check, or from a later cheap one for the settings checked every interval.
    pub checks: Vec<Check>,
    /// Movable user tasks allowed on an isolated CPU and a housekeeping one (at the last full
    /// check).
    pub user_tasks_on_isolated: usize,
    /// Movable kernel threads allowed on an isolated CPU and a housekeeping one (at the last
    /// full check).
    pub kernel_threads_on_isolated: usize,
}

/// How many differing settings are shown as examples.
const EXAMPLES: usize = 5;

impl Drift {
    /// Per kind of setting (the setting id's first part: `sysctl`, `irq`, `cmdline`,
    /// `service`...): how many of the plan's settings of that kind differ. Every kind the plan
    /// has is present, with 0 when none differs.
    pub(crate) fn by_check(&self) -> BTreeMap<&str, usize> {
        let mut by_check = BTreeMap::new();
        for check in &self.checks {
            let kind = check.id.split(':').next().unwrap_or_default();
            *by_check.entry(kind).or_default() += usize::from(check.status == Status::Drift);
        }
        by_check
    }

    /// The first differing settings, for people.
    pub(crate) fn examples(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Drift)
            .take(EXAMPLES)
    }

    /// Settings that differ, over every kind.
    pub(crate) fn settings(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Drift)
            .count()
    }
}

/// Whether a task allowed on `allowed` escapes the isolation of `isolated`: it may run on an
/// isolated CPU and on a housekeeping one, so the scheduler may put it on the isolated one.
pub(crate) fn escapes(allowed: &CpuSet, isolated: &CpuSet) -> bool {
    allowed.intersects(isolated) && !allowed.is_subset(isolated)
}

/// Whether checking `setting` reads only one small file the plan names (or `/proc/cmdline`,
/// for kernel arguments): such settings are checked every interval.
fn is_cheap(setting: &Setting) -> bool {
    if setting.layer == Layer::Boot {
        return true;
    }
    match setting.id.parse::<SettingId>() {
        Ok(
            SettingId::Sysctl(_)
            | SettingId::IrqDefault
            | SettingId::Irq(_)
            | SettingId::Workqueue(_),
        ) => true,
        Ok(SettingId::FileKey { path, .. } | SettingId::File(path)) => {
            irqbalance::PATHS.contains(&path.as_str())
                || [
                    planned_irqbalance::ENV_PATH,
                    planned_irqbalance::DROPIN_PATH,
                ]
                .contains(&path.as_str())
        }
        _ => false,
    }
}

/// The watched plan, with what its checks need between them.
pub(crate) struct PlanWatch {
    plan: Plan,
    isolated: CpuSet,
    /// The machine read at the start, without its interrupts and tasks: what verify's
    /// comparisons take from the model besides the files they read. Its command line is read
    /// anew before each check; its tasks at each full check, and let go after it.
    machine: Machine,
    /// The indices in the plan of the settings checked every interval.
    cheap: Vec<usize>,
    /// Whether the plan has kernel arguments, so that checks read `/proc/cmdline`.
    boot: bool,
    drift: Drift,
}

impl PlanWatch {
    /// Watches `plan` on the machine read at the start (`machine`, whose interrupts and tasks
    /// are not kept).
    pub(crate) fn new(plan: Plan, isolated: CpuSet, mut machine: Machine) -> PlanWatch {
        machine.irqs = Avail::missing("not kept by watch");
        machine.tasks = Avail::missing("read at each full check");
        let cheap = (0..plan.settings.len())
            .filter(|&i| is_cheap(&plan.settings[i]))
            .collect();
        let boot = plan.settings.iter().any(|s| s.layer == Layer::Boot);
        PlanWatch {
            plan,
            isolated,
            machine,
            cheap,
            boot,
            drift: Drift::default(),
        }
    }

    /// Checks every setting, reading the machine's tasks anew, and counts the movable tasks
    /// allowed on isolated CPUs. On the live machine services are asked with systemctl.
    pub(crate) fn check_full(&mut self, root: &SysRoot) -> &Drift {
        self.read_cmdline(root);
        self.machine.tasks = tasks::read(&mut Reader::new(root));
        let runner = SystemRunner;
        let ctx = ApplyContext {
            root,
            machine: &self.machine,
            runner: root.is_live().then_some(&runner as &dyn Runner),
        };
        self.drift.checks = self.plan.settings.iter().map(|s| check(&ctx, s)).collect();
        self.drift.user_tasks_on_isolated = 0;
        self.drift.kernel_threads_on_isolated = 0;
        if let Some(tasks) = self.machine.tasks.get() {
            for task in tasks.tasks.iter().filter(|t| t.movable) {
                if task
                    .cpus_allowed
                    .get()
                    .is_some_and(|allowed| escapes(allowed, &self.isolated))
                {
                    if task.kernel_thread {
                        self.drift.kernel_threads_on_isolated += 1;
                    } else {
                        self.drift.user_tasks_on_isolated += 1;
                    }
                }
            }
        }
        self.machine.tasks = Avail::missing("read at each full check");
        &self.drift
    }

    /// Checks again the settings that read one file each; the others keep the verdict of the
    /// last full check, which must have been made.
    pub(crate) fn check_cheap(&mut self, root: &SysRoot) -> &Drift {
        self.read_cmdline(root);
        let ctx = ApplyContext {
            root,
            machine: &self.machine,
            runner: None,
        };
        for &i in &self.cheap {
            if let Some(slot) = self.drift.checks.get_mut(i) {
                *slot = check(&ctx, &self.plan.settings[i]);
            }
        }
        &self.drift
    }

    /// Reads `/proc/cmdline` into the model, when the plan has kernel arguments.
    fn read_cmdline(&mut self, root: &SysRoot) {
        if self.boot {
            self.machine.kernel.cmdline = match root.read("/proc/cmdline") {
                Ok(text) => Avail::Available(parse_cmdline(&text)),
                Err(e) => Avail::missing(e.to_string()),
            };
        }
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
        let first = plan.settings[0].id.clone();
        let mut watch = PlanWatch::new(plan, isolated, machine);
        let clean = watch.check_full(&tree.root()).clone();
        assert_eq!(clean.settings(), 0, "{clean:?}");
        let key = first.trim_start_matches("sysctl:").replace('.', "/");
        tree.write(&format!("/proc/sys/{key}"), "12345\n");
        let drifted = watch.check_cheap(&tree.root());
        assert_eq!(drifted.by_check()["sysctl"], 1);
        assert_eq!(drifted.examples().next().unwrap().id, first);
    }

    #[test]
    fn settings_that_read_one_file_are_cheap_the_others_wait_for_the_full_check() {
        let setting = |id: &str, layer: Layer| Setting {
            id: id.into(),
            value: "x".into(),
            layer,
            reboot: false,
            rationale: String::new(),
            source: String::new(),
            security_tradeoff: None,
        };
        for id in [
            "sysctl:vm.stat_interval",
            "irq:24:affinity",
            "irq:default:affinity",
            "workqueue:cpumask",
            "file:/etc/default/irqbalance:IRQBALANCE_BANNED_CPULIST",
            "file:/etc/lowlat/irqbalance.env",
        ] {
            assert!(is_cheap(&setting(id, Layer::Sysctl)), "{id}");
        }
        assert!(is_cheap(&setting("cmdline:nohz_full", Layer::Boot)));
        for id in [
            "service:irqbalance",
            "kthread:rcuop*:affinity",
            "file:/etc/systemd/system.conf.d/50-lowlat.conf",
        ] {
            assert!(!is_cheap(&setting(id, Layer::Sysctl)), "{id}");
        }
    }
}

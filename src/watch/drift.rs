//! The machine against the watched plan, with `lowlat verify`'s comparisons, at two costs:
//!
//! - **every interval**, the settings whose check reads one small file the plan names (a
//!   sysctl, the default IRQ affinity, a workqueue mask, irqbalance's environment files and
//!   lowlat's drop-in for its unit) or `/proc/cmdline` (kernel arguments): only those files are
//!   read, never the machine model, and each setting is expanded (which file) at the full
//!   check, not every interval. The IRQs' own affinities too, up to [`IRQS_PER_INTERVAL`] a
//!   time, in turn: a large machine's plan pins thousands of IRQs;
//! - **every drift interval** (a minute by default), every setting, services and tasks
//!   included, and the movable tasks allowed on isolated CPUs: the processes are read anew,
//!   the rest of the model is the one read at the start (the CPUs a value may name, the OS
//!   release), which no setting changes.
//!
//! Both keep the latest verdict on each setting, so a cheap check updates its settings between
//! two full checks.

use std::collections::BTreeMap;

use crate::apply::change::ApplyContext;
use crate::apply::verify::{Prepared, SettingCheck, check_prepared, prepare};
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
    pub checks: Vec<SettingCheck>,
    /// Movable user tasks allowed on an isolated CPU and a housekeeping one (at the last full
    /// check).
    pub user_tasks_on_isolated: usize,
    /// Movable kernel threads allowed on an isolated CPU and a housekeeping one (at the last
    /// full check).
    pub kernel_threads_on_isolated: usize,
}

/// How many differing settings are shown as examples.
const EXAMPLES: usize = 5;

/// How many IRQ affinities are checked per interval, in turn, when the plan sets more: on the
/// generated 512-CPU machine the plan pins 2,976 IRQs. 64 a time, each is checked every 47
/// intervals there besides the full check every minute, and every interval on machines with
/// up to 64; 256 a time (every 12 intervals) cost a tenth of the watch's CPU time for a
/// verdict the full check gives anyway. An IRQ that fires on an isolated CPU shows in the
/// interrupt counts at the next interval, whatever its turn.
pub(crate) const IRQS_PER_INTERVAL: usize = 64;

impl Drift {
    /// Per kind of setting (the setting id's first part: `sysctl`, `irq`, `cmdline`,
    /// `service`...): how many of the plan's settings of that kind differ. Every kind the plan
    /// has is present, with 0 when none differs.
    pub(crate) fn by_check(&self) -> BTreeMap<&str, usize> {
        fn kind(check: &SettingCheck) -> &'static str {
            check.id.family()
        }
        let mut by_check = BTreeMap::new();
        // Settings of a kind come together in a plan: one map entry per run of them.
        for run in self.checks.chunk_by(|a, b| kind(a) == kind(b)) {
            let drifted = run.iter().filter(|c| c.status.differs()).count();
            *by_check.entry(kind(&run[0])).or_default() += drifted;
        }
        by_check
    }

    /// The first differing settings, for people.
    pub(crate) fn examples(&self) -> impl Iterator<Item = &SettingCheck> {
        self.checks
            .iter()
            .filter(|c| c.status.differs())
            .take(EXAMPLES)
    }

    /// Settings that differ, over every kind.
    pub(crate) fn settings(&self) -> usize {
        self.checks.iter().filter(|c| c.status.differs()).count()
    }
}

/// Whether a task allowed on `allowed` escapes the isolation of `isolated`: it may run on an
/// isolated CPU and on a housekeeping one, so the scheduler may put it on the isolated one.
pub(crate) fn escapes(allowed: &CpuSet, isolated: &CpuSet) -> bool {
    allowed.intersects(isolated) && !allowed.is_subset(isolated)
}

/// How often a setting is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cost {
    /// It reads one small file the plan names (or `/proc/cmdline`): every interval.
    Cheap,
    /// One IRQ's affinity: one file, but a plan may have thousands; in turn.
    Irq,
    /// Anything else: at the full check.
    Full,
}

/// How often `setting` is checked.
fn cost(setting: &Setting) -> Cost {
    if setting.layer == Layer::Boot {
        return Cost::Cheap;
    }
    let irqbalance_file = |path: &str| {
        irqbalance::PATHS.contains(&path)
            || [
                planned_irqbalance::ENV_PATH,
                planned_irqbalance::DROPIN_PATH,
            ]
            .contains(&path)
    };
    match &setting.id {
        SettingId::Irq(_) => Cost::Irq,
        SettingId::Sysctl(_) | SettingId::IrqDefault | SettingId::Workqueue(_) => Cost::Cheap,
        SettingId::FileKey { path, .. } | SettingId::File(path) if irqbalance_file(path) => {
            Cost::Cheap
        }
        _ => Cost::Full,
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
    /// How often each setting of the plan is checked.
    costs: Vec<Cost>,
    /// The settings checked every interval, as prepared at the last full check: (index in
    /// the plan, what it expands to).
    cheap: Vec<(usize, Prepared)>,
    /// The IRQ affinities, prepared likewise, checked [`IRQS_PER_INTERVAL`] a time.
    irqs: Vec<(usize, Prepared)>,
    /// Where in `irqs` the next interval starts.
    next_irq: usize,
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
        let costs = plan.settings.iter().map(cost).collect();
        let boot = plan.settings.iter().any(|s| s.layer == Layer::Boot);
        PlanWatch {
            plan,
            isolated,
            machine,
            costs,
            cheap: Vec::new(),
            irqs: Vec::new(),
            next_irq: 0,
            boot,
            drift: Drift::default(),
        }
    }

    /// Checks every setting, reading the machine's tasks anew, and counts the movable tasks
    /// allowed on isolated CPUs. On the live machine services are asked with systemctl.
    pub(crate) fn check_full(&mut self, root: &SysRoot) -> &Drift {
        self.read_cmdline(root);
        self.machine.tasks = tasks::read(&mut Reader::new(root));
        let ctx = ApplyContext::new(root, &self.machine);
        let (mut checks, mut cheap, mut irqs) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (setting, cost)) in self.plan.settings.iter().zip(&self.costs).enumerate() {
            let prepared = prepare(&ctx, setting);
            checks.push(check_prepared(&ctx, setting, &prepared));
            match cost {
                Cost::Cheap => cheap.push((i, prepared)),
                Cost::Irq => irqs.push((i, prepared)),
                Cost::Full => {}
            }
        }
        (self.drift.checks, self.cheap, self.irqs) = (checks, cheap, irqs);
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

    /// Checks again the settings that read one file each, and the next IRQ affinities in
    /// turn; the others keep the verdict of the last full check (nothing is checked before
    /// the first).
    pub(crate) fn check_cheap(&mut self, root: &SysRoot) -> &Drift {
        self.read_cmdline(root);
        let ctx = ApplyContext {
            root,
            machine: &self.machine,
            runner: None,
        };
        let turn = self.irqs.len().min(IRQS_PER_INTERVAL);
        let irqs = (0..turn).map(|k| &self.irqs[(self.next_irq + k) % self.irqs.len()]);
        for (i, prepared) in self.cheap.iter().chain(irqs) {
            self.drift.checks[*i] = check_prepared(&ctx, &self.plan.settings[*i], prepared);
        }
        self.next_irq = (self.next_irq + turn) % self.irqs.len().max(1);
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
            crate::plan::findings::profile_settings(&machine, &profile, partition)
        })
        .unwrap();
        plan.settings
            .retain(|s| matches!(s.id, SettingId::Sysctl(_)));
        // Make the machine match the plan, then change one value.
        for setting in &plan.settings {
            let key = setting.id.without_family().replace('.', "/");
            tree.write(&format!("/proc/sys/{key}"), format!("{}\n", setting.value));
        }
        let isolated = plan.partition.isolated.clone();
        let first = plan.settings[0].id.clone();
        let mut watch = PlanWatch::new(plan, isolated, machine);
        let clean = watch.check_full(&tree.root()).clone();
        assert_eq!(clean.settings(), 0, "{clean:?}");
        let key = first.without_family().replace('.', "/");
        tree.write(&format!("/proc/sys/{key}"), "12345\n");
        let drifted = watch.check_cheap(&tree.root());
        assert_eq!(drifted.by_check()["sysctl"], 1);
        assert_eq!(drifted.examples().next().unwrap().id, first);
    }

    fn setting(id: &str, layer: Layer, value: &str) -> Setting {
        Setting {
            id: id.parse().unwrap(),
            value: value.into(),
            layer,
            reboot: false,
            rationale: String::new(),
            source: String::new(),
            security_tradeoff: None,
        }
    }

    #[test]
    fn settings_that_read_one_file_are_cheap_irqs_go_in_turn_the_others_wait() {
        for id in [
            "sysctl:vm.stat_interval",
            "irq:default:affinity",
            "workqueue:cpumask",
            "file:/etc/default/irqbalance:IRQBALANCE_BANNED_CPULIST",
            "file:/etc/lowlat/irqbalance.env",
        ] {
            assert_eq!(cost(&setting(id, Layer::Sysctl, "x")), Cost::Cheap, "{id}");
        }
        let nohz_full = setting("cmdline:nohz_full", Layer::Boot, "1");
        assert_eq!(cost(&nohz_full), Cost::Cheap);
        let irq = setting("irq:24:affinity", Layer::Runtime, "0");
        assert_eq!(cost(&irq), Cost::Irq);
        for id in [
            "service:irqbalance",
            "kthread:rcuop*:affinity",
            "file:/etc/systemd/system.conf.d/50-lowlat.conf",
        ] {
            assert_eq!(cost(&setting(id, Layer::Runtime, "x")), Cost::Full, "{id}");
        }
    }

    #[test]
    fn irq_affinities_are_checked_in_turns() {
        let tree = TestTree::fixture("rt-guest-4vcpu");
        let machine = Machine::read(&tree.root());
        let request = crate::plan::request::PlanRequest::default();
        let mut plan = crate::plan::build(&machine, &request, |_| Vec::new()).unwrap();
        let count = IRQS_PER_INTERVAL as u32 + 10;
        let irq = |n: u32| format!("/proc/irq/{}/smp_affinity_list", 1000 + n);
        plan.settings = (0..count)
            .map(|n| setting(&format!("irq:{}:affinity", 1000 + n), Layer::Runtime, "0"))
            .collect();
        for n in 0..count {
            tree.write(&irq(n), "0\n");
        }
        let isolated = plan.partition.isolated.clone();
        let mut watch = PlanWatch::new(plan, isolated, machine);
        let root = tree.root();
        assert_eq!(watch.check_full(&root).settings(), 0);
        // The last IRQ moves: the first turn does not reach it, the second does.
        tree.write(&irq(count - 1), "0-3\n");
        assert_eq!(watch.check_cheap(&root).settings(), 0);
        let second = watch.check_cheap(&root);
        assert_eq!(second.by_check()["irq"], 1);
        assert_eq!(second.examples().next().unwrap().actual, "0-3");
    }
}

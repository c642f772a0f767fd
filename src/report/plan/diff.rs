//! `lowlat plan --diff`: for each planned setting, the value on the machine now and the planned
//! one, in the same form so that they compare as text.

use crate::text::Page;
use std::collections::HashMap;

use crate::machine::irq::Irq;
use crate::machine::power::{BoostState, CpuPower, ResumeLatency};
use crate::machine::tasks::SchedPolicy;
use crate::machine::{Avail, CpuSet, Machine};
use crate::plan::Plan;
use crate::plan::{irq_plan, kernel_cmdline};
use crate::sysroot::{ReadError, SysRoot};
use crate::tuning::runtime_isolation::stays_in_root;
use crate::tuning::setting::{Layer, Setting, value_for_people};
use crate::tuning::setting_id::{self, CpusetAttribute, SettingId, TaskAttribute};

/// The value of a knob on the machine now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Current {
    /// The value, in the form the plan writes it.
    Value(String),
    /// The knob is not set at all (an absent file, no such argument).
    Absent,
    /// lowlat cannot tell, and why.
    Unknown(String),
}

/// Whether a setting already has its planned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffStatus {
    /// Already as planned.
    Same,
    /// Will change.
    Change,
    /// The current value is unknown.
    Unknown,
}

/// One line of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The setting's identity.
    pub id: SettingId,
    /// Where it lives.
    pub layer: Layer,
    /// Whether the change needs a reboot.
    pub reboot: bool,
    /// The value now.
    pub current: Current,
    /// The planned value.
    pub planned: String,
    /// Same, change or unknown.
    pub status: DiffStatus,
}

/// The machine and the files under its root, with its IRQs and per-CPU power states indexed
/// by number: a plan of 50,000 IRQ or 8,192 per-CPU settings looks each one up once.
struct Now<'a> {
    machine: &'a Machine,
    root: &'a SysRoot,
    /// The numbered IRQs by number (empty when they could not be read).
    irqs: HashMap<u32, &'a Irq>,
    /// The power state of each CPU, by CPU number.
    power: HashMap<u32, &'a CpuPower>,
}

impl<'a> Now<'a> {
    fn of(machine: &'a Machine, root: &'a SysRoot) -> Self {
        let irqs = machine.irqs.get().map_or_else(HashMap::new, |irqs| {
            irqs.irqs
                .iter()
                .rev()
                .map(|irq| (irq.number, irq))
                .collect()
        });
        let power = machine
            .power
            .cpus
            .iter()
            .rev()
            .map(|c| (c.cpu, c))
            .collect();
        Self {
            machine,
            root,
            irqs,
            power,
        }
    }
}

/// Compares every setting of `plan` with `machine` (and the files under `root`).
pub fn diff(plan: &Plan, machine: &Machine, root: &SysRoot) -> Vec<Entry> {
    let now = Now::of(machine, root);
    plan.settings
        .iter()
        .map(|s| {
            let current = current_in(s, &now);
            let status = match &current {
                Current::Value(v) if *v == s.value => DiffStatus::Same,
                Current::Absent if s.value.is_empty() => DiffStatus::Same,
                Current::Unknown(_) => DiffStatus::Unknown,
                _ => DiffStatus::Change,
            };
            Entry {
                id: s.id.clone(),
                layer: s.layer,
                reboot: s.reboot,
                current,
                planned: s.value.clone(),
                status,
            }
        })
        .collect()
}

/// A CPU set in the form of `like`: a list, or a mask of `nr_cpu_ids` CPUs when `like` is one.
fn same_form(cpus: &CpuSet, mask_of: Option<u32>) -> String {
    match mask_of {
        Some(nr_cpu_ids) => cpus.to_mask(nr_cpu_ids),
        None => cpus.to_list(),
    }
}

fn cpus(value: &Avail<CpuSet>, mask_of: Option<u32>) -> Current {
    match value {
        Avail::Available(cpus) => Current::Value(same_form(cpus, mask_of)),
        Avail::Unavailable { unavailable } => Current::Unknown(unavailable.clone()),
    }
}

/// The current value of one setting (for many, [`diff`] indexes the machine once).
pub fn current(s: &Setting, machine: &Machine, root: &SysRoot) -> Current {
    current_in(s, &Now::of(machine, root))
}

/// The current value of one setting, looked up in `now`.
fn current_in(s: &Setting, now: &Now) -> Current {
    let (machine, root) = (now.machine, now.root);
    let nr_cpu_ids = machine.topology.nr_cpu_ids();
    match &s.id {
        SettingId::File(path) => match root.read(path) {
            Ok(text) => Current::Value(text),
            Err(ReadError::NotFound { .. }) => Current::Absent,
            Err(e) => Current::Unknown(e.to_string()),
        },
        // One line of a file: not read yet, shown as absent (as the whole file under the
        // name `PATH:KEY` always was).
        SettingId::FileKey { .. } => Current::Absent,
        SettingId::IrqDefault | SettingId::Irq(_) | SettingId::EveryIrq => current_irq(s, now),
        SettingId::Workqueue(None) => cpus(&machine.services.workqueue_cpumask, Some(nr_cpu_ids)),
        SettingId::Workqueue(Some(name)) if name == "writeback" => {
            cpus(&machine.services.writeback_cpumask, Some(nr_cpu_ids))
        }
        SettingId::Workqueue(Some(name)) => {
            Current::Unknown(format!("lowlat does not read workqueue {name}:cpumask"))
        }
        SettingId::Cmdline(_) => current_cmdline(s, machine),
        SettingId::Sysctl(key) => match machine.kernel.sysctls.get(key) {
            Some(Avail::Available(value)) => Current::Value(value.clone()),
            Some(Avail::Unavailable { unavailable }) => Current::Unknown(unavailable.clone()),
            None => Current::Unknown(format!("lowlat does not read sysctl {key}")),
        },
        SettingId::Tasks {
            kernel,
            pattern,
            attribute,
        } => current_task(pattern, *attribute, machine, *kernel),
        SettingId::Rps(interface) => current_rps(interface, machine),
        SettingId::Thp(attribute) => {
            let thp = &machine.kernel.thp;
            let choice = match *attribute {
                "enabled" => &thp.enabled,
                "defrag" => &thp.defrag,
                _ => return Current::Unknown(format!("lowlat does not read thp {attribute}")),
            };
            match choice {
                Avail::Available(choice) => Current::Value(choice.current.clone()),
                Avail::Unavailable { unavailable } => Current::Unknown(unavailable.clone()),
            }
        }
        SettingId::Clocksource => match &machine.kernel.clocksource {
            Avail::Available(clocksource) => Current::Value(clocksource.current.clone()),
            Avail::Unavailable { unavailable } => Current::Unknown(unavailable.clone()),
        },
        SettingId::Boost | SettingId::Cpufreq { .. } => current_cpufreq(&s.id, machine),
        SettingId::ResumeLatency(cpu) => current_resume_latency(*cpu, now),
        SettingId::Service(unit) => {
            match machine.services.service(unit.trim_end_matches(".service")) {
                Some(service) if service.enabled => Current::Value("enabled".into()),
                Some(service) if service.installed => Current::Value("disabled".into()),
                _ => Current::Absent,
            }
        }
        SettingId::Cpuidle { .. } => {
            Current::Unknown("lowlat does not read cpuidle settings yet".to_string())
        }
        SettingId::Hugepages { .. } => {
            Current::Unknown("lowlat does not read hugepages settings yet".to_string())
        }
        SettingId::Cpuset { path, attribute } => {
            current_cpuset(path, *attribute, &s.value, machine)
        }
        SettingId::Nic { interface, knob } => current_nic(interface, *knob, machine),
    }
}

/// The current value of a NIC knob, as inventory read it.
fn current_nic(name: &str, knob: crate::machine::nic::knob::Knob, machine: &Machine) -> Current {
    let interfaces = match &machine.net {
        Avail::Available(interfaces) => interfaces,
        Avail::Unavailable { unavailable } => return Current::Unknown(unavailable.clone()),
    };
    let Some(iface) = interfaces.iter().find(|i| i.name == name) else {
        return Current::Absent;
    };
    let Some(nic) = &iface.nic else {
        return Current::Unknown(format!("ethtool said nothing about {name}"));
    };
    match knob.current(nic) {
        Ok(value) => Current::Value(knob.show(value)),
        Err(why) => Current::Unknown(why.to_string()),
    }
}

/// The current value of a `cpuset:` setting, from the cpuset tree the plan read: absent when
/// the cpuset is; for `tasks`, how many movable threads the source cpuset still holds.
fn current_cpuset(
    path: &str,
    attribute: CpusetAttribute,
    value: &str,
    machine: &Machine,
) -> Current {
    let tree = match &machine.cpusets {
        Some(Avail::Available(tree)) => tree,
        Some(Avail::Unavailable { unavailable }) => return Current::Unknown(unavailable.clone()),
        None => return Current::Unknown("the cpuset hierarchy was not read".into()),
    };
    let flag = |flag: Option<bool>| match flag {
        Some(on) => Current::Value(if on { "1" } else { "0" }.into()),
        None => Current::Unknown("not a cgroup v1 cpuset".into()),
    };
    if attribute == CpusetAttribute::Tasks {
        let Some(from) = tree.group(value) else {
            return Current::Absent;
        };
        let tasks = machine
            .tasks
            .get()
            .map(|t| &t.tasks[..])
            .unwrap_or_default();
        let movable = tasks
            .iter()
            .filter(|t| from.tasks.binary_search(&t.pid).is_ok())
            .filter(|t| !stays_in_root(t.kernel_thread, t.affinity_locked, &t.comm))
            .count();
        return Current::Value(if movable == 0 {
            value.to_string()
        } else {
            format!("{movable} movable processes in {value}")
        });
    }
    let Some(group) = tree.group(path) else {
        return Current::Absent;
    };
    match attribute {
        CpusetAttribute::Cpus => match &group.cpus {
            Some(cpus) => Current::Value(cpus.to_list()),
            None => Current::Unknown(format!("{path} has no cpuset.cpus")),
        },
        CpusetAttribute::CpuExclusive => flag(group.cpu_exclusive),
        CpusetAttribute::SchedLoadBalance => flag(group.sched_load_balance),
        CpusetAttribute::Partition => match &group.partition {
            Some(state) => Current::Value(state.to_string()),
            None => Current::Unknown("not a cgroup v2 cpuset".into()),
        },
        CpusetAttribute::Tasks => Current::Absent,
    }
}

/// Every argument of the current command line with a key the setting owns, in order.
fn current_cmdline(s: &Setting, machine: &Machine) -> Current {
    let cmdline = match &machine.kernel.cmdline {
        Avail::Available(cmdline) => cmdline,
        Avail::Unavailable { unavailable } => return Current::Unknown(unavailable.clone()),
    };
    let keys = kernel_cmdline::owned_keys(s);
    let args: Vec<String> = cmdline
        .params
        .iter()
        .filter(|p| keys.iter().any(|k| p.is(k)))
        .map(|p| match &p.value {
            Some(value) if value.contains(char::is_whitespace) => format!("{}=\"{value}\"", p.key),
            Some(value) => format!("{}={value}", p.key),
            None => p.key.clone(),
        })
        .collect();
    if args.is_empty() {
        Current::Absent
    } else {
        Current::Value(args.join(" "))
    }
}

fn current_irq(s: &Setting, now: &Now) -> Current {
    let machine = now.machine;
    if s.id == SettingId::IrqDefault {
        return cpus(
            &machine.irq_default_affinity,
            Some(machine.topology.nr_cpu_ids()),
        );
    }
    if let Avail::Unavailable { unavailable } = &machine.irqs {
        return Current::Unknown(unavailable.clone());
    }
    match irq_plan::number(&s.id).and_then(|n| now.irqs.get(&n)) {
        Some(irq) => cpus(&irq.affinity, None),
        None => Current::Absent,
    }
}

fn current_rps(name: &str, machine: &Machine) -> Current {
    let interfaces = match &machine.net {
        Avail::Available(interfaces) => interfaces,
        Avail::Unavailable { unavailable } => return Current::Unknown(unavailable.clone()),
    };
    let Some(iface) = interfaces.iter().find(|i| i.name == name) else {
        return Current::Absent;
    };
    let nr_cpu_ids = machine.topology.nr_cpu_ids();
    let mut masks: Vec<String> = Vec::new();
    for queue in &iface.rx_queues {
        let mask = queue
            .rps_cpus
            .get()
            .map_or_else(|| "?".to_string(), |cpus| cpus.to_mask(nr_cpu_ids));
        if !masks.contains(&mask) {
            masks.push(mask);
        }
    }
    distinct(masks)
}

/// A cpufreq knob over every policy: one value, or the distinct ones.
fn current_cpufreq(id: &SettingId, machine: &Machine) -> Current {
    let policies = match &machine.power.cpufreq {
        Avail::Available(policies) => policies,
        Avail::Unavailable { unavailable } => return Current::Unknown(unavailable.clone()),
    };
    let mut values: Vec<String> = Vec::new();
    for policy in policies {
        let value = match id {
            SettingId::Cpufreq {
                policy: None,
                attribute: "scaling_governor",
            } => &policy.governor,
            SettingId::Cpufreq {
                policy: None,
                attribute: "energy_performance_preference",
            } => &policy.energy_performance_preference,
            SettingId::Boost => {
                return match &machine.power.boost {
                    Avail::Available(boost) => Current::Value(
                        match boost.state {
                            BoostState::Enabled => "1",
                            BoostState::Disabled => "0",
                            BoostState::Mixed => "mixed",
                        }
                        .into(),
                    ),
                    Avail::Unavailable { unavailable } => Current::Unknown(unavailable.clone()),
                };
            }
            _ => return Current::Unknown(format!("lowlat does not read {id}")),
        };
        let value = value.get().cloned().unwrap_or_else(|| "?".into());
        if !values.contains(&value) {
            values.push(value);
        }
    }
    distinct(values)
}

/// `cpu:N:pm_qos_resume_latency_us`, as the file reads.
fn current_resume_latency(cpu: u32, now: &Now) -> Current {
    match now.power.get(&cpu) {
        Some(power) => match &power.resume_latency {
            Avail::Available(ResumeLatency::NoConstraint) => Current::Value("0".into()),
            Avail::Available(ResumeLatency::ZeroLatency) => Current::Value("n/a".into()),
            Avail::Available(ResumeLatency::MaxUs(us)) => Current::Value(us.to_string()),
            Avail::Unavailable { unavailable } => Current::Unknown(unavailable.clone()),
        },
        None => Current::Absent,
    }
}

/// One value, several as `mixed: a; b`, or absent.
fn distinct(mut values: Vec<String>) -> Current {
    match values.len() {
        0 => Current::Absent,
        1 => Current::Value(values.remove(0)),
        _ => Current::Value(format!("mixed: {}", values.join("; "))),
    }
}

/// `kthread:NAME:affinity|priority` (kernel threads) or `task:NAME:...` (user tasks): the
/// value of every matching task, one or the distinct ones.
fn current_task(
    pattern: &str,
    attribute: TaskAttribute,
    machine: &Machine,
    kernel: bool,
) -> Current {
    let tasks = match &machine.tasks {
        Avail::Available(tasks) => tasks,
        Avail::Unavailable { unavailable } => return Current::Unknown(unavailable.clone()),
    };
    let mut values: Vec<String> = Vec::new();
    for task in tasks
        .tasks
        .iter()
        .filter(|t| t.kernel_thread == kernel && setting_id::matches(pattern, &t.comm))
    {
        let value = match attribute {
            TaskAttribute::Priority => match task.policy {
                SchedPolicy::Fifo => format!("fifo:{}", task.rt_priority),
                SchedPolicy::Rr => format!("rr:{}", task.rt_priority),
                other => format!("{other:?}").to_lowercase(),
            },
            TaskAttribute::Affinity => match task.cpus_allowed.get() {
                Some(cpus) => cpus.to_list(),
                None => "?".into(),
            },
        };
        if !values.contains(&value) {
            values.push(value);
        }
    }
    distinct(values)
}

/// Shortens a value of setting `id` for one table cell: files show their line count, CPU
/// masks their CPU list (labelled with the mask).
fn cell(id: &SettingId, layer: Layer, value: &str) -> String {
    if layer == Layer::File {
        return format!("({} lines)", value.lines().count());
    }
    if value.is_empty() {
        return "(removed)".into();
    }
    crate::machine::truncate(&value_for_people(id, value), 60)
}

/// The diff as a table: one line per setting, `=` same, `~` change, `?` unknown.
pub fn text(entries: &[Entry]) -> String {
    let mut out = Page::new();
    let same = entries
        .iter()
        .filter(|e| e.status == DiffStatus::Same)
        .count();
    let change = entries
        .iter()
        .filter(|e| e.status == DiffStatus::Change)
        .count();
    let reboot = entries
        .iter()
        .filter(|e| e.status == DiffStatus::Change && e.reboot)
        .count();
    let unknown = entries.len() - same - change;
    writeln!(
        out,
        "{}: {same} already as planned, {change} to change ({reboot} of them at the next boot), {unknown} unknown",
        crate::units::plural(entries.len(), "setting", "settings")
    );
    out.text("  = already as planned   ~ to change   ? current value unknown\n\n");
    let width = entries
        .iter()
        .map(|e| e.id.to_string().chars().count())
        .max()
        .unwrap_or(0)
        .min(48);
    for e in entries {
        let mark = match e.status {
            DiffStatus::Same => '=',
            DiffStatus::Change => '~',
            DiffStatus::Unknown => '?',
        };
        let now = match &e.current {
            Current::Value(v) => cell(&e.id, e.layer, v),
            Current::Absent => "(absent)".into(),
            Current::Unknown(why) => format!("(unknown: {})", crate::machine::truncate(why, 50)),
        };
        let id = e.id.to_string();
        let id = if id.chars().count() > width {
            crate::machine::truncate(&id, width.saturating_sub(3))
        } else {
            id
        };
        writeln!(
            out,
            "{mark} {id:<width$}  {now}  ->  {}",
            cell(&e.id, e.layer, &e.planned)
        );
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Reader;
    use crate::machine::cgroup_cpuset::{self, fixtures};
    use crate::test_tree::TestTree;

    #[test]
    fn cpuset_settings_show_the_tree_as_read() {
        let guest = TestTree::fixture("kvm-guest-2vcpu");
        let root = guest.root();
        let mut machine = Machine::read(&root);
        let tree = fixtures::v1();
        machine.cpusets = Some(cgroup_cpuset::read(&mut Reader::new(&tree.root())));
        let now = |id: &str, value: &str| {
            let s = crate::plan::setting(id.parse().unwrap(), value, Layer::Runtime, "", "");
            match current(&s, &machine, &root) {
                Current::Value(v) => v,
                Current::Absent => "absent".into(),
                Current::Unknown(why) => format!("unknown: {why}"),
            }
        };
        assert_eq!(now("cpuset:/libpod_parent:cpus", "0"), "0-1");
        assert_eq!(now("cpuset:/lowlat-isolated:cpus", "1"), "absent");
        assert_eq!(now("cpuset:/:sched_load_balance", "0"), "1");
        assert!(now("cpuset:/:partition", "isolated").starts_with("unknown"));
        // The tree's root lists pids 1, 2 (kthreadd), 10 (a kworker) and 300, which the
        // guest does not run: only pid 1 can move.
        assert_eq!(
            now("cpuset:/lowlat-housekeeping:tasks", "/"),
            "1 movable processes in /"
        );
    }
}

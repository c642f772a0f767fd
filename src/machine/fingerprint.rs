//! The settings that matter, as one flat map: what a measurement was taken under and what makes
//! two hosts "the same". Every measurement document records it in its environment
//! (`environment.settings`), so that any two documents can be diffed key by key. Pure: it only
//! looks at a [`Machine`].
//!
//! Keys are stable, lower-case and dotted by subject (`cpu.model`, `topology.sockets`,
//! `memory.population`); knobs that lowlat can set use their setting id (`sysctl:vm.swappiness`,
//! `cmdline:nohz_full`, `cpufreq:boost`, `thp:enabled`, `hugepages:1048576kB`), so a difference
//! points straight at the plan's setting. Values are text as the machine shows them; a value the
//! machine could not tell is [`UNAVAILABLE`] (its reason is in the inventory, and reasons differ
//! between hosts where the fact does not).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Machine;
use super::avail::Avail;
use super::cgroup_cpuset::CpusetTree;
use super::cpulist::CpuSet;
use super::nic::knob::Knob;
use super::power::{BoostState, ResumeLatency};

/// The value of a key whose source could not be read.
pub const UNAVAILABLE: &str = "unavailable";

/// The settings that matter of one machine: key → value, sorted by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(pub BTreeMap<String, String>);

impl Fingerprint {
    /// Reads the settings that matter from the machine model.
    pub fn of(machine: &Machine) -> Fingerprint {
        let mut map = Entries::default();
        hardware(machine, &mut map);
        firmware(machine, &mut map);
        kernel(machine, &mut map);
        power(machine, &mut map);
        services(machine, &mut map);
        Fingerprint(map.0)
    }

    /// The settings a measurement ran under: [`Fingerprint::of`] and where interrupts and
    /// kernel work may run (each IRQ's affinity, the writeback workqueue's mask, the unbound
    /// kernel threads' CPUs) and every NIC knob lowlat sets, keyed by their setting ids
    /// (`irq:45:affinity`, `workqueue:writeback:cpumask`, `kthread:kswapd0:affinity`,
    /// `nic:eth0:gro`) and the cpusets of `cpusets` (`cpuset:/lowlat-isolated:cpus`,
    /// `cpuset:/:sched_load_balance`: runtime isolation), so that compare's settings diff shows
    /// them. Not in `of`: IRQ numbers, interfaces and cgroups differ between hosts, which a
    /// fleet compares.
    pub fn of_run(machine: &Machine, cpusets: Option<&CpusetTree>) -> Fingerprint {
        let mut print = Fingerprint::of(machine);
        let mut map = Entries(std::mem::take(&mut print.0));
        placement(machine, &mut map);
        if let Some(tree) = cpusets {
            isolation(tree, &mut map);
        }
        Fingerprint(map.0)
    }

    /// The value of `key`, if the fingerprint has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The keys whose values differ between `self` and `other` (a key only one side has counts
    /// as differing), sorted.
    pub fn differing_keys<'a>(&'a self, other: &'a Fingerprint) -> Vec<&'a str> {
        let mut keys: Vec<&str> = self
            .0
            .keys()
            .chain(other.0.keys())
            .map(String::as_str)
            .filter(|key| self.get(key) != other.get(key))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

/// The map being filled, with the conversions every section needs.
#[derive(Default)]
struct Entries(BTreeMap<String, String>);

impl Entries {
    fn set(&mut self, key: impl Into<String>, value: impl ToString) {
        self.0.insert(key.into(), value.to_string());
    }

    fn avail<T>(&mut self, key: &str, value: &Avail<T>, show: impl FnOnce(&T) -> String) {
        let text = value.get().map(show).unwrap_or_else(|| UNAVAILABLE.into());
        self.set(key, text);
    }

    fn option(&mut self, key: &str, value: Option<impl ToString>) {
        match value {
            Some(value) => self.set(key, value.to_string()),
            None => self.set(key, UNAVAILABLE),
        }
    }
}

fn cpus(set: &CpuSet) -> String {
    let list = set.to_list();
    if list.is_empty() { "none".into() } else { list }
}

fn hardware(machine: &Machine, map: &mut Entries) {
    let identity = machine.cpu.get();
    map.option("cpu.vendor", identity.and_then(|c| c.vendor.clone()));
    map.option("cpu.model", identity.and_then(|c| c.model_name.clone()));
    map.option(
        "cpu.family_model_stepping",
        identity.and_then(|c| Some(format!("{}/{}/{}", c.family?, c.model?, c.stepping?))),
    );
    map.option("cpu.microcode", identity.and_then(|c| c.microcode.clone()));
    map.set(
        "hypervisor",
        machine
            .hypervisor
            .as_ref()
            .map_or("none", |h| h.vendor.as_str()),
    );
    let shape = &machine.topology.shape;
    map.set("topology.cpus", shape.cpus);
    map.set("topology.sockets", shape.sockets);
    map.set("topology.cores", shape.cores);
    map.set("topology.threads_per_core", shape.threads_per_core);
    map.set("topology.numa_nodes", shape.numa_nodes);
    map.option("topology.nodes_per_socket", shape.nodes_per_socket);
    map.set("topology.l3_groups", shape.l3_groups);
    map.avail("smt.control", &machine.topology.smt_control, Clone::clone);
}

fn firmware(machine: &Machine, map: &mut Entries) {
    let dmi = &machine.firmware.dmi;
    map.avail("firmware.system", &dmi.product_name, Clone::clone);
    map.avail("firmware.bios_vendor", &dmi.bios_vendor, Clone::clone);
    map.avail("firmware.bios_version", &dmi.bios_version, Clone::clone);
    map.avail("firmware.bios_date", &dmi.bios_date, Clone::clone);
    map.avail("memory.population", &machine.firmware.memory, |memory| {
        let mut sizes: Vec<String> = memory
            .configurations
            .iter()
            .map(|c| format!("{} MiB", c.size_mib))
            .collect();
        sizes.dedup();
        format!(
            "{} of {} slots, {} MiB ({})",
            memory.populated_slots,
            memory.total_slots,
            memory.total_mib,
            sizes.join(", ")
        )
    });
}

fn kernel(machine: &Machine, map: &mut Entries) {
    let kernel = &machine.kernel;
    map.avail("kernel.release", &kernel.release, Clone::clone);
    map.avail("kernel.preempt_rt", &kernel.preempt_rt, bool::to_string);
    map.avail("kernel.isolated", &kernel.isolation.isolated, cpus);
    map.avail("kernel.nohz_full", &kernel.isolation.nohz_full, cpus);
    map.avail("clocksource:current", &kernel.clocksource, |c| {
        c.current.clone()
    });
    if let Some(cmdline) = kernel.cmdline.get() {
        let mut by_key: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for param in cmdline.params.iter().filter(|p| !is_boot_identity(&p.key)) {
            let text = match &param.value {
                Some(value) => format!("{}={value}", param.key),
                None => param.key.clone(),
            };
            by_key.entry(&param.key).or_default().push(text);
        }
        for (key, args) in by_key {
            map.set(format!("cmdline:{key}"), args.join(" "));
        }
    } else {
        map.set("cmdline", UNAVAILABLE);
    }
    for (key, value) in &kernel.sysctls {
        map.avail(&format!("sysctl:{key}"), value, Clone::clone);
    }
    map.avail("thp:enabled", &kernel.thp.enabled, |c| c.current.clone());
    map.avail("thp:defrag", &kernel.thp.defrag, |c| c.current.clone());
    for pool in &kernel.hugepages.global {
        map.avail(
            &format!("hugepages:{}kB", pool.size_kib),
            &pool.total,
            u64::to_string,
        );
    }
    for node in &kernel.hugepages.nodes {
        for pool in &node.pools {
            map.avail(
                &format!("hugepages:node{}:{}kB", node.node, pool.size_kib),
                &pool.total,
                u64::to_string,
            );
        }
    }
}

/// Command-line keys that name this host's boot disk or console rather than a setting: they differ
/// between identical hosts (`root=UUID=…`) and would make every host of a fleet unique.
const BOOT_IDENTITY_KEYS: &[&str] = &[
    "BOOT_IMAGE",
    "initrd",
    "root",
    "rootflags",
    "rootfstype",
    "resume",
    "rd.lvm.lv",
    "rd.luks.uuid",
    "rd.md.uuid",
    "ro",
    "rw",
    "quiet",
    "rhgb",
    "splash",
    "console",
];

fn is_boot_identity(key: &str) -> bool {
    BOOT_IDENTITY_KEYS.contains(&key)
}

fn power(machine: &Machine, map: &mut Entries) {
    let power = &machine.power;
    map.avail("cpufreq:boost", &power.boost, |boost| {
        match boost.state {
            BoostState::Enabled => "1",
            BoostState::Disabled => "0",
            BoostState::Mixed => "mixed",
        }
        .into()
    });
    map.avail("cpufreq.driver", &power.cpufreq, |policies| {
        distinct(policies.iter().map(|p| p.driver.get().cloned()))
    });
    map.avail("cpufreq:governor", &power.cpufreq, |policies| {
        distinct(policies.iter().map(|p| p.governor.get().cloned()))
    });
    map.avail(
        "cpufreq:energy_performance_preference",
        &power.cpufreq,
        |policies| {
            distinct(
                policies
                    .iter()
                    .map(|p| p.energy_performance_preference.get().cloned()),
            )
        },
    );
    map.avail("cpuidle.driver", &power.cpuidle, |c| {
        c.driver
            .get()
            .cloned()
            .unwrap_or_else(|| UNAVAILABLE.into())
    });
    map.avail("cpuidle.governor", &power.cpuidle, |c| {
        c.governor
            .get()
            .cloned()
            .unwrap_or_else(|| UNAVAILABLE.into())
    });
    // Per idle state name: the CPUs that may enter it.
    let mut enabled: BTreeMap<String, CpuSet> = BTreeMap::new();
    for cpu in &power.cpus {
        for state in cpu.idle_states.get().into_iter().flatten() {
            let name = state
                .name
                .get()
                .cloned()
                .unwrap_or_else(|| state.index.to_string());
            let set = enabled.entry(name).or_default();
            if state.disabled.get() == Some(&false) {
                set.insert(cpu.cpu);
            }
        }
    }
    for (name, set) in enabled {
        map.set(format!("cpuidle.{name}.enabled_on"), cpus(&set));
    }
    let limited: CpuSet = power
        .cpus
        .iter()
        .filter(|cpu| {
            cpu.resume_latency
                .get()
                .is_some_and(|latency| !matches!(latency, ResumeLatency::NoConstraint))
        })
        .map(|cpu| cpu.cpu)
        .collect();
    map.set("pm_qos.resume_latency_limited_on", cpus(&limited));
}

fn services(machine: &Machine, map: &mut Entries) {
    let services = &machine.services;
    map.avail("workqueue:cpumask", &services.workqueue_cpumask, cpus);
    map.avail("tuned.profiles", &services.tuned.active_profiles, |p| {
        p.join(" ")
    });
    map.avail("os", &services.os_release, |os| {
        os.pretty_name.clone().unwrap_or_else(|| UNAVAILABLE.into())
    });
    for service in &services.services {
        let state = match (
            service.installed,
            service.masked,
            service.enabled,
            service.running,
        ) {
            (false, ..) => "not installed",
            (_, true, ..) => "masked",
            (_, _, _, Some(true)) => "running",
            (_, _, true, _) => "enabled",
            _ => "stopped",
        };
        map.set(format!("service:{}", service.name), state);
    }
}

fn placement(machine: &Machine, map: &mut Entries) {
    map.avail("irq:default:affinity", &machine.irq_default_affinity, cpus);
    for irq in machine.irqs.get().into_iter().flat_map(|i| &i.irqs) {
        if let Some(affinity) = irq.affinity.get() {
            map.set(format!("irq:{}:affinity", irq.number), cpus(affinity));
        }
    }
    map.avail(
        "workqueue:writeback:cpumask",
        &machine.services.writeback_cpumask,
        cpus,
    );
    // Kernel threads that may move, by name: the CPUs any of them may run on. Workers
    // (kworker) come and go by number and follow the workqueue masks, recorded above.
    let mut kthreads: BTreeMap<&str, CpuSet> = BTreeMap::new();
    for task in machine.tasks.get().into_iter().flat_map(|t| &t.tasks) {
        if !task.kernel_thread || task.per_cpu.is_some() || task.comm.starts_with("kworker") {
            continue;
        }
        if let Some(allowed) = task.cpus_allowed.get() {
            let set = kthreads.entry(task.comm.as_str()).or_default();
            for cpu in allowed.iter() {
                set.insert(cpu);
            }
        }
    }
    for (comm, set) in kthreads {
        map.set(format!("kthread:{comm}:affinity"), cpus(&set));
    }
    for interface in machine.net.get().into_iter().flatten() {
        let Some(nic) = &interface.nic else { continue };
        for knob in Knob::ALL {
            if let Ok(value) = knob.current(nic) {
                map.set(format!("nic:{}:{knob}", interface.name), value);
            }
        }
    }
}

/// The cpusets, keyed by the setting ids runtime isolation writes
/// (`cpuset:<path>:<attribute>`): below the root each cpuset's CPUs as written (v2: where not
/// the parent's), its v1 flags and its v2 partition; the root's load balancing (v1). Which
/// threads a cpuset holds changes from run to run and is left out.
fn isolation(tree: &CpusetTree, map: &mut Entries) {
    let flag = |on: bool| if on { "1" } else { "0" };
    for group in &tree.groups {
        let key = |attribute: &str| format!("cpuset:{}:{attribute}", group.path);
        if group.path != "/" {
            if let Some(set) = group.cpus.as_ref().filter(|s| !s.is_empty()) {
                map.set(key("cpus"), cpus(set));
            }
            if let Some(on) = group.cpu_exclusive {
                map.set(key("cpu_exclusive"), flag(on));
            }
            if let Some(partition) = &group.partition {
                map.set(key("partition"), partition);
            }
        }
        if let Some(on) = group.sched_load_balance {
            map.set(key("sched_load_balance"), flag(on));
        }
    }
}

/// One value when every item agrees, else the distinct values joined by `|` in first-seen order;
/// unreadable items are [`UNAVAILABLE`].
fn distinct(values: impl Iterator<Item = Option<String>>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for value in values {
        let value = value.unwrap_or_else(|| UNAVAILABLE.into());
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    if seen.is_empty() {
        "none".into()
    } else {
        seen.join("|")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysroot::SysRoot;
    use std::path::Path;

    fn fixture(name: &str) -> Machine {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines")
            .join(name);
        Machine::read(&SysRoot::dir(path))
    }

    #[test]
    fn a_tuned_host_differs_from_its_untuned_twin_in_the_tuning_and_not_the_hardware() {
        let before = Fingerprint::of(&fixture("epyc7f32-2s"));
        let after = Fingerprint::of(&fixture("epyc7f32-2s-tuned"));
        let differing = before.differing_keys(&after);
        assert!(differing.contains(&"cmdline:nohz_full"), "{differing:?}");
        for key in [
            "cpu.model",
            "topology.cpus",
            "topology.sockets",
            "memory.population",
        ] {
            assert!(!differing.contains(&key), "{key} differs: {differing:?}");
        }
        assert_eq!(before.get("topology.sockets"), Some("2"));
    }

    #[test]
    fn the_same_machine_read_twice_has_the_same_fingerprint() {
        let a = Fingerprint::of(&fixture("milan64-nps4-smt"));
        let b = Fingerprint::of(&fixture("milan64-nps4-smt"));
        assert!(a.differing_keys(&b).is_empty());
        assert_eq!(a.get("topology.nodes_per_socket"), Some("4"));
    }

    /// N11: compare's settings diff left out IRQ affinities, kernel thread masks, the
    /// writeback mask and NIC knobs: a measurement's settings hold them.
    #[test]
    fn a_run_records_where_interrupts_and_kernel_threads_may_run() {
        for name in ["xeon-2s-smt", "kvm-guest-2vcpu", "epyc7f32-2s-tuned"] {
            let machine = fixture(name);
            let print = Fingerprint::of_run(&machine, None);
            let keys = |prefix: &str| print.0.keys().filter(|k| k.starts_with(prefix)).count();
            let irqs = machine.irqs.get().unwrap();
            let irq = &irqs.irqs[0];
            assert_eq!(
                print.get(&format!("irq:{}:affinity", irq.number)),
                irq.affinity.get().map(cpus).as_deref(),
                "{name}"
            );
            assert!(print.get("irq:default:affinity").is_some(), "{name}");
            assert!(print.get("workqueue:writeback:cpumask").is_some(), "{name}");
            assert!(keys("kthread:") > 0, "{name}: no kernel thread");
            assert_eq!(keys("kthread:kworker"), 0, "{name}");
            // The fleet's fingerprint keeps none of them.
            let fleet = Fingerprint::of(&machine);
            assert!(
                !fleet
                    .0
                    .keys()
                    .any(|k| k.starts_with("irq:") || k.starts_with("kthread:"))
            );
        }
        // A recorded ixgbe NIC: its knobs as setting ids, values as apply writes them.
        let tree = crate::test_tree::TestTree::empty();
        crate::machine::nic::recorded::write(
            &tree,
            "eth4",
            &crate::machine::nic::recorded::recording("ixgbe"),
            1,
        );
        let nics = Fingerprint::of_run(&Machine::read(&tree.root()), None);
        assert_eq!(nics.get("nic:eth4:gro"), Some("1"));
        assert_eq!(nics.get("nic:eth4:rx-usecs"), Some("1"));
        assert_eq!(nics.get("nic:eth4:combined"), Some("14"));
    }

    #[test]
    fn it_serializes_as_a_flat_map() {
        let print = Fingerprint::of(&fixture("xeon-2s-smt"));
        let json = serde_json::to_value(&print).unwrap();
        assert!(json.is_object());
        assert!(json["kernel.release"].is_string());
    }
}

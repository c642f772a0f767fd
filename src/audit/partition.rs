//! The CPU partition an audit checks against: the one given with `--isolate`, else the one the
//! machine already has (`isolcpus=`, `nohz_full=`), else lowlat's default partition (the first
//! physical core of each NUMA node, with its SMT siblings, for housekeeping).

use serde::{Deserialize, Serialize};

use crate::machine::{CpuSet, Machine};
use crate::tuning::partition::{self, CpuList, PartitionError, PartitionRequest};

/// Where the isolated set of an audit comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum PartitionSource {
    /// `--isolate CPULIST`.
    Flag,
    /// The machine's own isolation.
    Kernel {
        /// The files and parameters it was read from (`/sys/devices/system/cpu/nohz_full`,
        /// `isolcpus= in /proc/cmdline`).
        from: Vec<String>,
    },
    /// A site profile's `[partition]`.
    Profile {
        /// Where it is written, `FILE:LINE`.
        place: String,
    },
    /// lowlat's default partition, since the machine isolates nothing.
    Default,
    /// No partition could be formed; rules about isolation report `unknown`.
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// The partition of an audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPartition {
    /// CPUs for the OS, IRQs and kernel threads (the online CPUs not isolated).
    pub housekeeping: CpuSet,
    /// CPUs for the latency-critical workload.
    pub isolated: CpuSet,
    /// Where the isolated set comes from.
    pub source: PartitionSource,
    /// Number of possible CPUs, which sets the width of the kernel's hex masks.
    pub nr_cpus: u32,
}

impl AuditPartition {
    /// Whether a partition exists (the isolation rules have something to check).
    pub fn is_known(&self) -> bool {
        !matches!(self.source, PartitionSource::Unavailable { .. })
    }

    /// The housekeeping CPUs as a kernel hex mask.
    pub fn housekeeping_mask(&self) -> String {
        self.housekeeping.to_mask(self.nr_cpus)
    }

    /// One line for reports: `housekeeping 0,8, isolated 1-7,9-15 (the machine's own, from
    /// /sys/devices/system/cpu/nohz_full)`.
    pub fn describe(&self) -> String {
        let from = match &self.source {
            PartitionSource::Flag => "from --isolate".to_string(),
            PartitionSource::Profile { place } => format!("from the site profile, {place}"),
            PartitionSource::Kernel { from } => format!("the machine's own, from {}", from.join(", ")),
            PartitionSource::Default => {
                "lowlat's default: the machine isolates nothing; first core of each NUMA node for housekeeping"
                    .to_string()
            }
            PartitionSource::Unavailable { reason } => return format!("none: {reason}"),
        };
        format!(
            "housekeeping {}, isolated {} ({from})",
            list_or_none(&self.housekeeping),
            list_or_none(&self.isolated)
        )
    }
}

fn list_or_none(set: &CpuSet) -> String {
    if set.is_empty() {
        "none".to_string()
    } else {
        set.to_list()
    }
}

/// The CPUs the kernel isolates in any way (the `isolated` and `nohz_full` files, and
/// `isolcpus=`, `nohz_full=` on the command line), with the sources that contributed, each
/// named by its file (`/sys/devices/system/cpu/nohz_full`, `nohz_full= in /proc/cmdline`).
pub fn kernel_isolated(machine: &Machine) -> (CpuSet, Vec<String>) {
    let isolation = &machine.kernel.isolation;
    let mut set = CpuSet::new();
    let mut from = Vec::new();
    let mut add = |name: &str, cpus: Option<&CpuSet>| {
        if let Some(cpus) = cpus.filter(|c| !c.is_empty()) {
            set = set.union(cpus);
            from.push(name.to_string());
        }
    };
    add(
        "/sys/devices/system/cpu/nohz_full",
        isolation.nohz_full.get(),
    );
    add("/sys/devices/system/cpu/isolated", isolation.isolated.get());
    add(
        "isolcpus= in /proc/cmdline",
        isolation
            .isolcpus
            .as_ref()
            .and_then(|v| v.get())
            .map(|i| &i.cpus),
    );
    add(
        "nohz_full= in /proc/cmdline",
        isolation.cmdline_nohz_full.as_ref().and_then(|v| v.get()),
    );
    (set, from)
}

/// Chooses the partition: `isolate` if given (checked against the machine's CPUs), else the
/// machine's own isolated CPUs, else the default partition. Only a bad `--isolate` is an
/// error; a machine whose partition cannot be formed gets [`PartitionSource::Unavailable`].
pub fn choose(
    machine: &Machine,
    isolate: Option<&CpuSet>,
) -> Result<AuditPartition, PartitionError> {
    let topology = &machine.topology;
    let online = topology.online_cpus();
    let nr_cpus = topology.nr_cpu_ids();
    let split = |isolated: CpuSet, source: PartitionSource| AuditPartition {
        housekeeping: online.difference(&isolated),
        isolated,
        source,
        nr_cpus,
    };
    if let Some(isolate) = isolate {
        let known: CpuSet = topology.cpus.iter().map(|c| c.cpu).collect();
        let unknown = isolate.difference(&known);
        if !unknown.is_empty() {
            return Err(PartitionError::NoSuchCpu {
                list: CpuList::Isolated,
                cpus: unknown,
                online,
            });
        }
        let offline = isolate.difference(&online);
        if !offline.is_empty() {
            return Err(PartitionError::Offline {
                list: CpuList::Isolated,
                cpus: offline,
            });
        }
        if isolate.is_empty() || online.difference(isolate).is_empty() {
            return Err(PartitionError::NothingIsolated { online });
        }
        return Ok(split(isolate.clone(), PartitionSource::Flag));
    }
    let (kernel, from) = kernel_isolated(machine);
    if !kernel.is_empty() {
        let isolated = kernel.intersection(&online);
        return Ok(split(isolated, PartitionSource::Kernel { from }));
    }
    match partition::compute(topology, &PartitionRequest::default()) {
        Ok(p) => Ok(AuditPartition {
            housekeeping: p.housekeeping,
            isolated: p.isolated,
            source: PartitionSource::Default,
            nr_cpus,
        }),
        Err(e) => Ok(AuditPartition {
            housekeeping: online,
            isolated: CpuSet::new(),
            source: PartitionSource::Unavailable {
                reason: format!("no default partition: {e}"),
            },
            nr_cpus,
        }),
    }
}

/// Which CPUs a check measures and watch watches, and why those.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasuredCpus {
    /// The CPUs.
    pub cpus: CpuSet,
    /// Why these: `--cpus`, the machine's isolated CPUs, or every CPU but the first.
    pub why: String,
}

/// `CPU 2-3 (the machine's isolated CPUs (isolcpus=)); choose others with --cpus`: the CPUs a
/// command chose itself, as it says them.
impl std::fmt::Display for MeasuredCpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (cpus, why) = (self.cpus.to_list(), &self.why);
        write!(f, "CPU {cpus} ({why}); choose others with --cpus")
    }
}

impl MeasuredCpus {
    /// How an error names these CPUs: `--cpus LIST` when the flag gave them, else as chosen.
    pub fn named(&self) -> String {
        match self.why.as_str() {
            "--cpus" => format!("--cpus {}", self.cpus),
            _ => self.to_string(),
        }
    }
}

/// The one rule for the CPUs that matter, which a check measures and watch watches: `requested` (`--cpus`) when given; else the
/// CPUs the machine isolates (what the tuning is for), or a site profile's `[partition]`
/// when the partition is the profile's, only those of them this process may
/// run on when its affinity (`allowed`: a container's cpuset, a pod's exclusive CPUs,
/// taskset) holds some but not all; else, when nothing is isolated, every online CPU but the
/// first (which keeps the OS and lowlat's own reporting).
pub fn measured_cpus(
    partition: &AuditPartition,
    online: &CpuSet,
    allowed: &CpuSet,
    requested: Option<&CpuSet>,
) -> MeasuredCpus {
    if let Some(cpus) = requested {
        return MeasuredCpus {
            cpus: cpus.clone(),
            why: "--cpus".into(),
        };
    }
    let isolated = match &partition.source {
        PartitionSource::Kernel { from } => {
            Some(format!("the machine's isolated CPUs ({})", from.join(", ")))
        }
        PartitionSource::Profile { place } => {
            Some(format!("the site profile's isolated CPUs ({place})"))
        }
        _ => None,
    };
    if let Some(these) = isolated
        && !partition.isolated.is_empty()
    {
        let mine = partition.isolated.intersection(allowed);
        if !mine.is_empty() && mine != partition.isolated {
            return MeasuredCpus {
                why: format!(
                    "{these} that this process may run on (its affinity: {})",
                    allowed.to_list()
                ),
                cpus: mine,
            };
        }
        return MeasuredCpus {
            cpus: partition.isolated.clone(),
            why: these,
        };
    }
    let mut cpus = online.clone();
    if let Some(first) = online.first()
        && cpus.len() > 1
    {
        cpus.remove(first);
    }
    MeasuredCpus {
        cpus,
        why: "nothing is isolated: every CPU but the first".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::topology;
    use crate::test_tree::TestTree;

    fn partition(isolated: &str, source: PartitionSource) -> AuditPartition {
        let isolated = CpuSet::parse_list(isolated).unwrap();
        AuditPartition {
            housekeeping: CpuSet::parse_list("0").unwrap(),
            isolated,
            source,
            nr_cpus: 8,
        }
    }

    #[test]
    fn the_cpus_are_the_flag_then_the_isolated_ones_then_all_but_the_first() {
        let online = CpuSet::parse_list("0-7").unwrap();
        let kernel = PartitionSource::Kernel {
            from: vec!["isolcpus= in /proc/cmdline".into()],
        };
        let flag = CpuSet::parse_list("3").unwrap();
        let chosen = measured_cpus(
            &partition("2-7", kernel.clone()),
            &online,
            &online,
            Some(&flag),
        );
        assert_eq!(
            (chosen.cpus.to_list().as_str(), chosen.why.as_str()),
            ("3", "--cpus")
        );
        let chosen = measured_cpus(&partition("2-7", kernel.clone()), &online, &online, None);
        assert_eq!(chosen.cpus.to_list(), "2-7");
        assert!(chosen.why.contains("isolcpus="), "{}", chosen.why);
        // In a pod with two exclusive CPUs (or under taskset), those of them.
        let pod = CpuSet::parse_list("0,4-5").unwrap();
        let chosen = measured_cpus(&partition("2-7", kernel.clone()), &online, &pod, None);
        assert_eq!(chosen.cpus.to_list(), "4-5");
        assert!(
            chosen.why.contains("may run on (its affinity: 0,4-5)"),
            "{}",
            chosen.why
        );
        // An affinity without isolated CPUs: the isolated ones, and the session says why not.
        let hk_only = CpuSet::parse_list("0-1").unwrap();
        let chosen = measured_cpus(&partition("2-7", kernel), &online, &hk_only, None);
        assert_eq!(chosen.cpus.to_list(), "2-7");
        // lowlat's default partition is a proposal, not isolation: measure all but CPU 0.
        let chosen = measured_cpus(
            &partition("1-7", PartitionSource::Default),
            &online,
            &online,
            None,
        );
        assert_eq!(chosen.cpus.to_list(), "1-7");
        let one = CpuSet::parse_list("0").unwrap();
        let chosen = measured_cpus(&partition("", PartitionSource::Default), &one, &one, None);
        assert_eq!(chosen.cpus.to_list(), "0");
    }

    /// Two nodes of four single-thread cores: CPUs 0-3 and 4-7.
    fn two_nodes(extra: &[(&str, &str)]) -> TestTree {
        let dir = TestTree::empty();
        topology::write_two_nodes(&dir);
        for (path, text) in extra {
            dir.write(path, text);
        }
        dir
    }

    fn machine(dir: &TestTree) -> Machine {
        Machine::read(&dir.root())
    }

    #[test]
    fn default_partition_keeps_the_first_core_of_each_node() {
        let dir = two_nodes(&[]);
        let p = choose(&machine(&dir), None).unwrap();
        assert_eq!(p.source, PartitionSource::Default);
        assert_eq!(p.housekeeping.to_list(), "0,4");
        assert_eq!(p.isolated.to_list(), "1-3,5-7");
        assert_eq!(p.nr_cpus, 8);
        assert!(p.describe().contains("lowlat's default"));
    }

    #[test]
    fn the_machines_own_isolation_wins_over_the_default() {
        let dir = two_nodes(&[
            ("/proc/cmdline", "ro nohz_full=2-3,6-7 rcu_nocbs=2-3,6-7\n"),
            ("/sys/devices/system/cpu/nohz_full", "2-3,6-7\n"),
        ]);
        let p = choose(&machine(&dir), None).unwrap();
        assert_eq!(p.isolated.to_list(), "2-3,6-7");
        assert_eq!(p.housekeeping.to_list(), "0-1,4-5");
        let PartitionSource::Kernel { from } = &p.source else {
            panic!("{:?}", p.source)
        };
        assert_eq!(
            from,
            &vec![
                "/sys/devices/system/cpu/nohz_full".to_string(),
                "nohz_full= in /proc/cmdline".to_string()
            ]
        );
    }

    #[test]
    fn isolate_flag_is_checked_but_not_judged() {
        let dir = two_nodes(&[]);
        let m = machine(&dir);
        // A split the rules will report (node 1 without housekeeping) is still audited.
        let p = choose(&m, Some(&"4-7".parse().unwrap())).unwrap();
        assert_eq!(p.source, PartitionSource::Flag);
        assert_eq!(p.housekeeping.to_list(), "0-3");
        let err = choose(&m, Some(&"6-9".parse().unwrap())).unwrap_err();
        assert!(
            matches!(&err, PartitionError::NoSuchCpu { list: CpuList::Isolated, cpus, .. } if cpus.to_list() == "8-9"),
            "{err}"
        );
        let err = choose(&m, Some(&"0-7".parse().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no CPU is left"), "{err}");
    }

    #[test]
    fn no_topology_means_no_partition() {
        let dir = TestTree::empty();
        dir.write("/proc/cpuinfo", "processor : 0\n");
        let p = choose(&machine(&dir), None).unwrap();
        assert!(!p.is_known());
        assert!(p.describe().starts_with("none: no default partition"));
    }
}

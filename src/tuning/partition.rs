//! The CPU partition: housekeeping CPUs (the OS, IRQs, kernel threads) and isolated CPUs (the
//! latency-critical workload), computed from the topology so that SMT siblings stay together
//! and every NUMA node keeps housekeeping.
//!
//! Default: the first N physical cores of each NUMA node (N = 1) with all their SMT siblings
//! are housekeeping; the rest is isolated. Optionally the next M cores of each node form a
//! "no balance" band (TuneD's `no_balance_cores`, `isolcpus=` domain isolation), as the
//! HPE/AMD guide of \[S000\] computes with its shell script.

use serde::{Deserialize, Serialize};

use crate::machine::CpuSet;
use crate::machine::core_types::CoreType;
use crate::machine::topology::Topology;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRequest {
    /// Physical cores per NUMA node kept for housekeeping (`--housekeeping-cores`, default 1).
    pub housekeeping_cores_per_node: usize,
    /// Cores per NUMA node, after the housekeeping ones, in the no-balance band
    /// (`--no-balance`, default 0).
    pub no_balance_cores_per_node: usize,
    /// Explicit housekeeping CPUs (`--housekeeping`); the rest is isolated.
    pub housekeeping: Option<CpuSet>,
    /// Explicit isolated CPUs (`--isolate`); the rest is housekeeping.
    pub isolate: Option<CpuSet>,
    /// Accept an isolated CPU whose SMT sibling is housekeeping (`--allow-split-smt`).
    pub allow_split_smt: bool,
    /// On a hybrid CPU, the core type the default partition isolates (`--isolate-core-type`,
    /// default the performance cores); the cores of the other type are housekeeping.
    pub isolate_core_type: CoreType,
}

impl Default for PartitionRequest {
    fn default() -> Self {
        Self {
            housekeeping_cores_per_node: 1,
            no_balance_cores_per_node: 0,
            housekeeping: None,
            isolate: None,
            allow_split_smt: false,
            isolate_core_type: CoreType::Performance,
        }
    }
}

/// A checked partition of the online CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// CPUs for the OS, IRQs and kernel threads.
    pub housekeeping: CpuSet,
    /// CPUs for the latency-critical workload (nohz_full, rcu_nocbs, no IRQs).
    pub isolated: CpuSet,
    /// Isolated CPUs also taken out of scheduler load balancing (`isolcpus=domain`), a subset
    /// of `isolated`; empty unless asked for.
    pub no_balance: CpuSet,
    /// Number of possible CPUs, which sets the width of the kernel's hex masks.
    pub nr_cpus: u32,
}

/// Which of the two CPU lists of a request named a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuList {
    /// The housekeeping CPUs asked for.
    Housekeeping,
    /// The isolated CPUs asked for.
    Isolated,
}

/// Why a partition was refused. Each message says what to change; the caller names the
/// option that carried it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// A CPU named that the machine does not have.
    #[error("CPU(s) {cpus} do not exist on this machine (online CPUs: {online})")]
    NoSuchCpu {
        /// The list that named it.
        list: CpuList,
        /// The CPUs not found.
        cpus: CpuSet,
        /// The machine's online CPUs.
        online: CpuSet,
    },
    /// A CPU named that is offline.
    #[error("CPU(s) {cpus} are offline; bring them online or leave them out")]
    Offline {
        /// The list that named it.
        list: CpuList,
        /// The offline CPUs.
        cpus: CpuSet,
    },
    /// Every CPU a list named goes offline at the reboot the plan asks for (it turns SMT off).
    #[error(
        "CPU(s) {cpus} go offline at the next boot, when the plan turns SMT off (online then: \
         {online_after}); name CPUs among those"
    )]
    OfflineAfterReboot {
        /// The list that named them.
        list: CpuList,
        /// The CPUs it named.
        cpus: CpuSet,
        /// The CPUs online after the reboot.
        online_after: CpuSet,
    },
    /// Both lists given, and they overlap or leave CPUs out.
    #[error(
        "the housekeeping and isolated CPUs must split the online CPUs ({online}) exactly; {}",
        split_problems(overlap, missing)
    )]
    Contradiction {
        /// CPUs in both lists.
        overlap: CpuSet,
        /// Online CPUs in neither.
        missing: CpuSet,
        /// The online CPUs.
        online: CpuSet,
    },
    /// CPU 0 isolated: it handles boot-time and legacy work that cannot move.
    #[error(
        "CPU 0 cannot be isolated: the kernel keeps boot-time and legacy work (timers, some IRQs) on it; keep it for housekeeping"
    )]
    CpuZeroIsolated,
    /// An isolated CPU whose SMT sibling is housekeeping.
    #[error(
        "isolated CPU(s) {isolated} share a core with housekeeping CPU(s) {housekeeping}: the housekeeping thread would disturb them; isolate or keep whole cores, or allow split cores"
    )]
    SplitSmt {
        /// Isolated CPUs with a housekeeping sibling.
        isolated: CpuSet,
        /// Their housekeeping siblings.
        housekeeping: CpuSet,
    },
    /// A NUMA node with CPUs but no housekeeping CPU.
    #[error(
        "NUMA node {node} (CPUs {cpus}) has no housekeeping CPU: its memory reclaim, IRQs and kernel threads would run remote; keep at least one of its cores for housekeeping"
    )]
    NodeWithoutHousekeeping {
        /// The node.
        node: u32,
        /// Its CPUs.
        cpus: CpuSet,
    },
    /// More no-balance cores asked per node than a node has left after its housekeeping
    /// cores.
    #[error(
        "{asked} no-balance core(s) per NUMA node asked, but node {node} has only {left} core(s) left after its housekeeping core(s); ask for {left} or fewer"
    )]
    TooManyNoBalanceCores {
        /// Cores per node asked for.
        asked: usize,
        /// The first node that has fewer.
        node: u32,
        /// Its cores after the housekeeping ones.
        left: usize,
    },
    /// Nothing left to isolate.
    #[error(
        "no CPU is left to isolate (online CPUs: {online}); keep fewer cores or CPUs for housekeeping"
    )]
    NothingIsolated {
        /// The online CPUs.
        online: CpuSet,
    },
}

/// What keeps two CPU lists from splitting the online CPUs: the CPUs in both, the CPUs in
/// neither, each named only when there are some.
fn split_problems(overlap: &CpuSet, missing: &CpuSet) -> String {
    let parts: Vec<String> = [("in both", overlap), ("in neither", missing)]
        .into_iter()
        .filter(|(_, cpus)| !cpus.is_empty())
        .map(|(what, cpus)| format!("{what}: {cpus}"))
        .collect();
    parts.join(", ")
}

/// `topology` as it will be once SMT is turned off (`nosmt`): only the first thread of each
/// core stays online. Partitions for a plan that turns SMT off are computed on it.
pub(crate) fn with_smt_off(topology: &Topology) -> Topology {
    let first_threads: CpuSet = topology.cores().iter().filter_map(CpuSet::first).collect();
    let mut after = topology.clone();
    for cpu in &mut after.cpus {
        cpu.online &= first_threads.contains(cpu.cpu);
    }
    after
}

/// Computes and checks the partition for `topology`.
pub(crate) fn compute(
    topology: &Topology,
    request: &PartitionRequest,
) -> Result<Partition, PartitionError> {
    let online = topology.online_cpus();
    let known: CpuSet = topology.cpus.iter().map(|c| c.cpu).collect();
    for (list, set) in [
        (CpuList::Housekeeping, &request.housekeeping),
        (CpuList::Isolated, &request.isolate),
    ] {
        let Some(set) = set else { continue };
        let unknown = set.difference(&known);
        if !unknown.is_empty() {
            return Err(PartitionError::NoSuchCpu {
                list,
                cpus: unknown,
                online,
            });
        }
        let offline = set.difference(&online);
        if !offline.is_empty() {
            return Err(PartitionError::Offline {
                list,
                cpus: offline,
            });
        }
    }

    let (housekeeping, no_balance_band) = match (&request.housekeeping, &request.isolate) {
        (Some(hk), Some(iso)) => {
            let overlap = hk.intersection(iso);
            let missing = online.difference(&hk.union(iso));
            if !overlap.is_empty() || !missing.is_empty() {
                return Err(PartitionError::Contradiction {
                    overlap,
                    missing,
                    online,
                });
            }
            (hk.clone(), CpuSet::new())
        }
        (Some(hk), None) => (hk.clone(), CpuSet::new()),
        (None, Some(iso)) => (online.difference(iso), CpuSet::new()),
        (None, None) => first_cores_per_node(topology, request)?,
    };
    let isolated = online.difference(&housekeeping);
    let partition = Partition {
        no_balance: no_balance_band.intersection(&isolated),
        housekeeping,
        isolated,
        nr_cpus: topology.nr_cpu_ids(),
    };
    check(topology, &partition, request)?;
    Ok(partition)
}

/// The default: per node, the first `housekeeping_cores_per_node` cores (all their threads) are
/// housekeeping, and the next `no_balance_cores_per_node` cores form the no-balance band, which
/// must fit in every node. On a hybrid CPU the isolated CPUs are of one type: a node's cores of
/// the other type are its housekeeping (and the core of CPU 0, which cannot be isolated), and
/// the band is taken from its cores of the isolated type.
fn first_cores_per_node(
    topology: &Topology,
    request: &PartitionRequest,
) -> Result<(CpuSet, CpuSet), PartitionError> {
    let online = topology.online_cpus();
    let cores = topology.cores();
    let mut housekeeping = CpuSet::new();
    let mut no_balance = CpuSet::new();
    for node in topology.nodes.iter().filter(|n| n.cpus.intersects(&online)) {
        // The first CPU picks the node's candidates cheaply (on 8,192 CPUs a subset test
        // compares 128 words, for each of 4,096 cores and 128 nodes).
        let node_cores: Vec<&CpuSet> = (cores.iter())
            .filter(|c| c.first().is_some_and(|first| node.cpus.contains(first)))
            .filter(|c| c.is_subset(&node.cpus))
            .collect();
        let (kept, candidates) = match of_other_type(topology, request, &node_cores) {
            Some(split) => split,
            None => {
                let hk_end = request.housekeeping_cores_per_node.min(node_cores.len());
                (node_cores[..hk_end].to_vec(), node_cores[hk_end..].to_vec())
            }
        };
        if request.no_balance_cores_per_node > candidates.len() {
            return Err(PartitionError::TooManyNoBalanceCores {
                asked: request.no_balance_cores_per_node,
                node: node.id,
                left: candidates.len(),
            });
        }
        for core in kept {
            housekeeping.union_with(core);
        }
        for core in &candidates[..request.no_balance_cores_per_node] {
            no_balance.union_with(core);
        }
    }
    Ok((housekeeping, no_balance))
}

/// A hybrid node's cores split into housekeeping (those of the type not isolated, and the core
/// of CPU 0) and the candidates for isolation; `None` on a machine of one type, or for a node
/// without cores of both types, which are partitioned as on any machine.
fn of_other_type<'a>(
    topology: &Topology,
    request: &PartitionRequest,
    node_cores: &[&'a CpuSet],
) -> Option<(Vec<&'a CpuSet>, Vec<&'a CpuSet>)> {
    let types = topology.core_types.as_ref()?;
    let wanted = types.cpus(request.isolate_core_type);
    let (candidates, kept): (Vec<&CpuSet>, Vec<&CpuSet>) = node_cores
        .iter()
        .partition(|core| core.is_subset(wanted) && !core.contains(0));
    let of_wanted_type = node_cores
        .iter()
        .filter(|core| core.is_subset(wanted))
        .count();
    (of_wanted_type > 0 && of_wanted_type < node_cores.len()).then_some((kept, candidates))
}

fn check(
    topology: &Topology,
    partition: &Partition,
    request: &PartitionRequest,
) -> Result<(), PartitionError> {
    let online = topology.online_cpus();
    if partition.isolated.is_empty() {
        return Err(PartitionError::NothingIsolated { online });
    }
    if partition.isolated.contains(0) {
        return Err(PartitionError::CpuZeroIsolated);
    }
    if !request.allow_split_smt {
        let mut split_iso = CpuSet::new();
        let mut split_hk = CpuSet::new();
        for cpu in partition.isolated.iter() {
            let hk_siblings = topology
                .siblings_of(cpu)
                .intersection(&partition.housekeeping);
            if !hk_siblings.is_empty() {
                split_iso.insert(cpu);
                split_hk = split_hk.union(&hk_siblings);
            }
        }
        if !split_iso.is_empty() {
            return Err(PartitionError::SplitSmt {
                isolated: split_iso,
                housekeeping: split_hk,
            });
        }
    }
    for node in &topology.nodes {
        let cpus = node.cpus.intersection(&online);
        if !cpus.is_empty() && !cpus.intersects(&partition.housekeeping) {
            return Err(PartitionError::NodeWithoutHousekeeping {
                node: node.id,
                cpus,
            });
        }
    }
    Ok(())
}

impl Partition {
    /// Housekeeping CPUs as a kernel hex mask (`101` for CPUs 0 and 8).
    pub fn housekeeping_mask(&self) -> String {
        self.housekeeping.to_mask(self.nr_cpus)
    }

    /// Isolated CPUs as a kernel hex mask (`fefe` for CPUs 1-7,9-15).
    pub fn isolated_mask(&self) -> String {
        self.isolated.to_mask(self.nr_cpus)
    }

    /// The `tuned.non_isolcpus=` form: the housekeeping mask in zero-padded 32-bit groups
    /// (`00000101`), as TuneD's cpu-partitioning writes it on the kernel command line.
    pub fn tuned_non_isolcpus(&self) -> String {
        let groups = self.nr_cpus.div_ceil(32).max(1) * 32;
        self.housekeeping.to_mask(groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::topology::{LogicalCpu, NumaNode, Shape};
    use crate::machine::{Avail, topology::Topology};

    /// `sockets` × `cores` × `threads`, one node per socket, siblings numbered N and N+cores*sockets.
    fn machine(sockets: u32, cores: u32, threads: u32) -> Topology {
        let per_thread = sockets * cores;
        let mut cpus = Vec::new();
        let mut nodes: Vec<NumaNode> = (0..sockets)
            .map(|id| NumaNode {
                id,
                cpus: CpuSet::new(),
                mem_total_kib: Avail::missing("test"),
                mem_free_kib: Avail::missing("test"),
                distances: vec![],
                implied: false,
            })
            .collect();
        for t in 0..threads {
            for s in 0..sockets {
                for c in 0..cores {
                    let cpu = t * per_thread + s * cores + c;
                    let siblings = (0..threads)
                        .map(|k| k * per_thread + s * cores + c)
                        .collect();
                    nodes[s as usize].cpus.insert(cpu);
                    cpus.push(LogicalCpu {
                        cpu,
                        online: true,
                        package: Some(s),
                        die: Some(0),
                        core: Some(c),
                        siblings,
                        node: Some(s),
                    });
                }
            }
        }
        cpus.sort_by_key(|c| c.cpu);
        Topology {
            possible: Avail::Available((0..per_thread * threads).collect()),
            present: Avail::missing("test"),
            online: Avail::missing("test"),
            offline: Avail::missing("test"),
            smt_control: Avail::missing("test"),
            cpus,
            caches: vec![],
            nodes,
            shape: Shape::default(),
            core_types: None,
        }
    }

    #[test]
    fn the_guides_partition_on_two_8_core_sockets() {
        let p = compute(&machine(2, 8, 1), &PartitionRequest::default()).unwrap();
        assert_eq!(p.housekeeping.to_list(), "0,8");
        assert_eq!(p.isolated.to_list(), "1-7,9-15");
        assert_eq!(p.isolated_mask(), "fefe");
        assert_eq!(p.housekeeping_mask(), "0101");
        assert_eq!(p.tuned_non_isolcpus(), "00000101");
    }

    #[test]
    fn siblings_stay_together() {
        // 2 × 28 cores × 2 threads, siblings N and N+56 (the Xeon fixture's numbering).
        let p = compute(&machine(2, 28, 2), &PartitionRequest::default()).unwrap();
        assert_eq!(p.housekeeping.to_list(), "0,28,56,84");
    }

    #[test]
    fn no_balance_band_follows_housekeeping() {
        let request = PartitionRequest {
            no_balance_cores_per_node: 2,
            ..PartitionRequest::default()
        };
        let p = compute(&machine(2, 8, 1), &request).unwrap();
        assert_eq!(p.no_balance.to_list(), "1-2,9-10");
    }

    #[test]
    fn refusals_name_the_problem() {
        let topo = machine(2, 4, 2);
        let with = |hk: Option<&str>, iso: Option<&str>| PartitionRequest {
            housekeeping: hk.map(|s| s.parse().unwrap()),
            isolate: iso.map(|s| s.parse().unwrap()),
            ..PartitionRequest::default()
        };
        assert_eq!(
            compute(&topo, &with(None, Some("0-3"))).unwrap_err(),
            PartitionError::CpuZeroIsolated
        );
        assert!(matches!(
            compute(&topo, &with(None, Some("1"))).unwrap_err(),
            PartitionError::SplitSmt { .. }
        ));
        assert!(matches!(
            compute(&topo, &with(None, Some("4-7,12-15"))).unwrap_err(),
            PartitionError::NodeWithoutHousekeeping { node: 1, .. }
        ));
        assert!(matches!(
            compute(&topo, &with(None, Some("99"))).unwrap_err(),
            PartitionError::NoSuchCpu {
                list: CpuList::Isolated,
                ..
            }
        ));
        let both = compute(&topo, &with(Some("0-4"), Some("4-15"))).unwrap_err();
        assert!(matches!(both, PartitionError::Contradiction { .. }));
        assert!(both.to_string().ends_with("exactly; in both: 4"), "{both}");
        // Only what is wrong is named: no empty "overlap: ," before the CPUs left out.
        let neither = compute(&topo, &with(Some("0,8"), Some("1-7"))).unwrap_err();
        assert!(
            neither.to_string().ends_with("exactly; in neither: 9-15"),
            "{neither}"
        );
        let split_ok = PartitionRequest {
            allow_split_smt: true,
            ..with(Some("0,4,8"), None)
        };
        assert!(compute(&topo, &split_ok).is_ok());
    }

    #[test]
    fn a_hybrid_cpu_isolates_one_core_type() {
        let tree = crate::machine::core_types::tests::i7_1370p();
        let topo = crate::machine::Machine::read(&tree.root()).topology;
        // P-cores isolated but the one of CPU 0; housekeeping on the E-cores.
        let p = compute(&topo, &PartitionRequest::default()).unwrap();
        assert_eq!(p.isolated.to_list(), "2-11");
        assert_eq!(p.housekeeping.to_list(), "0-1,12-19");
        // SMT off (the low-latency profile): the first thread of each P-core.
        let p = compute(&with_smt_off(&topo), &PartitionRequest::default()).unwrap();
        assert_eq!(p.isolated.to_list(), "2,4,6,8,10");
        // The E-cores isolated, the P-cores for housekeeping; the band comes from the E-cores.
        let request = PartitionRequest {
            isolate_core_type: CoreType::Efficiency,
            no_balance_cores_per_node: 2,
            ..PartitionRequest::default()
        };
        let p = compute(&topo, &request).unwrap();
        assert_eq!(p.isolated.to_list(), "12-19");
        assert_eq!(p.housekeeping.to_list(), "0-11");
        assert_eq!(p.no_balance.to_list(), "12-13");
    }
}

//! Where each logical CPU sits (package, NUMA node, L3 group, core), and the CPU lists the
//! hardware engines derive from it: one thread per core, and spread across L3 groups (for
//! bandwidth threads). The engines take plain CPU lists; these functions turn the machine's
//! topology into such lists. Everything here takes CPUs in locality order (package, node, L3
//! group, core, thread: [`Topology::cpus_by_locality`]), so that CCX, CCD and socket blocks
//! show up in matrices.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

use crate::machine::topology::Topology;

/// Where one logical CPU sits. `None` means the kernel did not say (old kernel, odd VM).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CpuPlace {
    /// The logical CPU number.
    pub cpu: u32,
    /// Physical package (socket) id.
    pub package: Option<u32>,
    /// NUMA node.
    pub node: Option<u32>,
    /// Index of the L3 instance (CCX on AMD) shared by this CPU, in the order of
    /// [`Topology::l3_groups`].
    pub l3_group: Option<u32>,
    /// The physical core, named by its lowest CPU number (unique in the machine).
    pub core: u32,
}

impl CpuPlace {
    /// Whether `self` and `other` are two threads of the same physical core.
    pub(crate) fn same_core(&self, other: &CpuPlace) -> bool {
        self.core == other.core
    }
}

/// The online CPUs of `topology` in locality order, with their places.
pub(crate) fn places(topology: &Topology) -> Vec<CpuPlace> {
    let l3 = topology.l3_groups();
    topology
        .cpus_by_locality()
        .into_iter()
        .map(|cpu| {
            let logical = topology.cpu(cpu);
            CpuPlace {
                cpu,
                package: logical.and_then(|c| c.package),
                node: topology.node_of(cpu),
                l3_group: l3
                    .iter()
                    .position(|g| g.contains(cpu))
                    .and_then(|i| u32::try_from(i).ok()),
                core: topology.siblings_of(cpu).first().unwrap_or(cpu),
            }
        })
        .collect()
}

/// The first thread of every core, keeping the order of `places`.
pub(crate) fn one_per_core(places: &[CpuPlace]) -> Vec<CpuPlace> {
    let mut seen = BTreeSet::new();
    places
        .iter()
        .filter(|p| seen.insert(p.core))
        .cloned()
        .collect()
}

/// `n` CPUs spread over the machine: one thread per core first, SMT siblings only when every
/// core already has a thread; within each, alternating packages, then nodes within a
/// package, then L3 groups within a node. This is the placement of `OMP_PROC_BIND=spread`
/// with `OMP_PLACES=cores` that STREAM runs use. Returns fewer than `n` CPUs when `places`
/// has fewer.
pub(crate) fn spread(places: &[CpuPlace], n: usize) -> Vec<u32> {
    let primaries = one_per_core(places);
    let primary_cpus: BTreeSet<u32> = primaries.iter().map(|p| p.cpu).collect();
    let siblings: Vec<CpuPlace> = places
        .iter()
        .filter(|p| !primary_cpus.contains(&p.cpu))
        .cloned()
        .collect();
    let levels: [fn(&CpuPlace) -> Option<u32>; 3] = [|p| p.package, |p| p.node, |p| p.l3_group];
    let mut out = interleave(&primaries, &levels);
    out.extend(interleave(&siblings, &levels));
    out.truncate(n);
    out
}

/// The CPUs of `places` grouped by the first level (groups in order of first appearance),
/// each group interleaved by the remaining levels, then taken one from each group in turn.
fn interleave(places: &[CpuPlace], levels: &[fn(&CpuPlace) -> Option<u32>]) -> Vec<u32> {
    let Some((level, rest)) = levels.split_first() else {
        return places.iter().map(|p| p.cpu).collect();
    };
    let mut keys: Vec<Option<u32>> = Vec::new();
    let mut groups: BTreeMap<Option<u32>, Vec<CpuPlace>> = BTreeMap::new();
    for p in places {
        let key = level(p);
        if !groups.contains_key(&key) {
            keys.push(key);
        }
        groups.entry(key).or_default().push(p.clone());
    }
    let mut queues: Vec<std::vec::IntoIter<u32>> = keys
        .iter()
        .map(|key| interleave(groups.get(key).map_or(&[][..], Vec::as_slice), rest).into_iter())
        .collect();
    let mut out = Vec::with_capacity(places.len());
    while out.len() < places.len() {
        for queue in &mut queues {
            out.extend(queue.next());
        }
    }
    out
}

/// The indices after which the L3 group changes along `places`: where tables draw a line.
pub(crate) fn group_breaks(places: &[CpuPlace]) -> Vec<usize> {
    places
        .windows(2)
        .enumerate()
        .filter(|(_, w)| (w[0].package, w[0].l3_group) != (w[1].package, w[1].l3_group))
        .map(|(i, _)| i)
        .collect()
}

/// How two CPUs are related, from the closest to the farthest; c2c summaries group pairs by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PairClass {
    /// Two SMT threads of one core.
    SmtSiblings,
    /// Different cores sharing an L3 (one CCX on AMD).
    SameL3,
    /// Same package, different L3 groups (CCX to CCX through the IO die on AMD).
    SamePackage,
    /// Different packages (socket to socket).
    CrossPackage,
    /// The topology does not say.
    Unknown,
}

impl PairClass {
    /// The class of the pair `(a, b)`.
    pub(crate) fn of(a: &CpuPlace, b: &CpuPlace) -> PairClass {
        if a.same_core(b) {
            return PairClass::SmtSiblings;
        }
        match (a.package, b.package) {
            (Some(x), Some(y)) if x != y => PairClass::CrossPackage,
            (Some(_), Some(_)) => match (a.l3_group, b.l3_group) {
                (Some(x), Some(y)) if x == y => PairClass::SameL3,
                (Some(_), Some(_)) => PairClass::SamePackage,
                _ => PairClass::Unknown,
            },
            _ => PairClass::Unknown,
        }
    }

    /// A short label for tables.
    pub(crate) fn label(self) -> &'static str {
        match self {
            PairClass::SmtSiblings => "SMT siblings",
            PairClass::SameL3 => "same L3 group",
            PairClass::SamePackage => "same package, other L3",
            PairClass::CrossPackage => "other package",
            PairClass::Unknown => "unknown",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::machine::CpuSet;
    use crate::machine::topology::{Cache, CacheKind, LogicalCpu, Shape};

    /// A described machine in locality order: `packages` × `groups` L3 groups × `cores` cores
    /// × `threads` threads, numbered as Linux does, SMT siblings `n` and `n + cores total`.
    pub(crate) fn described(packages: u32, groups: u32, cores: u32, threads: u32) -> Vec<CpuPlace> {
        let cores_total = packages * groups * cores;
        let mut out = Vec::new();
        for i in 0..cores_total {
            for t in 0..threads {
                let package = i / (groups * cores);
                out.push(CpuPlace {
                    cpu: t * cores_total + i,
                    package: Some(package),
                    node: Some(package),
                    l3_group: Some(i / cores),
                    core: i,
                });
            }
        }
        out
    }

    /// The topology of `described`, as the machine model holds it.
    fn topology(packages: u32, groups: u32, cores: u32, threads: u32) -> Topology {
        let places = described(packages, groups, cores, threads);
        let cores_total = packages * groups * cores;
        let set = |f: &dyn Fn(&CpuPlace) -> bool| -> CpuSet {
            places.iter().filter(|p| f(p)).map(|p| p.cpu).collect()
        };
        let mut cpus: Vec<LogicalCpu> = places
            .iter()
            .map(|p| LogicalCpu {
                cpu: p.cpu,
                online: true,
                package: p.package,
                die: Some(0),
                core: Some(p.core % (groups * cores)),
                siblings: set(&|q| q.core == p.core),
                node: p.node,
            })
            .collect();
        cpus.sort_by_key(|c| c.cpu);
        let caches = (0..packages * groups)
            .map(|g| Cache {
                level: 3,
                kind: CacheKind::Unified,
                size_bytes: 16 << 20,
                cpus: set(&|q| q.l3_group == Some(g)),
                line_bytes: Some(64),
                ways: Some(16),
            })
            .collect();
        let nodes = (0..packages)
            .map(|n| crate::machine::topology::NumaNode {
                id: n,
                cpus: set(&|q| q.node == Some(n)),
                mem_total_kib: crate::machine::Avail::Available(1 << 20),
                mem_free_kib: crate::machine::Avail::Available(1 << 20),
                distances: vec![],
                implied: false,
            })
            .collect();
        let all: CpuSet = (0..cores_total * threads).collect();
        Topology {
            possible: crate::machine::Avail::Available(all.clone()),
            present: crate::machine::Avail::Available(all.clone()),
            online: crate::machine::Avail::Available(all),
            offline: crate::machine::Avail::Available(CpuSet::new()),
            smt_control: crate::machine::Avail::missing("test"),
            cpus,
            caches,
            nodes,
            shape: Shape::default(),
            core_types: None,
        }
    }

    #[test]
    fn places_follow_the_topology_in_locality_order() {
        // 1 package, 2 L3 groups of 2 cores, SMT: siblings are n and n+4.
        let got = places(&topology(1, 2, 2, 2));
        assert_eq!(got, described(1, 2, 2, 2));
        let order: Vec<u32> = got.iter().map(|p| p.cpu).collect();
        assert_eq!(order, vec![0, 4, 1, 5, 2, 6, 3, 7]);
        assert_eq!(group_breaks(&got), vec![3]);
    }

    #[test]
    fn spread_alternates_groups_before_siblings() {
        // epyc7f32-2s: 2 packages × 8 L3 groups × 1 core, no SMT: sockets alternate.
        let places = described(2, 8, 1, 1);
        assert_eq!(spread(&places, 4), vec![0, 8, 1, 9]);
        assert_eq!(spread(&places, 16).len(), 16);
        // milan64-nps4-like: 1 package, 4 nodes × 2 L3 groups × 2 cores: nodes alternate,
        // then the groups within each node.
        let places: Vec<CpuPlace> = described(1, 8, 2, 1)
            .into_iter()
            .map(|p| CpuPlace {
                node: p.l3_group.map(|g| g / 2),
                ..p
            })
            .collect();
        assert_eq!(spread(&places, 8), vec![0, 4, 8, 12, 2, 6, 10, 14]);
        // 1 package, 2 groups × 2 cores × 2 threads: one core of each group, then the other
        // cores, then the siblings.
        let places = described(1, 2, 2, 2);
        assert_eq!(spread(&places, 8), vec![0, 2, 1, 3, 4, 6, 5, 7]);
        assert_eq!(spread(&places, 2), vec![0, 2]);
        assert_eq!(spread(&places, 100).len(), 8);
        // Two sockets with one L3 each (Intel-like): alternate sockets.
        let places = described(2, 1, 4, 1);
        assert_eq!(spread(&places, 4), vec![0, 4, 1, 5]);
    }

    #[test]
    fn one_thread_per_core() {
        let places = described(1, 2, 2, 2);
        let cpus: Vec<u32> = one_per_core(&places).iter().map(|p| p.cpu).collect();
        assert_eq!(cpus, vec![0, 1, 2, 3]);
    }

    #[test]
    fn pair_classes() {
        let places = described(2, 2, 2, 2);
        let at = |cpu: u32| places.iter().find(|p| p.cpu == cpu).unwrap();
        // 8 cores in all: siblings n and n+8; groups of 2 cores; 4 cores per package.
        assert_eq!(PairClass::of(at(0), at(8)), PairClass::SmtSiblings);
        assert_eq!(PairClass::of(at(0), at(1)), PairClass::SameL3);
        assert_eq!(PairClass::of(at(0), at(2)), PairClass::SamePackage);
        assert_eq!(PairClass::of(at(0), at(4)), PairClass::CrossPackage);
        let bare = CpuPlace {
            cpu: 9,
            package: None,
            node: None,
            l3_group: None,
            core: 9,
        };
        assert_eq!(PairClass::of(at(0), &bare), PairClass::Unknown);
    }

    #[test]
    fn c2c_order_and_classes_on_milan_nps4() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines/milan64-nps4-smt");
        let machine = crate::machine::Machine::read(&crate::sysroot::SysRoot::dir(dir));
        let places = places(&machine.topology);
        // Siblings next to each other, CCX by CCX (8 cores, 16 CPUs), so the heatmap shows
        // 16 × 16 blocks.
        let order: Vec<u32> = places.iter().take(4).map(|p| p.cpu).collect();
        assert_eq!(order, vec![0, 64, 1, 65]);
        assert_eq!(group_breaks(&places), vec![15, 31, 47, 63, 79, 95, 111]);
        let at = |cpu: u32| places.iter().find(|p| p.cpu == cpu).unwrap();
        assert_eq!(PairClass::of(at(0), at(64)), PairClass::SmtSiblings);
        assert_eq!(PairClass::of(at(0), at(7)), PairClass::SameL3);
        assert_eq!(PairClass::of(at(0), at(8)), PairClass::SamePackage);
        assert_eq!(PairClass::of(at(0), at(127)), PairClass::SamePackage);
    }
}

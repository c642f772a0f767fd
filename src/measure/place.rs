//! Where each logical CPU sits (package, NUMA node, L3 group, core), and the orderings the
//! hardware engines derive from it: by locality (so CCX, CCD and socket blocks show up in
//! matrices), one thread per core, and spread across L3 groups (for bandwidth threads).
//!
//! The engines take plain CPU lists; these functions turn a machine's topology into such
//! lists. They are pure, so they are tested on described machines.

use serde::Serialize;
use std::collections::BTreeMap;

/// Where one logical CPU sits. `None` means the kernel did not say (old kernel, odd VM).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuPlace {
    /// The logical CPU number.
    pub cpu: u32,
    /// Physical package (socket) id.
    pub package: Option<u32>,
    /// NUMA node.
    pub node: Option<u32>,
    /// Index of the L3 instance (CCX on AMD) shared by this CPU, in the order of the machine's
    /// L3 groups (ordered by first CPU).
    pub l3_group: Option<u32>,
    /// Core id (unique within the package).
    pub core: Option<u32>,
}

impl CpuPlace {
    /// The sort key of [`by_locality`]: package, node, L3 group, core, then CPU number (so SMT
    /// siblings follow each other).
    fn locality_key(&self) -> (Option<u32>, Option<u32>, Option<u32>, Option<u32>, u32) {
        (self.package, self.node, self.l3_group, self.core, self.cpu)
    }

    /// Whether `self` and `other` are two threads of the same physical core.
    pub fn same_core(&self, other: &CpuPlace) -> bool {
        self.package.is_some()
            && self.core.is_some()
            && self.package == other.package
            && self.core == other.core
    }
}

/// The CPUs ordered by package, node, L3 group, core and thread.
pub fn by_locality(places: &[CpuPlace]) -> Vec<CpuPlace> {
    let mut out = places.to_vec();
    out.sort_by_key(CpuPlace::locality_key);
    out
}

/// The first thread (lowest CPU number) of every core, in locality order. CPUs whose core is
/// unknown each count as their own core.
pub fn one_per_core(places: &[CpuPlace]) -> Vec<CpuPlace> {
    let mut seen = std::collections::BTreeSet::new();
    by_locality(places)
        .into_iter()
        .filter(|p| match (p.package, p.core) {
            (Some(package), Some(core)) => seen.insert((package, core)),
            _ => true,
        })
        .collect()
}

/// `n` CPUs spread over the machine: round-robin over L3 groups (in locality order), one thread
/// per core first, SMT siblings only when every core already has a thread. This is the
/// placement of `OMP_PROC_BIND=spread` with `OMP_PLACES=cores` that STREAM runs use. Returns
/// fewer than `n` CPUs when `places` has fewer.
pub fn spread(places: &[CpuPlace], n: usize) -> Vec<u32> {
    let primaries = one_per_core(places);
    let primary_cpus: std::collections::BTreeSet<u32> = primaries.iter().map(|p| p.cpu).collect();
    let siblings: Vec<CpuPlace> = by_locality(places)
        .into_iter()
        .filter(|p| !primary_cpus.contains(&p.cpu))
        .collect();
    let mut out = round_robin_by_group(&primaries);
    out.extend(round_robin_by_group(&siblings));
    out.truncate(n);
    out
}

/// An L3 group's identity in locality order: package, node, L3 group.
type GroupKey = (Option<u32>, Option<u32>, Option<u32>);

/// The CPUs taken one from each L3 group in turn (groups in locality order).
fn round_robin_by_group(places: &[CpuPlace]) -> Vec<u32> {
    let mut groups: BTreeMap<GroupKey, Vec<u32>> = BTreeMap::new();
    for p in places {
        groups
            .entry((p.package, p.node, p.l3_group))
            .or_default()
            .push(p.cpu);
    }
    let mut queues: Vec<std::vec::IntoIter<u32>> =
        groups.into_values().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(places.len());
    while out.len() < places.len() {
        for queue in &mut queues {
            if let Some(cpu) = queue.next() {
                out.push(cpu);
            }
        }
    }
    out
}

/// How two CPUs are related, from the closest to the farthest; c2c summaries group pairs by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PairClass {
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
    pub fn of(a: &CpuPlace, b: &CpuPlace) -> PairClass {
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
    pub fn label(self) -> &'static str {
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

    /// A described machine: `packages` × `groups` L3 groups × `cores` cores × `threads`
    /// threads, with Linux-style numbering where SMT siblings are `n` and `n + cores total`.
    pub(crate) fn described(packages: u32, groups: u32, cores: u32, threads: u32) -> Vec<CpuPlace> {
        let cores_total = packages * groups * cores;
        let mut out = Vec::new();
        for t in 0..threads {
            for i in 0..cores_total {
                let package = i / (groups * cores);
                out.push(CpuPlace {
                    cpu: t * cores_total + i,
                    package: Some(package),
                    node: Some(package),
                    l3_group: Some(i / cores),
                    core: Some(i % (groups * cores)),
                });
            }
        }
        out
    }

    #[test]
    fn locality_puts_siblings_together() {
        // 1 package, 2 L3 groups of 2 cores, SMT: siblings are n and n+4.
        let places = described(1, 2, 2, 2);
        let order: Vec<u32> = by_locality(&places).iter().map(|p| p.cpu).collect();
        assert_eq!(order, vec![0, 4, 1, 5, 2, 6, 3, 7]);
    }

    #[test]
    fn locality_groups_interleaved_sockets() {
        // Sockets interleaved by the firmware: even CPUs on package 0, odd on package 1.
        let places: Vec<CpuPlace> = (0..8)
            .map(|cpu| CpuPlace {
                cpu,
                package: Some(cpu % 2),
                node: Some(cpu % 2),
                l3_group: Some(cpu % 2),
                core: Some(cpu / 2),
            })
            .collect();
        let order: Vec<u32> = by_locality(&places).iter().map(|p| p.cpu).collect();
        assert_eq!(order, vec![0, 2, 4, 6, 1, 3, 5, 7]);
    }

    #[test]
    fn spread_alternates_groups_before_siblings() {
        // epyc7f32-2s-like: 2 packages × 8 L3 groups × 1 core, no SMT.
        let places = described(2, 8, 1, 1);
        assert_eq!(spread(&places, 3), vec![0, 1, 2]);
        // 1 package, 2 groups × 2 cores × 2 threads: one core of each group, then the other
        // cores, then the siblings.
        let places = described(1, 2, 2, 2);
        assert_eq!(spread(&places, 8), vec![0, 2, 1, 3, 4, 6, 5, 7]);
        assert_eq!(spread(&places, 2), vec![0, 2]);
        assert_eq!(spread(&places, 100).len(), 8);
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
            core: None,
        };
        assert_eq!(PairClass::of(at(0), &bare), PairClass::Unknown);
    }
}

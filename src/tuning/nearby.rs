//! The housekeeping CPUs near a NUMA node, where an IRQ or a device is best served: the node's
//! own housekeeping CPUs when it has some, else all of them.
//!
//! The IRQ rule of the audit and the IRQ plan ask once per IRQ (50,000 on a large machine);
//! [`NearHousekeeping`] works each node out once, CPU list included, so that the cost per IRQ
//! does not grow with the number of CPUs or nodes.

use std::collections::HashMap;

use crate::machine::CpuSet;
use crate::machine::topology::Topology;

/// The housekeeping CPUs chosen for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Near {
    /// The CPUs.
    pub cpus: CpuSet,
    /// `cpus` as a CPU list (`0-3,64-67`).
    pub list: String,
    /// Whether `cpus` are the node's own; `false` when the node is unknown, absent or has no
    /// housekeeping CPU, and `cpus` are all the housekeeping CPUs.
    pub local: bool,
}

/// The housekeeping CPUs near each node, worked out on first use and kept.
pub(crate) struct NearHousekeeping<'a> {
    topology: &'a Topology,
    housekeeping: &'a CpuSet,
    by_node: HashMap<Option<u32>, Near>,
}

impl<'a> NearHousekeeping<'a> {
    /// Nothing worked out yet, for the `housekeeping` CPUs of `topology`.
    pub(crate) fn new(topology: &'a Topology, housekeeping: &'a CpuSet) -> Self {
        Self {
            topology,
            housekeeping,
            by_node: HashMap::new(),
        }
    }

    /// The housekeeping CPUs of `node` when it has some, else all of them.
    pub(crate) fn of(&mut self, node: Option<u32>) -> &Near {
        let (topology, housekeeping) = (self.topology, self.housekeeping);
        self.by_node.entry(node).or_insert_with(|| {
            let local = node
                .and_then(|n| topology.nodes.iter().find(|candidate| candidate.id == n))
                .map(|n| n.cpus.intersection(housekeeping))
                .filter(|cpus| !cpus.is_empty());
            let (cpus, local) = match local {
                Some(cpus) => (cpus, true),
                None => (housekeeping.clone(), false),
            };
            Near {
                list: cpus.to_list(),
                cpus,
                local,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Avail;
    use crate::machine::topology::{NumaNode, Shape};

    /// Two nodes of four CPUs: 0-3 and 4-7.
    fn topology() -> Topology {
        let node = |id: u32, list: &str| NumaNode {
            id,
            cpus: CpuSet::parse_list(list).unwrap(),
            mem_total_kib: Avail::missing("test"),
            mem_free_kib: Avail::missing("test"),
            distances: vec![],
            implied: false,
        };
        Topology {
            possible: Avail::missing("test"),
            present: Avail::missing("test"),
            online: Avail::missing("test"),
            offline: Avail::missing("test"),
            smt_control: Avail::missing("test"),
            cpus: vec![],
            caches: vec![],
            nodes: vec![node(0, "0-3"), node(1, "4-7")],
            shape: Shape::default(),
            core_types: None,
        }
    }

    #[test]
    fn a_node_with_housekeeping_cpus_keeps_its_own() {
        let topology = topology();
        let hk = CpuSet::parse_list("0,4").unwrap();
        let mut near = NearHousekeeping::new(&topology, &hk);
        let got = near.of(Some(1));
        assert_eq!((got.list.as_str(), got.local), ("4", true));
    }

    #[test]
    fn an_unknown_or_empty_node_gets_every_housekeeping_cpu() {
        let topology = topology();
        let hk = CpuSet::parse_list("0-1").unwrap();
        let mut near = NearHousekeeping::new(&topology, &hk);
        for node in [None, Some(1), Some(9)] {
            let got = near.of(node);
            assert_eq!((got.list.as_str(), got.local), ("0-1", false), "{node:?}");
        }
    }
}

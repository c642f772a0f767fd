//! Which kernel threads lowlat moves to the housekeeping CPUs, and where each goes: one rule
//! for the audit's fixes (LL-KTHREADS-ON-ISOLATED) and the plan's `kthread:` settings, so that
//! both propose the same setting with the same CPUs.

use std::collections::BTreeMap;

use crate::machine::tasks::{PerCpuKind, Task};
use crate::tuning::nearby::{Near, NearHousekeeping};

/// Whether `task` is an IRQ thread (`irq/45-nvme0q1`): it follows its IRQ's affinity, so it
/// moves with the IRQ, not by a setting of its own.
pub(crate) fn is_irq_thread(task: &Task) -> bool {
    task.kernel_thread && task.comm.starts_with("irq/")
}

/// Whether lowlat moves the kernel thread `task`: one the kernel lets move (not bound to its
/// CPU, its affinity not locked), not a per-CPU thread other than an RCU offload thread, and
/// not an IRQ thread.
pub(crate) fn is_moved(task: &Task) -> bool {
    let rcu_offload = task.per_cpu.is_some_and(|p| p.kind == PerCpuKind::Rcuop);
    task.kernel_thread
        && task.movable
        && !task.affinity_locked
        && (task.per_cpu.is_none() || rcu_offload)
        && !is_irq_thread(task)
}

/// The setting pattern that moves a kernel thread: the name itself, or `prefix/*` for a family
/// of threads (`rcuop/*`, `jbd2/*`); with the node of a per-node thread (`kswapd1`,
/// `kcompactd1`).
pub(crate) fn family(comm: &str) -> (String, Option<u32>) {
    if let Some((prefix, _)) = comm.split_once('/') {
        return (format!("{prefix}/*"), None);
    }
    for per_node in ["kswapd", "kcompactd"] {
        if let Some(rest) = comm.strip_prefix(per_node) {
            let digits = rest.split(':').next().unwrap_or("");
            if let Ok(node) = digits.parse() {
                return (comm.to_string(), Some(node));
            }
        }
    }
    (comm.to_string(), None)
}

/// Where one family of moved kernel threads goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The setting pattern ([`family`]).
    pub pattern: String,
    /// The node a per-node thread serves.
    pub node: Option<u32>,
    /// Its CPUs: the housekeeping CPUs of its node, or all of them.
    pub near: Near,
}

/// The placement of every family of `kthreads` that lowlat moves ([`is_moved`]), sorted by
/// pattern: a per-node thread on its node's housekeeping CPUs, any other on all of them.
pub(crate) fn placements<'t>(
    kthreads: impl IntoIterator<Item = &'t Task>,
    near: &mut NearHousekeeping,
) -> Vec<Placement> {
    let mut families: BTreeMap<String, Option<u32>> = BTreeMap::new();
    for task in kthreads.into_iter().filter(|task| is_moved(task)) {
        let (pattern, node) = family(&task.comm);
        families.entry(pattern).or_insert(node);
    }
    families
        .into_iter()
        .map(|(pattern, node)| Placement {
            pattern,
            node,
            near: near.of(node).clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_group_numbered_threads_and_find_nodes() {
        assert_eq!(family("rcuop/17"), ("rcuop/*".to_string(), None));
        assert_eq!(family("jbd2/nvme0n1p2-8"), ("jbd2/*".to_string(), None));
        assert_eq!(family("kswapd1"), ("kswapd1".to_string(), Some(1)));
        assert_eq!(family("kswapd0:1"), ("kswapd0:1".to_string(), Some(0)));
        assert_eq!(family("kcompactd3"), ("kcompactd3".to_string(), Some(3)));
        assert_eq!(family("khugepaged"), ("khugepaged".to_string(), None));
    }
}

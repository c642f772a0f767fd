//! Runtime isolation: the cpusets lowlat makes so that the isolated CPUs run only what is put
//! there, without a reboot. `plan --isolation runtime` plans them, `apply` makes them, `lowlat
//! run` starts a workload inside the isolated one. Their names are here, once.

use crate::machine::CpuSet;
use crate::machine::cpuset::{CgroupVersion, Cpuset, CpusetTree, PartitionState};

/// The cpuset of the isolated CPUs: on v1 `cpu_exclusive=1` and `sched_load_balance=0`, on v2
/// an isolated partition.
pub(crate) const ISOLATED: &str = "/lowlat-isolated";

/// The isolated cpuset of a tree, when lowlat's arrangement is in place: on v1 the cpuset
/// exists with CPUs; on v2 it is a valid isolated partition.
pub(crate) fn isolated(tree: &CpusetTree) -> Option<&Cpuset> {
    let group = tree.group(ISOLATED)?;
    let usable = match tree.version {
        CgroupVersion::V1 => group.effective.as_ref().is_some_and(|c| !c.is_empty()),
        CgroupVersion::V2 => group.partition == Some(PartitionState::Isolated),
    };
    usable.then_some(group)
}

/// The CPUs of the isolated cpuset: its effective CPUs (on v2, those the partition got).
pub(crate) fn isolated_cpus(group: &Cpuset) -> CpuSet {
    group.effective.clone().unwrap_or_default()
}

//! Runtime isolation: the cpusets lowlat makes so that the isolated CPUs run only what is put
//! there, without a reboot. `plan --isolation runtime` plans them, `apply` makes them, `lowlat
//! run` starts a workload inside the isolated one. Their names are here, once.

use crate::machine::CpuSet;
use crate::machine::cgroup_cpuset::{CgroupCpuset, CgroupVersion, CpusetTree, PartitionState};

/// The cpuset that holds every movable task and kernel thread, on the housekeeping CPUs
/// (cgroup v1 only: on v2 the root keeps them, and loses the isolated CPUs to the partition).
pub(crate) const HOUSEKEEPING: &str = "/lowlat-housekeeping";

/// The cpuset of the isolated CPUs: on v1 `cpu_exclusive=1` and `sched_load_balance=0`, on v2
/// an isolated partition.
pub(crate) const ISOLATED: &str = "/lowlat-isolated";

/// What runtime isolation cannot do, and what the boot arguments add: printed in the plan's
/// summary and the guide.
pub(crate) const LIMITS: &[(&str, &str)] = &[
    (
        "the scheduler tick",
        "nohz_full= stops the periodic tick on an isolated CPU that runs one task; a cpuset cannot",
    ),
    (
        "RCU callbacks",
        "rcu_nocbs= moves RCU callback processing to housekeeping CPUs; without it each CPU runs its own",
    ),
    (
        "managed IRQs",
        "isolcpus=managed_irq keeps kernel-managed queue vectors (NVMe, some NICs) off the isolated CPUs; their affinity cannot be written at run time",
    ),
    (
        "per-CPU kernel threads",
        "ksoftirqd, kworker/N, migration stay on every CPU; nohz_full and a long vm.stat_interval keep them rare",
    ),
];

/// The isolated cpuset of a tree, when lowlat's arrangement is in place: on v1 the cpuset
/// exists with CPUs; on v2 it is a valid isolated partition.
pub(crate) fn isolated(tree: &CpusetTree) -> Option<&CgroupCpuset> {
    let group = tree.group(ISOLATED)?;
    let usable = match tree.version {
        CgroupVersion::V1 => group.effective.as_ref().is_some_and(|c| !c.is_empty()),
        CgroupVersion::V2 => group.partition == Some(PartitionState::Isolated),
    };
    usable.then_some(group)
}

/// The CPUs of the isolated cpuset: its effective CPUs (on v2, those the partition got).
pub(crate) fn isolated_cpus(group: &CgroupCpuset) -> CpuSet {
    group.effective.clone().unwrap_or_default()
}

/// Whether a thread stays in the root cpuset: the kernel refuses to move one flagged
/// `PF_NO_SETAFFINITY` (per-CPU kernel threads, workqueue workers) and kthreadd itself.
pub(crate) fn stays_in_root(kernel_thread: bool, no_setaffinity: bool, comm: &str) -> bool {
    no_setaffinity || (kernel_thread && comm == "kthreadd")
}

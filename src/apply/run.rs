//! `lowlat run`: where a workload goes, and putting the calling process there before it runs
//! the workload. With lowlat's runtime isolation in place (`apply` of a plan made with
//! `--isolation runtime`) the process joins the isolated cpuset and narrows its affinity to the
//! CPUs asked for; on a machine isolated at boot (`isolcpus=`, `/sys/devices/system/cpu/isolated`)
//! only its affinity is set.

use crate::machine::cgroup_cpuset::{self, CgroupVersion, CpusetTree};
use crate::machine::{Avail, CpuSet, Reader};
use crate::sysroot::{SysRoot, WriteError};
use crate::tuning::runtime_isolation;

/// Where the workload runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The cpuset to join: its `cgroup.procs` file, its path and the cgroup version; `None`
    /// when only the affinity is set (isolation at boot).
    pub cpuset: Option<Joined>,
    /// The CPUs the workload may run on.
    pub cpus: CpuSet,
}

/// A cpuset the process joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Joined {
    /// Its path in the hierarchy (`/lowlat-isolated`).
    pub path: String,
    /// The system path of its `cgroup.procs`.
    pub procs_file: String,
    /// Which cgroup version.
    pub version: CgroupVersion,
}

impl Placement {
    /// What the placement does, in one line for people.
    pub(crate) fn describe(&self) -> String {
        match &self.cpuset {
            Some(joined) => format!(
                "in cpuset {} ({}), on CPUs {}",
                joined.path,
                joined.version.name(),
                self.cpus.to_list()
            ),
            None => format!(
                "on CPUs {} (isolated at boot; no runtime isolation cpuset)",
                self.cpus.to_list()
            ),
        }
    }
}

/// Why a workload cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlaceError {
    /// No isolated CPUs anywhere.
    #[error(
        "this machine has no isolated CPUs: no {cpuset} cpuset ({tree}) and none isolated at boot ({isolated} is empty); apply a plan made with `lowlat plan --isolation runtime` first, or boot with isolcpus="
    )]
    NothingIsolated {
        /// The cpuset looked for.
        cpuset: &'static str,
        /// What the cpuset tree showed.
        tree: String,
        /// The sysfs file of boot isolation.
        isolated: &'static str,
    },
    /// The CPUs asked for are not all isolated.
    #[error("--cpus {asked}: CPUs {outside} are not isolated (the isolated CPUs are {isolated})")]
    NotIsolated {
        /// The CPUs asked for.
        asked: String,
        /// Those outside the isolated set.
        outside: String,
        /// The isolated CPUs.
        isolated: String,
    },
    /// The isolated partition exists but the kernel marks it invalid (v2).
    #[error(
        "the isolated partition {path} is invalid: {reason}; `lowlat verify` shows what the plan expects"
    )]
    InvalidPartition {
        /// The cpuset.
        path: String,
        /// The kernel's reason.
        reason: String,
    },
}

/// The file of boot-time isolation: the CPUs `isolcpus=` took out of the scheduler domains.
pub(crate) const BOOT_ISOLATED: &str = "/sys/devices/system/cpu/isolated";

/// Where to run on the machine under `root`: [`place`] on its cpuset tree and the CPUs it
/// isolated at boot.
pub(crate) fn placement(root: &SysRoot, asked: Option<&CpuSet>) -> Result<Placement, PlaceError> {
    let mut reader = Reader::new(root);
    let tree = cgroup_cpuset::read(&mut reader);
    place(&tree, &reader.cpulist(BOOT_ISOLATED), asked)
}

/// Where to run: the isolated cpuset when there is one, else the CPUs isolated at boot;
/// `asked` (`--cpus`) narrows it and must lie within.
pub(crate) fn place(
    tree: &Avail<CpusetTree>,
    boot_isolated: &Avail<CpuSet>,
    asked: Option<&CpuSet>,
) -> Result<Placement, PlaceError> {
    let (cpuset, isolated) = match tree.get() {
        Some(tree) => {
            if let Some(group) = tree.group(runtime_isolation::ISOLATED)
                && let Some(reason) = group.partition.as_ref().and_then(|p| p.invalid())
            {
                return Err(PlaceError::InvalidPartition {
                    path: group.path.clone(),
                    reason: reason.to_string(),
                });
            }
            match runtime_isolation::isolated(tree) {
                Some(group) => (
                    Some(Joined {
                        path: group.path.clone(),
                        procs_file: tree.file(&group.path, "cgroup.procs"),
                        version: tree.version,
                    }),
                    runtime_isolation::isolated_cpus(group),
                ),
                None => (None, CpuSet::new()),
            }
        }
        None => (None, CpuSet::new()),
    };
    let isolated = if cpuset.is_some() {
        isolated
    } else {
        boot_isolated.get().cloned().unwrap_or_default()
    };
    if isolated.is_empty() {
        let tree = match tree {
            Avail::Available(tree) => format!("{} at {}", tree.version.name(), tree.mount),
            Avail::Unavailable { unavailable } => unavailable.clone(),
        };
        return Err(PlaceError::NothingIsolated {
            cpuset: runtime_isolation::ISOLATED,
            tree,
            isolated: BOOT_ISOLATED,
        });
    }
    let cpus = match asked {
        Some(asked) if !asked.is_subset(&isolated) => {
            return Err(PlaceError::NotIsolated {
                asked: asked.to_list(),
                outside: asked.difference(&isolated).to_list(),
                isolated: isolated.to_list(),
            });
        }
        Some(asked) => asked.clone(),
        None => isolated,
    };
    Ok(Placement { cpuset, cpus })
}

/// Why the process could not be put in place.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EnterError {
    /// Joining the cpuset needs root.
    #[error(
        "lowlat run joins the isolated cpuset, which needs root (sudo lowlat run ...); nothing was started"
    )]
    NotRoot,
    /// Joining the cpuset failed.
    #[error("could not join cpuset {path}: {source}")]
    Join {
        /// The cpuset.
        path: String,
        /// The write error.
        source: WriteError,
    },
    /// Setting the affinity failed.
    #[error("could not set the CPU affinity to {cpus}: {source}")]
    Affinity {
        /// The CPUs.
        cpus: String,
        /// The system error.
        source: std::io::Error,
    },
}

/// Puts the calling process in place: joins the cpuset (all its threads; only root may), then
/// narrows its affinity. Only on the live machine.
pub(crate) fn enter(root: &SysRoot, placement: &Placement) -> Result<(), EnterError> {
    if let Some(joined) = &placement.cpuset {
        if !rustix::process::geteuid().is_root() {
            return Err(EnterError::NotRoot);
        }
        let pid = std::process::id().to_string();
        root.write_knob(&joined.procs_file, pid.as_bytes())
            .map_err(|source| EnterError::Join {
                path: joined.path.clone(),
                source,
            })?;
    }
    let mut set = rustix::thread::CpuSet::new();
    for cpu in placement.cpus.iter() {
        if (cpu as usize) < rustix::thread::CpuSet::MAX_CPU {
            set.set(cpu as usize);
        }
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| EnterError::Affinity {
        cpus: placement.cpus.to_list(),
        source: e.into(),
    })
}

/// Becomes `command` (its program, then its arguments; in place, by `execve`), once the
/// process is in place: returns only why it could not.
pub(crate) fn exec(command: &[std::ffi::OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let Some((program, rest)) = command.split_first() else {
        return std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no COMMAND given after --",
        );
    };
    std::process::Command::new(program).args(rest).exec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::cgroup_cpuset::fixtures;

    fn set(list: &str) -> CpuSet {
        CpuSet::parse_list(list).unwrap()
    }

    fn tree(tree: &crate::test_tree::TestTree) -> Avail<CpusetTree> {
        let root = tree.root();
        cgroup_cpuset::read(&mut Reader::new(&root))
    }

    #[test]
    fn joins_lowlat_isolated_cpuset_on_v1() {
        let t = fixtures::v1();
        for (name, value) in [
            ("cpuset.cpus", "1\n"),
            ("cpuset.effective_cpus", "1\n"),
            ("tasks", ""),
        ] {
            t.write(
                &format!("/sys/fs/cgroup/cpuset/lowlat-isolated/{name}"),
                value,
            );
        }
        let placement = place(&tree(&t), &Avail::Available(CpuSet::new()), None).unwrap();
        assert_eq!(placement.cpus, set("1"));
        let joined = placement.cpuset.as_ref().unwrap();
        assert_eq!(
            joined.procs_file,
            "/sys/fs/cgroup/cpuset/lowlat-isolated/cgroup.procs"
        );
        assert_eq!(
            placement.describe(),
            "in cpuset /lowlat-isolated (cgroup v1), on CPUs 1"
        );
        let err = place(
            &tree(&t),
            &Avail::Available(CpuSet::new()),
            Some(&set("0-1")),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "--cpus 0-1: CPUs 0 are not isolated (the isolated CPUs are 1)"
        );
    }

    #[test]
    fn falls_back_to_boot_isolation_and_else_says_what_to_do() {
        let t = fixtures::v1();
        let placement = place(&tree(&t), &Avail::Available(set("1")), None).unwrap();
        assert_eq!(placement.cpuset, None);
        assert!(placement.describe().contains("isolated at boot"));
        let err = place(&tree(&t), &Avail::Available(CpuSet::new()), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no /lowlat-isolated cpuset (cgroup v1 at /sys/fs/cgroup/cpuset)"),
            "{err}"
        );
        assert!(err.contains("lowlat plan --isolation runtime"), "{err}");
    }

    #[test]
    fn an_invalid_v2_partition_is_refused_with_the_kernels_reason() {
        let t = fixtures::v2();
        for (name, value) in [
            ("cpuset.cpus", "3"),
            ("cpuset.cpus.effective", ""),
            (
                "cpuset.cpus.partition",
                "isolated invalid (Parent is not a partition root)",
            ),
        ] {
            t.write(&format!("/sys/fs/cgroup/lowlat-isolated/{name}"), value);
        }
        let err = place(&tree(&t), &Avail::Available(set("3")), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/lowlat-isolated is invalid: Parent is not a partition root"),
            "{err}"
        );
        t.write(
            "/sys/fs/cgroup/lowlat-isolated/cpuset.cpus.partition",
            "isolated",
        );
        t.write("/sys/fs/cgroup/lowlat-isolated/cpuset.cpus.effective", "3");
        let placement = place(&tree(&t), &Avail::Available(CpuSet::new()), None).unwrap();
        assert_eq!(placement.cpus, set("3"));
        assert_eq!(placement.cpuset.unwrap().version, CgroupVersion::V2);
    }
}

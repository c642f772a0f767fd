//! CPU sets: the cgroup `cpuset` controller, which runtime isolation (`plan --isolation
//! runtime`, `lowlat run`) works through.
//!
//! Two layouts exist. cgroup v1 mounts the controller on a hierarchy of its own
//! (`/sys/fs/cgroup/cpuset`, also in hybrid mode beside `/sys/fs/cgroup/unified`), where each
//! cpuset has `cpuset.cpus`, `cpuset.effective_cpus`, `cpuset.mems`, `cpuset.cpu_exclusive`,
//! `cpuset.sched_load_balance` and `tasks` (thread ids). cgroup v2 has one tree at
//! `/sys/fs/cgroup` whose cgroups have `cpuset.cpus` (empty: the parent's),
//! `cpuset.cpus.effective`, `cpuset.cpus.partition` (`member`, `root`, `isolated`, and when the
//! kernel cannot honour it `root invalid (reason)` / `isolated invalid (reason)`) and
//! `cgroup.threads`; the controller is on in a cgroup when its parent's
//! `cgroup.subtree_control` names it.
//!
//! Who manages the tree matters before anything is changed in it: the kubelet's cpu manager
//! owns `kubepods*`, systemd owns the slices of a v2 tree (`system.slice`, `user.slice`,
//! `AllowedCPUs=`). A missing controller is `Unavailable`; a garbled file is a warning naming
//! it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Avail, CpuSet, Reader};

/// Where cgroup v1 mounts the cpuset hierarchy.
pub const V1_MOUNT: &str = "/sys/fs/cgroup/cpuset";
/// Where cgroup v2 mounts its one hierarchy.
pub const V2_MOUNT: &str = "/sys/fs/cgroup";

/// The most cpusets read: a tree larger than this (tens of thousands of containers) is read up
/// to it, with a warning.
const MOST_GROUPS: usize = 20_000;

/// Which cgroup version the cpuset controller is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// cgroup v1: the controller's own hierarchy.
    V1,
    /// cgroup v2: the unified hierarchy.
    V2,
}

impl CgroupVersion {
    /// `cgroup v1` or `cgroup v2`.
    pub fn name(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "cgroup v1",
            CgroupVersion::V2 => "cgroup v2",
        }
    }

    /// The file of a cpuset that lists its threads: v1 `tasks`, v2 `cgroup.threads`.
    pub fn threads_file(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "tasks",
            CgroupVersion::V2 => "cgroup.threads",
        }
    }

    /// The file of a cpuset with its effective CPUs.
    pub fn effective_file(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "cpuset.effective_cpus",
            CgroupVersion::V2 => "cpuset.cpus.effective",
        }
    }

    /// The file of a cpuset with its memory nodes as written.
    pub fn mems_file(self) -> &'static str {
        "cpuset.mems"
    }
}

/// Who manages the cgroup tree besides the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "manager", rename_all = "lowercase")]
pub enum Manager {
    /// Nobody lowlat knows of: its files may be written directly.
    None,
    /// systemd (PID 1) manages the slices of the tree; on cgroup v2 their CPUs are set with
    /// `AllowedCPUs=` (systemd 244 on), which systemd writes back over a direct write.
    Systemd,
    /// The kubelet's cpu manager owns the pods' cpusets.
    Kubelet {
        /// The kubelet's cgroup (`/kubepods.slice`, `/kubepods`).
        cgroup: String,
    },
}

/// A v2 cpuset's partition state (`cpuset.cpus.partition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionState {
    /// Not a partition: its CPUs are its parent's.
    Member,
    /// A partition root with scheduler load balancing.
    Root,
    /// A partition root without load balancing: the CPUs are isolated.
    Isolated,
    /// Asked to be a root, which the kernel cannot honour now (the reason it gives, when it
    /// gives one).
    RootInvalid(Option<String>),
    /// Asked to be isolated, which the kernel cannot honour now (the reason, when given).
    IsolatedInvalid(Option<String>),
}

impl PartitionState {
    /// Parses `cpuset.cpus.partition`: `member`, `root`, `isolated`, `root invalid`,
    /// `isolated invalid (Cpu list in cpuset.cpus not exclusive)`.
    pub fn parse(text: &str) -> Option<PartitionState> {
        let text = text.trim();
        let (kind, rest) = text.split_once(' ').unwrap_or((text, ""));
        let rest = rest.trim();
        if rest.is_empty() {
            return match kind {
                "member" => Some(PartitionState::Member),
                "root" => Some(PartitionState::Root),
                "isolated" => Some(PartitionState::Isolated),
                _ => None,
            };
        }
        let reason = rest.strip_prefix("invalid")?.trim();
        let reason = if reason.is_empty() {
            None
        } else {
            Some(
                reason
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .unwrap_or(reason)
                    .to_string(),
            )
        };
        match kind {
            "root" => Some(PartitionState::RootInvalid(reason)),
            "isolated" => Some(PartitionState::IsolatedInvalid(reason)),
            _ => None,
        }
    }

    /// The kernel's reason when the partition is invalid (`""` when it gives none); `None`
    /// when valid.
    pub fn invalid(&self) -> Option<&str> {
        match self {
            PartitionState::RootInvalid(why) | PartitionState::IsolatedInvalid(why) => {
                Some(why.as_deref().unwrap_or(""))
            }
            _ => None,
        }
    }
}

/// As the kernel writes it: `isolated`, `isolated invalid (reason)`.
impl std::fmt::Display for PartitionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, invalid) = match self {
            PartitionState::Member => ("member", None),
            PartitionState::Root => ("root", None),
            PartitionState::Isolated => ("isolated", None),
            PartitionState::RootInvalid(why) => ("root", Some(why)),
            PartitionState::IsolatedInvalid(why) => ("isolated", Some(why)),
        };
        match invalid {
            None => f.write_str(kind),
            Some(None) => write!(f, "{kind} invalid"),
            Some(Some(why)) => write!(f, "{kind} invalid ({why})"),
        }
    }
}

/// One cpuset (one cgroup with the controller on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupCpuset {
    /// Its path in the hierarchy: `/` for the root, `/libpod_parent/conmon`.
    pub path: String,
    /// The CPUs asked for (`cpuset.cpus`); empty on v2 means the parent's; `None` where the
    /// file is absent (the v2 root) or garbled.
    pub cpus: Option<CpuSet>,
    /// The CPUs its tasks may use now (v1 `cpuset.effective_cpus`, v2
    /// `cpuset.cpus.effective`).
    pub effective: Option<CpuSet>,
    /// The memory nodes as written (`cpuset.mems`, `0-1`); a v1 cpuset takes no task until
    /// it has some.
    pub mems: Option<String>,
    /// v2: the partition state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<PartitionState>,
    /// v1: whether no sibling may share its CPUs (`cpuset.cpu_exclusive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_exclusive: Option<bool>,
    /// v1: whether the scheduler balances load across its CPUs
    /// (`cpuset.sched_load_balance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_load_balance: Option<bool>,
    /// The thread ids in it (v1 `tasks`, v2 `cgroup.threads`), ascending.
    pub tasks: Vec<u32>,
}

/// The cpuset hierarchy of the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpusetTree {
    /// Which cgroup version holds the controller.
    pub version: CgroupVersion,
    /// Where the hierarchy is mounted (`/sys/fs/cgroup/cpuset`, `/sys/fs/cgroup`).
    pub mount: String,
    /// Who manages it.
    pub manager: Manager,
    /// Every cpuset, the root first, each parent before its children.
    pub groups: Vec<CgroupCpuset>,
}

impl CpusetTree {
    /// The system path of file `name` of the cpuset `path`.
    pub fn file(&self, path: &str, name: &str) -> String {
        file_of(&self.mount, path, name)
    }

    /// The root cpuset.
    pub fn root(&self) -> Option<&CgroupCpuset> {
        self.groups.first().filter(|g| g.path == "/")
    }

    /// The cpuset at `path`.
    pub fn group(&self, path: &str) -> Option<&CgroupCpuset> {
        self.groups.iter().find(|g| g.path == path)
    }

    /// Which cpuset each thread is in.
    pub fn membership(&self) -> HashMap<u32, &str> {
        self.groups
            .iter()
            .flat_map(|g| g.tasks.iter().map(move |&tid| (tid, g.path.as_str())))
            .collect()
    }

    /// The cpusets below the root, deepest first (the order to shrink them in: a v1 child's
    /// CPUs must stay within its parent's).
    pub fn deepest_first(&self) -> Vec<&CgroupCpuset> {
        let mut below: Vec<&CgroupCpuset> = self.groups.iter().filter(|g| g.path != "/").collect();
        below.sort_by_key(|g| std::cmp::Reverse(g.path.matches('/').count()));
        below
    }

    /// The v2 cpusets whose partition the kernel marks invalid, with its reason.
    pub fn invalid_partitions(&self) -> Vec<(&str, &str)> {
        self.groups
            .iter()
            .filter_map(|g| Some((g.path.as_str(), g.partition.as_ref()?.invalid()?)))
            .collect()
    }
}

/// The system path of file `name` of the cpuset `path` under `mount`.
pub fn file_of(mount: &str, path: &str, name: &str) -> String {
    if path == "/" {
        format!("{mount}/{name}")
    } else {
        format!("{mount}{path}/{name}")
    }
}

/// The cpuset path of a task from `/proc/<pid>/cgroup`: v1, the line whose controllers name
/// `cpuset` (`3:cpuset:/lowlat-housekeeping`); v2, the unified line (`0::/system.slice`).
pub fn task_cpuset(text: &str, version: CgroupVersion) -> Option<String> {
    text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let found = match version {
            CgroupVersion::V1 => controllers.split(',').any(|c| c == "cpuset"),
            CgroupVersion::V2 => id == "0" && controllers.is_empty(),
        };
        found.then(|| path.to_string())
    })
}

/// Why the machine has no cpuset hierarchy to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum NoCpuset {
    /// A cgroup v2 tree without the cpuset controller, and no v1 hierarchy.
    #[error(
        "the cgroup v2 tree at {} has no cpuset controller (cgroup.controllers does not name it), and no v1 cpuset hierarchy is mounted at {}",
        V2_MOUNT,
        V1_MOUNT
    )]
    NoController,
    /// Neither layout's files exist.
    #[error(
        "no cpuset controller: neither {}/cpuset.cpus (cgroup v1) nor {}/cgroup.controllers (cgroup v2) exists",
        V1_MOUNT,
        V2_MOUNT
    )]
    NoHierarchy,
}

/// Which layout the root holds: v1 when `/sys/fs/cgroup/cpuset` has `cpuset.cpus`, v2 when
/// the unified root's `cgroup.controllers` names `cpuset`.
fn detect(r: &mut Reader) -> Result<(CgroupVersion, String), NoCpuset> {
    if r.root.exists(&file_of(V1_MOUNT, "/", "cpuset.cpus")) {
        return Ok((CgroupVersion::V1, V1_MOUNT.to_string()));
    }
    match r.root.read(&file_of(V2_MOUNT, "/", "cgroup.controllers")) {
        Ok(text) if text.split_whitespace().any(|c| c == "cpuset") => {
            Ok((CgroupVersion::V2, V2_MOUNT.to_string()))
        }
        Ok(_) => Err(NoCpuset::NoController),
        Err(_) => Err(NoCpuset::NoHierarchy),
    }
}

/// Who manages the tree: the kubelet when a `kubepods*` cgroup is at its top, systemd when it
/// is PID 1 and has its slices in the tree (v2) or its own v1 hierarchy.
fn manager(r: &mut Reader, version: CgroupVersion, groups: &[CgroupCpuset]) -> Manager {
    let top = groups
        .iter()
        .filter(|g| g.path != "/" && g.path.matches('/').count() == 1);
    let kube = top
        .clone()
        .find(|g| g.path.trim_start_matches('/').starts_with("kubepods"))
        .or_else(|| {
            // systemd's cgroup driver puts the kubelet's pods in /kubepods.slice; the cgroupfs
            // driver in /kubepods; both may sit under a slice of their own.
            groups.iter().find(|g| {
                g.path
                    .rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with("kubepods"))
            })
        });
    if let Some(kube) = kube {
        return Manager::Kubelet {
            cgroup: kube.path.clone(),
        };
    }
    let pid1 = r.root.read_value("/proc/1/comm").unwrap_or_default();
    let slices = match version {
        CgroupVersion::V2 => top.clone().any(|g| g.path.ends_with(".slice")),
        CgroupVersion::V1 => r.root.is_dir("/sys/fs/cgroup/systemd/system.slice"),
    };
    if pid1 == "systemd" && slices {
        Manager::Systemd
    } else {
        Manager::None
    }
}

/// Reads the cpuset hierarchy. Unavailable when the machine has no cpuset controller.
pub fn read(r: &mut Reader) -> Avail<CpusetTree> {
    let (version, mount) = match detect(r) {
        Ok(found) => found,
        Err(why) => return Avail::missing(why.to_string()),
    };
    let mut groups = Vec::new();
    let mut pending = vec!["/".to_string()];
    while let Some(path) = pending.pop() {
        if groups.len() >= MOST_GROUPS {
            r.warnings.file(
                &mount,
                format!("more than {MOST_GROUPS} cpusets; the rest were not read"),
            );
            break;
        }
        let Some(group) = read_group(r, version, &mount, &path) else {
            continue;
        };
        groups.push(group);
        let dir = file_of(&mount, &path, "");
        let dir = dir.trim_end_matches('/');
        let mut children: Vec<String> = r
            .root
            .list(dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|name| r.root.is_dir(&format!("{dir}/{name}")))
            .map(|name| match path.as_str() {
                "/" => format!("/{name}"),
                _ => format!("{path}/{name}"),
            })
            .collect();
        children.reverse();
        pending.extend(children);
    }
    let manager = manager(r, version, &groups);
    Avail::Available(CpusetTree {
        version,
        mount,
        manager,
        groups,
    })
}

/// One cpuset; `None` for a v2 cgroup without the controller (no `cpuset.cpus.effective`).
fn read_group(
    r: &mut Reader,
    version: CgroupVersion,
    mount: &str,
    path: &str,
) -> Option<CgroupCpuset> {
    let file = |name: &str| file_of(mount, path, name);
    let effective_path = file(version.effective_file());
    if version == CgroupVersion::V2 && !r.root.exists(&effective_path) {
        return None;
    }
    let cpus_of = |r: &mut Reader, path: String| -> Option<CpuSet> {
        if !r.root.exists(&path) {
            return None;
        }
        r.cpulist(&path).get_owned()
    };
    let cpus = cpus_of(r, file("cpuset.cpus"));
    let effective = cpus_of(r, effective_path);
    let mems = r.root.read_value(&file(version.mems_file())).ok();
    let flag = |r: &mut Reader, name: &str| -> Option<bool> {
        let path = file(name);
        let text = r.root.read_value(&path).ok()?;
        match text.as_str() {
            "0" => Some(false),
            "1" => Some(true),
            other => {
                r.warnings
                    .file(&path, format!("expected 0 or 1, found '{other}'"));
                None
            }
        }
    };
    let (cpu_exclusive, sched_load_balance, partition) = match version {
        CgroupVersion::V1 => (
            flag(r, "cpuset.cpu_exclusive"),
            flag(r, "cpuset.sched_load_balance"),
            None,
        ),
        CgroupVersion::V2 => {
            let path = file("cpuset.cpus.partition");
            let partition = r.root.read_value(&path).ok().and_then(|text| {
                let state = PartitionState::parse(&text);
                if state.is_none() {
                    r.warnings
                        .file(&path, format!("not a partition state: '{text}'"));
                }
                state
            });
            (None, None, partition)
        }
    };
    let tasks_path = file(version.threads_file());
    let tasks = match r.root.read(&tasks_path) {
        Ok(text) => parse_ids(&text, &tasks_path, r),
        Err(_) => Vec::new(),
    };
    Some(CgroupCpuset {
        path: path.to_string(),
        cpus,
        effective,
        mems,
        partition,
        cpu_exclusive,
        sched_load_balance,
        tasks,
    })
}

/// Thread ids, one a line, ascending; a line that is not one is warned about.
fn parse_ids(text: &str, path: &str, r: &mut Reader) -> Vec<u32> {
    let mut ids = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match line.parse() {
            Ok(id) => ids.push(id),
            Err(_) => r
                .warnings
                .line(path, i + 1, format!("not a thread id: '{line}'")),
        }
    }
    ids.sort_unstable();
    ids
}

/// Trees laid out as the kernel shows them, for tests here and in `plan` and `apply`.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::test_tree::TestTree;

    /// A cgroup v1 cpuset hierarchy in hybrid mode, as on the development VM (2 CPUs, kernel
    /// 6.18, PID 1 not systemd): the root with tasks 1, 2 (kthreadd), 10 (ksoftirqd/1) and 300
    /// (a shell), and podman's `libpod_parent/conmon` with CPUs 0-1 and no task.
    pub(crate) fn v1() -> TestTree {
        let tree = TestTree::with(&[("/proc/1/comm", "process_api\n")]);
        let root = "/sys/fs/cgroup/cpuset";
        for dir in ["", "/libpod_parent", "/libpod_parent/conmon"] {
            let (exclusive, tasks) = if dir.is_empty() {
                ("1", "1\n2\n10\n300\n")
            } else {
                ("0", "")
            };
            for (name, value) in [
                ("cpuset.cpus", "0-1\n"),
                ("cpuset.effective_cpus", "0-1\n"),
                ("cpuset.mems", "0\n"),
                ("cpuset.cpu_exclusive", exclusive),
                ("cpuset.sched_load_balance", "1\n"),
                ("tasks", tasks),
                ("cgroup.procs", tasks),
            ] {
                tree.write(&format!("{root}{dir}/{name}"), value);
            }
        }
        tree.write("/sys/fs/cgroup/unified/cgroup.controllers", "\n");
        tree
    }

    /// A cgroup v2 tree (4 CPUs) managed by systemd: `system.slice` and `user.slice` with the
    /// cpuset controller on, and an `isolated` cgroup whose partition the kernel marks invalid.
    pub(crate) fn v2() -> TestTree {
        let tree = TestTree::with(&[
            ("/proc/1/comm", "systemd\n"),
            (
                "/sys/fs/cgroup/cgroup.controllers",
                "cpuset cpu io memory pids\n",
            ),
            (
                "/sys/fs/cgroup/cgroup.subtree_control",
                "cpuset cpu memory\n",
            ),
            ("/sys/fs/cgroup/cpuset.cpus.effective", "0-3\n"),
            ("/sys/fs/cgroup/cpuset.mems.effective", "0\n"),
            ("/sys/fs/cgroup/cgroup.threads", "1\n2\n"),
        ]);
        for (dir, cpus, partition, threads) in [
            ("system.slice", "", "member", "400\n401\n"),
            ("user.slice", "", "member", "900\n"),
            (
                "isolated",
                "3",
                "isolated invalid (Cpu list in cpuset.cpus not exclusive)",
                "",
            ),
        ] {
            let effective = if partition == "member" { "0-3" } else { "" };
            for (name, value) in [
                ("cpuset.cpus", cpus),
                ("cpuset.cpus.effective", effective),
                ("cpuset.mems", ""),
                ("cpuset.cpus.partition", partition),
                ("cgroup.threads", threads),
                ("cgroup.procs", threads),
            ] {
                tree.write(
                    &format!("/sys/fs/cgroup/{dir}/{name}"),
                    format!("{value}\n"),
                );
            }
        }
        tree
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_of(tree: &crate::test_tree::TestTree) -> (CpusetTree, Vec<String>) {
        let root = tree.root();
        let mut r = Reader::new(&root);
        let cpusets = read(&mut r).get_owned().expect("a cpuset tree");
        let warnings = r
            .warnings
            .into_vec()
            .iter()
            .map(|w| w.to_string())
            .collect();
        (cpusets, warnings)
    }

    #[test]
    fn reads_a_v1_hierarchy_parents_first() {
        let (tree, warnings) = tree_of(&fixtures::v1());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(tree.version, CgroupVersion::V1);
        assert_eq!(tree.mount, V1_MOUNT);
        assert_eq!(tree.manager, Manager::None);
        let paths: Vec<&str> = tree.groups.iter().map(|g| g.path.as_str()).collect();
        assert_eq!(paths, ["/", "/libpod_parent", "/libpod_parent/conmon"]);
        let root = tree.root().unwrap();
        assert_eq!(root.cpus.as_ref().unwrap().to_list(), "0-1");
        assert_eq!(root.cpu_exclusive, Some(true));
        assert_eq!(root.sched_load_balance, Some(true));
        assert_eq!(root.mems.as_deref(), Some("0"));
        assert_eq!(root.tasks, [1, 2, 10, 300]);
        assert_eq!(root.partition, None);
        assert_eq!(tree.membership()[&300], "/");
        let deepest: Vec<&str> = tree
            .deepest_first()
            .iter()
            .map(|g| g.path.as_str())
            .collect();
        assert_eq!(deepest, ["/libpod_parent/conmon", "/libpod_parent"]);
        assert_eq!(
            tree.file("/libpod_parent", "tasks"),
            "/sys/fs/cgroup/cpuset/libpod_parent/tasks"
        );
        assert_eq!(tree.file("/", "tasks"), "/sys/fs/cgroup/cpuset/tasks");
    }

    #[test]
    fn reads_a_v2_tree_with_its_partitions_and_manager() {
        let (tree, warnings) = tree_of(&fixtures::v2());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(tree.version, CgroupVersion::V2);
        assert_eq!(tree.manager, Manager::Systemd);
        let root = tree.root().unwrap();
        assert_eq!(root.cpus, None, "the v2 root has no cpuset.cpus");
        assert_eq!(root.effective.as_ref().unwrap().to_list(), "0-3");
        let system = tree.group("/system.slice").unwrap();
        assert_eq!(system.cpus, Some(CpuSet::new()), "empty: the parent's");
        assert_eq!(system.partition, Some(PartitionState::Member));
        assert_eq!(system.tasks, [400, 401]);
        assert_eq!(
            tree.invalid_partitions(),
            [("/isolated", "Cpu list in cpuset.cpus not exclusive")]
        );
        assert_eq!(tree.membership()[&900], "/user.slice");
    }

    #[test]
    fn the_kubelet_is_found_before_systemd() {
        let tree = fixtures::v2();
        tree.write(
            "/sys/fs/cgroup/kubepods.slice/cpuset.cpus.effective",
            "0-3\n",
        );
        let (cpusets, _) = tree_of(&tree);
        assert_eq!(
            cpusets.manager,
            Manager::Kubelet {
                cgroup: "/kubepods.slice".into()
            }
        );
    }

    #[test]
    fn v2_cgroups_without_the_controller_are_not_cpusets() {
        let tree = fixtures::v2();
        tree.write("/sys/fs/cgroup/init.scope/cgroup.threads", "1\n");
        let (cpusets, _) = tree_of(&tree);
        assert!(cpusets.group("/init.scope").is_none());
    }

    #[test]
    fn no_controller_is_unavailable_with_the_reason() {
        let tree = crate::test_tree::TestTree::with(&[(
            "/sys/fs/cgroup/cgroup.controllers",
            "cpu memory\n",
        )]);
        let root = tree.root();
        let why = read(&mut Reader::new(&root)).reason().unwrap().to_string();
        assert!(why.contains("no cpuset controller"), "{why}");
        let empty = crate::test_tree::TestTree::empty();
        let root = empty.root();
        let why = read(&mut Reader::new(&root)).reason().unwrap().to_string();
        assert!(why.contains("neither"), "{why}");
    }

    #[test]
    fn garbled_files_are_warned_about_by_name_and_line() {
        let tree = fixtures::v1();
        tree.write("/sys/fs/cgroup/cpuset/tasks", "1\nx\n3\n");
        tree.write("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance", "2\n");
        let (cpusets, warnings) = tree_of(&tree);
        assert_eq!(cpusets.root().unwrap().tasks, [1, 3]);
        assert_eq!(cpusets.root().unwrap().sched_load_balance, None);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance"));
        assert!(warnings[1].starts_with("/sys/fs/cgroup/cpuset/tasks:2"));
    }

    #[test]
    fn parses_partition_states_with_and_without_reasons() {
        let cases = [
            ("member", Some(PartitionState::Member)),
            ("root\n", Some(PartitionState::Root)),
            ("isolated", Some(PartitionState::Isolated)),
            ("root invalid", Some(PartitionState::RootInvalid(None))),
            (
                "isolated invalid (Parent is not a partition root)",
                Some(PartitionState::IsolatedInvalid(Some(
                    "Parent is not a partition root".into(),
                ))),
            ),
            ("isolated valid", None),
            ("banana", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(PartitionState::parse(text), expected, "{text:?}");
        }
        assert_eq!(PartitionState::RootInvalid(None).invalid(), Some(""));
        for text in [
            "member",
            "root invalid",
            "isolated invalid (Parent is not a partition root)",
        ] {
            assert_eq!(PartitionState::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(PartitionState::Isolated.invalid(), None);
    }

    #[test]
    fn finds_a_tasks_cpuset_in_its_cgroup_file() {
        let v1 = "9:name=systemd:/\n3:cpuset:/lowlat-isolated\n1:cpu,cpuacct:/x\n0::/\n";
        assert_eq!(
            task_cpuset(v1, CgroupVersion::V1).as_deref(),
            Some("/lowlat-isolated")
        );
        assert_eq!(task_cpuset(v1, CgroupVersion::V2).as_deref(), Some("/"));
        assert_eq!(task_cpuset("garbage", CgroupVersion::V1), None);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC{0,60}") {
            let _ = PartitionState::parse(&text);
            let _ = task_cpuset(&text, CgroupVersion::V1);
            let _ = task_cpuset(&text, CgroupVersion::V2);
        }
    }
}

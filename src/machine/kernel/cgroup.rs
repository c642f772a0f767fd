//! The cgroup layout: v1, v2 (the unified hierarchy alone) or hybrid (systemd's v1
//! controllers beside a v2 hierarchy without controllers), from the mounts in `/proc/mounts`,
//! else from the files of `/sys/fs/cgroup`: what decides how runtime isolation makes cpusets.

use serde::{Deserialize, Serialize};

use crate::machine::{Avail, Reader};

/// How the cgroup hierarchies are mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CgroupLayout {
    /// Only v1 hierarchies, one per controller (or group of controllers).
    V1,
    /// The unified v2 hierarchy at `/sys/fs/cgroup`, holding every controller.
    V2,
    /// v1 controllers with a v2 hierarchy beside them (`/sys/fs/cgroup/unified`), which holds
    /// no controller: cpusets are v1 ones.
    Hybrid,
}

impl CgroupLayout {
    /// `cgroup v1`, `cgroup v2` or `cgroup hybrid (v1 controllers)`.
    pub fn name(self) -> &'static str {
        match self {
            CgroupLayout::V1 => "cgroup v1",
            CgroupLayout::V2 => "cgroup v2",
            CgroupLayout::Hybrid => "cgroup hybrid (v1 controllers, v2 beside them)",
        }
    }
}

/// The layout the mounts say (`cgroup` and `cgroup2` file systems); `None` when none is
/// mounted.
fn from_mounts(mounts: &str) -> Option<CgroupLayout> {
    let mut v1 = false;
    let mut v2_unified_root = false;
    let mut v2 = false;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(_), Some(at), Some(fs)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        match fs {
            "cgroup" => v1 = true,
            "cgroup2" => {
                v2 = true;
                v2_unified_root |= at == "/sys/fs/cgroup";
            }
            _ => {}
        }
    }
    match (v1, v2) {
        (_, true) if v2_unified_root => Some(CgroupLayout::V2),
        (true, true) => Some(CgroupLayout::Hybrid),
        (true, false) => Some(CgroupLayout::V1),
        (false, true) => Some(CgroupLayout::V2),
        (false, false) => None,
    }
}

/// The cgroup layout under the root: from `/proc/mounts`, else (a tree without it) from
/// `/sys/fs/cgroup`: `cgroup.controllers` there is v2, a `unified` directory beside v1
/// controllers hybrid, a controller's directory v1.
pub fn read(r: &mut Reader) -> Avail<CgroupLayout> {
    if let Some(layout) = r
        .root
        .read("/proc/mounts")
        .ok()
        .and_then(|mounts| from_mounts(&mounts))
    {
        return Avail::Available(layout);
    }
    let root = r.root;
    if root.exists("/sys/fs/cgroup/cgroup.controllers") {
        return Avail::Available(CgroupLayout::V2);
    }
    let v1 = ["cpuset", "cpu,cpuacct", "memory"]
        .iter()
        .any(|c| root.is_dir(&format!("/sys/fs/cgroup/{c}")));
    match (v1, root.is_dir("/sys/fs/cgroup/unified")) {
        (true, true) => Avail::Available(CgroupLayout::Hybrid),
        (true, false) => Avail::Available(CgroupLayout::V1),
        _ => {
            Avail::missing("no cgroup mount in /proc/mounts and no hierarchy under /sys/fs/cgroup")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_from_the_mounts() {
        let v2 = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n";
        assert_eq!(from_mounts(v2), Some(CgroupLayout::V2));
        let hybrid = "tmpfs /sys/fs/cgroup tmpfs ro 0 0\n\
             cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n\
             cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n";
        assert_eq!(from_mounts(hybrid), Some(CgroupLayout::Hybrid));
        let v1 = "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n";
        assert_eq!(from_mounts(v1), Some(CgroupLayout::V1));
        assert_eq!(from_mounts("proc /proc proc rw 0 0\n"), None);
    }

    #[test]
    fn a_tree_without_mounts_is_read_from_sys_fs_cgroup() {
        let dir = crate::test_tree::TestTree::empty();
        let read = |dir: &crate::test_tree::TestTree| read(&mut Reader::new(&dir.root()));
        assert!(read(&dir).get().is_none());
        dir.write("/sys/fs/cgroup/cpuset/cpuset.cpus", "0-3\n");
        assert_eq!(read(&dir).get(), Some(&CgroupLayout::V1));
        dir.write("/sys/fs/cgroup/unified/cgroup.procs", "");
        assert_eq!(read(&dir).get(), Some(&CgroupLayout::Hybrid));
        dir.write("/proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
        assert_eq!(read(&dir).get(), Some(&CgroupLayout::V2));
    }
}

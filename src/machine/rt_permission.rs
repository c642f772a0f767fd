//! Why real-time scheduling may be refused, read from the files that decide it:
//! `RLIMIT_RTPRIO` (`/proc/PID/limits`, "Max realtime priority"), `CAP_SYS_NICE` (`CapEff` of
//! `/proc/PID/status`), the real-time budget of the task's cgroup v1 cpu group
//! (`cpu.rt_runtime_us`: with `CONFIG_RT_GROUP_SCHED` every group but the root starts with 0, and
//! `sched_setscheduler` then fails with EPERM even for root), `kernel.sched_rt_runtime_us`, and a
//! seccomp filter (a container's).

use serde::{Deserialize, Serialize};

use super::{Avail, Reader};

/// `CAP_SYS_NICE`'s bit in the capability sets.
const CAP_SYS_NICE: u32 = 23;
/// Where the cgroup v1 cpu controller is mounted, by distribution habit.
const CPU_MOUNTS: &[&str] = &["/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"];

/// A cgroup v1 cpu group and its real-time budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtGroup {
    /// The group's directory (`/sys/fs/cgroup/cpu,cpuacct/system.slice`).
    pub dir: String,
    /// `cpu.rt_runtime_us`: µs per period its real-time tasks may run; 0 refuses them.
    pub rt_runtime_us: i64,
}

/// The real-time budgets of the cgroup v1 cpu hierarchy: its root and the groups one level
/// below (`system.slice`, `user.slice`, a container runtime's). Unavailable without a v1 cpu
/// hierarchy with `cpu.rt_runtime_us` (no `CONFIG_RT_GROUP_SCHED`, or cgroup v2 only).
pub fn read_groups(r: &mut Reader) -> Avail<Vec<RtGroup>> {
    for mount in CPU_MOUNTS {
        let Some(root) = budget(r, mount) else {
            continue;
        };
        let mut groups = vec![RtGroup {
            dir: mount.to_string(),
            rt_runtime_us: root,
        }];
        for name in r.root.list(mount).unwrap_or_default() {
            let dir = format!("{mount}/{name}");
            if let Some(us) = budget(r, &dir) {
                groups.push(RtGroup {
                    dir,
                    rt_runtime_us: us,
                });
            }
        }
        return Avail::Available(groups);
    }
    Avail::missing(format!(
        "no cgroup v1 cpu hierarchy with cpu.rt_runtime_us under {} (a kernel without \
         CONFIG_RT_GROUP_SCHED, or cgroup v2 only)",
        CPU_MOUNTS.join(" or ")
    ))
}

fn budget(r: &mut Reader, dir: &str) -> Option<i64> {
    r.root
        .read_value(&format!("{dir}/cpu.rt_runtime_us"))
        .ok()?
        .parse()
        .ok()
}

/// What decides whether process `pid` (`self` for lowlat) may use SCHED_FIFO `priority`, and
/// the causes of a refusal, most certain first; empty when nothing seen refuses it.
pub fn refusal_causes(r: &mut Reader, pid: &str, priority: u8) -> Vec<String> {
    let mut causes = Vec::new();
    let status = r
        .root
        .read(&format!("/proc/{pid}/status"))
        .unwrap_or_default();
    let field = |key: &str| {
        status.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k == key).then(|| v.trim().to_string())
        })
    };
    let uid = field("Uid").and_then(|v| v.split_whitespace().next().map(str::to_string));
    let cap_sys_nice = field("CapEff")
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .map(|caps| caps & (1 << CAP_SYS_NICE) != 0);
    let rtprio = r
        .root
        .read(&format!("/proc/{pid}/limits"))
        .ok()
        .and_then(|text| rtprio_soft_limit(&text));
    if cap_sys_nice == Some(false) && rtprio.is_some_and(|limit| limit < u64::from(priority)) {
        causes.push(format!(
            "RLIMIT_RTPRIO is {} (`ulimit -r`), below priority {priority}, and the process (uid {}) \
             lacks CAP_SYS_NICE: run as root, raise the limit (`ulimit -r {priority}`; \
             /etc/security/limits.conf `USER - rtprio {priority}`; systemd LimitRTPRIO={priority}) \
             or grant CAP_SYS_NICE",
            rtprio.unwrap_or(0),
            uid.as_deref().unwrap_or("?")
        ));
    }
    if let Some((mount, group)) = cpu_group(r, pid)
        && let Some(us) = budget(r, &group)
        && us == 0
    {
        causes.push(format!(
            "its cpu cgroup {group} has cpu.rt_runtime_us = 0: with CONFIG_RT_GROUP_SCHED every \
             group but the root starts without a real-time budget, and SCHED_FIFO is refused \
             even to root; give the group a budget (`echo 950000 > {group}/cpu.rt_runtime_us`, \
             its parents first) or run in the root group (`echo $$ > {mount}/tasks`)"
        ));
    }
    if r.root
        .read_value("/proc/sys/kernel/sched_rt_runtime_us")
        .is_ok_and(|v| v.trim() == "0")
    {
        causes.push(
            "kernel.sched_rt_runtime_us = 0: no real-time budget at all; set it to -1 (no limit) \
             or 950000"
                .to_string(),
        );
    }
    if field("Seccomp").is_some_and(|v| v == "2") {
        causes.push(
            "a seccomp filter is active (Seccomp: 2, a container's): the runtime may deny \
             sched_setscheduler or drop CAP_SYS_NICE (docker/podman `--cap-add=SYS_NICE`, \
             Kubernetes securityContext capabilities)"
                .to_string(),
        );
    }
    causes
}

/// The soft "Max realtime priority" of a `/proc/PID/limits` text (`unlimited` is `u64::MAX`).
pub(crate) fn rtprio_soft_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max realtime priority"))?;
    let soft = line["Max realtime priority".len()..]
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        Some(u64::MAX)
    } else {
        soft.parse().ok()
    }
}

/// The cgroup v1 cpu hierarchy's mount and the directory of the task's group in it.
fn cpu_group(r: &mut Reader, pid: &str) -> Option<(String, String)> {
    let text = r.root.read(&format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == "cpu")
            .then(|| path.to_string())
    })?;
    CPU_MOUNTS
        .iter()
        .find(|mount| r.root.is_dir(mount))
        .map(|mount| {
            let group = format!("{mount}{}", path.trim_end_matches('/'));
            (mount.to_string(), group)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
        Max realtime priority     0                    0                    \n";

    #[test]
    fn an_unprivileged_user_is_told_about_rlimit_rtprio() {
        let dir = TestTree::empty();
        dir.write(
            "/proc/self/status",
            "Uid:\t65534\t65534\t65534\t65534\nCapEff:\t0000000000000000\nSeccomp:\t0\n",
        );
        dir.write("/proc/self/limits", LIMITS);
        let root = dir.root();
        let mut r = Reader::new(&root);
        let causes = refusal_causes(&mut r, "self", 95);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert!(causes[0].starts_with("RLIMIT_RTPRIO is 0"), "{}", causes[0]);
        assert!(causes[0].contains("uid 65534"));
    }

    #[test]
    fn a_cgroup_without_budget_is_named_even_for_root() {
        let dir = TestTree::empty();
        dir.write(
            "/proc/self/status",
            "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nSeccomp:\t2\n",
        );
        dir.write("/proc/self/limits", LIMITS);
        dir.write(
            "/proc/self/cgroup",
            "4:cpu,cpuacct:/system.slice/app.service\n0::/system.slice/app.service\n",
        );
        let mount = "/sys/fs/cgroup/cpu,cpuacct";
        dir.write(&format!("{mount}/cpu.rt_runtime_us"), "950000\n");
        dir.write(&format!("{mount}/system.slice/cpu.rt_runtime_us"), "0\n");
        dir.write(
            &format!("{mount}/system.slice/app.service/cpu.rt_runtime_us"),
            "0\n",
        );
        let root = dir.root();
        let mut r = Reader::new(&root);
        let causes = refusal_causes(&mut r, "self", 95);
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert!(
            causes[0].contains(
                "/sys/fs/cgroup/cpu,cpuacct/system.slice/app.service has cpu.rt_runtime_us = 0"
            ),
            "{}",
            causes[0]
        );
        assert!(causes[1].contains("seccomp"));
        let groups = read_groups(&mut r);
        let groups = groups.get().unwrap();
        assert_eq!(groups[0].rt_runtime_us, 950_000);
        assert_eq!(groups[1].dir, format!("{mount}/system.slice"));
        assert_eq!(groups[1].rt_runtime_us, 0);
    }

    #[test]
    fn limits_parse() {
        assert_eq!(rtprio_soft_limit(LIMITS), Some(0));
        assert_eq!(
            rtprio_soft_limit("Max realtime priority     unlimited            unlimited\n"),
            Some(u64::MAX)
        );
        assert_eq!(rtprio_soft_limit(""), None);
    }
}

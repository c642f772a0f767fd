//! Why real-time scheduling may be refused, read from the files that decide it:
//! `RLIMIT_RTPRIO` (`/proc/PID/limits`, "Max realtime priority"), `CAP_SYS_NICE` (`CapEff` of
//! `/proc/PID/status`), the real-time budget of the task's cgroup v1 cpu group
//! (`cpu.rt_runtime_us`: with `CONFIG_RT_GROUP_SCHED` every group but the root starts with 0, and
//! `sched_setscheduler` then fails with EPERM even for root), `kernel.sched_rt_runtime_us`, and a
//! seccomp filter (a container's). Likewise for the other two things a measurement asks for:
//! locking its memory (`RLIMIT_MEMLOCK`, "Max locked memory", and `CAP_IPC_LOCK`) and holding
//! `/dev/cpu_dma_latency` (the device's mode and owner against the process's uid and groups).

use serde::{Deserialize, Serialize};

use super::{Avail, Reader};

/// `CAP_SYS_NICE`'s bit in the capability sets.
const CAP_SYS_NICE: u32 = 23;
/// `CAP_IPC_LOCK`'s bit in the capability sets.
const CAP_IPC_LOCK: u32 = 14;
/// The PM QoS device a measurement holds to keep CPUs out of deep idle states.
const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";
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
/// hierarchy with `cpu.rt_runtime_us` (no `CONFIG_RT_GROUP_SCHED`, or cgroup v2 only), and
/// when a group's budget is there but empty, garbled or unreadable (warned): a group whose
/// budget is unknown may be the one without.
pub fn read_groups(r: &mut Reader) -> Avail<Vec<RtGroup>> {
    for mount in CPU_MOUNTS {
        let root = match budget(r, mount) {
            Ok(Some(us)) => us,
            Ok(None) => continue,
            Err(why) => return Avail::missing(why),
        };
        let mut groups = vec![RtGroup {
            dir: mount.to_string(),
            rt_runtime_us: root,
        }];
        for name in r.root.list(mount).unwrap_or_default() {
            let dir = format!("{mount}/{name}");
            if !r.root.is_dir(&dir) {
                continue;
            }
            match budget(r, &dir) {
                Ok(Some(us)) => groups.push(RtGroup {
                    dir,
                    rt_runtime_us: us,
                }),
                Ok(None) => {}
                Err(why) => return Avail::missing(why),
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

/// The budget of the group `dir`: `None` when it has no `cpu.rt_runtime_us` (not a group);
/// why not, when the file is there but could not be read or parsed (warned).
fn budget(r: &mut Reader, dir: &str) -> Result<Option<i64>, String> {
    let path = format!("{dir}/cpu.rt_runtime_us");
    match r.root.read_value(&path) {
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => {
            r.warnings.file(&path, e.to_string());
            Err(e.to_string())
        }
        Ok(text) => text.parse().map(Some).map_err(|_| {
            let message = format!("cannot parse '{}'", super::truncate(&text, 40));
            r.warnings.file(&path, message.clone());
            format!("{path}: {message}")
        }),
    }
}

/// What decides whether process `pid` (`self` for lowlat) may use SCHED_FIFO `priority`, and
/// the causes of a refusal, most certain first; empty when nothing seen refuses it.
pub fn refusal_causes(r: &mut Reader, pid: &str, priority: u8) -> Vec<String> {
    let mut causes = Vec::new();
    let status = Status::read(r, pid);
    let field = |key: &str| status.field(key);
    let uid = status.uid();
    let cap_sys_nice = status.has_capability(CAP_SYS_NICE);
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
        && let Ok(Some(us)) = budget(r, &group)
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
    soft_limit(limits, "Max realtime priority")
}

/// The soft limit of the `/proc/PID/limits` row `name` (`unlimited` is `u64::MAX`).
fn soft_limit(limits: &str, name: &str) -> Option<u64> {
    let line = limits.lines().find(|line| line.starts_with(name))?;
    let soft = line[name.len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        Some(u64::MAX)
    } else {
        soft.parse().ok()
    }
}

/// The fields of `/proc/PID/status` that say what a process may do.
struct Status(String);

impl Status {
    fn read(r: &mut Reader, pid: &str) -> Status {
        Status(
            r.root
                .read(&format!("/proc/{pid}/status"))
                .unwrap_or_default(),
        )
    }

    fn field(&self, key: &str) -> Option<String> {
        self.0.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k == key).then(|| v.trim().to_string())
        })
    }

    /// The real uid.
    fn uid(&self) -> Option<String> {
        self.field("Uid")
            .and_then(|v| v.split_whitespace().next().map(str::to_string))
    }

    /// The effective uid, the effective gid and the supplementary groups.
    fn ids(&self) -> Option<(u32, Vec<u32>)> {
        let word = |key: &str, n: usize| -> Option<u32> {
            self.field(key)?.split_whitespace().nth(n)?.parse().ok()
        };
        let mut groups: Vec<u32> = (self.field("Groups").unwrap_or_default())
            .split_whitespace()
            .filter_map(|g| g.parse().ok())
            .collect();
        groups.push(word("Gid", 1)?);
        Some((word("Uid", 1)?, groups))
    }

    /// Whether the effective capability set holds `bit`; `None` when unreadable.
    fn has_capability(&self, bit: u32) -> Option<bool> {
        self.field("CapEff")
            .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
            .map(|caps| caps & (1 << bit) != 0)
    }
}

/// Why process `pid` may not lock its memory (`mlockall`): its RLIMIT_MEMLOCK without
/// CAP_IPC_LOCK; empty when nothing seen limits it.
pub fn mlock_refusal_causes(r: &mut Reader, pid: &str) -> Vec<String> {
    let status = Status::read(r, pid);
    let limit = r
        .root
        .read(&format!("/proc/{pid}/limits"))
        .ok()
        .and_then(|text| soft_limit(&text, "Max locked memory"));
    match (status.has_capability(CAP_IPC_LOCK), limit) {
        (Some(false), Some(bytes)) if bytes != u64::MAX => vec![format!(
            "RLIMIT_MEMLOCK is {} KiB (`ulimit -l`) and the process (uid {}) lacks CAP_IPC_LOCK: \
             run as root, raise the limit (`ulimit -l unlimited`; /etc/security/limits.conf \
             `USER - memlock unlimited`; systemd LimitMEMLOCK=infinity) or grant CAP_IPC_LOCK",
            bytes / 1024,
            status.uid().as_deref().unwrap_or("?")
        )],
        _ => Vec::new(),
    }
}

/// Why process `pid` may not hold /dev/cpu_dma_latency: the device is absent, or its mode and
/// owner do not let the process's user or groups write it; empty when nothing seen refuses it.
pub fn dma_latency_refusal_causes(r: &mut Reader, pid: &str) -> Vec<String> {
    let meta = match r.root.metadata(CPU_DMA_LATENCY) {
        Ok(Some(meta)) => meta,
        Ok(None) => {
            return vec![format!(
                "{CPU_DMA_LATENCY} does not exist (a container without the device: pass it with \
                 `--device {CPU_DMA_LATENCY}`)"
            )];
        }
        Err(_) => return Vec::new(),
    };
    let status = Status::read(r, pid);
    let Some((uid, groups)) = status.ids() else {
        return Vec::new();
    };
    let writable = uid == 0
        || (meta.uid == uid && meta.mode & 0o200 != 0)
        || (groups.contains(&meta.gid) && meta.mode & 0o020 != 0)
        || meta.mode & 0o002 != 0;
    if writable {
        return Vec::new();
    }
    vec![format!(
        "{CPU_DMA_LATENCY} is mode {:04o}, owner uid {} gid {}, and the process (uid {uid}) may \
         not write it: run as root, or let its group write the device (a udev rule: \
         KERNEL==\"cpu_dma_latency\", GROUP=\"GROUP\", MODE=\"0660\")",
        meta.mode, meta.uid, meta.gid
    )]
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
    fn mlock_and_the_pm_qos_device_say_why_they_are_refused() {
        let dir = TestTree::empty();
        dir.write(
            "/proc/self/status",
            "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t\nCapEff:\t0000000000000000\n",
        );
        dir.write(
            "/proc/self/limits",
            "Limit                     Soft Limit           Hard Limit           Units     \n\
             Max locked memory         8388608              8388608              bytes     \n",
        );
        dir.write(CPU_DMA_LATENCY, "");
        std::fs::set_permissions(
            dir.join(CPU_DMA_LATENCY),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        let root = dir.root();
        let mut r = Reader::new(&root);
        let mlock = mlock_refusal_causes(&mut r, "self");
        assert_eq!(mlock.len(), 1, "{mlock:?}");
        assert!(
            mlock[0].starts_with("RLIMIT_MEMLOCK is 8192 KiB (`ulimit -l`) and the process (uid 65534) lacks CAP_IPC_LOCK"),
            "{}",
            mlock[0]
        );
        let dma = dma_latency_refusal_causes(&mut r, "self");
        assert_eq!(dma.len(), 1, "{dma:?}");
        assert!(
            dma[0].starts_with("/dev/cpu_dma_latency is mode 0600"),
            "{}",
            dma[0]
        );
        assert!(
            dma[0].contains("the process (uid 65534) may not write it"),
            "{}",
            dma[0]
        );
        // With CAP_IPC_LOCK the limit does not apply; a group that may write the device lets
        // the process hold it; without the device, that is said.
        dir.write(
            "/proc/self/status",
            "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t5 65534\nCapEff:\t0000000000004000\n",
        );
        let owner_gid = dir.root().metadata(CPU_DMA_LATENCY).unwrap().unwrap().gid;
        assert!(mlock_refusal_causes(&mut r, "self").is_empty());
        std::fs::set_permissions(
            dir.join(CPU_DMA_LATENCY),
            std::os::unix::fs::PermissionsExt::from_mode(0o666),
        )
        .unwrap();
        assert!(
            dma_latency_refusal_causes(&mut r, "self").is_empty(),
            "gid {owner_gid}"
        );
        dir.remove(CPU_DMA_LATENCY);
        let gone = dma_latency_refusal_causes(&mut r, "self");
        assert!(gone[0].contains("does not exist"), "{gone:?}");
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

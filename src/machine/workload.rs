//! The threads of chosen processes (`lowlat audit --pid/--comm`): each thread's affinity,
//! scheduling, last CPU and CPU time (`/proc/PID/task/TID/{stat,status}`), and the process's
//! memory placement (`numa_maps`, `Mems_allowed_list`), locked memory and huge pages (`status`).
//!
//! The processes are live: one that exits before or while it is read is listed as gone, with the
//! file that was missing, and the others are read. A tree without `task/` directories (a
//! fixture, a snapshot) gives the main thread only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tasks::{SchedPolicy, StatError, parse_stat};
use super::{Avail, CpuSet, Reader};
use crate::sysroot::ReadError;

/// The threads of the chosen processes and the processes that could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// The processes read, by the order asked.
    pub processes: Vec<Process>,
    /// Processes that were gone (or unreadable) when read: pid and why.
    pub gone: Vec<Gone>,
}

/// A process that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gone {
    /// Its pid.
    pub pid: u32,
    /// Why (the file that was missing or unreadable).
    pub reason: String,
}

/// One process of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// Its pid.
    pub pid: u32,
    /// Its command name (`comm`, as the kernel stores it; may hold any byte but NUL).
    pub comm: String,
    /// Its threads, by ascending thread id.
    pub threads: Vec<Thread>,
    /// `Mems_allowed_list`: the NUMA nodes it may allocate from.
    pub mems_allowed: Option<CpuSet>,
    /// Its resident pages per NUMA node, from `numa_maps`, in KiB (node → KiB).
    pub memory_kib_per_node: Avail<BTreeMap<u32, u64>>,
    /// `VmLck`: memory locked with mlock/mlockall, in KiB.
    pub locked_kib: Option<u64>,
    /// `HugetlbPages`: memory in hugetlbfs pages, in KiB.
    pub hugetlb_kib: Option<u64>,
    /// Threads that exited while the process was read.
    pub threads_gone: usize,
}

/// One thread of a workload process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// Its thread id.
    pub tid: u32,
    /// Its name (`comm`; set with `pthread_setname_np`, may hold control characters).
    pub comm: String,
    /// State letter (`R` running, `S` sleeping ...).
    pub state: String,
    /// `Cpus_allowed_list`: where it may run.
    pub cpus_allowed: Option<CpuSet>,
    /// Scheduling policy.
    pub policy: SchedPolicy,
    /// Real-time priority (1-99; 0 for a policy that is not real-time).
    pub rt_priority: u32,
    /// The CPU it last ran on.
    pub last_cpu: u32,
    /// Its share of one CPU over its life, 0 to 1 (user and system time over the time since
    /// it started); `None` when the uptime or its start is unknown.
    pub cpu_share: Option<f64>,
}

/// Clock ticks per second of `/proc/PID/stat` times (`USER_HZ`, 100 on every Linux ABI).
const USER_HZ: f64 = 100.0;

/// Reads the processes `pids`, in that order.
pub fn read(r: &mut Reader, pids: &[u32]) -> Workload {
    let uptime = r
        .value("/proc/uptime")
        .get()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok());
    let mut workload = Workload {
        processes: Vec::new(),
        gone: Vec::new(),
    };
    for &pid in pids {
        match read_process(r, pid, uptime) {
            Ok(process) => workload.processes.push(process),
            Err(reason) => workload.gone.push(Gone {
                pid,
                reason: reason.to_string(),
            }),
        }
    }
    workload
}

/// Why a process or thread of the workload could not be read (it may have exited meanwhile).
#[derive(Debug, thiserror::Error)]
enum GoneError {
    /// One of its files could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Its stat line (at `path`) did not parse.
    #[error("{path}: {source}")]
    Stat {
        /// The stat file.
        path: String,
        /// What is wrong with it.
        source: StatError,
    },
}

fn read_process(r: &mut Reader, pid: u32, uptime: Option<f64>) -> Result<Process, GoneError> {
    let dir = format!("/proc/{pid}");
    let status = r.root.read(&format!("{dir}/status"))?;
    let comm = read_thread(r, &dir, uptime)?.comm;
    // A tree without task/ (a fixture, a snapshot) has the main thread only.
    let has_tasks = r.root.is_dir(&format!("{dir}/task"));
    let tids: Vec<u32> = if has_tasks {
        let names = r.root.list(&format!("{dir}/task"))?;
        names.iter().filter_map(|n| n.parse().ok()).collect()
    } else {
        vec![pid]
    };
    let mut threads = Vec::new();
    let mut threads_gone = 0;
    for tid in tids {
        let thread_dir = if has_tasks {
            format!("{dir}/task/{tid}")
        } else {
            dir.clone()
        };
        match read_thread(r, &thread_dir, uptime) {
            Ok(thread) => threads.push(thread),
            Err(_) => threads_gone += 1,
        }
    }
    threads.sort_by_key(|t| t.tid);
    let field = |key: &str| status_field(&status, key);
    let memory_kib_per_node = match r.root.read(&format!("{dir}/numa_maps")) {
        Ok(text) => Avail::Available(parse_numa_maps(&text)),
        Err(e) => Avail::missing(e.to_string()),
    };
    Ok(Process {
        pid,
        comm,
        threads,
        mems_allowed: field("Mems_allowed_list").and_then(|v| CpuSet::parse_list(v).ok()),
        memory_kib_per_node,
        locked_kib: field("VmLck").and_then(kib),
        hugetlb_kib: field("HugetlbPages").and_then(kib),
        threads_gone,
    })
}

fn read_thread(r: &mut Reader, dir: &str, uptime: Option<f64>) -> Result<Thread, GoneError> {
    let stat_path = format!("{dir}/stat");
    let stat_text = r.root.read(&stat_path)?;
    let stat = parse_stat(&stat_text).map_err(|source| GoneError::Stat {
        path: stat_path.clone(),
        source,
    })?;
    // A thread whose last CPU is not known (a support bundle's process list) cannot be placed.
    let last_cpu = stat.processor.ok_or_else(|| GoneError::Stat {
        path: stat_path,
        source: StatError::NotNumber {
            field: 39,
            text: "-".to_string(),
        },
    })?;
    let status = r.root.read(&format!("{dir}/status"))?;
    let cpus_allowed =
        status_field(&status, "Cpus_allowed_list").and_then(|v| CpuSet::parse_list(v).ok());
    let cpu_share = cpu_share(&stat_text, uptime);
    Ok(Thread {
        tid: stat.pid,
        comm: stat.comm,
        state: stat.state,
        cpus_allowed,
        policy: SchedPolicy::from_number(stat.policy),
        rt_priority: stat.rt_priority,
        last_cpu,
        cpu_share,
    })
}

/// Fields 14 (utime), 15 (stime) and 22 (starttime) of a stat line against the uptime.
fn cpu_share(stat: &str, uptime: Option<f64>) -> Option<f64> {
    let uptime = uptime?;
    let (_, tail) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = tail.split_whitespace().collect();
    let number = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    let busy = (number(14)? + number(15)?) / USER_HZ;
    let lived = uptime - number(22)? / USER_HZ;
    (lived > 0.0).then(|| (busy / lived).clamp(0.0, 1.0))
}

/// The value of `Key:` in a status text.
fn status_field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k == key).then(|| v.trim())
    })
}

/// `1234 kB` in KiB.
fn kib(value: &str) -> Option<u64> {
    value.strip_suffix("kB")?.trim().parse().ok()
}

/// Resident KiB per node of a `numa_maps` text: each mapping's `N<node>=<pages>` counts times
/// its `kernelpagesize_kB` (4 when absent).
pub(crate) fn parse_numa_maps(text: &str) -> BTreeMap<u32, u64> {
    let mut per_node = BTreeMap::new();
    for line in text.lines() {
        let page_kib = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("kernelpagesize_kB=")?.parse::<u64>().ok())
            .unwrap_or(4);
        for word in line.split_whitespace() {
            let Some((node, pages)) = word.strip_prefix('N').and_then(|w| w.split_once('=')) else {
                continue;
            };
            if let (Ok(node), Ok(pages)) = (node.parse::<u32>(), pages.parse::<u64>()) {
                *per_node.entry(node).or_insert(0) += pages * page_kib;
            }
        }
    }
    per_node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn numa_maps_pages_by_node() {
        let text = "7f00 default anon=10 dirty=10 N0=6 N1=4 kernelpagesize_kB=4\n\
                    7f80 bind:1 file=/dev/hugepages/x huge dirty=2 N1=2 kernelpagesize_kB=2048\n";
        let nodes = parse_numa_maps(text);
        assert_eq!(nodes.get(&0), Some(&24));
        assert_eq!(nodes.get(&1), Some(&(16 + 4096)));
    }

    #[test]
    fn a_fixture_process_is_its_main_thread_and_a_missing_one_is_gone() {
        let dir = TestTree::fixture("rt-guest-4vcpu");
        let root = dir.root();
        let mut r = Reader::new(&root);
        let workload = read(&mut r, &[842, 999_999]);
        assert_eq!(workload.processes.len(), 1);
        let p = &workload.processes[0];
        assert_eq!(p.comm, "cyclictest");
        assert_eq!(p.threads.len(), 1);
        assert_eq!(p.threads[0].policy, SchedPolicy::Fifo);
        assert_eq!(p.locked_kib, Some(7000));
        assert_eq!(workload.gone.len(), 1);
        assert_eq!(workload.gone[0].pid, 999_999);
        assert!(workload.gone[0].reason.contains("/proc/999999"));
    }

    #[test]
    fn a_thread_or_process_that_exits_while_read_is_counted_and_the_rest_read() {
        let dir = TestTree::empty();
        let stat = |tid: u32| {
            format!(
                "{tid} (app) S 1 1 1 0 -1 4194560 0 0 0 0 10 0 0 0 20 0 2 0 0 1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
            )
        };
        let status = "Name:\tapp\nCpus_allowed_list:\t1\nMems_allowed_list:\t0\n";
        for path in ["/proc/500", "/proc/500/task/500"] {
            dir.write(&format!("{path}/stat"), stat(500));
            dir.write(&format!("{path}/status"), status);
        }
        // Thread 501 is listed in task/ but its files are gone: it exited while read.
        dir.make_dir("/proc/500/task/501");
        // Process 600 exited between its status and its stat.
        dir.write("/proc/600/status", status);
        let root = dir.root();
        let mut r = Reader::new(&root);
        let workload = read(&mut r, &[500, 600]);
        assert_eq!(workload.processes.len(), 1);
        assert_eq!(workload.processes[0].threads.len(), 1);
        assert_eq!(workload.processes[0].threads_gone, 1);
        assert_eq!(workload.gone.len(), 1);
        assert_eq!(workload.gone[0].pid, 600);
        assert!(
            workload.gone[0].reason.contains("/proc/600/stat"),
            "{}",
            workload.gone[0].reason
        );
    }

    #[test]
    fn the_live_process_reads_its_threads() {
        let root = crate::sysroot::SysRoot::live();
        let mut r = Reader::new(&root);
        let me = std::process::id();
        let workload = read(&mut r, &[me]);
        let p = &workload.processes[0];
        assert!(p.threads.iter().any(|t| t.tid == me));
        assert!(p.mems_allowed.is_some());
    }
}

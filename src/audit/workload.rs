//! The workload's own placement (`lowlat audit --pid/--comm`): each thread of the chosen
//! processes judged against the audit's partition: where it may run, whether it shares its
//! CPU or its core, its scheduling, where its memory is, and which IRQs reach its CPU, each
//! problem with the command that fixes it.

use serde::Serialize;

use crate::audit::partition::AuditPartition;
use crate::machine::workload::{Process, Thread, Workload};
use crate::machine::{CpuSet, Machine};

/// A thread that used at least this share of one CPU over its life is busy (a polling or
/// compute thread), and is expected to own an isolated CPU.
pub const BUSY_SHARE: f64 = 0.5;

/// The placement of every thread of the workload.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadAudit {
    /// One entry per thread, process by process.
    pub threads: Vec<ThreadPlacement>,
    /// Processes that were gone or unreadable when read: pid and why.
    pub gone: Vec<crate::machine::workload::Gone>,
    /// Per process: memory placement, locking and huge pages.
    pub processes: Vec<ProcessPlacement>,
}

impl WorkloadAudit {
    /// Whether any thread or process has a problem.
    pub fn has_problems(&self) -> bool {
        self.threads.iter().any(|t| !t.problems.is_empty())
            || self.processes.iter().any(|p| !p.problems.is_empty())
    }
}

/// One thread and what is wrong with its placement.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadPlacement {
    /// The process id.
    pub pid: u32,
    /// The thread id.
    pub tid: u32,
    /// The thread's name (raw; printers escape control characters).
    pub comm: String,
    /// Where it may run (`Cpus_allowed_list`), as a CPU list.
    pub cpus_allowed: Option<String>,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// Whether it is busy (at least [`BUSY_SHARE`] of a CPU over its life).
    pub busy: bool,
    /// Its share of one CPU over its life, 0 to 1.
    pub cpu_share: Option<f64>,
    /// Scheduling policy and priority (`fifo 95`, `other`).
    pub scheduling: String,
    /// Problems, each with its fix.
    pub problems: Vec<Problem>,
}

/// One process's memory placement.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessPlacement {
    /// The process id.
    pub pid: u32,
    /// Its command name.
    pub comm: String,
    /// Locked memory (`VmLck`), KiB.
    pub locked_kib: Option<u64>,
    /// hugetlbfs memory (`HugetlbPages`), KiB.
    pub hugetlb_kib: Option<u64>,
    /// Resident memory per NUMA node, KiB.
    pub memory_kib_per_node: Vec<(u32, u64)>,
    /// Threads that exited while it was read.
    pub threads_gone: usize,
    /// Problems, each with its fix.
    pub problems: Vec<Problem>,
}

/// A placement problem and its fix.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// What kind: `both-sides`, `housekeeping-only`, `several-domain-isolated`, `shared-cpu`,
    /// `smt-sibling-busy`, `not-realtime`, `remote-memory`, `irqs-on-cpu`, `not-locked`.
    pub kind: &'static str,
    /// What was seen, one line.
    pub what: String,
    /// The command or plan setting that fixes it.
    pub fix: String,
}

/// Judges the workload against the partition. `realtime` asks real-time scheduling of busy
/// threads (the realtime-host and realtime-guest profiles).
pub fn judge(
    machine: &Machine,
    partition: &AuditPartition,
    workload: &Workload,
    realtime: bool,
) -> WorkloadAudit {
    let iso = &partition.isolated;
    let hk = &partition.housekeeping;
    let domain_isolated = machine
        .kernel
        .isolation
        .isolated
        .get()
        .cloned()
        .unwrap_or_default();
    let all: Vec<(&Process, &Thread)> = workload
        .processes
        .iter()
        .flat_map(|p| p.threads.iter().map(move |t| (p, t)))
        .collect();
    let busy = |t: &Thread| t.cpu_share.is_some_and(|s| s >= BUSY_SHARE);
    // The CPU a thread runs on: its only allowed CPU, else the last one it ran on.
    let cpu_of = |t: &Thread| match &t.cpus_allowed {
        Some(set) if set.len() == 1 => set.first().unwrap_or(t.last_cpu),
        _ => t.last_cpu,
    };
    let mut threads = Vec::new();
    for &(process, thread) in &all {
        let cpu = cpu_of(thread);
        let mut problems = Vec::new();
        let allowed = thread.cpus_allowed.clone().unwrap_or_default();
        let on_iso = allowed.intersection(iso);
        let on_hk = allowed.intersection(hk);
        let pin_to = on_iso.first().or(iso.first()).unwrap_or(cpu);
        if !on_iso.is_empty() && !on_hk.is_empty() {
            problems.push(Problem {
                kind: "both-sides",
                what: format!(
                    "allowed on isolated CPUs {} and housekeeping CPUs {}: the scheduler may move it to either",
                    on_iso.to_list(),
                    on_hk.to_list()
                ),
                fix: format!("taskset -p -c {pin_to} {}", thread.tid),
            });
        } else if on_iso.is_empty() && busy(thread) && !iso.is_empty() {
            problems.push(Problem {
                kind: "housekeeping-only",
                what: format!(
                    "a busy thread on housekeeping CPUs {}, beside the OS's work",
                    on_hk.to_list()
                ),
                fix: format!("taskset -p -c {pin_to} {}", thread.tid),
            });
        }
        let spanned = allowed.intersection(&domain_isolated);
        if spanned.len() > 1 {
            let first = spanned.first().unwrap_or(cpu);
            problems.push(Problem {
                kind: "several-domain-isolated",
                what: format!(
                    "allowed on several domain-isolated CPUs ({}): isolcpus= takes them out of load balancing, so it only ever runs on one of them (CPU {first})",
                    spanned.to_list()
                ),
                fix: format!("taskset -p -c {first} {} (one thread per isolated CPU)", thread.tid),
            });
        }
        if busy(thread) && iso.contains(cpu) {
            let others: Vec<u32> = all
                .iter()
                .filter(|(_, t)| t.tid != thread.tid && busy(t) && cpu_of(t) == cpu)
                .map(|(_, t)| t.tid)
                .collect();
            if !others.is_empty() {
                problems.push(Problem {
                    kind: "shared-cpu",
                    what: format!(
                        "shares isolated CPU {cpu} with busy thread(s) {}",
                        join(&others)
                    ),
                    fix: "give each busy thread an isolated CPU of its own (taskset -p -c CPU TID)"
                        .to_string(),
                });
            }
            let siblings = machine.topology.siblings_of(cpu);
            let busy_siblings: Vec<u32> = all
                .iter()
                .filter(|(_, t)| t.tid != thread.tid && busy(t))
                .map(|(_, t)| cpu_of(t))
                .filter(|c| *c != cpu && siblings.contains(*c))
                .collect();
            let hk_siblings = siblings.intersection(hk);
            if !busy_siblings.is_empty() || !hk_siblings.is_empty() {
                let who = if busy_siblings.is_empty() {
                    format!("housekeeping CPU {}", hk_siblings.to_list())
                } else {
                    format!("busy thread(s) on CPU {}", join(&busy_siblings))
                };
                problems.push(Problem {
                    kind: "smt-sibling-busy",
                    what: format!("its SMT sibling runs {who}: they share the core's execution units and L1/L2"),
                    fix: "isolate whole cores (lowlat plan keeps siblings together) or turn SMT off (`lowlat plan` sets nosmt in low-latency)".to_string(),
                });
            }
            if realtime && !thread.policy.is_realtime() {
                problems.push(Problem {
                    kind: "not-realtime",
                    what: format!(
                        "scheduled {}: any woken task preempts it",
                        scheduling(thread)
                    ),
                    fix: format!("chrt -f -p 95 {}", thread.tid),
                });
            }
            if let Some(problem) = irqs_on(machine, cpu, hk) {
                problems.push(problem);
            }
        }
        threads.push(ThreadPlacement {
            pid: process.pid,
            tid: thread.tid,
            comm: thread.comm.clone(),
            cpus_allowed: thread.cpus_allowed.as_ref().map(CpuSet::to_list),
            cpu,
            busy: busy(thread),
            cpu_share: thread.cpu_share,
            scheduling: scheduling(thread),
            problems,
        });
    }
    let processes = workload
        .processes
        .iter()
        .map(|p| process_placement(machine, p, &all, cpu_of))
        .collect();
    WorkloadAudit {
        threads,
        gone: workload.gone.clone(),
        processes,
    }
}

/// IRQs whose affinity includes `cpu`, as a problem fixed by moving them to housekeeping.
fn irqs_on(machine: &Machine, cpu: u32, hk: &CpuSet) -> Option<Problem> {
    let irqs = machine.irqs.get()?;
    let numbers: Vec<u32> = irqs
        .irqs
        .iter()
        .filter(|irq| {
            irq.effective_affinity
                .get()
                .or(irq.affinity.get())
                .is_some_and(|set| set.contains(cpu))
        })
        .map(|irq| irq.number)
        .collect();
    if numbers.is_empty() {
        return None;
    }
    Some(Problem {
        kind: "irqs-on-cpu",
        what: format!("IRQs delivered to its CPU {cpu}: {}", join(&numbers)),
        fix: format!(
            "`lowlat plan` moves them (settings irq:N:affinity = {}); now: echo {} > /proc/irq/N/smp_affinity_list",
            hk.to_list(),
            hk.to_list()
        ),
    })
}

fn process_placement(
    machine: &Machine,
    process: &Process,
    all: &[(&Process, &Thread)],
    cpu_of: impl Fn(&Thread) -> u32,
) -> ProcessPlacement {
    let mut problems = Vec::new();
    let per_node: Vec<(u32, u64)> = process
        .memory_kib_per_node
        .get()
        .map(|m| m.iter().map(|(n, k)| (*n, *k)).collect())
        .unwrap_or_default();
    // The nodes of its busy threads' CPUs.
    let busy_nodes: std::collections::BTreeSet<u32> = all
        .iter()
        .filter(|(p, t)| p.pid == process.pid && t.cpu_share.is_some_and(|s| s >= BUSY_SHARE))
        .filter_map(|(_, t)| machine.topology.node_of(cpu_of(t)))
        .collect();
    let total: u64 = per_node.iter().map(|(_, k)| k).sum();
    if let [node] = busy_nodes.iter().copied().collect::<Vec<_>>()[..] {
        let local: u64 = per_node
            .iter()
            .filter(|(n, _)| *n == node)
            .map(|(_, k)| k)
            .sum();
        if total > 0 && local * 2 < total {
            problems.push(Problem {
                kind: "remote-memory",
                what: format!(
                    "{} of {} KiB resident off node {node}, where its busy threads run",
                    total - local,
                    total
                ),
                fix: format!(
                    "start it with `numactl --cpunodebind={node} --membind={node}`, or move its pages now: `migratepages {} all {node}`",
                    process.pid
                ),
            });
        }
        if let Some(mems) = &process.mems_allowed
            && !mems.contains(node)
        {
            problems.push(Problem {
                kind: "remote-memory",
                what: format!(
                    "Mems_allowed {} leaves out node {node}, where its busy threads run",
                    mems.to_list()
                ),
                fix: format!(
                    "start it with `numactl --membind={node}` or widen its cpuset's cpuset.mems"
                ),
            });
        }
    }
    if !busy_nodes.is_empty() && process.locked_kib == Some(0) {
        problems.push(Problem {
            kind: "not-locked",
            what: "no memory locked (VmLck 0 kB): a page fault or reclaim can stall a busy thread".to_string(),
            fix: "call mlockall(MCL_CURRENT | MCL_FUTURE) at start (and allow it: `ulimit -l unlimited`, systemd LimitMEMLOCK=infinity)".to_string(),
        });
    }
    ProcessPlacement {
        pid: process.pid,
        comm: process.comm.clone(),
        locked_kib: process.locked_kib,
        hugetlb_kib: process.hugetlb_kib,
        memory_kib_per_node: per_node,
        threads_gone: process.threads_gone,
        problems,
    }
}

/// `fifo 95`, `other`.
fn scheduling(thread: &Thread) -> String {
    let policy = serde_json::to_value(thread.policy)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{:?}", thread.policy).to_lowercase());
    if thread.policy.is_realtime() {
        format!("{policy} {}", thread.rt_priority)
    } else {
        policy
    }
}

fn join(numbers: &[u32]) -> String {
    numbers
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::partition;
    use crate::machine::workload;
    use crate::test_tree::TestTree;

    /// The RT guest (isolcpus=2-3, domain) with a process of three threads: one pinned to 2,
    /// one allowed on 2-3 (both domain-isolated), one allowed on 0-3; named with a control
    /// character.
    fn guest_with_workload() -> TestTree {
        let dir = TestTree::fixture("rt-guest-4vcpu");
        dir.write("/proc/uptime", "1000.00 3000.00\n");
        for (tid, allowed, cpu) in [(4242, "2", 2), (4243, "2-3", 2), (4244, "0-3", 1)] {
            let t = format!("/proc/4242/task/{tid}");
            // utime 90000 ticks over 1000 s: busy.
            dir.write(
                &format!("{t}/stat"),
                format!("{tid} (app\x1b[31m) R 1 1 1 0 -1 4194560 0 0 0 0 90000 0 0 0 20 0 3 0 0 1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0\n"),
            );
            dir.write(
                &format!("{t}/status"),
                format!("Name:\tapp\nCpus_allowed_list:\t{allowed}\n"),
            );
        }
        dir.write("/proc/4242/stat", "4242 (app\x1b[31m) R 1 1 1 0 -1 4194560 0 0 0 0 90000 0 0 0 20 0 3 0 0 1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 2 0 0 0 0 0\n");
        dir.write(
            "/proc/4242/status",
            "Name:\tapp\nCpus_allowed_list:\t2\nMems_allowed_list:\t0\nVmLck:\t       0 kB\nHugetlbPages:\t       0 kB\n",
        );
        dir.write(
            "/proc/4242/numa_maps",
            "7f00 default anon=10 N0=10 kernelpagesize_kB=4\n",
        );
        dir
    }

    #[test]
    fn a_thread_spanning_two_domain_isolated_cpus_is_flagged() {
        let dir = guest_with_workload();
        let root = dir.root();
        let machine = Machine::read(&root);
        let partition = partition::choose(&machine, None).unwrap();
        let mut r = crate::machine::Reader::new(&root);
        let workload = workload::read(&mut r, &[4242]);
        let audit = judge(&machine, &partition, &workload, true);
        let by_tid = |tid| audit.threads.iter().find(|t| t.tid == tid).unwrap();
        let kinds = |tid| -> Vec<&str> { by_tid(tid).problems.iter().map(|p| p.kind).collect() };
        assert!(
            kinds(4243).contains(&"several-domain-isolated"),
            "{:?}",
            kinds(4243)
        );
        assert!(!kinds(4242).contains(&"several-domain-isolated"));
        assert!(!kinds(4242).contains(&"both-sides"));
        assert!(kinds(4244).contains(&"both-sides"), "{:?}", kinds(4244));
        // 4242 and 4243 both busy on CPU 2.
        assert!(kinds(4242).contains(&"shared-cpu"));
        assert!(kinds(4242).contains(&"not-realtime"));
        let process = &audit.processes[0];
        assert!(process.problems.iter().any(|p| p.kind == "not-locked"));
        assert!(audit.has_problems());
        // The name is kept raw here; printers escape it.
        assert!(by_tid(4242).comm.contains('\x1b'));
    }
}

//! Sysctl rules: every key of the low-latency guide's `/etc/sysctl.d/100-lowlatency.conf`
//! (\[S000\] §4.2.1) and the TuneD latency profiles' sysctls, compared by one generic check.
//!
//! A key the running kernel does not have is `skipped` with the reason (the CFS `sched_*`
//! tunables and the NUMA-balancing scan knobs moved to debugfs in Linux 5.13), not failed.

use crate::audit::finding::Severity;
use crate::audit::rule::{Accepts, Expect, Fix, Op, Rule, RuleCheck, RuleContext, RuleOutcome};
use crate::audit::rules::cpus;
use crate::machine::{Avail, CpuSet};
use crate::tuning::setting::Layer;

const GUIDE: &str = "AMD EPYC 7002 low-latency guide §4.2.1";

/// What turning off the NMI watchdog gives up (the sysctl here, `nmi_watchdog=0` in a plan).
pub(crate) const NMI_WATCHDOG_TRADEOFF: &str =
    "hard lockups (a CPU stuck with interrupts off) are no longer detected";

/// A sysctl rule: everything but the check, which is [`check`] on `key`.
macro_rules! sysctl_rule {
    ($id:literal, $key:literal, $title:literal, $severity:expr, $rationale:literal, [$($source:expr),+ $(,)?], $tradeoff:expr) => {
        Rule {
            id: $id,
            title: $title,
            layer: Layer::Sysctl,
            severity: $severity,
            rationale: $rationale,
            sources: &[$($source),+],
            reboot: false,
            security_tradeoff: $tradeoff,
            bios: &[],
            accepts: Accepts::Values,
            check: RuleCheck::Sysctl($key),
        }
    };
}

/// The sysctl rules.
pub(crate) const RULES: &[Rule] = &[
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-HUNG-TASK-TIMEOUT-SECS",
        "kernel.hung_task_timeout_secs",
        "kernel.hung_task_timeout_secs: hung-task checks rare or off",
        Severity::Low,
        "khungtaskd wakes every hung_task_timeout_secs seconds to scan all tasks; a busy-polling thread that never sleeps is not reported, but the scan itself is housekeeping noise. 600 s (or 0, off) makes it rare.",
        [GUIDE, "TuneD network-latency"],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-NMI-WATCHDOG",
        "kernel.nmi_watchdog",
        "kernel.nmi_watchdog: the NMI hard-lockup watchdog is off",
        Severity::Medium,
        "The hard-lockup detector programs a perf counter on every CPU that fires an NMI every watchdog_thresh seconds; an NMI cannot be masked and interrupts the isolated CPUs. The guide boots with nmi_watchdog=0.",
        [
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "TuneD network-latency"
        ],
        Some(NMI_WATCHDOG_TRADEOFF)
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-NUMA-BALANCING",
        "kernel.numa_balancing",
        "kernel.numa_balancing: automatic NUMA balancing",
        Severity::High,
        "Automatic NUMA balancing unmaps pages periodically to catch NUMA-hinting faults and migrates pages and tasks: page faults and migrations in the middle of a latency-critical loop. Pinned applications place memory themselves. For throughput on several nodes PerfSpect recommends it on.",
        [GUIDE, "TuneD network-latency", "PerfSpect insights"],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-NUMA-BALANCING-SCAN-DELAY-MS",
        "kernel.numa_balancing_scan_delay_ms",
        "kernel.numa_balancing_scan_delay_ms as in the guide",
        Severity::Low,
        "The delay before NUMA balancing first scans a new task's memory; the guide sets the kernel default explicitly. It only matters while kernel.numa_balancing is on.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-NUMA-BALANCING-SCAN-PERIOD-MAX-MS",
        "kernel.numa_balancing_scan_period_max_ms",
        "kernel.numa_balancing_scan_period_max_ms as in the guide",
        Severity::Low,
        "The longest interval between NUMA-balancing scans of a task's memory; the guide sets the kernel default explicitly. It only matters while kernel.numa_balancing is on.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-NUMA-BALANCING-SCAN-PERIOD-MIN-MS",
        "kernel.numa_balancing_scan_period_min_ms",
        "kernel.numa_balancing_scan_period_min_ms as in the guide",
        Severity::Low,
        "The shortest interval between NUMA-balancing scans of a task's memory; the guide sets the kernel default explicitly. It only matters while kernel.numa_balancing is on.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-NUMA-BALANCING-SCAN-SIZE-MB",
        "kernel.numa_balancing_scan_size_mb",
        "kernel.numa_balancing_scan_size_mb as in the guide",
        Severity::Low,
        "How much memory one NUMA-balancing scan unmaps; the guide sets the kernel default explicitly. It only matters while kernel.numa_balancing is on.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-SCHED-LATENCY-NS",
        "kernel.sched_latency_ns",
        "kernel.sched_latency_ns: long CFS scheduling period",
        Severity::Low,
        "The CFS targeted preemption latency; a long period (24 ms in the guide) lets a CPU-bound task run longer before a fair-share task preempts it. Only relevant when another task shares the isolated CPU.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-SCHED-MIGRATION-COST-NS",
        "kernel.sched_migration_cost_ns",
        "kernel.sched_migration_cost_ns: tasks stay cache-hot longer",
        Severity::Low,
        "How long after running a task counts as cache-hot and is not migrated by the load balancer; the guide's 50 ms keeps tasks where they are.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-SCHED-MIN-GRANULARITY-NS",
        "kernel.sched_min_granularity_ns",
        "kernel.sched_min_granularity_ns: long minimum time slice",
        Severity::Low,
        "The minimum time a CFS task runs before it can be preempted; the guide's 100 ms avoids preemption of a running task by fair-share wake-ups.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-SCHED-RT-RUNTIME-US",
        "kernel.sched_rt_runtime_us",
        "kernel.sched_rt_runtime_us: real-time throttling off",
        Severity::Medium,
        "By default real-time tasks may use 950 ms of each second; the throttle then forces 50 ms of other work onto the CPU, a 50 ms stall of a SCHED_FIFO busy loop. -1 turns throttling off.",
        [GUIDE, "TuneD realtime"],
        Some(
            "a runaway real-time task can starve its CPU of kernel threads; run stalld or keep RT threads well-behaved"
        )
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-TIMER-MIGRATION",
        "kernel.timer_migration",
        "kernel.timer_migration: timer placement (contested)",
        Severity::Low,
        "With timer_migration=1 timers armed on an idle CPU may move to a busy one; with 0 they stay where they were armed. The guide sets 1, TuneD's network-latency 0 (static pinning), OpenShift 1: a documented trade-off, hence advisory.",
        [
            GUIDE,
            "TuneD network-latency",
            "tuning-tools research §7.c C.26"
        ],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-WATCHDOG",
        "kernel.watchdog",
        "kernel.watchdog: soft and hard lockup detectors off",
        Severity::Medium,
        "kernel.watchdog=0 stops both lockup detectors: the per-CPU hrtimer and stopper thread of the soft-lockup detector and the NMI of the hard-lockup detector.",
        [GUIDE],
        Some("neither soft nor hard lockups are detected")
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-WATCHDOG-CPUMASK",
        "kernel.watchdog_cpumask",
        "kernel.watchdog_cpumask: lockup detectors only on housekeeping CPUs",
        Severity::Low,
        "Restricts the lockup detectors to the housekeeping CPUs (the guide: 0,8), so that if they are re-enabled they still leave the isolated CPUs alone.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-KERNEL-WATCHDOG-THRESH",
        "kernel.watchdog_thresh",
        "kernel.watchdog_thresh as in the guide",
        Severity::Low,
        "The lockup detectors' threshold in seconds; the hard-lockup NMI period derives from it. The guide keeps the default of 10.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-VM-DIRTY-BACKGROUND-RATIO",
        "vm.dirty_background_ratio",
        "vm.dirty_background_ratio: early background writeback",
        Severity::Low,
        "Background writeback starts when dirty pages reach this percentage of memory; a low value (3) writes often in small batches instead of in large bursts.",
        [GUIDE, "TuneD latency-performance"],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-VM-DIRTY-RATIO",
        "vm.dirty_ratio",
        "vm.dirty_ratio: writers throttled early",
        Severity::Low,
        "A process writing files is made to write back itself once dirty pages reach this percentage of memory; 10 keeps the bursts short.",
        [GUIDE, "TuneD latency-performance"],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-VM-STAT-INTERVAL",
        "vm.stat_interval",
        "vm.stat_interval: rare vmstat updates",
        Severity::Medium,
        "Every stat_interval seconds (default 1) a per-CPU vmstat work item folds the CPU's counters into the global ones, waking a kworker on every CPU, isolated ones included. The guide sets 3600, TuneD 10.",
        [GUIDE, "TuneD network-latency"],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-VM-SWAPPINESS",
        "vm.swappiness",
        "vm.swappiness: keep anonymous memory in RAM",
        Severity::Low,
        "A low swappiness makes reclaim prefer the page cache over swapping out anonymous memory, so the application's pages are not swapped and faulted back in. The guide sets 0, TuneD 10.",
        [GUIDE, "TuneD latency-performance"],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-VM-ZONE-RECLAIM-MODE",
        "vm.zone_reclaim_mode",
        "vm.zone_reclaim_mode: no node-local reclaim",
        Severity::Low,
        "With zone reclaim on, an allocation reclaims pages on its own node before falling back to another node: reclaim stalls in the allocation path. 0 allocates remotely instead.",
        [GUIDE],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-NET-IPV4-CONF-ALL-RP-FILTER",
        "net.ipv4.conf.all.rp_filter",
        "net.ipv4.conf.all.rp_filter: reverse-path filtering off",
        Severity::Low,
        "Reverse-path filtering looks up the route back to every received packet's source; the guide turns it off to save that lookup on the receive path.",
        [GUIDE],
        Some("packets with spoofed source addresses are no longer dropped")
    ),
    sysctl_rule!(
        "LL-SYSCTL-NET-CORE-BUSY-READ",
        "net.core.busy_read",
        "net.core.busy_read: socket reads busy-poll",
        Severity::Low,
        "A blocking socket read busy-polls the device queue for this many microseconds before sleeping, saving the interrupt and wake-up on the receive path.",
        ["TuneD network-latency"],
        None
    ),
    sysctl_rule!(
        "LL-SYSCTL-NET-CORE-BUSY-POLL",
        "net.core.busy_poll",
        "net.core.busy_poll: poll/select busy-poll",
        Severity::Low,
        "poll() and select() busy-poll the device queues for this many microseconds before sleeping.",
        ["TuneD network-latency"],
        None
    ),
];

/// Where a key went when the running kernel no longer has it.
fn moved(key: &str) -> Option<&'static str> {
    if key.starts_with("kernel.sched_") && key.ends_with("_ns") {
        Some(
            "moved to /sys/kernel/debug/sched/ in Linux 5.13; EEVDF (6.6) replaced latency and min_granularity with base_slice_ns",
        )
    } else if key.starts_with("kernel.numa_balancing_scan_") {
        Some("moved to /sys/kernel/debug/sched/numa_balancing/ in Linux 5.13")
    } else {
        None
    }
}

/// The `/proc/sys` path of a key.
fn path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// Compares the sysctl `key` with the expectation.
pub(crate) fn check(ctx: &RuleContext, key: &str, expect: &Expect) -> RuleOutcome {
    let hk = &ctx.partition.housekeeping;
    let expected = format!("{key} = {}", expect.describe(&cpus(hk)));
    let path = path(key);
    let kernel = &ctx.machine.kernel;
    let value = match kernel.sysctls.get(key) {
        Some(Avail::Available(value)) => value,
        Some(Avail::Unavailable { unavailable }) => {
            let absent = unavailable.starts_with("not on this kernel");
            return match kernel.release.get() {
                Some(release) if absent => {
                    let mut why = format!("{key} does not exist on kernel {release}");
                    if let Some(note) = moved(key) {
                        why.push_str(&format!(" ({note})"));
                    }
                    RuleOutcome::skipped(why).evidence(path)
                }
                Some(_) => RuleOutcome::unknown(format!("{key}: {unavailable}"), expected)
                    .evidence(path)
                    .manual(format!("check `sysctl {key}`")),
                None => RuleOutcome::unknown(
                    format!("{key} not readable and the kernel unknown (no /proc/sys/kernel/osrelease under the root)"),
                    expected,
                )
                .evidence(path)
                .manual(format!("check `sysctl {key}`")),
            };
        }
        None => {
            return RuleOutcome::unknown(format!("lowlat does not read {key}"), expected);
        }
    };
    if expect.allows("hk") && !ctx.partition.is_known() {
        return RuleOutcome::unknown(
            format!("{key} = {value}, but no CPU partition to compare with"),
            expected,
        )
        .evidence(path);
    }
    let ok = expect.alternatives.iter().any(|alt| {
        if alt.value == "hk" {
            return CpuSet::parse_list(value).is_ok_and(|set| &set == hk);
        }
        match (value.trim().parse::<i64>(), alt.value.parse::<i64>()) {
            (Ok(have), Ok(want)) => match alt.op {
                Op::Eq => have == want,
                Op::Le => have <= want,
                Op::Ge => have >= want,
            },
            _ => words(value) == words(&alt.value),
        }
    });
    let observed = format!("{key} = {value}");
    // The desired value, held or not: the plan sets it whatever the machine has now.
    let target = match expect.preferred() {
        "hk" => hk.to_list(),
        other => other.to_string(),
    };
    RuleOutcome::verdict(ok, observed, expected)
        .evidence(path)
        .fix(Fix::sysctl(key, target))
}

fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

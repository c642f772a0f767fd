//! Each cause `--explain` names, tied to the audit rule that finds it and the plan setting that
//! removes it: data, beside the rules. A class (the names of `measure::trace::explain::Class`
//! in JSON) with an optional source (a kworker's work function, a softirq's name) picks the
//! row; the most specific row wins. Before the table, [`fix`] sends each cause to what really
//! removes it: a kernel thread is not a task to move. A movable kernel thread (`rcu_preempt`,
//! `kcompactd0`, `rcuop/3`) is moved by the plan's `kthread:` setting; a per-CPU one
//! (`ksoftirqd/1`, `rcuc/1`, `migration/1`) cannot move, so its row names what makes it run
//! (the softirq `ksoftirqd` ran, when the trace saw it); an IRQ thread (`irq/36-nvme0q1`) is
//! its IRQ; and a kernel-managed IRQ, whose affinity cannot be written, is kept off the
//! isolated CPUs by `isolcpus=managed_irq` (LL-MANAGED-IRQS). `{irq}`, `{comm}` and
//! `{family}` (a kernel thread's setting pattern) in a setting are filled from the cause.

use crate::machine::irq::classify::{IrqClass, NETWORK_RECEIVE, classify};
use crate::machine::tasks::{PerCpuKind, per_cpu};
use crate::tuning::kthreads;

/// How one cause is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CauseFix {
    /// The cause's class, as serialized (`tick`, `device_irq`, ...), or one of the kinds
    /// [`fix`] sends a cause to: `kthread` (a movable kernel thread), `per_cpu_kthread` (its
    /// source the thread's kind: `ksoftirqd`, `rcuc`, ...), `managed_irq`.
    pub class: &'static str,
    /// The source the row is for (a work function, a softirq, a per-CPU thread's kind);
    /// `None`: any.
    pub source: Option<&'static str>,
    /// The audit rule that finds it.
    pub rule: &'static str,
    /// The plan setting that removes it (`{irq}`, `{comm}`, `{family}` filled in), when one
    /// does.
    pub setting: Option<&'static str>,
    /// What to do, in a sentence.
    pub advice: &'static str,
}

/// What one cause's fix says: the rule, the setting with its blanks filled, the advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fix {
    /// The audit rule that finds the cause.
    pub rule: &'static str,
    /// The plan setting that removes it, when one does.
    pub setting: Option<String>,
    /// What to do, in a sentence.
    pub advice: &'static str,
}

/// The table.
pub(crate) const CAUSE_FIXES: &[CauseFix] = &[
    CauseFix {
        class: "tick",
        source: None,
        rule: "LL-NOHZ-FULL",
        setting: Some("cmdline:nohz_full"),
        advice: "stop the tick on the isolated CPUs: nohz_full=<isolated> (and a single runnable task per CPU; `tick kept: X` names what kept it)",
    },
    CauseFix {
        class: "kworker",
        source: Some("vmstat_update"),
        rule: "LL-SYSCTL-VM-STAT-INTERVAL",
        setting: Some("sysctl:vm.stat_interval"),
        advice: "raise vm.stat_interval so the per-CPU vmstat work runs rarely",
    },
    CauseFix {
        class: "kworker",
        source: None,
        rule: "LL-WORKQUEUE-CPUMASK",
        setting: Some("workqueue:cpumask"),
        advice: "keep unbound workqueues on the housekeeping CPUs",
    },
    CauseFix {
        class: "device_irq",
        source: None,
        rule: "LL-IRQ-ON-ISOLATED",
        setting: Some("irq:{irq}:affinity"),
        advice: "move the IRQ's affinity to the housekeeping CPUs",
    },
    CauseFix {
        class: "task",
        source: None,
        rule: "LL-TASKS-ON-ISOLATED",
        setting: Some("task:{comm}:affinity"),
        advice: "move the task to the housekeeping CPUs (or stop it)",
    },
    CauseFix {
        class: "tlb_shootdown",
        source: None,
        rule: "LL-TASKS-ON-ISOLATED",
        setting: Some("task:{comm}:affinity"),
        advice: "the sending process has threads on both sides of the isolation: keep all its threads on the isolated CPUs or none",
    },
    CauseFix {
        class: "ipi",
        source: None,
        rule: "LL-TASKS-ON-ISOLATED",
        setting: Some("task:{comm}:affinity"),
        advice: "the sender (named) asks this CPU to run a function: move it, or what it acts on, off the isolated CPUs",
    },
    CauseFix {
        class: "timer",
        source: None,
        rule: "LL-SYSCTL-KERNEL-TIMER-MIGRATION",
        setting: Some("sysctl:kernel.timer_migration"),
        advice: "a timer armed on this CPU: the process that armed it (its callback is named) should run elsewhere",
    },
    CauseFix {
        class: "rcu",
        source: None,
        rule: "LL-RCU-NOCBS",
        setting: Some("cmdline:rcu_nocbs"),
        advice: "offload RCU callbacks from the isolated CPUs: rcu_nocbs=<isolated>",
    },
    CauseFix {
        class: "softirq",
        source: Some("TIMER"),
        rule: "LL-NOHZ-FULL",
        setting: Some("cmdline:nohz_full"),
        advice: "the timer softirq, raised by the tick for the timers due on this CPU: stop the tick on the isolated CPUs (nohz_full=<isolated>) and arm no timer there",
    },
    CauseFix {
        class: "softirq",
        source: Some("SCHED"),
        rule: "LL-NOHZ-FULL",
        setting: Some("cmdline:nohz_full"),
        advice: "scheduler load balancing, raised by the tick: stop the tick on the isolated CPUs (nohz_full=<isolated>; isolcpus=domain takes them out of balancing)",
    },
    CauseFix {
        class: "softirq",
        source: Some("HRTIMER"),
        rule: "LL-SYSCTL-KERNEL-TIMER-MIGRATION",
        setting: Some("sysctl:kernel.timer_migration"),
        advice: "a soft hrtimer armed on this CPU: the process that armed it should run elsewhere",
    },
    CauseFix {
        class: "softirq",
        source: None,
        rule: "LL-IRQ-ON-ISOLATED",
        setting: None,
        advice: "a softirq raised on this CPU by the interrupts it takes (network, block I/O, tasklets): move those IRQs off it (kernel-managed ones: isolcpus=managed_irq, LL-MANAGED-IRQS)",
    },
    CauseFix {
        class: "net_rx",
        source: None,
        rule: "LL-NIC-BUSY-POLL-NAPI",
        setting: Some("sysctl:net.core.busy_read"),
        advice: "network receive inside the slow round trips (a NIC queue's interrupt, a NET_RX softirq not of the round trip's own send): busy-poll the socket (net.core.busy_read, `measure net --busy-poll`; with the NIC's napi_defer_hard_irqs and gro_flush_timeout the interrupt stays masked while the application polls) and hold received packets back no longer than needed (rx-usecs, LL-NIC-RX-USECS; adaptive moderation off, LL-NIC-ADAPTIVE); another flow's queue: move its IRQ off this CPU (LL-IRQ-ON-ISOLATED)",
    },
    CauseFix {
        class: "managed_irq",
        source: None,
        rule: "LL-MANAGED-IRQS",
        setting: Some("cmdline:isolcpus"),
        advice: "a kernel-managed queue vector, whose affinity cannot be written: isolcpus=managed_irq,<isolated> keeps it off the isolated CPUs from the next boot",
    },
    CauseFix {
        class: "kthread",
        source: None,
        rule: "LL-KTHREADS-ON-ISOLATED",
        setting: Some("kthread:{family}:affinity"),
        advice: "a kernel thread that may run anywhere: move it to the housekeeping CPUs",
    },
    CauseFix {
        class: "per_cpu_kthread",
        source: Some("ksoftirqd"),
        rule: "LL-IRQ-ON-ISOLATED",
        setting: None,
        advice: "ksoftirqd runs the softirqs raised on its CPU and cannot move: remove what raises them: the IRQs on this CPU, the tick (LL-NOHZ-FULL), RCU callbacks (LL-RCU-NOCBS)",
    },
    CauseFix {
        class: "per_cpu_kthread",
        source: Some("kworker"),
        rule: "LL-WORKQUEUE-CPUMASK",
        setting: None,
        advice: "a kworker bound to this CPU ran work queued here (the trace named no work function), which workqueue:cpumask does not move: keep what queues per-CPU work (I/O, timers) off this CPU",
    },
    CauseFix {
        class: "per_cpu_kthread",
        source: Some("ktimers"),
        rule: "LL-NOHZ-FULL",
        setting: Some("cmdline:nohz_full"),
        advice: "ktimers runs the timer softirqs of its CPU and cannot move: stop the tick on the isolated CPUs (nohz_full=<isolated>) and arm no timer there",
    },
    CauseFix {
        class: "per_cpu_kthread",
        source: Some("rcuc"),
        rule: "LL-RCU-NOCBS",
        setting: Some("cmdline:rcu_nocbs"),
        advice: "rcuc runs its CPU's RCU callbacks and cannot move: offload them (rcu_nocbs=<isolated>)",
    },
    CauseFix {
        class: "per_cpu_kthread",
        source: Some("migration"),
        rule: "LL-ISOLCPUS",
        setting: Some("cmdline:isolcpus"),
        advice: "the stopper thread moved a task on or off this CPU: take the isolated CPUs out of load balancing (isolcpus=domain) and pin each task",
    },
    CauseFix {
        class: "per_cpu_kthread",
        source: Some("watchdog"),
        rule: "LL-SYSCTL-KERNEL-WATCHDOG",
        setting: Some("sysctl:kernel.watchdog"),
        advice: "the soft-lockup watchdog thread of this CPU: turn the watchdog off (kernel.watchdog=0) or keep it to the housekeeping CPUs (kernel.watchdog_cpumask)",
    },
    CauseFix {
        class: "per_cpu_kthread",
        source: None,
        rule: "LL-KTHREADS-ON-ISOLATED",
        setting: None,
        advice: "a kernel thread bound to this CPU, which no setting moves: it runs when the kernel needs this CPU itself (hotplug, idle injection, irq_work)",
    },
    CauseFix {
        class: "nmi",
        source: None,
        rule: "LL-SYSCTL-KERNEL-NMI-WATCHDOG",
        setting: Some("sysctl:kernel.nmi_watchdog"),
        advice: "disable the NMI watchdog (kernel.nmi_watchdog=0) or perf sampling on the isolated CPUs",
    },
    CauseFix {
        class: "no_kernel_event",
        source: None,
        rule: "LL-HYPERVISOR",
        setting: None,
        advice: "nothing in this guest ran: the hypervisor (or firmware) took the CPU; on the host, pin and isolate this vCPU (the realtime-guest profile's host-side advice)",
    },
];

/// The row of `class` from `source`, the most specific first.
fn row(class: &str, source: &str) -> Option<&'static CauseFix> {
    CAUSE_FIXES
        .iter()
        .find(|f| f.class == class && f.source == Some(source))
        .or_else(|| {
            CAUSE_FIXES
                .iter()
                .find(|f| f.class == class && f.source.is_none())
        })
}

/// The names of movable kernel threads that are not per-CPU by name: RCU's grace-period and
/// tasks threads (`rcu_preempt`, `rcu_sched`, `rcu_tasks_kthread` ...), kthreadd, the
/// memory ones (`kswapd0`, `kcompactd0`, `khugepaged`, `ksmd`) and the watchdogs'.
const MOVABLE_KTHREADS: [&str; 8] = [
    "rcu_",
    "kthreadd",
    "kswapd",
    "kcompactd",
    "khugepaged",
    "ksmd",
    "khungtaskd",
    "oom_reaper",
];

/// The kernel thread `comm` names, as the fix sees it.
enum Kthread<'a> {
    /// A per-CPU thread bound to its CPU, of this kind (`ksoftirqd`).
    PerCpu(&'static str),
    /// A thread that may run anywhere.
    Movable,
    /// An IRQ thread (`irq/36-nvme0q1`): the IRQ and its name.
    Irq(u32, &'a str),
}

/// What kernel thread `comm` is, by the names the kernel gives them; `None` for a task.
fn kthread(comm: &str) -> Option<Kthread<'_>> {
    if let Some((number, name)) = comm
        .strip_prefix("irq/")
        .and_then(|rest| rest.split_once('-'))
        && let Ok(irq) = number.parse()
    {
        return Some(Kthread::Irq(irq, name));
    }
    if let Some(thread) = per_cpu(comm) {
        let kind = match thread.kind {
            PerCpuKind::Rcuop => return Some(Kthread::Movable),
            PerCpuKind::Ksoftirqd => "ksoftirqd",
            PerCpuKind::Migration => "migration",
            PerCpuKind::Rcuc => "rcuc",
            PerCpuKind::Cpuhp => "cpuhp",
            PerCpuKind::Kworker => "kworker",
            PerCpuKind::IdleInject => "idle_inject",
            PerCpuKind::Watchdog => "watchdog",
            PerCpuKind::IrqWork => "irq_work",
            PerCpuKind::Ktimers => "ktimers",
        };
        return Some(Kthread::PerCpu(kind));
    }
    MOVABLE_KTHREADS
        .iter()
        .any(|name| comm.starts_with(name))
        .then_some(Kthread::Movable)
}

/// Whether the IRQ action `name` is a kernel-managed queue vector.
fn managed(name: &str) -> bool {
    matches!(classify(&[name]), IrqClass::Storage { managed: true, .. })
}

/// The softirq a per-CPU softirq thread ran in the gap, from its source's note
/// (`ksoftirqd/1 (TIMER softirq)`).
fn softirq_ran(source: &str) -> Option<&str> {
    let (_, note) = source.split_once(" (")?;
    note.strip_suffix(" softirq)")
}

/// The fix of one cause: of `class` (as serialized) from `source`, with the IRQ behind it
/// (`irq`) and the task it names (`comm`: a task's, an IPI's sender's), sent first to what
/// really removes it (see the module).
pub(crate) fn fix(class: &str, source: &str, irq: Option<u32>, comm: Option<&str>) -> Option<Fix> {
    let thread = comm.and_then(kthread);
    let (row, irq) = match (class, &thread) {
        ("task", Some(Kthread::Irq(number, name))) => {
            let class = if managed(name) {
                "managed_irq"
            } else {
                "device_irq"
            };
            (row(class, source), Some(*number))
        }
        ("task", Some(Kthread::PerCpu(kind))) => {
            let ran = softirq_ran(source).filter(|_| matches!(*kind, "ksoftirqd" | "ktimers"));
            let row = match ran {
                Some("RCU") => row("rcu", "RCU softirq"),
                Some(softirq) => row("softirq", softirq),
                None => row("per_cpu_kthread", kind),
            };
            (row, irq)
        }
        ("task" | "ipi" | "tlb_shootdown", Some(Kthread::Movable)) => (row("kthread", source), irq),
        // A sender bound to its CPU (or an IRQ thread) is not moved by a setting of its own.
        ("ipi" | "tlb_shootdown", Some(_)) => {
            let row = row(class, source)?;
            return Some(Fix {
                rule: row.rule,
                setting: None,
                advice: row.advice,
            });
        }
        // A bound kworker named by its comm: the work it ran was not seen.
        ("kworker", _) if per_cpu(source).is_some_and(|p| p.kind == PerCpuKind::Kworker) => {
            (row("per_cpu_kthread", "kworker"), irq)
        }
        ("device_irq" | "softirq", _) if source.ends_with(NETWORK_RECEIVE) => {
            (row("net_rx", source), irq)
        }
        ("device_irq", _) => {
            let name = source.split_once(' ').map_or("", |(_, name)| name);
            let class = if managed(name) { "managed_irq" } else { class };
            (row(class, source), irq)
        }
        _ => (row(class, source), irq),
    };
    let row = row?;
    Some(Fix {
        rule: row.rule,
        setting: setting_for(row, irq, comm),
        advice: row.advice,
    })
}

/// The setting of `row` for one cause: `{irq}`, `{comm}` and `{family}` filled in.
fn setting_for(row: &CauseFix, irq: Option<u32>, comm: Option<&str>) -> Option<String> {
    let template = row.setting?;
    if template.contains("{irq}") {
        return irq.map(|n| template.replace("{irq}", &n.to_string()));
    }
    if template.contains("{comm}") {
        return comm.map(|c| template.replace("{comm}", c));
    }
    if template.contains("{family}") {
        return comm.map(|c| template.replace("{family}", &kthreads::family(c).0));
    }
    Some(template.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::setting_id::SettingId;

    #[test]
    fn every_rule_named_exists_and_every_setting_parses() {
        for row in CAUSE_FIXES {
            assert!(
                super::super::find(row.rule).is_some(),
                "{}: no rule {}",
                row.class,
                row.rule
            );
            if let Some(setting) = setting_for(row, Some(42), Some("cyclic")) {
                assert!(
                    setting.parse::<SettingId>().is_ok(),
                    "{}: setting {setting} does not parse",
                    row.class
                );
            }
        }
    }

    /// The fix of a cause as `rule setting`.
    fn fixed(class: &str, source: &str, irq: Option<u32>, comm: Option<&str>) -> String {
        let fix = fix(class, source, irq, comm).unwrap();
        format!("{} {}", fix.rule, fix.setting.as_deref().unwrap_or("-"))
    }

    #[test]
    fn the_most_specific_row_wins() {
        assert_eq!(
            fixed("kworker", "vmstat_update", None, None),
            "LL-SYSCTL-VM-STAT-INTERVAL sysctl:vm.stat_interval"
        );
        assert_eq!(
            fixed("kworker", "other", None, None),
            "LL-WORKQUEUE-CPUMASK workqueue:cpumask"
        );
        assert_eq!(
            fixed("device_irq", "42 eth0-TxRx-3", Some(42), None),
            "LL-IRQ-ON-ISOLATED irq:42:affinity"
        );
        assert_eq!(
            fixed(
                "task",
                "cyclic (woken by hrtimer_wakeup)",
                None,
                Some("cyclic")
            ),
            "LL-TASKS-ON-ISOLATED task:cyclic:affinity"
        );
        assert!(fix("unknown", "events lost", None, None).is_none());
    }

    /// Issue 49: network receive in a ping-pong's slow round trips (marked by its explain)
    /// is addressed by busy polling and the NIC's interrupt delay; the same IRQ or softirq
    /// unmarked (a jitter or timer run's) keeps its placement fix.
    #[test]
    fn network_receive_in_a_round_trip_is_sent_to_busy_polling() {
        let busy = "LL-NIC-BUSY-POLL-NAPI sysctl:net.core.busy_read";
        assert_eq!(
            fixed(
                "device_irq",
                "25 virtio0-input.0 (network receive)",
                Some(25),
                None
            ),
            busy
        );
        assert_eq!(
            fixed("softirq", "NET_RX (network receive)", Some(3), None),
            busy
        );
        let advice = fix("softirq", "NET_RX (network receive)", None, None)
            .unwrap()
            .advice;
        for named in ["LL-NIC-RX-USECS", "napi_defer_hard_irqs", "LL-NIC-ADAPTIVE"] {
            assert!(advice.contains(named), "{named}: {advice}");
        }
        assert_eq!(
            fixed("device_irq", "25 virtio0-input.0", Some(25), None),
            "LL-IRQ-ON-ISOLATED irq:25:affinity"
        );
        assert_eq!(
            fixed("softirq", "NET_RX", Some(3), None),
            "LL-IRQ-ON-ISOLATED -"
        );
    }

    /// Issue 43 item 6: the causes of the recorded run of CPU 1 (tests/data/explain/
    /// guide-run.json) were fixed by `task:ksoftirqd/1:affinity`, `task:migration/1:affinity`,
    /// `task:kcompactd0:affinity` and `irq:36:affinity` for the kernel-managed virtio-blk
    /// queue: settings that cannot be made. Each now names what removes it.
    #[test]
    fn kernel_threads_and_managed_irqs_get_a_fix_that_can_be_made() {
        let cases = [
            // Movable kernel threads: the plan's kthread setting, by family.
            (
                "task",
                "rcu_preempt",
                None,
                Some("rcu_preempt"),
                "LL-KTHREADS-ON-ISOLATED kthread:rcu_preempt:affinity",
            ),
            (
                "task",
                "rcuop/3",
                None,
                Some("rcuop/3"),
                "LL-KTHREADS-ON-ISOLATED kthread:rcuop/*:affinity",
            ),
            (
                "tlb_shootdown",
                "function call from kcompactd0 on CPU 0 (on_each_cpu_cond_mask)",
                None,
                Some("kcompactd0"),
                "LL-KTHREADS-ON-ISOLATED kthread:kcompactd0:affinity",
            ),
            // Per-CPU kernel threads: what makes them run.
            (
                "task",
                "ksoftirqd/1",
                None,
                Some("ksoftirqd/1"),
                "LL-IRQ-ON-ISOLATED -",
            ),
            (
                "task",
                "ksoftirqd/1 (TIMER softirq)",
                None,
                Some("ksoftirqd/1"),
                "LL-NOHZ-FULL cmdline:nohz_full",
            ),
            (
                "task",
                "ksoftirqd/1 (RCU softirq)",
                None,
                Some("ksoftirqd/1"),
                "LL-RCU-NOCBS cmdline:rcu_nocbs",
            ),
            (
                "task",
                "rcuc/1",
                None,
                Some("rcuc/1"),
                "LL-RCU-NOCBS cmdline:rcu_nocbs",
            ),
            (
                "task",
                "ktimers/1",
                None,
                Some("ktimers/1"),
                "LL-NOHZ-FULL cmdline:nohz_full",
            ),
            (
                "task",
                "migration/1 (woken by watchdog_timer_fn)",
                None,
                Some("migration/1"),
                "LL-ISOLCPUS cmdline:isolcpus",
            ),
            (
                "task",
                "cpuhp/1",
                None,
                Some("cpuhp/1"),
                "LL-KTHREADS-ON-ISOLATED -",
            ),
            (
                "kworker",
                "kworker/1:0H",
                None,
                None,
                "LL-WORKQUEUE-CPUMASK -",
            ),
            (
                "kworker",
                "kworker/u8:2",
                None,
                None,
                "LL-WORKQUEUE-CPUMASK workqueue:cpumask",
            ),
            (
                "ipi",
                "function call from migration/0 on CPU 0",
                None,
                Some("migration/0"),
                "LL-TASKS-ON-ISOLATED -",
            ),
            // Softirqs: what raises them.
            (
                "softirq",
                "TIMER",
                Some(1),
                None,
                "LL-NOHZ-FULL cmdline:nohz_full",
            ),
            ("softirq", "BLOCK", Some(4), None, "LL-IRQ-ON-ISOLATED -"),
            // IRQs: a managed one by isolcpus=managed_irq, an IRQ thread by its IRQ.
            (
                "device_irq",
                "36 virtio1-req.0",
                Some(36),
                None,
                "LL-MANAGED-IRQS cmdline:isolcpus",
            ),
            (
                "device_irq",
                "41 nvme0q2",
                Some(41),
                None,
                "LL-MANAGED-IRQS cmdline:isolcpus",
            ),
            (
                "task",
                "irq/45-eth0-TxRx-3",
                None,
                Some("irq/45-eth0-TxRx-3"),
                "LL-IRQ-ON-ISOLATED irq:45:affinity",
            ),
            (
                "task",
                "irq/41-nvme0q2",
                None,
                Some("irq/41-nvme0q2"),
                "LL-MANAGED-IRQS cmdline:isolcpus",
            ),
        ];
        for (class, source, irq, comm, expected) in cases {
            assert_eq!(
                fixed(class, source, irq, comm),
                expected,
                "{class} {source}"
            );
        }
    }
}

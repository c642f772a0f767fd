//! The kernel-thread plan: movable kernel threads and the unbound and writeback workqueues to
//! the housekeeping CPUs; per-CPU kernel threads of isolated CPUs listed as unmovable; and, as
//! an option, SCHED_FIFO priorities for the softirq, RCU and timer threads.

use crate::text::{Page, escape_controls};
use std::collections::BTreeMap;

use super::sources::GUIDE;
use super::{Draft, Inputs, Plan, setting, write_unmovable};
use crate::machine::tasks::{PerCpuKind, Task};
use crate::machine::topology::Topology;
use crate::machine::{Avail, CpuSet};
use crate::tuning::kthreads;
use crate::tuning::nearby::NearHousekeeping;
use crate::tuning::setting::{Layer, Setting};
use crate::tuning::setting_id::{SettingId, TaskAttribute};

/// Real-time priorities of per-CPU kernel threads (name prefix, SCHED_FIFO priority), as
/// TuneD's realtime-virtual-host profile sets them: above normal tasks, below the workload's
/// own real-time threads.
const PRIORITIES: &[(&str, u32)] = &[
    ("ksoftirqd/", 2),
    ("ktimers/", 2),
    ("rcuc/", 4),
    ("rcub/", 4),
];

/// Kernel threads that a planned setting stops: the thread's name and the (id, value) pairs
/// that stop it. Pinning such a thread pins one that is gone, and on revert one the kernel has
/// started again under another pid.
fn stopped_threads() -> [(&'static str, [(SettingId, &'static str); 2]); 1] {
    [(
        "khugepaged",
        [
            (SettingId::Thp("enabled"), "never"),
            (
                SettingId::Cmdline("transparent_hugepage".to_string()),
                "transparent_hugepage=never",
            ),
        ],
    )]
}

/// Moves the affinity of every kernel thread another setting of the draft stops to the
/// skipped settings, with the reason. Runs once every setting is in the draft.
pub(crate) fn skip_stopped_threads(draft: &mut Draft) {
    let stopped: Vec<(SettingId, String)> = stopped_threads()
        .into_iter()
        .filter_map(|(thread, stoppers)| {
            let stopper = draft.settings().iter().find(|s| {
                stoppers
                    .iter()
                    .any(|(id, value)| s.id == *id && s.value == *value)
            })?;
            let id = SettingId::Tasks {
                kernel: true,
                pattern: (*thread).to_string(),
                attribute: TaskAttribute::Affinity,
            };
            let reason = format!(
                "{thread} does not run once {} is {}: nothing to pin",
                stopper.id, stopper.value
            );
            Some((id, reason))
        })
        .collect();
    for (id, reason) in stopped {
        if let Some(setting) = draft.take(&id) {
            draft.skip(setting, reason);
        }
    }
}

/// Adds the workqueue masks, the kernel-thread affinities and (if asked) priorities.
pub(crate) fn plan(inputs: &Inputs, draft: &mut Draft) {
    let hk = &inputs.partition.housekeeping;
    let services = &inputs.machine.services;
    for (id, current, why) in [
        (
            SettingId::Workqueue(None),
            &services.workqueue_cpumask,
            "Unbound workqueue workers (kworker/u*) run only on the housekeeping CPUs.",
        ),
        (
            SettingId::Workqueue(Some("writeback".to_string())),
            &services.writeback_cpumask,
            "Dirty-page writeback workers run only on the housekeeping CPUs.",
        ),
    ] {
        let s = setting(
            id,
            hk.to_mask(inputs.partition.nr_cpus),
            Layer::Runtime,
            why,
            format!("{GUIDE} §4.3.3 (step 2); TuneD cpu-partitioning profile ([sysfs])"),
        );
        match current {
            Avail::Available(_) => draft.add(s),
            Avail::Unavailable { unavailable } => draft.skip(s, unavailable.clone()),
        }
    }

    let tasks = match &inputs.machine.tasks {
        Avail::Available(tasks) => tasks,
        Avail::Unavailable { unavailable } => {
            draft.skip(
                kthread(
                    "*",
                    hk.to_list(),
                    "Every movable kernel thread to the housekeeping CPUs.",
                ),
                format!("the kernel threads could not be read: {unavailable}"),
            );
            if inputs.request.options.kthread_priorities {
                for &(prefix, priority) in PRIORITIES {
                    draft.add(priority_setting(prefix, priority));
                }
            }
            return;
        }
    };
    let kthreads: Vec<&Task> = tasks.tasks.iter().filter(|t| t.kernel_thread).collect();
    plan_affinity(&kthreads, &inputs.machine.topology, hk, draft);
    plan_unmovable(&kthreads, &inputs.partition.isolated, draft);
    if inputs.request.options.kthread_priorities {
        for &(prefix, priority) in PRIORITIES {
            let s = priority_setting(prefix, priority);
            if kthreads.iter().any(|t| t.comm.starts_with(prefix)) {
                draft.add(s);
            } else {
                draft.skip(
                    s,
                    "no such kernel thread on this kernel (PREEMPT_RT kernels have them)",
                );
            }
        }
    }
}

fn kthread(name: &str, value: String, rationale: &str) -> Setting {
    setting(
        SettingId::Tasks {
            kernel: true,
            pattern: name.to_string(),
            attribute: TaskAttribute::Affinity,
        },
        value,
        Layer::Runtime,
        rationale,
        format!("{GUIDE} §4.3.3 (steps 6 and 8); TuneD cpu-partitioning profile ([scheduler])"),
    )
}

fn priority_setting(prefix: &str, priority: u32) -> Setting {
    setting(
        SettingId::Tasks {
            kernel: true,
            pattern: format!("{prefix}*"),
            attribute: TaskAttribute::Priority,
        },
        format!("fifo:{priority}"),
        Layer::Runtime,
        "Runs the per-CPU softirq, timer and RCU threads with a real-time priority, so that a busy real-time task cannot starve them (which would stall the whole machine).",
        "TuneD realtime-virtual-host profile (group.ksoftirqd, group.ktimers, group.rcuc, group.rcub)",
    )
}

fn plan_affinity(threads: &[&Task], topology: &Topology, hk: &CpuSet, draft: &mut Draft) {
    let mut near = NearHousekeeping::new(topology, hk);
    for placement in kthreads::placements(threads.iter().copied(), &mut near) {
        let why = match placement.node {
            Some(node) if placement.near.local => {
                format!("Per-node memory thread to the housekeeping CPUs of its node {node}.")
            }
            _ => "Movable kernel thread to the housekeeping CPUs.".to_string(),
        };
        draft.add(kthread(&placement.pattern, placement.near.list, &why));
    }
}

/// Why a per-CPU kernel thread of an isolated CPU stays, and what keeps it quiet.
fn stays(kind: PerCpuKind) -> &'static str {
    match kind {
        PerCpuKind::Ksoftirqd => {
            "runs softirqs raised on its CPU; quiet while no IRQ is delivered there"
        }
        PerCpuKind::Migration => {
            "the stop-machine thread; runs only for task migration and CPU hotplug"
        }
        PerCpuKind::Rcuc => {
            "RCU callbacks on PREEMPT_RT; rcu_nocbs moves them to rcuo threads on housekeeping CPUs"
        }
        PerCpuKind::Cpuhp => "CPU hotplug state machine; runs only when a CPU goes on- or offline",
        PerCpuKind::Kworker => {
            "bound workqueue work queued on its CPU (vmstat, LRU drains); nohz_full and a long vm.stat_interval keep it rare"
        }
        PerCpuKind::IdleInject => {
            "forced idle for thermal or power capping; runs only when capping is active"
        }
        PerCpuKind::Watchdog => {
            "the soft-lockup watchdog; nosoftlockup and kernel.watchdog_cpumask stop it"
        }
        PerCpuKind::IrqWork => "irq_work on PREEMPT_RT; quiet when nothing queues work on its CPU",
        PerCpuKind::Ktimers => {
            "timer softirq on PREEMPT_RT; nohz_full keeps timers off busy isolated CPUs"
        }
        PerCpuKind::Rcuop => "RCU callback offload thread",
    }
}

fn kind_name(kind: PerCpuKind) -> &'static str {
    match kind {
        PerCpuKind::Ksoftirqd => "ksoftirqd",
        PerCpuKind::Migration => "migration",
        PerCpuKind::Rcuc => "rcuc",
        PerCpuKind::Cpuhp => "cpuhp",
        PerCpuKind::Kworker => "kworker (bound)",
        PerCpuKind::IdleInject => "idle_inject",
        PerCpuKind::Watchdog => "watchdog",
        PerCpuKind::IrqWork => "irq_work",
        PerCpuKind::Ktimers => "ktimers",
        PerCpuKind::Rcuop => "rcuop",
    }
}

/// One entry per kind of bound per-CPU thread found on isolated CPUs.
fn plan_unmovable(kthreads: &[&Task], isolated: &CpuSet, draft: &mut Draft) {
    let mut kinds: BTreeMap<&'static str, (PerCpuKind, CpuSet)> = BTreeMap::new();
    for task in kthreads {
        if let Some(per_cpu) = task.per_cpu.filter(|p| p.kind.binds())
            && isolated.contains(per_cpu.cpu)
        {
            kinds
                .entry(kind_name(per_cpu.kind))
                .or_insert_with(|| (per_cpu.kind, CpuSet::new()))
                .1
                .insert(per_cpu.cpu);
        }
    }
    for (name, (kind, cpus)) in kinds {
        draft.unmovable(
            format!("kthread {name} on CPUs {}", cpus.to_list()),
            format!("per-CPU, bound to its CPU: {}", stays(kind)),
        );
    }
}

/// Whether a setting is one kthread-plan.txt shows: a workqueue mask or a kernel-thread
/// setting.
fn kthread_or_workqueue(id: &SettingId) -> bool {
    matches!(
        id,
        SettingId::Workqueue(_) | SettingId::Tasks { kernel: true, .. }
    )
}

/// kthread-plan.txt: workqueue masks, kernel-thread affinities and priorities, and what stays.
pub(crate) fn render(plan: &Plan, header: &str) -> String {
    let mut out = Page::from(header);
    out.text("#\n# Applied by `lowlat apply` (and at every boot by lowlat-runtime.service).\n");
    let settings: Vec<&Setting> = plan
        .settings
        .iter()
        .filter(|s| kthread_or_workqueue(&s.id))
        .collect();
    if settings.is_empty() {
        out.text("\nNo kernel thread or workqueue to move.\n");
    } else {
        out.blank();
        for s in settings {
            writeln!(
                out,
                "{} = {}\n    {}",
                escape_controls(&s.id.to_string()),
                escape_controls(&s.value),
                escape_controls(&s.rationale)
            );
        }
    }
    let skipped: Vec<_> = plan
        .skipped
        .iter()
        .filter(|s| kthread_or_workqueue(&s.setting.id))
        .collect();
    if !skipped.is_empty() {
        out.text("\nNot planned:\n");
        for s in skipped {
            writeln!(
                out,
                "  {} = {}: {}",
                escape_controls(&s.setting.id.to_string()),
                escape_controls(&s.setting.value),
                escape_controls(&s.reason)
            );
        }
    }
    write_unmovable(&mut out, plan, "kthread", "Stays on the isolated CPUs");
    out.into_string()
}

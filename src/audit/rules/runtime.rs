//! Run-time rules: what may run on the isolated CPUs (IRQs, kernel threads, user tasks,
//! workqueues), frequency and idle states, THP, the clocksource and steal time.

use std::collections::BTreeSet;

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{
    Accepts, BiosMenu, Expect, Fix, Rule, RuleCheck, RuleContext, RuleOutcome,
};
use crate::audit::rules::support::{
    IrqLines, first_few, interrupts, is_managed, part, unread_affinities, unread_tasks,
    with_details,
};
use crate::audit::rules::{cpus, without_partition};
use crate::machine::irq::{Irq, IrqClass};
use crate::machine::power::IdleState;
use crate::machine::services::{WORKQUEUE_CPUMASK, WRITEBACK_CPUMASK};
use crate::machine::tasks::{Task, Tasks};
use crate::machine::{Avail, CpuSet};
use crate::tuning::installed_files::SYSTEMD_AFFINITY_DROPIN;
use crate::tuning::kthreads;
use crate::tuning::nearby::NearHousekeeping;
use crate::tuning::setting::Layer;
use crate::tuning::setting_id::{SettingId, TaskAttribute};

const GUIDE_SCRIPT: &str = "AMD EPYC 7002 low-latency guide §4.3.3";
const DEFAULT_AFFINITY: &str = "/proc/irq/default_smp_affinity";
/// Where each task's allowed CPUs are read.
const TASK_STATUS: &str = "/proc/*/status";
const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/// The runtime-layer rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-IRQ-ON-ISOLATED",
        title: "No interrupt may be delivered to an isolated CPU",
        layer: Layer::Runtime,
        severity: Severity::High,
        rationale: "An interrupt delivered to an isolated CPU stops the application for the handler's duration (microseconds, more with softirq work). Every movable IRQ's affinity is set to housekeeping CPUs, near the device's NUMA node; kernel-managed IRQs are the subject of LL-MANAGED-IRQS, and timer IRQs, which the kernel keeps where it set them up, are left to nohz_full.",
        sources: &[
            GUIDE_SCRIPT,
            "TuneD cpu-partitioning",
            "tuning-tools research §7.c B.19",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(irq_on_isolated),
    },
    Rule {
        id: "LL-IRQ-DEFAULT-AFFINITY",
        title: "New interrupts default to housekeeping CPUs",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "/proc/irq/default_smp_affinity is the affinity of interrupts allocated from now on (a NIC reset, a hot-plugged device); if it includes isolated CPUs, new IRQs land there until someone moves them. irqaffinity= sets it at boot.",
        sources: &["TuneD cpu-partitioning", "tuning-tools research §7.c B.18"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["hk"]),
        check: RuleCheck::Fn(irq_default_affinity),
    },
    Rule {
        id: "LL-KTHREADS-ON-ISOLATED",
        title: "Movable kernel threads stay on housekeeping CPUs",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "Kernel threads that may run anywhere (RCU grace-period and offload threads, kswapd, kthreadd, kcompactd ...) are scheduled onto isolated CPUs when allowed there. Per-CPU threads (ksoftirqd/N, migration/N, cpuhp/N, bound kworkers) cannot move: they are listed, not failed; IRQ threads (irq/N-name) move with their IRQ (LL-IRQ-ON-ISOLATED). The fix is the plan's: per-node threads (kswapdN, kcompactdN) go to their node's housekeeping CPUs.",
        sources: &[
            GUIDE_SCRIPT,
            "TuneD cpu-partitioning",
            "tuning-tools research §7.c C.24",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(kthreads_on_isolated),
    },
    Rule {
        id: "LL-TASKS-ON-ISOLATED",
        title: "User tasks not placed on isolated CPUs stay off them",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "A daemon allowed on every CPU (the default) is scheduled onto isolated CPUs and preempts the application. systemd's CPUAffinity= (PID 1 and everything it starts) keeps them on housekeeping CPUs; tasks allowed only on isolated CPUs are the workload and are left alone.",
        sources: &[
            GUIDE_SCRIPT,
            "TuneD cpu-partitioning",
            "tuning-tools research §7.c D.34",
        ],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(tasks_on_isolated),
    },
    Rule {
        id: "LL-WORKQUEUE-CPUMASK",
        title: "Unbound workqueues run on housekeeping CPUs",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "Unbound workqueue workers (kworker/uN:M) run wherever /sys/devices/virtual/workqueue/cpumask allows; left at all CPUs, deferred kernel work lands on isolated CPUs.",
        sources: &["TuneD cpu-partitioning", "tuning-tools research §7.c C.22"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["hk"]),
        check: RuleCheck::Fn(workqueue_cpumask),
    },
    Rule {
        id: "LL-WRITEBACK-CPUMASK",
        title: "Writeback workers run on housekeeping CPUs",
        layer: Layer::Runtime,
        severity: Severity::Low,
        rationale: "Page-cache writeback has its own workqueue with its own mask (/sys/bus/workqueue/devices/writeback/cpumask), which overrides the global one; the guide's boot script sets it to the housekeeping CPUs.",
        sources: &[GUIDE_SCRIPT, "TuneD cpu-partitioning"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["hk"]),
        check: RuleCheck::Fn(writeback_cpumask),
    },
    Rule {
        id: "LL-GOVERNOR",
        title: "cpufreq governor is performance",
        layer: Layer::Runtime,
        severity: Severity::High,
        rationale: "Dynamic governors (schedutil, ondemand, powersave) lower the clock when a CPU looks idle and raise it with a delay when work arrives; the first microseconds of every burst run slow. The performance governor keeps the highest frequency.",
        sources: &[
            GUIDE_SCRIPT,
            "Bilibili AMD tuning §4.1.5",
            "TuneD latency-performance",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["performance"]),
        check: RuleCheck::Fn(governor),
    },
    Rule {
        id: "LL-CSTATES",
        title: "No C-state deeper than C1",
        layer: Layer::Runtime,
        severity: Severity::High,
        rationale: "Waking from a deep C-state (AMD CC6, Intel C6) takes tens to hundreds of microseconds and flushes the core's caches. Keeping to POLL and C1 bounds wake-up latency; a per-CPU pm_qos_resume_latency_us limit does it at run time without a process holding /dev/cpu_dma_latency.",
        sources: &[
            GUIDE_BIOS_CSTATE,
            "BC-Linux RT virtualization §host BIOS configuration",
            "Bilibili AMD tuning §4.1.1",
            "tuning-tools research §7.c E.43",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[BiosMenu {
            firmware: "HPE RBSU",
            path: "System Configuration → BIOS/Platform Configuration (RBSU) → Power and Performance Options → Minimum Processor Idle Power Core C-State",
            source: GUIDE_BIOS_CSTATE,
        }],
        accepts: Accepts::Words(&["c1", "c1-all"]),
        check: RuleCheck::Fn(cstates),
    },
    Rule {
        id: "LL-THP",
        title: "Transparent huge pages",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "With THP on, page faults may compact memory to build a huge page and khugepaged scans and collapses pages in the background: unpredictable stalls. The guide boots with transparent_hugepage=never and uses explicit huge pages.",
        sources: &[
            "AMD EPYC 7002 low-latency guide §4.4.1",
            "TuneD network-latency",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["never", "madvise", "always"]),
        check: RuleCheck::Fn(thp),
    },
    Rule {
        id: "LL-CLOCKSOURCE",
        title: "The clocksource is the TSC",
        layer: Layer::Runtime,
        severity: Severity::High,
        rationale: "clock_gettime() reads the TSC in user space (vDSO) in about 20 ns; hpet and acpi_pm need a slow device read, and in a guest kvm-clock adds a pvclock indirection. The BC-Linux guest disables kvmclock so that the guest uses the host's TSC.",
        sources: &[
            "BC-Linux RT virtualization §configure the clocksource",
            "BC-Linux RT virtualization §reboot and check the guest",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["tsc"]),
        check: RuleCheck::Fn(clocksource),
    },
    Rule {
        id: "LL-STEAL",
        title: "Isolated vCPUs see no steal time",
        layer: Layer::Runtime,
        severity: Severity::High,
        rationale: "Steal time is time a vCPU was runnable but the host ran something else: the guest's latency is then the host's scheduling latency. vCPUs pinned one-to-one on isolated host cores see none.",
        sources: &["BC-Linux RT virtualization §bind physical CPUs"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(steal),
    },
    Rule {
        id: "LL-VM-PLACEMENT",
        title: "The vCPUs' placement on the host is audited on the host",
        layer: Layer::Runtime,
        severity: Severity::High,
        rationale: "A guest cannot see where its vCPUs run: whether each is pinned to its own isolated host core, whether the emulator thread shares one, whether its memory comes from huge pages on the right node. Those decide its latency as much as its own tuning does, and only the host's audit of the domain tells all of it. One part shows from inside: two vCPUs the host runs on the two threads of one core pass a cache line in a few nanoseconds, ten times faster than separate cores (8-9 ns against a median of 80 ns on a 16-vCPU KVM guest), and an unpinned host moves them between probes; `lowlat check` measures it with a short probe (at most 2 s).",
        sources: &[
            "BC-Linux RT virtualization §bind physical CPUs",
            "lowlat and core-to-core-latency matrices of a 16-vCPU KVM guest (tests/data/c2c-kvm-16vcpu)",
        ],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["host"]),
        check: RuleCheck::Fn(placement_from_host),
    },
];

const GUIDE_BIOS_CSTATE: &str = "AMD EPYC 7002 low-latency guide §3.2.2";

fn irq_on_isolated(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "every movable IRQ's affinity within the housekeeping CPUs";
    let irqs = match interrupts(ctx, expected) {
        Ok(irqs) => irqs,
        Err(unknown) => return *unknown,
    };
    let iso = &ctx.partition.isolated;
    let mut named = IrqLines::new(ctx, irqs);
    let mut fixes = Vec::new();
    let mut near = NearHousekeeping::new(&ctx.machine.topology, &ctx.partition.housekeeping);
    // Timer IRQs are fixed by the kernel (x86 sets up IRQ 0 with IRQF_NOBALANCING, so writing
    // its smp_affinity fails with EIO), as plan knows: they are counted, not fixed.
    let is_timer = |irq: &Irq| irq.class == IrqClass::Timer;
    let movable: Vec<&Irq> = irqs
        .irqs
        .iter()
        .filter(|irq| !is_managed(irq) && !is_timer(irq))
        .collect();
    let mut unread = Vec::new();
    for irq in &movable {
        let hits = irq
            .affinity
            .get()
            .or(irq.effective_affinity.get())
            .is_some_and(|set| set.intersects(iso));
        if !hits && irq.affinity.get().is_none() {
            // Delivered within the housekeeping CPUs now, perhaps, but where it may be sent is
            // unknown.
            unread.push(irq.number);
        }
        if hits {
            named.add(irq);
            let target = near.of(irq.device_node.or(irq.node));
            fixes.push(Fix::runtime(
                SettingId::Irq(irq.number),
                target.list.clone(),
            ));
        }
    }
    let managed = irqs.irqs.iter().filter(|irq| is_managed(irq)).count();
    let timers = irqs.irqs.iter().filter(|irq| is_timer(irq)).count();
    let notes: Vec<String> = [
        (managed, "kernel-managed: see LL-MANAGED-IRQS"),
        (timers, "timer, fixed by the kernel"),
    ]
    .into_iter()
    .filter(|(count, _)| *count > 0)
    .map(|(count, what)| format!("{count} {what}"))
    .collect();
    let note = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    let observed = format!(
        "{} of {} movable IRQs may be delivered to isolated CPUs{note}",
        named.count(),
        movable.len()
    );
    let mut outcome = RuleOutcome::verdict(named.count() == 0, observed, expected)
        .evidence("/proc/irq/*/smp_affinity_list")
        .evidence("/proc/interrupts");
    if let Some(missing) = unread_affinities(&unread) {
        outcome = outcome.lacking(missing);
    }
    outcome.fixes = fixes;
    with_details(outcome, named.into_lines())
}

fn irq_default_affinity(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let hk = &ctx.partition.housekeeping;
    let expected = format!("default_smp_affinity within {}", cpus(hk));
    if let Some(unknown) = without_partition(ctx, &expected) {
        return unknown;
    }
    let default = match part(
        &ctx.machine.irq_default_affinity,
        "default affinity unreadable",
        &expected,
    ) {
        Ok(set) => set,
        Err(unknown) => return unknown.evidence(DEFAULT_AFFINITY),
    };
    let ok = !default.is_empty() && default.is_subset(hk);
    let mut outcome = RuleOutcome::verdict(
        ok,
        format!("default_smp_affinity {}", cpus(default)),
        expected,
    )
    .evidence(DEFAULT_AFFINITY);
    if !ok {
        outcome = outcome
            .fix(Fix::runtime(
                SettingId::IrqDefault,
                ctx.partition.housekeeping_mask(),
            ))
            .fix(Fix::cmdline("irqaffinity", hk.to_list()));
    }
    outcome
}

/// The kernel threads (`kernel`) or user tasks allowed on at least one isolated CPU, with the
/// CPUs each may run on; or the `unknown` outcome when there is no partition or task list.
/// Both task rules walk the task list through this one filter.
fn allowed_on_isolated<'a>(
    ctx: &RuleContext<'a>,
    kernel: bool,
    expected: &str,
) -> Result<Vec<(&'a Task, &'a CpuSet)>, Box<RuleOutcome>> {
    if let Some(unknown) = without_partition(ctx, expected) {
        return Err(Box::new(unknown));
    }
    let tasks = part(&ctx.machine.tasks, "tasks unreadable", expected)
        .map_err(|unknown| Box::new(unknown.evidence(TASK_STATUS)))?;
    let iso = &ctx.partition.isolated;
    Ok(tasks
        .tasks
        .iter()
        .filter(|t| t.kernel_thread == kernel)
        .filter_map(|t| Some((t, t.cpus_allowed.get()?)))
        .filter(|(_, allowed)| allowed.intersects(iso))
        .collect())
}

/// `outcome` of a task rule, held back from a pass when some tasks (kernel threads for
/// `kernel`, else user tasks) could not be read or have CPUs that could not be read (an empty
/// or cut `/proc/PID/status`).
fn unread(ctx: &RuleContext, kernel: bool, outcome: RuleOutcome) -> RuleOutcome {
    let outcome = unread_tasks(ctx, outcome);
    let Some(tasks) = ctx.machine.tasks.get() else {
        return outcome;
    };
    let unknown: Vec<u32> = (tasks.tasks.iter())
        .filter(|t| t.kernel_thread == kernel && t.cpus_allowed.get().is_none())
        .map(|t| t.pid)
        .collect();
    if unknown.is_empty() {
        return outcome;
    }
    outcome.lacking(format!(
        "the allowed CPUs of {} task(s) (no Cpus_allowed_list in /proc/PID/status for PID = {})",
        unknown.len(),
        first_few(&unknown)
    ))
}

/// The tasks a task rule names: a detail line each (`pid 812 chronyd: allowed 0-15`) and
/// their names, for the fix that pins them to the housekeeping CPUs. Both task rules collect
/// them this way.
#[derive(Default)]
struct Named {
    /// One line per task.
    lines: Vec<String>,
    /// The tasks' names.
    comms: BTreeSet<String>,
}

impl Named {
    /// Names `task`, which may run on `allowed`.
    fn add(&mut self, task: &Task, allowed: &CpuSet) {
        self.lines.push(format!(
            "pid {} {}: allowed {}",
            task.pid,
            task.comm,
            cpus(allowed)
        ));
        self.comms.insert(task.comm.clone());
    }

    /// The rule's verdict, read from the task list: a pass when no task is named.
    fn verdict(&self, observed: String, expected: &str) -> RuleOutcome {
        RuleOutcome::verdict(self.lines.is_empty(), observed, expected).evidence(TASK_STATUS)
    }
}

/// Adds the fix that pins the user tasks named `comms` to the housekeeping CPUs.
fn pin_to_housekeeping(
    ctx: &RuleContext,
    mut outcome: RuleOutcome,
    comms: BTreeSet<String>,
) -> RuleOutcome {
    let hk = ctx.partition.housekeeping.to_list();
    for pattern in comms {
        let id = SettingId::Tasks {
            kernel: false,
            pattern,
            attribute: TaskAttribute::Affinity,
        };
        outcome = outcome.fix(Fix::runtime(id, hk.clone()));
    }
    outcome
}

fn kthreads_on_isolated(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "movable kernel threads allowed only on housekeeping CPUs";
    let tasks = match allowed_on_isolated(ctx, true, expected) {
        Ok(tasks) => tasks,
        Err(unknown) => return *unknown,
    };
    let mut movable = Named::default();
    let mut moved = Vec::new();
    let mut per_cpu = 0;
    let mut unbound_workers = 0;
    let mut irq_threads = 0;
    for (task, allowed) in tasks {
        if !task.movable {
            per_cpu += 1;
        } else if task.affinity_locked {
            // Unbound kworkers follow the workqueue cpumask (LL-WORKQUEUE-CPUMASK).
            unbound_workers += 1;
        } else if kthreads::is_irq_thread(task) {
            // They move with their IRQ (LL-IRQ-ON-ISOLATED).
            irq_threads += 1;
        } else {
            movable.add(task, allowed);
            moved.push(task);
        }
    }
    let irq_note = if irq_threads > 0 {
        format!("; {irq_threads} IRQ thread(s) following their IRQ")
    } else {
        String::new()
    };
    let observed = format!(
        "{} movable kernel thread(s) allowed on isolated CPUs; {per_cpu} per-CPU thread(s) bound there (cannot move); {unbound_workers} unbound worker(s) following the workqueue mask{irq_note}",
        movable.lines.len()
    );
    let mut outcome = movable.verdict(observed, expected);
    // The same settings as the plan's: families (`rcuop/*`) and per-node threads on their
    // node's housekeeping CPUs.
    let mut near = NearHousekeeping::new(&ctx.machine.topology, &ctx.partition.housekeeping);
    for placement in kthreads::placements(moved, &mut near) {
        let id = SettingId::Tasks {
            kernel: true,
            pattern: placement.pattern,
            attribute: TaskAttribute::Affinity,
        };
        outcome = outcome.fix(Fix::runtime(id, placement.near.list));
    }
    with_details(unread(ctx, true, outcome), movable.lines)
}

fn tasks_on_isolated(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected =
        "user tasks allowed only on housekeeping CPUs (or only on isolated ones: the workload)";
    let iso = &ctx.partition.isolated;
    let tasks = match allowed_on_isolated(ctx, false, expected) {
        Ok(tasks) => tasks,
        Err(unknown) => return *unknown,
    };
    let mut unpinned = Named::default();
    let mut placed = 0;
    let mut init_unpinned = false;
    for (task, allowed) in tasks {
        if allowed.is_subset(iso) {
            placed += 1;
            continue;
        }
        init_unpinned |= task.pid == 1;
        unpinned.add(task, allowed);
    }
    let observed = format!(
        "{} user task(s) allowed on isolated and housekeeping CPUs alike; {placed} placed on isolated CPUs only",
        unpinned.lines.len()
    );
    let mut outcome = unpinned.verdict(observed, expected);
    if init_unpinned {
        outcome = outcome.fix(Fix::file(
            SYSTEMD_AFFINITY_DROPIN,
            "CPUAffinity",
            ctx.partition.housekeeping.to_list().replace(',', " "),
            true,
        ));
    }
    // The daemons already pinned to the housekeeping CPUs keep their pin: the desired state
    // does not depend on whether it holds yet, so plan → apply → plan is a fixed point.
    let mut comms = unpinned.comms;
    comms.extend(pinned_to_housekeeping(ctx));
    let comms = long_running(&ctx.machine.tasks, comms);
    outcome = pin_to_housekeeping(ctx, outcome, comms);
    with_details(unread(ctx, false, outcome), unpinned.lines)
}

/// The names of the user tasks allowed on exactly the housekeeping CPUs: the pin
/// [`pin_to_housekeeping`] gives, already in place.
fn pinned_to_housekeeping(ctx: &RuleContext) -> Vec<String> {
    let hk = &ctx.partition.housekeeping;
    let Some(tasks) = ctx.machine.tasks.get() else {
        return Vec::new();
    };
    (tasks.tasks.iter())
        .filter(|t| !t.kernel_thread && t.cpus_allowed.get() == Some(hk))
        .map(|t| t.comm.clone())
        .collect()
}

/// The names among `comms` worth pinning by name: long-running daemons. Where the tasks' cgroups
/// are known, a name qualifies when one of its tasks runs in a systemd service (login
/// sessions, PID 1 and containers do not); where they are not, every name but the transient
/// ones ([`transient_names`]).
fn long_running(tasks: &Avail<Tasks>, mut comms: BTreeSet<String>) -> BTreeSet<String> {
    let transient = transient_names(tasks);
    comms.retain(|comm| !transient.contains(comm));
    let Some(tasks) = tasks.get() else {
        return comms;
    };
    let user_tasks = || tasks.tasks.iter().filter(|t| !t.kernel_thread);
    if user_tasks().all(|t| t.cgroup.is_none()) {
        return comms;
    }
    comms.retain(|comm| user_tasks().any(|t| &t.comm == comm && t.service_unit().is_some()));
    comms
}

/// Names a by-name pin must never match: PID 1 (the systemd drop-in places it and everything it
/// starts), lowlat itself and the shell that started it (a pin by name would also catch the
/// admin's shells and lowlat's next runs).
fn transient_names(tasks: &Avail<Tasks>) -> BTreeSet<String> {
    let Some(tasks) = tasks.get() else {
        return BTreeSet::new();
    };
    let by_pid = |pid: u32| tasks.tasks.iter().find(|t| t.pid == pid);
    let mut names: BTreeSet<String> = by_pid(1).map(|t| t.comm.clone()).into_iter().collect();
    for lowlat in tasks.with_comm(LOWLAT_COMM) {
        names.insert(lowlat.comm.clone());
        if let Some(parent) = by_pid(lowlat.ppid).filter(|p| p.pid != 1) {
            names.insert(parent.comm.clone());
        }
    }
    names
}

/// lowlat's own command name as the kernel shows it.
const LOWLAT_COMM: &str = "lowlat";

/// A workqueue mask must be non-empty and within the housekeeping CPUs.
fn workqueue_mask(
    ctx: &RuleContext,
    mask: &Avail<CpuSet>,
    path: &str,
    setting: SettingId,
) -> RuleOutcome {
    let hk = &ctx.partition.housekeeping;
    let expected = format!("{path} within {}", cpus(hk));
    if let Some(unknown) = without_partition(ctx, &expected) {
        return unknown;
    }
    let mask = match part(mask, "mask unreadable", &expected) {
        Ok(mask) => mask,
        Err(unknown) => return unknown.evidence(path),
    };
    let ok = !mask.is_empty() && mask.is_subset(hk);
    let mut outcome =
        RuleOutcome::verdict(ok, format!("cpumask {}", cpus(mask)), expected).evidence(path);
    if !ok {
        outcome = outcome.fix(Fix::runtime(setting, ctx.partition.housekeeping_mask()));
    }
    outcome
}

fn workqueue_cpumask(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let mask = &ctx.machine.services.workqueue_cpumask;
    workqueue_mask(ctx, mask, WORKQUEUE_CPUMASK, SettingId::Workqueue(None))
}

fn writeback_cpumask(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let mask = &ctx.machine.services.writeback_cpumask;
    workqueue_mask(
        ctx,
        mask,
        WRITEBACK_CPUMASK,
        SettingId::Workqueue(Some("writeback".to_string())),
    )
}

/// `skipped` in a virtual machine, where the host owns frequency and idle; `unknown` where the
/// CPU identity (its hypervisor flag) could not be read.
fn host_owned(ctx: &RuleContext, what: &str, expected: &str) -> Option<RuleOutcome> {
    if let Some(why) = ctx.machine.cpu.reason() {
        return Some(
            RuleOutcome::unknown(
                format!("whether a hypervisor controls {what} is unknown: {why}"),
                expected,
            )
            .evidence(crate::machine::cpu::CPUINFO),
        );
    }
    ctx.machine.hypervisor.as_ref().map(|hv| {
        RuleOutcome::skipped(format!(
            "virtual machine ({}): the host controls {what}",
            hv.vendor
        ))
    })
}

fn governor(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "scaling_governor performance on every CPU";
    let policies = match &ctx.machine.power.cpufreq {
        Avail::Available(policies) => policies,
        Avail::Unavailable { unavailable } => {
            if let Some(skip) = host_owned(ctx, "frequency", expected) {
                return skip;
            }
            return RuleOutcome::unknown(format!("no cpufreq: {unavailable}"), expected)
                .evidence("/sys/devices/system/cpu/cpufreq")
                .manual("without cpufreq the firmware sets the frequency: check the BIOS power regulator (HPE: Static High Performance Mode)");
        }
    };
    let mut slow = Vec::new();
    let mut epp = Vec::new();
    for policy in policies {
        let governor = policy.governor.get().map_or("?", String::as_str);
        if governor != "performance" {
            slow.push(format!(
                "{} ({}): {governor}",
                policy.path,
                policy.affected_cpus.get().map_or("?".to_string(), cpus)
            ));
        }
        if let Some(pref) = policy.energy_performance_preference.get()
            && pref != "performance"
        {
            epp.push(format!(
                "{}: energy_performance_preference {pref}",
                policy.path
            ));
        }
    }
    let governors: BTreeSet<&str> = policies
        .iter()
        .filter_map(|p| p.governor.get().map(String::as_str))
        .collect();
    let observed = format!(
        "{} cpufreq policies, governor {}",
        policies.len(),
        governors.into_iter().collect::<Vec<_>>().join(", ")
    );
    // The desired governor, held or not; the preference only where the driver has one.
    let mut outcome = RuleOutcome::verdict(slow.is_empty() && epp.is_empty(), observed, expected)
        .evidence("/sys/devices/system/cpu/cpufreq/policy*/scaling_governor")
        .fix(Fix::runtime(
            SettingId::Cpufreq {
                policy: None,
                attribute: "scaling_governor",
            },
            "performance",
        ));
    let has_epp = policies
        .iter()
        .any(|p| p.energy_performance_preference.get().is_some());
    if has_epp {
        outcome = outcome.fix(Fix::runtime(
            SettingId::Cpufreq {
                policy: None,
                attribute: "energy_performance_preference",
            },
            "performance",
        ));
    }
    slow.extend(epp);
    with_details(outcome, slow)
}

/// Whether an idle state is deeper than C1 (by name; by exit latency when unnamed).
fn deep(state: &IdleState) -> bool {
    match state.name.get() {
        Some(name) => !matches!(
            name.to_ascii_uppercase().as_str(),
            "POLL" | "C1" | "C1_ACPI" | "HALTPOLL"
        ),
        None => state.latency_us.get().is_some_and(|l| *l > 2),
    }
}

fn cstates(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let all = expect.preferred() == "c1-all";
    let scope: CpuSet = if all {
        ctx.machine.topology.online_cpus()
    } else {
        ctx.partition.isolated.clone()
    };
    let expected = format!(
        "no C-state deeper than C1 usable on {} CPUs",
        if all { "all" } else { "isolated" }
    );
    if !all && let Some(unknown) = without_partition(ctx, &expected) {
        return unknown;
    }
    if let Some(skip) = host_owned(ctx, "C-states", &expected) {
        return skip;
    }
    let power = &ctx.machine.power;
    let cmd = ctx.machine.kernel.cmdline.get();
    let idle_off =
        cmd.is_some_and(|c| c.value("idle") == Some("poll") || c.value("cpuidle.off") == Some("1"));
    let mut deep_cpus = CpuSet::new();
    let mut lines = Vec::new();
    let mut fixes = Vec::new();
    let mut seen = 0;
    for cpu in power.cpus.iter().filter(|c| scope.contains(c.cpu)) {
        let Some(states) = cpu.idle_states.get() else {
            continue;
        };
        seen += 1;
        // The desired limit holds for every CPU with a deep state, usable now or not (the
        // limit planned before keeps it out): the plan sets it whatever the CPU has now.
        if states.iter().any(deep) {
            let shallow = states
                .iter()
                .filter(|s| !deep(s))
                .filter_map(|s| s.latency_us.get().copied())
                .max()
                .unwrap_or(0)
                .max(1);
            fixes.push(Fix::runtime(
                SettingId::ResumeLatency(cpu.cpu),
                shallow.to_string(),
            ));
        }
        let limit = cpu.resume_latency.get();
        let deep_states: Vec<&IdleState> = states
            .iter()
            .filter(|s| deep(s) && s.usable(limit))
            .collect();
        if deep_states.is_empty() {
            continue;
        }
        deep_cpus.insert(cpu.cpu);
        let names: Vec<String> = deep_states
            .iter()
            .map(|s| {
                format!(
                    "{} ({} µs)",
                    s.name.get().map_or("?", String::as_str),
                    s.latency_us.get().map_or("?".to_string(), u64::to_string)
                )
            })
            .collect();
        lines.push(format!("CPU {}: {}", cpu.cpu, names.join(", ")));
    }
    let evidence = "/sys/devices/system/cpu/cpu*/cpuidle/state*";
    if seen == 0 {
        if idle_off {
            return RuleOutcome::new(
                FindingStatus::Pass,
                "cpuidle off (idle=poll or cpuidle.off=1)",
                expected,
            )
            .evidence(super::CMDLINE);
        }
        let driver = power.cpuidle.get().and_then(|c| c.driver.get().cloned());
        return match driver.as_deref() {
            Some("none") => RuleOutcome::new(
                FindingStatus::Pass,
                "no cpuidle driver: idle CPUs only halt (C1)",
                expected,
            )
            .evidence("/sys/devices/system/cpu/cpuidle/current_driver"),
            _ => RuleOutcome::unknown("no cpuidle states readable for these CPUs", expected)
                .evidence(evidence)
                .bios("No C-states")
                .manual("check `cpupower idle-info`, and the BIOS C-state setting"),
        };
    }
    let observed = if deep_cpus.is_empty() {
        format!("only POLL/C1 usable on CPUs {}", cpus(&scope))
    } else {
        format!("deep C-states usable on CPUs {}", cpus(&deep_cpus))
    };
    let mut outcome =
        RuleOutcome::verdict(deep_cpus.is_empty(), observed, expected).evidence(evidence);
    if !deep_cpus.is_empty() {
        outcome = outcome
            .evidence("/sys/devices/system/cpu/cpu*/power/pm_qos_resume_latency_us")
            .bios("No C-states");
    }
    outcome.fixes = fixes;
    with_details(outcome, lines)
}

fn thp(ctx: &RuleContext, expect: &Expect) -> RuleOutcome {
    let want = expect.preferred();
    let expected = format!("transparent_hugepage {}", expect.describe(""));
    let path = "/sys/kernel/mm/transparent_hugepage/enabled";
    // The desired setting, whatever the machine holds now.
    let fixes = [
        Fix::runtime(SettingId::Thp("enabled"), want),
        Fix::cmdline("transparent_hugepage", want),
    ];
    let enabled = match part(
        &ctx.machine.kernel.thp.enabled,
        "THP setting unreadable",
        &expected,
    ) {
        Ok(choice) => choice,
        Err(unknown) => return unknown.evidence(path),
    };
    let ok = expect.allows(&enabled.current);
    RuleOutcome::verdict(
        ok,
        format!("transparent_hugepage {}", enabled.current),
        expected,
    )
    .evidence(path)
    .fix(fixes[0].clone())
    .fix(fixes[1].clone())
}

fn clocksource(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "current clocksource tsc";
    let source = match part(
        &ctx.machine.kernel.clocksource,
        "clocksource unreadable",
        expected,
    ) {
        Ok(source) => source,
        Err(unknown) => return unknown.evidence(CLOCKSOURCE),
    };
    let ok = source.current == "tsc";
    let observed = format!(
        "clocksource {} (available: {})",
        source.current,
        source.available.join(" ")
    );
    let mut outcome = RuleOutcome::verdict(ok, observed, expected).evidence(CLOCKSOURCE);
    // The desired clocksource wherever the kernel offers it, held or not.
    if source.available.iter().any(|s| s == "tsc") {
        return outcome
            .fix(Fix::runtime(SettingId::Clocksource, "tsc"))
            .fix(Fix::cmdline("clocksource", "tsc"));
    }
    if ok {
        return outcome;
    }
    if ctx.machine.hypervisor.is_some() {
        outcome = outcome.manual(
            "the guest has no usable TSC clocksource: give it a host-passthrough CPU with an invariant TSC and disable kvmclock in the domain XML (<clock><timer name='kvmclock' present='no'/></clock>)",
        );
    } else {
        outcome = outcome.manual("the kernel marked the TSC unstable (see `dmesg | grep -i tsc`); check LL-TSC-INVARIANT and the BIOS");
    }
    outcome
}

fn placement_from_host(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "each vCPU pinned to its own isolated host core, emulator on housekeeping, hugepage memory on the pinned node";
    const ON_THE_HOST: &str = "on the host: lowlat audit --profile realtime-host (it reads every domain in /etc/libvirt/qemu and /run/libvirt/qemu), or lowlat audit --profile realtime-host --domain FILE for this guest's domain XML";
    const PIN: &str = "on the host: pin each vCPU 1:1 to an isolated host core, never two vCPUs on the threads of one core (libvirt <cputune><vcpupin>, BC-Linux RT virtualization §bind physical CPUs; lowlat plan --profile realtime-host --vm NAME writes it)";
    if ctx.machine.hypervisor.is_none() {
        return RuleOutcome::skipped("bare metal: no vCPUs to place").evidence("/proc/cpuinfo");
    }
    let Some(probe) = ctx.vm_probe else {
        return RuleOutcome::unknown(
            "not visible from inside the guest without measuring (lowlat check probes it: vCPUs on one host core pass a cache line ten times faster)",
            expected,
        )
        .evidence("/proc/cpuinfo")
        .manual(ON_THE_HOST);
    };
    let evidence = "c2c probe: cache-line ping-pong between every pair of vCPUs";
    let readings: Vec<_> = probe.readings().collect();
    if readings.is_empty() {
        let why = probe.no_claim.as_deref().unwrap_or("no probe ran");
        return RuleOutcome::unknown(format!("c2c probe makes no claim: {why}"), expected)
            .evidence(evidence)
            .manual(ON_THE_HOST);
    }
    let mut details: Vec<String> = (readings.iter())
        .enumerate()
        .map(|(n, r)| format!("probe {}: {}", n + 1, r.describe()))
        .collect();
    if !probe.any_shared() && !probe.moved() {
        details.push(
            "the emulator thread and the memory placement only the host's audit tells".into(),
        );
        let mut outcome = RuleOutcome::new(
            FindingStatus::Pass,
            format!(
                "no two vCPUs share a host core ({} probe(s))",
                readings.len()
            ),
            expected,
        )
        .evidence(evidence)
        .manual(ON_THE_HOST);
        for line in details {
            outcome = outcome.detail(line);
        }
        return outcome;
    }
    let mut observed = Vec::new();
    if probe.any_shared() {
        let pairs: Vec<String> = (readings.iter())
            .filter(|r| !r.shared.is_empty())
            .map(|r| r.pair_list())
            .collect();
        observed.push(format!(
            "vCPUs {} share host cores (SMT-sibling latency, though the guest shows separate cores)",
            pairs.join("; then ")
        ));
    }
    if probe.moved() {
        observed.push("the probes disagree: the host does not pin the vCPUs".to_string());
    }
    let mut outcome = RuleOutcome::new(FindingStatus::Fail, observed.join("; "), expected)
        .evidence(evidence)
        .manual(PIN);
    for line in details {
        outcome = outcome.detail(line);
    }
    outcome
}

fn steal(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "no steal time on isolated vCPUs (< 0.1% of their time since boot)";
    if ctx.machine.hypervisor.is_none() {
        return RuleOutcome::skipped("bare metal: no steal time").evidence("/proc/cpuinfo");
    }
    if let Some(unknown) = without_partition(ctx, expected) {
        return unknown;
    }
    let stat = match part(
        &ctx.machine.kernel.cpu_times,
        "CPU times unreadable",
        expected,
    ) {
        Ok(stat) => stat,
        Err(unknown) => return unknown.evidence("/proc/stat"),
    };
    let mut lines = Vec::new();
    for (cpu, times) in stat
        .per_cpu
        .iter()
        .filter(|(cpu, _)| ctx.partition.isolated.contains(*cpu))
    {
        let total = times.user
            + times.nice
            + times.system
            + times.idle
            + times.iowait
            + times.irq
            + times.softirq
            + times.steal;
        if total == 0 {
            continue;
        }
        // 0.1% or more, compared exactly; shown to two decimals, which never reads below
        // the limit it failed.
        if times.steal.saturating_mul(1000) >= total {
            lines.push(format!(
                "CPU {cpu}: {} of {total} ticks since boot stolen ({:.2}%)",
                times.steal,
                times.steal as f64 * 100.0 / total as f64
            ));
        }
    }
    let observed = if lines.is_empty() {
        "no isolated vCPU lost 0.1% or more of its time since boot to steal".to_string()
    } else {
        format!(
            "{} isolated vCPU(s) lost 0.1% or more of their time since boot to the host",
            lines.len()
        )
    };
    let mut outcome =
        RuleOutcome::verdict(lines.is_empty(), observed, expected).evidence("/proc/stat");
    let unread: Vec<u32> = (ctx.partition.isolated.iter())
        .filter(|cpu| !stat.per_cpu.iter().any(|(seen, _)| seen == cpu))
        .collect();
    if !unread.is_empty() {
        outcome = outcome.lacking(format!(
            "the times of isolated vCPU(s) {} (no cpuN line in /proc/stat)",
            first_few(&unread)
        ));
    }
    if !lines.is_empty() {
        outcome = outcome.manual(
            "on the host, pin each vCPU thread to its own isolated host core (virsh vcpupin, or <cputune><vcpupin> in the domain XML) and the emulator threads to housekeeping cores (<emulatorpin>)",
        );
    }
    with_details(outcome, lines)
}

//! What the running kernel can do, judged by its build configuration and its boot log rather
//! than by what the command line asks for, and the known isolation regressions of kernel
//! versions ([`KNOWN_ISSUES`], each with its source).

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, Expect, Rule, RuleCheck, RuleContext, RuleOutcome};
use crate::machine::kernel::{Kernel, bootlog};
use crate::tuning::setting::Layer;

pub(crate) use crate::machine::capabilities::{ISOLCPUS, NOHZ_FULL, Needs, RCU_NOCBS};

/// A failure when the kernel cannot honour `needs.key` whatever the command line says: its
/// configuration lacks the option, or (without a readable configuration) its boot log says it
/// dropped the parameter or did not know it. `None` when it can, or when nothing tells.
pub(crate) fn not_built(ctx: &RuleContext, needs: &Needs, expected: &str) -> Option<RuleOutcome> {
    let kernel = &ctx.machine.kernel;
    let log = needs.dropped_by_log(kernel);
    let (evidence, mut outcome) = match kernel.config.get() {
        Some(config) => {
            if needs.missing_in(kernel) != Some(true) {
                return None;
            }
            let outcome = RuleOutcome::new(
                FindingStatus::Fail,
                format!(
                    "kernel built without {}: {}= is ignored",
                    needs.option, needs.key
                ),
                format!("{expected} on a kernel built with {}=y", needs.option),
            )
            .detail(format!("{}: {}", config.source, config.line(needs.option)));
            (config.source.clone(), outcome)
        }
        None => {
            let line = log?;
            let outcome = RuleOutcome::new(
                FindingStatus::Fail,
                format!("the kernel dropped {}= at boot", needs.key),
                format!("{expected} on a kernel built with {}=y", needs.option),
            );
            (bootlog::KMSG.to_string(), outcome.detail(line.clone()))
        }
    };
    if let Some(line) = needs
        .dropped_by_log(kernel)
        .filter(|_| evidence != bootlog::KMSG)
    {
        outcome = outcome
            .evidence(bootlog::KMSG)
            .detail(format!("boot log: {line}"));
    }
    let asked = kernel
        .cmdline
        .get()
        .and_then(|c| c.last(needs.key))
        .map(|p| format!("{}={}", p.key, p.value.clone().unwrap_or_default()));
    if let Some(asked) = asked {
        outcome = outcome.detail(format!("the command line asks for {asked}"));
    }
    Some(outcome.evidence(evidence).manual(format!(
        "boot a kernel built with {}=y (Fedora, RHEL, Debian, Arch, openSUSE and Ubuntu's \
             generic kernel from 24.04 ship it) or rebuild this one with it; no command line \
             can add it",
        needs.option
    )))
}

/// A known isolation problem of a range of kernel versions, with its source.
pub(crate) struct KnownIssue {
    /// The first version with the problem (major, minor).
    pub from: (u32, u32),
    /// The first version without it, when a fix is known (major, minor).
    pub until: Option<(u32, u32)>,
    /// Whether the problem bites this kernel as it was booted.
    pub applies: fn(&Kernel) -> bool,
    /// What goes wrong, one sentence.
    pub problem: &'static str,
    /// What to do about it.
    pub remedy: &'static str,
    /// Where it is reported, to cite.
    pub sources: &'static [&'static str],
}

/// Known isolation regressions by kernel version. Only problems with a source to cite.
pub(crate) const KNOWN_ISSUES: &[KnownIssue] = &[
    KnownIssue {
        from: (6, 12),
        until: None,
        applies: uses_nohz_full,
        problem: "the deadline server of fair tasks (fair_server, Linux 6.12) arms a timer on every \
                  online CPU, nohz_full ones included, which restarts the scheduler tick: isolated \
                  CPUs were measured taking about 1000 interrupts a second",
        remedy: "measure the isolated CPUs (`lowlat measure jitter`, or the osnoise tracer) and, \
                 where the tick is back, run a kernel that carries the fix reported with it",
        sources: &[
            "NVIDIA/NV-Kernels#400 (sched/deadline: skip DL server initialization on nohz_full CPUs)",
            "https://www.phoronix.com/news/Linux-6.12-Scheduler (SCHED_DEADLINE servers in 6.12)",
        ],
    },
    KnownIssue {
        from: (5, 4),
        until: None,
        applies: isolates_the_boot_cpu,
        problem: "an isolcpus= list that includes CPU 0 does not isolate it: when the parameter is \
                  read only the boot CPU is present, and the kernel keeps it for housekeeping; 4.19 \
                  isolated it",
        remedy: "keep CPU 0 for housekeeping and isolate other CPUs",
        sources: &["raspberrypi/linux#4106 (isolcpus=0 not working on 5.10.x and 5.4.x)"],
    },
];

fn uses_nohz_full(kernel: &Kernel) -> bool {
    kernel
        .isolation
        .nohz_full
        .get()
        .or(kernel
            .isolation
            .cmdline_nohz_full
            .as_ref()
            .and_then(|c| c.get()))
        .is_some_and(|set| !set.is_empty())
}

fn isolates_the_boot_cpu(kernel: &Kernel) -> bool {
    kernel
        .isolation
        .isolcpus
        .as_ref()
        .and_then(|i| i.get())
        .is_some_and(|i| i.cpus.contains(0))
}

/// The rules of this module.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-RT-BUDGET",
        title: "Tasks can get real-time scheduling: no cgroup without a real-time budget",
        layer: Layer::Runtime,
        severity: Severity::High,
        rationale: "On a kernel built with CONFIG_RT_GROUP_SCHED, every cgroup v1 cpu group but the root starts with cpu.rt_runtime_us = 0, and sched_setscheduler(SCHED_FIFO) fails with EPERM for any task in such a group, root's included: the usual reason a service or a container cannot get real-time priority while a shell can.",
        sources: &["Linux Documentation/scheduler/sched-rt-group.rst"],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["yes"]),
        check: RuleCheck::Fn(rt_budget),
    },
    Rule {
        id: "LL-KERNEL-KNOWN-ISSUES",
        title: "The running kernel has no known isolation regression that bites this setup",
        layer: Layer::Boot,
        severity: Severity::Medium,
        rationale: "Some kernel versions break CPU isolation in ways no setting shows: a timer that restarts the tick on nohz_full CPUs, a parameter dropped at boot. lowlat keeps a small table of such regressions, each with its source, and names the ones that apply to this kernel and this command line.",
        sources: &["NVIDIA/NV-Kernels#400", "raspberrypi/linux#4106"],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["none"]),
        check: RuleCheck::Fn(known_issues),
    },
];

fn rt_budget(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let expected = "every cgroup v1 cpu group with a real-time budget (cpu.rt_runtime_us > 0)";
    let groups = match &ctx.machine.kernel.rt_groups {
        crate::machine::Avail::Available(groups) => groups,
        crate::machine::Avail::Unavailable { unavailable } => {
            return RuleOutcome::new(
                FindingStatus::Pass,
                format!("no real-time budgets per group: {unavailable}"),
                expected,
            );
        }
    };
    let empty: Vec<&crate::machine::rt_permission::RtGroup> =
        groups.iter().filter(|g| g.rt_runtime_us == 0).collect();
    let mut outcome = RuleOutcome::verdict(
        empty.is_empty(),
        if empty.is_empty() {
            format!("{} cpu groups, each with a real-time budget", groups.len())
        } else {
            format!(
                "{} of {} cpu groups without a real-time budget: SCHED_FIFO is refused to their tasks",
                empty.len(),
                groups.len()
            )
        },
        expected,
    );
    for group in &empty {
        outcome = outcome
            .evidence(format!("{}/cpu.rt_runtime_us", group.dir))
            .detail(format!("{}/cpu.rt_runtime_us = 0", group.dir));
    }
    if let Some(first) = empty.first() {
        outcome = outcome.manual(format!(
            "give each group its tasks need a budget, parents first (the children's sum may not \
             exceed the parent's): `echo 950000 > {}/cpu.rt_runtime_us`; or run the real-time \
             tasks in the root group; or boot a kernel built without CONFIG_RT_GROUP_SCHED",
            first.dir
        ));
    }
    outcome
}

fn known_issues(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let kernel = &ctx.machine.kernel;
    let expected = "no known isolation regression of this kernel version in use";
    let release = kernel.release.get().map_or("", String::as_str);
    let Some(version) = kernel.version() else {
        return RuleOutcome::unknown(
            format!("kernel release not readable or not a version: '{release}'"),
            expected,
        )
        .evidence("/proc/sys/kernel/osrelease");
    };
    let hits: Vec<&KnownIssue> = KNOWN_ISSUES
        .iter()
        .filter(|issue| version >= issue.from && issue.until.is_none_or(|until| version < until))
        .filter(|issue| (issue.applies)(kernel))
        .collect();
    let mut outcome = RuleOutcome::new(
        if hits.is_empty() {
            FindingStatus::Pass
        } else {
            FindingStatus::Fail
        },
        if hits.is_empty() {
            format!(
                "kernel {release}: none of the {} known issues applies",
                KNOWN_ISSUES.len()
            )
        } else {
            format!(
                "kernel {release}: {} known isolation issue(s) apply",
                hits.len()
            )
        },
        expected,
    )
    .evidence("/proc/sys/kernel/osrelease")
    .evidence("/proc/cmdline");
    let mut remedies = Vec::new();
    for issue in hits {
        outcome = outcome.detail(format!("{} [{}]", issue.problem, issue.sources.join("; ")));
        remedies.push(issue.remedy);
    }
    if !remedies.is_empty() {
        outcome = outcome.manual(remedies.join("; "));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_issue_cites_a_source_and_a_sane_range() {
        for issue in KNOWN_ISSUES {
            assert!(!issue.sources.is_empty(), "{}", issue.problem);
            if let Some(until) = issue.until {
                assert!(until > issue.from, "{}", issue.problem);
            }
        }
    }
}

//! The `freebsd-router` profile: rules on a FreeBSD machine read from its capture
//! ([`FreeBsdMachine`]), for a router that forwards on NIC queues (`[S004]`). Its rules are
//! kept here as data, apart from the Linux profile table, since they read another model;
//! each yields a [`Finding`] like the Linux rules, with the same printers.

use std::collections::BTreeMap;

use crate::audit::finding::{Finding, FindingStatus, Remediation, Severity};
use crate::machine::cpulist::CpuSet;
use crate::machine::freebsd::{FreeBsdMachine, capture};
use crate::tuning::profile_name::ProfileName;
use crate::tuning::setting::Layer;

/// Kernel threads the profile pins, by name: `[S004]`'s dummynet thread, which the scheduler
/// moved between CPUs at 86 % of a core until it was pinned (then near 0 %).
pub(crate) const PINNED_THREADS: &[&str] = &["dummynet"];

/// The profile's name.
pub(crate) const PROFILE: ProfileName = ProfileName::FreebsdRouter;

/// What the profile is for, in one line.
pub(crate) const SUMMARY: &str =
    "a FreeBSD router: NIC queues spread over cores, busy kernel threads pinned, direct dispatch";

/// One rule of the profile.
pub(crate) struct BsdRule {
    /// Stable id.
    pub id: &'static str,
    /// One line saying what it checks.
    pub title: &'static str,
    /// Where the fix lives.
    pub layer: Layer,
    /// How much a failure costs.
    pub severity: Severity,
    /// Where the recommendation comes from.
    pub sources: &'static [&'static str],
    /// The check.
    pub check: fn(&FreeBsdMachine) -> BsdOutcome,
}

/// What a check found.
pub(crate) struct BsdOutcome {
    /// The verdict.
    pub status: FindingStatus,
    /// What was seen.
    pub observed: String,
    /// What the profile expects.
    pub expected: String,
    /// The capture files the observation comes from.
    pub evidence: Vec<String>,
    /// One line per item seen.
    pub details: Vec<String>,
    /// How to fix it.
    pub fix: Option<String>,
}

/// The rules of `freebsd-router`, in report order.
pub(crate) const RULES: &[BsdRule] = &[
    BsdRule {
        id: "LL-BSD-NIC-QUEUES-SPREAD",
        title: "NIC queue interrupts are spread over the cores, each NIC's queue 0 on its own core",
        layer: Layer::Runtime,
        severity: Severity::High,
        sources: &[
            "[S004]",
            "igb(4): queue interrupts bound to CPU = queue number",
            "cpuset(1) -x",
        ],
        check: queues_spread,
    },
    BsdRule {
        id: "LL-BSD-NIC-QUEUE-NUMA",
        title: "NIC queue interrupts run on CPUs of their NIC's NUMA domain",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        sources: &["numa(4)", "dev.NIC.N.%domain"],
        check: queues_local,
    },
    BsdRule {
        id: "LL-BSD-KTHREAD-PINNED",
        title: "Busy kernel threads the profile names (dummynet) are pinned to one CPU",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        sources: &["[S004]: dummynet at 86 % of a core, near 0 % once pinned to CPU 0"],
        check: threads_pinned,
    },
    BsdRule {
        id: "LL-BSD-SMT",
        title: "Hyperthreading: queues beyond the physical cores share a core",
        layer: Layer::Firmware,
        severity: Severity::Low,
        sources: &[
            "kern.sched.topology_spec THREAD/SMT groups",
            "loader(8): machdep.hyperthreading_allowed",
        ],
        check: smt,
    },
    BsdRule {
        id: "LL-BSD-NETISR-DISPATCH",
        title: "Packets are processed directly in their queue's interrupt thread (netisr direct dispatch)",
        layer: Layer::Sysctl,
        severity: Severity::Medium,
        sources: &[
            "[S004]: direct processing without the netisr queue",
            "netisr(9)",
        ],
        check: netisr_dispatch,
    },
];

/// Audits `machine` against `freebsd-router`.
pub(crate) fn audit(machine: &FreeBsdMachine) -> Vec<Finding> {
    let mut findings = RULES
        .iter()
        .map(|rule| {
            let outcome = (rule.check)(machine);
            let needs_fix = matches!(outcome.status, FindingStatus::Fail | FindingStatus::Warn);
            Finding {
                rule: rule.id.to_string(),
                title: rule.title.to_string(),
                layer: rule.layer,
                severity: rule.severity,
                status: outcome.status,
                observed: outcome.observed,
                expected: outcome.expected,
                evidence: outcome.evidence,
                details: outcome.details,
                missing: Vec::new(),
                reboot: rule.layer == Layer::Firmware,
                security_tradeoff: None,
                sources: rule.sources.iter().map(|s| s.to_string()).collect(),
                remediation: Remediation {
                    manual: outcome.fix.filter(|_| needs_fix),
                    ..Remediation::default()
                },
                waiver: None,
            }
        })
        .collect::<Vec<_>>();
    // Stable: rule order within a layer, as the Linux audit.
    findings.sort_by_key(|f| f.layer);
    findings
}

/// The plan's script, named in fixes.
const PLAN_FIX: &str = "`lowlat --snapshot CAPTURE plan --out DIR` writes rc.d/lowlat_cpuset, which binds them (service lowlat_cpuset start)";

fn queues_spread(m: &FreeBsdMachine) -> BsdOutcome {
    let queues: Vec<_> = m.interrupts.iter().filter(|i| i.queue.is_some()).collect();
    let mut evidence = vec![capture::VMSTAT.to_string()];
    if queues.is_empty() {
        return BsdOutcome {
            status: FindingStatus::Skipped,
            observed: "no NIC queue interrupts in vmstat -ai".into(),
            expected: "NIC queues spread over the cores".into(),
            evidence,
            details: Vec::new(),
            fix: None,
        };
    }
    evidence.push("/freebsd/cpuset/irq/".into());
    let mut per_cpu: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut unbound = Vec::new();
    let mut unknown = Vec::new();
    let mut queue0_cpu: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for interrupt in &queues {
        let q = interrupt.queue.as_ref().expect("filtered");
        match &interrupt.cpus {
            Some(cpus) if cpus.len() == 1 => {
                let cpu = cpus.first().expect("one CPU");
                per_cpu.entry(cpu).or_default().push(interrupt.name.clone());
                let nics = queue0_cpu.entry(cpu).or_default();
                // A NIC's receive and transmit vectors of queue 0 (em's `rx 0`, `tx 0`) are one.
                if q.queue == 0 && !nics.contains(&q.nic) {
                    nics.push(q.nic.clone());
                }
            }
            Some(_) => unbound.push(interrupt.name.clone()),
            None => unknown.push(interrupt.name.clone()),
        }
    }
    let cores = m.topology.cores.len().max(1);
    let nics = m.nics.len();
    let ideal = queues.len().div_ceil(m.topology.cpus.len().max(1));
    let busiest = per_cpu.iter().max_by_key(|(_, names)| names.len());
    let shared_queue0: Vec<_> = queue0_cpu
        .iter()
        .filter(|(_, nics)| nics.len() > 1)
        .collect();
    let mut details: Vec<String> = per_cpu
        .iter()
        .map(|(cpu, names)| format!("CPU {cpu}: {} queue(s): {}", names.len(), names.join(", ")))
        .collect();
    if !unbound.is_empty() {
        details.push(format!(
            "not bound (the kernel places them): {}",
            unbound.join(", ")
        ));
    }
    let expected = format!(
        "at most {ideal} queue(s) per CPU; queue 0 of each of the {nics} NIC(s) on its own core"
    );
    let fix = Some(format!("bind each queue to its own CPU: {PLAN_FIX}"));
    let (status, observed) = if !shared_queue0.is_empty() && nics <= cores {
        let (cpu, names) = shared_queue0[0];
        (
            FindingStatus::Fail,
            format!(
                "queue 0 of {} on CPU {cpu} (the igb pattern: queue N of every NIC on CPU N)",
                names.join(", ")
            ),
        )
    } else if let Some((cpu, names)) = busiest.filter(|(_, names)| names.len() > ideal) {
        (
            FindingStatus::Fail,
            format!(
                "CPU {cpu} serves {} NIC queues, more than {ideal}",
                names.len()
            ),
        )
    } else if !unknown.is_empty() {
        (
            FindingStatus::Unknown,
            format!(
                "{} queue interrupt(s) without a captured cpuset",
                unknown.len()
            ),
        )
    } else if !unbound.is_empty() {
        (
            FindingStatus::Warn,
            format!("{} queue interrupt(s) not bound to a CPU", unbound.len()),
        )
    } else {
        (
            FindingStatus::Pass,
            format!(
                "{} queues over {} CPUs, queue 0s on different cores",
                queues.len(),
                per_cpu.len()
            ),
        )
    };
    BsdOutcome {
        status,
        observed,
        expected,
        evidence,
        details,
        fix,
    }
}

fn queues_local(m: &FreeBsdMachine) -> BsdOutcome {
    let evidence = vec![
        capture::VMSTAT.to_string(),
        capture::sysctl("dev.NIC.N.%domain"),
    ];
    let expected = "each queue on a CPU of its NIC's NUMA domain".to_string();
    let outcome = |status, observed: String, details| BsdOutcome {
        status,
        observed,
        expected: expected.clone(),
        evidence: evidence.clone(),
        details,
        fix: Some(format!(
            "bind the queues to their domain's CPUs: {PLAN_FIX}"
        )),
    };
    if m.topology.domains.len() < 2 {
        return outcome(FindingStatus::Pass, "one NUMA domain".into(), Vec::new());
    }
    let mut remote = Vec::new();
    let mut unknown = Vec::new();
    for nic in &m.nics {
        let Some(domain) = nic.domain else {
            unknown.push(nic.name.clone());
            continue;
        };
        let Some(local) = m.topology.domains.get(domain as usize) else {
            unknown.push(nic.name.clone());
            continue;
        };
        for irq in &nic.queue_irqs {
            if let Some(interrupt) = m.interrupt(*irq)
                && let Some(cpus) = &interrupt.cpus
                && !cpus.is_subset(local)
            {
                remote.push(format!(
                    "{} (domain {domain}, CPUs {}) may run on CPUs {}",
                    interrupt.name,
                    local.to_list(),
                    cpus.to_list()
                ));
            }
        }
    }
    if !remote.is_empty() {
        outcome(
            FindingStatus::Fail,
            format!("{} queue(s) off their NIC's domain", remote.len()),
            remote,
        )
    } else if !unknown.is_empty() {
        outcome(
            FindingStatus::Unknown,
            format!("no NUMA domain captured for {}", unknown.join(", ")),
            Vec::new(),
        )
    } else {
        outcome(
            FindingStatus::Pass,
            "every queue on its NIC's domain".into(),
            Vec::new(),
        )
    }
}

fn threads_pinned(m: &FreeBsdMachine) -> BsdOutcome {
    let evidence = vec![capture::PROCSTAT.to_string(), "/freebsd/cpuset/tid/".into()];
    let expected = format!("{} pinned to one CPU", PINNED_THREADS.join(", "));
    let named: Vec<_> = m
        .kernel_threads
        .iter()
        .filter(|t| PINNED_THREADS.contains(&t.name()))
        .collect();
    let (status, observed, details) = if m.kernel_threads.is_empty() {
        (
            FindingStatus::Unknown,
            "no kernel threads captured (procstat -at)".to_string(),
            Vec::new(),
        )
    } else if named.is_empty() {
        (
            FindingStatus::Skipped,
            format!("no {} thread (not loaded)", PINNED_THREADS.join(", ")),
            Vec::new(),
        )
    } else {
        let loose: Vec<String> = named
            .iter()
            .filter(|t| t.cpus.as_ref().is_none_or(|c| c.len() != 1))
            .map(|t| {
                format!(
                    "{} (tid {}) may run on CPUs {}",
                    t.name(),
                    t.tid,
                    t.cpus.as_ref().map_or("?".into(), CpuSet::to_list)
                )
            })
            .collect();
        if loose.is_empty() {
            (FindingStatus::Pass, "pinned".to_string(), Vec::new())
        } else {
            (
                FindingStatus::Fail,
                format!("{} thread(s) not pinned", loose.len()),
                loose,
            )
        }
    };
    BsdOutcome {
        status,
        observed,
        expected,
        evidence,
        details,
        fix: Some(format!(
            "cpuset -l 0 -t TID (procstat -at gives the TID); {PLAN_FIX}"
        )),
    }
}

fn smt(m: &FreeBsdMachine) -> BsdOutcome {
    let threads = m.topology.cores.iter().map(CpuSet::len).max().unwrap_or(1);
    let (status, observed) = if m.topology.smt() {
        (
            FindingStatus::Warn,
            format!(
                "{threads} threads per core on {} cores",
                m.topology.cores.len()
            ),
        )
    } else {
        (
            FindingStatus::Pass,
            format!("one thread per core ({} cores)", m.topology.cores.len()),
        )
    };
    BsdOutcome {
        status,
        observed,
        expected: "one thread per core, or no more queues than cores".into(),
        evidence: vec![capture::sysctl("kern.sched.topology_spec")],
        details: Vec::new(),
        fix: Some(
            "machdep.hyperthreading_allowed=\"0\" in /boot/loader.conf, or hyperthreading off in \
             the BIOS; the plan puts queues on SMT siblings only when the physical cores are used"
                .into(),
        ),
    }
}

fn netisr_dispatch(m: &FreeBsdMachine) -> BsdOutcome {
    let dispatch = m.sysctl("net.isr.dispatch");
    let direct = m.sysctl("net.isr.direct");
    let (status, observed, evidence, fix) = match (dispatch, direct) {
        (Some("direct"), _) => (
            FindingStatus::Pass,
            "net.isr.dispatch=direct".to_string(),
            "net.isr.dispatch",
            None,
        ),
        (Some(other), _) => (
            FindingStatus::Fail,
            format!("net.isr.dispatch={other}"),
            "net.isr.dispatch",
            Some("sysctl net.isr.dispatch=direct, and the line in /etc/sysctl.conf".to_string()),
        ),
        (None, Some("1")) => (
            FindingStatus::Pass,
            "net.isr.direct=1 (8.x)".to_string(),
            "net.isr.direct",
            None,
        ),
        (None, Some(other)) => (
            FindingStatus::Fail,
            format!("net.isr.direct={other} (8.x)"),
            "net.isr.direct",
            Some("sysctl net.isr.direct=1, and the line in /etc/sysctl.conf".to_string()),
        ),
        (None, None) => (
            FindingStatus::Unknown,
            "neither net.isr.dispatch nor net.isr.direct captured".to_string(),
            "net.isr.dispatch",
            None,
        ),
    };
    BsdOutcome {
        status,
        observed,
        expected: "direct".into(),
        evidence: vec![capture::sysctl(evidence)],
        details: Vec::new(),
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::freebsd::test_capture::machine;

    fn status(findings: &[Finding], rule: &str) -> FindingStatus {
        findings.iter().find(|f| f.rule == rule).unwrap().status
    }

    #[test]
    fn queues_off_their_domain_fail_smt_warns_and_deferred_dispatch_fails() {
        // Every queue is bound to CPU 0, in domain 0: ix1's (domain 1) are remote.
        let (_dir, m) = machine(2, 2, 2, &[("ix0", 0, 2), ("ix1", 1, 3)]);
        assert_eq!(
            m.nics[1].iflib_queues,
            Some(crate::machine::freebsd::IflibQueues { rx: 3, tx: 3 })
        );
        let findings = audit(&m);
        assert_eq!(
            status(&findings, "LL-BSD-NIC-QUEUE-NUMA"),
            FindingStatus::Fail
        );
        let numa = findings
            .iter()
            .find(|f| f.rule == "LL-BSD-NIC-QUEUE-NUMA")
            .unwrap();
        assert_eq!(numa.details.len(), 3, "{:?}", numa.details);
        assert_eq!(status(&findings, "LL-BSD-SMT"), FindingStatus::Warn);
        assert_eq!(
            status(&findings, "LL-BSD-NETISR-DISPATCH"),
            FindingStatus::Fail
        );
        assert_eq!(
            status(&findings, "LL-BSD-NIC-QUEUES-SPREAD"),
            FindingStatus::Fail
        );
        assert_eq!(
            status(&findings, "LL-BSD-KTHREAD-PINNED"),
            FindingStatus::Unknown,
            "no procstat"
        );
        let layers: Vec<Layer> = findings.iter().map(|f| f.layer).collect();
        assert!(layers.is_sorted(), "{layers:?}");
    }

    #[test]
    fn spread_queues_pass() {
        let (dir, _) = machine(1, 4, 1, &[("igb0", 0, 4)]);
        for q in 0..4u32 {
            std::fs::write(
                dir.path().join(format!("freebsd/cpuset/irq/{}", 256 + q)),
                format!("irq {} mask: {q}\n", 256 + q),
            )
            .unwrap();
        }
        let m = FreeBsdMachine::read(&crate::sysroot::SysRoot::dir(dir.path())).unwrap();
        assert_eq!(
            status(&audit(&m), "LL-BSD-NIC-QUEUES-SPREAD"),
            FindingStatus::Pass
        );
    }
}

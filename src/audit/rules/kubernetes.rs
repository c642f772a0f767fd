//! The kubelet rule: the CPUs the kubelet reserves for the system and hands to Guaranteed pods
//! must be the kernel's partition, or the isolation bought on the command line is given away
//! (pods on housekeeping CPUs, the system on isolated ones).

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, Check, Expect, Rule, RuleContext, RuleOutcome};
use crate::audit::rules::{cpus, without_partition};
use crate::machine::Avail;
use crate::machine::kubelet::LIVE_PATH;
use crate::tuning::setting::Layer;

/// The Kubernetes rules.
pub(crate) const RULES: &[Rule] = &[Rule {
    id: "LL-KUBELET-CPUS",
    title: "The kubelet's CPU manager reserves the housekeeping CPUs and hands out the isolated ones",
    layer: Layer::Service,
    severity: Severity::High,
    rationale: "With the static CPU manager the kubelet gives Guaranteed pods exclusive CPUs from every CPU but reservedSystemCPUs, and runs everything else on the reserved ones plus the unassigned rest. reservedSystemCPUs other than the housekeeping CPUs hands housekeeping CPUs, where IRQs and kernel threads run, to latency-critical pods, and puts system daemons on nohz_full CPUs; without the static policy pods run on every CPU.",
    sources: &[
        "Kubernetes: Control CPU Management Policies on the Node (static policy, reservedSystemCPUs)",
        "kubernetes/kubernetes#87862",
        "OpenShift PerformanceProfile (cpu.reserved, cpu.isolated)",
    ],
    reboot: false,
    security_tradeoff: None,
    bios: &[],
    accepts: Accepts::Words(&["hk"]),
    check: Check::Fn(kubelet_cpus),
}];

fn kubelet_cpus(ctx: &RuleContext, _: &Expect) -> RuleOutcome {
    let hk = &ctx.partition.housekeeping;
    let iso = &ctx.partition.isolated;
    let expected = format!("cpuManagerPolicy static, reservedSystemCPUs {}", cpus(hk));
    let config = match &ctx.machine.kubelet {
        None => {
            return RuleOutcome::skipped(format!(
                "no kubelet configuration ({LIVE_PATH} does not exist; audit one with --kubelet-config FILE)"
            ));
        }
        Some(Avail::Unavailable { unavailable }) => {
            return RuleOutcome::unknown(
                format!("kubelet configuration not read: {unavailable}"),
                expected,
            )
            .evidence(LIVE_PATH);
        }
        Some(Avail::Available(config)) => config,
    };
    if let Some(unknown) = without_partition(ctx, &expected) {
        return unknown.evidence(config.path.clone());
    }
    let reserved = config.reserved_system_cpus.as_ref();
    let observed = format!(
        "cpuManagerPolicy {}, reservedSystemCPUs {}",
        config.cpu_manager_policy,
        reserved.map_or("unset".to_string(), cpus)
    );
    let mut problems = Vec::new();
    if config.cpu_manager_policy != "static" {
        problems.push(format!(
            "cpuManagerPolicy {}: no pod gets exclusive CPUs, every pod may run on the isolated CPUs {}",
            config.cpu_manager_policy,
            cpus(iso)
        ));
    }
    match reserved {
        None => problems.push(format!(
            "no reservedSystemCPUs: the kubelet reserves CPUs of its own choosing (kubeReserved + systemReserved CPUs, the lowest-numbered cores first), not the housekeeping CPUs {}",
            cpus(hk)
        )),
        Some(reserved) if reserved != hk => {
            let on_isolated = reserved.intersection(iso);
            if !on_isolated.is_empty() {
                problems.push(format!(
                    "reserved CPUs {} are isolated by the kernel: system daemons and shared pods run there, on nohz_full CPUs",
                    cpus(&on_isolated)
                ));
            }
            let handed_out = hk.difference(reserved);
            if !handed_out.is_empty() {
                problems.push(format!(
                    "housekeeping CPUs {} are not reserved: the CPU manager may give them to Guaranteed pods, which then share them with IRQs and kernel threads",
                    cpus(&handed_out)
                ));
            }
        }
        Some(_) => {}
    }
    let mut outcome = if problems.is_empty() {
        RuleOutcome::new(FindingStatus::Pass, observed, expected)
    } else {
        RuleOutcome::new(FindingStatus::Fail, observed, expected).manual(format!(
            "In {}, set cpuManagerPolicy: static and reservedSystemCPUs: \"{}\" (`lowlat plan --out DIR` writes DIR/kubernetes/kubelet-config.yaml), drain the node, remove /var/lib/kubelet/cpu_manager_state and restart the kubelet.",
            config.path,
            cpus(hk)
        ))
    };
    for problem in problems {
        outcome = outcome.detail(problem);
    }
    outcome.evidence(config.path.clone())
}

//! Rules on the KVM host's own knobs that TuneD realtime-virtual-host sets (\[S002\]): the KVM
//! module parameters that add guest jitter, and KSM. Read from `/sys/module/*/parameters`
//! and `/sys/kernel/mm/ksm/run`; the fix is a modprobe option (the modules read them at
//! load) or a sysfs write, given as a manual step.

use crate::audit::finding::{FindingStatus, Severity};
use crate::audit::rule::{Accepts, Check, Expect, Rule, RuleContext, RuleOutcome};
use crate::machine::virt::KSM_RUN;
use crate::tuning::setting::Layer;

const TUNED_RTVH: &str = "V-TUNED-RTVH";

/// The KVM host rules.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "LL-KVM-PARAMETERS",
        title: "KVM does not resync kvmclock periodically nor exit on guest PAUSE loops",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "kvm.kvmclock_periodic_sync=1 makes KVM update every guest's kvmclock every 300 s, an interruption of each vCPU; pause-loop exiting (kvm_intel.ple_gap, kvm_amd.pause_filter_count) turns a guest's spin-wait into a VM exit and a yield, which a pinned vCPU on its own core never needs. Set kvm.kvmclock_periodic_sync=0 and kvm_intel.ple_gap=0 (kvm_amd.pause_filter_count=0) in /etc/modprobe.d and reload the modules.",
        sources: &["S002", TUNED_RTVH],
        reboot: true,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["off"]),
        check: Check::Fn(kvm_parameters),
    },
    Rule {
        id: "LL-KVM-NX-HUGE-PAGES",
        title: "KVM maps guest memory with huge pages (nx_huge_pages off)",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "With kvm.nx_huge_pages on, KVM splits executable guest huge pages into 4 KiB pages and a recovery thread periodically rebuilds them: TLB misses and host work that land on the vCPUs. Turning it off disables the iTLB-multihit mitigation, so a malicious guest could crash the host on affected CPUs; do it only for trusted guests.",
        sources: &["S002", TUNED_RTVH],
        reboot: true,
        security_tradeoff: Some(
            "disables the iTLB multihit (CVE-2018-12207) mitigation: a guest could hang an affected host",
        ),
        bios: &[],
        accepts: Accepts::Words(&["off"]),
        check: Check::Fn(nx_huge_pages),
    },
    Rule {
        id: "LL-KSM",
        title: "KSM does not merge pages",
        layer: Layer::Runtime,
        severity: Severity::Medium,
        rationale: "Kernel same-page merging scans guest memory in ksmd and makes merged pages copy-on-write: the scan takes CPU and cache, and the first write to a merged page faults in the guest's time. TuneD realtime-virtual-host writes 2 to /sys/kernel/mm/ksm/run (stop and unmerge); stop ksmtuned too, which restarts it.",
        sources: &["S002", TUNED_RTVH],
        reboot: false,
        security_tradeoff: None,
        bios: &[],
        accepts: Accepts::Words(&["off"]),
        check: Check::Fn(ksm),
    },
];

/// Checks that the KVM parameters `keys` (`module.parameter`) read as off (`N`, `0`), leaving
/// out those of a module that is not loaded; skipped when none is.
fn off_parameters(ctx: &RuleContext, keys: &[&str], expected: &str, manual: &str) -> RuleOutcome {
    let kvm = &ctx.machine.virt.kvm;
    let seen: Vec<(&str, &String)> = keys
        .iter()
        .filter_map(|key| kvm.get(*key).map(|value| (*key, value)))
        .collect();
    if seen.is_empty() {
        return RuleOutcome::skipped("KVM is not loaded (no /sys/module/kvm*/parameters)");
    }
    let on: Vec<String> = seen
        .iter()
        .filter(|(_, value)| !matches!(value.as_str(), "N" | "0" | "off"))
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let observed: Vec<String> = seen.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut outcome = RuleOutcome::verdict(on.is_empty(), observed.join(" "), expected);
    for (key, _) in &seen {
        let (module, parameter) = key.split_once('.').unwrap_or_default();
        outcome = outcome.evidence(format!("/sys/module/{module}/parameters/{parameter}"));
    }
    if !on.is_empty() {
        outcome = outcome.manual(format!("{manual} (now {})", on.join(" ")));
    }
    outcome
}

fn kvm_parameters(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    off_parameters(
        ctx,
        &[
            "kvm.kvmclock_periodic_sync",
            "kvm_intel.ple_gap",
            "kvm_amd.pause_filter_count",
        ],
        "kvmclock_periodic_sync, ple_gap / pause_filter_count 0",
        "add `options kvm kvmclock_periodic_sync=0` and `options kvm_intel ple_gap=0` (AMD: `options kvm_amd pause_filter_count=0`) to /etc/modprobe.d/kvm-realtime.conf, then reload the modules with no guest running or reboot",
    )
}

fn nx_huge_pages(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    off_parameters(
        ctx,
        &["kvm.nx_huge_pages"],
        "nx_huge_pages off",
        "add `options kvm nx_huge_pages=off` to /etc/modprobe.d/kvm-realtime.conf (trusted guests only: it drops the iTLB multihit mitigation), then reload kvm or reboot",
    )
}

fn ksm(ctx: &RuleContext, _expect: &Expect) -> RuleOutcome {
    match ctx.machine.virt.ksm_run {
        None => RuleOutcome::skipped(format!("no KSM ({KSM_RUN} does not exist)")),
        Some(run) => {
            let outcome = RuleOutcome::verdict(run != 1, format!("ksm run={run}"), "run=0 or 2")
                .evidence(KSM_RUN);
            match outcome.status {
                FindingStatus::Fail => outcome.manual(format!(
                    "echo 2 > {KSM_RUN} (stop and unmerge); systemctl disable --now ksm ksmtuned"
                )),
                _ => outcome,
            }
        }
    }
}

//! The effects of the change: which quantities of the environment the settings diff is
//! expected to move. Isolation (cpusets, IRQ and kernel-thread affinities, the workqueue and
//! watchdog masks, `isolcpus=`, irqbalance) moves other tasks' share of the measured CPUs;
//! power settings (C-states, frequency, the idle driver and PM QoS) move the frequency
//! (APERF/MPERF, `scaling_cur_freq`). A covariate that differs between the arms and that a
//! setting of the diff moves is the way the change worked, not a confounder: the verdict it
//! explains is "better, through" those settings. Steal, thermal throttling, SMIs and the load
//! average are the host's, whatever the settings: they stay confounders, as does another task
//! that appeared where no setting of the diff moves other tasks.

use serde::{Deserialize, Serialize};

use super::environment::Covariate;
use super::settings::KeyValues;

/// A covariate that differed between the arms, moved by settings of the diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    /// The quantity that moved: the way the change worked.
    pub covariate: Covariate,
    /// The settings of the diff that move it (setting ids, as in `settings.between`).
    pub settings: Vec<String>,
}

/// Setting ids (or their prefixes, ending in `:` or `.`) that isolate CPUs from other work.
const ISOLATION: &[&str] = &[
    "cpuset:",
    "irq:",
    "kthread:",
    "workqueue:",
    "kernel.isolated",
    "cmdline:isolcpus",
    "cmdline:irqaffinity",
    "sysctl:kernel.watchdog_cpumask",
    "service:irqbalance",
];

/// Setting ids (or prefixes) of C-states and frequency.
const POWER: &[&str] = &[
    "cpuidle.",
    "cpufreq:",
    "cpufreq.",
    "pm_qos.",
    "cmdline:idle",
    "cmdline:intel_idle.",
    "cmdline:processor.",
    "cmdline:intel_pstate",
    "cmdline:amd_pstate",
    "cmdline:cpuidle_haltpoll.",
    "cmdline:haltpoll.",
    "cmdline:cpufreq.",
];

/// Whether a change of setting `key` is expected to move `covariate`.
pub fn moves(key: &str, covariate: Covariate) -> bool {
    let ids: &[&str] = match covariate {
        Covariate::OtherTasks => ISOLATION,
        Covariate::AperfMperf | Covariate::CurFreq => POWER,
        Covariate::Steal | Covariate::Throttling | Covariate::Smis | Covariate::LoadAverage => &[],
    };
    ids.iter().any(|id| {
        if id.ends_with([':', '.']) {
            key.starts_with(id)
        } else {
            // A whole id: itself, or a command-line key whose value follows (`cmdline:idle`
            // is not `cmdline:idle_foo`).
            key == *id
        }
    })
}

/// The settings of `between` (the diff between the arms) that move `covariate`, by key.
pub fn moved_by(between: &[KeyValues], covariate: Covariate) -> Vec<String> {
    between
        .iter()
        .filter(|k| moves(&k.key, covariate))
        .map(|k| k.key.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_moves_other_tasks_and_power_the_frequency_and_nothing_the_host() {
        for key in [
            "cpuset:/lowlat-isolated:cpus",
            "cpuset:/:sched_load_balance",
            "irq:45:affinity",
            "workqueue:cpumask",
            "kthread:kswapd0:affinity",
            "cmdline:isolcpus",
            "sysctl:kernel.watchdog_cpumask",
        ] {
            assert!(moves(key, Covariate::OtherTasks), "{key}");
            assert!(!moves(key, Covariate::AperfMperf), "{key}");
        }
        for key in [
            "cpuidle.C6.enabled_on",
            "cpufreq:governor",
            "cmdline:intel_idle.max_cstate",
            "cmdline:idle",
            "pm_qos.resume_latency_limited_on",
        ] {
            assert!(moves(key, Covariate::AperfMperf), "{key}");
            assert!(moves(key, Covariate::CurFreq), "{key}");
            assert!(!moves(key, Covariate::OtherTasks), "{key}");
        }
        for key in ["sysctl:vm.swappiness", "cmdline:idlefoo", "thp:enabled"] {
            assert!(
                Covariate::ALL.iter().all(|&c| !moves(key, c)),
                "{key} moves something"
            );
        }
        for covariate in [
            Covariate::Steal,
            Covariate::Throttling,
            Covariate::Smis,
            Covariate::LoadAverage,
        ] {
            assert!(!moves("cpuset:/lowlat-isolated:cpus", covariate));
            assert!(!moves("cpufreq:governor", covariate));
        }
    }
}

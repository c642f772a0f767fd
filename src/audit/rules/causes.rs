//! Each cause `--explain` names, tied to the audit rule that finds it and the plan setting that
//! removes it: data, beside the rules. A class (the names of `measure::trace::explain::Class`
//! in JSON) with an optional source (a kworker's work function) picks the row; the most
//! specific row wins. `{irq}` and `{comm}` in a setting are filled from the cause.

/// How one cause is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CauseFix {
    /// The cause's class, as serialized (`tick`, `device_irq`, ...).
    pub class: &'static str,
    /// The source the row is for (a work function); `None`: any.
    pub source: Option<&'static str>,
    /// The audit rule that finds it.
    pub rule: &'static str,
    /// The plan setting that removes it (`{irq}`, `{comm}` filled in), when one does.
    pub setting: Option<&'static str>,
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
        source: None,
        rule: "LL-IRQ-ON-ISOLATED",
        setting: None,
        advice: "a softirq raised on this CPU: move the IRQs and tasks that raise it",
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

/// The fix of a cause of `class` from `source`, the most specific row first.
pub(crate) fn fix_for(class: &str, source: &str) -> Option<&'static CauseFix> {
    CAUSE_FIXES
        .iter()
        .find(|f| f.class == class && f.source == Some(source))
        .or_else(|| {
            CAUSE_FIXES
                .iter()
                .find(|f| f.class == class && f.source.is_none())
        })
}

/// The setting of `fix` for one cause: `{irq}` and `{comm}` filled in.
pub(crate) fn setting_for(fix: &CauseFix, irq: Option<u32>, comm: Option<&str>) -> Option<String> {
    let template = fix.setting?;
    if template.contains("{irq}") {
        return irq.map(|n| template.replace("{irq}", &n.to_string()));
    }
    if template.contains("{comm}") {
        return comm.map(|c| template.replace("{comm}", c));
    }
    Some(template.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::setting_id::SettingId;

    #[test]
    fn every_rule_named_exists_and_every_setting_parses() {
        for fix in CAUSE_FIXES {
            assert!(
                super::super::find(fix.rule).is_some(),
                "{}: no rule {}",
                fix.class,
                fix.rule
            );
            if let Some(setting) = setting_for(fix, Some(42), Some("cyclic")) {
                assert!(
                    setting.parse::<SettingId>().is_ok(),
                    "{}: setting {setting} does not parse",
                    fix.class
                );
            }
        }
    }

    #[test]
    fn the_most_specific_row_wins() {
        assert_eq!(
            fix_for("kworker", "vmstat_update").unwrap().rule,
            "LL-SYSCTL-VM-STAT-INTERVAL"
        );
        assert_eq!(
            fix_for("kworker", "other").unwrap().rule,
            "LL-WORKQUEUE-CPUMASK"
        );
        let irq = fix_for("device_irq", "42 nvme").unwrap();
        assert_eq!(
            setting_for(irq, Some(42), None).as_deref(),
            Some("irq:42:affinity")
        );
        assert!(fix_for("unknown", "events lost").is_none());
    }
}

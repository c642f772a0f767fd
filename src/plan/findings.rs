//! The profile's settings in a plan: what every audit rule of the profile wants on this
//! machine, held or not ([`crate::audit::desired`]), so that the plan is a function of the
//! profile, the hardware and the capabilities, never of the current values. The plan decides
//! the partition-derived knobs itself (IRQ, RPS, workqueue and kernel-thread placement,
//! irqbalance, systemd's CPU affinity, the isolation, idle and hugepage arguments); a rule's
//! setting for one of those is dropped, since the plan's own setting follows the chosen
//! partition and options. The others (sysctls, cpufreq, THP, clocksource, services, ...) are
//! added, security trade-offs only with `--allow-security-tradeoffs`, and command-line values
//! are written the plan's way.

use super::Draft;
use super::request::PlanProfile;
use crate::audit::{self, AuditPartition, PartitionSource, ProfileError};
use crate::machine::Machine;
use crate::tuning::partition::Partition;
use crate::tuning::setting::Setting;
use crate::tuning::setting_id::SettingId;

/// The audit profile of a plan profile (they share their names).
pub fn audit_profile(profile: PlanProfile) -> Result<audit::Profile, ProfileError> {
    audit::profile::load(profile.into())
}

/// The settings the rules of `profile` want on `machine` with the plan's own partition (given
/// to the audit as an explicit partition), whether they hold already or not, less the families
/// the plan always decides itself (never kept: at 8,192 CPUs the rules want a setting per IRQ).
pub fn profile_settings(
    machine: &Machine,
    profile: &audit::Profile,
    partition: &Partition,
) -> Vec<Setting> {
    let partition = AuditPartition {
        housekeeping: partition.housekeeping.clone(),
        isolated: partition.isolated.clone(),
        source: PartitionSource::Flag,
        nr_cpus: partition.nr_cpus,
    };
    audit::desired(machine, profile, &partition, &|id| !plan_family(id))
}

/// The plan `lowlat plan --profile P --isolate CPUS` makes for `machine`, with the audit's
/// profile and isolated CPUs, as the audit's fix script writes it: `None` for a profile that
/// has no plan (throughput) or a partition the plan refuses.
pub fn plan_of_audit(
    machine: &Machine,
    profile: &audit::Profile,
    partition: &AuditPartition,
) -> Option<super::Plan> {
    let request = super::request::PlanRequest {
        profile: PlanProfile::try_from(profile.info.name).ok()?,
        partition: crate::tuning::partition::PartitionRequest {
            isolate: (partition.is_known() && !partition.isolated.is_empty())
                .then(|| partition.isolated.clone()),
            ..Default::default()
        },
        kernel: (profile.site.as_ref())
            .map(|site| site.kernel.clone())
            .unwrap_or_default(),
        ..Default::default()
    };
    super::build(machine, &request, |partition| {
        profile_settings(machine, profile, partition)
    })
    .ok()
}

/// Files (or the directory of files) whose settings the plan derives from the partition.
const PLAN_FILES: &[&str] = &[
    "/etc/systemd/system.conf.d/",
    "/etc/default/irqbalance",
    "/etc/sysconfig/irqbalance",
];

/// Command-line keys the power policy and `--hugepages` decide.
const PLAN_KEYS: &[&str] = &[
    "idle",
    "cpuidle.off",
    "processor.max_cstate",
    "intel_idle.max_cstate",
    "hugepages",
    "hugepagesz",
    "default_hugepagesz",
];

/// Whether the setting belongs to a family the plan always decides itself: IRQ, RPS, workqueue
/// and kernel-thread placement, the files of [`PLAN_FILES`] and the keys of [`PLAN_KEYS`].
fn plan_family(id: &SettingId) -> bool {
    match id {
        SettingId::Irq(_)
        | SettingId::IrqDefault
        | SettingId::EveryIrq
        | SettingId::Rps(_)
        | SettingId::Workqueue(_)
        | SettingId::Tasks { kernel: true, .. }
        | SettingId::Cpuset { .. } => true,
        SettingId::File(path) | SettingId::FileKey { path, .. } => {
            PLAN_FILES.iter().any(|file| path.starts_with(file))
        }
        SettingId::Cmdline(key) => PLAN_KEYS.contains(&key.as_str()),
        SettingId::Sysctl(_)
        | SettingId::Cpufreq { .. }
        | SettingId::Boost
        | SettingId::Cpuidle { .. }
        | SettingId::ResumeLatency(_)
        | SettingId::Thp(_)
        | SettingId::Hugepages { .. }
        | SettingId::Clocksource
        | SettingId::Tasks { kernel: false, .. }
        | SettingId::Service(_)
        | SettingId::Nic { .. } => false,
    }
}

/// Whether the plan decides this setting itself.
fn decided_by_plan(draft: &Draft, id: &SettingId) -> bool {
    plan_family(id) || draft.decided(id)
}

/// Adds the remediations the plan does not decide itself.
pub fn add(draft: &mut Draft, findings: Vec<Setting>, allow_security_tradeoffs: bool) {
    for finding in findings {
        if decided_by_plan(draft, &finding.id) {
            continue;
        }
        if finding.security_tradeoff.is_some() && !allow_security_tradeoffs {
            draft.skip(
                finding,
                "security trade-off: planned only with --allow-security-tradeoffs",
            );
        } else {
            draft.add(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::setting as make;
    use crate::tuning::setting::Layer;

    fn fix(id: &str, value: &str, layer: Layer) -> Setting {
        make(id.parse().unwrap(), value, layer, "why", "audit")
    }

    #[test]
    fn the_plan_keeps_its_own_knobs_and_adds_the_rest() {
        let mut draft = Draft::default();
        draft.add(fix("cmdline:nohz_full", "nohz_full=1-7", Layer::Boot));
        let findings = vec![
            fix("cmdline:nohz_full", "nohz_full=2-7", Layer::Boot),
            fix("cmdline:idle", "idle=poll", Layer::Boot),
            fix("cmdline:hugepagesz", "hugepagesz=1G", Layer::Boot),
            fix("irq:default:affinity", "101", Layer::Runtime),
            fix("kthread:kswapd0:affinity", "0,8", Layer::Runtime),
            fix(
                "file:/etc/default/irqbalance:IRQBALANCE_BANNED_CPULIST",
                "1-7",
                Layer::File,
            ),
            fix(
                "file:/etc/systemd/system.conf.d/50-lowlat.conf:CPUAffinity",
                "0 8",
                Layer::File,
            ),
            fix("sysctl:vm.stat_interval", "10", Layer::Sysctl),
            fix("cmdline:pcie_aspm", "pcie_aspm=off", Layer::Boot),
            fix("cmdline:nowatchdog", "nowatchdog", Layer::Boot),
            fix("cmdline:iommu", "iommu=pt", Layer::Boot),
            fix("thp:enabled", "never", Layer::Runtime),
        ];
        add(&mut draft, findings, false);
        let got: Vec<(String, &str)> = draft
            .settings()
            .iter()
            .map(|s| (s.id.to_string(), s.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cmdline:nohz_full", "nohz_full=1-7"),
                ("sysctl:vm.stat_interval", "10"),
                ("cmdline:pcie_aspm", "pcie_aspm=off"),
                ("cmdline:nowatchdog", "nowatchdog"),
                ("cmdline:iommu", "iommu=pt"),
                ("thp:enabled", "never"),
            ]
            .map(|(id, value)| (id.to_string(), value))
        );
    }

    #[test]
    fn every_plan_profile_is_an_audit_profile() {
        for profile in [
            PlanProfile::LowLatency,
            PlanProfile::RealtimeHost,
            PlanProfile::RealtimeGuest,
        ] {
            assert!(audit_profile(profile).is_ok(), "{}", profile.name());
        }
    }

    #[test]
    fn tradeoffs_need_the_flag() {
        let tradeoff = Setting {
            security_tradeoff: Some("no corrected-error reports".into()),
            ..fix("cmdline:mce", "mce=off", Layer::Boot)
        };
        let mut draft = Draft::default();
        add(&mut draft, vec![tradeoff.clone()], false);
        assert!(draft.settings().is_empty());
        assert_eq!(draft.skipped()[0].setting.value, "mce=off");
        let mut draft = Draft::default();
        add(&mut draft, vec![tradeoff], true);
        assert_eq!(draft.settings()[0].value, "mce=off");
    }
}

//! `lowlat audit`: rules on the machine model, grouped into profiles, yielding findings with
//! evidence, sources and exact fixes.
//!
//! The audit only reads the [`Machine`]; it never touches the system. `lowlat plan` calls
//! [`desired`]: the settings every rule of the profile wants on this machine, held or not.

pub(crate) mod bios;
pub(crate) mod finding;
pub mod partition;
pub(crate) mod pipeline;
pub mod profile;
pub(crate) mod rule;
pub(crate) mod rules;
pub mod site;
pub mod workload;

pub use finding::{Counts, Finding, FindingStatus, Remediation, Severity, WaiverNote};
pub use partition::{AuditPartition, PartitionSource};
pub use profile::{Profile, ProfileError};

use crate::audit::finding::BiosStep;
use crate::audit::rule::{Fix, Rule, RuleCheck, RuleContext, RuleOutcome};
use crate::machine::Machine;
use crate::machine::vcpu_sharing::VcpuProbe;
use crate::tuning::profile_name::ProfileName;
use crate::tuning::setting::Setting;
use crate::tuning::setting_id::SettingId;

/// The result of auditing one machine against one profile.
#[derive(Debug, Clone)]
pub struct Audit {
    /// The profile's name (the built-in one a site profile extends).
    pub profile: ProfileName,
    /// The site profile's files, the one given first; empty for a built-in profile.
    pub profile_files: Vec<String>,
    /// The partition the isolation rules checked against.
    pub partition: AuditPartition,
    /// One finding per rule of the profile, ordered by layer, then table order.
    pub findings: Vec<Finding>,
}

impl Audit {
    /// How many findings of each status.
    pub fn counts(&self) -> Counts {
        Counts::of(&self.findings)
    }

    /// The rules whose fix is a trade-off the machine lacks: warnings, `not planned
    /// (trade-off)`, since lowlat plans trade-offs only when asked.
    pub fn tradeoffs_not_planned(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.status == FindingStatus::Warn && f.security_tradeoff.is_some())
    }

    /// Whether any finding failed (exit code 1).
    pub fn has_failures(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.status == FindingStatus::Fail)
    }

    /// The settings that remediate the failing and warning findings, in finding order, each
    /// setting id once (the first finding proposing it wins).
    pub fn fixes(&self) -> Vec<&Setting> {
        let mut seen = std::collections::HashSet::new();
        self.findings
            .iter()
            .filter(|f| f.needs_fixing())
            .flat_map(|f| &f.remediation.settings)
            .filter(|s| seen.insert(&s.id))
            .collect()
    }

    /// The finding of one rule.
    pub fn finding(&self, rule_id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.rule == rule_id)
    }
}

/// Audits `machine` against `profile` with `partition` (see [`partition::choose`]).
pub fn run(machine: &Machine, profile: &Profile, partition: &AuditPartition) -> Audit {
    run_with(machine, profile, partition, None)
}

/// [`run`], with what `check`'s short c2c probe of a guest measured (LL-VM-PLACEMENT judges
/// by it instead of saying "unknown").
pub fn run_probed(
    machine: &Machine,
    profile: &Profile,
    partition: &AuditPartition,
    vm_probe: &VcpuProbe,
) -> Audit {
    run_with(machine, profile, partition, Some(vm_probe))
}

/// The desired state `profile` gives `machine` with `partition`: the setting each rule wants
/// here, whether the machine already holds it or not, each setting id once (the first rule
/// proposing it wins), ordered by layer and then table order, keeping those whose id `wanted`
/// accepts. A rule that does not apply here (skipped: a knob this kernel does not have, a
/// host-owned setting in a guest) wants nothing. This is what `lowlat plan` sets: a function
/// of the profile, the hardware and the capabilities, never of the current values, so that
/// re-planning a tuned machine gives the same plan. The findings' detail lines are not made,
/// and the settings not wanted are dropped as each rule ends (at 8,192 CPUs, one per IRQ).
pub fn desired(
    machine: &Machine,
    profile: &Profile,
    partition: &AuditPartition,
    wanted: &dyn Fn(&SettingId) -> bool,
) -> Vec<Setting> {
    let ctx = RuleContext {
        machine,
        partition,
        details: false,
        vm_probe: None,
    };
    let today = site::today();
    // A waived rule wants nothing: the site accepts the machine as it is.
    let waived = |entry: &&profile::Entry| {
        profile.site.as_ref().is_some_and(|site| {
            site.waivers
                .iter()
                .any(|w| w.rule.id == entry.rule.id && !w.expired(today))
        })
    };
    let mut entries: Vec<_> = profile.entries.iter().filter(|e| !waived(e)).collect();
    entries.sort_by_key(|entry| entry.rule.layer);
    let mut seen = std::collections::HashSet::new();
    let mut settings = Vec::new();
    for entry in entries {
        let outcome = check(&ctx, entry);
        if outcome.status == FindingStatus::Skipped {
            continue;
        }
        let fixes = outcome
            .fixes
            .into_iter()
            .filter(|fix| wanted(&fix.id) && seen.insert(fix.id.clone()));
        settings.extend(fixes.map(|fix| setting(entry.rule, fix)));
    }
    settings
}

/// The outcome of one rule of a profile on the context's machine.
fn check(ctx: &RuleContext, entry: &profile::Entry) -> RuleOutcome {
    match entry.rule.check {
        RuleCheck::Fn(check) => check(ctx, &entry.expect),
        RuleCheck::Sysctl(key) => rules::sysctl::check(ctx, key, &entry.expect),
    }
}

/// Audits, with what `check`'s c2c probe of a guest measured when it made one.
fn run_with(
    machine: &Machine,
    profile: &Profile,
    partition: &AuditPartition,
    vm_probe: Option<&VcpuProbe>,
) -> Audit {
    let ctx = RuleContext {
        machine,
        partition,
        details: true,
        vm_probe,
    };
    let firmware = BiosVendors::of(machine);
    let mut findings: Vec<Finding> = profile
        .entries
        .iter()
        .map(|entry| {
            let mut finding = finding(
                entry.rule,
                check(&ctx, entry),
                entry.expect.advisory,
                &firmware,
            );
            for path in &mut finding.evidence {
                *path = machine.origins.annotate(path);
            }
            finding
        })
        .collect();
    if let Some(site) = &profile.site {
        findings.extend(site.off.iter().map(|off| {
            let outcome =
                RuleOutcome::skipped(format!("turned off by {}: {}", off.place, off.reason));
            finding(off.rule, outcome, false, &firmware)
        }));
        site::judge(&mut findings, &site.waivers, site::today());
    }
    // Stable: table order within a layer.
    findings.sort_by_key(|f| f.layer);
    Audit {
        profile: profile.info.name,
        profile_files: profile
            .site
            .as_ref()
            .map(|s| s.files.clone())
            .unwrap_or_default(),
        partition: partition.clone(),
        findings,
    }
}

/// Which BIOS setup utilities a machine may have: HPE's RBSU on HPE servers, AMD's CBS menus
/// on other boards with an AMD CPU; both when the DMI vendor is unknown.
struct BiosVendors {
    hpe: bool,
    amd: bool,
}

impl BiosVendors {
    fn of(machine: &Machine) -> Self {
        let is_hpe = machine.firmware.dmi.sys_vendor.get().map(|vendor| {
            let vendor = vendor.to_ascii_lowercase();
            vendor.contains("hpe") || vendor.contains("hewlett")
        });
        let amd_cpu = machine
            .cpu
            .get()
            .and_then(|id| id.vendor.as_deref())
            .is_none_or(|vendor| vendor == "AuthenticAMD");
        Self {
            hpe: is_hpe != Some(false),
            amd: amd_cpu && is_hpe != Some(true),
        }
    }

    /// Whether menus of `firmware` (`HPE RBSU`, `AMD CBS`) can exist on this machine.
    fn applies(&self, firmware: &str) -> bool {
        match firmware {
            "HPE RBSU" => self.hpe,
            "AMD CBS" => self.amd,
            _ => true,
        }
    }
}

/// Turns a check's outcome into a finding with the rule's data.
fn finding(rule: &Rule, outcome: RuleOutcome, advisory: bool, firmware: &BiosVendors) -> Finding {
    let status = match outcome.status {
        FindingStatus::Fail if advisory || rule.security_tradeoff.is_some() => FindingStatus::Warn,
        status => status,
    };
    let sources: Vec<String> = rule.sources.iter().map(|s| s.to_string()).collect();
    let remediation = if matches!(status, FindingStatus::Pass | FindingStatus::Skipped) {
        Remediation::default()
    } else {
        // A rule names its desired settings whatever the verdict; the remediation carries
        // them only where the finding is not met (an inferred one keeps its BIOS steps).
        let settings = if status == FindingStatus::Inferred {
            Vec::new()
        } else {
            outcome
                .fixes
                .into_iter()
                .map(|fix| setting(rule, fix))
                .collect()
        };
        let bios = match &outcome.bios_value {
            Some(value) => rule
                .bios
                .iter()
                .filter(|menu| firmware.applies(menu.firmware))
                .map(|menu| BiosStep {
                    firmware: menu.firmware.to_string(),
                    path: menu.path.to_string(),
                    value: value.clone(),
                    source: menu.source.to_string(),
                })
                .collect(),
            None => Vec::new(),
        };
        Remediation {
            settings,
            bios,
            manual: outcome.manual,
        }
    };
    Finding {
        rule: rule.id.to_string(),
        title: rule.title.to_string(),
        layer: rule.layer,
        severity: rule.severity,
        status,
        observed: outcome.observed,
        expected: outcome.expected,
        evidence: outcome.evidence,
        details: outcome.details,
        missing: outcome.missing,
        reboot: rule.reboot,
        security_tradeoff: rule.security_tradeoff.map(str::to_string),
        sources,
        remediation,
        waiver: None,
    }
}

/// The setting of a rule's fix, with the rule's rationale, sources and trade-off.
fn setting(rule: &Rule, fix: Fix) -> Setting {
    Setting {
        id: fix.id,
        value: fix.value,
        layer: fix.layer,
        reboot: fix.reboot,
        rationale: first_sentence(rule.rationale),
        source: rule.sources.join("; "),
        security_tradeoff: rule.security_tradeoff.map(str::to_string),
    }
}

/// The first sentence of a rationale (up to and including the first `. `).
fn first_sentence(text: &str) -> String {
    match text.find(". ") {
        Some(end) => text[..=end].to_string(),
        None => text.to_string(),
    }
}

//! Findings: what one rule concluded about one machine, with the evidence and the fix.

use serde::{Deserialize, Serialize};

use crate::tuning::setting::{Layer, Setting};

/// The verdict of one rule.
///
/// Ordered from best to worst for sorting; `Skipped` sorts last since it says nothing about
/// the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingStatus {
    /// The machine is as the profile expects, read from the OS.
    Pass,
    /// A BIOS-only setting whose OS-visible effects match the expectation. Not a pass: the
    /// setting itself cannot be read from the OS; the finding says how to confirm it.
    Inferred,
    /// The evidence is missing (no such file under the root, not readable, a container).
    Unknown,
    /// Differs from the profile in a way the profile treats as advice, or a contested value,
    /// or by a trade-off that lowlat plans only when asked (`not planned (trade-off)`).
    Warn,
    /// Differs from the profile, and a site profile accepts it (a waiver in force, with its
    /// reason): reported, never an exit code of 1.
    Waived,
    /// Differs from the profile.
    Fail,
    /// The rule does not apply here (a knob this kernel does not have, bare metal vs VM).
    Skipped,
}

impl FindingStatus {
    /// Every status, in report order.
    pub const ALL: [FindingStatus; 7] = [
        FindingStatus::Pass,
        FindingStatus::Warn,
        FindingStatus::Fail,
        FindingStatus::Waived,
        FindingStatus::Inferred,
        FindingStatus::Unknown,
        FindingStatus::Skipped,
    ];

    /// Lower-case name as in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            FindingStatus::Pass => "pass",
            FindingStatus::Inferred => "inferred",
            FindingStatus::Unknown => "unknown",
            FindingStatus::Warn => "warn",
            FindingStatus::Fail => "fail",
            FindingStatus::Waived => "waived",
            FindingStatus::Skipped => "skipped",
        }
    }
}

/// A word that names no finding status (`--status`).
#[derive(Debug, thiserror::Error)]
#[error("no status '{0}'; the statuses: {names}", names = FindingStatus::ALL.map(FindingStatus::name).join(", "))]
pub struct UnknownStatus(String);

impl std::str::FromStr for FindingStatus {
    type Err = UnknownStatus;

    /// A status by its name (`fail`, `warn`, ...).
    fn from_str(text: &str) -> Result<Self, UnknownStatus> {
        (FindingStatus::ALL.into_iter())
            .find(|s| s.name() == text)
            .ok_or_else(|| UnknownStatus(text.to_string()))
    }
}

/// How much a failure of the rule costs in latency (or, for the throughput profile, in
/// performance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Interruptions of tens of microseconds or more on the isolated CPUs, or a large
    /// throughput loss.
    High,
    /// Occasional interruptions or a measurable loss.
    Medium,
    /// Small or workload-dependent effect.
    Low,
}

impl Severity {
    /// Lower-case name as in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }
}

/// One BIOS setup menu path with the value to choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BiosStep {
    /// Whose setup utility: `HPE RBSU` (HPE ProLiant) or `AMD CBS` (AMD reference BIOS, on
    /// most other EPYC boards).
    pub firmware: String,
    /// The menu path, items separated by ` → `.
    pub path: String,
    /// The value to select there.
    pub value: String,
    /// Where the path comes from.
    pub source: String,
}

/// How to fix (or, for `unknown` findings, how to check) a finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remediation {
    /// Exact settings lowlat can apply (kernel argument, sysctl, file line, runtime value).
    /// `lowlat plan` collects these from failing and warning findings. The audit document
    /// writes a run of settings equal but for one part of their id as one group (the
    /// `irq:{names}:affinity` of every IRQ sent to the same CPUs, with `"names": ["40", "41"]`;
    /// see `tuning::grouping`), so that it grows with what differs, not with the IRQs.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "crate::tuning::grouping::serialize",
        deserialize_with = "crate::tuning::grouping::deserialize"
    )]
    pub settings: Vec<Setting>,
    /// BIOS setup steps, for settings only the firmware controls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bios: Vec<BiosStep>,
    /// What to do by hand (install a kernel, move a DIMM) or how to check what the OS cannot
    /// see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<String>,
}

impl Remediation {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty() && self.bios.is_empty() && self.manual.is_none()
    }
}

/// What one rule concluded about the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The rule's stable id, e.g. `LL-IRQ-ON-ISOLATED`.
    pub rule: String,
    /// The rule's title.
    pub title: String,
    /// Where the fix lives.
    pub layer: Layer,
    /// How much a failure costs.
    pub severity: Severity,
    /// The verdict.
    pub status: FindingStatus,
    /// What was seen, in one line (values, CPU lists).
    pub observed: String,
    /// What the profile expects, in one line.
    pub expected: String,
    /// The files the observation comes from (system paths, as on the examined machine).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// Longer observations, one item per line (IRQs with names and counts, task names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// What the rule could not read (an empty or garbled file, tasks whose files could not be
    /// parsed) where what it did read found nothing wrong: why an `unknown` finding is not a
    /// pass. Empty when nothing was missing, or the finding failed on what was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Whether the fix takes effect only after a reboot.
    pub reboot: bool,
    /// What the fix gives up in security or safety, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_tradeoff: Option<String>,
    /// Where the recommendation comes from.
    pub sources: Vec<String>,
    /// How to fix it (empty on a pass).
    #[serde(default, skip_serializing_if = "Remediation::is_empty")]
    pub remediation: Remediation,
    /// The site profile's waiver of this rule, on a finding that differs from the profile:
    /// in force (the status is `waived`) or expired (the status is what the rule found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiver: Option<WaiverNote>,
}

/// A site profile's waiver as a finding carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaiverNote {
    /// Why the site accepts the difference.
    pub reason: String,
    /// Who owns the exception.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The last day it holds, `YYYY-MM-DD` (UTC); none: no end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Where it is written, `FILE:LINE`.
    pub place: String,
    /// Whether its last day has passed: the finding fails again.
    pub expired: bool,
}

impl WaiverNote {
    /// One line for reports: `waived until 2099-12-31 by netops (site.toml:4): REASON`, or
    /// `waiver expired on 2020-01-01 …`.
    pub fn describe(&self) -> String {
        let mut text = match (&self.until, self.expired) {
            (Some(until), true) => format!("waiver expired on {until}"),
            (Some(until), false) => format!("waived until {until}"),
            (None, _) => "waived".to_string(),
        };
        if let Some(owner) = &self.owner {
            text.push_str(&format!(" by {owner}"));
        }
        text.push_str(&format!(" ({}): {}", self.place, self.reason));
        text
    }
}

impl Finding {
    /// Whether its remediation is wanted: the finding failed or warns.
    pub fn needs_fixing(&self) -> bool {
        matches!(self.status, FindingStatus::Fail | FindingStatus::Warn)
    }
}

/// How many findings of each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Findings that passed.
    pub pass: usize,
    /// Findings that warn.
    pub warn: usize,
    /// Findings that failed.
    pub fail: usize,
    /// BIOS settings inferred from OS evidence.
    pub inferred: usize,
    /// Findings without evidence.
    pub unknown: usize,
    /// Rules that do not apply to this machine.
    pub skipped: usize,
    /// Findings that differ from the profile where a site profile's waiver accepts it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waived: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Counts {
    /// Counts the findings.
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Self {
        let mut counts = Counts::default();
        for finding in findings {
            *counts.slot(finding.status) += 1;
        }
        counts
    }

    /// Adds `n` findings of `status`.
    pub fn add(&mut self, status: FindingStatus, n: usize) {
        *self.slot(status) += n;
    }

    fn slot(&mut self, status: FindingStatus) -> &mut usize {
        match status {
            FindingStatus::Pass => &mut self.pass,
            FindingStatus::Warn => &mut self.warn,
            FindingStatus::Fail => &mut self.fail,
            FindingStatus::Inferred => &mut self.inferred,
            FindingStatus::Unknown => &mut self.unknown,
            FindingStatus::Skipped => &mut self.skipped,
            FindingStatus::Waived => &mut self.waived,
        }
    }

    /// The count of one status.
    pub fn get(&self, status: FindingStatus) -> usize {
        match status {
            FindingStatus::Pass => self.pass,
            FindingStatus::Warn => self.warn,
            FindingStatus::Fail => self.fail,
            FindingStatus::Inferred => self.inferred,
            FindingStatus::Unknown => self.unknown,
            FindingStatus::Skipped => self.skipped,
            FindingStatus::Waived => self.waived,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_layers_are_read_by_their_names() {
        for status in FindingStatus::ALL {
            assert_eq!(status.name().parse::<FindingStatus>().unwrap(), status);
        }
        assert_eq!(
            "failed".parse::<FindingStatus>().unwrap_err().to_string(),
            "no status 'failed'; the statuses: pass, warn, fail, waived, inferred, unknown, skipped"
        );
        assert_eq!("services".parse::<Layer>().unwrap(), Layer::Service);
        assert_eq!("sysctl".parse::<Layer>().unwrap(), Layer::Sysctl);
        assert!(
            "kernel"
                .parse::<Layer>()
                .unwrap_err()
                .to_string()
                .starts_with("no layer 'kernel'; the layers: firmware, hardware, boot")
        );
    }
}

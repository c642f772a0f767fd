//! The firmware rules judged on the BIOS attributes themselves (`lowlat audit --bios FILE`),
//! where the BMC reports them, instead of on their OS-visible effects: each rule that has a
//! BIOS intent passes or fails on the attribute's current value, with the attribute and the
//! registry's display name as evidence, and a value staged for the next reset is reported.

use crate::audit::Audit;
use crate::audit::finding::{Finding, FindingStatus, Remediation};
use crate::audit::profile::Profile;
use crate::bios::BiosState;
use crate::bios::intents::standings;

/// Each firmware rule with a BIOS intent, and that intent (its words are the rule's).
const RULE_INTENTS: &[(&str, &str)] = &[
    ("LL-BIOS-PROFILE", "profile"),
    ("LL-SMT", "smt"),
    ("LL-BOOST", "boost"),
    ("LL-DETERMINISM", "determinism"),
    ("LL-NPS", "nps"),
];

/// A BIOS value a profile wants: the rule that checks it and the intent in the rule's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// The firmware rule (`LL-SMT`).
    pub rule: &'static str,
    /// The intent (`smt`).
    pub intent: &'static str,
    /// The profile's preferred value (`off`).
    pub value: String,
    /// Whether the profile only advises it (the audit warns rather than fails).
    pub advisory: bool,
}

/// The BIOS intents `profile` has an expectation for, in the profile's order.
pub(crate) fn wanted(profile: &Profile) -> Vec<Wanted> {
    profile
        .entries
        .iter()
        .filter_map(|entry| {
            let (rule, intent) = RULE_INTENTS.iter().find(|(id, _)| *id == entry.rule.id)?;
            Some(Wanted {
                rule,
                intent,
                value: entry.expect.preferred().to_string(),
                advisory: entry.expect.advisory,
            })
        })
        .collect()
}

/// Rejudges the findings of `audit` that `bios` carries an attribute for.
pub(crate) fn judge(audit: &mut Audit, profile: &Profile, bios: &BiosState) {
    let standings = standings(bios);
    for entry in &profile.entries {
        let Some((_, intent)) = RULE_INTENTS.iter().find(|(id, _)| *id == entry.rule.id) else {
            continue;
        };
        let Some(standing) = standings.iter().find(|s| s.intent == *intent) else {
            continue;
        };
        let Some(finding) = audit.findings.iter_mut().find(|f| f.rule == entry.rule.id) else {
            continue;
        };
        let display = bios
            .registry
            .as_ref()
            .and_then(|r| r.attribute(&standing.attribute))
            .and_then(|a| a.display_name.clone())
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        let status = if entry.expect.allows(&standing.current) {
            FindingStatus::Pass
        } else if entry.expect.advisory {
            FindingStatus::Warn
        } else {
            FindingStatus::Fail
        };
        let pending = standing
            .pending
            .as_ref()
            .map(|p| format!("; pending at the next reset: {p}"))
            .unwrap_or_default();
        let staged_right = standing
            .pending
            .as_ref()
            .is_some_and(|p| entry.expect.allows(p));
        let manual = if staged_right {
            Some("the wanted value is staged: reset the server to make it current".to_string())
        } else if status != FindingStatus::Pass || standing.pending.is_some() {
            Some(format!(
                "lowlat bios apply --bmc {} --set {intent}={} --journal FILE, then reset the server",
                bios.bmc,
                entry.expect.preferred()
            ))
        } else {
            None
        };
        rejudge(
            finding,
            status,
            format!(
                "{}{display} = {}{pending}",
                standing.attribute, standing.current
            ),
            format!("{}{}", bios.bmc, bios.bios_uri),
            manual,
        );
    }
}

/// Replaces the verdict, observation, evidence and remediation of `finding`.
fn rejudge(
    finding: &mut Finding,
    status: FindingStatus,
    observed: String,
    evidence: String,
    manual: Option<String>,
) {
    finding.status = status;
    finding.observed = format!("BIOS attribute {observed}");
    finding.evidence = vec![evidence];
    finding.details.clear();
    finding.remediation = Remediation {
        manual,
        ..Remediation::default()
    };
}

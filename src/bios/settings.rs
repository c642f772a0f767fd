//! Changing BIOS attributes: the journal written before a change, the PATCH that stages it,
//! the check of pending and current values against what was asked, and the values a revert
//! stages again.
//!
//! A change is staged on the Bios resource's settings object (or, on a BMC without one, on the
//! Bios resource itself) and takes effect at the next reset. When the BMC lists `OnReset`
//! among its apply times the PATCH says so (`@Redfish.SettingsApplyTime`), which is what makes
//! Dell's iDRAC create the configuration job; otherwise no annotation is sent (some Supermicro
//! BMCs refuse it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::inband::{self, InBand};
use super::intents::BiosChange;
use super::redfish::{Bmc, RedfishError};
use super::{BiosState, same_value};
use crate::machine::Machine;

/// What `bios apply` changed, written before the PATCH (the body of a `bios-journal` document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BiosJournal {
    /// The BMC, `scheme://host[:port]`.
    pub bmc: String,
    /// The ComputerSystem (`@odata.id`).
    pub system_uri: String,
    /// Where the change was PATCHed (the settings object, or the Bios resource).
    pub target: String,
    /// One entry per attribute changed.
    pub entries: Vec<BiosJournalEntry>,
}

/// One attribute in a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BiosJournalEntry {
    /// The Redfish attribute.
    pub attribute: String,
    /// The request it came from (`smt=off`).
    pub request: String,
    /// Its current value before the change (absent when the BMC did not report it).
    pub current: Option<Value>,
    /// The value staged for the next reset before the change, when one differed from current.
    pub pending: Option<Value>,
    /// The value the change staged.
    pub wanted: Value,
}

/// The changes of `changes` that are neither current nor already staged.
pub(crate) fn needed<'a>(state: &BiosState, changes: &'a [BiosChange]) -> Vec<&'a BiosChange> {
    changes
        .iter()
        .filter(|c| outcome(state, &c.attribute, &c.value) == BiosStatus::Drift)
        .collect()
}

/// The journal of staging `changes` on the BIOS `state` describes.
pub(crate) fn journal(state: &BiosState, changes: &[&BiosChange]) -> BiosJournal {
    BiosJournal {
        bmc: state.bmc.clone(),
        system_uri: state.system.uri.clone(),
        target: target(state).to_string(),
        entries: changes
            .iter()
            .map(|c| BiosJournalEntry {
                attribute: c.attribute.clone(),
                request: c.request.clone(),
                current: state.current.get(&c.attribute).cloned(),
                pending: state.pending.get(&c.attribute).cloned(),
                wanted: c.value.clone(),
            })
            .collect(),
    }
}

/// The annotation that asks for a change at the next reset.
const APPLY_TIME: &str = "@Redfish.SettingsApplyTime";

/// Stages `values` (attribute, value) for the next reset. When the BMC offers `OnReset` the
/// PATCH asks for it; a BMC that then refuses the annotation as unknown (HTTP 400 naming it,
/// as some Supermicro BMCs do) is sent the same PATCH without it.
pub(crate) fn stage(
    bmc: &Bmc,
    state: &BiosState,
    values: &[(String, Value)],
) -> Result<(), RedfishError> {
    let attributes: serde_json::Map<String, Value> = values.iter().cloned().collect();
    let plain = serde_json::json!({ "Attributes": attributes });
    if !state.supported_apply_times.iter().any(|t| t == "OnReset") {
        return bmc
            .patch(&state.bios_uri, target(state), &plain)
            .map(|_| ());
    }
    let mut annotated = plain.clone();
    annotated[APPLY_TIME] = serde_json::json!({ "ApplyTime": "OnReset" });
    match bmc.patch(&state.bios_uri, target(state), &annotated) {
        Err(RedfishError::Status {
            status: 400,
            message,
            ..
        }) if message.contains(APPLY_TIME) => bmc
            .patch(&state.bios_uri, target(state), &plain)
            .map(|_| ()),
        other => other.map(|_| ()),
    }
}

/// The values that put back what `journal` changed: the value staged before, else the value
/// current before. Entries whose attribute had no value reported are left out.
pub(crate) fn restoring(journal: &BiosJournal) -> Vec<(String, Value)> {
    journal
        .entries
        .iter()
        .filter_map(|e| {
            let before = e.pending.as_ref().or(e.current.as_ref())?;
            Some((e.attribute.clone(), before.clone()))
        })
        .collect()
}

/// Where a change is PATCHed.
fn target(state: &BiosState) -> &str {
    state.settings_object.as_deref().unwrap_or(&state.bios_uri)
}

/// How an attribute stands against the value wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BiosStatus {
    /// The current value is the one wanted, and nothing else is staged.
    Ok,
    /// The wanted value is staged and takes effect at the next reset.
    PendingReset,
    /// Neither current nor staged.
    Drift,
}

impl BiosStatus {
    /// The word shown in reports: verify's words (`ok`, `drift`, `pending-…`) for the same
    /// verdicts.
    pub fn name(self) -> &'static str {
        match self {
            BiosStatus::Ok => "ok",
            BiosStatus::PendingReset => "pending-reset",
            BiosStatus::Drift => "drift",
        }
    }
}

/// One attribute checked against the value wanted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeCheck {
    /// The Redfish attribute.
    pub attribute: String,
    /// The registry's display name, when it has one.
    pub display_name: Option<String>,
    /// The request it came from (`smt=off`).
    pub request: String,
    /// The value wanted.
    pub wanted: Value,
    /// The current value (absent when the BMC does not report it).
    pub current: Option<Value>,
    /// The value staged for the next reset, when it differs from the current one.
    pub pending: Option<Value>,
    /// What the running OS shows of it, when it was asked (`--inband`) and can show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inband: Option<InBand>,
    /// How they compare: a value the BMC reports current but the OS does not show is drift.
    pub outcome: BiosStatus,
}

/// Checks both the current and the staged value of each change and, given the `machine` the
/// BIOS runs, what its OS shows.
pub(crate) fn verify(
    state: &BiosState,
    changes: &[BiosChange],
    machine: Option<&Machine>,
) -> Vec<AttributeCheck> {
    changes
        .iter()
        .map(|c| {
            let inband = machine
                .zip(c.intent)
                .and_then(|(m, (intent, value))| inband::check(m, intent, value));
            let mut outcome = outcome(state, &c.attribute, &c.value);
            if outcome == BiosStatus::Ok && inband.as_ref().is_some_and(|i| !i.agrees) {
                outcome = BiosStatus::Drift;
            }
            AttributeCheck {
                attribute: c.attribute.clone(),
                display_name: c.display_name.clone(),
                request: c.request.clone(),
                wanted: c.value.clone(),
                current: state.current.get(&c.attribute).cloned(),
                pending: state.pending.get(&c.attribute).cloned(),
                inband,
                outcome,
            }
        })
        .collect()
}

/// Whether `attribute` is `wanted` now, at the next reset, or neither. A wrong value staged
/// over a right current one is drift: the next reset would undo it.
fn outcome(state: &BiosState, attribute: &str, wanted: &Value) -> BiosStatus {
    let current = state.current.get(attribute);
    match state.pending.get(attribute) {
        Some(pending) if same_value(pending, wanted) => BiosStatus::PendingReset,
        Some(_) => BiosStatus::Drift,
        None if current.is_some_and(|c| same_value(c, wanted)) => BiosStatus::Ok,
        None => BiosStatus::Drift,
    }
}

/// Whether a check of `bios verify` found drift (exit 1).
pub(crate) fn drifted(checks: &[AttributeCheck]) -> bool {
    checks.iter().any(|c| c.outcome == BiosStatus::Drift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bios::System;
    use serde_json::json;

    #[test]
    fn the_shown_words_are_the_json_words() {
        for status in [BiosStatus::Ok, BiosStatus::PendingReset, BiosStatus::Drift] {
            assert_eq!(json!(status), json!(status.name()));
        }
    }

    fn state(current: &[(&str, &str)], pending: &[(&str, &str)]) -> BiosState {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect()
        };
        BiosState {
            bmc: "https://bmc".into(),
            system: System {
                uri: "/redfish/v1/Systems/1".into(),
                id: "1".into(),
                manufacturer: None,
                model: None,
                host_name: None,
            },
            bios_uri: "/redfish/v1/Systems/1/Bios".into(),
            attribute_registry: None,
            current: map(current),
            settings_object: None,
            supported_apply_times: vec![],
            pending: map(pending),
            registry: None,
        }
    }

    fn change(attribute: &str, value: &str) -> BiosChange {
        BiosChange {
            attribute: attribute.into(),
            value: json!(value),
            display_name: None,
            request: format!("{attribute}={value}"),
            intent: None,
            source: None,
        }
    }

    #[test]
    fn pending_and_current_are_both_compared() {
        let s = state(
            &[("A", "on"), ("B", "on"), ("C", "off"), ("D", "off")],
            &[("B", "off"), ("C", "on")],
        );
        let outcomes: Vec<BiosStatus> = verify(
            &s,
            &[
                change("A", "on"),
                change("B", "off"),
                change("C", "off"),
                change("D", "on"),
            ],
            None,
        )
        .iter()
        .map(|c| c.outcome)
        .collect();
        assert_eq!(
            outcomes,
            [
                BiosStatus::Ok,
                BiosStatus::PendingReset,
                BiosStatus::Drift,
                BiosStatus::Drift
            ]
        );
    }

    #[test]
    fn the_journal_restores_what_was_staged_before_else_current() {
        let s = state(&[("A", "on"), ("B", "on")], &[("B", "maybe")]);
        let changes = [change("A", "off"), change("B", "off"), change("Z", "x")];
        let j = journal(&s, &needed(&s, &changes));
        assert_eq!(j.target, "/redfish/v1/Systems/1/Bios");
        assert_eq!(
            restoring(&j),
            [
                ("A".to_string(), json!("on")),
                ("B".to_string(), json!("maybe"))
            ]
        );
    }
}

//! The BIOS part of a plan: the attributes the profile wants changed on a BIOS the BMC reported
//! (`lowlat plan --bios bios.json`), beside the OS settings, for `lowlat bios apply --plan` to
//! stage at the next reset.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

use crate::audit::bios::wanted;
use crate::audit::profile::Profile;
use crate::bios::intents::resolve;
use crate::bios::pipeline::PlannedBios;
use crate::bios::settings::needed;
use crate::bios::{BiosState, value_text};
use crate::plan::file::{PlanFile, PlanFileError};

/// What to stage on one server's BIOS, and what the profile wants that this BMC cannot take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BiosPlan {
    /// The BMC the BIOS was read from, `scheme://host[:port]` (never with credentials).
    pub bmc: String,
    /// The ComputerSystem (`@odata.id`) whose BIOS this is.
    pub system_uri: String,
    /// The attributes to change, in the profile's order; empty when the BIOS already has (or
    /// has staged) every value wanted.
    pub changes: Vec<BiosChange>,
    /// Values the profile wants that are not planned, with the reason.
    pub skipped: Vec<BiosSkipped>,
}

/// One attribute to change at the next reset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BiosChange {
    /// The firmware rule that wants it (`LL-BOOST`).
    pub rule: String,
    /// The intent and value (`boost=off`).
    pub intent: String,
    /// The Redfish attribute this BMC carries the intent in.
    pub attribute: String,
    /// The registry's `DisplayName` of the attribute, when it has one.
    pub display_name: Option<String>,
    /// The attribute's value now (absent when the BMC does not report it).
    pub current: Option<Value>,
    /// The value to stage, typed as the registry says.
    pub wanted: Value,
}

/// A value the profile wants that the plan leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BiosSkipped {
    /// The firmware rule that wants it.
    pub rule: String,
    /// The intent and value (`smt=off`).
    pub intent: String,
    /// Why it is not planned, and what to do about it.
    pub reason: String,
}

/// Why `bios apply --plan` or `bios verify --plan` cannot take a plan's BIOS part.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlannedBiosError {
    /// The plan file could not be read.
    #[error(transparent)]
    File(#[from] PlanFileError),
    /// The plan has no BIOS part.
    #[error(
        "{0}: the plan has no BIOS part; make it with `lowlat plan --bios bios.json` from a `lowlat bios read -o bios.json` of this BMC"
    )]
    NoBiosPart(String),
}

/// The BIOS part of the plan in `file`, as `bios apply --plan` and `bios verify --plan` take it
/// (named `--plan FILE` in messages).
pub(crate) fn planned(file: &Path) -> Result<PlannedBios, PlannedBiosError> {
    let read = PlanFile::read(file)?;
    let part = read
        .plan
        .bios
        .ok_or(PlannedBiosError::NoBiosPart(read.shown.clone()))?;
    Ok(PlannedBios {
        shown: read.shown,
        bmc: part.bmc,
        system_uri: part.system_uri,
        intents: part.changes.into_iter().map(|c| c.intent).collect(),
    })
}

impl BiosChange {
    /// `ATTRIBUTE=VALUE`, the request `lowlat bios apply` resolves.
    pub fn request(&self) -> String {
        format!("{}={}", self.attribute, value_text(&self.wanted))
    }
}

/// The BIOS changes `profile` wants on `state`. An advisory value is left to the user; one this
/// BMC has no attribute for, or will not take (read-only, locked, not allowed), is skipped with
/// the BMC's reason; one already current or staged needs nothing.
pub fn plan(state: &BiosState, profile: &Profile) -> BiosPlan {
    let mut changes = Vec::new();
    let mut skipped = Vec::new();
    for want in wanted(profile) {
        let intent = format!("{}={}", want.intent, want.value);
        let skip = |reason: String| BiosSkipped {
            rule: want.rule.to_string(),
            intent: intent.clone(),
            reason,
        };
        if want.advisory {
            skipped.push(skip(format!(
                "the profile advises it without requiring it; stage it with `lowlat bios apply --set {intent}` if the workload wants it"
            )));
            continue;
        }
        match resolve(state, &intent) {
            Ok(change) => {
                if needed(state, std::slice::from_ref(&change)).is_empty() {
                    continue;
                }
                changes.push(BiosChange {
                    rule: want.rule.to_string(),
                    intent,
                    current: state.current.get(&change.attribute).cloned(),
                    attribute: change.attribute,
                    display_name: change.display_name,
                    wanted: change.value,
                });
            }
            Err(e) => skipped.push(skip(e.to_string())),
        }
    }
    BiosPlan {
        bmc: state.bmc.clone(),
        system_uri: state.system.uri.clone(),
        changes,
        skipped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bios::System;
    use crate::bios::registry::Registry;
    use crate::plan::findings::audit_profile;
    use crate::plan::request::PlanProfile;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// An HPE-like BIOS: balanced workload profile, SMT on, turbo on; DeterminismSlider absent.
    fn hpe() -> BiosState {
        let registry = Registry::from_resource(&json!({
            "Id": "BiosAttributeRegistryU30",
            "RegistryEntries": {"Attributes": [
                {"AttributeName": "WorkloadProfile", "DisplayName": "Workload Profile",
                 "Type": "Enumeration", "ReadOnly": false,
                 "Value": [{"ValueName": "GeneralPowerEfficientCompute"},
                           {"ValueName": "LowLatency"}, {"ValueName": "Custom"}]},
                {"AttributeName": "ProcHyperthreading", "Type": "Enumeration", "ReadOnly": false,
                 "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]},
                {"AttributeName": "ProcTurbo", "Type": "Enumeration", "ReadOnly": false,
                 "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]}
            ]}
        }))
        .unwrap();
        BiosState {
            bmc: "https://bmc1".into(),
            system: System {
                uri: "/redfish/v1/Systems/1".into(),
                id: "1".into(),
                manufacturer: Some("HPE".into()),
                model: None,
                host_name: None,
            },
            bios_uri: "/redfish/v1/Systems/1/Bios".into(),
            attribute_registry: Some("BiosAttributeRegistryU30".into()),
            current: BTreeMap::from([
                (
                    "WorkloadProfile".to_string(),
                    json!("GeneralPowerEfficientCompute"),
                ),
                ("ProcHyperthreading".to_string(), json!("Enabled")),
                ("ProcTurbo".to_string(), json!("Enabled")),
            ]),
            settings_object: Some("/redfish/v1/Systems/1/Bios/Settings".into()),
            supported_apply_times: vec![],
            pending: BTreeMap::new(),
            registry: Some(registry),
        }
    }

    #[test]
    fn low_latency_plans_the_workload_profile_and_says_why_the_rest_is_not_planned() {
        let profile = audit_profile(PlanProfile::LowLatency).unwrap();
        let plan = plan(&hpe(), &profile);
        let changes: Vec<_> = plan.changes.iter().map(BiosChange::request).collect();
        assert_eq!(changes, ["WorkloadProfile=LowLatency"]);
        assert_eq!(
            plan.changes[0].current,
            Some(json!("GeneralPowerEfficientCompute"))
        );
        assert_eq!(
            plan.changes[0].display_name.as_deref(),
            Some("Workload Profile")
        );
        let skipped: Vec<_> = plan
            .skipped
            .iter()
            .map(|s| (s.intent.as_str(), s.reason.as_str()))
            .collect();
        // SMT and boost are advisory in low-latency; this BMC has no determinism attribute.
        assert!(
            skipped
                .iter()
                .any(|(i, r)| *i == "smt=off" && r.contains("advises"))
        );
        assert!(
            skipped
                .iter()
                .any(|(i, r)| *i == "boost=off" && r.contains("advises"))
        );
        assert!(
            skipped
                .iter()
                .any(|(i, r)| *i == "determinism=performance" && r.contains("DeterminismSlider")),
            "{skipped:?}"
        );
    }

    #[test]
    fn a_value_already_current_or_staged_needs_no_change() {
        let profile = audit_profile(PlanProfile::LowLatency).unwrap();
        let mut state = hpe();
        state
            .pending
            .insert("WorkloadProfile".into(), json!("LowLatency"));
        assert!(plan(&state, &profile).changes.is_empty());
        let mut state = hpe();
        state
            .current
            .insert("WorkloadProfile".into(), json!("LowLatency"));
        assert!(plan(&state, &profile).changes.is_empty());
    }

    #[test]
    fn realtime_host_requires_smt_off() {
        let profile = audit_profile(PlanProfile::RealtimeHost).unwrap();
        let plan = plan(&hpe(), &profile);
        let changes: Vec<_> = plan.changes.iter().map(BiosChange::request).collect();
        assert_eq!(changes, ["ProcHyperthreading=Disabled"]);
    }
}

//! The BMC's BIOS AttributeRegistry, reduced to what lowlat checks a change against: each
//! attribute's name, display name, type, allowed values and whether it may be written, and the
//! dependencies that lock an attribute while another has some value (HPE's settings are
//! read-only unless WorkloadProfile is Custom; Dell's ProcPwrPerf unless SysProfile is Custom).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The attribute registry a Bios resource names (`AttributeRegistry`), as the BMC serves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    /// The registry's `Id` (`BiosAttributeRegistryP89.v1_0_0`).
    pub id: String,
    /// Who defines the names (`OwningEntity`: HPE, Dell, Lenovo, AMI...).
    pub owning_entity: Option<String>,
    /// Every attribute the registry lists.
    pub attributes: Vec<Attribute>,
    /// The dependencies that make an attribute read-only while a condition holds.
    #[serde(default)]
    pub locks: Vec<Lock>,
}

/// A registry `Dependency` of type `Map` whose `MapToProperty` is `ReadOnly` (or `GrayOut`)
/// and `MapToValue` true: the attribute cannot be changed while its conditions hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    /// The attribute locked (`MapToAttribute`).
    pub attribute: String,
    /// The conditions (`MapFrom`).
    pub conditions: Vec<Condition>,
    /// Whether one condition is enough (`MapTerms` OR) rather than all of them (AND).
    pub any: bool,
}

/// One `MapFrom` condition on another attribute's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    /// The attribute (`MapFromAttribute`).
    pub attribute: String,
    /// `EQU` (true) or `NEQ` (false); dependencies with other comparisons are not read.
    pub equal: bool,
    /// The value compared with (`MapFromValue`).
    pub value: Value,
}

/// One registry entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribute {
    /// `AttributeName`, the key in the Bios resource's `Attributes`.
    pub name: String,
    /// `DisplayName`, as BIOS setup shows it.
    pub display_name: Option<String>,
    /// `Type`: Enumeration, String, Integer, Boolean or Password.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// For an enumeration, the `ValueName`s it allows; empty for other types.
    pub values: Vec<String>,
    /// `ValueDisplayName` → `ValueName`, where they differ (AMI's opaque value codes:
    /// `Disable` → `PRSS011_0`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub value_display_names: BTreeMap<String, String>,
    /// `ReadOnly` (or `Immutable`): the BMC will not change it.
    pub read_only: bool,
}

impl Registry {
    /// The registry in a Redfish AttributeRegistry resource; entries without a name are left out.
    pub fn from_resource(resource: &Value) -> Option<Self> {
        let id = resource.get("Id")?.as_str()?.to_string();
        let entries = resource
            .pointer("/RegistryEntries/Attributes")
            .and_then(Value::as_array)?;
        let flag = |entry: &Value, key: &str| entry.get(key).and_then(Value::as_bool) == Some(true);
        let text =
            |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
        let attributes = entries
            .iter()
            .filter_map(|entry| {
                Some(Attribute {
                    name: text(entry, "AttributeName")?,
                    display_name: text(entry, "DisplayName"),
                    kind: text(entry, "Type"),
                    values: values(entry).map(|(name, _)| name.to_string()).collect(),
                    value_display_names: values(entry)
                        .filter_map(|(name, display)| {
                            Some((display?.to_string(), name.to_string()))
                        })
                        .filter(|(display, name)| display != name)
                        .collect(),
                    read_only: flag(entry, "ReadOnly") || flag(entry, "Immutable"),
                })
            })
            .collect();
        let locks = resource
            .pointer("/RegistryEntries/Dependencies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(lock_of)
            .collect();
        Some(Self {
            id,
            owning_entity: text(resource, "OwningEntity"),
            attributes,
            locks,
        })
    }

    /// The lock on `attribute` whose conditions hold for `values`, if any.
    pub fn lock_on(&self, attribute: &str, values: &BTreeMap<String, Value>) -> Option<&Lock> {
        self.locks
            .iter()
            .filter(|lock| lock.attribute == attribute)
            .find(|lock| {
                let holds = |c: &Condition| {
                    values
                        .get(&c.attribute)
                        .is_some_and(|v| super::same_value(v, &c.value) == c.equal)
                };
                if lock.any {
                    lock.conditions.iter().any(holds)
                } else {
                    lock.conditions.iter().all(holds)
                }
            })
    }

    /// The entry named `name`.
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    /// The entry named `name`, else the one BIOS setup shows as `name` (its `DisplayName`,
    /// compared without spaces and case): AMI registries name attributes with opaque codes
    /// (`PRSS011`) and show `Hyper-Threading [ALL]`.
    pub fn attribute_shown_as(&self, name: &str) -> Option<&Attribute> {
        let key = display_key(name);
        self.attribute(name).or_else(|| {
            self.attributes
                .iter()
                .find(|a| a.display_name.as_deref().map(display_key) == Some(key.clone()))
        })
    }
}

/// `name` without whitespace, lower case: how display names are matched.
fn display_key(name: &str) -> String {
    name.split_whitespace().collect::<String>().to_lowercase()
}

/// The `(ValueName, ValueDisplayName)` pairs of a registry entry's `Value` list.
fn values(entry: &Value) -> impl Iterator<Item = (&str, Option<&str>)> {
    entry
        .get("Value")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v.get("ValueName")?.as_str()?;
            Some((name, v.get("ValueDisplayName").and_then(Value::as_str)))
        })
}

/// The lock a `Dependencies` entry describes; `None` for other kinds of dependency.
fn lock_of(entry: &Value) -> Option<Lock> {
    if entry.get("Type").and_then(Value::as_str) != Some("Map") {
        return None;
    }
    let map = entry.get("Dependency")?;
    let property = map.get("MapToProperty")?.as_str()?;
    if !matches!(property, "ReadOnly" | "GrayOut") || map.get("MapToValue")? != &Value::Bool(true) {
        return None;
    }
    let from = map.get("MapFrom")?.as_array()?;
    let conditions = from
        .iter()
        .map(|c| {
            Some(Condition {
                attribute: c.get("MapFromAttribute")?.as_str()?.to_string(),
                equal: match c.get("MapFromCondition")?.as_str()? {
                    "EQU" => true,
                    "NEQ" => false,
                    _ => return None,
                },
                value: c.get("MapFromValue")?.clone(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Lock {
        attribute: map.get("MapToAttribute")?.as_str()?.to_string(),
        any: from
            .iter()
            .any(|c| c.get("MapTerms").and_then(Value::as_str) == Some("OR")),
        conditions,
    })
}

impl Attribute {
    /// Whether the registry allows `value` (any value for a type without a list).
    pub fn allows(&self, value: &str) -> bool {
        self.values.is_empty() || self.values.iter().any(|v| v == value)
    }

    /// The `ValueDisplayName` of the `ValueName` `name`, where the registry gives a different
    /// one; else `name`.
    pub fn shown_value<'a>(&'a self, name: &'a str) -> &'a str {
        self.value_display_names
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(name, |(display, _)| display.as_str())
    }

    /// The `ValueName` for `value`, given as a `ValueName` or as its `ValueDisplayName`.
    pub fn value_named<'a>(&'a self, value: &'a str) -> &'a str {
        if self.values.iter().any(|v| v == value) {
            value
        } else {
            self.value_display_names
                .get(value)
                .map_or(value, String::as_str)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_their_values_and_write_protection() {
        let resource = serde_json::json!({
            "Id": "BiosAttributeRegistryP89.v1_0_0",
            "OwningEntity": "VendorA",
            "RegistryEntries": {"Attributes": [
                {"AttributeName": "ProcTurboMode", "DisplayName": "Turbo Boost",
                 "Type": "Enumeration", "ReadOnly": false,
                 "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]},
                {"AttributeName": "SerialNumber", "Type": "String", "Immutable": true},
                {"DisplayName": "no name"}
            ]}
        });
        let registry = Registry::from_resource(&resource).unwrap();
        assert_eq!(registry.attributes.len(), 2);
        let turbo = registry.attribute("ProcTurboMode").unwrap();
        assert!(turbo.allows("Disabled") && !turbo.allows("Off"));
        assert!(!turbo.read_only);
        assert!(registry.attribute("SerialNumber").unwrap().read_only);
        assert!(
            registry
                .attribute("SerialNumber")
                .unwrap()
                .allows("anything")
        );
        assert!(registry.locks.is_empty());
    }

    #[test]
    fn a_map_dependency_locks_while_its_condition_holds() {
        let resource = serde_json::json!({
            "Id": "HpeBios",
            "RegistryEntries": {"Attributes": [], "Dependencies": [
                {"Type": "Map", "DependencyFor": "ProcTurbo", "Dependency": {
                    "MapFrom": [{"MapFromAttribute": "WorkloadProfile", "MapFromProperty": "CurrentValue",
                                 "MapFromCondition": "NEQ", "MapFromValue": "Custom"}],
                    "MapToAttribute": "ProcTurbo", "MapToProperty": "ReadOnly", "MapToValue": true}},
                {"Type": "Map", "Dependency": {
                    "MapFrom": [{"MapFromAttribute": "A", "MapFromCondition": "GTR", "MapFromValue": 1}],
                    "MapToAttribute": "B", "MapToProperty": "ReadOnly", "MapToValue": true}},
                {"Type": "Map", "Dependency": {
                    "MapFrom": [{"MapFromAttribute": "A", "MapFromCondition": "EQU", "MapFromValue": "x"}],
                    "MapToAttribute": "C", "MapToProperty": "Hidden", "MapToValue": true}}
            ]}
        });
        let registry = Registry::from_resource(&resource).unwrap();
        assert_eq!(registry.locks.len(), 1, "{:?}", registry.locks);
        let values = |profile: &str| -> BTreeMap<String, Value> {
            [("WorkloadProfile".to_string(), serde_json::json!(profile))].into()
        };
        assert!(
            registry
                .lock_on("ProcTurbo", &values("LowLatency"))
                .is_some()
        );
        assert!(registry.lock_on("ProcTurbo", &values("Custom")).is_none());
        assert!(registry.lock_on("Other", &values("LowLatency")).is_none());
    }
}

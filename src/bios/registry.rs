//! The BMC's BIOS AttributeRegistry, reduced to what lowlat checks a change against: each
//! attribute's name, display name, type, allowed values and whether it may be written.

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
                    values: entry
                        .get("Value")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v.get("ValueName").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect(),
                    read_only: flag(entry, "ReadOnly") || flag(entry, "Immutable"),
                })
            })
            .collect();
        Some(Self {
            id,
            owning_entity: text(resource, "OwningEntity"),
            attributes,
        })
    }

    /// The entry named `name`.
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

impl Attribute {
    /// Whether the registry allows `value` (any value for a type without a list).
    pub fn allows(&self, value: &str) -> bool {
        self.values.is_empty() || self.values.iter().any(|v| v == value)
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
    }
}

//! BIOS settings over Redfish: what the BMC says the firmware is set to now, what is staged for
//! the next reset, and the registry that names and bounds each attribute.
//!
//! [`read`] walks `/redfish/v1/Systems/{id}` → its `Bios` → the `@Redfish.Settings`
//! object (pending values) → `/redfish/v1/Registries` → the AttributeRegistry the Bios names,
//! and returns one [`BiosState`], the body of a `bios` document.

pub(crate) mod inband;
pub(crate) mod intents;
pub(crate) mod pipeline;
pub(crate) mod redfish;
pub(crate) mod registry;
pub(crate) mod settings;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::document::{self, Document, Kind, Layout, LayoutError};

use redfish::{Bmc, RedfishError};
use registry::Registry;

/// The BIOS of one system as its BMC reports it (the body of a `bios` document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BiosState {
    /// The BMC, `scheme://host[:port]` (never with credentials).
    pub bmc: String,
    /// The ComputerSystem the BIOS belongs to.
    pub system: System,
    /// The Bios resource (`@odata.id`).
    pub bios_uri: String,
    /// The registry id the Bios names (`AttributeRegistry`), when it names one.
    pub attribute_registry: Option<String>,
    /// Every attribute's current value, as the BMC gives it (string, number or boolean).
    pub current: BTreeMap<String, Value>,
    /// The settings object a change is PATCHed to (`@Redfish.Settings.SettingsObject`); absent
    /// on BMCs that let the Bios resource itself be PATCHed.
    pub settings_object: Option<String>,
    /// The apply times the BMC offers (`@Redfish.Settings.SupportedApplyTimes`: OnReset,
    /// Immediate...); empty when it does not say.
    pub supported_apply_times: Vec<String>,
    /// The attributes staged for the next reset whose value differs from the current one.
    pub pending: BTreeMap<String, Value>,
    /// The registry, when the BMC serves it.
    pub registry: Option<Registry>,
}

/// Which ComputerSystem a BIOS belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct System {
    /// Its `@odata.id`.
    pub uri: String,
    /// `Id`.
    pub id: String,
    /// `Manufacturer`, when given.
    pub manufacturer: Option<String>,
    /// `Model`, when given.
    pub model: Option<String>,
    /// `HostName`, when given.
    pub host_name: Option<String>,
}

/// Why the BIOS could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BiosError {
    /// The BMC could not be asked.
    #[error(transparent)]
    Redfish(#[from] RedfishError),
    /// The BMC answered with something lowlat cannot use.
    #[error("{uri}: {what}")]
    Shape {
        /// The resource.
        uri: String,
        /// What is missing or wrong, and what to do.
        what: String,
    },
}

/// The systems collection every Redfish service has.
const SYSTEMS: &str = "/redfish/v1/Systems";
/// The registries collection.
const REGISTRIES: &str = "/redfish/v1/Registries";

/// Reads the BIOS of `system` (its `Id`), or of the BMC's only system when `None`.
pub(crate) fn read(bmc: &Bmc, system: Option<&str>) -> Result<BiosState, BiosError> {
    let system_uri = choose_system(bmc, system)?;
    let resource = bmc.get(SYSTEMS, &system_uri)?;
    let text = |key: &str| {
        resource
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let system = System {
        id: text("Id").unwrap_or_default(),
        manufacturer: text("Manufacturer"),
        model: text("Model"),
        host_name: text("HostName").filter(|h| !h.is_empty()),
        uri: system_uri.clone(),
    };
    let bios_uri = odata_id(resource.get("Bios")).ok_or_else(|| BiosError::Shape {
        uri: system_uri.clone(),
        what:
            "this system has no Bios resource; its BMC does not expose BIOS settings over Redfish"
                .to_string(),
    })?;
    let bios = bmc.get(&system_uri, &bios_uri)?;
    let current = attributes(&bios).ok_or_else(|| BiosError::Shape {
        uri: bios_uri.clone(),
        what: "the Bios resource has no Attributes object".to_string(),
    })?;
    let settings = bios.get("@Redfish.Settings");
    let settings_object = odata_id(settings.and_then(|s| s.get("SettingsObject")));
    let supported_apply_times = settings
        .and_then(|s| s.get("SupportedApplyTimes"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let pending = match &settings_object {
        Some(uri) => staged_changes(
            &current,
            &attributes(&bmc.get(&bios_uri, uri)?).unwrap_or_default(),
        ),
        None => BTreeMap::new(),
    };
    let attribute_registry = bios
        .get("AttributeRegistry")
        .and_then(Value::as_str)
        .map(str::to_string);
    let registry = match &attribute_registry {
        Some(id) => find_registry(bmc, id)?,
        None => None,
    };
    Ok(BiosState {
        bmc: bmc.origin().to_string(),
        system,
        bios_uri,
        attribute_registry,
        current,
        settings_object,
        supported_apply_times,
        pending,
        registry,
    })
}

impl BiosState {
    /// The values the BIOS will have after the next reset: current, overlaid with pending.
    pub fn after_reset(&self) -> BTreeMap<String, Value> {
        let mut values = self.current.clone();
        values.extend(self.pending.clone());
        values
    }

    /// The `bios` document of this state (`bios read --json`, and its `-o FILE`).
    pub fn document(&self) -> Document<&BiosState> {
        Document::new(Kind::Bios, self.host(), self)
    }

    /// The host the document describes: the system's `HostName`, else its BMC's address.
    pub fn host(&self) -> String {
        self.system
            .host_name
            .clone()
            .unwrap_or_else(|| self.bmc.clone())
    }
}

/// The `@odata.id` of the system to read.
fn choose_system(bmc: &Bmc, wanted: Option<&str>) -> Result<String, BiosError> {
    let collection = bmc.get(SYSTEMS, SYSTEMS)?;
    let members: Vec<String> = members(&collection);
    let id_of = |uri: &str| {
        uri.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string()
    };
    match wanted {
        Some(id) => members
            .iter()
            .find(|uri| id_of(uri) == id)
            .cloned()
            .ok_or_else(|| BiosError::Shape {
                uri: SYSTEMS.to_string(),
                what: format!(
                    "no system {id}; this BMC has: {}",
                    members
                        .iter()
                        .map(|u| id_of(u))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        None => match members.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(BiosError::Shape {
                uri: SYSTEMS.to_string(),
                what: "this BMC lists no system".to_string(),
            }),
            several => Err(BiosError::Shape {
                uri: SYSTEMS.to_string(),
                what: format!(
                    "this BMC has {} systems; choose one with --system ({})",
                    several.len(),
                    several
                        .iter()
                        .map(|u| id_of(u))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        },
    }
}

/// The most members of a collection, or `Location`s of a registry file, lowlat follows: BMCs
/// list a few dozen registries, each at one or two locations.
const MAX_MEMBERS: usize = 256;

/// The AttributeRegistry with `Id` `id`: the registry files are read in turn and the first whose
/// `Id` or `Registry` names it is followed to its `Location` URIs; then the others' locations
/// (some BMCs file it under another name). Only the other files' locations are kept, and the
/// walk stops at the first match. `None` when no file leads to it.
fn find_registry(bmc: &Bmc, id: &str) -> Result<Option<Registry>, BiosError> {
    let collection = bmc.get(REGISTRIES, REGISTRIES)?;
    let names = |file: &Value| {
        ["Id", "Registry"]
            .iter()
            .any(|key| file.get(key).and_then(Value::as_str) == Some(id))
    };
    let mut others: Vec<(String, Vec<String>)> = Vec::new();
    for uri in bounded(REGISTRIES, members(&collection))? {
        let file = bmc.get(REGISTRIES, &uri)?;
        let locations = bounded(&uri, locations(&file))?;
        if !names(&file) {
            others.push((uri, locations));
        } else if let Some(registry) = registry_at(bmc, &uri, &locations, id)? {
            return Ok(Some(registry));
        }
    }
    for (uri, locations) in &others {
        if let Some(registry) = registry_at(bmc, uri, locations, id)? {
            return Ok(Some(registry));
        }
    }
    Ok(None)
}

/// The registry `id` at the first of `locations` (found in the registry file `file`) that
/// serves it.
fn registry_at(
    bmc: &Bmc,
    file: &str,
    locations: &[String],
    id: &str,
) -> Result<Option<Registry>, BiosError> {
    for uri in locations {
        let resource = bmc.get(file, uri)?;
        if resource.get("Id").and_then(Value::as_str) == Some(id) {
            return Ok(Registry::from_resource(&resource));
        }
    }
    Ok(None)
}

/// The `Location[].Uri`s of a registry file.
fn locations(file: &Value) -> Vec<String> {
    file.get("Location")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("Uri")?.as_str().map(str::to_string))
        .collect()
}

/// `links` found in `resource`, refused when there are more than [`MAX_MEMBERS`].
fn bounded(resource: &str, links: Vec<String>) -> Result<Vec<String>, BiosError> {
    if links.len() > MAX_MEMBERS {
        return Err(BiosError::Shape {
            uri: resource.to_string(),
            what: format!(
                "lists {} members, more than the {MAX_MEMBERS} lowlat follows; this is not a BMC's registry list",
                links.len()
            ),
        });
    }
    Ok(links)
}

/// The `@odata.id` of each `Members` entry.
fn members(collection: &Value) -> Vec<String> {
    collection
        .get("Members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| odata_id(Some(m)))
        .collect()
}

/// The `@odata.id` of a link object.
fn odata_id(link: Option<&Value>) -> Option<String> {
    link?.get("@odata.id")?.as_str().map(str::to_string)
}

/// The `Attributes` object of a Bios or settings resource.
fn attributes(resource: &Value) -> Option<BTreeMap<String, Value>> {
    let object = resource.get("Attributes")?.as_object()?;
    Some(object.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// The staged attributes whose value differs from the current one (a settings object may list
/// every attribute, or only the changed ones).
fn staged_changes(
    current: &BTreeMap<String, Value>,
    staged: &BTreeMap<String, Value>,
) -> BTreeMap<String, Value> {
    staged
        .iter()
        .filter(|(name, value)| !current.get(*name).is_some_and(|c| same_value(c, value)))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// Why a `bios` document file (`--bios FILE`) could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BiosFileError {
    /// The file could not be read.
    #[error("--bios {}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a `bios` document.
    #[error(
        "--bios {}: cannot read it as a bios document (`lowlat bios read -o FILE` writes one)",
        .path.display()
    )]
    Layout {
        /// The file.
        path: PathBuf,
        /// Why.
        source: LayoutError,
    },
}

/// The BIOS state in the `bios` document `file` (`lowlat bios read -o FILE`), given to
/// `audit --bios FILE` and `plan --bios FILE`.
pub(crate) fn read_file(file: &Path) -> Result<BiosState, BiosFileError> {
    let text = std::fs::read_to_string(file).map_err(|source| BiosFileError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    parse_document(&text, Kind::Bios).map_err(|source| BiosFileError::Layout {
        path: file.to_path_buf(),
        source,
    })
}

/// The body of a `kind` document (`bios`, `bios-journal`) this lowlat wrote.
pub(crate) fn parse_document<T: DeserializeOwned>(
    text: &str,
    kind: Kind,
) -> Result<T, LayoutError> {
    match document::layout(text, kind)? {
        Layout::Envelope => Ok(serde_json::from_str::<Document<T>>(text)?.body),
        Layout::BeforeEnvelope => Err(LayoutError::Kind {
            expected: kind,
            found: "(no kind)".to_string(),
        }),
    }
}

/// Whether two attribute values mean the same: equal JSON, or the same boolean or integer
/// written once as JSON and once as text (some BMCs, sushy-emulator among them, report a
/// Boolean attribute as `"true"` or `"False"` after it was set to `false`).
pub(crate) fn same_value(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    let boolean = |v: &Value| match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.to_ascii_lowercase().parse::<bool>().ok(),
        _ => None,
    };
    let integer = |v: &Value| match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse::<i64>().ok(),
        _ => None,
    };
    matches!((boolean(a), boolean(b)), (Some(x), Some(y)) if x == y)
        || matches!((integer(a), integer(b)), (Some(x), Some(y)) if x == y)
}

/// The prefix of an attribute named as a setting (`bios:ProcTurboMode`): in compare's settings
/// diff (a `bios` document in a bundle) and in a fleet host's fingerprint.
pub(crate) const BIOS_PREFIX: &str = "bios:";

/// An attribute value as text (`Disabled`, `3`, `true`), to compare with the intent table.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_staged_values_that_differ_are_pending() {
        let current = attributes(&json!({"Attributes": {"A": "x", "B": 1}})).unwrap();
        let staged = attributes(&json!({"Attributes": {"A": "x", "B": 2, "C": true}})).unwrap();
        let pending = staged_changes(&current, &staged);
        assert_eq!(pending.keys().collect::<Vec<_>>(), ["B", "C"]);
        assert_eq!(value_text(&pending["B"]), "2");
        assert_eq!(value_text(&json!("Disabled")), "Disabled");
        let staged = attributes(&json!({"Attributes": {"A": "x", "B": "1"}})).unwrap();
        assert!(staged_changes(&current, &staged).is_empty());
    }

    #[test]
    fn values_written_as_text_are_the_same() {
        assert!(same_value(&json!(false), &json!("False")));
        assert!(same_value(&json!("true"), &json!(true)));
        assert!(same_value(&json!(4), &json!("4")));
        assert!(!same_value(&json!("Enabled"), &json!("enabled")));
        assert!(!same_value(&json!(true), &json!(1)));
    }
}

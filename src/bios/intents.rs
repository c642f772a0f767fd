//! BIOS intents (`smt=off`, `boost=off`, `core-cstates=off`...) and their resolution to one
//! attribute of one BMC, through that BMC's AttributeRegistry. The table is data
//! (`intents.table`, with its sources); a request may also name an attribute directly
//! (`ProcTurboMode=Disabled`). Either way the change is checked against the registry: the
//! attribute must be listed, the value allowed, and the attribute writable.

use serde_json::Value;

use super::BiosState;

const TABLE: &str = include_str!("intents.table");

/// One row of the intent table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// The intent (`smt`).
    pub intent: &'static str,
    /// Its value (`off`).
    pub value: &'static str,
    /// The Redfish attribute (`ProcHyperthreading`).
    pub attribute: &'static str,
    /// The attribute's value (`Disabled`).
    pub attribute_value: &'static str,
    /// Whose BMC names it so (`hpe`, `dell`, `lenovo`, `ami`).
    pub vendor: &'static str,
    /// Where the name comes from (tags explained at the top of the table).
    pub source: &'static str,
}

/// Every row of the table, in order.
pub(crate) fn table() -> Vec<Row> {
    TABLE
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let row = Row {
                intent: words.next()?,
                value: words.next()?,
                attribute: words.next()?,
                attribute_value: words.next()?,
                vendor: words.next()?,
                source: line[line.find('[')?..].trim(),
            };
            Some(row)
        })
        .collect()
}

/// One attribute to set, checked against the registry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BiosChange {
    /// The Redfish attribute.
    pub attribute: String,
    /// Its wanted value, typed as the registry (or the current value) says.
    pub value: Value,
    /// `DisplayName` from the registry, when it has one.
    pub display_name: Option<String>,
    /// The request it came from (`smt=off`, or `ProcTurboMode=Disabled`).
    pub request: String,
    /// The intent and its value (`smt`, `off`), when the request named one.
    pub intent: Option<(&'static str, &'static str)>,
    /// The intent table's source for the name, when it came from an intent.
    pub source: Option<&'static str>,
}

/// Why a request cannot be turned into a change on this BMC.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum IntentError {
    /// Not `NAME=VALUE`.
    #[error("{request}: give INTENT=VALUE (smt=off) or ATTRIBUTE=VALUE (ProcTurboMode=Disabled)")]
    Syntax {
        /// The request as given.
        request: String,
    },
    /// An intent the table knows, with a value it does not.
    #[error("{request}: the intent {intent} takes {known}")]
    UnknownValue {
        /// The request as given.
        request: String,
        /// The intent.
        intent: String,
        /// The values it takes, joined.
        known: String,
    },
    /// No row of the intent matches an attribute and value this BMC's registry lists.
    #[error(
        "{request}: this BMC lists none of the attributes lowlat knows for it ({tried}); set the attribute by name (ATTRIBUTE=VALUE) after looking it up with `lowlat bios read`"
    )]
    NoAttribute {
        /// The request as given.
        request: String,
        /// The attribute=value pairs tried, joined.
        tried: String,
    },
    /// An attribute the BMC does not list.
    #[error(
        "{request}: this BMC's BIOS has no attribute {attribute} (names are case-sensitive; `lowlat bios read` lists them)"
    )]
    UnknownAttribute {
        /// The request as given.
        request: String,
        /// The attribute.
        attribute: String,
    },
    /// A value the registry does not allow.
    #[error("{request}: the registry does not allow {value} for {attribute}; it allows {allowed}")]
    ValueNotAllowed {
        /// The request as given.
        request: String,
        /// The attribute.
        attribute: String,
        /// The value asked for.
        value: String,
        /// The values allowed, joined.
        allowed: String,
    },
    /// An attribute a registry dependency locks while another attribute has some value.
    #[error(
        "{request}: {attribute} is locked while {because} (the registry's dependencies); change that first (HPE: profile=custom, Dell: SysProfile=Custom), then this"
    )]
    Locked {
        /// The request as given.
        request: String,
        /// The attribute.
        attribute: String,
        /// The conditions that hold (`WorkloadProfile is LowLatency`), joined.
        because: String,
    },
    /// A read-only attribute.
    #[error("{request}: the registry marks {attribute} read-only; the BMC will not change it")]
    ReadOnly {
        /// The request as given.
        request: String,
        /// The attribute.
        attribute: String,
    },
}

/// Turns `request` (`intent=value` or `Attribute=Value`) into a change this BMC accepts.
pub(crate) fn resolve(state: &BiosState, request: &str) -> Result<BiosChange, IntentError> {
    let Some((name, value)) = request
        .split_once('=')
        .filter(|(n, v)| !n.is_empty() && !v.is_empty())
    else {
        return Err(IntentError::Syntax {
            request: request.to_string(),
        });
    };
    let rows: Vec<Row> = table().into_iter().filter(|r| r.intent == name).collect();
    if rows.is_empty() {
        return check(state, request, name, value, None);
    }
    let matching: Vec<&Row> = rows.iter().filter(|r| r.value == value).collect();
    if matching.is_empty() {
        let mut known: Vec<&str> = rows.iter().map(|r| r.value).collect();
        known.dedup();
        return Err(IntentError::UnknownValue {
            request: request.to_string(),
            intent: name.to_string(),
            known: known.join(", "),
        });
    }
    // The first row this BMC accepts; else why a row it lists was refused (read-only, value
    // not allowed); else that it lists none of them.
    let mut refused = None;
    for row in &matching {
        match check(
            state,
            request,
            row.attribute,
            row.attribute_value,
            Some(row),
        ) {
            Ok(change) => return Ok(change),
            Err(IntentError::UnknownAttribute { .. }) => {}
            Err(err) => refused = refused.or(Some(err)),
        }
    }
    Err(refused.unwrap_or_else(|| IntentError::NoAttribute {
        request: request.to_string(),
        tried: matching
            .iter()
            .map(|r| format!("{}={} ({})", r.attribute, r.attribute_value, r.vendor))
            .collect::<Vec<_>>()
            .join(", "),
    }))
}

/// Checks `attribute=value` against the registry (or, without one, against the attributes
/// the BMC reported).
fn check(
    state: &BiosState,
    request: &str,
    attribute: &str,
    value: &str,
    row: Option<&Row>,
) -> Result<BiosChange, IntentError> {
    let unknown = || IntentError::UnknownAttribute {
        request: request.to_string(),
        attribute: attribute.to_string(),
    };
    let entry = match &state.registry {
        Some(registry) => Some(registry.attribute_shown_as(attribute).ok_or_else(unknown)?),
        None if state.current.contains_key(attribute) => None,
        None => return Err(unknown()),
    };
    // The registry's own names, where `attribute` and `value` are what BIOS setup shows.
    let attribute = entry.map_or(attribute, |e| e.name.as_str());
    let value = entry.map_or(value, |e| e.value_named(value));
    let current = state.current.get(attribute);
    if let Some(entry) = entry {
        if !entry.allows(value) {
            return Err(IntentError::ValueNotAllowed {
                request: request.to_string(),
                attribute: attribute.to_string(),
                value: value.to_string(),
                allowed: entry.values.join(", "),
            });
        }
        if entry.read_only {
            return Err(IntentError::ReadOnly {
                request: request.to_string(),
                attribute: attribute.to_string(),
            });
        }
    }
    let after = state.after_reset();
    if let Some(lock) = state
        .registry
        .as_ref()
        .and_then(|r| r.lock_on(attribute, &after))
    {
        return Err(IntentError::Locked {
            request: request.to_string(),
            attribute: attribute.to_string(),
            because: lock
                .conditions
                .iter()
                .map(|c| {
                    let now = after
                        .get(&c.attribute)
                        .map_or("-".to_string(), super::value_text);
                    format!("{} is {now}", c.attribute)
                })
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let kind = entry.and_then(|e| e.kind.as_deref());
    Ok(BiosChange {
        attribute: attribute.to_string(),
        value: typed(value, kind, current),
        display_name: entry.and_then(|e| e.display_name.clone()),
        request: request.to_string(),
        intent: row.map(|r| (r.intent, r.value)),
        source: row.map(|r| r.source),
    })
}

/// Where one intent stands on a BIOS: the attribute that carries it and, in the intent's words,
/// its current and staged values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Standing {
    /// The intent (`smt`).
    pub intent: &'static str,
    /// The attribute this BMC carries it in (the registry's name: an AMI code such as
    /// `PRSS011` where the table names what BIOS setup shows).
    pub attribute: String,
    /// The current value in the intent's words (`off`), or the attribute's own value when no
    /// row names it (`Auto`).
    pub current: String,
    /// The staged value likewise, when one differs from the current value.
    pub pending: Option<String>,
}

/// Each intent whose attribute this BIOS reports, in table order.
pub(crate) fn standings(state: &BiosState) -> Vec<Standing> {
    let rows = table();
    let mut out: Vec<Standing> = Vec::new();
    for row in &rows {
        if out.iter().any(|s| s.intent == row.intent) {
            continue;
        }
        let entry = state
            .registry
            .as_ref()
            .and_then(|r| r.attribute_shown_as(row.attribute));
        let attribute = entry.map_or(row.attribute, |e| e.name.as_str());
        let Some(current) = state.current.get(attribute) else {
            continue;
        };
        let word = |value: &Value| {
            let value = super::value_text(value);
            let text = entry
                .map_or(value.as_str(), |e| e.shown_value(&value))
                .to_string();
            rows.iter()
                .find(|r| {
                    r.intent == row.intent
                        && r.attribute == row.attribute
                        && r.attribute_value == text
                })
                .map_or(text.clone(), |r| r.value.to_string())
        };
        out.push(Standing {
            intent: row.intent,
            attribute: attribute.to_string(),
            current: word(current),
            pending: state.pending.get(row.attribute).map(word),
        });
    }
    out
}

/// `value` as the JSON type the registry gives the attribute (Integer, Boolean), else as the
/// type of its current value, else as a string.
fn typed(value: &str, kind: Option<&str>, current: Option<&Value>) -> Value {
    let number = || value.parse::<i64>().ok().map(Value::from);
    let boolean = || value.parse::<bool>().ok().map(Value::from);
    let parsed = match (kind, current) {
        (Some("Integer"), _) | (None, Some(Value::Number(_))) => number(),
        (Some("Boolean"), _) | (None, Some(Value::Bool(_))) => boolean(),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bios::System;
    use crate::bios::registry::Registry;
    use serde_json::json;

    /// A BIOS whose registry lists Lenovo's SMT and turbo names, turbo read-only.
    fn lenovo() -> BiosState {
        let registry = Registry::from_resource(&json!({
            "Id": "XCC-Bios",
            "RegistryEntries": {"Attributes": [
                {"AttributeName": "Processors_HyperThreading", "DisplayName": "Hyper-Threading",
                 "Type": "Enumeration", "Value": [{"ValueName": "Enable"}, {"ValueName": "Disable"}]},
                {"AttributeName": "Processors_TurboMode", "Type": "Enumeration", "ReadOnly": true,
                 "Value": [{"ValueName": "Enable"}, {"ValueName": "Disable"}]},
                {"AttributeName": "Memory_Speed", "Type": "Integer"}
            ]}
        }));
        BiosState {
            bmc: "https://xcc".into(),
            system: System {
                uri: "/redfish/v1/Systems/1".into(),
                id: "1".into(),
                manufacturer: Some("Lenovo".into()),
                model: None,
                host_name: None,
            },
            bios_uri: "/redfish/v1/Systems/1/Bios".into(),
            attribute_registry: Some("XCC-Bios".into()),
            current: [("Processors_HyperThreading".to_string(), json!("Enable"))].into(),
            settings_object: Some("/redfish/v1/Systems/1/Bios/Pending".into()),
            supported_apply_times: vec![],
            pending: Default::default(),
            registry,
        }
    }

    #[test]
    fn every_row_is_read_and_cites_a_source() {
        let rows = table();
        assert!(rows.len() > 30, "{}", rows.len());
        for row in &rows {
            assert!(row.source.starts_with('['), "{row:?}");
            assert!(
                ["hpe", "dell", "lenovo", "ami"].contains(&row.vendor),
                "{row:?}"
            );
        }
    }

    #[test]
    fn an_intent_resolves_to_the_name_this_bmc_lists() {
        let change = resolve(&lenovo(), "smt=off").unwrap();
        assert_eq!(change.attribute, "Processors_HyperThreading");
        assert_eq!(change.value, json!("Disable"));
        assert_eq!(change.display_name.as_deref(), Some("Hyper-Threading"));
        assert_eq!(change.source, Some("[LENOVO]"));
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let state = lenovo();
        let err = |r: &str| resolve(&state, r).unwrap_err().to_string();
        assert!(err("smt").contains("INTENT=VALUE"));
        assert!(
            err("smt=maybe").contains("takes off, on"),
            "{}",
            err("smt=maybe")
        );
        let text = err("determinism=performance");
        assert!(
            text.contains("DeterminismSlider=PerformanceDeterminism (dell)"),
            "{text}"
        );
        assert!(err("boost=off").contains("marks Processors_TurboMode read-only"));
        assert!(err("Processors_TurboMode=Disable").contains("read-only"));
        assert!(err("Processors_HyperThreading=Off").contains("allows Enable, Disable"));
        assert!(err("NoSuchThing=1").contains("no attribute NoSuchThing"));
    }

    #[test]
    fn standings_speak_the_intent_words() {
        let mut state = lenovo();
        state
            .pending
            .insert("Processors_HyperThreading".into(), json!("Disable"));
        state
            .current
            .insert("Processors_TurboMode".into(), json!("Auto"));
        let standings = standings(&state);
        assert_eq!(standings.len(), 2);
        assert_eq!(
            (standings[0].intent, standings[0].current.as_str()),
            ("smt", "on")
        );
        assert_eq!(standings[0].pending.as_deref(), Some("off"));
        assert_eq!(
            (standings[1].intent, standings[1].current.as_str()),
            ("boost", "Auto")
        );
    }

    #[test]
    fn values_take_the_registry_type() {
        let change = resolve(&lenovo(), "Memory_Speed=2933").unwrap();
        assert_eq!(change.value, json!(2933));
        assert_eq!(typed("true", None, Some(&json!(false))), json!(true));
        assert_eq!(typed("x", Some("Integer"), None), json!("x"));
    }

    /// An AMI BIOS: opaque attribute and value codes, the setup names as display names.
    fn ami() -> BiosState {
        let registry = Registry::from_resource(&json!({
            "Id": "BiosAttributeRegistryAMI",
            "OwningEntity": "AMI",
            "RegistryEntries": {"Attributes": [
                {"AttributeName": "PRSS011", "DisplayName": "Hyper-Threading [ALL]",
                 "Type": "Enumeration", "Value": [
                    {"ValueName": "PRSS011_0", "ValueDisplayName": "Disable"},
                    {"ValueName": "PRSS011_1", "ValueDisplayName": "Enable"}]}
            ]}
        }));
        BiosState {
            current: [("PRSS011".to_string(), json!("PRSS011_1"))].into(),
            registry,
            ..lenovo()
        }
    }

    #[test]
    fn ami_codes_are_found_through_the_names_bios_setup_shows() {
        let state = ami();
        let change = resolve(&state, "smt=off").unwrap();
        assert_eq!(change.attribute, "PRSS011");
        assert_eq!(change.value, json!("PRSS011_0"));
        assert_eq!(
            change.display_name.as_deref(),
            Some("Hyper-Threading [ALL]")
        );
        let smt = standings(&state)
            .into_iter()
            .find(|s| s.intent == "smt")
            .unwrap();
        assert_eq!(
            (smt.attribute.as_str(), smt.current.as_str()),
            ("PRSS011", "on")
        );
        // A value named by its code or by what setup shows is the same value.
        let by_code = resolve(&state, "PRSS011=PRSS011_0").unwrap();
        let by_name = resolve(&state, "PRSS011=Disable").unwrap();
        assert_eq!(by_code.value, by_name.value);
    }
}

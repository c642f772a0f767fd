//! Settings written so that a file grows with what differs, not with CPUs × settings: a run
//! of consecutive settings that differ only in the middle part of their id
//! (`task:<comm>:affinity` of every task to move, `cpu:<N>:pm_qos_resume_latency_us` of every
//! isolated CPU, `irq:<N>:affinity` of every IRQ sent to the same CPUs) is written once, as a
//! group, and read back as the same settings in the same order. Used by plan.json's `settings`
//! and by the audit document's remediations; only the file is grouped: apply, revert and
//! verify still see, journal and check one setting per file and value.
//!
//! ```json
//! { "id": "cpu:{cpus}:pm_qos_resume_latency_us", "cpus": "1-7,9-15", "value": "0", ... }
//! { "id": "task:{names}:affinity", "names": ["chronyd", "cron"], "value": "0,8", ... }
//! ```
//!
//! `{cpus}` stands for each CPU of the `cpus` list (a CPU list, ascending), `{names}` for each
//! string of `names`, in order. A plan.json of schema 2 has no groups and reads as before.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::machine::CpuSet;
use crate::machine::cpulist::MAX_CPU;
use crate::tuning::setting::Setting;
use crate::tuning::setting_id::{NamedIdError, SettingId};

/// The placeholder of a group of CPUs.
const CPUS: &str = "{cpus}";

/// The placeholder of a group of names.
const NAMES: &str = "{names}";

/// One entry of `settings` in plan.json as written: a setting, borrowed so that a file of tens
/// of thousands of settings is written without a copy of them, or a group of settings.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Written<'a> {
    /// A setting that stands alone.
    One(&'a Setting),
    /// A run of settings; the id holds `{cpus}` or `{names}`.
    Group {
        /// The first setting of the run, with the placeholder in its id.
        #[serde(flatten)]
        setting: Setting<String>,
        /// For `{cpus}`: the CPUs, one setting each.
        #[serde(skip_serializing_if = "Option::is_none")]
        cpus: Option<CpuSet>,
        /// For `{names}`: the names, one setting each, in order.
        #[serde(skip_serializing_if = "Option::is_none")]
        names: Option<Vec<String>>,
    },
}

/// One entry of `settings` in plan.json as read: a setting, or a group of settings.
#[derive(Debug, Deserialize)]
struct Entry {
    /// The setting; for a group, its id holds `{cpus}` or `{names}`.
    #[serde(flatten)]
    setting: Setting<String>,
    /// For `{cpus}`: the CPUs, one setting each.
    #[serde(default)]
    cpus: Option<CpuSet>,
    /// For `{names}`: the names, one setting each, in order.
    #[serde(default)]
    names: Option<Vec<String>>,
}

/// The text of an id split around its middle part (`task`, `chronyd`, `affinity`), for the
/// families whose settings are grouped.
fn split(id: &SettingId) -> Option<(String, String, String)> {
    if !matches!(
        id,
        SettingId::ResumeLatency(_)
            | SettingId::Irq(_)
            | SettingId::IrqDefault
            | SettingId::EveryIrq
            | SettingId::Tasks { .. }
    ) {
        return None;
    }
    let text = id.to_string();
    let (family, rest) = text.split_once(':')?;
    let (middle, attribute) = rest.rsplit_once(':')?;
    Some((
        family.to_string(),
        middle.to_string(),
        attribute.to_string(),
    ))
}

/// The CPU a middle part names, when it is a CPU number written the canonical way.
fn cpu_of(middle: &str) -> Option<u32> {
    let cpu: u32 = middle.parse().ok()?;
    (cpu <= MAX_CPU && cpu.to_string() == middle).then_some(cpu)
}

/// Whether two settings are equal but for their ids.
fn same_but_id(a: &Setting, b: &Setting) -> bool {
    a.value == b.value
        && a.layer == b.layer
        && a.reboot == b.reboot
        && a.rationale == b.rationale
        && a.source == b.source
        && a.security_tradeoff == b.security_tradeoff
}

/// One entry of `settings` as plan.json writes it, for a reader that shows the file's form
/// (the report's plan section).
#[derive(Debug)]
pub(crate) struct Shown {
    /// The setting; a group's first, with `{cpus}` or `{names}` in its id.
    pub setting: Setting<String>,
    /// For `{cpus}`: the CPUs, one setting each.
    pub cpus: Option<CpuSet>,
    /// For `{names}`: the names, one setting each, in order.
    pub names: Option<Vec<String>>,
}

/// The entries of `settings` as plan.json writes them (runs grouped).
pub(crate) fn shown(settings: &[Setting]) -> impl Iterator<Item = Shown> + '_ {
    group(settings).map(|entry| match entry {
        Written::One(setting) => Shown {
            setting: setting.clone().with_id(setting.id.to_string()),
            cpus: None,
            names: None,
        },
        Written::Group {
            setting,
            cpus,
            names,
        } => Shown {
            setting,
            cpus,
            names,
        },
    })
}

/// The entries of `settings`, one at a time: runs of two or more groupable settings become
/// one group each.
fn group(settings: &[Setting]) -> impl Iterator<Item = Written<'_>> {
    let mut i = 0;
    std::iter::from_fn(move || {
        let first = settings.get(i)?;
        let end = run_end(settings, i);
        let run = &settings[i..end];
        i = end;
        if run.len() < 2 {
            return Some(Written::One(first));
        }
        let (family, middle, attribute) = split(&first.id).unwrap_or_default();
        let middles = run.iter().filter_map(|s| split(&s.id));
        let (placeholder, cpus, names) = if family == "cpu" && cpu_of(&middle).is_some() {
            let cpus = middles.filter_map(|(_, m, _)| cpu_of(&m)).collect();
            (CPUS, Some(cpus), None)
        } else {
            let names = middles.map(|(_, m, _)| m).collect();
            (NAMES, None, Some(names))
        };
        Some(Written::Group {
            setting: first
                .clone()
                .with_id(format!("{family}:{placeholder}:{attribute}")),
            cpus,
            names,
        })
    })
}

/// The end (exclusive) of the run of settings from `start` that can form one group: the same
/// family and attribute, equal but for the id, and, for CPUs, ascending.
fn run_end(settings: &[Setting], start: usize) -> usize {
    let Some((family, middle, attribute)) = split(&settings[start].id) else {
        return start + 1;
    };
    let as_cpu = |m: &str| if family == "cpu" { cpu_of(m) } else { None };
    let mut last_cpu = as_cpu(&middle);
    let mut end = start + 1;
    while let Some(next) = settings.get(end) {
        let Some((f, m, a)) = split(&next.id) else {
            break;
        };
        if f != family || a != attribute || !same_but_id(&settings[start], next) {
            break;
        }
        match (last_cpu, as_cpu(&m)) {
            (Some(last), Some(cpu)) if cpu > last => last_cpu = Some(cpu),
            (None, None) => {}
            _ => break,
        }
        end += 1;
    }
    end
}

/// Why a settings entry of plan.json could not be read.
#[derive(Debug, thiserror::Error)]
enum EntryError {
    /// An id (after expansion) that does not parse, named with why.
    #[error(transparent)]
    Id(#[from] NamedIdError),
    /// A group whose members do not match its placeholder (its id).
    #[error(
        "settings entry '{0}': a group has either `cpus` with {CPUS} in its id or `names` with {NAMES} in its id",
        CPUS = CPUS,
        NAMES = NAMES
    )]
    Group(String),
}

/// The setting of `id`, the rest as `setting`'s; an id that does not parse is refused,
/// naming it and why.
fn member(setting: &Setting<String>, id: String) -> Result<Setting, EntryError> {
    let parsed = SettingId::parse_named(&id)?;
    Ok(setting.clone().with_id(parsed))
}

/// The settings of `entries`, groups expanded; the problem with an entry otherwise.
fn expand(entries: Vec<Entry>) -> Result<Vec<Setting>, EntryError> {
    let mut settings = Vec::with_capacity(entries.len());
    for entry in entries {
        let id = entry.setting.id.clone();
        let members: Vec<String> = match (entry.cpus, entry.names) {
            (None, None) => {
                let parsed = SettingId::parse_named(&id)?;
                settings.push(entry.setting.with_id(parsed));
                continue;
            }
            (Some(cpus), None) if id.contains(CPUS) => {
                cpus.iter().map(|cpu| cpu.to_string()).collect()
            }
            (None, Some(names)) if id.contains(NAMES) => names,
            _ => {
                return Err(EntryError::Group(id));
            }
        };
        let placeholder = if id.contains(CPUS) { CPUS } else { NAMES };
        for name in members {
            settings.push(member(&entry.setting, id.replacen(placeholder, &name, 1))?);
        }
    }
    Ok(settings)
}

/// Writes `settings` grouped (`#[serde(serialize_with)]` of a `Vec<Setting>` field), each
/// entry as it is made.
pub(crate) fn serialize<S: Serializer>(
    settings: &[Setting],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(group(settings))
}

/// Reads grouped or plain settings (`#[serde(deserialize_with)]`).
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Setting>, D::Error> {
    expand(Vec::<Entry>::deserialize(deserializer)?).map_err(D::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::setting::Layer;

    fn runtime(id: &str, value: &str) -> Setting {
        Setting {
            id: id.parse().unwrap(),
            value: value.to_string(),
            layer: Layer::Runtime,
            reboot: false,
            rationale: "why".to_string(),
            source: "source".to_string(),
            security_tradeoff: None,
        }
    }

    fn round_trip(settings: &[Setting]) -> (serde_json::Value, Vec<Setting>) {
        let json = serde_json::to_value(group(settings).collect::<Vec<_>>()).unwrap();
        let entries: Vec<Entry> = serde_json::from_value(json.clone()).unwrap();
        (json, expand(entries).unwrap())
    }

    #[test]
    fn equal_per_cpu_settings_become_one_range() {
        let mut settings: Vec<Setting> = (1..4096)
            .filter(|cpu| cpu % 32 != 0)
            .map(|cpu| runtime(&format!("cpu:{cpu}:pm_qos_resume_latency_us"), "0"))
            .collect();
        settings.push(runtime("sysctl:vm.stat_interval", "10"));
        let (json, back) = round_trip(&settings);
        assert_eq!(back, settings);
        let entries = json.as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["id"], "cpu:{cpus}:pm_qos_resume_latency_us");
        let isolated: CpuSet = (1..4096).filter(|cpu| cpu % 32 != 0).collect();
        assert_eq!(entries[0]["cpus"], isolated.to_list());
        assert!(isolated.to_list().starts_with("1-31,33-63,"));
        assert_eq!(entries[1]["id"], "sysctl:vm.stat_interval");
        assert!(entries[1].get("cpus").is_none());
    }

    #[test]
    fn tasks_with_the_same_affinity_share_one_entry_and_order_is_kept() {
        let settings = vec![
            runtime("task:chronyd:affinity", "0,8"),
            runtime("task:cron:affinity", "0,8"),
            runtime("task:a:b:affinity", "0,8"),
            runtime("task:sshd:affinity", "0-1"),
            runtime("cpu:3:pm_qos_resume_latency_us", "0"),
            runtime("cpu:2:pm_qos_resume_latency_us", "0"),
            runtime("irq:default:affinity", "101"),
        ];
        let (json, back) = round_trip(&settings);
        assert_eq!(back, settings);
        let entries = json.as_array().unwrap();
        // The three `0,8` tasks; then sshd, CPUs 3 and 2 (not ascending) and the IRQ alone.
        assert_eq!(entries.len(), 5);
        assert_eq!(entries[0]["id"], "task:{names}:affinity");
        assert_eq!(
            entries[0]["names"],
            serde_json::json!(["chronyd", "cron", "a:b"])
        );
        assert_eq!(entries[1]["id"], "task:sshd:affinity");
    }

    #[test]
    fn a_malformed_group_is_refused_with_its_id() {
        let json = serde_json::json!([{
            "id": "task:chronyd:affinity", "names": ["a"], "value": "0",
            "layer": "runtime", "reboot": false, "rationale": "", "source": ""
        }]);
        let entries: Vec<Entry> = serde_json::from_value(json).unwrap();
        let err = expand(entries).unwrap_err().to_string();
        assert!(err.contains("'task:chronyd:affinity'"), "{err}");
    }
}

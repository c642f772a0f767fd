//! The settings diff: which of the settings that matter (`environment.settings`) differ
//! between the arms, and which differ within one arm (which makes the comparison suspect).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::run::Run;

/// The value shown for a key a run's settings lack.
const ABSENT: &str = "(absent)";

/// What differs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingsDiff {
    /// Keys whose values differ between the arms.
    pub between: Vec<KeyValues>,
    /// Keys whose values differ among the baseline's runs.
    pub within_a: Vec<KeyValues>,
    /// Keys whose values differ among the candidate's runs.
    pub within_b: Vec<KeyValues>,
    /// Runs that record no settings (peers' outputs outside a bundle with a lowlat document).
    pub unknown: Vec<String>,
}

/// One key and the values each arm has for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyValues {
    /// The setting (`cmdline:nohz_full`, `cpufreq:boost`...).
    pub key: String,
    /// The baseline's values (every distinct one, sorted); for a within-arm difference, the
    /// arm's values.
    pub a: Vec<String>,
    /// The candidate's values (empty for a within-arm difference).
    pub b: Vec<String>,
}

/// Key → the distinct values the runs with settings have.
fn values(runs: &[Run]) -> BTreeMap<String, BTreeSet<String>> {
    let known: Vec<&BTreeMap<String, String>> =
        runs.iter().filter_map(|r| r.settings.as_ref()).collect();
    let keys: BTreeSet<&String> = known.iter().flat_map(|s| s.keys()).collect();
    keys.into_iter()
        .map(|key| {
            let values = known
                .iter()
                .map(|s| s.get(key).map_or(ABSENT, String::as_str).to_string())
                .collect();
            (key.clone(), values)
        })
        .collect()
}

/// The diff of arms `a` and `b`.
pub fn diff(a: &[Run], b: &[Run]) -> SettingsDiff {
    let (va, vb) = (values(a), values(b));
    let within = |v: &BTreeMap<String, BTreeSet<String>>| {
        v.iter()
            .filter(|(_, values)| values.len() > 1)
            .map(|(key, values)| KeyValues {
                key: key.clone(),
                a: values.iter().cloned().collect(),
                b: Vec::new(),
            })
            .collect()
    };
    let known_on_both = !va.is_empty() && !vb.is_empty();
    let keys: BTreeSet<&String> = va.keys().chain(vb.keys()).collect();
    let absent = BTreeSet::from([ABSENT.to_string()]);
    let between = keys
        .into_iter()
        .filter(|_| known_on_both)
        .filter_map(|key| {
            let x = va.get(key).unwrap_or(&absent);
            let y = vb.get(key).unwrap_or(&absent);
            (x != y).then(|| KeyValues {
                key: key.clone(),
                a: x.iter().cloned().collect(),
                b: y.iter().cloned().collect(),
            })
        })
        .collect();
    SettingsDiff {
        between,
        within_a: within(&va),
        within_b: within(&vb),
        unknown: a
            .iter()
            .chain(b)
            .filter(|r| r.settings.is_none())
            .map(|r| r.source.clone())
            .collect(),
    }
}

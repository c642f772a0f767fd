//! Audit profiles: named lists of rules with per-profile expectations, kept as data in
//! `profiles.table` (one row per rule, one column per profile).

use crate::audit::rule::{Expect, Rule};
use crate::audit::rules;
use crate::audit::site::model::{Place, Site};
use crate::tuning::profile_name::{ProfileName, TunedName};

/// The profile table, compiled in.
const TABLE: &str = include_str!("profiles.table");

/// A profile's name and what it is for.
#[derive(Debug)]
pub struct ProfileInfo {
    /// The name given to `--profile`.
    pub name: ProfileName,
    /// What the profile targets, in one line.
    pub summary: &'static str,
    /// The documents it follows.
    pub sources: &'static [&'static str],
    /// Whether it isolates CPUs (its rules check the partition).
    pub isolates: bool,
}

/// The profiles, in the column order of the table.
pub const PROFILES: &[ProfileInfo] = &[
    ProfileInfo {
        name: ProfileName::LowLatency,
        summary: "isolated cores for a busy-polling application (HFT): no interruptions on the isolated CPUs",
        sources: &[
            "AMD EPYC 7002 low-latency guide",
            "TuneD cpu-partitioning",
            "TuneD network-latency",
        ],
        isolates: true,
    },
    ProfileInfo {
        name: ProfileName::RealtimeHost,
        summary: "real-time KVM host: PREEMPT_RT kernel, isolated cores for pinned vCPUs, 1G huge pages",
        sources: &["BC-Linux RT virtualization", "TuneD realtime-virtual-host"],
        isolates: true,
    },
    ProfileInfo {
        name: ProfileName::RealtimeGuest,
        summary: "real-time KVM guest: PREEMPT_RT kernel, isolated vCPUs, TSC clocksource",
        sources: &["BC-Linux RT virtualization", "TuneD realtime-virtual-guest"],
        isolates: true,
    },
    ProfileInfo {
        name: ProfileName::Throughput,
        summary: "compute throughput: SMT and boost on, every memory channel populated, performance governor",
        sources: &["Bilibili AMD tuning", "PerfSpect insights"],
        isolates: false,
    },
];

/// One rule of a profile with the profile's expectation.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The rule.
    pub rule: &'static Rule,
    /// What the profile expects of it.
    pub expect: Expect,
    /// Where the expectation was written.
    pub origin: Origin,
}

/// Where an expectation (or any value of a profile) was written: a row of the built-in table,
/// or a line of a site profile file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in profile's column of `src/audit/profiles.table`, at this 1-based line.
    Builtin {
        /// The built-in profile.
        profile: ProfileName,
        /// The table's line.
        line: usize,
    },
    /// A site profile file.
    Site(Place),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Builtin { profile, line } => {
                write!(f, "built-in {profile} (src/audit/profiles.table:{line})")
            }
            Origin::Site(place) => place.fmt(f),
        }
    }
}

/// A loaded profile: a built-in one, or a site profile file resolved onto the built-in one it
/// extends.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Name and purpose of the built-in profile (the one a site file extends).
    pub info: &'static ProfileInfo,
    /// Its rules in table order, then the rules a site file added.
    pub entries: Vec<Entry>,
    /// What a site profile file adds: its files, waivers, rules turned off, partition and
    /// check targets; `None` for a built-in profile.
    pub site: Option<Box<Site>>,
}

impl Profile {
    /// The name reports give the profile: the built-in one's, or `low-latency + site.toml`.
    pub fn label(&self) -> String {
        match &self.site {
            Some(site) => format!("{} + {}", self.info.name, site.files.join(" + ")),
            None => self.info.name.to_string(),
        }
    }

    /// The entry of one rule.
    pub fn entry(&self, rule_id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.rule.id == rule_id)
    }
}

/// What `--profile` names: a built-in profile by its name or TuneD's, or a site profile file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileChoice {
    /// A built-in profile, by its name or by TuneD's (kept to say which was used).
    Builtin {
        /// The profile.
        name: ProfileName,
        /// TuneD's name as given, when that is how it was named.
        tuned: Option<String>,
    },
    /// A site profile file.
    File(std::path::PathBuf),
}

/// Why a `--profile` value names no profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileChoiceError {
    /// TuneD's name of a profile lowlat does not have.
    #[error("TuneD's {text} has no lowlat profile: {what}")]
    TunedOnly {
        /// The name given.
        text: String,
        /// What lowlat offers instead.
        what: &'static str,
    },
    /// Neither a profile's name nor a file.
    #[error(
        "'{0}': no such profile; give a built-in profile ({names}), TuneD's name for one, or \
         a site profile file (a path ending in .toml; `lowlat profile list`)",
        names = ProfileName::valid_names()
    )]
    Unknown(String),
}

impl Default for ProfileChoice {
    fn default() -> Self {
        ProfileChoice::Builtin {
            name: ProfileName::DEFAULT,
            tuned: None,
        }
    }
}

impl std::str::FromStr for ProfileChoice {
    type Err = ProfileChoiceError;

    /// A built-in name, TuneD's name for one, or a file (a path with a `/` or ending in
    /// `.toml`).
    fn from_str(text: &str) -> Result<ProfileChoice, ProfileChoiceError> {
        if let Ok(name) = text.parse::<ProfileName>() {
            return Ok(ProfileChoice::Builtin { name, tuned: None });
        }
        match TunedName::of(text) {
            Some(TunedName::Same(name)) => Ok(ProfileChoice::Builtin {
                name,
                tuned: Some(text.to_string()),
            }),
            Some(TunedName::None(what)) => Err(ProfileChoiceError::TunedOnly {
                text: text.to_string(),
                what,
            }),
            None if text.contains('/') || text.ends_with(".toml") => {
                Ok(ProfileChoice::File(text.into()))
            }
            None => Err(ProfileChoiceError::Unknown(text.to_string())),
        }
    }
}

impl std::fmt::Display for ProfileChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProfileChoice::Builtin {
                tuned: Some(tuned), ..
            } => f.write_str(tuned),
            ProfileChoice::Builtin { name, .. } => name.fmt(f),
            ProfileChoice::File(path) => path.display().fmt(f),
        }
    }
}

impl ProfileChoice {
    /// What is worth saying of how the profile was named: TuneD's name taken for lowlat's.
    pub fn tuned_note(&self) -> Option<String> {
        match self {
            ProfileChoice::Builtin {
                name,
                tuned: Some(tuned),
            } => Some(format!(
                "--profile {tuned}: TuneD's name; lowlat's {name} profile is used"
            )),
            _ => None,
        }
    }
}

/// The profile a request names: a built-in one by name, loaded when the audit runs (so that
/// `freebsd-router` picks the FreeBSD rules of a capture), or one loaded already (a site
/// profile file laid over a built-in one).
#[derive(Debug, Clone)]
pub enum Requested {
    /// A built-in profile.
    Builtin(ProfileName),
    /// A profile loaded already.
    Loaded(Box<Profile>),
}

impl Requested {
    /// The built-in profile's name (the one a site profile extends).
    pub fn name(&self) -> ProfileName {
        match self {
            Requested::Builtin(name) => *name,
            Requested::Loaded(profile) => profile.info.name,
        }
    }

    /// The profile, loaded.
    pub fn load(&self) -> Result<Profile, ProfileError> {
        match self {
            Requested::Builtin(name) => load(*name),
            Requested::Loaded(profile) => Ok((**profile).clone()),
        }
    }
}

/// Why a profile could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// The profile judges FreeBSD captures, whose rules are not in the Linux table.
    #[error("{0}: audits a FreeBSD capture (--snapshot FILE from lowlat-capture.sh)")]
    FreeBsd(ProfileName),
    /// The compiled-in table is malformed (a bug in lowlat; the tests catch it).
    #[error("src/audit/profiles.table:{line}: {message}")]
    Table {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Loads the profile called `name`.
pub fn load(name: ProfileName) -> Result<Profile, ProfileError> {
    let Some(column) = PROFILES.iter().position(|p| p.name == name) else {
        return Err(ProfileError::FreeBsd(name));
    };
    let mut entries = Vec::new();
    for row in rows()? {
        let cell = row.cells.get(column).copied().unwrap_or("-");
        if cell == "-" {
            continue;
        }
        let expect = Expect::parse(cell, row.rule).map_err(|e| ProfileError::Table {
            line: row.line,
            message: e.to_string(),
        })?;
        entries.push(Entry {
            rule: row.rule,
            expect,
            origin: Origin::Builtin {
                profile: name,
                line: row.line,
            },
        });
    }
    Ok(Profile {
        info: &PROFILES[column],
        entries,
        site: None,
    })
}

/// The profiles that run `rule_id`, with their raw expectation cells.
pub fn uses_of(rule_id: &str) -> Result<Vec<(&'static str, &'static str)>, ProfileError> {
    let mut out = Vec::new();
    for row in rows()? {
        if row.rule.id != rule_id {
            continue;
        }
        for (info, cell) in PROFILES.iter().zip(&row.cells) {
            if *cell != "-" {
                out.push((info.name.as_str(), *cell));
            }
        }
    }
    Ok(out)
}

struct Row {
    line: usize,
    rule: &'static Rule,
    cells: Vec<&'static str>,
}

/// Parses the table: checks the header names the profiles in order, every rule exists and
/// appears once, and every row has one cell per profile.
fn rows() -> Result<Vec<Row>, ProfileError> {
    let mut out: Vec<Row> = Vec::new();
    let mut header_seen = false;
    for (index, text) in TABLE.lines().enumerate() {
        let line = index + 1;
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let mut words = text.split_whitespace();
        let first = words.next().unwrap_or_default();
        let cells: Vec<&'static str> = words.collect();
        let error = |message: String| ProfileError::Table { line, message };
        if !header_seen {
            let names: Vec<&str> = PROFILES.iter().map(|p| p.name.as_str()).collect();
            if first != "rule" || cells != names {
                return Err(error(format!("header must be 'rule {}'", names.join(" "))));
            }
            header_seen = true;
            continue;
        }
        let rule = rules::find(first).ok_or_else(|| error(format!("no rule {first}")))?;
        if cells.len() != PROFILES.len() {
            return Err(error(format!(
                "{first}: {} cells, expected one per profile ({})",
                cells.len(),
                PROFILES.len()
            )));
        }
        if out.iter().any(|r| r.rule.id == rule.id) {
            return Err(error(format!("{first} appears twice")));
        }
        out.push(Row { line, rule, cells });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuned_name_is_said() {
        let tuned: ProfileChoice = "network-latency".parse().unwrap();
        assert_eq!(
            tuned.tuned_note().unwrap(),
            "--profile network-latency: TuneD's name; lowlat's low-latency profile is used"
        );
        assert_eq!(tuned.profile().unwrap().info.name, ProfileName::LowLatency);
        let plain: ProfileChoice = "low-latency".parse().unwrap();
        assert_eq!(plain.tuned_note(), None);
        let missing = ProfileChoice::File("/nonexistent/site.toml".into());
        let err = missing.profile().unwrap_err().to_string();
        assert!(
            err.starts_with("--profile /nonexistent/site.toml: "),
            "{err}"
        );
    }

    #[test]
    fn a_profile_is_named_by_its_name_tuneds_name_or_a_file() {
        let choice = |text: &str| text.parse::<ProfileChoice>();
        let builtin = |name, tuned: Option<&str>| ProfileChoice::Builtin {
            name,
            tuned: tuned.map(str::to_string),
        };
        assert_eq!(
            choice("throughput").unwrap(),
            builtin(ProfileName::Throughput, None)
        );
        let tuned = choice("cpu-partitioning").unwrap();
        assert_eq!(tuned.to_string(), "cpu-partitioning");
        assert!(matches!(
            tuned,
            ProfileChoice::Builtin { tuned: Some(_), .. }
        ));
        assert_eq!(
            choice("site.toml").unwrap(),
            ProfileChoice::File("site.toml".into())
        );
        assert_eq!(choice("./site").unwrap().to_string(), "./site");
        let unknown = choice("low-latancy").unwrap_err().to_string();
        assert!(
            unknown.starts_with(
                "'low-latancy': no such profile; give a built-in profile (low-latency"
            ),
            "{unknown}"
        );
        let tuned_only = choice("realtime").unwrap_err().to_string();
        assert!(
            tuned_only.starts_with("TuneD's realtime has no lowlat profile: "),
            "{tuned_only}"
        );
    }

    #[test]
    fn every_profile_loads_and_every_rule_is_used() {
        let mut used = std::collections::BTreeSet::new();
        for info in PROFILES {
            let profile = load(info.name).unwrap_or_else(|e| panic!("{e}"));
            assert!(!profile.entries.is_empty(), "{}", info.name);
            used.extend(profile.entries.iter().map(|e| e.rule.id));
        }
        for rule in rules::all() {
            assert!(used.contains(rule.id), "{} is in no profile", rule.id);
        }
    }

    #[test]
    fn the_linux_table_has_every_profile_but_freebsds() {
        for name in ProfileName::ALL {
            let loaded = load(name);
            assert_eq!(loaded.is_err(), name.is_freebsd(), "{name}");
        }
        let err = load(ProfileName::FreebsdRouter).unwrap_err().to_string();
        assert!(
            err.starts_with("freebsd-router: audits a FreeBSD capture"),
            "{err}"
        );
    }

    #[test]
    fn a_rule_differs_between_profiles() {
        let uses = uses_of("LL-SMT").unwrap();
        assert_eq!(
            uses,
            vec![
                ("low-latency", "~off"),
                ("realtime-host", "off"),
                ("throughput", "on")
            ]
        );
    }
}

//! The fleet folded host by host ([`Fleet`]), then judged ([`Fleet::report`]): hosts grouped
//! by what was bought ([`GROUP_FIELDS`]), and in each group the hosts that differ from the
//! group's majority in any other fingerprint field or in any rule's verdict, field by field.
//!
//! Each distinct host state is stored once and judged once, whatever the number of hosts that
//! share it, so a fleet of identical hosts costs little more than one host. A host's measured
//! figures are its own (no two hosts measure alike); in each group, each figure's
//! distribution names the hosts outside it ([`super::spread`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::documents::{self, Attached, Figure};
use super::host::{HostError, HostRead, HostState};
use super::spread::{self, Spread};
use crate::audit::{Counts, Profile};
use crate::bios::BIOS_PREFIX;
use crate::machine::fingerprint::UNAVAILABLE;
use crate::text::escape_controls;
use crate::tuning::profile_name::ProfileName;

/// The fingerprint fields that make a group: the system model, the CPU model and the number
/// of sockets. Every other field, and every rule's verdict, is held to the group's majority.
pub(crate) const GROUP_FIELDS: &[&str] = &["firmware.system", "cpu.model", "topology.sockets"];

/// The value of a field that a host lacks while others of its group have it.
const ABSENT: &str = "absent";

/// The prefix of a rule's field (`rule:LL-SMT`), beside the fingerprint's fields.
pub(crate) const RULE_PREFIX: &str = "rule:";

/// The hosts folded so far.
#[derive(Debug, Default)]
pub(crate) struct Fleet {
    /// Each distinct state once, with its index.
    states: HashMap<HostState, usize>,
    /// The hosts, in the order folded.
    hosts: Vec<Host>,
    /// Host name → index in `hosts`.
    names: HashMap<String, usize>,
    /// The files left out.
    skipped: Vec<Skipped>,
    /// The documents read, until their hosts claim them.
    attached: Attached,
}

#[derive(Debug)]
struct Host {
    name: String,
    file: PathBuf,
    state: usize,
    figures: Vec<Figure>,
}

/// A file left out of the report, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Skipped {
    /// The file or directory.
    pub file: String,
    /// Why it is left out and what to do (naming the file).
    pub problem: String,
}

/// The judged fleet: the body of a `fleet` document (`lowlat fleet report --json`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FleetReport {
    /// The audit profile every host was judged by (the built-in one a site profile extends).
    pub profile: ProfileName,
    /// The site profile files laid over it, the one given first; absent for a built-in
    /// profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile_files: Vec<String>,
    /// The site profile's waivers, each with the hosts whose finding it waived (a waiver
    /// that waived none is listed with 0); absent for a built-in profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waivers: Vec<WaiverTally>,
    /// How many hosts are reported (snapshots read, duplicates left out).
    pub hosts: usize,
    /// How many distinct host states (fingerprint and verdicts) the hosts have.
    pub distinct_states: usize,
    /// The groups, largest first.
    pub groups: Vec<Group>,
    /// Per rule, how many hosts got each status, in the profile's order.
    pub rules: Vec<RuleTally>,
    /// The files left out, in path order.
    pub skipped: Vec<Skipped>,
}

/// A site profile's waiver and the hosts it applied to.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WaiverTally {
    /// The rule waived.
    pub rule: String,
    /// Why.
    pub reason: String,
    /// Who owns it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Its last day, `YYYY-MM-DD` (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Where it is written, `FILE:LINE`.
    pub place: String,
    /// How many hosts' findings it waived (status `waived`).
    pub hosts: usize,
}

/// Hosts of one system model, CPU model and socket count.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Group {
    /// 1 for the largest group, then counting up.
    pub id: usize,
    /// The values of [`GROUP_FIELDS`] that make the group.
    pub key: BTreeMap<String, String>,
    /// Its hosts, sorted by name.
    pub hosts: Vec<String>,
    /// The snapshot of its first host, which `fleet plan` plans from.
    pub sample: String,
    /// The fields on which no value is held by more than half of the group, so no host is an
    /// outlier for them (rules are `rule:ID`).
    pub split: Vec<String>,
    /// The hosts that differ from the group's majority, sorted by name.
    pub outliers: Vec<Outlier>,
    /// Per figure its hosts measured (result bundles fetched beside the snapshots), its
    /// distribution and the hosts outside it, by figure name; empty without bundles (absent
    /// from documents of a lowlat that read no bundles).
    #[serde(default)]
    pub measurements: Vec<Spread>,
}

/// One host that differs from its group's majority.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Outlier {
    /// The host name.
    pub host: String,
    /// Its snapshot file.
    pub file: String,
    /// Each field in which it differs.
    pub differences: Vec<Difference>,
}

/// One field in which a host differs from its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Difference {
    /// The fingerprint field (`memory.population`, `cmdline:nohz_full`) or the rule
    /// (`rule:LL-SMT`).
    pub field: String,
    /// The host's value (for a rule: its status, and what it observed when it did not pass);
    /// `absent` when the host lacks the field.
    pub value: String,
    /// The value more than half of the group holds.
    pub group: String,
}

/// How many hosts got each status from one rule.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RuleTally {
    /// The rule id.
    pub rule: String,
    /// Hosts per status.
    pub hosts: Counts,
}

impl FleetReport {
    /// Whether anything calls for a look (exit 1): an outlier, a host outside a measured
    /// figure, a file skipped.
    pub(crate) fn flagged(&self) -> bool {
        self.outliers() > 0 || self.outside() > 0 || !self.skipped.is_empty()
    }

    /// How many outliers the groups have.
    pub(crate) fn outliers(&self) -> usize {
        self.groups.iter().map(|g| g.outliers.len()).sum()
    }

    /// How many times a host is outside a figure's distribution.
    pub(crate) fn outside(&self) -> usize {
        self.groups
            .iter()
            .flat_map(|g| &g.measurements)
            .map(|m| m.outside.len())
            .sum()
    }
}

impl Fleet {
    /// Keeps the document read from `file` until its host is folded in; one that could not
    /// be read is left out.
    pub(crate) fn attach(
        &mut self,
        file: &Path,
        read: Result<Option<documents::Read>, documents::DocumentError>,
    ) {
        match read {
            Ok(Some(read)) => self.attached.add(read),
            Ok(None) => {}
            Err(problem) => self.skip(file, problem.to_string()),
        }
    }

    /// Folds in the host read from `file` with the documents that belong to it (its BIOS
    /// attributes join its fingerprint): its state is stored unless an equal one is; a host
    /// whose name was already folded is left out (the first file keeps it), as is a host that
    /// could not be read.
    pub(crate) fn add(&mut self, file: &Path, read: Result<HostRead, HostError>) {
        let mut read = match read {
            Ok(read) => read,
            Err(e) => return self.skip(file, e.to_string()),
        };
        if let Some(&first) = self.names.get(&read.host) {
            let problem = format!(
                "{}: duplicate host name {}: {} has it too and is the one reported; give every \
                 host its own host name, or remove the older snapshot",
                file.display(),
                read.host,
                self.hosts[first].file.display()
            );
            return self.skip(file, problem);
        }
        let extras = self.attached.claim(file, &read.host);
        for (attribute, value) in extras.bios {
            read.state
                .fingerprint
                .0
                .insert(format!("{BIOS_PREFIX}{attribute}"), value);
        }
        let next = self.states.len();
        let state = *self.states.entry(read.state).or_insert(next);
        self.names.insert(read.host.clone(), self.hosts.len());
        self.hosts.push(Host {
            name: read.host,
            file: read.file,
            state,
            figures: extras.figures,
        });
    }

    /// Leaves `file` out of the report because of `problem` (which names it).
    pub(crate) fn skip(&mut self, file: &Path, problem: String) {
        self.skipped.push(Skipped {
            file: file.display().to_string(),
            problem: escape_controls(&problem).into_owned(),
        });
    }

    /// Whether no host is folded in.
    pub(crate) fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// The files left out so far.
    pub(crate) fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Groups the hosts and judges each group.
    pub(crate) fn report(self, profile: &Profile) -> FleetReport {
        let mut states: Vec<Option<HostState>> = vec![None; self.states.len()];
        for (state, index) in self.states {
            states[index] = Some(state);
        }
        let states: Vec<HostState> = states.into_iter().flatten().collect();
        let mut by_key: BTreeMap<Vec<&str>, Vec<&Host>> = BTreeMap::new();
        for host in &self.hosts {
            let print = &states[host.state].fingerprint;
            let key = GROUP_FIELDS
                .iter()
                .map(|field| print.get(field).unwrap_or(UNAVAILABLE))
                .collect();
            by_key.entry(key).or_default().push(host);
        }
        let mut keyed: Vec<(Vec<&str>, Vec<&Host>)> = by_key.into_iter().collect();
        keyed.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        let groups = keyed
            .into_iter()
            .enumerate()
            .map(|(i, (key, members))| judge(i + 1, &key, members, &states))
            .collect();
        let mut skipped = self.skipped;
        for (file, problem) in self.attached.unclaimed() {
            skipped.push(Skipped {
                file: file.display().to_string(),
                problem: escape_controls(&problem).into_owned(),
            });
        }
        skipped.sort_by(|a, b| a.file.cmp(&b.file));
        let rules = tally(&self.hosts, &states);
        let site = profile.site.as_ref();
        let waivers = site.map_or(&[][..], |s| &s.waivers[..]).iter();
        let waivers = waivers
            .map(|w| WaiverTally {
                rule: w.rule.id.to_string(),
                reason: w.reason.clone(),
                owner: w.owner.clone(),
                until: w.until.map(|d| d.to_string()),
                place: w.place.to_string(),
                hosts: (rules.iter().find(|r| r.rule == w.rule.id)).map_or(0, |r| r.hosts.waived),
            })
            .collect();
        FleetReport {
            profile: profile.info.name,
            profile_files: site.map(|s| s.files.clone()).unwrap_or_default(),
            waivers,
            hosts: self.hosts.len(),
            distinct_states: states.len(),
            groups,
            rules,
            skipped,
        }
    }
}

/// Per rule, the hosts of each status, in the order the rules first appear.
fn tally(hosts: &[Host], states: &[HostState]) -> Vec<RuleTally> {
    let mut sharing = vec![0usize; states.len()];
    for host in hosts {
        sharing[host.state] += 1;
    }
    let mut rules: Vec<RuleTally> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (state, n) in states.iter().zip(sharing) {
        for verdict in &state.verdicts {
            let at = *index.entry(&verdict.rule).or_insert_with(|| {
                rules.push(RuleTally {
                    rule: verdict.rule.clone(),
                    hosts: Counts::default(),
                });
                rules.len() - 1
            });
            rules[at].hosts.add(verdict.status, n);
        }
    }
    rules
}

/// One field of a host state: its name, the value compared, and the value shown.
struct Field<'a> {
    name: String,
    value: &'a str,
    shown: String,
}

/// Every field of `state`: the fingerprint's, then one per rule.
fn fields(state: &HostState) -> Vec<Field<'_>> {
    let prints = state.fingerprint.0.iter().map(|(key, value)| Field {
        name: key.clone(),
        value,
        shown: value.clone(),
    });
    let rules = state.verdicts.iter().map(|v| Field {
        name: format!("{RULE_PREFIX}{}", v.rule),
        value: v.status.name(),
        shown: if v.observed.is_empty() {
            v.status.name().to_string()
        } else {
            format!("{}: {}", v.status.name(), v.observed)
        },
    });
    prints.chain(rules).collect()
}

/// Judges one group: each field's majority value, then each host's differences from it.
fn judge(id: usize, key: &[&str], mut members: Vec<&Host>, states: &[HostState]) -> Group {
    members.sort_by(|a, b| a.name.cmp(&b.name));
    let total = members.len();
    let mut sharing: BTreeMap<usize, usize> = BTreeMap::new();
    for host in &members {
        *sharing.entry(host.state).or_default() += 1;
    }
    let mut tallies: BTreeMap<String, HashMap<&str, usize>> = BTreeMap::new();
    for (&state, &n) in &sharing {
        for field in fields(&states[state]) {
            *tallies
                .entry(field.name)
                .or_default()
                .entry(field.value)
                .or_default() += n;
        }
    }
    let mut majority: BTreeMap<&str, &str> = BTreeMap::new();
    let mut split = Vec::new();
    for (field, values) in &mut tallies {
        let present: usize = values.values().sum();
        if present < total {
            values.insert(ABSENT, total - present);
        }
        match values.iter().find(|&(_, &count)| count * 2 > total) {
            Some((&value, _)) => {
                majority.insert(field, value);
            }
            None => split.push(field.clone()),
        }
    }
    let differences: BTreeMap<usize, Vec<Difference>> = sharing
        .keys()
        .map(|&state| {
            let own: HashMap<String, Field> = fields(&states[state])
                .into_iter()
                .map(|f| (f.name.clone(), f))
                .collect();
            let differing = majority
                .iter()
                .filter_map(|(&field, &expected)| {
                    let value = own.get(field).map_or(ABSENT, |f| f.value);
                    (value != expected).then(|| Difference {
                        field: field.to_string(),
                        value: own
                            .get(field)
                            .map_or_else(|| ABSENT.to_string(), |f| f.shown.clone()),
                        group: expected.to_string(),
                    })
                })
                .collect();
            (state, differing)
        })
        .collect();
    let outliers = members
        .iter()
        .filter(|host| !differences[&host.state].is_empty())
        .map(|host| Outlier {
            host: host.name.clone(),
            file: host.file.display().to_string(),
            differences: differences[&host.state].clone(),
        })
        .collect();
    let measurements = spread::spreads(
        members
            .iter()
            .map(|host| (host.name.as_str(), host.figures.as_slice())),
    );
    Group {
        id,
        measurements,
        key: GROUP_FIELDS
            .iter()
            .zip(key)
            .map(|(field, value)| (field.to_string(), value.to_string()))
            .collect(),
        hosts: members.iter().map(|h| h.name.clone()).collect(),
        sample: members[0].file.display().to_string(),
        split,
        outliers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::FindingStatus;
    use crate::fleet::host::RuleVerdict;
    use crate::machine::fingerprint::Fingerprint;

    fn host(
        name: &str,
        cpu: &str,
        bios: &str,
        status: FindingStatus,
    ) -> Result<HostRead, HostError> {
        let fields = [
            ("firmware.system", "R740"),
            ("cpu.model", cpu),
            ("topology.sockets", "2"),
            ("firmware.bios_version", bios),
        ];
        let print = Fingerprint(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let observed = if status == FindingStatus::Pass {
            ""
        } else {
            "on"
        };
        Ok(HostRead {
            host: name.into(),
            file: PathBuf::from(format!("{name}.lowlat")),
            state: HostState {
                fingerprint: print,
                verdicts: vec![RuleVerdict {
                    rule: "LL-SMT".into(),
                    status,
                    observed: observed.into(),
                }],
            },
        })
    }

    #[test]
    fn the_minority_is_named_field_by_field_and_a_tie_judges_no_one() {
        let mut fleet = Fleet::default();
        for (name, cpu, bios, status) in [
            ("a", "Xeon", "1", FindingStatus::Pass),
            ("b", "Xeon", "1", FindingStatus::Pass),
            ("c", "Xeon", "2", FindingStatus::Fail),
            ("d", "Epyc", "1", FindingStatus::Pass),
            ("e", "Epyc", "2", FindingStatus::Pass),
        ] {
            fleet.add(Path::new(name), host(name, cpu, bios, status));
        }
        fleet.add(
            Path::new("again"),
            host("a", "Xeon", "1", FindingStatus::Pass),
        );
        let profile = crate::audit::profile::load(ProfileName::LowLatency).unwrap();
        let report = fleet.report(&profile);
        assert_eq!(report.hosts, 5);
        assert_eq!(report.distinct_states, 4, "a and b share one state");
        let xeon = &report.groups[0];
        assert_eq!(xeon.hosts, ["a", "b", "c"]);
        assert_eq!(xeon.outliers.len(), 1);
        assert_eq!(xeon.outliers[0].host, "c");
        let difference = |field: &str, value: &str, group: &str| Difference {
            field: field.into(),
            value: value.into(),
            group: group.into(),
        };
        assert_eq!(
            xeon.outliers[0].differences,
            [
                difference("firmware.bios_version", "2", "1"),
                difference("rule:LL-SMT", "fail: on", "pass"),
            ]
        );
        let epyc = &report.groups[1];
        assert!(epyc.outliers.is_empty());
        assert_eq!(epyc.split, ["firmware.bios_version"]);
        assert_eq!(report.skipped.len(), 1);
        assert!(
            report.skipped[0]
                .problem
                .starts_with("again: duplicate host name a: a.lowlat has it too"),
            "{:?}",
            report.skipped
        );
        assert_eq!(
            (report.rules[0].hosts.pass, report.rules[0].hosts.fail),
            (4, 1)
        );
        assert_eq!(report.outliers(), 1);
    }
}

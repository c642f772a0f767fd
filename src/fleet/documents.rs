//! The documents beside the snapshots: a `bios` document (`lowlat bios read -o FILE`) adds the
//! BIOS attributes the BMC reported to its host's fingerprint (`bios:ATTRIBUTE`), and the
//! measurement documents of a result bundle (`lowlat measure … --out DIR`) give the host's
//! measured figures ([`Figure`]), which the fleet compares between the hosts of a group.
//!
//! A document belongs to the host whose snapshot is the only one in its directory or in the
//! directory above (one directory per host, as the collection fetches them:
//! `<host>/bios.json`, `<host>/bundle/measure-jitter.json`); elsewhere (all files in one
//! directory) to the host its envelope names (`host`). JSON files that are no lowlat document
//! (no `kind`) and documents of other kinds (`audit.json`) are passed over; a document that
//! cannot be read is left out and named, as a damaged snapshot is.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::bios::{self, BiosState, value_text};
use crate::compare::error::LoadError;
use crate::compare::run::Run;
use crate::document::{Kind, LayoutError, Stamp};
use crate::report::runs;

/// The prefix of the fingerprint fields a `bios` document adds (`bios:NumaNodesPerSocket`),
/// as in compare's settings diff.
pub(crate) use crate::report::runs::BIOS_PREFIX;

/// One figure a host measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// What it is: the kind and the figure (`measure-jitter p99`: the 99th percentile of the
    /// host's worst CPU; `measure-jitter max`; `measure-membw triad`: the best rate).
    pub metric: String,
    /// Its unit: `ns` for latencies, `MB/s` for rates.
    pub unit: &'static str,
    /// Whether a higher value is the better one (rates; for latencies lower is better).
    pub higher_is_better: bool,
    /// The value, in `unit`.
    pub value: f64,
}

/// What the documents of one host add to it.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Extras {
    /// BIOS attribute → its value as text, from `bios` documents.
    pub bios: BTreeMap<String, String>,
    /// The figures of its measurement documents.
    pub figures: Vec<Figure>,
    /// The documents read, for messages.
    pub files: Vec<PathBuf>,
}

impl Extras {
    fn merge(&mut self, other: Extras) {
        self.bios.extend(other.bios);
        self.figures.extend(other.figures);
        self.files.extend(other.files);
    }
}

/// Whom a document belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    /// The host of this snapshot file (the only one in the document's directory or the one
    /// above).
    Snapshot(PathBuf),
    /// The host of this name (the document's `host`).
    Host(String),
}

/// One document read: whom it belongs to and what it adds.
#[derive(Debug)]
pub(crate) struct Read {
    /// Its host.
    pub owner: Owner,
    /// What it adds.
    pub extras: Extras,
}

/// The documents of the fleet, by the host they belong to, until each host claims its own.
#[derive(Debug, Default)]
pub(crate) struct Attached {
    by_owner: HashMap<Owner, Extras>,
}

impl Attached {
    /// Adds a document read.
    pub(crate) fn add(&mut self, read: Read) {
        self.by_owner
            .entry(read.owner)
            .or_default()
            .merge(read.extras);
    }

    /// Takes what the documents add to the host `name` of the snapshot `file`.
    pub(crate) fn claim(&mut self, file: &Path, name: &str) -> Extras {
        let mut extras = self
            .by_owner
            .remove(&Owner::Snapshot(file.to_path_buf()))
            .unwrap_or_default();
        if let Some(named) = self.by_owner.remove(&Owner::Host(name.to_string())) {
            extras.merge(named);
        }
        extras
    }

    /// The documents no host claimed, with why (naming each file), in path order.
    pub(crate) fn unclaimed(self) -> Vec<(PathBuf, String)> {
        let mut left: Vec<(PathBuf, String)> = self
            .by_owner
            .into_iter()
            .flat_map(|(owner, extras)| {
                let why = match owner {
                    Owner::Snapshot(file) => format!(
                        "belongs to the host of {}, which was left out",
                        file.display()
                    ),
                    Owner::Host(name) => format!(
                        "belongs to host {name}, but no snapshot of {name} is among the inputs; \
                         give its snapshot too"
                    ),
                };
                extras.files.into_iter().map(move |f| {
                    let problem = format!("{}: {why}", f.display());
                    (f, problem)
                })
            })
            .collect();
        left.sort();
        left
    }
}

/// The directories that hold snapshots: for each, its only snapshot (`None`: several).
#[derive(Debug, Default)]
pub(crate) struct SnapshotDirs<'a>(HashMap<&'a Path, Option<&'a Path>>);

impl<'a> SnapshotDirs<'a> {
    /// The directories of `snapshots`.
    pub(crate) fn of(snapshots: &'a [PathBuf]) -> Self {
        let mut dirs: HashMap<&Path, Option<&Path>> = HashMap::new();
        for snapshot in snapshots {
            if let Some(dir) = snapshot.parent() {
                dirs.entry(dir)
                    .and_modify(|only| *only = None)
                    .or_insert(Some(snapshot));
            }
        }
        Self(dirs)
    }

    /// The snapshot that is the only one in the directory of `file` or, when that holds none,
    /// in the directory above.
    fn sole(&self, file: &Path) -> Option<PathBuf> {
        file.ancestors()
            .skip(1)
            .take(2)
            .find_map(|dir| self.0.get(dir))
            .and_then(|only| only.map(Path::to_path_buf))
    }
}

/// Why a document found beside the snapshots could not be read; each names the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DocumentError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", .file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error(
        "{}:{}: not a JSON document ({source}); remove it or fetch it again",
        .file.display(),
        .source.line()
    )]
    NotJson {
        /// The file.
        file: PathBuf,
        /// What the parser said (with the line).
        source: serde_json::Error,
    },
    /// A `bios` document this lowlat cannot read.
    #[error("{}: a bios document lowlat cannot read: {source}", .file.display())]
    Bios {
        /// The file.
        file: PathBuf,
        /// Why.
        source: LayoutError,
    },
    /// A measurement document that does not load (the error names the file).
    #[error(transparent)]
    Measure(#[from] LoadError),
}

/// Reads the document `file` (a JSON file found beside the `snapshots`): `Ok(None)` when it
/// adds nothing to a host (no lowlat document, or another kind), an error naming the file when
/// it cannot be read.
pub(crate) fn read(
    file: &Path,
    snapshots: &SnapshotDirs<'_>,
) -> Result<Option<Read>, DocumentError> {
    let text = std::fs::read_to_string(file).map_err(|source| DocumentError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    let stamp: Stamp = serde_json::from_str(&text).map_err(|source| DocumentError::NotJson {
        file: file.to_path_buf(),
        source,
    })?;
    let (Some(kind), Some(host)) = (stamp.kind, stamp.host) else {
        return Ok(None);
    };
    let extras = match kind.as_str() {
        "bios" => {
            let state: BiosState =
                bios::parse_document(&text, Kind::Bios).map_err(|source| DocumentError::Bios {
                    file: file.to_path_buf(),
                    source,
                })?;
            Extras {
                bios: state
                    .current
                    .iter()
                    .map(|(name, value)| (name.clone(), value_text(value)))
                    .collect(),
                ..Extras::default()
            }
        }
        "measure-jitter" | "measure-timer" | "measure-membw" => {
            let loaded = runs::load(&[file.to_path_buf()])?;
            Extras {
                figures: loaded
                    .runs
                    .iter()
                    .flat_map(|run| figures(&kind, run))
                    .collect(),
                ..Extras::default()
            }
        }
        _ => return Ok(None),
    };
    let extras = Extras {
        files: vec![file.to_path_buf()],
        ..extras
    };
    let owner = snapshots
        .sole(file)
        .map_or(Owner::Host(host), Owner::Snapshot);
    Ok(Some(Read { owner, extras }))
}

/// The figures of one run of a `kind` document: for latencies the 99th percentile and the
/// largest latency of the worst CPU, for bandwidth the best rate of each kernel.
fn figures(kind: &str, run: &Run) -> Vec<Figure> {
    if !run.rates.is_empty() {
        return run
            .rates
            .iter()
            .map(|(kernel, &rate)| Figure {
                metric: format!("{kind} {kernel}"),
                unit: "MB/s",
                higher_is_better: true,
                value: rate,
            })
            .collect();
    }
    let worst = |q: f64| {
        run.cpus
            .values()
            .map(|series| series.values.quantile(q))
            .filter(|v| v.is_finite())
            .reduce(f64::max)
    };
    [("p99", 0.99), ("max", 1.0)]
        .into_iter()
        .filter_map(|(name, q)| {
            worst(q).map(|value| Figure {
                metric: format!("{kind} {name}"),
                unit: "ns",
                higher_is_better: false,
                value,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_belongs_to_the_only_snapshot_beside_it_or_above_it() {
        let snapshots = [
            PathBuf::from("/c/a/a.lowlat"),
            PathBuf::from("/c/flat/x.lowlat"),
            PathBuf::from("/c/flat/y.lowlat"),
        ];
        let dirs = SnapshotDirs::of(&snapshots);
        let owner = |f: &str| dirs.sole(Path::new(f));
        assert_eq!(owner("/c/a/bios.json"), Some(snapshots[0].clone()));
        assert_eq!(
            owner("/c/a/bundle/measure-jitter.json"),
            Some(snapshots[0].clone())
        );
        assert_eq!(owner("/c/flat/x.bios.json"), None, "two snapshots there");
        assert_eq!(owner("/c/b/bios.json"), None, "no snapshot there");
    }

    #[test]
    fn a_host_claims_its_documents_by_file_and_by_name_and_the_rest_are_named() {
        let mut attached = Attached::default();
        let extras = |attribute: &str, file: &str| Extras {
            bios: BTreeMap::from([(attribute.to_string(), "1".to_string())]),
            figures: Vec::new(),
            files: vec![PathBuf::from(file)],
        };
        attached.add(Read {
            owner: Owner::Snapshot(PathBuf::from("a/a.lowlat")),
            extras: extras("A", "a/bios.json"),
        });
        attached.add(Read {
            owner: Owner::Host("a".into()),
            extras: extras("B", "flat/a.bios.json"),
        });
        attached.add(Read {
            owner: Owner::Host("ghost".into()),
            extras: extras("C", "flat/ghost.bios.json"),
        });
        let claimed = attached.claim(Path::new("a/a.lowlat"), "a");
        assert_eq!(claimed.bios.keys().collect::<Vec<_>>(), ["A", "B"]);
        let left = attached.unclaimed();
        assert_eq!(left.len(), 1);
        assert!(
            left[0].1.starts_with(
                "flat/ghost.bios.json: belongs to host ghost, but no snapshot of ghost"
            ),
            "{left:?}"
        );
    }
}

//! What `lowlat report` is given, read: lowlat documents (a file, one per line of a `watch
//! --json` stream, a directory of them, an earlier report), a sosreport drawn as its inventory
//! and its audit, and peer tools' outputs read as `lowlat compare` reads them.

use std::path::{Path, PathBuf};

use super::{Budget, Source, SourceError};
use crate::audit::Profile;
use crate::compare::error::LoadError;
use crate::compare::run::Run;
use crate::report::runs::{load, sort_in_run_order};
use crate::report::sosreport::{self, BundleError};
use crate::snapshot::sosreport::is_bundle;
use crate::text::escape_controls;

/// The inputs read: the documents to draw and embed, the peers' runs to draw, and what the
/// readers of the sosreports said (one line each, escaped).
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    /// The documents, in the order given.
    pub sources: Vec<Source>,
    /// The peers' runs.
    pub runs: Vec<Run>,
    /// What the sosreports' readers said, each line led by its bundle.
    pub notes: Vec<String>,
}

/// Why an input cannot go into a report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InputError {
    /// The input cannot be read.
    #[error("{}: cannot read it (give a file or a directory)", .path.display())]
    Missing {
        /// The input.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A directory that cannot be listed.
    #[error("{}: cannot list it", .dir.display())]
    List {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An entry of a directory that cannot be read.
    #[error(transparent)]
    Entry(std::io::Error),
    /// A directory without documents.
    #[error("{}: no *.json or *.jsonl file in this directory; give lowlat documents or a bundle of them", .0.display())]
    Empty(PathBuf),
    /// A file that is not text.
    #[error("{}: not text, so no lowlat document; give the JSON documents of `--json` (from a snapshot: lowlat --snapshot FILE inventory --json > inventory.json)", .0.display())]
    NotText(PathBuf),
    /// A file that cannot be read.
    #[error("{}: cannot read it: {error}", .file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A directory of several sosreports: a fleet.
    #[error("{}: holds {count} sosreports ({}, {}, ...): a fleet; draw it with `lowlat fleet report {} --html FILE`, or give one sosreport",
        .dir.display(), escape_controls(&.first.display().to_string()),
        escape_controls(&.second.display().to_string()), .dir.display())]
    Fleet {
        /// The directory.
        dir: PathBuf,
        /// How many sosreports it holds.
        count: usize,
        /// The first two, by name.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// The profile a sosreport's audit needs cannot be loaded.
    #[error(transparent)]
    Profile(Box<dyn std::error::Error + Send + Sync>),
    /// A sosreport gave no documents.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// A document cannot be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The peers' outputs cannot be read.
    #[error(
        "{0} (report reads lowlat JSON documents, and the peers' outputs compare reads: sysjitter, cyclictest, oslat, STREAM, likwid-bench)"
    )]
    Peers(LoadError),
}

/// Reads the `inputs` in order; a sosreport is audited against the profile `profile` loads,
/// loaded at the first sosreport (and not at all without one).
pub(crate) fn read<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    inputs: &[PathBuf],
    mut profile: impl FnMut() -> Result<Profile, E>,
) -> Result<Inputs, InputError> {
    let mut read = Inputs::default();
    // Files that are not JSON nor a report: peers' outputs, read by compare's loader.
    let mut peers = Vec::new();
    // What the reports among the inputs may inflate to, all of them together.
    let mut budget = Budget::default();
    let mut loaded = None;
    for input in inputs {
        if let Some(bundle) = sosreport(input)? {
            let profile = match &loaded {
                Some(profile) => profile,
                None => loaded.insert(profile().map_err(|e| InputError::Profile(e.into()))?),
            };
            let documents = sosreport::documents(&bundle, profile)?;
            let shown = escape_controls(&bundle.display().to_string()).into_owned();
            read.notes.extend(
                documents
                    .notes
                    .iter()
                    .map(|line| format!("{shown}: {line}")),
            );
            for (name, json) in documents.documents {
                read.sources
                    .extend(Source::parse_all(&name, json, &mut budget)?);
            }
            continue;
        }
        for file in files(input)? {
            let text = std::fs::read_to_string(&file).map_err(|error| {
                if error.kind() == std::io::ErrorKind::InvalidData {
                    InputError::NotText(file.clone())
                } else {
                    InputError::Read {
                        file: file.clone(),
                        error,
                    }
                }
            })?;
            let start = text.trim_start();
            if start.starts_with('{') || start.starts_with('<') || start.is_empty() {
                let name = file.display().to_string();
                read.sources
                    .extend(Source::parse_all(&name, text, &mut budget)?);
            } else {
                peers.push(file);
            }
        }
    }
    if !peers.is_empty() {
        read.runs = load(&peers).map_err(InputError::Peers)?.runs;
    }
    Ok(read)
}

/// The sosreport `input` is, or the one sosreport the directory `input` holds beside no
/// lowlat document; `None` for anything else. A directory of several is refused: a fleet.
fn sosreport(input: &Path) -> Result<Option<PathBuf>, InputError> {
    if is_bundle(input) {
        return Ok(Some(input.to_path_buf()));
    }
    let Ok(entries) = std::fs::read_dir(input) else {
        return Ok(None);
    };
    let paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    let documents = paths.iter().any(|p| is_document(p));
    let mut bundles: Vec<&PathBuf> = paths.iter().filter(|p| is_bundle(p)).collect();
    bundles.sort();
    match bundles.as_slice() {
        _ if documents => Ok(None),
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        [first, second, ..] => Err(InputError::Fleet {
            dir: input.to_path_buf(),
            count: bundles.len(),
            first: first.to_path_buf(),
            second: second.to_path_buf(),
        }),
    }
}

/// Whether `path` is named as a document (`*.json`, `*.jsonl`).
fn is_document(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "json" || e == "jsonl")
}

/// The files of one input: itself, or a directory's `*.json` and `*.jsonl` files by name.
fn files(input: &Path) -> Result<Vec<PathBuf>, InputError> {
    let meta = std::fs::metadata(input).map_err(|source| InputError::Missing {
        path: input.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(vec![input.to_path_buf()]);
    }
    let entries = std::fs::read_dir(input).map_err(|source| InputError::List {
        dir: input.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(InputError::Entry)?.path();
        if is_document(&path) && path.is_file() {
            files.push(path);
        }
    }
    // A bundle's runs in the order measured (measure-jitter.json, -2, ... -10), not by name.
    sort_in_run_order(&mut files);
    if files.is_empty() {
        return Err(InputError::Empty(input.to_path_buf()));
    }
    Ok(files)
}

//! The files a fleet is read from: the files given, and under each directory given the snapshots
//! (files named `*.lowlat` or starting with zstd's magic number), the sosreports (each
//! `sosreport-*` directory, not walked into, and each `*.tar.xz`/`*.tar.gz` archive: one host
//! per bundle, see [`crate::snapshot::sosreport::is_bundle`]) and the documents beside them
//! (files named `*.json`: `bios` documents and result bundles, see [`super::documents`]), in one
//! directory per host as the Ansible collection fetches them, or all in one directory. Other
//! files (logs) are passed over, and so is `audit.json`: the audit is made again, offline, from
//! the snapshot.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::snapshot::{ZSTD_MAGIC, sosreport};

/// How many directory levels are walked below each directory given.
const MAX_DEPTH: usize = 3;

/// An input that cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot read it ({source}); give snapshot files or directories of them", .path.display())]
pub(crate) struct InputError {
    /// The file or directory.
    pub path: PathBuf,
    /// The error of the read.
    pub source: std::io::Error,
}

/// What was found under the inputs.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The hosts' files: snapshots and sosreports (directories or archives), sorted by path.
    pub snapshots: Vec<PathBuf>,
    /// The JSON files (documents that may belong to a host), sorted by path.
    pub documents: Vec<PathBuf>,
    /// The directories (given, or under one given) that hold no snapshot, the outermost of
    /// each such subtree only.
    pub empty: Vec<PathBuf>,
    /// What the walk did not read, and why (naming it): symbolic links to a snapshot, a
    /// document or a directory, and directories deeper than three levels.
    pub passed_over: Vec<(PathBuf, String)>,
}

/// Finds the snapshots and documents of `inputs`. A file given is taken as a document when its
/// name ends in `.json`, as a snapshot whatever other name it has; a directory is walked three
/// levels deep, symbolic links not followed (those that lead to a snapshot, a document or a
/// directory, and the directories deeper, are listed in [`Found::passed_over`]).
pub(crate) fn find(inputs: &[PathBuf]) -> Result<Found, InputError> {
    let mut found = Found::default();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|source| InputError {
            path: input.clone(),
            source,
        })?;
        if sosreport::is_bundle(input) {
            found.snapshots.push(input.clone());
            continue;
        }
        if !meta.is_dir() {
            if is_document(input) {
                found.documents.push(input.clone());
            } else {
                found.snapshots.push(input.clone());
            }
            continue;
        }
        walk(input, input, MAX_DEPTH, &mut found)?;
    }
    found.snapshots.sort();
    found.snapshots.dedup();
    found.documents.sort();
    found.documents.dedup();
    // The outermost directory of each subtree without snapshots, but for a bundle: documents
    // in a directory beside a snapshot.
    let all_empty: HashSet<PathBuf> = found.empty.iter().cloned().collect();
    let beside: HashSet<&Path> = found.snapshots.iter().filter_map(|s| s.parent()).collect();
    let documents = &found.documents;
    let holds_documents = |dir: &Path| {
        let first = documents.partition_point(|d| d.as_path() < dir);
        documents.get(first).is_some_and(|d| d.starts_with(dir))
    };
    found.empty.retain(|dir| {
        let bundle = dir.parent().is_some_and(|p| beside.contains(p)) && holds_documents(dir);
        !bundle && !dir.ancestors().skip(1).any(|a| all_empty.contains(a))
    });
    found.empty.sort();
    found.empty.dedup();
    Ok(found)
}

/// Adds the snapshots and documents under `dir` (`depth` levels below the input `given`) to
/// `found`, and `dir` to its empty directories when it holds no snapshot; the links and
/// directories too deep that it does not read go to `found.passed_over`.
fn walk(dir: &Path, given: &Path, depth: usize, found: &mut Found) -> Result<(), InputError> {
    let before = found.snapshots.len();
    let unreadable = |source| InputError {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(unreadable)?;
        if kind.is_symlink() {
            if let Some(what) = link_to_input(&path) {
                let problem = format!(
                    "{}: a symbolic link to {what}, not followed; give its target as an input",
                    path.display()
                );
                found.passed_over.push((path, problem));
            }
        } else if (kind.is_dir() || kind.is_file()) && sosreport::is_bundle(&path) {
            found.snapshots.push(path);
        } else if kind.is_dir() && depth > 0 {
            walk(&path, given, depth - 1, found)?;
        } else if kind.is_dir() && std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some()) {
            let problem = format!(
                "{}: more than {MAX_DEPTH} levels below {}, not read; give it (or a directory \
                 nearer it) as an input",
                path.display(),
                given.display()
            );
            found.passed_over.push((path, problem));
        } else if kind.is_file() && is_document(&path) {
            found.documents.push(path);
        } else if kind.is_file() && is_snapshot(&path) {
            found.snapshots.push(path);
        }
    }
    if found.snapshots.len() == before {
        found.empty.push(dir.to_path_buf());
    }
    Ok(())
}

/// What the symbolic link `path` leads to when it is something a fleet reads (a directory, a
/// snapshot or a document); `None` for anything else (a log, a dangling link).
fn link_to_input(path: &Path) -> Option<&'static str> {
    let target = std::fs::metadata(path).ok()?;
    if target.is_dir() {
        Some("a directory")
    } else if is_document(path) {
        Some("a document")
    } else if target.is_file() && (is_snapshot(path) || sosreport::is_bundle(path)) {
        Some("a snapshot")
    } else {
        None
    }
}

/// Whether `path` is named like a document: `*.json`.
fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Whether `path` looks like a snapshot: its name ends in `.lowlat` (then a damaged one is
/// reported, not passed over) or it starts with zstd's magic number.
fn is_snapshot(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "lowlat") {
        return true;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == ZSTD_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// links and directories too deep were passed over without a word.
    #[test]
    fn links_and_directories_too_deep_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(elsewhere.join("h3")).unwrap();
        std::fs::write(elsewhere.join("h2.lowlat"), b"x").unwrap();
        std::fs::write(elsewhere.join("log"), b"x").unwrap();
        let fleet = dir.path().join("fleet");
        std::fs::create_dir_all(fleet.join("a/b/c/d")).unwrap();
        std::fs::write(fleet.join("a/b/c/d/h4.lowlat"), b"x").unwrap();
        std::os::unix::fs::symlink(elsewhere.join("h2.lowlat"), fleet.join("h2.lowlat")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("h3"), fleet.join("h3")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("log"), fleet.join("log")).unwrap();
        let found = find(std::slice::from_ref(&fleet)).unwrap();
        let problems: Vec<&str> = found.passed_over.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(problems.len(), 3, "{problems:#?}");
        let has = |text: &str| problems.iter().any(|p| p.contains(text));
        assert!(
            has("h2.lowlat: a symbolic link to a snapshot, not followed"),
            "{problems:#?}"
        );
        assert!(
            has("h3: a symbolic link to a directory, not followed"),
            "{problems:#?}"
        );
        assert!(has("a/b/c/d: more than 3 levels below"), "{problems:#?}");
    }

    #[test]
    fn snapshots_are_found_by_name_or_magic_and_other_files_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("db1");
        std::fs::create_dir(&host).unwrap();
        std::fs::write(host.join("db1.lowlat"), b"garbage").unwrap();
        std::fs::write(host.join("audit.json"), b"{}").unwrap();
        std::fs::create_dir(host.join("bundle")).unwrap();
        std::fs::write(host.join("bundle/measure-jitter.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("raw"), [0x28, 0xb5, 0x2f, 0xfd, 0]).unwrap();
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(empty.join("below")).unwrap();
        let found = find(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(
            found.snapshots,
            [host.join("db1.lowlat"), dir.path().join("raw")]
        );
        assert_eq!(
            found.documents,
            [
                host.join("audit.json"),
                host.join("bundle/measure-jitter.json")
            ]
        );
        assert_eq!(found.empty, [empty]);
        assert!(found.passed_over.is_empty(), "{:?}", found.passed_over);
        let err = find(&[dir.path().join("missing")]).unwrap_err();
        assert!(err.to_string().contains("missing: cannot read it"), "{err}");
    }
}

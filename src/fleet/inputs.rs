//! The files a fleet is read from: the files given, and under each directory given the snapshots
//! (files named `*.lowlat` or starting with zstd's magic number) and the documents beside them
//! (files named `*.json`: `bios` documents and result bundles, see [`super::documents`]), in one
//! directory per host as the Ansible collection fetches them, or all in one directory. Other
//! files (logs) are passed over, and so is `audit.json`: the audit is made again, offline, from
//! the snapshot.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::snapshot::ZSTD_MAGIC;

/// How many directory levels are walked below each directory given.
const MAX_DEPTH: usize = 3;

/// An input that cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot read it ({source}); give snapshot files or directories of them", .path.display())]
pub struct InputError {
    /// The file or directory.
    pub path: PathBuf,
    /// The error of the read.
    pub source: std::io::Error,
}

/// What was found under the inputs.
#[derive(Debug, Default)]
pub struct Found {
    /// The snapshot files, sorted by path.
    pub snapshots: Vec<PathBuf>,
    /// The JSON files (documents that may belong to a host), sorted by path.
    pub documents: Vec<PathBuf>,
    /// The directories (given, or under one given) that hold no snapshot, the outermost of
    /// each such subtree only.
    pub empty: Vec<PathBuf>,
}

/// Finds the snapshots and documents of `inputs`. A file given is taken as a document when its
/// name ends in `.json`, as a snapshot whatever other name it has; a directory is walked three
/// levels deep, symbolic links not followed.
pub fn find(inputs: &[PathBuf]) -> Result<Found, InputError> {
    let mut found = Found::default();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|source| InputError {
            path: input.clone(),
            source,
        })?;
        if !meta.is_dir() {
            if is_document(input) {
                found.documents.push(input.clone());
            } else {
                found.snapshots.push(input.clone());
            }
            continue;
        }
        walk(input, MAX_DEPTH, &mut found)?;
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

/// Adds the snapshots and documents under `dir` to `found`, and `dir` to its empty directories
/// when it holds no snapshot.
fn walk(dir: &Path, depth: usize, found: &mut Found) -> Result<(), InputError> {
    let before = found.snapshots.len();
    let unreadable = |source| InputError {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(unreadable)?;
        if kind.is_dir() && depth > 0 {
            walk(&path, depth - 1, found)?;
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
        let err = find(&[dir.path().join("missing")]).unwrap_err();
        assert!(err.to_string().contains("missing: cannot read it"), "{err}");
    }
}

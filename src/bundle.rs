//! Result bundles: a directory of lowlat documents, one JSON file each, that `--out DIR`
//! (`check` and every `measure` engine) writes and that `compare` and `report` read.
//!
//! A document's file is named after its kind: the first `measure-jitter` is
//! `measure-jitter.json`, the next `measure-jitter-2.json`, so runs accumulate in one bundle
//! and list in the order they were written. A few kinds describe the bundle rather than a run
//! and keep one file that each write replaces ([`Bundle::put`]): `inventory.json`, the
//! machine as it was at the latest run. Files are written atomically (a reader never sees half
//! of one) and synced, so a crash keeps every document that was complete.

use std::path::{Path, PathBuf};

use crate::document::Kind;
use crate::sysroot::{
    Durability, OutputDirError, Perms, WriteError, prepare_output_dir, write_file_atomically,
};

/// The most documents of one kind a bundle holds (`measure-jitter-9999.json`).
const MAX_PER_KIND: u32 = 9999;

/// Why a bundle could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The directory is unusable.
    #[error(transparent)]
    Dir(#[from] OutputDirError),
    /// A document could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Every name for another document of the kind is taken.
    #[error("{}: holds {MAX_PER_KIND} {kind} documents already; start another bundle", .dir.display())]
    Full {
        /// The bundle.
        dir: PathBuf,
        /// The kind.
        kind: Kind,
    },
    /// A file or directory could not be read.
    #[error("{}: cannot {op}: {source}", .path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`read`, `list the directory`).
        op: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file is not a JSON object.
    #[error("{}:{line}:{column}: not a JSON document: {message}", .path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// A JSON file without the envelope's `kind`.
    #[error(
        "{}: a JSON object without `kind`: not a lowlat document (lowlat 0.1 wrote none; rerun the command with this lowlat)",
        .0.display()
    )]
    NoKind(PathBuf),
    /// Nothing to read.
    #[error("{}: holds no .json documents", .0.display())]
    Empty(PathBuf),
}

/// A bundle directory being written.
#[derive(Debug, Clone)]
pub struct Bundle {
    dir: PathBuf,
}

impl Bundle {
    /// Opens `dir` for writing, creating it (and its parents) when missing. An existing
    /// directory is kept and added to: a bundle collects runs.
    pub fn open(dir: &Path) -> Result<Self, BundleError> {
        prepare_output_dir(dir, true)?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a `kind` document (its JSON text) under the next free name of the kind; returns
    /// the file written.
    pub fn add(&self, kind: Kind, json: &str) -> Result<PathBuf, BundleError> {
        let path = (1..=MAX_PER_KIND)
            .map(|n| self.dir.join(file_name(kind, n)))
            .find(|path| std::fs::symlink_metadata(path).is_err())
            .ok_or(BundleError::Full {
                dir: self.dir.clone(),
                kind,
            })?;
        self.write(&path, json)?;
        Ok(path)
    }

    /// Writes the bundle's one `kind` document (the inventory), replacing the earlier one.
    pub fn put(&self, kind: Kind, json: &str) -> Result<PathBuf, BundleError> {
        let path = self.dir.join(file_name(kind, 1));
        self.write(&path, json)?;
        Ok(path)
    }

    fn write(&self, path: &Path, json: &str) -> Result<(), BundleError> {
        write_file_atomically(
            path,
            json.as_bytes(),
            Perms::mode(0o644),
            Durability::Synced,
        )?;
        Ok(())
    }
}

/// The file of the `n`th (1-based) `kind` document of a bundle.
fn file_name(kind: Kind, n: u32) -> String {
    if n == 1 {
        format!("{kind}.json")
    } else {
        format!("{kind}-{n}.json")
    }
}

/// One document read from a file or a bundle.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file it came from.
    pub path: PathBuf,
    /// Its `kind` as written (kinds of other lowlat versions included).
    pub kind: String,
    /// The whole document.
    pub value: serde_json::Value,
}

/// Reads the documents at `path`: one file, or every `*.json` file of a bundle directory in
/// name order (the order they were written for each kind). Errors name the file and, for
/// JSON that does not parse, the line and column.
pub fn read(path: &Path) -> Result<Vec<Loaded>, BundleError> {
    let read_error = |op, source| BundleError::Read {
        path: path.to_path_buf(),
        op,
        source,
    };
    let meta = std::fs::metadata(path).map_err(|e| read_error("read", e))?;
    if !meta.is_dir() {
        return Ok(vec![read_file(path)?]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| read_error("list the directory", e))? {
        let entry = entry.map_err(|e| read_error("list the directory", e))?;
        let file = entry.path();
        if file.extension().is_some_and(|e| e == "json") && file.is_file() {
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(BundleError::Empty(path.to_path_buf()));
    }
    files.sort_by_key(|path| natural_key(path));
    files.iter().map(|file| read_file(file)).collect()
}

/// Sorts `measure-jitter-10.json` after `measure-jitter-9.json`.
fn natural_key(path: &Path) -> (String, u32) {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((base, n)) if n.parse::<u32>().is_ok() && Kind::named(base).is_some() => {
            (base.to_string(), n.parse().unwrap_or(0))
        }
        _ => (stem, 1),
    }
}

fn read_file(path: &Path) -> Result<Loaded, BundleError> {
    let text = std::fs::read_to_string(path).map_err(|source| BundleError::Read {
        path: path.to_path_buf(),
        op: "read",
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| BundleError::NotJson {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| BundleError::NoKind(path.to_path_buf()))?
        .to_string();
    Ok(Loaded {
        path: path.to_path_buf(),
        kind,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(kind: Kind, n: u32) -> String {
        format!(r#"{{"schema_version":2,"kind":"{kind}","run":{n}}}"#)
    }

    #[test]
    fn documents_accumulate_under_numbered_names_and_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = Bundle::open(&dir.path().join("runs/a")).unwrap();
        for n in 1..=11 {
            bundle
                .add(Kind::MeasureJitter, &doc(Kind::MeasureJitter, n))
                .unwrap();
        }
        bundle
            .put(Kind::Inventory, &doc(Kind::Inventory, 1))
            .unwrap();
        let again = bundle
            .put(Kind::Inventory, &doc(Kind::Inventory, 2))
            .unwrap();
        assert_eq!(again.file_name().unwrap(), "inventory.json");
        let loaded = read(bundle.dir()).unwrap();
        assert_eq!(loaded.len(), 12);
        assert_eq!(loaded[0].kind, "inventory");
        assert_eq!(loaded[0].value["run"], 2);
        let runs: Vec<i64> = loaded[1..]
            .iter()
            .map(|l| l.value["run"].as_i64().unwrap())
            .collect();
        assert_eq!(runs, (1..=11).collect::<Vec<_>>());
        assert!(loaded[1].path.ends_with("measure-jitter.json"));
        assert!(loaded[11].path.ends_with("measure-jitter-11.json"));
        // Reopening adds to the bundle instead of refusing it.
        let reopened = Bundle::open(bundle.dir()).unwrap();
        let next = reopened.add(Kind::MeasureJitter, "{}").unwrap();
        assert!(next.ends_with("measure-jitter-12.json"));
    }

    #[test]
    fn bad_files_are_named_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.json");
        std::fs::write(&file, "{\n  \"kind\": \"measure-jitter\",\n  oops\n}").unwrap();
        let err = read(&file).unwrap_err().to_string();
        assert!(err.contains("x.json:3:"), "{err}");
        std::fs::write(&file, r#"{"schema_version": 1}"#).unwrap();
        let err = read(&file).unwrap_err().to_string();
        assert!(err.contains("without `kind`"), "{err}");
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let err = read(&empty).unwrap_err().to_string();
        assert!(err.contains("holds no .json documents"), "{err}");
        let err = read(&dir.path().join("missing")).unwrap_err().to_string();
        assert!(err.contains("missing: cannot read"), "{err}");
        std::fs::write(dir.path().join("file"), "").unwrap();
        assert!(Bundle::open(&dir.path().join("file")).is_err());
    }
}

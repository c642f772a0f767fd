//! Result bundles: a directory of lowlat documents, one JSON file each, that `--out DIR`
//! (`check` and every `measure` engine) writes and that `compare` and `report` read.
//!
//! Readers (`compare`, `report`) take a bundle as every document file in it.
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
pub(crate) enum BundleError {
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
    /// A checkpoint could not be removed.
    #[error("{}: cannot remove it: {source}", .path.display())]
    Remove {
        /// The checkpoint.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// A bundle directory being written.
#[derive(Debug, Clone)]
pub(crate) struct Bundle {
    dir: PathBuf,
}

impl Bundle {
    /// Opens `dir` for writing, creating it (and its parents) when missing. An existing
    /// directory is kept and added to: a bundle collects runs.
    pub(crate) fn open(dir: &Path) -> Result<Self, BundleError> {
        prepare_output_dir(dir, true)?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a `kind` document (its JSON text) under the next free name of the kind; returns
    /// the file written.
    pub(crate) fn add(&self, kind: Kind, json: &str) -> Result<PathBuf, BundleError> {
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
    pub(crate) fn put(&self, kind: Kind, json: &str) -> Result<PathBuf, BundleError> {
        let path = self.dir.join(file_name(kind, 1));
        self.write(&path, json)?;
        Ok(path)
    }

    /// Writes `documents` in their order, each added ([`Bundle::add`]) but the inventory,
    /// which replaces the bundle's one ([`Bundle::put`]); stops at the first that fails.
    pub(crate) fn add_all(&self, documents: &[(Kind, String)]) -> Result<(), BundleError> {
        documents.iter().try_for_each(|(kind, json)| match kind {
            Kind::Inventory => self.put(*kind, json).map(drop),
            _ => self.add(*kind, json).map(drop),
        })
    }

    /// Writes the results so far of a long `kind` run (`measure-jitter.checkpoint.json`),
    /// replacing the previous checkpoint; returns the file. Readers take it as one more run of
    /// the kind: after a crash it is the run.
    pub(crate) fn checkpoint(&self, kind: Kind, json: &str) -> Result<PathBuf, BundleError> {
        let path = self.checkpoint_path(kind);
        self.write(&path, json)?;
        Ok(path)
    }

    /// Removes the checkpoint of a `kind` run once its document is in the bundle.
    pub(crate) fn remove_checkpoint(&self, kind: Kind) -> Result<(), BundleError> {
        let path = self.checkpoint_path(kind);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BundleError::Remove { path, source: e })
            }
            _ => Ok(()),
        }
    }

    fn checkpoint_path(&self, kind: Kind) -> PathBuf {
        self.dir.join(format!("{kind}.checkpoint.json"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(kind: Kind, n: u32) -> String {
        format!(r#"{{"schema_version":2,"kind":"{kind}","run":{n}}}"#)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn documents_accumulate_under_numbered_names() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = Bundle::open(&dir.path().join("runs/a")).unwrap();
        for n in 1..=3 {
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
        assert_eq!(
            names(bundle.dir()),
            [
                "inventory.json",
                "measure-jitter-2.json",
                "measure-jitter-3.json",
                "measure-jitter.json"
            ]
        );
        let second = std::fs::read_to_string(bundle.dir().join("measure-jitter-2.json")).unwrap();
        assert_eq!(second, doc(Kind::MeasureJitter, 2));
        let inventory = std::fs::read_to_string(again).unwrap();
        assert_eq!(inventory, doc(Kind::Inventory, 2));
        // A checkpoint is replaced, then removed once the run's document is in.
        bundle
            .checkpoint(Kind::MeasureTimer, &doc(Kind::MeasureTimer, 1))
            .unwrap();
        let path = bundle
            .checkpoint(Kind::MeasureTimer, &doc(Kind::MeasureTimer, 2))
            .unwrap();
        assert!(path.ends_with("measure-timer.checkpoint.json"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            doc(Kind::MeasureTimer, 2)
        );
        bundle.remove_checkpoint(Kind::MeasureTimer).unwrap();
        bundle.remove_checkpoint(Kind::MeasureTimer).unwrap();
        assert!(!path.exists());
        // Reopening adds to the bundle instead of refusing it.
        let reopened = Bundle::open(bundle.dir()).unwrap();
        let next = reopened.add(Kind::MeasureJitter, "{}").unwrap();
        assert!(next.ends_with("measure-jitter-4.json"));
    }

    #[test]
    fn a_file_is_not_a_bundle() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let err = Bundle::open(&dir.path().join("file"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}

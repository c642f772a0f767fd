//! The steps of `lowlat snapshot` around the archive itself: a snapshot of a snapshot, or its
//! output, refused before anything is read ([`check_output`]), and `--extract` ([`extract`]): the snapshot opened
//! first, so that one that cannot be read leaves no directory behind.

use std::path::{Path, PathBuf};

use super::{Manifest, SnapshotError, extract_tree, open};
use crate::sysroot::{OutputDirError, prepare_output_dir};

/// Why `lowlat snapshot` refused its output, or could not extract.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SnapshotJobError {
    /// The machine read is itself a snapshot.
    #[error("--snapshot: a snapshot cannot be taken of a snapshot; copy the file instead")]
    OfSnapshot,
    /// `-o` names a directory.
    #[error(
        "-o {}: is a directory; give the snapshot's file name (-o {}/$(hostname).lowlat)",
        .0.display(),
        .0.display()
    )]
    OutputIsDir(PathBuf),
    /// `-o` names a file that exists, and `--force` was not given.
    #[error("-o {}: the file exists; choose another name or add --force", .0.display())]
    OutputExists(PathBuf),
    /// The snapshot to extract cannot be read.
    #[error("--snapshot")]
    Open(#[source] SnapshotError),
    /// The directory to extract into cannot be used.
    #[error("--extract {0}{hint}", hint = match .0 {
        OutputDirError::NotEmpty(_) => "; or add --force",
        _ => "",
    })]
    Dir(OutputDirError),
    /// The captured files could not be copied.
    #[error("--extract {}", dir.display())]
    Copy {
        /// The directory extracted into.
        dir: PathBuf,
        /// Why.
        source: SnapshotError,
    },
}

/// Refuses to take a snapshot of a snapshot (`of_snapshot`), and `-o output` when it is a
/// directory, or a file that exists without `force`.
pub(crate) fn check_output(
    output: &Path,
    force: bool,
    of_snapshot: bool,
) -> Result<(), SnapshotJobError> {
    if of_snapshot {
        return Err(SnapshotJobError::OfSnapshot);
    }
    if output.is_dir() {
        return Err(SnapshotJobError::OutputIsDir(output.to_path_buf()));
    }
    if output.exists() && !force {
        return Err(SnapshotJobError::OutputExists(output.to_path_buf()));
    }
    Ok(())
}

/// Writes the files captured in the snapshot `file` as a tree under `dir` (`force`: a `dir`
/// that is not empty is used too), and returns the snapshot's manifest.
pub(crate) fn extract(file: &Path, dir: &Path, force: bool) -> Result<Manifest, SnapshotJobError> {
    let (root, manifest) = open(file).map_err(SnapshotJobError::Open)?;
    prepare_output_dir(dir, force).map_err(SnapshotJobError::Dir)?;
    extract_tree(root.dir_path(), dir).map_err(|source| SnapshotJobError::Copy {
        dir: dir.to_path_buf(),
        source,
    })?;
    Ok(manifest)
}

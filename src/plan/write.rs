//! Writing a plan's artifacts into an output directory: refused when the directory holds
//! anything unless forced, each file written atomically (temporary file, fsync, rename).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::artifacts::Artifact;
use crate::snapshot::write_atomically;

/// Why the artifacts could not be written; each names the path.
#[derive(Debug, thiserror::Error)]
pub enum WriteDirError {
    /// The output path exists and is not a directory.
    #[error("{}: exists and is not a directory; choose a directory path", .0.display())]
    NotADirectory(PathBuf),
    /// The output directory could not be listed.
    #[error("{}: cannot list the directory: {source}", path.display())]
    List {
        /// The directory.
        path: PathBuf,
        /// The error of the listing.
        source: std::io::Error,
    },
    /// The output directory holds files and replacing them was not asked for.
    #[error("{}: the directory is not empty; choose an empty or new directory", .0.display())]
    NotEmpty(PathBuf),
    /// A directory, a file or a file's mode could not be written.
    #[error("cannot {action} {}: {reason}", path.display())]
    Write {
        /// What was being done: `create`, `write`, `set the mode of`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The error, as the system reported it.
        reason: String,
    },
}

/// Writes `artifacts` under `dir` (created if missing) and returns the paths written. A
/// directory that is not empty is refused unless `force`; with `force` the artifacts replace
/// files of the same name and nothing else is touched.
pub fn write_dir(
    dir: &Path,
    artifacts: &[Artifact],
    force: bool,
) -> Result<Vec<PathBuf>, WriteDirError> {
    if dir.exists() {
        if !dir.is_dir() {
            return Err(WriteDirError::NotADirectory(dir.to_path_buf()));
        }
        let mut entries = std::fs::read_dir(dir).map_err(|source| WriteDirError::List {
            path: dir.to_path_buf(),
            source,
        })?;
        if entries.next().is_some() && !force {
            return Err(WriteDirError::NotEmpty(dir.to_path_buf()));
        }
    }
    let mut written = Vec::new();
    for artifact in artifacts {
        let path = dir.join(&artifact.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| failed("create", parent, e))?;
        }
        write_atomically(&path, artifact.content.as_bytes())
            .map_err(|e| failed("write", &path, format!("{e:#}")))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| failed("set the mode of", &path, e))?;
        written.push(path);
    }
    Ok(written)
}

fn failed(action: &'static str, path: &Path, reason: impl std::fmt::Display) -> WriteDirError {
    WriteDirError::Write {
        action,
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(path: &str, content: &str) -> Artifact {
        Artifact {
            path: path.into(),
            install: None,
            content: content.into(),
        }
    }

    #[test]
    fn writes_nested_files_and_refuses_a_non_empty_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let files = [artifact("a.txt", "a\n"), artifact("sub/b.conf", "b\n")];
        let written = write_dir(&out, &files, false).unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(
            std::fs::read_to_string(out.join("sub/b.conf")).unwrap(),
            "b\n"
        );
        let mode = std::fs::metadata(out.join("a.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);

        let err = write_dir(&out, &files, false).unwrap_err();
        assert!(matches!(err, WriteDirError::NotEmpty(_)), "{err}");
        assert!(err.to_string().contains("not empty"), "{err}");

        std::fs::write(out.join("mine.txt"), "keep").unwrap();
        write_dir(&out, &[artifact("a.txt", "new\n")], true).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("a.txt")).unwrap(), "new\n");
        assert_eq!(
            std::fs::read_to_string(out.join("mine.txt")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn refuses_a_file_as_directory() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let err = write_dir(tmp.path(), &[], true).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}

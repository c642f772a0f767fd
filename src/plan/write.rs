//! Writing a plan's artifacts into an output directory: refused when the directory holds
//! anything unless forced, each file written atomically (temporary file, fsync, rename), never
//! through a link that leads out of the directory.

use std::path::{Path, PathBuf};

use super::artifacts::Artifact;
use crate::sysroot::{OutputDirError, Perms, SysRoot, WriteError, prepare_output_dir};

/// Why the artifacts could not be written; each names the path.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteDirError {
    /// The output directory cannot be used.
    #[error(transparent)]
    Dir(#[from] OutputDirError),
    /// An artifact could not be written (the error names its path).
    #[error(transparent)]
    Install(#[from] WriteError),
}

/// A refused `--out DIR`: the refusal, and `--force` suggested only where it would help.
#[derive(Debug, thiserror::Error)]
#[error("--out {source}{}", force_hint(source))]
pub(crate) struct OutError {
    /// Why.
    source: WriteDirError,
}

fn force_hint(e: &WriteDirError) -> &'static str {
    match e {
        WriteDirError::Dir(OutputDirError::NotEmpty(_)) => {
            "; or add --force to replace lowlat's files in it"
        }
        _ => "",
    }
}

/// [`write_dir`] for `--out DIR` (a plan's files, or the man pages).
pub(crate) fn write_out(
    dir: &Path,
    artifacts: &[Artifact<'_>],
    force: bool,
) -> Result<Vec<PathBuf>, OutError> {
    write_dir(dir, artifacts, force).map_err(|source| OutError { source })
}

/// Writes `artifacts` under `dir` (created if missing) and returns the paths written. A
/// directory that is not empty is refused unless `force`; with `force` the artifacts replace
/// files of the same name and nothing else is touched.
pub(crate) fn write_dir(
    dir: &Path,
    artifacts: &[Artifact<'_>],
    force: bool,
) -> Result<Vec<PathBuf>, WriteDirError> {
    prepare_output_dir(dir, force)?;
    let out = SysRoot::dir(dir);
    let mut written = Vec::new();
    for artifact in artifacts {
        let path = dir.join(&artifact.path);
        out.install_file_with(&artifact.path, Perms::mode(0o644), |file| {
            artifact.write_to(file)
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn artifact(path: &str, content: &str) -> Artifact<'static> {
        Artifact::text(path, None, content.into())
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
        assert!(
            matches!(err, WriteDirError::Dir(OutputDirError::NotEmpty(_))),
            "{err}"
        );
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
    fn plan_json_is_streamed_byte_for_byte_as_rendered_whole() {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines/epyc7f32-2s");
        let machine = crate::machine::Machine::read(&SysRoot::dir(fixture));
        let request = crate::plan::request::PlanRequest::default();
        let plan = crate::plan::build(&machine, &request, |_| Vec::new()).unwrap();
        let files = crate::plan::artifacts::render(&plan);
        let tmp = tempfile::tempdir().unwrap();
        write_dir(tmp.path(), &files, false).unwrap();
        let written = std::fs::read_to_string(tmp.path().join("plan.json")).unwrap();
        assert_eq!(written, plan.to_json());
        assert!(written.ends_with("}\n"));
        assert_eq!(crate::plan::Plan::from_json(&written).unwrap(), plan);
    }

    #[test]
    fn refuses_a_file_as_directory() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let err = write_dir(tmp.path(), &[], true).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}

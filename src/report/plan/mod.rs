//! Renderings of a plan: the terminal summary, the diff against the machine, and the list of
//! the files `plan --out` wrote.

pub mod diff;
pub(crate) mod planned;
pub(crate) mod summary;

use std::path::Path;

use crate::plan::artifacts::Artifact;
use crate::text::Page;

/// The page of `plan --out DIR`: how many files were written to `dir`, then each, with where
/// it is installed when it is installed as is.
pub(crate) fn written_text(files: &[Artifact<'_>], dir: &Path) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "lowlat: wrote {} files to {}",
        files.len(),
        dir.display()
    );
    for file in files {
        match file.install {
            Some(install) => writeln!(out, "  {:<46} -> {install}", file.path),
            None => writeln!(out, "  {}", file.path),
        }
    }
    out.into_string()
}

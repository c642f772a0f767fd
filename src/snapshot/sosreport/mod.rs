//! A sosreport as a machine to read (`--sosreport DIR|FILE`): the unpacked `sosreport-*`
//! directory or the `.tar.xz`/`.tar.gz` archive sos wrote, in the layouts of sos 3.x and 4.x.
//!
//! sos copies some /proc, /sys and /etc files into the report, laid out like `/`, and keeps
//! the rest as the outputs of the commands it ran (`sos_commands/`). The reader makes one
//! private machine tree of both: the copies as sos wrote them (`tree.rs`), and, where sos
//! kept an output instead, the file a live machine would show, written from it: the kernel
//! release from `uname -a`, the sysctls from `sysctl -a`, the TuneD profile from `tuned-adm
//! active`, the NICs' settings from the `ethtool -i/-c/-g/-l/-k/-T` outputs (`commands.rs`), the
//! processes from the `ps` outputs (`ps.rs`). Each written file
//! names the output and line it came from (the tree's [`crate::machine::origins`]), so audit
//! evidence names the bundle's file. The tree is then read as `--root` reads one: links out
//! of it are refused, and what the bundle does not hold is unknown, never absent.

mod archive;
mod commands;
mod ps;
mod tree;

use std::path::{Path, PathBuf};

use crate::text::escape_controls;

/// A sosreport made into a machine tree, which lives as long as this value.
#[derive(Debug)]
pub struct SosReport {
    /// The machine tree (read it with `SysRoot::dir`).
    pub dir: PathBuf,
    /// What lowlat reads that the bundle does not hold, each with what depends on it.
    pub lacks: Vec<String>,
    /// What the reader said of the bundle: files left out, lines that are not rows, facts
    /// that disagree.
    pub notes: Vec<String>,
    /// The private directory of the tree.
    _tempdir: crate::sysroot::Scratch,
}

/// Why a path is not a sosreport lowlat can read.
#[derive(Debug, thiserror::Error)]
pub enum SosReportError {
    /// Neither a directory nor a file.
    #[error("{}: no such directory or file (give the sosreport-* directory or the sosreport-*.tar.xz sos wrote)", escape_controls(&.0.display().to_string()))]
    NotFound(PathBuf),
    /// A directory without sos's own directories.
    #[error(
        "{}: not a sosreport (no sos_commands/, sos_logs/ or sos_reports/ in it, nor one \
         sosreport-* directory holding them); give the sosreport-* directory or the \
         sosreport-*.tar.xz sos wrote",
        escape_controls(&.0.display().to_string())
    )]
    NotASosReport(PathBuf),
    /// The archive could not be read, or the tree not written.
    #[error("{}: {}", escape_controls(&.file.display().to_string()), escape_controls(&.source.to_string()))]
    Io {
        /// The bundle given.
        file: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

fn has_sos_dirs(dir: &Path) -> bool {
    ["sos_commands", "sos_logs", "sos_reports"]
        .iter()
        .any(|name| dir.join(name).is_dir())
}

/// Whether `path` looks like a sosreport: a directory holding sos's own directories
/// (`sos_commands/` ...), or a file named like the archives sos writes (`*.tar.xz`, `*.tar.gz`).
/// A directory that merely holds one is not one: a fleet reads each bundle it holds apart.
pub(crate) fn is_bundle(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if meta.is_dir() {
        return has_sos_dirs(path);
    }
    meta.is_file()
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".tar.xz") || n.ends_with(".tar.gz"))
}

/// The name of the bundle at `path` (`sosreport-node1-2026-11-27-abcdefg`, an archive's name
/// without `.tar.xz`), escaped: a host's name where the bundle holds none.
pub(crate) fn bundle_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = [".tar.xz", ".tar.gz"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(&name);
    escape_controls(name).into_owned()
}

/// The report directory of `dir`: itself, or the one `sosreport-*` directory it holds.
fn report_dir(dir: &Path) -> Result<PathBuf, SosReportError> {
    if has_sos_dirs(dir) {
        return Ok(dir.to_path_buf());
    }
    let inner: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|_| SosReportError::NotASosReport(dir.to_path_buf()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("sosreport-"))
                && has_sos_dirs(path)
        })
        .collect();
    match inner.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(SosReportError::NotASosReport(dir.to_path_buf())),
    }
}

/// Opens `path` (a sosreport directory, a directory holding exactly one `sosreport-*`
/// directory, or a sosreport archive) and makes its machine tree.
pub fn open(path: &Path) -> Result<SosReport, SosReportError> {
    let io = |source| SosReportError::Io {
        file: path.to_path_buf(),
        source,
    };
    // Removed when dropped, and when a signal ends lowlat while it lives (a fleet unpacks
    // one bundle per worker).
    let tempdir = crate::sysroot::Scratch::new("lowlat-sosreport-").map_err(io)?;
    let mut notes = Vec::new();
    let (report, tree_dir) = if path.is_dir() {
        let report = report_dir(path)?;
        let tree_dir = tempdir.path().join("root");
        std::fs::create_dir(&tree_dir).map_err(io)?;
        let copied =
            tree::copy_report(&report, &tree_dir, crate::snapshot::MAX_TOTAL_BYTES).map_err(io)?;
        notes.extend(copied.left_out);
        (report, tree_dir)
    } else if path.is_file() {
        let unpacked = archive::unpack(path, tempdir.path()).map_err(io)?;
        notes.extend(unpacked.notes);
        if !has_sos_dirs(&unpacked.report) {
            return Err(SosReportError::NotASosReport(path.to_path_buf()));
        }
        (unpacked.report.clone(), unpacked.report)
    } else {
        return Err(SosReportError::NotFound(path.to_path_buf()));
    };
    let outputs = commands::Outputs::new(&report);
    let mut tree = tree::Tree::new(tree_dir.clone());
    commands::kernel_release(&outputs, &mut tree, &mut notes);
    commands::sysctls(&outputs, &mut tree, &mut notes);
    commands::hostname(&outputs, &mut tree, &mut notes);
    commands::tuned_profile(&outputs, &mut tree, &mut notes);
    commands::never_copied(&mut tree);
    commands::ethtool(&outputs, &mut tree, &mut notes);
    commands::printed(&outputs, &mut tree, &mut notes);
    commands::dmidecode(&outputs, &mut tree, &mut notes);
    ps::write(&outputs, &mut tree, &mut notes);
    tree.finish().map_err(io)?;
    let lacks = super::gaps::lacks(
        &tree_dir,
        &[
            (
                "proc/sys/kernel",
                "nor does sos_commands/kernel/sysctl_-a hold them",
            ),
            (
                "proc/PID",
                "no sos_commands/process/ps_alxwww: the process plugin did not run",
            ),
        ],
    );
    Ok(SosReport {
        dir: tree_dir,
        lacks,
        notes,
        _tempdir: tempdir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_report_and_names_what_it_lacks() {
        let tmp = tempfile::tempdir().unwrap();
        let report = tmp.path().join("sosreport-node1-2026-11-27-abcdefg");
        std::fs::create_dir_all(report.join("sos_commands/kernel")).unwrap();
        std::fs::create_dir_all(report.join("proc")).unwrap();
        std::fs::write(report.join("proc/cmdline"), "BOOT_IMAGE=/vmlinuz\n").unwrap();
        // The unpacked archive's parent directory is taken too.
        let found = open(tmp.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(found.dir.join("proc/cmdline")).unwrap(),
            "BOOT_IMAGE=/vmlinuz\n"
        );
        assert!(!found.lacks.iter().any(|l| l.starts_with("/proc/cmdline")));
        assert!(
            found
                .lacks
                .iter()
                .any(|l| l.starts_with("/proc/interrupts"))
        );
        assert!(found.lacks.iter().any(|l| l.starts_with("/proc/PID")));

        let err = open(&report.join("proc")).unwrap_err().to_string();
        assert!(err.contains("not a sosreport"), "{err}");
        let err = open(&report.join("nothing")).unwrap_err().to_string();
        assert!(err.contains("no such directory or file"), "{err}");
        std::fs::write(report.join("x.tar.xz"), "not an archive").unwrap();
        let err = open(&report.join("x.tar.xz")).unwrap_err().to_string();
        assert!(err.contains("neither xz nor gzip"), "{err}");
    }
}

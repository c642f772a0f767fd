//! A sosreport as a machine to read (`--sosreport DIR`): sos copies /proc and /sys files into
//! `proc/` and `sys/` of its directory, laid out like `/`, beside `sos_commands/` (the
//! outputs of the commands it ran), `sos_logs/` and `sos_reports/`. lowlat reads the copies
//! as it reads a `--root` tree, and names what the bundle lacks: sos copies no per-process
//! directories, and its plugins choose which /proc and /sys files to keep.

use std::path::{Path, PathBuf};

use crate::text::escape_controls;

/// A sosreport directory, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SosReport {
    /// The directory laid out like `/` (the `sosreport-*` directory itself).
    pub dir: PathBuf,
    /// What lowlat reads that the bundle does not hold, each with what depends on it.
    pub lacks: Vec<String>,
}

/// Why a directory is not a sosreport lowlat can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SosReportError {
    /// Not a directory.
    #[error("{}: not a directory (give the unpacked sosreport-* directory)", escape_controls(&.0.display().to_string()))]
    NotADirectory(PathBuf),
    /// A directory without sos's own directories.
    #[error(
        "{}: not a sosreport (no sos_commands/, sos_logs/ or sos_reports/ in it, nor one \
         sosreport-* directory holding them); unpack the archive (tar xf sosreport-*.tar.xz) \
         and give its directory",
        escape_controls(&.0.display().to_string())
    )]
    NotASosReport(PathBuf),
}

fn has_sos_dirs(dir: &Path) -> bool {
    ["sos_commands", "sos_logs", "sos_reports"]
        .iter()
        .any(|name| dir.join(name).is_dir())
}

/// Opens `dir`: a sosreport directory, or a directory holding exactly one `sosreport-*`
/// directory (an archive unpacked where it lay).
pub fn open(dir: &Path) -> Result<SosReport, SosReportError> {
    if !dir.is_dir() {
        return Err(SosReportError::NotADirectory(dir.to_path_buf()));
    }
    let dir = if has_sos_dirs(dir) {
        dir.to_path_buf()
    } else {
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
            [one] => one.clone(),
            _ => return Err(SosReportError::NotASosReport(dir.to_path_buf())),
        }
    };
    let lacks = super::gaps::lacks(
        &dir,
        &[
            (
                "proc/sys/kernel",
                "sos keeps them as sos_commands/kernel/sysctl_-a",
            ),
            ("proc/PID", "sos copies none"),
        ],
    );
    Ok(SosReport { dir, lacks })
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
        assert_eq!(found.dir, report);
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
        let err = open(&report.join("proc/cmdline")).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}

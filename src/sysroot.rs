//! The one door to the system: every read (and every write) of /proc, /sys, /etc, /dev, /run and
//! /var goes through a [`SysRoot`].
//!
//! A SysRoot is `/` on a live host, a fixture tree in tests, or a snapshot from another host
//! unpacked into a private temporary directory (see [`crate::snapshot`]). Nothing else in lowlat
//! opens a system path, which is what makes the tool testable on a small VM and usable offline.
//!
//! A SysRoot can record the paths it was asked for; `lowlat snapshot` uses that to capture
//! exactly the files the machine model reads.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// Why a system file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file does not exist under the root (the subsystem or driver is absent).
    #[error("{path} does not exist")]
    NotFound {
        /// The system path asked for (as on the live machine).
        path: String,
    },
    /// The file exists but may only be read by root.
    #[error("{path} can only be read by root (run lowlat as root, or with sudo)")]
    PermissionDenied {
        /// The system path asked for.
        path: String,
    },
    /// Any other I/O error.
    #[error("{path}: {source}")]
    Io {
        /// The system path asked for.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl ReadError {
    fn from_io(path: &str, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::NotFound => Self::NotFound {
                path: path.to_string(),
            },
            io::ErrorKind::PermissionDenied => Self::PermissionDenied {
                path: path.to_string(),
            },
            _ => Self::Io {
                path: path.to_string(),
                source,
            },
        }
    }

    /// Whether the error only means "absent" (as opposed to unreadable or broken).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }
}

/// A root directory that stands for `/` of the machine being examined.
#[derive(Debug)]
pub struct SysRoot {
    dir: PathBuf,
    live: bool,
    recorded: Option<Mutex<BTreeMap<String, Recorded>>>,
    /// Keeps an unpacked snapshot alive as long as the root is used.
    _tempdir: Option<tempfile::TempDir>,
}

/// What a recording SysRoot saw at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// A file that was read, with the bytes read.
    File(Vec<u8>),
    /// A directory that was listed, with the names it held.
    Dir(Vec<String>),
    /// A path whose existence was checked and found.
    Exists,
}

/// The largest single file lowlat reads (a /proc/interrupts of a big machine is a few MiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

impl SysRoot {
    /// The live machine.
    pub fn live() -> Self {
        Self::new(PathBuf::from("/"), true)
    }

    /// A directory tree laid out like `/` (a fixture machine or a copy of one).
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let live = dir == Path::new("/");
        Self::new(dir, live)
    }

    /// A root over an unpacked snapshot whose temporary directory it keeps alive.
    pub(crate) fn unpacked(tempdir: tempfile::TempDir, dir: PathBuf) -> Self {
        let mut root = Self::new(dir, false);
        root._tempdir = Some(tempdir);
        root
    }

    fn new(dir: PathBuf, live: bool) -> Self {
        Self {
            dir,
            live,
            recorded: None,
            _tempdir: None,
        }
    }

    /// Starts recording every path read, listed or found, with the bytes read, for
    /// [`SysRoot::recorded`]. `lowlat snapshot` captures exactly this.
    pub fn recording(mut self) -> Self {
        self.recorded = Some(Mutex::new(BTreeMap::new()));
        self
    }

    /// What was recorded, by system path, sorted.
    pub fn recorded(&self) -> BTreeMap<String, Recorded> {
        self.recorded
            .as_ref()
            .and_then(|r| r.lock().ok().map(|map| map.clone()))
            .unwrap_or_default()
    }

    /// Whether this is the live machine (`/`), where the running kernel answers.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// The directory that stands for `/`.
    pub fn dir_path(&self) -> &Path {
        &self.dir
    }

    /// Maps a system path (`/proc/cpuinfo`) to the file under the root.
    pub fn host_path(&self, path: &str) -> PathBuf {
        let mut out = self.dir.clone();
        for component in Path::new(path).components() {
            if let Component::Normal(part) = component {
                out.push(part);
            }
        }
        out
    }

    fn record(&self, path: &str, what: Recorded) {
        if let Some(recorded) = &self.recorded
            && let Ok(mut map) = recorded.lock()
        {
            // A file read beats a mere existence check of the same path.
            if what != Recorded::Exists || !map.contains_key(path) {
                map.insert(path.to_string(), what);
            }
        }
    }

    /// Reads a whole file as text (invalid UTF-8 is replaced, not rejected).
    pub fn read(&self, path: &str) -> Result<String, ReadError> {
        let bytes = self.read_bytes(path)?;
        Ok(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// Reads a file holding one value and trims the newline and trailing NUL bytes.
    pub fn read_value(&self, path: &str) -> Result<String, ReadError> {
        Ok(self
            .read(path)?
            .trim_matches(|c: char| c.is_whitespace() || c == '\0')
            .to_string())
    }

    /// Reads a whole file as bytes, refusing files over [`MAX_FILE_BYTES`].
    pub fn read_bytes(&self, path: &str) -> Result<Vec<u8>, ReadError> {
        use std::io::Read;
        let file =
            std::fs::File::open(self.host_path(path)).map_err(|e| ReadError::from_io(path, e))?;
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ReadError::from_io(path, e))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ReadError::Io {
                path: path.to_string(),
                source: io::Error::other(format!("larger than {MAX_FILE_BYTES} bytes")),
            });
        }
        self.record(path, Recorded::File(bytes.clone()));
        Ok(bytes)
    }

    /// Reads exactly `buf.len()` bytes at `offset` of a file: device files where the offset
    /// selects a register (`/dev/cpu/N/msr`). Such reads are not recorded for snapshots.
    pub fn read_at(&self, path: &str, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        use std::os::unix::fs::FileExt;
        let file =
            std::fs::File::open(self.host_path(path)).map_err(|e| ReadError::from_io(path, e))?;
        file.read_exact_at(buf, offset)
            .map_err(|e| ReadError::from_io(path, e))
    }

    /// Whether a path is a directory under the root.
    pub fn is_dir(&self, path: &str) -> bool {
        self.host_path(path).is_dir()
    }

    /// Whether a path exists under the root (file or directory).
    pub fn exists(&self, path: &str) -> bool {
        let found = self.host_path(path).exists();
        if found {
            self.record(path, Recorded::Exists);
        }
        found
    }

    /// The names in a directory, sorted; an absent directory is empty.
    pub fn list(&self, path: &str) -> Result<Vec<String>, ReadError> {
        let entries = match std::fs::read_dir(self.host_path(path)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ReadError::from_io(path, e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_by(|a, b| natural_cmp(a, b));
        self.record(path, Recorded::Dir(names.clone()));
        Ok(names)
    }

    /// The names in a directory that start with `prefix` followed by a number, with that
    /// number, in numeric order (`cpu0`, `cpu1`, ... `cpu10`; `node0`; `policy3`).
    pub fn list_numbered(&self, path: &str, prefix: &str) -> Vec<(u32, String)> {
        let mut out: Vec<(u32, String)> = self
            .list(path)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|name| {
                let n = name.strip_prefix(prefix)?.parse().ok()?;
                Some((n, name))
            })
            .collect();
        out.sort();
        out
    }
}

/// Orders names with embedded numbers numerically (`irq2` before `irq10`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn key(s: &str) -> (String, u64, String) {
        let start = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
        let end = s[start..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(s.len(), |e| start + e);
        let number = s[start..end].parse().unwrap_or(0);
        (s[..start].to_string(), number, s[end..].to_string())
    }
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_through_the_root_and_records() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), "6.1.0\n\0").unwrap();
        let root = SysRoot::dir(dir.path()).recording();
        assert_eq!(
            root.read_value("/proc/sys/kernel/osrelease").unwrap(),
            "6.1.0"
        );
        assert!(root.read("/proc/nothing").unwrap_err().is_not_found());
        let recorded = root.recorded();
        assert_eq!(recorded.len(), 1);
        assert_eq!(
            recorded.get("/proc/sys/kernel/osrelease"),
            Some(&Recorded::File(b"6.1.0\n\0".to_vec()))
        );
        // `..` cannot climb out of the root.
        assert_eq!(
            root.host_path("/../../etc/passwd"),
            dir.path().join("etc/passwd")
        );
    }

    #[test]
    fn reads_at_an_offset_without_recording() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev/cpu/0")).unwrap();
        let mut msr = vec![0u8; 0x100];
        msr[0xe8..0xf0].copy_from_slice(&42u64.to_le_bytes());
        std::fs::write(dir.path().join("dev/cpu/0/msr"), &msr).unwrap();
        let root = SysRoot::dir(dir.path()).recording();
        let mut buf = [0u8; 8];
        root.read_at("/dev/cpu/0/msr", 0xe8, &mut buf).unwrap();
        assert_eq!(u64::from_le_bytes(buf), 42);
        assert!(root.read_at("/dev/cpu/0/msr", 0xfc, &mut buf).is_err());
        assert!(
            root.read_at("/dev/cpu/1/msr", 0, &mut buf)
                .unwrap_err()
                .is_not_found()
        );
        assert!(root.recorded().is_empty());
    }

    #[test]
    fn numbered_listing_is_numeric() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["cpu10", "cpu2", "cpufreq", "cpu0"] {
            std::fs::create_dir_all(dir.path().join("cpus").join(name)).unwrap();
        }
        let root = SysRoot::dir(dir.path());
        let names: Vec<u32> = root
            .list_numbered("/cpus", "cpu")
            .iter()
            .map(|n| n.0)
            .collect();
        assert_eq!(names, vec![0, 2, 10]);
    }
}

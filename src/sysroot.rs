//! The one door to the system: every read (and every write) of /proc, /sys, /etc, /dev, /run and
//! /var goes through a [`SysRoot`].
//!
//! A SysRoot is `/` on a live host, a fixture tree in tests, or a snapshot from another host
//! unpacked into a private temporary directory (see [`crate::snapshot`]). Nothing else in lowlat
//! opens a system path, which is what makes the tool testable on a small VM and usable offline.
//!
//! A SysRoot can record the paths it was asked for; `lowlat snapshot` uses that to capture
//! exactly the files the machine model reads.
//!
//! The write side (used only by `lowlat apply` and `lowlat revert`) has two kinds of writes:
//! kernel knobs under /proc and /sys are written in place with one `write()` (the kernel parses
//! each write on its own, and a knob cannot be renamed over), and configuration files are
//! replaced atomically (a temporary file in the same directory, fsync, rename, fsync of the
//! directory) with the mode and owner asked for, so that a crash leaves either the old or the
//! new file, never half of one.

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

/// Why a system file could not be written, created or removed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot {op}: {source}")]
pub struct WriteError {
    /// The system path (as on the live machine).
    pub path: String,
    /// What was being done (`write`, `replace`, `remove`, `create the directory`).
    pub op: &'static str,
    /// The underlying error.
    pub source: io::Error,
}

impl WriteError {
    fn new(path: &str, op: &'static str, source: io::Error) -> Self {
        Self {
            path: path.to_string(),
            op,
            source,
        }
    }

    /// The OS error number (`EIO`, `EINVAL`, ...), when there is one.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

/// What a path is, without following a final symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else (device, socket, FIFO).
    Other,
}

/// The kind, permission bits and owner of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    /// What the path is.
    pub kind: FileKind,
    /// Permission bits with set-id and sticky bits (`mode & 0o7777`).
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Inode number (tells whether a path still names an open file).
    pub ino: u64,
}

/// Mode and owner to give a file that is written whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Perms {
    /// Permission bits (`0o644`).
    pub mode: u32,
    /// Owner user id; `None` keeps the writer's.
    pub uid: Option<u32>,
    /// Owner group id; `None` keeps the writer's.
    pub gid: Option<u32>,
}

impl Perms {
    /// `mode`, owned by whoever writes the file.
    pub fn mode(mode: u32) -> Self {
        Self {
            mode,
            uid: None,
            gid: None,
        }
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

/// The write side: used only by `lowlat apply` and `lowlat revert`.
impl SysRoot {
    /// The kind, mode and owner of `path` (a final symlink is not followed); `None` when absent.
    pub fn metadata(&self, path: &str) -> Result<Option<FileMeta>, ReadError> {
        use std::os::unix::fs::MetadataExt;
        let meta = match std::fs::symlink_metadata(self.host_path(path)) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ReadError::from_io(path, e)),
        };
        let file_type = meta.file_type();
        let kind = if file_type.is_symlink() {
            FileKind::Symlink
        } else if file_type.is_dir() {
            FileKind::Dir
        } else if file_type.is_file() {
            FileKind::File
        } else {
            FileKind::Other
        };
        Ok(Some(FileMeta {
            kind,
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
            ino: meta.ino(),
        }))
    }

    /// Writes `bytes` to an existing kernel knob (a /proc or /sys file) in place, with a single
    /// `write()`: the kernel parses each write separately, and refuses (`EIO`, `EINVAL`, ...)
    /// values it does not take. The file is never created.
    pub fn write_knob(&self, path: &str, bytes: &[u8]) -> Result<(), WriteError> {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(self.host_path(path))
            .map_err(|e| WriteError::new(path, "open for writing", e))?;
        let written = file
            .write(bytes)
            .map_err(|e| WriteError::new(path, "write", e))?;
        if written != bytes.len() {
            return Err(WriteError::new(
                path,
                "write",
                io::Error::other(format!(
                    "the kernel took {written} of {} bytes",
                    bytes.len()
                )),
            ));
        }
        Ok(())
    }

    /// Replaces (or creates) the regular file `path` with `bytes` atomically: a temporary file
    /// in the same directory gets the content, `perms` and an fsync, is renamed over `path`,
    /// and the directory is fsynced. The directory must exist (see [`SysRoot::create_dirs`]).
    pub fn replace_file(&self, path: &str, bytes: &[u8], perms: Perms) -> Result<(), WriteError> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let target = self.host_path(path);
        let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(WriteError::new(
                path,
                "replace",
                io::Error::other("not a file path"),
            ));
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".lowlat-tmp")
            .tempfile_in(dir)
            .map_err(|e| WriteError::new(path, "create a temporary file next to", e))?;
        let fail = |op, e| WriteError::new(path, op, e);
        tmp.write_all(bytes).map_err(|e| fail("write", e))?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(perms.mode))
            .map_err(|e| fail("set the mode of", e))?;
        if perms.uid.is_some() || perms.gid.is_some() {
            std::os::unix::fs::fchown(tmp.as_file(), perms.uid, perms.gid)
                .map_err(|e| fail("set the owner of", e))?;
        }
        tmp.as_file().sync_all().map_err(|e| fail("fsync", e))?;
        tmp.persist(&target)
            .map_err(|e| fail("rename a temporary file over", e.error))?;
        sync_dir(dir).map_err(|e| fail("fsync the directory of", e))
    }

    /// Appends `bytes` to `path` (created with `mode` if absent) and fsyncs it before
    /// returning; a newly created file also has its directory fsynced. For journals.
    pub fn append_durably(&self, path: &str, bytes: &[u8], mode: u32) -> Result<(), WriteError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let target = self.host_path(path);
        let existed = target.exists();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(mode)
            .open(&target)
            .map_err(|e| WriteError::new(path, "open for appending", e))?;
        file.write_all(bytes)
            .map_err(|e| WriteError::new(path, "append to", e))?;
        file.sync_data()
            .map_err(|e| WriteError::new(path, "fsync", e))?;
        if !existed && let Some(dir) = target.parent() {
            sync_dir(dir).map_err(|e| WriteError::new(path, "fsync the directory of", e))?;
        }
        Ok(())
    }

    /// Opens an existing `path` for writing without truncating it (for device files such as
    /// /dev/cpu_dma_latency, whose request lasts as long as the file stays open).
    pub fn open_existing_for_write(&self, path: &str) -> Result<std::fs::File, WriteError> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.host_path(path))
            .map_err(|e| WriteError::new(path, "open", e))
    }

    /// Opens `path` for reading and writing, creating it with `mode` if absent (for lock
    /// files, which are then locked with `flock`).
    pub fn open_lock_file(&self, path: &str, mode: u32) -> Result<std::fs::File, WriteError> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(mode)
            .open(self.host_path(path))
            .map_err(|e| WriteError::new(path, "open", e))
    }

    /// Removes the file (or symlink) `path`; `Ok(false)` when it was already absent.
    pub fn remove_file(&self, path: &str) -> Result<bool, WriteError> {
        let target = self.host_path(path);
        match std::fs::remove_file(&target) {
            Ok(()) => {
                if let Some(dir) = target.parent() {
                    sync_dir(dir)
                        .map_err(|e| WriteError::new(path, "fsync the directory of", e))?;
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(WriteError::new(path, "remove", e)),
        }
    }

    /// Creates the directory `path` and its missing parents (mode 0755) and returns the
    /// directories it created, outermost first, so that they can be removed again.
    pub fn create_dirs(&self, path: &str) -> Result<Vec<String>, WriteError> {
        use std::os::unix::fs::DirBuilderExt;
        let mut missing = Vec::new();
        let mut current = Path::new(path);
        while !self.host_path(&current.to_string_lossy()).exists() {
            missing.push(current.to_string_lossy().into_owned());
            match current.parent() {
                Some(parent) => current = parent,
                None => break,
            }
        }
        missing.reverse();
        for dir in &missing {
            std::fs::DirBuilder::new()
                .mode(0o755)
                .create(self.host_path(dir))
                .map_err(|e| WriteError::new(dir, "create the directory", e))?;
        }
        Ok(missing)
    }

    /// Removes the directory `path` if it is empty; `Ok(false)` when it is absent or holds
    /// something (which is then left alone).
    pub fn remove_empty_dir(&self, path: &str) -> Result<bool, WriteError> {
        match std::fs::remove_dir(self.host_path(path)) {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::DirectoryNotEmpty
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(WriteError::new(path, "remove the directory", e)),
        }
    }
}

/// Flushes a directory's entries (a rename or a new file in it) to disk.
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
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

    #[test]
    fn replaces_files_atomically_with_the_mode_asked_for() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let created = root.create_dirs("/etc/lowlat/sub").unwrap();
        assert_eq!(created, vec!["/etc", "/etc/lowlat", "/etc/lowlat/sub"]);
        assert!(root.create_dirs("/etc/lowlat").unwrap().is_empty());
        root.replace_file("/etc/lowlat/a.conf", b"one\n", Perms::mode(0o640))
            .unwrap();
        root.replace_file("/etc/lowlat/a.conf", b"two\n", Perms::mode(0o600))
            .unwrap();
        let host = dir.path().join("etc/lowlat/a.conf");
        assert_eq!(std::fs::read(&host).unwrap(), b"two\n");
        let meta = root.metadata("/etc/lowlat/a.conf").unwrap().unwrap();
        assert_eq!((meta.kind, meta.mode), (FileKind::File, 0o600));
        assert_eq!(
            std::fs::metadata(&host).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // No temporary file is left behind.
        assert_eq!(root.list("/etc/lowlat").unwrap(), vec!["a.conf", "sub"]);
        assert!(root.metadata("/etc/nothing").unwrap().is_none());

        assert!(!root.remove_empty_dir("/etc/lowlat").unwrap());
        assert!(root.remove_empty_dir("/etc/lowlat/sub").unwrap());
        assert!(root.remove_file("/etc/lowlat/a.conf").unwrap());
        assert!(!root.remove_file("/etc/lowlat/a.conf").unwrap());
    }

    #[test]
    fn knobs_are_written_in_place_and_never_created() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/vm")).unwrap();
        std::fs::write(dir.path().join("proc/sys/vm/stat_interval"), "1\n").unwrap();
        let root = SysRoot::dir(dir.path());
        root.write_knob("/proc/sys/vm/stat_interval", b"10\n")
            .unwrap();
        assert_eq!(root.read_value("/proc/sys/vm/stat_interval").unwrap(), "10");
        let err = root.write_knob("/proc/sys/vm/absent", b"1\n").unwrap_err();
        assert_eq!(err.errno(), Some(libc::ENOENT));
        assert!(err.to_string().contains("/proc/sys/vm/absent"), "{err}");
        assert!(!root.exists("/proc/sys/vm/absent"));
    }

    #[test]
    fn appends_durably() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        root.append_durably("/j", b"a\n", 0o600).unwrap();
        root.append_durably("/j", b"b\n", 0o600).unwrap();
        assert_eq!(root.read("/j").unwrap(), "a\nb\n");
        assert_eq!(root.metadata("/j").unwrap().unwrap().mode, 0o600);
    }
}

//! The write side of [`SysRoot`]: kernel knobs written in place, configuration files replaced
//! atomically, journals appended durably, and the same atomic write for files named by the user.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use super::beneath::{open_beneath, relative_path};
use super::{FileKind, FileMeta, Perms, ReadError, SysRoot, WriteError};
use crate::text::escape_controls;

/// The write side: used only by `lowlat apply`, `lowlat revert` and for trees lowlat writes
/// (`snapshot --extract`, `plan --out`).
impl SysRoot {
    /// The kind, mode and owner of `path` (a final symlink is not followed); `None` when absent.
    pub fn metadata(&self, path: &str) -> Result<Option<FileMeta>, ReadError> {
        let stat = self.parent_dir(path).and_then(|(dir, name)| {
            Ok(rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW)?)
        });
        let stat = match stat {
            Ok(stat) => stat,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ReadError::from_io(path, e)),
        };
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => FileKind::Symlink,
            FileType::Directory => FileKind::Dir,
            FileType::RegularFile => FileKind::File,
            _ => FileKind::Other,
        };
        Ok(Some(FileMeta {
            kind,
            mode: stat.st_mode & 0o7777,
            uid: stat.st_uid,
            gid: stat.st_gid,
            ino: stat.st_ino,
        }))
    }

    /// Writes `bytes` to an existing kernel knob (a /proc or /sys file) in place, with a single
    /// `write()`: the kernel parses each write separately, and refuses (`EIO`, `EINVAL`, ...)
    /// values it does not take. The file is never created.
    pub fn write_knob(&self, path: &str, bytes: &[u8]) -> Result<(), WriteError> {
        use std::io::Write;
        let mut file = self
            .open_inside(path, OFlags::WRONLY | OFlags::TRUNC, Mode::empty())
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

    /// Mounts a tracefs at the directory `path` of the live machine. Under any other root
    /// nothing can be mounted: the error says so (a tree stands for a machine whose tracefs
    /// is mounted where its files are, or absent).
    pub fn mount_tracefs(&self, path: &str) -> Result<(), WriteError> {
        if !self.live {
            return Err(WriteError::new(
                path,
                "mount tracefs",
                io::Error::other("only on the live machine (--root is a directory tree)"),
            ));
        }
        let target = std::ffi::CString::new(path)
            .map_err(|e| WriteError::new(path, "mount tracefs", io::Error::other(e)))?;
        // SAFETY: every pointer is a NUL-terminated string that outlives the call; no data.
        let rc = unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                target.as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(WriteError::new(
                path,
                "mount tracefs",
                io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Unmounts what [`SysRoot::mount_tracefs`] mounted at `path` (lazily: a reader still
    /// holding a file open does not keep it mounted in the namespace).
    pub fn unmount(&self, path: &str) -> Result<(), WriteError> {
        if !self.live {
            return Ok(());
        }
        let target = std::ffi::CString::new(path)
            .map_err(|e| WriteError::new(path, "unmount", io::Error::other(e)))?;
        // SAFETY: a NUL-terminated string that outlives the call.
        if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
            return Err(WriteError::new(path, "unmount", io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Replaces (or creates) the regular file `path` with `bytes` atomically (see
    /// [`write_file_atomically`]). The directory must exist (see [`SysRoot::create_dirs`]).
    pub fn replace_file(&self, path: &str, bytes: &[u8], perms: Perms) -> Result<(), WriteError> {
        self.replace_file_with(path, perms, |out| out.write_all(bytes))
    }

    /// [`SysRoot::replace_file`] with the content written by `fill` into a buffered writer.
    fn replace_file_with(
        &self,
        path: &str,
        perms: Perms,
        fill: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
    ) -> Result<(), WriteError> {
        let (dir, name) = self
            .parent_dir(path)
            .map_err(|e| WriteError::new(path, "open the directory of", e))?;
        replace_in_dir(&dir, &name, fill, perms, Durability::Synced)
            .map_err(|(op, e)| WriteError::new(path, op, e))
    }

    /// Creates the missing directories of `path` and replaces the file atomically: a file of a
    /// tree that lowlat writes whole (an extracted snapshot, a plan's artifacts).
    pub fn install_file(&self, path: &str, bytes: &[u8], perms: Perms) -> Result<(), WriteError> {
        self.install_file_with(path, perms, |out| out.write_all(bytes))
    }

    /// [`SysRoot::install_file`] with the content written by `fill` into a buffered writer
    /// over the temporary file, so that a large file (plan.json: tens of megabytes at
    /// thousands of CPUs) is never held whole in memory. The same atomic write: an error
    /// from `fill` (reported as a failure to write `path`) leaves the old file in place.
    pub fn install_file_with(
        &self,
        path: &str,
        perms: Perms,
        fill: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
    ) -> Result<(), WriteError> {
        if let Some(parent) = Path::new(path).parent() {
            self.create_dirs(&parent.to_string_lossy())?;
        }
        self.replace_file_with(path, perms, fill)
    }

    /// Appends `bytes` to `path` (created with `mode` if absent) and fsyncs it before
    /// returning; a newly created file also has its directory fsynced. For journals.
    pub fn append_durably(&self, path: &str, bytes: &[u8], mode: u32) -> Result<(), WriteError> {
        use std::io::Write;
        let append = OFlags::WRONLY | OFlags::APPEND;
        let (mut file, created) = match self.open_inside(path, append, Mode::empty()) {
            Ok(file) => (file, false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let create = append | OFlags::CREATE | OFlags::EXCL;
                let file = self
                    .open_inside(path, create, Mode::from_raw_mode(mode))
                    .map_err(|e| WriteError::new(path, "create", e))?;
                (file, true)
            }
            Err(e) => return Err(WriteError::new(path, "open for appending", e)),
        };
        file.write_all(bytes)
            .map_err(|e| WriteError::new(path, "append to", e))?;
        file.sync_data()
            .map_err(|e| WriteError::new(path, "fsync", e))?;
        if created {
            self.parent_dir(path)
                .and_then(|(dir, _)| Ok(rustix::fs::fsync(dir)?))
                .map_err(|e| WriteError::new(path, "fsync the directory of", e))?;
        }
        Ok(())
    }

    /// Opens an existing `path` for writing without truncating it (for device files such as
    /// /dev/cpu_dma_latency, whose request lasts as long as the file stays open).
    pub fn open_existing_for_write(&self, path: &str) -> Result<std::fs::File, WriteError> {
        self.open_inside(path, OFlags::WRONLY, Mode::empty())
            .map_err(|e| WriteError::new(path, "open", e))
    }

    /// Opens `path` for reading and writing, creating it with `mode` if absent (for lock
    /// files, which are then locked with `flock`).
    pub fn open_lock_file(&self, path: &str, mode: u32) -> Result<std::fs::File, WriteError> {
        self.open_inside(
            path,
            OFlags::RDWR | OFlags::CREATE,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| WriteError::new(path, "open", e))
    }

    /// Removes the file (or symlink) `path`; `Ok(false)` when it was already absent.
    pub fn remove_file(&self, path: &str) -> Result<bool, WriteError> {
        let removed = self.parent_dir(path).and_then(|(dir, name)| {
            rustix::fs::unlinkat(&dir, &name, AtFlags::empty())?;
            Ok(dir)
        });
        match removed {
            Ok(dir) => {
                rustix::fs::fsync(dir)
                    .map_err(|e| WriteError::new(path, "fsync the directory of", e.into()))?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(WriteError::new(path, "remove", e)),
        }
    }

    /// Removes the temporary files an interrupted atomic replacement of `path` left beside it
    /// (`.NAME.XXXXXX.lowlat-tmp`, see [`SysRoot::replace_file`]): a crash between writing the
    /// temporary file and renaming it leaves one. Returns how many were removed; an absent
    /// directory has none.
    pub fn remove_stale_temporaries(&self, path: &str) -> Result<usize, WriteError> {
        let Some(name) = Path::new(path).file_name() else {
            return Ok(0);
        };
        let dir = Path::new(path)
            .parent()
            .map_or(String::new(), |d| d.to_string_lossy().into_owned());
        let entries = self
            .list(&dir)
            .map_err(|e| WriteError::new(&dir, "list", io::Error::other(e.to_string())))?;
        let mut removed = 0;
        for entry in entries {
            if is_temporary_of(&entry, &name.to_string_lossy()) {
                removed += usize::from(self.remove_file(&format!("{dir}/{entry}"))?);
            }
        }
        Ok(removed)
    }

    /// Creates the directory `path` and its missing parents (mode 0755) and returns the
    /// directories it created, outermost first, so that they can be removed again.
    pub fn create_dirs(&self, path: &str) -> Result<Vec<String>, WriteError> {
        let mut created = Vec::new();
        let mut current = String::new();
        for component in Path::new(path).components() {
            let Component::Normal(part) = component else {
                continue;
            };
            current = format!("{current}/{}", part.to_string_lossy());
            let found = self.open_inside(&current, OFlags::PATH | OFlags::DIRECTORY, Mode::empty());
            match found {
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(WriteError::new(&current, "create the directory", e)),
            }
            self.parent_dir(&current)
                .and_then(|(dir, name)| {
                    Ok(rustix::fs::mkdirat(dir, &name, Mode::from_raw_mode(0o755))?)
                })
                .map_err(|e| WriteError::new(&current, "create the directory", e))?;
            created.push(current.clone());
        }
        Ok(created)
    }

    /// Removes the directory `path` if it is empty; `Ok(false)` when it is absent or holds
    /// something (which is then left alone).
    pub fn remove_empty_dir(&self, path: &str) -> Result<bool, WriteError> {
        let removed = self
            .parent_dir(path)
            .and_then(|(dir, name)| Ok(rustix::fs::unlinkat(dir, &name, AtFlags::REMOVEDIR)?));
        match removed {
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

    /// Opens the system path `path` with `flags`, resolved inside the root (see
    /// [`open_beneath`]); on the live machine (`/`) the path is opened as it is.
    fn open_inside(&self, path: &str, flags: OFlags, mode: Mode) -> io::Result<std::fs::File> {
        let flags = flags | OFlags::CLOEXEC;
        let fd = if self.live {
            rustix::fs::open(self.host_path(path), flags, mode)?
        } else {
            let root = rustix::fs::open(
                &self.dir,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            open_beneath(&root, &relative_path(path), flags, mode)?
        };
        Ok(fd.into())
    }

    /// The directory holding `path`, opened inside the root, and the last name of `path`.
    fn parent_dir(&self, path: &str) -> io::Result<(OwnedFd, OsString)> {
        let relative = relative_path(path);
        let Some(name) = relative.file_name() else {
            return Err(io::Error::other("not a file path"));
        };
        let parent = relative
            .parent()
            .map_or(String::new(), |p| p.to_string_lossy().into_owned());
        let dir = self.open_inside(&parent, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        Ok((dir.into(), name.to_os_string()))
    }
}

/// Why a directory named by the user for output (a plan's artifacts, an extracted snapshot)
/// cannot be used; each names the path and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OutputDirError {
    /// The path exists and is not a directory.
    #[error("{}: exists and is not a directory; choose a directory path", escape_controls(&.0.display().to_string()))]
    NotADirectory(PathBuf),
    /// The path is a symbolic link whose target does not exist.
    #[error("{}: is a symbolic link to {}, which does not exist; remove the link or choose another path", escape_controls(&.path.display().to_string()), escape_controls(&.target.display().to_string()))]
    DanglingLink {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// The directory holds files and replacing them was not asked for.
    #[error("{}: the directory is not empty; choose an empty or new directory", escape_controls(&.0.display().to_string()))]
    NotEmpty(PathBuf),
    /// The directory could not be listed or created.
    #[error("{}: cannot {op}: {source}", escape_controls(&.path.display().to_string()))]
    Io {
        /// The directory.
        path: PathBuf,
        /// `list the directory` or `create the directory`.
        op: &'static str,
        /// The underlying error.
        source: io::Error,
    },
}

/// Makes `dir` ready to receive output: created (with its parents) if missing; refused when it
/// is a file, a dangling link, or a directory that holds anything unless `replace` is set (the
/// caller then replaces files of the same names and leaves the rest).
pub fn prepare_output_dir(dir: &Path, replace: bool) -> Result<(), OutputDirError> {
    let io = |op, source| OutputDirError::Io {
        path: dir.to_path_buf(),
        op,
        source,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() && !dir.exists() => {
            return Err(OutputDirError::DanglingLink {
                path: dir.to_path_buf(),
                target: std::fs::read_link(dir).unwrap_or_default(),
            });
        }
        Ok(_) if !dir.is_dir() => return Err(OutputDirError::NotADirectory(dir.to_path_buf())),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| io("list the directory", e))?;
            if entries.next().is_some() && !replace {
                return Err(OutputDirError::NotEmpty(dir.to_path_buf()));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("examine", e)),
    }
    std::fs::create_dir_all(dir).map_err(|e| io("create the directory", e))
}

/// Whether a replaced file must survive a crash of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The file and its directory are fsynced: after a crash the file is the old or the new
    /// one, never half of one (snapshots, plan artifacts, machine files).
    Synced,
    /// Readers never see half a file (the rename is atomic), but nothing waits for the disk: a
    /// file rewritten every second whose loss in a crash does not matter (`lowlat watch`'s
    /// textfile), where an fsync would cost block-device interrupts every interval.
    Unsynced,
}

/// Writes `bytes` to the file `path` named by the user (a snapshot, a plan artifact) with the
/// one atomic write lowlat has: a temporary file in the same directory gets the content and
/// `perms`, is renamed over `path`, and with [`Durability::Synced`] the file and the directory
/// are fsynced, so that a crash leaves either the old or the new file, never half of one.
pub fn write_file_atomically(
    path: &Path,
    bytes: &[u8],
    perms: Perms,
    durability: Durability,
) -> Result<(), WriteError> {
    let shown = path.display().to_string();
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => (dir, name),
        _ => {
            return Err(WriteError::new(
                &shown,
                "replace",
                io::Error::other("not a file path"),
            ));
        }
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let dir = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WriteError::new(&shown, "open the directory of", e.into()))?;
    replace_in_dir(&dir, name, |out| out.write_all(bytes), perms, durability)
        .map_err(|(op, e)| WriteError::new(&shown, op, e))
}

/// The size of the buffer a replaced file's content is written through, bytes: a large
/// content goes out in blocks of this size, a small one in one write(2).
const WRITE_BUFFER_BYTES: usize = 1 << 16;

/// The atomic replacement of `name` in the open directory `dir` by what `fill` writes; on
/// failure, what was being done and why (the temporary file is removed again).
fn replace_in_dir(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    fill: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
    perms: Perms,
    durability: Durability,
) -> Result<(), (&'static str, io::Error)> {
    use std::io::Write;
    let (tmp_name, file) =
        create_temporary(dir, name).map_err(|e| ("create a temporary file next to", e))?;
    let file = std::fs::File::from(file);
    let filled = (|| {
        let mut out = io::BufWriter::with_capacity(WRITE_BUFFER_BYTES, &file);
        fill(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| ("write", e))?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(perms.mode))
            .map_err(|e| ("set the mode of", e.into()))?;
        if perms.uid.is_some() || perms.gid.is_some() {
            std::os::unix::fs::fchown(&file, perms.uid, perms.gid)
                .map_err(|e| ("set the owner of", e))?;
        }
        if durability == Durability::Synced {
            file.sync_all().map_err(|e| ("fsync", e))?;
        }
        rustix::fs::renameat(dir, &tmp_name, dir, name)
            .map_err(|e| ("rename a temporary file over", e.into()))
    })();
    if let Err(failure) = filled {
        let _ = rustix::fs::unlinkat(dir, &tmp_name, AtFlags::empty());
        return Err(failure);
    }
    if durability == Durability::Unsynced {
        return Ok(());
    }
    rustix::fs::fsync(dir).map_err(|e| ("fsync the directory of", e.into()))
}

/// The suffix of lowlat's temporary files.
const TEMPORARY_SUFFIX: &str = ".lowlat-tmp";
/// The length of the random part of a temporary file's name.
const TEMPORARY_RANDOM_CHARS: usize = 6;

/// Whether `entry` is a temporary file made by [`create_temporary`] for the file `name`.
fn is_temporary_of(entry: &str, name: &str) -> bool {
    entry
        .strip_prefix('.')
        .and_then(|rest| rest.strip_prefix(name))
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|rest| rest.strip_suffix(TEMPORARY_SUFFIX))
        .is_some_and(|random| {
            random.len() == TEMPORARY_RANDOM_CHARS
                && random.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

/// Creates `.NAME.XXXXXX.lowlat-tmp` (a new name, never an existing file or link) in `dir`.
fn create_temporary(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<(OsString, OwnedFd)> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut last = io::Error::other("no free temporary name");
    for _ in 0..64 {
        let suffix: String = std::iter::repeat_with(fastrand::alphanumeric)
            .take(TEMPORARY_RANDOM_CHARS)
            .collect();
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{suffix}{TEMPORARY_SUFFIX}"));
        match rustix::fs::openat(dir, &tmp_name, flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => return Ok((tmp_name, fd)),
            Err(rustix::io::Errno::EXIST) => last = rustix::io::Errno::EXIST.into(),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_file_written_through_a_callback_is_whole_or_not_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        // Many small writes, several buffers' worth, into a directory created on the way.
        let line = b"0123456789abcdef\n";
        let lines = 3 * WRITE_BUFFER_BYTES / line.len() + 1;
        root.install_file_with("/out/sub/big.json", Perms::mode(0o644), |out| {
            (0..lines).try_for_each(|_| out.write_all(line))
        })
        .unwrap();
        let written = std::fs::read(dir.path().join("out/sub/big.json")).unwrap();
        assert_eq!(written, line.repeat(lines));

        // A writer that fails half-way leaves the old file, and no temporary file.
        let err = root
            .install_file_with("/out/sub/big.json", Perms::mode(0o644), |out| {
                out.write_all(&[b'x'; 2 * WRITE_BUFFER_BYTES])?;
                Err(io::Error::other("the document could not be serialized"))
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("write") && err.contains("/out/sub/big.json"),
            "{err}"
        );
        assert!(err.contains("could not be serialized"), "{err}");
        let kept = std::fs::read(dir.path().join("out/sub/big.json")).unwrap();
        assert_eq!(kept, written);
        assert_eq!(root.list("/out/sub").unwrap(), vec!["big.json"]);
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

    #[test]
    fn stale_temporaries_of_one_file_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        root.create_dirs("/etc/sysctl.d").unwrap();
        let d = dir.path().join("etc/sysctl.d");
        for name in [
            ".99-lowlat.conf.aB3xY9.lowlat-tmp",
            ".99-lowlat.conf.Zz0000.lowlat-tmp",
            ".99-lowlat.conf.short.lowlat-tmp",
            ".other.conf.aB3xY9.lowlat-tmp",
            "99-lowlat.conf.aB3xY9.lowlat-tmp",
        ] {
            std::fs::write(d.join(name), "x").unwrap();
        }
        assert_eq!(
            root.remove_stale_temporaries("/etc/sysctl.d/99-lowlat.conf")
                .unwrap(),
            2
        );
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".99-lowlat.conf.short.lowlat-tmp",
                ".other.conf.aB3xY9.lowlat-tmp",
                "99-lowlat.conf.aB3xY9.lowlat-tmp"
            ]
        );
        assert_eq!(
            root.remove_stale_temporaries("/no/such/dir/file").unwrap(),
            0
        );
    }

    #[test]
    fn one_atomic_write_for_user_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snap.lowlat");
        write_file_atomically(&path, b"one", Perms::mode(0o644), Durability::Synced).unwrap();
        write_file_atomically(&path, b"two", Perms::mode(0o644), Durability::Unsynced).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let err = write_file_atomically(
            &dir.path().join("no/such"),
            b"x",
            Perms::mode(0o644),
            Durability::Synced,
        )
        .unwrap_err();
        assert!(err.to_string().contains("no/such"), "{err}");
    }
}

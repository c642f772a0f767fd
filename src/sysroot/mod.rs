//! The one door to the system: every read (and every write) of /proc, /sys, /etc, /dev, /run and
//! /var goes through a [`SysRoot`].
//!
//! A SysRoot is `/` on a live host, a fixture tree in tests, or a snapshot from another host
//! unpacked into a private temporary directory or held in memory ([`MemoryTree`], for `lowlat
//! fleet`, which reads thousands; see [`crate::snapshot`]). Nothing else in lowlat
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
//! new file, never half of one. [`write_file_atomically`] is the same write for a file named
//! by the user (a snapshot, a plan's artifacts).
//!
//! Under a root other than `/`, every path is resolved inside the root: a symbolic link (or a
//! `..`) that would lead out of it is refused, for every read, listing and existence check
//! (the refused paths are named by [`SysRoot::take_refused`]) and for every write, directory
//! creation, rename and journal append. Links that stay inside are followed, as sysfs's
//! relative ones (`cpu0/cpufreq -> ../cpufreq/policy0`). A non-regular file is refused on
//! reading too (a FIFO would block forever).
//!
//! This file holds the door itself (the type, its errors, how it is opened); the reads are in
//! `read.rs`, the writes in `write.rs`, and the confinement beneath a root in `beneath.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::text::escape_controls;

mod beneath;
mod memory;
mod netlink;
mod read;
mod scratch;
pub(crate) mod signals;
mod write;

pub use memory::MemoryTree;
pub use netlink::Emulated;
use read::OpenDirs;
pub use read::natural_cmp;
pub use scratch::Scratch;
pub use write::{Durability, OutputDirError, prepare_output_dir, write_file_atomically};

/// Why a directory is no machine's tree ([`SysRoot::tree`]).
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// Not a directory, or nothing at all.
    #[error("{} (give the top of a tree laid out like /)", if *.missing { "does not exist" } else { "not a directory" })]
    NotADirectory {
        /// Whether nothing is there.
        missing: bool,
    },
    /// A directory that holds neither proc/ nor sys/.
    #[error(
        "holds neither proc/ nor sys/ (give the top of a tree laid out like /: a fixture \
             machine, or `lowlat --snapshot FILE snapshot --extract DIR`)"
    )]
    NoMachine,
}

/// What is said of a path refused because it leads outside the root ([`ReadError::LeavesRoot`]).
pub const LEAVES_ROOT: &str = "a symbolic link (or '..') on the way leads outside the root \
     directory; refused, read as unreadable";

/// Why a system file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file does not exist under the root (the subsystem or driver is absent).
    #[error("{} does not exist", escape_controls(.path))]
    NotFound {
        /// The system path asked for (as on the live machine).
        path: String,
    },
    /// The file exists but may only be read by root.
    #[error("{} can only be read by root (run lowlat as root, or with sudo)", escape_controls(.path))]
    PermissionDenied {
        /// The system path asked for.
        path: String,
    },
    /// A FIFO, socket or device where a machine tree (not the live machine) should hold a
    /// copy of a file; reading it could block forever.
    #[error(
        "{} is not a regular file (a FIFO, socket or device); a machine tree holds copies of files: replace it with one",
        escape_controls(.path)
    )]
    NotRegular {
        /// The system path asked for.
        path: String,
    },
    /// A symbolic link (or a `..`) on the way leads outside the root directory of a machine
    /// tree: refused, so that a tree cannot make lowlat read (and report) a file of the machine
    /// it runs on.
    #[error("{}: {LEAVES_ROOT}", escape_controls(.path))]
    LeavesRoot {
        /// The system path asked for.
        path: String,
    },
    /// Any other I/O error.
    #[error("{}: {source}", escape_controls(.path))]
    Io {
        /// The system path asked for.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl ReadError {
    fn from_io(path: &str, source: io::Error) -> Self {
        if beneath::leaves_root(&source) {
            return Self::LeavesRoot {
                path: path.to_string(),
            };
        }
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
#[error("{}: cannot {op}: {source}", escape_controls(.path))]
pub struct WriteError {
    /// The system path (as on the live machine).
    pub path: String,
    /// What was being done (`write`, `replace`, `remove`, `create the directory`).
    pub op: &'static str,
    /// The underlying error.
    pub source: io::Error,
}

impl WriteError {
    pub(crate) fn new(path: &str, op: &'static str, source: io::Error) -> Self {
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
    _tempdir: Option<Scratch>,
    /// The tree itself when it is held in memory (then nothing is read under `dir`).
    memory: Option<MemoryTree>,
    /// `dir` and its busiest directories opened once, for reads relative to them (see
    /// [`SysRoot::open_dirs`]).
    open_dirs: OnceLock<Option<OpenDirs>>,
    /// The system paths refused because they lead outside the root, not yet taken by
    /// [`SysRoot::take_refused`].
    refused: Mutex<BTreeSet<String>>,
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
    /// A file that exists but could not be read (only root may read it, an I/O error): a
    /// snapshot lists it as not captured ([`UNCAPTURED`]), so that it reads as unknown there,
    /// not as absent from the machine.
    Unreadable,
}

/// Where captured answers ([`SysRoot::answer`]) lie in a snapshot or a machine tree: one
/// directory per kind of question (`/lowlat-answers/ethtool/eth0/coalesce`). No kernel file
/// system has this path, so an answer never shadows a file of the machine.
pub const ANSWERS_DIR: &str = "/lowlat-answers";

/// The file of a machine tree made from a support bundle that lists where its files came
/// from: one `SYSTEM-PATH<TAB>ORIGIN` line each (`/proc/sys/vm/swappiness<TAB>
/// sos_commands/kernel/sysctl_-a:412`). Under [`ANSWERS_DIR`]: no kernel file system has
/// this path.
pub const ORIGINS: &str = "/lowlat-answers/origins";

/// The file of a machine tree made from a support bundle that lists, one a line, the system
/// paths (and all below them) the bundle did not capture (`/proc/sys` where it kept no
/// `sysctl -a`): a file absent there is unknown, not absent from the machine.
pub const UNCAPTURED: &str = "/lowlat-answers/uncaptured";

/// Where a machine tree made from a support bundle keeps what commands printed, by the
/// bundle's file name (`/lowlat-answers/printed/ethtool_-c_eth0`, a sosreport's
/// `sos_commands/networking/ethtool_-c_eth0`): read where a captured answer is missing.
pub const PRINTED_DIR: &str = "/lowlat-answers/printed";

/// The largest single file lowlat reads whole; larger ones (a /proc/interrupts of 8,192 CPUs
/// is gigabytes) are read line by line with [`SysRoot::read_line_bytes`].
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The longest line [`SysRoot::read_line_bytes`] hands on whole: a `/proc/interrupts` row is
/// 11 bytes per CPU column (90 KiB at 8,192 CPUs).
pub const MAX_LINE_BYTES: usize = 4 << 20;

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

    /// The machine's tree at `dir`, as `--root` names it: refused when `dir` is no directory,
    /// or holds neither proc/ nor sys/ (every part of the model would be unavailable, and an
    /// audit of nothing passes).
    pub fn tree(dir: &Path) -> Result<Self, TreeError> {
        if !dir.is_dir() {
            return Err(TreeError::NotADirectory {
                missing: !dir.exists(),
            });
        }
        let root = SysRoot::dir(dir);
        if !root.is_dir("/proc") && !root.is_dir("/sys") {
            return Err(TreeError::NoMachine);
        }
        Ok(root)
    }

    /// A root over an unpacked snapshot whose temporary directory it keeps alive.
    pub(crate) fn unpacked(tempdir: Scratch, dir: PathBuf) -> Self {
        let mut root = Self::new(dir, false);
        root._tempdir = Some(tempdir);
        root
    }

    /// A root over a tree held in memory; `name` (the snapshot file) stands for its
    /// directory in messages, and nothing is read or written under it.
    pub(crate) fn in_memory(name: PathBuf, tree: MemoryTree) -> Self {
        let mut root = Self::new(name, false);
        root.memory = Some(tree);
        root
    }

    fn new(dir: PathBuf, live: bool) -> Self {
        Self {
            dir,
            live,
            recorded: None,
            _tempdir: None,
            memory: None,
            open_dirs: OnceLock::new(),
            refused: Mutex::new(BTreeSet::new()),
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

    /// The system paths refused since the last call because a symbolic link (or `..`) on the
    /// way leads outside the root (each read failed with [`ReadError::LeavesRoot`]), sorted:
    /// a machine read names each in a warning.
    pub fn take_refused(&self) -> Vec<String> {
        self.refused
            .lock()
            .map(|mut set| std::mem::take(&mut *set).into_iter().collect())
            .unwrap_or_default()
    }

    /// The read error of `path` for `source`; a path refused because it leads outside the
    /// root is kept for [`SysRoot::take_refused`].
    fn read_error(&self, path: &str, source: io::Error) -> ReadError {
        let error = ReadError::from_io(path, source);
        if matches!(error, ReadError::LeavesRoot { .. })
            && let Ok(mut refused) = self.refused.lock()
        {
            refused.insert(path.to_string());
        }
        error
    }

    fn record(&self, path: &str, what: Recorded) {
        if let Some(recorded) = &self.recorded
            && let Ok(mut map) = recorded.lock()
        {
            // A file read beats a mere existence check or a failed read of the same path.
            if !matches!(what, Recorded::Exists | Recorded::Unreadable) || !map.contains_key(path) {
                map.insert(path.to_string(), what);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_escape_control_characters_in_paths() {
        let root = SysRoot::dir(tempfile::tempdir().unwrap().path());
        let err = root.read("/proc/\x1b]0;owned\x07").unwrap_err();
        assert!(!err.to_string().contains('\x1b'), "{err}");
        assert!(err.to_string().contains("\\x1b]0;owned\\x07"), "{err}");
    }
}

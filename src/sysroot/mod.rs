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
//! `..`) that would lead out of it is refused, for reads of non-regular files (a FIFO would
//! block forever) and for every write, directory creation, rename and journal append.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::text::escape_controls;

mod memory;
mod netlink;
pub use memory::MemoryTree;
pub use netlink::Emulated;

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
    _tempdir: Option<tempfile::TempDir>,
    /// The tree itself when it is held in memory (then nothing is read under `dir`).
    memory: Option<MemoryTree>,
    /// `dir` and its busiest directories opened once, for reads relative to them (see
    /// [`SysRoot::open_dirs`]).
    open_dirs: OnceLock<Option<OpenDirs>>,
}

/// The bytes of the file `path` of a tree in memory; a path it holds no file at is not found.
fn memory_file<'a>(tree: &'a MemoryTree, path: &str) -> Result<&'a [u8], ReadError> {
    tree.file(path)
        .ok_or_else(|| ReadError::from_io(path, io::ErrorKind::NotFound.into()))
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

/// The directories (relative to the root) that hold most of the files a machine read opens:
/// the per-CPU ones (topology, caches, cpuidle, cpufreq policies), the per-IRQ ones and the
/// per-process ones; deepest first. On 8,192 CPUs that is hundreds of thousands of files,
/// and looking up each component of each path was the largest single cost of opening them.
const BUSY_DIRS: [&str; 3] = ["sys/devices/system/cpu", "proc/irq", "proc"];

/// A machine tree's root directory and its [`BUSY_DIRS`] that exist, opened (`O_PATH`) once,
/// so that a file is opened relative to the deepest one that holds it.
#[derive(Debug)]
struct OpenDirs {
    /// The root directory.
    root: OwnedFd,
    /// The busy directories found, with their paths relative to the root, deepest first.
    busy: Vec<(&'static str, OwnedFd)>,
}

impl OpenDirs {
    /// Opens `dir` and the busy directories under it; `None` when `dir` cannot be opened.
    fn open(dir: &Path) -> Option<Self> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root = rustix::fs::open(dir, flags, Mode::empty()).ok()?;
        let busy = BUSY_DIRS
            .iter()
            .filter_map(|&path| {
                Some((
                    path,
                    rustix::fs::openat(&root, path, flags, Mode::empty()).ok()?,
                ))
            })
            .collect();
        Some(Self { root, busy })
    }

    /// The directory to open the root-relative path `relative` from, and the path from there.
    fn split<'p>(&self, relative: &'p str) -> (&OwnedFd, &'p str) {
        for (path, dir) in &self.busy {
            if let Some(rest) = relative
                .strip_prefix(path)
                .and_then(|rest| rest.strip_prefix('/'))
                && !rest.is_empty()
            {
                return (dir, rest);
            }
        }
        (&self.root, relative)
    }
}

/// Where captured answers ([`SysRoot::answer`]) lie in a snapshot or a machine tree: one
/// directory per kind of question (`/lowlat-answers/ethtool/eth0/coalesce`). No kernel file
/// system has this path, so an answer never shadows a file of the machine.
pub const ANSWERS_DIR: &str = "/lowlat-answers";

/// The largest single file lowlat reads whole; larger ones (a /proc/interrupts of 8,192 CPUs
/// is gigabytes) are read line by line with [`SysRoot::read_line_bytes`].
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The longest line [`SysRoot::read_line_bytes`] hands on whole: a `/proc/interrupts` row is
/// 11 bytes per CPU column (90 KiB at 8,192 CPUs).
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// Reads on a regular file whose size is `size` into `bytes`, which holds what was read of it
/// already: a read up to its size plus one byte that comes back one byte short is the whole
/// file, so a small file costs one `read(2)` rather than two (one for the bytes and one to see
/// the end). A file that grew since its size was taken is read on to its end.
fn read_sized(reader: &mut impl std::io::Read, size: usize, bytes: &mut Vec<u8>) -> io::Result<()> {
    let mut filled = bytes.len();
    if filled > size {
        return reader.read_to_end(bytes).map(drop);
    }
    bytes.resize(size + 1, 0);
    while filled < bytes.len() {
        match reader.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled == size {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if filled <= size {
        bytes.truncate(filled);
        return Ok(());
    }
    reader.read_to_end(bytes).map(drop)
}

/// The bytes of the first read of a file under a root other than `/` (16 KiB, on the stack):
/// nearly every file of a machine tree (a `/proc/<pid>/status` of 8,192 CPUs is 5 KiB) fits,
/// and a file that does is read with no other call than `open`, `read` and `close`. Only a
/// file that fills it, or reads as empty, has its type and size looked at (`fstat`).
const FIRST_READ_BYTES: usize = 16 << 10;

/// The size of the open file `file` (the system path `path`), refusing anything but a regular
/// file or a directory (whose read then fails on its own): a FIFO, socket or device in a
/// machine tree could block or never end.
fn regular_size(file: &std::fs::File, path: &str) -> Result<u64, ReadError> {
    let meta = file.metadata().map_err(|e| ReadError::from_io(path, e))?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(ReadError::NotRegular {
            path: path.to_string(),
        });
    }
    Ok(meta.len())
}

/// The bytes read at a time by [`SysRoot::read_line_bytes`] (256 KiB): lines that fit in the
/// buffer are handed on where they lie, without a copy, and one read call brings many of them
/// (about 45 of `/proc/interrupts` at 512 CPUs).
const LINE_BUFFER_BYTES: usize = 1 << 18;

/// `line` without its line end (`\n`, `\r\n`, or several of them).
fn without_line_end(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|&b| b != b'\n' && b != b'\r')
        .map_or(0, |last| last + 1);
    &line[..end]
}

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
        // Trimmed in place: no second string for each of the many one-value files.
        let trimmed = |c: char| c.is_whitespace() || c == '\0';
        let mut text = self.read(path)?;
        text.truncate(text.trim_end_matches(trimmed).len());
        text.drain(..text.len() - text.trim_start_matches(trimmed).len());
        Ok(text)
    }

    /// Reads a whole file as bytes, refusing files over [`MAX_FILE_BYTES`].
    pub fn read_bytes(&self, path: &str) -> Result<Vec<u8>, ReadError> {
        let bytes = match &self.memory {
            // A file of a loaded snapshot is a slice of its archive already: one copy.
            Some(tree) => memory_file(tree, path)?.to_vec(),
            None => self.read_file(path)?,
        };
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ReadError::Io {
                path: path.to_string(),
                source: io::Error::other(format!("larger than {MAX_FILE_BYTES} bytes")),
            });
        }
        if self.recorded.is_some() {
            self.record(path, Recorded::File(bytes.clone()));
        }
        Ok(bytes)
    }

    /// A captured answer: what the running kernel says to a request that is not a file (an
    /// ethtool netlink query), kept under the system path `path` of [`ANSWERS_DIR`].
    ///
    /// On the live machine `ask` puts the question and its bytes are the answer (recorded at
    /// `path`, so that a snapshot holds it as a file); under any other root the answer is the
    /// file at `path`, read as [`SysRoot::read_bytes`] reads it, so a snapshot or a fixture
    /// tree shows what the live machine answered.
    pub fn answer(
        &self,
        path: &str,
        ask: impl FnOnce() -> io::Result<Vec<u8>>,
    ) -> Result<Vec<u8>, ReadError> {
        if !self.live {
            return self.read_bytes(path);
        }
        let bytes = ask().map_err(|e| ReadError::from_io(path, e))?;
        if self.recorded.is_some() {
            self.record(path, Recorded::File(bytes.clone()));
        }
        Ok(bytes)
    }

    /// Reads a whole file under the root (not the memory tree), at most one byte more than
    /// [`MAX_FILE_BYTES`].
    ///
    /// Under a root other than `/`, a first read of [`FIRST_READ_BYTES`] that comes back
    /// short of the buffer and not empty is the whole file: a tree holds regular files on a
    /// local file system, where a short read is the end, and no `fstat` is spent on each of
    /// the tens of thousands of small files of a large machine. A FIFO or a device (which
    /// must be refused, not read: it could block or never end) reads as empty (a FIFO without
    /// a writer, `/dev/null`), as "would block", or fills the buffer (`/dev/zero`): those are
    /// the cases whose type is looked at, and that also gives the size of a large file.
    fn read_file(&self, path: &str) -> Result<Vec<u8>, ReadError> {
        use std::io::Read;
        let file = self.open_nonblocking(path)?;
        if self.live {
            // The live /proc says 0 and sysfs 4096 for a file's size, and a short read of
            // procfs is not its end: read to the end.
            let mut bytes = Vec::with_capacity(4096);
            file.take(MAX_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| ReadError::from_io(path, e))?;
            return Ok(bytes);
        }
        // Not zeroed: 16 KiB of memset per file would cost more than the read.
        let mut buffer = [std::mem::MaybeUninit::<u8>::uninit(); FIRST_READ_BYTES];
        // What the first read brought, and whether it found the end (read nothing).
        let (first, at_end): (&[u8], bool) = match rustix::io::read(&file, &mut buffer) {
            Ok((read, _)) if !read.is_empty() && read.len() < FIRST_READ_BYTES => {
                return Ok(read.to_vec());
            }
            Ok((read, _)) => (read, read.is_empty()),
            // Would block, interrupted, failed: the type decides, and a regular file is read
            // again from its start (a failed read moved no offset), where errors are reported.
            Err(_) => (&[], false),
        };
        let size = regular_size(&file, path)?;
        let mut bytes = first.to_vec();
        if at_end {
            return Ok(bytes);
        }
        let mut rest = file.take(MAX_FILE_BYTES + 1 - bytes.len() as u64);
        match usize::try_from(size) {
            Ok(size) if size as u64 <= MAX_FILE_BYTES => read_sized(&mut rest, size, &mut bytes),
            _ => rest.read_to_end(&mut bytes).map(drop),
        }
        .map_err(|e| ReadError::from_io(path, e))?;
        Ok(bytes)
    }

    /// Reads a file line by line, without holding it whole: `on_line` gets each line (1-based
    /// number, bytes without the newline or `\r\n`; no UTF-8 check, which a byte parser does
    /// not need) and whether it was cut: a line longer than [`MAX_LINE_BYTES`] is handed on
    /// cut there, the rest of it up to the newline skipped, so a file without newlines (a
    /// sparse file of zeros) costs no more memory than one line. For large files
    /// (`/proc/interrupts` of a large machine, read again every interval by `lowlat watch`): no
    /// size limit. A recording root records the lines as handed on (cut ones cut), for
    /// snapshots.
    pub fn read_line_bytes(
        &self,
        path: &str,
        on_line: impl FnMut(usize, &[u8], bool),
    ) -> Result<(), ReadError> {
        self.read_line_bytes_in(path, &mut Vec::new(), on_line)
    }

    /// [`SysRoot::read_line_bytes`] with `buffer` as the read buffer, for a reader that reads
    /// the same large file again and again (`lowlat watch`): the buffer's quarter megabyte is
    /// allocated once, not on every reading.
    pub fn read_line_bytes_in(
        &self,
        path: &str,
        buffer: &mut Vec<u8>,
        mut on_line: impl FnMut(usize, &[u8], bool),
    ) -> Result<(), ReadError> {
        let mut reader = self.reader(path)?;
        buffer.resize(LINE_BUFFER_BYTES, 0);
        let mut recorded = self.recorded.is_some().then(Vec::new);
        // The start of a line that runs past the buffer's end (at most MAX_LINE_BYTES of it),
        // and whether it was longer.
        let mut partial: Vec<u8> = Vec::new();
        let mut cut = false;
        let mut number = 0;
        let mut hand_on = |line: &[u8], cut: bool, recorded: &mut Option<Vec<u8>>| {
            number += 1;
            if let Some(recorded) = recorded {
                recorded.extend_from_slice(line);
                recorded.push(b'\n');
            }
            on_line(number, without_line_end(line), cut);
        };
        loop {
            let filled = match reader.read(buffer) {
                Ok(0) => break,
                Ok(filled) => filled,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ReadError::from_io(path, e)),
            };
            let buffer = &buffer[..filled];
            let mut start = 0;
            while let Some(at) = memchr::memchr(b'\n', &buffer[start..]) {
                let line = &buffer[start..start + at];
                if partial.is_empty() && !cut {
                    hand_on(line, false, &mut recorded);
                } else {
                    let room = MAX_LINE_BYTES - partial.len();
                    cut |= line.len() > room;
                    partial.extend_from_slice(&line[..line.len().min(room)]);
                    hand_on(&partial, cut, &mut recorded);
                    partial.clear();
                    cut = false;
                }
                start += at + 1;
            }
            let rest = &buffer[start..];
            let room = MAX_LINE_BYTES - partial.len();
            cut |= rest.len() > room;
            partial.extend_from_slice(&rest[..rest.len().min(room)]);
        }
        if !partial.is_empty() || cut {
            hand_on(&partial, cut, &mut recorded);
        }
        if let Some(bytes) = recorded {
            self.record(path, Recorded::File(bytes));
        }
        Ok(())
    }

    /// Reads what a pipe-like kernel file holds now (a tracefs `trace_pipe`): up to its end or
    /// until a read would block, without waiting, and at most [`MAX_FILE_BYTES`]. What is read
    /// is consumed from such a file; such reads are not recorded for snapshots.
    pub fn read_available(&self, path: &str) -> Result<Vec<u8>, ReadError> {
        use std::io::Read;
        let mut file = self.open_for_reading(path)?;
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 1 << 14];
        while (bytes.len() as u64) < MAX_FILE_BYTES {
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::from_io(path, e)),
            }
        }
        Ok(bytes)
    }

    /// Reads the lines of a kernel log (`/dev/kmsg`: one record per read, up to the newest,
    /// without waiting) and keeps those `keep` accepts. A recording root records the kept lines
    /// only, so a snapshot carries them and no other line of the log; in a tree or a snapshot
    /// the log is a regular file of such lines.
    pub fn read_log(
        &self,
        path: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, ReadError> {
        let bytes = match &self.memory {
            Some(tree) => memory_file(tree, path)?.to_vec(),
            None => self.read_available(path)?,
        };
        let text = String::from_utf8_lossy(&bytes);
        let kept: Vec<String> = text
            .lines()
            .filter(|l| keep(l))
            .map(str::to_string)
            .collect();
        if self.recorded.is_some() {
            let record: String = kept.iter().map(|line| format!("{line}\n")).collect();
            self.record(path, Recorded::File(record.into_bytes()));
        }
        Ok(kept)
    }

    /// Reads exactly `buf.len()` bytes at `offset` of a file: device files where the offset
    /// selects a register (`/dev/cpu/N/msr`). Such reads are not recorded for snapshots.
    pub fn read_at(&self, path: &str, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        use std::os::unix::fs::FileExt;
        if let Some(tree) = &self.memory {
            let bytes = memory_file(tree, path)?;
            let at = usize::try_from(offset).unwrap_or(usize::MAX);
            let part = bytes
                .get(at..at.saturating_add(buf.len()))
                .ok_or_else(|| ReadError::from_io(path, io::ErrorKind::UnexpectedEof.into()))?;
            buf.copy_from_slice(part);
            return Ok(());
        }
        let file = self.open_for_reading(path)?;
        file.read_exact_at(buf, offset)
            .map_err(|e| ReadError::from_io(path, e))
    }

    /// The bytes of a file: from memory, or [`SysRoot::open_for_reading`].
    fn reader(&self, path: &str) -> Result<Box<dyn io::Read + '_>, ReadError> {
        match &self.memory {
            Some(tree) => Ok(Box::new(memory_file(tree, path)?)),
            None => Ok(Box::new(self.open_for_reading(path)?)),
        }
    }

    /// Opens a file for reading without blocking on a FIFO; under a root other than `/`, a
    /// file that is not a regular one is refused (the live /proc, /sys and /dev answer with
    /// regular files and character devices, which are read as they are).
    fn open_for_reading(&self, path: &str) -> Result<std::fs::File, ReadError> {
        let file = self.open_nonblocking(path)?;
        if !self.live {
            regular_size(&file, path)?;
        }
        Ok(file)
    }

    /// Opens a file for reading, without blocking on a FIFO and without looking at its type.
    /// Under a root other than `/` the path is opened relative to the root directory or to
    /// one of the directories most files are read from, each opened once ([`OpenDirs`]):
    /// their components are not walked again for each of the files of a large machine.
    fn open_nonblocking(&self, path: &str) -> Result<std::fs::File, ReadError> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let opened = match self.open_dirs() {
            Some(dirs) => {
                let relative = relative_str(path);
                let (dir, rest) = dirs.split(&relative);
                rustix::fs::openat(dir, rest, flags, Mode::empty())
            }
            None => rustix::fs::open(self.host_path(path), flags, Mode::empty()),
        };
        opened
            .map(std::fs::File::from)
            .map_err(|e| ReadError::from_io(path, e.into()))
    }

    /// The directories files are opened from, under a root other than `/`; `None` on the
    /// live machine, for a tree in memory, or when the root cannot be opened (then paths are
    /// opened whole, and say why they cannot be).
    fn open_dirs(&self) -> Option<&OpenDirs> {
        if self.live || self.memory.is_some() {
            return None;
        }
        self.open_dirs
            .get_or_init(|| OpenDirs::open(&self.dir))
            .as_ref()
    }

    /// The target of the symbolic link `path`, as written in the link (not resolved).
    pub fn read_link(&self, path: &str) -> Result<PathBuf, ReadError> {
        if self.memory.is_some() {
            // A snapshot holds no links.
            return Err(ReadError::from_io(path, io::ErrorKind::NotFound.into()));
        }
        std::fs::read_link(self.host_path(path)).map_err(|e| ReadError::from_io(path, e))
    }

    /// Whether a path is a directory under the root.
    pub fn is_dir(&self, path: &str) -> bool {
        match &self.memory {
            Some(tree) => tree.is_dir(path),
            None => self.host_path(path).is_dir(),
        }
    }

    /// Whether a path exists under the root (file or directory).
    pub fn exists(&self, path: &str) -> bool {
        let found = match &self.memory {
            Some(tree) => tree.exists(path),
            None => self.host_path(path).exists(),
        };
        if found {
            self.record(path, Recorded::Exists);
        }
        found
    }

    /// The names in a directory, sorted; an absent directory is empty.
    pub fn list(&self, path: &str) -> Result<Vec<String>, ReadError> {
        let Some(names) = self.list_as_stored(path)? else {
            return Ok(Vec::new());
        };
        let names = sort_natural(names);
        if self.recorded.is_some() {
            self.record(path, Recorded::Dir(names.clone()));
        }
        Ok(names)
    }

    /// The names in a directory in the order the file system keeps them, not sorted: for a
    /// caller that parses every name anyway (a PID listing every second); recorded as
    /// [`SysRoot::list`] records it.
    pub fn list_unordered(&self, path: &str) -> Result<Vec<String>, ReadError> {
        let Some(names) = self.list_as_stored(path)? else {
            return Ok(Vec::new());
        };
        if self.recorded.is_some() {
            self.record(path, Recorded::Dir(sort_natural(names.clone())));
        }
        Ok(names)
    }

    /// The names in a directory as the file system (or the memory tree) gives them; `None`
    /// when the directory does not exist (then nothing is recorded: a snapshot must not
    /// create it).
    fn list_as_stored(&self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        Ok(match &self.memory {
            Some(tree) => tree.names(path),
            None => {
                let entries = match std::fs::read_dir(self.host_path(path)) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(ReadError::from_io(path, e)),
                };
                Some(
                    entries
                        .filter_map(|entry| entry.ok())
                        .map(|entry| entry.file_name().to_string_lossy().into_owned())
                        .collect(),
                )
            }
        })
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

/// [`relative_path`] as text, without a copy for a plain absolute path (`/proc/1/stat`,
/// every path the machine model reads); `.` for the root itself.
fn relative_str(path: &str) -> std::borrow::Cow<'_, str> {
    let relative = path.strip_prefix('/').unwrap_or(path);
    let plain = relative
        .split('/')
        .all(|part| !part.is_empty() && part != "." && part != "..");
    if plain {
        return relative.into();
    }
    let relative = relative_path(path);
    if relative.as_os_str().is_empty() {
        return ".".into();
    }
    relative.to_string_lossy().into_owned().into()
}

/// A system path (`/proc/sys/vm/x`) as a path relative to the root (`proc/sys/vm/x`), without
/// `..` or `.`.
fn relative_path(path: &str) -> PathBuf {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect()
}

/// Why a path was refused: it leads out of the root.
const LEAVES_ROOT: &str =
    "a symbolic link (or '..') on the way leads outside the root directory; refused";

/// Opens `relative` under the directory `root` so that it resolves inside it: symbolic links
/// are followed only while they stay inside (an absolute link, or a `..` climbing above
/// `root`, is refused). Uses openat2 with `RESOLVE_BENEATH` where the kernel has it (5.6 and
/// later), else [`walk_beneath`].
fn open_beneath(root: &OwnedFd, relative: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let path = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    loop {
        match rustix::fs::openat2(root, path, flags, mode, resolve) {
            Ok(fd) => return Ok(fd),
            // A rename or mount raced with the lookup: look again.
            Err(rustix::io::Errno::AGAIN) => continue,
            Err(rustix::io::Errno::XDEV) => return Err(io::Error::other(LEAVES_ROOT)),
            Err(rustix::io::Errno::NOSYS) => return walk_beneath(root, path, flags, mode),
            Err(e) => return Err(e.into()),
        }
    }
}

/// [`open_beneath`] for kernels without openat2: a walk one component at a time, each opened
/// without following links; a link is read and its (relative) target walked in its place.
fn walk_beneath(root: &OwnedFd, relative: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    const MAX_LINKS: usize = 40;
    let leaves = || io::Error::other(LEAVES_ROOT);
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, relative).ok_or_else(leaves)?;
    let mut dirs: Vec<OwnedFd> = vec![root.try_clone()?];
    let mut links = 0;
    while let Some(name) = pending.pop() {
        let current = dirs.last().ok_or_else(leaves)?.as_fd();
        if name == ".." {
            if dirs.len() == 1 {
                return Err(leaves());
            }
            dirs.pop();
            continue;
        }
        let is_link = rustix::fs::statat(current, &name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
        if is_link {
            links += 1;
            if links > MAX_LINKS {
                return Err(rustix::io::Errno::LOOP.into());
            }
            let target = rustix::fs::readlinkat(current, &name, Vec::new())?;
            let target = Path::new(std::ffi::OsStr::from_bytes(target.as_bytes()));
            push_components(&mut pending, target).ok_or_else(leaves)?;
            continue;
        }
        if pending.is_empty() {
            return Ok(rustix::fs::openat(
                current,
                &name,
                flags | OFlags::NOFOLLOW,
                mode,
            )?);
        }
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let next = rustix::fs::openat(current, &name, dir_flags, Mode::empty())?;
        dirs.push(next);
    }
    let current = dirs.last().ok_or_else(leaves)?;
    Ok(rustix::fs::openat(current, ".", flags, mode)?)
}

/// Pushes the components of `path` onto the stack `pending` (last component at the bottom);
/// `None` for an absolute path, which leaves the root.
fn push_components(pending: &mut Vec<OsString>, path: &Path) -> Option<()> {
    for component in path.components().rev() {
        match component {
            Component::Normal(part) => pending.push(part.to_os_string()),
            Component::ParentDir => pending.push(OsString::from("..")),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(())
}

/// Orders names with embedded numbers numerically (`irq2` before `irq10`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    natural_key(a).cmp(&natural_key(b)).then_with(|| a.cmp(b))
}

/// Sorts names as [`natural_cmp`] orders them, each name's key taken once (a listing of /proc
/// on a large machine is 100,000 names, sorted in millions of comparisons).
fn sort_natural(names: Vec<String>) -> Vec<String> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    {
        let keys: Vec<_> = names.iter().map(|name| natural_key(name)).collect();
        order.sort_by(|&a, &b| keys[a].cmp(&keys[b]).then_with(|| names[a].cmp(&names[b])));
    }
    let mut names: Vec<Option<String>> = names.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|index| names[index].take())
        .collect()
}

/// A name's parts for the natural order: the text before its first number, the number (0 when
/// it does not fit 64 bits), and the text after.
fn natural_key(s: &str) -> (&str, u64, &str) {
    let start = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
    let end = s[start..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(s.len(), |e| start + e);
    let number = s[start..end].parse().unwrap_or(0);
    (&s[..start], number, &s[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_line_bytes_cuts_long_lines_and_reads_on() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(MAX_LINE_BYTES + 10);
        std::fs::write(dir.path().join("f"), format!("a\n{long}\nb\nc")).unwrap();
        let root = SysRoot::dir(dir.path()).recording();
        let mut seen = Vec::new();
        root.read_line_bytes("/f", |n, line, cut| seen.push((n, line.len(), cut)))
            .unwrap();
        assert_eq!(
            seen,
            vec![
                (1, 1, false),
                (2, MAX_LINE_BYTES, true),
                (3, 1, false),
                (4, 1, false)
            ]
        );
        assert!(
            matches!(root.recorded().get("/f"), Some(Recorded::File(b)) if b.starts_with(b"a\nxx"))
        );
    }

    #[test]
    fn lines_across_the_read_buffers_ends_are_handed_on_whole() {
        let dir = tempfile::tempdir().unwrap();
        // Lines of 1 to 999 bytes, some ending in \r\n, over three buffers' worth.
        let lines: Vec<String> = (0..7000)
            .map(|i| format!("{i}:{}", "y".repeat(i * 37 % 997)))
            .collect();
        let text: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{l}{}", if i % 3 == 0 { "\r\n" } else { "\n" }))
            .collect();
        assert!(text.len() > 3 * LINE_BUFFER_BYTES);
        std::fs::write(dir.path().join("f"), &text).unwrap();
        let root = SysRoot::dir(dir.path()).recording();
        let mut seen = Vec::new();
        root.read_line_bytes("/f", |n, line, cut| {
            assert!(!cut);
            seen.push((n, String::from_utf8(line.to_vec()).unwrap()));
        })
        .unwrap();
        let expected: Vec<(usize, String)> = (1..).zip(lines).collect();
        assert_eq!(seen, expected);
        let Some(Recorded::File(recorded)) = root.recorded().get("/f").cloned() else {
            panic!("the file is recorded");
        };
        assert_eq!(recorded, text.into_bytes());
    }

    #[test]
    fn listings_are_recorded_sorted_and_a_missing_directory_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["10", "9", "self"] {
            std::fs::create_dir_all(dir.path().join("proc").join(name)).unwrap();
        }
        let root = SysRoot::dir(dir.path()).recording();
        let mut unordered = root.list_unordered("/proc").unwrap();
        unordered.sort();
        assert_eq!(unordered, ["10", "9", "self"]);
        assert_eq!(
            root.recorded().get("/proc"),
            Some(&Recorded::Dir(vec!["9".into(), "10".into(), "self".into()]))
        );
        // A snapshot made from this record must not create a directory the machine lacks.
        assert!(root.list("/sys/class").unwrap().is_empty());
        assert!(root.list_unordered("/sys/class").unwrap().is_empty());
        assert!(!root.recorded().contains_key("/sys/class"));
    }

    #[test]
    fn read_line_bytes_of_a_4_gib_sparse_file_holds_one_line_at_most() {
        // A file of zeros without a newline (`truncate -s 4G`): one cut line, no 4 GiB buffer.
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("big")).unwrap();
        file.set_len(4 << 30).unwrap();
        let mut seen = Vec::new();
        SysRoot::dir(dir.path())
            .read_line_bytes("/big", |n, line, cut| seen.push((n, line.len(), cut)))
            .unwrap();
        assert_eq!(seen, vec![(1, MAX_LINE_BYTES, true)]);
    }

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
    fn sized_reads_stop_at_the_size_and_read_on_past_it() {
        /// Hands out at most `step` bytes a read, and counts the reads.
        struct Slow<'a> {
            bytes: &'a [u8],
            step: usize,
            reads: usize,
        }
        impl io::Read for Slow<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.reads += 1;
                let n = buf.len().min(self.step).min(self.bytes.len());
                buf[..n].copy_from_slice(&self.bytes[..n]);
                self.bytes = &self.bytes[n..];
                Ok(n)
            }
        }
        let read = |text: &str, size: usize, step: usize| {
            let mut reader = Slow {
                bytes: text.as_bytes(),
                step,
                reads: 0,
            };
            let mut bytes = Vec::new();
            read_sized(&mut reader, size, &mut bytes).unwrap();
            (String::from_utf8(bytes).unwrap(), reader.reads)
        };
        assert_eq!(read("0-7\n", 4, 64), ("0-7\n".to_string(), 1));
        assert_eq!(read("", 0, 64), (String::new(), 1));
        assert_eq!(read("0-7\n", 4, 3), ("0-7\n".to_string(), 2));
        // Grown since its size was taken, or shrunk: all of it, and nothing more.
        assert_eq!(read("0-7,9\n", 4, 64).0, "0-7,9\n");
        assert_eq!(read("0\n", 4, 64).0, "0\n");
    }

    #[test]
    fn natural_order_compares_numbers_as_numbers() {
        let names = ["irq10", "irq2", "cpu1", "irq2a", "irq", "irq02"];
        let expected = ["cpu1", "irq", "irq02", "irq2", "irq2a", "irq10"];
        let mut compared = names.to_vec();
        compared.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(compared, expected);
        let sorted = sort_natural(names.iter().map(|n| n.to_string()).collect());
        assert_eq!(sorted, expected);
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
    fn a_fifo_in_a_tree_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("proc/cpuinfo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let root = SysRoot::dir(dir.path());
        let err = root.read("/proc/cpuinfo").unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { .. }), "{err}");
        assert!(err.to_string().contains("/proc/cpuinfo"), "{err}");
        let mut buf = [0u8; 8];
        assert!(root.read_at("/proc/cpuinfo", 0, &mut buf).is_err());
    }

    #[test]
    fn files_of_every_size_around_the_first_read_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path()).recording();
        for size in [
            0,
            1,
            FIRST_READ_BYTES - 1,
            FIRST_READ_BYTES,
            FIRST_READ_BYTES + 1,
            5 * FIRST_READ_BYTES + 3,
        ] {
            let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            std::fs::write(dir.path().join(format!("f{size}")), &bytes).unwrap();
            assert_eq!(
                root.read_bytes(&format!("/f{size}")).unwrap(),
                bytes,
                "{size}"
            );
        }
        // A file over the limit is refused, whichever read finds it out.
        let big = std::fs::File::create(dir.path().join("big")).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        let err = root.read_bytes("/big").unwrap_err();
        assert!(err.to_string().contains("/big: larger than"), "{err}");
        // Paths with `.`, `..` and doubled slashes stay inside the root, as before.
        assert_eq!(root.read_bytes("//./../f1").unwrap(), [0]);
        assert!(root.read_bytes("/").is_err(), "the root is a directory");
    }

    #[test]
    fn files_in_and_beside_the_busy_directories_are_read_alike() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("proc/irq/5/node", "1\n"),
            ("proc/irqx/5", "irqx\n"),
            ("proc/12/stat", "12 (x) S\n"),
            ("proc/interrupts", "CPU0\n"),
            ("sys/devices/system/cpu/online", "0-3\n"),
            ("sys/devices/system/cpu/cpu0/topology/core_id", "0\n"),
            ("sys/devices/system/cpufreq", "not cpu/\n"),
        ];
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let root = SysRoot::dir(dir.path());
        for (path, text) in files {
            assert_eq!(root.read(&format!("/{path}")).unwrap(), text, "{path}");
        }
        assert!(root.read("/proc/irq/6/node").unwrap_err().is_not_found());
        let dirs = root.open_dirs().unwrap();
        assert_eq!(dirs.busy.len(), BUSY_DIRS.len());
        let split = |path| dirs.split(path).1;
        assert_eq!(split("proc/irq/5/node"), "5/node");
        assert_eq!(split("proc/irqx/5"), "irqx/5");
        assert_eq!(split("proc/irq"), "irq");
        assert_eq!(
            split("sys/devices/system/cpufreq"),
            "sys/devices/system/cpufreq"
        );
        // A tree without them reads from its root.
        let bare = tempfile::tempdir().unwrap();
        std::fs::write(bare.path().join("x"), "1").unwrap();
        let root = SysRoot::dir(bare.path());
        assert_eq!(root.read("/x").unwrap(), "1");
        assert!(root.open_dirs().unwrap().busy.is_empty());
        assert!(root.read("/proc/1/stat").unwrap_err().is_not_found());
    }

    #[test]
    fn devices_in_a_tree_are_refused_whether_empty_or_endless() {
        // Links to the host's devices: /dev/null reads as empty, /dev/zero never ends.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        for device in ["null", "zero"] {
            let link = dir.path().join("proc").join(device);
            std::os::unix::fs::symlink(format!("/dev/{device}"), &link).unwrap();
        }
        let root = SysRoot::dir(dir.path());
        for path in ["/proc/null", "/proc/zero"] {
            let err = root.read(path).unwrap_err();
            assert!(matches!(err, ReadError::NotRegular { .. }), "{path}: {err}");
        }
    }

    #[test]
    fn the_live_machine_still_reads_proc_and_sys() {
        let root = SysRoot::live();
        assert!(root.read("/proc/self/status").unwrap().contains("Pid:"));
        if root.exists("/sys/devices/system/cpu/online") {
            root.read_value("/sys/devices/system/cpu/online").unwrap();
        }
    }

    /// A tree whose knob, sysctl.d and journal directory are links to `outside`.
    fn tree_with_links_out(outside: &Path) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(outside.join("file"), "1\n").unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/vm")).unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::create_dir_all(dir.path().join("var/lib")).unwrap();
        let link = |target: &Path, at: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(at)).unwrap();
        };
        link(&outside.join("file"), "proc/sys/vm/stat_interval");
        link(outside, "etc/sysctl.d");
        link(outside, "var/lib/lowlat");
        // A relative link that stays inside is followed, as in sysfs (cpuN/cpufreq).
        std::fs::create_dir_all(dir.path().join("sys/cpufreq/policy0")).unwrap();
        std::fs::write(dir.path().join("sys/cpufreq/policy0/governor"), "x\n").unwrap();
        link(Path::new("cpufreq/policy0"), "sys/cpu0");
        dir
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
    fn writes_never_leave_the_root_through_links() {
        let outside = tempfile::tempdir().unwrap();
        let tree = tree_with_links_out(outside.path());
        let root = SysRoot::dir(tree.path());
        let leaves = |e: WriteError| {
            assert!(e.to_string().contains("outside the root"), "{e}");
        };
        leaves(
            root.write_knob("/proc/sys/vm/stat_interval", b"3600\n")
                .unwrap_err(),
        );
        leaves(
            root.replace_file("/etc/sysctl.d/99-lowlat.conf", b"x\n", Perms::mode(0o644))
                .unwrap_err(),
        );
        leaves(
            root.install_file("/etc/sysctl.d/99-lowlat.conf", b"x\n", Perms::mode(0o644))
                .unwrap_err(),
        );
        leaves(root.create_dirs("/var/lib/lowlat/sub").unwrap_err());
        leaves(
            root.append_durably("/var/lib/lowlat/journal", b"x\n", 0o600)
                .unwrap_err(),
        );
        leaves(
            root.open_lock_file("/var/lib/lowlat/lock", 0o600)
                .unwrap_err(),
        );
        leaves(root.remove_file("/etc/sysctl.d/file").unwrap_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("file")).unwrap(),
            "1\n"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);

        root.write_knob("/sys/cpu0/governor", b"performance\n")
            .unwrap();
        assert_eq!(
            root.read_value("/sys/cpufreq/policy0/governor").unwrap(),
            "performance"
        );
    }

    #[test]
    fn the_walk_without_openat2_refuses_the_same_links() {
        let outside = tempfile::tempdir().unwrap();
        let tree = tree_with_links_out(outside.path());
        let top =
            rustix::fs::open(tree.path(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let walk = |path: &str, flags| walk_beneath(&top, Path::new(path), flags, Mode::empty());
        for path in [
            "proc/sys/vm/stat_interval",
            "etc/sysctl.d/file",
            "proc/../../x",
        ] {
            let err = walk(path, OFlags::WRONLY).unwrap_err();
            assert!(
                err.to_string().contains("outside the root"),
                "{path}: {err}"
            );
        }
        walk("sys/cpu0/governor", OFlags::RDONLY).unwrap();
        walk("sys/cpu0/../policy0/governor", OFlags::RDONLY).unwrap();
        walk("proc/sys", OFlags::RDONLY | OFlags::DIRECTORY).unwrap();
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

    #[test]
    fn messages_escape_control_characters_in_paths() {
        let root = SysRoot::dir(tempfile::tempdir().unwrap().path());
        let err = root.read("/proc/\x1b]0;owned\x07").unwrap_err();
        assert!(!err.to_string().contains('\x1b'), "{err}");
        assert!(err.to_string().contains("\\x1b]0;owned\\x07"), "{err}");
    }
}

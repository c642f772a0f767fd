//! The read side of [`SysRoot`]: whole files, lines, listings, links, and the recording
//! that `lowlat snapshot` captures.

use rustix::fs::{Mode, OFlags};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::beneath::{leaves_root, open_beneath, relative_str};
use super::{MAX_FILE_BYTES, MAX_LINE_BYTES, MemoryTree, ReadError, Recorded, SysRoot};

/// The bytes of the file `path` of a tree in memory; a path it holds no file at is not found.
fn memory_file<'a>(tree: &'a MemoryTree, path: &str) -> Result<&'a [u8], ReadError> {
    tree.file(path)
        .ok_or_else(|| ReadError::from_io(path, io::ErrorKind::NotFound.into()))
}

/// The directories (relative to the root) that hold most of the files a machine read opens:
/// the per-CPU ones (topology, caches, cpuidle, cpufreq policies), the per-IRQ ones and the
/// per-process ones; deepest first. On 8,192 CPUs that is hundreds of thousands of files,
/// and looking up each component of each path was the largest single cost of opening them.
const BUSY_DIRS: [&str; 3] = ["sys/devices/system/cpu", "proc/irq", "proc"];

/// A machine tree's root directory and its [`BUSY_DIRS`] that exist inside it, opened
/// (`O_PATH`) once, so that a file is opened relative to the deepest one that holds it. A busy
/// directory that is a link leading out of the root is not opened (its files are then opened
/// from the root, and refused).
#[derive(Debug)]
pub(super) struct OpenDirs {
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
                    open_beneath(&root, Path::new(path), flags, Mode::empty()).ok()?,
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
            None => match self.read_file(path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    if self.recorded.is_some()
                        && matches!(e, ReadError::PermissionDenied { .. } | ReadError::Io { .. })
                    {
                        self.record(path, Recorded::Unreadable);
                    }
                    return Err(e);
                }
            },
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
    /// ethtool netlink query), kept under the system path `path` of
    /// [`ANSWERS_DIR`](super::ANSWERS_DIR).
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
    fn open_nonblocking(&self, path: &str) -> Result<std::fs::File, ReadError> {
        self.open_confined(path, OFlags::RDONLY | OFlags::NONBLOCK)
            .map(std::fs::File::from)
            .map_err(|e| self.read_error(path, e))
    }

    /// Opens the system path `path` with `flags`. On the live machine the path is opened as it
    /// is; under another root it is resolved beneath the root ([`open_beneath`]: a link that
    /// leads out is refused), relative to the root directory or to one of the directories most
    /// files are read from, each opened once ([`OpenDirs`]), so that their components are not
    /// walked again for each of the files of a large machine. A link that climbs out of such a
    /// directory but stays in the root (`cpu0/node0 -> ../../node/node0`) is resolved again
    /// from the root.
    fn open_confined(&self, path: &str, flags: OFlags) -> io::Result<OwnedFd> {
        let flags = flags | OFlags::CLOEXEC;
        if self.live || self.memory.is_some() {
            return Ok(rustix::fs::open(
                self.host_path(path),
                flags,
                Mode::empty(),
            )?);
        }
        let Some(dirs) = self.open_dirs() else {
            // The root itself cannot be opened (absent, not a directory, not allowed): why.
            let root = rustix::fs::open(&self.dir, OFlags::PATH | OFlags::DIRECTORY, Mode::empty());
            return Err(root
                .err()
                .map_or(io::ErrorKind::NotFound.into(), Into::into));
        };
        let relative = relative_str(path);
        let (dir, rest) = dirs.split(&relative);
        match open_beneath(dir, Path::new(rest), flags, Mode::empty()) {
            Err(e) if leaves_root(&e) && rest.len() < relative.len() => {
                open_beneath(&dirs.root, Path::new(&*relative), flags, Mode::empty())
            }
            opened => opened,
        }
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
        use std::os::unix::ffi::OsStringExt;
        if self.memory.is_some() {
            // A snapshot holds no links.
            return Err(ReadError::from_io(path, io::ErrorKind::NotFound.into()));
        }
        let (parent, name) = match path.trim_end_matches('/').rsplit_once('/') {
            Some((parent, name)) if !name.is_empty() && name != "." && name != ".." => {
                (parent, name)
            }
            _ => return Err(ReadError::from_io(path, io::ErrorKind::InvalidInput.into())),
        };
        let target = self
            .open_confined(parent, OFlags::PATH | OFlags::DIRECTORY)
            .and_then(|dir| Ok(rustix::fs::readlinkat(&dir, name, Vec::new())?))
            .map_err(|e| self.read_error(path, e))?;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(
            target.into_bytes(),
        )))
    }

    /// Whether a path is a directory under the root.
    pub fn is_dir(&self, path: &str) -> bool {
        match &self.memory {
            Some(tree) => tree.is_dir(path),
            None => self.found(path, OFlags::PATH | OFlags::DIRECTORY),
        }
    }

    /// Whether a path exists under the root (file or directory).
    pub fn exists(&self, path: &str) -> bool {
        let found = match &self.memory {
            Some(tree) => tree.exists(path),
            None => self.found(path, OFlags::PATH),
        };
        if found {
            self.record(path, Recorded::Exists);
        }
        found
    }

    /// Whether `path` opens with `flags` (`O_PATH`: nothing is read); a path refused because
    /// it leads out of the root is not found, and kept for [`SysRoot::take_refused`].
    fn found(&self, path: &str, flags: OFlags) -> bool {
        match self.open_confined(path, flags) {
            Ok(_) => true,
            Err(e) => {
                self.read_error(path, e);
                false
            }
        }
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
                let dir = match self.open_confined(path, OFlags::RDONLY | OFlags::DIRECTORY) {
                    Ok(dir) => dir,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(self.read_error(path, e)),
                };
                let entries =
                    rustix::fs::Dir::new(dir).map_err(|e| self.read_error(path, e.into()))?;
                Some(
                    entries
                        .filter_map(|entry| entry.ok())
                        .map(|entry| entry.file_name().to_string_lossy().into_owned())
                        .filter(|name| name != "." && name != "..")
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
    use rustix::fs::FileType;

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
        // Copies of the host's devices (as root): /dev/null reads as empty, /dev/zero never
        // ends. Links to them lead out of the tree and are refused before that.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let as_root = rustix::process::geteuid().is_root();
        for (device, minor) in [("null", 3), ("zero", 5)] {
            let at = dir.path().join("proc").join(device);
            if as_root {
                let mode = Mode::from_raw_mode(0o666);
                let dev = rustix::fs::makedev(1, minor);
                rustix::fs::mknodat(rustix::fs::CWD, &at, FileType::CharacterDevice, mode, dev)
                    .unwrap();
            } else {
                std::os::unix::fs::symlink(format!("/dev/{device}"), &at).unwrap();
            }
        }
        let root = SysRoot::dir(dir.path());
        for path in ["/proc/null", "/proc/zero"] {
            let err = root.read(path).unwrap_err();
            if as_root {
                assert!(matches!(err, ReadError::NotRegular { .. }), "{path}: {err}");
            } else {
                assert!(matches!(err, ReadError::LeavesRoot { .. }), "{path}: {err}");
            }
        }
    }

    /// A tree whose host name, `proc/sys/kernel/ostype` and `etc` lead out of it (to a file
    /// outside, to lowlat's own environment, through `..`), whose `proc` is the live /proc,
    /// and whose sysfs holds relative links that stay inside (out of a busy directory too).
    fn tree_with_links(outside: &Path) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let at = |path: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            path
        };
        let link =
            |target: &Path, path: &str| std::os::unix::fs::symlink(target, at(path)).unwrap();
        std::fs::write(outside.join("secret"), "outside\n").unwrap();
        link(&outside.join("secret"), "host/proc/sys/kernel/hostname");
        link(
            Path::new("/proc/self/environ"),
            "host/proc/sys/kernel/ostype",
        );
        link(
            Path::new("../../../../../../../../../../../../etc/hostname"),
            "host/proc/sys/kernel/osrelease",
        );
        link(outside, "host/etc");
        link(Path::new("/proc"), "proc");
        let cpu = "host/sys/devices/system/cpu";
        std::fs::write(
            at(&format!("{cpu}/cpufreq/policy0/scaling_governor")),
            "performance\n",
        )
        .unwrap();
        std::fs::write(at("host/sys/devices/system/node/node0/cpulist"), "0-3\n").unwrap();
        link(
            Path::new("../cpufreq/policy0"),
            &format!("{cpu}/cpu0/cpufreq"),
        );
        link(Path::new("../../node/node0"), &format!("{cpu}/cpu0/node0"));
        dir
    }

    #[test]
    fn reads_never_leave_the_root_through_links_and_name_what_they_refused() {
        let outside = tempfile::tempdir().unwrap();
        let tree = tree_with_links(outside.path());
        // Two roots: the tree whose `proc` is the live /proc, and `host/` without it.
        let root = SysRoot::dir(tree.path().join("host"));
        for path in [
            "/proc/sys/kernel/hostname",
            "/proc/sys/kernel/ostype",
            "/proc/sys/kernel/osrelease",
            "/etc/secret",
        ] {
            let err = root.read(path).unwrap_err();
            assert!(matches!(err, ReadError::LeavesRoot { .. }), "{path}: {err}");
            assert!(
                err.to_string()
                    .starts_with(&format!("{path}: a symbolic link")),
                "{err}"
            );
        }
        assert!(root.list("/etc").is_err());
        assert!(!root.exists("/etc/secret"));
        assert!(!root.is_dir("/etc"));
        assert!(root.read_link("/etc/secret").is_err());
        // The link itself is in the tree, and is read as written.
        assert_eq!(
            root.read_link("/proc/sys/kernel/ostype").unwrap(),
            Path::new("/proc/self/environ")
        );
        assert_eq!(
            root.take_refused(),
            [
                "/etc",
                "/etc/secret",
                "/proc/sys/kernel/hostname",
                "/proc/sys/kernel/osrelease",
                "/proc/sys/kernel/ostype",
            ]
        );
        assert!(root.take_refused().is_empty(), "taken once");
        // Links that stay inside are followed, from a busy directory out of it too.
        let cpu = "/sys/devices/system/cpu/cpu0";
        assert_eq!(
            root.read_value(&format!("{cpu}/cpufreq/scaling_governor"))
                .unwrap(),
            "performance"
        );
        assert_eq!(
            root.read_value(&format!("{cpu}/node0/cpulist")).unwrap(),
            "0-3"
        );
        assert!(root.is_dir(&format!("{cpu}/node0")));
        assert_eq!(root.list(&format!("{cpu}/node0")).unwrap(), ["cpulist"]);
        assert!(root.take_refused().is_empty());

        // `proc -> /proc`: the live machine's processes are neither read nor listed.
        let root = SysRoot::dir(tree.path());
        assert!(root.read("/proc/self/status").is_err());
        assert!(root.read("/proc/1/stat").is_err());
        assert!(root.list("/proc").is_err());
        assert!(!root.exists("/proc/self"));
        assert!(
            root.open_dirs().unwrap().busy.is_empty(),
            "no busy directory through the link"
        );
        assert_eq!(
            root.take_refused(),
            ["/proc", "/proc/1/stat", "/proc/self", "/proc/self/status"]
        );
    }

    #[test]
    fn the_live_machine_still_reads_proc_and_sys() {
        let root = SysRoot::live();
        assert!(root.read("/proc/self/status").unwrap().contains("Pid:"));
        if root.exists("/sys/devices/system/cpu/online") {
            root.read_value("/sys/devices/system/cpu/online").unwrap();
        }
    }
}

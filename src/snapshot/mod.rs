//! Snapshots: the files the machine model read, captured into one compressed archive that can
//! be read on another machine with `--snapshot FILE`.
//!
//! Format: a tar stream compressed with zstd (or, for a capture made where there is no zstd,
//! an uncompressed tar, which `--snapshot` also opens). The first entry is `manifest.json`
//! ([`Manifest`], a document of kind `snapshot`); the machine's files follow under `root/` with their system paths
//! (`root/proc/cpuinfo`). Only regular files and directories are written.
//!
//! Opening a snapshot ([`open`]) unpacks it into a private temporary directory, written by lowlat
//! itself entry by entry; loading one ([`load`], for `lowlat fleet`, which reads thousands)
//! holds its archive in memory instead, whole, its files ranges of it, its entries read
//! straight from the tar headers. Either way, absolute paths, `..`, links, device files, oversize entries and archives too
//! large to be a snapshot are refused with an error naming the entry. Ctrl-C or SIGTERM
//! while it unpacks removes the directory before the process ends, and a terminal sees the
//! progress once a second.

use serde::{Deserialize, Serialize};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::document::{self, Header, Kind, Layout, Tool};
use crate::sysroot::signals::Handlers;
use crate::sysroot::{
    Durability, MAX_FILE_BYTES, MemoryTree, Perms, Recorded, Scratch, SysRoot, UNCAPTURED,
    WriteError, write_file_atomically,
};
use crate::text::escape_controls;

pub(crate) mod foreign;
mod gaps;
pub mod mustgather;
pub mod sosreport;
pub(crate) mod steps;
mod ustar;

/// The `format` field of a schema-1 manifest (before the document envelope).
const FORMAT_BEFORE_ENVELOPE: &str = "lowlat-snapshot";
/// The most bytes an archive may unpack to.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// The first four bytes of every zstd frame, so of every snapshot.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The most entries an archive may hold.
pub const MAX_ENTRIES: usize = 500_000;

/// What a snapshot says about itself: the document envelope (`created` is when it was
/// captured, `host` the captured machine), then what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Which lowlat captured which host, and when.
    #[serde(flatten)]
    pub header: Header,
    /// The root that was captured (`/` for a live machine).
    pub source_root: String,
    /// Number of files captured.
    pub files: usize,
    /// Total size of the captured files in bytes (before compression).
    pub bytes: u64,
    /// Which system's files the snapshot holds: `linux` (`lowlat snapshot`; absent in
    /// manifests written before captures of other systems) or `freebsd`
    /// (`packaging/freebsd/lowlat-capture.sh`).
    #[serde(default)]
    pub snapshot_kind: SnapshotKind,
}

/// Which system a snapshot captured, so that commands read it with the right model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnapshotKind {
    /// A Linux machine's /proc, /sys and /etc, captured by `lowlat snapshot`.
    #[default]
    Linux,
    /// A FreeBSD machine's command outputs, captured by lowlat-capture.sh.
    Freebsd,
}

/// A manifest as schema 1 wrote it, before the document envelope.
#[derive(Deserialize)]
struct ManifestBeforeEnvelope {
    format: String,
    format_version: u32,
    tool_version: String,
    host: String,
    captured_at: String,
    source_root: String,
    files: usize,
    bytes: u64,
}

/// Why a snapshot could not be written, opened or extracted. Every message names the file;
/// names and text that came from the archive are escaped.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The snapshot file could not be opened.
    #[error("{}: cannot open: {source}", .file.display())]
    Open {
        /// The snapshot file.
        file: PathBuf,
        /// The error of the open.
        source: std::io::Error,
    },
    /// A directory was given where the snapshot file belongs.
    #[error(
        "{}: is a directory; give the file `lowlat snapshot -o FILE` wrote (a tree laid out like / is read with --root DIR)",
        .0.display()
    )]
    Directory(PathBuf),
    /// The file is not zstd-compressed, so lowlat did not make it.
    #[error(
        "{}: not a lowlat snapshot (not zstd-compressed: {}); make one with `lowlat snapshot -o FILE`",
        .file.display(),
        escape_controls(.reason)
    )]
    NotZstd {
        /// The snapshot file.
        file: PathBuf,
        /// What the decoder said.
        reason: String,
    },
    /// The archive inside is damaged, hostile or not one lowlat made.
    #[error("{}: {}", .file.display(), escape_controls(&.source.to_string()))]
    Archive {
        /// The snapshot file.
        file: PathBuf,
        /// What is wrong with it.
        source: ArchiveError,
    },
    /// Ctrl-C or SIGTERM arrived while the snapshot was unpacked (its directory is removed).
    #[error("{}: interrupted while unpacking", .file.display())]
    Interrupted {
        /// The snapshot file.
        file: PathBuf,
    },
    /// The private directory to unpack into could not be made.
    #[error("cannot create a private temporary directory for the snapshot: {0}")]
    TempDir(std::io::Error),
    /// The archive could not be built (an entry name the tar format refuses).
    #[error("cannot add {name} to the snapshot: {source}")]
    Build {
        /// The entry.
        name: String,
        /// The error of the tar builder.
        source: std::io::Error,
    },
    /// A file could not be read while extracting.
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error of the read.
        source: std::io::Error,
    },
    /// A file or directory could not be written (the error names it).
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// What is wrong with the archive inside a snapshot file.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The decompressed stream is not a tar archive, or it is cut short.
    #[error("truncated or corrupt archive: {0}")]
    Corrupt(std::io::Error),
    /// More entries than any snapshot lowlat makes.
    #[error("more than {MAX_ENTRIES} entries: not a snapshot lowlat made")]
    TooManyEntries,
    /// One entry is larger than any file lowlat reads.
    #[error("entry {name} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit")]
    EntryTooLarge {
        /// The entry.
        name: String,
        /// Its size in bytes.
        size: u64,
    },
    /// The entries add up to more than a snapshot may unpack to.
    #[error("unpacks to more than {MAX_TOTAL_BYTES} bytes: not a snapshot lowlat made")]
    TooLarge,
    /// manifest.json is not a lowlat manifest.
    #[error("manifest.json is not a lowlat manifest: {0}")]
    BadManifest(String),
    /// The manifest names a layout this lowlat does not read.
    #[error(
        "manifest says format '{format}' version {version}; this lowlat reads \
         '{FORMAT_BEFORE_ENVELOPE}' version 1 or a document of kind snapshot (upgrade lowlat)"
    )]
    UnknownFormat {
        /// The manifest's `format`.
        format: String,
        /// The manifest's `format_version`.
        version: u32,
    },
    /// An entry outside `root/`, absolute or with `..`.
    #[error("entry {0} is outside root/ (an absolute path or '..'); refused")]
    Outside(String),
    /// An entry that is not a regular file or a directory.
    #[error(
        "entry {name} is a {kind}, not a regular file or directory; snapshots hold no links or devices"
    )]
    NotRegular {
        /// The entry.
        name: String,
        /// Its tar type.
        kind: String,
    },
    /// No manifest.json in the archive.
    #[error("no manifest.json: not a snapshot lowlat made")]
    NoManifest,
    /// The first entry is not manifest.json, which every snapshot lowlat makes starts with: the
    /// rest is not inflated.
    #[error("the first entry is {0}, not manifest.json: not a snapshot lowlat made")]
    ManifestNotFirst(String),
    /// A signal stopped the unpacking.
    #[error("stopped by signal {0}")]
    Stopped(i32),
    /// An entry could not be written into the private directory.
    #[error("cannot unpack {name}: {source}")]
    Unpack {
        /// The entry.
        name: String,
        /// The error of the write.
        source: std::io::Error,
    },
}

impl Manifest {
    /// Reads manifest.json, of schema 1 or of this lowlat's layout.
    fn from_json(text: &str) -> Result<Manifest, ArchiveError> {
        let bad = |e: &dyn std::fmt::Display| ArchiveError::BadManifest(e.to_string());
        match document::layout(text, Kind::Snapshot).map_err(|e| bad(&e))? {
            Layout::Envelope => serde_json::from_str(text).map_err(|e| bad(&e)),
            Layout::BeforeEnvelope => {
                let old: ManifestBeforeEnvelope =
                    serde_json::from_str(text).map_err(|e| bad(&e))?;
                if old.format != FORMAT_BEFORE_ENVELOPE || old.format_version != 1 {
                    return Err(ArchiveError::UnknownFormat {
                        format: old.format,
                        version: old.format_version,
                    });
                }
                Ok(Manifest {
                    header: Header {
                        schema_version: 1,
                        kind: Kind::Snapshot,
                        tool: Tool {
                            name: env!("CARGO_PKG_NAME").to_string(),
                            version: old.tool_version,
                        },
                        created: old.captured_at,
                        host: old.host,
                    },
                    source_root: old.source_root,
                    files: old.files,
                    bytes: old.bytes,
                    snapshot_kind: SnapshotKind::Linux,
                })
            }
        }
    }
}

/// Writes a snapshot of what `root` recorded to `out` (atomically, see
/// [`write_file_atomically`]). Returns the manifest written.
pub fn write(root: &SysRoot, out: &Path) -> Result<Manifest, SnapshotError> {
    let recorded = root.recorded();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut dirs: Vec<String> = Vec::new();
    let mut placeholders: Vec<String> = Vec::new();
    let mut unreadable: Vec<String> = Vec::new();
    for (path, what) in &recorded {
        match what {
            Recorded::File(bytes) => files.push((path.clone(), bytes.clone())),
            Recorded::Dir(names) => {
                dirs.push(path.clone());
                for name in names {
                    let child = format!("{}/{name}", path.trim_end_matches('/'));
                    let inside = format!("{child}/");
                    let holds_recorded = recorded
                        .range(inside.clone()..)
                        .next()
                        .is_some_and(|(p, _)| p.starts_with(&inside));
                    if !recorded.contains_key(&child) && !holds_recorded {
                        placeholders.push(child);
                    }
                }
            }
            Recorded::Exists => match root.read_bytes(path) {
                Ok(bytes) => files.push((path.clone(), bytes)),
                Err(_) => dirs.push(path.clone()),
            },
            Recorded::Unreadable => unreadable.push(path.clone()),
        }
    }
    // The files that could not be read are listed as not captured, after those the tree
    // read listed already (a snapshot of a support bundle's tree): unknown where the
    // snapshot is read, not absent.
    if !unreadable.is_empty() {
        let listed = files.iter().position(|(path, _)| path == UNCAPTURED);
        let mut text = listed.map_or_else(Vec::new, |at| files.remove(at).1);
        for path in &unreadable {
            text.extend_from_slice(format!("{path}\n").as_bytes());
        }
        files.push((UNCAPTURED.to_string(), text));
    }
    for child in placeholders {
        // A child that is gone since it was listed (a process that exited while the machine
        // was read) becomes an empty directory: every read under it then fails as "not
        // found", as it did while capturing, and not as "not a directory".
        if root.is_dir(&child) || !root.exists(&child) {
            dirs.push(child);
        } else {
            files.push((child, Vec::new()));
        }
    }
    dirs.sort();
    dirs.dedup();
    let manifest = Manifest {
        header: Header::new(Kind::Snapshot, document::host_name(root)),
        source_root: root.dir_path().display().to_string(),
        files: files.len(),
        bytes: files.iter().map(|(_, b)| b.len() as u64).sum(),
        snapshot_kind: SnapshotKind::Linux,
    };

    let mut builder = tar::Builder::new(Vec::new());
    let manifest_json = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
    append(&mut builder, "manifest.json", &manifest_json)?;
    for dir in &dirs {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        let name = archive_name(dir);
        builder
            .append_data(&mut header, &name, std::io::empty())
            .map_err(|source| SnapshotError::Build { name, source })?;
    }
    for (path, bytes) in &files {
        append(&mut builder, &archive_name(path), bytes)?;
    }
    let tarball = builder
        .into_inner()
        .map_err(|source| SnapshotError::Build {
            name: "the end of the archive".into(),
            source,
        })?;
    let compressed = compress(&tarball).map_err(|source| SnapshotError::Build {
        name: "the compressed archive".into(),
        source,
    })?;
    write_file_atomically(out, &compressed, Perms::mode(0o644), Durability::Synced)?;
    Ok(manifest)
}

/// The zstd level snapshots are written at: zstd's fastest, as a snapshot is written once on
/// the host being examined, which should feel it as little as possible.
const LEVEL: i32 = 1;

/// `bytes` compressed into one zstd frame (which records the size of its content).
fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    zstd::bulk::compress(bytes, LEVEL)
}

fn archive_name(path: &str) -> String {
    format!("root/{}", path.trim_start_matches('/'))
}

fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    bytes: &[u8],
) -> Result<(), SnapshotError> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(0o644);
    header.set_size(bytes.len() as u64);
    builder
        .append_data(&mut header, name, bytes)
        .map_err(|source| SnapshotError::Build {
            name: name.to_string(),
            source,
        })
}

/// Opens a snapshot: checks and unpacks it into a private temporary directory and returns a
/// SysRoot over it (which removes the directory when dropped) with the manifest.
///
/// Ctrl-C or SIGTERM while it unpacks removes the directory, then ends the process as the
/// signal would have; so does Ctrl-C, SIGTERM or SIGHUP while the SysRoot lives.
pub fn open(file: &Path) -> Result<(SysRoot, Manifest), SnapshotError> {
    let tempdir = Scratch::new("lowlat-snapshot-").map_err(SnapshotError::TempDir)?;
    let top = tempdir.path().join("root");
    std::fs::create_dir(&top).map_err(SnapshotError::TempDir)?;
    let mut tempdir = Some(tempdir);
    let manifest = read_archive(file, &mut Destination::Dir(&top), &mut || {
        drop(tempdir.take())
    })?;
    let tempdir = tempdir.ok_or(SnapshotError::Interrupted {
        file: file.to_path_buf(),
    })?;
    Ok((SysRoot::unpacked(tempdir, top), manifest))
}

/// Loads a snapshot into memory, with the same checks as [`open`], and returns a SysRoot over
/// its files with the manifest. Nothing is written to disk.
pub fn load(file: &Path) -> Result<(SysRoot, Manifest), SnapshotError> {
    let mut tree = MemoryTree::default();
    let manifest = read_archive(file, &mut Destination::Memory(&mut tree), &mut || {})?;
    Ok((SysRoot::in_memory(file.to_path_buf(), tree), manifest))
}

/// Where the entries of an archive go.
enum Destination<'a> {
    /// Files and directories under this directory.
    Dir(&'a Path),
    /// A tree in memory.
    Memory(&'a mut MemoryTree),
}

/// Reads the snapshot `file` into `destination` and returns its manifest. Ctrl-C or SIGTERM while it
/// reads calls `clean_up`, then ends the process as the signal would have.
fn read_archive(
    file: &Path,
    destination: &mut Destination<'_>,
    clean_up: &mut dyn FnMut(),
) -> Result<Manifest, SnapshotError> {
    let mut raw = std::fs::File::open(file).map_err(|source| SnapshotError::Open {
        file: file.to_path_buf(),
        source,
    })?;
    if raw.metadata().is_ok_and(|meta| meta.is_dir()) {
        return Err(SnapshotError::Directory(file.to_path_buf()));
    }
    let mut magic = [0u8; 4];
    let not_zstd = |reason: String| SnapshotError::NotZstd {
        file: file.to_path_buf(),
        reason,
    };
    // The first bytes: zstd's magic number, or (a capture made where no zstd is, as on
    // FreeBSD before 12) a plain tar, whose first header says `ustar` at byte 257.
    let mut head = Vec::with_capacity(512);
    let compressed = match raw.read_exact(&mut magic) {
        Ok(()) if magic == ZSTD_MAGIC => true,
        Ok(()) => {
            head.extend_from_slice(&magic);
            (&mut raw)
                .take(508)
                .read_to_end(&mut head)
                .map_err(|e| not_zstd(format!("{e} while reading the first header")))?;
            if head.get(257..262) != Some(b"ustar".as_slice()) {
                return Err(not_zstd(
                    "it starts with neither zstd's magic number nor a tar header".into(),
                ));
            }
            false
        }
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(not_zstd(
                "it is shorter than zstd's 4-byte magic number: an empty or cut-off file".into(),
            ));
        }
        Err(e) => return Err(not_zstd(format!("{e} while reading zstd's magic number"))),
    };
    let signals = SignalGuard::install();
    let mut progress = UnpackProgress::new(file);
    let unpacked = match destination {
        Destination::Dir(top) if compressed => {
            let decoder = zstd::stream::read::Decoder::new(std::io::Read::chain(&magic[..], raw))
                .map_err(|e| not_zstd(e.to_string()))?;
            tar::Archive::new(decoder.take(MAX_TOTAL_BYTES + 1))
                .entries()
                .map_err(ArchiveError::Corrupt)
                .and_then(|entries| unpack(entries, top, &mut progress))
        }
        Destination::Dir(top) => {
            tar::Archive::new(std::io::Read::chain(&head[..], raw).take(MAX_TOTAL_BYTES + 1))
                .entries()
                .map_err(ArchiveError::Corrupt)
                .and_then(|entries| unpack(entries, top, &mut progress))
        }
        Destination::Memory(_) if !compressed => {
            return Err(not_zstd(
                "an uncompressed tar (a capture made without zstd): compress it with `zstd FILE` \
                 for this command, or open it with --snapshot FILE"
                    .into(),
            ));
        }
        Destination::Memory(tree) => unpack_in_memory(&magic, raw, tree, &mut progress),
    };
    progress.finish();
    if let Some(signal) = SignalGuard::caught() {
        clean_up();
        drop(signals);
        // SAFETY: raise() only delivers the signal, now with its previous disposition.
        unsafe { libc::raise(signal) };
        return Err(SnapshotError::Interrupted {
            file: file.to_path_buf(),
        });
    }
    drop(signals);
    unpacked.map_err(|source| SnapshotError::Archive {
        file: file.to_path_buf(),
        source,
    })
}

/// The path of a tar entry, as text (a byte that is not UTF-8 becomes U+FFFD).
fn entry_name<R: Read>(entry: &tar::Entry<'_, R>) -> Result<String, ArchiveError> {
    let path = entry.path().map_err(ArchiveError::Corrupt)?;
    Ok(path.to_string_lossy().into_owned())
}

/// The signal caught while a snapshot unpacks (0: none).
static CAUGHT_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn record_signal(signal: libc::c_int) {
    CAUGHT_SIGNAL.store(signal, Ordering::Relaxed);
}

/// While it lives, SIGINT and SIGTERM (unless ignored) only record themselves, so that the
/// work in progress (an unpacking, a watch with settings to restore) stops and cleans up;
/// dropping it restores the previous handlers.
pub(crate) struct SignalGuard {
    _handlers: Handlers,
}

impl SignalGuard {
    /// Installs the recording handlers (they only store to an atomic, which is
    /// async-signal-safe).
    pub(crate) fn install() -> Self {
        CAUGHT_SIGNAL.store(0, Ordering::Relaxed);
        Self {
            _handlers: Handlers::install(&[libc::SIGINT, libc::SIGTERM], record_signal, 0),
        }
    }

    /// The signal caught since [`SignalGuard::install`], if any.
    pub(crate) fn caught() -> Option<libc::c_int> {
        Some(CAUGHT_SIGNAL.load(Ordering::Relaxed)).filter(|&s| s != 0)
    }
}

/// How much of a snapshot is unpacked, shown on a terminal's stderr once a second.
struct UnpackProgress {
    label: String,
    bytes: u64,
    shown: bool,
    next: Option<Instant>,
}

impl UnpackProgress {
    /// Interval between two progress lines.
    const EVERY: Duration = Duration::from_secs(1);

    fn new(file: &Path) -> Self {
        let terminal = std::io::stderr().is_terminal();
        Self {
            label: escape_controls(&file.display().to_string()).into_owned(),
            bytes: 0,
            shown: false,
            next: terminal.then(|| Instant::now() + Self::EVERY),
        }
    }

    fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
        if let Some(next) = self.next.filter(|next| Instant::now() >= *next) {
            crate::text::voice::progress(&format!(
                "\rlowlat: unpacking {}: {} MiB",
                self.label,
                self.bytes >> 20
            ));
            self.shown = true;
            self.next = Some(next + Self::EVERY);
        }
    }

    /// Clears the progress line, if one was shown.
    fn finish(&self) {
        if self.shown {
            crate::text::voice::progress("\r\x1b[K");
        }
    }
}

/// The checks every entry of an archive passes, whichever way it is read: a signal stops it,
/// and the number of entries, the size of each and their total are bounded.
struct Admission<'a> {
    /// Entries admitted so far.
    entries: usize,
    /// Their bytes so far.
    total: u64,
    progress: &'a mut UnpackProgress,
}

impl<'a> Admission<'a> {
    fn new(progress: &'a mut UnpackProgress) -> Self {
        Self {
            entries: 0,
            total: 0,
            progress,
        }
    }

    /// Admits the entry `name` of `size` bytes, or says why not.
    fn admit(&mut self, name: &str, size: u64) -> Result<(), ArchiveError> {
        if let Some(signal) = SignalGuard::caught() {
            return Err(ArchiveError::Stopped(signal));
        }
        if self.entries >= MAX_ENTRIES {
            return Err(ArchiveError::TooManyEntries);
        }
        self.entries += 1;
        self.progress.add(size);
        if size > MAX_FILE_BYTES {
            return Err(ArchiveError::EntryTooLarge {
                name: name.to_string(),
                size,
            });
        }
        self.total += size;
        if self.total > MAX_TOTAL_BYTES {
            return Err(ArchiveError::TooLarge);
        }
        Ok(())
    }
}

/// The error for an entry of type `kind`, which a snapshot does not hold.
fn not_regular(name: &str, kind: tar::EntryType) -> ArchiveError {
    ArchiveError::NotRegular {
        name: name.to_string(),
        kind: format!("{kind:?}"),
    }
}

/// Reads the rest of the snapshot `raw` (after its first bytes, `magic`), decompresses its
/// archive whole ([`decompress_whole`]) and adds its entries to `tree` as ranges of it
/// ([`ustar`]: straight from the headers, without copying the files' bytes).
fn unpack_in_memory(
    magic: &[u8],
    mut raw: std::fs::File,
    tree: &mut MemoryTree,
    progress: &mut UnpackProgress,
) -> Result<Manifest, ArchiveError> {
    let mut compressed = magic.to_vec();
    raw.read_to_end(&mut compressed)
        .map_err(ArchiveError::Corrupt)?;
    manifest_first(&compressed)?;
    let data = decompress_whole(&compressed)?;
    // Most entries are a header and one block of bytes.
    tree.reserve(data.len() / 1024);
    let mut admission = Admission::new(progress);
    let mut manifest: Option<Manifest> = None;
    for member in ustar::members(&data) {
        let member = member.map_err(ArchiveError::Corrupt)?;
        admission.admit(&member.name, member.data.len() as u64)?;
        if member.name == "manifest.json" {
            let text = std::str::from_utf8(&data[member.data])
                .map_err(|e| ArchiveError::BadManifest(e.to_string()))?;
            manifest = Some(Manifest::from_json(text)?);
            continue;
        }
        let path = system_path(&member.name)?;
        match member.kind {
            tar::EntryType::Directory => tree.add_dir(path),
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                tree.add_file(path, member.data)
            }
            other => return Err(not_regular(&member.name, other)),
        }
    }
    let manifest = manifest.ok_or(ArchiveError::NoManifest)?;
    tree.hold(data);
    Ok(manifest)
}

/// Checks, from the first tar header alone, that the archive in `compressed` starts with
/// manifest.json, before anything more is inflated.
fn manifest_first(compressed: &[u8]) -> Result<(), ArchiveError> {
    let mut header = [0u8; 512];
    zstd::stream::read::Decoder::with_buffer(compressed)
        .and_then(|mut d| d.read_exact(&mut header))
        .map_err(ArchiveError::Corrupt)?;
    // The name: the header's first 100 bytes, up to the first NUL (ustar and GNU alike).
    let name = &header[..100];
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    if name == b"manifest.json" {
        return Ok(());
    }
    Err(ArchiveError::ManifestNotFirst(
        escape_controls(&String::from_utf8_lossy(name)).into_owned(),
    ))
}

/// Decompresses a snapshot's archive whole: in one call into a buffer of the size its frame
/// records (lowlat's writer records it, see [`compress`]), else (or when that fails: another
/// frame follows, or the size recorded is wrong) by streaming, which gives the error of a
/// damaged file. At most [`MAX_TOTAL_BYTES`].
fn decompress_whole(compressed: &[u8]) -> Result<Vec<u8>, ArchiveError> {
    let recorded = zstd::zstd_safe::get_frame_content_size(compressed)
        .ok()
        .flatten();
    if let Some(size) = recorded.filter(|&size| size <= MAX_TOTAL_BYTES) {
        let mut data = Vec::with_capacity(size as usize);
        let whole = zstd::bulk::Decompressor::new()
            .and_then(|mut d| d.decompress_to_buffer(compressed, &mut data))
            .is_ok_and(|written| written as u64 == size);
        if whole {
            return Ok(data);
        }
    }
    let decoder =
        zstd::stream::read::Decoder::with_buffer(compressed).map_err(ArchiveError::Corrupt)?;
    let mut data = Vec::new();
    decoder
        .take(MAX_TOTAL_BYTES + 1)
        .read_to_end(&mut data)
        .map_err(ArchiveError::Corrupt)?;
    if data.len() as u64 > MAX_TOTAL_BYTES {
        return Err(ArchiveError::TooLarge);
    }
    Ok(data)
}

/// Unpacks the entries of an archive into the directory `top`.
fn unpack<R: Read>(
    entries: tar::Entries<'_, R>,
    top: &Path,
    progress: &mut UnpackProgress,
) -> Result<Manifest, ArchiveError> {
    let mut admission = Admission::new(progress);
    let mut manifest: Option<Manifest> = None;
    for (index, entry) in entries.enumerate() {
        let mut entry = entry.map_err(ArchiveError::Corrupt)?;
        let name = entry_name(&entry)?;
        if index == 0 && name != "manifest.json" {
            return Err(ArchiveError::ManifestNotFirst(
                escape_controls(&name).into_owned(),
            ));
        }
        let size = entry.header().size().map_err(ArchiveError::Corrupt)?;
        admission.admit(&name, size)?;
        if name == "manifest.json" {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .map_err(|e| ArchiveError::BadManifest(e.to_string()))?;
            manifest = Some(Manifest::from_json(&text)?);
            continue;
        }
        let path = system_path(&name)?;
        // Where it goes under `top` (`Path::join` of a relative path stays inside).
        let path = top.join(path.trim_start_matches('/'));
        let unpacking = |source| ArchiveError::Unpack {
            name: name.clone(),
            source,
        };
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&path).map_err(unpacking)?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(unpacking)?;
                }
                let mut out = std::fs::File::create(&path).map_err(unpacking)?;
                std::io::copy(&mut entry.by_ref().take(size), &mut out).map_err(unpacking)?;
            }
            other => return Err(not_regular(&name, other)),
        }
    }
    manifest.ok_or(ArchiveError::NoManifest)
}

/// Copies a tree of regular files and directories (an unpacked snapshot) into the directory
/// `to`, created if missing. Everything is written inside `to`: a symbolic link already there
/// that leads out of it is refused, and files in the way are replaced.
pub fn extract_tree(from: &Path, to: &Path) -> Result<(), SnapshotError> {
    std::fs::create_dir_all(to).map_err(|source| {
        WriteError::new(&to.display().to_string(), "create the directory", source)
    })?;
    copy_into(from, &SysRoot::dir(to), "")
}

fn copy_into(from: &Path, to: &SysRoot, path: &str) -> Result<(), SnapshotError> {
    let reading = |source| SnapshotError::Read {
        path: from.to_path_buf(),
        source,
    };
    to.create_dirs(path)?;
    for entry in std::fs::read_dir(from).map_err(reading)? {
        let entry = entry.map_err(reading)?;
        let child = format!("{path}/{}", entry.file_name().to_string_lossy());
        if entry.file_type().map_err(reading)?.is_dir() {
            copy_into(&entry.path(), to, &child)?;
        } else {
            let bytes = std::fs::read(entry.path()).map_err(|source| SnapshotError::Read {
                path: entry.path(),
                source,
            })?;
            to.replace_file(&child, &bytes, Perms::mode(0o644))?;
        }
    }
    Ok(())
}

/// Checks an archive entry name and returns its system path: `root/proc/cpuinfo` →
/// `/proc/cpuinfo` (`root` → the empty path, which is `/`). Names outside `root/`, absolute
/// or with a `..`, are refused.
fn system_path(name: &str) -> Result<&str, ArchiveError> {
    // Byte patterns, not string searches: every entry of every snapshot a fleet loads.
    let mut parts = name.as_bytes().split(|&b| b == b'/');
    let inside = parts.next() == Some(b"root") && parts.all(|part| part != b"..");
    if !inside {
        return Err(ArchiveError::Outside(name.to_string()));
    }
    Ok(&name["root".len()..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn entry_names_cannot_escape() {
        assert_eq!(system_path("root/proc/cpuinfo").unwrap(), "/proc/cpuinfo");
        assert_eq!(system_path("root").unwrap(), "");
        assert!(system_path("root/../etc/passwd").is_err());
        assert!(system_path("root/x/..").is_err());
        assert!(system_path("/root/x").is_err());
        assert!(system_path("./root/x").is_err());
        assert!(system_path("rootx/y").is_err());
        assert!(system_path("etc/passwd").is_err());
    }

    #[test]
    fn round_trip_keeps_what_was_read() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(src.path().join("sys/empty")).unwrap();
        std::fs::write(src.path().join("proc/sys/kernel/hostname"), "box1\n").unwrap();
        std::fs::write(src.path().join("proc/unread"), "x").unwrap();
        let root = SysRoot::dir(src.path()).recording();
        root.read("/proc/sys/kernel/hostname").unwrap();
        root.list("/sys/empty").unwrap();
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("snap.lowlat");
        let manifest = write(&root, &file).unwrap();
        assert_eq!(manifest.header.host, "box1");
        assert_eq!(manifest.files, 1);

        let (opened, read_back) = open(&file).unwrap();
        assert_eq!(read_back, manifest);
        assert_eq!(
            opened.read_value("/proc/sys/kernel/hostname").unwrap(),
            "box1"
        );
        assert!(opened.exists("/sys/empty"));
        assert!(!opened.exists("/proc/unread"));
    }

    #[test]
    fn a_file_that_could_not_be_read_is_listed_as_not_captured() {
        let src = tempfile::tempdir().unwrap();
        // A directory where a file is read: the read fails (as a root-only file does without
        // root), which is no absence.
        std::fs::create_dir_all(src.path().join("sys/firmware/dmi/tables/DMI")).unwrap();
        std::fs::create_dir_all(src.path().join("proc")).unwrap();
        let root = SysRoot::dir(src.path()).recording();
        assert!(root.read_bytes("/sys/firmware/dmi/tables/DMI").is_err());
        assert!(root.read("/proc/missing").is_err());
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("snap.lowlat");
        write(&root, &file).unwrap();
        let (opened, _) = open(&file).unwrap();
        assert_eq!(
            opened.read(UNCAPTURED).unwrap(),
            "/sys/firmware/dmi/tables/DMI\n"
        );
        assert!(!opened.exists("/sys/firmware/dmi/tables/DMI"));
    }

    fn compress(tarball: Vec<u8>) -> tempfile::NamedTempFile {
        let compressed = super::compress(&tarball).unwrap();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&compressed).unwrap();
        file
    }

    #[test]
    fn refuses_links_and_garbage() {
        let mut builder = tar::Builder::new(Vec::new());
        let manifest = serde_json::to_vec(&serde_json::json!({
            "format": "lowlat-snapshot", "format_version": 1, "tool_version": "0",
            "host": "h", "captured_at": "2026-01-01T00:00:00Z", "source_root": "/",
            "files": 0, "bytes": 0,
        }))
        .unwrap();
        let mut header = tar::Header::new_gnu();
        header.set_size(manifest.len() as u64);
        builder
            .append_data(&mut header, "manifest.json", &manifest[..])
            .unwrap();
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        builder
            .append_link(&mut header, "root/etc/passwd", "/etc/passwd")
            .unwrap();
        let file = compress(builder.into_inner().unwrap());
        for err in [
            open(file.path()).unwrap_err(),
            load(file.path()).unwrap_err(),
        ] {
            let err = format!("{err:#}");
            assert!(err.contains("no links"), "{err}");
        }

        // an archive that does not start with its manifest is refused from its first
        // header, before the rest is inflated.
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(4);
        builder
            .append_data(&mut header, "root/\u{1b}x", &b"data"[..])
            .unwrap();
        let file = compress(builder.into_inner().unwrap());
        for err in [
            open(file.path()).unwrap_err(),
            load(file.path()).unwrap_err(),
        ] {
            let err = format!("{err:#}");
            assert!(
                err.contains("the first entry is root/\\x1bx, not manifest.json"),
                "{err}"
            );
        }

        let mut garbage = tempfile::NamedTempFile::new().unwrap();
        garbage.write_all(b"not a snapshot").unwrap();
        let err = format!("{:#}", open(garbage.path()).unwrap_err());
        assert!(err.contains("not a lowlat snapshot"), "{err}");

        // An empty file was "not zstd-compressed: failed to fill whole buffer while reading
        // zstd's magic number".
        let empty = tempfile::NamedTempFile::new().unwrap();
        let err = open(empty.path()).unwrap_err().to_string();
        assert!(err.contains("an empty or cut-off file"), "{err}");

        // A directory was "not zstd-compressed: Is a directory (os error 21) while reading
        // zstd's magic number".
        let dir = tempfile::tempdir().unwrap();
        for err in [open(dir.path()).unwrap_err(), load(dir.path()).unwrap_err()] {
            let err = err.to_string();
            assert!(err.contains("is a directory; give the file"), "{err}");
        }
    }
    #[test]
    fn extract_refuses_a_symlinked_subdirectory_and_replaces_files() {
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(from.path().join("proc/sys")).unwrap();
        std::fs::write(from.path().join("proc/sys/x"), "new\n").unwrap();
        std::fs::write(from.path().join("top"), "new\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), to.path().join("proc")).unwrap();
        let err = format!("{:#}", extract_tree(from.path(), to.path()).unwrap_err());
        assert!(err.contains("outside the root"), "{err}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

        std::fs::remove_file(to.path().join("proc")).unwrap();
        std::fs::write(to.path().join("top"), "old\n").unwrap();
        extract_tree(from.path(), to.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(to.path().join("top")).unwrap(),
            "new\n"
        );
        assert_eq!(
            std::fs::read_to_string(to.path().join("proc/sys/x")).unwrap(),
            "new\n"
        );
    }

    #[test]
    fn errors_escape_control_characters_from_the_archive() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        builder
            .append_link(&mut header, "root/\x1b]0;owned\x07\x1b[2J", "x")
            .unwrap();
        let file = compress(builder.into_inner().unwrap());
        let err = format!("{:#}", open(file.path()).unwrap_err());
        assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err}");
        assert!(err.contains("\\x1b]0;owned\\x07\\x1b[2J"), "{err}");

        let mut corrupt = tempfile::NamedTempFile::new().unwrap();
        let mut bytes = super::compress(b"\x1b[2J").unwrap();
        bytes.truncate(6);
        bytes.extend_from_slice(b"\x1b[2J\x1b]0;x\x07");
        corrupt.write_all(&bytes).unwrap();
        let err = format!("{:#}", open(corrupt.path()).unwrap_err());
        assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err}");
    }
}

//! Snapshots: the files the machine model read, captured into one compressed archive that can
//! be read on another machine with `--snapshot FILE`.
//!
//! Format: a tar stream compressed with zstd. The first entry is `manifest.json`
//! ([`Manifest`], a document of kind `snapshot`); the machine's files follow under `root/` with their system paths
//! (`root/proc/cpuinfo`). Only regular files and directories are written.
//!
//! Opening a snapshot unpacks it into a private temporary directory, written by lowlat itself
//! entry by entry: absolute paths, `..`, links, device files, oversize entries and archives too
//! large to be a snapshot are refused with an error naming the entry. Ctrl-C or SIGTERM
//! while it unpacks removes the directory before the process ends, and a terminal sees the
//! progress once a second.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::{IsTerminal, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::document::{self, Header, Kind, Layout, Tool};
use crate::sysroot::{MAX_FILE_BYTES, Perms, Recorded, SysRoot, write_file_atomically};
use crate::text::escape_controls;

/// The `format` field of a schema-1 manifest (before the document envelope).
const FORMAT_BEFORE_ENVELOPE: &str = "lowlat-snapshot";
/// The most bytes an archive may unpack to.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;
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

impl Manifest {
    /// Reads manifest.json, of schema 1 or of this lowlat's layout.
    fn from_json(text: &str) -> Result<Manifest> {
        let not_a_manifest = "manifest.json is not a lowlat manifest";
        match document::layout(text, Kind::Snapshot).context(not_a_manifest)? {
            Layout::Envelope => Ok(serde_json::from_str(text).context(not_a_manifest)?),
            Layout::BeforeEnvelope => {
                let old: ManifestBeforeEnvelope =
                    serde_json::from_str(text).context(not_a_manifest)?;
                if old.format != FORMAT_BEFORE_ENVELOPE || old.format_version != 1 {
                    bail!(
                        "manifest says format '{}' version {}; this lowlat reads \
                         '{FORMAT_BEFORE_ENVELOPE}' version 1 or a document of kind snapshot \
                         (upgrade lowlat)",
                        old.format,
                        old.format_version
                    );
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
                })
            }
        }
    }
}

/// Writes a snapshot of what `root` recorded to `out` (atomically, see
/// [`write_file_atomically`]). Returns the manifest written.
pub fn write(root: &SysRoot, out: &Path) -> Result<Manifest> {
    let recorded = root.recorded();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut dirs: Vec<String> = Vec::new();
    let mut placeholders: Vec<String> = Vec::new();
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
        }
    }
    for child in placeholders {
        if root.is_dir(&child) {
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
    };

    let mut builder = tar::Builder::new(Vec::new());
    let manifest_json = serde_json::to_vec_pretty(&manifest)?;
    append(&mut builder, "manifest.json", &manifest_json)?;
    for dir in &dirs {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        builder.append_data(&mut header, archive_name(dir), std::io::empty())?;
    }
    for (path, bytes) in &files {
        append(&mut builder, &archive_name(path), bytes)?;
    }
    let tarball = builder.into_inner()?;
    let compressed = ruzstd::encoding::compress_to_vec(
        tarball.as_slice(),
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    write_file_atomically(out, &compressed, Perms::mode(0o644))?;
    Ok(manifest)
}

fn archive_name(path: &str) -> String {
    format!("root/{}", path.trim_start_matches('/'))
}

fn append(builder: &mut tar::Builder<Vec<u8>>, name: &str, bytes: &[u8]) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(0o644);
    header.set_size(bytes.len() as u64);
    builder
        .append_data(&mut header, name, bytes)
        .with_context(|| format!("adding {name} to the snapshot"))
}

/// Opens a snapshot: checks and unpacks it into a private temporary directory and returns a
/// SysRoot over it (which removes the directory when dropped) with the manifest.
///
/// Ctrl-C or SIGTERM while it unpacks removes the directory, then ends the process as the
/// signal would have.
pub fn open(file: &Path) -> Result<(SysRoot, Manifest)> {
    let raw = std::fs::File::open(file)
        .with_context(|| format!("--snapshot {}: cannot open", file.display()))?;
    let decoder = ruzstd::decoding::StreamingDecoder::new(raw).map_err(|e| {
        anyhow::anyhow!(
            "--snapshot {}: not a lowlat snapshot (not zstd-compressed: {}); make one with `lowlat snapshot -o FILE`",
            file.display(),
            escape_controls(&e.to_string())
        )
    })?;
    let tempdir = tempfile::Builder::new()
        .prefix("lowlat-snapshot-")
        .tempdir()
        .context("creating a private temporary directory for the snapshot")?;
    let top = tempdir.path().join("root");
    std::fs::create_dir(&top)?;
    let signals = SignalGuard::install();
    let mut progress = Progress::new(file);
    let unpacked = unpack(decoder.take(MAX_TOTAL_BYTES + 1), &top, &mut progress);
    progress.finish();
    if let Some(signal) = SignalGuard::caught() {
        drop(tempdir);
        drop(signals);
        // SAFETY: raise() only delivers the signal, now with its previous disposition.
        unsafe { libc::raise(signal) };
        bail!("--snapshot {}: interrupted while unpacking", file.display());
    }
    drop(signals);
    let manifest = unpacked.map_err(|e| {
        anyhow::anyhow!(
            "--snapshot {}: {}",
            file.display(),
            escape_controls(&format!("{e:#}"))
        )
    })?;
    Ok((SysRoot::unpacked(tempdir, top), manifest))
}

/// The signal caught while a snapshot unpacks (0: none).
static CAUGHT_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn record_signal(signal: libc::c_int) {
    CAUGHT_SIGNAL.store(signal, Ordering::Relaxed);
}

/// While it lives, SIGINT and SIGTERM (unless ignored) only record themselves, so that the
/// unpacking stops and its directory is removed; dropping it restores the previous handlers.
struct SignalGuard {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    fn install() -> Self {
        CAUGHT_SIGNAL.store(0, Ordering::Relaxed);
        let mut previous = Vec::new();
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: plain sigaction calls on zeroed structs; the handler only stores to an
            // atomic, which is async-signal-safe.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = record_signal as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(signal, &new, std::ptr::null_mut()) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        Self { previous }
    }

    /// The signal caught since [`SignalGuard::install`], if any.
    fn caught() -> Option<libc::c_int> {
        Some(CAUGHT_SIGNAL.load(Ordering::Relaxed)).filter(|&s| s != 0)
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restores the disposition saved by install().
            unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
        }
    }
}

/// How much of a snapshot is unpacked, shown on a terminal's stderr once a second.
struct Progress {
    label: String,
    bytes: u64,
    shown: bool,
    next: Option<Instant>,
}

impl Progress {
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
            eprint!(
                "\rlowlat: unpacking {}: {} MiB",
                self.label,
                self.bytes >> 20
            );
            self.shown = true;
            self.next = Some(next + Self::EVERY);
        }
    }

    /// Clears the progress line, if one was shown.
    fn finish(&self) {
        if self.shown {
            eprint!("\r\x1b[K");
        }
    }
}

fn unpack(stream: impl Read, top: &Path, progress: &mut Progress) -> Result<Manifest> {
    let mut archive = tar::Archive::new(stream);
    let mut manifest: Option<Manifest> = None;
    let mut total: u64 = 0;
    for (index, entry) in archive
        .entries()
        .context("not a tar archive inside")?
        .enumerate()
    {
        if let Some(signal) = SignalGuard::caught() {
            bail!("stopped by signal {signal}");
        }
        if index >= MAX_ENTRIES {
            bail!("more than {MAX_ENTRIES} entries: not a snapshot lowlat made");
        }
        let mut entry = entry.context("truncated or corrupt archive")?;
        let name = entry.path()?.to_string_lossy().into_owned();
        let size = entry.header().size()?;
        progress.add(size);
        if size > MAX_FILE_BYTES {
            bail!("entry {name} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit");
        }
        total += size;
        if total > MAX_TOTAL_BYTES {
            bail!("unpacks to more than {MAX_TOTAL_BYTES} bytes: not a snapshot lowlat made");
        }
        if name == "manifest.json" {
            let mut text = String::new();
            entry.read_to_string(&mut text)?;
            manifest = Some(Manifest::from_json(&text)?);
            continue;
        }
        let relative = safe_relative(&name)?;
        let target = top.join(&relative);
        match entry.header().entry_type() {
            tar::EntryType::Directory => std::fs::create_dir_all(&target)?,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let mut out =
                    std::fs::File::create(&target).with_context(|| format!("unpacking {name}"))?;
                std::io::copy(&mut entry.by_ref().take(size), &mut out)?;
            }
            other => bail!(
                "entry {name} is a {other:?}, not a regular file or directory; snapshots hold no links or devices"
            ),
        }
    }
    manifest.context("no manifest.json: not a snapshot lowlat made")
}

/// Copies a tree of regular files and directories (an unpacked snapshot) into the directory
/// `to`, created if missing. Everything is written inside `to`: a symbolic link already there
/// that leads out of it is refused, and files in the way are replaced.
pub fn extract_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    copy_into(from, &SysRoot::dir(to), "")
}

fn copy_into(from: &Path, to: &SysRoot, path: &str) -> Result<()> {
    to.create_dirs(path)
        .with_context(|| format!("writing under {}", to.dir_path().display()))?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let child = format!("{path}/{}", entry.file_name().to_string_lossy());
        if entry.file_type()?.is_dir() {
            copy_into(&entry.path(), to, &child)?;
        } else {
            let bytes = std::fs::read(entry.path())?;
            to.replace_file(&child, &bytes, Perms::mode(0o644))
                .with_context(|| format!("writing under {}", to.dir_path().display()))?;
        }
    }
    Ok(())
}

/// Checks an archive entry name and returns it relative to the snapshot's `root/`.
fn safe_relative(name: &str) -> Result<PathBuf> {
    let path = Path::new(name);
    let mut out = PathBuf::new();
    let mut components = path.components();
    if components.next() != Some(Component::Normal("root".as_ref())) {
        bail!("entry {name} is outside root/");
    }
    for component in components {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => bail!("entry {name} has an absolute path or '..'; refused"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn entry_names_cannot_escape() {
        assert!(safe_relative("root/proc/cpuinfo").is_ok());
        assert!(safe_relative("root/../etc/passwd").is_err());
        assert!(safe_relative("/root/x").is_err());
        assert!(safe_relative("etc/passwd").is_err());
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

    fn compress(tarball: Vec<u8>) -> tempfile::NamedTempFile {
        let compressed = ruzstd::encoding::compress_to_vec(
            tarball.as_slice(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&compressed).unwrap();
        file
    }

    #[test]
    fn refuses_links_and_garbage() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        builder
            .append_link(&mut header, "root/etc/passwd", "/etc/passwd")
            .unwrap();
        let file = compress(builder.into_inner().unwrap());
        let err = format!("{:#}", open(file.path()).unwrap_err());
        assert!(err.contains("no links"), "{err}");

        let mut garbage = tempfile::NamedTempFile::new().unwrap();
        garbage.write_all(b"not a snapshot").unwrap();
        let err = format!("{:#}", open(garbage.path()).unwrap_err());
        assert!(err.contains("not a lowlat snapshot"), "{err}");
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
        let mut bytes = ruzstd::encoding::compress_to_vec(
            &b"\x1b[2J"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        bytes.truncate(6);
        bytes.extend_from_slice(b"\x1b[2J\x1b]0;x\x07");
        corrupt.write_all(&bytes).unwrap();
        let err = format!("{:#}", open(corrupt.path()).unwrap_err());
        assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err}");
    }
}

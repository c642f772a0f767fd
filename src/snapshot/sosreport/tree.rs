//! The machine tree a sosreport becomes: a private directory laid out like `/`, holding the
//! bundle's copies of /proc, /sys, /etc and the rest as sos wrote them, and the files lowlat's
//! readers expect where sos kept a command's output instead (written by
//! [`super::commands`]), each with the bundle file and line it came from.
//!
//! Every file is created below the tree's top without following a link: a directory on the
//! way that is a symbolic link (a bundle's `sys/class/net/eth0 -> ../../devices/...`) is not
//! written through, and a file is created only where nothing is (`O_EXCL`). The links the
//! bundle holds are kept as links; the machine read confines them beneath the tree.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use crate::sysroot::{MAX_FILE_BYTES, ORIGINS, UNCAPTURED};

/// The top-level entries of a sosreport that are sos's own (its command outputs, logs and
/// reports): kept out of the machine tree.
pub(super) const SOS_OWN: &[&str] = &["sos_commands", "sos_logs", "sos_reports", "sos_strings"];

/// A machine tree being written.
pub(super) struct Tree {
    /// Its top directory (stands for `/`).
    pub(super) dir: PathBuf,
    /// Where each written file came from, by system path.
    origins: BTreeMap<String, String>,
    /// The system paths the bundle did not capture ([`UNCAPTURED`]).
    uncaptured: Vec<String>,
}

impl Tree {
    /// A tree at `dir` (which exists).
    pub(super) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            origins: BTreeMap::new(),
            uncaptured: Vec::new(),
        }
    }

    /// Marks the system path `path` (and all below it) as not captured by the bundle.
    pub(super) fn uncaptured(&mut self, path: &str) {
        self.uncaptured.push(path.to_string());
    }

    /// Writes `bytes` at the system path `path`, made from `origin` (`sos_commands/...:LINE`),
    /// unless something is there already (the bundle's own copy wins). `Ok(false)` when it
    /// was left as it was or its way leads through a link.
    pub(super) fn write(&mut self, path: &str, bytes: &[u8], origin: String) -> io::Result<bool> {
        let Some(rel) = relative(path) else {
            return Ok(false);
        };
        if !create_file(&self.dir, &rel, bytes)? {
            return Ok(false);
        }
        self.origins.insert(path.to_string(), origin);
        Ok(true)
    }

    /// Writes the list of origins ([`ORIGINS`]: `SYSTEM-PATH<TAB>ORIGIN` lines) and of what
    /// the bundle did not capture ([`UNCAPTURED`]) into the tree.
    pub(super) fn finish(self) -> io::Result<()> {
        let text: String = (self.origins.iter())
            .map(|(path, origin)| format!("{path}\t{origin}\n"))
            .collect();
        for (path, text) in [
            (ORIGINS, text),
            (
                UNCAPTURED,
                self.uncaptured.iter().map(|p| format!("{p}\n")).collect(),
            ),
        ] {
            let rel = relative(path).expect("a plain path");
            let _ = fs::remove_file(self.dir.join(&rel));
            create_file(&self.dir, &rel, text.as_bytes())?;
        }
        Ok(())
    }
}

/// The path below the tree's top of the system path `path` (`/proc/1/stat` → `proc/1/stat`);
/// `None` for a path with `..`, `.` or nothing in it.
pub(super) fn relative(path: &str) -> Option<PathBuf> {
    let mut rel = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::RootDir => {}
            Component::Normal(part) => rel.push(part),
            _ => return None,
        }
    }
    (!rel.as_os_str().is_empty()).then_some(rel)
}

/// Creates the directories of `rel` below `top`, refusing to go through anything that is not
/// a directory (a link): `Ok(false)` then.
fn make_dirs(top: &Path, rel: &Path) -> io::Result<bool> {
    let mut at = top.to_path_buf();
    for part in rel.iter() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&at)?,
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Creates the file `rel` below `top` with `bytes`; `Ok(false)` when something is already
/// there or a directory on the way is a link.
pub(super) fn create_file(top: &Path, rel: &Path, bytes: &[u8]) -> io::Result<bool> {
    if let Some(parent) = rel.parent()
        && !make_dirs(top, parent)?
    {
        return Ok(false);
    }
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(top.join(rel));
    match file {
        Ok(mut file) => file.write_all(bytes).map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Creates the directory `rel` below `top` (and those on its way); `Ok(false)` when a link or
/// file is on the way.
pub(super) fn create_dir(top: &Path, rel: &Path) -> io::Result<bool> {
    make_dirs(top, rel)
}

/// Creates the symbolic link `rel` below `top` with the target `target`, as it is (the
/// machine read confines it beneath the tree); `Ok(false)` when something is there already.
pub(super) fn create_link(top: &Path, rel: &Path, target: &Path) -> io::Result<bool> {
    if let Some(parent) = rel.parent()
        && !make_dirs(top, parent)?
    {
        return Ok(false);
    }
    match std::os::unix::fs::symlink(target, top.join(rel)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether the bundle path `rel` (relative to the report's top) belongs in the machine tree:
/// not sos's own directories, not the links sos puts at its top (`uname -> sos_commands/...`),
/// and no `proc/PID` or `proc/self`: sos copies a few files of its own process there
/// (`proc/self/net`), which are no process of the machine; the processes come from its `ps`
/// outputs.
pub(super) fn belongs(rel: &Path, is_link: bool) -> bool {
    let mut parts = rel.iter().filter_map(|p| p.to_str());
    let Some(first) = parts.next() else {
        return false;
    };
    if SOS_OWN.contains(&first) || (is_link && rel.iter().count() == 1) {
        return false;
    }
    if first == "proc"
        && let Some(second) = parts.next()
    {
        return !(second == "self"
            || second == "thread-self"
            || second.bytes().all(|b| b.is_ascii_digit()));
    }
    true
}

/// What copying a bundle's files left out.
#[derive(Debug, Default)]
pub(super) struct Copied {
    /// Files copied.
    pub(super) files: usize,
    /// Bytes copied.
    pub(super) bytes: u64,
    /// What was left out, one line each (a file too large, a FIFO).
    pub(super) left_out: Vec<String>,
}

/// Copies the report directory `from` into the tree at `to`, keeping what [`belongs`], at most
/// `max_bytes` in all, without following a link (links are copied as links).
pub(super) fn copy_report(from: &Path, to: &Path, max_bytes: u64) -> io::Result<Copied> {
    let mut copied = Copied::default();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let entries = match fs::read_dir(from.join(&rel)) {
            Ok(entries) => entries,
            Err(e) => {
                copied
                    .left_out
                    .push(format!("{}: cannot list: {e}", rel.display()));
                continue;
            }
        };
        for entry in entries {
            let entry = entry?;
            let rel = rel.join(entry.file_name());
            let meta = fs::symlink_metadata(entry.path())?;
            if !belongs(&rel, meta.file_type().is_symlink()) {
                continue;
            }
            if meta.is_dir() {
                create_dir(to, &rel)?;
                stack.push(rel);
            } else if meta.file_type().is_symlink() {
                create_link(to, &rel, &fs::read_link(entry.path())?)?;
            } else if meta.is_file() {
                if meta.len() > MAX_FILE_BYTES || copied.bytes + meta.len() > max_bytes {
                    copied.left_out.push(format!(
                        "{}: {} bytes, more than lowlat reads of a file ({MAX_FILE_BYTES}) or of a bundle ({max_bytes}); left out",
                        rel.display(),
                        meta.len()
                    ));
                    continue;
                }
                let bytes = fs::read(entry.path())?;
                copied.bytes += bytes.len() as u64;
                copied.files += 1;
                create_file(to, &rel, &bytes)?;
            } else {
                copied.left_out.push(format!(
                    "{}: not a regular file, directory or link; left out",
                    rel.display()
                ));
            }
        }
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_never_go_through_a_link_or_over_a_file() {
        let outside = tempfile::tempdir().unwrap();
        let top = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), top.path().join("etc")).unwrap();
        let mut tree = Tree::new(top.path().to_path_buf());
        assert!(!tree.write("/etc/passwd", b"x", "here".into()).unwrap());
        assert!(!outside.path().join("passwd").exists());
        assert!(
            tree.write("/proc/sys/vm/swappiness", b"10\n", "a:1".into())
                .unwrap()
        );
        assert!(
            !tree
                .write("/proc/sys/vm/swappiness", b"60\n", "b:2".into())
                .unwrap()
        );
        assert_eq!(
            fs::read_to_string(top.path().join("proc/sys/vm/swappiness")).unwrap(),
            "10\n"
        );
        assert!(!tree.write("/proc/../etc/x", b"x", "c".into()).unwrap());
        tree.finish().unwrap();
        assert_eq!(
            fs::read_to_string(top.path().join("lowlat-answers/origins")).unwrap(),
            "/proc/sys/vm/swappiness\ta:1\n"
        );
    }

    #[test]
    fn sos_own_files_and_its_process_stay_out() {
        for (path, link, keep) in [
            ("sos_commands/kernel/uname_-a", false, false),
            ("uname", true, false),
            ("proc/self", true, false),
            ("proc/6171/net/dev", false, false),
            ("proc/sys/kernel/osrelease", false, true),
            ("sys/class/net/eth0", true, true),
            ("etc/sysctl.conf", false, true),
        ] {
            assert_eq!(belongs(Path::new(path), link), keep, "{path}");
        }
    }
}

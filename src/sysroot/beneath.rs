//! Confinement beneath a root: a system path resolved inside the root directory, never out of
//! it through a symbolic link or `..`.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// [`relative_path`] as text, without a copy for a plain absolute path (`/proc/1/stat`,
/// every path the machine model reads); `.` for the root itself.
pub(super) fn relative_str(path: &str) -> std::borrow::Cow<'_, str> {
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
pub(super) fn relative_path(path: &str) -> PathBuf {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect()
}

/// Why a path was refused: a symbolic link (or a `..`) on the way leads out of the root. The
/// error inside the [`io::Error`] that [`open_beneath`] returns then, so that a reader can tell
/// it from any other failure ([`leaves_root`]).
#[derive(Debug)]
pub(super) struct LeavesRoot;

impl std::fmt::Display for LeavesRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "a symbolic link (or '..') on the way leads outside the root directory; refused",
        )
    }
}

impl std::error::Error for LeavesRoot {}

/// Whether `error` is a refusal of [`open_beneath`]: the path leads out of the root.
pub(super) fn leaves_root(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|e| e.is::<LeavesRoot>())
}

/// Opens `relative` under the directory `root` so that it resolves inside it: symbolic links
/// are followed only while they stay inside (an absolute link, or a `..` climbing above
/// `root`, is refused). Uses openat2 with `RESOLVE_BENEATH` where the kernel has it (5.6 and
/// later), else [`walk_beneath`].
pub(super) fn open_beneath(
    root: &OwnedFd,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
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
            Err(rustix::io::Errno::XDEV) => return Err(io::Error::other(LeavesRoot)),
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
    let leaves = || io::Error::other(LeavesRoot);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysroot::{Perms, SysRoot, WriteError};

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
}

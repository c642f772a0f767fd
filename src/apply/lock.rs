//! One apply or revert at a time: an exclusive `flock` on `/var/lib/lowlat/lock` under the
//! SysRoot, holding the owner's pid for the message another lowlat prints. The kernel drops
//! the lock when the process dies, so a crash never leaves a stale lock; the file is removed
//! when the lock is released.

use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;

use super::journal::{JOURNAL_PATH, STATE_DIR};
use crate::sysroot::{SysRoot, WriteError};

/// Where the lock file lives, under the SysRoot.
pub(crate) const LOCK_PATH: &str = "/var/lib/lowlat/lock";

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    /// Another lowlat holds it.
    #[error(
        "{LOCK_PATH} is held by another lowlat apply or revert ({holder}); wait for it to finish, then run this again"
    )]
    Busy {
        /// `pid N`, or `pid unknown`.
        holder: String,
    },
    /// The lock file could not be created or locked.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// The held lock; released (and its file removed) when dropped.
#[derive(Debug)]
pub(crate) struct Lock<'a> {
    root: &'a SysRoot,
    file: std::fs::File,
    created_dirs: Vec<String>,
    remove_on_release: Vec<String>,
}

impl<'a> Lock<'a> {
    /// Takes the lock, creating `/var/lib/lowlat` (and its parents) when missing.
    ///
    /// The lock file records the directories created, beside the pid: a lowlat killed before
    /// its journal was written leaves them, and the next one, finding no journal, takes them as
    /// its own to remove (they were not there before lowlat).
    pub(crate) fn acquire(root: &'a SysRoot) -> Result<Self, LockError> {
        let mut created_dirs = root.create_dirs(STATE_DIR)?;
        let failed = |op, e| WriteError {
            path: LOCK_PATH.to_string(),
            op,
            source: e,
        };
        // A releasing lowlat removes the file while it holds the lock: if we locked a file
        // that is no longer the one at LOCK_PATH, try again with the new one.
        for _ in 0..10 {
            let mut file = root.open_lock_file(LOCK_PATH, 0o644)?;
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    let holder = match text.lines().next().unwrap_or("").trim().parse::<u32>() {
                        Ok(pid) => format!("pid {pid}"),
                        Err(_) => "pid unknown".to_string(),
                    };
                    return Err(LockError::Busy { holder });
                }
                Err(e) => return Err(failed("lock", e.into()).into()),
            }
            let locked_ino = file.metadata().map_err(|e| failed("stat", e))?.ino();
            let current = root.metadata(LOCK_PATH).ok().flatten().map(|m| m.ino);
            if current != Some(locked_ino) {
                continue;
            }
            if created_dirs.is_empty() && !root.exists(JOURNAL_PATH) {
                let mut left = String::new();
                let _ = file.read_to_string(&mut left);
                created_dirs = created_by_a_killed_lowlat(&left);
            }
            file.set_len(0).map_err(|e| failed("truncate", e))?;
            file.rewind().map_err(|e| failed("rewind", e))?;
            let mut text = format!("{}\n", std::process::id());
            if !created_dirs.is_empty() {
                text.push_str(&format!("{CREATED} {}\n", created_dirs.join(" ")));
            }
            file.write_all(text.as_bytes())
                .map_err(|e| failed("write", e))?;
            return Ok(Self {
                root,
                file,
                created_dirs,
                remove_on_release: Vec::new(),
            });
        }
        Err(LockError::Busy {
            holder: "it keeps being taken and released".into(),
        })
    }

    /// The directories `acquire` created (outermost first).
    pub(crate) fn created_dirs(&self) -> &[String] {
        &self.created_dirs
    }

    /// Asks for `dirs` (outermost first) to be removed, when empty, once the lock is released
    /// and no journal is left.
    pub(crate) fn remove_dirs_on_release(&mut self, dirs: &[String]) {
        self.remove_on_release = dirs.to_vec();
    }
}

/// The word before the directories a lock's holder created, in the lock file.
const CREATED: &str = "created";

/// The directories the lock file `text` says its holder created: only `/var/lib/lowlat` and
/// its ancestors, whatever else the file says.
fn created_by_a_killed_lowlat(text: &str) -> Vec<String> {
    let ours: Vec<&str> = std::path::Path::new(STATE_DIR)
        .ancestors()
        .filter_map(|p| p.to_str())
        .filter(|p| *p != "/")
        .collect();
    text.lines()
        .filter_map(|line| line.strip_prefix(CREATED))
        .flat_map(str::split_whitespace)
        .filter(|dir| ours.contains(dir))
        .map(str::to_string)
        .collect()
}

impl Drop for Lock<'_> {
    fn drop(&mut self) {
        // Removing the file while it is locked lets a waiting lowlat see that its file is
        // stale (see `acquire`). Failures here leave an empty lock file, which is harmless.
        let _ = self.root.remove_file(LOCK_PATH);
        let _ = rustix::fs::flock(&self.file, rustix::fs::FlockOperation::Unlock);
        if !self.root.exists(JOURNAL_PATH) {
            let mut dirs = self.remove_on_release.clone();
            if dirs.is_empty() {
                dirs = self.created_dirs.clone();
            }
            for dir in dirs.iter().rev() {
                let _ = self.root.remove_empty_dir(dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_no_trace_after() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let lock = Lock::acquire(&root).unwrap();
        assert_eq!(lock.created_dirs(), ["/var", "/var/lib", "/var/lib/lowlat"]);
        let text = root.read(LOCK_PATH).unwrap();
        let pid = text.lines().next().unwrap().to_string();
        assert_eq!(pid, std::process::id().to_string());
        let err = Lock::acquire(&root).unwrap_err().to_string();
        assert!(err.contains(&format!("pid {pid}")), "{err}");
        drop(lock);
        // No journal was written: the tree is as before.
        assert!(root.list("/").unwrap().is_empty());
        let again = Lock::acquire(&root).unwrap();
        drop(again);
    }

    /// a lowlat killed after it created /var/lib/lowlat and before it wrote its journal
    /// left the directories, which the next apply took for pre-existing (so a revert left them).
    #[test]
    fn directories_a_killed_lowlat_created_are_still_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        // What the killed one left: its directories and its lock file.
        root.create_dirs(STATE_DIR).unwrap();
        std::fs::write(
            root.host_path(LOCK_PATH),
            "4242\ncreated /var /var/lib /var/lib/lowlat /etc\n",
        )
        .unwrap();
        let lock = Lock::acquire(&root).unwrap();
        assert_eq!(lock.created_dirs(), ["/var", "/var/lib", "/var/lib/lowlat"]);
        let err = Lock::acquire(&root).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(lock);
        assert!(root.list("/").unwrap().is_empty());
    }

    #[test]
    fn the_state_dir_stays_while_a_journal_is_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::dir(dir.path());
        let lock = Lock::acquire(&root).unwrap();
        root.append_durably(JOURNAL_PATH, b"x\n", 0o600).unwrap();
        drop(lock);
        assert_eq!(root.list(STATE_DIR).unwrap(), vec!["journal.jsonl"]);
    }
}

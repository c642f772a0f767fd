//! One prove at a time on a machine: an exclusive `flock` on `/run/lowlat-prove.lock` under
//! the SysRoot, holding the owner's pid for the refusal another prove prints. The kernel drops
//! the lock when the process dies (a crash, a reboot), so it is never stale; the file is
//! removed when the lock is released (and `/run` is emptied at boot). It is not apply's lock:
//! prove applies and reverts through apply, which takes that one in turn.

use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;

use crate::sysroot::{SysRoot, WriteError};

/// Where the lock file lives, under the SysRoot.
pub(crate) const PROVE_LOCK: &str = "/run/lowlat-prove.lock";

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProveLockError {
    /// Another prove holds it.
    #[error(
        "another lowlat prove is running on this machine ({holder}, holding {PROVE_LOCK}); one prove at a time: wait for it, or see where it stands with `lowlat prove --status DIR`"
    )]
    Busy {
        /// `pid N`, or `pid unknown`.
        holder: String,
    },
    /// The lock file could not be created or locked.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// The held lock, released (its file removed) when dropped, or when the process ends.
#[derive(Debug)]
pub(crate) struct ProveLock<'a> {
    root: &'a SysRoot,
    _file: std::fs::File,
    /// The directories made for the lock file (`/run` of a directory tree), removed with it.
    created: Vec<String>,
}

impl Drop for ProveLock<'_> {
    fn drop(&mut self) {
        // Removed while held: a prove waiting on the old file sees it gone and tries again.
        let _ = self.root.remove_file(PROVE_LOCK);
        for dir in self.created.iter().rev() {
            let _ = self.root.remove_empty_dir(dir);
        }
    }
}

impl<'a> ProveLock<'a> {
    /// Takes the lock; refused while another prove holds it.
    pub(crate) fn acquire(root: &'a SysRoot) -> Result<Self, ProveLockError> {
        let created = root.create_dirs("/run")?;
        let failed = |op, e| WriteError::new(PROVE_LOCK, op, e);
        // A releasing prove removes the file while it holds the lock: if the file locked is no
        // longer the one at PROVE_LOCK, try again with the new one.
        for _ in 0..10 {
            let file = Self::lock(root)?;
            let locked = file.metadata().map_err(|e| failed("stat", e))?.ino();
            if root.metadata(PROVE_LOCK).ok().flatten().map(|m| m.ino) == Some(locked) {
                return Ok(Self {
                    root,
                    _file: file,
                    created,
                });
            }
        }
        Err(failed("lock", std::io::Error::other("the lock file kept changing")).into())
    }

    /// The lock file, opened and locked, with this process's pid written in it.
    fn lock(root: &SysRoot) -> Result<std::fs::File, ProveLockError> {
        let mut file = root.open_lock_file(PROVE_LOCK, 0o644)?;
        let failed = |op, e| WriteError::new(PROVE_LOCK, op, e);
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("pid {pid}"),
                    Err(_) => "pid unknown".to_string(),
                };
                return Err(ProveLockError::Busy { holder });
            }
            Err(e) => return Err(failed("lock", e.into()).into()),
        }
        file.set_len(0).map_err(|e| failed("truncate", e))?;
        file.rewind().map_err(|e| failed("rewind", e))?;
        writeln!(file, "{}", std::process::id()).map_err(|e| failed("write", e))?;
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn a_second_prove_is_refused_with_the_first_ones_pid_until_it_ends() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let root = tree.root();
        let first = ProveLock::acquire(&root).unwrap();
        let err = ProveLock::acquire(&root).unwrap_err();
        let said = err.to_string();
        assert!(
            said.contains(&format!("pid {}", std::process::id())) && said.contains("--status"),
            "{said}"
        );
        drop(first);
        assert!(!tree.join(PROVE_LOCK).exists(), "the lock file stayed");
        let root = tree.root();
        let _again = ProveLock::acquire(&root).unwrap();
    }
}

//! A machine tree for unit tests: empty, or a copy of a fixture machine under
//! `tests/fixtures/machines/`, in a temporary directory, then changed file by file (write,
//! link, remove) with paths written as on the machine (`/proc/cmdline`).

use crate::sysroot::SysRoot;
use std::path::{Path, PathBuf};

#[path = "../tests/it/support/tree.rs"]
pub(crate) mod tree;

#[path = "../tests/it/support/hybrid.rs"]
pub(crate) mod hybrid;

#[path = "../tests/it/support/missing.rs"]
mod missing;

pub(crate) use missing::missing_data;

/// A tree of system files in a temporary directory, removed when dropped.
pub(crate) struct TestTree {
    dir: tempfile::TempDir,
}

impl TestTree {
    /// An empty tree.
    pub(crate) fn empty() -> TestTree {
        TestTree {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    /// A tree holding just `files` (system path, content).
    pub(crate) fn with(files: &[(&str, &str)]) -> TestTree {
        let tree = TestTree::empty();
        for (path, content) in files {
            tree.write(path, content);
        }
        tree
    }

    /// A copy of the fixture machine `name`.
    pub(crate) fn fixture(name: &str) -> TestTree {
        let tree = TestTree::empty();
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines")
            .join(name);
        assert!(source.is_dir(), "no fixture machine {}", source.display());
        tree::copy_tree(&source, tree.path());
        tree
    }

    /// The directory the tree is in.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The tree as a root to read a machine from.
    pub(crate) fn root(&self) -> SysRoot {
        SysRoot::dir(self.path())
    }

    /// Where the system path `path` lies in the tree.
    pub(crate) fn join(&self, path: &str) -> PathBuf {
        self.path().join(path.trim_start_matches('/'))
    }

    /// Writes `contents` at the system path `path`, creating the directories on the way.
    pub(crate) fn write(&self, path: &str, contents: impl AsRef<[u8]>) -> &TestTree {
        let file = self.join(path);
        std::fs::create_dir_all(file.parent().expect("a path under the tree"))
            .expect("create directories");
        std::fs::write(&file, contents).expect("write a tree file");
        self
    }

    /// Makes the directory at the system path `path`, and those on the way.
    pub(crate) fn make_dir(&self, path: &str) -> &TestTree {
        std::fs::create_dir_all(self.join(path)).expect("create directories");
        self
    }

    /// Makes the system path `path` a symbolic link to `target`, creating the directories on
    /// the way.
    pub(crate) fn link(&self, path: &str, target: impl AsRef<Path>) -> &TestTree {
        let link = self.join(path);
        std::fs::create_dir_all(link.parent().expect("a path under the tree"))
            .expect("create directories");
        std::os::unix::fs::symlink(target, &link).expect("make a link");
        self
    }

    /// Removes the file, link or whole directory at the system path `path`.
    pub(crate) fn remove(&self, path: &str) -> &TestTree {
        let target = self.join(path);
        let meta = std::fs::symlink_metadata(&target).expect("the path to remove exists");
        if meta.is_dir() {
            std::fs::remove_dir_all(&target).expect("remove a directory");
        } else {
            std::fs::remove_file(&target).expect("remove a file");
        }
        self
    }
}

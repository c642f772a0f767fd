//! [`MemoryTree`]: a tree laid out like `/`, held in memory (a snapshot loaded by `lowlat
//! fleet`, which reads thousands of them, see [`crate::snapshot::load`]).

use std::borrow::Cow;
use std::hash::BuildHasher;
use std::ops::Range;
use std::path::{Component, Path};

/// A tree laid out like `/` held in memory: a snapshot's regular files and directories. A
/// path it does not hold reads as not found, as under a directory.
///
/// Loading a snapshot of thousands of files allocates nothing per file: the files are ranges
/// of one buffer (the snapshot's whole archive, [`MemoryTree::hold`]); the paths are written
/// back to back into one string, a parent directory added on the way being a prefix of its
/// child's path there (so the string is never longer than the paths added); the entries are
/// found by a hash table of entry numbers, hashed with foldhash, randomly seeded, as the paths
/// come from snapshots of other machines; and each directory's entries are a list linked
/// through them.
#[derive(Debug, Default)]
pub struct MemoryTree {
    /// The bytes the files are ranges of.
    data: Vec<u8>,
    /// The system paths of the entries (`/proc/cpuinfo`), back to back.
    paths: String,
    /// The entries (files and directories), in the order they were added.
    entries: Vec<Entry>,
    /// The entries by the hash of their path: their numbers in `entries`.
    index: hashbrown::HashTable<usize>,
    /// The hasher of `index`.
    hasher: foldhash::fast::RandomState,
    /// The directory an entry was last added to: most entries are added beside the one
    /// before (a snapshot lists its entries sorted), so its parent is found without hashing.
    last_parent: Option<usize>,
}

/// One path of a [`MemoryTree`].
#[derive(Debug)]
struct Entry {
    /// Where its system path is in [`MemoryTree::paths`].
    path: Range<usize>,
    /// The range of [`MemoryTree::data`] that holds its bytes, when it is a file.
    file: Option<Range<usize>>,
    /// Whether it is a directory (added as one, or holding an entry).
    dir: bool,
    /// Its first entry, when it is a directory holding any.
    first_child: Option<usize>,
    /// The next entry of the directory it is in.
    next_sibling: Option<usize>,
}

impl MemoryTree {
    /// Adds the file at the system path `path` (`/proc/cpuinfo`), whose bytes will be `at` of
    /// the buffer the tree is given to [`MemoryTree::hold`] (a range past its end reads as not
    /// found), and its parent directories. A file added again at the same path replaces the
    /// first.
    pub fn add_file(&mut self, path: &str, at: Range<usize>) {
        let entry = self.entry(&system_key(path));
        self.entries[entry].file = Some(at);
    }

    /// Adds the directory at the system path `path` and its parents.
    pub fn add_dir(&mut self, path: &str) {
        let entry = self.entry(&system_key(path));
        self.entries[entry].dir = true;
    }

    /// Makes room for `entries` more files and directories, so that a loader that knows about
    /// how many it will add grows the tree once.
    pub fn reserve(&mut self, entries: usize) {
        /// About the length of a system path in a snapshot, bytes.
        const PATH_BYTES: usize = 64;
        self.entries.reserve(entries);
        self.paths.reserve(entries.saturating_mul(PATH_BYTES));
        let Self {
            index,
            entries: all,
            paths,
            hasher,
            ..
        } = self;
        index.reserve(entries, |&entry| {
            hasher.hash_one(&paths[all[entry].path.clone()])
        });
    }

    /// Gives the tree the buffer its files are ranges of.
    pub fn hold(&mut self, data: Vec<u8>) {
        self.data = data;
    }

    /// The bytes of the file at the system path `path`; `None` when the tree holds no file
    /// there.
    pub fn file(&self, path: &str) -> Option<&[u8]> {
        let entry = &self.entries[self.find(&system_key(path))?];
        self.data.get(entry.file.clone()?)
    }

    /// Whether the tree holds a directory at the system path `path`.
    pub fn is_dir(&self, path: &str) -> bool {
        self.find(&system_key(path))
            .is_some_and(|entry| self.entries[entry].dir)
    }

    /// Whether the tree holds a file or a directory at the system path `path`.
    pub fn exists(&self, path: &str) -> bool {
        self.find(&system_key(path)).is_some()
    }

    /// The names in the directory at the system path `path`, each once, unsorted; `None`
    /// when the tree holds no directory there.
    pub fn names(&self, path: &str) -> Option<Vec<String>> {
        let dir = &self.entries[self.find(&system_key(path))?];
        if !dir.dir {
            return None;
        }
        let mut names = Vec::new();
        let mut next = dir.first_child;
        while let Some(child) = next {
            let entry = &self.entries[child];
            let path = &self.paths[entry.path.clone()];
            names.push(path[path.rfind('/').map_or(0, |at| at + 1)..].to_string());
            next = entry.next_sibling;
        }
        Some(names)
    }

    /// The number of the entry whose path is `key` (a system path spelled as
    /// [`system_key`] spells it).
    fn find(&self, key: &str) -> Option<usize> {
        self.find_hashed(key, self.hasher.hash_one(key))
    }

    fn find_hashed(&self, key: &str, hash: u64) -> Option<usize> {
        self.index
            .find(hash, |&entry| self.path(entry) == key)
            .copied()
    }

    fn path(&self, entry: usize) -> &str {
        &self.paths[self.entries[entry].path.clone()]
    }

    /// The number of the entry whose path is `key`, added when new, with the parent
    /// directories it lacks, each linked into its parent.
    fn entry(&mut self, key: &str) -> usize {
        let hash = self.hasher.hash_one(key);
        if let Some(found) = self.find_hashed(key, hash) {
            return found;
        }
        let start = self.paths.len();
        self.paths.push_str(key);
        let new = self.push(start..self.paths.len(), hash);
        let mut child = new;
        // Up to the first parent the tree holds (or `/`), adding those it lacks.
        loop {
            let at = self.entries[child].path.clone();
            let path = &self.paths[at.clone()];
            let Some(cut) = path.rfind('/').filter(|_| path != "/") else {
                break;
            };
            // `/proc` is in `/`: the parent's path is at least the `/`.
            let (parent, added) = self.parent(at.start..at.start + cut.max(1));
            let parent_entry = &mut self.entries[parent];
            parent_entry.dir = true;
            let sibling = parent_entry.first_child.replace(child);
            self.entries[child].next_sibling = sibling;
            if !added {
                break;
            }
            child = parent;
        }
        new
    }

    /// The number of the directory whose path is `at` of `paths` (a prefix of a path added),
    /// and whether it was added now (then it is not yet linked into its own parent).
    fn parent(&mut self, at: Range<usize>) -> (usize, bool) {
        let path = &self.paths[at.clone()];
        if let Some(last) = self.last_parent.filter(|&last| self.path(last) == path) {
            return (last, false);
        }
        let hash = self.hasher.hash_one(path);
        let (parent, added) = match self.find_hashed(path, hash) {
            Some(found) => (found, false),
            None => (self.push(at, hash), true),
        };
        self.last_parent = Some(parent);
        (parent, added)
    }

    /// Adds an entry for the path `at` of `paths`, whose hash is `hash`, not yet in the tree
    /// nor linked into its parent; returns its number.
    fn push(&mut self, at: Range<usize>, hash: u64) -> usize {
        let number = self.entries.len();
        self.entries.push(Entry {
            path: at,
            file: None,
            dir: false,
            first_child: None,
            next_sibling: None,
        });
        let Self {
            index,
            entries,
            paths,
            hasher,
            ..
        } = self;
        index.insert_unique(hash, number, |&entry| {
            hasher.hash_one(&paths[entries[entry].path.clone()])
        });
        number
    }
}

/// A system path in one spelling: `/` and its normal components (`/proc//x/./y` → `/proc/x/y`);
/// borrowed when it is spelled so already.
fn system_key(path: &str) -> Cow<'_, str> {
    // Byte patterns, not string searches: every read of a loaded snapshot asks this.
    let normal = path == "/"
        || path.strip_prefix('/').is_some_and(|rest| {
            rest.as_bytes()
                .split(|&b| b == b'/')
                .all(|part| !matches!(part, [] | [b'.'] | [b'.', b'.']))
        });
    if normal {
        return path.into();
    }
    let mut key = String::new();
    for component in Path::new(path).components() {
        if let Component::Normal(part) = component {
            key.push('/');
            key.push_str(&part.to_string_lossy());
        }
    }
    if key.is_empty() {
        "/".into()
    } else {
        key.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(names: Option<Vec<String>>) -> Option<Vec<String>> {
        names.map(|mut names| {
            names.sort();
            names
        })
    }

    #[test]
    fn files_and_their_parent_directories_are_found_in_any_spelling() {
        let mut tree = MemoryTree::default();
        tree.add_dir("/sys/devices/system/cpu");
        tree.add_file("/proc/cpuinfo", 0..3);
        tree.add_file("/proc/sys/kernel/hostname", 3..7);
        tree.add_file("proc//sys/./kernel/osrelease", 7..9);
        tree.add_file("/proc/missing-bytes", 9..99);
        tree.hold(b"cpuhostv6".to_vec());

        assert_eq!(tree.file("/proc/cpuinfo"), Some(&b"cpu"[..]));
        assert_eq!(tree.file("/proc/sys/kernel/hostname"), Some(&b"host"[..]));
        assert_eq!(tree.file("/proc/sys/kernel/osrelease"), Some(&b"v6"[..]));
        assert_eq!(tree.file("/proc/./cpuinfo"), Some(&b"cpu"[..]));
        assert_eq!(tree.file("/proc/missing-bytes"), None);
        assert_eq!(tree.file("/proc/sys"), None);
        assert_eq!(tree.file("/proc/absent"), None);

        for dir in [
            "/",
            "/proc",
            "/proc/sys",
            "/proc/sys/kernel",
            "/sys/devices",
        ] {
            assert!(tree.is_dir(dir) && tree.exists(dir), "{dir}");
        }
        assert!(!tree.is_dir("/proc/cpuinfo") && tree.exists("/proc/cpuinfo"));
        assert!(!tree.exists("/proc/sy") && !tree.is_dir("/pro"));
        assert!(tree.exists("/sys/devices/system/cpu"));

        let names = |path| sorted(tree.names(path));
        assert_eq!(names("/"), Some(vec!["proc".into(), "sys".into()]));
        assert_eq!(
            names("/proc"),
            Some(vec!["cpuinfo".into(), "missing-bytes".into(), "sys".into()])
        );
        assert_eq!(
            names("/proc/sys/kernel"),
            Some(vec!["hostname".into(), "osrelease".into()])
        );
        assert_eq!(names("/sys/devices/system/cpu"), Some(vec![]));
        assert_eq!(names("/proc/cpuinfo"), None);
        assert_eq!(names("/absent"), None);
    }

    #[test]
    fn an_entry_added_twice_is_listed_once() {
        let mut tree = MemoryTree::default();
        tree.add_file("/a/x", 0..1);
        tree.add_dir("/a");
        tree.add_file("/a/x", 1..2);
        tree.add_dir("/a/d");
        tree.add_dir("/a/d");
        tree.add_file("/a/d/y", 0..2);
        tree.hold(b"12".to_vec());
        assert_eq!(tree.file("/a/x"), Some(&b"2"[..]));
        assert_eq!(sorted(tree.names("/a")), Some(vec!["d".into(), "x".into()]));
        assert_eq!(tree.names("/"), Some(vec!["a".into()]));
        assert_eq!(tree.names("/a/d"), Some(vec!["y".into()]));
    }
}

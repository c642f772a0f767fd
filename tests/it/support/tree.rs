//! Tree helpers shared by the integration tests and the library's `test_tree`: copy a fixture
//! machine into a temporary directory, and describe a whole tree (every path with its kind,
//! permission bits, content or link target) so that two trees can be compared byte for byte.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One path of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// A directory and its permission bits.
    Dir(u32),
    /// A regular file, its permission bits and content.
    File(u32, Vec<u8>),
    /// A symbolic link and its target.
    Link(PathBuf),
}

/// Every path under `root` (relative, `/`-separated), described.
pub(crate) type Tree = BTreeMap<String, Node>;

/// Copies `from` into `to` (created), keeping modes and copying links as links.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
            let mode = std::fs::metadata(&src).unwrap().permissions().mode();
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode)).unwrap();
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Describes every path under `root`.
pub(crate) fn describe(root: &Path) -> Tree {
    let mut tree = Tree::new();
    walk(root, root, &mut tree);
    tree
}

fn walk(root: &Path, dir: &Path, tree: &mut Tree) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            tree.insert(name, Node::Link(std::fs::read_link(&path).unwrap()));
        } else if meta.is_dir() {
            tree.insert(name, Node::Dir(mode));
            walk(root, &path, tree);
        } else {
            tree.insert(name, Node::File(mode, std::fs::read(&path).unwrap()));
        }
    }
}

/// The paths that differ between two trees, each with a short reason (empty when equal).
pub(crate) fn differences(before: &Tree, after: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    for (path, node) in before {
        match after.get(path) {
            None => out.push(format!("{path}: removed")),
            Some(other) if other != node => out.push(format!("{path}: {}", why(node, other))),
            Some(_) => {}
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        out.push(format!("{path}: added"));
    }
    out
}

fn why(a: &Node, b: &Node) -> String {
    match (a, b) {
        (Node::File(ma, ca), Node::File(mb, cb)) if ma != mb => {
            format!(
                "mode {ma:o} -> {mb:o}{}",
                if ca != cb { ", content" } else { "" }
            )
        }
        (Node::File(..), Node::File(_, cb)) => format!(
            "content differs (now {:?})",
            String::from_utf8_lossy(&cb[..cb.len().min(60)])
        ),
        (Node::Dir(ma), Node::Dir(mb)) => format!("mode {ma:o} -> {mb:o}"),
        _ => format!("{a:?} -> {b:?}").chars().take(120).collect(),
    }
}

/// Panics with the differences unless the trees are identical.
pub(crate) fn assert_same(before: &Tree, after: &Tree, context: &str) {
    let diffs = differences(before, after);
    assert!(
        diffs.is_empty(),
        "{context}: {} paths differ:\n  {}",
        diffs.len(),
        diffs.join("\n  ")
    );
}

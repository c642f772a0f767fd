//! The import rules of docs/architecture.md, checked on the source itself: each top-level
//! module imports only the modules its layer allows, no two files import each other (directly
//! or round a circle), and no two sibling folders do.
//!
//! Imports are read from the paths the code names (`crate::…`, `super::…`, `self::…`, in `use`
//! statements, braces expanded, and inline); comments and `#[cfg(test)]` modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of `src/` and the modules it may import directly; what those may
/// import, it may import too. `test_tree` (a `#[cfg(test)]` helper) is left out.
const LAYERS: &[(&str, &[&str])] = &[
    ("text", &[]),
    ("units", &[]),
    ("sysroot", &["text"]),
    ("document", &["sysroot"]),
    ("bundle", &["document"]),
    ("machine", &["sysroot", "units"]),
    ("snapshot", &["document", "sysroot"]),
    ("bios", &["machine", "document"]),
    ("tuning", &["machine"]),
    ("audit", &["tuning", "document", "bios", "snapshot"]),
    ("plan", &["audit", "document"]),
    ("apply", &["plan", "snapshot"]),
    ("measure", &["machine", "document"]),
    ("peer", &["measure"]),
    ("compare", &["peer", "document", "bios"]),
    ("watch", &["apply", "measure"]),
    ("check", &["audit", "measure"]),
    ("fleet", &["plan", "compare", "snapshot"]),
    (
        "report",
        &[
            "apply", "measure", "watch", "check", "bundle", "bios", "compare", "fleet",
        ],
    ),
    ("prove", &["report"]),
    ("manual", &["apply"]),
    ("cli", &["prove", "manual"]),
];

pub(crate) fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The module path of `file` (`src/apply/appliers/boot/mod.rs` → `apply::appliers::boot`).
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The file that defines the longest prefix of `module` that is a file of its own.
fn file_of(module: &[String]) -> Option<PathBuf> {
    (1..=module.len()).rev().find_map(|n| {
        let base = module[..n].iter().fold(src(), |p, s| p.join(s));
        let single = base.with_extension("rs");
        let folder = base.join("mod.rs");
        [single, folder].into_iter().find(|f| f.is_file())
    })
}

/// The code of `text` without comments and without its `#[cfg(test)]` modules.
pub(crate) fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let without_comment = line.split(" // ").next().unwrap_or(line);
        code.push_str(without_comment);
        code.push('\n');
    }
    code
}

/// The paths `use` statements name, with braces expanded (`a::{b, c::d}` → `a::b`, `a::c::d`).
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(p).into_iter().map(|s| format!("{prefix}{s}")))
        .collect()
}

/// Every path `code` names that starts with `crate`, `super` or `self`.
fn named_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before_ok = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
        let stmt_end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        let statement = rest[at + 4..stmt_end].trim_start();
        let names_a_module = ["crate::", "super::", "self::"]
            .iter()
            .any(|root| statement.starts_with(root));
        if before_ok && names_a_module {
            paths.extend(expand(statement));
        }
        rest = &rest[at + 4..];
    }
    for root in ["crate::", "super::", "self::"] {
        let mut rest = code;
        while let Some(at) = rest.find(root) {
            let before_ok = at == 0 || {
                let b = rest.as_bytes()[at - 1];
                !(b.is_ascii_alphanumeric() || b == b'_' || b == b':')
            };
            let len = rest[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len() - at);
            if before_ok {
                paths.push(rest[at..at + len].trim_end_matches(':').to_string());
            }
            rest = &rest[at + len.max(1)..];
        }
    }
    paths
}

/// The module a path names, seen from `module` (the module of the file that names it).
fn resolve(path: &str, module: &[String]) -> Option<Vec<String>> {
    let mut segments = path.split("::").map(str::trim).filter(|s| !s.is_empty());
    let mut base: Vec<String> = match segments.next()? {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            m.pop();
            m
        }
        _ => return None,
    };
    for s in segments {
        if s == "super" {
            base.pop();
        } else if s != "self" && s != "*" && !s.starts_with(|c: char| c.is_ascii_uppercase()) {
            base.push(s.split_whitespace().next()?.to_string());
        } else {
            break;
        }
    }
    Some(base)
}

/// Each file of `src/` and the files it imports.
fn import_graph() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut graph = BTreeMap::new();
    for file in rust_files(&src()) {
        let module = module_of(&file);
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let targets: BTreeSet<PathBuf> = named_paths(&code)
            .iter()
            .filter_map(|p| resolve(p, &module))
            .filter(|m| !m.is_empty() && m[0] != "test_tree")
            .filter_map(|m| file_of(&m))
            .filter(|t| *t != file)
            .collect();
        graph.insert(file, targets);
    }
    graph
}

/// A circle in `graph`, if there is one, as the nodes round it.
fn find_circle<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Option<Vec<N>> {
    fn visit<N: Ord + Clone>(
        node: &N,
        graph: &BTreeMap<N, BTreeSet<N>>,
        done: &mut BTreeSet<N>,
        path: &mut Vec<N>,
    ) -> Option<Vec<N>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.clone());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, done, path) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

fn top_module(file: &Path) -> String {
    module_of(file).first().cloned().unwrap_or_default()
}

fn shown(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
        .collect::<Vec<_>>()
        .join(" → ")
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let layers: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let allowed = |module: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![module.to_string()];
        while let Some(m) = todo.pop() {
            for below in layers.get(m.as_str()).copied().unwrap_or_default() {
                if seen.insert(below.to_string()) {
                    todo.push(below.to_string());
                }
            }
        }
        seen
    };
    let mut wrong = Vec::new();
    for (file, targets) in import_graph() {
        let from = top_module(&file);
        if from.is_empty() || from == "test_tree" {
            continue; // lib.rs, main.rs and the test helper
        }
        assert!(
            layers.contains_key(from.as_str()),
            "src/{from} is in no layer: add it to LAYERS here and to docs/architecture.md"
        );
        let may = allowed(&from);
        for target in targets {
            let to = top_module(&target);
            if to != from && !may.contains(&to) {
                wrong.push(shown(&[file.clone(), target]));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_files_import_each_other_round_a_circle() {
    let graph = import_graph();
    if let Some(circle) = find_circle(&graph) {
        panic!("files import each other: {}", shown(&circle));
    }
}

#[test]
fn no_two_sibling_folders_import_each_other() {
    // An edge between the two folders under the closest common folder of the importing and
    // the imported file; a folder and what it contains are not siblings.
    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, targets) in import_graph() {
        let from_dir = file.parent().unwrap().to_path_buf();
        for target in targets {
            let to_dir = target.parent().unwrap().to_path_buf();
            if from_dir.starts_with(&to_dir) || to_dir.starts_with(&from_dir) {
                continue;
            }
            let common: PathBuf = from_dir
                .components()
                .zip(to_dir.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect();
            let child =
                |dir: &Path| common.join(dir.strip_prefix(&common).unwrap().iter().next().unwrap());
            graph
                .entry(child(&from_dir))
                .or_default()
                .insert(child(&to_dir));
        }
    }
    if let Some(circle) = find_circle(&graph) {
        panic!("folders import each other: {}", shown(&circle));
    }
}

#[test]
fn the_checker_reads_braces_and_relative_paths() {
    let paths =
        named_paths("use crate::a::{b, c::{d, E}};\nuse super::f;\nlet x = crate::g::h();\n");
    assert!(paths.contains(&"crate::a::b".to_string()), "{paths:?}");
    assert!(paths.contains(&"crate::a::c::d".to_string()), "{paths:?}");
    assert!(paths.contains(&"super::f".to_string()), "{paths:?}");
    assert!(paths.contains(&"crate::g::h".to_string()), "{paths:?}");
    let module = vec!["apply".to_string(), "journal".to_string()];
    assert_eq!(
        resolve("super::lock::Lock", &module),
        Some(vec!["apply".to_string(), "lock".to_string()])
    );
    assert_eq!(
        resolve("crate::plan::Plan", &module),
        Some(vec!["plan".to_string()])
    );
}

/// One module-file style: a module with submodules lives in `NAME/mod.rs`, never in a
/// `NAME.rs` beside a `NAME/` folder.
#[test]
fn a_module_with_submodules_is_a_folder_with_mod_rs() {
    let files = rust_files(&src());
    assert!(files.len() > 100, "too few files: {}", files.len());
    let beside: Vec<&PathBuf> = files
        .iter()
        .filter(|file| file.with_extension("").is_dir())
        .collect();
    assert!(
        beside.is_empty(),
        "move each into its folder as mod.rs: {beside:?}"
    );
}

//! The documentation holds together: every relative link of README.md, STYLE.md and docs/
//! names a file of the repository and, where it names a heading, a heading of that file.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files whose links are checked: the README, the style, and all of docs/.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("STYLE.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The targets of the `[text](target)` links of a line.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .collect()
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file: its headings' and its `<a id="…">` ones.
fn anchors(file: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(file).unwrap();
    let lines = prose(&text);
    let headings = lines
        .iter()
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')));
    let ids = lines.iter().flat_map(|line| {
        line.match_indices("id=\"").filter_map(|(at, _)| {
            let rest = &line[at + 4..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
    });
    headings.chain(ids).collect()
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let files = documents();
    assert!(files.len() >= 10, "too few documents: {files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        for line in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, heading) = target.split_once('#').unwrap_or((target, ""));
                let resolved = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                if !resolved.exists() {
                    broken.push(format!("{}: {target} (no such file)", file.display()));
                } else if !heading.is_empty()
                    && resolved.extension().is_some_and(|ext| ext == "md")
                    && !anchors(&resolved).contains(heading)
                {
                    broken.push(format!("{}: {target} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_short_and_points_to_every_guide() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines < 400,
        "README.md has {lines} lines; the manual belongs in docs/guide/"
    );
    for entry in fs::read_dir(root().join("docs/guide")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            readme.contains(&format!("(docs/guide/{name})")),
            "README.md does not point to docs/guide/{name}"
        );
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Whether `tag` has the shape of a source tag of docs/sources.md: `S` and three digits (a
/// seed), or `M-`/`V-`/`N-` and capitals (a measurement, virtualisation or network
/// reference).
fn is_source_tag(tag: &str) -> bool {
    let seed =
        tag.len() == 4 && tag.starts_with('S') && tag[1..].chars().all(|c| c.is_ascii_digit());
    let reference = (tag.starts_with("M-") || tag.starts_with("V-") || tag.starts_with("N-"))
        && tag.len() > 2
        && tag[2..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-');
    seed || reference
}

/// The code cites its sources by the tags of docs/sources.md, each of which exists there, and
/// never by a path outside the repository (the seeds and research notes it was built from).
#[test]
fn the_code_cites_sources_by_tags_that_exist() {
    let sources = fs::read_to_string(root().join("docs/sources.md")).unwrap();
    let mut unknown = BTreeSet::new();
    let mut outside = Vec::new();
    let mut cited = 0;
    for file in files_under(&root().join("src")) {
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            if line.contains("seeds/0") || line.contains("research/") {
                outside.push(format!("{}:{}", file.display(), number + 1));
            }
            let plain = line.replace('\\', "");
            for (at, _) in plain.match_indices('[') {
                let Some(end) = plain[at + 1..].find(']') else {
                    continue;
                };
                let tag = &plain[at + 1..at + 1 + end];
                if is_source_tag(tag) {
                    cited += 1;
                    if !sources.contains(&format!("`{tag}`")) {
                        unknown.insert(format!("{tag} ({}:{})", file.display(), number + 1));
                    }
                }
            }
        }
    }
    assert!(
        cited > 20,
        "only {cited} citations found: is the scan broken?"
    );
    assert!(
        unknown.is_empty(),
        "tags not in docs/sources.md: {unknown:?}"
    );
    assert!(
        outside.is_empty(),
        "paths outside the repository cited (use a docs/sources.md tag): {outside:?}"
    );
}

/// Issue 47: docs/guide/prove.md's worked examples are what `lowlat prove --status` prints,
/// byte for byte, on the state files they name (tests/data/prove, and issue 48's loaded run
/// with --net, tests/data/prove-load, run from the repository's root).
#[test]
fn the_prove_guides_status_example_is_what_lowlat_prints() {
    let guide = fs::read_to_string(root().join("docs/guide/prove.md")).unwrap();
    for example in ["status", "load"] {
        let (_, after) = guide
            .split_once(&format!("<!-- prove-example: {example} -->\n```console\n"))
            .unwrap_or_else(|| panic!("the guide's {example} example"));
        let block = after.split_once("```").unwrap().0;
        let (command, shown) = block.split_once('\n').unwrap();
        let args: Vec<&str> = command
            .strip_prefix("$ lowlat ")
            .unwrap()
            .split_whitespace()
            .collect();
        let out = crate::support::lowlat(&args)
            .current_dir(root())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&out.stdout), shown, "{example}");
    }
}

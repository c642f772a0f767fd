//! STYLE.md's mechanical rules, checked on the source beside the import rules of
//! `layers.rs`: what a grep can hold the code to, it is held to here, so that the written
//! rules and the code cannot drift apart unseen.
//!
//! Test code (`#[cfg(test)]` modules, inline or in files of their own) is left out, as are
//! comments.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::layers::{code_of, rust_files, src};

/// The largest a source file may grow, lines (docs/architecture.md).
const MAX_LINES: usize = 1200;

/// The files of `src/` that are test modules: declared `#[cfg(test)] mod NAME;` by their parent.
fn test_files() -> BTreeSet<PathBuf> {
    let mut tests = BTreeSet::new();
    for file in rust_files(&src()) {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        let mut lines = text.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if line != "#[cfg(test)]" {
                continue;
            }
            let Some(name) = lines
                .next()
                .and_then(|l| l.strip_prefix("mod "))
                .and_then(|l| l.strip_suffix(';'))
            else {
                continue;
            };
            for candidate in [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ] {
                if candidate.is_file() {
                    tests.insert(candidate);
                }
            }
        }
    }
    tests
}

/// Each library file (not test code) of `src/` outside `skip` (paths relative to `src/`), with
/// its code (see [`code_of`]).
fn library_code(skip: &[&str]) -> Vec<(String, String)> {
    let tests = test_files();
    rust_files(&src())
        .into_iter()
        .filter(|f| !tests.contains(f))
        .filter_map(|file| {
            let rel = relative(&file);
            if skip.iter().any(|s| rel.starts_with(s)) || rel == "test_tree.rs" {
                return None;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            Some((rel, code_of(&text)))
        })
        .collect()
}

fn relative(file: &Path) -> String {
    file.strip_prefix(src())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The lines of `code` (with their number) that contain any of `needles`.
fn hits(code: &str, needles: &[&str]) -> Vec<String> {
    code.lines()
        .filter(|line| needles.iter().any(|n| line.contains(n)))
        .map(|line| line.trim().to_string())
        .collect()
}

#[test]
fn only_the_command_line_prints() {
    // STYLE.md "One stderr voice": library code returns its warnings as data, or speaks
    // through text/voice.rs; it never prints itself.
    let mut found = Vec::new();
    for (file, code) in library_code(&["cli/", "main.rs"]) {
        for line in hits(
            &code,
            &[
                "println!(",
                "print!(",
                "dbg!(",
                "io::stdout()",
                "io::stderr().lock",
                "stderr().write",
            ],
        ) {
            found.push(format!("{file}: {line}"));
        }
        // A stream handle for anything but asking whether it is a terminal.
        for line in hits(&code, &["io::stderr()"]) {
            if !line.contains("io::stderr().is_terminal()") {
                found.push(format!("{file}: {line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "library code prints (return the text, or say it through text::voice):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_write_result_is_thrown_away() {
    // STYLE.md "Printers": a printer writes to a text::Page, whose write_fmt cannot fail.
    let mut found = Vec::new();
    for (file, code) in library_code(&[]) {
        for line in hits(&code, &["let _ = writeln!", "let _ = write!"]) {
            found.push(format!("{file}: {line}"));
        }
    }
    assert!(
        found.is_empty(),
        "write to a text::Page:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_file_is_over_the_size_limit_and_each_says_what_it_is() {
    let mut long = Vec::new();
    let mut undocumented = Vec::new();
    for file in rust_files(&src()) {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines = text.lines().count();
        if lines > MAX_LINES {
            long.push(format!("{} ({lines} lines)", relative(&file)));
        }
        if !text.trim_start().starts_with("//!") {
            undocumented.push(relative(&file));
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines, split by job:\n{}",
        long.join("\n")
    );
    assert!(
        undocumented.is_empty(),
        "no `//!` module doc:\n{}",
        undocumented.join("\n")
    );
}

#[test]
fn no_lint_is_silenced_for_too_many_arguments() {
    // A function that needs more than clippy's seven arguments takes a struct (see
    // measure/trace/explain/classify.rs `Join` and `Gap`).
    let mut found = Vec::new();
    for (file, code) in library_code(&[]) {
        for line in hits(&code, &["too_many_arguments"]) {
            found.push(format!("{file}: {line}"));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_top_level_module_is_pub_only_when_used_outside_the_library() {
    // STYLE.md "Visibility": `pub` is what main.rs, tests/ and fuzz/ use; the compiler's
    // `unreachable_pub` holds every item below a `pub(crate)` module to it.
    let root = src().parent().unwrap().to_path_buf();
    let mut users = vec![src().join("main.rs")];
    users.extend(rust_files(&root.join("tests")));
    users.extend(rust_files(&root.join("fuzz").join("fuzz_targets")));
    let outside: String = users
        .iter()
        .map(|f| code_of(&std::fs::read_to_string(f).unwrap()))
        .collect();
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let public: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect();
    assert!(
        public.contains(&"machine"),
        "lib.rs was not read: {public:?}"
    );
    let unused: Vec<&str> = public
        .into_iter()
        .filter(|module| {
            !outside
                .split(&format!("lowlat::{module}"))
                .skip(1)
                .any(|after| !after.starts_with(|c: char| c == '_' || c.is_alphanumeric()))
        })
        .collect();
    assert!(
        unused.is_empty(),
        "`pub mod` in src/lib.rs that nothing outside src/ uses (make it pub(crate)): {unused:?}"
    );
}

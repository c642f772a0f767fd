//! Links in a machine tree that lead out of it (`--root`, `--sosreport`): a host name linked
//! to a file outside, or to lowlat's own environment, and a `proc` that is the live /proc.
//! Nothing outside the tree may reach a document or a snapshot; each refused path is named in
//! a warning, and links that stay inside (sysfs's) are followed as before.

use crate::support::{fixture, lowlat, tree::copy_tree};
use std::path::Path;

/// What lowlat printed, stdout and stderr, for `args` with `env` set.
fn run(args: &[&str], env: (&str, &str)) -> String {
    let out = lowlat(args).env(env.0, env.1).output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The environment variable whose value must never leave lowlat's own environment.
const SECRET: (&str, &str) = ("LOWLAT_TEST_BMC_PASSWORD", "hunter2-not-for-documents");

/// A copy of the tuned EPYC fixture under `dir/name` (in sos's layout when `sos`) whose host
/// name is a link to `target`.
fn tree_with_hostname_link(dir: &Path, sos: bool, target: &Path) -> std::path::PathBuf {
    let tree = dir.join(if sos { "sosreport-x-2026" } else { "root" });
    copy_tree(&fixture("epyc7f32-2s-tuned"), &tree);
    if sos {
        for sub in ["sos_commands", "sos_logs", "sos_reports"] {
            std::fs::create_dir_all(tree.join(sub)).unwrap();
        }
    }
    let hostname = tree.join("proc/sys/kernel/hostname");
    std::fs::remove_file(&hostname).unwrap();
    std::os::unix::fs::symlink(target, &hostname).unwrap();
    tree
}

#[test]
fn a_host_name_linked_out_of_the_tree_is_refused_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside-file");
    std::fs::write(&outside, "secret-from-outside\n").unwrap();
    let environ = Path::new("/proc/self/environ");
    for (flag, sos, target) in [
        ("--root", false, outside.as_path()),
        ("--sosreport", true, outside.as_path()),
        ("--root", false, environ),
        ("--sosreport", true, environ),
    ] {
        let case = tempfile::tempdir().unwrap();
        let tree = tree_with_hostname_link(case.path(), sos, target);
        let tree = tree.to_str().unwrap();
        let snapshot = case.path().join("s.lowlat");
        let snapshot = snapshot.to_str().unwrap();
        let outputs = [
            run(&[flag, tree, "audit", "--json"], SECRET),
            run(&[flag, tree, "inventory", "--json"], SECRET),
            run(&[flag, tree, "snapshot", "-o", snapshot], SECRET),
            run(&["--snapshot", snapshot, "inventory", "--json"], SECRET),
        ];
        for output in &outputs {
            let what = format!("{flag} {}", target.display());
            assert!(!output.contains("secret-from-outside"), "{what}:\n{output}");
            assert!(
                !output.contains(SECRET.1),
                "{what}: the environment leaked:\n{output}"
            );
        }
        for output in &outputs[..2] {
            assert!(
                output.contains("/proc/sys/kernel/hostname")
                    && output.contains("leads outside the root directory"),
                "{flag} {}: the refused path is not named:\n{output}",
                target.display()
            );
        }
    }
}

#[test]
fn a_proc_that_is_the_live_proc_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("root");
    copy_tree(&fixture("epyc7f32-2s-tuned"), &tree);
    std::fs::remove_dir_all(tree.join("proc")).unwrap();
    std::os::unix::fs::symlink("/proc", tree.join("proc")).unwrap();
    let output = run(
        &["--root", tree.to_str().unwrap(), "inventory", "--json"],
        SECRET,
    );
    let json: serde_json::Value =
        serde_json::from_str(&output[..output.rfind('}').map_or(0, |end| end + 1)])
            .unwrap_or_else(|e| panic!("{e}:\n{output}"));
    // The live machine runs lowlat: its task list would hold it, and its environment.
    assert!(!output.contains(SECRET.1));
    let tasks = json["machine"]["tasks"]["unavailable"]
        .as_str()
        .unwrap_or_default();
    assert!(tasks.starts_with("/proc: a symbolic link"), "{output}");
    let warned = |path: &str| {
        json["machine"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["path"] == path && w.to_string().contains("leads outside the root"))
    };
    assert!(warned("/proc"), "{output}");
    assert!(warned("/proc/cpuinfo"), "{output}");
    // The sysfs half of the tree, with its relative links, is still read.
    assert_eq!(json["machine"]["topology"]["online"], "0-15", "{output}");
}

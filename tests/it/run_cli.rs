//! `lowlat run`: where a command goes (checked with --dry-run on trees), and on the live
//! machine, that the command runs there and lowlat exits with its code.

use crate::support::{fixture, lowlat, tree::copy_tree};

/// A copy of the 2-CPU KVM guest with a v1 cpuset hierarchy, and the isolated cpuset of
/// runtime isolation on CPU 1 when `isolated`.
fn guest(isolated: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("kvm-guest-2vcpu"), dir.path());
    let cpuset = dir.path().join("sys/fs/cgroup/cpuset");
    let mut files = vec![
        ("", "cpuset.cpus", "0-1\n"),
        ("", "cpuset.effective_cpus", "0-1\n"),
    ];
    if isolated {
        files.extend([
            ("lowlat-isolated", "cpuset.cpus", "1\n"),
            ("lowlat-isolated", "cpuset.effective_cpus", "1\n"),
        ]);
    }
    for (group, name, value) in files {
        std::fs::create_dir_all(cpuset.join(group)).unwrap();
        std::fs::write(cpuset.join(group).join(name), value).unwrap();
    }
    dir
}

#[test]
fn says_where_the_command_would_run() {
    let dir = guest(true);
    let root = dir.path().to_str().unwrap();
    lowlat(&[
        "--root",
        root,
        "run",
        "--dry-run",
        "--",
        "./trader",
        "-c",
        "x",
    ])
    .assert()
    .code(0)
    .stderr(
        "lowlat: note: would run ./trader -c x in cpuset /lowlat-isolated (cgroup v1), on CPUs 1\n",
    );
}

#[test]
fn refuses_cpus_outside_the_isolated_ones_and_a_machine_with_none() {
    let dir = guest(true);
    let root = dir.path().to_str().unwrap();
    let out = lowlat(&[
        "--root",
        root,
        "run",
        "--dry-run",
        "--cpus",
        "0-1",
        "--",
        "true",
    ])
    .assert()
    .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("--cpus 0-1: CPUs 0 are not isolated (the isolated CPUs are 1)"),
        "{stderr}"
    );
    let dir = guest(false);
    let root = dir.path().to_str().unwrap();
    let out = lowlat(&["--root", root, "run", "--dry-run", "--", "true"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("has no isolated CPUs"), "{stderr}");
    assert!(
        stderr.contains("lowlat plan --isolation runtime"),
        "{stderr}"
    );
}

#[test]
fn another_root_is_only_for_a_dry_run() {
    let dir = guest(true);
    let root = dir.path().to_str().unwrap();
    let out = lowlat(&["--root", root, "run", "--", "true"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("only --dry-run"), "{stderr}");
}

/// The runtime isolation guide: its compare example is the output on the two bundles it
/// ships, byte for byte, and its block on what runtime isolation cannot do is what the plan
/// prints.
#[test]
fn the_guide_examples_are_real_output() {
    let guide = include_str!("../../docs/guide/runtime-isolation.md");
    let shown = |command: &str| -> String {
        let start = guide.find(&format!("$ {command}\n")).unwrap() + command.len() + 3;
        let end = guide[start..].find("```").unwrap();
        guide[start..start + end].trim_end().to_string()
    };
    let data =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/runtime-isolation");
    let out = lowlat(&["compare", "before", "--", "after"])
        .current_dir(&data)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim_end(),
        shown("lowlat compare before -- after")
    );

    let dir = guest(false);
    let root = dir.path().to_str().unwrap();
    let out = lowlat(&[
        "--root",
        root,
        "plan",
        "--isolation",
        "runtime",
        "--isolate",
        "1",
    ])
    .output()
    .unwrap();
    let summary = String::from_utf8(out.stdout).unwrap();
    let block = shown("lowlat plan --isolation runtime --isolate 1");
    let block = block.trim_start_matches("...\n");
    assert!(summary.contains(block), "{summary}\n---\n{block}");
}

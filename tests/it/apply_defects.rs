//! Defects of apply, revert and verify found in issue 18, each reproduced from the command line
//! on a copy of a fixture machine.

use crate::support::lowlat;
use predicates::prelude::*;

#[test]
fn apply_and_revert_help_say_they_need_the_live_machine_or_a_root() {
    // The global --snapshot shows in their help, and they refuse it: the help says so.
    for command in ["apply", "revert"] {
        lowlat(&[command, "--help"]).assert().success().stdout(
            predicate::str::contains(
                "Needs the live machine or --root DIR (--snapshot is refused: a snapshot is read-only).",
            ),
        );
    }
}

#[test]
fn kernel_arguments_nobody_configured_fail_apply_and_verify() {
    // D1 (issue 32): on a machine without grubby and without /etc/default/grub, apply exited 0
    // and verify exited 0 ("unsupported", the long sentence once per argument) while
    // /proc/cmdline lacked every planned argument. (W-5 had made them unsupported so that
    // verify would pass right after apply: that hid that nothing was configured.)
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    crate::support::tree::copy_tree(&crate::support::fixture("epyc7f32-2s"), &root);
    for gone in ["etc/default/grub", "etc/default/grub.d"] {
        let _ = std::fs::remove_file(root.join(gone));
        let _ = std::fs::remove_dir_all(root.join(gone));
    }
    let plan = dir.path().join("plan");
    let root_arg = root.to_str().unwrap();
    let plan_arg = plan.to_str().unwrap();
    lowlat(&["--root", root_arg, "plan", "--out", plan_arg])
        .assert()
        .success();
    let plan_file = plan.join("plan.json");
    let plan_file = plan_file.to_str().unwrap();
    let sentence = "no grubby and no /etc/default/grub";
    let add = "  Add:      isolcpus=managed_irq,1-7,9-15 nohz_full=1-7,9-15 rcu_nocbs=1-7,9-15";
    let out = lowlat(&["--root", root_arg, "apply", "--yes", "--plan", plan_file])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.matches(sentence).count(), 1, "{out}");
    assert!(out.contains("Kernel arguments: not configured"), "{out}");
    assert!(out.contains(add), "{out}");
    // Everything else was applied, and a second apply still says the arguments are missing.
    assert!(
        out.contains("applied       sysctl:vm.stat_interval"),
        "{out}"
    );
    lowlat(&["--root", root_arg, "apply", "--yes", "--plan", plan_file])
        .assert()
        .code(1);
    let out = lowlat(&["--root", root_arg, "verify", "--plan", plan_file])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.matches(sentence).count(), 1, "{out}");
    assert!(out.contains("not-configured  cmdline:nohz_full"), "{out}");
    assert!(out.contains(", 11 not-configured,"), "{out}");
    assert!(out.contains(add), "{out}");
    let json = lowlat(&["--root", root_arg, "verify", "--plan", plan_file, "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc["summary"]["not_configured"], 11);
    assert!(
        doc["boot_line"]["add"]
            .as_str()
            .unwrap()
            .starts_with("isolcpus=managed_irq,1-7,9-15 "),
        "{doc}"
    );
    // Once /proc/cmdline has them (the machine booted with them), verify finds them ok.
    let cmdline = root.join("proc/cmdline");
    let booted = format!(
        "{} {}",
        std::fs::read_to_string(&cmdline).unwrap().trim(),
        doc["boot_line"]["add"].as_str().unwrap()
    );
    std::fs::write(&cmdline, booted).unwrap();
    lowlat(&["--root", root_arg, "verify", "--plan", plan_file])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "0 drift, 0 pending-reboot, 26 unsupported",
        ));
}

#[test]
fn verify_under_a_root_says_where_it_looked_for_the_plan() {
    // U-9: the message named /etc/lowlat/plan.json as if on the live machine.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    crate::support::tree::copy_tree(&crate::support::fixture("rt-guest-4vcpu"), &root);
    let root_arg = root.to_str().unwrap();
    lowlat(&["--root", root_arg, "verify"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "/etc/lowlat/plan.json under --root {root_arg}: no installed plan"
        )));
}

/// Runs `lowlat args` under strace, which kills it with SIGKILL at its `when`-th rename (the
/// step after a temporary file is written and before it replaces its target). Returns whether
/// the kill happened (false: lowlat made fewer renames and finished).
fn killed_at_rename(when: usize, args: &[&str]) -> bool {
    let inject = format!("inject=rename,renameat,renameat2:signal=SIGKILL:when={when}");
    let status = std::process::Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(inject)
        .arg(assert_cmd::cargo::cargo_bin("lowlat"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    // strace dies of its tracee's signal, or exits with 128 plus its number.
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(9) || status.code() == Some(128 + 9)
}

fn strace_available() -> bool {
    let found = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        crate::support::missing_data("strace (Debian package strace)");
    }
    found
}

#[test]
fn a_kill_between_writing_a_temporary_file_and_renaming_it_is_reverted_exactly() {
    // W-1: killed at a rename, apply left `.NAME.XXXXXX.lowlat-tmp` beside the file it was
    // replacing (inside a directory it had created), and revert left both behind.
    if !strace_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fixture = crate::support::fixture("rt-guest-4vcpu");
    let plan = dir.path().join("plan");
    let fixture_arg = fixture.to_str().unwrap();
    lowlat(&[
        "--root",
        fixture_arg,
        "plan",
        "--out",
        plan.to_str().unwrap(),
    ])
    .assert()
    .success();
    let plan_file = plan.join("plan.json");
    let pristine = crate::support::tree::describe(&fixture);
    let mut kills = 0;
    for when in 1.. {
        let root = dir.path().join(format!("root-{when}"));
        crate::support::tree::copy_tree(&fixture, &root);
        let root_arg = root.to_str().unwrap();
        let apply = ["--root", root_arg, "apply", "--yes", "--plan"];
        let apply = [&apply[..], &[plan_file.to_str().unwrap()]].concat();
        if !killed_at_rename(when, &apply) {
            break;
        }
        kills += 1;
        lowlat(&["--root", root_arg, "revert"]).assert().code(0);
        crate::support::tree::assert_same(
            &pristine,
            &crate::support::tree::describe(&root),
            &format!("apply killed at rename {when}, then reverted"),
        );
    }
    assert!(kills >= 3, "apply made only {kills} renames");

    // Revert killed at its own first rename, then run again.
    let root = dir.path().join("root-revert");
    crate::support::tree::copy_tree(&fixture, &root);
    let root_arg = root.to_str().unwrap();
    lowlat(&[
        "--root",
        root_arg,
        "apply",
        "--yes",
        "--plan",
        plan_file.to_str().unwrap(),
    ])
    .assert()
    .code(0);
    assert!(killed_at_rename(1, &["--root", root_arg, "revert"]));
    lowlat(&["--root", root_arg, "revert"]).assert().code(0);
    crate::support::tree::assert_same(
        &pristine,
        &crate::support::tree::describe(&root),
        "revert killed at its first rename, then run again",
    );
}

#[test]
fn an_os_error_is_printed_once_with_the_path_it_is_about() {
    // U-9: `Not a directory (os error 20)` was printed twice, once by the library's message
    // and once more as its cause.
    let dir = tempfile::tempdir().unwrap();
    let fixture = crate::support::fixture("rt-guest-4vcpu");
    let root = dir.path().join("root");
    crate::support::tree::copy_tree(&fixture, &root);
    std::fs::create_dir_all(root.join("var/lib")).unwrap();
    std::fs::write(
        root.join("var/lib/lowlat"),
        "a file where a directory belongs",
    )
    .unwrap();
    let plan = dir.path().join("plan");
    let root_arg = root.to_str().unwrap();
    lowlat(&["--root", root_arg, "plan", "--out", plan.to_str().unwrap()])
        .assert()
        .success();
    let out = lowlat(&[
        "--root",
        root_arg,
        "apply",
        "--yes",
        "--plan",
        plan.join("plan.json").to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .get_output()
    .stderr
    .clone();
    let stderr = String::from_utf8(out).unwrap();
    assert!(stderr.contains("/var/lib/lowlat"), "{stderr}");
    assert_eq!(stderr.matches("(os error 20)").count(), 1, "{stderr}");
}

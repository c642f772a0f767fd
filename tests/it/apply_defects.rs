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
fn verify_after_a_complete_apply_finds_no_drift() {
    // W-5: tasks under --root, and kernel arguments without a bootloader tool, were
    // `unsupported` for apply and `drift` for verify, so verify exited 1 right after apply.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    crate::support::tree::copy_tree(&crate::support::fixture("rt-guest-4vcpu"), &root);
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
    lowlat(&["--root", root_arg, "apply", "--yes", "--plan", plan_file])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("unsupported"));
    lowlat(&["--root", root_arg, "verify", "--plan", plan_file])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(" 0 drift"));
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

//! `lowlat inventory` on the fixture machines: the facts the issue names, and golden files of
//! the text view and the JSON document.

use crate::support::fixture;
use crate::support::tree::copy_tree;

use serde_json::Value;

fn lowlat(machine: &str, args: &[&str]) -> String {
    let out = crate::support::lowlat(&[])
        .arg("--root")
        .arg(fixture(machine))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lowlat {args:?} on {machine}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(machine: &str) -> Value {
    serde_json::from_str(&lowlat(machine, &["inventory", "--json"])).unwrap()
}

const MACHINES: [&str; 6] = [
    "kvm-guest-2vcpu",
    "epyc7f32-2s",
    "epyc7f32-2s-tuned",
    "milan64-nps4-smt",
    "xeon-2s-smt",
    "rt-guest-4vcpu",
];

#[test]
fn golden_text_and_json() {
    let _golden = crate::support::golden_files();
    for machine in MACHINES {
        insta::assert_snapshot!(
            format!("inventory__{machine}.txt"),
            lowlat(machine, &["inventory"])
        );
        insta::assert_json_snapshot!(format!("inventory__{machine}.json"), json(machine), {
            ".created" => "[created]"
        });
    }
}

#[test]
fn epyc7f32_2s_is_the_guides_server() {
    let text = lowlat("epyc7f32-2s", &["inventory"]);
    assert!(
        text.contains("2 sockets × 8 cores × 1 thread = 16 CPUs"),
        "{text}"
    );
    assert!(text.contains("node 0: CPUs 0-7"), "{text}");
    assert!(text.contains("node 1: CPUs 8-15"), "{text}");
    assert!(
        text.contains("16 of 32 slots populated") && text.contains("16 × 32 GiB DDR4 3200 MT/s"),
        "{text}"
    );
    let doc = json("epyc7f32-2s");
    let nodes = &doc["machine"]["topology"]["nodes"];
    assert_eq!(nodes[0]["distances"], serde_json::json!([10, 32]));
    assert_eq!(nodes[1]["distances"], serde_json::json!([32, 10]));
    assert_eq!(doc["schema_version"], 4);
    assert_eq!(doc["kind"], "inventory");
}

#[test]
fn milan_has_four_nodes_per_socket_and_siblings_n_plus_64() {
    let doc = json("milan64-nps4-smt");
    let topology = &doc["machine"]["topology"];
    assert_eq!(topology["shape"]["nodes_per_socket"], 4);
    assert_eq!(topology["shape"]["l3_groups"], 8);
    assert_eq!(topology["cpus"][0]["siblings"], "0,64");
}

#[test]
fn xeon_siblings_are_n_plus_56() {
    let doc = json("xeon-2s-smt");
    assert_eq!(doc["machine"]["topology"]["cpus"][0]["siblings"], "0,56");
    assert_eq!(doc["machine"]["topology"]["cpus"][83]["siblings"], "27,83");
}

#[test]
fn a_snapshot_of_a_fixture_prints_the_same_inventory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("epyc.lowlat");
    lowlat("epyc7f32-2s", &["snapshot", "-o", file.to_str().unwrap()]);
    let replayed = crate::support::lowlat(&[])
        .args(["inventory", "--snapshot", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(replayed.status.success());
    assert_eq!(
        String::from_utf8(replayed.stdout).unwrap(),
        lowlat("epyc7f32-2s", &["inventory"])
    );
}

#[test]
fn bad_roots_and_snapshots_are_clear_errors() {
    let out = crate::support::lowlat(&[])
        .args(["--root", "/nonexistent/tree", "inventory"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--root /nonexistent/tree"));

    let garbage = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(garbage.path(), b"garbage").unwrap();
    let out = crate::support::lowlat(&[])
        .args(["inventory", "--snapshot"])
        .arg(garbage.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a lowlat snapshot"));
}

#[test]
fn an_unprivileged_user_gets_everything_but_root_only_files() {
    use std::os::unix::fs::PermissionsExt;
    let runuser = std::path::Path::new("/usr/sbin/runuser");
    if !crate::support::is_root("running lowlat as nobody") {
        return;
    }
    if !runuser.exists() {
        crate::support::missing_data("/usr/sbin/runuser (Debian package util-linux)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tree = dir.path().join("epyc");
    copy_tree(&fixture("epyc7f32-2s"), &tree);
    // As on a real machine, the SMBIOS table is readable by root only.
    let dmi = tree.join("sys/firmware/dmi/tables/DMI");
    std::fs::set_permissions(&dmi, std::fs::Permissions::from_mode(0o400)).unwrap();
    let binary = dir.path().join("lowlat");
    std::fs::copy(assert_cmd::cargo::cargo_bin("lowlat"), &binary).unwrap();
    let out = std::process::Command::new(runuser)
        .args(["-u", "nobody", "--"])
        .arg(&binary)
        .arg("--root")
        .arg(&tree)
        .arg("inventory")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("2 sockets × 8 cores × 1 thread"), "{text}");
    assert!(text.contains("needs root"), "{text}");
}

#[test]
fn a_reader_that_leaves_early_ends_the_output_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    // 1.3 MB of JSON: far more than a pipe holds, so lowlat is still writing when the
    // reader goes away, like `lowlat inventory --json | head`.
    let root = fixture("milan64-nps4-smt");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("lowlat"))
        .arg("--root")
        .arg(&root)
        .args(["inventory", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with(b"{"), "{first:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

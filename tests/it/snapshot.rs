//! A snapshot holds everything the machine model reads: the model read back from a snapshot
//! (unpacked to a directory, or held in memory) equals the model read while capturing it, on
//! this machine and on every fixture machine.

use lowlat::machine::Machine;
use lowlat::report::inventory;
use lowlat::snapshot;
use lowlat::sysroot::SysRoot;
use std::path::Path;

fn round_trip(root: SysRoot) {
    let root = root.recording();
    let captured = Machine::read(&root);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("machine.lowlat");
    snapshot::write(&root, &file).unwrap();
    let (opened, manifest) = snapshot::open(&file).unwrap();
    assert!(manifest.files > 0);
    let replayed = Machine::read(&opened);
    assert_eq!(inventory::text(&captured), inventory::text(&replayed));
    // Held in memory (as `lowlat fleet` reads snapshots), it reads the same.
    let (loaded, _) = snapshot::load(&file).unwrap();
    assert_eq!(
        inventory::text(&captured),
        inventory::text(&Machine::read(&loaded))
    );
    let a = serde_json::to_value(inventory::document(&captured).body).unwrap();
    let b = serde_json::to_value(inventory::document(&replayed).body).unwrap();
    if a != b {
        let mut differences = Vec::new();
        diff("", &a, &b, &mut differences);
        panic!("the snapshot reads differently at {differences:?}");
    }
}

#[test]
fn a_snapshot_of_this_machine_gives_the_same_inventory() {
    round_trip(SysRoot::live());
}

#[test]
fn a_snapshot_of_every_fixture_gives_the_same_inventory() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines");
    let mut tried = 0;
    for entry in std::fs::read_dir(&fixtures)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
    {
        round_trip(SysRoot::dir(entry.path()));
        tried += 1;
    }
    // It passed with no fixture at all.
    assert!(
        tried >= 5,
        "only {tried} fixture machines under {}",
        fixtures.display()
    );
}

/// The kernel's configuration is captured: an audit of the snapshot knows what the kernel was
/// built with (Ubuntu 22.04's kernel, without CONFIG_NO_HZ_FULL).
#[test]
fn a_snapshot_carries_the_kernel_config() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines/milan64-nps4-smt");
    let root = SysRoot::dir(fixture).recording();
    Machine::read(&root);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("milan.lowlat");
    snapshot::write(&root, &file).unwrap();
    let (opened, _) = snapshot::open(&file).unwrap();
    let config = Machine::read(&opened).kernel.config;
    let config = config.get().expect("the snapshot holds the kernel config");
    assert_eq!(config.source, "/boot/config-5.15.0-91-generic");
    assert!(!config.enabled("CONFIG_NO_HZ_FULL"));
    assert!(config.enabled("CONFIG_RCU_NOCB_CPU"));
}

#[test]
fn a_schema_1_snapshot_still_opens() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let file = fixtures.join("schema1/snapshot-kvm-guest-2vcpu.lowlat");
    let (opened, manifest) = snapshot::open(&file).unwrap();
    assert_eq!(manifest.header.schema_version, 1);
    assert_eq!(manifest.header.host, "vm");
    assert_eq!(manifest.header.tool.version, "0.1.0");
    assert!(manifest.header.created.starts_with("20"));
    let original = Machine::read(&SysRoot::dir(fixtures.join("machines/kvm-guest-2vcpu")));
    assert_eq!(
        inventory::text(&Machine::read(&opened)),
        inventory::text(&original)
    );
    // Loaded into memory, its tar headers walked by lowlat itself, it reads the same.
    let (loaded, loaded_manifest) = snapshot::load(&file).unwrap();
    assert_eq!(loaded_manifest, manifest);
    assert_eq!(
        inventory::text(&Machine::read(&loaded)),
        inventory::text(&original)
    );
}

#[test]
fn a_snapshot_manifest_is_a_snapshot_document() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("machine.lowlat");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines/kvm-guest-2vcpu");
    let root = SysRoot::dir(fixture).recording();
    Machine::read(&root);
    let written = snapshot::write(&root, &file).unwrap();
    let json = serde_json::to_value(&written).unwrap();
    assert_eq!(json["schema_version"], 2);
    assert_eq!(json["kind"], "snapshot");
    assert_eq!(json["tool"]["name"], "lowlat");
    assert_eq!(json["host"], "vm");
    assert_eq!(snapshot::open(&file).unwrap().1, written);
}

/// The JSON paths where two documents differ (at most 10).
fn diff(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    if out.len() >= 10 || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, value) in x {
                diff(
                    &format!("{path}.{key}"),
                    value,
                    y.get(key).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), p, q, out);
            }
        }
        _ => out.push(format!("{path}: {a} vs {b}")),
    }
}

/// `-o DIR` said "the file exists; choose another name or add --force", and with --force
/// "cannot rename a temporary file over: Is a directory": it says that it is a directory and
/// what to give instead.
#[test]
fn a_directory_as_the_snapshot_file_is_refused_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let root = crate::support::fixture("kvm-guest-2vcpu");
    for force in [false, true] {
        let mut args = vec!["--root", root.to_str().unwrap(), "snapshot", "-o", out];
        if force {
            args.push("--force");
        }
        crate::support::lowlat(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(format!(
                "-o {out}: is a directory; give the snapshot's file name"
            )));
    }
}

/// `--extract DIR` created DIR before opening the snapshot: a snapshot that could not be read
/// left an empty directory behind, which the next try refused as not empty.
#[test]
fn a_snapshot_that_cannot_be_opened_extracts_no_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tree");
    crate::support::lowlat(&[
        "--snapshot",
        dir.path().join("missing.lowlat").to_str().unwrap(),
        "snapshot",
        "--extract",
        out.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicates::str::contains("missing.lowlat: cannot open"));
    assert!(!out.exists(), "{} was created", out.display());
}

/// A file the snapshot could not read (root-only without root, an I/O error) reads back as
/// not captured, never as absent from the machine: the SMBIOS table is not "no DMI".
#[test]
fn a_file_the_snapshot_could_not_read_is_unknown_not_absent() {
    let tree = tempfile::tempdir().unwrap();
    crate::support::tree::copy_tree(&crate::support::fixture("epyc7f32-2s"), tree.path());
    // A directory where the table is: its read fails, as a root-only file's does without root.
    let table = tree.path().join("sys/firmware/dmi/tables/DMI");
    std::fs::remove_file(&table).unwrap();
    std::fs::create_dir(&table).unwrap();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("host.lowlat");
    crate::support::lowlat(&["--root"])
        .arg(tree.path())
        .args(["snapshot", "-o"])
        .arg(&file)
        .assert()
        .success();
    let inventory = crate::support::lowlat(&["--snapshot"])
        .arg(&file)
        .args(["inventory", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&inventory.stdout).unwrap();
    assert_eq!(
        json["machine"]["firmware"]["smbios"]["unavailable"],
        "the snapshot or support bundle did not capture /sys/firmware/dmi/tables/DMI"
    );
}

//! A snapshot holds everything the machine model reads: the model read back from a snapshot
//! equals the model read while capturing it, on this machine and on every fixture machine.

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
    assert_eq!(
        inventory::render_text(&captured),
        inventory::render_text(&replayed)
    );
    assert_eq!(
        serde_json::to_value(inventory::document(&captured)).unwrap(),
        serde_json::to_value(inventory::document(&replayed)).unwrap()
    );
}

#[test]
fn a_snapshot_of_this_machine_gives_the_same_inventory() {
    round_trip(SysRoot::live());
}

#[test]
fn a_snapshot_of_every_fixture_gives_the_same_inventory() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines");
    let Ok(entries) = std::fs::read_dir(&fixtures) else {
        return;
    };
    for entry in entries.filter_map(Result::ok).filter(|e| e.path().is_dir()) {
        round_trip(SysRoot::dir(entry.path()));
    }
}

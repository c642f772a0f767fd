//! The whole machine reader over a tree, then the inventory and audit printers: never panic,
//! whatever files a `--root` tree or a snapshot holds.
//!
//! Input: records `PATH\0CONTENT\0`, repeated. Each PATH (relative to the root, e.g.
//! `proc/cpuinfo` or `sys/devices/system/cpu/online`) is written with CONTENT into a fresh
//! temporary tree; a PATH that is absolute, holds `.` or `..`, or collides with another
//! record's file or directory is skipped. fuzz/seeds/machine/ holds the fixture machines in
//! this form.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::audit::{self, partition, profile};
use lowlat::machine::Machine;
use lowlat::report;
use lowlat::sysroot::SysRoot;
use std::path::{Component, Path};

/// The most records read from one input.
const MAX_RECORDS: usize = 512;
/// The most components in one PATH.
const MAX_DEPTH: usize = 12;

/// PATH as a relative path made only of plain names, if it is one.
fn plain_relative(path: &[u8]) -> Option<&Path> {
    let path = Path::new(std::str::from_utf8(path).ok()?);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    let depth = path.components().count();
    (plain && (1..=MAX_DEPTH).contains(&depth)).then_some(path)
}

/// Writes the records of `data` under `dir`.
fn build_tree(data: &[u8], dir: &Path) {
    let mut fields = data.split(|&b| b == 0);
    for _ in 0..MAX_RECORDS {
        let (Some(path), Some(content)) = (fields.next(), fields.next()) else {
            return;
        };
        let Some(path) = plain_relative(path) else {
            continue;
        };
        let file = dir.join(path);
        let parent_made = file
            .parent()
            .is_none_or(|p| std::fs::create_dir_all(p).is_ok());
        if parent_made {
            let _ = std::fs::write(&file, content);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let tree = tempfile::tempdir().expect("creating the fuzz tree");
    build_tree(data, tree.path());
    let machine = Machine::read(&SysRoot::dir(tree.path()));
    let _ = report::inventory::text(&machine);
    serde_json::to_string(&report::inventory::document(&machine)).expect("inventory JSON");
    let Ok(chosen) = partition::choose(&machine, None) else {
        return;
    };
    for info in profile::PROFILES {
        let profile = profile::load(info.name).expect("built-in profile");
        let result = audit::run(&machine, &profile, &chosen);
        let _ = report::audit::text(
            &machine,
            &result,
            profile.info,
            &report::audit::View::default(),
        );
    }
});

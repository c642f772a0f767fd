//! `lowlat fleet report` and `lowlat report` take sosreports: a directory of them (the
//! `sosreport-*` directories and the `.tar.xz`/`.tar.gz` archives sos wrote) is a fleet, one host
//! per bundle, named by the bundle (`hostname`, `sysctl -a`'s kernel.hostname, else the
//! bundle's name) and escaped in every output; `lowlat report BUNDLE` draws its inventory and
//! its audit.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::lowlat;
use crate::support::tree::copy_tree;

/// Three bundles of the hand-made rt-node in sos 4.x's layout: rt-node-2 with an older BIOS
/// (its dmidecode), rt-node-3 with vm.swappiness 1.
fn fleet() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sosreport-fleet")
}

fn bundle(host: &str) -> PathBuf {
    fleet().join(format!("sosreport-{host}-2026-12-05-abcdefg"))
}

/// Sets the host name `sysctl -a` of the bundle `report` records (none: the line removed).
fn set_hostname(report: &Path, name: Option<&str>) {
    let sysctl = report.join("sos_commands/kernel/sysctl_-a");
    let text = std::fs::read_to_string(&sysctl).unwrap();
    let text: String = text
        .lines()
        .filter_map(|l| match (l.starts_with("kernel.hostname"), name) {
            (false, _) => Some(format!("{l}\n")),
            (true, Some(name)) => Some(format!("kernel.hostname = {name}\n")),
            (true, None) => None,
        })
        .collect();
    std::fs::write(&sysctl, text).unwrap();
}

fn fleet_json(inputs: &[&Path]) -> (Value, String, Option<i32>) {
    let out = lowlat(&["fleet", "report", "--json"])
        .args(inputs)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (json, stderr, out.status.code())
}

/// The outliers of a fleet document: (host, field) pairs.
fn outliers(fleet: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for group in fleet["groups"].as_array().unwrap() {
        for outlier in group["outliers"].as_array().unwrap() {
            for difference in outlier["differences"].as_array().unwrap() {
                out.push((
                    outlier["host"].as_str().unwrap().to_string(),
                    difference["field"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    out
}

#[test]
fn a_directory_of_sosreports_is_a_fleet_of_one_host_per_bundle() {
    let (fleet, stderr, code) = fleet_json(&[&fleet()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(fleet["hosts"], 3, "{fleet}");
    // The system model from dmidecode, the host names from sysctl -a.
    let group = &fleet["groups"][0];
    assert_eq!(group["key"]["firmware.system"], "ProLiant DL360 Gen10 Plus");
    assert_eq!(
        group["hosts"],
        serde_json::json!(["rt-node-1", "rt-node-2", "rt-node-3"])
    );
    assert_eq!(
        outliers(&fleet),
        [
            ("rt-node-2".into(), "firmware.bios_date".into()),
            ("rt-node-2".into(), "firmware.bios_version".into()),
            ("rt-node-3".into(), "rule:LL-SYSCTL-VM-SWAPPINESS".into()),
            ("rt-node-3".into(), "sysctl:vm.swappiness".into()),
        ]
    );
}

/// Makes an archive of `report` in `into` as sos does (one top directory, xz).
fn archive(report: &Path, into: &Path) -> PathBuf {
    let name = report.file_name().unwrap().to_str().unwrap();
    let file = into.join(format!("{name}.tar.xz"));
    let status = Command::new("tar")
        .arg("-cJf")
        .arg(&file)
        .arg("-C")
        .arg(report.parent().unwrap())
        .arg(name)
        .status()
        .unwrap();
    assert!(status.success());
    file
}

#[test]
fn archives_and_hostile_host_names_join_the_fleet_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundles");
    let staging = tmp.path().join("staging");
    std::fs::create_dir_all(&dir).unwrap();
    for host in ["rt-node-1", "rt-node-2", "rt-node-3"] {
        copy_tree(&bundle(host), &dir.join(bundle(host).file_name().unwrap()));
    }
    // An archive whose host name carries a terminal escape and a newline, as an outlier (vm
    // swappiness 1, like rt-node-3), and a bundle without a host name: its bundle's name.
    let evil = staging.join("sosreport-evil-2026-12-05-abcdefg");
    copy_tree(&bundle("rt-node-3"), &evil);
    set_hostname(&evil, None);
    std::fs::create_dir_all(evil.join("sos_commands/host")).unwrap();
    std::fs::write(
        evil.join("sos_commands/host/hostname"),
        "ev\x1b]0;owned\x07il\n",
    )
    .unwrap();
    archive(&evil, &dir);
    let nameless = dir.join("sosreport-nameless-2026-12-05-abcdefg");
    copy_tree(&bundle("rt-node-1"), &nameless);
    set_hostname(&nameless, None);
    let group_hosts = |fleet: &Value| -> Vec<String> {
        (fleet["groups"].as_array().unwrap().iter())
            .flat_map(|g| g["hosts"].as_array().unwrap().clone())
            .map(|h| h.as_str().unwrap().to_string())
            .collect()
    };
    // sos's checksum beside the archive is passed over.
    std::fs::write(
        dir.join("sosreport-evil-2026-12-05-abcdefg.tar.xz.sha256"),
        "x\n",
    )
    .unwrap();

    let (fleet, stderr, _) = fleet_json(&[&dir]);
    assert_eq!(fleet["hosts"], 5, "{stderr}\n{fleet}");
    assert!(fleet["skipped"].as_array().unwrap().is_empty(), "{fleet}");
    let outliers = outliers(&fleet);
    assert!(
        outliers.contains(&("ev\x1b]0;owned\x07il".into(), "sysctl:vm.swappiness".into())),
        "{outliers:?}"
    );
    // The page escapes it; the HTML too.
    let html = tmp.path().join("fleet.html");
    let out = lowlat(&["fleet", "report"])
        .arg(&dir)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(!page.contains('\x1b'), "{page}");
    assert!(page.contains("ev\\x1b]0;owned\\x07il"), "{page}");
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(!html.contains('\x1b'));
    assert!(!html.contains('\x07'));
    // The nameless bundle is named by its directory.
    let mut hosts = group_hosts(&fleet);
    hosts.sort();
    assert_eq!(
        hosts,
        [
            "ev\x1b]0;owned\x07il",
            "rt-node-1",
            "rt-node-2",
            "rt-node-3",
            "sosreport-nameless-2026-12-05-abcdefg"
        ]
    );
}

#[test]
fn report_draws_a_sosreport_and_refuses_a_fleet_of_them() {
    let tmp = tempfile::tempdir().unwrap();
    let file = archive(&bundle("rt-node-2"), tmp.path());
    let html = tmp.path().join("node.html");
    let out = lowlat(&["report"])
        .arg(&file)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the bundle lacks /proc/interrupts"),
        "{stderr}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    for shown in [
        "rt-node-2",
        "LL-SYSCTL-VM-SWAPPINESS",
        "ProLiant DL360 Gen10 Plus",
    ] {
        assert!(page.contains(shown), "{shown}");
    }
    let out = lowlat(&["report"])
        .arg(fleet())
        .args(["-o", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("holds 3 sosreports"), "{stderr}");
    assert!(stderr.contains("lowlat fleet report"), "{stderr}");
}

#[test]
fn the_guide_shows_a_fleet_of_sosreports_as_lowlat_prints_it() {
    let guide = include_str!("../../docs/guide/fleet.md");
    let command = "$ lowlat fleet report tests/fixtures/sosreport-fleet\n";
    let start = guide
        .find(command)
        .expect("the guide's fleet of sosreports")
        + command.len();
    let shown = &guide[start..start + guide[start..].find("```").unwrap()];
    // The page up to the rules table's first row, then `  ...` for the other rows.
    let shown = shown
        .strip_suffix("  ...\n")
        .expect("the guide cuts the rules table");
    let out = lowlat(&["fleet", "report", "tests/fixtures/sosreport-fleet"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.starts_with(shown) && shown.lines().last().unwrap().starts_with("  LL-"),
        "docs/guide/fleet.md's fleet of sosreports:\n{printed}"
    );
    assert_eq!(out.status.code(), Some(1));
}

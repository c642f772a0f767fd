//! `--sosreport DIR`: a sosreport-shaped tree built from a fixture machine (sos's layout: the
//! copies of /proc and /sys under proc/ and sys/, beside sos_commands/, sos_logs/ and
//! sos_reports/) gives the same inventory, audit and plan as `--root` on the fixture; what the
//! bundle lacks is named; a directory that is not a sosreport is refused naming the flag.

use predicates::prelude::*;

use crate::support::tree::copy_tree;
use crate::support::{fixture, lowlat};

/// A sosreport of `machine` unpacked in a temporary directory, as `tar xf` leaves it.
fn sosreport(machine: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("sosreport-hpe-lowlat-2026-11-27-qwmxrzt");
    copy_tree(&fixture(machine), &report);
    for dir in [
        "sos_commands/kernel",
        "sos_commands/host",
        "sos_logs",
        "sos_reports",
    ] {
        std::fs::create_dir_all(report.join(dir)).unwrap();
    }
    std::fs::write(
        report.join("sos_commands/kernel/uname_-a"),
        "Linux hpe-lowlat\n",
    )
    .unwrap();
    std::fs::write(report.join("sos_commands/host/hostname"), "hpe-lowlat\n").unwrap();
    std::fs::write(report.join("sos_reports/manifest.json"), "{}\n").unwrap();
    std::fs::write(report.join("version.txt"), "sosreport: 4.8.0\n").unwrap();
    (tmp, report)
}

/// stdout of `lowlat FLAG DIR ARGS`, without the lines that name the time or the tree.
fn output(flag: &str, dir: &std::path::Path, args: &[&str]) -> (String, String) {
    let out = lowlat(&[]).arg(flag).arg(dir).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("\"created\"") && !l.contains("\"root\""))
        .collect::<Vec<_>>()
        .join("\n");
    (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_sosreport_reads_as_the_machine_it_was_taken_on() {
    let (tmp, report) = sosreport("epyc7f32-2s-tuned");
    let fixture = fixture("epyc7f32-2s-tuned");
    for args in [
        &["audit", "--json"][..],
        &["audit"][..],
        &["inventory", "--json"][..],
        &["plan", "--json"][..],
    ] {
        // The report's directory, and the directory the archive was unpacked in.
        for dir in [report.as_path(), tmp.path()] {
            let (sos, stderr) = output("--sosreport", dir, args);
            let (root, _) = output("--root", &fixture, args);
            assert!(!sos.is_empty(), "{args:?}: {stderr}");
            assert_eq!(sos, root, "{args:?} on {}", dir.display());
        }
    }
    // The fixture has its processes; a real sosreport does not, and lowlat says so.
    let (_, stderr) = output("--sosreport", &report, &["inventory"]);
    assert!(!stderr.contains("lacks"), "{stderr}");
    std::fs::remove_file(report.join("proc/interrupts")).unwrap();
    for entry in std::fs::read_dir(report.join("proc")).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            std::fs::remove_dir_all(path).unwrap();
        }
    }
    lowlat(&[])
        .arg("--sosreport")
        .arg(&report)
        .arg("audit")
        .assert()
        .stderr(predicate::str::contains(
            "--sosreport: the bundle lacks /proc/interrupts: IRQ counts",
        ))
        .stderr(predicate::str::contains(
            "--sosreport: the bundle lacks /proc/PID: processes and kernel threads",
        ));
}

#[test]
fn a_directory_that_is_not_a_sosreport_is_refused() {
    lowlat(&[])
        .arg("--sosreport")
        .arg(fixture("epyc7f32-2s"))
        .arg("audit")
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("--sosreport: "))
        .stderr(predicate::str::contains("not a sosreport"));
    lowlat(&[])
        .arg("--sosreport")
        .arg(fixture("epyc7f32-2s"))
        .arg("--root")
        .arg(fixture("epyc7f32-2s"))
        .arg("audit")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}

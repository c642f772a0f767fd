//! `--sosreport DIR|FILE`: sos's copies of /proc, /sys and /etc read as `--root` reads a tree,
//! and its command outputs (`uname -a`, `sysctl -a`, the `ps` outputs, `tuned-adm active`) as
//! the files they stand for, each naming the bundle file it came from. A real sosreport of this
//! machine made by the real `sos` agrees with lowlat run live here for every fact it holds; a
//! bundle that does not hold a fact leaves it unknown, never absent; bad bundles are said and
//! the rest read.

use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::tree::copy_tree;
use crate::support::{fixture, is_root, lowlat, missing_data};

/// The hand-made sosreport in sos 4.x's layout (tests/fixtures/sosreport): proc/ and sys/
/// copies, /etc's unit links, and the outputs of uname -a, sysctl -a, ps and tuned-adm.
fn rt_node() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sosreport/sosreport-rt-node-2026-12-05-kqzwvxy")
}

/// A sosreport of `machine` unpacked in a temporary directory, as `tar xf` leaves it: the
/// fixture's files without its processes (sos copies no /proc/PID).
fn sosreport(machine: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("sosreport-hpe-lowlat-2026-11-27-qwmxrzt");
    copy_tree(&fixture(machine), &report);
    remove_processes(&report);
    for dir in ["sos_commands/kernel", "sos_logs", "sos_reports"] {
        std::fs::create_dir_all(report.join(dir)).unwrap();
    }
    let release = std::fs::read_to_string(report.join("proc/sys/kernel/osrelease")).unwrap();
    std::fs::write(
        report.join("sos_commands/kernel/uname_-a"),
        format!(
            "Linux hpe-lowlat {} #1 SMP x86_64 GNU/Linux\n",
            release.trim()
        ),
    )
    .unwrap();
    std::fs::write(report.join("sos_reports/manifest.json"), "{}\n").unwrap();
    (tmp, report)
}

/// Removes the `proc/PID` directories of a tree.
fn remove_processes(dir: &Path) {
    for entry in std::fs::read_dir(dir.join("proc")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.bytes().all(|b| b.is_ascii_digit()) {
            std::fs::remove_dir_all(path).unwrap();
        }
    }
}

/// stdout of `lowlat FLAG DIR ARGS`, without the lines that name the time or the tree.
fn output(flag: &str, dir: &Path, args: &[&str]) -> (String, String) {
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
    // The fixture as sos copies it: no processes.
    let copy = tempfile::tempdir().unwrap();
    copy_tree(&fixture("epyc7f32-2s-tuned"), copy.path());
    remove_processes(copy.path());
    for args in [
        &["audit", "--json"][..],
        &["audit"][..],
        &["inventory", "--json"][..],
        &["plan", "--json"][..],
    ] {
        // The report's directory, and the directory the archive was unpacked in.
        for dir in [report.as_path(), tmp.path()] {
            let (sos, stderr) = output("--sosreport", dir, args);
            let (root, _) = output("--root", copy.path(), args);
            assert!(!sos.is_empty(), "{args:?}: {stderr}");
            assert_eq!(sos, root, "{args:?} on {}", dir.display());
        }
    }
    // A fix script says the sosreport it was read from, not the private tree made of it.
    let script = tmp.path().join("fixes.sh");
    lowlat(&[])
        .arg("--sosreport")
        .arg(&report)
        .args(["audit", "--fix-script"])
        .arg(&script)
        .output()
        .unwrap();
    let script = std::fs::read_to_string(&script).unwrap();
    let header = script.replace("\n# ", " ");
    let read_from = format!("(read from --sosreport {})", report.display());
    assert!(header.contains(&read_from), "{script}");
    assert!(!script.contains("--root"), "{script}");
    std::fs::remove_file(report.join("proc/interrupts")).unwrap();
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

/// The findings of an audit document by rule: (status, evidence).
fn findings(audit: &Value) -> std::collections::BTreeMap<String, (String, Vec<String>)> {
    audit["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let evidence = f["evidence"]
                .as_array()
                .map(|e| e.iter().map(|p| p.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            (
                f["rule"].as_str().unwrap().to_string(),
                (f["status"].as_str().unwrap().to_string(), evidence),
            )
        })
        .collect()
}

fn json(flag: Option<(&str, &Path)>, args: &[&str]) -> Value {
    let mut cmd = lowlat(&[]);
    if let Some((flag, path)) = flag {
        cmd.arg(flag).arg(path);
    }
    let out = cmd.args(args).output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn the_outputs_sos_keeps_are_read_and_name_their_line() {
    let audit = json(Some(("--sosreport", &rt_node())), &["audit", "--json"]);
    let findings = findings(&audit);
    let (status, evidence) = &findings["LL-SYSCTL-VM-SWAPPINESS"];
    assert_eq!(status, "fail");
    assert_eq!(
        evidence,
        &["/proc/sys/vm/swappiness (from sos_commands/kernel/sysctl_-a:21)"]
    );
    // irqbalance and chronyd run (ps_alxwww shows them), TuneD's profile is tuned-adm's.
    assert_eq!(findings["LL-IRQBALANCE"].0, "pass");
    assert_eq!(findings["LL-TIME-DAEMON-RUNNING"].0, "pass");
    let (status, evidence) = &findings["LL-TIME-DAEMON-RUNNING"];
    assert_eq!(status, "pass");
    assert!(
        evidence.contains(&"/proc/*/cmdline (from sos_commands/process/ps_alxwww)".to_string()),
        "{evidence:?}"
    );
    let inventory = json(Some(("--sosreport", &rt_node())), &["inventory", "--json"]);
    let m = &inventory["machine"];
    assert_eq!(m["kernel"]["release"], "5.14.0-427.13.1.el9_4.x86_64");
    assert_eq!(
        m["services"]["tuned"]["active_profiles"][0],
        "throughput-performance"
    );
    let tasks = m["tasks"]["tasks"].as_array().unwrap();
    let task = |pid: u64| tasks.iter().find(|t| t["pid"] == pid).unwrap();
    // migration/2: SCHED_FIFO 99 from ps's CLS and PRI, bound to CPU 2, its affinity unknown.
    assert_eq!(task(21)["comm"], "migration/2");
    assert_eq!(task(21)["policy"], "fifo");
    assert_eq!(task(21)["rt_priority"], 99);
    assert_eq!(task(21)["affinity_locked"], true);
    assert!(task(21)["cpus_allowed"]["unavailable"].is_string());
    assert_eq!(task(21)["last_cpu"], Value::Null);
    // The kworker's whole name from ps alx, not ps's 15-byte comm column.
    assert_eq!(task(40)["comm"], "kworker/2:0H-events_highpri");
    assert_eq!(task(40)["nice"], -20);
    assert_eq!(task(812)["comm"], "irqbalance");
    assert_eq!(task(812)["cgroup"], "/system.slice/irqbalance.service");
    assert_eq!(task(812)["kernel_thread"], false);
}

#[test]
fn what_a_bundle_does_not_hold_is_unknown_never_absent() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("sosreport-rt-node");
    copy_tree(&rt_node(), &report);
    // The process plugin did not run.
    std::fs::remove_dir_all(report.join("sos_commands/process")).unwrap();
    let (inventory, stderr) = output("--sosreport", &report, &["inventory"]);
    assert!(stderr.contains("the bundle lacks /proc/PID"), "{stderr}");
    for absent in [
        "not running",
        "no time daemon",
        "0 processes",
        "none reserved",
    ] {
        assert!(!inventory.contains(absent), "{absent}:\n{inventory}");
    }
    assert!(
        inventory.contains("irqbalance (enabled, whether it runs unknown)"),
        "{inventory}"
    );
    let verdicts = findings(&json(Some(("--sosreport", &report)), &["audit", "--json"]));
    assert_eq!(verdicts["LL-TIME-DAEMON-RUNNING"].0, "unknown");
    // No /sys/class/net in the bundle: not "no NIC has a PTP hardware clock".
    assert_eq!(verdicts["LL-NIC-PHC-UNUSED"].0, "unknown");
    // Enabled units without a process list: whether they run is unknown, neither in force
    // (as before) nor stopped.
    for rule in ["LL-CONFLICTING-TUNERS", "LL-IRQBALANCE"] {
        assert_eq!(verdicts[rule].0, "unknown", "{rule}");
    }
    let audit = json(Some(("--sosreport", &report)), &["audit", "--json"]);
    let observed = |rule: &str| {
        audit["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == rule)
            .unwrap()["observed"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        observed("LL-IRQBALANCE"),
        "whether irqbalance runs is unknown: irqbalance.service is enabled, and there is no \
         process list to tell whether it runs"
    );

    // systemd's list of units tells instead: irqbalance failed, TuneD runs.
    std::fs::create_dir_all(report.join("sos_commands/systemd")).unwrap();
    std::fs::write(
        report.join("sos_commands/systemd/systemctl_list-units"),
        "  UNIT                  LOAD   ACTIVE SUB     DESCRIPTION\n\
         \x20 chronyd.service       loaded active running NTP client/server\n\
         ● irqbalance.service    loaded failed failed  irqbalance daemon\n\
         \x20 tuned.service         loaded active running Dynamic System Tuning Daemon\n\
         \n\
         LOAD   = Reflects whether the unit definition was properly loaded.\n",
    )
    .unwrap();
    let listed = findings(&json(Some(("--sosreport", &report)), &["audit", "--json"]));
    let (status, evidence) = &listed["LL-IRQBALANCE"];
    assert_eq!(status, "pass");
    assert_eq!(evidence, &["sos_commands/systemd/systemctl_list-units"]);
    assert_eq!(listed["LL-CONFLICTING-TUNERS"].0, "pass");
    let (inventory, _) = output("--sosreport", &report, &["inventory"]);
    assert!(inventory.contains("tuned (running)"), "{inventory}");
    assert!(
        inventory.contains("irqbalance (enabled, not running)"),
        "{inventory}"
    );
}

#[test]
fn irqbalance_without_its_environment_file_is_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("sosreport-rt-node");
    copy_tree(&rt_node(), &report);
    // sos copies no irqbalance environment file: before, its absence read as the defaults.
    std::fs::remove_file(report.join("etc/sysconfig/irqbalance")).unwrap();
    let audit = json(Some(("--sosreport", &report)), &["audit", "--json"]);
    let finding = |rule: &str| {
        audit["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == rule)
            .unwrap()
            .clone()
    };
    let irqbalance = finding("LL-IRQBALANCE");
    assert_eq!(irqbalance["status"], "unknown");
    assert_eq!(
        irqbalance["observed"],
        "irqbalance runs; which CPUs it bans is unknown: the snapshot or support bundle did \
         not capture /etc/sysconfig/irqbalance"
    );
}

/// The rt-node bundle with more of what sos keeps: `dmidecode`, `chronyc tracking` and
/// `hostname` (its sysctl -a without kernel.hostname).
fn rt_node_with_more(tmp: &Path) -> PathBuf {
    let report = tmp.join("sosreport-rt-node");
    copy_tree(&rt_node(), &report);
    let sysctl = report.join("sos_commands/kernel/sysctl_-a");
    let text = std::fs::read_to_string(&sysctl).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("kernel.hostname"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&sysctl, text).unwrap();
    for dir in ["hardware", "chrony", "host"] {
        std::fs::create_dir_all(report.join("sos_commands").join(dir)).unwrap();
    }
    std::fs::write(report.join("sos_commands/host/hostname"), "rt-node-7\n").unwrap();
    std::fs::write(
        report.join("sos_commands/hardware/dmidecode"),
        "# dmidecode 3.5\nSMBIOS 3.3.0 present.\n\n\
         Handle 0x0000, DMI type 0, 26 bytes\nBIOS Information\n\tVendor: HPE\n\tVersion: U46\n\
         \tRelease Date: 01/18/2024\n\n\
         Handle 0x0001, DMI type 1, 27 bytes\nSystem Information\n\tManufacturer: HPE\x1b]0;owned\x07\n\
         \tProduct Name: ProLiant DL360 Gen10 Plus\n\tVersion: Not Specified\n",
    )
    .unwrap();
    std::fs::write(
        report.join("sos_commands/chrony/chronyc_tracking"),
        "Reference ID    : C0A80001 (192.168.0.1)\nStratum         : 3\n\
         System time     : 0.000001234 seconds slow of NTP time\n\
         Last offset     : +0.000000123 seconds\nRMS offset      : 0.000001000 seconds\n\
         Leap status     : Normal\n",
    )
    .unwrap();
    report
}

#[test]
fn dmidecode_chronyc_and_hostname_are_read_where_the_live_reader_puts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let report = rt_node_with_more(tmp.path());
    let inventory = json(Some(("--sosreport", &report)), &["inventory", "--json"]);
    let m = &inventory["machine"];
    assert_eq!(inventory["host"], "rt-node-7");
    let dmi = &m["firmware"]["dmi"];
    assert_eq!(dmi["bios_version"], "U46");
    assert_eq!(dmi["bios_date"], "01/18/2024");
    assert_eq!(dmi["product_name"], "ProLiant DL360 Gen10 Plus");
    assert_eq!(dmi["sys_vendor"], "HPE\x1b]0;owned\x07");
    // sos never copies the SMBIOS tables: not "no DMI on this machine".
    assert_eq!(
        m["firmware"]["smbios"]["unavailable"],
        "the snapshot or support bundle did not capture /sys/firmware/dmi"
    );
    let tracking = &m["time_sync"]["chrony_tracking"];
    assert_eq!(tracking["reference"], "192.168.0.1");
    assert_eq!(tracking["offset_ns"], -1234);
    // The text escapes what the bundle says.
    let (text, _) = output("--sosreport", &report, &["inventory"]);
    assert!(!text.contains('\x1b'), "{text}");
    assert!(text.contains("offset -1234 ns"), "{text}");
}

#[test]
fn bad_outputs_of_the_new_readers_are_said_and_the_rest_read() {
    let tmp = tempfile::tempdir().unwrap();
    let report = rt_node_with_more(tmp.path());
    // list-units where systemd was not PID 1, a 1 GB dmidecode, chronyc's output a link out.
    std::fs::create_dir_all(report.join("sos_commands/systemd")).unwrap();
    std::fs::write(
        report.join("sos_commands/systemd/systemctl_list-units"),
        "System has not been booted with systemd as init system (PID 1). Can't operate.\n",
    )
    .unwrap();
    let dmidecode = std::fs::File::create(report.join("sos_commands/hardware/dmidecode")).unwrap();
    dmidecode.set_len(1 << 30).unwrap();
    let tracking = report.join("sos_commands/chrony/chronyc_tracking");
    std::fs::remove_file(&tracking).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", &tracking).unwrap();
    // The process plugin did not run: list-units alone would tell.
    std::fs::remove_dir_all(report.join("sos_commands/process")).unwrap();
    let out = lowlat(&["--sosreport"])
        .arg(&report)
        .args(["audit", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    for said in [
        "/sos_commands/hardware/dmidecode: larger than",
        "/sos_commands/chrony/chronyc_tracking: a symbolic link (or '..') on the way leads outside the root directory",
    ] {
        assert!(stderr.contains(said), "{said}\n{stderr}");
    }
    // The machine's warnings (in the document) say the list of units is no table.
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(
        raw.contains("not the table of `systemctl list-units`"),
        "{raw}"
    );
    let audit: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = findings(&audit);
    assert_eq!(findings["LL-IRQBALANCE"].0, "unknown");
    assert_eq!(findings["LL-CONFLICTING-TUNERS"].0, "unknown");
    let inventory = json(Some(("--sosreport", &report)), &["inventory", "--json"]);
    let m = &inventory["machine"];
    assert!(m["firmware"]["dmi"]["bios_version"]["unavailable"].is_string());
    assert!(m["time_sync"].get("chrony_tracking").is_none());
    assert_eq!(inventory["host"], "rt-node-7");
}

#[test]
fn bad_bundles_are_said_and_the_rest_read() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("sosreport-rt-node");
    copy_tree(&rt_node(), &report);
    // A ps line broken by a newline in its command, and a command with an escape sequence.
    let alx = report.join("sos_commands/process/ps_alxwww");
    let mut text = std::fs::read_to_string(&alx).unwrap();
    text.push_str(
        "4     0    900       1  20   0   1000   100 do_sel S    ?          0:00 /opt/app --name\n\
         evil\n\
         4     0    901       1  20   0   1000   100 do_sel S    ?          0:00 /opt/\x1b]0;owned\x07 -x\n",
    );
    std::fs::write(&alx, text).unwrap();
    // Two kernel releases: the copied osrelease and the booted image say another than uname -a.
    std::fs::create_dir_all(report.join("proc/sys/kernel")).unwrap();
    std::fs::write(
        report.join("proc/sys/kernel/osrelease"),
        "5.14.0-1.el9.x86_64\n",
    )
    .unwrap();
    std::fs::write(
        report.join("proc/cmdline"),
        "BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-1.el9.x86_64 ro isolcpus=2-3\n",
    )
    .unwrap();
    // A link out of the bundle, where sos keeps a file.
    std::fs::remove_file(report.join("sos_commands/tuned/tuned-adm_active")).unwrap();
    std::os::unix::fs::symlink(
        "/etc/hostname",
        report.join("sos_commands/tuned/tuned-adm_active"),
    )
    .unwrap();
    // A 1 GB sysctl -a (sparse: no disk spent).
    let sysctl = std::fs::File::create(report.join("sos_commands/kernel/sysctl_-a")).unwrap();
    sysctl.set_len(1 << 30).unwrap();
    let out = lowlat(&["--sosreport"])
        .arg(&report)
        .args(["inventory", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains('\x1b'), "{stderr}");
    for said in [
        "sos_commands/process/ps_alxwww: 1 line(s) not a row of the table (line 13",
        "two kernel releases: proc/sys/kernel/osrelease says 5.14.0-1.el9.x86_64, sos_commands/kernel/uname_-a says 5.14.0-427.13.1.el9_4.x86_64",
        "two kernel releases: proc/cmdline booted vmlinuz-5.14.0-1.el9.x86_64, sos_commands/kernel/uname_-a says 5.14.0-427.13.1.el9_4.x86_64",
        "/sos_commands/tuned/tuned-adm_active: a symbolic link (or '..') on the way leads outside the root directory",
        "/sos_commands/kernel/sysctl_-a: larger than",
    ] {
        assert!(stderr.contains(said), "{said}\n{stderr}");
    }
    // The rest is read: the processes, the CPUs, the command line.
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &m["machine"];
    let tasks = m["tasks"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 12, "{tasks:?}");
    assert!(tasks.iter().any(|t| t["comm"] == "/opt/\x1b]0;owned\x07"
        || t["comm"].as_str().unwrap().starts_with("\x1b]0;owned")));
    assert_eq!(m["kernel"]["release"], "5.14.0-1.el9.x86_64");
    assert_eq!(m["topology"]["cpus"].as_array().map(Vec::len), Some(4));
    // The sysctls are unknown, not absent from this kernel.
    assert!(m["kernel"]["sysctls"]["vm.swappiness"]["unavailable"].is_string());
    let audit = findings(&json(Some(("--sosreport", &report)), &["audit", "--json"]));
    assert_eq!(audit["LL-SYSCTL-VM-SWAPPINESS"].0, "unknown");
    assert_eq!(audit["LL-SYSCTL-KERNEL-SCHED-LATENCY-NS"].0, "unknown");
    // The text report escapes the task's name.
    let (text, _) = output("--sosreport", &report, &["audit"]);
    assert!(!text.contains('\x1b'));
}

/// Makes an archive of `report` with `tar` (as sos does: one top directory), compressed with
/// `flag` (`-J` xz, `-z` gzip).
fn archive(report: &Path, flag: &str, into: &Path) -> PathBuf {
    let name = report.file_name().unwrap().to_str().unwrap();
    let file = into.join(format!(
        "{name}.tar.{}",
        if flag == "-J" { "xz" } else { "gz" }
    ));
    let status = Command::new("tar")
        .arg("-c")
        .arg(flag)
        .arg("-f")
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
fn archives_read_as_their_directory_and_one_cut_short_keeps_what_came_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir_audit, _) = output("--sosreport", &rt_node(), &["audit", "--json"]);
    for flag in ["-J", "-z"] {
        let file = archive(&rt_node(), flag, tmp.path());
        let (audit, stderr) = output("--sosreport", &file, &["audit", "--json"]);
        assert_eq!(audit, dir_audit, "{flag}: {stderr}");
    }
    let file = archive(&rt_node(), "-z", tmp.path());
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = lowlat(&["--sosreport"])
        .arg(&file)
        .arg("inventory")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the archive ends early or is damaged"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// A sosreport of this machine made by the real sos (Debian's sosreport package, which
/// .ci/run installs): its plugins for the kernel, processes, CPUs, systemd and services.
fn real_sosreport(into: &Path) -> Option<PathBuf> {
    if Command::new("sos").arg("--help").output().is_err() {
        missing_data("sos (Debian's sosreport package; .ci/run installs it)");
        return None;
    }
    if !is_root("sos report reads files only root may read") {
        return None;
    }
    let out = Command::new("sos")
        .args([
            "report",
            "--batch",
            "--only-plugins",
            "kernel,process,processor,systemd,services,networking,date",
            "--tmp-dir",
        ])
        .arg(into)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sos report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let archive = std::fs::read_dir(into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().is_some_and(|p| p.ends_with(".tar.xz")))
        .expect("sos wrote its archive");
    Some(archive)
}

#[test]
fn a_real_sosreport_agrees_with_the_live_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(archive) = real_sosreport(tmp.path()) else {
        return;
    };
    // The archive as sos wrote it, and its directory unpacked without sos's copy of /proc/sys
    // (sos 4.x on Ubuntu and RHEL keeps only sysctl -a): the sysctls then come from its lines.
    let unpacked = tmp.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(&archive)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(status.success());
    let report = std::fs::read_dir(&unpacked)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let _ = std::fs::remove_dir_all(report.join("proc/sys"));

    let live = json(None, &["inventory", "--json"]);
    let live_audit = findings(&json(None, &["audit", "--json"]));
    for bundle in [archive.as_path(), report.as_path()] {
        let sos = json(Some(("--sosreport", bundle)), &["inventory", "--json"]);
        let (l, s) = (&live["machine"], &sos["machine"]);
        for fact in ["/kernel/release", "/kernel/cmdline/raw", "/cpu"] {
            assert_eq!(
                l.pointer(fact),
                s.pointer(fact),
                "{fact} of {}",
                bundle.display()
            );
        }
        // The CPUs, each with its node where the bundle holds /sys/devices/system/node.
        for (u, t) in l["topology"]["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .zip(s["topology"]["cpus"].as_array().unwrap())
        {
            for (field, value) in t.as_object().unwrap() {
                if !value.is_null() {
                    assert_eq!(&u[field], value, "cpu {}: {field}", t["cpu"]);
                }
            }
        }
        // Every sysctl the bundle holds is the live one (those that count by themselves aside).
        for (key, value) in s["kernel"]["sysctls"].as_object().unwrap() {
            if value.is_string() {
                assert_eq!(&l["kernel"]["sysctls"][key], value, "{key}");
            }
        }
        // Every kernel thread in both (same PID, same name) is the same thread.
        let tasks = |m: &Value| -> std::collections::BTreeMap<u64, Value> {
            m["tasks"]["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| (t["pid"].as_u64().unwrap(), t.clone()))
                .collect()
        };
        let (lt, st) = (tasks(l), tasks(s));
        let mut compared = 0;
        for (pid, t) in &st {
            let Some(u) = lt.get(pid).filter(|u| u["comm"] == t["comm"]) else {
                continue;
            };
            compared += 1;
            for field in [
                "kernel_thread",
                "policy",
                "rt_priority",
                "nice",
                "per_cpu",
                "movable",
                "affinity_locked",
            ] {
                assert_eq!(u[field], t[field], "pid {pid} {}: {field}", t["comm"]);
            }
        }
        assert!(compared > 10, "only {compared} tasks in both");
        // Services: enabled, installed and masked as live; running where the bundle says.
        for (u, t) in l["services"]["services"]
            .as_array()
            .unwrap()
            .iter()
            .zip(s["services"]["services"].as_array().unwrap())
        {
            for field in ["name", "installed", "enabled", "masked"] {
                assert_eq!(u[field], t[field], "{}: {field}", t["name"]);
            }
            if !t["running"].is_null() {
                assert_eq!(u["running"], t["running"], "{}", t["name"]);
            }
        }
        // Every NIC setting the bundle's ethtool outputs hold is the live one.
        let mut nics = 0;
        for (u, t) in l["net"]
            .as_array()
            .unwrap()
            .iter()
            .zip(s["net"].as_array().unwrap())
        {
            assert_eq!(u["name"], t["name"]);
            let Some(nic) = t["nic"].as_object() else {
                continue;
            };
            nics += 1;
            for part in [
                "driver",
                "channels",
                "rings",
                "coalesce",
                "features",
                "phc_index",
            ] {
                if nic[part].get("unavailable").is_none() {
                    assert_eq!(u["nic"][part], nic[part], "{}: {part}", t["name"]);
                }
            }
        }
        assert!(nics > 0, "no NIC read from the bundle");
        // Every finding the bundle can judge is the live one, its evidence naming the
        // bundle's files, never lowlat's own paths (a NIC's `sos_commands/networking/...`).
        let bundle_audit = findings(&json(Some(("--sosreport", bundle)), &["audit", "--json"]));
        for (rule, (status, evidence)) in &bundle_audit {
            assert!(
                !evidence.iter().any(|e| e.contains("lowlat-answers")),
                "{rule}: {evidence:?}"
            );
            if status != "unknown" {
                assert_eq!(
                    &live_audit[rule].0,
                    status,
                    "{rule} of {}",
                    bundle.display()
                );
            }
        }
    }
    // The sysctls of the unpacked report came from sysctl -a and say so.
    let audit = findings(&json(Some(("--sosreport", &report)), &["audit", "--json"]));
    let (_, evidence) = &audit["LL-SYSCTL-VM-SWAPPINESS"];
    assert!(
        evidence[0].starts_with("/proc/sys/vm/swappiness (from sos_commands/kernel/sysctl_-a:"),
        "{evidence:?}"
    );
}

#[test]
fn the_guide_shows_a_sosreport_audit_as_lowlat_prints_it() {
    let guide = include_str!("../../docs/guide/audit.md");
    let command = "$ lowlat --sosreport tests/fixtures/sosreport/sosreport-rt-node-2026-12-05-kqzwvxy audit --layer service\n";
    let start = guide.find(command).expect("the guide's sosreport example") + command.len();
    let shown = &guide[start..start + guide[start..].find("```").unwrap()];
    let out = lowlat(&["--sosreport"])
        .arg(rt_node())
        .args(["audit", "--layer", "service"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| format!("# {l}\n"))
        .collect();
    let printed = format!("{stderr}{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(shown, printed, "docs/guide/audit.md's sosreport example");
}

//! `--must-gather DIR`: a must-gather laid out as the Performance Profile Creator reads one
//! (openshift/cluster-node-tuning-operator, pkg/performanceprofile/profilecreator/mustgather.go:
//! `<image dir>/nodes/<node>/sysinfo.tgz`, a gzipped tar of the node's /proc and /sys with the
//! links of /sys, beside `<image dir>/cluster-scoped-resources/core/nodes/<node>.yaml`), built
//! here from a fixture machine, gives the same inventory, audit and plan as `--root` on the
//! fixture's /proc and /sys; what a real node snapshot lacks is named; the node is chosen or
//! asked for; a must-gather without node data is refused naming the flag.

use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::support::{fixture, lowlat};

/// The gzipped tar of `machine`'s `dirs` (proc/, sys/), links kept as links, as ghw packs them;
/// `ghw_like` leaves out what ghw does not copy (/proc/sys and the processes).
fn sysinfo(machine: &Path, ghw_like: bool) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    builder.append_dir_all("sys", machine.join("sys")).unwrap();
    for entry in std::fs::read_dir(machine.join("proc")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let task = name.bytes().all(|b| b.is_ascii_digit());
        if ghw_like && (task || name == "sys") {
            continue;
        }
        let inside = format!("proc/{name}");
        if entry.file_type().unwrap().is_dir() {
            builder.append_dir_all(&inside, entry.path()).unwrap();
        } else {
            builder
                .append_path_with_name(entry.path(), &inside)
                .unwrap();
        }
    }
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

/// A must-gather as `oc adm must-gather --dest-dir` leaves it, with `nodes`, each a snapshot
/// of `machine`; returns it and its image directory.
pub(crate) fn must_gather(
    machine: &str,
    nodes: &[&str],
    ghw_like: bool,
) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join(
        "must-gather.local.5281/quay-io-openshift-kni-performance-addon-operator-must-gather-sha256-0f7a",
    );
    let snapshot = sysinfo(&fixture(machine), ghw_like);
    for node in nodes {
        std::fs::create_dir_all(image.join("nodes").join(node)).unwrap();
        std::fs::write(
            image.join("nodes").join(node).join("sysinfo.tgz"),
            &snapshot,
        )
        .unwrap();
        let yaml = image.join("cluster-scoped-resources/core/nodes");
        std::fs::create_dir_all(&yaml).unwrap();
        std::fs::write(
            yaml.join(format!("{node}.yaml")),
            format!(
                "apiVersion: v1\nkind: Node\nmetadata:\n  name: {node}\n  labels:\n    \
                 node-role.kubernetes.io/worker-cnf: \"\"\nstatus:\n  nodeInfo:\n    \
                 kernelVersion: 4.18.0-147.5.1.el8_1.x86_64\n    osImage: Red Hat Enterprise \
                 Linux CoreOS\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        image.join("version"),
        "performance-addon-operator/must-gather\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("must-gather.local.5281/timestamp"),
        "2026-11-27\n",
    )
    .unwrap();
    (tmp, image)
}

/// stdout of `lowlat FLAGS ARGS` without the lines that name the time or the tree, and stderr.
fn output(flags: &[&std::ffi::OsStr], args: &[&str]) -> (String, String, Option<i32>) {
    let out = lowlat(&[]).args(flags).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("\"created\"") && !l.contains("\"root\""))
        .collect::<Vec<_>>()
        .join("\n");
    (
        stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[test]
fn a_must_gather_node_reads_as_the_machine_it_was_taken_on() {
    let (tmp, image) = must_gather("epyc7f32-2s-tuned", &["worker-cnf-0"], false);
    // --root on the fixture's /proc and /sys alone: the node snapshot holds no /etc or /boot.
    let tree = tempfile::tempdir().unwrap();
    for dir in ["proc", "sys"] {
        crate::support::tree::copy_tree(
            &fixture("epyc7f32-2s-tuned").join(dir),
            &tree.path().join(dir),
        );
    }
    // What the must-gather reader marks as not captured: a ghw snapshot holds no /etc, so
    // what lives there (irqbalance's environment file) is unknown, not absent.
    std::fs::create_dir(tree.path().join("lowlat-answers")).unwrap();
    std::fs::write(tree.path().join("lowlat-answers/uncaptured"), "/etc\n").unwrap();
    for args in [
        &["audit", "--json"][..],
        &["audit"][..],
        &["inventory", "--json"][..],
        &["plan", "--json"][..],
    ] {
        let (root, _, root_code) = output(&["--root".as_ref(), tree.path().as_os_str()], args);
        // The directory oc wrote, and (once: each run unpacks the node) the image directory.
        let dirs = if args == ["audit", "--json"] {
            vec![tmp.path(), image.as_path()]
        } else {
            vec![tmp.path()]
        };
        for dir in dirs {
            let (mg, stderr, code) = output(&["--must-gather".as_ref(), dir.as_os_str()], args);
            assert!(!mg.is_empty(), "{args:?}: {stderr}");
            assert_eq!(mg, root, "{args:?} on {}", dir.display());
            assert_eq!(code, root_code, "{args:?}");
            assert!(
                stderr.contains("--must-gather: node worker-cnf-0"),
                "{stderr}"
            );
            assert!(!stderr.contains("lacks /proc/"), "{stderr}");
        }
    }
}

#[test]
fn a_ghw_snapshot_says_what_it_lacks_and_takes_the_kernel_from_the_node_object() {
    let (tmp, _) = must_gather("epyc7f32-2s-tuned", &["worker-cnf-0"], true);
    let (stdout, stderr, code) = output(
        &["--must-gather".as_ref(), tmp.path().as_os_str()],
        &["inventory"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    for said in [
        "--must-gather: the kernel release 4.18.0-147.5.1.el8_1.x86_64 is the Node object's status.nodeInfo.kernelVersion",
        "--must-gather: the node's snapshot lacks /proc/sys/kernel: sysctls (a ghw snapshot copies no /proc/sys)",
        "--must-gather: the node's snapshot lacks /proc/PID: processes and kernel threads",
        "--must-gather: the node's snapshot lacks /etc: the OS release",
    ] {
        assert!(stderr.contains(said), "{said}\n{stderr}");
    }
    assert!(stdout.contains("4.18.0-147.5.1.el8_1.x86_64"), "{stdout}");
    // The audit runs, the task rules unknown rather than passed.
    let (audit, stderr, code) = output(
        &["--must-gather".as_ref(), tmp.path().as_os_str()],
        &["audit"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(audit.contains("unknown  LL-TASKS-ON-ISOLATED"), "{audit}");
    // Without /etc and processes nothing tells whether irqbalance or a tuner runs: unknown,
    // with the reason, not "not installed".
    for rule in ["LL-IRQBALANCE", "LL-CONFLICTING-TUNERS"] {
        let line = audit
            .lines()
            .find(|l| l.contains(&format!(" {rule} ")))
            .unwrap_or_else(|| panic!("no {rule} in\n{audit}"));
        assert!(
            line.trim_start().starts_with("unknown")
                && line.contains(
                    "unknown: no process list, and systemd's unit files could not be read"
                ),
            "{line}"
        );
    }
}

#[test]
fn the_node_is_chosen_or_asked_for() {
    let (tmp, _) = must_gather("epyc7f32-2s", &["worker-1", "master-0"], true);
    lowlat(&["inventory"])
        .arg("--must-gather")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "2 nodes in this must-gather (master-0, worker-1); choose one with --must-gather-node NAME",
        ));
    lowlat(&["inventory", "--must-gather-node", "worker-1"])
        .arg("--must-gather")
        .arg(tmp.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("--must-gather: node worker-1"));
    lowlat(&["inventory", "--must-gather-node", "worker-7"])
        .arg("--must-gather")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no node 'worker-7' with a sysinfo.tgz (nodes: master-0, worker-1)",
        ));
    lowlat(&["inventory", "--must-gather-node", "worker-1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--must-gather <DIR>"));
}

#[test]
fn a_must_gather_without_node_data_is_refused() {
    // The cluster's resources without the node snapshots (the default must-gather image of an
    // older OpenShift), and a fixture machine.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(
        tmp.path()
            .join("quay-io-openshift-release-dev/cluster-scoped-resources/core/nodes"),
    )
    .unwrap();
    for dir in [tmp.path().to_path_buf(), fixture("epyc7f32-2s")] {
        lowlat(&["audit"])
            .arg("--must-gather")
            .arg(&dir)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains("--must-gather: "))
            .stderr(predicate::str::contains("no node data in this must-gather"));
    }
    lowlat(&["audit"])
        .arg("--must-gather")
        .arg(tmp.path())
        .arg("--sosreport")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}

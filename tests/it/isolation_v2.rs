//! Runtime isolation on a cgroup v2 tree (a copy of the 2-CPU KVM guest with the v2 cpuset
//! files a systemd machine has): the plan's partition and slice files are written by apply,
//! an isolated partition the kernel marks invalid is reported by verify (with the kernel's
//! reason) and refused by `lowlat run`, and revert puts every file back.

use crate::support::{fixture, lowlat, tree::copy_tree};

const CG: &str = "sys/fs/cgroup";

/// The guest with a v2 tree managed by systemd; `lowlat-isolated` exists already (in a
/// directory tree lowlat writes the files of existing cpusets only: the kernel makes a new
/// one's).
fn guest_v2() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("kvm-guest-2vcpu"), dir.path());
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("proc/1/comm", "systemd\n");
    write(
        &format!("{CG}/cgroup.controllers"),
        "cpuset cpu io memory pids\n",
    );
    write(
        &format!("{CG}/cgroup.subtree_control"),
        "cpuset cpu memory\n",
    );
    write(&format!("{CG}/cpuset.cpus.effective"), "0-1\n");
    for (group, partition) in [
        ("system.slice", "member"),
        ("user.slice", "member"),
        ("lowlat-isolated", "member"),
    ] {
        write(&format!("{CG}/{group}/cpuset.cpus"), "\n");
        write(&format!("{CG}/{group}/cpuset.cpus.effective"), "0-1\n");
        write(
            &format!("{CG}/{group}/cpuset.cpus.partition"),
            &format!("{partition}\n"),
        );
        write(&format!("{CG}/{group}/cgroup.threads"), "\n");
    }
    dir
}

fn read(dir: &tempfile::TempDir, path: &str) -> String {
    std::fs::read_to_string(dir.path().join(CG).join(path)).unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn partition_files_written_an_invalid_partition_reported_and_everything_reverted() {
    let dir = guest_v2();
    let root = dir.path().to_str().unwrap();
    let plan_dir = tempfile::tempdir().unwrap();
    let plan = plan_dir.path().join("plan.json");
    let out = lowlat(&[
        "--root",
        root,
        "plan",
        "--isolation",
        "runtime",
        "--isolate",
        "1",
        "--json",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::write(&plan, &out.stdout).unwrap();
    let plan = plan.to_str().unwrap();

    let applied = lowlat(&[
        "--root",
        root,
        "apply",
        "--runtime",
        "--yes",
        "--plan",
        plan,
    ])
    .output()
    .unwrap();
    let stdout = text(&applied.stdout);
    assert_eq!(read(&dir, "lowlat-isolated/cpuset.cpus"), "1\n", "{stdout}");
    assert_eq!(
        read(&dir, "lowlat-isolated/cpuset.cpus.partition"),
        "isolated\n",
        "{stdout}"
    );
    assert_eq!(read(&dir, "system.slice/cpuset.cpus"), "0\n", "{stdout}");
    assert_eq!(read(&dir, "user.slice/cpuset.cpus"), "0\n", "{stdout}");

    // The kernel could not honour the partition: verify says so, with the kernel's reason.
    std::fs::write(
        dir.path()
            .join(CG)
            .join("lowlat-isolated/cpuset.cpus.partition"),
        "isolated invalid (Cpu list in cpuset.cpus not exclusive)\n",
    )
    .unwrap();
    let verify = lowlat(&["--root", root, "verify", "--json", "--plan", plan])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(verify.status.code(), Some(1));
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "cpuset:/lowlat-isolated:partition")
        .unwrap();
    assert_eq!(check["status"], "drift", "{check:#}");
    assert_eq!(
        check["actual"],
        "isolated invalid (Cpu list in cpuset.cpus not exclusive)"
    );
    let run = lowlat(&["--root", root, "run", "--dry-run", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(
        text(&run.stderr).contains(
            "the isolated partition /lowlat-isolated is invalid: Cpu list in cpuset.cpus not exclusive"
        ),
        "{}",
        text(&run.stderr)
    );

    let reverted = lowlat(&["--root", root, "revert"]).output().unwrap();
    let out = text(&reverted.stdout);
    assert!(reverted.status.code().is_some_and(|c| c <= 1), "{out}");
    assert_eq!(read(&dir, "lowlat-isolated/cpuset.cpus"), "\n", "{out}");
    assert_eq!(
        read(&dir, "lowlat-isolated/cpuset.cpus.partition"),
        "member\n",
        "{out}"
    );
    assert_eq!(read(&dir, "system.slice/cpuset.cpus"), "\n", "{out}");
}

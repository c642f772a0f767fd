//! `lowlat plan` from the command line: output modes, the output directory, and one clear
//! error naming the flag (exit 2) for every kind of bad input.

use crate::support::fixture;
use assert_cmd::Command;
use predicates::prelude::*;

/// The plan guide, whose table of artifacts must name every file `plan --out` writes.
const PLAN_GUIDE: &str = include_str!("../../docs/guide/plan.md");

fn plan(machine: &str) -> Command {
    let mut cmd = crate::support::lowlat(&[]);
    cmd.arg("--root").arg(fixture(machine)).arg("plan");
    cmd
}

/// Runs `lowlat plan ARGS` on epyc7f32-2s and expects exit 2 with `needle` on stderr.
fn refused(args: &[&str], needle: &str) {
    plan("epyc7f32-2s")
        .args(args)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(needle));
}

#[test]
fn the_summary_shows_the_partition_in_every_form() {
    plan("epyc7f32-2s")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "housekeeping      0,8  (mask 0101)",
        ))
        .stdout(predicate::str::contains(
            "isolated          1-7,9-15  (mask fefe)",
        ))
        .stdout(predicate::str::contains("isolated_cores=1-7,9-15"))
        .stdout(predicate::str::contains("tuned.non_isolcpus=00000101"))
        .stdout(predicate::str::contains("nohz_full=1-7,9-15"));
}

#[test]
fn json_is_the_plan() {
    let out = plan("xeon-2s-smt").arg("--json").assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let plan = lowlat::plan::Plan::from_json(&text).unwrap();
    // nosmt is planned: the partition names the first threads only.
    assert_eq!(plan.partition.housekeeping.to_list(), "0,28");
}

#[test]
fn json_on_stdout_is_the_plan_json_written() {
    let without_created = |text: &str| -> String {
        text.lines()
            .filter(|line| !line.starts_with("  \"created\": "))
            .map(|line| format!("{line}\n"))
            .collect()
    };
    let out = plan("xeon-2s-smt").arg("--json").assert().success();
    let printed = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    plan("xeon-2s-smt")
        .arg("--out")
        .arg(dir.path())
        .arg("--force")
        .assert()
        .success();
    let written = std::fs::read_to_string(dir.path().join("plan.json")).unwrap();
    assert!(written.ends_with("}\n") && printed.ends_with("}\n"));
    assert!(written.contains("\n  \"created\": "), "{written}");
    assert_eq!(without_created(&printed), without_created(&written));
}

#[test]
fn diff_compares_with_the_machine() {
    plan("epyc7f32-2s-tuned")
        .arg("--diff")
        .assert()
        .success()
        .stdout(predicate::str::contains("already as planned"))
        // The guide already set the workqueue mask to 0,8.
        .stdout(
            predicate::str::is_match(
                r"= workqueue:cpumask +CPUs 0,8 \(mask 0101\)  ->  CPUs 0,8 \(mask 0101\)",
            )
            .unwrap(),
        )
        .stdout(predicate::str::is_match(r"(?m)^~ kthread:").unwrap());
}

#[test]
fn out_writes_every_artifact_and_refuses_a_non_empty_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("plan");
    plan("milan64-nps4-smt")
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("wrote 17 files"));
    for file in [
        "plan.json",
        "kernel-cmdline.txt",
        "grub/99-lowlat.cfg",
        "sysctl.d/99-lowlat.conf",
        "tuned/lowlat/tuned.conf",
        "tuned/cpu-partitioning-variables.conf",
        "systemd/lowlat-runtime.service",
        "systemd/lowlat-watch.service",
        "systemd/system.conf.d/50-lowlat.conf",
        "systemd/irqbalance.service.d/50-lowlat.conf",
        "irqbalance/irqbalance.env",
        "irq-plan.txt",
        "kthread-plan.txt",
        "kubernetes/kubelet-config.yaml",
        "openshift/performance-profile.yaml",
        "bootc/kargs.d/50-lowlat.toml",
        "rpm-ostree/kargs.sh",
    ] {
        assert!(out.join(file).is_file(), "{file} not written");
        // The plan guide's table of artifacts names each (it lacked lowlat-watch.service).
        let named = format!("`{file}`");
        assert!(
            PLAN_GUIDE
                .lines()
                .any(|line| line.starts_with("| `") && line.contains(&named)),
            "docs/guide/plan.md's table of artifacts does not name {file}"
        );
    }
    plan("milan64-nps4-smt")
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--out").and(predicate::str::contains("--force")));
    plan("milan64-nps4-smt")
        .arg("--out")
        .arg(&out)
        .arg("--force")
        .assert()
        .success();
}

#[test]
fn malformed_cpu_lists_name_the_flag() {
    refused(&["--isolate", "1-"], "--isolate");
    refused(&["--isolate", "3-1"], "runs backwards");
    refused(&["--housekeeping", "a"], "--housekeeping");
    refused(&["--housekeeping", "0,x"], "not a CPU number");
}

#[test]
fn cpus_outside_the_machine_are_refused() {
    refused(
        &["--isolate", "1-99"],
        "--isolate: CPU(s) 16-99 do not exist",
    );
    refused(
        &["--housekeeping", "0,64"],
        "--housekeeping: CPU(s) 64 do not exist",
    );
}

#[test]
fn contradictory_options_are_refused() {
    refused(
        &["--housekeeping", "0-3", "--isolate", "3-15"],
        "--housekeeping and --isolate: the housekeeping and isolated CPUs must split",
    );
    refused(
        &["--housekeeping", "0,8", "--housekeeping-cores", "2"],
        "cannot be used with",
    );
    refused(
        &["--isolate", "2-15", "--no-balance", "1"],
        "cannot be used with",
    );
    refused(&["--json", "--diff"], "cannot be used with");
    refused(&["--force"], "--out");
    refused(&["--isolate", "0-15"], "CPU 0 cannot be isolated");
    refused(&["--housekeeping-cores", "0"], "--housekeeping-cores");
    refused(&["--housekeeping-cores", "8"], "no CPU is left to isolate");
}

/// A core split between housekeeping and isolated CPUs needs the flag where SMT stays on
/// (the realtime-guest profile leaves SMT alone; siblings are N and N+56).
#[test]
fn split_cores_need_the_flag() {
    let keeps_smt = ["--profile", "realtime-guest", "--housekeeping", "0,28,84"];
    plan("xeon-2s-smt")
        .args(keeps_smt)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--allow-split-smt"));
    plan("xeon-2s-smt")
        .args(keeps_smt)
        .arg("--allow-split-smt")
        .assert()
        .success();
}

/// Where the plan turns SMT off, no core stays split: the partition it prints is taken back
/// as given, a named CPU that goes offline is left out with a note naming it, and a list of
/// such CPUs only is refused.
#[test]
fn a_plan_that_turns_smt_off_takes_its_own_partition_back() {
    let printed = plan("xeon-2s-smt").arg("--json").assert().success();
    let printed =
        lowlat::plan::Plan::from_json(&String::from_utf8_lossy(&printed.get_output().stdout))
            .unwrap();
    assert_eq!(printed.partition.isolated.to_list(), "1-27,29-55");
    plan("xeon-2s-smt")
        .args(["--isolate", "1-27,29-55"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "CPUs 0-111 (0-55 after the reboot: SMT off)",
        ))
        .stdout(predicate::str::contains("isolated          1-27,29-55 "))
        .stderr(predicate::str::is_empty());
    plan("xeon-2s-smt")
        .args(["--housekeeping", "0,28,84"])
        .assert()
        .success()
        .stdout(predicate::str::contains("housekeeping      0,28 "))
        .stderr(predicate::str::contains(
            "--housekeeping: CPU(s) 84 go offline at the next boot",
        ));
    // A list of second threads only leaves nothing: refused, naming the flag.
    plan("xeon-2s-smt")
        .args(["--isolate", "57-83"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--isolate: CPU(s) 57-83 go offline at the next boot, when the plan turns SMT off \
             (online then: 0-55)",
        ));
}

#[test]
fn hugepage_values_are_checked() {
    refused(&["--hugepages", "2M"], "--hugepages");
    refused(&["--hugepages", "2M:0"], "page count");
    refused(&["--hugepages", "1G:4096"], "GiB of memory");
}

/// A copy of the fixture `machine` with the files `edits` (path under the root, content)
/// replaced.
fn edited(machine: &str, edits: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::support::tree::copy_tree(&fixture(machine), dir.path());
    for (path, content) in edits {
        std::fs::write(dir.path().join(path), content).unwrap();
    }
    dir
}

fn plan_json(root: &std::path::Path) -> String {
    let out = crate::support::lowlat(&[])
        .arg("--root")
        .arg(root)
        .args(["plan", "--json"])
        .assert()
        .success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn cpu_lists_take_the_group_form_where_the_kernel_reads_it() {
    // milan64-nps4-smt runs 5.15: one housekeeping core in 16 gives one group per list.
    let json = plan_json(&fixture("milan64-nps4-smt"));
    assert!(json.contains("\"nohz_full=1-63:15/16\""), "{json}");
    assert!(json.contains("\"irqaffinity=0-48:1/16\""), "{json}");
    // Linux 4.8 predates the group form (4.9): the same machine gets ranges.
    let old = edited(
        "milan64-nps4-smt",
        &[("proc/sys/kernel/osrelease", "4.8.17-generic\n")],
    );
    let json = plan_json(old.path());
    assert!(
        json.contains("\"nohz_full=1-15,17-31,33-47,49-63\""),
        "{json}"
    );
    assert!(json.contains("\"irqaffinity=0,16,32,48\""), "{json}");
}

#[test]
fn a_command_line_longer_than_the_kernel_keeps_is_refused() {
    // 1,949 bytes already on the line leave too little room for the plan's arguments.
    let cmdline = format!(
        "BOOT_IMAGE=/vmlinuz-5.15.0-91-generic ro rd.long={}\n",
        "x".repeat(1900)
    );
    let root = edited("milan64-nps4-smt", &[("proc/cmdline", &cmdline)]);
    crate::support::lowlat(&[])
        .arg("--root")
        .arg(root.path())
        .args(["plan", "--json"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "x86 kernels keep at most 2047 (COMMAND_LINE_SIZE 2048",
        ))
        .stderr(predicate::str::contains("1949 kept from /proc/cmdline"))
        .stderr(predicate::str::contains("--housekeeping-cores"));
}

/// `plan --smt keep` on an SMT machine: no nosmt, and the sibling-aware partition (the first
/// core of each node with its sibling for housekeeping); `--smt off` adds nosmt where the
/// profile keeps SMT; without the flag the profile decides (low-latency turns it off).
#[test]
fn smt_keep_and_off() {
    let plan = |args: &[&str]| -> serde_json::Value {
        let root = crate::support::fixture("xeon-2s-smt");
        let mut all = vec!["--root", root.to_str().unwrap(), "plan", "--json"];
        all.extend_from_slice(args);
        let out = crate::support::lowlat(&all).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let has_nosmt = |doc: &serde_json::Value| {
        doc["settings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "cmdline:nosmt")
    };
    let keep = plan(&["--smt", "keep"]);
    assert!(!has_nosmt(&keep));
    assert_eq!(keep["partition"]["housekeeping"], "0,28,56,84");
    assert_eq!(keep["options"]["smt"], "keep");
    let default = plan(&[]);
    assert!(has_nosmt(&default));
    assert_eq!(default["partition"]["housekeeping"], "0,28");
    assert!(default["options"].get("smt").is_none());
    let off = plan(&["--profile", "realtime-guest", "--smt", "off"]);
    assert!(has_nosmt(&off));
    assert!(!has_nosmt(&plan(&["--profile", "realtime-guest"])));
}

#[test]
fn a_hybrid_cpu_isolates_one_core_type_and_a_plain_one_refuses_the_choice() {
    let tree = tempfile::tempdir().unwrap();
    crate::support::hybrid::write_i7_1370p(tree.path());
    let plan_on = |args: &[&str]| {
        let out = crate::support::lowlat(&["--root"])
            .arg(tree.path())
            .arg("plan")
            .args(args)
            .assert()
            .success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    let p = plan_on(&["--smt", "keep"]);
    assert!(p.contains("isolated          2-11  (mask 00ffc)"), "{p}");
    assert!(
        p.contains("core types        isolated on P-cores, housekeeping on P-cores and E-cores"),
        "{p}"
    );
    let e = plan_on(&["--smt", "keep", "--isolate-core-type", "e"]);
    assert!(e.contains("isolated          12-19  (mask ff000)"), "{e}");
    assert!(e.contains("housekeeping      0-11  (mask 00fff)"), "{e}");
    refused(
        &["--isolate-core-type", "e"],
        "--isolate-core-type: the CPUs of this machine are of one type",
    );
    refused(
        &["--isolate-core-type", "p", "--isolate", "2-7"],
        "cannot be used with",
    );
}

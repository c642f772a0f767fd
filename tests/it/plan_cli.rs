//! `lowlat plan` from the command line: output modes, the output directory, and one clear
//! error naming the flag (exit 2) for every kind of bad input.

use crate::support::fixture;
use assert_cmd::Command;
use predicates::prelude::*;

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
        .stdout(predicate::str::contains("wrote 13 files"));
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
    ] {
        assert!(out.join(file).is_file(), "{file} not written");
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

#[test]
fn split_cores_need_the_flag() {
    plan("xeon-2s-smt")
        .args(["--housekeeping", "0,28,84"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--allow-split-smt"));
    plan("xeon-2s-smt")
        .args(["--housekeeping", "0,28,84", "--allow-split-smt"])
        .assert()
        .success();
}

#[test]
fn hugepage_values_are_checked() {
    refused(&["--hugepages", "2M"], "--hugepages");
    refused(&["--hugepages", "2M:0"], "page count");
    refused(&["--hugepages", "1G:4096"], "GiB of memory");
}

//! The plan and audit defects of issue 18 (W-3, W-6, U-4, U-5, U-10 and the tuned audit's
//! wording), each pinned by a test that failed before its fix.

use crate::support::{fixture, id, lowlat};
use lowlat::machine::{CpuSet, Machine};
use lowlat::plan::request::PlanRequest;
use lowlat::plan::{self, Plan, findings};
use lowlat::sysroot::SysRoot;
use predicates::prelude::*;

fn on(machine: &str, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = lowlat(&[]);
    cmd.arg("--root").arg(fixture(machine)).args(args);
    cmd
}

/// U-10: `--no-balance 999` was clamped to the cores a node has; it is refused, naming the flag.
#[test]
fn no_balance_beyond_the_nodes_cores_is_refused_naming_the_flag() {
    on("epyc7f32-2s", &["plan", "--no-balance", "999"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("--no-balance 999"))
        .stderr(predicate::str::contains("ask for 7 or fewer"));
    on("epyc7f32-2s", &["plan", "--no-balance", "7"])
        .assert()
        .success();
}

/// U-10: `plan --profile throughput` says why there is no such plan instead of clap's list.
#[test]
fn plan_profile_throughput_says_why_there_is_no_plan() {
    on("epyc7f32-2s", &["plan", "--profile", "throughput"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--profile throughput"))
        .stderr(predicate::str::contains(
            "lowlat audit --profile throughput",
        ));
}

/// U-10: `--isolate` parses through the CLI's one CPU-list parser, whose message names the flag.
#[test]
fn plan_cpu_lists_are_parsed_by_the_shared_parser() {
    on("epyc7f32-2s", &["plan", "--isolate", "1-x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--isolate"));
}

/// U-5: the audit's fix and the plan name the same systemd drop-in.
#[test]
fn audit_fix_names_the_drop_in_the_plan_installs() {
    let dropin = lowlat::tuning::installed_files::SYSTEMD_AFFINITY_DROPIN;
    on("xeon-2s-smt", &["audit"])
        .assert()
        .stdout(predicate::str::contains(dropin))
        .stdout(predicate::str::contains("system.conf.d/lowlat.conf").not());
    on("xeon-2s-smt", &["plan", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("\"file:{dropin}")));
}

/// W-6 (wording): the tuned machine's audit named `nohz_full` twice without saying which is
/// the file and which the boot argument.
#[test]
fn audit_names_where_the_machines_own_partition_comes_from() {
    on("epyc7f32-2s-tuned", &["audit"])
        .assert()
        .stdout(predicate::str::contains(
            "from /sys/devices/system/cpu/nohz_full, nohz_full= in /proc/cmdline)",
        ));
}

/// The plan `lowlat plan` makes for a fixture with the default options.
fn default_plan(name: &str) -> Plan {
    let machine = Machine::read(&SysRoot::dir(fixture(name)));
    let request = PlanRequest::default();
    let profile = findings::audit_profile(request.profile).unwrap();
    plan::build(&machine, &request, |partition| {
        findings::profile_settings(&machine, &profile, partition)
    })
    .unwrap()
}

/// W-6: the captured machine ran lowlat from bash under PID 1 `process_api`; none of the three
/// is pinned by name, while long-running tasks still are.
#[test]
fn the_plan_pins_neither_lowlat_nor_its_shell_nor_pid_1() {
    let plan = default_plan("kvm-guest-2vcpu");
    for id in [
        "task:lowlat:affinity",
        "task:bash:affinity",
        "task:process_api:affinity",
    ] {
        assert!(plan.setting(&self::id(id)).is_none(), "{id} planned");
    }
}

/// W-6: where /proc/PID/cgroup shows which tasks a systemd service started, only those are
/// pinned by name: the captured guest's build commands (cargo, rustc, grep, head, timeout) ran
/// in a login session and are not.
#[test]
fn the_plan_pins_by_name_only_tasks_of_systemd_services() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    crate::support::tree::copy_tree(&fixture("kvm-guest-2vcpu"), &root);
    for entry in std::fs::read_dir(root.join("proc")).unwrap() {
        let path = entry.unwrap().path();
        let Ok(status) = std::fs::read_to_string(path.join("status")) else {
            continue;
        };
        if status
            .lines()
            .any(|l| l.starts_with("Kthread:") && l.ends_with('1'))
        {
            continue;
        }
        let pid = path.file_name().unwrap().to_str().unwrap();
        let cgroup = match pid {
            "1" => "/init.scope",
            "1001" => "/system.slice/sandbox-agent.service",
            _ => "/user.slice/user-0.slice/session-1.scope",
        };
        std::fs::write(path.join("cgroup"), format!("0::{cgroup}\n")).unwrap();
    }
    let machine = Machine::read(&SysRoot::dir(&root));
    let request = PlanRequest::default();
    let profile = findings::audit_profile(request.profile).unwrap();
    let plan = plan::build(&machine, &request, |partition| {
        findings::profile_settings(&machine, &profile, partition)
    })
    .unwrap();
    let pinned: Vec<String> = plan
        .settings
        .iter()
        .map(|s| s.id.to_string())
        .filter(|id| id.starts_with("task:"))
        .collect();
    assert_eq!(pinned, ["task:memfd:sealed-91:affinity"]);
    // Without the cgroup files, the build commands are pinned as before (nothing tells them
    // from daemons).
    assert!(
        default_plan("kvm-guest-2vcpu")
            .setting(&id("task:rustc:affinity"))
            .is_some()
    );
}

/// W-2/W-6: khugepaged is not pinned when the plan sets transparent hugepages to never (the
/// thread stops); the setting is listed as skipped with the reason.
#[test]
fn no_affinity_for_a_kernel_thread_the_plan_stops() {
    let plan = default_plan("epyc7f32-2s");
    assert_eq!(plan.setting(&id("thp:enabled")).unwrap().value, "never");
    assert!(plan.setting(&id("kthread:khugepaged:affinity")).is_none());
    let skipped = plan
        .skipped
        .iter()
        .find(|s| s.setting.id == id("kthread:khugepaged:affinity"))
        .expect("listed as skipped");
    assert!(
        skipped.reason.contains("khugepaged does not run"),
        "{}",
        skipped.reason
    );
}

/// W-3: the default plan turns SMT off on milan64-nps4-smt (siblings N and N+64); its
/// partition, boot arguments and IRQ lists name only the CPUs online after that reboot, and its
/// target accepts those CPUs, so the boot-time `apply --runtime` takes its own plan.
#[test]
fn a_plan_that_turns_smt_off_is_made_for_the_cpus_left_online() {
    let plan = default_plan("milan64-nps4-smt");
    assert_eq!(plan.setting(&id("cmdline:nosmt")).unwrap().value, "nosmt");
    let after: CpuSet = "0-63".parse().unwrap();
    assert_eq!(plan.target.cpus_after_reboot.as_ref(), Some(&after));
    assert!(plan.target.fits_online(&after));
    assert!(plan.target.fits_online(&"0-127".parse().unwrap()));
    assert_eq!(plan.partition.housekeeping.to_list(), "0,16,32,48");
    assert!(plan.partition.isolated.is_subset(&after));
    let irqaffinity = &plan.setting(&id("cmdline:irqaffinity")).unwrap().value;
    // The fixture's kernel (5.15) reads the group form: 0,16,32,48 is 0-48:1/16.
    assert_eq!(irqaffinity, "irqaffinity=0-48:1/16");
    for s in plan
        .settings
        .iter()
        .filter(|s| s.id.to_string().ends_with(":affinity"))
    {
        let cpus: CpuSet = s.value.parse().unwrap_or_default();
        assert!(cpus.is_subset(&after), "{} = {}", s.id, s.value);
    }
}

/// U-4: a mask is shown to people as its CPU list, labelled with the mask: the audit's fix
/// read `irq:default:affinity=1` (CPU 0) and the diff put `3 -> 1` beside CPU lists.
#[test]
fn masks_are_shown_as_cpu_lists_labelled_with_the_mask() {
    on("kvm-guest-2vcpu", &["audit", "--profile", "realtime-guest"])
        .assert()
        .stdout(predicate::str::contains(
            "fix: echo 1 > /proc/irq/default_smp_affinity  # CPUs 0 (mask 1)",
        ));
    on("epyc7f32-2s", &["plan", "--diff"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "CPUs 0-15 (mask ffff)  ->  CPUs 0,8 (mask 0101)",
        ));
}

/// Issue 10: library errors say what is wrong without naming a flag; the CLI adds the flag, so
/// users still see it.
#[test]
fn library_errors_leave_the_flag_to_the_cli() {
    let err = "fast"
        .parse::<lowlat::tuning::profile_name::ProfileName>()
        .unwrap_err()
        .to_string();
    assert!(!err.contains("--"), "{err}");
    // clap refuses an unknown profile naming the flag and listing the valid ones.
    on("epyc7f32-2s", &["audit", "--profile", "fast"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "invalid value 'fast' for '--profile <NAME|FILE>'",
        ))
        .stderr(predicate::str::contains(
            "low-latency, realtime-host, realtime-guest, throughput",
        ));
    on("epyc7f32-2s", &["audit", "--isolate", "1-99"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--isolate: CPU(s) 16-99 do not exist",
        ));
    on("epyc7f32-2s", &["plan", "--isolate", "8-15"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--isolate: NUMA node 1"));
    on("epyc7f32-2s", &["plan", "--hugepages", "1G:4096"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--hugepages 1G:4096: "));
}

/// U-9: an output path that is a file or a dangling link gave `File exists (os error 17)`;
/// `plan --out` and `snapshot --extract` now share one check that says what the path is and
/// what to do.
#[test]
fn output_paths_that_cannot_be_directories_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let link = dir.path().join("a-link");
    std::os::unix::fs::symlink("nowhere", &link).unwrap();
    let snapshot = dir.path().join("s.lowlat");
    let root = fixture("rt-guest-4vcpu");
    let root = root.to_str().unwrap();
    lowlat(&["--root", root, "snapshot", "-o", snapshot.to_str().unwrap()])
        .assert()
        .success();
    for out in [&file, &link] {
        let out = out.to_str().unwrap();
        let plan = lowlat(&["--root", root, "plan", "--out", out, "--force"]);
        let extract = lowlat(&[
            "--snapshot",
            snapshot.to_str().unwrap(),
            "snapshot",
            "--extract",
            out,
        ]);
        // `fleet plan` said "--out a-file/group-1: cannot examine: Not a directory (os error
        // 20); add --force", and made the link's target.
        let fleet = lowlat(&["fleet", "plan", snapshot.to_str().unwrap(), "--out", out]);
        for mut command in [plan, extract, fleet] {
            let expected = if out.ends_with("a-file") {
                "exists and is not a directory; choose a directory path"
            } else {
                "is a symbolic link to nowhere, which does not exist; remove the link"
            };
            command
                .assert()
                .code(2)
                .stderr(predicate::str::contains(expected))
                .stderr(predicate::str::contains("os error").not())
                .stderr(predicate::str::contains("--force").not());
        }
    }
    assert!(
        !dir.path().join("nowhere").exists(),
        "the link's target was made"
    );
}

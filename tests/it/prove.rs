//! `lowlat prove` as a command: a live trial of runtime isolation on CPU 1 with a busy task
//! sharing it (the machine restored exactly), and on a fixture root the refusals that need no
//! measurement: two proves at once, `--status` of a run.

use std::process::{Command, Stdio};

use crate::isolation_live::{differences, ready, runtime_plan, threads};
use crate::support::lowlat;

/// Issue 47's done-when: `prove` of the runtime plan isolating CPU 1, with a busy task pinned
/// to CPU 1 before it, `--revert --yes`: every step runs, compare calls the busy loop's worst
/// p99 better through the change, not confounded (the busy task time-shares CPU 1 with the loop before, not after; the timer
/// thread runs at SCHED_FIFO and preempts it either way), compare.json and report.html are written, and the machine's threads, cpusets and
/// journal are as before. The plan is `plan --isolation runtime --isolate 1`'s with
/// `vm.stat_interval` at 2 s (see `runtime_plan`: an hour applied for seconds stops vmstat
/// work for an hour).
#[test]
#[ignore = "changes the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_runtime_isolation_trial_is_better_and_leaves_the_machine_as_it_was() {
    let _turn = crate::support::cpu1_turn();
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = runtime_plan(dir.path());
    let mut busy = Command::new("taskset")
        .args(["-c", "1", "sh", "-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let before = threads();
    let out_dir = dir.path().join("prove");
    let out = lowlat(&[
        "prove",
        "--plan",
        &plan,
        "--revert",
        "--yes",
        "--duration",
        "4s",
        "--repeat",
        "4",
        "--out",
        out_dir.to_str().unwrap(),
        "--json",
    ])
    .output()
    .unwrap();
    let after = threads();
    let _ = busy.kill();
    let _ = busy.wait();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{stdout}\n{stderr}"
    );
    let state: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(state["kind"], "prove", "{stdout}");
    assert_eq!(state["done"], true, "{stdout}\n{stderr}");
    assert_eq!(state["step"], "reverted", "{stdout}");
    assert_eq!(state["machine"], "as-before", "{stdout}");
    let jitter_p99 = (state["verdict"].as_array().unwrap().iter())
        .find(|v| v["family"] == "busy-loop interruptions" && v["endpoint"] == "worst CPU's p99")
        .unwrap_or_else(|| panic!("{stdout}"));
    // Better through the change (issue 47 item 2): moving the other tasks away is the change,
    // so their share is how it worked, not a confounder.
    assert_eq!(
        jitter_p99["verdict"], "better (through the change)",
        "{stdout}\n{stderr}"
    );
    for file in ["compare.json", "report.html", "prove.json", "plan.json"] {
        assert!(out_dir.join(file).is_file(), "{file}\n{stderr}");
    }
    // Restored exactly: every thread in its cpuset with its affinity (the busy task
    // included), lowlat's cpusets and journal gone.
    let diff = differences(&before, &after);
    assert!(
        diff.is_empty(),
        "not put back:\n{}\n{stderr}",
        diff.join("\n")
    );
    assert!(!std::path::Path::new("/sys/fs/cgroup/cpuset/lowlat-isolated").exists());
    assert!(!std::path::Path::new("/var/lib/lowlat/journal.jsonl").exists());
    assert!(!std::path::Path::new("/run/lowlat-prove.lock").exists());
}

/// A prove state in `dir` (the JSON of kind `prove`), as a run stopped after its verify.
fn stopped_state(dir: &std::path::Path) {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prove/prove.json");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(docs, dir.join("prove.json")).unwrap();
}

#[test]
fn status_says_the_step_the_machine_and_what_to_do_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    stopped_state(dir.path());
    let before = std::fs::read(dir.path().join("prove.json")).unwrap();
    let out = lowlat(&["prove", "--status", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("step:     stopped after step applied"),
        "{said}"
    );
    assert!(said.contains("machine:  as planned"), "{said}");
    assert!(said.contains("next:     the plan stays applied"), "{said}");
    assert_eq!(
        std::fs::read(dir.path().join("prove.json")).unwrap(),
        before
    );
    // Not a prove directory: said with the file and what to give.
    let empty = tempfile::tempdir().unwrap();
    let out = lowlat(&["prove", "--status", empty.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("prove.json: cannot read it"));
}

#[test]
fn a_second_prove_at_once_is_refused_and_changes_nothing() {
    // A root as --root takes it (a proc/ directory); the lock is taken before anything is read.
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("proc")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    stopped_state(dir.path());
    // A prove holding the machine's lock: a shell holding flock on the lock file.
    let lock = tree.path().join("run/lowlat-prove.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(&lock, "4242\n").unwrap();
    let mut holder = Command::new("flock")
        .args([lock.to_str().unwrap(), "sleep", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before = std::fs::read(dir.path().join("prove.json")).unwrap();
    let out = lowlat(&[
        "--root",
        tree.path().to_str().unwrap(),
        "prove",
        "--resume",
        dir.path().to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("another lowlat prove is running") && stderr.contains("pid 4242"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("prove.json")).unwrap(),
        before
    );
}

/// The prove state's JSON on stdout of a finished `--json` trial, with its stderr for messages.
fn trial(extra: &[&str], out_dir: &std::path::Path, plan: &str) -> (serde_json::Value, String) {
    let mut args = vec![
        "prove",
        "--plan",
        plan,
        "--revert",
        "--yes",
        "--duration",
        "2s",
        "--repeat",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = lowlat(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{stdout}\n{stderr}"
    );
    let state: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}\n{stderr}"));
    assert_eq!(state["done"], true, "{stdout}\n{stderr}");
    assert_eq!(state["machine"], "as-before", "{stdout}");
    (state, stderr)
}

/// Issue 48, `prove --load ipi`: a runtime trial whose arms alternate idle and loaded rounds
/// runs end to end; the verdict names the loaded rounds' lines first and the idle ones after,
/// both comparisons are written, the ipi load pushed in both arms (its intensity above zero
/// before and after), and the machine is as before.
#[test]
#[ignore = "changes the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_loaded_trial_gives_a_loaded_and_an_idle_verdict() {
    let _turn = crate::support::cpu1_turn();
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = runtime_plan(dir.path());
    let before = threads();
    let out_dir = dir.path().join("prove");
    let (state, stderr) = trial(&["--load", "ipi"], &out_dir, &plan);
    let after = threads();
    let rounds: Vec<&str> = (state["verdict"].as_array().unwrap().iter())
        .map(|v| v["rounds"].as_str().unwrap_or_else(|| panic!("{state}")))
        .collect();
    let first_idle = rounds.iter().position(|r| *r == "idle").unwrap();
    assert!(first_idle > 0, "{rounds:?}");
    assert!(
        rounds[..first_idle]
            .iter()
            .all(|r| *r == "loaded (ipi, high)")
    );
    assert!(rounds[first_idle..].iter().all(|r| *r == "idle"));
    let ipi = (state["intensity"].as_array().unwrap().iter())
        .find(|i| i["kind"] == "ipi")
        .unwrap_or_else(|| panic!("{state}"));
    assert!(ipi["before"].as_f64().unwrap() > 0.0, "{ipi}");
    assert!(ipi["after"].as_f64().unwrap() > 0.0, "{ipi}");
    for file in ["compare.json", "compare-idle.json", "report.html"] {
        assert!(out_dir.join(file).is_file(), "{file}\n{stderr}");
    }
    let diff = differences(&before, &after);
    assert!(diff.is_empty(), "not put back:\n{}", diff.join("\n"));
    assert!(!std::path::Path::new("/var/lib/lowlat/journal.jsonl").exists());
}

/// Issue 49 item 3, `prove --net`: each arm also runs the loopback ping-pong on the measured
/// CPUs, and the verdict judges its round trips before against after.
#[test]
#[ignore = "changes the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_net_trial_judges_the_round_trips() {
    let _turn = crate::support::cpu1_turn();
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = runtime_plan(dir.path());
    let out_dir = dir.path().join("prove");
    let (state, stderr) = trial(&["--net"], &out_dir, &plan);
    let families: Vec<&str> = (state["verdict"].as_array().unwrap().iter())
        .map(|v| v["family"].as_str().unwrap())
        .collect();
    assert!(
        families.contains(&"network round trips"),
        "{families:?}\n{stderr}"
    );
    for arm in ["before", "after"] {
        assert!(
            out_dir.join(arm).join("measure-net-2.json").is_file(),
            "{arm}: {stderr}"
        );
    }
}

/// `--load` beside every CPU this process may run on: refused with check's error before
/// anything is measured or changed (nothing written to --out).
#[test]
#[ignore = "reads the live machine's plan; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_load_with_no_housekeeping_cpu_left_is_refused_as_check_refuses_it() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("prove");
    let out = Command::new("taskset")
        .args(["-c", "1", env!("CARGO_BIN_EXE_lowlat")])
        .args([
            "prove",
            "--isolation",
            "runtime",
            "--isolate",
            "1",
            "--load",
            "ipi",
        ])
        .args(["--yes", "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--load ipi: no housekeeping CPU is left for the load"),
        "{stderr}"
    );
    assert!(!out_dir.exists());
}

/// An unknown load kind: the same error as check's, and nothing runs.
#[test]
fn an_unknown_load_kind_is_refused_as_check_refuses_it() {
    let said = |command: &str| {
        let out = lowlat(&[command, "--load", "disk"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr.lines().next().unwrap().to_string()
    };
    let (check, prove) = (said("check"), said("prove"));
    assert!(check.contains("unknown load \"disk\""), "{check}");
    assert_eq!(prove, check);
}

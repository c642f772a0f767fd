//! Runtime isolation on the live machine (cgroup v1 cpuset, as on the development VM), as
//! root: `plan --isolation runtime --isolate 1`, apply, then every movable thread is off CPU
//! 1, a process started afterwards may run on CPU 0 only, `lowlat run` puts a command on CPU
//! 1 and exits with its code, verify finds the cpusets as planned; revert puts every thread
//! that still exists back in its cpuset with its affinity (a snapshot of each thread's
//! `Cpus_allowed_list` and cpuset before and after). Then apply and revert are killed with
//! SIGKILL at random points, and a revert after each kill must still restore exactly.
//! `#[ignore]`d (LOWLAT_LIVE_TESTS=1, CI as root); whatever happens, each test ends with a
//! revert.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::apply_live::RevertOnDrop;
use crate::support::{is_root, live_tests_allowed, lowlat, missing_data};

const JOURNAL: &str = "/var/lib/lowlat/journal.jsonl";
const CPUSET: &str = "/sys/fs/cgroup/cpuset";

/// Each thread's (comm, Cpus_allowed_list, cpuset), by thread id.
pub(crate) type Threads = BTreeMap<u32, (String, String, String)>;

fn field(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim().to_string())
}

/// Every thread of every process, with its command name, affinity and cpuset.
pub(crate) fn threads() -> Threads {
    let mut out = Threads::new();
    for pid in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = pid.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(tids) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for tid in tids.flatten() {
            let dir = tid.path();
            let Ok(tid) = tid.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            let (status, cgroup) = (read("status"), read("cgroup"));
            let (Some(affinity), Some(cpuset)) = (
                field(&status, "Cpus_allowed_list:"),
                cgroup.lines().find_map(|l| {
                    let (_, rest) = l.split_once(':')?;
                    let (controllers, path) = rest.split_once(':')?;
                    controllers
                        .split(',')
                        .any(|c| c == "cpuset")
                        .then(|| path.to_string())
                }),
            ) else {
                continue;
            };
            out.insert(tid, (read("comm").trim().to_string(), affinity, cpuset));
        }
    }
    out
}

/// The threads alive in both snapshots (same id and name) whose affinity or cpuset differ.
/// Threads named `lowlat` are left out: the snapshots hold only the test's own lowlat
/// processes that have exited, so one alive in both is another lowlat run on the same
/// machine (CI runs other live tests; the development VM is shared), and `measure` pins its
/// own threads while it runs.
pub(crate) fn differences(before: &Threads, after: &Threads) -> Vec<String> {
    before
        .iter()
        .filter_map(|(tid, was)| {
            let now = after.get(tid)?;
            (now.0 == was.0 && was.0 != "lowlat" && (now.1 != was.1 || now.2 != was.2)).then(|| {
                format!(
                    "{tid} {}: {:?} -> {:?}",
                    was.0,
                    (&was.1, &was.2),
                    (&now.1, &now.2)
                )
            })
        })
        .collect()
}

/// Whether this machine can run the test: live tests allowed, root, a v1 cpuset hierarchy with
/// two CPUs or more, and no journal of a real apply.
pub(crate) fn ready() -> bool {
    if !live_tests_allowed() || !is_root("changing cpusets") {
        return false;
    }
    if !std::path::Path::new(&format!("{CPUSET}/cpuset.cpus")).exists() {
        missing_data("a cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset");
        return false;
    }
    if std::path::Path::new(JOURNAL).exists() {
        missing_data(&format!(
            "a machine without {JOURNAL} (a real apply is in place)"
        ));
        return false;
    }
    true
}

/// The runtime plan isolating CPU 1, written to a file in `dir`, with `vm.stat_interval` at
/// 2 s rather than the plan's 3600: the kernel re-arms its vmstat work with the interval in
/// force when it runs, so an hour applied for a few seconds stops vmstat_update for an hour
/// after the revert, and the vmstat known answer (explain_live.rs) could not be planted.
pub(crate) fn runtime_plan(dir: &std::path::Path) -> String {
    let out = lowlat(&["plan", "--isolation", "runtime", "--isolate", "1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut shortened = 0;
    shorten_stat_interval(&mut plan, &mut shortened);
    assert!(shortened > 0, "the runtime plan sets no vm.stat_interval");
    let path = dir.join("plan.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// Sets every `sysctl:vm.stat_interval` setting of `value` to 2 s, counting them.
fn shorten_stat_interval(value: &mut serde_json::Value, shortened: &mut usize) {
    match value {
        serde_json::Value::Object(map) => {
            if map.get("id").and_then(|i| i.as_str()) == Some("sysctl:vm.stat_interval") {
                map.insert("value".into(), "2".into());
                *shortened += 1;
            }
            map.values_mut()
                .for_each(|v| shorten_stat_interval(v, shortened));
        }
        serde_json::Value::Array(items) => items
            .iter_mut()
            .for_each(|v| shorten_stat_interval(v, shortened)),
        _ => {}
    }
}

/// The ids of the plan's `cpuset:` settings, wherever they sit in its JSON.
fn cpuset_ids(value: &serde_json::Value, ids: &mut std::collections::BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(id) = map.get("id").and_then(|i| i.as_str())
                && id.starts_with("cpuset:")
            {
                ids.insert(id.to_string());
            }
            map.values().for_each(|v| cpuset_ids(v, ids));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| cpuset_ids(v, ids)),
        _ => {}
    }
}

fn apply(plan: &str) -> std::process::Output {
    lowlat(&["apply", "--runtime", "--yes", "--plan", plan])
        .output()
        .unwrap()
}

fn revert() -> std::process::Output {
    let out = lowlat(&["revert"]).output().unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "revert: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
#[ignore = "changes the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn runtime_isolation_applies_verifies_runs_and_reverts_exactly() {
    let _turn = crate::support::cpu1_turn();
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = runtime_plan(dir.path());
    let before = threads();
    let _guard = RevertOnDrop;
    let applied = apply(&plan);
    let stdout = String::from_utf8_lossy(&applied.stdout).into_owned();
    assert!(applied.status.code().is_some_and(|c| c <= 1), "{stdout}");

    // Every thread that left the root cpuset is off CPU 1; those left in it are kernel threads.
    let during = threads();
    for (tid, (comm, affinity, cpuset)) in &during {
        match cpuset.as_str() {
            "/lowlat-isolated" => {}
            "/" => {
                let kernel = std::fs::read_to_string(format!("/proc/{tid}/status"))
                    .is_ok_and(|s| field(&s, "Kthread:").as_deref() == Some("1"));
                let gone = !std::path::Path::new(&format!("/proc/{tid}")).exists();
                assert!(
                    kernel || gone,
                    "{tid} {comm} stayed in the root cpuset\n{stdout}"
                );
            }
            _ => assert_eq!(affinity, "0", "{tid} {comm} in {cpuset}\n{stdout}"),
        }
    }
    // A process started now is born in the housekeeping cpuset.
    let later = Command::new("sh")
        .args([
            "-c",
            "grep Cpus_allowed_list /proc/self/status; grep :cpuset: /proc/self/cgroup",
        ])
        .output()
        .unwrap();
    let later = String::from_utf8_lossy(&later.stdout).into_owned();
    assert!(later.contains("Cpus_allowed_list:\t0\n"), "{later}");
    assert!(later.contains(":cpuset:/lowlat-housekeeping"), "{later}");
    // lowlat run puts a command on the isolated CPU, and exits with its code.
    let run = lowlat(&[
        "run",
        "--",
        "sh",
        "-c",
        "grep Cpus_allowed_list /proc/self/status; grep :cpuset: /proc/self/cgroup; exit 3",
    ])
    .output()
    .unwrap();
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    assert_eq!(run.status.code(), Some(3), "{out}");
    assert!(
        out.contains("Cpus_allowed_list:\t1\n") && out.contains(":cpuset:/lowlat-isolated"),
        "{out}"
    );
    assert!(
        String::from_utf8_lossy(&run.stderr)
            .contains("in cpuset /lowlat-isolated (cgroup v1), on CPUs 1"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // verify: every cpuset setting as planned.
    let verify = lowlat(&["verify", "--json", "--plan", &plan])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    let cpusets: Vec<&serde_json::Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"].as_str().unwrap().starts_with("cpuset:"))
        .collect();
    // As many as the plan has: lowlat's two cpusets and the root, plus one line for each
    // other cpuset there is on this machine (podman's libpod_parent after a container ran).
    let planned: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let mut planned_ids = std::collections::BTreeSet::new();
    cpuset_ids(&planned, &mut planned_ids);
    let verified: std::collections::BTreeSet<String> = cpusets
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(verified, planned_ids, "{report:#}");
    assert!(verified.len() >= 6, "{report:#}");
    for check in cpusets {
        assert_eq!(check["status"], "ok", "{check:#}");
    }

    let reverted = revert();
    let after = threads();
    let diff = differences(&before, &after);
    assert!(
        diff.is_empty(),
        "threads not put back:\n{}\n{}",
        diff.join("\n"),
        String::from_utf8_lossy(&reverted.stdout)
    );
    assert!(!std::path::Path::new(&format!("{CPUSET}/lowlat-isolated")).exists());
    assert!(!std::path::Path::new(&format!("{CPUSET}/lowlat-housekeeping")).exists());
}

/// Pseudo-random numbers from a seed (printed, so that a failure can be replayed).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Starts `lowlat args`, kills it with SIGKILL after `after`, and waits for it.
fn kill_after(args: &[&str], after: Duration) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("lowlat"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
#[ignore = "changes the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn apply_and_revert_killed_at_random_points_revert_exactly() {
    let _turn = crate::support::cpu1_turn();
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = runtime_plan(dir.path());
    let _guard = RevertOnDrop;
    // How long a whole apply and a whole revert take here.
    let start = Instant::now();
    let before = threads();
    apply(&plan);
    let apply_time = start.elapsed();
    let start = Instant::now();
    revert();
    let revert_time = start.elapsed();
    assert!(differences(&before, &threads()).is_empty());
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("seed {seed}; apply takes {apply_time:?}, revert {revert_time:?}");
    let mut random = Lcg(seed);
    for round in 0..4 {
        let before = threads();
        let at = Duration::from_micros(random.below(apply_time.as_micros() as u64));
        kill_after(&["apply", "--runtime", "--yes", "--plan", &plan], at);
        revert();
        let diff = differences(&before, &threads());
        assert!(
            diff.is_empty(),
            "round {round}: apply killed after {at:?}:\n{}",
            diff.join("\n")
        );

        let before = threads();
        apply(&plan);
        let at = Duration::from_micros(random.below(revert_time.as_micros() as u64));
        kill_after(&["revert"], at);
        revert();
        let diff = differences(&before, &threads());
        assert!(
            diff.is_empty(),
            "round {round}: revert killed after {at:?}:\n{}",
            diff.join("\n")
        );
        assert!(
            !std::path::Path::new(JOURNAL).exists(),
            "round {round}: journal left"
        );
    }
}

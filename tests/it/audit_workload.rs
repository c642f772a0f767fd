//! `lowlat audit --pid`: the placement of a live process's threads. `#[ignore]`d: it runs
//! only with `LOWLAT_LIVE_TESTS=1` and `--include-ignored` (CI does both); it changes nothing
//! but the affinity of a thread of its own, and needs two CPUs.

use crate::support::{live_tests_allowed, lowlat, missing_data};
use std::sync::mpsc;

#[test]
#[ignore = "reads the live machine's threads; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_thread_allowed_on_both_sides_is_flagged_and_a_pinned_one_is_not() {
    if !live_tests_allowed() {
        return;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" || online.trim().is_empty() {
        missing_data("a second online CPU");
        return;
    }
    // Thread `pinned` runs on CPU 1 only; thread `both` (named with a control character) may
    // run on every CPU. Each sends its thread id and waits.
    let (ids, ids_in) = mpsc::channel();
    let (stop_out, stop) = mpsc::channel::<()>();
    let stop = std::sync::Arc::new(std::sync::Mutex::new(stop));
    let mut handles = Vec::new();
    for (name, pin) in [("pinned", true), ("both\x1b[31m", false)] {
        let ids = ids.clone();
        let stop = stop.clone();
        handles.push(
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || {
                    if pin {
                        let mut set = rustix::thread::CpuSet::new();
                        set.set(1);
                        rustix::thread::sched_setaffinity(None, &set).unwrap();
                    }
                    ids.send((pin, rustix::thread::gettid().as_raw_nonzero().get()))
                        .unwrap();
                    let _ = stop.lock().unwrap().recv();
                })
                .unwrap(),
        );
    }
    let mut pinned = 0;
    let mut both = 0;
    for _ in 0..2 {
        let (pin, tid) = ids_in.recv().unwrap();
        if pin { pinned = tid } else { both = tid }
    }
    let pid = std::process::id().to_string();
    let output = lowlat(&["audit", "--isolate", "1", "--pid", &pid, "--json"])
        .output()
        .unwrap();
    let text_output = lowlat(&["audit", "--isolate", "1", "--pid", &pid])
        .output()
        .unwrap();
    drop(stop_out);
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["kind"], "audit-workload");
    let kinds = |tid: i32| -> Vec<String> {
        let thread = doc["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tid"] == tid)
            .unwrap_or_else(|| panic!("thread {tid} not audited"));
        thread["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        kinds(both).contains(&"both-sides".to_string()),
        "{:?}",
        kinds(both)
    );
    assert!(
        !kinds(pinned).contains(&"both-sides".to_string()),
        "{:?}",
        kinds(pinned)
    );
    // The control character of the thread name is escaped in the report.
    let text = String::from_utf8_lossy(&text_output.stdout);
    assert!(!text.contains('\x1b'), "{text}");
    assert!(text.contains(&format!("taskset -p -c 1 {both}")), "{text}");
}

/// As an unprivileged user (nobody, no capabilities, `ulimit -r 0`, `ulimit -l 64`), `measure
/// timer --priority 95` says SCHED_FIFO is refused because of RLIMIT_RTPRIO, memory could not be
/// locked because of RLIMIT_MEMLOCK without CAP_IPC_LOCK, and /dev/cpu_dma_latency could not be
/// held because of its mode (where the device is root's alone, as udev leaves it). Run by CI as
/// root, which can drop to nobody with setpriv.
#[test]
#[ignore = "runs lowlat as another user; runs with LOWLAT_LIVE_TESTS=1 (CI sets it, as root)"]
fn an_unprivileged_timer_names_rlimit_rtprio() {
    if !live_tests_allowed() {
        return;
    }
    if !rustix::process::geteuid().is_root() {
        missing_data("root, to run lowlat as nobody");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("lowlat");
    // nobody must be able to reach the binary: copied where anyone may run it.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("lowlat");
    std::fs::copy(&bin, &copy).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = format!(
        "ulimit -r 0 && ulimit -l 64 && exec setpriv --reuid=65534 --regid=65534 --clear-groups \
         --inh-caps=-all {} measure timer --priority 95 --cpus 0 --interval 1000 --duration 100ms",
        copy.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .expect("sh and setpriv (util-linux) run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SCHED_FIFO 95 is not permitted") && stderr.contains("RLIMIT_RTPRIO is 0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("memory could not be locked (mlockall) (RLIMIT_MEMLOCK is 64 KiB")
            && stderr.contains("lacks CAP_IPC_LOCK"),
        "{stderr}"
    );
    let device = std::fs::metadata("/dev/cpu_dma_latency").map(|m| m.permissions().mode());
    if let Ok(mode) = device
        && mode & 0o002 == 0
    {
        assert!(
            stderr.contains(&format!(
                "/dev/cpu_dma_latency is mode {:04o}, owner uid 0",
                mode & 0o7777
            )) && stderr.contains("the process (uid 65534) may not write it"),
            "{stderr}"
        );
    }
}

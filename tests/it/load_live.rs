//! Issue 48 on the live machine: `check --load` runs its loads on the housekeeping CPUs only
//! (CPU 0 of this 2-vCPU VM; CPU 1 is measured), every kind achieves something in every loaded
//! round, and the `ipi` load reaches the measured CPU, its timer's p99 judged by compare's
//! method (idle rounds as A, loaded rounds as B).
//!
//! `#[ignore]`d: run with `LOWLAT_LIVE_TESTS=1` and `--include-ignored` (CI does), as root,
//! under the one CPU-1 turn ([`crate::support::cpu1_turn`]; across processes, run it under
//! `flock /tmp/lowlat-cpu1.lock`). About 50 s in all.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Why the tests of this file need root.
const ROOT: &str = "measuring at SCHED_FIFO beside loads";

/// A load thread seen while the check ran: its name, the CPU it was on, the CPUs it may use.
#[derive(Debug, PartialEq)]
struct Seen {
    name: String,
    cpu: u32,
    allowed: String,
}

/// `lowlat check --cpus 1 ARGS --json`, its `ll-load-*` threads read from
/// /proc/PID/task/*/stat every 10 ms while it runs; the document and the threads seen.
fn check_watching_loads(args: &[&str]) -> (Value, Vec<Seen>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lowlat"))
        .args(["check", "--cpus", "1", "--no-explain", "--json"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tasks = format!("/proc/{}/task", child.id());
    let mut seen: Vec<Seen> = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for task in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            // `pid (comm) state ...`: the processor is field 39, the 37th after the comm.
            let (Some((_, rest)), Some((head, _))) = (stat.rsplit_once(") "), stat.split_once(')'))
            else {
                continue;
            };
            let name = head.split_once('(').map_or("", |(_, n)| n).to_string();
            if !name.starts_with("ll-load-") {
                continue;
            }
            let Some(cpu) = rest.split_whitespace().nth(36).and_then(|c| c.parse().ok()) else {
                continue;
            };
            let allowed = (status.lines())
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap_or("")
                .trim()
                .to_string();
            let thread = Seen { name, cpu, allowed };
            if !seen.contains(&thread) {
                seen.push(thread);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    // 0 PASS, 1 FAIL (this VM's audit fails), 3 NOT PROVEN: never 2 (could not check).
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    (doc, seen)
}

#[test]
#[ignore = "measures the live machine for seconds; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn every_load_runs_off_the_measured_cpu_and_says_what_it_achieved() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let (doc, seen) = check_watching_loads(&["--load", "all", "--duration", "4s", "--repeat", "2"]);
    let load = &doc["load"];
    assert_eq!(load["cpus"], "0", "{load:#}");
    assert_eq!(load["skipped"], serde_json::json!([]), "{load:#}");
    let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
    for kind in ["cpu", "mem", "cache", "io", "net", "ipi"] {
        assert!(
            names.contains(&&*format!("ll-load-{kind}")),
            "{kind}: {names:?}"
        );
    }
    for thread in &seen {
        assert_ne!(
            thread.cpu, 1,
            "a load thread ran on the measured CPU: {thread:?}"
        );
        assert_eq!(
            thread.allowed, "0",
            "a load thread may run elsewhere: {thread:?}"
        );
    }
    let rounds = load["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 4, "{load:#}");
    for (i, round) in rounds.iter().enumerate() {
        // Idle rounds first, then loaded, in turn.
        assert_eq!(round["loaded"], i % 2 == 1, "{round:#}");
        assert_eq!(round["as_asked"], true, "{round:#}");
        let kinds = round["kinds"].as_array().unwrap();
        assert_eq!(kinds.len(), 6, "{round:#}");
        if i % 2 == 1 {
            for kind in kinds {
                assert!(kind["rate"].as_f64().unwrap() > 0.0, "{kind:#}");
            }
        }
    }
    assert_eq!(load["loaded_as_asked"], true);
    // Nothing of the load outlives the check: no thread (the process is gone) and no
    // scratch file (unnamed, O_TMPFILE) in /var/tmp.
    let named_lowlat = std::fs::read_dir("/var/tmp")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("ll-load"))
        .count();
    assert_eq!(named_lowlat, 0);
}

#[test]
#[ignore = "measures the live machine for seconds; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn the_ipi_load_reaches_the_measured_cpu_and_compare_judges_its_timer() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let (doc, _) = check_watching_loads(&["--load", "ipi", "--duration", "10s", "--repeat", "5"]);
    let load = &doc["load"];
    let rounds = load["rounds"].as_array().unwrap();
    let received = |r: &Value| r["ipis_received_per_s"].as_f64().unwrap();
    for pair in rounds.chunks(2) {
        // Each loaded round's IPIs on CPU 1 are several times its idle round's.
        assert!(
            received(&pair[1]) > 4.0 * received(&pair[0]) + 100.0,
            "{pair:#?}"
        );
    }
    let p99 = (load["effects"].as_array().unwrap().iter())
        .find(|e| {
            e["measurement"] == "timer wake-up latencies" && e["endpoint"] == "worst CPU's p99"
        })
        .unwrap_or_else(|| panic!("no timer p99 judged: {load:#}"));
    // compare judged the timer's p99, idle rounds against loaded. Its direction is not
    // asserted: shared with other builds, two runs gave ×1.53 and below ×1 (the other tasks on
    // CPU 1 move the p99 more than the IPIs do); quiet, ×0.63: this guest's idle vCPU halts
    // into the host (no cpuidle driver), and a load that keeps it busy shortens the wake-up.
    assert!(p99["ratio"].as_f64().unwrap() > 0.0, "{load:#}");
    eprintln!(
        "timer p99 under ipi: ×{:.2}, compare says {}",
        p99["ratio"], p99["verdict"]
    );
}

/// The namespace and veth pair of [`net_through_an_interface_moves_its_counters`]: its end
/// `PEER_END` in a namespace of its own with the echo, removed (with the pair) on drop.
struct PeerNamespace {
    echo: Option<std::process::Child>,
}

/// The veth end in the machine's namespace that the load sends through.
const LOAD_END: &str = "llloadif0";
/// Its peer, in [`NAMESPACE`], where the echo listens.
const PEER_END: &str = "llloadif1";
const NAMESPACE: &str = "lowlat-loadif";
const PEER: &str = "169.254.48.2:11111";

impl Drop for PeerNamespace {
    fn drop(&mut self) {
        if let Some(echo) = &mut self.echo {
            let _ = echo.kill();
            let _ = echo.wait();
        }
        // Deleting the namespace deletes the pair; the end here goes with it.
        let _ = Command::new("ip")
            .args(["netns", "del", NAMESPACE])
            .status();
        let _ = Command::new("ip").args(["link", "del", LOAD_END]).status();
    }
}

fn ip(args: &[&str]) {
    let status = Command::new("ip").args(args).status().unwrap();
    assert!(status.success(), "ip {}", args.join(" "));
}

/// An interface's counter (/sys/class/net/IF/statistics/NAME).
fn counter(interface: &str, name: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/class/net/{interface}/statistics/{name}"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Issue 48, `--load-if IF --load-peer ADDR:PORT`: the net load sends through the named
/// interface (a veth end here, its peer in a namespace the test makes, where `lowlat measure
/// net --serve` answers), the round says packets/s above zero and names the interface and
/// peer, and the interface's own counters moved by at least the packets counted.
#[test]
#[ignore = "adds a namespace and a veth pair, measures for seconds; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn net_through_an_interface_moves_its_counters() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let mut peer = PeerNamespace { echo: None };
    ip(&["netns", "add", NAMESPACE]);
    ip(&[
        "link", "add", LOAD_END, "type", "veth", "peer", "name", PEER_END, "netns", NAMESPACE,
    ]);
    ip(&["addr", "add", "169.254.48.1/30", "dev", LOAD_END]);
    ip(&["link", "set", LOAD_END, "up"]);
    let inside = ["netns", "exec", NAMESPACE, "ip"];
    ip(&[
        &inside[..],
        &["addr", "add", "169.254.48.2/30", "dev", PEER_END],
    ]
    .concat());
    ip(&[&inside[..], &["link", "set", PEER_END, "up"]].concat());
    peer.echo = Some(
        Command::new("ip")
            .args(["netns", "exec", NAMESPACE])
            .arg(env!("CARGO_BIN_EXE_lowlat"))
            .args(["measure", "net", "--serve", PEER, "--cpus", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(500));
    let before = (
        counter(LOAD_END, "tx_packets"),
        counter(LOAD_END, "rx_packets"),
    );
    let (doc, seen) = check_watching_loads(&[
        "--load",
        "net",
        "--load-if",
        LOAD_END,
        "--load-peer",
        PEER,
        "--duration",
        "2s",
    ]);
    let after = (
        counter(LOAD_END, "tx_packets"),
        counter(LOAD_END, "rx_packets"),
    );
    let load = &doc["load"];
    assert_eq!(load["skipped"], serde_json::json!([]), "{load:#}");
    assert!(seen.iter().all(|t| t.cpu != 1), "{seen:?}");
    let loaded = &load["rounds"][1];
    assert_eq!(loaded["loaded"], true, "{load:#}");
    assert_eq!(loaded["as_asked"], true, "{load:#}");
    let net = &loaded["kinds"][0];
    assert_eq!(net["over"], format!("{LOAD_END} to {PEER}"), "{net:#}");
    let rate = net["rate"].as_f64().unwrap();
    assert!(rate > 0.0, "{net:#}");
    let (sent, received) = (after.0 - before.0, after.1 - before.1);
    // The answers came back through the interface too: the echo in the namespace answered.
    assert!(
        sent > 1_000 && received > 1_000,
        "tx +{sent}, rx +{received}"
    );
    eprintln!("net through {LOAD_END}: {rate:.0} packets/s; {LOAD_END} tx +{sent}, rx +{received}");
}

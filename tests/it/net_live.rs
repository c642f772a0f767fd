//! `lowlat measure net` live: ping-pongs on loopback (UDP and TCP), on a veth pair between two
//! network namespaces lowlat makes and removes (as root; and refused with what it needs as
//! nobody), against `sockperf sr` (Debian's sockperf), and `sockperf pp` against
//! `--serve`. `#[ignore]`d: they run only with `LOWLAT_LIVE_TESTS=1` (CI sets it, as root, with
//! sockperf installed).

use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{is_root, live_tests_allowed, lowlat, missing_data};

/// The result of `lowlat measure net ARGS --json`, which must succeed.
fn measured(args: &[&str]) -> serde_json::Value {
    let out = lowlat(&["measure", "net", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "measure-net");
    doc["result"].clone()
}

/// Checks a result of `count` round trips that all came back.
fn all_answered(result: &serde_json::Value, count: u64) {
    assert_eq!(result["round_trips"], count, "{result}");
    assert_eq!(result["timeouts"], 0, "{result}");
    assert_eq!(result["ended"], "count", "{result}");
    let rtt = &result["rtt"];
    let p50 = rtt["p50_ns"].as_u64().unwrap();
    assert!(p50 > 100 && p50 < 100_000_000, "{rtt}");
    assert!(rtt["p999_ns"].as_u64().unwrap() >= p50, "{rtt}");
    assert_eq!(
        result["one_way_estimate"]["p50_ns"].as_u64().unwrap(),
        p50 / 2
    );
    assert!(result["messages_per_s"].as_f64().unwrap() > 0.0);
}

/// Two CPUs for the client and the echo (one where the machine has one).
fn two_cpus() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus > 1 { "0,1".into() } else { "0".into() }
}

#[test]
#[ignore = "measures the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn loopback_ping_pongs_over_udp_and_tcp() {
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() {
        return;
    }
    for proto in ["udp", "tcp"] {
        let result = measured(&[
            "--cpus",
            &two_cpus(),
            "--proto",
            proto,
            "--count",
            "2000",
            "--timestamps",
        ]);
        all_answered(&result, 2000);
        assert_eq!(result["request"]["proto"], proto);
        assert_eq!(result["request"]["path"], "loopback");
        assert_eq!(result["split"]["timestamps"], "software");
        assert!(result["echo"]["answered"].as_u64().unwrap() >= 2000);
    }
    // As root busy polling is taken (loopback has no NAPI queue to poll: it changes nothing
    // here but the option).
    if rustix::process::geteuid().is_root() {
        let result = measured(&["--cpus", &two_cpus(), "--count", "100", "--busy-poll", "50"]);
        assert_eq!(result["busy_poll"]["applied"], true, "{result}");
        assert_eq!(result["request"]["busy_poll_us"], 50);
    }
}

#[test]
#[ignore = "measures the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_peer_that_does_not_answer_ends_the_run_at_its_deadline() {
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() {
        return;
    }
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer = silent.local_addr().unwrap().to_string();
    let started = Instant::now();
    let out = lowlat(&[
        "measure",
        "net",
        "--peer",
        &peer,
        "--duration",
        "1s",
        "--timeout",
        "50ms",
    ])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Results printed, but incomplete.
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("did not answer the first messages"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Interfaces of the machine's own namespace named like lowlat's veth ends.
fn lowlat_interfaces() -> Vec<String> {
    std::fs::read_to_string("/proc/net/dev")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .filter(|name| name.starts_with("lowlat-"))
        .map(String::from)
        .collect()
}

#[test]
#[ignore = "makes network namespaces and a veth pair; runs with LOWLAT_LIVE_TESTS=1 (CI sets it, as root)"]
fn veth_ping_pongs_leave_nothing_behind() {
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() || !is_root("network namespaces and a veth pair") {
        return;
    }
    for proto in ["udp", "tcp"] {
        let result = measured(&[
            "--cpus",
            &two_cpus(),
            "--path",
            "veth",
            "--proto",
            proto,
            "--count",
            "1000",
        ]);
        all_answered(&result, 1000);
        assert_eq!(result["request"]["path"], "veth");
        assert_eq!(
            result["peer"].as_str().unwrap().split(':').next(),
            Some("169.254.49.2")
        );
        assert_eq!(result["path_mtu_bytes"], 1500);
    }
    // A UDP message the veth's 1500 bytes cannot carry whole is refused, naming the flag.
    let out = lowlat(&["measure", "net", "--path", "veth", "--size", "1473"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--size 1473") && err.contains("MTU"), "{err}");
    assert!(err.contains("--size 1472 or less"), "{err}");
    assert!(lowlat_interfaces().is_empty(), "{:?}", lowlat_interfaces());
}

#[test]
#[ignore = "runs lowlat as nobody; runs with LOWLAT_LIVE_TESTS=1 (CI sets it, as root)"]
fn without_permission_veth_is_refused_and_busy_polling_measured_or_said() {
    use std::os::unix::fs::PermissionsExt;
    if !live_tests_allowed() || !is_root("running lowlat as nobody") {
        return;
    }
    let runuser = std::path::Path::new("/usr/sbin/runuser");
    if !runuser.exists() {
        missing_data("/usr/sbin/runuser (Debian package util-linux)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = dir.path().join("lowlat");
    std::fs::copy(assert_cmd::cargo::cargo_bin("lowlat"), &binary).unwrap();
    let as_nobody = |args: &[&str]| {
        Command::new(runuser)
            .args(["-u", "nobody", "--"])
            .arg(&binary)
            .args(["measure", "net", "--count", "100"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = as_nobody(&["--path", "veth"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--path veth") && err.contains("needs root"),
        "{err}"
    );
    // Busy polling above net.core.busy_read needs CAP_NET_ADMIN on older kernels (newer ones
    // take it from anyone): refused, it is said and the run measures without.
    let out = as_nobody(&["--busy-poll", "50", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let busy_poll = &doc["result"]["busy_poll"];
    match busy_poll["applied"].as_bool() {
        Some(true) => assert_eq!(busy_poll["reason"], serde_json::Value::Null),
        _ => assert!(
            busy_poll["reason"]
                .as_str()
                .unwrap()
                .contains("CAP_NET_ADMIN"),
            "{busy_poll}"
        ),
    }
    assert_eq!(doc["result"]["round_trips"], 100);
}

/// A program started by a test, killed when the test ends.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sockperf_found() -> bool {
    let found = Command::new("sockperf")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        missing_data("sockperf (apt-get install sockperf)");
    }
    found
}

/// A port nothing listens on now (UDP and TCP), from the kernel.
fn free_port() -> u16 {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap().port()
}

/// Waits until something answers TCP connections on `port` (sockperf's TCP server) or the
/// time is up; UDP servers are given the same time to start.
fn wait_listening(port: u16, tcp: bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if !tcp || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            std::thread::sleep(Duration::from_millis(300));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "starts sockperf; runs with LOWLAT_LIVE_TESTS=1 (CI sets it, with sockperf installed)"]
fn the_client_measures_against_a_sockperf_server() {
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() || !sockperf_found() {
        return;
    }
    for (proto, tcp) in [("udp", false), ("tcp", true)] {
        let port = free_port();
        let mut server = Command::new("sockperf");
        server.args(["sr", "-i", "127.0.0.1", "-p", &port.to_string()]);
        if tcp {
            server.arg("--tcp");
        }
        let _server = Started(
            server
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_listening(port, tcp);
        let peer = format!("127.0.0.1:{port}");
        let result = measured(&[
            "--peer", &peer, "--proto", proto, "--count", "1000", "--size", "100",
        ]);
        all_answered(&result, 1000);
        assert_eq!(result["request"]["address"], peer.as_str());
        assert_eq!(result["echo"], serde_json::Value::Null);
    }
}

#[test]
#[ignore = "starts sockperf; runs with LOWLAT_LIVE_TESTS=1 (CI sets it, with sockperf installed)"]
fn sockperf_ping_pongs_against_serve() {
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() || !sockperf_found() {
        return;
    }
    for (proto, tcp) in [("udp", false), ("tcp", true)] {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let server = Command::new(assert_cmd::cargo::cargo_bin("lowlat"))
            .args(["measure", "net", "--proto", proto, "--serve", &addr])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut server = Started(server);
        wait_listening(port, tcp);
        let mut client = Command::new("sockperf");
        client.args(["pp", "-i", "127.0.0.1", "-p", &port.to_string(), "-t", "1"]);
        if tcp {
            client.arg("--tcp");
        }
        let out = client.output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !said.contains("No messages were received"),
            "{proto}: {said}"
        );
        assert!(said.contains("Summary: Latency is"), "{proto}: {said}");
        // Ctrl-C ends the server, which says what it answered.
        // SAFETY: kill(2) on the child's pid with SIGINT.
        unsafe { libc::kill(server.0.id() as i32, libc::SIGINT) };
        let child = std::mem::replace(&mut server.0, Command::new("true").spawn().unwrap());
        let done = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&done.stdout);
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        let answered: u64 = text
            .split("answered ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{text}"));
        assert!(answered > 100, "{text}");
    }
}

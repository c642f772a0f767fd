//! Time daemons found live: chronyd (Debian's chrony) with only a local reference
//! (`local stratum 10`, `-x`: it never touches the clock) on one CPU, and ptp4l (Debian's
//! linuxptp) in software timestamping mode on a veth pair (`free_running 1`: it never steers
//! the clock either) on another; `lowlat inventory` finds both with their CPUs, the sources of
//! their files and the answers of `chronyc tracking` and `pmc 'GET TIME_STATUS_NP'`, and `audit`
//! names the one on the
//! isolated CPU. `#[ignore]`d: it runs only with `LOWLAT_LIVE_TESTS=1` as root (CI does both);
//! the daemons and the veth pair are removed whatever happens.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{is_root, live_tests_allowed, lowlat, missing_data};

/// The veth pair's first end.
const VETH: &str = "lltime0";

/// What the test started, stopped and removed when it goes out of scope.
struct Daemons {
    children: Vec<Child>,
    veth: bool,
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        if self.veth {
            let _ = Command::new("ip").args(["link", "del", VETH]).status();
        }
    }
}

fn found(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
#[ignore = "starts chronyd and ptp4l and adds a veth pair; runs with LOWLAT_LIVE_TESTS=1 (CI sets it, as root)"]
fn chronyd_and_ptp4l_are_found_with_their_cpus() {
    if !live_tests_allowed() || !is_root("starts daemons, adds a veth pair") {
        return;
    }
    for program in ["chronyd", "chronyc", "ptp4l", "pmc", "taskset", "ip"] {
        if !found(program) {
            missing_data(&format!(
                "{program} (apt-get install chrony linuxptp util-linux iproute2)"
            ));
            return;
        }
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (ptp_cpu, chrony_cpu) = (0, if cpus > 1 { 1 } else { 0 });
    let dir = tempfile::tempdir().unwrap();
    let chrony_conf = dir.path().join("chrony.conf");
    std::fs::write(
        &chrony_conf,
        format!(
            "local stratum 10\nport 0\npidfile {}/chronyd.pid\nserver 192.0.2.1 noselect\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let ptp_conf = dir.path().join("ptp4l.conf");
    std::fs::write(
        &ptp_conf,
        "[global]\nfree_running 1\ntime_stamping software\n",
    )
    .unwrap();

    let mut daemons = Daemons {
        children: Vec::new(),
        veth: false,
    };
    let added = Command::new("ip")
        .args([
            "link", "add", VETH, "type", "veth", "peer", "name", "lltime1",
        ])
        .status()
        .unwrap();
    assert!(added.success(), "ip link add {VETH} failed");
    daemons.veth = true;
    for end in [VETH, "lltime1"] {
        assert!(
            Command::new("ip")
                .args(["link", "set", end, "up"])
                .status()
                .unwrap()
                .success()
        );
    }
    let chronyd = Command::new("taskset")
        .args([
            "-c",
            &chrony_cpu.to_string(),
            "chronyd",
            "-n",
            "-x",
            "-u",
            "root",
            "-f",
        ])
        .arg(&chrony_conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let chronyd_pid = chronyd.id();
    daemons.children.push(chronyd);
    let ptp4l = Command::new("taskset")
        .args(["-c", &ptp_cpu.to_string(), "ptp4l", "-i", VETH, "-S", "-f"])
        .arg(&ptp_conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ptp4l_pid = ptp4l.id();
    daemons.children.push(ptp4l);

    // chronyd answers once its command socket is up.
    let started = Instant::now();
    while !Command::new("chronyc")
        .args(["-n", "-c", "tracking"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "chronyd did not answer in 10 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for child in &mut daemons.children {
        assert!(child.try_wait().unwrap().is_none(), "a daemon exited early");
    }

    let out = lowlat(&["inventory", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ts = &doc["machine"]["time_sync"];
    let daemon = |pid: u32| {
        ts["daemons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["pid"] == pid)
            .unwrap_or_else(|| panic!("pid {pid} not found: {ts}"))
            .clone()
    };
    let chrony = daemon(chronyd_pid);
    assert_eq!(chrony["kind"], "chronyd");
    assert_eq!(chrony["cpus_allowed"], chrony_cpu.to_string());
    assert_eq!(chrony["last_cpu"], chrony_cpu);
    assert_eq!(chrony["steers_system_clock"], false, "{chrony}");
    let ptp = daemon(ptp4l_pid);
    assert_eq!(ptp["kind"], "ptp4l");
    assert_eq!(ptp["cpus_allowed"], ptp_cpu.to_string());
    assert_eq!(ptp["last_cpu"], ptp_cpu);
    assert_eq!(ptp["steers_system_clock"], false, "{ptp}");
    let config = |path: &std::path::Path| {
        ts["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["path"] == path.to_str().unwrap())
            .unwrap_or_else(|| panic!("{} not read: {ts}", path.display()))["sources"]
            .clone()
    };
    assert_eq!(
        config(&chrony_conf),
        serde_json::json!(["local stratum 10", "server 192.0.2.1 noselect"])
    );
    assert_eq!(
        config(&ptp_conf),
        serde_json::json!(["free_running 1", "time_stamping software"])
    );
    let tracking = &ts["chrony_tracking"];
    assert_eq!(tracking["stratum"], 10, "{tracking}");
    assert_eq!(tracking["reference"], "7F7F0101", "{tracking}");
    // ptp4l alone on its link is its own grandmaster.
    let ptp_status = &ts["ptp_time_status"];
    assert_eq!(ptp_status["gm_present"], false, "{ptp_status}");
    assert_eq!(ptp_status["master_offset_ns"], 0, "{ptp_status}");

    let text = lowlat(&["inventory"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!(
            "chronyd (pid {chronyd_pid}) on CPUs {chrony_cpu}, last on {chrony_cpu}; does not steer the system clock"
        )),
        "{text}"
    );
    assert!(
        text.contains("chronyc tracking: reference 7F7F0101, stratum 10"),
        "{text}"
    );

    // With chronyd's CPU isolated, the audit names it; neither daemon steers the clock.
    if cpus > 1 {
        let out = lowlat(&["audit", "--json", "--isolate", &chrony_cpu.to_string()])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let finding = |id: &str| {
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["rule"] == id)
                .unwrap()
                .clone()
        };
        let cpus_rule = finding("LL-TIME-DAEMON-CPUS");
        assert_eq!(cpus_rule["status"], "fail", "{cpus_rule}");
        assert!(
            cpus_rule["observed"].as_str().unwrap().contains(&format!(
                "chronyd (pid {chronyd_pid}) may run on isolated CPUs {chrony_cpu}"
            )),
            "{cpus_rule}"
        );
        assert!(
            !cpus_rule["observed"].as_str().unwrap().contains("ptp4l"),
            "{cpus_rule}"
        );
        let running = finding("LL-TIME-DAEMON-RUNNING");
        assert!(
            running["observed"]
                .as_str()
                .unwrap()
                .contains("none steers the system clock"),
            "{running}"
        );
    }
    drop(daemons);
    assert!(
        !Command::new("ip")
            .args(["link", "show", VETH])
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success(),
        "{VETH} left behind"
    );
}

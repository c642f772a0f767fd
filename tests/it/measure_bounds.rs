//! Measurement flags at the ends of their ranges: a sample count whose timings cannot fit in
//! memory is refused before measuring, and a c2c sample of 2^32 round trips still ends
//! at once on Ctrl-C.

use crate::support::{lowlat, missing_data};
use std::time::{Duration, Instant};

/// MemAvailable of this machine, bytes.
fn available() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// `--samples 4294967295` aborted in the allocator (exit 134) asking for 34 GB.
#[test]
fn a_sample_count_beyond_memory_is_refused_naming_the_flag() {
    // The smallest of the three needs 2 x 2^32 x 8 bytes.
    if available() >= 2 * (1 << 32) * 8 {
        missing_data("a machine with less than 64 GiB available");
        return;
    }
    for (engine, cpus, vectors) in [("wakeup", "0-1", 2), ("ipi", "0-1", 3), ("memlat", "0", 2)] {
        let out = lowlat(&["measure", engine, "--cpus", cpus, "--samples", "4294967295"])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine}: {err}");
        assert!(
            err.contains(&format!(
                "--samples 4294967295 ({vectors} x 4294967296 timings of 8 bytes held at once) needs"
            )) && err.contains("(MemAvailable): ask for less"),
            "{engine}: {err}"
        );
    }
}

/// the stop flag was looked at between samples only, so `--round-trips 4294967295`
/// (minutes a sample) ignored Ctrl-C.
#[test]
fn ctrl_c_ends_a_c2c_sample_of_many_round_trips() {
    let started = Instant::now();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("lowlat"))
        .args([
            "measure",
            "c2c",
            "--cpus",
            "0-1",
            "--round-trips",
            "4294967295",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill only sends a signal to the child started above.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(took < Duration::from_secs(4), "{took:?}: {stderr}");
    assert!(
        output.status.code().is_some(),
        "killed by the signal: {stderr}"
    );
}

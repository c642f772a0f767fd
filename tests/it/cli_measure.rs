//! `lowlat measure jitter|timer` refuses bad input before measuring, naming the flag.

use assert_cmd::assert::Assert;
use predicates::prelude::*;
use predicates::str::contains;

fn lowlat(args: &[&str]) -> Assert {
    crate::support::lowlat(&[]).args(args).assert()
}

/// `lowlat measure jitter` with these --cpus, --threshold and --duration, then `extra`.
fn jitter(cpus: &str, threshold: &str, duration: &str, extra: &[&str]) -> Assert {
    let args = [
        "measure",
        "jitter",
        "--cpus",
        cpus,
        "--threshold",
        threshold,
        "--duration",
        duration,
    ];
    lowlat(&[&args[..], extra].concat())
}

/// `lowlat measure timer` with these --cpus, --interval and --duration, then `extra`.
fn timer(cpus: &str, interval: &str, duration: &str, extra: &[&str]) -> Assert {
    let args = [
        "measure",
        "timer",
        "--cpus",
        cpus,
        "--interval",
        interval,
        "--duration",
        duration,
    ];
    lowlat(&[&args[..], extra].concat())
}

#[test]
fn cpus_that_do_not_exist_are_refused() {
    jitter("4095", "1000", "1s", &[]).code(2).stderr(contains(
        "--cpus 4095: CPU 4095 does not exist or is offline",
    ));
    timer("4095", "1000", "1s", &[])
        .code(2)
        .stderr(contains("--cpus 4095"));
}

#[test]
fn zero_threshold_duration_and_interval_are_refused() {
    jitter("0", "0", "1s", &[])
        .code(2)
        .stderr(contains("--threshold").and(contains("above zero")));
    jitter("0", "1000", "0s", &[])
        .code(2)
        .stderr(contains("--duration").and(contains("above zero")));
    timer("0", "0", "1s", &[])
        .code(2)
        .stderr(contains("--interval").and(contains("above zero")));
}

#[test]
fn malformed_values_name_their_flag() {
    jitter("0", "1000", "1s", &["--inject", "10"])
        .code(2)
        .stderr(contains("--inject").and(contains("PERIOD_MS:SPIN_US")));
    jitter("x", "1000", "1s", &[])
        .code(2)
        .stderr(contains("--cpus"));
    timer("0", "1000", "1s", &["--priority", "100"])
        .code(2)
        .stderr(contains("--priority"));
}

#[test]
fn measurements_refuse_a_fixture_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    lowlat(&[
        "--root",
        root,
        "measure",
        "jitter",
        "--cpus",
        "0",
        "--threshold",
        "1000",
        "--duration",
        "1s",
    ])
    .code(2)
    .stderr(contains("measurements run on this machine only"));
}

//! `lowlat measure jitter|timer` refuses bad input before measuring, naming the flag.

use assert_cmd::Command;
use predicates::prelude::*;
use predicates::str::contains;

fn lowlat(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("lowlat").unwrap().args(args).assert()
}

#[test]
fn cpus_that_do_not_exist_are_refused() {
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        "4095",
        "--threshold",
        "1000",
        "--duration",
        "1s",
    ])
    .code(2)
    .stderr(contains(
        "--cpus 4095: CPU 4095 does not exist or is offline",
    ));
    lowlat(&[
        "measure",
        "timer",
        "--cpus",
        "4095",
        "--interval",
        "1000",
        "--duration",
        "1s",
    ])
    .code(2)
    .stderr(contains("--cpus 4095"));
}

#[test]
fn zero_threshold_duration_and_interval_are_refused() {
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        "0",
        "--threshold",
        "0",
        "--duration",
        "1s",
    ])
    .code(2)
    .stderr(contains("--threshold").and(contains("above zero")));
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        "0",
        "--threshold",
        "1000",
        "--duration",
        "0s",
    ])
    .code(2)
    .stderr(contains("--duration").and(contains("above zero")));
    lowlat(&[
        "measure",
        "timer",
        "--cpus",
        "0",
        "--interval",
        "0",
        "--duration",
        "1s",
    ])
    .code(2)
    .stderr(contains("--interval").and(contains("above zero")));
}

#[test]
fn malformed_values_name_their_flag() {
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        "0",
        "--threshold",
        "1000",
        "--duration",
        "1s",
        "--inject",
        "10",
    ])
    .code(2)
    .stderr(contains("--inject").and(contains("PERIOD_MS:SPIN_US")));
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        "x",
        "--threshold",
        "1000",
        "--duration",
        "1s",
    ])
    .code(2)
    .stderr(contains("--cpus"));
    lowlat(&[
        "measure",
        "timer",
        "--cpus",
        "0",
        "--interval",
        "1000",
        "--duration",
        "1s",
        "--priority",
        "100",
    ])
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

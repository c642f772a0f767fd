//! Measurements refuse bad flags before measuring (naming them), check their outputs before
//! the run, stop at once on Ctrl-C and at the end of the run, follow one exit-code rule, and
//! say in their help what applies where.

use assert_cmd::assert::Assert;
use predicates::prelude::*;
use predicates::str::contains;
use std::time::{Duration, Instant};

fn lowlat(args: &[&str]) -> Assert {
    crate::support::lowlat(args).assert()
}

/// The first CPU this process may run on (the measured one in these tests).
fn a_cpu() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    list.split([',', '-']).next().unwrap().to_string()
}

#[test]
fn an_interval_longer_than_the_run_is_refused() {
    // a 10 s interval in a 1 s run slept for 10 s.
    let started = Instant::now();
    lowlat(&[
        "measure",
        "timer",
        "--cpus",
        &a_cpu(),
        "--interval",
        "10000000",
        "--duration",
        "1s",
    ])
    .code(2)
    .stderr(contains("--interval 10000000").and(contains("--duration")));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn an_injector_period_longer_than_the_run_is_refused() {
    // `--inject 10000:1` in a 1 s run printed its result only after 10 s.
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        &a_cpu(),
        "--threshold",
        "1000",
        "--duration",
        "1s",
        "--inject",
        "10000:1",
    ])
    .code(2)
    .stderr(contains("--inject").and(contains("longer than --duration")));
}

#[test]
fn freq_flags_are_bounded() {
    // `--warmup-ms 99999999999` never ended.
    lowlat(&["measure", "freq", "--warmup-ms", "99999999999"])
        .code(2)
        .stderr(contains("--warmup-ms"));
    lowlat(&["measure", "freq", "--sample-ms", "5000"])
        .code(2)
        .stderr(contains("--sample-ms"));
}

#[test]
fn an_unwritable_raw_prefix_is_refused_before_measuring() {
    // the run was measured for its whole duration, then lost.
    let started = Instant::now();
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        &a_cpu(),
        "--threshold",
        "1000",
        "--duration",
        "10s",
        "--raw",
        "/nonexistent/dir/run",
    ])
    .code(2)
    .stdout("")
    .stderr(contains("--raw /nonexistent/dir/run").and(contains("does not exist")));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_timer_histogram_says_where_it_is_printed() {
    // `--histogram 400` had no visible effect in the table.
    lowlat(&["measure", "timer", "--help"])
        .success()
        .stdout(contains("printed by --format cyclictest and --json"));
    // Refused for another reason before measuring, after the note.
    lowlat(&[
        "measure",
        "timer",
        "--cpus",
        "4095",
        "--interval",
        "1000",
        "--duration",
        "1s",
        "--histogram",
        "400",
    ])
    .code(2)
    .stderr(contains("--histogram is printed by --format cyclictest"));
}

#[test]
fn a_load_without_a_housekeeping_cpu_is_refused() {
    // Issue 48: loads run only on CPUs not measured; where this process may run on the
    // measured CPU alone, none is left, and the load is refused before anything runs.
    let cpu = a_cpu();
    let lowlat = assert_cmd::cargo::cargo_bin("lowlat");
    let mut taskset = std::process::Command::new("taskset");
    taskset.arg("-c").arg(&cpu).arg(lowlat).args([
        "measure",
        "jitter",
        "--cpus",
        &cpu,
        "--threshold",
        "1000",
        "--duration",
        "1s",
        "--load",
        "cpu,ipi",
    ]);
    assert_cmd::Command::from_std(taskset)
        .assert()
        .code(2)
        .stderr(contains(format!(
            "--load cpu,ipi: no housekeeping CPU is left for the load: every CPU this process \
             may run on is measured (CPU {cpu})"
        )));
}

/// Issue 48: `--load-if` sends the net load to `--load-peer`, so one without the other is
/// refused by the parser, before anything runs (the unit test of the request went down to
/// `measure::load` with it; this keeps the flags' side).
#[test]
fn load_if_without_a_peer_is_refused() {
    assert_cmd::Command::cargo_bin("lowlat")
        .unwrap()
        .args(["measure", "jitter", "--load", "net", "--load-if", "ens1"])
        .assert()
        .code(2)
        .stderr(contains("--load-peer"));
}

#[test]
fn json_and_another_format_are_refused() {
    // `--json --format oslat` was accepted.
    for (engine, format) in [("jitter", "oslat"), ("timer", "cyclictest")] {
        let mut args = vec!["measure", engine, "--cpus", "0", "--duration", "1s"];
        args.extend(if engine == "jitter" {
            ["--threshold", "1000"]
        } else {
            ["--interval", "1000"]
        });
        args.extend(["--json", "--format", format]);
        lowlat(&args)
            .code(2)
            .stderr(contains("--format").and(contains("--json")));
    }
}

#[test]
fn an_incomplete_measurement_prints_its_results_and_exits_1() {
    // a full gap buffer printed full results and exited 2.
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        &a_cpu(),
        "--threshold",
        "1",
        "--duration",
        "100ms",
        "--max-gaps",
        "1",
    ])
    .code(1)
    .stdout(contains("jitter: threshold 0.001 µs"))
    .stderr(contains("the gap buffer filled"));
}

#[test]
fn the_exit_code_rule_is_in_the_help() {
    // one rule, documented.
    lowlat(&["measure", "--help"]).success().stdout(
        contains("0 the measurement is complete")
            .and(contains("1 results were printed but are incomplete"))
            .and(contains("2 nothing could be")),
    );
}

#[test]
fn the_global_root_and_snapshot_say_measure_refuses_them() {
    // Small ones: `measure --help` listed --root/--snapshot without saying they are refused.
    for command in [&["measure", "jitter", "--help"][..], &["compare", "--help"]] {
        lowlat(command)
            .success()
            .stdout(contains("`measure` and `check` run on this machine only"))
            .stdout(contains("`compare`, `report` and `fleet`"));
    }
}

/// Runs lowlat with `args`, sends it Ctrl-C (SIGINT) after `after`, and returns its exit
/// code, how long it ran and its stderr.
fn interrupted_after(args: &[&str], after: Duration) -> (Option<i32>, Duration, String) {
    let started = Instant::now();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("lowlat"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    // SAFETY: kill only sends a signal to the child started above.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        started.elapsed(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn ctrl_c_ends_a_long_timer_sleep_at_once() {
    // Ctrl-C waited for the end of the interval's sleep.
    let cpu = a_cpu();
    let args = [
        "measure",
        "timer",
        "--cpus",
        &cpu,
        "--interval",
        "4000000",
        "--duration",
        "5s",
        "--no-dma-latency",
    ];
    let (code, took, stderr) = interrupted_after(&args, Duration::from_millis(800));
    assert!(took < Duration::from_millis(2500), "{took:?}: {stderr}");
    // Interrupted: results printed, incomplete.
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
}

#[test]
fn the_injector_stops_at_the_end_of_the_run() {
    // the injector slept through its period after the run ended.
    let cpu = a_cpu();
    let started = Instant::now();
    let output = assert_cmd::Command::cargo_bin("lowlat")
        .unwrap()
        .args([
            "measure",
            "jitter",
            "--cpus",
            &cpu,
            "--threshold",
            "1000000",
            "--duration",
            "1s",
            "--inject",
            "900:1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("not permitted") {
        crate::support::missing_data(&format!(
            "permission for SCHED_FIFO 99 (root): the injector cannot run: {stderr}"
        ));
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(started.elapsed() < Duration::from_millis(1700), "{stderr}");
}

/// One convention on the terminal: latencies in µs (said once per table), rates per minute
/// (jitter's table gave ns and gaps per second, the timer's `us`).
#[test]
fn tables_give_latencies_in_microseconds_and_rates_per_minute() {
    let cpu = a_cpu();
    lowlat(&[
        "measure",
        "jitter",
        "--cpus",
        &cpu,
        "--threshold",
        "2us",
        "--duration",
        "100ms",
    ])
    .stdout(
        contains("jitter: threshold 2 µs, ")
            .and(contains(" gaps/min "))
            .and(contains(
                "(latencies in µs; loop = mean loop iteration in ns",
            ))
            .and(contains("gaps/s").not()),
    );
    lowlat(&[
        "measure",
        "timer",
        "--cpus",
        &cpu,
        "--interval",
        "200us",
        "--duration",
        "100ms",
    ])
    .stdout(
        contains("timer: every 200 µs for ")
            .and(contains("(latencies in µs: wake-up time minus deadline"))
            // Issue 44 N15: the `skipped` column was not explained.
            .and(contains(
                "skipped: periods left out because a wake-up came after the next",
            ))
            .and(contains(" us ").not()),
    );
}

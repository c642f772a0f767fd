//! `lowlat measure membw|memlat|c2c|wakeup|freq` on this machine, with small sizes: the
//! documents are well formed, the figures within absolute bounds that hold on this project's
//! 2-vCPU guest under load and that a broken engine (a unit, a clock read in the wrong place)
//! falls outside, and bad input is refused before anything is allocated.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn lowlat() -> Command {
    crate::support::lowlat(&[])
}

fn json(args: &[&str]) -> Value {
    let out = lowlat()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// `lowlat ARGS`, which must be refused (exit code 2) before measuring.
fn refused(args: &[&str]) -> assert_cmd::assert::Assert {
    lowlat().args(args).assert().code(2)
}

/// A small c2c run on CPUs 0 and 1.
const C2C_0_1: [&str; 8] = [
    "measure",
    "c2c",
    "--cpus",
    "0,1",
    "--round-trips",
    "50",
    "--samples",
    "5",
];

/// How many CPUs this process may run on.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn membw_validates_and_warns_below_the_rule() {
    // Its rate is held to a bound below: no live test's spinner on CPU 1 meanwhile.
    let _turn = crate::support::cpu1_turn();
    let doc = json(&[
        "measure", "membw", "--size", "8M", "--ntimes", "3", "--json",
    ]);
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["kind"], "measure-membw");
    assert_eq!(doc["result"]["interrupted"], false);
    assert!(doc["result"]["method"].as_str().unwrap().contains("STREAM"));
    assert!(
        doc["environment"]["online"].is_string(),
        "{}",
        doc["environment"]
    );
    let system = &doc["result"]["system"];
    assert_eq!(system["validation"]["validated"], true);
    assert_eq!(system["array_elements"], 1 << 20);
    assert_eq!(system["kernels"].as_array().unwrap().len(), 4);
    assert_eq!(system["kernels"][3]["kernel"], "triad");
    // Issue 44 T-6: `> 0` passed any rate. 3 arrays of 8 MiB on this 2-vCPU guest, debug
    // build: triad 315-730 MB/s at load 7 (4 runs, 2026-12-06); an engine off by its time or
    // byte unit (×1000 or ÷1000) is outside 20 MB/s-200 GB/s, which two cores cannot pass
    // through 24 MiB of arrays.
    let triad = system["kernels"][3]["best_rate_mb_per_s"].as_f64().unwrap();
    assert!((20.0..=200_000.0).contains(&triad), "triad {triad} MB/s");
    let warnings = doc["result"]["warnings"].to_string();
    assert!(warnings.contains("below STREAM's rule"), "{warnings}");
    assert!(
        doc["result"]["label"]
            .as_str()
            .unwrap()
            .contains("STREAM-variant")
    );
}

/// Issue 44 N13: a membw run says up front what it will take (the arrays, the memory, the
/// repetitions and what each moves) and, after its first repetition, how long the rest will
/// take; it said only `[1/1] 2 threads, 3 × 1.9 GiB` for 48 s.
#[test]
fn membw_says_its_size_up_front_and_its_pace_as_it_runs() {
    let out = crate::support::lowlat(&["measure", "membw", "--size", "8M", "--ntimes", "3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let threads = cpus();
    for expected in [
        format!(
            "lowlat: note: membw: 3 arrays of 8 MiB (24 MiB in all) on {threads} threads, 3 \
             repetitions of the 4 kernels, each moving 80 MiB (10 array passes)\n"
        ),
        "lowlat: note: membw: repetition 1 of 3 done, ".to_string(),
    ] {
        assert!(stderr.contains(&expected), "no {expected} in:\n{stderr}");
    }
    let plan = stderr.find("arrays of 8 MiB").unwrap();
    let pace = stderr.find("repetition 1 of 3").unwrap();
    assert!(plan < pace, "{stderr}");
}

#[test]
fn membw_node_matrix_on_node_zero() {
    let doc = json(&[
        "measure", "membw", "--size", "4M", "--ntimes", "2", "--nodes", "0", "--json",
    ]);
    let matrix = &doc["result"]["node_matrix"];
    assert_eq!(matrix["triad_best_mb_per_s"]["rows"][0], "0");
    assert_eq!(matrix["runs"][0]["memory_node"], 0);
    assert_eq!(matrix["runs"][0]["run"]["validation"]["validated"], true);
    assert!(
        matrix["triad_best_mb_per_s"]["values"][0][0]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn membw_text_looks_like_stream() {
    lowlat()
        .args([
            "measure",
            "membw",
            "--size",
            "2M",
            "--ntimes",
            "2",
            "--threads",
            "1",
        ])
        .assert()
        .success()
        .stdout(contains("Function"))
        .stdout(contains("Triad:"))
        .stdout(contains("Solution Validates"))
        .stdout(contains("own loop time (likwid-bench's timing"));
}

#[test]
fn memlat_curve_rises() {
    let doc = json(&[
        "measure",
        "memlat",
        "--sizes",
        "16K,128M",
        "--samples",
        "2",
        "--sample-ms",
        "10",
        "--json",
    ]);
    let points = doc["result"]["curve"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    let small = points[0]["latency_ns"]["median"].as_f64().unwrap();
    let large = points[1]["latency_ns"]["median"].as_f64().unwrap();
    assert!(
        small > 0.0 && large > 2.0 * small,
        "16K {small} ns, 128M {large} ns"
    );
    assert_eq!(doc["result"]["curve"]["window_bytes"], 4096);
}

#[test]
fn c2c_csv_and_json() {
    if cpus() < 2 {
        crate::support::missing_data("a second CPU");
        return;
    }
    lowlat()
        .args(C2C_0_1)
        .arg("--csv")
        .assert()
        .success()
        .stdout(contains("cpu,0,1\n"));
    let doc = json(&[&C2C_0_1[..], &["--json"]].concat());
    let pair = &doc["result"]["run"]["pairs"][0];
    // Absolute bounds: a cache line between two cores takes tens to a few hundred ns; on the
    // 2-vCPU guest (6 runs, 2026-11-27) 19-101 ns one way.
    let one_way = pair["one_way_ns"]["mean"].as_f64().unwrap();
    assert!((5.0..=1000.0).contains(&one_way), "{pair}");
    assert_eq!(
        doc["result"]["run"]["matrix_mean_ns"]["values"][0][0],
        Value::Null
    );
}

#[test]
fn wakeup_latency_is_positive() {
    if cpus() < 2 {
        crate::support::missing_data("a second CPU");
        return;
    }
    // Its median is held to a bound below: at SCHED_FIFO, so that the other tests' busy loops
    // (normal priority) cannot hold the woken thread off its CPU (at normal priority, with
    // the whole suite running, a median rose past 100 µs), and with no live test's spinner
    // on CPU 1 meanwhile.
    if !crate::support::is_root("measure wakeup --fifo") {
        return;
    }
    let _turn = crate::support::cpu1_turn();
    let doc = json(&[
        "measure",
        "wakeup",
        "--cpus",
        "0,1",
        "--samples",
        "100",
        "--gap-us",
        "200",
        "--fifo",
        "50",
        "--json",
    ]);
    let pairs = doc["result"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    for pair in pairs {
        // Issue 44 T-6: `0 < median < 1 s` passed any engine. A futex wake-up across vCPUs
        // on this guest at FIFO 50: medians 3.4-4.8 µs at load 6-10 (13 runs of 100 samples,
        // 2026-12-06; 10 samples at normal priority let one burst of load make a median
        // 2 ms); with eight builds beside it one median reached 134 µs. A clock read before
        // the 200 µs gap instead of after it (every sample above 200 µs), or µs taken for ns,
        // falls outside 1-180 µs.
        let median = pair["latency_ns"]["median"].as_f64().unwrap();
        assert!((1_000.0..=180_000.0).contains(&median), "{pair}");
    }
}

#[test]
fn freq_reports_every_cpu() {
    let doc = json(&[
        "measure",
        "freq",
        "--cpus",
        "0",
        "--samples",
        "2",
        "--sample-ms",
        "2",
        "--warmup-ms",
        "5",
        "--json",
    ]);
    let cpu = &doc["result"]["cpus"][0];
    assert_eq!(cpu["cpu"], 0);
    let mhz = cpu["effective_mhz"]["median"].as_f64().unwrap();
    assert!((100.0..10_000.0).contains(&mhz), "{mhz}");
    // APERF/MPERF: a value, or the reason it is missing.
    let aperf = &cpu["aperf_mperf"];
    assert!(
        aperf.get("aperf_mhz").is_some() || aperf.get("unavailable").is_some(),
        "{aperf}"
    );
}

#[test]
fn sizes_that_cannot_fit_are_refused_before_allocation() {
    refused(&["measure", "membw", "--size", "100T"]).stderr(contains("MemAvailable"));
    refused(&["measure", "memlat", "--sizes", "64T"]).stderr(contains("MemAvailable"));
    refused(&["measure", "membw", "--size", "4KB"]).stderr(contains("binary suffix"));
}

#[test]
fn missing_nodes_and_cpus_are_refused() {
    refused(&["measure", "membw", "--nodes", "99"]).stderr(contains("NUMA node 99 does not exist"));
    refused(&["measure", "memlat", "--node", "99"]).stderr(contains("--node 99"));
    refused(&["measure", "c2c", "--cpus", "4000"]).stderr(contains(
        "--cpus 4000: CPU 4000 does not exist or is offline",
    ));
}

#[test]
fn hugepages_not_reserved_is_a_clear_error() {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let free = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("HugePages_Free:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if free > 0 {
        // Issue 44 T-7: this returned silently, so the refusal was never checked where huge
        // pages are free; CI's machine reserves none.
        crate::support::missing_data(&format!(
            "a machine with no huge page free (HugePages_Free: {free})"
        ));
        return;
    }
    refused(&["measure", "memlat", "--hugepages", "--sizes", "64M"])
        .stderr(contains("no huge pages are free"))
        .stderr(contains("/proc/sys/vm/nr_hugepages"));
}

#[test]
fn measuring_refuses_another_machines_root() {
    let dir = tempfile::tempdir().unwrap();
    refused(&["--root", dir.path().to_str().unwrap(), "measure", "freq"])
        .stderr(contains("measurements run on this machine only"));
}

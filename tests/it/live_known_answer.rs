//! Known-answer tests on the live machine: an injector spinning D every P on the measured
//! CPU must show up as about 1000/P extra interruptions per second lasting about D (jitter),
//! and as a latency plateau from the baseline up to about D (timer).
//!
//! They are `#[ignore]`d and run only with `LOWLAT_LIVE_TESTS=1` and `--include-ignored` (CI
//! does both). They measure for about 3 s each on CPU 1 and need root (SCHED_FIFO for the injector) and
//! at least 2 CPUs; otherwise they skip with a message (and fail under CI, which provides both).
//! Whether the machine is quiet enough for a known answer is decided by probes independent of
//! the engines (a busy loop and `clock_nanosleep` in the test process). They take turns (one lock), since two
//! measurements on the same CPU would disturb each other.
//!
//! The tolerances hold on a 2-vCPU KVM guest whose host pauses it for 5 to 14 ms now and then
//! and which sees thousands of sub-µs gaps per second: the threshold (300 µs) is far above
//! that noise and far below the injected 500 µs. The measuring thread runs at SCHED_FIFO 1 so
//! that other processes on the (shared, busy) CPU cannot take it away for whole time slices,
//! which would add gaps of several ms; the injector at FIFO 99 still preempts it.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Why the tests of this file need root.
const ROOT: &str = "measuring at SCHED_FIFO with an injector";

/// `measure timer` on CPU 1 every 1 ms for `duration`, with cyclictest's histogram up to
/// 1000 µs and `extra` flags, as JSON.
fn timer(duration: &str, extra: &[&str]) -> Value {
    let args = [
        "timer",
        "--cpus",
        "1",
        "--interval",
        "1000",
        "--duration",
        duration,
        "--histogram",
        "1000",
    ];
    measure(&[&args[..], extra].concat())
}

/// `measure jitter` on CPU 1 for `duration` with a 300 µs threshold, the measuring thread
/// at SCHED_FIFO 1, and `extra` flags, as JSON, with its threads at SCHED_FIFO (see
/// [`measure_watching_threads`]).
fn jitter(duration: &str, extra: &[&str]) -> (Value, Vec<(u32, String, u32)>) {
    let args = [
        "jitter",
        "--cpus",
        "1",
        "--threshold",
        "300000",
        "--duration",
        duration,
        "--priority",
        "1",
    ];
    measure_watching_threads(&[&args[..], extra].concat())
}

/// Runs `probe` on a thread pinned to CPU 1 at SCHED_FIFO `priority` (as the engine's
/// measuring threads run), in this test process: the background is measured without lowlat,
/// so that an engine that reports false gaps fails its known answer instead of calling the
/// machine busy.
fn on_cpu_1(probe: fn() -> f64, priority: i32) -> f64 {
    std::thread::spawn(move || {
        // SAFETY: plain system calls on this thread's own affinity and policy.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(1, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
            let param = libc::sched_param {
                sched_priority: priority,
            };
            libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
        }
        probe()
    })
    .join()
    .unwrap()
}

/// Gaps of 300 µs or more per second between two reads of the monotonic clock in a 1 s busy
/// loop: the background the jitter test must stand out from.
fn gaps_background() -> f64 {
    let start = std::time::Instant::now();
    let (mut last, mut gaps) = (start, 0u32);
    while last - start < std::time::Duration::from_secs(1) {
        let now = std::time::Instant::now();
        if now - last >= std::time::Duration::from_micros(300) {
            gaps += 1;
        }
        last = now;
    }
    f64::from(gaps)
}

/// The share of 1 ms absolute-deadline sleeps (`clock_nanosleep`, as cyclictest) woken 100 to
/// 500 µs late in 1 s, with /dev/cpu_dma_latency held at 0 as `measure timer` holds it: the
/// background the timer test must stand out from.
fn late_background() -> f64 {
    use std::io::Write;
    let mut hold = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .ok();
    if let Some(file) = &mut hold {
        let _ = file.write_all(&0i32.to_ne_bytes());
    }
    let now = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes the current time into `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
    };
    let mut deadline = now();
    let mut late = 0u32;
    for _ in 0..1000 {
        deadline += 1_000_000;
        let ts = libc::timespec {
            tv_sec: (deadline / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: sleeps until `ts` on the monotonic clock.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        let delay = now() - deadline;
        if (100_000..500_000).contains(&delay) {
            late += 1;
        }
    }
    f64::from(late) / 1000.0
}

/// [`live`], on a machine quiet enough for a known answer: one that can only be checked
/// where the `background` (of `what`, measured by a probe independent of lowlat's engines)
/// is well below it. A machine busier than `limit` is missing data: a skip here, a failure
/// under CI.
fn quiet(
    what: &str,
    (background, priority): (fn() -> f64, i32),
    limit: f64,
) -> Option<std::sync::MutexGuard<'static, ()>> {
    let turn = crate::support::live_on_cpu1(ROOT)?;
    // Noise on a guest comes in bursts (the host's own work): a few probes a second apart, and
    // the quietest one decides.
    let mut quietest = f64::INFINITY;
    for _ in 0..5 {
        quietest = quietest.min(on_cpu_1(background, priority));
        if quietest <= limit {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let background = quietest;
    if background > limit {
        crate::support::missing_data(&format!(
            "a quiet machine: {what} background {background:.3} is above {limit}"
        ));
        return None;
    }
    Some(turn)
}

/// The JSON document in the file at `path`.
fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The names of the files in `dir`, sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `lowlat measure ARGS --json` as [`measure`], with the threads seen at SCHED_FIFO while it
/// ran: each one's real-time priority, the CPUs it may run on and the CPU it was last on (from
/// `/proc/PID/task/TID/stat` and `status`, every 20 ms), each once.
fn measure_watching_threads(args: &[&str]) -> (Value, Vec<(u32, String, u32)>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lowlat"))
        .arg("measure")
        .args(args)
        .arg("--json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let tasks = format!("/proc/{}/task", child.id());
    let mut seen: Vec<(u32, String, u32)> = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for task in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            // The fields after the command name's closing parenthesis, from field 3 on.
            let Some((_, after)) = stat.rsplit_once(") ") else {
                continue;
            };
            let fields: Vec<&str> = after.split_whitespace().collect();
            let (Some(cpu), Some(rt), Some(policy)) =
                (fields.get(36), fields.get(37), fields.get(38))
            else {
                continue;
            };
            let allowed = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap_or("")
                .trim()
                .to_string();
            // SCHED_FIFO is policy 1.
            if *policy == "1" {
                let thread = (rt.parse().unwrap(), allowed, cpu.parse().unwrap());
                if !seen.contains(&thread) {
                    seen.push(thread);
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (serde_json::from_slice(&out.stdout).unwrap(), seen)
}

fn measure(args: &[&str]) -> Value {
    let out = crate::support::lowlat(&[])
        .args(["measure"])
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
#[ignore = "measures the live machine for seconds; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn injected_spins_show_as_interruptions() {
    let Some(_turn) = quiet(
        "gaps of 300 µs or more per second",
        (gaps_background, 1),
        20.0,
    ) else {
        return;
    };
    let (doc, threads) = jitter("3s", &["--inject", "10:500"]);
    // Issue 44 T-5: the injector (SCHED_FIFO 99) and the measuring thread (FIFO 1) pin with
    // one helper, so an off-by-one in it would move both and still pass the figures below:
    // each is seen on CPU 1, allowed CPU 1 only.
    for priority in [99, 1] {
        let on: Vec<&(u32, String, u32)> = threads.iter().filter(|t| t.0 == priority).collect();
        assert!(!on.is_empty(), "no thread at FIFO {priority}: {threads:?}");
        assert!(
            on.iter().all(|t| t.1 == "1" && t.2 == 1),
            "FIFO {priority} off CPU 1: {threads:?}"
        );
    }
    assert_eq!(doc["schema_version"], 2);
    let cpu = &doc["result"]["cpus"][0];
    let rate = cpu["per_second"].as_f64().unwrap();
    let median = cpu["stats_ns"]["median"].as_u64().unwrap();
    let spins = cpu["injector_spins"].as_u64().unwrap();
    // 100 spins a second of 500 µs each. On the 2-vCPU guest (5 runs, 2026-11-27): rates
    // 96.7-103.8/s, medians 516.0-516.8 µs (the spin and the injector's wake-up), 290-297
    // spins in 3 s; medians 505.5-506.3 µs at load 6 (6 runs, 2026-12-06). Issue 44 T-6: the
    // median was allowed 480-600 µs, which a counter frequency taken 10 % low passes (562
    // µs); no gap can be shorter than the 500 µs spin, and the injector's switch in and out
    // adds 6-17 µs.
    assert!((85.0..=115.0).contains(&rate), "rate {rate}/s");
    assert!((500_000..=540_000).contains(&median), "median {median} ns");
    assert!((270..=305).contains(&spins), "{spins} spins");
    // Every interruption is at least the threshold long.
    assert!(cpu["stats_ns"]["min"].as_u64().unwrap() >= 299_999);
}

#[test]
#[ignore = "measures the live machine for seconds; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn injected_spins_show_as_a_timer_plateau() {
    let Some(_turn) = quiet(
        "share of sleeps late by 100-500 µs",
        (late_background, 95),
        0.01,
    ) else {
        return;
    };
    // 10.3 ms is not a multiple of the 1 ms interval, so the spin's phase sweeps the
    // interval: about half of the spins (500 us of each 1000 us) catch one deadline, late
    // by anything from 0 to 500 us, i.e. about 48 samples/s spread evenly over 0-500 us.
    let doc = timer("3s", &["--inject", "10.3:500"]);
    let cpu = &doc["result"]["cpus"][0];
    let samples = cpu["samples"].as_u64().unwrap() as f64;
    let buckets: Vec<u64> = cpu["cyclictest"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    let bins: Vec<u64> = (1..5)
        .map(|i| buckets[i * 100..(i + 1) * 100].iter().sum())
        .collect();
    let plateau: u64 = bins.iter().sum();
    let fraction = plateau as f64 / samples;
    // Expected about 0.5 * 97 / 1000 * 400/500 = 3.9 % in 100-500 us. On the 2-vCPU guest
    // (5 runs, 2026-11-27): 3.96-4.65 %, each 100 µs bin 0.88-1.32 times their mean (about 30
    // samples each, so Poisson noise alone is about ±18 %).
    assert!(
        (0.03..=0.065).contains(&fraction),
        "{fraction} in 100-500 us, bins {bins:?}"
    );
    let mean = plateau as f64 / 4.0;
    for bin in &bins {
        assert!(
            (*bin as f64) > mean * 0.5 && (*bin as f64) < mean * 1.7,
            "not flat: {bins:?}"
        );
    }
    assert!(cpu["max_ns"].as_u64().unwrap() >= 400_000);
}

#[test]
#[ignore = "measures the live machine for seconds; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn ctrl_c_stops_and_still_prints_results() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("lowlat"))
        .args([
            "measure",
            "jitter",
            "--cpus",
            "1",
            "--threshold",
            "10000",
            "--duration",
            "30s",
        ])
        .arg("--json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    // SAFETY: kill only sends a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed().as_secs() < 5);
    // Results printed but incomplete: exit 1 (README, exit codes of measurements).
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["result"]["interrupted"], true);
    assert!(doc["result"]["cpus"][0]["runtime_ns"].as_u64().unwrap() > 100_000_000);
}

#[test]
#[ignore = "measures the live machine for seconds; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_full_gap_buffer_is_reported_and_the_results_kept() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let out = crate::support::lowlat(&[])
        .args([
            "measure",
            "jitter",
            "--cpus",
            "1",
            "--threshold",
            "1000",
            "--duration",
            "2s",
        ])
        .args(["--max-gaps", "5", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the gap buffer filled (5 gaps)"));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpu = &doc["result"]["cpus"][0];
    assert_eq!(cpu["buffer_full"], true);
    assert_eq!(cpu["interruptions"], 5);
}

#[test]
#[ignore = "measures the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn interrupting_a_running_thread_costs_more_than_a_call_that_interrupts_nobody() {
    // measure ipi: membarrier with a thread spinning on the other CPU waits for an IPI round
    // trip; without one it is the system call alone. The difference must show in every pair.
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let doc = measure(&["ipi", "--cpus", "0-1", "--samples", "1000"]);
    assert_eq!(doc["kind"], "measure-ipi");
    let pairs = doc["result"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    for pair in pairs {
        let with = pair["with_target_ns"]["median"].as_f64().unwrap();
        let without = pair["baseline_ns"]["median"].as_f64().unwrap();
        assert!(with > without, "{pair}");
        // Absolute bounds: an IPI round trip is about 1-3 µs on bare metal; on the 2-vCPU
        // guest (5 runs, 2026-11-27) 7.7-8.1 µs (the host takes part), the system call alone
        // 0.36-0.38 µs.
        let round_trip = pair["round_trip_ns"].as_f64().unwrap();
        assert!((300.0..=50_000.0).contains(&round_trip), "{pair}");
        assert!((30.0..=5_000.0).contains(&without), "{pair}");
    }
    let mesh = measure(&["ipi", "--cpus", "0-1", "--mesh", "--duration", "500ms"]);
    assert_eq!(mesh["kind"], "measure-ipi-mesh");
    assert!(mesh["result"]["ipis_per_second"].as_f64().unwrap() > 0.0);
}

#[test]
#[ignore = "measures the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn out_collects_every_run_into_one_bundle_with_the_inventory() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("runs");
    let bundle_arg = bundle.to_str().unwrap();
    for _ in 0..2 {
        let out = crate::support::lowlat(&[])
            .args(["measure", "jitter", "--cpus", "1", "--threshold", "1000"])
            .args(["--duration", "300ms", "--out", bundle_arg])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        // The page is still the table: --out adds the document, it does not replace output.
        assert!(!String::from_utf8_lossy(&out.stdout).starts_with('{'));
    }
    let out = crate::support::lowlat(&[])
        .args([
            "measure",
            "ipi",
            "--cpus",
            "0-1",
            "--samples",
            "50",
            "--csv",
        ])
        .args(["--out", bundle_arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("sending cpu,"));
    let names = file_names(&bundle);
    assert_eq!(
        names,
        [
            "inventory.json",
            "measure-ipi.json",
            "measure-jitter-2.json",
            "measure-jitter.json"
        ]
    );
    for name in &names {
        let doc = read_json(&bundle.join(name));
        assert_eq!(
            doc["kind"],
            name.trim_end_matches(".json").trim_end_matches("-2")
        );
        if name != "inventory.json" {
            assert!(doc["environment"]["settings"].is_object(), "{name}");
        }
    }
}

#[test]
#[ignore = "measures the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn check_audits_measures_and_holds_the_figures_to_the_profiles_targets() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("check");
    let out = crate::support::lowlat(&[])
        .args([
            "check",
            "--cpus",
            "1",
            "--duration",
            "1s",
            "--json",
            "--out",
        ])
        .arg(&bundle)
        .arg("--html")
        .arg(dir.path().join("check.html"))
        .output()
        .unwrap();
    // This untuned machine fails the low-latency audit: 1, never 2 (nor 3, NOT PROVEN: a
    // failure of the machine wins over a run too short to decide).
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // Said before the runs: how long, and that 1 s cannot prove the target (issue 43).
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("check takes about 2 s: 1 s of busy loop and 1 s of timer wake-ups")
            && said.contains("this run can say FAIL or NOT PROVEN, not PASS"),
        "{said}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "check");
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["measured"]["cpus"], "1");
    let cpu = &doc["figures"][0];
    assert_eq!(cpu["cpu"], 1);
    assert!(cpu["jitter_seconds"].as_f64().unwrap() > 0.5, "{cpu}");
    assert!(cpu["timer_samples"].as_u64().unwrap() > 500, "{cpu}");
    assert!(cpu["timer_max_ns"].as_u64().unwrap() >= cpu["timer_p99_ns"].as_u64().unwrap());
    // In a VM the host's share of the vCPU is reported beside the figures; not on bare metal.
    let virtual_machine = !doc["machine"]["hypervisor"].is_null();
    assert_eq!(cpu["steal_ms"].is_f64(), virtual_machine, "{cpu}");
    let target = &doc["targets"][0];
    assert_eq!(
        target["target"]["metric"],
        "interruptions-ge-10us-per-minute"
    );
    assert!(
        target["target"]["source"]
            .as_str()
            .unwrap()
            .contains("[S000]")
    );
    assert_eq!(target["values"][0]["cpu"], 1);
    let failures = doc["failures"].as_array().unwrap();
    assert!(
        failures[0]
            .as_str()
            .unwrap()
            .contains("audit finding(s) failed")
    );
    // Five rounds by default, each a run of its own: measure-jitter.json, -2 ... -5, and the
    // same of the timer.
    let names = file_names(&bundle);
    let mut expected: Vec<String> = ["audit.json", "check.json", "inventory.json"]
        .map(String::from)
        .to_vec();
    for kind in ["jitter", "timer"] {
        expected.push(format!("measure-{kind}.json"));
        expected.extend((2..=5).map(|n| format!("measure-{kind}-{n}.json")));
    }
    expected.sort();
    assert_eq!(names, expected);
    let saved = read_json(&bundle.join("check.json"));
    assert_eq!(saved["figures"], doc["figures"]);
    let page = std::fs::read_to_string(dir.path().join("check.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("lowlat-documents"));
    // The bundle feeds compare: both measurements, each compared on its own.
    let out = crate::support::lowlat(&[])
        .args(["compare", "--json"])
        .arg(&bundle)
        .arg("--")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let families: Vec<&str> = doc["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["family"].as_str().unwrap())
        .collect();
    assert_eq!(families, ["gaps", "wakeups"]);
}

#[test]
#[ignore = "measures the live machine; runs with LOWLAT_LIVE_TESTS=1 (CI sets it)"]
fn a_killed_long_run_leaves_a_checkpoint_and_a_finished_one_its_document() {
    let Some(_turn) = crate::support::live_on_cpu1(ROOT) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // kill -9 after two 1 s segments: the checkpoint holds them.
    let killed = dir.path().join("killed");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lowlat"))
        .args(["measure", "jitter", "--cpus", "1", "--threshold", "1000"])
        .args(["--duration", "30s", "--checkpoint", "1s", "--out"])
        .arg(&killed)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let checkpoint = killed.join("measure-jitter.checkpoint.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let segments = |path: &Path| -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|doc| doc["result"]["segments"].as_u64())
            .unwrap_or(0)
    };
    while segments(&checkpoint) < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let doc = read_json(&checkpoint);
    assert_eq!(doc["kind"], "measure-jitter");
    assert!(doc["result"]["segments"].as_u64().unwrap() >= 2, "{doc}");
    let runtime = doc["result"]["cpus"][0]["runtime_ns"].as_u64().unwrap();
    assert!(runtime >= 1_500_000_000, "{runtime}");
    let warnings = doc["result"]["warnings"].to_string();
    assert!(
        warnings.contains("checkpoint: the run was still going"),
        "{warnings}"
    );
    // A run that ends writes its document, with every segment, and removes the checkpoint.
    let finished = dir.path().join("finished");
    let out = crate::support::lowlat(&[])
        .args(["measure", "timer", "--cpus", "1", "--interval", "1000"])
        .args([
            "--duration",
            "2500ms",
            "--checkpoint",
            "1s",
            "--json",
            "--out",
        ])
        .arg(&finished)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["result"]["segments"], 3);
    assert!(
        doc["result"]["cpus"][0]["samples"].as_u64().unwrap() > 2000,
        "{doc}"
    );
    assert!(finished.join("measure-timer.json").exists());
    assert!(!finished.join("measure-timer.checkpoint.json").exists());
}

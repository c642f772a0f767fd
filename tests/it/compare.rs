//! `lowlat compare`: the statistics against scipy's answers (tests/data/compare/, made by the
//! script beside them), the A/A test on two halves of one recorded sysjitter run, the
//! before/after test of recorded runs against a synthetic "after" with fewer spikes, runs as
//! the unit with four documents per arm, and the bad inputs that must end with exit 2 and a
//! message naming the file.

use std::path::{Path, PathBuf};

use lowlat::compare::estimate::effect;
use lowlat::compare::stats::welch::t_quantile;
use serde_json::{Value, json};

use crate::support::lowlat;

pub(crate) const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/samples");

fn vectors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/compare/vectors.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// `got` is within `tolerance` of `want`, relatively: an absolute tolerance of 1e-6 accepted
/// any p-value below 1e-6 for one of 6.6e-14.
fn close(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance * want.abs(),
        "{what}: lowlat {got}, scipy {want} (relative tolerance {tolerance})"
    );
}

/// Compares relatively: scipy and statrs agree to about 1e-9 of the value, and an absolute
/// tolerance would accept anything for a p-value of 1e-12.
fn close_relatively(what: &str, got: f64, want: f64) {
    let tolerance = 1e-6 * want.abs().max(f64::MIN_POSITIVE);
    close(what, got, want, tolerance);
}

/// The ratio B/A of two arms of runs, its 95 % and 90 % intervals and its p-value are scipy's
/// Welch test on the logs of the runs' values.
#[test]
fn ratios_and_intervals_match_scipys_welch_test_on_the_logs() {
    let v = vectors();
    for case in v["welch"].as_array().unwrap() {
        let e = effect(&floats(&case["a"]), &floats(&case["b"])).unwrap();
        let want = |k: &str| case[k].as_f64().unwrap();
        close_relatively("ratio", e.ratio, want("ratio"));
        close_relatively("p", e.p, want("p"));
        close_relatively("95 % low", e.interval.0, want("low"));
        close_relatively("95 % high", e.interval.1, want("high"));
        close_relatively("90 % low", e.interval_90.0, want("low90"));
        close_relatively("90 % high", e.interval_90.1, want("high90"));
    }
    for case in v["t_quantiles"].as_array().unwrap() {
        let got = t_quantile(case["p"].as_f64().unwrap(), case["df"].as_f64().unwrap());
        close_relatively("t quantile", got, case["t"].as_f64().unwrap());
    }
}

/// A sysjitter `--raw` file of the rows of `text` whose timestamp `keep` accepts, as a run of
/// `runtime` cycles.
fn raw_part(
    text: &str,
    keep: impl Fn(u64) -> bool,
    map_ns: impl Fn(u64) -> u64,
    runtime: u64,
) -> String {
    let mut header = String::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.starts_with("# n_interruptions") || line.starts_with("# total_runtime") {
            continue;
        }
        if line.starts_with('#') {
            header.push_str(line);
            header.push('\n');
            continue;
        }
        let f: Vec<u64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        if keep(f[0]) {
            let ns = map_ns(f[3]);
            let cycles = if ns == f[3] { f[2] } else { ns * 2445 / 1000 };
            rows.push(format!("{:16} {:10} {:10} {:10}\n", f[0], f[1], cycles, ns));
        }
    }
    format!(
        "{header}# n_interruptions: {}\n# total_runtime: {runtime} cycles\n{}",
        rows.len(),
        rows.concat()
    )
}

fn runtime_cycles(text: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix("# total_runtime: ")?
                .strip_suffix(" cycles")?
                .parse()
                .ok()
        })
        .unwrap()
}

fn sample(cpu: u32) -> String {
    std::fs::read_to_string(format!("{SAMPLES}/sysjitter/run-1000ns.{cpu}")).unwrap()
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

pub(crate) fn compare_json(args: &[&str]) -> (Value, i32) {
    let out = lowlat(&[&["compare", "--json"], args].concat())
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    assert!(
        code == 0 || code == 1,
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (serde_json::from_slice(&out.stdout).unwrap(), code)
}

fn verdicts(doc: &Value, metric: &str) -> Vec<String> {
    doc["comparisons"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == metric)
        .map(|r| r["verdict"].as_str().unwrap().to_string())
        .collect()
}

/// The verdict of the primary endpoint `endpoint`.
pub(crate) fn primary_verdict(doc: &Value, endpoint: &str) -> String {
    doc["comparisons"][0]["primary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["endpoint"] == endpoint)
        .map(|r| r["verdict"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no {endpoint} in {doc}"))
}

/// Two halves of one recorded run (3 s of a busy guest, split in time) are one configuration:
/// no metric of either CPU may come out better or worse, at the default 10 µs and at 1 ms.
#[test]
fn two_halves_of_one_run_are_never_better_or_worse() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Vec::new();
    let mut second = Vec::new();
    for cpu in [0, 1] {
        let text = sample(cpu);
        let runtime = runtime_cycles(&text);
        let half_ns = runtime * 1000 / 2445 / 2;
        let a = raw_part(&text, |ts| ts < half_ns, |ns| ns, runtime / 2);
        let b = raw_part(&text, |ts| ts >= half_ns, |ns| ns, runtime / 2);
        first.push(write(dir.path(), &format!("first.{cpu}"), &a));
        second.push(write(dir.path(), &format!("second.{cpu}"), &b));
    }
    let path = |p: &PathBuf| p.to_str().unwrap().to_string();
    for above in ["10us", "1ms"] {
        let mut args = ["--above", above].map(String::from).to_vec();
        args.extend(first.iter().map(path));
        args.push("--".to_string());
        args.extend(second.iter().map(path));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (doc, code) = compare_json(&args);
        assert_eq!(code, 0);
        assert_eq!(doc["kind"], "compare");
        let rows = doc["comparisons"][0]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 8, "2 CPUs × 4 metrics");
        let primary = doc["comparisons"][0]["primary"].as_array().unwrap();
        assert_eq!(primary.len(), 3, "{doc}");
        for row in rows.iter().chain(primary) {
            let verdict = row["verdict"].as_str().unwrap();
            assert!(
                verdict != "better" && verdict != "worse",
                "A/A at {above}: {row}"
            );
        }
    }
}

/// A recorded document of `kind` (`tests/fixtures/report/<file>`), as `lowlat measure … --json`
/// wrote it, about host `host` with `settings`.
pub(crate) fn recorded(file: &str, host: &str, settings: Value) -> Value {
    let path = format!(
        "{}/tests/fixtures/report/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["host"] = json!(host);
    doc["environment"]["settings"] = settings;
    doc
}

/// A settings document beside peers' outputs in a bundle: what they ran under.
fn settings_document(nohz_full: &str) -> String {
    recorded(
        "freq.json",
        "guest",
        json!({"cmdline:nohz_full": nohz_full, "kernel.release": "6.18.0"}),
    )
    .to_string()
}

/// The recorded runs as "before"; "after" is the same runs with every interruption above 1 ms
/// cut to 0.5 ms (fewer spikes, same order of every other gap). One run per arm: the per-CPU
/// detail cannot tell (inconclusive), but the pooled rate above 1 ms went to nothing, beyond
/// the slices' variation and the ×10 run-to-run bound, so it is better; the median is not
/// called; the settings diff names the kernel parameter.
#[test]
fn fewer_spikes_come_out_better_for_the_tail_only() {
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before");
    let after = dir.path().join("after");
    std::fs::create_dir_all(&before).unwrap();
    std::fs::create_dir_all(&after).unwrap();
    for cpu in [0, 1] {
        let text = sample(cpu);
        write(&before, &format!("run.{cpu}"), &text);
        let runtime = runtime_cycles(&text);
        let capped = raw_part(
            &text,
            |_| true,
            |ns| if ns > 1_000_000 { 500_000 } else { ns },
            runtime,
        );
        write(&after, &format!("run.{cpu}"), &capped);
    }
    write(&before, "settings.json", &settings_document(""));
    write(&after, "settings.json", &settings_document("1"));
    let (doc, code) = compare_json(&[
        "--above",
        "1ms",
        before.to_str().unwrap(),
        "--",
        after.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "nothing is worse");
    assert_eq!(primary_verdict(&doc, "rate-above"), "better", "{doc}");
    assert_eq!(primary_verdict(&doc, "median"), "inconclusive");
    assert_eq!(
        verdicts(&doc, "rate-above"),
        ["inconclusive", "inconclusive"]
    );
    let between = &doc["comparisons"][0]["settings"]["between"];
    assert_eq!(between.as_array().unwrap().len(), 1, "{between}");
    assert_eq!(between[0]["key"], "cmdline:nohz_full");
    let text = lowlat(&[
        "compare",
        "--above",
        "1ms",
        before.to_str().unwrap(),
        "--",
        after.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("cmdline:nohz_full:  → 1"), "{text}");
    assert!(
        text.contains("one run in an arm: a change only beyond the variation inside the runs"),
        "{text}"
    );
}

/// A `measure-jitter` document of one CPU whose gaps are `base` ns times 1..=20 (and one
/// spike), recorded for 10 s under `settings`: the recorded document's first CPU, as CPU 3,
/// with these gaps and nothing counted beside it.
fn jitter_document(base: u64, run: u64) -> String {
    let buckets: Vec<[u64; 2]> = (1..=20)
        .map(|i| [base * i + run, 50])
        .chain([[5_000_000, 1]])
        .collect();
    let mut doc = recorded("jitter.json", "db1", json!({"cpufreq:boost": "1"}));
    let mut cpu = doc["result"]["cpus"][0].clone();
    cpu["cpu"] = json!(3);
    cpu["runtime_ns"] = json!(10_000_000_000u64);
    cpu["histogram"]["buckets"] = json!(buckets);
    cpu["attribution"] = Value::Null;
    doc["result"]["cpus"] = json!([cpu]);
    doc["result"]["load_average"] = Value::Null;
    doc.to_string()
}

/// Six documents per arm: the runs are the unit (Welch on the logs of one value per run); a
/// candidate 30 % slower is worse on the median, primary and per CPU, which exits 1. One
/// baseline run recorded another setting, and the comparison says so loudly.
#[test]
fn six_runs_per_arm_are_tested_over_runs_and_worse_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = Vec::new();
    for run in 0..6 {
        args.push(write(
            dir.path(),
            &format!("a{run}.json"),
            &jitter_document(1000, run),
        ));
    }
    // One baseline run with boost off: the arm is not one configuration, which is said.
    let a0 = std::fs::read_to_string(&args[0]).unwrap();
    std::fs::write(
        &args[0],
        a0.replace("\"cpufreq:boost\":\"1\"", "\"cpufreq:boost\":\"0\""),
    )
    .unwrap();
    let split = args.len();
    for run in 0..6 {
        args.push(write(
            dir.path(),
            &format!("b{run}.json"),
            &jitter_document(1300, run),
        ));
    }
    let mut args: Vec<String> = args
        .iter()
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    args.insert(split, "--".to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (doc, code) = compare_json(&args);
    assert_eq!(code, 1);
    assert_eq!(primary_verdict(&doc, "median"), "worse");
    assert_eq!(verdicts(&doc, "median"), ["worse"]);
    assert_eq!(verdicts(&doc, "p99"), ["worse"]);
    let median = &doc["comparisons"][0]["primary"][0];
    assert!(
        median["test"]
            .as_str()
            .unwrap()
            .starts_with("Welch's t on the logarithms of the runs' values (6 and 6 runs)"),
        "{median}"
    );
    let ratio = median["ratio"].as_f64().unwrap();
    assert!((ratio - 1.3).abs() < 0.01, "{median}");
    assert!(median["p"].as_f64().unwrap() < 1e-6, "{median}");
    let within = &doc["comparisons"][0]["settings"]["within_a"];
    assert_eq!(within[0]["key"], "cpufreq:boost", "{within}");
    assert_eq!(within[0]["a"], json!(["0", "1"]));
    assert_eq!(
        doc["comparisons"][0]["settings"]["within_b"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let text = lowlat(&[&["compare"], &args[..]].concat())
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("WARNING: settings differ WITHIN arm A")
            && text.contains("cpufreq:boost: 0 | 1"),
        "{text}"
    );
}

/// `compare --calibrate` of 24 and 100 untouched runs (R2-3: it listed every split before
/// drawing 2,000; 18 runs took 1.6 GB and 23 s, 24 runs were killed for memory): at most 2,000
/// splits per size, each the size asked, in seconds of CPU time and within 128 MiB of data
/// memory. `lowlat` is the debug build here (100 runs: about 5 s of CPU; bench/compare-
/// calibrate.sh measures any build). CPU time, not wall time, is bounded: the machine running
/// the tests may be shared.
#[test]
fn calibrating_many_runs_is_bounded_in_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    for (runs, cpu_seconds) in [(24, 10.0), (100, 20.0)] {
        let paths = files(dir.path(), &format!("r{runs}-"), runs, |run| {
            // Medians spread by a few per cent from run to run, as untouched runs do.
            jitter_document(1000 + (run as u64 * 37) % 50, run as u64)
        });
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("lowlat"));
        command
            .args(["compare", "--json", "--calibrate"])
            .args(&paths);
        // The listing took GBs; the splits drawn take a few MiB.
        let (status, cpu, stdout) = crate::support::run_limited(&mut command, 128 << 20);
        assert_eq!(status, 0, "{runs} runs: killed, or past 128 MiB of data");
        eprintln!("{runs} runs: {cpu:.1} s of CPU");
        assert!(cpu < cpu_seconds, "{runs} runs: {cpu:.1} s of CPU");
        let doc: Value = serde_json::from_slice(&stdout).unwrap();
        let shares = doc["calibrations"][0]["shares"].as_array().unwrap();
        assert_eq!(shares.len(), 3 * runs as usize / 2);
        for share in shares.iter().filter(|s| s["design"] == "all") {
            let splits = share["splits"].as_u64().unwrap();
            let k = share["runs_per_arm"].as_u64().unwrap();
            // 24 runs have 276 splits of 1 and 1: all of them.
            let expected = if (runs, k) == (24, 1) { 276 } else { 2000 };
            assert_eq!(splits, expected, "{runs} runs: {share}");
        }
    }
}

/// `--calibrate` over runs that measured no CPU in common (R2-15: it printed "0 %" shares
/// and exited 0), or no kernel in common: exit 2, each set named with its runs.
#[test]
fn calibrating_runs_with_nothing_in_common_is_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let jitter = files(dir.path(), "jitter", 4, |run| {
        let cpu = format!("\"cpu\":{}", 1 + run % 2);
        jitter_document(1000, u64::from(run)).replace("\"cpu\":3", &cpu)
    });
    let likwid = files(dir.path(), "likwid", 4, |run| {
        let test = if run % 2 == 0 { "copy" } else { "triad" };
        likwid_output(test, 10_000.0 + f64::from(run))
    });
    for (paths, said, sets) in [
        (jitter, "no CPU in common", ["CPUs 1", "CPUs 2"]),
        (
            likwid,
            "no kernel in common",
            ["kernels copy", "kernels triad"],
        ),
    ] {
        let args: Vec<&str> = paths.iter().map(String::as_str).collect();
        let out = lowlat(&[&["compare", "--calibrate"], &args[..]].concat())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(stderr.contains(said), "{stderr}");
        for (i, set) in sets.iter().enumerate() {
            let named = format!("{set} in {}, {}", paths[i], paths[i + 2]);
            assert!(stderr.contains(&named), "{named}: {stderr}");
        }
    }
}

/// N11: the compare and calibration documents' `host` was `unknown` though every run named
/// one: it is the hosts the runs name, each once.
#[test]
fn the_documents_name_the_hosts_of_their_runs() {
    let dir = tempfile::tempdir().unwrap();
    let a = files(dir.path(), "a", 4, |run| {
        jitter_document(1000, u64::from(run))
    });
    let b = files(dir.path(), "b", 4, |run| {
        jitter_document(1000, u64::from(run)).replace("\"host\":\"db1\"", "\"host\":\"db2\"")
    });
    let arms = |b: &[String]| -> Vec<String> { [&a[..], &["--".to_string()], b].concat() };
    for (b, host) in [(&a, "db1"), (&b, "db1, db2")] {
        let args = arms(b);
        let (doc, _) = compare_json(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(doc["host"], host);
    }
    let args: Vec<&str> = a.iter().map(String::as_str).collect();
    let out = lowlat(&[&["compare", "--json", "--calibrate"], &args[..]].concat())
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["host"], "db1");
}

/// N11: the settings diff shows IRQ affinities (measure records them now): a tuning that
/// moved 50 IRQs lists the first 40 by name and says how many there are.
#[test]
fn many_settings_that_differ_are_listed_up_to_a_cap() {
    let dir = tempfile::tempdir().unwrap();
    let with_irqs = |run: u32, cpus: &str| {
        let irqs: Vec<String> = (0..50)
            .map(|irq| format!("\"irq:{irq}:affinity\":\"{cpus}\""))
            .collect();
        jitter_document(1000, u64::from(run)).replace(
            "\"cpufreq:boost\":\"1\"",
            &format!("\"cpufreq:boost\":\"1\",{}", irqs.join(",")),
        )
    };
    let a = files(dir.path(), "a", 2, |run| with_irqs(run, "0-3"));
    let b = files(dir.path(), "b", 2, |run| with_irqs(run, "0"));
    let args: Vec<String> = [&a[..], &["--".to_string()], &b[..]].concat();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = lowlat(&[&["compare"], &args[..]].concat())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("(50 keys; the first 40 by name, --json has every one)"),
        "{text}"
    );
    assert!(text.contains("  irq:0:affinity: 0-3 → 0"), "{text}");
    assert_eq!(text.matches(":affinity: 0-3 → 0").count(), 40, "{text}");
    let (doc, _) = compare_json(&args);
    let between = doc["comparisons"][0]["settings"]["between"]
        .as_array()
        .unwrap();
    assert_eq!(between.len(), 50);
}

/// Bad input: exit 2, the file named, never a panic.
#[test]
fn bad_input_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.0", &sample(0));
    let text = sample(0);
    let cut = write(dir.path(), "cut.0", &text[..text.len() - 7]);
    let unknown = write(dir.path(), "notes.txt", "hello\n");
    let newer = write(
        dir.path(),
        "newer.json",
        &jitter_document(1000, 0).replacen("\"schema_version\":2", "\"schema_version\":9", 1),
    );
    let threshold = write(
        dir.path(),
        "t200.0",
        &text.replace("# threshold: 1000ns", "# threshold: 200ns"),
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let inventory = write(
        dir.path(),
        "inventory.json",
        &jitter_document(1000, 0).replacen(
            "\"kind\":\"measure-jitter\"",
            "\"kind\":\"inventory\"",
            1,
        ),
    );
    let cyclic = format!("{SAMPLES}/cyclictest/v-h200-p95-i1000-l3000.txt");
    let data = env!("CARGO_MANIFEST_DIR");
    let timer = format!("{data}/tests/data/compare/aa-quiet-2vcpu/measure-timer.json");
    let membw = format!("{data}/tests/fixtures/report/membw.json");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, String, &str)> = vec![
        (
            vec![s(&good), "--".into(), s(&cut)],
            s(&cut),
            "cut off mid-line",
        ),
        (
            vec![s(&good), "--".into(), s(&unknown)],
            format!("{}:1", s(&unknown)),
            "not a format",
        ),
        (
            vec![s(&good), "--".into(), s(&newer)],
            s(&newer),
            "schema_version 9",
        ),
        (
            vec![s(&good), s(&threshold), "--".into(), s(&good)],
            s(&dir.path().join("t200")),
            "has threshold 200 ns",
        ),
        (
            vec![s(&good), "--".into(), s(&empty)],
            s(&empty),
            "holds no file; give a bundle that `--out DIR`",
        ),
        (
            vec![s(&good), "--".into(), cyclic.clone()],
            cyclic,
            "cannot be compared",
        ),
        (
            vec![s(&good), "--".into(), s(&dir.path().join("gone.0"))],
            "gone.0".into(),
            "cannot read",
        ),
        // Two measurements in one arm and none shared with the other: which file holds what,
        // and what to give (D12, issue 32: "holds timer wake-up latencies, other in arm A").
        (
            vec![s(&good), timer.clone(), "--".into(), membw],
            format!(
                "{timer}: holds timer wake-up latencies, while {} (also in arm A) holds \
                 busy-loop interruptions",
                s(&dir.path().join("good"))
            ),
            "share no measurement to compare: give runs of the same measurement on both sides of `--`",
        ),
        // A lowlat document without runs, named by its kind.
        (
            vec![s(&good), "--".into(), s(&inventory)],
            s(&inventory),
            "a document of kind inventory holds no run",
        ),
        // A threshold without its unit was 20 s (µs to cyclictest): every rate came out 0.
        (
            vec![
                "--above".into(),
                "20".into(),
                s(&good),
                "--".into(),
                s(&good),
            ],
            "--above".into(),
            "'20' has no unit; write 20us",
        ),
        // --root was ignored without a word: compare reads no machine.
        (
            vec![
                "--root".into(),
                s(dir.path()),
                s(&good),
                "--".into(),
                s(&good),
            ],
            "--root".into(),
            "`lowlat compare` reads the runs",
        ),
        // An option after `--` is arm B's: named as an option, not as a file not found.
        (
            vec![
                s(&good),
                "--".into(),
                s(&good),
                "--above".into(),
                "20us".into(),
            ],
            "--above".into(),
            "options go before `--`",
        ),
    ];
    for (args, names, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = lowlat(&[&["compare"], &args[..]].concat())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&names) && stderr.contains(says),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // An empty arm: clap refuses it before anything is read.
    for args in [vec!["compare", "--", "x"], vec!["compare", "x"]] {
        lowlat(&args).assert().code(2);
    }
}

/// The A/A test on cyclictest's `-v` stream: its first and second 1500 wake-ups (numbered
/// from 0 again) are one configuration, so no row is better or worse.
#[test]
fn two_halves_of_one_cyclictest_stream_are_never_better_or_worse() {
    let text = std::fs::read_to_string(format!("{SAMPLES}/cyclictest/v-h200-p95-i1000-l3000.txt"))
        .unwrap();
    let samples: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("0:"))
        .map(|l| l.rsplit(':').next().unwrap().trim())
        .collect();
    assert_eq!(samples.len(), 3000);
    let half = |part: &[&str]| -> String {
        part.iter()
            .enumerate()
            .map(|(cycle, us)| format!("{:6}: {cycle:6}: {us:8}\n", 0))
            .collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "first.txt", &half(&samples[..1500]));
    let b = write(dir.path(), "second.txt", &half(&samples[1500..]));
    let (doc, code) = compare_json(&[a.to_str().unwrap(), "--", b.to_str().unwrap()]);
    assert_eq!(code, 0);
    for row in doc["comparisons"][0]["rows"].as_array().unwrap() {
        let verdict = row["verdict"].as_str().unwrap();
        assert!(verdict != "better" && verdict != "worse", "{row}");
    }
}

/// STREAM's stdout with `triad` as its Triad best rate and `other` for Copy, Scale and Add, MB/s.
fn stream_stdout(other: f64, triad: f64) -> String {
    format!(
        "-------------------------------------------------------------\n\
         STREAM version $Revision: 5.10 $\n\
         Each test below will take on the order of 14550 microseconds.\n\
         -------------------------------------------------------------\n\
         Function    Best Rate MB/s  Avg time     Min time     Max time\n\
         Copy:       {other:12.1}     0.014654     0.014512     0.014843\n\
         Scale:      {other:12.1}     0.014754     0.014667     0.014890\n\
         Add:        {other:12.1}     0.019868     0.019781     0.020001\n\
         Triad:      {triad:12.1}     0.019820     0.019693     0.019983\n\
         -------------------------------------------------------------\n\
         Solution Validates: avg error less than 1.000000e-13 on all three arrays\n"
    )
}

/// A `measure-membw` document with the same rates as [`stream_stdout`].
fn membw_document(other: f64, triad: f64) -> String {
    let mut doc = recorded("membw.json", "db1", json!({"cpufreq:boost": "1"}));
    for kernel in doc["result"]["system"]["kernels"].as_array_mut().unwrap() {
        let rate = if kernel["kernel"] == "triad" {
            triad
        } else {
            other
        };
        kernel["best_rate_mb_per_s"] = json!(rate);
    }
    doc.to_string()
}

/// Writes `runs` files made by `make(run)` into `dir` as `prefix<run>` and gives their paths.
fn files(dir: &Path, prefix: &str, runs: u32, make: impl Fn(u32) -> String) -> Vec<String> {
    (0..runs)
        .map(|run| {
            let path = write(dir, &format!("{prefix}{run}"), &make(run));
            path.to_str().unwrap().to_string()
        })
        .collect()
}

fn throughput_rows(doc: &Value) -> Vec<(String, String)> {
    doc["comparisons"][0]["primary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["endpoint"], "best-rate", "{r}");
            assert_eq!(r["unit"], "MB/s", "{r}");
            (
                r["kernel"].as_str().unwrap().to_string(),
                r["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Five STREAM outputs against five membw documents: one row per kernel, runs as the unit;
/// a Triad 20 % faster is better (higher is better for throughput), the other kernels within
/// 0.1 % are equivalent within ±3 %; the other way round Triad is worse and the exit code 1.
#[test]
fn stream_and_membw_runs_compare_per_kernel_and_higher_is_better() {
    let dir = tempfile::tempdir().unwrap();
    let jitter = |run: u32| f64::from(run) * 10.0;
    let a = files(dir.path(), "stream.", 5, |r| {
        stream_stdout(10_000.0 + jitter(r), 10_000.0 + jitter(r))
    });
    let b = files(dir.path(), "membw.json.", 5, |r| {
        membw_document(10_005.0 + jitter(r), 12_000.0 + jitter(r))
    });
    let args = |x: &[String], y: &[String]| -> Vec<String> { [x, &["--".to_string()], y].concat() };
    let forward = args(&a, &b);
    let forward: Vec<&str> = forward.iter().map(String::as_str).collect();
    let (doc, code) = compare_json(&forward);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["comparisons"][0]["family"], "throughput");
    let equivalent = "equivalent".to_string();
    assert_eq!(
        throughput_rows(&doc),
        [
            ("add".to_string(), equivalent.clone()),
            ("copy".to_string(), equivalent.clone()),
            ("scale".to_string(), equivalent),
            ("triad".to_string(), "better".to_string()),
        ]
    );
    let triad = &doc["comparisons"][0]["primary"][3];
    assert!(
        triad["test"]
            .as_str()
            .unwrap()
            .starts_with("Welch's t on the logarithms"),
        "{triad}"
    );
    assert!(triad["p_holm"].as_f64().unwrap() < 0.05, "{triad}");
    assert!(triad["ratio"].as_f64().unwrap() > 1.19, "{triad}");

    let backward = args(&b, &a);
    let backward: Vec<&str> = backward.iter().map(String::as_str).collect();
    let (doc, code) = compare_json(&backward);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(throughput_rows(&doc)[3], ("triad".into(), "worse".into()));
    let text = lowlat(&[&["compare"], &backward[..]].concat())
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("higher is better") && text.contains("triad best rate"),
        "{text}"
    );
}

/// One STREAM run per arm cannot tell a change from the variation between runs, even a
/// doubling (STREAM keeps no order in time, so nothing is known of the variation inside a
/// run either): inconclusive, naming the runs a test would need.
#[test]
fn one_stream_run_per_arm_is_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let a = files(dir.path(), "a.", 1, |r| {
        stream_stdout(10_000.0 + f64::from(r), 10_000.0)
    });
    let b = files(dir.path(), "b.", 1, |r| {
        stream_stdout(20_000.0 + f64::from(r), 20_000.0)
    });
    let args: Vec<String> = [&a[..], &["--".to_string()], &b[..]].concat();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (doc, code) = compare_json(&args);
    assert_eq!(code, 0);
    for row in doc["comparisons"][0]["primary"].as_array().unwrap() {
        assert_eq!(row["verdict"], "inconclusive", "{row}");
        assert_eq!(row["runs_needed"], 2, "{row}");
    }
}

/// A STREAM table cut short or with a rate that is not a number: exit 2, file and line named.
#[test]
fn broken_stream_tables_are_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good", &stream_stdout(1.0, 1.0));
    let full = stream_stdout(1.0, 1.0);
    let cut: String = full.lines().take(7).map(|l| format!("{l}\n")).collect();
    let cut = write(dir.path(), "cut", &cut);
    let nan = write(
        dir.path(),
        "nan",
        &full.replace("Add:                 1.0", "Add:                 n/a"),
    );
    let s = |p: &Path| p.to_str().unwrap().to_string();
    for (bad, line, says) in [
        // The table's header line is named: the Add line it lacks is not in the file.
        (&cut, 5, "STREAM's table ends before its Add line"),
        (&nan, 8, "Add's best rate \"n/a\" is not a positive number"),
    ] {
        let out = lowlat(&["compare", &s(&good), "--", &s(bad)])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("{}:{line}", s(bad))) && stderr.contains(says),
            "{stderr}"
        );
    }
}

/// likwid-bench's output for `test` with `rate` MByte/s (the lines around it as likwid-bench
/// prints them, abridged).
fn likwid_output(test: &str, rate: f64) -> String {
    let line = "-".repeat(80);
    format!(
        "Allocate: Process running on hwthread 0 (Domain N) - Vector length 3000/24000 Offset 0 Alignment 512\n\
         {line}\nLIKWID MICRO BENCHMARK\nTest: {test}\n{line}\nUsing 1 work groups\nUsing 2 threads\n{line}\n\
         Cycles:                 5893702570\n\
         Time:                   2.362926e+00 sec\n\
         Iterations:             1024\n\
         MFlops/s:               866.72\n\
         Data volume (Byte):     24576000000\n\
         MByte/s:                {rate:.2}\n\
         Cycles per update:      5.755569\n\
         {line}\n"
    )
}

/// likwid-bench runs are runs of the same family, keyed by the test name: five runs of
/// `stream` 10 % slower are worse; a run cut off before its `MByte/s:` line is refused.
#[test]
fn likwid_bench_runs_compare_by_test_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = files(dir.path(), "a.", 5, |r| {
        likwid_output("stream", 20_000.0 + f64::from(r))
    });
    let b = files(dir.path(), "b.", 5, |r| {
        likwid_output("stream", 18_000.0 + f64::from(r))
    });
    let args: Vec<String> = [&a[..], &["--".to_string()], &b[..]].concat();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (doc, code) = compare_json(&args);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(throughput_rows(&doc), [("stream".into(), "worse".into())]);

    let full = likwid_output("stream", 1.0);
    let cut = full.split("MByte/s:").next().unwrap();
    let cut = write(dir.path(), "cut", cut);
    let out = lowlat(&["compare", &a[0], "--", cut.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3", cut.display())) && stderr.contains("no `MByte/s:` line"),
        "{stderr}"
    );
}

/// A `bios` document (`lowlat bios read -o FILE`) with `attributes` as its current values.
fn bios_document(attributes: Value) -> String {
    json!({
        "schema_version": 2, "kind": "bios",
        "tool": {"name": "lowlat", "version": "0.1.0"},
        "created": "2026-11-25T15:00:00Z", "host": "https://bmc1",
        "bmc": "https://bmc1",
        "system": {"uri": "/redfish/v1/Systems/1", "id": "1", "manufacturer": "Dell Inc.",
                   "model": null, "host_name": null},
        "bios_uri": "/redfish/v1/Systems/1/Bios", "attribute_registry": null,
        "current": attributes, "settings_object": null, "supported_apply_times": [],
        "pending": {}, "registry": null
    })
    .to_string()
}

/// Bilibili's question (seeds/001 §3.5): STREAM under NPS1 against NPS4. With the BIOS read
/// into each bundle, the settings diff names the attribute that differs, and only it.
#[test]
fn a_bios_document_in_a_bundle_puts_the_attributes_in_the_settings_diff() {
    let dir = tempfile::tempdir().unwrap();
    let arm = |name: &str, nps: &str, triad: f64| {
        let bundle = dir.path().join(name);
        std::fs::create_dir_all(&bundle).unwrap();
        for run in 0..5 {
            let rate = triad + f64::from(run);
            write(
                &bundle,
                &format!("stream.{run}"),
                &stream_stdout(20_000.0, rate),
            );
        }
        let attributes = json!({"NumaNodesPerSocket": nps, "LogicalProc": "Enabled"});
        write(&bundle, "bios.json", &bios_document(attributes));
        bundle.to_str().unwrap().to_string()
    };
    let (nps1, nps4) = (arm("nps1", "1", 20_000.0), arm("nps4", "4", 21_000.0));
    let (doc, _) = compare_json(&[&nps1, "--", &nps4]);
    let between = &doc["comparisons"][0]["settings"]["between"];
    assert_eq!(
        between,
        &json!([{"key": "bios:NumaNodesPerSocket", "a": ["1"], "b": ["4"]}]),
        "{doc}"
    );
    assert_eq!(doc["comparisons"][0]["settings"]["unknown"], json!([]));
}

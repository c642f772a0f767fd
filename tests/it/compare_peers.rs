//! `lowlat compare` on the peers' summaries and oslat's table: sysjitter's summary table,
//! cyclictest's `T:` lines (with and without `-q`) and oslat's per-CPU table, read from
//! recorded outputs (tests/fixtures/samples/, tests/data/peers/), and the same outputs cut
//! off, refused with exit 2 naming the file and the line.

use std::path::Path;

use serde_json::Value;

use crate::compare::{SAMPLES, compare_json, write};
use crate::support::lowlat;

/// Recorded on this project's 2-vCPU guest: `oslat -D 2 -c 1` and `oslat -D 2 -c 0,1 -z`
/// (rt-tests 2.4), `cyclictest -m -p95 -i 1000 -l 600 -a 0,1 -t 2 --mainaffinity=0` without
/// `-q` (the `T:` lines refreshed, with the terminal's escape codes).
const PEERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/peers");

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn rows(doc: &Value) -> &Vec<Value> {
    doc["comparisons"][0]["rows"].as_array().unwrap()
}

/// `(cpu, metric)` of every row.
fn keys(doc: &Value) -> Vec<(u64, String)> {
    rows(doc)
        .iter()
        .map(|r| {
            (
                r["cpu"].as_u64().unwrap(),
                r["metric"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn row<'a>(doc: &'a Value, cpu: u64, metric: &str) -> &'a Value {
    rows(doc)
        .iter()
        .find(|r| r["cpu"] == cpu && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} row for CPU {cpu}: {doc}"))
}

fn notes(doc: &Value) -> String {
    doc["comparisons"][0]["notes"].to_string()
}

/// `runs` files of `text` with `replace(run)` applied, in `dir` as `prefix<run>`.
fn runs(dir: &Path, prefix: &str, count: u32, text: impl Fn(u32) -> String) -> Vec<String> {
    (0..count)
        .map(|run| {
            let path = write(dir, &format!("{prefix}{run}"), &text(run));
            path.to_str().unwrap().to_string()
        })
        .collect()
}

fn arms(a: &[String], b: &[String]) -> Vec<String> {
    [a, &["--".to_string()], b].concat()
}

fn json(args: &[String]) -> (Value, i32) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    compare_json(&args)
}

/// sysjitter's summary table of a run gives the figures lowlat computes from the `--raw`
/// files of the same run: median, p99 and max to the ns, the mean within 1 ns (sysjitter
/// averages cycles, lowlat the ns of each row); one run per arm is inconclusive, and the note
/// says what a summary cannot give.
#[test]
fn sysjitter_summary_gives_the_figures_of_its_raw_files() {
    let raw = |cpu| format!("{SAMPLES}/sysjitter/run-1000ns.{cpu}");
    let summary = format!("{SAMPLES}/sysjitter/run-1000ns.summary.txt");
    let (doc, code) = json(&arms(&[raw(0), raw(1)], &[summary]));
    assert_eq!(code, 0);
    let metrics = ["median", "p99", "max", "mean"];
    let expected: Vec<(u64, String)> = [0, 1]
        .iter()
        .flat_map(|&cpu| metrics.map(|m| (cpu, m.to_string())))
        .collect();
    assert_eq!(keys(&doc), expected);
    for r in rows(&doc) {
        let (a, b) = (
            r["a"]["value"].as_f64().unwrap(),
            r["b"]["value"].as_f64().unwrap(),
        );
        let tolerance = if r["metric"] == "mean" { 1.0 } else { 0.0 };
        assert!((a - b).abs() <= tolerance, "{r}");
        assert_eq!(r["verdict"], "inconclusive", "{r}");
    }
    assert!((row(&doc, 1, "max")["b"]["value"].as_f64().unwrap() - 37_399_335.0).abs() < 1e-6);
    let notes = notes(&doc);
    assert!(
        notes.contains("peers' summaries hold figures, not latencies")
            && notes.contains("the rate above --above"),
        "{notes}"
    );
}

/// The recorded summary (CPUs 0 and 1) with its `int_max` row set to `max_ns` on both CPUs.
fn sysjitter_summary(max_ns: u64) -> String {
    let text = read(&format!("{SAMPLES}/sysjitter/run-1000ns.summary.txt"));
    text.replace(
        "int_max(ns): 16826309 37399335",
        &format!("int_max(ns): {max_ns} {max_ns}"),
    )
}

/// Six summaries per arm: runs are the unit. A maximum cut from 40 ms to 1 ms in every run is
/// better on both CPUs and in the primary endpoint (Welch on the logs of the runs' values);
/// the unchanged figures are not better or worse; the other way round the maximum is worse
/// and the exit code 1.
#[test]
fn sysjitter_summaries_compare_one_value_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let before = runs(dir.path(), "before.", 6, |r| {
        sysjitter_summary(40_000_000 + u64::from(r) * 1000)
    });
    let after = runs(dir.path(), "after.", 6, |r| {
        sysjitter_summary(1_000_000 + u64::from(r) * 1000)
    });
    let (doc, code) = json(&arms(&before, &after));
    assert_eq!(code, 0, "{doc}");
    for cpu in [0, 1] {
        let max = row(&doc, cpu, "max");
        assert_eq!(max["verdict"], "better", "{max}");
        assert!(
            max["test"]
                .as_str()
                .unwrap()
                .starts_with("Welch's t on the runs' logarithms"),
            "{max}"
        );
        assert!(max["p_holm"].as_f64().unwrap() < 1e-6, "{max}");
        for metric in ["median", "p99", "mean"] {
            let verdict = row(&doc, cpu, metric)["verdict"].as_str().unwrap();
            assert!(verdict != "better" && verdict != "worse", "{metric}: {doc}");
        }
    }
    assert_eq!(
        crate::compare::primary_verdict(&doc, "worst-max"),
        "better",
        "{doc}"
    );
    let (doc, code) = json(&arms(&after, &before));
    assert_eq!(code, 1);
    assert_eq!(row(&doc, 0, "max")["verdict"], "worse");
}

/// The recorded `-q` summary line with `Max:` set to `max_us`.
fn cyclictest_line(max_us: u64) -> String {
    let text = read(&format!("{SAMPLES}/cyclictest/summary-p95-i1000-l3000.txt"));
    text.replace("Max:    2160", &format!("Max: {max_us:7}"))
}

/// cyclictest without `-q` refreshes its `T:` lines: the last of each thread counts. A summary
/// gives the maximum and the mean only, which is all that is compared; five runs per arm with
/// the maximum cut from 2 ms to 0.5 ms are better on the maximum, and the unchanged mean is
/// equivalent.
#[test]
fn cyclictest_summary_lines_give_max_and_mean_per_run() {
    let refreshed = format!("{PEERS}/cyclictest-t2-l600.txt");
    let (doc, code) = json(&arms(
        std::slice::from_ref(&refreshed),
        std::slice::from_ref(&refreshed),
    ));
    assert_eq!(code, 0);
    let expected: Vec<(u64, String)> = [0, 1]
        .iter()
        .flat_map(|&t| ["max", "mean"].map(|m| (t, m.to_string())))
        .collect();
    assert_eq!(keys(&doc), expected);
    // The last lines: `T: 0 … Avg: 48 Max: 311` and `T: 1 … Avg: 63 Max: 1640`.
    let value = |cpu, metric| row(&doc, cpu, metric)["a"]["value"].as_f64().unwrap();
    assert!((value(0, "max") - 311_000.0).abs() < 1e-6);
    assert!((value(1, "max") - 1_640_000.0).abs() < 1e-6);
    assert!((value(1, "mean") - 63_000.0).abs() < 1e-6);
    assert!(notes(&doc).contains("summaries hold figures"), "{doc}");

    let dir = tempfile::tempdir().unwrap();
    let before = runs(dir.path(), "before.", 5, |r| {
        cyclictest_line(2160 + u64::from(r))
    });
    let after = runs(dir.path(), "after.", 5, |r| {
        cyclictest_line(500 + u64::from(r))
    });
    let (doc, code) = json(&arms(&before, &after));
    assert_eq!(code, 0);
    assert_eq!(row(&doc, 0, "max")["verdict"], "better");
    assert_eq!(row(&doc, 0, "mean")["verdict"], "equivalent");
}

/// oslat's table is a histogram per CPU (1 µs buckets at their upper edge): the median of a
/// busy loop is 1 µs, the maximum is oslat's `Maximum:`; a CPU measured in one arm only is
/// said, and so is what the last bucket hides.
#[test]
fn oslat_tables_compare_as_histograms() {
    let one = format!("{PEERS}/oslat-D2-c1.txt");
    let zero_omitted = format!("{PEERS}/oslat-D2-c0,1-z.txt");
    let maximum = |text: &str| -> Vec<f64> {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("Maximum:"))
            .unwrap();
        line.split_whitespace()
            .skip(1)
            .take_while(|v| !v.starts_with('('))
            .map(|v| v.parse::<f64>().unwrap() * 1000.0)
            .collect()
    };
    let (doc, _) = json(&arms(
        std::slice::from_ref(&one),
        std::slice::from_ref(&zero_omitted),
    ));
    let metrics = ["median", "p99", "max", "rate-above"];
    assert_eq!(keys(&doc), metrics.map(|m| (1, m.to_string())).to_vec());
    let value = |arm: &str, metric| row(&doc, 1, metric)[arm]["value"].as_f64().unwrap();
    assert_eq!(value("a", "median"), 1000.0);
    assert_eq!(value("a", "max"), maximum(&read(&one))[0]);
    assert_eq!(value("b", "max"), maximum(&read(&zero_omitted))[1]);
    let notes = notes(&doc);
    assert!(
        notes.contains("CPUs [0] measured only in arm B")
            && notes.contains("oslat's last bucket holds every longer loop iteration"),
        "{notes}"
    );
}

/// Each format cut off mid-line, and cut at a line boundary before the figures it needs:
/// exit 2, the file (and the line, where one is to blame) named, never a panic.
#[test]
fn peer_outputs_cut_off_are_refused_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let oslat = read(&format!("{PEERS}/oslat-D2-c1.txt"));
    let summary = read(&format!("{SAMPLES}/sysjitter/run-1000ns.summary.txt"));
    let cyclic = read(&format!("{SAMPLES}/cyclictest/summary-p95-i1000-l3000.txt"));
    let first_lines = |text: &str, n: usize| -> String {
        text.lines().take(n).map(|l| format!("{l}\n")).collect()
    };
    let mid_line = |text: &str, line: usize| -> String {
        let kept = first_lines(text, line);
        kept[..kept.len() - 4].to_string()
    };
    // (file name, contents, line named, what the error says)
    let cases = [
        (
            "oslat-mid",
            mid_line(&oslat, 20),
            Some(20),
            "cut off mid-line",
        ),
        (
            "oslat-rows",
            first_lines(&oslat, 49),
            None,
            "no `Maximum:` row",
        ),
        (
            "sysjitter-mid",
            mid_line(&summary, 9),
            Some(9),
            "cut off mid-line",
        ),
        (
            "sysjitter-rows",
            first_lines(&summary, 9),
            None,
            "no `int_mean(ns):` row",
        ),
        (
            "cyclictest-mid",
            mid_line(&cyclic, 2),
            Some(2),
            "cut off mid-line",
        ),
        (
            "cyclictest-line",
            format!("{}\n", &cyclic[..cyclic.find("Min:").unwrap()]),
            Some(2),
            "expected `T: N (TID)",
        ),
    ];
    let good = format!("{SAMPLES}/sysjitter/run-1000ns.summary.txt");
    for (name, text, line, says) in cases {
        let bad = write(dir.path(), name, &text);
        let bad = bad.to_str().unwrap();
        let out = lowlat(&["compare", &good, "--", bad]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        let named = match line {
            Some(line) => format!("{bad}:{line}: "),
            None => format!("{bad}: "),
        };
        assert!(
            stderr.contains(&named) && stderr.contains(says),
            "{name}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

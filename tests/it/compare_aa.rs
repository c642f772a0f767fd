//! compare's verdicts on real recorded runs (tests/data/compare/aa-*-2vcpu: ten untouched
//! rounds of `lowlat check` each, on a busy and a quiet 2-vCPU guest, the method tuned on
//! those two, and a third set recorded on another day that the method never saw): no
//! difference called between untouched runs split consecutively or interleaved, 1 to 4 runs
//! per arm (an A/A test), and the false-verdict rate over every split held to its bound per
//! set; effects planted in copies of the same runs (every latency × 1.2, 1.5, 2, and divided)
//! found as the method's power says; one run per arm inconclusive with the runs needed; and
//! the bad inputs of the verdict model (runs without slices, conditions in one arm only, too
//! few runs to calibrate, counts that overflow).

use std::path::{Path, PathBuf};

use lowlat::compare::run::Run;
use lowlat::compare::{Comparison, Options, compare_each};
use lowlat::report::runs::load;
use serde_json::Value;

use crate::compare::{compare_json, write};
use crate::support::lowlat;

/// Ten untouched rounds while six builds ran on the machine (tests/data/compare/aa-busy-2vcpu.md).
const AA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/compare/aa-busy-2vcpu"
);

/// Ten untouched rounds with nothing else running (tests/data/compare/aa-quiet-2vcpu.md).
const QUIET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/compare/aa-quiet-2vcpu"
);

/// Ten untouched rounds recorded on another day than the two sets above, which the method
/// was tuned on (tests/data/compare/aa-holdout-2vcpu.md).
const HOLDOUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/compare/aa-holdout-2vcpu"
);

/// A recorded A/A set and the bound its false verdicts are held to.
struct Set {
    /// The directory of its ten rounds.
    dir: &'static str,
    /// Nothing else ran: no verdict at all in consecutive and interleaved splits.
    quiet: bool,
    /// The largest share of splits (2 runs per arm or more, drawn every way) in which compare
    /// may call any difference, explained by the environment or not.
    any_verdict: f64,
}

/// Every A/A set. The method promises at most 5 % false verdicts with 2 runs per arm or more;
/// the busy set, on which it was tuned, gets 8 %: the drift at its round 6 (the timer's tail
/// rose with other tasks' time) gives verdicts, each marked confounded, in up to 7.8 % of its
/// splits. The held-out set is held to the promise.
const SETS: [Set; 3] = [
    Set {
        dir: AA,
        quiet: false,
        any_verdict: 0.08,
    },
    Set {
        dir: QUIET,
        quiet: true,
        any_verdict: 0.05,
    },
    Set {
        dir: HOLDOUT,
        quiet: false,
        any_verdict: 0.05,
    },
];

/// The largest share of splits, in every set, with a verdict the environment does not
/// explain (what sets the exit code): the method's promise.
const UNEXPLAINED: f64 = 0.05;

/// Round `n` (1-based) of `kind` (`jitter`, `timer`) of the busy set.
fn round(kind: &str, n: usize) -> PathBuf {
    round_of(AA, kind, n)
}

/// Round `n` (1-based) of `kind` of the set in `dir`.
fn round_of(dir: &str, kind: &str, n: usize) -> PathBuf {
    let name = match n {
        1 => format!("measure-{kind}.json"),
        n => format!("measure-{kind}-{n}.json"),
    };
    Path::new(dir).join(name)
}

/// The recorded runs of `kind` of the set in `dir`, in the order measured.
fn runs(dir: &str, kind: &str) -> Vec<Run> {
    let paths: Vec<PathBuf> = (1..=10).map(|n| round_of(dir, kind, n)).collect();
    let loaded = load(&paths).unwrap();
    assert_eq!(loaded.runs.len(), 10);
    loaded.runs
}

const OPTIONS: Options = Options {
    above_ns: 10_000.0,
    margin: 0.03,
};

/// Whether a primary endpoint is called better or worse, and whether one is worse and not
/// explained by the environment (what makes the exit code 1).
fn outcome(comparisons: &[Comparison]) -> (Vec<String>, bool) {
    let called = comparisons
        .iter()
        .flat_map(|c| &c.primary)
        .filter(|p| p.verdict.differs())
        .map(|p| format!("{} {}", p.endpoint.name(), p.verdict.label()))
        .collect();
    (called, comparisons.iter().any(|c| c.fails(false)))
}

/// The A/A test: untouched runs split consecutively (drift between the arms counts) and
/// interleaved, 1 to 4 runs per arm: on the quiet set no verdict at all; on the busy and the
/// held-out set no verdict that sets the exit code (the timer's tail rose at round 6 of the
/// busy one, with more time taken by other tasks: the verdicts that drift gives are marked
/// confounded); and one run per arm never gives a verdict.
#[test]
fn untouched_runs_are_never_called_different() {
    for &Set {
        dir: set, quiet, ..
    } in &SETS
    {
        for kind in ["jitter", "timer"] {
            let runs = runs(set, kind);
            for k in 1..=4 {
                for start in 0..=runs.len() - 2 * k {
                    let window = &runs[start..start + 2 * k];
                    let consecutive = (window[..k].to_vec(), window[k..].to_vec());
                    let interleaved = (
                        window.iter().step_by(2).cloned().collect::<Vec<_>>(),
                        window
                            .iter()
                            .skip(1)
                            .step_by(2)
                            .cloned()
                            .collect::<Vec<_>>(),
                    );
                    for (design, (a, b)) in
                        [("consecutive", consecutive), ("interleaved", interleaved)]
                    {
                        let comparisons = compare_each(&a, &b, &OPTIONS).unwrap();
                        let (called, fails) = outcome(&comparisons);
                        let what = format!(
                            "{set} {kind}, {k} runs per arm, {design} from run {}: {called:?}",
                            start + 1
                        );
                        assert!(!fails, "{what}");
                        if k == 1 || quiet {
                            assert!(called.is_empty(), "{what}");
                        }
                    }
                }
            }
        }
    }
}

/// `compare --calibrate` on the same runs says the same, and how many runs this machine needs;
/// over every split (up to 2,000 per size) the false-verdict rate of each set is within its
/// bound (issue 44 T-3: the held-out set, never used to tune the method, included).
#[test]
fn calibration_of_the_recorded_runs() {
    for &Set {
        dir: set,
        quiet,
        any_verdict,
    } in &SETS
    {
        let out = lowlat(&["compare", "--calibrate", set, "--json"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["kind"], "calibration");
        let calibrations = doc["calibrations"].as_array().unwrap();
        assert_eq!(calibrations.len(), 2, "jitter and timer");
        for c in calibrations {
            assert_eq!(c["runs"], 10);
            for share in c["shares"].as_array().unwrap() {
                let (k, design) = (share["runs_per_arm"].as_u64().unwrap(), &share["design"]);
                let unexplained = share["unexplained"].as_u64().unwrap();
                let splits = share["splits"].as_u64().unwrap();
                if design != "all" {
                    assert_eq!(unexplained, 0, "{set}: {share}");
                    if quiet {
                        assert_eq!(share["with_verdict"], 0, "{set}: {share}");
                    }
                }
                if k == 1 {
                    assert_eq!(share["with_verdict"], 0, "{set}: {share}");
                }
                // Every split: the tests hold their 5 % level, and the set its bound.
                assert!(
                    unexplained as f64 <= UNEXPLAINED * splits as f64,
                    "{set}: {share}"
                );
                if k >= 2 && design == "all" {
                    let with_verdict = share["with_verdict"].as_u64().unwrap();
                    assert!(
                        with_verdict as f64 <= any_verdict * splits as f64,
                        "{set}: {share}"
                    );
                }
            }
            for e in c["endpoints"].as_array().unwrap() {
                let detectable = e["detectable_percent"].as_array().unwrap();
                assert_eq!(detectable.len(), 3, "{e}");
                let percent = |i: usize| detectable[i][1].as_f64().unwrap();
                assert!(percent(0) > percent(1) && percent(1) > percent(2), "{e}");
            }
        }
    }
}

/// Plants effects in copies of rounds 5-8 of `kind` of the set in `dir` (every latency
/// multiplied, B slower, or divided, B faster, by each factor) and compares them with rounds
/// 1-4: the median of CPUs' medians is called the right way where `found` says so, never the
/// wrong way, and its ratio is the planted one within 20 %.
fn planted_effects_are_found(dir: &str, kind: &str, cases: &[(f64, bool)]) {
    let runs = runs(dir, kind);
    let (a, b) = (&runs[..4], &runs[4..8]);
    for &(factor, found) in cases {
        for direction in [factor, 1.0 / factor] {
            let planted: Vec<Run> = b.iter().map(|r| r.scaled(direction).unwrap()).collect();
            let comparisons = compare_each(a, &planted, &OPTIONS).unwrap();
            let median = &comparisons[0].primary[0];
            let expected = if direction > 1.0 { "worse" } else { "better" };
            let what = format!("{dir} {kind} ×{direction}: {median:?}");
            if found {
                assert_eq!(median.verdict.label(), expected, "{what}");
            } else {
                assert!(
                    median.verdict.label() == expected || !median.verdict.differs(),
                    "{what}"
                );
            }
            assert!((median.ratio / direction - 1.0).abs() < 0.2, "{what}");
        }
    }
}

/// Effects planted in copies of the busy set's timer runs: doubling is found both ways with
/// 4 runs per arm; so is ×1.5, which the timer's run-to-run spread here (a median spread of
/// about ±10 %) leaves detectable (bench/compare-power.sh has the whole power curve); ×1.2 is
/// below what 4 runs detect on this busy machine and is never called worse than it is.
#[test]
fn planted_effects_are_found_both_ways() {
    planted_effects_are_found(AA, "timer", &[(2.0, true), (1.5, true), (1.2, false)]);
}

/// Issue 44 T-3: on the held-out set, which gives no verdict that sets the exit code between
/// untouched runs, effects planted the same way are found: the timer's median (run-to-run
/// spread ±12 %, 40 % detectable with 4 runs per arm) ×2 and ×1.5 both ways, so the set's
/// silence is the method's and not a set on which nothing can be called. The busy loop's
/// median is not called even ×3: round 6's burst (29,356 interruptions, the median gap
/// doubled) is in arm B, and compare says 165 % is what 4 runs detect there; it is never
/// called the wrong way.
#[test]
fn planted_effects_are_found_in_runs_the_method_never_saw() {
    planted_effects_are_found(HOLDOUT, "timer", &[(2.0, true), (1.5, true), (1.2, false)]);
    planted_effects_are_found(HOLDOUT, "jitter", &[(3.0, false), (2.0, false)]);
}

/// N11: timer runs where nearly every wake-up is above --above (the busy set: a wake-up every
/// millisecond, their median 27 µs, against the default 10 µs): the rate above
/// it is the wake-up rate, which cannot move; it was called "equivalent ±3 %". It says it
/// carries no information, in the verdict and a note, and sets nothing. With --above 100us
/// the rate is judged as before.
#[test]
fn a_saturated_rate_above_carries_no_information() {
    let runs = runs(AA, "timer");
    let rate = |comparisons: &[Comparison]| {
        comparisons[0]
            .primary
            .iter()
            .find(|p| p.endpoint.name() == "rate above --above")
            .unwrap()
            .verdict
    };
    let comparisons = compare_each(&runs[..4], &runs[4..8], &OPTIONS).unwrap();
    assert_eq!(rate(&comparisons).label(), "no information (saturated)");
    assert!(!comparisons[0].fails(true));
    let notes = comparisons[0].notes.join("\n");
    assert!(
        notes.contains("99 % or more of every run's wake-ups were above --above 10 µs")
            && notes.contains("carries no information"),
        "{notes}"
    );
    let above_100us = Options {
        above_ns: 100_000.0,
        ..OPTIONS
    };
    let comparisons = compare_each(&runs[..4], &runs[4..8], &above_100us).unwrap();
    assert_ne!(rate(&comparisons).label(), "no information (saturated)");
}

/// Two bundles of one round each (what two plain `check` runs of old gave): inconclusive on
/// every primary endpoint, each naming the runs per arm it needs, and exit 0; except the
/// timer's rate above 10 µs, which on this machine holds nearly every wake-up and carries no
/// information however many runs are given (N11).
#[test]
fn one_run_per_arm_is_inconclusive_naming_the_runs_needed() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = |name: &str, n: usize| {
        let path = dir.path().join(name);
        std::fs::create_dir(&path).unwrap();
        for kind in ["jitter", "timer"] {
            std::fs::copy(round(kind, n), path.join(format!("measure-{kind}.json"))).unwrap();
        }
        path.to_str().unwrap().to_string()
    };
    let (before, after) = (bundle("before", 1), bundle("after", 2));
    let (doc, code) = compare_json(&[&before, "--", &after]);
    assert_eq!(code, 0, "{doc}");
    let comparisons = doc["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 2, "jitter and timer");
    for c in comparisons {
        for p in c["primary"].as_array().unwrap() {
            if c["family"] == "wakeups" && p["endpoint"] == "rate-above" {
                assert_eq!(p["verdict"], "saturated", "{p}");
                continue;
            }
            assert_eq!(p["verdict"], "inconclusive", "{p}");
            assert!(p["runs_needed"].as_u64().is_none_or(|n| n >= 2), "{p}");
        }
    }
    let text = lowlat(&["compare", &before, "--", &after])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("inconclusive (needs"), "{text}");
}

/// The bad inputs of the verdict model: said, never a wrong claim, never a panic.
#[test]
fn runs_without_slices_or_conditions_and_too_few_runs_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |n: usize| -> Value {
        serde_json::from_str(&std::fs::read_to_string(round("timer", n)).unwrap()).unwrap()
    };
    let save = |name: &str, doc: &Value| write(dir.path(), name, &doc.to_string());
    // Older documents: no slices (and no conditions) in arm B.
    let mut b_paths = Vec::new();
    for n in 5..=8 {
        let mut d = doc(n);
        for cpu in d["result"]["cpus"].as_array_mut().unwrap() {
            let cpu = cpu.as_object_mut().unwrap();
            cpu.remove("slices");
            cpu.remove("attribution");
        }
        b_paths.push(save(&format!("old{n}.json"), &d));
    }
    let a_paths: Vec<PathBuf> = (1..=4).map(|n| round("timer", n)).collect();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let mut args: Vec<String> = a_paths.iter().map(s).collect();
    args.push("--".into());
    args.extend(b_paths.iter().map(s));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, _) = compare_json(&args);
    let notes = out["comparisons"][0]["notes"].to_string();
    assert!(notes.contains("keep no order in time"), "{notes}");
    assert!(
        notes.contains("recorded in arm A only: no claim either way"),
        "{notes}"
    );
    for p in out["comparisons"][0]["primary"].as_array().unwrap() {
        assert!(p["confounded_by"].as_array().unwrap().is_empty(), "{p}");
        assert!(p["within_run_se"].is_null(), "{p}");
    }
    // Slices that differ in count between CPUs or runs: still compared, runs as the unit.
    let mut odd = doc(1);
    odd["result"]["cpus"][0]["slices"]
        .as_array_mut()
        .unwrap()
        .truncate(5);
    let odd = save("odd.json", &odd);
    let (out, _) = compare_json(&[&s(&odd), "--", &s(&round("timer", 2))]);
    assert_eq!(
        out["comparisons"][0]["primary"][0]["verdict"],
        "inconclusive"
    );
    let mut odd_cpus = doc(1);
    let mut second = odd_cpus["result"]["cpus"][0].clone();
    second["cpu"] = 2.into();
    second["slices"].as_array_mut().unwrap().truncate(5);
    odd_cpus["result"]["cpus"]
        .as_array_mut()
        .unwrap()
        .push(second);
    let odd_cpus = save("odd-cpus.json", &odd_cpus);
    let (out, _) = compare_json(&[&s(&odd_cpus), "--", &s(&round("timer", 2))]);
    let notes = out["comparisons"][0]["notes"].to_string();
    assert!(
        notes.contains("different numbers of slices (5, 16)"),
        "{notes}"
    );
    // --calibrate with 3 runs: exit 2 naming the number needed.
    let three: Vec<String> = (1..=3).map(|n| s(&round("timer", n))).collect();
    let out = lowlat(
        &[
            &["compare", "--calibrate"],
            &three.iter().map(String::as_str).collect::<Vec<_>>()[..],
        ]
        .concat(),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("needs at least 4 untouched runs") && stderr.contains("got 3"),
        "{stderr}"
    );
    // Histogram counts that add up past 2^64 (R-10: they wrapped to a tiny count and a
    // "better" verdict): refused naming the file.
    let mut huge = doc(1);
    huge["result"]["cpus"][0]["histogram"]["buckets"] = serde_json::json!([
        [1000, 9223372036854775808u64],
        [2000, 9223372036854775808u64]
    ]);
    let huge = save("huge.json", &huge);
    let out = lowlat(&["compare", &s(&huge), "--", &s(&round("timer", 2))])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&s(&huge)) && stderr.contains("2^64"),
        "{stderr}"
    );
}

/// The compare guide's worked examples on these runs print what the guide shows, byte
/// for byte.
#[test]
fn the_guide_examples_are_real_output() {
    let readme = include_str!("../../docs/guide/compare.md");
    let shown = |command: &str| -> String {
        let start = readme.find(&format!("$ {command}\n")).unwrap() + command.len() + 3;
        let rest = &readme[start..];
        let end = [rest.find("\n$ echo $?"), rest.find("```")]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        readme[start..start + end].trim_end().to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (dir.path().join("before"), dir.path().join("after"));
    std::fs::create_dir(&before).unwrap();
    std::fs::create_dir(&after).unwrap();
    for n in 1..=10 {
        let arm = if n <= 5 { &before } else { &after };
        std::fs::copy(
            round("timer", n),
            arm.join(round("timer", n).file_name().unwrap()),
        )
        .unwrap();
    }
    let run = |args: &[&str]| -> String {
        let out = lowlat(args).current_dir(dir.path()).output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    };
    assert_eq!(
        run(&["compare", "before/", "--", "after/"]),
        shown("lowlat compare before/ -- after/")
    );
    assert_eq!(
        run(&["compare", "--calibrate", QUIET]),
        shown("lowlat compare --calibrate tests/data/compare/aa-quiet-2vcpu")
    );
}

//! `lowlat compare` of `measure net` runs. The six runs in `tests/data/compare/net-loopback-2vcpu/`
//! are real (its README): UDP over loopback on this project's loaded 2-vCPU VM, 1 s each, one
//! after the other. Arm A is the 1st, 3rd and 5th, arm B the others, so that a drift of the
//! machine falls on both; an effect is planted in B by multiplying every round trip.

use std::path::Path;

use serde_json::{Value, json};

use crate::compare::{compare_json, primary_verdict, write};

/// The recorded run `n` (1 to 6).
fn recorded(n: u32) -> Value {
    let name = match n {
        1 => "measure-net.json".to_string(),
        n => format!("measure-net-{n}.json"),
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/compare/net-loopback-2vcpu")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `doc` with every round trip `factor` times as long: its histogram, its slices and its
/// figures; the messages then go out `factor` times as slowly.
fn slowed(mut doc: Value, factor: f64) -> Value {
    let scale = |buckets: &mut Value| {
        for bucket in buckets.as_array_mut().unwrap() {
            bucket[0] = json!((bucket[0].as_f64().unwrap() * factor).round() as u64);
        }
    };
    let result = &mut doc["result"];
    scale(&mut result["histogram"]["buckets"]);
    for slice in result["slices"].as_array_mut().unwrap() {
        scale(&mut slice["buckets"]);
    }
    for (_, v) in result["rtt"].as_object_mut().unwrap() {
        *v = json!((v.as_f64().unwrap() * factor).round() as u64);
    }
    let rate = result["messages_per_s"].as_f64().unwrap();
    result["messages_per_s"] = json!(rate / factor);
    doc
}

/// The files of arm `name` in `dir`: the recorded runs `runs`, each changed by `change`.
fn arm(dir: &Path, name: &str, runs: &[u32], change: impl Fn(Value) -> Value) -> Vec<String> {
    runs.iter()
        .map(|&n| {
            let path = write(
                dir,
                &format!("{name}{n}.json"),
                &change(recorded(n)).to_string(),
            );
            path.to_string_lossy().into_owned()
        })
        .collect()
}

fn compare(a: &[String], b: &[String]) -> (Value, i32) {
    let args: Vec<&str> = a
        .iter()
        .map(String::as_str)
        .chain(["--"])
        .chain(b.iter().map(String::as_str))
        .collect();
    compare_json(&args)
}

/// The ratio B/A of the primary endpoint `endpoint`.
fn ratio(doc: &Value, endpoint: &str) -> f64 {
    doc["comparisons"][0]["primary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["endpoint"] == endpoint)
        .and_then(|r| r["ratio"].as_f64())
        .unwrap_or_else(|| panic!("no {endpoint} in {doc}"))
}

/// Three runs against three others of the same loopback: nothing is better or worse, and the
/// exit code is 0 (an A/A test on real runs).
#[test]
fn two_sets_of_the_same_net_runs_give_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let a = arm(dir.path(), "a", &[1, 3, 5], |d| d);
    let b = arm(dir.path(), "b", &[2, 4, 6], |d| d);
    let (doc, code) = compare(&a, &b);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["comparisons"][0]["family"], "round-trips");
    // No run lost a message: the loss is not compared (its rate would be the 0.5 message
    // per run that keeps a lossless run comparable), and a note says so.
    let notes = doc["comparisons"][0]["notes"].to_string();
    assert!(notes.contains("messages lost: none in any run"), "{notes}");
    for endpoint in ["median", "worst-p99", "message-rate"] {
        let verdict = primary_verdict(&doc, endpoint);
        assert!(
            verdict != "better" && verdict != "worse",
            "{endpoint}: {verdict}"
        );
    }
    for row in doc["comparisons"][0]["rows"].as_array().unwrap() {
        assert!(
            row["verdict"] != "better" && row["verdict"] != "worse",
            "{row}"
        );
    }
}

/// The known answer: every round trip of B three times as long. Three runs per arm of this
/// loaded VM detect about +65 % on the median (the comparison's own minimum detectable
/// effect), so ×3 is called: the median round trip is worse by the recorded arms' own ratio
/// times 3, the message rate falls by as much and is worse too, and the exit code is 1.
#[test]
fn round_trips_three_times_as_long_are_worse_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let a = arm(dir.path(), "a", &[1, 3, 5], |d| d);
    let plain = arm(dir.path(), "p", &[2, 4, 6], |d| d);
    let b = arm(dir.path(), "b", &[2, 4, 6], |d| slowed(d, 3.0));
    let (same, _) = compare(&a, &plain);
    let (doc, code) = compare(&a, &b);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(primary_verdict(&doc, "median"), "worse", "{doc}");
    assert_eq!(primary_verdict(&doc, "message-rate"), "worse", "{doc}");
    let planted = ratio(&doc, "median") / ratio(&same, "median");
    assert!((planted - 3.0).abs() < 0.03, "median ×{planted}");
    let rate = ratio(&doc, "message-rate") / ratio(&same, "message-rate");
    assert!((rate - 1.0 / 3.0).abs() < 0.01, "messages/s ×{rate}");
    let medians: Vec<&Value> = doc["comparisons"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "median")
        .collect();
    assert_eq!(medians.len(), 1, "one client CPU");
    assert_eq!(medians[0]["verdict"], "worse");
}

/// One run per arm: the variation between runs is unknown, and these runs of a loaded VM vary
/// a lot inside themselves (a slice of 1/16 s where the client waited has a median of
/// milliseconds), so neither ×3 nor ×20 is called: inconclusive, naming the runs needed,
/// never "no difference".
#[test]
fn one_net_run_per_arm_is_inconclusive_naming_the_runs_needed() {
    let dir = tempfile::tempdir().unwrap();
    let a = arm(dir.path(), "a", &[1], |d| d);
    for factor in [3.0, 20.0] {
        let b = arm(dir.path(), &format!("b{factor}-"), &[2], |d| {
            slowed(d, factor)
        });
        let (doc, code) = compare(&a, &b);
        assert_eq!(code, 0, "{doc}");
        let median = &doc["comparisons"][0]["primary"][0];
        assert_eq!(median["endpoint"], "median");
        assert_eq!(median["verdict"], "inconclusive", "×{factor}: {doc}");
        assert!(median["runs_needed"].as_u64().is_some(), "{median}");
        assert!(
            median["within_run_se"][0].as_f64().unwrap() > 0.0,
            "{median}"
        );
    }
}

/// Messages lost in B's runs are compared as a rate per million messages sent, worse in B.
#[test]
fn messages_lost_in_one_arm_are_compared() {
    let dir = tempfile::tempdir().unwrap();
    let a = arm(dir.path(), "a", &[1, 3, 5], |d| d);
    let b = arm(dir.path(), "b", &[2, 4, 6], |mut d| {
        d["result"]["timeouts"] = json!(30);
        d["result"]["lost"] = json!(30);
        d
    });
    let (doc, _) = compare(&a, &b);
    let loss = doc["comparisons"][0]["primary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["endpoint"] == "loss")
        .unwrap_or_else(|| panic!("no loss in {doc}"));
    assert_eq!(loss["unit"], "per-million-messages");
    assert!(loss["ratio"].as_f64().unwrap() > 30.0, "{loss}");
}

/// What was asked of the path joins the settings: busy polling asked in B only is named in the
/// settings diff, beside the verdicts it may explain.
#[test]
fn busy_polling_asked_in_one_arm_is_named_in_the_settings_diff() {
    let dir = tempfile::tempdir().unwrap();
    let a = arm(dir.path(), "a", &[1, 3, 5], |d| d);
    let b = arm(dir.path(), "b", &[2, 4, 6], |mut d| {
        d["result"]["request"]["busy_poll_us"] = json!(50);
        d["result"]["busy_poll"] = json!({"applied": true, "reason": null});
        d
    });
    let (doc, _) = compare(&a, &b);
    let between = &doc["comparisons"][0]["settings"]["between"];
    assert_eq!(
        between,
        &json!([{"key": "net:busy_poll", "a": ["off"], "b": ["50 µs"]}]),
        "{doc}"
    );
}

/// docs/guide/measure.md shows the text of the A/A comparison of the recorded runs, byte for
/// byte.
#[test]
fn the_guide_shows_the_text_of_comparing_the_recorded_net_runs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let guide = std::fs::read_to_string(format!("{root}/docs/guide/measure.md")).unwrap();
    let (_, after) = guide
        .split_once("<!-- compare-net-example:")
        .expect("the guide's compare example");
    let (_, command) = after.split_once("```sh\n").unwrap();
    let (command, _) = command.split_once("\n```").unwrap();
    let (_, block) = after.split_once("```text\n").unwrap();
    let (block, _) = block.split_once("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = arm(dir.path(), "a", &[1, 3, 5], |d| d);
    let b = arm(dir.path(), "b", &[2, 4, 6], |d| d);
    let name = |p: &String| {
        Path::new(p)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let args: Vec<String> = a
        .iter()
        .map(name)
        .chain(["--".to_string()])
        .chain(b.iter().map(name))
        .collect();
    assert_eq!(command, format!("lowlat compare {}", args.join(" ")));
    let out = crate::support::lowlat(
        &[
            &["compare"],
            &args.iter().map(String::as_str).collect::<Vec<_>>()[..],
        ]
        .concat(),
    )
    .current_dir(dir.path())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), block);
}

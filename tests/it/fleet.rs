//! `lowlat fleet report` and `lowlat fleet plan` on fleets written by tests/fixtures/fleet.py
//! (copies of the fixture machines' snapshots, some with one planted variation, and bad
//! inputs, result bundles and bios documents): every planted outlier is named with its field and
//! no other host is; every planted measurement is outside its group's distribution and no
//! other; every bad file is skipped and named, and the rest still reported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::report_html::{chromium, grey_variance};
use super::support::{lowlat, missing_data};

/// Writes a fleet of `hosts` hosts (with fleet.py's `flags`: `--bad`, `--bundles`, `--flat`)
/// into a temporary directory, or says what is missing (python3 and zstd run the generator).
/// Returns the temporary directory and the fleet directory inside it.
fn generate(hosts: usize, flags: &[&str]) -> Option<(tempfile::TempDir, PathBuf)> {
    for tool in ["python3", "zstd"] {
        if Command::new(tool).arg("--version").output().is_err() {
            missing_data(&format!(
                "the {tool} command (tests/fixtures/fleet.py runs it)"
            ));
            return None;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fleet.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .arg("--lowlat")
        .arg(assert_cmd::cargo::cargo_bin("lowlat"))
        .args(["--hosts", &hosts.to_string(), "--out"])
        .arg(&out)
        .args(flags);
    let run = cmd.output().unwrap();
    assert!(
        run.status.success(),
        "fleet.py failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    Some((dir, out))
}

fn planted(fleet: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fleet.join("planted.json")).unwrap()).unwrap()
}

/// Runs `lowlat args… paths…`, checks that it exits with `code`, and returns its output.
fn run(args: &[&str], paths: &[&Path], code: i32) -> Output {
    lowlat(args)
        .args(paths)
        .assert()
        .code(code)
        .get_output()
        .clone()
}

/// What `lowlat args… paths…` writes on its standard output, checking that it exits with `code`.
fn stdout(args: &[&str], paths: &[&Path], code: i32) -> String {
    String::from_utf8(run(args, paths, code).stdout).unwrap()
}

/// `lowlat fleet report --json` of `fleet`, which must exit 1.
fn report_json(fleet: &Path) -> serde_json::Value {
    serde_json::from_slice(&run(&["fleet", "report", "--json"], &[fleet], 1).stdout).unwrap()
}

/// Host → the fields it is reported for: outliers' differences, and the figures it is
/// outside of.
fn reported(report: &serde_json::Value, key: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for group in report["groups"].as_array().unwrap() {
        if key == "outliers" {
            for outlier in group["outliers"].as_array().unwrap() {
                let fields = outlier["differences"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d["field"].as_str().unwrap().to_string());
                found
                    .entry(outlier["host"].as_str().unwrap().to_string())
                    .or_default()
                    .extend(fields);
            }
        } else {
            for spread in group["measurements"].as_array().unwrap() {
                for outside in spread["outside"].as_array().unwrap() {
                    found
                        .entry(outside["host"].as_str().unwrap().to_string())
                        .or_default()
                        .insert(spread["metric"].as_str().unwrap().to_string());
                }
            }
        }
    }
    found
}

/// Checks that the hosts `report` names under `key` are exactly those planted.json lists
/// under `planted_key`, each with its field among those named.
fn assert_exactly_planted(report: &serde_json::Value, fleet: &Path, key: &str, planted_key: &str) {
    let found = reported(report, key);
    let expected = planted(fleet);
    let expected = expected[planted_key].as_object().unwrap();
    assert_eq!(
        found.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{key} found: {found:#?}"
    );
    for (host, field) in expected {
        assert!(
            found[host].contains(field.as_str().unwrap()),
            "{host}: expected {field} among {:?}",
            found[host]
        );
    }
}

#[test]
fn every_planted_outlier_is_named_with_its_field_and_no_other_host() {
    let Some((_dir, fleet)) = generate(40, &["--bad"]) else {
        return;
    };
    let report = report_json(&fleet);
    assert_eq!(report["kind"], "fleet");
    assert_eq!(report["hosts"], 40, "every good host is reported");
    let groups = report["groups"].as_array().unwrap();
    assert_eq!(
        groups.len(),
        2,
        "one group per fixture machine: {groups:#?}"
    );
    assert_exactly_planted(&report, &fleet, "outliers", "outliers");
}

#[test]
fn bundles_and_bios_documents_name_the_hosts_outside_and_the_bios_attribute() {
    let Some((_dir, fleet)) = generate(48, &["--bundles"]) else {
        return;
    };
    // A bundle whose host has no snapshot among the inputs.
    let ghost = fleet.join("ghost/bundle");
    std::fs::create_dir_all(&ghost).unwrap();
    let jitter = std::fs::read_to_string(fleet.join("host-0000/bundle/measure-jitter.json"))
        .unwrap()
        .replace("\"host\": \"host-0000\"", "\"host\": \"ghost\"");
    std::fs::write(ghost.join("measure-jitter.json"), jitter).unwrap();
    std::fs::write(fleet.join("host-0001/bundle/broken.json"), "{\"kind\": ").unwrap();

    let report = report_json(&fleet);
    assert_eq!(report["hosts"], 48);
    assert_exactly_planted(&report, &fleet, "outliers", "outliers");
    assert_exactly_planted(&report, &fleet, "measurements", "measurements");
    let nps = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["outliers"].as_array().unwrap())
        .find(|o| o["host"] == "host-0041")
        .unwrap();
    assert_eq!(
        nps["differences"][0],
        serde_json::json!({"field": "bios:NumaNodesPerSocket", "value": "4", "group": "1"})
    );
    let spread = &report["groups"][0]["measurements"][0];
    assert_eq!(spread["metric"], "measure-jitter max");
    assert_eq!(spread["unit"], "ns");
    assert_eq!(spread["hosts"], 24);
    let problems = report["skipped"].to_string();
    assert!(
        problems.contains("belongs to host ghost, but no snapshot of ghost"),
        "{problems}"
    );
    assert!(
        problems.contains("broken.json:1: not a JSON document"),
        "{problems}"
    );
}

#[test]
fn in_one_directory_documents_belong_to_the_host_they_name() {
    let Some((_dir, fleet)) = generate(12, &["--bundles", "--flat"]) else {
        return;
    };
    let report = report_json(&fleet);
    assert_exactly_planted(&report, &fleet, "measurements", "measurements");
    assert!(report["skipped"].as_array().unwrap().is_empty(), "{report}");
    let page = stdout(&["fleet", "report"], &[&fleet], 1);
    assert!(
        page.contains("2 measurements outside"),
        "p99 and max: {page}"
    );
    assert!(page.contains("    outside: host-0003 "), "{page}");
}

#[test]
fn bad_snapshots_are_skipped_and_named_and_the_rest_reported() {
    let Some((_dir, fleet)) = generate(12, &["--bad"]) else {
        return;
    };
    let report = report_json(&fleet);
    assert_eq!(report["hosts"], 12);
    let skipped: BTreeSet<String> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let file = Path::new(s["file"].as_str().unwrap());
            let problem = s["problem"].as_str().unwrap();
            assert!(
                problem.contains(&file.display().to_string()),
                "the problem names the file: {problem}"
            );
            file.strip_prefix(&fleet).unwrap().display().to_string()
        })
        .collect();
    let expected: BTreeSet<String> = planted(&fleet)["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(skipped, expected);
    let problems = report["skipped"].to_string();
    for reason in [
        "schema_version 99",
        "duplicate host name host-0000",
        "no lowlat snapshot or sosreport in this directory",
        "not a lowlat snapshot",
    ] {
        assert!(problems.contains(reason), "{reason} in {problems}");
    }
}

#[test]
fn the_page_and_the_html_name_the_outlier_and_its_field() {
    let Some((dir, fleet)) = generate(14, &[]) else {
        return;
    };
    let html = dir.path().join("fleet.html");
    let page = stdout(&["fleet", "report", "--html"], &[&html, &fleet], 1);
    assert!(
        page.starts_with("lowlat fleet report: 14 hosts, 2 groups"),
        "{page}"
    );
    let line = page
        .lines()
        .find(|l| l.contains("host-0006"))
        .unwrap_or_else(|| panic!("host-0006 is not named: {page}"));
    assert!(
        line.contains("firmware.bios_version: 9.99.9-planted; group: "),
        "{line}"
    );
    let html_file = html;
    let html = std::fs::read_to_string(&html_file).unwrap();
    assert!(html.contains("host-0006") && html.contains("9.99.9-planted"));
    assert!(html.contains("id=\"fleet\""));
    // Issue 32: the statuses in the audit's order (they were by name: fail, inferred, pass…)
    // and a chart of each rule's hosts by status, one mark per non-empty status.
    assert!(
        html.contains(
            "<th>rule</th><th>pass</th><th>warn</th><th>fail</th><th>inferred</th><th>unknown</th><th>skipped</th>"
        ),
        "{html}"
    );
    let report = report_json(&fleet);
    let rules = report["rules"].as_array().unwrap();
    let marks: usize = rules
        .iter()
        .map(|r| {
            r["hosts"]
                .as_object()
                .unwrap()
                .values()
                .filter(|n| n.as_u64() != Some(0))
                .count()
        })
        .sum();
    assert!(
        html.contains(&format!(
            "aria-label=\"Hosts per status, rule by rule\" data-points=\"{marks}\""
        )),
        "{marks} marks expected"
    );
    // The rows in the audit's order of the rules, as the document lists them.
    let rows: Vec<&str> = html
        .split("<tr><td><code>")
        .skip(1)
        .filter_map(|row| row.split("</code>").next())
        .filter(|id| id.starts_with("LL-"))
        .collect();
    let ids: Vec<&str> = rules.iter().map(|r| r["rule"].as_str().unwrap()).collect();
    assert_eq!(rows, ids);
    assert_ne!(ids.first(), Some(&"LL-BOOST"), "not by name: {ids:?}");
    // Drawn by a real browser: every mark there, and the page not blank.
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", html_file.display());
    let Some(dom) = chromium(profile.path(), &["--dump-dom".into(), url.clone()]) else {
        missing_data("chromium (Debian package chromium)");
        return;
    };
    let dom = String::from_utf8(dom.stdout).unwrap();
    let drawn = dom
        .split("aria-label=\"Hosts per status, rule by rule\"")
        .nth(1)
        .and_then(|svg| svg.split("</svg>").next())
        .map(|svg| svg.matches("class=\"pt\"").count());
    assert_eq!(drawn, Some(marks), "the browser's chart");
    let shot = dir.path().join("fleet.png");
    let shots = tempfile::tempdir().unwrap();
    chromium(
        shots.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".into(),
            url,
        ],
    )
    .expect("chromium ran once already");
    assert!(grey_variance(&shot) > 100.0, "the screenshot is blank");
}

#[test]
fn a_fleet_of_identical_hosts_exits_0_and_gets_one_plan_per_group() {
    let Some((dir, fleet)) = generate(6, &[]) else {
        return;
    };
    run(&["fleet", "report"], &[&fleet], 0);
    let plans = dir.path().join("plans");
    let page = stdout(&["fleet", "plan", "--out"], &[&plans, &fleet], 0);
    assert!(
        page.contains("group 1: wrote") && page.contains("group 2: wrote"),
        "{page}"
    );
    for group in ["group-1", "group-2"] {
        let hosts = std::fs::read_to_string(plans.join(group).join("hosts.txt")).unwrap();
        assert_eq!(hosts.lines().count(), 3, "{hosts}");
        assert!(plans.join(group).join("plan.json").is_file());
    }
}

#[test]
fn a_group_whose_hosts_differ_in_what_the_plan_depends_on_gets_no_plan() {
    let Some((dir, fleet)) = generate(21, &[]) else {
        return;
    };
    // host-0020 has mitigations=off on its command line, which the plan depends on; host-0006
    // has another BIOS version and host-0013 an empty DIMM slot (which fails a hardware rule),
    // which it does not.
    let plans = dir.path().join("plans");
    let page = stdout(&["fleet", "plan", "--out"], &[&plans, &fleet], 1);
    assert!(page.contains("group 1: no plan"), "{page}");
    assert!(
        page.contains("host-0020: cmdline:mitigations = mitigations=off"),
        "{page}"
    );
    assert!(!page.contains("host-0006"), "{page}");
    assert!(!plans.join("group-1").exists());
    assert!(plans.join("group-2/plan.json").is_file(), "{page}");
}

#[test]
fn no_snapshot_at_all_is_an_error_naming_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let err = String::from_utf8(run(&["fleet", "report"], &[dir.path()], 2).stderr).unwrap();
    assert!(err.contains("no host to report"), "{err}");
    assert!(err.contains(&dir.path().display().to_string()), "{err}");
    let missing = dir.path().join("nowhere");
    let err = String::from_utf8(run(&["fleet", "report"], &[&missing], 2).stderr).unwrap();
    assert!(err.contains("nowhere: cannot read it"), "{err}");
    // A document given alone (no snapshot among the inputs) was "no input given".
    let inventory = dir.path().join("inventory.json");
    std::fs::write(&inventory, "{}").unwrap();
    let err = String::from_utf8(run(&["fleet", "report"], &[&inventory], 2).stderr).unwrap();
    assert!(
        err.contains(&format!(
            "no lowlat snapshot among {}: give snapshot files",
            inventory.display()
        )),
        "{err}"
    );
}

/// A snapshot of the fixture machine `kvm-guest-2vcpu` whose host name is `host`, written into
/// `dir` as `file`.
fn snapshot_named(dir: &Path, file: &str, host: &str) -> PathBuf {
    let root = tempfile::tempdir().unwrap();
    super::support::tree::copy_tree(&super::support::fixture("kvm-guest-2vcpu"), root.path());
    std::fs::write(root.path().join("proc/sys/kernel/hostname"), host).unwrap();
    let out = dir.join(file);
    lowlat(&["--root", root.path().to_str().unwrap(), "snapshot", "-o"])
        .arg(&out)
        .assert()
        .success();
    out
}

/// R-5: a snapshot's host name went into hosts.txt raw, so a newline in it added hosts and
/// `../` or an escape passed through. Only RFC 1123 names are listed; the others are named as
/// left out, and the exit code is 1.
#[test]
fn host_names_that_are_not_host_names_stay_out_of_hosts_txt() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    std::fs::create_dir(&fleet).unwrap();
    snapshot_named(&fleet, "a.lowlat", "web1");
    snapshot_named(&fleet, "b.lowlat", "web2\nextra-host");
    snapshot_named(&fleet, "c.lowlat", "../../etc/passwd");
    snapshot_named(&fleet, "d.lowlat", "web4\u{1b}[31m");
    let plans = dir.path().join("plans");
    let page = stdout(&["fleet", "plan", "--out"], &[&plans, &fleet], 1);
    let hosts = std::fs::read_to_string(plans.join("group-1/hosts.txt")).unwrap();
    assert_eq!(hosts, "web1\n", "{page}");
    for shown in [
        r#""web2\nextra-host": not a host name (RFC 1123"#,
        r#""../../etc/passwd": not a host name"#,
        r#""web4\u{1b}[31m": not a host name"#,
    ] {
        assert!(page.contains(shown), "{shown} in\n{page}");
    }
    assert!(!page.contains('\u{1b}'), "{page}");
}

/// R-7: a zstd bomb was inflated (up to 1 GiB per worker) before the manifest was looked for.
/// A stream whose first entry is not manifest.json is refused from its first header. R-15:
/// a symbolic link to a snapshot was passed over without a Skipped line.
#[test]
fn a_snapshot_not_starting_with_its_manifest_and_a_link_are_skipped_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    std::fs::create_dir(&fleet).unwrap();
    snapshot_named(&fleet, "a.lowlat", "web1");
    let elsewhere = snapshot_named(dir.path(), "b.lowlat", "web2");
    std::os::unix::fs::symlink(&elsewhere, fleet.join("b.lowlat")).unwrap();
    let mut builder = tar::Builder::new(Vec::new());
    let mut append = |name: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(bytes.len() as u64);
        builder.append_data(&mut header, name, bytes).unwrap();
    };
    append("root/proc/zeros", &vec![0; 64 << 20]);
    append("manifest.json", b"{}");
    let bomb = zstd::encode_all(&builder.into_inner().unwrap()[..], 19).unwrap();
    std::fs::write(fleet.join("c.lowlat"), bomb).unwrap();
    let page = stdout(&["fleet", "report"], &[&fleet], 1);
    assert!(
        page.contains("c.lowlat: the first entry is root/proc/zeros, not manifest.json"),
        "{page}"
    );
    assert!(
        page.contains("b.lowlat: a symbolic link to a snapshot, not followed"),
        "{page}"
    );
}

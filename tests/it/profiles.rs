//! Site profiles from the command line: docs/guide/profiles.md's worked example is real (its
//! `toml` blocks are written as site.toml and typo.toml, and each `console` block shows, byte
//! for byte, what its command prints: stdout, then stderr), and a site file is taken by every
//! command that takes a profile.

use std::path::Path;

use crate::support::{fixture, lowlat};

/// A directory holding the guide's files, with the fixture where the guide's commands find it.
fn guide_dir(guide: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let machines = dir.path().join("tests/fixtures/machines");
    std::fs::create_dir_all(&machines).unwrap();
    std::os::unix::fs::symlink(fixture("epyc7f32-2s"), machines.join("epyc7f32-2s")).unwrap();
    let blocks = fenced(guide, "```toml");
    assert_eq!(
        blocks.len(),
        2,
        "the guide's toml blocks: site.toml, typo.toml"
    );
    for (name, text) in ["site.toml", "typo.toml"].iter().zip(&blocks) {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// The text of each fenced block opened by `fence`.
fn fenced(text: &str, fence: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line == fence {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push(body.iter().map(|l| format!("{l}\n")).collect());
        }
    }
    blocks
}

#[test]
fn the_guides_worked_example_is_what_lowlat_prints() {
    let guide = include_str!("../../docs/guide/profiles.md");
    let dir = guide_dir(guide);
    let blocks = fenced(guide, "```console");
    assert_eq!(blocks.len(), 3, "the guide's console blocks");
    for block in blocks {
        let (command, shown) = block.split_once('\n').unwrap();
        let args: Vec<&str> = command
            .strip_prefix("$ lowlat ")
            .unwrap_or_else(|| panic!("not a lowlat command: {command}"))
            .split_whitespace()
            .collect();
        let out = lowlat(&args).current_dir(dir.path()).output().unwrap();
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(printed, shown, "`{command}` prints, byte for byte");
    }
}

/// Writes `text` as site.toml in a fresh directory.
fn site(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site.toml");
    std::fs::write(&file, text).unwrap();
    let named = file.display().to_string();
    (dir, named)
}

fn run(root: &Path, args: &[&str]) -> (i32, String, String) {
    let out = lowlat(&["--root", root.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const WAIVE_ALL: &str = "extends = \"low-latency\"\n";

#[test]
fn a_waived_finding_is_waived_in_json_and_does_not_fail_the_audit() {
    let root = fixture("epyc7f32-2s-tuned");
    // The tuned fixture fails only LL-MANAGED-IRQS (the guide it follows has no
    // isolcpus=managed_irq): waiving it leaves an audit without failure.
    let (code, _, _) = run(&root, &["audit"]);
    assert_eq!(code, 1);
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[[waive]]\nrule = \"LL-MANAGED-IRQS\"\nreason = \"NVMe queues stay\"\n"
    ));
    let (code, stdout, stderr) = run(&root, &["audit", "--profile", &file, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let finding = (doc["findings"].as_array().unwrap().iter())
        .find(|f| f["rule"] == "LL-MANAGED-IRQS")
        .unwrap();
    assert_eq!(finding["status"], "waived");
    assert_eq!(finding["waiver"]["reason"], "NVMe queues stay");
    assert_eq!(finding["waiver"]["expired"], false);
    assert_eq!(doc["counts"]["waived"], 1);
    assert_eq!(doc["profile"]["files"][0], file.as_str());

    // Expired: a failure again, saying so.
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[[waive]]\nrule = \"LL-MANAGED-IRQS\"\nreason = \"x\"\nuntil = 2020-01-31\n"
    ));
    let (code, stdout, _) = run(&root, &["audit", "--profile", &file]);
    assert_eq!(code, 1);
    assert!(stdout.contains("waiver expired on 2020-01-31"), "{stdout}");
}

#[test]
fn plan_sets_the_sites_sysctl_and_check_refuses_its_bad_target_at_its_line() {
    let root = fixture("epyc7f32-2s");
    let (_dir, file) = site(&format!("{WAIVE_ALL}[sysctl]\n\"vm.stat_interval\" = 10\n"));
    let (code, stdout, stderr) = run(&root, &["plan", "--profile", &file, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("\"id\": \"sysctl:vm.stat_interval\",\n      \"value\": \"10\""),
        "{stdout}"
    );
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[check]\ntargets = [\"timer.p50<5us\"]\n"
    ));
    for command in ["audit", "plan", "check"] {
        let out = lowlat(&[command, "--profile", &file]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "--profile {file}:3:12: 'timer.p50<5us': unknown metric"
            )),
            "{command}: {stderr}"
        );
    }
}

/// Issue 45 item 5: a site file's `hwlat.max` target is read by check's one parser, shown
/// with the line it comes from, and a bad one refused at its line and column.
#[test]
fn a_sites_hwlat_target_has_its_line_and_a_bad_one_is_refused_there() {
    let root = fixture("epyc7f32-2s");
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[check]\ntargets = [\"timer.max<50us\", \"hwlat.max<20us\"]\n"
    ));
    let (code, stdout, stderr) = run(&root, &["profile", "show", &file]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  hwlat.max<20us"), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.contains("hwlat.max<20us"))
        .unwrap();
    assert!(line.contains("site.toml:3"), "{line}");
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[check]\ntargets = [\"hwlat.max<1us\"]\n"
    ));
    for command in ["audit", "check"] {
        let out = lowlat(&[command, "--profile", &file]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "--profile {file}:3:12: 'hwlat.max<1us': the hwlat tracer records gaps in whole \
                 microseconds"
            )),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn tuneds_names_are_taken_with_a_note_or_refused_with_what_to_use() {
    let root = fixture("epyc7f32-2s");
    let (code, _, stderr) = run(&root, &["audit", "--profile", "network-latency"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            "lowlat: note: --profile network-latency: TuneD's name; lowlat's low-latency profile is used"
        ),
        "{stderr}"
    );
    let (code, _, stderr) = run(&root, &["audit", "--profile", "latency-performance"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("use low-latency"), "{stderr}");
}

#[test]
fn fleet_report_counts_the_waived_hosts_and_names_the_waiver() {
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[[waive]]\nrule = \"LL-PCIE-ASPM\"\nreason = \"vendor\"\nowner = \"netops\"\n"
    ));
    let dir = snapshots(&[("a", "epyc7f32-2s"), ("b", "epyc7f32-2s-tuned")]);
    let out = lowlat(&["fleet", "report", "--profile", &file])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("LL-PCIE-ASPM  waived on 1 host by netops"),
        "{stdout}"
    );
    let header = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("rule "))
        .unwrap();
    assert!(header.contains("waived"), "{header}");
}

/// Snapshots of `machines` (one host each) in a fresh directory.
fn snapshots(machines: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (host, machine) in machines {
        let out = dir.path().join(format!("{host}.lowlat"));
        lowlat(&[
            "--root",
            fixture(machine).to_str().unwrap(),
            "snapshot",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success();
    }
    dir
}

/// Issue 45 item 6: `fleet plan` planned every group with the default partition whatever the
/// site file's `[partition]` said; it takes the site's lists and SMT choice as `plan` does, and
/// a partition the hosts cannot have is refused naming the file's line.
#[test]
fn fleet_plan_partitions_as_the_site_file_says() {
    let fleet = snapshots(&[("a", "epyc7f32-2s")]);
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[partition]\nhousekeeping = \"0-1,8-9\"\n"
    ));
    let plans = tempfile::tempdir().unwrap();
    let out = lowlat(&["fleet", "plan", "--profile", &file, "--out"])
        .arg(plans.path().join("out"))
        .arg(fleet.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(plans.path().join("out/group-1/plan.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(plan["partition"]["housekeeping"], "0-1,8-9");
    assert_eq!(plan["partition"]["isolated"], "2-7,10-15");

    let (_dir, file) = site(&format!("{WAIVE_ALL}[partition]\nisolate = \"1-40\"\n"));
    let out = lowlat(&["fleet", "plan", "--profile", &file, "--out"])
        .arg(plans.path().join("bad"))
        .arg(fleet.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--profile {file}:3: [partition]: group 1")),
        "{stderr}"
    );
}

/// Issue 45 item 1: `[kernel]` adds arguments to the plan's command line and takes them off,
/// each with the file's line as its source; a removal wins over the built-in plan's argument,
/// and says so.
#[test]
fn the_plan_adds_and_removes_the_sites_kernel_arguments_naming_their_line() {
    let root = fixture("epyc7f32-2s");
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[kernel]\nadd = [\"nmi_watchdog=0\"]\nremove = [\"skew_tick\"]\n"
    ));
    let (code, stdout, stderr) = run(&root, &["plan", "--profile", &file, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let setting = |id: &str| {
        (plan["settings"].as_array().unwrap().iter())
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id} not planned: {stdout}"))
            .clone()
    };
    let added = setting("cmdline:nmi_watchdog");
    assert_eq!(added["value"], "nmi_watchdog=0");
    assert_eq!(added["source"], format!("{file}:3"));
    let removed = setting("cmdline:skew_tick");
    assert_eq!(removed["value"], "");
    assert_eq!(removed["source"], format!("{file}:4"));
    assert_eq!(
        removed["rationale"],
        "Taken off the command line by the site profile; it wins over the low-latency plan's \
         `skew_tick=1`."
    );
    // A trade-off the site asks for is planned, keeping its label; without the file it is
    // left out (no --allow-security-tradeoffs), and skew_tick=1 is planned.
    assert_eq!(
        added["security_tradeoff"],
        "hard lockups (a CPU stuck with interrupts off) are no longer detected"
    );
    assert!(
        (plan["skipped"].as_array().unwrap().iter())
            .all(|s| s["setting"]["id"] != "cmdline:nmi_watchdog"),
        "{stdout}"
    );
    // Another value of the key is not that trade-off.
    let (_dir, other) = site(&format!(
        "{WAIVE_ALL}[kernel]\nadd = [\"nmi_watchdog=1\"]\n"
    ));
    let (_, stdout, _) = run(&root, &["plan", "--profile", &other, "--json"]);
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let added = (plan["settings"].as_array().unwrap().iter())
        .find(|s| s["id"] == "cmdline:nmi_watchdog")
        .unwrap();
    assert_eq!(added["value"], "nmi_watchdog=1");
    assert_eq!(added.get("security_tradeoff"), None, "{added}");
    let (_, stdout, _) = run(&root, &["plan", "--json"]);
    assert!(stdout.contains("\"value\": \"skew_tick=1\""), "{stdout}");
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        (plan["settings"].as_array().unwrap().iter()).all(|s| s["id"] != "cmdline:nmi_watchdog"),
        "{stdout}"
    );
}

/// Issue 45: `watch --profile FILE` watches the CPUs of the site's `[partition]` (before, it
/// took no profile; and the rule of the CPUs that matter passed over a site's partition, so
/// `check --profile FILE` measured every CPU but the first), saying where they come from.
#[test]
fn watch_watches_the_site_files_partition() {
    let root = fixture("epyc7f32-2s");
    let (_dir, file) = site(&format!(
        "{WAIVE_ALL}[partition]\nhousekeeping = \"0-1,8-9\"\n"
    ));
    let (code, stdout, stderr) = run(&root, &["watch", "--profile", &file, "--once", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"kind\":\"watch-sample\""), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "lowlat: note: watching CPU 2-7,10-15 (the site profile's isolated CPUs ({file}:3))"
        )),
        "{stderr}"
    );
}

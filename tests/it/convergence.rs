//! The plan is a fixed point (issue 43): on every fixture machine, every tree of
//! ../shared/hwloc-samples and the generated trees, plan → apply on a copy → plan gives the
//! same settings; after the apply and a simulated reboot (the planned kernel arguments written
//! into the copy's /proc/cmdline) no rule whose settings the plan applied fails, verify is
//! clean, a second apply changes nothing, and the plan made after the reboot is the first one.
//!
//! The copies are made live-like first: `idle=poll` on the command line (which the plan takes
//! off), and after apply the user tasks the plan pins are pinned in the copy's /proc, as apply
//! does on a live machine (a tree's tasks cannot be pinned): the plan must not depend on
//! either.

use crate::support::{fixture, hybrid, lowlat, missing_data, tree};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Runs lowlat on `root` and returns its exit code and stdout.
fn run(root: &Path, args: &[&str]) -> (i32, String) {
    let out = lowlat(&["--root"]).arg(root).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The settings of a plan.json (groups as written), id → value.
fn settings(plan: &Value) -> BTreeMap<String, Value> {
    plan["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let id = s["id"].as_str().unwrap().to_string();
            s.as_object_mut().unwrap().remove("id");
            (id, s)
        })
        .collect()
}

/// `/proc/cmdline` after the reboot into the plan's kernel-cmdline.txt: the planned keys and
/// the removed ones taken out, the planned arguments added.
fn rebooted_cmdline(current: &str, fragment: &str) -> String {
    // `NAME='...'` (or `NAME="..."`): the arguments are plain words, quoted as one.
    let var = |name: &str| {
        fragment
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(|v| v.trim_matches(|c| c == '\'' || c == '"').to_string())
            .unwrap_or_default()
    };
    let (add, remove) = (var("LOWLAT_CMDLINE_ADD"), var("LOWLAT_CMDLINE_REMOVE"));
    let key = |arg: &str| arg.split('=').next().unwrap().to_string();
    let gone: BTreeSet<String> = add
        .split_whitespace()
        .chain(remove.split_whitespace())
        .map(key)
        .collect();
    let kept = current
        .split_whitespace()
        .filter(|arg| !gone.contains(&key(arg)));
    kept.chain(add.split_whitespace())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What went wrong on one tree (empty: it converges).
fn converges(name: &str, machine: &Path) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    tree::copy_tree(machine, &root);
    let plan_dir = dir.path().join("plan");
    let mut problems = Vec::new();
    add_idle_poll(&root);
    let (code, first) = run(&root, &["plan", "--json"]);
    if code == 2 {
        // No plan for this machine (a partition it cannot take): nothing to converge.
        return problems;
    }
    let first: Value = serde_json::from_str(&first).unwrap();
    let (code, _) = run(&root, &["plan", "--out", plan_dir.to_str().unwrap()]);
    assert!(code <= 1, "{name}: plan --out exited {code}");
    let plan = plan_dir.join("plan.json");
    let (code, applied) = run(
        &root,
        &["apply", "--plan", plan.to_str().unwrap(), "--yes", "--json"],
    );
    assert!(code <= 1, "{name}: apply exited {code}: {applied}");
    let applied: Value = serde_json::from_str(&applied).unwrap();
    let unsupported: BTreeSet<String> = applied["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["action"] == "unsupported")
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();

    pin_tasks(&root, &first);

    // plan → apply → plan: the same settings.
    let (_, second) = run(&root, &["plan", "--json"]);
    let second: Value = serde_json::from_str(&second).unwrap();
    problems.extend(differences(name, "apply", &first, &second));

    // A second apply changes nothing.
    let (_, again) = run(
        &root,
        &["apply", "--plan", plan.to_str().unwrap(), "--yes", "--json"],
    );
    let again: Value = serde_json::from_str(&again).unwrap();
    if again["settings_changed"] != 0 {
        let changed: Vec<&str> = again["settings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["action"] != "unchanged" && s["action"] != "unsupported")
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        problems.push(format!("{name}: a second apply changed {changed:?}"));
    }

    // The simulated reboot: the planned kernel arguments on /proc/cmdline, and the CPUs
    // online after it (nosmt) online. Where no boot loader could be configured (apply says
    // so, and verify says not-configured), nothing boots differently.
    let boot_configured = !unsupported.iter().any(|id| id.starts_with("cmdline:"));
    if boot_configured {
        reboot(&root, &plan_dir, &first);
        // The removed idle=poll is gone from the command line: the plan still takes it off.
        let (_, third) = run(&root, &["plan", "--json"]);
        let third: Value = serde_json::from_str(&third).unwrap();
        problems.extend(differences(name, "the reboot", &first, &third));
    }

    // No rule whose settings the plan applied fails, but for the rules judged on what only a
    // real boot does (the kernel places managed IRQs at boot).
    let planned: BTreeSet<String> = plan_ids(&first)
        .into_iter()
        .filter(|id| !unsupported.contains(id))
        .filter(|id| boot_configured || !id.starts_with("cmdline:"))
        .collect();
    let (_, audit) = run(&root, &["audit", "--json"]);
    let audit: Value = serde_json::from_str(&audit).unwrap();
    for finding in audit["findings"].as_array().unwrap() {
        if finding["status"] != "fail"
            || BOOT_STATE_RULES.contains(&finding["rule"].as_str().unwrap())
        {
            continue;
        }
        let covered: Vec<&str> = finding["remediation"]["settings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["id"].as_str())
            .filter(|id| planned.contains(*id))
            .collect();
        if !covered.is_empty() {
            problems.push(format!(
                "{name}: {} fails after apply and reboot although the plan set {covered:?}: {}",
                finding["rule"], finding["observed"]
            ));
        }
    }
    let (code, verify) = run(&root, &["verify"]);
    if code != 0 {
        let bad: Vec<&str> = verify
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("drift") || l.starts_with("not-"))
            .filter(|l| boot_configured || !l.starts_with("not-configured  cmdline:"))
            .collect();
        if !bad.is_empty() || boot_configured {
            problems.push(format!("{name}: verify exited {code}: {bad:?}"));
        }
    }
    problems
}

/// What differs between the settings of the plan made before and the one made after `event`.
fn differences(name: &str, event: &str, first: &Value, again: &Value) -> Vec<String> {
    let (before, after) = (same_header(settings(first)), same_header(settings(again)));
    let mut problems = Vec::new();
    for (id, value) in &before {
        match after.get(id) {
            None => problems.push(format!("{name}: {id} dropped by the plan after {event}")),
            Some(v) if v != value => {
                problems.push(format!("{name}: {id} changed after {event}: {value} → {v}"));
            }
            Some(_) => {}
        }
    }
    for id in after.keys().filter(|id| !before.contains_key(*id)) {
        problems.push(format!("{name}: {id} added by the plan after {event}"));
    }
    problems
}

/// `settings` with the line of each file's header that names the machine (`# Profile: ...
/// CPUs 0-111`) taken out: after a reboot that turns SMT off, fewer CPUs are online, and that
/// is the machine, not a setting.
fn same_header(mut settings: BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    for setting in settings.values_mut() {
        if let Some(text) = setting["value"].as_str() {
            let kept: String = (text.lines())
                .filter(|l| !l.starts_with("# Profile: "))
                .map(|l| format!("{l}\n"))
                .collect();
            setting["value"] = Value::String(kept);
        }
    }
    settings
}

/// Puts `idle=poll` on the command line of the tree `root`, as a machine tuned by hand has it.
fn add_idle_poll(root: &Path) {
    let cmdline = root.join("proc/cmdline");
    let current = std::fs::read_to_string(&cmdline).unwrap_or_default();
    std::fs::write(&cmdline, format!("{} idle=poll\n", current.trim_end())).unwrap();
}

/// Pins the user tasks the plan `plan` pins (`task:COMM:affinity`) in the tree `root`, as
/// `lowlat apply` does on a live machine: each thread of every process of that name gets the
/// planned CPUs as its `Cpus_allowed_list`.
fn pin_tasks(root: &Path, plan: &Value) {
    let plan = lowlat::plan::Plan::from_json(&plan.to_string()).unwrap();
    let pins: BTreeMap<String, String> = (plan.settings.iter())
        .filter_map(|s| {
            let id = s.id.to_string();
            let comm = id.strip_prefix("task:")?.strip_suffix(":affinity")?;
            Some((comm.to_string(), s.value.clone()))
        })
        .collect();
    if pins.is_empty() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root.join("proc")) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let dir = entry.path();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let comm = match (stat.find('('), stat.rfind(')')) {
            (Some(open), Some(close)) if open < close => &stat[open + 1..close],
            _ => continue,
        };
        let Some(cpus) = pins.get(comm) else {
            continue;
        };
        let tasks = std::fs::read_dir(dir.join("task"))
            .map(|t| t.filter_map(Result::ok).map(|t| t.path()).collect())
            .unwrap_or_else(|_| Vec::new());
        for status in std::iter::once(dir.clone()).chain(tasks) {
            let status = status.join("status");
            let Ok(text) = std::fs::read_to_string(&status) else {
                continue;
            };
            let pinned: String = (text.lines())
                .filter(|l| !l.starts_with("Cpus_allowed:"))
                .map(|l| match l.strip_prefix("Cpus_allowed_list:") {
                    Some(_) => format!("Cpus_allowed_list:\t{cpus}\n"),
                    None => format!("{l}\n"),
                })
                .collect();
            std::fs::write(&status, pinned).unwrap();
        }
    }
}

/// Rules judged on state only a real boot produces, which the simulated reboot does not: the
/// effective affinity the kernel gives managed IRQs at boot (isolcpus=managed_irq).
const BOOT_STATE_RULES: &[&str] = &["LL-MANAGED-IRQS"];

/// Reboots the tree `root` into the plan in `plan_dir` (whose plan.json is `plan`): its
/// kernel-cmdline.txt on /proc/cmdline, and where the plan turns SMT off, only the CPUs
/// online after it online.
fn reboot(root: &Path, plan_dir: &Path, plan: &Value) {
    let fragment = std::fs::read_to_string(plan_dir.join("kernel-cmdline.txt")).unwrap();
    let cmdline = root.join("proc/cmdline");
    let current = std::fs::read_to_string(&cmdline).unwrap_or_default();
    let rebooted = rebooted_cmdline(&current, &fragment);
    // Every planned argument is on the new command line (the fragment was read).
    let planned = lowlat::plan::Plan::from_json(&plan.to_string()).unwrap();
    let added = planned
        .settings
        .iter()
        .filter(|s| !s.value.is_empty())
        .filter_map(|s| {
            s.id.to_string()
                .strip_prefix("cmdline:")
                .map(str::to_string)
        });
    for id in added {
        let key = id.replace('-', "_");
        assert!(
            rebooted
                .split_whitespace()
                .any(|arg| arg.split('=').next().unwrap().replace('-', "_") == key),
            "{key} planned but not in the rebooted command line {rebooted:?}"
        );
    }
    std::fs::write(&cmdline, rebooted + "\n").unwrap();
    let Some(after) = plan["target"]["cpus_after_reboot"].as_str() else {
        return;
    };
    let cpu = root.join("sys/devices/system/cpu");
    let online = lowlat::machine::CpuSet::parse_list(after).unwrap();
    let before = std::fs::read_to_string(cpu.join("online")).unwrap();
    for n in lowlat::machine::CpuSet::parse_list(before.trim())
        .unwrap()
        .iter()
    {
        if !online.contains(n) {
            std::fs::write(cpu.join(format!("cpu{n}/online")), "0\n").unwrap();
        }
    }
    std::fs::write(cpu.join("online"), format!("{after}\n")).unwrap();
    if cpu.join("smt/control").exists() {
        std::fs::write(cpu.join("smt/control"), "off\n").unwrap();
    }
}

/// The ids of a plan.json's settings, each setting of a group by its own id.
fn plan_ids(plan: &Value) -> BTreeSet<String> {
    let plan = lowlat::plan::Plan::from_json(&plan.to_string()).unwrap();
    plan.settings.iter().map(|s| s.id.to_string()).collect()
}

/// Every tree the property is checked on: the fixtures, the hwloc samples (unpacked under
/// `scratch`) and the generated hybrid machine.
fn trees(scratch: &Path) -> Vec<(String, PathBuf)> {
    let mut trees = Vec::new();
    let fixtures = fixture("");
    for entry in std::fs::read_dir(&fixtures).unwrap().filter_map(Result::ok) {
        if entry.path().is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            trees.push((name, entry.path()));
        }
    }
    let samples = crate::hwloc_samples::samples_dir();
    match std::fs::read_dir(&samples) {
        Ok(entries) => {
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(stem) = name.strip_suffix(".tar.bz2") else {
                    continue;
                };
                let into = scratch.join(stem);
                std::fs::create_dir_all(&into).unwrap();
                match crate::hwloc_samples::unpack(&entry.path(), &into) {
                    Some(tree) => trees.push((format!("hwloc {stem}"), tree)),
                    None => missing_data(&format!("bzip2 (tar xjf {name} failed)")),
                }
            }
        }
        Err(_) => missing_data(&format!("the hwloc samples ({})", samples.display())),
    }
    let hybrid = scratch.join("i7-1370p");
    hybrid::write_i7_1370p(&hybrid);
    trees.push(("generated i7-1370p".to_string(), hybrid));
    trees
}

#[test]
fn plan_apply_plan_is_a_fixed_point_on_every_machine() {
    let scratch = tempfile::tempdir().unwrap();
    let trees = trees(scratch.path());
    eprintln!(
        "trees: {:?}",
        trees.iter().map(|(name, _)| name).collect::<Vec<_>>()
    );
    assert!(trees.len() >= 8, "{trees:?}");
    let problems: Vec<String> = trees
        .iter()
        .flat_map(|(name, path)| converges(name, path))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_simulated_reboot_replaces_the_planned_keys() {
    let fragment = "LOWLAT_CMDLINE_ADD='nohz_full=1-3 nosmt'\nLOWLAT_CMDLINE_REMOVE='idle'\n";
    assert_eq!(
        rebooted_cmdline("ro quiet nohz_full=2 idle=poll", fragment),
        "ro quiet nohz_full=1-3 nosmt"
    );
}

#[test]
fn a_tuned_copy_is_planned_whole_and_marked_as_already_planned() {
    // The before-stop hook's case: epyc7f32-2s, plan → apply on a copy → plan.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    tree::copy_tree(&fixture("epyc7f32-2s"), &root);
    let out = dir.path().join("plan");
    run(&root, &["plan", "--out", out.to_str().unwrap()]);
    let sysctls = |root: &Path| {
        let text = std::fs::read_to_string(root.join("etc/sysctl.d/99-lowlat.conf")).unwrap();
        text.lines()
            .filter(|l| !l.starts_with('#') && l.contains(" = "))
            .count()
    };
    let planned = std::fs::read_to_string(out.join("sysctl.d/99-lowlat.conf")).unwrap();
    let (code, _) = run(
        &root,
        &[
            "apply",
            "--plan",
            out.join("plan.json").to_str().unwrap(),
            "--yes",
        ],
    );
    assert!(code <= 1);
    let keys = sysctls(&root);
    assert!(keys >= 10, "{keys} sysctls installed");
    let (_, text) = run(&root, &["plan"]);
    let line = text.lines().find(|l| l.starts_with("Settings (")).unwrap();
    assert!(line.contains("already as planned"), "{line}");
    let (_, diff) = run(&root, &["plan", "--diff"]);
    assert!(diff.contains("= sysctl:vm.stat_interval"), "{diff}");
    // Applying the second plan keeps the file as the first installed it.
    let again = dir.path().join("again");
    run(&root, &["plan", "--out", again.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(again.join("sysctl.d/99-lowlat.conf")).unwrap(),
        planned
    );
}

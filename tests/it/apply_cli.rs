//! `lowlat apply`, `revert` and `verify` from the command line, on copies of fixture machines
//! (`--root`): the round trip leaves the tree byte-identical, the exit codes are the documented
//! ones, and every kind of bad input is refused with a message naming the flag or file while
//! the tree stays as it was.

use crate::support::{fixture, tree};
use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

/// A fixture machine copied into a temporary directory, with the plan lowlat makes for it.
struct Machine {
    dir: tempfile::TempDir,
    pristine: tree::Tree,
}

impl Machine {
    fn new(name: &str) -> Machine {
        let dir = tempfile::tempdir().unwrap();
        tree::copy_tree(&fixture(name), &dir.path().join("root"));
        let pristine = tree::describe(&dir.path().join("root"));
        let machine = Machine { dir, pristine };
        machine
            .lowlat(&["plan", "--out"])
            .arg(machine.dir.path().join("plan"))
            .assert()
            .success();
        machine
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn plan(&self) -> PathBuf {
        self.dir.path().join("plan/plan.json")
    }

    fn lowlat(&self, args: &[&str]) -> Command {
        let mut cmd = crate::support::lowlat(&[]);
        cmd.arg("--root").arg(self.root()).args(args);
        cmd
    }

    fn apply(&self, extra: &[&str]) -> Command {
        let mut cmd = self.lowlat(&["apply", "--plan"]);
        cmd.arg(self.plan()).args(extra);
        cmd
    }

    fn now(&self) -> tree::Tree {
        tree::describe(&self.root())
    }

    /// The tree is as it was copied.
    fn untouched(&self, context: &str) {
        tree::assert_same(&self.pristine, &self.now(), context);
    }
}

#[test]
fn apply_verify_revert_round_trip() {
    let m = Machine::new("epyc7f32-2s");
    m.apply(&["--yes"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "applied       sysctl:kernel.watchdog_cpumask",
        ))
        .stdout(predicate::str::contains(
            "Journal: /var/lib/lowlat/journal.jsonl under --root ",
        ))
        .stdout(predicate::str::contains("pending a reboot"))
        .stdout(predicate::str::contains(
            "run on the machine itself: grub2-mkconfig -o /boot/grub2/grub.cfg",
        ));
    // Kernel threads cannot be moved in a directory tree: unsupported there, as apply says.
    m.lowlat(&["verify"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "pending-reboot  cmdline:nohz_full",
        ))
        .stdout(predicate::str::contains(
            "ok              workqueue:cpumask",
        ))
        .stdout(predicate::str::contains(
            "unsupported     kthread:kswapd0:affinity",
        ));
    let json = m.lowlat(&["verify", "--json"]).assert().code(0);
    let doc: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["kind"], "verify");
    assert_eq!(doc["plan"], "/etc/lowlat/plan.json");
    assert!(doc["summary"]["pending_reboot"].as_u64().unwrap() > 5);
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == "sysctl:kernel.watchdog_cpumask" && c["status"] == "ok")
    );

    m.lowlat(&["revert", "--dry-run"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("would be restored"));
    m.lowlat(&["revert"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("restored"));
    m.untouched("apply then revert");
    m.lowlat(&["revert"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "Nothing to revert: no journal at /var/lib/lowlat/journal.jsonl under --root ",
        ));
    m.untouched("a second revert");
}

#[test]
fn verify_is_clean_when_only_what_a_tree_can_hold_is_planned() {
    let m = Machine::new("rt-guest-4vcpu");
    let mut plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(m.plan()).unwrap()).unwrap();
    plan["settings"].as_array_mut().unwrap().retain(|s| {
        let id = s["id"].as_str().unwrap();
        // Threads cannot be moved in a directory tree: only what a tree can hold.
        !id.starts_with("kthread:") && !id.starts_with("task:")
    });
    let path = m.dir.path().join("no-kthreads.json");
    std::fs::write(&path, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    let path = path.to_str().unwrap();
    m.lowlat(&["verify", "--plan", path])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("drift"));
    m.lowlat(&["apply", "--yes", "--plan", path])
        .assert()
        .code(0);
    m.lowlat(&["verify", "--plan", path])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(" 0 drift"));
    m.lowlat(&["revert"]).assert().code(0);
    m.untouched("revert");
}

#[test]
fn a_dry_run_writes_nothing() {
    let m = Machine::new("epyc7f32-2s-tuned");
    m.apply(&["--dry-run"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("would change"))
        .stdout(predicate::str::contains("dry run"));
    m.untouched("--dry-run");
}

#[test]
fn apply_asks_or_needs_yes() {
    let m = Machine::new("rt-guest-4vcpu");
    m.apply(&[])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("add --yes"))
        .stderr(predicate::str::contains("nothing was changed"));
    m.untouched("apply without --yes");
}

#[test]
fn a_plan_for_another_machine_needs_force() {
    let m = Machine::new("rt-guest-4vcpu");
    let other = Machine::new("epyc7f32-2s");
    let mut cmd = m.lowlat(&["apply", "--yes", "--plan"]);
    cmd.arg(other.plan())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("made for host hpe-lowlat"))
        .stderr(predicate::str::contains("--force"));
    m.untouched("another machine's plan");
    let mut forced = m.lowlat(&["apply", "--yes", "--force", "--plan"]);
    // Its CPU lists name CPUs this machine does not have: --force does not override that.
    forced
        .arg(other.plan())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("warning: --force"))
        .stderr(predicate::str::contains(
            "irq:default:affinity: it names CPUs 8 and this machine has only CPUs 0-3",
        ))
        .stderr(predicate::str::contains("nothing overrides this"));
    m.untouched("a forced plan naming CPUs this machine lacks");
}

#[test]
fn bad_plans_are_refused_naming_the_file() {
    let m = Machine::new("rt-guest-4vcpu");
    let text = std::fs::read_to_string(m.plan()).unwrap();
    let cases = [
        (
            text.replace("\"schema_version\": 3", "\"schema_version\": 99"),
            "schema_version 99",
        ),
        ("{ not json".to_string(), "not a lowlat plan"),
        (text[..text.len() / 2].to_string(), "not a lowlat plan"),
        // A malformed setting id is refused when the file loads, named with why.
        (
            text.replace("\"irq:default:affinity\"", "\"irq:dflt:affinity\""),
            "setting id `irq:dflt:affinity`: expected irq:<number>:affinity",
        ),
    ];
    for (content, needle) in cases {
        let path = m.dir.path().join("bad.json");
        std::fs::write(&path, content).unwrap();
        let mut cmd = m.lowlat(&["apply", "--yes", "--plan"]);
        cmd.arg(&path)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle))
            .stderr(predicate::str::contains("bad.json"));
        m.untouched(needle);
    }
    m.lowlat(&["apply", "--yes", "--plan", "/nonexistent/plan.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--plan /nonexistent/plan.json"));
    m.lowlat(&["verify"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no installed plan"));
}

/// A document written by lowlat 0.1.0 before the document envelope (schema 1), kept under
/// tests/fixtures/schema1/.
fn schema1(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/schema1")
        .join(name)
}

#[test]
fn schema_1_plans_and_journals_still_load() {
    let m = Machine::new("kvm-guest-2vcpu");
    let plan = schema1("plan-kvm-guest-2vcpu.json");
    // The fixture has no bootloader configuration: apply does the rest and exits 1 for the
    // kernel arguments it could not configure (D1, issue 32).
    m.lowlat(&["apply", "--yes", "--plan"])
        .arg(&plan)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "applied       sysctl:kernel.watchdog_cpumask",
        ));
    let verified = m.lowlat(&["verify", "--plan"]).arg(&plan).output().unwrap();
    assert_ne!(verified.status.code(), Some(2), "{verified:?}");
    assert!(
        String::from_utf8_lossy(&verified.stdout)
            .contains("ok              sysctl:kernel.watchdog_cpumask"),
        "{verified:?}"
    );
    // The schema-1 journal was written by applying the same plan to the same fixture: it
    // holds the same prior values, so reverting it gives the pristine tree back.
    std::fs::copy(
        schema1("journal-kvm-guest-2vcpu.jsonl"),
        m.root().join("var/lib/lowlat/journal.jsonl"),
    )
    .unwrap();
    m.lowlat(&["revert"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("restored"));
    m.untouched("revert of a schema-1 journal");
}

#[test]
fn documents_carry_the_envelope() {
    let m = Machine::new("kvm-guest-2vcpu");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(m.plan()).unwrap()).unwrap();
    assert_eq!(plan["schema_version"], 3);
    assert_eq!(plan["kind"], "plan");
    assert_eq!(plan["tool"]["name"], "lowlat");
    assert_eq!(plan["host"], "vm");
    assert!(plan["created"].as_str().unwrap().ends_with('Z'));
    // No bootloader configuration in this fixture: exit 1 for the kernel arguments (D1).
    m.apply(&["--yes"]).assert().code(1);
    let journal = std::fs::read_to_string(m.root().join("var/lib/lowlat/journal.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    let header = &first["entry"]["record"]["header"];
    assert_eq!(header["schema_version"], 2);
    assert_eq!(header["kind"], "journal");
    assert_eq!(header["host"], "vm");
    m.lowlat(&["revert"]).assert().code(0);
    m.untouched("revert");
}

#[test]
fn a_damaged_journal_is_refused_naming_the_line() {
    let m = Machine::new("rt-guest-4vcpu");
    m.apply(&["--yes"]).assert().code(0);
    let journal = m.root().join("var/lib/lowlat/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[2] = lines[2].replacen("\"seq\":3", "\"seq\":4", 1);
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let applied = m.now();
    m.lowlat(&["revert"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "/var/lib/lowlat/journal.jsonl:3: checksum mismatch",
        ))
        .stderr(predicate::str::contains("changed nothing"));
    tree::assert_same(&applied, &m.now(), "revert of a damaged journal");
}

#[test]
fn a_snapshot_cannot_be_changed() {
    let m = Machine::new("rt-guest-4vcpu");
    let mut cmd = crate::support::lowlat(&[]);
    cmd.args(["--snapshot", "/nonexistent.lowlat", "apply", "--plan"])
        .arg(m.plan())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a snapshot is read-only"));
}

/// The JSON document a command prints, after checking that it exits 0 with a `kind` document.
fn document(mut cmd: Command, kind: &str) -> serde_json::Value {
    let out = cmd.assert().code(0);
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["kind"], kind, "{doc:#}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["tool"]["name"], "lowlat");
    doc
}

/// The setting `id` of an apply document.
fn setting<'d>(doc: &'d serde_json::Value, id: &str) -> &'d serde_json::Value {
    doc["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no setting {id} in {doc:#}"))
}

#[test]
fn apply_and_revert_print_json_documents() {
    let m = Machine::new("epyc7f32-2s");
    let knob = "/proc/sys/kernel/watchdog_cpumask";
    let before = std::fs::read_to_string(m.root().join(&knob[1..])).unwrap();
    let before = before.trim();
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(m.plan()).unwrap()).unwrap();
    let after = plan["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "sysctl:kernel.watchdog_cpumask")
        .unwrap()["value"]
        .as_str()
        .unwrap();
    assert_ne!(before, after);
    let expect_change = |doc: &serde_json::Value, action: &str, from: &str| {
        let s = setting(doc, "sysctl:kernel.watchdog_cpumask");
        assert_eq!(s["action"], action, "{s:#}");
        assert_eq!(s["layer"], "sysctl");
        let change = &s["changes"][0];
        assert_eq!(change["target"], knob);
        assert_eq!(change["before"], from);
        assert_eq!(change["after"], after);
        assert_eq!(change["action"], action);
    };

    let dry = document(m.apply(&["--dry-run", "--json"]), "apply");
    assert_eq!(dry["host"], plan["host"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["scope"], "all");
    assert_eq!(dry["journaled"], false);
    assert_eq!(
        dry["reboot_required"], true,
        "kernel arguments would be configured"
    );
    let would = dry["changed"].as_u64().unwrap();
    assert!(would > 5, "{dry:#}");
    expect_change(&dry, "would-change", before);
    m.untouched("apply --dry-run --json");

    let applied = document(m.apply(&["--yes", "--json"]), "apply");
    assert_eq!(applied["dry_run"], false);
    assert_eq!(applied["changed"].as_u64().unwrap(), would);
    assert_eq!(applied["journaled"], true);
    assert_eq!(applied["reboot_required"], true);
    expect_change(&applied, "changed", before);
    let kswapd = setting(&applied, "kthread:kswapd0:affinity");
    assert_eq!(kswapd["action"], "unsupported");
    assert!(kswapd["reason"].as_str().unwrap().contains("live machine"));

    let again = document(m.apply(&["--yes", "--json"]), "apply");
    assert_eq!(again["changed"], 0, "{again:#}");
    assert_eq!(again["journaled"], false);
    expect_change(&again, "unchanged", after);
    assert!(
        again["settings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["action"] != "changed" && s["action"] != "would-change"),
        "{again:#}"
    );

    let listing = document(m.lowlat(&["revert", "--dry-run", "--json"]), "revert");
    assert_eq!(listing["dry_run"], true);
    assert_eq!(listing["had_journal"], true);
    let records = listing["records"].as_array().unwrap();
    assert_eq!(listing["changed"].as_u64().unwrap() as usize, records.len());
    assert!(records.iter().all(|r| r["action"] == "would-restore"));

    let reverted = document(m.lowlat(&["revert", "--json"]), "revert");
    assert_eq!(reverted["dry_run"], false);
    assert!(reverted["changed"].as_u64().unwrap() > 5, "{reverted:#}");
    let knob_back = format!("{knob} = {before}");
    assert!(
        reverted["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["what"] == knob_back.as_str() && r["action"] == "restored"),
        "{reverted:#}"
    );
    m.untouched("apply --json then revert --json");
    let nothing = document(m.lowlat(&["revert", "--json"]), "revert");
    assert_eq!(nothing["changed"], 0);
    assert_eq!(nothing["had_journal"], false);
}

#[test]
fn apply_json_asks_no_question() {
    let m = Machine::new("rt-guest-4vcpu");
    m.apply(&["--json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("add --yes"))
        .stderr(predicate::str::contains("--json asks nothing"));
    m.untouched("apply --json without --yes");
}

#[test]
fn the_dry_run_counts_say_settings_or_values_and_agree_with_json() {
    // D11 (issue 32): `apply --dry-run` said 59 would change, `--dry-run --json` 49: settings
    // (each kernel argument one) against single values (all kernel arguments one change).
    let m = Machine::new("epyc7f32-2s");
    let text = m.apply(&["--dry-run"]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let json = m.apply(&["--dry-run", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let number_after = |prefix: &str| -> u64 {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {text}"));
        line.split_whitespace().next().unwrap().parse().unwrap()
    };
    let settings = number_after("Settings: ");
    let values = number_after("Values: ");
    assert_eq!(doc["settings_changed"].as_u64(), Some(settings), "{text}");
    assert_eq!(doc["changed"].as_u64(), Some(values), "{text}");
    assert!(
        settings > values,
        "every kernel argument is a setting, all of them one value"
    );
    assert!(text.contains(&format!("Values: {values} would change (")));
}

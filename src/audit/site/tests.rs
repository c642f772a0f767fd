//! Site profiles: resolution, provenance, waivers, and each bad input refused at its place.

use super::*;
use crate::audit::FindingStatus;
use crate::audit::partition;
use crate::machine::Machine;
use crate::test_tree::TestTree;

/// Writes `files` (name, text) into a fresh directory and loads the first.
fn load_files(files: &[(&str, &str)]) -> (tempfile::TempDir, Result<Profile, SiteError>) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let loaded = load(&dir.path().join(files[0].0));
    (dir, loaded)
}

/// The error of loading `files`, with the directory taken out of file names.
fn refusal(files: &[(&str, &str)]) -> String {
    let (dir, loaded) = load_files(files);
    let error = loaded.expect_err("the file must be refused").to_string();
    error.replace(&format!("{}/", dir.path().display()), "")
}

fn expect_of(profile: &Profile, rule: &str) -> (String, String) {
    let entry = profile
        .entry(rule)
        .unwrap_or_else(|| panic!("{rule} is not run"));
    (entry.expect.cell(), entry.origin.to_string())
}

const SITE: &str = "# trading hosts\n\
extends = \"low-latency\"\n\
\n\
[[waive]]\n\
rule = \"LL-PCIE-ASPM\"\n\
reason = \"ASPM is locked by the platform vendor\"\n\
until = \"2099-12-31\"\n\
owner = \"netops\"\n\
\n\
[sysctl]\n\
\"vm.stat_interval\" = 10\n\
\n\
[off]\n\
\"LL-BOOST\" = \"boost is the vendor's call\"\n";

#[test]
fn a_site_file_overrides_its_builtin_profile_and_says_where_each_value_came_from() {
    let (dir, loaded) = load_files(&[("site.toml", SITE)]);
    let profile = loaded.unwrap();
    let site = profile.site.as_ref().unwrap();
    let named = dir.path().join("site.toml").display().to_string();
    assert_eq!(site.files, vec![named.clone()]);
    assert_eq!(profile.info.name, ProfileName::LowLatency);
    assert_eq!(
        expect_of(&profile, "LL-SYSCTL-VM-STAT-INTERVAL"),
        ("10".to_string(), format!("{named}:11"))
    );
    let (cell, origin) = expect_of(&profile, "LL-SYSCTL-VM-SWAPPINESS");
    assert_eq!(cell, "0|<=10");
    assert!(
        origin.starts_with("built-in low-latency (src/audit/profiles.table:"),
        "{origin}"
    );
    assert!(profile.entry("LL-BOOST").is_none());
    assert_eq!(site.off[0].rule.id, "LL-BOOST");
    assert_eq!(site.off[0].place.line, 14);
    assert_eq!(site.waivers[0].owner.as_deref(), Some("netops"));
    assert_eq!(site.waivers[0].until.unwrap().to_string(), "2099-12-31");
}

#[test]
fn a_file_extending_a_file_is_laid_over_it() {
    let (_dir, loaded) = load_files(&[
        (
            "rack7.toml",
            "extends = \"site.toml\"\n[sysctl]\n\"vm.stat_interval\" = \">=100\"\n[expect]\n\"LL-BOOST\" = \"off\"\n",
        ),
        ("site.toml", SITE),
    ]);
    let profile = loaded.unwrap();
    let (cell, origin) = expect_of(&profile, "LL-SYSCTL-VM-STAT-INTERVAL");
    assert_eq!(cell, ">=100");
    assert!(origin.ends_with("rack7.toml:3"), "{origin}");
    // The file on top takes back a rule the one below turned off.
    assert_eq!(expect_of(&profile, "LL-BOOST").0, "off");
    let site = profile.site.unwrap();
    assert!(site.off.is_empty());
    assert_eq!(site.files.len(), 2);
    assert_eq!(site.waivers.len(), 1);
}

#[test]
fn a_circle_of_files_is_refused() {
    let error = refusal(&[
        ("a.toml", "extends = \"b.toml\"\n"),
        ("b.toml", "extends = \"./a.toml\"\n"),
    ]);
    assert!(
        error.starts_with("b.toml:1:11: extends makes a circle (a.toml → b.toml → a.toml)"),
        "{error}"
    );
}

#[test]
fn every_bad_input_is_refused_at_its_place_with_the_closest_word() {
    let cases: &[(&str, &str)] = &[
        (
            "extends = \"low-latency\"\n[sysctl]\n\"vm.stat_intervall\" = 10\n",
            "site.toml:3:1: vm.stat_intervall: not a sysctl lowlat judges; did you mean vm.stat_interval?",
        ),
        (
            "extends = \"low-latency\"\n[[waive]]\nrule = \"LL-PCIE-ASMP\"\nreason = \"x\"\n",
            "site.toml:3:8: no rule LL-PCIE-ASMP (did you mean LL-PCIE-ASPM?)",
        ),
        (
            "extends = \"low-latency\"\n[[waive]]\nrule = \"LL-PCIE-ASPM\"\nreason = \"x\"\nuntil = \"2099-13-01\"\n",
            "site.toml:5:9: until = 2099-13-01: not a date; write the last day",
        ),
        (
            "extends = \"low-latency\"\n[[waive]]\nrule = \"LL-PCIE-ASPM\"\nreason = \" \"\n",
            "site.toml:4:10: a waiver needs a reason",
        ),
        (
            "extends = \"low-latency\"\n[[waive]]\nrule = \"LL-KSM\"\nreason = \"x\"\n",
            "site.toml:3:8: waiver of LL-KSM: low-latency does not run this rule here",
        ),
        (
            "extends = \"low-latency\"\n[expect]\n\"LL-SMT\" = \"of\"\n",
            "site.toml:3:12: LL-SMT: 'of': LL-SMT accepts one of on, off (did you mean off?)",
        ),
        (
            "extends = \"low-latency\"\n[partition]\nisolate = \"2-x\"\n",
            "site.toml:3:11: '2-x' is not a CPU list",
        ),
        (
            "extends = \"low-latency\"\n[partition]\nisolate = \"2-7\"\nhousekeeping = \"0-2\"\n",
            "site.toml:4:16: CPU(s) 2 are both isolated and housekeeping",
        ),
        (
            "extends = \"low-latency\"\n[partition]\nsmt = \"on\"\n",
            "site.toml:3:7: smt = 'on': write \"keep\" or \"off\"",
        ),
        (
            "extends = \"low-latancy\"\n",
            "site.toml:1:11: extends 'low-latancy': no such profile (did you mean 'low-latency'?)",
        ),
        (
            "extends = \"realtime\"\n",
            "site.toml:1:11: TuneD's realtime has no lowlat profile",
        ),
        (
            "extends = \"low-latency\"\n[off]\n\"LL-KSM\" = \"x\"\n",
            "site.toml:3:1: LL-KSM: low-latency does not run this rule",
        ),
        (
            "extends = \"low-latency\"\n[sysctl]\n\"vm.swappiness\" = 1.5\n",
            "site.toml:3:19: vm.swappiness: a float is not a sysctl value",
        ),
        (
            "extends = \"missing.toml\"\n",
            "missing.toml: No such file or directory",
        ),
    ];
    for (text, start) in cases {
        let error = refusal(&[("site.toml", text)]);
        assert!(
            error.starts_with(start),
            "{text}\n→ {error}\nwanted {start}"
        );
    }
}

#[test]
fn a_tuned_name_in_extends_is_taken_with_a_note() {
    let (_dir, loaded) = load_files(&[("site.toml", "extends = \"realtime-virtual-host\"\n")]);
    let profile = loaded.unwrap();
    assert_eq!(profile.info.name, ProfileName::RealtimeHost);
    let note = &profile.site.unwrap().notes[0];
    assert!(
        note.ends_with(
            "extends realtime-virtual-host, TuneD's name; lowlat's realtime-host profile is used"
        ),
        "{note}"
    );
}

/// A four-CPU machine whose PCIe ASPM policy is not `off` (LL-PCIE-ASPM fails) and whose
/// vm.stat_interval is 10.
fn machine() -> Machine {
    let dir = TestTree::fixture("epyc7f32-2s");
    Machine::read(&dir.root())
}

fn audit_with(text: &str) -> crate::audit::Audit {
    let (_dir, loaded) = load_files(&[("site.toml", text)]);
    let profile = loaded.unwrap();
    let machine = machine();
    let partition = partition::choose(&machine, None).unwrap();
    crate::audit::run(&machine, &profile, &partition)
}

#[test]
fn a_waiver_in_force_waives_the_failure_and_an_expired_one_fails_saying_so() {
    let plain = audit_with("extends = \"low-latency\"\n");
    let aspm = plain.finding("LL-PCIE-ASPM").unwrap();
    assert_eq!(aspm.status, FindingStatus::Fail, "{aspm:?}");

    let waived = audit_with(SITE);
    let aspm = waived.finding("LL-PCIE-ASPM").unwrap();
    assert_eq!(aspm.status, FindingStatus::Waived);
    let note = aspm.waiver.as_ref().unwrap();
    assert!(!note.expired);
    assert_eq!(
        note.describe().split(" (").next().unwrap(),
        "waived until 2099-12-31 by netops"
    );
    assert_eq!(waived.counts().waived, 1);
    let failed = |audit: &crate::audit::Audit| -> Vec<String> {
        let fails = audit
            .findings
            .iter()
            .filter(|f| f.status == FindingStatus::Fail);
        fails.map(|f| f.rule.clone()).collect()
    };
    let changed = ["LL-PCIE-ASPM", "LL-BOOST"];
    let mut still = failed(&plain);
    still.retain(|rule| !changed.contains(&rule.as_str()));
    assert_eq!(failed(&waived), still);
    // The fixture's vm.stat_interval is 1: below the site's 10 as below the built-in 3600.
    let stat = waived.finding("LL-SYSCTL-VM-STAT-INTERVAL").unwrap();
    assert_eq!(stat.expected, "vm.stat_interval = 10");
    // A rule turned off is skipped with its reason and place.
    let boost = waived.finding("LL-BOOST").unwrap();
    assert_eq!(boost.status, FindingStatus::Skipped);
    assert!(
        boost.observed.starts_with("turned off by "),
        "{}",
        boost.observed
    );
    assert!(
        boost
            .observed
            .ends_with("site.toml:14: boost is the vendor's call")
    );

    let expired = audit_with(&SITE.replace("2099-12-31", "2020-01-31"));
    let aspm = expired.finding("LL-PCIE-ASPM").unwrap();
    assert_eq!(aspm.status, FindingStatus::Fail);
    assert!(
        aspm.waiver
            .as_ref()
            .unwrap()
            .describe()
            .starts_with("waiver expired on 2020-01-31 by netops")
    );
    assert!(expired.has_failures());
}

#[test]
fn the_desired_state_takes_the_sites_sysctl_and_leaves_out_waived_rules() {
    let (_dir, loaded) = load_files(&[("site.toml", SITE)]);
    let profile = loaded.unwrap();
    let machine = machine();
    let partition = partition::choose(&machine, None).unwrap();
    let settings = crate::audit::desired(&machine, &profile, &partition, &|_| true);
    let stat = settings
        .iter()
        .find(|s| s.id == "sysctl:vm.stat_interval")
        .unwrap();
    assert_eq!(stat.value, "10");
    assert!(
        !settings.iter().any(|s| s.id == "cmdline:pcie_aspm"),
        "the waived LL-PCIE-ASPM plans nothing"
    );
    let builtin = crate::audit::profile::load(ProfileName::LowLatency).unwrap();
    let settings = crate::audit::desired(&machine, &builtin, &partition, &|_| true);
    assert!(settings.iter().any(|s| s.id == "cmdline:pcie_aspm"));
}

#[test]
fn the_partition_comes_from_isolate_or_from_housekeeping() {
    let (_dir, loaded) = load_files(&[(
        "site.toml",
        "extends = \"low-latency\"\n[partition]\nhousekeeping = \"0-1\"\nsmt = \"keep\"\n",
    )]);
    let profile = loaded.unwrap();
    let online: CpuSet = "0-7".parse().unwrap();
    let site = profile.site.as_ref().unwrap();
    assert_eq!(site.partition.isolated(&online).unwrap().to_list(), "2-7");
    assert_eq!(site.partition.smt.as_ref().unwrap().value, Smt::Keep);
    assert_eq!(expect_of(&profile, "LL-SMT").0, "on");
}

#[test]
fn kernel_arguments_are_checked_and_a_file_replaces_what_it_extends_said_of_a_key() {
    let base = "extends = \"low-latency\"\n[kernel]\nadd = [\"skew_tick=0\", \"nmi_watchdog=0\"]\n";
    let top = "extends = \"base.toml\"\n[kernel]\nremove = [\"skew_tick\"]\n";
    let (_dir, loaded) = load_files(&[("top.toml", top), ("base.toml", base)]);
    let profile = loaded.unwrap();
    let kernel = &profile.site.as_ref().unwrap().kernel;
    let add: Vec<&str> = kernel.add.iter().map(|a| a.arg.as_str()).collect();
    assert_eq!(add, ["nmi_watchdog=0"]);
    assert_eq!(kernel.remove.len(), 1);
    assert_eq!(kernel.remove[0].key, "skew_tick");
    assert!(kernel.remove[0].place.to_string().ends_with("top.toml:3"));
    let head = "extends = \"low-latency\"\n[kernel]\n";
    for (body, says) in [
        (
            "add = [\"nohz_full=2-7\"]",
            "site.toml:3:8: 'nohz_full=2-7': the plan derives nohz_full= from other choices: \
             it follows the partition: set [partition] isolate or housekeeping",
        ),
        (
            "add = [\"a=1 b=2\"]",
            "site.toml:3:8: 'a=1 b=2': one argument per string, without spaces or quotes",
        ),
        (
            "add = [\"=1\"]",
            "site.toml:3:8: '=1': not a kernel argument",
        ),
        (
            "remove = [\"skew_tick=1\"]",
            "site.toml:3:11: 'skew_tick=1': remove takes the key alone",
        ),
        (
            "add = [\"nosmt\"]",
            "site.toml:3:8: 'nosmt': the plan derives nosmt= from other choices: set \
             [partition] smt = \"off\"",
        ),
        (
            "add = [\"skew_tick=0\"]\nremove = [\"skew_tick\"]",
            "site.toml:4:11: skew_tick: this file both adds and removes it; keep one",
        ),
        ("append = [\"x\"]", "site.toml:3:1: unknown key 'append'"),
    ] {
        let refused = refusal(&[("site.toml", &format!("{head}{body}\n"))]);
        assert!(refused.starts_with(says), "{body}: {refused}");
    }
}

#[test]
fn a_choice_loads_its_profile_and_names_the_flag() {
    let tuned: ProfileChoice = "network-latency".parse().unwrap();
    assert_eq!(tuned.profile().unwrap().info.name, ProfileName::LowLatency);
    let missing = ProfileChoice::File("/nonexistent/site.toml".into());
    let err = missing.profile().unwrap_err().to_string();
    assert!(
        err.starts_with("--profile /nonexistent/site.toml: "),
        "{err}"
    );
    let freebsd = ProfileChoice::Builtin {
        name: ProfileName::FreebsdRouter,
        tuned: None,
    };
    let err = freebsd.profile().unwrap_err().to_string();
    assert!(err.starts_with("--profile freebsd-router: "), "{err}");
}

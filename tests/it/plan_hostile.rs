//! R2-1 of issue 44: untrusted names from the machine (its host name, its CPU model) reached
//! every file of `plan --out` raw, so a newline in the host name added lines to a systemd unit,
//! a GRUB drop-in sourced by grub-mkconfig, kargs.sh, TuneD's profile and the YAML. Each file is
//! planned for a machine with a hostile host name and CPU model and for the same machine named
//! `web1`, then read by its real consumer where it is installed (`systemd-analyze verify`, `sh`
//! sourcing it with marker commands, TuneD's loader, a YAML and a TOML parser), and held
//! against the benign plan: outside comments, nothing differs but where the host is named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{fixture, lowlat, missing_data, tree};

/// A host name with what ends a line or a value in each format the plan writes, and commands
/// that touch `marks/N` if anything runs them.
fn hostile(marks: &Path) -> String {
    let m = |n: u32| marks.join(n.to_string()).display().to_string();
    format!(
        "evil\ntouch {m1}\n[Service]\nExecStartPre=/bin/touch {m2}\n---\nkargs = [\"x\"]\n\
         key: value\n$(touch {m3})`touch {m4}`;touch {m5} #]'\"\0\r\u{202e}[main]\n\
         summary=${{f:exec:touch:{m6}}}\\",
        m1 = m(1),
        m2 = m(2),
        m3 = m(3),
        m4 = m(4),
        m5 = m(5),
        m6 = m(6),
    )
}

/// The files of `plan --out` for the fixture `kvm-guest-2vcpu` named `host`, with `model` in
/// its CPU model name: path → content.
pub(crate) fn plan_files(dir: &Path, host: &str, model: &str) -> BTreeMap<String, String> {
    let root = dir.join("root");
    tree::copy_tree(&fixture("kvm-guest-2vcpu"), &root);
    std::fs::write(root.join("proc/sys/kernel/hostname"), host).unwrap();
    // The fixture was captured where PID 1 is not systemd, so its plan has no systemd files;
    // these tests read every artifact, the units included: PID 1 is systemd here.
    let stat = std::fs::read_to_string(root.join("proc/1/stat")).unwrap();
    std::fs::write(
        root.join("proc/1/stat"),
        stat.replacen("(process_api)", "(systemd)", 1),
    )
    .unwrap();
    let cpuinfo = std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap();
    let cpuinfo = cpuinfo.replace("model name\t: ", &format!("model name\t: {model}"));
    std::fs::write(root.join("proc/cpuinfo"), cpuinfo).unwrap();
    let out = dir.join("out");
    lowlat(&["--root", root.to_str().unwrap(), "plan", "--out"])
        .arg(&out)
        .assert()
        .success();
    read_dir(&out)
}

/// Every file under `dir`, by path relative to it.
pub(crate) fn read_dir(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The lines of `text` that are not comments (`#` first, after blanks).
fn not_comments(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect()
}

/// The characters the artifact `path` may not hold raw: every control character but the
/// newline and the tab; outside plan.json also the bidi controls and the line separators
/// (JSON escapes the control characters and keeps the others as the data they are).
fn raw_hidden(path: &str, text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || (path != "plan.json"
                    && matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}'))
        })
        .collect()
}

struct Planned {
    dir: tempfile::TempDir,
    evil: BTreeMap<String, String>,
    good: BTreeMap<String, String>,
}

impl Planned {
    fn new() -> Planned {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("marks")).unwrap();
        let host = hostile(&dir.path().join("marks"));
        let evil_dir = dir.path().join("evil");
        let good_dir = dir.path().join("good");
        std::fs::create_dir(&evil_dir).unwrap();
        std::fs::create_dir(&good_dir).unwrap();
        let evil = plan_files(&evil_dir, &host, "\x1b[8m\u{202e}\r# ");
        let good = plan_files(&good_dir, "web1", "");
        Planned { dir, evil, good }
    }

    fn marks(&self) -> Vec<String> {
        std::fs::read_dir(self.dir.path().join("marks"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// The hostile plan's file `path`, written to a scratch directory.
    fn evil_file(&self, path: &str) -> PathBuf {
        let file = self.dir.path().join("scratch").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &self.evil[path]).unwrap();
        file
    }
}

#[test]
fn a_hostile_host_name_adds_nothing_outside_the_comments_of_any_plan_file() {
    let p = Planned::new();
    assert_eq!(
        p.evil.keys().collect::<Vec<_>>(),
        p.good.keys().collect::<Vec<_>>()
    );
    assert!(p.evil.len() >= 17, "{:?}", p.evil.keys());
    for (path, text) in &p.evil {
        assert_eq!(raw_hidden(path, text), [], "{path}:\n{text}");
        // Where the host is named outside a comment, a serializer writes it (plan.json) or it
        // is filtered (the PerformanceProfile's name, TuneD's summary): compared below.
        if path == "plan.json" || path.ends_with(".yaml") || path.ends_with("tuned.conf") {
            continue;
        }
        assert_eq!(
            not_comments(text),
            not_comments(&p.good[path]),
            "{path}:\n{text}"
        );
    }
    let header = p.evil["systemd/lowlat-runtime.service"]
        .lines()
        .nth(1)
        .unwrap();
    assert!(
        header.starts_with(r#"# Profile: low-latency (power latency) for "evil\ntouch "#)
            && header.contains(r#"(not a host name) ("#)
            && header.contains(r"(\x1b[8m\u{202e} # AMD EPYC, CPUs 0-1)."),
        "{header}"
    );
    // plan.json keeps the name as it was read, escaped by JSON.
    let json: serde_json::Value = serde_json::from_str(&p.evil["plan.json"]).unwrap();
    assert!(
        json["target"]["host"]
            .as_str()
            .unwrap()
            .starts_with("evil\ntouch "),
        "{json}"
    );
    assert_eq!(p.marks(), Vec::<String>::new());
}

#[test]
fn systemd_reads_the_units_of_a_hostile_plan_as_planned() {
    let p = Planned::new();
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        missing_data("systemd-analyze (Debian package systemd)");
        return;
    }
    for unit in ["lowlat-runtime.service", "lowlat-watch.service"] {
        let path = format!("systemd/{unit}");
        // lowlat is not installed here: ExecStart names a binary that is.
        let text = p.evil[&path].replace("\nExecStart=lowlat ", "\nExecStart=/bin/true ");
        let file = p.dir.path().join(unit);
        std::fs::write(&file, text).unwrap();
        let out = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&file)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && said.is_empty(), "{unit}: {said}");
    }
}

#[test]
fn sourcing_the_shell_files_of_a_hostile_plan_runs_nothing_else() {
    let p = Planned::new();
    // Stand-ins for the commands the files call, each recording its arguments.
    let bin = p.dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = p.dir.path().join("calls");
    let stub = bin.join("rpm-ostree");
    std::fs::write(
        &stub,
        format!("#!/bin/sh\necho \"$0 $*\" >> {}\n", calls.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    for path in [
        "grub/99-lowlat.cfg",
        "rpm-ostree/kargs.sh",
        "kernel-cmdline.txt",
    ] {
        let file = p.evil_file(path);
        let check = Command::new("sh").arg("-n").arg(&file).output().unwrap();
        assert!(check.status.success(), "sh -n {path}");
        let run = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "GRUB_CMDLINE_LINUX='ro quiet' GRUB_CMDLINE_LINUX_DEFAULT=splash; . {}; \
                 printf '%s|%s|%s|%s' \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\" \
                 \"${{LOWLAT_CMDLINE_ADD-}}\" \"${{LOWLAT_CMDLINE_REMOVE-}}\"",
                file.display()
            ))
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .current_dir(p.dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            run.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        if path.starts_with("grub/") {
            assert!(
                stdout.starts_with("ro quiet isolcpus=managed_irq,1 nohz_full=1 "),
                "{stdout}"
            );
        }
        if path == "kernel-cmdline.txt" {
            assert!(
                stdout.contains("|isolcpus=managed_irq,1 nohz_full=1 "),
                "{stdout}"
            );
        }
    }
    let called = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(called.lines().count(), 2, "{called}");
    assert!(called.lines().all(|l| l.contains(" kargs --")), "{called}");
    assert_eq!(p.marks(), Vec::<String>::new());
}

/// Loads a TuneD profile (`profile FILE`) or a variables file (`variables FILE`) with TuneD's
/// own loaders and prints what they read.
const TUNED_LOAD: &str = r#"
import sys, json
from tuned.profiles.loader import Loader
from tuned.profiles.variables import Variables
if sys.argv[1] == "profile":
    loader = Loader.__new__(Loader)
    print(json.dumps(loader._load_config_data(sys.argv[2])))
else:
    variables = Variables()
    variables.add_from_file(sys.argv[2])
    print(json.dumps(variables._lookup_env))
"#;

#[test]
fn tuned_loads_the_hostile_plans_profile_as_the_benign_ones() {
    let p = Planned::new();
    let python = "/usr/bin/python3";
    let import = Command::new(python).args(["-c", "import tuned"]).output();
    if !import.is_ok_and(|o| o.status.success()) {
        missing_data("TuneD (Debian package tuned) for /usr/bin/python3");
        return;
    }
    let load = |kind: &str, text: &str| -> serde_json::Value {
        let file = p.dir.path().join("tuned.conf");
        std::fs::write(&file, text).unwrap();
        let out = Command::new(python)
            .args(["-c", TUNED_LOAD, kind])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "TuneD refused it: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for (kind, path) in [
        ("profile", "tuned/lowlat/tuned.conf"),
        ("variables", "tuned/cpu-partitioning-variables.conf"),
    ] {
        let evil = load(kind, &p.evil[path]);
        let mut good = load(kind, &p.good[path]);
        if let Some(main) = good.get_mut("main") {
            let summary = main["summary"].as_str().unwrap().to_string();
            assert!(summary.starts_with("lowlat plan for web1: "), "{summary}");
            main["summary"] = summary.replace(" for web1", "").into();
            assert_eq!(
                evil["main"]["summary"], main["summary"],
                "a host name that is not one is left out of the summary"
            );
        }
        assert_eq!(evil, good, "{path}");
        assert!(!good.as_object().unwrap().is_empty(), "{path}: {good}");
    }
}

#[test]
fn the_yaml_and_toml_of_a_hostile_plan_parse_as_the_benign_ones() {
    let p = Planned::new();
    for path in [
        "kubernetes/kubelet-config.yaml",
        "openshift/performance-profile.yaml",
    ] {
        let evil: serde_norway::Value = serde_norway::from_str(&p.evil[path]).unwrap();
        let mut good: serde_norway::Value = serde_norway::from_str(&p.good[path]).unwrap();
        if path.starts_with("openshift") {
            let name = &evil["metadata"]["name"];
            assert!(
                name.as_str().unwrap().starts_with("lowlat-evil-touch-"),
                "{name:?}"
            );
            good["metadata"]["name"] = name.clone();
        }
        assert_eq!(evil, good, "{path}");
    }
    // Python's own TOML parser (3.11+), as tests/it/plan_platforms.rs reads the file.
    let path = "bootc/kargs.d/50-lowlat.toml";
    let toml = |text: &str| -> serde_json::Value {
        let file = p.dir.path().join("kargs.toml");
        std::fs::write(&file, text).unwrap();
        let out = Command::new("python3")
            .args([
                "-c",
                "import sys, json, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))",
            ])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let evil = toml(&p.evil[path]);
    assert_eq!(evil, toml(&p.good[path]));
    assert_eq!(
        evil.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["kargs"],
        "{evil}"
    );
}

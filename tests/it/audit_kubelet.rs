//! `lowlat audit` and the kubelet's configuration: LL-KUBELET-CPUS on the file
//! `--kubelet-config` names and on /var/lib/kubelet/config.yaml under the root, the plan's own
//! kubelet-config.yaml passing on the machine it was made for, and bad files refused naming
//! the flag, the line or the fields.

use predicates::prelude::*;

use crate::support::tree::copy_tree;
use crate::support::{fixture, lowlat};

const HEAD: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

/// `lowlat --root epyc7f32-2s-tuned audit --explain LL-KUBELET-CPUS ARGS` (the guide's
/// partition, housekeeping 0,8, is on its command line).
fn explain(args: &[&std::ffi::OsStr]) -> assert_cmd::assert::Assert {
    let mut cmd = lowlat(&[]);
    cmd.arg("--root")
        .arg(fixture("epyc7f32-2s-tuned"))
        .args(["audit", "--explain", "LL-KUBELET-CPUS"])
        .args(args);
    cmd.assert()
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn reserved_cpus_that_are_not_the_housekeeping_cpus_fail_and_the_plans_pass() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = write(
        &dir,
        "wrong.yaml",
        &format!("{HEAD}cpuManagerPolicy: static\nreservedSystemCPUs: \"0-1\"\n"),
    );
    explain(&["--kubelet-config".as_ref(), wrong.as_os_str()])
        .success()
        .stdout(predicate::str::contains("status:   fail"))
        .stdout(predicate::str::contains(
            "reserved CPUs 1 are isolated by the kernel",
        ))
        .stdout(predicate::str::contains(
            "housekeeping CPUs 8 are not reserved",
        ));
    let none = write(&dir, "none.yaml", HEAD);
    explain(&["--kubelet-config".as_ref(), none.as_os_str()])
        .success()
        .stdout(predicate::str::contains("status:   fail"))
        .stdout(predicate::str::contains(
            "cpuManagerPolicy none: no pod gets exclusive CPUs",
        ));
    // A whole audit with the disagreement exits 1.
    lowlat(&[])
        .arg("--root")
        .arg(fixture("epyc7f32-2s-tuned"))
        .arg("audit")
        .arg("--kubelet-config")
        .arg(&wrong)
        .assert()
        .code(1)
        .stdout(predicate::str::is_match(r"FAIL +LL-KUBELET-CPUS").unwrap());

    // The kubelet configuration `plan --out` writes for this machine agrees with it.
    let out = dir.path().join("plan");
    lowlat(&[])
        .arg("--root")
        .arg(fixture("epyc7f32-2s-tuned"))
        .arg("plan")
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let planned = out.join("kubernetes/kubelet-config.yaml");
    explain(&["--kubelet-config".as_ref(), planned.as_os_str()])
        .success()
        .stdout(predicate::str::contains("status:   pass"))
        .stdout(predicate::str::contains(
            "observed: cpuManagerPolicy static, reservedSystemCPUs 0,8",
        ));
}

#[test]
fn the_live_configuration_is_read_through_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&fixture("epyc7f32-2s-tuned"), &root);
    let audit = |root: &std::path::Path| {
        let mut cmd = lowlat(&[]);
        cmd.arg("--root")
            .arg(root)
            .args(["audit", "--explain", "LL-KUBELET-CPUS"]);
        cmd.assert().success()
    };
    // No kubelet: the rule does not apply.
    audit(&root)
        .stdout(predicate::str::contains("status:   skipped"))
        .stdout(predicate::str::contains(
            "/var/lib/kubelet/config.yaml does not exist",
        ));
    std::fs::create_dir_all(root.join("var/lib/kubelet")).unwrap();
    std::fs::write(
        root.join("var/lib/kubelet/config.yaml"),
        format!("{HEAD}cpuManagerPolicy: static\nreservedSystemCPUs: 0,8\n"),
    )
    .unwrap();
    audit(&root)
        .stdout(predicate::str::contains("status:   pass"))
        .stdout(predicate::str::contains(
            "evidence: /var/lib/kubelet/config.yaml",
        ));
    // A live file lowlat refuses makes the rule unknown, with the reason; the audit goes on.
    std::fs::write(
        root.join("var/lib/kubelet/config.yaml"),
        format!("{HEAD}cpuManagerPolicy: static\nreservedCPUs: 0,8\n"),
    )
    .unwrap();
    audit(&root)
        .stdout(predicate::str::contains("status:   unknown"))
        .stdout(predicate::str::contains("unknown field(s) reservedCPUs"));
}

#[test]
fn bad_kubelet_configurations_are_refused_naming_the_flag_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, needle) in [
        ("list.yaml", "cpuManagerPolicy: [static\n", "not YAML: "),
        (
            "unknown.yaml",
            &format!("{HEAD}cpuManagerPolicy: static\nreservedSystemCpus: \"0,8\"\nfoo: 1\n"),
            "unknown field(s) reservedSystemCpus (did you mean reservedSystemCPUs?), foo",
        ),
        ("pod.yaml", "apiVersion: v1\nkind: Pod\n", "kind is Pod"),
        (
            "cpus.yaml",
            &format!("{HEAD}reservedSystemCPUs: \"0-\"\n"),
            "reservedSystemCPUs: '0-'",
        ),
    ] {
        let path = write(&dir, name, text);
        explain(&["--kubelet-config".as_ref(), path.as_os_str()])
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(format!(
                "--kubelet-config {}",
                path.display()
            )))
            .stderr(predicate::str::contains(needle));
    }
    let missing = dir.path().join("absent.yaml");
    explain(&["--kubelet-config".as_ref(), missing.as_os_str()])
        .code(2)
        .stderr(predicate::str::contains("--kubelet-config"));
}

#[test]
fn lowlat_knows_exactly_the_kubelets_fields() {
    let upstream = crate::plan_platforms::kubelet_fields();
    let ours: Vec<&str> = include_str!("../../src/machine/kubelet_fields.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(ours, upstream);
}

#[test]
fn nfd_features_carry_the_verdict_and_label_safe_values() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&fixture("epyc7f32-2s-tuned"), &root);
    let features = dir.path().join("lowlat");
    let audit = |root: &std::path::Path| {
        let mut cmd = lowlat(&[]);
        cmd.arg("--root")
            .arg(root)
            .arg("audit")
            .arg("--nfd-features")
            .arg(&features);
        cmd.assert()
    };
    audit(&root).code(1);
    let text = std::fs::read_to_string(&features).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        [
            "lowlat.io/profile.low-latency=fail",
            "lowlat.io/failed-rules=1",
            "lowlat.io/isolated-cpus=14",
            "lowlat.io/nohz-full=true",
            "lowlat.io/rt-kernel=false",
            "lowlat.io/kernel-release=4.18.0-147.5.1.el8_1.x86_64",
        ]
    );
    // Every line is a valid Kubernetes label: name with prefix, value of at most 63 characters.
    let value = regex_lite_label();
    for line in &lines {
        let (name, v) = line.split_once('=').unwrap();
        assert!(
            name.starts_with("lowlat.io/") && name.len() - 10 <= 63,
            "{line}"
        );
        assert!(value(v), "{line}");
    }

    // A kernel release with characters a label forbids is escaped; one too long is left out,
    // and stderr says so.
    std::fs::write(root.join("proc/sys/kernel/osrelease"), "6.6.0+rt #1\n").unwrap();
    audit(&root).code(1);
    let text = std::fs::read_to_string(&features).unwrap();
    assert!(
        text.contains("\nlowlat.io/kernel-release=6.6.0_rt__1\n"),
        "{text}"
    );
    std::fs::write(
        root.join("proc/sys/kernel/osrelease"),
        format!("{}\n", "6".repeat(70)),
    )
    .unwrap();
    audit(&root)
        .code(1)
        .stderr(predicate::str::contains(
            "--nfd-features: left out lowlat.io/kernel-release: ",
        ))
        .stderr(predicate::str::contains("at most 63"));
    let text = std::fs::read_to_string(&features).unwrap();
    assert!(!text.contains("kernel-release"), "{text}");
}

/// Kubernetes' label value syntax: empty, or at most 63 of `[A-Za-z0-9._-]` starting and
/// ending with a letter or digit.
fn regex_lite_label() -> impl Fn(&str) -> bool {
    |v: &str| {
        v.is_empty()
            || (v.len() <= 63
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
                && v.starts_with(|c: char| c.is_ascii_alphanumeric())
                && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
    }
}
